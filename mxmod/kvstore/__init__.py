"""Key-value stores: MXNet's ``mx.kvstore`` / ``mx.kv``.

``create(name)`` returns a :class:`KVStore` with MXNet's local-store semantics (see
``kvstore.py``); ``KVStoreBase`` is the abstract API for custom stores. The ``_create_kvstore``,
``_initialize_kvstore``, ``_update_params_on_kvstore`` and ``_update_params`` helpers are what
the Module uses (MXNet keeps them in ``model.py``).
"""

from .base import KVStoreBase, TestStore
from .kvstore import (
    KVStore,
    _create_kvstore,
    _initialize_kvstore,
    _update_params,
    _update_params_on_kvstore,
    create,
)

__all__ = ["KVStore", "KVStoreBase", "TestStore", "create"]
