"""Loss heads (spec 11.3): their backward ignores the incoming head gradient and
produces MXNet's loss gradient directly, by construction (``jax.custom_vjp``)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from ._attrs import Param, choice, p_bool, p_float
from ._def import OpDef, fail, register


def head(forward, grad):
    """A loss head: ``forward(data, label)`` and ``grad(out, data, label)`` -> d data."""

    @jax.custom_vjp
    def f(data, label):
        return forward(data, label)

    def fwd(data, label):
        out = forward(data, label)
        return out, (out, data, label)

    def bwd(res, _ignored_head_grad):
        out, data, label = res
        return grad(out, data, label).astype(data.dtype), jnp.zeros_like(label)

    f.defvjp(fwd, bwd)
    return f


# ---------------------------------------------------------------- SoftmaxOutput
def _softmax_fwd(a, data):
    if a.multi_output:
        return jax.nn.softmax(data, axis=1)
    if a.preserve_shape:
        return jax.nn.softmax(data, axis=-1)
    flat = data.reshape(data.shape[0], -1)
    return jax.nn.softmax(flat, axis=-1).reshape(data.shape)


def _softmax_grad(a, p, label):
    gs = a.grad_scale
    if label.shape == p.shape:
        g = (p - label) * gs
        return g * p if a.out_grad else g
    if a.multi_output:
        n, k = p.shape[0], p.shape[1]
        pv = p.reshape(n, k, -1)
        s = pv.shape[2]
        lab = label.reshape(n, -1).astype(jnp.int32)
        onehot = jax.nn.one_hot(lab, k, axis=1, dtype=p.dtype)
        keep = (lab != int(a.ignore_label))[:, None, :]
        norm = {"null": float(s), "batch": float(s * n)}
    else:
        # rows: (N, prod(rest)) as in forward, or every position for preserve_shape; MXNet
        # reads the first ``rows`` label values (matters only for >2-D data, a quirk)
        rows = math.prod(p.shape[:-1]) if a.preserve_shape else p.shape[0]
        n_lab = rows
        pv = p.reshape(rows, -1)
        k = pv.shape[1]
        lab = label.reshape(-1)[:rows].astype(jnp.int32)
        onehot = jax.nn.one_hot(lab, k, dtype=p.dtype)
        keep = (lab != int(a.ignore_label))[:, None]
        norm = {"null": 1.0, "batch": float(n_lab)}
    if a.smooth_alpha > 0:
        alpha = a.smooth_alpha
        target = jnp.where(onehot > 0, 1.0 - alpha, alpha / (k - 1))
    else:
        target = onehot
    g = pv - target
    if a.use_ignore:
        g = g * keep
    if a.normalization == "valid":
        scale = gs / jnp.maximum(1.0, jnp.sum(lab != int(a.ignore_label)).astype(p.dtype))
    else:
        scale = gs / norm[a.normalization]
    g = (g * scale).reshape(p.shape)
    return g * p if a.out_grad else g


def _softmax_label_shape(a, data):
    if a.multi_output:
        return (data[0], math.prod(data[2:]))
    return tuple(data[:-1])


def _softmax_shape(a, s):
    data, label = s
    if data is None:
        return s, [None]
    if a.multi_output and len(data) < 2:
        fail(f"multi_output needs data with a class axis 1, got {data}")
    if label is not None:
        if tuple(label) == tuple(data):
            return [data, label], [data]
        if a.multi_output:
            n, spatial = data[0], tuple(data[2:])
            ok = tuple(label) in ((n, math.prod(spatial)), (n,) + spatial, (n, 1) + spatial)
            if not ok:
                fail(
                    f"label shape {tuple(label)} does not fit data {data}: expected "
                    f"{(n, math.prod(spatial))} (or {(n,) + spatial}) for multi_output"
                )
            return [data, label], [data]
        if math.prod(label) == 0 or math.prod(data) % math.prod(label) != 0:
            fail(
                f"label shape {tuple(label)} does not fit data {data}: expected "
                f"{_softmax_label_shape(a, data)} (class labels) or {data} (probabilities)"
            )
        return [data, label], [data]
    return [data, _softmax_label_shape(a, data)], [data]


def _softmax_lower(a, ins, aux, ctx):
    f = head(lambda d, l: _softmax_fwd(a, d), lambda p, d, l: _softmax_grad(a, p, l))
    return [f(ins[0], ins[1])]


_SOFTMAX_PARAMS = {
    "grad_scale": Param(p_float, 1.0),
    "ignore_label": Param(p_float, -1.0),
    "multi_output": Param(p_bool, False),
    "use_ignore": Param(p_bool, False),
    "preserve_shape": Param(p_bool, False),
    "normalization": Param(choice("null", "batch", "valid"), "null"),
    "out_grad": Param(p_bool, False),
    "smooth_alpha": Param(p_float, 0.0),
}

register(
    OpDef(
        name="SoftmaxOutput",
        params=_SOFTMAX_PARAMS,
        inputs=("data", "label"),
        infer_shape=_softmax_shape,
        lower=_softmax_lower,
        is_loss=True,
        aliases=("Softmax",),
    )
)


# ------------------------------------------------------------ regression heads
def _regression_shape(a, s):
    """MXNet's RegressionOpShape: with no label given, data ``(N, 1)`` gets a label ``(N,)``
    and any other data a label of its own shape; a given label must share the batch size
    and the element count of the data (``(4, 6)`` data takes a ``(4, 2, 3)`` label)."""
    data, label = s
    if not data:  # unknown (MXNet 1.x also reads a 0-d shape as unknown)
        return s, [None]
    data = tuple(data)
    if label is None:
        label = (data[0],) if len(data) == 2 and data[1] == 1 else data
    elif not label or label[0] != data[0] or math.prod(label) != math.prod(data):
        want = f"{(data[0],)} or {data}" if len(data) == 2 and data[1] == 1 else f"{data}"
        fail(
            f"label shape {tuple(label)} does not fit data {data}: the label needs the "
            f"data's batch size {data[0]} and {math.prod(data)} elements, e.g. {want}"
        )
    return [data, tuple(label)], [data]


def _regression(name, forward, diff):
    def lower(a, ins, aux, ctx):
        def grad(out, data, label):
            m = label.size / label.shape[0]
            return a.grad_scale / m * diff(out - label.reshape(out.shape))

        return [head(lambda d, l: forward(d), grad)(ins[0], ins[1])]

    register(
        OpDef(
            name=name,
            params={"grad_scale": Param(p_float, 1.0)},
            inputs=("data", "label"),
            infer_shape=_regression_shape,
            lower=lower,
            is_loss=True,
        )
    )


_regression("LinearRegressionOutput", lambda x: x, lambda d: d)
_regression("LogisticRegressionOutput", jax.nn.sigmoid, lambda d: d)
_regression("MAERegressionOutput", lambda x: x, jnp.sign)


# ---------------------------------------------------------- MakeLoss, BlockGrad
def _identity_shape(a, s):
    return s, [s[0]]


def _makeloss_lower(a, ins, aux, ctx):
    def grad(out, data, _):
        if a.normalization == "batch":  # MXNet's rows of the array flattened to 2-D
            scale = a.grad_scale / math.prod(data.shape[:-1])
        elif a.normalization == "valid":
            valid = jnp.sum(data > a.valid_thresh).astype(data.dtype)
            scale = a.grad_scale / jnp.maximum(1.0, valid)
        else:
            scale = a.grad_scale
        return jnp.full_like(data, scale)

    f = head(lambda d, l: d, grad)
    return [f(ins[0], jnp.zeros((), ins[0].dtype))]


register(
    OpDef(
        name="MakeLoss",
        params={
            "grad_scale": Param(p_float, 1.0),
            "valid_thresh": Param(p_float, 0.0),
            "normalization": Param(choice("null", "batch", "valid"), "null"),
        },
        infer_shape=_identity_shape,
        lower=_makeloss_lower,
        is_loss=True,
    )
)

register(
    OpDef(
        name="make_loss",
        outputs=("loss",),
        infer_shape=_identity_shape,
        is_loss=True,
        lower=lambda a, ins, aux, ctx: [
            head(lambda d, l: d, lambda o, d, l: jnp.ones_like(d))(
                ins[0], jnp.zeros((), ins[0].dtype)
            )
        ],
    )
)

register(
    OpDef(
        name="BlockGrad",
        infer_shape=_identity_shape,
        aliases=("stop_gradient",),
        lower=lambda a, ins, aux, ctx: [jax.lax.stop_gradient(ins[0])],
    )
)
