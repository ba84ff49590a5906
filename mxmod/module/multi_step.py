"""Several training steps per dispatch: ``fit(..., steps_per_dispatch=N)``.

MXNet's ``fit`` runs one step per batch. With ``steps_per_dispatch=N`` mxmod collects N
batches (each put on the devices as it is read, so the next block's transfers overlap the
running one), runs them as one compiled ``lax.scan`` of the fused train step (forward,
backward, cross-device sum, optimizer update, metric statistics) and then, for each of the
N batches in order, folds that batch's metric statistics into the metric and calls the
``batch_end_callback``s. The parameters are those of N single steps (same programs, same
learning-rate schedule, same RNG keys).

What a callback sees: ``param.nbatch`` and ``param.eval_metric`` exactly as with single
steps (the metric holds the batches up to and including this one). The module itself
(``get_params``, ``get_outputs``) already holds the state after the whole block; a batch
that does not fill a block at the end of an epoch runs as single steps.

Only a Module with a fused optimizer, a metric with a device form, a one-process placement
(one device or a mesh), no monitor, ``grad_req`` without ``'add'`` and unsliced DataBatches
can run blocks; otherwise ``fit`` logs why once and runs single steps.

Dynamic loss scaling (``amp.insert_loss_scale`` + ``amp.init_trainer(module)``) runs in
these blocks (any ``steps_per_dispatch``, 1 included): each step feeds the scaler's scale
to the graph, unscales the gradients, skips the update on overflow and moves the scale by
MXNet's rule, all on device.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..executor.programs import metric_key


_ZERO_KEYS: dict = {}


def train_steps(progs, input_names: tuple, optimizer, metric, n: int, scale_name=None):
    """``fn(params, aux, opt_state, [inputs] * n, keys, hypers, scaler) -> (params, aux,
    opt_state, last outputs, stats stacked over steps, scaler)``: ``n`` fused train steps in one
    ``lax.scan``. With ``scale_name`` (``amp.insert_loss_scale``'s argument) each step feeds
    the loss scale of ``scaler`` (``amp.loss_scaler`` state) to the graph and updates through
    ``scaled_update``; otherwise ``scaler`` passes through."""
    from ..contrib.amp.loss_scaler import scaled_update

    def build():
        fb = progs._fb(input_names, False, metric, False)

        def block(params, aux, opt_state, inputs_list, keys, hypers, scaler):
            stacked = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *inputs_list)

            def body(carry, xs):
                params, aux, opt_state, scaler = carry
                inputs, key, hyper = xs
                feed = params
                if scale_name is not None:
                    s = scaler["scale"].reshape((1,)).astype(params[scale_name].dtype)
                    feed = {**params, scale_name: s}
                outs, new_aux, grads, _, stats = fb(feed, aux, inputs, key)
                trained = {k: params[k] for k in grads}
                if scale_name is None:
                    new, opt_state = optimizer.fused_update(trained, grads, opt_state, hyper)
                else:
                    new, opt_state, scaler, _ = scaled_update(
                        optimizer.fused_update, trained, grads, opt_state, hyper, scaler
                    )
                return ({**params, **new}, {**aux, **new_aux}, opt_state, scaler), (outs, stats)

            (params, aux, opt_state, scaler), (outs, stats) = lax.scan(
                body, (params, aux, opt_state, scaler), (stacked, keys, hypers)
            )
            return params, aux, opt_state, [o[-1] for o in outs], stats, scaler

        return jax.jit(block, donate_argnums=(0, 1, 2))

    key = ("steps", n, input_names, optimizer.fused_signature(), metric_key(metric), scale_name)
    return progs._cached(key, build, (optimizer, metric))


def use_blocks(module, eval_metric, monitor, steps_per_dispatch) -> bool:
    """Whether ``fit`` runs blocks: asked for (``steps_per_dispatch > 1``) and possible
    (else a warning says why), or required by ``amp.init_trainer(module)`` (else an error)."""
    scaler = getattr(module, "_amp_scaler", None)
    if steps_per_dispatch == 1 and scaler is None:
        return False
    reason = why_not(module, eval_metric, monitor)
    if reason and scaler is not None:
        raise ValueError(
            f"fit: amp.init_trainer(module) scales the loss inside compiled "
            f"steps, which this fit cannot run: {reason}"
        )
    if reason:
        module.logger.warning(
            "fit(steps_per_dispatch=%d) runs single steps: %s", steps_per_dispatch, reason
        )
        return False
    return True


def why_not(module, eval_metric, monitor) -> str:
    """Why ``module`` cannot run blocks of steps ('' when it can)."""
    from .module import Module
    from .base_module import BaseModule

    if not isinstance(module, Module):
        return f"{type(module).__name__} is not a Module"
    for name in ("forward", "backward", "update", "update_metric", "forward_backward"):
        if getattr(type(module), name) is not getattr(Module, name, getattr(BaseModule, name)):
            return f"{type(module).__name__} overrides {name}()"
    group = module._exec_group
    if monitor is not None:
        return "a monitor is installed"
    if not group.state.opt.fused:
        return f"the optimizer {type(group.state.opt.optimizer).__name__} has no fused form"
    if not hasattr(group._progs, "_fb") or group._progs.placement.processes > 1:
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
    from ..io import DataBatch
    from ..model import BatchEndParam
    from .base_module import _call

    nbatch = 0
    batch = first_batch
    done = False
    while not done:
        bound = [tuple(d.shape) for d in module.data_shapes]
        block = []
        while batch is not None and len(block) < n:
            if (
                not isinstance(batch, DataBatch)
                or batch.data is None
                or [tuple(d.shape) for d in batch.data] != bound
            ):
                break  # pre-sliced or reshaped batches take the single-step path
            block.append((batch, module._exec_group._load(batch, True)))
            try:
                batch = next(data_iter)
                module.prepare(batch, sparse_row_id_fn=sparse_row_id_fn)
            except StopIteration:
                batch = None
        scaled = getattr(module, "_amp_scaler", None) is not None
        if len(block) == n or (scaled and block):  # a scaled tail runs as a shorter block
            stats = _run_block(module, block, eval_metric)
            for i, (b, _) in enumerate(block):
                row = jax.tree_util.tree_map(lambda leaf, i=i: _Row(leaf, i), stats)
                eval_metric._accumulate_device(row, stacked=True)
                last = batch is None and i == len(block) - 1
                eval_name_vals = eval_metric.get_global_name_value() if last else []
                _call(batch_end_callback, BatchEndParam(epoch, nbatch, eval_metric, locals()))
                nbatch += 1
            done = batch is None
            continue
        # a short tail (or a batch that needs the single-step path): one step each
        pending = [b for b, _ in block] + ([batch] if batch is not None else [])
        batch = None
        for j, b in enumerate(pending):
            module.forward_backward(b)
            module.update()
            module.update_metric(eval_metric, b.label)
            if j == len(pending) - 1:
                try:
                    batch = next(data_iter)
                    module.prepare(batch, sparse_row_id_fn=sparse_row_id_fn)
                except StopIteration:
                    batch = None
            last = batch is None and j == len(pending) - 1
            eval_name_vals = eval_metric.get_global_name_value() if last else []
            _call(batch_end_callback, BatchEndParam(epoch, nbatch, eval_metric, locals()))
            nbatch += 1
        done = batch is None
    return eval_metric.get_global_name_value()


def _run_block(module, block, metric):
    """Dispatch one block; leaves the module as after the last of its single steps."""
    from .. import random as mxrandom
    from .group_run import _zero_key
    from .train_state import PendingStep

    module._params_dirty = True
    group = module._exec_group
    group.flush()
    if group._overlay:
        group._commit_overlay()
    box = group.state.opt
    inputs_list = [inputs for _, inputs in block]
    names = tuple(inputs_list[0])
    n = len(block)
    if group._graph.has_random:
        keys = [mxrandom.next_key() for _ in block]
        stacked_keys = jnp.stack(keys)
    else:  # the fixed key of graphs without random operators, stacked once per block size
        if n not in _ZERO_KEYS:
            _ZERO_KEYS[n] = jnp.stack([_zero_key()] * n)
        keys, stacked_keys = [_zero_key()], _ZERO_KEYS[n]
    hypers = [box.optimizer.fused_hyper(None if box.state else []) for _ in block]
    hypers = jax.tree_util.tree_map(lambda *xs: np.stack(xs), *hypers)
    scaler = getattr(module, "_amp_scaler", None)
    from ..contrib.amp.loss_scaler import SCALE_NAME

    fn = train_steps(
        group._progs, names, box.optimizer, metric, n, SCALE_NAME if scaler is not None else None
    )
    params, aux, box.state, outs, stats, sstate = fn(
        group._params_in(),
        group.state.aux,
        box.state,
        inputs_list,
        stacked_keys,
        hypers,
        scaler.state() if scaler is not None else {},
    )
    if scaler is not None:
        scaler.keep_device_state(sstate)
    group._store_params(params)
    group.state.aux = aux
    group._outs = list(outs)
    group._grads, group._grads_stacked = {}, False
    group._grads_valid = not group._diff_params
    group._input_grads = {}
    last_batch, last_inputs = block[-1]
    group._pending = PendingStep(
        last_inputs,
        last_batch.label,
        True,
        keys[-1],
        backward=True,
        update=True,
        outs_done=True,
        grads_done=True,
        update_done=True,
    )
    return stats


class _Row:
    """Step ``i`` of a block's statistic (stacked over steps): the metric fetches it when it
    is read, and the first row read brings the whole block to the host in one transfer
    (a jax.Array keeps its host copy)."""

    __slots__ = ("block", "i")

    def __init__(self, block, i):
        self.block, self.i = block, i

    def copy_to_host_async(self):
        self.block.copy_to_host_async()

    def __array__(self, dtype=None, copy=None):
        row = np.asarray(self.block)[self.i]
        return row if dtype is None else row.astype(dtype)
