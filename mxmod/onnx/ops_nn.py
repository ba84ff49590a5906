"""ONNX translations of MXNet's layers: convolution, dense, pooling, normalisation, embedding."""

from __future__ import annotations

import numpy as np

from .builder import GraphBuilder, NodeCtx
from .registry import register


def _spatial(n: NodeCtx, value: tuple, fill: int, count: int) -> list:
    return [int(v) for v in value] if value else [fill] * count


def _check_layout(n: NodeCtx) -> None:
    layout = n.a.get("layout")
    if layout is not None and layout not in ("NCW", "NCHW", "NCDHW"):
        raise n.unsupported(f"layout={layout!r} (channel-first layouts only)")


@register("Convolution")
def convolution(b: GraphBuilder, n: NodeCtx) -> None:
    _check_layout(n)
    k = len(n.a.kernel)
    pad = _spatial(n, n.a.pad, 0, k)
    b.op("Conv", n.inputs[: 2 if n.a.no_bias else 3], n.out,
         kernel_shape=list(n.a.kernel), strides=_spatial(n, n.a.stride, 1, k),
         dilations=_spatial(n, n.a.dilate, 1, k), pads=pad + pad,
         group=int(n.a.num_group))  # fmt: skip


@register("Deconvolution")
def deconvolution(b: GraphBuilder, n: NodeCtx) -> None:
    _check_layout(n)
    if n.a.target_shape:
        raise n.unsupported("target_shape")
    k = len(n.a.kernel)
    pad = _spatial(n, n.a.pad, 0, k)
    b.op("ConvTranspose", n.inputs[: 2 if n.a.no_bias else 3], n.out,
         kernel_shape=list(n.a.kernel), strides=_spatial(n, n.a.stride, 1, k),
         dilations=_spatial(n, n.a.dilate, 1, k), pads=pad + pad,
         output_padding=_spatial(n, n.a.adj, 0, k), group=int(n.a.num_group))  # fmt: skip


@register("FullyConnected")
def fully_connected(b: GraphBuilder, n: NodeCtx) -> None:
    x, w = n.inputs[0], n.inputs[1]
    bias = None if n.a.no_bias else n.inputs[2]
    if n.a.flatten or n.ndim <= 2:
        if n.ndim != 2:
            x = b.op("Flatten", [x], axis=1, base=n.name)
        b.op("Gemm", [x, w] + ([bias] if bias else []), n.out, transB=1)
        return
    # flatten=False: the last axis is the feature axis
    if n.params[1] is not None:
        wt = b.initializer(b.fresh(f"{n.inputs[1]}_T"), np.ascontiguousarray(n.params[1].T))
    else:
        wt = b.op("Transpose", [w], perm=[1, 0], base=n.name)
    if bias is None:
        b.op("MatMul", [x, wt], n.out)
    else:
        b.op("Add", [b.op("MatMul", [x, wt], base=n.name), bias], n.out)


@register("Pooling")
def pooling(b: GraphBuilder, n: NodeCtx) -> None:
    _check_layout(n)
    a = n.a
    kind = a.pool_type
    if kind not in ("max", "avg", "lp"):
        raise n.unsupported(f"pool_type={kind!r}")
    p = int(a.p_value or 2)
    if a.global_pool:
        op = {"max": "GlobalMaxPool", "avg": "GlobalAveragePool", "lp": "GlobalLpPool"}[kind]
        b.op(op, [n.x], n.out, p=p if kind == "lp" else None)
        return
    if a.pooling_convention not in ("valid", "full"):
        raise n.unsupported(f"pooling_convention={a.pooling_convention!r}")
    k = len(a.kernel)
    pad = _spatial(n, a.pad, 0, k)
    attrs = dict(kernel_shape=list(a.kernel), strides=_spatial(n, a.stride, 1, k), pads=pad + pad)
    full = a.pooling_convention == "full"
    if full:
        for x, o, s, p in zip(n.in_shapes[0][2:], n.out_shapes[0][2:], attrs["strides"], pad):
            if (o - 1) * s >= x + p:  # ONNX drops a last window that starts in the padding
                raise n.unsupported(
                    "pooling_convention='full' whose last window starts in the padding "
                    f"(input {x}, stride {s}, pad {p})"
                )
    if kind == "lp":
        if full:
            raise n.unsupported("pool_type='lp' with pooling_convention='full'")
        b.op("LpPool", [n.x], n.out, p=p, **attrs)
    elif kind == "max":
        b.op("MaxPool", [n.x], n.out, ceil_mode=int(full), **attrs)
    else:
        include = True if a.count_include_pad is None else bool(a.count_include_pad)
        b.op("AveragePool", [n.x], n.out, ceil_mode=int(full),
             count_include_pad=int(include), **attrs)  # fmt: skip


def _to_channel_axis(ndim: int, axis: int) -> list:
    """The permutation that brings ``axis`` to position 1."""
    perm = [i for i in range(ndim) if i != axis]
    perm.insert(1, axis)
    return perm


@register("BatchNorm")
def batch_norm(b: GraphBuilder, n: NodeCtx) -> None:
    """Inference mode: the moving statistics (MXNet's ``is_train=False`` forward)."""
    if n.a.output_mean_var:
        raise n.unsupported("output_mean_var=True")
    x, gamma, beta, mean, var = n.inputs
    if n.a.fix_gamma:  # MXNet then uses 1 whatever gamma holds
        gamma = b.const(np.ones(n.in_shapes[1]), n.in_dtypes[1], base=f"{n.name}_ones")
    axis = n.axis(int(n.a.axis))
    if axis == 1:
        b.op("BatchNormalization", [x, gamma, beta, mean, var], n.out, epsilon=float(n.a.eps))
        return
    perm = _to_channel_axis(n.ndim, axis)
    x = b.op("Transpose", [x], perm=perm, base=n.name)
    y = b.op("BatchNormalization", [x, gamma, beta, mean, var], epsilon=float(n.a.eps))
    b.op("Transpose", [y], n.out, perm=[perm.index(i) for i in range(n.ndim)])


@register("Dropout")
def dropout(b: GraphBuilder, n: NodeCtx) -> None:
    if n.a.mode == "always":
        raise n.unsupported("mode='always' (dropout at inference)")
    b.op("Identity", [n.x], n.out)


@register("LRN")
def lrn(b: GraphBuilder, n: NodeCtx) -> None:
    b.op("LRN", [n.x], n.out, size=int(n.a.nsize), alpha=float(n.a.alpha),
         beta=float(n.a.beta), bias=float(n.a.knorm))  # fmt: skip


@register("InstanceNorm")
def instance_norm(b: GraphBuilder, n: NodeCtx) -> None:
    b.op("InstanceNormalization", n.inputs[:3], n.out, epsilon=float(n.a.eps))


@register("LayerNorm")
def layer_norm(b: GraphBuilder, n: NodeCtx) -> None:
    if n.a.output_mean_var:
        raise n.unsupported("output_mean_var=True")
    x, gamma, beta = n.inputs
    axis = n.axis(int(n.a.axis))
    if b.opset >= 17:
        if axis != n.ndim - 1:
            raise n.unsupported(f"axis={n.a.axis} (the last axis only)")
        b.op("LayerNormalization", [x, gamma, beta], n.out, axis=-1, epsilon=float(n.a.eps))
        return
    mean = b.reduce("Mean", x, [axis], True)
    centred = b.op("Sub", [x, mean])
    var = b.reduce("Mean", b.op("Mul", [centred, centred]), [axis], True)
    eps = b.const(n.a.eps, n.in_dtypes[0])
    normed = b.op("Div", [centred, b.op("Sqrt", [b.op("Add", [var, eps])])])
    shape = [1] * n.ndim
    shape[axis] = n.in_shapes[0][axis]
    g, bt = b.reshape(gamma, shape), b.reshape(beta, shape)
    b.op("Add", [b.op("Mul", [normed, g]), bt], n.out)


@register("Embedding")
def embedding(b: GraphBuilder, n: NodeCtx) -> None:
    idx = b.op("Cast", [n.x], to=b.onnx_type(np.int64), base=n.name)
    b.op("Gather", [n.inputs[1], idx], n.out, axis=0)


@register("UpSampling")
def upsampling(b: GraphBuilder, n: NodeCtx) -> None:
    if n.a.sample_type != "nearest" or len(n.inputs) != 1:
        raise n.unsupported(f"sample_type={n.a.sample_type!r} with {len(n.inputs)} input(s)")
    scale = float(n.a.scale)
    scales = b.const([1.0, 1.0] + [scale] * (n.ndim - 2), np.float32)
    roi = b.const([], np.float32)
    b.op("Resize", [n.x, roi, scales], n.out, mode="nearest",
         coordinate_transformation_mode="asymmetric", nearest_mode="floor")  # fmt: skip


@register("L2Normalization")
def l2_normalization(b: GraphBuilder, n: NodeCtx) -> None:
    axes = {"instance": list(range(1, n.ndim)), "channel": [1],
            "spatial": list(range(2, n.ndim))}.get(n.a.mode)  # fmt: skip
    if axes is None:
        raise n.unsupported(f"mode={n.a.mode!r}")
    sq = b.reduce("Sum", b.op("Mul", [n.x, n.x]), axes, True)
    norm = b.op("Sqrt", [b.op("Add", [sq, b.const(n.a.eps, n.in_dtypes[0])])])
    b.op("Div", [n.x, norm], n.out)
