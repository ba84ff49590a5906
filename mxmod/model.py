"""Model helpers, as ``mxnet.model``: ``BatchEndParam``, the checkpoint functions,
``FeedForward`` and the Module's kvstore helpers.

The checkpoint functions live in ``mxmod.module.checkpoint`` (below the Module classes that
use them); they read and write the same ``<prefix>-symbol.json`` and
``<prefix>-<epoch:04d>.params`` files as MXNet 1.9.1 (spec 8.4).
"""

from ._feedforward import FeedForward  # noqa: F401  (legacy estimator API)
from .executor_manager import DataParallelExecutorManager  # noqa: F401  (as MXNet's model)
from .kvstore.kvstore import (  # noqa: F401  (MXNet keeps the Module's kvstore helpers here)
    _create_kvstore,
    _initialize_kvstore,
    _update_params,
    _update_params_on_kvstore,
)
from .module.checkpoint import (
    BatchEndParam,
    load_checkpoint,
    load_params,
    save_checkpoint,
    write_checkpoint_files,  # noqa: F401
)
from .optimizer import get_updater  # MXNet's model module re-exports it

BASE_ESTIMATOR = object  # MXNet's base class of FeedForward (scikit-learn's when installed)

__all__ = [
    "BatchEndParam",
    "save_checkpoint",
    "load_checkpoint",
    "load_params",
    "get_updater",
    "BASE_ESTIMATOR",
]
