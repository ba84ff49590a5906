"""MXNet's ``DataParallelExecutorGroup`` attributes, as views of the group's state.

What user Module subclasses read and write (``param_arrays``, ``grad_arrays``,
``execs``, ...), with MXNet's shapes and per-device meaning: ``param_arrays[i][k]`` is
device ``k``'s copy of parameter ``i``; ``grad_arrays[i][k]`` device ``k``'s own
gradient (of its slice of the batch, before the kvstore sums them). Each view is made
once per binding, so MXNet's identities hold (``param_arrays[i][k] is
execs[k].arg_arrays[j]``); before any batch the views read zeros, as MXNet's freshly bound
arrays do. The functions taking ``self`` are ``DataParallelExecutorGroup``'s methods,
bound by name in its class body (one class; this file is its surface concept).
"""

from __future__ import annotations


import jax
import jax.numpy as jnp
import numpy as np

from ..base import MXNetError
from ..executor.executor import forward_internals
from ..executor.monitor_taps import backward_taps
from ..executor.replicas import device_block
from ..io import DataDesc
from ..ndarray import NDArray
from .slicing import sliced_shape
from .views import (
    ArrayTable,
    ExecView,
    StateView,
    aux_view,
    grad_view,
    input_grad_view,
    input_view,
    kept_output_view,
    on_device,
    output_view,
    param_view,
    slice_of,
)


# ------------------------------------------------------------ view plumbing
def _dev(self, k):
    return self.contexts[k].jax_device


def _ctx(self, k):
    return self.contexts[0 if k is None else k]


def _var_ctx(self, name, k):
    """The context MXNet gives ``name``'s arrays on device ``k``: its ctx_group's
    (``group2ctxs``) when it has one, else the device's."""
    group = self._var_groups.get(name)
    where = self._group2ctxs[0 if k is None else k]
    if group is not None and where and group in where:
        return where[group]
    return self._ctx(k)


def _grouped(self, name, k, read):
    """``read`` moved to the ctx_group's device of ``name`` (identity without one)."""
    ctx = self._var_ctx(name, k)
    if ctx is self._ctx(k):
        return read
    return lambda: jax.device_put(read(), ctx.jax_device)


def _slice(self, k):
    if k is None or len(self.contexts) == 1:
        return None
    return self.slices[k]


def _block(self, k, x, axis, what):
    """Device ``k``'s part of ``x``, a result merged along ``axis`` (its batch slice when
    that axis holds the batch; ``slicing.device_block``)."""
    if k is None or axis < 0 or len(self.contexts) == 1:
        return None
    return device_block(self.slices, self.batch_size, k, x.shape[axis], what)


def _commit_overlay(self) -> None:
    """Per-device writes become the state. A parameter written per device on a mesh keeps
    one copy per device (``StepState.per_device``; ``params`` holds their mean, what MXNet's
    ``get_params`` averages), so each device runs with its own weights as MXNet's
    executors do; elsewhere (aux states, one device, replicas) device 0's copy wins."""
    overlay = dict(self._overlay)
    self._overlay.clear()  # in place: groups bound with shared_group share the dict
    writes: dict = {}
    for (kind, name, k), value in overlay.items():
        writes.setdefault((kind, name), {})[k] = value
    pl = self._progs.placement
    per_device_ok = pl.multi and pl.processes == 1 and not hasattr(self._progs, "all_devices")
    for (kind, name), by_dev in writes.items():
        if kind == "param" and per_device_ok:
            _write_per_device(self, name, by_dev)
        else:
            self._write_whole(kind, name, by_dev[min(by_dev)])


def _write_per_device(self, name, by_dev: dict) -> None:
    holder = self.state
    cur = holder.params[name]
    held = holder.value.per_device.get(name)
    rows = [
        by_dev[k].astype(cur.dtype).reshape(cur.shape)
        if k in by_dev
        else (held[k] if held is not None else cur)
        for k in range(len(self.contexts))
    ]
    stacked = jax.device_put(
        jnp.stack([jax.device_put(r, self._dev(0)) for r in rows]),
        self._progs.placement.sharding(0),
    )
    mean = jax.device_put(stacked.mean(0).astype(cur.dtype), self._progs.replicated())
    holder.value = holder.value.replace(
        params={**holder.params, name: mean},
        per_device={**holder.value.per_device, name: stacked},
    )
    holder.version += 1


def _write_whole(self, kind, name, value) -> None:
    store = self.state.params if kind == "param" else self.state.aux
    cur = store[name]
    if isinstance(value, jax.Array):
        arr = value if value.dtype == cur.dtype else value.astype(cur.dtype)
    else:
        arr = np.asarray(value, dtype=cur.dtype)  # host values: no program to compile
    if tuple(arr.shape) != tuple(cur.shape):
        raise MXNetError(f"{name!r}: cannot write shape {tuple(arr.shape)} into {tuple(cur.shape)}")
    place = getattr(self._progs.placement, "place_replicated", None)  # dist_sync
    if place:
        arr = place(jnp.array(arr, copy=True))
    else:  # a private copy: the compiled step donates (deletes) the buffers it replaces
        arr = jax.device_put(arr, self._progs.replicated(), may_alias=False)
    if kind == "param":
        self.state.params = {**self.state.params, name: arr}
        self.state.version += 1
        if name in self.state.value.per_device:  # one value for every device again
            rest = {n: v for n, v in self.state.value.per_device.items() if n != name}
            self.state.value = self.state.value.replace(per_device=rest)
    else:
        self.state.aux = {**self.state.aux, name: arr}


def _view(self, kind, name, k, make):
    """The one view of ``(kind, name, k)`` for this binding (``make(group, name, k)``)."""
    return self._table((kind, name, k), lambda: make(self, name, k))


def _param_view(self, name, k):
    return self._view("param", name, k, param_view)


def _aux_view(self, name, k):
    return self._view("aux", name, k, aux_view)


def _grad_view(self, name, k):
    return self._view("grad", name, k, grad_view)


def _input_view(self, name, k):
    return self._view("input", name, k, input_view)


def _output_view(self, i, k):
    return self._view("output", i, k, output_view)


def _kept_output_view(self, p, i):
    return kept_output_view(self, p, i)


def _input_grad_view(self, name, k):
    return self._view("input_grad", name, k, input_grad_view)


def _current_grads(self) -> dict:
    if not self._grads_valid:
        p = self._pending
        if p is not None and p.grads_done and not p.update_done:
            self._run_fwd_bwd(p, None)
        else:
            if p is not None:
                self.logger.warning(
                    "gradients of steps run before they were first read are "
                    "not kept; they are from the next step on"
                )
            self._zero_grads()
    elif self._want_stacked and not self._grads_stacked and len(self.contexts) > 1:
        p = self._pending
        if p is not None and p.grads_done and not p.update_done:
            self._run_fwd_bwd(p, None)
    return self._grads


def _zero_grads(self) -> None:
    """Gradient buffers as MXNet's are before any backward: zeros."""
    n = len(self.contexts) if self._want_stacked else None
    self._grads = {
        m: jnp.zeros(((n,) if n else ()) + tuple(self._arg_shape[m]), self._arg_type[m])
        for m in self._diff_params
    }
    self._grads_stacked = bool(n)
    self._grads_valid = True
    if self.state.grad_owner is None:  # the buffers groups sharing these weights show
        self.state.grad_owner = self


def _input_names(self) -> list:
    return self.data_names + self.label_names + self.state_names


# ------------------------------------------------------------ MXNet's attributes
def _table(self, key, build):
    t = self._tables.get(key)
    if t is None:
        t = self._tables[key] = build()
    return t


def _per_dev(self, make):
    return [make(k) for k in range(len(self.contexts))]


def _per_name(self, names, view):
    return [self._per_dev(lambda k, n=n: view(n, k)) for n in names]


def _sliced_inputs(self, names):
    """MXNet's ``data_arrays``/``label_arrays``: ``(slice, execs[k].arg_dict[name])``."""
    cut = self.slices or [slice(k, k + 1) for k in range(len(self.contexts))]
    return [
        [(cut[k], v) for k, v in enumerate(row)] for row in self._per_name(names, self._input_view)
    ]


@property
def param_arrays(self):
    return self._table(
        "param",
        lambda: ArrayTable(self._per_name(self.param_names, self._param_view), self, "param"),
    )


@property
def grad_arrays(self):
    if not self.for_training:
        return None
    self._want_stacked = True
    self._keep_grads = True
    return self._table(
        "grad",
        lambda: ArrayTable(
            [
                self._per_dev(lambda k, n=n: self._grad_view(n, k))
                if self.grad_req.get(n) != "null"
                else [None] * len(self.contexts)
                for n in self.param_names
            ],
            self,
            "grad",
        ),
    )


@property
def aux_arrays(self):
    return self._table("aux", lambda: self._per_name(self.aux_names, self._aux_view))


@property
def data_arrays(self):
    return self._table("data", lambda: self._sliced_inputs(self.data_names))


@property
def label_arrays(self):
    if self.label_shapes is None:
        return None
    return self._table("label", lambda: self._sliced_inputs(self.label_names))


@property
def state_arrays(self):
    return self._table("state", lambda: self._per_name(self.state_names, self._input_view))


@property
def input_grad_arrays(self):
    if not self.inputs_need_grad:
        return None
    names = [n for n in self.data_names if n in self.arg_names]
    return self._table("igrad", lambda: self._per_name(names, self._input_grad_view))


@property
def execs(self):
    return self._table("execs", lambda: [ExecView(self, k) for k in range(len(self.contexts))])


@property
def shared_data_arrays(self):
    """MXNet's per-context buffers of the arguments that are not parameters: the bound
    inputs, their gradients, the other arguments (``{name: array}``). A group bound with
    ``shared_group=`` holds the same dicts as that group and adds the names it lacks
    (its own arrays for the names already there are not entered, as MXNet reuses them)."""

    def pool(k):
        out = {n: self._input_view(n, k) for n in self._input_names()}
        for n in self.data_names:
            if self.grad_req.get(n, "null") != "null":
                out[f"grad of {n}"] = self._input_grad_view(n, k)
        out.update((n, self._view("const", n, k, _const_view)) for n in self._consts)
        return out

    def fill():
        for k, shared in enumerate(self._shared_arrays):
            for name, arr in pool(k).items():
                if self._owns_shared_arrays or name not in shared:
                    shared[name] = arr
        return self._shared_arrays

    return self._table("shared", fill)


def _const_view(self, name, k):
    """Device ``k``'s array of an argument that is neither a parameter nor an input.
    The group's program holds one copy for every device (MXNet: one per executor), so a
    write through any device's array sets it on all of them."""

    def write(value):
        cur = self._consts[name]
        value = jax.device_put(jnp.asarray(value, cur.dtype), cur.sharding)
        self._consts = {**self._consts, name: value}

    def read():
        return on_device(self._consts[name], self._dev(k))

    return StateView(read, write, self._var_ctx(name, k))


def install_monitor(self, mon) -> None:
    """MXNet's: install ``mon`` on every executor (each reports its own slice)."""
    for exe in self.execs:
        mon.install(exe)


@property
def num_outputs(self) -> int:
    return len(self.output_names)


@property
def _total_exec_bytes(self) -> int:
    """Device memory of the compiled training (or inference) step, from XLA's memory
    analysis of the forward-backward program (0 before any batch ran)."""
    p = self._pending
    if p is None:
        return 0
    try:
        fn = (
            self._progs.forward_backward(tuple(p.inputs), False)
            if self.for_training
            else self._progs.forward(False, tuple(p.inputs))
        )
        args = (self._params_in(), self.state.aux, p.inputs, p.key)
        mem = fn.lower(*args).compile().memory_analysis()
        return int(mem.temp_size_in_bytes + mem.argument_size_in_bytes + mem.output_size_in_bytes)
    except Exception:  # noqa: BLE001 - memory analysis is optional per backend
        return 0


def _sliced_shape(self, shapes, i, major_axis):
    """The descs of executor ``i``: batch axes cut to its slice."""
    return [
        DataDesc(d.name, sliced_shape(d.shape, a, self.slices[i]), d.dtype, d.layout)
        for d, a in zip(shapes, major_axis)
    ]


def _collect_arrays(self) -> None:
    """MXNet rebuilds its array lists after binding; here they are views already."""
    self._tables = {}


def _bind_ith_exec(self, i, data_shapes, label_shapes, shared_group):
    return self.execs[i]


def get_params(self, arg_params: dict, aux_params: dict) -> None:
    """Copy device values into the host dicts (in place, cast to their dtypes)."""
    self.flush()
    if self._overlay:
        self._commit_overlay()
    cpu = jax.local_devices(backend="cpu")[0]
    for src, dst in ((self.state.params, arg_params), (self.state.aux, aux_params)):
        for name, arr in src.items():
            if not arr.is_fully_addressable:  # dist_sync: this worker's replica
                arr = arr.addressable_data(0)
            host = jax.device_put(arr, cpu)
            if host is arr:
                host = jnp.array(host, copy=True)
            if name in dst and getattr(dst[name], "stype", "") == "row_sparse":
                # as MXNet's row_sparse weights (initialised whole): every row stored
                rows = np.arange(host.shape[0], dtype=np.int64)
                dst[name]._set_parts(host.shape, np.asarray(host, dst[name].dtype), [rows])
            elif name in dst and isinstance(dst[name], NDArray):
                dst[name]._set_data(host.astype(dst[name].dtype))
            else:
                dst[name] = NDArray(host)


def set_params(self, arg_params: dict, aux_params: dict, allow_extra: bool = False) -> None:
    self.flush()
    for src, kind, names in (
        (arg_params, "param", self.state.params),
        (aux_params or {}, "aux", self.state.aux),
    ):
        for name, value in src.items():
            if name not in names:
                if name in self._consts or allow_extra:
                    continue
                what = "the arguments" if kind == "param" else "the auxiliary states"
                raise ValueError(
                    f'Find name "{name}" that is not in {what}; pass allow_extra=True to ignore it'
                )
            if getattr(value, "stype", "default") != "default":  # programs keep weights dense
                value = value.tostype("default")
            arr = value._data if isinstance(value, NDArray) else jnp.asarray(np.asarray(value))
            if tuple(arr.shape) != tuple(names[name].shape):
                raise MXNetError(
                    f"parameter {name!r} has shape {tuple(arr.shape)} but the "
                    f"symbol needs {tuple(names[name].shape)}"
                )
            self._write_whole(kind, name, arr)


# ------------------------------------------------------------ states (RNN)
def get_states(self, merge_multi_context=True):
    states = [NDArray(self._states[n]) for n in self.state_names]
    if merge_multi_context:
        return states
    return [
        [NDArray(slice_of(s._data, 0, self._slice(k))) for k in range(len(self.contexts))]
        for s in states
    ]


def set_states(self, states=None, value=None):
    if (states is None) == (value is None):
        raise MXNetError("set_states needs exactly one of states=[...] or value=scalar")
    for i, n in enumerate(self.state_names):
        cur = self._states[n]
        if value is not None:
            new = jnp.full(cur.shape, value, cur.dtype)
        else:
            parts = states[i]
            parts = parts if isinstance(parts, (list, tuple)) else [parts]
            arrays = [p._data if isinstance(p, NDArray) else jnp.asarray(p) for p in parts]
            new = jnp.concatenate(arrays, axis=0) if len(arrays) > 1 else arrays[0]
            if new.shape != cur.shape:
                raise MXNetError(f"state {n!r} must have shape {cur.shape}, got {new.shape}")
        self._states[n] = jax.device_put(new.astype(cur.dtype), cur.sharding)


# ------------------------------------------------------------ monitor
def set_monitor_callback(self, callback, monitor_all=False) -> None:
    self._monitor_cb = callback


@property
def arg_dict(self) -> dict:
    out = {n: self._param_view(n, None) for n in self.state.params}
    if self._pending is not None:
        out.update({n: NDArray(v) for n, v in self._pending.inputs.items()})
    return out


@property
def aux_dict(self) -> dict:
    return {n: self._aux_view(n, None) for n in self.state.aux}


def _device_part(self, x, axis, k):
    """Device ``k``'s part of a batch-split array (all of it for ``k=None``)."""
    local = self._progs.placement.local(x, axis)
    return slice_of(local, axis, self._block(k, local, axis, "a batch result"))


def monitor_internals(self, k=None):
    """(name, array) of every node output for the last batch (one extra forward), on
    device ``k``'s slice of it (as MXNet's executor ``k`` computed them)."""
    p = self._pending
    if p is None:
        return []
    self.flush()
    params, aux = p.monitor_state or (self._params_in(), self.state.aux)
    inputs = {n: self._device_part(v, self._input_axes.get(n, 0), k) for n, v in p.inputs.items()}
    args = {**params, **inputs}
    found = forward_internals(self.symbol, args, aux, p.key, p.is_train)
    if p.backward or p.grads_done:
        heads = p.head_grads and [
            self._device_part(g, axis, k) for g, axis in zip(p.head_grads, self.output_layouts)
        ]
        taps = backward_taps(self._graph, args, aux, p.key, p.is_train, heads)
        found += [(n, NDArray(g)) for n, g in taps]
    return found
