"""mx.contrib.amp against MXNet 1.9.1 (tests/fixtures/amp, gen_amp_goldens.py): converted
graphs node for node, convert_model's parameter dtypes, amp.init, bfloat16 numerics, the
amp_cast/amp_multicast operators and the errors."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import mxmod as mx
from mxmod.contrib import amp

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "fixtures", "amp")
sys.path.insert(0, os.path.join(HERE, "fixtures"))
from amp_nets import NETS, SHAPES  # noqa: E402

CASES = [
    (n, d)
    for n in NETS
    for d in ("float16", "bfloat16")
    if os.path.exists(os.path.join(FIX, f"{n}_{d}.json"))
]


def _build(name):
    with mx.name.NameManager():
        return NETS[name](mx)


def test_every_golden_case_is_present():
    assert len(CASES) == 7  # residual/bfloat16 is refused by MXNet itself (see below)


@pytest.mark.parametrize("name,dtype", CASES)
def test_convert_symbol_matches_mxnet(name, dtype):
    sym = _build(name)
    conv = amp.convert_symbol(sym, target_dtype=dtype)
    with open(os.path.join(FIX, f"{name}_{dtype}.json")) as f:
        assert conv.tojson(remove_amp_cast=False) == f.read()
    with open(os.path.join(FIX, f"{name}_{dtype}_stripped.json")) as f:
        assert conv.tojson() == f.read()  # remove_amp_cast=True drops every cast
    assert "amp_cast" not in sym.tojson(remove_amp_cast=False)  # the input is not modified


@pytest.mark.parametrize("name,dtype", CASES)
def test_convert_model_matches_mxnet(name, dtype):
    with open(os.path.join(FIX, f"{name}_{dtype}_model.json")) as f:
        want = json.load(f)
    sym = _build(name)
    z = np.load(os.path.join(FIX, f"{name}_{dtype}.npz"))
    args = {
        k[4:]: mx.nd.array(z[k])
        for k in z.files
        if k.startswith("arg:") and k[4:] not in SHAPES[name]
    }
    aux = {k[4:]: mx.nd.array(z[k]) for k in z.files if k.startswith("aux:")}
    out, args2, aux2 = amp.convert_model(
        sym, args, aux, target_dtype=dtype, cast_optional_params=True
    )
    assert out.tojson(remove_amp_cast=False) == want["symbol"]
    got = {k: np.dtype(v.dtype).name for k, v in {**args2, **aux2}.items()}
    assert got == want["param_dtypes"]
    assert args2 is args  # updated in place, as MXNet's


def test_mxnet_refuses_residual_bfloat16_mxmod_converts_it():
    # MXNet's pass puts Concat (bfloat16 "follow" list) on a bfloat16 and a float32 input
    # and its type check fails; mxmod runs the graph (JAX concatenates in float32).
    with open(os.path.join(FIX, "residual_bfloat16.error.txt")) as f:
        assert "Non-uniform data type in Concat" in f.read()
    conv = amp.convert_symbol(_build("residual"), "bfloat16")
    ex = conv.simple_bind(mx.cpu(), grad_req="null", **SHAPES["residual"])
    assert ex.forward(is_train=False)[0].shape == (2, 3)


@pytest.mark.parametrize("name", ["mlp", "mixed"])
def test_bfloat16_forward_matches_mxnet(name):
    z = np.load(os.path.join(FIX, f"{name}_bfloat16.npz"))
    conv = amp.convert_symbol(_build(name), "bfloat16")
    args = {k[4:]: mx.nd.array(z[k]) for k in z.files if k.startswith("arg:")}
    out = conv.bind(mx.cpu(), args, grad_req="null").forward(is_train=False)[0]
    assert out.dtype == np.float32  # the head is cast back
    np.testing.assert_allclose(out.asnumpy(), z["out:0"], rtol=2e-2, atol=4e-3)


def test_float16_forward_close_to_float32_and_runs_in_float16():
    # MXNet's CPU has no float16 GEMM, so the reference is the float32 network.
    sym = _build("convnet")
    conv = amp.convert_symbol(sym, "float16")
    z = np.load(os.path.join(FIX, "convnet_float16.npz"))
    args = {k[4:]: mx.nd.array(z[k]) for k in z.files if k.startswith("arg:")}
    aux = {k[4:]: mx.nd.array(z[k]) for k in z.files if k.startswith("aux:")}
    ref = sym.bind(mx.cpu(), args, aux_states=aux, grad_req="null").forward()[0].asnumpy()
    got = conv.bind(mx.cpu(), args, aux_states=aux, grad_req="null").forward()[0].asnumpy()
    np.testing.assert_allclose(got, ref, rtol=2e-2, atol=2e-3)
    fc = conv.get_internals()["fc_output"]
    ex = fc.bind(
        mx.cpu(),
        {k: v for k, v in args.items() if k in fc.list_arguments()},
        aux_states=aux,
        grad_req="null",
    )
    assert ex.forward()[0].dtype == np.float16


def test_amp_init_matches_mxnet():
    # amp.init rewrites mx.sym for the whole process: run it in a child.
    code = (
        "import sys; sys.path.insert(0, %r)\n"
        "import mxmod as mx\nfrom mxmod.contrib import amp\nfrom amp_nets import NETS\n"
        "amp.init(target_dtype='float16')\namp.init(target_dtype='bfloat16')\n"
        "for name in ('mlp', 'residual'):\n"
        "    with mx.name.NameManager():\n        sym = NETS[name](mx)\n"
        "    want = open(%r + '/init_' + name + '_float16.json').read()\n"
        "    print(name, sym.tojson(remove_amp_cast=False) == want)\n"
    ) % (os.path.join(HERE, "fixtures"), FIX)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.stdout.split() == ["mlp", "True", "residual", "True"], res.stderr[-2000:]
    assert "SoftmaxOutput does not support dynamic loss scaling" in res.stderr


def test_amp_cast_and_multicast_ops():
    x = mx.sym.Variable("x")
    y = mx.sym.Variable("y")
    i = mx.sym.Variable("i")
    c = mx.sym.amp_cast(x, dtype="float16", name="c")
    assert c.list_outputs() == ["c_output"]
    m = mx.sym.amp_multicast(x, y, i, num_outputs=3, name="m")
    assert m.list_outputs() == ["m_output0", "m_output1", "m_output2"]
    xs = mx.nd.array([1.5, -2.25], dtype="float16")
    ys = mx.nd.array([1.0, 3.0])
    ints = mx.nd.array([1, 2], dtype="int32")
    outs = m.bind(mx.cpu(), {"x": xs, "y": ys, "i": ints}, grad_req="null").forward()
    assert [o.dtype for o in outs] == [np.float32, np.float32, np.int32]
    nar = mx.sym.amp_multicast(x, y, num_outputs=2, cast_narrow=True)
    outs = nar.bind(mx.cpu(), {"x": xs, "y": ys}, grad_req="null").forward()
    assert [o.dtype for o in outs] == [np.float16, np.float16]
    # integers pass amp_cast unchanged; the gradient comes back in the input's dtype
    assert mx.nd.amp_cast(ints, dtype="float16").dtype == np.int32
    ex = (mx.sym.amp_cast(x, dtype="float16") * 2).simple_bind(mx.cpu(), x=(2,))
    ex.forward(is_train=True, x=mx.nd.array([1.0, 2.0]))
    ex.backward(mx.nd.ones((2,), dtype="float16"))
    assert ex.grad_dict["x"].dtype == np.float32
    np.testing.assert_array_equal(ex.grad_dict["x"].asnumpy(), [2.0, 2.0])


def test_lists():
    assert amp.list_lp16_ops("float16") == ["Convolution", "Deconvolution", "FullyConnected", "RNN"]
    assert amp.list_lp16_ops("bfloat16") == ["Convolution", "FullyConnected"]
    assert "softmax" in amp.list_fp32_ops("float16") and "LayerNorm" in amp.list_fp32_ops(
        "bfloat16"
    )
    assert "BatchNorm" in amp.list_lp16_fp32_ops("float16")
    assert "elemwise_add" in amp.list_widest_type_cast("bfloat16")
    assert ("Activation", "act_type", ["softrelu"]) in amp.list_conditional_fp32_ops("float16")
    assert amp.list_lp16_use_fp32_params("float16") is None
    assert amp.list_lp16_use_fp32_params("bfloat16")["BatchNorm"][1] == "gamma"
    assert amp.list_loss_output_functions("float16")[0] == "SoftmaxOutput"


def test_convert_options():
    sym = _build("mlp")
    kept = amp.convert_symbol(sym, "float16", excluded_sym_names=["fc2"])
    text = kept.tojson(remove_amp_cast=False)
    assert "fc2_weight_amp_cast" not in text and "fc1_weight_amp_cast_float16" in text
    only_fp32 = amp.convert_symbol(sym, "float16", target_dtype_ops=[], fp32_ops=["FullyConnected"])
    assert "float16" not in only_fp32.tojson(remove_amp_cast=False)


def test_errors():
    sym = _build("mlp")
    with pytest.raises(ValueError, match="target_dtype must be 'float16' or 'bfloat16'"):
        amp.convert_symbol(sym, "float64")
    with pytest.raises(TypeError, match="needs a Symbol"):
        amp.convert_symbol("net")
    with pytest.raises(TypeError, match="fp32_ops must be a list"):
        amp.convert_symbol(sym, fp32_ops="softmax")
    with pytest.raises(
        ValueError,
        match=r"\['FullyConnected'\] are in both target_dtype_ops "
        "and fp32_ops",
    ):
        amp.convert_symbol(sym, target_dtype_ops=["FullyConnected"], fp32_ops=["FullyConnected"])
    with pytest.raises(ValueError, match=r"\['MyOp'\] are in none of AMP's lists"):
        amp.convert_symbol(sym, target_dtype_ops=["MyOp"])
    with pytest.raises(TypeError, match="conditional_fp32_ops entries must be"):
        amp.convert_symbol(sym, conditional_fp32_ops=[("Activation", "act_type")])
    with pytest.raises(mx.MXNetError, match="already holds AMP casts"):
        amp.convert_symbol(amp.convert_symbol(sym))
    with pytest.raises(TypeError, match="arg_params must be a dict"):
        amp.convert_model(sym, [], {})
    with pytest.raises(ValueError, match="excluded_sym_names must be a list"):
        amp.convert_model(sym, {}, {}, excluded_sym_names="fc1")
    with pytest.raises(ValueError, match="AMP target_dtype must be"):
        amp.list_fp32_ops("int8")
    with pytest.raises(TypeError, match="only compatible with Gluon Trainer"):
        amp.unscale(mx.optimizer.SGD())
    with pytest.raises(TypeError, match="convert_bucketing_module needs a BucketingModule"):
        amp.convert_bucketing_module(None)
