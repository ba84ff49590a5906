"""NDArray views of a group's state: what MXNet's executor-group attributes hand out.

``param_arrays[i][k]``, ``grad_arrays[i][k]``, ``execs[k].arg_dict[...]``... are
``StateView``s: NDArrays whose data is read from (and written to) the group's TrainState
when used. Reading one first runs any deferred step, so it shows the values after the
last ``update()``; writing one changes what the next step uses. Nothing is read while
``fit`` runs its fused steps, so the views cost that path nothing.
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

from ..base import MXNetError
from ..io import DataBatch, DataDesc
from ..ndarray import NDArray
from .slicing import sliced_shape
from .sparse_views import RowSparseStateView


class StateView(NDArray):
    """An NDArray whose data lives elsewhere, reached through ``read``/``write``."""

    def __init__(self, read: Callable, write: Callable, ctx):
        self._base = None
        self._offset = 0
        self._vshape = ()
        self._cache = (None, None)
        self._read = read
        self._write = write
        self._ctx = ctx

    @property
    def _arr(self):
        return self._read()

    @_arr.setter
    def _arr(self, value):
        self._write(value)


class ArrayTable(list):
    """A list of per-parameter device lists that remembers its group (so
    ``mx.model._update_params`` can recognise the module's own arrays and update them in
    one compiled step instead of MXNet's per-index loop)."""

    def __init__(self, items, group, kind: str):
        super().__init__(items)
        self.group = group
        self.kind = kind


def on_device(arr, device):
    """``arr``'s copy on ``device`` (a replicated array's shard; a copy otherwise)."""
    devs = arr.devices() if hasattr(arr, "devices") else ()
    if len(devs) == 1 and device in devs:
        return arr
    for shard in getattr(arr, "addressable_shards", ()):
        if shard.device == device and shard.data.shape == arr.shape:
            return shard.data
    return jax.device_put(arr, device)


def stacked_slot(stacked, k: int, device):
    """Row ``k`` of a per-device stacked array, committed to ``device`` alone (the row's own
    shard where it lives there), so per-device arithmetic never meets a mesh-wide array."""
    for shard in getattr(stacked, "addressable_shards", ()):
        idx = shard.index[0] if shard.index else slice(None)
        if shard.device == device and shard.data.shape[0] == 1 and (idx.start or 0) == k:
            return shard.data[0]
    return on_device(stacked[k], device)


def stacked_replace(stacked, k: int, row):
    """``stacked`` with row ``k`` replaced by ``row``, keeping its sharding (the row's shard
    is swapped where each device holds one row; otherwise one scatter)."""
    shards = list(getattr(stacked, "addressable_shards", ()))
    if len(shards) == stacked.shape[0] and all(s.data.shape[0] == 1 for s in shards):
        parts = []
        for s in shards:
            if (s.index[0].start or 0) == k:
                parts.append(jax.device_put(row[None], s.device))
            else:
                parts.append(s.data)
        return jax.make_array_from_single_device_arrays(stacked.shape, stacked.sharding, parts)
    mesh = getattr(stacked.sharding, "mesh", None)
    target = NamedSharding(mesh, PartitionSpec()) if mesh is not None else stacked.sharding
    return stacked.at[k].set(jax.device_put(row, target))


def slice_of(x, axis, s):
    """``x`` cut to ``s`` along ``axis`` (all of it without an axis or a slice)."""
    if axis < 0 or s is None:
        return x
    return jax.lax.slice_in_dim(x, s.start, s.stop, axis=axis)


# ---------------------------------------------------------------- the group's views
# Each takes the group, a name (an output's index) and a device ``k`` (None: the whole
# group); the group makes each one once per binding (``GroupSurface._view``).


def _zeros(g, shape, dtype, name, k):
    """What MXNet's buffer holds before the first batch: zeros, on its device."""
    return jax.device_put(np.zeros(shape, dtype), g._var_ctx(name, k).jax_device)


def _input_desc(g, name) -> DataDesc:
    for d in g.data_shapes + (g.label_shapes or []):
        if d.name == name:
            return d
    state = g._states[name]
    return DataDesc(name, state.shape, state.dtype)


def _input_zeros(g, name, k):
    d = _input_desc(g, name)
    return _zeros(
        g, sliced_shape(d.shape, g._input_axes.get(name, 0), g._slice(k)), d.dtype, name, k
    )


def _zero_batch(g) -> DataBatch:
    data, label = (
        [np.zeros(d.shape, d.dtype) for d in ds or []] for ds in (g.data_shapes, g.label_shapes)
    )
    return DataBatch(data, label or None)


def _beside(value, like):
    """``value`` replicated over the devices ``like`` lives on (so the two combine)."""
    mesh = getattr(like.sharding, "mesh", None)
    if mesh is not None:
        return jax.device_put(value, NamedSharding(mesh, PartitionSpec()))
    return jax.device_put(value, like.sharding if len(like.sharding.device_set) == 1 else None)


def _written(g, p) -> dict:
    """Outputs of batch ``p`` the user wrote into, by index. MXNet's outputs are plain
    arrays: a write stays until the next ``forward`` (``backward`` and ``update`` leave it),
    as MXNet's stochastic-depth example relies on (``outputs[i] += ...``)."""
    w = g.__dict__.get("_written_outs")
    return w[1] if w is not None and w[0] is p else {}


def _write_output(g, p, i, k, value) -> None:
    """Write ``value`` into output ``i`` of the current batch ``p`` (device ``k``'s slice,
    or all of it when ``k`` is None: one device's merged outputs are its own)."""
    if p is None:
        raise MXNetError("outputs: no batch yet; call forward(data_batch) before writing them")
    cur = _written(g, p).get(i)
    if cur is None:
        g.ensure_outputs()
        cur = g._outs[i]
    value = jnp.asarray(value, cur.dtype)
    axis = g.output_layouts[i]
    s = g._block(k, cur, axis, _output_what(g, i))
    if s is not None:
        idx = [slice(None)] * cur.ndim
        idx[axis] = s
        value = cur.at[tuple(idx)].set(_beside(value, cur))
    if value.shape != cur.shape:
        raise MXNetError(
            f"output {g.output_names[i]!r}: cannot write an array of shape {value.shape} "
            f"into one of shape {cur.shape}"
        )
    if g.__dict__.get("_written_outs", (None,))[0] is not p:
        g._written_outs = (p, {})
    g._written_outs[1][i] = jax.device_put(value, cur.sharding)


def _state_view(g, kind: str, name: str, k):
    def read():
        g.state.flush_all()  # groups sharing these weights finish their updates first
        if (kind, name, k) in g._overlay:
            return g._overlay[(kind, name, k)]
        if k is not None and kind == "param" and name in g.state.value.per_device:
            return stacked_slot(g.state.value.per_device[name], k, g._dev(k))
        store = g.state.params if kind == "param" else g.state.aux
        return store[name] if k is None else on_device(store[name], g._dev(k))

    def write(value):
        g.state.flush_all()
        if k is None or len(g.contexts) == 1:
            g._write_whole(kind, name, value)
        else:
            g._overlay[(kind, name, k)] = jax.device_put(jnp.asarray(value), g._dev(k))

    read = g._grouped(name, k, read)
    if kind == "param" and g._var_stypes.get(name) == "row_sparse":
        return RowSparseStateView(read, write, g._var_ctx(name, k), g._arg_shape[name])
    return StateView(read, write, g._var_ctx(name, k))


def param_view(g, name, k):
    return _state_view(g, "param", name, k)


def aux_view(g, name, k):
    return _state_view(g, "aux", name, k)


def _grad_buffer(g, name):
    """The group whose gradients ``name``'s views show. Groups bound with ``shared_group``
    share their common parameters' gradient buffers (MXNet hands the second group the
    first one's arrays), so they show what the group that computed gradients last
    (``TrainState.grad_owner``) holds, where it holds ``name`` in the same layout."""
    owner = g.state.grad_owner
    if (
        owner is None
        or owner is g
        or not owner._grads_valid
        or name not in owner._grads
        or len(owner.contexts) != len(g.contexts)
        or tuple(owner._arg_shape[name]) != tuple(g._arg_shape[name])
    ):
        return g
    return owner


def grad_view(g, name, k):
    """Device ``k``'s own gradient (its slice of the batch; the sum for ``k=None``)."""
    g._want_stacked = True
    g._keep_grads = True

    def read():
        g.state.flush_all()  # a group sharing the buffers may owe a backward
        h = _grad_buffer(g, name)
        grad = h._current_grads().get(name)
        if grad is None:
            return _zeros(g, g._arg_shape[name], g._arg_type[name], name, k)
        if h._grads_stacked:
            if k is not None or grad.shape[0] == 1:  # this worker's devices (dist_sync)
                local = g._progs.placement.local(grad, 0)
                return stacked_slot(local, 0 if k is None else k, g._dev(k or 0))
            return grad.sum(0)
        return grad

    def write(value):
        g.state.flush_all()
        h = _grad_buffer(g, name)
        cur = h._current_grads()
        value = jnp.asarray(value)
        if h._grads_stacked:
            idx = 0 if k is None else k
            cur[name] = stacked_replace(cur[name], idx, value.astype(cur[name].dtype))
        else:
            cur[name] = value.astype(g._arg_type[name])

    return StateView(g._grouped(name, k, read), write, g._var_ctx(name, k))


def input_view(g, name, k):
    """Device ``k``'s slice of a bound input (zeros until a batch is loaded)."""
    axis = g._input_axes.get(name, 0)

    def read():
        if g._pending is None:
            return _input_zeros(g, name, k)
        local = g._progs.placement.local(g._pending.inputs[name], axis)
        return slice_of(local, axis, g._slice(k))

    def write(value):
        if g._pending is None:  # MXNet's buffers hold zeros until a batch is loaded
            g.forward(_zero_batch(g), is_train=False)
        p = g._pending
        cur = p.inputs[name]
        value = jnp.asarray(value, cur.dtype)
        s = g._slice(k)
        if s is not None and axis >= 0:
            idx = [slice(None)] * cur.ndim
            idx[axis] = s
            value = cur.at[tuple(idx)].set(_beside(value, cur))
        p.inputs = {**p.inputs, name: jax.device_put(value, cur.sharding)}
        p.outs_done = p.grads_done = False

    return StateView(g._grouped(name, k, read), write, g._var_ctx(name, k))


def output_view(g, i, k):
    """Device ``k``'s slice of output ``i`` of the current batch (zeros before one)."""

    def read():
        axis = g.output_layouts[i]
        if g._pending is None:
            return _zeros(g, output_zeros_shape(g, i, k), np.float32, None, k)
        g.ensure_outputs()
        out = _written(g, g._pending).get(i)
        out = g._outs[i] if out is None else out
        local = g._progs.placement.local(out, axis)
        return slice_of(local, axis, g._block(k, local, axis, _output_what(g, i)))

    def write(value):
        _write_output(g, g._pending, i, k, value)

    return StateView(read, write, g._ctx(k))


def _output_what(g, i) -> str:
    return f"output {g.output_names[i]!r}"


def output_zeros_shape(g, i, k) -> tuple:
    """The shape of output ``i`` before any batch: device ``k``'s (the merged one for
    ``k=None``). ``_out_dev_shapes`` are the first device's; a batch axis scales with the
    device's slice, any other stays."""
    shape, axis = list(g._out_dev_shapes[i]), g.output_layouts[i]
    if axis < 0 or not g.batch_size or len(g.contexts) == 1:
        return tuple(shape)
    first = g.slices[0].stop - g.slices[0].start
    if shape[axis] == first:
        s = g._slice(k)
        shape[axis] = g.batch_size if s is None else s.stop - s.start
    elif k is None:
        shape[axis] *= len(g.contexts)
    return tuple(shape)


def kept_output_view(g, p, i):
    """Output ``i`` of batch ``p`` as handed out merged (kept when a later batch came).

    As MXNet's merged outputs of several devices, it is a new array: writing into it
    changes this array only, not what ``get_outputs`` returns next."""
    mine: dict = {}

    def read():
        if "value" in mine:
            return mine["value"]
        if i in _written(g, p):  # a device's part written (get_outputs(False))
            outs = _written(g, p)
        elif p.saved_outs is not None:
            outs = p.saved_outs
        elif p is g._pending:
            g.ensure_outputs()
            outs = g._outs
        else:
            raise MXNetError(
                "these outputs belong to a batch the module no longer holds "
                "(it was re-bound or reshaped); copy outputs you keep with .copy()"
            )
        return g._progs.placement.local(outs[i], g.output_layouts[i])

    def write(value):
        cur = read()
        value = jnp.asarray(value, cur.dtype)
        if value.shape != cur.shape:
            raise MXNetError(
                f"output {g.output_names[i]!r}: cannot write an array of shape "
                f"{value.shape} into one of shape {cur.shape}"
            )
        mine["value"] = jax.device_put(value, cur.sharding)

    return StateView(read, write, g._ctx(None))


def input_grad_view(g, name, k):
    """Device ``k``'s slice of an input's gradient (zeros before a backward)."""
    axis = g._input_axes.get(name, 0)

    def read():
        g.flush()
        grad = g._input_grads.get(name)
        if grad is None:
            return _input_zeros(g, name, k)
        return slice_of(g._progs.placement.local(grad, axis), axis, g._slice(k))

    def write(value):
        g._input_grads[name] = jnp.asarray(value)

    return StateView(g._grouped(name, k, read), write, g._var_ctx(name, k))


class ExecView:
    """One context's executor, as MXNet's ``DataParallelExecutorGroup.execs[k]``.

    Its arrays are the group's views (this device's copy of the parameters, its slice of
    the batch and outputs, its own gradients), the same objects as the group's tables.
    ``forward``/``backward`` run the whole group (every device computes its part in one
    program).
    """

    def __init__(self, group, k: int):
        self._group = group
        self._k = k
        self._dicts: dict = {}

    def _once(self, key, build):
        d = self._dicts.get(key)
        if d is None:
            d = self._dicts[key] = build()
        return d

    def _by_argument(self, key, param_view, input_view, inputs) -> dict:
        """``{argument: view}`` in ``arg_names`` order: parameters from ``param_view``,
        the ``inputs`` from ``input_view`` (a view of None is left out)."""
        g, k = self._group, self._k

        def build():
            out = {}
            for n in g.arg_names:
                view = param_view if n in g.param_names else input_view if n in inputs else None
                if view is not None and (v := view(n, k)) is not None:
                    out[n] = v
            return out

        return self._once(key, build)

    @property
    def arg_dict(self) -> dict:
        g = self._group
        return self._by_argument("arg", g._param_view, g._input_view, set(g._input_names()))

    @property
    def arg_arrays(self) -> list:
        return self._once("args", lambda: [self.arg_dict.get(n) for n in self._group.arg_names])

    @property
    def grad_dict(self) -> dict:
        g = self._group
        wanted = {n for n, r in g.grad_req.items() if r != "null"}
        found = self._by_argument(
            "grad",
            lambda n, k: g._grad_view(n, k) if n in wanted else None,
            g._input_grad_view,
            wanted & set(g.data_names),
        )
        # as MXNet: every argument, None for those without a gradient
        return {n: found.get(n) for n in g.arg_names}

    @property
    def grad_arrays(self) -> list:
        return self._once("grads", lambda: [self.grad_dict.get(n) for n in self._group.arg_names])

    @property
    def aux_dict(self) -> dict:
        g, k = self._group, self._k
        return self._once("aux", lambda: {n: g._aux_view(n, k) for n in g.aux_names})

    @property
    def aux_arrays(self) -> list:
        return self._once("auxs", lambda: list(self.aux_dict.values()))

    @property
    def outputs(self) -> list:
        g, k = self._group, self._k
        return self._once(
            "outs", lambda: [g._output_view(i, k) for i in range(len(g.output_names))]
        )

    @property
    def output_dict(self) -> dict:
        return dict(zip(self._group.output_names, self.outputs))

    def set_monitor_callback(self, callback, monitor_all=False) -> None:
        self._group.set_monitor_callback(callback, monitor_all)

    def monitor_internals(self) -> list:
        return self._group.monitor_internals(self._k)

    @property
    def symbol(self):
        return self._group.symbol

    def forward(self, is_train: bool = False, **kwargs) -> list:
        """Run the group on its current batch (``kwargs`` write this device's inputs)."""
        for name, value in kwargs.items():
            self.arg_dict[name][:] = value
        self._group._rerun_forward(is_train)
        return self.outputs

    def backward(self, out_grads=None, is_train: bool = True) -> None:
        self._group.backward(out_grads)

    def copy_params_from(self, arg_params, aux_params=None, allow_extra_params=False):
        self._group.set_params(arg_params, aux_params or {}, allow_extra=allow_extra_params)
