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
from jax.sharding import NamedSharding, PartitionSpec

from ..ndarray import NDArray


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


class ExecView:
    """One context's executor, as MXNet's ``DataParallelExecutorGroup.execs[k]``.

    Its arrays are views of the group (this device's copy of the parameters, its slice of
    the batch and outputs, its own gradients). ``forward``/``backward`` run the whole
    group (every device computes its part in one program).
    """

    def __init__(self, group, k: int):
        self._group = group
        self._k = k

    @property
    def arg_dict(self) -> dict:
        g, k = self._group, self._k
        out = {}
        for name in g.arg_names:
            if name in g.param_names:
                out[name] = g._param_view(name, k)
            elif name in g._input_names():
                out[name] = g._input_view(name, k)
        return out

    @property
    def arg_arrays(self) -> list:
        d = self.arg_dict
        return [d.get(n) for n in self._group.arg_names]

    @property
    def grad_dict(self) -> dict:
        g, k = self._group, self._k
        out = {n: g._grad_view(n, k) for n in g.param_names if g.grad_req.get(n) != "null"}
        for n in g.data_names:
            if g.grad_req.get(n, "null") != "null":
                out[n] = g._input_grad_view(n, k)
        return out

    @property
    def grad_arrays(self) -> list:
        d = self.grad_dict
        return [d.get(n) for n in self._group.arg_names]

    @property
    def aux_dict(self) -> dict:
        return {n: self._group._aux_view(n, self._k) for n in self._group.aux_names}

    @property
    def aux_arrays(self) -> list:
        d = self.aux_dict
        return [d[n] for n in self._group.aux_names]

    @property
    def outputs(self) -> list:
        g = self._group
        return [g._output_view(i, self._k) for i in range(len(g.output_names))]

    @property
    def output_dict(self) -> dict:
        return dict(zip(self._group.output_names, self.outputs))

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
