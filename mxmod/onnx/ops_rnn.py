"""ONNX translation of the fused ``RNN`` operator (``mx.rnn.FusedRNNCell``, ``mx.sym.RNN``):
one ONNX ``RNN``/``LSTM``/``GRU`` node per layer, weights unpacked from MXNet's packed
vector and its gates reordered."""

from __future__ import annotations

import numpy as np

from .builder import GraphBuilder, NodeCtx
from .registry import register

_GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}
# MXNet's gate blocks in ONNX's order: LSTM [i, f, g, o] -> [i, o, f, c]; GRU [r, z, n] ->
# [z, r, h] (with linear_before_reset, the cuDNN formula MXNet uses)
_ORDER = {"lstm": [0, 3, 1, 2], "gru": [1, 0, 2], "rnn_tanh": [0], "rnn_relu": [0]}
_ONNX_OP = {"lstm": "LSTM", "gru": "GRU", "rnn_tanh": "RNN", "rnn_relu": "RNN"}


def _unpack(flat: np.ndarray, mode: str, hidden: int, layers: int, dirs: int, inputs: int):
    """Per (layer, direction): (w_i2h, w_h2h, b_i2h, b_h2h) from MXNet's packed vector
    (every weight first, per layer and direction i2h then h2h, then every bias)."""
    g, pos, weights = _GATES[mode], 0, []
    for layer in range(layers):
        i = inputs if layer == 0 else hidden * dirs
        for _ in range(dirs):
            wx = flat[pos : pos + g * hidden * i].reshape(g * hidden, i)
            pos += g * hidden * i
            wh = flat[pos : pos + g * hidden * hidden].reshape(g * hidden, hidden)
            pos += g * hidden * hidden
            weights.append((wx, wh))
    out = []
    for wx, wh in weights:
        bx, bh = flat[pos : pos + g * hidden], flat[pos + g * hidden : pos + 2 * g * hidden]
        pos += 2 * g * hidden
        out.append((wx, wh, bx, bh))
    return out


def _reorder(w: np.ndarray, mode: str, hidden: int) -> np.ndarray:
    blocks = [w[k * hidden : (k + 1) * hidden] for k in range(_GATES[mode])]
    return np.concatenate([blocks[k] for k in _ORDER[mode]], axis=0)


def _layer_state(b: GraphBuilder, state: str, layer: int, dirs: int) -> str:
    lo, hi = layer * dirs, (layer + 1) * dirs
    return b.op("Slice", [state, b.const([lo]), b.const([hi]), b.const([0])])


@register("RNN")
def rnn(b: GraphBuilder, n: NodeCtx) -> None:
    a = n.a
    if a.use_sequence_length:
        raise n.unsupported("use_sequence_length=True")
    if a.lstm_state_clip_min is not None or a.lstm_state_clip_max is not None:
        raise n.unsupported("lstm_state_clip_min/lstm_state_clip_max")
    if n.params[1] is None:
        raise n.unsupported("a 'parameters' input that is computed, not a parameter")
    mode, hidden, layers = a.mode, int(a.state_size), int(a.num_layers)
    dirs = 2 if a.bidirectional else 1
    dtype = np.dtype(n.in_dtypes[0])
    packed = _unpack(np.asarray(n.params[1]), mode, hidden, layers, dirs, n.in_shapes[0][2])
    state, cell = n.inputs[2], (n.inputs[3] if mode == "lstm" else None)
    x, hs, cs = n.x, [], []
    for layer in range(layers):
        parts = packed[layer * dirs : (layer + 1) * dirs]
        w = np.stack([_reorder(p[0], mode, hidden) for p in parts]).astype(dtype)
        r = np.stack([_reorder(p[1], mode, hidden) for p in parts]).astype(dtype)
        bias = np.stack(
            [np.concatenate([_reorder(p[2], mode, hidden), _reorder(p[3], mode, hidden)])
             for p in parts]
        )  # fmt: skip
        ins = [x, b.const(w, dtype, f"{n.name}_W{layer}"),
               b.const(r, dtype, f"{n.name}_R{layer}"), b.const(bias, dtype, f"{n.name}_B{layer}"),
               "", _layer_state(b, state, layer, dirs)]  # fmt: skip
        if cell is not None:
            ins.append(_layer_state(b, cell, layer, dirs))
        attrs = {"hidden_size": hidden, "direction": "bidirectional" if dirs == 2 else "forward"}
        if mode == "gru":
            attrs["linear_before_reset"] = 1
        if mode.startswith("rnn"):
            attrs["activations"] = ["Tanh" if mode == "rnn_tanh" else "Relu"] * dirs
        outs = b.op(_ONNX_OP[mode], ins, 3 if mode == "lstm" else 2, base=n.name, **attrs)
        y = outs[0]  # (T, D, N, H)
        hs.append(outs[1])
        if mode == "lstm":
            cs.append(outs[2])
        if dirs == 1:
            x = b.squeeze(y, [1])
        else:
            x = b.reshape(b.op("Transpose", [y], perm=[0, 2, 1, 3]), [0, 0, -1])
    b.op("Identity", [x], n.outputs[0])
    for out, states in zip(n.outputs[1:], [hs, cs]):
        b.op("Concat", states, out, axis=0)
