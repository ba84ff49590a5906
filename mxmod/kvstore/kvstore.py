"""The built-in KVStore (MXNet ``kvstore.py``; ``mx.kv.create`` is in ``create.py``).

``KVStore`` reproduces MXNet's store for user code: ``push`` sums the values of a key
(one per device; across workers for ``dist_*``) and either applies the optimizer's
updater to the stored value or replaces it by the sum; ``pull`` copies the stored value
out. Values may be row_sparse (``kvstore/sparse.py``: MXNet's merge, pull and
``row_sparse_pull`` rules). Inside the Module the real reduction is a ``psum`` in the
compiled train step; this object is the facade the Module and user code talk to.

Types (``mx.kv.create(name)``, lower-cased): ``local`` (and MXNet's ``local_update_cpu``,
``local_allreduce_cpu``, ``local_allreduce_device``), ``device`` and ``nccl`` (an alias of
``device``: the sum runs on the values' devices), ``dist_sync`` and ``dist_device_sync``
(``dist_sync_device``): one worker per process of a ``jax.distributed`` job
(``kvstore/dist.py``), ``rank = jax.process_index()``, ``num_workers =
jax.process_count()``. ``dist_async`` raises: every update here is synchronous. Other
names raise (MXNet quietly made them local stores). ``MXMOD_KVSTORE_DIST_SINGLE=1`` lets
one process without a launcher use a ``dist_*`` store as a one-worker store.
"""

from __future__ import annotations

import logging
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..base import MXNetError
from ..ndarray import NDArray
from ..optimizer import get_updater
from ..fileio import atomic_write
from . import dist as _dist
from ..base import as_list
from . import compression as _compression
from . import sparse as _sparse
from .base import KVStoreBase, _on

__all__ = ["KVStore"]

_LOG = logging.getLogger(__name__)


def _dense_data(value: Any) -> Any:
    """A pushed value's dense data (a row_sparse one densified on the host: no program per
    row count)."""
    return value._data if _sparse.stype_of(value) == "default" else _sparse.host_dense(value)


def _pairs_keys(key: Any) -> list:
    return list(key) if isinstance(key, (list, tuple)) else [key]


def _place(data: Any, like: Any, stored: Any) -> jax.Array:
    """``data`` in ``stored``'s dtype, where the dense ``like`` lives (else on its context)."""
    if like is not None:
        return _on(data, like)
    return jax.device_put(jnp.asarray(data).astype(stored.dtype), stored.context.jax_device)


def _pairs(key: Any, value: Any, what: str) -> list:
    if isinstance(key, (list, tuple)):
        if not isinstance(value, (list, tuple)) or len(value) != len(key):
            raise ValueError(
                f"{what}: a list of {len(key)} keys needs a list of {len(key)} values (one per "
                f"key, each an NDArray or a list of NDArrays)"
            )
        return list(zip(key, value))
    return [(key, value)]


class KVStore(KVStoreBase):
    """In-process key-value store with MXNet 1.9.1 ``local`` semantics (see module doc).

    Create with ``mx.kv.create`` (``create.py``), not directly.
    """

    def __init__(self, name: str = "local"):
        self._type = name
        self._store: dict = {}
        self._key_type: type | None = None
        self._updater: Any = None
        self._compression: dict | None = None
        self._residuals: dict = {}
        self._multi = "dist" in name and _dist.num_workers() > 1
        self._order: dict = {}  # MXNet's push order: int keys, str keys in init order
        self._ignored_logged: set = set()
        self._served: dict = {}  # key -> reader of the value a Module's compiled step owns

    # ------------------------------------------------------------------ properties
    @property
    def type(self) -> str:
        """The (lower-cased) name the store was created with."""
        return self._type

    @property
    def rank(self) -> int:
        """This worker's index (``jax.process_index()`` for multi-process dist stores)."""
        return _dist.rank() if self._multi else 0

    @property
    def num_workers(self) -> int:
        """Number of workers (``jax.process_count()`` for multi-process dist stores)."""
        return _dist.num_workers() if self._multi else 1

    @staticmethod
    def is_capable(capability: str) -> bool:
        """``'optimizer'`` -> True (the store can run updates); other strings raise."""
        if capability.lower() == KVStoreBase.OPTIMIZER:
            return True
        raise ValueError(f"Unknown capability: {capability}")

    # ------------------------------------------------------------------ keys
    def _key(self, key: Any) -> Any:
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            kt, key = int, int(key)
        elif isinstance(key, str):
            kt = str
        else:
            raise TypeError(f"kvstore keys must be int or str, got {type(key).__name__}")
        if self._key_type is None:
            self._key_type = kt
        elif self._key_type is not kt:
            raise MXNetError(
                f"Mixed key types are not allowed: this store uses {self._key_type.__name__} "
                f"keys, got {key!r}; use one key type per store"
            )
        return key

    def serve(self, key: Any, read: Any, owns: Any = None) -> None:
        """Make ``key`` show ``read()``: a value a Module updates inside its compiled step
        (its weights with ``update_on_kvstore``, else its summed gradients), so ``pull``
        and ``row_sparse_pull`` see what MXNet's store would hold after each update.
        ``owns(array)``: whether ``array`` is the Module's own copy of that value (a pull
        into it leaves it whole: MXNet's device copy is refreshed, its store unchanged)."""
        key = self._key(key)
        self._store.pop(key, None)  # the Module's value wins (a re-initialised optimizer)
        self._served[key] = (read, owns or (lambda array: False))

    def _owned(self, key: Any, array: Any) -> bool:
        served = self._served.get(key)
        return served is not None and served[1](array)

    def _stored(self, key: Any, what: str) -> Any:
        key = self._key(key)
        if key in self._served:
            if what == "push":
                raise NotImplementedError(
                    f"kvstore push of key {key!r}: a Module updates this parameter inside its "
                    "compiled step (init_optimizer(kvstore=...)); push to a key of your own, "
                    "or change the weight with mod.set_params"
                )
            return self._served[key][0]()
        if key not in self._store:
            raise MXNetError(f"{what}: key {key!r} has not been initialized; call kv.init first")
        return self._store[key]

    # ------------------------------------------------------------------ data movement
    def init(self, key: Any, value: Any) -> None:
        """Store a copy of ``value`` under ``key`` (lists of keys and values allowed), in
        its storage type (dense, row_sparse or csr). In a multi-worker ``dist_*`` store
        every worker stores rank 0's value (MXNet's servers take worker 0's).

        Raises:
            MXNetError: the key was already initialised, or mixed key types.
        """
        for k, v in _pairs(key, value, "init"):
            self._dense_only(k, as_list(v))
            k = self._key(k)
            if k in self._store or k in self._served:
                raise MXNetError(f"duplicate init of key {k!r}")
            v = as_list(v)[0]
            self._store[k] = _sparse.rank0_copy(v) if self._multi else v.copyto(v.context)
            self._order.setdefault(k, k if isinstance(k, int) else len(self._order))

    def _dense_only(self, key: Any, arrays: list) -> None:
        """MXNet's ``nccl`` store takes dense values only (and has no row_sparse_pull)."""
        if self._type == "nccl" and (not arrays or any(map(_sparse.is_sparse, arrays))):
            raise MXNetError(
                f"NCCL kvstore does not support sparse storage type (key {key!r}); use a "
                f"'device' or 'local' store for sparse values"
            )

    def _grouped(self, key: Any, value: Any, what: str) -> list:
        """``(key, [values])`` per distinct key, the values of a repeated key together,
        in MXNet's order (int keys ascending, str keys in the order of their init)."""
        groups: dict = {}
        for k, v in _pairs(key, value, what):
            k = self._key(k)
            groups.setdefault(k, []).extend(as_list(v))
        return sorted(groups.items(), key=lambda kv: self._order.get(kv[0], 0))

    def _sum(self, key: Any, values: list, stored: Any) -> Any:
        """The merged push value of ``key``: an NDArray on ``stored``'s context in the
        storage type of the first value (``kvstore/sparse.py``)."""
        for v in values:
            _sparse.check_push_value(key, v)
            if tuple(v.shape) != tuple(stored.shape):
                raise MXNetError(
                    f"push: key {key!r} holds shape {tuple(stored.shape)} but a value has shape "
                    f"{tuple(v.shape)}"
                )
        if _sparse.stype_of(values[0]) == "row_sparse":
            if self._compression is not None:
                raise NotImplementedError(
                    f"push: 2-bit gradient compression of row_sparse values (key {key!r}); "
                    f"MXNet 1.9.1 quantises their stored rows as if they were dense and sums "
                    f"the wrong rows. Push dense values or create the store without compression"
                )
            merged = _sparse.merge_row_sparse(values, stored.shape, stored.dtype, stored.context)
            if self._multi:
                dense = _dist.allgather(_sparse.host_dense(merged)).sum(0)
                mask = _dist.allgather(_sparse.to_host_mask(merged)).any(0)
                merged = _sparse.from_dense_rows(dense, mask, stored.dtype, stored.context)
            return merged
        like = stored if _sparse.stype_of(stored) == "default" else None
        parts = [_place(_dense_data(v), like, stored) for v in values]
        # 2-bit compression quantises what each sender sends: every device of a local
        # store; the merged local sum of a worker of a dist store (as MXNet's KVStoreDist)
        if self._compression is not None and not self._multi:
            parts = [self._quantize(key, i, p) for i, p in enumerate(parts)]
        total = parts[0]
        for p in parts[1:]:
            total = total + p
        if self._multi:
            if self._compression is not None:
                total = self._quantize(key, "worker", total)
            total = _place(jnp.asarray(_dist.allgather(np.asarray(total)).sum(0)), like, stored)
        return NDArray(total, stored.context)

    def _quantize(self, key: Any, sender: int, grad: jax.Array) -> jax.Array:
        th = self._compression["threshold"]
        r = self._residuals.get((key, sender), 0) + grad
        q = jnp.where(r >= th, th, jnp.where(r <= -th, -th, 0)).astype(grad.dtype)
        self._residuals[(key, sender)] = r - q
        return q

    def push(self, key: Any, value: Any, priority: int = 0) -> None:
        """Sum the value(s) of each key (dense or row_sparse; the values of a repeated key
        together); apply the updater to the stored value, or store the sum (in the sum's
        storage type, as MXNet).

        Raises:
            MXNetError: uninitialised key, shape mismatch or a csr value.
        """
        for k, values in self._grouped(key, value, "push"):
            self._dense_only(k, values)
            stored = self._stored(k, "push")
            merged = self._sum(k, values, stored)
            if self._updater is not None:
                ukey = k.encode("utf-8") if isinstance(k, str) else k
                self._updater(ukey, merged, stored)
            elif _sparse.stype_of(merged) == "default" and _sparse.stype_of(stored) == "default":
                stored._set_data(merged._data)
            else:
                self._store[k] = merged

    def pull(self, key: Any, out: Any = None, priority: int = 0, ignore_sparse: bool = True):
        """Copy the stored value of each key into every array of ``out``.

        ``out`` arrays that are not dense are left alone unless ``ignore_sparse=False``
        (MXNet logs this once per key; use :meth:`row_sparse_pull` for row_sparse ones);
        then they take the stored value in their own storage type.

        Raises:
            ValueError: ``out`` is missing.
            MXNetError: uninitialised key, shape mismatch, a row_sparse value into a csr
                ``out`` (or csr into row_sparse), or ``ignore_sparse=False`` on a
                ``dist_*`` store (MXNet's dist store does not support it).
        """
        if out is None:
            raise ValueError("pull needs out=<NDArray or list of NDArrays> to copy into")
        if not ignore_sparse and "dist" in self._type:
            raise MXNetError(
                "dist kvstore pull doesn't support ignore_sparse=False; use row_sparse_pull "
                "for row_sparse outputs"
            )
        for k, o in _pairs(key, out, "pull"):
            self._dense_only(k, as_list(o))
            stored = self._stored(k, "pull")
            for dst in as_list(o):
                if _sparse.stype_of(dst) != "default" and ignore_sparse:
                    if k not in self._ignored_logged:
                        self._ignored_logged.add(k)
                        _LOG.info(
                            "Warning: non-default weights detected during kvstore pull of key "
                            "%r. This call has been ignored. Please make sure to use "
                            "row_sparse_pull with row_ids.",
                            k,
                        )
                    continue
                if not self._owned(k, dst):
                    _sparse.copy_into(k, stored, dst)

    def pushpull(self, key: Any, value: Any, out: Any = None, priority: int = 0) -> None:
        """``push`` then ``pull`` (into ``value`` itself when ``out`` is None)."""
        self.push(key, value, priority)
        self.pull(key, value if out is None else out, priority)

    def broadcast(self, key: Any, value: Any, out: Any, priority: int = 0) -> None:
        """``init(key, value)`` then ``pull(key, out)``."""
        self.init(key, value)
        self.pull(key, out, priority)

    def row_sparse_pull(self, key: Any, out: Any = None, priority: int = 0, row_ids: Any = None):
        """Pull only the rows ``row_ids`` of row_sparse stored values (MXNet semantics).

        Each ``out`` (a RowSparseNDArray) then stores one row per distinct id of its
        ``row_ids`` (any shape, need not be unique or sorted), ascending: the stored row, or
        zeros where the store has none. ``row_ids`` is an NDArray (used for every ``out``)
        or a list matching ``out`` (nested per key like ``out``). With one ``row_ids`` and a
        list of ``out``, the first is pulled and copied to the others.

        Raises:
            ValueError: ``out`` or ``row_ids`` missing, or their counts differ.
            TypeError: ``row_ids`` is not an NDArray or a list of them.
            MXNetError: uninitialised key, mixed key types, a stored value or ``out`` that
                is not row_sparse, sparse ``row_ids``, a shape mismatch, or a row id
                outside the stored value's rows.
        """
        if out is None or row_ids is None:
            raise ValueError(
                "row_sparse_pull needs out=<RowSparseNDArray or list> and row_ids=<NDArray "
                "or list of NDArrays>"
            )
        for k in _pairs_keys(key):
            self._key(k)
        self._dense_only(key, [])
        pairs, rest = _sparse.row_sparse_pairs(key, out, row_ids)
        for k, dst, rid in pairs:
            stored = self._stored(k, "row_sparse_pull")
            rows, data = _sparse.retained_rows(k, stored, dst.shape, rid)
            for target in [dst, *rest]:  # rest: the outs sharing out[0]'s row_ids
                if tuple(target.shape) != tuple(stored.shape):
                    raise MXNetError(
                        f"row_sparse_pull: key {k!r} holds shape {tuple(stored.shape)}, out "
                        f"has shape {tuple(target.shape)}"
                    )
                if not self._owned(k, target):
                    _sparse.write_row_sparse(target, rows, data)

    # ------------------------------------------------------------------ optimizer
    def set_optimizer(self, optimizer: Any) -> None:
        """Run ``optimizer`` inside the store: later pushes update the stored weights."""
        self._set_updater(get_updater(optimizer))

    def _set_updater(self, updater: Any) -> None:
        self._updater = updater

    def _check_updater(self, what: str) -> Any:
        if self._updater is None or not hasattr(self._updater, "get_states"):
            raise MXNetError(
                f"Cannot {what} states for distributed training: this kvstore has no "
                f"optimizer updater; call kv.set_optimizer(optimizer) first"
            )
        return self._updater

    def save_optimizer_states(self, fname: str, dump_optimizer: bool = False) -> None:
        """Write the updater's states (``Updater.get_states``: mxmod's safe format, the
        format of ``Module.save_optimizer_states``) to ``fname``, atomically."""
        atomic_write(fname, self._check_updater("save").get_states(dump_optimizer))

    def load_optimizer_states(self, fname: str, allow_pickle: bool = False) -> None:
        """Load states written by :meth:`save_optimizer_states` (or by a Module);
        ``allow_pickle`` (mxmod addition) as in ``Updater.set_states``."""
        updater = self._check_updater("load")
        try:
            with open(fname, "rb") as fin:
                data = fin.read()
        except OSError as e:
            raise MXNetError(f"cannot read optimizer states {fname!r}: {e}") from None
        updater.set_states(data, allow_pickle=allow_pickle)

    def set_gradient_compression(self, compression_params: dict) -> None:
        """MXNet's 2-bit gradient compression (``device``/``dist`` stores).

        Each sender adds its residual to the gradient, sends ``+threshold`` where that is
        ``>= threshold``, ``-threshold`` where ``<= -threshold``, else 0, and keeps the
        difference as its new residual; the receiver sums what was sent. On ``push`` here;
        a Module whose store has it set applies it inside its compiled step.

        Args:
            compression_params: ``{'type': '2bit', 'threshold': 0.5}``.

        Raises:
            MXNetError: the store type is not ``device``/``dist`` (as MXNet).
            NotImplementedError: a compression type other than ``'2bit'``.
            ValueError: missing ``type``, unknown keys or ``threshold <= 0``.
        """
        self._compression = _compression.checked_params(self._type, compression_params)

    # ------------------------------------------------------------------ private API
    def barrier(self) -> None:
        """Wait until every worker reaches this call (MXNet's ``_barrier``; a no-op for one
        worker)."""
        if self._multi:
            from jax.experimental import multihost_utils

            multihost_utils.sync_global_devices("mxmod_kvstore_barrier")

    _barrier = barrier

    def _send_command_to_servers(self, head: int, body: str) -> None:
        """No servers exist in mxmod; accepted and ignored as by MXNet's local store."""


from .model_helpers import (  # noqa: E402,F401  (kept importable from here)
    _create_kvstore,
    _initialize_kvstore,
    _update_params,
    _update_params_on_kvstore,
)
