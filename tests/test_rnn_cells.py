"""``mx.rnn`` cells against real MXNet 1.9.1 (fixtures from ``fixtures/gen_rnn_cells.py``):
same graphs byte for byte, same parameter names, same outputs for the same weights, and
RNN checkpoints that move both ways."""

import os
import sys
from pathlib import Path

import numpy as np
import pytest

import mxmod as mx

FIX = Path(__file__).parent / "fixtures"
sys.path.insert(0, str(FIX))
import rnn_cell_cases as cases  # noqa: E402

DIR = FIX / "rnn_cells"


def load(name):
    with np.load(DIR / f"{name}.npz") as z:
        return {k: z[k] for k in z.files}


def build(name):
    builder, input_shapes = cases.CASES[name]
    with mx.name.NameManager():
        outs, cell = builder(mx)
    return mx.sym.Group(outs), cell, input_shapes


def forward(sym, args, is_train=False):
    exe = sym.bind(mx.cpu(), args={k: mx.nd.array(v) for k, v in args.items()}, grad_req="null")
    return [o.asnumpy() for o in exe.forward(is_train=is_train)]


def prefixed(rec, tag):
    return {k[len(tag) :]: v for k, v in rec.items() if k.startswith(tag)}


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_graph_names_and_outputs_match_mxnet(name):
    rec = load(name)
    sym, _, _ = build(name)
    assert sym.tojson() == str(rec["json"])
    assert sym.list_arguments() == list(rec["arg_names"])
    assert sym.list_outputs() == list(rec["out_names"])
    outs = forward(sym, prefixed(rec, "arg:"))
    expected = [rec[f"out:{i}"] for i in range(len(outs))]
    assert len(outs) == len(prefixed(rec, "out:"))
    for got, want in zip(outs, expected):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-6)


@pytest.mark.parametrize(
    "name",
    [
        "lstm_lm",
        "fused_lstm_bi2",
        *[
            pytest.param(n, marks=pytest.mark.slow)
            for n in ("gru_ntc_merge", "bi_merge", "conv_lstm")
        ],
    ],
)
def test_gradients_match_mxnet(name):
    rec = load(name)
    sym, _, _ = build(name)
    args = {k: mx.nd.array(v) for k, v in prefixed(rec, "arg:").items()}
    want = prefixed(rec, "grad:")
    grads = {k: mx.nd.zeros(args[k].shape) for k in want}
    req = {k: ("write" if k in want else "null") for k in args}
    exe = sym.bind(mx.cpu(), args=args, args_grad=grads, grad_req=req)
    outs = exe.forward(is_train=True)
    exe.backward([mx.nd.ones(o.shape) for o in outs])
    for k, v in want.items():
        np.testing.assert_allclose(grads[k].asnumpy(), v, rtol=1e-4, atol=1e-5, err_msg=k)


@pytest.mark.parametrize("name", sorted(set(cases.CASES) - {"shared_params"}))
def test_unpack_weights_match_mxnet_and_pack_inverts(name):
    rec = load(name)
    sym, cell, input_shapes = build(name)
    params = {k: mx.nd.array(v) for k, v in prefixed(rec, "arg:").items() if k not in input_shapes}
    unpacked = cell.unpack_weights(params)
    want = prefixed(rec, "unpacked:")
    assert sorted(unpacked) == sorted(want)
    for k, v in want.items():
        np.testing.assert_array_equal(unpacked[k].asnumpy(), v)
    packed = cell.pack_weights(unpacked)
    assert sorted(packed) == sorted(params)
    for k, v in params.items():
        np.testing.assert_array_equal(packed[k].asnumpy(), v.asnumpy())


def test_unfused_cells_equal_the_fused_rnn():
    """In MXNet itself: the unfused stack's outputs and states are the fused ones."""
    fused, unfused = load("fused_lstm_bi2"), load("unfused_lstm_bi2")
    np.testing.assert_allclose(unfused["out:0"], fused["out:0"], rtol=1e-5, atol=2e-6)
    for layer_dir in range(4):  # unfused states: (h, c) per layer and direction
        for k in range(2):
            np.testing.assert_allclose(
                unfused[f"out:{1 + 2 * layer_dir + k}"],
                fused[f"out:{1 + k}"][layer_dir],
                rtol=1e-5,
                atol=2e-6,
            )


@pytest.mark.parametrize(
    "mode,layout",
    [("lstm", "NTC"), ("lstm", "TNC"), ("gru", "TNC"), ("rnn_tanh", "NTC"), ("rnn_relu", "TNC")],
)
def test_fused_and_unfused_agree_for_the_same_weights(mode, layout):
    fused = mx.rnn.FusedRNNCell(
        4, num_layers=2, mode=mode, bidirectional=True, get_next_state=True, prefix="f_"
    )
    data = mx.sym.Variable("data")
    out, states = fused.unroll(4, data, layout=layout, merge_outputs=True)
    fsym = mx.sym.Group([out] + states)
    shape = (3, 4, 6) if layout == "NTC" else (4, 3, 6)
    arg_shapes, _, _ = fsym.infer_shape(data=shape)
    rng = np.random.RandomState(0)
    args = {
        n: rng.uniform(-0.5, 0.5, s).astype("float32")
        for n, s in zip(fsym.list_arguments(), arg_shapes)
    }
    want = forward(fsym, args)

    stack = fused.unfuse()
    out, states = stack.unroll(4, data, layout=layout, merge_outputs=True)
    usym = mx.sym.Group([out] + cases.flat(states))
    params = {"f_parameters": mx.nd.array(args["f_parameters"])}
    uargs = {k: v.asnumpy() for k, v in stack.pack_weights(fused.unpack_weights(params)).items()}
    uargs["data"] = args["data"]
    assert sorted(uargs) == sorted(usym.list_arguments())
    got = forward(usym, uargs)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=2e-6)
    # fused final states are (layers*dirs, N, H), one entry per layer and direction
    n_states = 2 if mode == "lstm" else 1
    fused_states = want[1:]
    for layer in range(2):
        for d in range(2):
            for k in range(n_states):
                got_state = got[1 + (layer * 2 + d) * n_states + k]
                np.testing.assert_allclose(
                    got_state, fused_states[k][layer * 2 + d], rtol=1e-5, atol=2e-6
                )


def test_mxnet_rnn_checkpoint_loads_and_runs(tmp_path):
    rec = load("fused_lstm_bi2")
    sym, cell, _ = build("fused_lstm_bi2")
    loaded, arg, aux = mx.rnn.load_rnn_checkpoint(cell, str(DIR / "fused_lstm_bi2"), 0)
    assert loaded.tojson() == sym.tojson()
    assert sorted(arg) == ["lstm_parameters"] and aux == {}
    np.testing.assert_array_equal(arg["lstm_parameters"].asnumpy(), rec["arg:lstm_parameters"])
    # written back by mxmod: the same keys and values as MXNet's file
    prefix = str(tmp_path / "again")
    mx.rnn.save_rnn_checkpoint(cell, prefix, 0, sym, arg, aux)
    mine, theirs = (
        mx.nd.load(prefix + "-0000.params"),
        mx.nd.load(str(DIR / "fused_lstm_bi2-0000.params")),
    )
    assert sorted(mine) == sorted(theirs)
    for k in theirs:
        np.testing.assert_array_equal(mine[k].asnumpy(), theirs[k].asnumpy())
    assert (
        Path(prefix + "-symbol.json").read_text()
        == (DIR / "fused_lstm_bi2-symbol.json").read_text()
    )


def test_language_model_checkpoint_from_mxnet_gives_mxnet_outputs():
    rec = load("lstm_lm")
    sym, stack, input_shapes = build("lstm_lm")
    loaded, arg, _ = mx.rnn.load_rnn_checkpoint([stack], str(DIR / "lstm_lm"), 0)
    assert "lstm_l0_i2h_weight" in arg and "lstm_l0_i2h_f_weight" not in arg
    raw = mx.nd.load(str(DIR / "lstm_lm-0000.params"))
    assert "arg:lstm_l1_h2h_o_bias" in raw  # MXNet stores the gates unpacked
    args = {k: v.asnumpy() for k, v in arg.items()}
    args.update({k: rec["arg:" + k] for k in input_shapes})
    outs = forward(loaded, args)
    np.testing.assert_allclose(outs[0], rec["out:0"], rtol=1e-5, atol=2e-6)


def test_do_rnn_checkpoint_saves_every_period(tmp_path):
    sym, cell, _ = build("fused_lstm_bi2")
    rec = load("fused_lstm_bi2")
    arg = {"lstm_parameters": mx.nd.array(rec["arg:lstm_parameters"])}
    callback = mx.rnn.do_rnn_checkpoint(cell, str(tmp_path / "cb"), period=2)
    for epoch in range(4):
        callback(epoch, sym, arg, {})
    assert sorted(os.listdir(tmp_path)) == ["cb-0002.params", "cb-0004.params", "cb-symbol.json"]
    assert "arg:lstm_l1_i2h_f_weight" in mx.nd.load(str(tmp_path / "cb-0004.params"))


def test_lstm_forget_bias_initialises_the_forget_gate():
    cell = mx.rnn.LSTMCell(3, prefix="p_", forget_bias=2.5)
    out, _ = cell.unroll(2, mx.sym.Variable("data"), merge_outputs=True)
    attrs = out.attr_dict()["p_i2h_bias"]
    arr = mx.nd.zeros((12,))
    mx.init.Xavier()(mx.init.InitDesc("p_i2h_bias", attrs=attrs), arr)
    np.testing.assert_array_equal(arr.asnumpy(), [0] * 3 + [2.5] * 3 + [0] * 6)


def test_begin_state_names_shapes_and_layouts():
    stack = mx.rnn.SequentialRNNCell()
    stack.add(mx.rnn.LSTMCell(4, prefix="a_"))
    stack.add(mx.rnn.FusedRNNCell(3, num_layers=2, mode="gru", bidirectional=True, prefix="b_"))
    assert stack.state_shape == [(0, 4), (0, 4), (4, 0, 3)]
    states = stack.begin_state(func=mx.sym.Variable)
    assert [s.name for s in states] == ["a_begin_state_0", "a_begin_state_1", "b_begin_state_0"]
    assert states[2].attr("__layout__") == "LNC"
    zeros = mx.rnn.GRUCell(4, prefix="g_").begin_state()
    assert zeros[0].name == "g_begin_state_0" and zeros[0].attr("__layout__") == "NC"


def test_state_variables_take_the_batch_size_from_the_data():
    cell = mx.rnn.LSTMCell(5, prefix="v_")
    states = cell.begin_state(func=mx.sym.Variable)
    out, _ = cell.unroll(3, mx.sym.Variable("data"), begin_state=states, merge_outputs=True)
    arg_shapes, out_shapes, _ = out.infer_shape(data=(2, 3, 4))
    # MXNet 1.9.1 gives exactly these (the (0, 5) states completed from the h2h FC)
    assert arg_shapes == [(2, 3, 4), (20, 4), (20,), (2, 5), (20, 5), (20,), (2, 5)]
    assert out_shapes == [(2, 3, 5)]


def test_unrolling_twice_reuses_parameters_and_restarts_names():
    cell = mx.rnn.LSTMCell(4, prefix="r_")
    short, _ = cell.unroll(2, mx.sym.Variable("data"), merge_outputs=True)
    long_, _ = cell.unroll(5, mx.sym.Variable("data"), merge_outputs=True)
    params = [a for a in short.list_arguments() if a != "data"]
    assert params == [a for a in long_.list_arguments() if a != "data"]
    assert "r_t0_i2h" in [n.name for n in long_.get_internals()]


def test_zoneout_and_dropout_act_only_in_training():
    cell = mx.rnn.ZoneoutCell(mx.rnn.RNNCell(50, prefix="z_"), zoneout_outputs=0.5)
    out, _ = cell.unroll(1, mx.sym.Variable("data"), merge_outputs=False)
    sym = out[0]
    rng = np.random.RandomState(1)
    args = {
        "data": rng.uniform(-1, 1, (4, 1, 6)).astype("float32"),
        "z_i2h_weight": rng.uniform(-1, 1, (50, 6)).astype("float32"),
        "z_h2h_weight": rng.uniform(-1, 1, (50, 50)).astype("float32"),
        "z_i2h_bias": np.full((50,), 0.5, "float32"),
        "z_h2h_bias": np.zeros((50,), "float32"),
    }
    plain = forward(sym, args)[0]
    mx.random.seed(3)
    zoned = forward(sym, args, is_train=True)[0]
    kept = np.isclose(zoned, plain)
    assert np.all(kept | (zoned == 0))  # every unit is the new output or the previous (0)
    assert 0.25 < kept.mean() < 0.75


@pytest.mark.parametrize("layout,shape", [("NTC", (2, 4, 3)), ("TNC", (4, 2, 3))])
def test_merge_outputs_layouts(layout, shape):
    cell = mx.rnn.GRUCell(5, prefix="m_")
    merged, _ = cell.unroll(4, mx.sym.Variable("data"), layout=layout, merge_outputs=True)
    listed, _ = cell.unroll(4, mx.sym.Variable("data"), layout=layout, merge_outputs=False)
    assert isinstance(listed, list) and len(listed) == 4
    _, out_shapes, _ = merged.infer_shape(data=shape)
    assert out_shapes == [(2, 4, 5) if layout == "NTC" else (4, 2, 5)]
    rng = np.random.RandomState(2)
    arg_shapes, _, _ = merged.infer_shape(data=shape)
    args = {
        n: rng.uniform(-1, 1, s).astype("float32")
        for n, s in zip(merged.list_arguments(), arg_shapes)
    }
    m = forward(merged, args)[0]
    steps = forward(mx.sym.Group(listed), args)
    axis = layout.find("T")
    np.testing.assert_allclose(m, np.stack(steps, axis=axis), rtol=1e-6)


# ----------------------------------------------------------------------------- errors
def test_unroll_input_errors():
    cell = mx.rnn.LSTMCell(4)
    xs = [mx.sym.Variable("x%d" % i) for i in range(3)]
    with pytest.raises(ValueError, match=r"unroll\(length=5\) got a list of 3 input symbols"):
        cell.unroll(5, xs)
    with pytest.raises(ValueError, match="inputs=None"):
        cell.unroll(3, None)
    with pytest.raises(ValueError, match="layout 'NC' must name a time axis T"):
        cell.unroll(3, mx.sym.Variable("data"), layout="NC")
    with pytest.raises(TypeError, match="length must be a positive int"):
        cell.unroll(0, mx.sym.Variable("data"))
    with pytest.raises(TypeError, match="must be a Symbol or a list"):
        cell.unroll(3, "data")
    with pytest.raises(mx.MXNetError, match="grouped symbol"):
        cell.unroll(2, mx.sym.Group([xs[0], xs[1]]))
    out, _ = cell.unroll(5, mx.sym.Variable("data"), merge_outputs=True)
    with pytest.raises(
        mx.MXNetError,
        match=r"cannot split axis 1 of shape \(2, 3, 6\) into "
        r"num_outputs=5",
    ):
        out.infer_shape(data=(2, 3, 6))
    with pytest.raises(ValueError, match="unsupported layout 'NCT'"):
        mx.rnn.FusedRNNCell(4).unroll(3, mx.sym.Variable("data"), layout="NCT")


def test_cells_that_cannot_step_say_so():
    with pytest.raises(NotImplementedError, match="FusedRNNCell cannot be stepped.*unfuse"):
        mx.rnn.FusedRNNCell(4)(mx.sym.Variable("x"), [])
    bi = mx.rnn.BidirectionalCell(mx.rnn.RNNCell(3, prefix="a_"), mx.rnn.RNNCell(3, prefix="b_"))
    with pytest.raises(NotImplementedError, match="BidirectionalCell cannot be stepped"):
        bi(mx.sym.Variable("x"), [])
    stack = mx.rnn.SequentialRNNCell()
    stack.add(bi)
    with pytest.raises(mx.MXNetError, match="holding a BidirectionalCell cannot be stepped"):
        stack(mx.sym.Variable("x"), stack.begin_state())
    for bad, msg in (
        (mx.rnn.FusedRNNCell(4), "FusedRNNCell does not support zoneout"),
        (bi, "BidirectionalCell does not support zoneout"),
        (stack, "SequentialRNNCell holds a cell that cannot be stepped"),
    ):
        with pytest.raises(TypeError, match=msg):
            mx.rnn.ZoneoutCell(bad, zoneout_outputs=0.1)


def test_modified_cell_cannot_be_used_directly():
    base = mx.rnn.GRUCell(3, prefix="m_")
    zone = mx.rnn.ZoneoutCell(base, zoneout_states=0.2)
    with pytest.raises(mx.MXNetError, match="GRUCell 'm_': after applying a modifier cell"):
        base.begin_state()
    assert [s.name for s in zone.begin_state(func=mx.sym.Variable)] == ["m_begin_state_0"]
    assert zone.begin_state()[0].name == "m_begin_state_1"


def test_parameter_container_errors():
    params = mx.rnn.RNNParams("p_")
    stack = mx.rnn.SequentialRNNCell(params=params)
    with pytest.raises(
        ValueError, match="give params= to the SequentialRNNCell or to its child cells, not both"
    ):
        stack.add(mx.rnn.RNNCell(3, params=mx.rnn.RNNParams("q_")))
    with pytest.raises(TypeError, match="params must be an mx.rnn.RNNParams"):
        mx.rnn.LSTMCell(3, params={"a": 1})
    with pytest.raises(TypeError, match="SequentialRNNCell.add takes mx.rnn cells"):
        mx.rnn.SequentialRNNCell().add("lstm")
    with pytest.raises(TypeError, match="num_hidden must be a positive int"):
        mx.rnn.LSTMCell(0)
    with pytest.raises(TypeError, match="dropout probability must be a number"):
        mx.rnn.DropoutCell("0.5")
    with pytest.raises(ValueError, match=r"must be in \[0, 1\)"):
        mx.rnn.DropoutCell(1.5)
    with pytest.raises(ValueError, match="mode must be one of"):
        mx.rnn.FusedRNNCell(4, mode="LSTM")
    with pytest.raises(ValueError, match="h2h_kernel must be odd"):
        mx.rnn.ConvRNNCell((1, 2, 4, 4), 2, h2h_kernel=(2, 2))


def test_weight_packing_errors():
    rec = load("shared_params")
    _, cell, _ = build("shared_params")
    params = {k: mx.nd.array(v) for k, v in prefixed(rec, "arg:").items() if k != "data"}
    with pytest.raises(mx.MXNetError, match="RNNCell 'a_': parameter 'a_i2h_weight' is not in"):
        cell.unpack_weights(params)
    fused = mx.rnn.FusedRNNCell(4, num_layers=2, prefix="f_")
    with pytest.raises(mx.MXNetError, match="'f_parameters' has 7 elements, which does not fit"):
        fused.unpack_weights({"f_parameters": mx.nd.zeros((7,))})
    with pytest.raises(mx.MXNetError, match="'f_parameters' is not in the given parameters"):
        fused.unpack_weights({})
    unpacked = fused.unpack_weights({"f_parameters": mx.nd.zeros((fused_size(3, 4, 2),))})
    unpacked["f_l1_h2h_o_weight"] = mx.nd.zeros((4, 3))
    with pytest.raises(
        mx.MXNetError,
        match=r"'f_l1_h2h_o_weight' has shape \(4, 3\), "
        r"expected \(4, 4\)",
    ):
        fused.pack_weights(unpacked)
    del unpacked["f_l1_h2h_o_weight"]
    with pytest.raises(mx.MXNetError, match="parameter 'f_l1_h2h_o_weight' is missing"):
        fused.pack_weights(unpacked)


def fused_size(num_input, h, layers, gates=4):
    size = gates * h * (num_input + h + 2)
    return size + (layers - 1) * gates * h * (h + h + 2)


def test_rnn_checkpoint_helper_errors(tmp_path):
    with pytest.raises(TypeError, match="cells must be an mx.rnn cell or a list of them"):
        mx.rnn.save_rnn_checkpoint("lstm", str(tmp_path / "x"), 0, None, {}, {})
    with pytest.raises(mx.MXNetError, match="does not exist"):
        mx.rnn.load_rnn_checkpoint(mx.rnn.LSTMCell(3), str(tmp_path / "missing"), 0)
    with pytest.warns(DeprecationWarning, match="rnn_unroll is deprecated"):
        out, _ = mx.rnn.rnn_unroll(mx.rnn.RNNCell(3), 2, mx.sym.Variable("data"))
    assert len(out) == 2
