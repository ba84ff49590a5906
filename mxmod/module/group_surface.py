"""MXNet's ``DataParallelExecutorGroup`` attributes, as views of the group's state.

What user Module subclasses read and write (``param_arrays``, ``grad_arrays``,
``execs``, ...), with MXNet's shapes and per-device meaning: ``param_arrays[i][k]`` is
device ``k``'s copy of parameter ``i``; ``grad_arrays[i][k]`` device ``k``'s own
gradient (of its slice of the batch, before the kvstore sums them).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..base import MXNetError
from ..ndarray import NDArray
from .slicing import decide_slices, sliced_shape
from .views import stacked_replace, stacked_slot, ArrayTable, ExecView, StateView, on_device


def _slice_of(x, axis, s):
    if axis < 0 or s is None:
        return x
    return jax.lax.slice_in_dim(x, s.start, s.stop, axis=axis)


class GroupSurface:
    """Mixin of ``DataParallelExecutorGroup``: MXNet's attributes and the views."""

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

    def _commit_overlay(self) -> None:
        """Per-device parameter/aux writes become the (replicated) value: device 0's copy
        wins (MXNet keeps the copies equal; a per-device update loop writes each)."""
        overlay, self._overlay = self._overlay, {}
        done = set()
        for kind, name, k in sorted(overlay, key=lambda t: t[2]):
            if (kind, name) in done:
                continue
            done.add((kind, name))
            self._write_whole(kind, name, overlay[(kind, name, k)])

    def _write_whole(self, kind, name, value) -> None:
        store = self.state.params if kind == "param" else self.state.aux
        cur = store[name]
        arr = value if isinstance(value, jax.Array) else jnp.asarray(np.asarray(value))
        if tuple(arr.shape) != tuple(cur.shape):
            raise MXNetError(
                f"{name!r}: cannot write shape {tuple(arr.shape)} into {tuple(cur.shape)}"
            )
        # a private copy: the compiled step donates (deletes) the buffers it replaces
        arr = jnp.array(arr, dtype=cur.dtype, copy=True)
        place = getattr(self._progs.placement, "place_replicated", None)  # dist_sync
        arr = place(arr) if place else jax.device_put(arr, self._progs.replicated())
        if kind == "param":
            self.state.params = {**self.state.params, name: arr}
            self.state.version += 1
        else:
            self.state.aux = {**self.state.aux, name: arr}

    def _state_view(self, kind: str, name: str, k):
        def read():
            self.flush()
            if (kind, name, k) in self._overlay:
                return self._overlay[(kind, name, k)]
            store = self.state.params if kind == "param" else self.state.aux
            return store[name] if k is None else on_device(store[name], self._dev(k))

        def write(value):
            self.flush()
            if k is None or len(self.contexts) == 1:
                self._write_whole(kind, name, value)
            else:
                self._overlay[(kind, name, k)] = jax.device_put(jnp.asarray(value), self._dev(k))

        return StateView(self._grouped(name, k, read), write, self._var_ctx(name, k))

    def _param_view(self, name, k):
        return self._state_view("param", name, k)

    def _aux_view(self, name, k):
        return self._state_view("aux", name, k)

    def _grad_view(self, name, k):
        self._want_stacked = True
        self._keep_grads = True

        def read():
            self.flush()
            g = self._current_grads().get(name)
            if g is None:
                return jnp.zeros(self._arg_shape[name], self._arg_type[name])
            if self._grads_stacked:
                if k is not None or g.shape[0] == 1:  # this worker's devices (dist_sync)
                    local = self._progs.placement.local(g, 0)
                    return stacked_slot(local, 0 if k is None else k, self._dev(k or 0))
                return g.sum(0)
            return g

        def write(value):
            self.flush()
            cur = self._current_grads()
            value = jnp.asarray(value)
            if self._grads_stacked:
                idx = 0 if k is None else k
                cur[name] = stacked_replace(cur[name], idx, value.astype(cur[name].dtype))
            else:
                cur[name] = value.astype(self._arg_type[name])

        return StateView(self._grouped(name, k, read), write, self._var_ctx(name, k))

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

    def _input_view(self, name, k):
        axis = self._input_axes.get(name, 0)

        def read():
            p = self._require_pending(f"input {name!r}")
            return _slice_of(
                self._progs.placement.local(p.inputs[name], axis), axis, self._slice(k)
            )

        def write(value):
            p = self._require_pending(f"input {name!r}")
            cur = p.inputs[name]
            value = jnp.asarray(value, cur.dtype)
            s = self._slice(k)
            if s is not None and axis >= 0:
                idx = [slice(None)] * cur.ndim
                idx[axis] = s
                value = cur.at[tuple(idx)].set(value)
            p.inputs = {**p.inputs, name: jax.device_put(value, cur.sharding)}
            p.outs_done = p.grads_done = False

        return StateView(self._grouped(name, k, read), write, self._var_ctx(name, k))

    def _output_view(self, i, k):
        def read():
            self.ensure_outputs()
            out = self._progs.placement.local(self._outs[i], self.output_layouts[i])
            return _slice_of(out, self.output_layouts[i], self._slice(k))

        def write(value):
            raise MXNetError("outputs are read-only: they are recomputed by forward()")

        return StateView(read, write, self._ctx(k))

    def _kept_output_view(self, p, i):
        def read():
            if p.saved_outs is not None:
                outs = p.saved_outs
            elif p is self._pending:
                self.ensure_outputs()
                outs = self._outs
            else:
                raise MXNetError(
                    "these outputs belong to a batch the module no longer holds "
                    "(it was re-bound or reshaped); copy outputs you keep with .copy()"
                )
            return self._progs.placement.local(outs[i], self.output_layouts[i])

        def write(value):
            raise MXNetError("outputs are read-only: they are recomputed by forward()")

        return StateView(read, write, self._ctx(None))

    def _input_grad_view(self, name, k):
        axis = self._input_axes.get(name, 0)

        def read():
            self.flush()
            return _slice_of(
                self._progs.placement.local(self._input_grads[name], axis), axis, self._slice(k)
            )

        def write(value):
            self._input_grads[name] = jnp.asarray(value)

        return StateView(self._grouped(name, k, read), write, self._var_ctx(name, k))

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

    @property
    def param_arrays(self):
        return self._table(
            "param",
            lambda: ArrayTable(
                [self._per_dev(lambda k, n=n: self._param_view(n, k)) for n in self.param_names],
                self,
                "param",
            ),
        )

    @property
    def grad_arrays(self):
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
        return self._table(
            "aux",
            lambda: [self._per_dev(lambda k, n=n: self._aux_view(n, k)) for n in self.aux_names],
        )

    @property
    def data_arrays(self):
        return self._table(
            "data",
            lambda: [
                [
                    (self.slices[k] if self.slices else slice(None), self._input_view(n, k))
                    for k in range(len(self.contexts))
                ]
                for n in self.data_names
            ],
        )

    @property
    def label_arrays(self):
        if not self.label_names:
            return None
        return self._table(
            "label",
            lambda: [
                [
                    (self.slices[k] if self.slices else slice(None), self._input_view(n, k))
                    for k in range(len(self.contexts))
                ]
                for n in self.label_names
            ],
        )

    @property
    def state_arrays(self):
        return self._table(
            "state",
            lambda: [
                self._per_dev(lambda k, n=n: self._input_view(n, k)) for n in self.state_names
            ],
        )

    @property
    def input_grad_arrays(self):
        if not self.inputs_need_grad:
            return []
        return self._table(
            "igrad",
            lambda: [
                self._per_dev(lambda k, n=n: self._input_grad_view(n, k)) for n in self.data_names
            ],
        )

    @property
    def execs(self):
        return self._table("execs", lambda: [ExecView(self, k) for k in range(len(self.contexts))])

    @property
    def _default_execs(self):
        return None

    @property
    def shared_data_arrays(self):
        return [{} for _ in self.contexts]

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
            return int(
                mem.temp_size_in_bytes + mem.argument_size_in_bytes + mem.output_size_in_bytes
            )
        except Exception:  # noqa: BLE001 - memory analysis is optional per backend
            return 0

    def decide_slices(self, data_shapes):
        batch_size, slices, _ = decide_slices(data_shapes, self.workload)
        return slices

    def _sliced_shape(self, shapes, i, major_axis):
        s = self.slices[i]
        return [(d.name, sliced_shape(d.shape, a, s)) for d, a in zip(shapes, major_axis)]

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
                if name in dst and isinstance(dst[name], NDArray):
                    dst[name]._set_data(host.astype(dst[name]._data.dtype))
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
                        f'Find name "{name}" that is not in {what}; pass '
                        "allow_extra=True to ignore it"
                    )
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
            [NDArray(_slice_of(s._data, 0, self._slice(k))) for k in range(len(self.contexts))]
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

    def monitor_internals(self):
        """(name, array) of every node output for the last batch (one extra forward)."""
        p = self._pending
        if p is None:
            return []
        self.flush()
        from ..executor import compiled_for

        internals = self.symbol.get_internals()
        graph = compiled_for(internals).graph
        params, aux = p.monitor_state or (self._params_in(), self.state.aux)
        args = {**params, **p.inputs}
        outs, _ = jax.jit(graph, static_argnames="is_train")(args, aux, p.key, is_train=p.is_train)
        names = internals.list_outputs()
        found = [(n, NDArray(o)) for n, o in zip(names, outs) if n not in args]
        if p.backward or p.grads_done:
            from ..executor.monitor_taps import backward_taps

            taps = backward_taps(self._graph, args, aux, p.key, p.is_train, p.head_grads)
            found += [(n, NDArray(g)) for n, g in taps]
        return found
