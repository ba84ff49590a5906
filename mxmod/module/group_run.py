"""Running a bound group: loading batches, deferred forward/backward, metrics, updates."""
from __future__ import annotations

from collections import OrderedDict

import jax
import jax.numpy as jnp
import numpy as np

from ..base import MXNetError
from ..metric._base import _note_host_update
from ..ndarray import NDArray
from .programs import _metric_key


class GroupRunner:
    """Mixin of ``DataParallelExecutorGroup``: everything that runs the programs."""

    # ------------------------------------------------------------ running
    def _load(self, data_batch, is_train) -> dict:
        """Device arrays for every bound input of ``data_batch``."""
        if isinstance(data_batch, (list, tuple)):
            data_batch = self.merge_presliced(data_batch)
        inputs = {}
        data = list(data_batch.data or [])
        if len(data) != len(self.data_names):
            raise MXNetError(f"the batch has {len(data)} data arrays but the module is bound "
                             f"with {len(self.data_names)} ({self.data_names})")
        for desc, arr in zip(self.data_shapes, data):
            inputs[desc.name] = self._put(desc, arr, "data")
        labels = list(data_batch.label or []) if data_batch.label is not None else []
        if self.label_shapes and labels:
            if len(labels) != len(self.label_names):
                raise MXNetError(f"the batch has {len(labels)} label arrays but the module is "
                                 f"bound with {len(self.label_names)} ({self.label_names})")
            for desc, arr in zip(self.label_shapes, labels):
                inputs[desc.name] = self._put(desc, arr, "label")
        elif self.label_shapes:
            prev = self._state["inputs"] if self._state else {}
            for desc in self.label_shapes:
                if desc.name in prev:
                    inputs[desc.name] = prev[desc.name]
                elif is_train and self.for_training:
                    raise MXNetError(f"the batch has no labels but the module was bound for "
                                     f"training with labels {self.label_names}; give the "
                                     "DataBatch its label arrays")
                else:
                    inputs[desc.name] = jax.device_put(
                        jnp.zeros(desc.shape, desc.dtype), self._progs.input_sharding(desc.name))
        inputs.update(self._states)
        return inputs

    def merge_presliced(self, batches):
        """One DataBatch from a list of per-context batches (MXNet's pre-sliced form)."""
        from ..io import DataBatch
        if len(batches) != len(self.contexts):
            raise MXNetError(f"got {len(batches)} pre-sliced batches for {len(self.contexts)} "
                             "contexts; give one DataBatch per context")

        def cat(parts, axis):
            arrays = [p._data if isinstance(p, NDArray) else jnp.asarray(np.asarray(p)) for p in parts]
            return NDArray(arrays[0] if axis < 0 else jnp.concatenate(arrays, axis=axis))

        data = [cat([b.data[i] for b in batches], ax) for i, ax in enumerate(self.data_layouts)]
        label = None
        if batches[0].label:
            label = [cat([b.label[i] for b in batches], ax)
                     for i, ax in enumerate(self.label_layouts or [0] * len(batches[0].label))]
        return DataBatch(data, label, pad=batches[0].pad)

    def _put(self, desc, arr, kind):
        x = arr._data if isinstance(arr, NDArray) else jnp.asarray(np.asarray(arr))
        if tuple(x.shape) != tuple(desc.shape):
            raise MXNetError(f"{kind} {desc.name!r} has shape {tuple(x.shape)} but the module is "
                             f"bound with {tuple(desc.shape)} (provide_data/provide_label)")
        if x.dtype != np.dtype(desc.dtype):
            x = x.astype(desc.dtype)
        return jax.device_put(x, self._progs.input_sharding(desc.name))

    def forward(self, data_batch, is_train=None) -> None:
        """Record the batch; outputs (and gradients) are computed when first needed."""
        is_train = self.for_training if is_train is None else bool(is_train)
        from .. import random as mxrandom
        key = mxrandom.next_key() if self._graph.has_random else _zero_key()
        self._state = {"inputs": self._load(data_batch, is_train), "is_train": is_train,
                       "key": key, "outs": None, "grads": False, "stats": None,
                       "labels": data_batch.label, "pending_grads": False}

    def _params_in(self) -> dict:
        return {**{n: a._data for n, a in self.params.items()}, **self._consts}

    def _aux_in(self) -> dict:
        return {n: a._data for n, a in self.aux.items()}

    def _store_outputs(self, outs) -> None:
        if len(self.outputs) == len(outs):
            for h, o in zip(self.outputs, outs):
                h._set_data(o)
        else:
            self.outputs = [NDArray(o) for o in outs]
        self._state["outs"] = outs

    def _store_aux(self, new_aux: dict) -> None:
        for n, v in new_aux.items():
            self.aux[n]._set_data(v)

    def _can_fuse_grads(self) -> bool:
        return self.for_training and all(self._graph.is_loss) and not self._accumulates()

    def _names(self):
        return (tuple(self.label_names), tuple(self.output_names))

    def ensure_outputs(self, metric=None) -> None:
        st = self._require_forward("outputs")
        if st["outs"] is not None:
            return
        if st["is_train"] and self._can_fuse_grads():
            self._run_fwd_bwd(None, metric)
            return
        fn = self._progs.forward(st["is_train"], tuple(st["inputs"]), metric, self._names())
        outs, new_aux, stats = fn(self._params_in(), self._aux_in(), st["inputs"], st["key"])
        if st["is_train"]:
            self._store_aux(new_aux)
        st["stats"] = (metric, stats)
        self._store_outputs(outs)

    def _require_forward(self, what):
        if self._state is None:
            raise MXNetError(f"{what}: no batch yet; call forward(data_batch) first")
        return self._state

    def _run_fwd_bwd(self, head_grads, metric=None) -> None:
        st = self._state
        fn = self._progs.forward_backward(tuple(st["inputs"]), head_grads is not None, metric,
                                          self._names())
        args = (self._params_in(), self._aux_in(), st["inputs"], st["key"])
        if head_grads is not None:
            args = args + (head_grads,)
        outs, new_aux, grads, input_grads, stats = fn(*args)
        if st["outs"] is None:
            self._store_aux(new_aux)
            st["stats"] = (metric, stats)
        self._store_outputs(outs)
        self._store_grads(grads, input_grads)
        st["grads"] = True

    def _store_grads(self, grads: dict, input_grads: dict) -> None:
        for n, g in grads.items():
            if n not in self.grads:
                continue
            if self.grad_req[n] == "add":
                self.grads[n]._set_data(self.grads[n]._data + g)
            else:
                self.grads[n]._set_data(g)
        for n, g in input_grads.items():
            if n in self.input_grads and self.grad_req[n] == "add":
                self.input_grads[n]._set_data(self.input_grads[n]._data + g)
            elif n in self.input_grads:
                self.input_grads[n]._set_data(g)
            else:
                self.input_grads[n] = NDArray(g)

    def backward(self, out_grads=None) -> None:
        if not self.for_training:
            raise MXNetError("backward() needs a module bound with for_training=True: re-bind "
                             "with for_training=True to run backward")
        st = self._require_forward("backward")
        if out_grads is None:
            missing = [n for n, loss in zip(self.output_names, self._graph.is_loss) if not loss]
            if missing:
                raise MXNetError(f"backward() needs out_grads: the outputs {missing} are not loss "
                                 "outputs, so their head gradient must be given "
                                 "(backward(out_grads=[...]))")
            if self._accumulates():
                self._run_fwd_bwd(None)
            elif not st["grads"]:
                st["pending_grads"] = True
            return
        if isinstance(out_grads, NDArray) or hasattr(out_grads, "shape"):
            out_grads = [out_grads]
        if len(out_grads) != len(self.output_names):
            raise MXNetError(f"backward got {len(out_grads)} out_grads for "
                             f"{len(self.output_names)} outputs {self.output_names}")
        hg = []
        for i, g in enumerate(out_grads):
            x = g._data if isinstance(g, NDArray) else jnp.asarray(np.asarray(g))
            hg.append(jax.device_put(x, self._progs.output_sharding(i)))
        self._run_fwd_bwd(hg)
        st["pending_grads"] = False

    def _accumulates(self) -> bool:
        return "add" in self.grad_req.values()

    def ensure_grads(self) -> None:
        st = self._state
        if st is not None and st.get("pending_grads"):
            self._run_fwd_bwd(None)
            st["pending_grads"] = False

    def get_outputs(self, merge_multi_context=True, begin=0, end=None) -> list:
        self.ensure_outputs()
        outs = self.outputs[begin:end]
        if merge_multi_context:
            return outs
        axes = self.output_layouts[begin:end]
        return [self._per_device(o, a) for o, a in zip(outs, axes)]

    def get_input_grads(self, merge_multi_context=True) -> list:
        self.ensure_grads()
        names = [n for n in self.data_names if n in self.input_grads]
        grads = [self.input_grads[n] for n in names]
        if merge_multi_context:
            return grads
        axes = dict(zip(self.data_names, self.data_layouts))
        return [self._per_device(g, axes[n]) for g, n in zip(grads, names)]

    def _per_device(self, arr, axis) -> list:
        """MXNet's unmerged form: one array per context (its slice of the batch)."""
        if len(self.contexts) == 1:
            return [arr]
        return [_take(arr, axis, s, len(self.slices)) for s in self.slices]

    def get_output_shapes(self) -> list:
        out = []
        for name, shape, axis in zip(self.output_names, self._out_dev_shapes, self.output_layouts):
            shape = list(shape)
            if axis >= 0 and shape:
                shape[axis] = self.batch_size
            out.append((name, tuple(shape)))
        return out

    # ------------------------------------------------------------ metrics
    def _same_labels(self, labels) -> bool:
        mine = self._state["labels"] if self._state else None
        if labels is mine:
            return True
        if labels is None or mine is None or len(labels) != len(mine):
            return False
        return all(a is b for a, b in zip(labels, mine))

    def update_metric(self, eval_metric, labels, pre_sliced=False) -> None:
        """Per-device metric update (spec 2.6). Built-in metrics add their statistics on
        device, fused into the step when possible; a CustomMetric runs on the host."""
        if pre_sliced:
            self.ensure_outputs()
            _note_host_update(eval_metric, "the labels were given pre-sliced", self.logger)
            self._update_metric_host(eval_metric, labels, pre_sliced=True)
            return
        if not self.label_shapes and labels:
            raise MXNetError("update_metric: the module was bound without label_shapes, so it "
                             "cannot score labels; bind with label_shapes=...")
        st = self._require_forward("update_metric")
        device = (eval_metric._supports_device() and self._same_labels(labels)
                  and id(eval_metric) not in self._host_metrics)
        if device:
            try:
                if st["outs"] is None:
                    self.ensure_outputs(eval_metric)
                stats = st.get("stats")
                if stats is None or _metric_key(stats[0]) != _metric_key(eval_metric):
                    stats = (eval_metric, self._metric_only(eval_metric))
                eval_metric._accumulate_device(stats[1], stacked=True)
                st["stats"] = None
                self._last_metric = eval_metric
                return
            except NotImplementedError as err:
                # this metric has no device form for these outputs: host from now on
                self._host_metrics.add(id(eval_metric))
                self._last_metric = None
                _note_host_update(eval_metric, str(err), self.logger)
        else:
            reason = (eval_metric._host_reason() if not eval_metric._supports_device()
                      else "the labels are not the batch given to forward")
            _note_host_update(eval_metric, reason, self.logger)
        self.ensure_outputs()
        self._update_metric_host(eval_metric, labels)

    def _metric_only(self, eval_metric):
        """Per-device statistics of the stored outputs (one small jitted call)."""
        fn = self._progs.metric_stats(eval_metric, self._names(), tuple(self._state["inputs"]))
        return fn(self._state["inputs"], list(self._state["outs"]))

    def _update_metric_host(self, eval_metric, labels, pre_sliced=False) -> None:
        for k, s in enumerate(self.slices or [slice(None)]):
            label_parts = OrderedDict()
            if pre_sliced:
                label_parts.update(zip(self.label_names, labels[k]))
            for name, axis, lab in zip(self.label_names, self.label_layouts,
                                       [] if pre_sliced else labels or []):
                label_parts[name] = _take(lab, axis, s, len(self.slices))
            out_parts = OrderedDict()
            for name, axis, out in zip(self.output_names, self.output_layouts, self.outputs):
                out_parts[name] = _take(out, axis, s, len(self.slices))
            eval_metric.update_dict(label_parts, out_parts)

    # ------------------------------------------------------------ updates
    def update(self, optimizer, opt_state, hyper):
        """Apply the optimizer; a pending forward_backward runs fused with it (one dispatch)."""
        st = self._state
        if st is None:
            raise MXNetError("update() has no gradients: call forward() and backward() first")
        if st.get("pending_grads") and st["outs"] is None:
            metric = getattr(self, "_last_metric", None)
            fn = self._progs.train_step(tuple(st["inputs"]), optimizer, metric, self._names())
            params, aux, opt_state, outs, stats = fn(self._params_in(), self._aux_in(), opt_state,
                                                     st["inputs"], st["key"], hyper)
            for n in self.params:
                self.params[n]._set_data(params[n])
            self._consts = {n: params[n] for n in self._consts}
            self._store_aux({n: aux[n] for n in self.aux})
            self._store_outputs(outs)
            st["stats"] = (metric, stats)
            st["pending_grads"] = False
            st["grads_stale"] = True
            return opt_state
        self.ensure_grads()
        grads = {n: g._data for n, g in self.grads.items()}
        params, opt_state = self._progs.update(optimizer)(self._params_in(), grads, opt_state, hyper)
        for n in self.params:
            self.params[n]._set_data(params[n])
        self._consts = {n: params[n] for n in self._consts}
        return opt_state


def _take(arr, axis, s, n_dev):
    if axis < 0 or n_dev <= 1:
        return arr
    x = arr._data if isinstance(arr, NDArray) else arr
    idx = [slice(None)] * x.ndim
    idx[axis] = s
    return NDArray(x[tuple(idx)])


class StatesMixin:
    """``get_states``/``set_states`` of state inputs (e.g. RNN hidden states)."""

    def get_states(self, merge_multi_context=True):
        """States merged (one array each) or per context (MXNet's only working form)."""
        states = [NDArray(self._states[n]) for n in self.state_names]
        if merge_multi_context:
            return states
        return [self._per_device(s, 0) for s in states]

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


class MonitorMixin:
    """What ``mx.mon.Monitor`` reads from a group: arrays and every node's outputs."""

    def set_monitor_callback(self, callback, monitor_all=False) -> None:
        self._monitor_cb = callback

    @property
    def arg_dict(self) -> dict:
        out = {n: a for n, a in self.params.items()}
        if self._state is not None:
            out.update({n: NDArray(v) for n, v in self._state["inputs"].items()})
        return out

    @property
    def aux_dict(self) -> dict:
        return dict(self.aux)

    def monitor_internals(self):
        """(name, array) of every node output for the last batch (one extra forward)."""
        if self._state is None:
            return []
        from ..executor import compiled_for
        internals = self.symbol.get_internals()
        graph = compiled_for(internals).graph
        args = {**self._params_in(), **self._state["inputs"]}
        outs, _ = jax.jit(graph, static_argnames="is_train")(
            args, self._aux_in(), self._state["key"], is_train=self._state["is_train"])
        names = internals.list_outputs()
        return [(n, NDArray(o)) for n, o in zip(names, outs) if n not in args]


_ZERO_KEY = []


def _zero_key():
    """A fixed key for graphs without random operators (made once: key creation syncs)."""
    if not _ZERO_KEY:
        _ZERO_KEY.append(jax.random.PRNGKey(0))
    return _ZERO_KEY[0]
