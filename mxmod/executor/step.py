"""The training step, written once.

``StepState`` is everything a step changes, as one pytree: parameters, aux states,
optimizer state, 2-bit compression residuals and the loss-scaler state. ``Batch`` is one
batch's device inputs and RNG key. ``compose_step`` builds

    train_step(state, batch, hyper) -> (state, StepResult)

from a forward-backward ``fb`` and an ``update(state, grads, hyper)`` (``make_update``:
gradient reduction, then the optimizer rule). The same function is jitted for one
dispatch per batch, scanned for several steps per dispatch, and run eagerly over
per-device replicas (whose forward-backward loops over the devices and whose update is
jitted on its own); ``make_update`` alone is ``Module.update()`` after a separate
``backward()``.

Gradient reductions are small static objects: ``SUM`` (the forward-backward already
summed the devices' gradients with a ``psum``), ``TwoBit(threshold)`` (MXNet's 2-bit
compression of each device's gradient, its residual carried in the state).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from ..ndarray.sparse.parts import RowParts


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class StepState:
    """What a training step reads and replaces (donated to the compiled step)."""

    params: dict
    aux: dict
    opt: Any = None  # the optimizer's fused state {name: leaf}
    residual: dict = dataclasses.field(default_factory=dict)  # 2-bit: {name: (senders, ...)}
    scaler: dict = dataclasses.field(default_factory=dict)  # dynamic loss scaling
    # {name: (devices, ...)} only for parameters whose device copies a user made differ
    # (MXNet's per-device updates without a kvstore); ``params`` then holds their mean
    per_device: dict = dataclasses.field(default_factory=dict)

    def replace(self, **changes) -> "StepState":
        return dataclasses.replace(self, **changes)


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Batch:
    """One batch on the devices: input arrays by name and the step's RNG key."""

    inputs: dict
    key: Any


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class StepResult:
    """What a step hands back besides the new state."""

    outs: list
    stats: Any  # per-device metric statistics (``()`` without a metric)
    grads: dict  # the reduced gradients, when kept
    input_grads: dict  # gradients of the inputs, when kept


_ZERO_KEY: list = []


def zero_key():
    """The key of graphs without random operators: ``PRNGKey(0)``, copied to the default
    device once (built on the host: nothing to compile)."""
    if not _ZERO_KEY:
        _ZERO_KEY.append(jax.device_put(np.zeros(2, np.uint32)))
    return _ZERO_KEY[0]


# ------------------------------------------------------------------ per-device weights
PER_DEVICE = "\0per-device:"  # an input named PER_DEVICE + name: device k's copy of name


def split_per_device(params: dict, inputs: dict) -> tuple:
    """``(params, inputs)`` with each ``PER_DEVICE`` input (this device's row, shape
    ``(1, ...)``) taking its parameter's place (trace-time only)."""
    own = {k: v for k, v in inputs.items() if k.startswith(PER_DEVICE)}
    if not own:
        return params, inputs
    params = {**params, **{k[len(PER_DEVICE) :]: v[0] for k, v in own.items()}}
    return params, {k: v for k, v in inputs.items() if k not in own}


# ------------------------------------------------------------------ reductions
@dataclasses.dataclass(frozen=True)
class SumReduction:
    """The devices' gradients are already summed (``psum``) by the forward-backward."""

    stacked = False  # the forward-backward returns the sum, not per-device gradients
    residual = False  # carries no residual in the state

    def __call__(self, grads: dict, residual: dict):
        return grads, residual


@dataclasses.dataclass(frozen=True)
class TwoBit:
    """MXNet's 2-bit gradient compression: each sender (device) adds its residual to its
    gradient, sends ``+t``/``-t``/0 and keeps the rest as the new residual; the sum of
    what was sent replaces the exact sum."""

    threshold: float
    stacked = True  # needs each device's own gradient (leading device axis)
    residual = True  # each sender's unsent remainder: ``StepState.residual``

    def __call__(self, grads: dict, residual: dict):
        acc = {n: residual[n] + g for n, g in grads.items()}
        sent = {n: quantize_2bit(r, self.threshold) for n, r in acc.items()}
        return {n: s.sum(0) for n, s in sent.items()}, {n: acc[n] - sent[n] for n in acc}


@dataclasses.dataclass(frozen=True)
class StackedSum:
    """The forward-backward keeps each device's gradient (someone reads device ``k``'s
    own ``grad_arrays``); the update sums them."""

    stacked = True
    residual = False

    def __call__(self, grads: dict, residual: dict):
        return {n: g.sum(0) for n, g in grads.items()}, residual


SUM = SumReduction()
STACKED_SUM = StackedSum()


def quantize_2bit(r, threshold):
    """What a sender transmits for accumulated gradient ``r`` (MXNet's 2-bit levels)."""
    t = jnp.asarray(threshold, r.dtype)
    return jnp.where(r >= t, t, jnp.where(r <= -t, -t, jnp.zeros_like(r)))


# ------------------------------------------------------------------ the step
@dataclasses.dataclass(frozen=True)
class Keyed:
    """A function a step is built from, with the key its compiled programs are shared
    under (equal keys: the same computation)."""

    key: Any
    fn: Callable = dataclasses.field(compare=False, hash=False)


def optimizer_rule(optimizer, lazy_rows=frozenset()) -> Keyed:
    """An optimizer's fused update as a step rule ``(trained, grads, opt, hyper, scaler) ->
    (new params, opt, scaler)`` (the scaler passes through).

    ``lazy_rows``: the parameters whose row_sparse (``RowParts``) gradients MXNet applies
    lazily (``optimizer.lazy.supports_lazy``): only their gradient's rows of the weight and
    of its state move. Other row_sparse gradients are applied dense (MXNet's std update)."""
    fused_update = optimizer.fused_update
    rows_update = getattr(optimizer, "fused_update_rows", None)

    def rule(trained, grads, opt, hyper, scaler, lazy=frozenset()):
        if lazy and rows_update is not None:  # MXNet's sparse kernels for those rows
            new, opt = rows_update(trained, dense_grads(grads), opt, hyper, lazy)
        else:
            new, opt = fused_update(trained, dense_grads(grads), opt, hyper)
        return new, opt, scaler

    lazy_rows = frozenset(lazy_rows)
    fn = lazy_rule(rule, lazy_rows) if lazy_rows else rule
    return Keyed(("optimizer", optimizer.fused_signature(), tuple(sorted(lazy_rows))), fn)


def lazy_rule(rule: Callable, names: frozenset) -> Callable:
    """``rule`` applied to the rows a ``RowParts`` gradient stores, for the parameters
    ``names`` (MXNet's lazy update): their weight and every state leaf with the weight's
    leading dimension are gathered at the rows, ``rule`` runs on the gathered rows (the
    optimizer's own formula, row by row) and the results are scattered back."""

    def per_row(x, n):
        return jnp.ndim(x) >= 1 and x.shape[0] == n

    def apply(trained, grads, opt, hyper, scaler):
        lazy = {k for k, g in grads.items() if isinstance(g, RowParts) and k in names}
        if not lazy or not isinstance(opt, dict):
            return rule(trained, dense_grads(grads), opt, hyper, scaler)
        rows = {k: grads[k].rows for k in lazy}

        def gather(x, k):
            if not per_row(x, trained[k].shape[0]):
                return x
            return jnp.take(x, rows[k], axis=0, mode="fill", fill_value=0)

        def scatter(full, new, k):
            if not per_row(full, trained[k].shape[0]):
                return new
            return full.at[rows[k]].set(new.astype(full.dtype), mode="drop")

        view_w = {k: gather(w, k) if k in lazy else w for k, w in trained.items()}
        view_g = {k: grads[k].values if k in lazy else g for k, g in dense_grads(grads).items()}
        view_opt = dict(opt)
        for k in lazy:
            view_opt[k] = jax.tree_util.tree_map(lambda x, k=k: gather(x, k), opt[k])
        new, new_opt, scaler = rule(view_w, view_g, view_opt, hyper, scaler, frozenset(lazy))
        new, new_opt = dict(new), dict(new_opt)
        for k in lazy:
            new[k] = scatter(trained[k], new[k], k)
            new_opt[k] = jax.tree_util.tree_map(
                lambda full, x, k=k: scatter(full, x, k), opt[k], new_opt[k]
            )
        return new, new_opt, scaler

    return apply


def dense_grads(grads: dict) -> dict:
    """Gradients with every row_sparse (``RowParts``) one made dense."""
    return {n: g.dense() if isinstance(g, RowParts) else g for n, g in grads.items()}


def make_update(rule: Callable, reduction=SUM, pinned: frozenset = frozenset()) -> Callable:
    """``update(state, grads, hyper) -> (state, reduced grads)``: reduce the gradients, then
    apply ``rule`` (``optimizer_rule(optimizer).fn`` or a loss-scaled rule). ``RowParts``
    gradients reach ``rule`` as they are (``lazy_rule`` applies them) unless the reduction
    needs each device's dense gradient. ``pinned``: parameters the forward sets to ones
    (a ``fix_gamma`` BatchNorm's gamma: MXNet's forward writes 1 into it), so each update
    starts from ones and the stored value stays ``1 - lr * wd``-near instead of decaying."""

    def update(state: StepState, grads: dict, hyper):
        if reduction is not SUM:
            grads = dense_grads(grads)
        grads, residual = reduction(grads, state.residual)
        held = state.params
        if pinned:
            held = {n: jnp.ones_like(v) if n in pinned else v for n, v in held.items()}
        trained = {n: held[n] for n in grads}
        new, opt, scaler = rule(trained, grads, state.opt, hyper, state.scaler)
        params = {**held, **new}
        return state.replace(params=params, opt=opt, residual=residual, scaler=scaler), grads

    return update


def compose_step(
    fb: Callable, update: Callable, keep: tuple = (), feed: Callable | None = None
) -> Callable:
    """``train_step(state, batch, hyper) -> (state, StepResult)``: forward-backward, then
    ``update``. ``fb(params, aux, inputs, key) -> (outs, new_aux, grads, input_grads,
    stats)``; ``keep`` may hold ``'grads'`` (reduced), ``'stacked_grads'`` (as the
    forward-backward gave them, before the reduction) and ``'input_grads'``;
    ``feed(state) -> params`` gives the graph its arguments (default: the parameters)."""

    def train_step(state: StepState, batch: Batch, hyper):
        args = state.params if feed is None else feed(state)
        outs, new_aux, grads, igrads, stats = fb(args, state.aux, batch.inputs, batch.key)
        state = state.replace(aux={**state.aux, **new_aux})
        raw = grads
        state, grads = update(state, grads, hyper)
        kept = grads if "grads" in keep else raw if "stacked_grads" in keep else {}
        return state, StepResult(
            list(outs),
            stats,
            kept,
            igrads if "input_grads" in keep else {},
        )

    return train_step


def scan_steps(train_step: Callable) -> Callable:
    """``steps(state, [batch] * n, keys, hypers) -> (state, last outputs, stats rows)``:
    ``n`` train steps in one ``lax.scan``; the statistics of the steps one after the other
    (``n * devices`` rows, the order single steps fold them in)."""

    def steps(state: StepState, inputs_list: list, keys, hypers):
        stacked = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *inputs_list)

        def body(state, xs):
            inputs, key, hyper = xs
            state, res = train_step(state, Batch(inputs, key), hyper)
            return state, (res.outs, res.stats)

        state, (outs, stats) = jax.lax.scan(body, state, (stacked, keys, hypers))
        rows = jax.tree_util.tree_map(lambda s: s.reshape((-1,) + s.shape[2:]), stats)
        return state, [o[-1] for o in outs], rows

    return steps
