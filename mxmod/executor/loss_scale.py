"""MXNet's dynamic loss-scaling rule on device arrays, as a training-step rule.

MXNet's rule (``amp.LossScaler``): the scale starts at 2**16; a step whose gradients hold a
non-finite value is skipped and halves the scale; after 2000 finite steps in a row the
scale doubles, up to 2**24; a new scale applies one step late. ``scaled_update`` is that
rule around an optimizer update; ``scaled_step_parts`` turns it into the ``(rule, feed)``
of ``step.compose_step``: the state's ``scaler`` feeds the graph's loss-scale argument
(``SCALE_NAME``, inserted by ``amp.insert_loss_scale``) and the gradients are unscaled and
checked before the update. ``contrib.amp.loss_scaler`` keeps MXNet's host class.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .step import Keyed, dense_grads

INIT_SCALE = 2.0**16
MAX_SCALE = 2.0**24
WINDOW = 2000
SCALE_NAME = "amp_loss_scale"


def all_finite(grads) -> jax.Array:
    """One boolean: every element of every gradient is finite (MXNet's multi_all_finite)."""
    leaves = jax.tree_util.tree_leaves(grads)
    if not leaves:
        return jnp.bool_(True)
    return jnp.stack([jnp.isfinite(g).all() for g in leaves]).all()


def next_state(state: dict, finite) -> dict:
    """The scaler state after a step whose gradients were ``finite`` (MXNet's order)."""
    scale = state["next"]
    unskipped = jnp.where(finite, state["unskipped"] + 1, 0)
    nxt = jnp.where(finite, scale, scale / 2.0)
    grow = unskipped == WINDOW
    nxt = jnp.where(grow, jnp.minimum(MAX_SCALE, scale * 2.0), nxt)
    unskipped = jnp.where(grow, 0, unskipped)
    return {"scale": scale, "next": nxt.astype(jnp.float32), "unskipped": unskipped}


def scaled_update(update, params, grads, opt_state, hyper, scaler_state):
    """One optimizer update from loss-scaled gradients, skipped on overflow.

    Args:
      update: ``(params, grads, opt_state, hyper) -> (params, opt_state)``, e.g. an mxmod
        optimizer's ``fused_update``.
      grads: gradients of the loss times ``scaler_state['scale']``.

    Returns:
      ``(params, opt_state, scaler_state, finite)``: on overflow the parameters and the
      optimizer state are returned unchanged.
    """
    inv = 1.0 / scaler_state["scale"]
    unscaled = jax.tree_util.tree_map(lambda g: g * inv.astype(g.dtype), grads)
    finite = all_finite(unscaled)
    new_params, new_opt = update(params, unscaled, opt_state, hyper)
    keep = lambda new, old: jnp.where(finite, new, old)  # noqa: E731
    params_out = jax.tree_util.tree_map(keep, new_params, params)
    opt_out = jax.tree_util.tree_map(keep, new_opt, opt_state)
    return params_out, opt_out, next_state(scaler_state, finite), finite


def scaled_step_parts(rule: Keyed) -> tuple:
    """``(rule, feed)`` of a loss-scaled step around ``rule`` (``step.optimizer_rule``)."""
    fused_rule = rule.fn

    def scaled_rule(trained, grads, opt, hyper, scaler):
        grads = dense_grads(grads)  # row_sparse gradients: MXNet's std update

        def update(params, grads, opt, hyper):
            new, opt, _ = fused_rule(params, grads, opt, hyper, scaler)
            return new, opt

        new, opt, scaler, _ = scaled_update(update, trained, grads, opt, hyper, scaler)
        return new, opt, scaler

    def feed_scale(state):
        scale = state.scaler["scale"].reshape((1,))
        return {**state.params, SCALE_NAME: scale.astype(state.params[SCALE_NAME].dtype)}

    return Keyed(("scaled",) + rule.key, scaled_rule), Keyed(SCALE_NAME, feed_scale)
