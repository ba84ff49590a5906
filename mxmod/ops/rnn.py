"""The fused ``RNN`` operator and the sequence helpers ``SequenceMask``, ``SequenceLast``,
``SequenceReverse`` (time-major layout, MXNet's TNC).

``RNN`` reads MXNet's packed ``parameters`` vector: every weight first (per layer, per
direction: i2h then h2h), then every bias in the same order. Gate order is MXNet/cuDNN's:
LSTM ``[i, f, g, o]``, GRU ``[r, z, n]`` with ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``.
The input projections of a layer are one matmul over all time steps; only the recurrent
matmul runs inside ``jax.lax.scan``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..base import MXNetError
from ._attrs import Param, choice, optional, p_bool, p_float, p_int, p_uint32
from ._def import OpDef, register

_GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}


def _bad(msg: str) -> None:
    raise MXNetError(msg)


# ------------------------------------------------------------------------- RNN
def _rnn_inputs(a):
    names = ["data", "parameters", "state"]
    if a.mode == "lstm":
        names.append("state_cell")
    if a.use_sequence_length:
        names.append("sequence_length")
    return names


def _rnn_outputs(a):
    if not a.state_outputs:
        return ["output"]
    return (
        ["output", "state_output", "statecell_output"]
        if a.mode == "lstm"
        else ["output", "state_output"]
    )


def _check(a):
    if a.projection_size is not None:
        raise NotImplementedError(
            "RNN: projection_size (LSTMP) is not supported by mxmod; remove projection_size"
        )
    if a.state_size <= 0 or a.num_layers <= 0:
        _bad(f"state_size {a.state_size} and num_layers {a.num_layers} must be positive")
    if not 0.0 <= a.p < 1.0:
        _bad(f"dropout p {a.p} must be in [0, 1)")


def param_size(a, input_size: int) -> int:
    """Length of MXNet's packed parameter vector."""
    g, h, d = _GATES[a.mode], a.state_size, 2 if a.bidirectional else 1
    total = 0
    for layer in range(a.num_layers):
        i = input_size if layer == 0 else h * d
        total += d * (g * h * (i + h) + 2 * g * h)
    return total


def _rnn_shape(a, s):
    _check(a)
    data = s[0]
    n_out = len(_rnn_outputs(a))
    if data is None:
        return s, [None] * n_out
    if len(data) != 3:
        _bad(f"data {tuple(data)} must be 3-D (seq_len, batch, input_size), layout TNC")
    t, n, c = data
    d, h = (2 if a.bidirectional else 1), a.state_size
    state = (a.num_layers * d, n, h)
    shapes = [tuple(data), (param_size(a, c),), state]
    if a.mode == "lstm":
        shapes.append(state)
    if a.use_sequence_length:
        shapes.append((n,))
    outs = [(t, n, d * h), state, state][:n_out]
    return shapes, outs


def _rnn_type(a, t):
    d = t[0]
    n_out = len(_rnn_outputs(a))
    ins = [x if x is not None else d for x in t]
    if a.use_sequence_length and t[-1] is None:
        ins[-1] = None
    return ins, [d] * n_out


def _unpack(a, flat, input_size: int):
    """[(layer, dir) -> (w_i2h, w_h2h, b_i2h, b_h2h)] from the packed vector."""
    g, h, d = _GATES[a.mode], a.state_size, 2 if a.bidirectional else 1
    pos, weights = 0, []
    for layer in range(a.num_layers):
        i = input_size if layer == 0 else h * d
        for _ in range(d):
            wx = flat[pos : pos + g * h * i].reshape(g * h, i)
            pos += g * h * i
            wh = flat[pos : pos + g * h * h].reshape(g * h, h)
            pos += g * h * h
            weights.append((wx, wh))
    biases = []
    for _ in range(a.num_layers * d):
        bx = flat[pos : pos + g * h]
        bh = flat[pos + g * h : pos + 2 * g * h]
        pos += 2 * g * h
        biases.append((bx, bh))
    return [w + b for w, b in zip(weights, biases)]


def _cell(a):
    """step(carry, (x_proj_t, valid_t)) for the mode; carry is (h, c) (c unused but for lstm)."""
    lo, hi = a.lstm_state_clip_min, a.lstm_state_clip_max

    def step(wh, bh, carry, inp):
        h, c = carry
        xp, valid = inp
        hp = h @ wh.T + bh
        if a.mode == "lstm":
            i, f, g, o = jnp.split(xp + hp, 4, axis=-1)
            c_new = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
            if lo is not None or hi is not None:
                c_new = jnp.clip(c_new, lo, hi)
            h_new = jax.nn.sigmoid(o) * jnp.tanh(c_new)
        elif a.mode == "gru":
            xr, xz, xn = jnp.split(xp, 3, axis=-1)
            hr, hz, hn = jnp.split(hp, 3, axis=-1)
            r = jax.nn.sigmoid(xr + hr)
            z = jax.nn.sigmoid(xz + hz)
            n = jnp.tanh(xn + r * hn)
            h_new, c_new = (1 - z) * n + z * h, c
        else:
            act = jnp.tanh if a.mode == "rnn_tanh" else jax.nn.relu
            h_new, c_new = act(xp + hp), c
        if valid is not None:  # padded steps keep the state and output zeros (cuDNN)
            keep = valid[:, None]
            h_new = jnp.where(keep, h_new, h)
            c_new = jnp.where(keep, c_new, c)
            return (h_new, c_new), jnp.where(keep, h_new, 0)
        return (h_new, c_new), h_new

    return step


def _reverse_within(x, lengths):
    """Reverse each batch column's first ``lengths[b]`` steps (time axis 0)."""
    t = x.shape[0]
    idx = jnp.arange(t)[:, None]
    src = jnp.where(idx < lengths[None, :], lengths[None, :] - 1 - idx, idx)
    return jnp.take_along_axis(x, src.reshape(src.shape + (1,) * (x.ndim - 2)), axis=0)


def _run_dir(a, x, h0, c0, wx, wh, bx, bh, reverse: bool, lengths):
    step = _cell(a)
    valid = None
    if lengths is not None:
        valid = jnp.arange(x.shape[0])[:, None] < lengths[None, :]
        if reverse:
            x = _reverse_within(x, lengths)
    elif reverse:
        x = jnp.flip(x, axis=0)
    xp = jnp.einsum("tni,gi->tng", x, wx.astype(x.dtype)) + bx.astype(x.dtype)
    (h, c), ys = jax.lax.scan(
        lambda cr, inp: step(wh.astype(x.dtype), bh.astype(x.dtype), cr, inp), (h0, c0), (xp, valid)
    )
    if reverse:
        ys = _reverse_within(ys, lengths) if lengths is not None else jnp.flip(ys, axis=0)
    return ys, h, c


def _rnn_lower(a, ins, aux, ctx):
    _check(a)
    names = _rnn_inputs(a)
    x, flat, state = ins[0], ins[1], ins[2]
    cell = ins[names.index("state_cell")] if a.mode == "lstm" else jnp.zeros_like(state)
    lengths = None
    if a.use_sequence_length:
        lengths = ins[names.index("sequence_length")].astype(jnp.int32)
    d = 2 if a.bidirectional else 1
    params = _unpack(a, flat, x.shape[2])
    hs, cs = [], []
    key = ctx.key() if (ctx.is_train and a.p > 0 and a.num_layers > 1) else None
    for layer in range(a.num_layers):
        outs = []
        for di in range(d):
            k = layer * d + di
            wx, wh, bx, bh = params[k]
            ys, h, c = _run_dir(a, x, state[k], cell[k], wx, wh, bx, bh, di == 1, lengths)
            outs.append(ys)
            hs.append(h)
            cs.append(c)
        x = jnp.concatenate(outs, axis=-1) if d == 2 else outs[0]
        if key is not None and layer < a.num_layers - 1:
            keep = jax.random.bernoulli(jax.random.fold_in(key, layer), 1 - a.p, x.shape)
            x = jnp.where(keep, x / (1 - a.p), 0).astype(x.dtype)
    res = [x]
    if a.state_outputs:
        res.append(jnp.stack(hs))
        if a.mode == "lstm":
            res.append(jnp.stack(cs))
    return res


register(
    OpDef(
        name="RNN",
        params={
            "state_size": Param(p_uint32),
            "num_layers": Param(p_uint32),
            "bidirectional": Param(p_bool, False),
            "mode": Param(choice("gru", "lstm", "rnn_relu", "rnn_tanh")),
            "p": Param(p_float, 0.0),
            "state_outputs": Param(p_bool, False),
            "projection_size": Param(optional(p_int), None),
            "lstm_state_clip_min": Param(optional(p_float), None),
            "lstm_state_clip_max": Param(optional(p_float), None),
            "lstm_state_clip_nan": Param(p_bool, False),
            "use_sequence_length": Param(p_bool, False),
        },
        inputs=_rnn_inputs,
        signature_inputs=("data", "parameters", "state", "state_cell", "sequence_length"),
        outputs=_rnn_outputs,
        random=True,
        infer_shape=_rnn_shape,
        infer_type=_rnn_type,
        lower=_rnn_lower,
    )
)


# ---------------------------------------------------------------- Sequence ops
def _seq_inputs(a):
    return ["data", "sequence_length"] if a.use_sequence_length else ["data"]


def _seq_axes(a, ndim: int, name: str):
    if ndim < 2:
        _bad(f"data must have at least 2 dims (time and batch), got {ndim}")
    if a.axis not in (0, 1):
        _bad(f"axis {a.axis} must be 0 (time-major TNC) or 1 (batch-major NTC)")
    if name == "SequenceReverse" and a.axis != 0:
        _bad(f"axis {a.axis} is not supported (MXNet's SequenceReverse needs axis=0)")
    return a.axis, 1 - a.axis


def _seq_shape(name):
    def infer(a, s):
        data = s[0]
        if data is None:
            return s, [None]
        t_ax, b_ax = _seq_axes(a, len(data), name)
        shapes = [tuple(data)] + ([(data[b_ax],)] if a.use_sequence_length else [])
        out = (
            tuple(d for i, d in enumerate(data) if i != t_ax)
            if name == "SequenceLast"
            else tuple(data)
        )
        return shapes, [out]

    return infer


def _seq_type(a, t):
    return [t[0]] + [x if x is not None else t[0] for x in t[1:]], [t[0]]


def _time_index(x, t_ax):
    """Time indices shaped to broadcast against ``x`` (time on t_ax, batch on b_ax)."""
    shape = [1] * x.ndim
    shape[t_ax] = x.shape[t_ax]
    return jnp.arange(x.shape[t_ax]).reshape(shape)


def _len_b(lengths, x, b_ax):
    shape = [1] * x.ndim
    shape[b_ax] = x.shape[b_ax]
    return lengths.astype(jnp.int32).reshape(shape)


def _mask_lower(a, ins, aux, ctx):
    x = ins[0]
    if not a.use_sequence_length:
        return [x]
    t_ax, b_ax = _seq_axes(a, x.ndim, "SequenceMask")
    keep = _time_index(x, t_ax) < _len_b(ins[1], x, b_ax)
    return [jnp.where(keep, x, jnp.asarray(a.value, x.dtype))]


def _last_lower(a, ins, aux, ctx):
    x = ins[0]
    t_ax, b_ax = _seq_axes(a, x.ndim, "SequenceLast")
    if not a.use_sequence_length:
        return [jnp.take(x, x.shape[t_ax] - 1, axis=t_ax)]
    idx = jnp.clip(_len_b(ins[1], x, b_ax) - 1, 0, x.shape[t_ax] - 1)
    idx = jnp.broadcast_to(idx, tuple(1 if i == t_ax else d for i, d in enumerate(x.shape)))
    return [jnp.squeeze(jnp.take_along_axis(x, idx, axis=t_ax), axis=t_ax)]


def _reverse_lower(a, ins, aux, ctx):
    x = ins[0]
    _seq_axes(a, x.ndim, "SequenceReverse")
    if not a.use_sequence_length:
        return [jnp.flip(x, axis=0)]
    return [_reverse_within(x, jnp.clip(ins[1].astype(jnp.int32), 0, x.shape[0]))]


_SEQ_PARAMS = {"use_sequence_length": Param(p_bool, False), "axis": Param(p_int, 0)}

# The Sequence* family differs only in its lowering (and SequenceMask's ``value``).
for _name, _extra, _lower in (
    ("SequenceMask", {"value": Param(p_float, 0.0)}, _mask_lower),
    ("SequenceLast", {}, _last_lower),
    ("SequenceReverse", {}, _reverse_lower),
):
    register(
        OpDef(
            name=_name,
            params={**_SEQ_PARAMS, **_extra},
            positional=("use_sequence_length", *_extra, "axis"),
            inputs=_seq_inputs,
            signature_inputs=("data", "sequence_length"),
            infer_shape=_seq_shape(_name),
            infer_type=_seq_type,
            lower=_lower,
        )
    )
