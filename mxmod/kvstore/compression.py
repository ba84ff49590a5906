"""MXNet's 2-bit gradient compression inside a Module's compiled step.

When the Module's kvstore has ``set_gradient_compression({'type': '2bit', ...})`` (or the
Module was built with ``compression_params``), each sender quantises what it sends, as
MXNet's ``device``/``dist`` stores do: ``r = residual + grad``; send ``+t`` where
``r >= t``, ``-t`` where ``r <= -t``, else 0; keep ``r - sent`` as the new residual. The
sum of what was sent replaces the exact gradient sum before the optimizer runs.

Senders are the devices of the mesh (MXNet's local ``device`` store quantises per device;
its ``dist`` store quantises each worker's merged sum instead, so multi-process runs here
keep one residual per device rather than one per worker). The residuals live on the
kvstore object (as MXNet's do), one stacked array per parameter with a leading device
axis, and follow it through ``borrow_optimizer``.

The fused step is one dispatch on a mesh (``Programs._fb`` with per-device gradients,
then quantise, sum and update in the same ``jit``); per-device replicas and a separate
``update()`` run the forward-backward with per-device gradients, then one small jitted
compress-and-update.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = ["apply_update", "quantize_2bit", "run_train_step", "threshold_of"]


def quantize_2bit(r, threshold):
    """What a sender transmits for accumulated gradient ``r`` (MXNet's 2-bit levels)."""
    t = jnp.asarray(threshold, r.dtype)
    return jnp.where(r >= t, t, jnp.where(r <= -t, -t, jnp.zeros_like(r)))


def threshold_of(kvstore):
    """The 2-bit threshold set on ``kvstore``, or None (no store, no compression)."""
    comp = getattr(kvstore, "_compression", None)
    return None if not comp else comp["threshold"]


def _compress(grads, residual, threshold):
    """``(sum over senders of the quantised values, new residuals)`` of stacked grads."""
    acc = {n: residual[n] + g for n, g in grads.items()}
    sent = {n: quantize_2bit(r, threshold) for n, r in acc.items()}
    return ({n: s.sum(0) for n, s in sent.items()}, {n: acc[n] - sent[n] for n in acc})


def _residual(group, grads_like_shapes: dict):
    """The kvstore's residuals for this group's senders (zeros the first time)."""
    kv = group.state.opt.kvstore
    progs = group._progs
    key = (progs.placement.key, getattr(progs, "all_devices", None) and tuple(progs.all_devices))
    held = getattr(kv, "_step_residual", None)
    if held is not None and held[0] == key:
        return held[1]
    pl = progs.placement
    senders = len(getattr(progs, "all_devices", None) or pl.devices)
    local = senders // pl.processes
    res = {}
    for n, (shape, dtype) in grads_like_shapes.items():
        if pl.processes > 1:
            res[n] = pl.put(jnp.zeros((local,) + tuple(shape), dtype), 0)
        elif getattr(progs, "all_devices", None):
            res[n] = jnp.zeros((senders,) + tuple(shape), dtype)
        else:
            res[n] = jax.device_put(jnp.zeros((senders,) + tuple(shape), dtype), pl.sharding(0))
    kv._step_residual = (key, res)
    return res


def _store_residual(group, res) -> None:
    kv = group.state.opt.kvstore
    kv._step_residual = (kv._step_residual[0], res)


def _shapes(group) -> dict:
    return {n: (group._arg_shape[n], group._arg_type[n]) for n in group._diff_params}


def run_train_step(group, p, metric, threshold):
    """The fused step with compressed gradients; returns the metric statistics."""
    from ..executor.programs import metric_key

    box = group.state.opt
    progs = group._progs
    if hasattr(progs, "all_devices"):  # per-device replicas: two dispatches
        stats = group._run_fwd_bwd(p, metric)
        p.outs_done = True
        group._apply_update()
        p.update_done = True
        return stats
    keep = tuple(
        k for k, on in (("grads", group._keep_grads), ("input_grads", group.inputs_need_grad)) if on
    )
    names = tuple(p.inputs)
    optimizer = box.optimizer

    def build():
        fb = progs._fb(names, False, metric, True)

        def step(params, aux, opt_state, residual, inputs, rng, hyper):
            outs, new_aux, grads, igrads, stats = fb(params, aux, inputs, rng)
            summed, residual = _compress(grads, residual, threshold)
            trained = {n: params[n] for n in summed}
            new, opt_state = optimizer.fused_update(trained, summed, opt_state, hyper)
            return (
                {**params, **new},
                {**aux, **new_aux},
                opt_state,
                residual,
                outs,
                stats,
                summed if "grads" in keep else {},
                igrads if "input_grads" in keep else {},
            )

        return jax.jit(step, donate_argnums=(0, 1, 2, 3))

    key = (
        "step2bit",
        names,
        optimizer.fused_signature(),
        metric_key(metric),
        keep,
        float(threshold),
    )
    fn = progs._cached(key, build, (optimizer, metric))
    hyper = optimizer.fused_hyper(None if box.state else [])
    residual = _residual(group, _shapes(group))
    params, aux, box.state, residual, outs, stats, grads, igrads = fn(
        group._params_in(), group.state.aux, box.state, residual, p.inputs, p.key, hyper
    )
    _store_residual(group, residual)
    group._store_params(params)
    group.state.aux = aux
    group._outs = list(outs)
    group._grads, group._grads_stacked = grads, False
    group._grads_valid = bool(grads) or not group._diff_params
    group._input_grads = igrads
    p.outs_done = p.grads_done = p.update_done = True
    return stats


def apply_update(group, threshold) -> None:
    """``update()`` after a separate forward-backward: compress the per-device gradients
    (the group keeps them stacked while compression is on), then update."""
    from ..base import MXNetError

    box = group.state.opt
    if (
        not group._grads_stacked
        and len(getattr(group._progs, "all_devices", None) or group._progs.placement.devices) > 1
    ):
        raise MXNetError(
            "update(): 2-bit compression needs each device's gradient, but "
            "this step kept only their sum; call backward() again"
        )
    progs = group._progs
    optimizer = box.optimizer

    def build():
        def update(params, grads, residual, opt_state, hyper):
            if not group._grads_stacked:
                grads = {n: g[None] for n, g in grads.items()}
            summed, residual = _compress(grads, residual, threshold)
            trained = {n: params[n] for n in summed}
            new, opt_state = optimizer.fused_update(trained, summed, opt_state, hyper)
            return {**params, **new}, residual, opt_state

        return jax.jit(update, donate_argnums=(0, 2, 3))

    key = ("upd2bit", optimizer.fused_signature(), float(threshold), group._grads_stacked)
    fn = progs._cached(key, build, optimizer)
    hyper = optimizer.fused_hyper(None if box.state else [])
    residual = _residual(group, _shapes(group))
    params, residual, box.state = fn(group._params_in(), group._grads, residual, box.state, hyper)
    _store_residual(group, residual)
    group._store_params(params)
