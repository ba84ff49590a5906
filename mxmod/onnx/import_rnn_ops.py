"""ONNX ``LSTM``/``GRU``/``RNN`` nodes as MXNet's fused ``RNN`` operator (one layer each),
the reverse of ``ops_rnn.py``: the gate blocks reordered from ONNX's order to MXNet's and
packed into MXNet's parameter vector (weights of each direction, then biases)."""

from __future__ import annotations

import numpy as np

from .. import symbol as S
from .ops_rnn import _GATES, _ORDER


def _to_mxnet_order(w: np.ndarray, mode: str, hidden: int) -> np.ndarray:
    blocks = [w[k * hidden : (k + 1) * hidden] for k in range(_GATES[mode])]
    onnx_position = _ORDER[mode]
    return np.concatenate([blocks[onnx_position.index(k)] for k in range(len(blocks))], axis=0)


def _known(ctx, value, what):
    if isinstance(value, S.Symbol):
        raise NotImplementedError(f"ONNX import: a recurrent layer whose {what} is computed")
    return np.asarray(value, np.float32)


def _recurrent(onnx_op):
    def convert(ctx, name, attrs, inputs):
        hidden = int(attrs["hidden_size"])
        direction = attrs.get("direction", "forward")
        if direction == "reverse":
            raise NotImplementedError(f"ONNX import: {onnx_op} with direction='reverse'")
        for unsupported in ("clip", "input_forget"):
            if attrs.get(unsupported):
                raise NotImplementedError(f"ONNX import: {onnx_op} with {unsupported}")
        if attrs.get("layout", 0):
            raise NotImplementedError(f"ONNX import: {onnx_op} with layout=1")
        if len(inputs) > 4 and inputs[4] is not None:
            raise NotImplementedError(f"ONNX import: {onnx_op} with sequence_lens")
        if onnx_op == "LSTM" and len(inputs) > 7 and inputs[7] is not None:
            raise NotImplementedError("ONNX import: LSTM with peepholes")
        if onnx_op == "GRU" and not attrs.get("linear_before_reset", 0):
            raise NotImplementedError("ONNX import: GRU with linear_before_reset=0")
        mode = {"LSTM": "lstm", "GRU": "gru"}.get(onnx_op)
        if mode is None:
            acts = [a.lower() for a in attrs.get("activations", ["Tanh"])]
            if len(set(acts)) != 1 or acts[0] not in ("tanh", "relu"):
                raise NotImplementedError(f"ONNX import: RNN with activations {acts}")
            mode = f"rnn_{acts[0]}"
        dirs = 2 if direction == "bidirectional" else 1
        w, r = _known(ctx, inputs[1], "W"), _known(ctx, inputs[2], "R")
        gates = _GATES[mode]
        has_bias = len(inputs) > 3 and inputs[3] is not None
        b = _known(ctx, inputs[3], "B") if has_bias else np.zeros((dirs, 2 * gates * hidden), "f")
        weights, biases = [], []
        for d in range(dirs):
            weights += [_to_mxnet_order(w[d], mode, hidden), _to_mxnet_order(r[d], mode, hidden)]
            biases += [_to_mxnet_order(half, mode, hidden) for half in np.split(b[d], 2)]
        packed = np.concatenate([p.ravel() for p in weights + biases]).astype(np.float32)
        seq, batch, _ = ctx.static_shape(inputs[0], onnx_op)

        def state(i, suffix):
            if len(inputs) > i and inputs[i] is not None:
                return ctx.arg(i)
            return ctx.sym(np.zeros((dirs, batch, hidden), np.float32), f"{name}_{suffix}")

        extra = [state(6, "initial_c")] if mode == "lstm" else []
        out = S.RNN(
            ctx.arg(0), ctx.sym(packed, f"{name}_parameters"), state(5, "initial_h"), *extra,
            state_size=hidden, num_layers=1, mode=mode, bidirectional=dirs == 2,
            state_outputs=True, name=name,
        )  # fmt: skip
        # MXNet's (T, N, D*H) as ONNX's (T, D, N, H)
        y = S.transpose(S.reshape(out[0], shape=(seq, batch, dirs, hidden)), axes=(0, 2, 1, 3))
        return [y, out[1], out[2]] if mode == "lstm" else [y, out[1]]

    return convert


RNN_CONVERTERS = {op: _recurrent(op) for op in ("LSTM", "GRU", "RNN")}
