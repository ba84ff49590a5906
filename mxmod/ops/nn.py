"""Neural-network layers: Dropout, LeakyReLU, Embedding, SoftmaxActivation, SVMOutput,
Crop, Pad and IdentityAttachKLSparseReg, each matching its MXNet namesake.

Random ops (Dropout, rrelu) draw from ``ctx.key()``, so results are reproducible under
``mx.random.seed`` but not bit-identical to MXNet's generator.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from ..base import MXNetError
from ._attrs import Param, choice, optional, p_bool, p_float, p_int, p_shape
from ._def import OpDef, register
from ._vjp import grad_from_output, identity_with_grad
from .loss import head

_sg = jax.lax.stop_gradient


def _bad(msg: str) -> None:
    raise MXNetError(msg)


# ---------------------------------------------------------------------- Dropout
def _mask_shape(a, shape: tuple) -> tuple:
    axes = [ax % len(shape) for ax in a.axes] if shape else []
    return tuple(1 if i in axes else d for i, d in enumerate(shape))


def _dropout_shape(a, s):
    if not 0.0 <= a.p <= 1.0:
        _bad(f"p {a.p} must be in [0, 1]")
    data = s[0]
    if data is not None:
        for ax in a.axes:
            if not -len(data) <= ax < len(data):
                _bad(f"axes {a.axes} out of range for data {tuple(data)}")
    return [data], [data, data]


def _dropout_lower(a, ins, aux, ctx):
    x = ins[0]
    active = (ctx.is_train or a.mode == "always") and a.p > 0
    if not active:
        return [x, jnp.ones_like(x)]
    keep = 1.0 - a.p
    bits = jax.random.bernoulli(ctx.key(), keep, _mask_shape(a, x.shape))
    mask = jnp.where(bits, jnp.asarray(1.0 / keep, x.dtype), jnp.asarray(0, x.dtype))
    return [x * mask, jnp.broadcast_to(mask, x.shape)]


register(
    OpDef(
        name="Dropout",
        params={
            "p": Param(p_float, 0.5),
            "mode": Param(choice("always", "training"), "training"),
            "axes": Param(p_shape, ()),
            "cudnn_off": Param(optional(p_bool), False),
        },
        num_outputs_total=lambda a: 2,
        random=True,
        infer_shape=_dropout_shape,
        infer_type=lambda a, t: (t, [t[0], t[0]]),
        lower=_dropout_lower,
    )
)


# -------------------------------------------------------------------- LeakyReLU
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_LAMBDA = 1.0507009873554804934193349852946


def _lrelu_shape(a, s):
    data = s[0]
    n_out = 2 if a.act_type == "rrelu" else 1
    if a.act_type != "prelu":
        return [data], [data] * n_out
    if data is None:
        return s, [None]
    if len(data) < 2:
        _bad(f"prelu needs data with a channel axis 1, got {tuple(data)}")
    gamma = s[1]
    if gamma is not None and tuple(gamma) in ((1,), (data[1],)):
        return [tuple(data), tuple(gamma)], [tuple(data)]
    return [tuple(data), (data[1],)], [tuple(data)]


# MXNet 1.9.1's selu_grad for x <= 0 is lambda * (y + alpha) (the exact derivative is
# y + lambda * alpha); reproduced so training matches MXNet step for step.
_selu = grad_from_output(
    lambda x: _SELU_LAMBDA * jnp.where(x > 0, x, _SELU_ALPHA * jnp.expm1(jnp.minimum(x, 0))),
    lambda y, g: (
        g * jnp.where(y > 0, _SELU_LAMBDA, _SELU_LAMBDA * (y + _SELU_ALPHA)).astype(g.dtype)
    ),
)


def _lrelu_lower(a, ins, aux, ctx):
    x = ins[0]
    t = a.act_type
    if t == "leaky":
        return [jnp.where(x > 0, x, x * a.slope)]
    if t == "prelu":
        g = ins[1].astype(x.dtype)
        g = g.reshape((1, -1) + (1,) * (x.ndim - 2)) if g.size > 1 else g.reshape(())
        return [jnp.where(x > 0, x, x * g)]
    if t == "elu":
        return [jnp.where(x > 0, x, a.slope * jnp.expm1(jnp.minimum(x, 0)))]
    if t == "selu":
        return [_selu(x)]
    if t == "gelu":
        return [0.5 * x * (1 + jax.lax.erf(x / math.sqrt(2.0)))]
    if ctx.is_train:  # rrelu
        slope = jax.random.uniform(ctx.key(), x.shape, x.dtype, a.lower_bound, a.upper_bound)
    else:
        slope = jnp.full(x.shape, (a.lower_bound + a.upper_bound) / 2, x.dtype)
    return [jnp.where(x > 0, x, x * slope), slope]


def _lrelu_type(a, t):
    d = next((x for x in t if x is not None), None)
    n = 2 if a.act_type == "rrelu" else 1
    return [d if x is None else x for x in t], [d] * n


register(
    OpDef(
        name="LeakyReLU",
        params={
            "act_type": Param(choice("elu", "gelu", "leaky", "prelu", "rrelu", "selu"), "leaky"),
            "slope": Param(p_float, 0.25),
            "lower_bound": Param(p_float, 0.125),
            "upper_bound": Param(p_float, 0.334),
        },
        inputs=lambda a: ["data", "gamma"] if a.act_type == "prelu" else ["data"],
        signature_inputs=("data", "gamma"),
        outputs=lambda a: ["output", "mask"] if a.act_type == "rrelu" else ["output"],
        random=True,
        infer_shape=_lrelu_shape,
        infer_type=_lrelu_type,
        lower=_lrelu_lower,
        input_attrs={"gamma": {"__init__": '["Constant", {"value": 0.25}]'}},
    )
)


# -------------------------------------------------------------------- Embedding
_EMB_DTYPES = ("bfloat16", "float16", "float32", "float64", "int32", "int64", "int8", "uint8")


def _emb_shape(a, s):
    if a.input_dim <= 0 or a.output_dim <= 0:
        _bad(f"input_dim {a.input_dim} and output_dim {a.output_dim} must be positive")
    w = (a.input_dim, a.output_dim)
    data = s[0]
    if data is None:
        return [None, w], [None]
    return [tuple(data), w], [tuple(data) + (a.output_dim,)]


def _emb_lower(a, ins, aux, ctx):
    idx = jnp.clip(ins[0].astype(jnp.int32), 0, a.input_dim - 1)
    return [jnp.take(ins[1], idx, axis=0)]


register(
    OpDef(
        name="Embedding",
        params={
            "input_dim": Param(p_int),
            "output_dim": Param(p_int),
            "dtype": Param(choice(*_EMB_DTYPES), "float32"),
            "sparse_grad": Param(p_bool, False),
        },
        inputs=("data", "weight"),
        infer_shape=_emb_shape,
        lower=_emb_lower,
        infer_type=lambda a, t: ([t[0], t[1] or a.dtype], [a.dtype]),
    )
)


# ------------------------------------------------------------ SoftmaxActivation
# MXNet 1.9.1 (native and MKL-DNN) takes the instance-mode backward over axis 1 while its
# forward normalises the last axis; identical for 2-D data, reproduced for N-D.
_softmax_last = grad_from_output(
    lambda x: jax.nn.softmax(x, axis=-1),
    lambda y, g: y * (g - jnp.sum(g * y, axis=1, keepdims=True)),
)


def _softmax_act(a, ins, aux, ctx):
    x = ins[0]
    if a.mode == "channel":
        return [jax.nn.softmax(x, axis=1)]
    # instance: MXNet's FlatTo2D rows, i.e. softmax over the last axis
    return [jax.nn.softmax(x, axis=-1) if x.ndim <= 2 else _softmax_last(x)]


register(
    OpDef(
        name="SoftmaxActivation",
        params={"mode": Param(choice("channel", "instance"), "instance")},
        infer_shape=lambda a, s: ([s[0]], [s[0]]),
        lower=_softmax_act,
    )
)


# -------------------------------------------------------------------- SVMOutput
def _svm_shape(a, s):
    data, label = s
    if data is None:
        return s, [None]
    want = tuple(data[:-1])
    if label is not None and math.prod(label) != math.prod(want):
        _bad(f"label shape {tuple(label)} does not fit data {tuple(data)}: expected {want}")
    return [tuple(data), tuple(label) if label is not None else want], [tuple(data)]


def _svm_grad(a, x, label):
    k = x.shape[-1]
    xv = x.reshape(-1, k)
    y = label.reshape(-1).astype(jnp.int32)
    onehot = jax.nn.one_hot(y, k, dtype=jnp.bool_)
    c, m = a.regularization_coefficient, a.margin
    if a.use_linear:
        g = jnp.where(onehot, -c * (m > xv), c * (m > -xv))
    else:
        g = jnp.where(onehot, -2 * c * jnp.maximum(0, m - xv), 2 * c * jnp.maximum(0, m + xv))
    return g.astype(x.dtype).reshape(x.shape)


def _svm_lower(a, ins, aux, ctx):
    f = head(lambda d, l: d, lambda o, d, l: _svm_grad(a, d, l))
    return [f(ins[0], ins[1])]


register(
    OpDef(
        name="SVMOutput",
        params={
            "margin": Param(p_float, 1.0),
            "regularization_coefficient": Param(p_float, 1.0),
            "use_linear": Param(p_bool, False),
        },
        inputs=("data", "label"),
        infer_shape=_svm_shape,
        lower=_svm_lower,
        is_loss=True,
    )
)


# ------------------------------------------------------------------------- Crop
def _n_args(a) -> int:
    n = a.get("num_args")
    return 1 if n is None else p_int(n)


def _crop_geom(a, data, like):
    if len(data) != 4:
        _bad(f"data {tuple(data)} must be 4-D (batch, channel, height, width)")
    if like is not None:
        if len(like) < 2:
            _bad(f"crop_like {tuple(like)} must have at least 2 dims")
        h, w = like[-2], like[-1]
    else:
        h, w = a.h_w
    if len(a.offset) != 2 or len(a.h_w) != 2:
        _bad(f"offset {a.offset} and h_w {a.h_w} must have 2 values (y, x)")
    H, W = data[2], data[3]
    oy, ox = ((H - h) // 2, (W - w) // 2) if a.center_crop else a.offset
    if h <= 0 or w <= 0 or oy < 0 or ox < 0 or oy + h > H or ox + w > W:
        _bad(
            f"cannot crop {(h, w)} at offset {(oy, ox)} from data {tuple(data)}; "
            f"pass h_w (and offset) that fit inside the data"
        )
    return oy, ox, h, w


def _crop_shape(a, s):
    n = _n_args(a)
    if n not in (1, 2):
        _bad(f"Crop takes 1 or 2 inputs (num_args), got {n}")
    data = s[0]
    if data is None or (n == 2 and s[1] is None):
        return s, [None]
    _, _, h, w = _crop_geom(a, data, s[1] if n == 2 else None)
    return [tuple(x) for x in s], [tuple(data[:2]) + (h, w)]


def _crop_lower(a, ins, aux, ctx):
    x = ins[0]
    like = ins[1].shape if len(ins) > 1 else None
    oy, ox, h, w = _crop_geom(a, x.shape, like)
    return [x[:, :, oy : oy + h, ox : ox + w]]


register(
    OpDef(
        name="Crop",
        params={
            "offset": Param(p_shape, (0, 0)),
            "h_w": Param(p_shape, (0, 0)),
            "center_crop": Param(p_bool, False),
        },
        variadic="num_args",
        inputs=lambda a: [f"arg{i}" for i in range(_n_args(a))],
        infer_shape=_crop_shape,
        lower=_crop_lower,
    )
)


# -------------------------------------------------------------------------- Pad
def _pad_pairs(a, data):
    nd = len(data)
    if nd not in (4, 5):
        _bad(f"data {tuple(data)} must be 4-D or 5-D (MXNet pads only these)")
    pw = a.pad_width
    if len(pw) != 2 * nd:
        _bad(f"pad_width {pw} must have 2 values per data dim ({2 * nd} for {nd}-D data)")
    if any(pw[:4]):
        _bad(f"pad_width {pw} must not pad the batch and channel axes (first 4 values 0)")
    pairs = [(pw[2 * i], pw[2 * i + 1]) for i in range(nd)]
    if a.mode == "reflect" and any(lo >= d or hi >= d for (lo, hi), d in zip(pairs, data)):
        _bad(f"reflect padding {pw} must be smaller than the data dims {tuple(data)}")
    return pairs


def _pad_shape(a, s):
    data = s[0]
    if data is None:
        return s, [None]
    pairs = _pad_pairs(a, data)
    return [tuple(data)], [tuple(d + lo + hi for d, (lo, hi) in zip(data, pairs))]


def _pad_lower(a, ins, aux, ctx):
    x = ins[0]
    pairs = _pad_pairs(a, x.shape)
    if a.mode == "constant":
        return [jnp.pad(x, pairs, mode="constant", constant_values=a.constant_value)]
    return [jnp.pad(x, pairs, mode=a.mode)]


register(
    OpDef(
        name="Pad",
        params={
            "mode": Param(choice("constant", "edge", "reflect")),
            "pad_width": Param(p_shape),
            "constant_value": Param(p_float, 0.0),
        },
        infer_shape=_pad_shape,
        lower=_pad_lower,
        aliases=("pad",),
    )
)


# ---------------------------------------------------- IdentityAttachKLSparseReg
def _kl_shape(a, s):
    data = s[0]
    if data is None:
        return s, [None]
    if len(data) < 2:
        _bad(f"data {tuple(data)} must have a feature axis 1")
    return [tuple(data), (data[1],)], [tuple(data)]


def _kl_lower(a, ins, aux, ctx):
    x, avg = ins[0], aux[0]
    if not ctx.is_train:
        return [x], [avg]
    red = tuple(i for i in range(x.ndim) if i != 1)
    cur = jnp.sum(_sg(x).astype(avg.dtype), axis=red) / x.shape[0]
    new = _sg(a.momentum * avg + (1 - a.momentum) * cur)
    t, pen = a.sparseness_target, a.penalty
    shp = (1, -1) + (1,) * (x.ndim - 2)

    def penalised(g, m):
        mb = m.reshape(shp)
        return g + (pen * (-t / mb + (1 - t) / (1 - mb))).astype(g.dtype)

    return [identity_with_grad(penalised)(x, new)], [new]


register(
    OpDef(
        name="IdentityAttachKLSparseReg",
        params={
            "sparseness_target": Param(p_float, 0.1),
            "penalty": Param(p_float, 0.001),
            "momentum": Param(p_float, 0.9),
        },
        aux=("moving_avg",),
        infer_shape=_kl_shape,
        lower=_kl_lower,
        input_attrs={"moving_avg": {"__init__": '["zero", {}]'}},
    )
)
