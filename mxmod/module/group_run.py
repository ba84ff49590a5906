"""Running a bound group: the deferred step and its single flush.

``forward`` records a ``PendingStep``; ``backward``, ``update`` and ``update_metric``
add to it. ``flush`` runs what was asked in as few compiled dispatches as possible:
forward + backward + update + metric statistics is one (``Programs.train_step``).
A flush happens when a result is needed (outputs, gradients, parameters, a metric
read, the next ``forward``) or as soon as the step is complete (an update was asked
and a metric given), so ``fit`` dispatches each batch right after ``update_metric``.

The functions taking ``self`` are ``DataParallelExecutorGroup``'s methods, bound by name
in its class body (one class; this file is its step concept).
"""

from __future__ import annotations

import functools

from collections import OrderedDict

import jax
import jax.numpy as jnp
import numpy as np

from ..base import MXNetError
from ..io import DataBatch
from .. import random as mxrandom
from ..kvstore.dist import flush_across_workers
from ..executor.head_grads import (
    check_trailing_head_grads,
    missing_head_grads_error,
    outputs_needing_head_grads,
)
from ..executor.step import PER_DEVICE, STACKED_SUM, SUM, Batch, zero_key
from ..metric import note_host_update
from ..ndarray import NDArray
from .stages import StageError
from .sparse_inputs import csr_input_names, dense_batch_array, lazy_rows, place_csr
from .train_state import PendingStep
from .views import output_zeros_shape


def _take(arr, axis, s, n_dev):
    if axis < 0 or n_dev <= 1:
        return arr
    x = arr._data if isinstance(arr, NDArray) else arr
    idx = [slice(None)] * x.ndim
    idx[axis] = s
    return NDArray(x[tuple(idx)])


def serial_on_cpu(placement) -> bool:
    """Whether a step over several CPU devices must finish before the host goes on:
    XLA:CPU orders programs only by their data, so a collective program still running
    beside another one can deadlock its in-process all-reduce (seen with 2 simulated
    devices: `Termination timeout for all reduce`)."""
    known = getattr(placement, "_serial_on_cpu", None)
    if known is None:
        devices = getattr(placement, "devices", None) or []
        known = len(devices) > 1 and all(d.platform == "cpu" for d in devices)
        placement._serial_on_cpu = known
    return known


# ------------------------------------------------------------ loading
def _load(self, data_batch, is_train) -> dict:
    """Device arrays for every bound input of ``data_batch``."""
    if isinstance(data_batch, list):
        data_batch = self.merge_presliced(data_batch)
    data = list(data_batch.data or [])
    if len(data) != len(self.data_names):
        raise MXNetError(
            f"the batch has {len(data)} data arrays but the module is bound "
            f"with {len(self.data_names)} ({self.data_names})"
        )
    descs, arrays = self.data_shapes, data
    labels = list(getattr(data_batch, "label", None) or [])
    if self.label_shapes and labels:
        if len(labels) != len(self.label_names):
            raise MXNetError(
                f"the batch has {len(labels)} label arrays but the module is "
                f"bound with {len(self.label_names)} ({self.label_names})"
            )
        descs, arrays = descs + self.label_shapes, data + labels
    inputs = _place(self, descs, arrays)
    if self.label_shapes and not labels:
        prev = self._pending.inputs if self._pending else {}
        for desc in self.label_shapes:
            if desc.name in prev:
                inputs[desc.name] = prev[desc.name]
            elif is_train and self.for_training:
                raise MXNetError(
                    f"the batch has no labels but the module was bound for "
                    f"training with labels {self.label_names}; give the "
                    "DataBatch its label arrays"
                )
            else:
                inputs.update(_place(self, [desc], [np.zeros(desc.shape, desc.dtype)]))
    if self._states:
        inputs.update(self._states)
    return inputs


def merge_presliced(self, batches):
    """One DataBatch from a list of per-context batches (MXNet's pre-sliced form)."""
    if len(batches) != len(self.contexts):
        raise MXNetError(
            f"got {len(batches)} pre-sliced batches for {len(self.contexts)} "
            "contexts; give one DataBatch per context"
        )

    def cat(parts, axis):
        arrays = [p._data if isinstance(p, NDArray) else jnp.asarray(np.asarray(p)) for p in parts]
        return NDArray(arrays[0] if axis < 0 else jnp.concatenate(arrays, axis=axis))

    data = [cat([b.data[i] for b in batches], ax) for i, ax in enumerate(self.data_layouts)]
    label = None
    if batches[0].label:
        label = [
            cat([b.label[i] for b in batches], ax)
            for i, ax in enumerate(self.label_layouts or [0] * len(batches[0].label))
        ]
    return DataBatch(data, label, pad=batches[0].pad)


def _place(self, descs, arrays) -> dict:
    """``{name: array}`` of batch arrays on the devices where the step reads them (one loop
    for all inputs: this runs once per batch)."""
    progs = self._progs
    targets = self.__dict__.get("_input_targets")
    if targets is None or targets[0] is not progs:  # resolved once per bound layout
        targets = self._input_targets = (progs, {})
    targets = targets[1]
    out = {}
    csr_names = csr_input_names(self)
    for desc, arr in zip(descs, arrays):
        name = desc.name
        if name in csr_names:
            target = targets.get(name) or targets.setdefault(name, progs.input_sharding(name))
            out[name] = place_csr(progs, name, desc, arr, target)
            continue
        arr = dense_batch_array(arr)
        x = arr._data if isinstance(arr, NDArray) else np.asarray(arr)
        if x.shape != desc.shape and tuple(x.shape) != tuple(desc.shape):
            kind = "data" if name in self.data_names else "label"
            raise MXNetError(
                f"{kind} {name!r} has shape {tuple(x.shape)} but the module is "
                f"bound with {tuple(desc.shape)} (provide_data/provide_label)"
            )
        if x.dtype != desc.dtype:
            x = x.astype(desc.dtype)
        if progs.placement.processes > 1:  # this worker's rows of the global batch
            out[name] = progs.placement.put(x, self._input_axes.get(name, 0))
            continue
        target = targets.get(name)
        if target is None:
            target = targets[name] = progs.input_sharding(name)
        if not (isinstance(x, jax.Array) and x.committed and x.sharding == target):
            x = jax.device_put(x, target)  # committed: the step's cache key
        out[name] = x
    return out


# ------------------------------------------------------------ the MXNet calls
def forward(self, data_batch, is_train=None) -> None:
    """Record the batch; outputs (and gradients) are computed when first needed."""
    self.state.flush_all()  # modules sharing these weights finish their steps first
    self.retire_pending()
    if self._overlay:
        self._commit_overlay()
    is_train = self.for_training if is_train is None else bool(is_train)
    if self._graph.has_random:
        key = mxrandom.next_key()
    else:
        key = zero_key()
    self._pending = PendingStep(
        self._load(data_batch, is_train), getattr(data_batch, "label", None), is_train, key
    )
    if self.state.value.per_device:
        _carry_per_device(self, self._pending)
    monitor = getattr(getattr(self, "_monitor_cb", None), "__self__", None)
    if getattr(monitor, "activated", False):
        # MXNet's monitor sees the values this batch runs with; the update that
        # follows replaces (and donates) them, so keep copies
        copy = functools.partial(jax.tree_util.tree_map, jnp.copy)
        self._pending.monitor_state = (copy(self._params_in()), copy(self.state.aux))


def _carry_per_device(self, p) -> None:
    """Give ``p``'s inputs the current per-device weights (``PER_DEVICE`` inputs split along
    the mesh: each device runs with its own copy), replacing ones it carried before."""
    pd = self.state.value.per_device
    if pd is p.per_device:
        return
    inputs = {k: v for k, v in p.inputs.items() if not k.startswith(PER_DEVICE)}
    inputs.update({PER_DEVICE + n: v for n, v in pd.items()})
    p.inputs, p.per_device = inputs, pd


def retire_pending(self) -> None:
    """Before the pending batch is replaced: keep the outputs handed out merged."""
    p = self._pending
    if p is not None and p.keep_outs and p.saved_outs is None:
        self.ensure_outputs()
        p.saved_outs = list(self._outs)


def _require_pending(self, what) -> PendingStep:
    if self._pending is None:
        raise MXNetError(f"{what}: no batch yet; call forward(data_batch) first")
    return self._pending


def backward(self, out_grads=None) -> None:
    if not self.for_training:  # MXNet asserts: a StageError is an AssertionError too
        raise StageError(
            "backward() needs a module bound with for_training=True: re-bind "
            "with for_training=True to run backward"
        )
    p = self._require_pending("backward")
    if out_grads is None:
        # as MXNet: only head gradients the gradients read must be given (head_grads.py)
        args = {**self._params_in(), **p.inputs}
        diff = self._progs.diff_names
        missing = outputs_needing_head_grads(
            self._graph, args, self.state.aux, p.key, diff, p.is_train
        )
        if missing:
            raise missing_head_grads_error(missing)
        p.head_grads = None
    else:
        if isinstance(out_grads, NDArray) or hasattr(out_grads, "shape"):
            out_grads = [out_grads]
        # as MXNet, by position: arrays past the last output are not read (a GAN passes
        # the discriminator's input gradients, one per input, to a one-output generator)
        out_grads = list(out_grads)[: len(self.output_names)]
        if len(out_grads) < len(self.output_names):
            out_grads = list(out_grads) + _unread_head_grads(self, p, len(out_grads))
        pl = self._progs.placement
        p.head_grads = [
            pl.put(g._data if isinstance(g, NDArray) else np.asarray(g), self.output_layouts[i])
            if pl.processes > 1
            else jax.device_put(
                g._data if isinstance(g, NDArray) else jnp.asarray(np.asarray(g)),
                self._progs.output_sharding(i),
            )
            for i, g in enumerate(out_grads)
        ]
    p.backward, p.grads_done = True, False
    if self._accumulates() or p.head_grads is not None:
        self.flush()  # each call adds (grad_req='add'); head gradients are per call


def _unread_head_grads(self, p, given: int) -> list:
    """Ones for the outputs after the first ``given`` (MXNet reads ``out_grads`` by
    position): allowed only where no gradient reads their head gradient."""
    args = {**self._params_in(), **p.inputs}
    needed = outputs_needing_head_grads(
        self._graph, args, self.state.aux, p.key, self._progs.diff_names, p.is_train
    )
    check_trailing_head_grads(self.output_names, given, needed)
    return [
        np.ones(output_zeros_shape(self, i, None), self._out_dev_types[i])
        for i in range(given, len(self.output_names))
    ]


def request_update(self) -> None:
    """``update()``: queue the optimizer step on this batch's gradients."""
    p = self._pending
    if p is None or not (p.backward or p.grads_done):
        # MXNet updates with what the gradient buffers hold: zeros before any backward
        self.flush()
        self._current_grads()
        self._apply_update()
        return
    if p.update_done or p.update:  # a second update on the same gradients, as MXNet
        self._keep_grads = True  # the first update must leave them
        self.flush()
        self._apply_update()
        return
    p.update = True
    box = self.state.opt
    if box is not None and box.state:
        # counted now, as MXNet's update(): num_update and the scheduled learning rate
        # the host reads are this step's, though the step itself runs at the next flush
        p.hyper = box.optimizer.fused_hyper(None)
    if p.metrics:
        self.flush()


def update_metric(self, eval_metric, labels, pre_sliced=False) -> None:
    """Per-device metric update (spec 2.6): built-in metrics add their statistics on
    device, inside the step when it has not run yet; a CustomMetric runs on the host."""
    if pre_sliced:
        note_host_update(eval_metric, "the labels were given pre-sliced", self.logger)
        self.flush()
        self._update_metric_host(eval_metric, labels, pre_sliced=True)
        return
    if not self.label_shapes and labels:
        raise MXNetError(
            "update_metric: the module was bound without label_shapes, so it "
            "cannot score labels; bind with label_shapes=..."
        )
    p = self._require_pending("update_metric")
    same = labels is p.labels or (
        labels is not None
        and p.labels is not None
        and len(labels) == len(p.labels)
        and all(a is b for a, b in zip(labels, p.labels))
    )
    if eval_metric._supports_device() and same and id(eval_metric) not in self._host_metrics:
        try:
            if p.outs_done:
                stats = self._progs.metric_stats(eval_metric, tuple(p.inputs))(
                    p.inputs, list(self._outs)
                )
                eval_metric._accumulate_device(self._progs.placement.local(stats, 0), stacked=True)
            else:
                p.metrics.append(eval_metric)
                eval_metric._defer(self)
                if p.update:
                    self.flush()
            return
        except NotImplementedError as err:
            # this metric has no device form for these outputs: host from now on
            self._host_metrics.add(id(eval_metric))
            if eval_metric in p.metrics:
                p.metrics.remove(eval_metric)
            note_host_update(eval_metric, str(err), self.logger)
    else:
        reason = (
            eval_metric._host_reason()
            if not eval_metric._supports_device()
            else "the labels are not the batch given to forward"
        )
        note_host_update(eval_metric, reason, self.logger)
    self.flush()
    self._update_metric_host(eval_metric, labels)


def _update_metric_host(self, eval_metric, labels, pre_sliced=False) -> None:
    outs = self.outputs
    for k, s in enumerate(self.slices or [slice(None)]):
        label_parts = OrderedDict()
        if pre_sliced:
            label_parts.update(zip(self.label_names, labels[k]))
        for name, axis, lab in zip(
            self.label_names, self.label_layouts, [] if pre_sliced else labels or []
        ):
            label_parts[name] = _take(lab, axis, s, len(self.slices))
        out_parts = OrderedDict()
        for name, axis, out in zip(self.output_names, self.output_layouts, outs):
            block = self._block(k, out, axis, f"output {name!r}") if self.slices else None
            out_parts[name] = _take(out, axis, block, len(self.slices))
        eval_metric.update_dict(label_parts, out_parts)


def _accumulates(self) -> bool:
    return self._has_add


# ------------------------------------------------------------ the flush
def flush(self) -> None:
    """Run whatever the pending step still owes (outputs, gradients, update, metrics)."""
    if self._pending is not None and self._progs.placement.processes > 1:
        return flush_across_workers(self)
    return self._flush()


def _flush(self) -> None:
    p = self._pending
    if p is None:
        return
    owes_grads = p.backward and not p.grads_done
    owes_update = p.update and not p.update_done
    owes_aux = not p.outs_done and bool(self._graph.forward_aux)  # custom ops' forward
    if not (owes_grads or owes_update or p.metrics or owes_aux):
        return
    if self._overlay:
        self._commit_overlay()
    if self.state.value.per_device or p.per_device:
        _carry_per_device(self, p)
    metric = p.metrics[0] if p.metrics else None
    stats = None
    box = self.state.opt
    if (
        owes_update
        and owes_grads
        and not p.outs_done
        and p.head_grads is None
        and not self._has_add
        and box is not None
        and box.fused
        and not self.state.value.per_device
    ):
        stats = self._run_train_step(p, metric)
    else:
        if owes_grads:
            stats = self._run_fwd_bwd(p, None if p.outs_done else metric)
            if p.outs_done and metric is not None:
                stats = None
        elif not p.outs_done:
            stats = self._run_forward(p, metric)
        p.outs_done = True
        if owes_update:
            self._apply_update()
            p.update_done = True
    if serial_on_cpu(self._progs.placement):
        jax.block_until_ready((self.state.params, stats))
    metrics, p.metrics = p.metrics, []
    local = self._progs.placement.local  # a worker's metric counts its own batch
    for i, m in enumerate(metrics):
        if i == 0 and stats is not None:
            m._accumulate_device(local(stats, 0), stacked=True)
        else:
            s = self._progs.metric_stats(m, tuple(p.inputs))(p.inputs, list(self._outs))
            m._accumulate_device(local(s, 0), stacked=True)


def _step_hyper(box, p) -> dict:
    """The hyper-parameters of the optimizer step about to run: those counted when
    ``update()`` queued it, else counted now."""
    if p is not None and p.hyper is not None:
        hyper, p.hyper = p.hyper, None
        return hyper
    return box.optimizer.fused_hyper(None if box.state else [])


def _run_train_step(self, p, metric):
    box = self.state.opt
    reduction = self._reduction()
    # device k's own gradients were asked for (grad_arrays[i][k]): keep them as computed
    stacked = self._want_stacked and len(self.contexts) > 1
    if stacked and reduction is SUM:
        reduction = STACKED_SUM
    grads = ("stacked_grads" if stacked else "grads") if self._keep_grads else None
    keep = tuple(k for k in (grads, "input_grads" if self.inputs_need_grad else None) if k)
    rule = box.rule(lazy_rows(self, box.optimizer))
    fn = self._progs.train_step(tuple(p.inputs), rule, metric, keep, reduction)
    hyper = _step_hyper(box, p)
    state, res = fn(self._step_state(reduction), Batch(p.inputs, p.key), hyper)
    self._adopt(state, reduction)
    self._outs = res.outs
    self._grads, self._grads_stacked = res.grads, stacked
    self._grads_valid = bool(res.grads) or not self._diff_params
    self.state.grad_owner = self
    self._input_grads = res.input_grads
    p.outs_done = p.grads_done = p.update_done = True
    return res.stats


def _run_fwd_bwd(self, p, metric):
    stacked = self._want_stacked or self._reduction().stacked
    fn = self._progs.forward_backward(tuple(p.inputs), p.head_grads is not None, metric, stacked)
    args = (self._params_in(), self.state.aux, p.inputs, p.key)
    if p.head_grads is not None:
        args = args + (p.head_grads,)
    outs, new_aux, grads, igrads, stats = fn(*args)
    self._outs = list(outs)
    if p.outs_done and self._graph.forward_aux:  # the forward already wrote these
        new_aux = {k: v for k, v in new_aux.items() if k not in self._graph.forward_aux}
    if new_aux:
        self.state.aux = {**self.state.aux, **new_aux}
    base = self._add_base(stacked) if self._has_add else None
    if base is not None:
        grads = {
            n: (base[n] + g if self.grad_req[n] == "add" and n in base else g)
            for n, g in grads.items()
        }
        igrads = {
            n: (
                self._input_grads[n] + g
                if self.grad_req[n] == "add" and n in self._input_grads
                else g
            )
            for n, g in igrads.items()
        }
    self._grads, self._grads_stacked, self._grads_valid = grads, stacked, True
    self.state.grad_owner = self
    self._input_grads = igrads
    p.grads_done = True
    return stats


def _add_base(self, stacked):
    """The gradients ``grad_req='add'`` adds to: the last ones computed for these
    weights (another bucket's included), in this run's per-device form."""
    owner = self.state.grad_owner
    src = owner if owner is not None and owner._grads_valid else self
    if not src._grads_valid:
        return None
    if src._grads_stacked == stacked:
        return src._grads
    if src._grads_stacked:  # per-device sums; this run keeps the reduced gradient
        return {n: g.sum(0) for n, g in src._grads.items()}
    return None


def _apply_update(self) -> None:
    box = self.state.opt
    if not self._grads_valid:
        raise MXNetError(
            "update(): the gradients of this step were not kept; call "
            "backward() again before update()"
        )
    reduction = self._reduction()
    if reduction.stacked and not self._grads_stacked and len(self.contexts) > 1:
        raise MXNetError(
            "update(): 2-bit compression needs each device's gradient, but "
            "this step kept only their sum; call backward() again"
        )
    rule = box.rule(lazy_rows(self, box.optimizer))
    fn = self._progs.update(rule, reduction, self._grads_stacked)
    hyper = _step_hyper(box, self._pending)
    state, _ = fn(self._step_state(reduction), self._grads, hyper)
    self._adopt(state, reduction)
    if self.state.value.per_device:  # one update of the summed gradients: copies equal again
        self.state.value = self.state.value.replace(per_device={})


def _rerun_forward(self, is_train) -> None:
    p = self._require_pending("forward")
    if self._overlay:
        self._commit_overlay()
    if self.state.value.per_device or p.per_device:
        _carry_per_device(self, p)
    p.is_train = bool(is_train)
    p.outs_done = False
    self._run_forward(p, None)
    p.outs_done = True


def _run_forward(self, p, metric):
    fn = self._progs.forward(p.is_train, tuple(p.inputs), metric)
    outs, new_aux, stats = fn(self._params_in(), self.state.aux, p.inputs, p.key)
    self._outs = list(outs)
    if new_aux:
        self.state.aux = {**self.state.aux, **new_aux}
    return stats


def ensure_outputs(self) -> None:
    p = self._require_pending("outputs")
    self.flush()
    if not p.outs_done:
        self._rerun_forward(p.is_train)


# ------------------------------------------------------------ results
@property
def outputs(self) -> list:
    """The merged outputs of the last batch (handles that follow later batches)."""
    self.ensure_outputs()
    if self._out_views is None:
        self._out_views = [self._output_view(i, None) for i in range(len(self.output_names))]
    return self._out_views


def get_outputs(self, merge_multi_context=True, begin=0, end=None) -> list:
    if merge_multi_context and len(self.contexts) > 1:
        # MXNet concatenates the devices' outputs into new arrays: later batches
        # leave them as they are (one device's outputs are its live buffers)
        p = self._require_pending("outputs")
        p.keep_outs = True
        idx = range(len(self.output_names))[begin:end]
        return [self._kept_output_view(p, i) for i in idx]
    if merge_multi_context:
        return self.outputs[begin:end]
    # per device: the executors' output views (zeros before any batch, as MXNet's)
    execs = self.execs
    return [[e.outputs[i] for e in execs] for i in range(len(self.output_names))[begin:end]]


def get_input_grads(self, merge_multi_context=True) -> list:
    self.flush()
    p = self._pending
    if p is None or not p.grads_done:
        raise MXNetError(
            "get_input_grads(): no gradients yet; call forward(is_train=True) and backward() first"
        )
    names = [n for n in self.data_names if n in self._input_grads]
    if merge_multi_context:
        return [self._input_grad_view(n, None) for n in names]
    return [[self._input_grad_view(n, k) for k in range(len(self.contexts))] for n in names]


def get_output_shapes(self) -> list:
    out = []
    for name, shape, axis in zip(self.output_names, self._out_dev_shapes, self.output_layouts):
        shape = list(shape)
        if axis >= 0 and shape:
            shape[axis] = self.batch_size
        out.append((name, tuple(shape)))
    return out
