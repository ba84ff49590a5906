"""ONNX layers and activations as MXNet symbols (``import_graph.py``); elementwise and shape
operators are in ``import_tensor_ops.py``, recurrent layers in ``import_rnn_ops.py``.
``CONVERTERS`` maps every translated ONNX operator type to its translation
``(ctx, name, attrs, inputs) -> Symbol(s)``."""

from __future__ import annotations

import math

import numpy as np

from .. import symbol as S
from .import_rnn_ops import RNN_CONVERTERS
from .import_tensor_ops import TENSOR_CONVERTERS, _scalar


def _spatial_pads(ctx, attrs, inputs, kernel, strides, dilations, what):
    """``(begin, end)`` pads of each spatial axis, ``auto_pad`` resolved on the static shape."""
    n = len(kernel)
    auto = attrs.get("auto_pad", "NOTSET")
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        shape = ctx.static_shape(inputs[0], f"{what} with auto_pad={auto}", known_from=2)[2:]
        begin, end = [], []
        for size, k, s, d in zip(shape, kernel, strides, dilations):
            total = max((math.ceil(size / s) - 1) * s + (k - 1) * d + 1 - size, 0)
            small, big = total // 2, total - total // 2
            begin.append(small if auto == "SAME_UPPER" else big)
            end.append(big if auto == "SAME_UPPER" else small)
        return begin, end
    pads = list(attrs.get("pads", [0] * 2 * n))
    return pads[:n], pads[n:]


def _padded(ctx, x, begin, end, value, what):
    """``x`` padded explicitly when its pads differ at the two ends (MXNet's layers pad
    symmetrically); returns ``(x, symmetric pads)``."""
    if begin == end:
        return x, tuple(begin)
    if len(begin) not in (2, 3):
        raise NotImplementedError(f"ONNX import: {what} with uneven pads on {len(begin)}-D data")
    width = (0, 0, 0, 0) + tuple(p for b, e in zip(begin, end) for p in (b, e))
    return S.pad(x, mode="constant", pad_width=width, constant_value=value), (0,) * len(begin)


def _conv(ctx, name, attrs, inputs):
    w_shape = ctx.static_shape(inputs[1], "Conv")
    kernel = tuple(attrs.get("kernel_shape", w_shape[2:]))
    n = len(kernel)
    strides = tuple(attrs.get("strides", (1,) * n))
    dilations = tuple(attrs.get("dilations", (1,) * n))
    begin, end = _spatial_pads(ctx, attrs, inputs, kernel, strides, dilations, "Conv")
    x, pad = _padded(ctx, ctx.arg(0), begin, end, 0.0, "Conv")
    has_bias = len(inputs) > 2 and inputs[2] is not None
    extra = [ctx.arg(2)] if has_bias else []
    return S.Convolution(
        x, ctx.arg(1), *extra, kernel=kernel, stride=strides, dilate=dilations, pad=pad,
        num_filter=int(w_shape[0]), num_group=int(attrs.get("group", 1)), no_bias=not has_bias,
        name=name,
    )  # fmt: skip


def _conv_transpose(ctx, name, attrs, inputs):
    if "output_shape" in attrs:
        raise NotImplementedError("ONNX import: ConvTranspose with output_shape")
    w_shape = ctx.static_shape(inputs[1], "ConvTranspose")
    kernel = tuple(attrs.get("kernel_shape", w_shape[2:]))
    n = len(kernel)
    group = int(attrs.get("group", 1))
    begin, end = list(attrs.get("pads", [0] * 2 * n))[:n], list(attrs.get("pads", [0] * 2 * n))[n:]
    if begin != end or attrs.get("auto_pad", "NOTSET") != "NOTSET":
        raise NotImplementedError("ONNX import: ConvTranspose with uneven or automatic pads")
    has_bias = len(inputs) > 2 and inputs[2] is not None
    extra = [ctx.arg(2)] if has_bias else []
    return S.Deconvolution(
        ctx.arg(0), ctx.arg(1), *extra, kernel=kernel,
        stride=tuple(attrs.get("strides", (1,) * n)),
        dilate=tuple(attrs.get("dilations", (1,) * n)), pad=tuple(begin),
        adj=tuple(attrs.get("output_padding", (0,) * n)),
        num_filter=int(w_shape[1]) * group, num_group=group, no_bias=not has_bias, name=name,
    )  # fmt: skip


def _gemm(ctx, name, attrs, inputs):
    alpha, beta = float(attrs.get("alpha", 1.0)), float(attrs.get("beta", 1.0))
    trans_a, trans_b = bool(attrs.get("transA", 0)), bool(attrs.get("transB", 0))
    has_c = len(inputs) > 2 and inputs[2] is not None
    if not trans_a and trans_b and alpha == 1.0 and beta == 1.0:
        w_shape = ctx.static_shape(inputs[1], "Gemm")
        extra = [ctx.arg(2)] if has_c and len(ctx.static_shape(inputs[2], "Gemm")) == 1 else []
        if has_c and not extra:
            out = S.FullyConnected(ctx.arg(0), ctx.arg(1), num_hidden=int(w_shape[0]), no_bias=True)
            return S.broadcast_add(out, ctx.arg(2), name=name)
        return S.FullyConnected(
            ctx.arg(0), ctx.arg(1), *extra, num_hidden=int(w_shape[0]), no_bias=not extra,
            flatten=False, name=name,
        )  # fmt: skip
    out = S.dot(ctx.arg(0), ctx.arg(1), transpose_a=trans_a, transpose_b=trans_b)
    if alpha != 1.0:
        out = out * alpha
    if not has_c:
        return out
    c = ctx.arg(2) if beta == 1.0 else ctx.arg(2) * beta
    if len(ctx.static_shape(inputs[2], "Gemm")) == 1:
        c = S.expand_dims(c, axis=0)
    return S.broadcast_add(out, c, name=name)


def _matmul(ctx, name, attrs, inputs):
    a_shape = ctx.shape_of(inputs[0])
    b_shape = ctx.static_shape(inputs[1], "MatMul", known_from=ctx.rank(inputs[1], "MatMul") - 2)
    if len(b_shape) == 2:
        return S.dot(ctx.arg(0), ctx.arg(1), name=name)
    if a_shape is not None and len(a_shape) == len(b_shape) == 3:
        return S.batch_dot(ctx.arg(0), ctx.arg(1), name=name)
    if a_shape is not None and len(a_shape) == len(b_shape) and a_shape[:-2] == b_shape[:-2]:
        # equal leading (batch, head...) axes: one batch_dot over them merged
        lead, (m, k), n = a_shape[:-2], a_shape[-2:], b_shape[-1]
        if list(lead).count(None) == 1:  # a symbolic batch: inferred back by Reshape's -1
            lead = tuple(-1 if d is None else d for d in lead)
        a3 = S.Reshape(ctx.arg(0), shape=(-1, m, k))
        b3 = S.Reshape(ctx.arg(1), shape=(-1, k, n))
        return S.Reshape(S.batch_dot(a3, b3), shape=(*lead, m, n), name=name)
    raise NotImplementedError(f"ONNX import: MatMul of shapes {a_shape} and {b_shape}")


def _layer_norm(ctx, name, attrs, inputs):
    axis = int(attrs.get("axis", -1))
    rank = ctx.rank(inputs[0], "LayerNormalization")
    if axis != -1 and axis != rank - 1:
        raise NotImplementedError("ONNX import: LayerNormalization over more than the last axis")
    if len(inputs) < 3 or inputs[2] is None:
        beta = np.zeros(ctx.static_shape(inputs[1], "LayerNormalization"), np.float32)
        bias = ctx.sym(beta, f"{name}_beta")
    else:
        bias = ctx.arg(2)
    eps = float(attrs.get("epsilon", 1e-5))
    return S.LayerNorm(ctx.arg(0), ctx.arg(1), bias, axis=-1, eps=eps, name=name)


def _gelu(ctx, name, attrs, inputs):
    if attrs.get("approximate", "none") != "none":
        raise NotImplementedError("ONNX import: Gelu with approximate='tanh'")
    return S.LeakyReLU(ctx.arg(0), act_type="gelu", name=name)


def _batch_norm(ctx, name, attrs, inputs):
    return S.BatchNorm(
        *[ctx.arg(i) for i in range(5)], eps=float(attrs.get("epsilon", 1e-5)),
        momentum=float(attrs.get("momentum", 0.9)), fix_gamma=False, name=name,
    )  # fmt: skip


def _instance_norm(ctx, name, attrs, inputs):
    eps = float(attrs.get("epsilon", 1e-5))
    return S.InstanceNorm(ctx.arg(0), ctx.arg(1), ctx.arg(2), eps=eps, name=name)


def _pool(pool_type):
    def convert(ctx, name, attrs, inputs):
        kernel = tuple(attrs["kernel_shape"])
        n = len(kernel)
        strides = tuple(attrs.get("strides", (1,) * n))
        if any(d != 1 for d in attrs.get("dilations", (1,) * n)):
            raise NotImplementedError("ONNX import: MaxPool with dilations")
        begin, end = _spatial_pads(ctx, attrs, inputs, kernel, strides, (1,) * n, "pooling")
        include = bool(attrs.get("count_include_pad", 0))
        if begin != end and pool_type == "avg" and not include:
            raise NotImplementedError("ONNX import: AveragePool with uneven pads excluded")
        fill = -np.inf if pool_type == "max" else 0.0
        x, pad = _padded(ctx, ctx.arg(0), begin, end, fill, "pooling")
        convention = "full" if attrs.get("ceil_mode", 0) else "valid"
        extra = {"count_include_pad": include} if pool_type == "avg" else {}
        return S.Pooling(
            x, kernel=kernel, stride=strides, pad=pad, pool_type=pool_type,
            pooling_convention=convention, name=name, **extra,
        )  # fmt: skip

    return convert


def _global_pool(pool_type):
    def convert(ctx, name, attrs, inputs):
        x = ctx.arg(0)
        return S.Pooling(x, kernel=(1, 1), global_pool=True, pool_type=pool_type, name=name)

    return convert


def _softmax(fn_name):
    def convert(ctx, name, attrs, inputs):
        default = -1 if ctx.opset >= 13 else 1
        axis = int(attrs.get("axis", default))
        if ctx.opset >= 13:
            return getattr(S, fn_name)(ctx.arg(0), axis=axis, name=name)
        shape = ctx.shape_of(inputs[0])
        if shape is not None and axis % len(shape) == len(shape) - 1:
            return getattr(S, fn_name)(ctx.arg(0), axis=-1, name=name)
        shape = ctx.static_shape(inputs[0], f"{fn_name} over axis {axis} (opset < 13)")
        flat = S.Reshape(ctx.arg(0), shape=(int(np.prod(shape[:axis])), -1))
        return S.Reshape(getattr(S, fn_name)(flat, axis=-1), shape=shape, name=name)

    return convert


def _activation(act_type):
    return lambda ctx, name, attrs, inputs: S.Activation(ctx.arg(0), act_type=act_type, name=name)


def _leaky(act_type, slope_attr=None, default=0.0):
    def convert(ctx, name, attrs, inputs):
        kwargs = {"slope": float(attrs.get(slope_attr, default))} if slope_attr else {}
        return S.LeakyReLU(ctx.arg(0), act_type=act_type, name=name, **kwargs)

    return convert


def _prelu(ctx, name, attrs, inputs):
    slope = inputs[1]
    if not isinstance(slope, S.Symbol):
        slope = np.asarray(slope).reshape(-1)
    gamma = ctx.sym(slope, ctx.node_inputs[1])
    return S.LeakyReLU(ctx.arg(0), gamma, act_type="prelu", name=name)


def _hard_sigmoid(ctx, name, attrs, inputs):
    alpha, beta = float(attrs.get("alpha", 0.2)), float(attrs.get("beta", 0.5))
    return S.hard_sigmoid(ctx.arg(0), alpha=alpha, beta=beta, name=name)


def _hard_swish(ctx, name, attrs, inputs):
    x = ctx.arg(0)
    return S.broadcast_mul(x, S.hard_sigmoid(x, alpha=1.0 / 6, beta=0.5), name=name)


def _mish(ctx, name, attrs, inputs):
    x = ctx.arg(0)
    return S.broadcast_mul(x, S.tanh(S.Activation(x, act_type="softrelu")), name=name)


def _depth_space(fn_name):
    def convert(ctx, name, attrs, inputs):
        if attrs.get("mode", "DCR") != "DCR":
            raise NotImplementedError(f"ONNX import: {fn_name} with mode={attrs['mode']}")
        return getattr(S, fn_name)(ctx.arg(0), block_size=int(attrs["blocksize"]), name=name)

    return convert


def _topk(ctx, name, attrs, inputs):
    k = attrs.get("k") if ctx.opset < 10 else _scalar(inputs[1])
    if k is None:
        raise NotImplementedError("ONNX import: TopK with a computed k")
    out = S.topk(
        ctx.arg(0), axis=int(attrs.get("axis", -1)), k=int(k), ret_typ="both",
        is_ascend=not attrs.get("largest", 1), dtype="int32", name=name,
    )  # fmt: skip
    return [out[0], out[1]]


def _dropout(ctx, name, attrs, inputs):
    ratio = attrs.get("ratio", 0.5)
    if ctx.opset >= 12 and len(inputs) > 1 and inputs[1] is not None:
        ratio = _scalar(inputs[1])
    return S.Dropout(ctx.arg(0), p=float(ratio), name=name)


def _lrn(ctx, name, attrs, inputs):
    return S.LRN(
        ctx.arg(0), alpha=float(attrs.get("alpha", 1e-4)), beta=float(attrs.get("beta", 0.75)),
        knorm=float(attrs.get("bias", 1.0)), nsize=int(attrs["size"]), name=name,
    )  # fmt: skip


def _pad(ctx, name, attrs, inputs):
    mode = attrs.get("mode", "constant")
    if ctx.opset < 11:
        pads, value = attrs.get("pads", attrs.get("paddings")), float(attrs.get("value", 0.0))
    else:
        pads = [int(p) for p in np.asarray(inputs[1]).ravel()]
        has_value = len(inputs) > 2 and inputs[2] is not None
        value = _scalar(inputs[2]) if has_value else 0.0
    n = len(pads) // 2
    begin, end = pads[:n], pads[n:]
    if n not in (4, 5) or any(begin[:2]) or any(end[:2]):
        raise NotImplementedError("ONNX import: Pad only on the spatial axes of 4-D or 5-D data")
    width = tuple(p for b, e in zip(begin, end) for p in (b, e))
    return S.pad(ctx.arg(0), mode=mode, pad_width=width, constant_value=value, name=name)


def _resize_scales(ctx, attrs, inputs) -> list:
    """Per-axis scales of Upsample (attribute or input) or Resize (scales or sizes input)."""
    scales = attrs.get("scales")
    if scales is not None:
        return [float(v) for v in scales]
    known = [v for v in inputs[1:] if v is not None and np.size(v) > 0]
    if not known or isinstance(known[-1], S.Symbol):
        raise NotImplementedError("ONNX import: Resize by computed scales")
    values = np.asarray(known[-1], np.float64).ravel()
    if np.asarray(known[-1]).dtype == np.int64:  # sizes, not scales
        values = values / np.asarray(ctx.static_shape(inputs[0], "Resize to sizes"), np.float64)
    return [float(v) for v in values]


def _upsample(ctx, name, attrs, inputs):
    mode = attrs.get("mode", "nearest")
    scales = _resize_scales(ctx, attrs, inputs)
    if len(scales) != 4 or scales[:2] != [1.0, 1.0]:
        raise NotImplementedError(f"ONNX import: resizing by {scales} (only H and W of 4-D data)")
    if mode == "nearest":
        if scales[2] != scales[3] or not scales[2].is_integer():
            raise NotImplementedError(f"ONNX import: nearest resizing by {scales}")
        x = ctx.arg(0)
        return S.UpSampling(x, scale=int(scales[2]), sample_type="nearest", num_args=1, name=name)
    if mode not in ("linear", "bilinear"):
        raise NotImplementedError(f"ONNX import: {mode} resizing")
    coords = attrs.get("coordinate_transformation_mode", "half_pixel")
    if ctx.opset < 11:  # Upsample: asymmetric coordinates
        coords = "asymmetric"
    if coords not in ("half_pixel", "pytorch_half_pixel", "align_corners"):
        raise NotImplementedError(f"ONNX import: linear resizing with {coords} coordinates")
    _, _, h, w = ctx.static_shape(inputs[0], "linear Resize", known_from=2)
    height, width = int(math.floor(h * scales[2])), int(math.floor(w * scales[3]))
    if coords == "pytorch_half_pixel" and (height == 1 or width == 1):
        raise NotImplementedError("ONNX import: pytorch_half_pixel resizing to one row/column")
    return S.contrib.BilinearResize2D(
        ctx.arg(0), height=height, width=width, align_corners=coords == "align_corners", name=name
    )


CONVERTERS = {
    **TENSOR_CONVERTERS,
    **RNN_CONVERTERS,
    "Conv": _conv,
    "ConvTranspose": _conv_transpose,
    "Gemm": _gemm,
    "MatMul": _matmul,
    "BatchNormalization": _batch_norm,
    "LayerNormalization": _layer_norm,
    "Gelu": _gelu,
    "InstanceNormalization": _instance_norm,
    "MaxPool": _pool("max"),
    "AveragePool": _pool("avg"),
    "GlobalMaxPool": _global_pool("max"),
    "GlobalAveragePool": _global_pool("avg"),
    "Softmax": _softmax("softmax"),
    "LogSoftmax": _softmax("log_softmax"),
    "Relu": _activation("relu"),
    "Sigmoid": _activation("sigmoid"),
    "Tanh": _activation("tanh"),
    "Softplus": _activation("softrelu"),
    "Softsign": _activation("softsign"),
    "LeakyRelu": _leaky("leaky", "alpha", 0.01),
    "Elu": _leaky("elu", "alpha", 1.0),
    "Selu": _leaky("selu"),
    "PRelu": _prelu,
    "HardSigmoid": _hard_sigmoid,
    "HardSwish": _hard_swish,
    "Mish": _mish,
    "DepthToSpace": _depth_space("depth_to_space"),
    "SpaceToDepth": _depth_space("space_to_depth"),
    "TopK": _topk,
    "Dropout": _dropout,
    "LRN": _lrn,
    "Pad": _pad,
    "Upsample": _upsample,
    "Resize": _upsample,
}
