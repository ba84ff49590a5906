"""``KVStoreBase`` (the abstract store API and Python registry) and ``TestStore``.

Mirrors ``mxnet/kvstore/base.py`` of MXNet 1.9.1.
"""

from __future__ import annotations

import warnings
from typing import Any

import jax.numpy as jnp

from ..base import as_list

__all__ = ["KVStoreBase", "TestStore"]


class KVStoreBase:
    """Abstract key-value store for parameter synchronisation (MXNet ``KVStoreBase``).

    Custom stores subclass it and register with :meth:`register`; ``mx.kv.create`` looks the
    lower-cased class name up before falling back to the built-in stores.
    """

    kv_registry: dict = {}
    OPTIMIZER = "optimizer"

    def broadcast(self, key: Any, value: Any, out: Any, priority: int = 0) -> None:
        raise NotImplementedError()

    def pushpull(self, key: Any, value: Any, out: Any = None, priority: int = 0) -> None:
        raise NotImplementedError()

    def set_optimizer(self, optimizer: Any) -> None:
        raise NotImplementedError()

    @staticmethod
    def is_capable(capability: str) -> bool:
        raise NotImplementedError()

    def save_optimizer_states(self, fname: str, dump_optimizer: bool = False) -> None:
        raise NotImplementedError()

    def load_optimizer_states(self, fname: str) -> None:
        raise NotImplementedError()

    @property
    def type(self) -> str:
        raise NotImplementedError()

    @property
    def rank(self) -> int:
        raise NotImplementedError()

    @property
    def num_workers(self) -> int:
        raise NotImplementedError()

    @staticmethod
    def register(klass: type) -> type:
        """Register a store class under its lower-cased name (warns when overriding)."""
        if not (isinstance(klass, type) and issubclass(klass, KVStoreBase)):
            raise TypeError(f"can only register KVStoreBase subclasses, got {klass!r}")
        name = klass.__name__.lower()
        if name in KVStoreBase.kv_registry:
            warnings.warn(
                f"WARNING: New kvstore {klass.__module__}.{klass.__name__} is overriding existing "
                f"kvstore {KVStoreBase.kv_registry[name].__module__}."
                f"{KVStoreBase.kv_registry[name].__name__}",
                stacklevel=2,
            )
        KVStoreBase.kv_registry[name] = klass
        return klass


@KVStoreBase.register
class TestStore(KVStoreBase):
    """MXNet's minimal Python store: broadcast = assign, pushpull = sum then assign."""

    def broadcast(self, key: Any, value: Any, out: Any, priority: int = 0) -> None:
        if _is_sparse(value):
            _assign_sparse(value, as_list(out))
            return
        for o in as_list(out):
            o._set_data(_on(value._data, o))

    def pushpull(self, key: Any, value: Any, out: Any = None, priority: int = 0) -> None:
        values = as_list(value)
        if any(_is_sparse(v) for v in values):  # MXNet's sum of the values, then o[:] = sum
            total = values[0]
            for v in values[1:]:
                total = total + v.as_in_context(values[0].context)
            _assign_sparse(total, as_list(out if out is not None else value))
            return
        total = values[0]._data
        for v in values[1:]:
            total = total + _on(v._data, values[0])
        for o in as_list(out if out is not None else value):
            o._set_data(_on(total, o))

    def set_optimizer(self, optimizer: Any) -> None:
        raise NotImplementedError("TestStore cannot run an optimizer (is_capable is False)")

    @staticmethod
    def is_capable(capability: str) -> bool:
        if capability.lower() == KVStoreBase.OPTIMIZER:
            return False
        raise ValueError(f"Unknown capability: {capability}")

    @property
    def type(self) -> str:
        return "teststore"

    @property
    def rank(self) -> int:
        return 0

    @property
    def num_workers(self) -> int:
        return 1


def _is_sparse(arr: Any) -> bool:
    return getattr(arr, "stype", "default") != "default"


def _assign_sparse(value: Any, outs: list) -> None:
    """``o[:] = value`` for every ``o`` (MXNet cannot assign a sparse value to a dense one)."""
    for o in outs:
        if _is_sparse(value) and not _is_sparse(o):
            raise TypeError(
                f"TestStore: a {value.stype} result cannot be assigned to a dense out (as in "
                f"MXNet); pass {value.stype} outs or dense values"
            )
        if o is not value:
            value.copyto(o)


def _on(data: Any, like: Any) -> Any:
    """``data`` cast to ``like``'s dtype and placed where ``like`` lives."""
    import jax

    ref = like._data
    data = jnp.asarray(data).astype(ref.dtype)
    sharding = getattr(ref, "sharding", None)
    return jax.device_put(data, sharding) if sharding is not None else data
