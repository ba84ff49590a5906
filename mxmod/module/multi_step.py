"""Several training steps per dispatch: ``fit(..., steps_per_dispatch=N)``.

MXNet's ``fit`` runs one step per batch. With ``steps_per_dispatch=N`` mxmod collects N
batches (each put on the devices as it is read: a no-op for batches an iterator placed
there, e.g. ``NDArrayIter`` after ``place_on``), runs them as one compiled ``lax.scan`` of
the fused train step (the N batches stacked inside it; forward, backward, cross-device
sum, optimizer update, metric statistics) and then, for each of the N batches in order,
folds that batch's metric statistics into the metric and calls the
``batch_end_callback``s. The block's statistics come to the host in one transfer, when the
metric is first read. The parameters are those of N single steps (same programs, same
learning-rate schedule, same RNG keys).

What a callback sees: ``param.nbatch`` and ``param.eval_metric`` exactly as with single
steps (the metric holds the batches up to and including this one); ``param.locals`` is
``fit``'s locals (taken when the epoch starts) with the loop's names for this batch, as in
MXNet's loop: ``nbatch``, ``data_batch``, ``next_data_batch`` (also as ``batch`` and
``next_batch``, the names of mxmod's single-step loop), ``end_of_batch`` (True for the
epoch's last batch, which also sets ``eval_name_vals``). The module itself
(``get_params``, ``get_outputs``) already holds the state after the whole block; a batch
that does not fill a block at the end of an epoch runs as single steps. Without
callbacks a block costs no per-batch Python beyond reading its batches.

Only a Module with a fused optimizer, a metric with a device form, one program over its
devices (one device or a mesh, one process), no monitor, ``grad_req`` without ``'add'``
and unsliced DataBatches can run blocks; otherwise ``fit`` logs why once and runs single
steps.

Dynamic loss scaling (``amp.insert_loss_scale`` + ``amp.init_trainer(module)``) runs in
these blocks (any ``steps_per_dispatch``, 1 included; the tail and batches of another
shape run as blocks of one): each step feeds the scaler's scale to the graph, unscales the
gradients, skips the update on overflow and moves the scale by MXNet's rule, all on device.
"""

from __future__ import annotations

import sys

import jax
import numpy as np

from .. import random as mxrandom
from ..base import names_list
from ..executor.loss_scale import scaled_step_parts
from ..executor.replicas import ReplicaPrograms
from ..executor.step import Batch, zero_key
from ..io import DataBatch
from .checkpoint import BatchEndParam
from .group_run import serial_on_cpu
from .sparse_inputs import lazy_rows, same_csr_sizes
from .train_state import PendingStep


_ZERO_KEYS: dict = {}


def step_rule(box, scaled: bool, group):
    """``(rule, feed)`` of a block's steps: the optimizer's rule, or with ``scaled``
    (``amp.init_trainer``) the loss-scaled rule and its feed (``executor.loss_scale``)."""
    rule = box.rule(lazy_rows(group, box.optimizer))
    return scaled_step_parts(rule) if scaled else (rule, None)


def use_blocks(module, eval_metric, monitor, steps_per_dispatch) -> bool:
    """Whether ``fit`` runs its epochs here (``fit_epoch``) rather than through the
    Module's calls: whenever it can (one step per batch is then one compiled call with no
    per-batch Python of the deferred-step machinery); asked for (``steps_per_dispatch >
    1``) but impossible: a warning says why; required by ``amp.init_trainer(module)`` but
    impossible: an error."""
    scaler = getattr(module, "_amp_scaler", None)
    reason = why_not(module, eval_metric, monitor)
    if reason and scaler is not None:
        raise ValueError(
            f"fit: amp.init_trainer(module) scales the loss inside compiled "
            f"steps, which this fit cannot run: {reason}"
        )
    if reason and steps_per_dispatch > 1:
        module.logger.warning(
            "fit(steps_per_dispatch=%d) runs single steps: %s", steps_per_dispatch, reason
        )
    return not reason


def why_not(module, eval_metric, monitor) -> str:
    """Why ``module`` cannot run blocks of steps ('' when it can)."""
    plain = getattr(type(module), "_plain_step_methods", None)  # Module's own calls
    if plain is None:
        return f"{type(module).__name__} is not a Module"
    for name, method in plain.items():
        if getattr(type(module), name) is not method:
            return f"{type(module).__name__} overrides {name}()"
    group = module._exec_group
    if monitor is not None:
        return "a monitor is installed"
    if not group.state.opt.fused:
        return f"the optimizer {type(group.state.opt.optimizer).__name__} has no fused form"
    if group.state.opt.kvstore is None and len(group.contexts) > 1:
        return "without a kvstore each device updates its own weights (MXNet's loop)"
    progs = group._progs
    if isinstance(progs, ReplicaPrograms) or progs.placement.processes > 1:
        return "the devices are per-device replicas or several processes"
    if group._has_add or group.inputs_need_grad or group._states:
        return "grad_req 'add', inputs_need_grad or state inputs"
    if not eval_metric._supports_device() or id(eval_metric) in group._host_metrics:
        return f"the metric {type(eval_metric).__name__} is updated on the host"
    return ""


def fit_epoch(
    module, data_iter, first_batch, eval_metric, epoch, n, batch_end_callback, sparse_row_id_fn=None
):
    """One epoch of ``fit`` in blocks of ``n`` steps; returns the metric's final
    ``get_global_name_value()`` (what ``fit`` logs)."""
    callbacks = names_list(batch_end_callback)
    # what MXNet's callbacks see as param.locals: fit's own (the caller's) locals
    fit_locals = dict(sys._getframe(1).f_locals) if callbacks else None
    ends = _BatchEnds(callbacks, fit_locals, epoch, eval_metric)
    scaled = getattr(module, "_amp_scaler", None) is not None
    one = _OneStep(module, eval_metric) if n == 1 and not scaled else None
    batch = first_batch
    while batch is not None:
        stats = one(batch) if one is not None else None
        if stats is not None:  # one step per batch: the loop of a plain fit
            after = _next(module, data_iter, sparse_row_id_fn)
            ends.after_one(batch, stats, after)
            batch = after
            continue
        block, batch = _collect(module, data_iter, batch, n, sparse_row_id_fn)
        if len(block) == n or (scaled and block):  # a scaled tail runs as a shorter block
            stats = _run_block(module, block, eval_metric)
            ends.after_block(block, stats, batch)
            continue
        # a short tail or a batch the block cannot take (reshaped, pre-sliced): single steps
        pending = [b for b, _ in block] + ([batch] if batch is not None else [])
        batch = None
        for j, b in enumerate(pending):
            _single_step(module, b, eval_metric, scaled)
            nxt = (
                pending[j + 1]
                if j + 1 < len(pending)
                else _next(module, data_iter, sparse_row_id_fn)
            )
            ends.after_step(b, nxt)
        batch = nxt
    return eval_metric.get_global_name_value()


class _OneStep:
    """``fit``'s step of one batch: the Module's own train-step program (found again only
    when the optimizer's settings change or the module is re-bound), fed the holder's
    state and keeping what it returns, with the Module left as after
    ``forward_backward``/``update``/``update_metric`` of that batch."""

    def __init__(self, module, metric):
        self.module, self.metric = module, metric
        self.group = group = module._exec_group
        self.box = group.state.opt
        self.sig = self.fn = self.last = self.progs = self.descs = self.bound = None
        self.reduction = self.holder = None
        self.first = None if self.box.state else []
        self.zero_key = None if group._graph.has_random else zero_key()

    def __call__(self, batch):
        """Run ``batch``'s step and return its metric statistics, or None (nothing run)
        when the batch needs the Module's calls (pre-sliced, reshaped, not a DataBatch)."""
        group, box = self.group, self.box
        data = getattr(batch, "data", None)
        if (
            data is None
            or not isinstance(batch, DataBatch)
            or group.state.value.per_device
            or group._keep_grads  # someone reads the gradients: the Module's calls keep them
        ):
            return None
        if group.data_shapes is not self.descs:  # bound or reshaped since
            self.descs = group.data_shapes
            self.bound = [tuple(d.shape) for d in self.descs]
        if [x.shape for x in data] != self.bound:
            return None
        inputs = group._load(batch, True)
        if group._pending is not self.last and group._pending is not None:
            group.flush()  # a callback's forward, or the batch before the epoch
        if group._overlay:
            group._commit_overlay()
        sig = box.optimizer.fused_signature()  # the same object until a setting changes
        if sig is not self.sig or group._progs is not self.progs:  # settings or re-bind
            self.reduction = reduction = group._reduction()  # exact sum or 2-bit
            rule = box.rule(lazy_rows(group, box.optimizer))
            self.fn = group._progs.train_step(tuple(inputs), rule, self.metric, (), reduction)
            self.sig, self.progs = sig, group._progs
            direct = not group._consts and box.holder is group.state and not reduction.residual
            self.holder = group.state if direct else None
            self.serial = serial_on_cpu(group._progs.placement)
        key = self.zero_key if self.zero_key is not None else mxrandom.next_key()
        holder = self.holder  # the holder's value is the step's state: passed and kept as is
        state = holder.value if holder is not None else group._step_state(self.reduction)
        state, res = self.fn(state, Batch(inputs, key), box.optimizer.fused_hyper(self.first))
        self.first = None
        if self.serial:  # several CPU devices: finish before the next collective program
            jax.block_until_ready(state)
        if holder is not None:
            holder.value = state
            holder.version += 1
        else:
            group._adopt(state, self.reduction)
        group._outs = res.outs
        if group._grads:
            group._grads = {}
        group._grads_valid = not group._diff_params
        group._pending = self.last = PendingStep(
            inputs,
            batch.label,
            True,
            key,
            backward=True,
            update=True,
            outs_done=True,
            grads_done=True,
            update_done=True,
        )
        self.module._params_dirty = True
        return res.stats


def _next(module, data_iter, sparse_row_id_fn):
    """The next batch (prepared, as MXNet's loop prefetches it), or None at the end."""
    try:
        batch = next(data_iter)
    except StopIteration:
        return None
    if sparse_row_id_fn is not None:  # else Module.prepare (a plain one here) does nothing
        module.prepare(batch, sparse_row_id_fn=sparse_row_id_fn)
    return batch


def _collect(module, data_iter, batch, n, sparse_row_id_fn):
    """Up to ``n`` batches, starting with ``batch``, that a block can run, each with its
    device inputs; returns them and the batch after them (None at the end of the epoch)."""
    bound = [tuple(d.shape) for d in module.data_shapes]
    load = module._exec_group._load
    block = []
    while batch is not None and len(block) < n:
        if (
            not isinstance(batch, DataBatch)
            or batch.data is None
            or [tuple(d.shape) for d in batch.data] != bound
            or module._exec_group.state.value.per_device
            or module._exec_group._keep_grads
        ):
            break  # pre-sliced, reshaped or per-device weights: the single-step path
        block.append((batch, load(batch, True)))
        batch = _next(module, data_iter, sparse_row_id_fn)
    return block, batch


def _single_step(module, batch, metric, scaled):
    """One batch outside a block: MXNet's three calls, or (loss scaling) a block of one,
    after ``forward`` reshaped the module to the batch."""
    if not scaled:
        module.forward_backward(batch)
        module.update()
        module.update_metric(metric, batch.label)
        return
    module.forward(batch, is_train=True)  # reshapes the module when the batch needs it
    group = module._exec_group
    group._pending = None  # forward() finished the previous step; the block runs this one
    stats = _run_block(module, [(batch, group._load(batch, True))], metric)
    metric._accumulate_device(stats, stacked=True)


class _BatchEnds:
    """Counts an epoch's batches, folds each block's metric statistics and calls the
    ``batch_end_callback``s with MXNet's ``BatchEndParam``."""

    def __init__(self, callbacks, fit_locals, epoch, metric):
        self.callbacks, self.fit_locals = callbacks, fit_locals
        self.epoch, self.metric = epoch, metric
        self.nbatch = 0

    def after_one(self, batch, stats, after):
        self.metric._accumulate_device(stats, stacked=True)
        if self.callbacks:
            self._call(batch, after)
        else:
            self.nbatch += 1

    def after_block(self, block, stats, after):
        if not self.callbacks:  # nobody reads the metric between batches: fold the block once
            self.metric._accumulate_device(stats, stacked=True)
            self.nbatch += len(block)
            return
        leaves, treedef = jax.tree_util.tree_flatten(stats)
        per_batch = leaves[0].shape[0] // len(block) if leaves else 0
        for i, (batch, _) in enumerate(block):
            rows = [_Rows(leaf, i * per_batch, (i + 1) * per_batch) for leaf in leaves]
            self.metric._accumulate_device(treedef.unflatten(rows), stacked=True)
            self._call(batch, block[i + 1][0] if i + 1 < len(block) else after)

    def after_step(self, batch, after):
        if self.callbacks:
            self._call(batch, after)
        else:
            self.nbatch += 1

    def _call(self, batch, after):
        end = after is None
        if end:  # MXNet's prefetch failed: its next_data_batch still holds this batch
            after = batch
        names = dict(self.fit_locals)
        names.update(
            nbatch=self.nbatch,
            data_batch=batch,  # MXNet's names
            next_data_batch=after,
            batch=batch,  # mxmod fit's single-step loop's names
            next_batch=after,
            end_of_batch=end,
            eval_metric=self.metric,
        )
        if end:
            names["eval_name_vals"] = self.metric.get_global_name_value()
        param = BatchEndParam(self.epoch, self.nbatch, self.metric, names)
        for cb in self.callbacks:
            cb(param)
        self.nbatch += 1


def _run_block(module, block, metric):
    """Dispatch one block (one train step for a block of one, else ``n`` steps in one
    ``lax.scan``); leaves the module as after the last of its single steps and returns
    the block's metric statistics (one row per device and step, in order)."""
    module._params_dirty = True
    group = module._exec_group
    if group._pending is not None:
        group.flush()
    if group._overlay:
        group._commit_overlay()
    box = group.state.opt
    scaler = getattr(module, "_amp_scaler", None)
    rule, feed = step_rule(box, scaler is not None, group)
    reduction = group._reduction()  # exact sum or 2-bit compression
    state = group._step_state(reduction)
    if scaler is not None:
        state = state.replace(scaler=scaler.state())
    first = None if box.state else []
    last_batch, last_inputs = block[-1]
    names = tuple(last_inputs)
    n = len(block)
    if n == 1:  # the very program the Module's own calls compile
        key = mxrandom.next_key() if group._graph.has_random else zero_key()
        fn = group._progs.train_step(names, rule, metric, (), reduction, feed)
        state, res = fn(state, Batch(last_inputs, key), box.optimizer.fused_hyper(first))
        outs, stats = res.outs, res.stats
    else:
        if group._graph.has_random:
            keys = np.stack([mxrandom.next_key() for _ in block])  # host keys: no program
            key = keys[-1]
        else:  # the fixed key of graphs without random operators, stacked once per size
            if n not in _ZERO_KEYS:
                _ZERO_KEYS[n] = jax.device_put(np.zeros((n, 2), np.uint32))
            keys, key = _ZERO_KEYS[n], zero_key()
        hypers = [box.optimizer.fused_hyper(first) for _ in block]
        hypers = jax.tree_util.tree_map(lambda *xs: np.array(xs), *hypers)  # stacked per leaf
        fn = group._progs.train_steps(n, names, rule, metric, feed, reduction)
        inputs = same_csr_sizes([inputs for _, inputs in block])
        state, outs, stats = fn(state, inputs, keys, hypers)
    if serial_on_cpu(group._progs.placement):  # finish before the next collective program
        jax.block_until_ready(state)
    if scaler is not None:
        scaler.keep_device_state(state.scaler)
    group._adopt(state, reduction)
    group._outs = outs
    group._grads, group._grads_stacked = {}, False
    group._grads_valid = not group._diff_params
    group._input_grads = {}
    group._pending = PendingStep(
        last_inputs,
        last_batch.label,
        True,
        key,
        backward=True,
        update=True,
        outs_done=True,
        grads_done=True,
        update_done=True,
    )
    return stats


class _Rows:
    """Rows ``[start, stop)`` of a block's statistic: the metric fetches them when it is
    read, and the first rows read bring the whole block to the host in one transfer (a
    jax.Array keeps its host copy)."""

    __slots__ = ("block", "start", "stop")

    def __init__(self, block, start, stop):
        self.block, self.start, self.stop = block, start, stop

    def copy_to_host_async(self):
        self.block.copy_to_host_async()

    def __array__(self, dtype=None, copy=None):
        rows = np.asarray(self.block)[self.start : self.stop]
        return rows if dtype is None else rows.astype(dtype)
