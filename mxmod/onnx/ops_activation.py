"""ONNX translations of activations, softmax and the loss heads (their inference forward)."""

from __future__ import annotations

import math

from .builder import GraphBuilder, NodeCtx
from .registry import register

_SIMPLE = {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "softrelu": "Softplus",
           "softsign": "Softsign"}  # fmt: skip


def _activation(b: GraphBuilder, n: NodeCtx, kind: str, x: str, out: str) -> str:
    if kind in _SIMPLE:
        return b.op(_SIMPLE[kind], [x], out)
    if kind == "log_sigmoid":  # -softplus(-x)
        return b.op("Neg", [b.op("Softplus", [b.op("Neg", [x])])], out)
    if kind == "mish":  # x * tanh(softplus(x))
        return b.op("Mul", [x, b.op("Tanh", [b.op("Softplus", [x])])], out)
    raise n.unsupported(f"act_type={kind!r}")


@register("Activation")
def activation(b: GraphBuilder, n: NodeCtx) -> None:
    _activation(b, n, n.a.act_type, n.x, n.out)


@register("relu", "sigmoid", "tanh", "softsign")
def unary_activation(b: GraphBuilder, n: NodeCtx) -> None:
    _activation(b, n, n.op, n.x, n.out)


def _gelu(b: GraphBuilder, n: NodeCtx) -> None:
    dt = n.in_dtypes[0]
    inner = b.op("Erf", [b.op("Div", [n.x, b.const(math.sqrt(2.0), dt)])])
    half = b.op("Mul", [n.x, b.const(0.5, dt)])
    b.op("Mul", [half, b.op("Add", [inner, b.const(1.0, dt)])], n.out)


@register("LeakyReLU")
def leaky_relu(b: GraphBuilder, n: NodeCtx) -> None:
    kind = n.a.act_type
    if kind == "leaky":
        b.op("LeakyRelu", [n.x], n.out, alpha=float(n.a.slope))
    elif kind == "rrelu":  # inference: the mean of the random slope's range, as the mask
        slope = (float(n.a.lower_bound) + n.a.upper_bound) / 2
        b.op("LeakyRelu", [n.x], n.out, alpha=slope)
        b.op("Expand", [b.const(slope, n.in_dtypes[0]), b.op("Shape", [n.x])], n.outputs[1])
    elif kind == "elu":
        b.op("Elu", [n.x], n.out, alpha=float(n.a.slope))
    elif kind == "selu":
        b.op("Selu", [n.x], n.out)
    elif kind == "gelu":
        _gelu(b, n)
    elif kind == "prelu":  # gamma (C,) broadcast over axis 1
        slope = n.inputs[1]
        if n.ndim > 2:
            slope = b.reshape(slope, [-1] + [1] * (n.ndim - 2))
        b.op("PRelu", [n.x, slope], n.out)
    else:
        raise n.unsupported(f"act_type={kind!r}")


def _softmax_on(b: GraphBuilder, n: NodeCtx, x: str, axis: int, out: str, log=False) -> str:
    """Softmax along ``axis`` of ``x`` (an ``n.ndim``-dim tensor) for any opset."""
    op = "LogSoftmax" if log else "Softmax"
    ndim = n.ndim
    axis = axis + ndim if axis < 0 else axis
    if b.opset >= 13 or axis == ndim - 1:
        return b.op(op, [x], out, axis=axis if b.opset >= 13 else -1)
    perm = list(range(ndim))
    perm[axis], perm[-1] = perm[-1], perm[axis]  # a swap is its own inverse
    y = b.op(op, [b.op("Transpose", [x], perm=perm)], axis=-1)
    return b.op("Transpose", [y], out, perm=perm)


def _softmax(b: GraphBuilder, n: NodeCtx, log: bool, negate: bool = False) -> None:
    if n.a.use_length:
        raise n.unsupported("use_length=True")
    x = b.op("Neg", [n.x]) if negate else n.x
    if n.a.temperature is not None and float(n.a.temperature) != 1.0:
        x = b.op("Div", [x, b.const(n.a.temperature, n.in_dtypes[0])])
    if n.out_dtypes[0] != n.in_dtypes[0]:
        x = b.op("Cast", [x], to=b.onnx_type(n.out_dtypes[0]))
    _softmax_on(b, n, x, int(n.a.axis), n.out, log=log)


@register("softmax")
def softmax(b: GraphBuilder, n: NodeCtx) -> None:
    _softmax(b, n, log=False)


@register("softmin")
def softmin(b: GraphBuilder, n: NodeCtx) -> None:
    _softmax(b, n, log=False, negate=True)


@register("log_softmax")
def log_softmax(b: GraphBuilder, n: NodeCtx) -> None:
    _softmax(b, n, log=True)


def _rows_softmax(b: GraphBuilder, n: NodeCtx) -> None:
    """Softmax over all but the first axis, keeping the input's shape."""
    if n.ndim == 2:
        b.op("Softmax", [n.x], n.out, axis=-1 if b.opset >= 13 else 1)
        return
    flat = b.op("Flatten", [n.x], axis=1)
    rows = b.op("Softmax", [flat], axis=-1 if b.opset >= 13 else 1)
    b.op("Reshape", [rows, b.op("Shape", [n.x])], n.out)


@register("SoftmaxOutput")
def softmax_output(b: GraphBuilder, n: NodeCtx) -> None:
    """The inference forward of SoftmaxOutput: a softmax (the label is not used)."""
    if n.a.multi_output:
        _softmax_on(b, n, n.x, 1, n.out)
    elif n.a.preserve_shape:
        _softmax_on(b, n, n.x, -1, n.out)
    else:
        _rows_softmax(b, n)


@register("SoftmaxActivation")
def softmax_activation(b: GraphBuilder, n: NodeCtx) -> None:
    # instance mode: MXNet's forward normalises the last axis
    _softmax_on(b, n, n.x, 1 if n.a.mode == "channel" else -1, n.out)


@register("LinearRegressionOutput", "MAERegressionOutput", "SVMOutput", "MakeLoss",
          "BlockGrad", "_copy")  # fmt: skip
def identity_forward(b: GraphBuilder, n: NodeCtx) -> None:
    """Operators whose inference forward passes the data through."""
    b.op("Identity", [n.x], n.out)


@register("LogisticRegressionOutput")
def logistic_regression_output(b: GraphBuilder, n: NodeCtx) -> None:
    b.op("Sigmoid", [n.x], n.out)


@register("clip")
def clip(b: GraphBuilder, n: NodeCtx) -> None:
    dt = n.in_dtypes[0]
    lo = b.const(n.a.a_min, dt, base=f"{n.name}_min")
    hi = b.const(n.a.a_max, dt, base=f"{n.name}_max")
    b.op("Clip", [n.x, lo, hi], n.out)


@register("hard_sigmoid")
def hard_sigmoid(b: GraphBuilder, n: NodeCtx) -> None:
    b.op("HardSigmoid", [n.x], n.out, alpha=float(n.a.alpha), beta=float(n.a.beta))
