"""Key-value stores: MXNet's ``mx.kvstore`` / ``mx.kv``.

``create(name)`` returns a :class:`KVStore` (``kvstore.py``): MXNet's store semantics for
``local``/``device``/``nccl`` and, over the processes of a ``jax.distributed`` job
(``dist.py``; started by ``python -m mxmod.launch`` or any launcher setting MXNet's
``DMLC_*`` or JAX's variables), ``dist_sync``/``dist_device_sync``. ``KVStoreBase`` is the
abstract API for custom stores. The ``_create_kvstore``, ``_initialize_kvstore``,
``_update_params_on_kvstore`` and ``_update_params`` helpers are what the Module uses
(MXNet keeps them in ``model.py``; here ``model_helpers.py``). See README.md.
"""

from .base import KVStoreBase, TestStore
from .kvstore import (  # noqa: F401  (the Module's helpers, importable from here as before)
    KVStore,
    _create_kvstore,
    _initialize_kvstore,
    _update_params,
    _update_params_on_kvstore,
)
from .create import create

__all__ = ["KVStore", "KVStoreBase", "TestStore", "create"]
