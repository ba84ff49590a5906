"""Connectionist Temporal Classification loss: MXNet's ``CTCLoss`` (also ``ctc_loss``,
``_contrib_CTCLoss``, ``_contrib_ctc_loss``, so ``mx.sym.contrib.ctc_loss`` works), and
``WarpCTC``, the loss head of MXNet's warp-ctc plugin (deepspeech, CRNN OCR projects).

Layout and conventions follow MXNet 1.9.1: ``data`` is (T, N, C) unnormalised
activations (the softmax is inside the op); ``label`` is (N, L). With
``blank_label='first'`` class 0 is the blank, tokens are 1..C-1 and a label row ends at
its first 0; with ``'last'`` class C-1 is the blank, tokens are 0..C-2 and a row ends at
its first -1. ``use_data_lengths``/``use_label_lengths`` add the inputs ``data_lengths``
and ``label_lengths`` (N,) that override those defaults. The output is the per-sample
negative log-likelihood (N,); a sample whose label cannot fit its sequence gets loss 0 and
no gradient, as MXNet's warp-ctc gives.

Like MXNet (which runs warp-ctc's forward and backward together), the gradient with
respect to ``data`` is computed in the forward pass and kept as the hidden second output;
the backward scales it by the head gradient of each sample. The forward-backward
recursion is a log-space ``lax.scan`` over time: one compiled loop, fixed shapes, no host
round trip.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..base import MXNetError
from ._attrs import Param, choice, p_bool, p_int
from ._def import OpDef, register
from .loss import head

_NEG = -1e30  # log(0) that keeps gradients finite (a true -inf gives NaN through logaddexp)


def _ctc_inputs(a):
    names = ["data", "label"]
    if a.use_data_lengths:
        names.append("data_lengths")
    if a.use_label_lengths:
        names.append("label_lengths")
    return names


def _ctc_shape(a, s):
    data, label = s[0], s[1]
    if data is not None and len(data) != 3:
        raise MXNetError(
            f"data {tuple(data)} must be 3-D (sequence length, batch, alphabet "
            "size), MXNet's TNC layout"
        )
    if label is not None and len(label) != 2:
        raise MXNetError(f"label {tuple(label)} must be 2-D (batch, max label length)")
    if data is None:
        return s, [None, None]
    t, n, c = data
    if label is not None and label[0] != n:
        raise MXNetError(f"label batch {label[0]} differs from data batch {n}")
    ins = [tuple(data), None if label is None else tuple(label)] + [(n,)] * (len(s) - 2)
    return ins, [(n,), tuple(data)]


def _label_lengths(a, labels, given):
    """Per-sample label lengths: given, or up to the first padding value."""
    n, width = labels.shape
    if given is not None:
        return jnp.clip(given.astype(jnp.int32), 0, width)
    pad = 0 if a.blank_label == "first" else -1
    is_pad = labels == pad
    first = jnp.argmax(is_pad, axis=1).astype(jnp.int32)
    return jnp.where(jnp.any(is_pad, axis=1), first, width)


def _nll(logits, labels, data_len, label_len, blank: int):
    """Per-sample -log p(label | data) by the CTC forward recursion in log space."""
    t_max, n, _ = logits.shape
    width = labels.shape[1]
    logp = jax.nn.log_softmax(logits, axis=2)
    s = 2 * width + 1
    ext = jnp.full((n, s), blank, jnp.int32).at[:, 1::2].set(labels)  # blank, l1, blank, ...
    lp = jnp.take_along_axis(logp, jnp.broadcast_to(ext[None], (t_max, n, s)), axis=2)
    prev2 = jnp.concatenate([jnp.full((n, 2), -1, jnp.int32), ext[:, :-2]], axis=1)
    can_skip = (ext != blank) & (ext != prev2)
    neg = jnp.full((n, 1), _NEG, logp.dtype)
    alpha0 = jnp.full((n, s), _NEG, logp.dtype)
    alpha0 = (
        alpha0.at[:, 0].set(lp[0, :, 0]).at[:, 1].set(jnp.where(label_len > 0, lp[0, :, 1], _NEG))
    )

    def step(alpha, inp):
        t, lp_t = inp
        one = jnp.concatenate([neg, alpha[:, :-1]], axis=1)
        two = jnp.concatenate([neg, neg, alpha[:, :-2]], axis=1)
        acc = jnp.logaddexp(alpha, one)
        acc = jnp.where(can_skip, jnp.logaddexp(acc, two), acc)
        new = jnp.maximum(acc + lp_t, _NEG)
        return jnp.where((t < data_len)[:, None], new, alpha), None

    alpha, _ = jax.lax.scan(step, alpha0, (jnp.arange(1, t_max), lp[1:]))
    end = 2 * label_len
    a_end = jnp.take_along_axis(alpha, end[:, None], axis=1)[:, 0]
    a_last = jnp.take_along_axis(alpha, jnp.maximum(end - 1, 0)[:, None], axis=1)[:, 0]
    return -jnp.logaddexp(a_end, jnp.where(label_len > 0, a_last, _NEG))


def _ctc_lower(a, ins, aux, ctx):
    x, labels = ins[0], ins[1]
    rest = list(ins[2:])
    t_max, n, c = x.shape
    data_len = (
        rest.pop(0).astype(jnp.int32) if a.use_data_lengths else jnp.full((n,), t_max, jnp.int32)
    )
    label_len = _label_lengths(a, labels, rest.pop(0) if a.use_label_lengths else None)
    blank = 0 if a.blank_label == "first" else c - 1
    lab = labels.astype(jnp.int32)
    xf = x.astype(jnp.float32)

    def loss_and_grad(xv):
        loss, vjp = jax.vjp(lambda v: _nll(v, lab, data_len, label_len, blank), xv)
        # a label that cannot fit its sequence: loss 0 and no gradient (warp-ctc's result)
        ok = loss < -_NEG / 2
        return jnp.where(ok, loss, 0), jnp.where(ok[None, :, None], vjp(jnp.ones_like(loss))[0], 0)

    @jax.custom_vjp
    def ctc(xv, *others):
        return loss_and_grad(xv)

    def fwd(xv, *others):
        loss, grad = loss_and_grad(xv)
        return (loss, grad), (grad, others)

    def bwd(res, cot):
        grad, others = res
        g_loss = cot[0]
        return (grad * g_loss[None, :, None],) + tuple(jnp.zeros_like(o) for o in others)

    ctc.defvjp(fwd, bwd)
    loss, grad = ctc(xf, *ins[1:])
    return [loss.astype(x.dtype), jax.lax.stop_gradient(grad).astype(x.dtype)]


register(
    OpDef(
        name="CTCLoss",
        params={
            "use_data_lengths": Param(p_bool, False),
            "use_label_lengths": Param(p_bool, False),
            "blank_label": Param(choice("first", "last"), "first"),
        },
        inputs=_ctc_inputs,
        signature_inputs=("data", "label", "data_lengths", "label_lengths"),
        outputs=("output0",),
        num_outputs_total=lambda a: 2,
        infer_shape=_ctc_shape,
        infer_type=lambda a, t: (t, [t[0], t[0]]),
        lower=_ctc_lower,
        aliases=("ctc_loss", "_contrib_CTCLoss", "_contrib_ctc_loss"),
    )
)


# ---------------------------------------------------------------- WarpCTC (plugin)
# ``data`` (input_length * batch, alphabet) time-major activations, ``label``
# (batch * label_length,) with 0 as the blank and as padding; the output is the softmax of
# ``data``; the backward ignores its head gradient and gives the CTC gradient of every
# sample's -log p(label) with respect to the activations (summed over the batch, unscaled).
def _warpctc_geometry(a, rows: int) -> int:
    if a.input_length <= 0 or a.label_length <= 0:
        raise MXNetError(
            f"WarpCTC needs input_length > 0 and label_length > 0, got input_length="
            f"{a.input_length}, label_length={a.label_length}"
        )
    if rows % a.input_length:
        raise MXNetError(
            f"WarpCTC: data has {rows} rows, not a multiple of input_length={a.input_length} "
            "(data is (input_length * batch, alphabet), time-major)"
        )
    return rows // a.input_length


def _warpctc_shape(a, s):
    data = s[0]
    if data is None:
        return s, [None]
    if len(data) != 2:
        raise MXNetError(
            f"WarpCTC: data {tuple(data)} must be 2-D (input_length * batch, alphabet)"
        )
    n = _warpctc_geometry(a, data[0])
    return [tuple(data), (a.label_length * n,)], [tuple(data)]


def _warpctc_lower(a, ins, aux, ctx):
    data, label = ins
    t, c = a.input_length, data.shape[1]
    n = _warpctc_geometry(a, data.shape[0])
    rows = label.astype(jnp.int32).reshape(n, a.label_length)
    # 0 is the blank and is dropped wherever it stands (the plugin's removeBlank)
    order = jnp.argsort(rows == 0, axis=1, stable=True)
    labels = jnp.take_along_axis(rows, order, axis=1)
    label_len = jnp.sum(rows != 0, axis=1).astype(jnp.int32)
    data_len = jnp.full((n,), t, jnp.int32)

    def grad(out, x, _label):
        logits = x.astype(jnp.float32).reshape(t, n, c)
        g = jax.grad(lambda v: jnp.sum(_nll(v, labels, data_len, label_len, 0)))(logits)
        return g.reshape(x.shape)

    return [head(lambda x, _label: jax.nn.softmax(x, axis=-1), grad)(data, label)]


register(
    OpDef(
        name="WarpCTC",
        params={"label_length": Param(p_int, 0), "input_length": Param(p_int, 0)},
        inputs=("data", "label"),
        infer_shape=_warpctc_shape,
        # as the plugin: float32 activations, int32 labels (a float label is taken as given)
        infer_type=lambda a, t: ([t[0] or "float32", t[1] or "int32"], [t[0] or "float32"]),
        lower=_warpctc_lower,
        is_loss=True,
    )
)
