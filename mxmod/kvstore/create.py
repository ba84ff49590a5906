"""``mx.kv.create``: the store types and their checks (MXNet ``kvstore.create``)."""

from __future__ import annotations

import os

from . import dist as _dist
from .base import KVStoreBase
from .kvstore import KVStore

__all__ = ["check_type", "create"]


_LOCAL_TYPES = (
    "local",
    "local_update_cpu",
    "local_allreduce_cpu",
    "local_allreduce_device",
    "device",
    "nccl",
)
_DIST_TYPES = ("dist_sync", "dist_device_sync", "dist_sync_device")


def check_type(name: str) -> None:
    """Raise for a store name ``create`` would refuse (see ``create``), without creating."""
    if not isinstance(name, str):
        raise TypeError("name must be a string")
    name = name.lower()
    if name in KVStoreBase.kv_registry or name in _LOCAL_TYPES or name in _DIST_TYPES:
        return
    if "dist" in name and "async" in name:
        raise NotImplementedError(
            f"kvstore {name!r}: asynchronous parameter-server training is not supported; "
            "mxmod workers reduce gradients with a synchronous all-reduce every step, so use "
            "'dist_sync' (or 'dist_device_sync')"
        )
    raise ValueError(
        f"unknown kvstore type {name!r}; use one of {', '.join(_LOCAL_TYPES + _DIST_TYPES)} "
        f"or a registered store ({', '.join(sorted(KVStoreBase.kv_registry))})"
    )


def create(name: str = "local") -> KVStoreBase:
    """Create a key-value store (MXNet ``mx.kv.create``).

    Args:
        name: a registered Python store (``'teststore'``) or a built-in type (see the module
            doc); lower-cased. A ``dist_*`` store joins the job of the launcher variables
            (``kvstore/dist.py``) if this process has not yet.

    Raises:
        TypeError: ``name`` is not a string.
        NotImplementedError: an asynchronous ``dist_*async*`` store.
        ValueError: an unknown type.
        MXNetError: a ``dist_*`` store without launcher variables, or they are wrong.
    """
    check_type(name)
    name = name.lower()
    if name in KVStoreBase.kv_registry:
        return KVStoreBase.kv_registry[name]()
    if name in _DIST_TYPES:
        single = os.getenv("MXMOD_KVSTORE_DIST_SINGLE", "0") == "1"
        if not (single and _dist.resolve() is None):
            _dist.initialize(required=True)
        return KVStore(name)
    return KVStore(name)
