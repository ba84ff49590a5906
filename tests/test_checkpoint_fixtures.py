"""Checkpoints both ways between real MXNet 1.9.1 and mxmod (tests/fixtures/checkpoint).

The fixtures come from ``tests/fixtures/gen_checkpoint_fixtures.py``; the networks from
``tests/fixtures/checkpoint_nets.py``, called here with ``mxmod`` exactly as the generator
calls them with ``mxnet``.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import mxmod as mx

FIX = Path(__file__).parent / "fixtures"
CKPT = FIX / "checkpoint"
MXNET_PY = os.environ.get("MXNET_PYTHON", "/opt/mxnet-venv/bin/python")
CHECKER = FIX / "check_mxmod_checkpoint_in_mxnet.py"
sys.path.insert(0, str(FIX))
import checkpoint_nets as nets  # noqa: E402

TOL = {"rtol": 1e-5, "atol": 1e-6}


def bound_module(sym, dshape, lshape, arg, aux, for_training=True):
    mod = mx.mod.Module(sym)
    mod.bind([("data", dshape)], [("softmax_label", lshape)], for_training=for_training)
    mod.set_params(arg, aux)
    return mod


def outputs(mod, data, label):
    batch = mx.io.DataBatch([mx.nd.array(data)], [mx.nd.array(label)])
    res = {}
    for is_train, key in ((False, "out_infer"), (True, "out_train")):
        mod.forward(batch, is_train=is_train)
        res[key] = mod.get_outputs()[0].asnumpy()
    return res


@pytest.mark.parametrize("name", list(nets.NETS))
def test_same_calls_give_mxnet_json_bytes(name):
    with mx.name.NameManager():  # automatic names count from 0, as in the generator
        sym = nets.NETS[name][0](mx)
    assert sym.tojson() == (CKPT / f"{name}-symbol.json").read_text()


@pytest.mark.parametrize("key", nets.BUCKETING["bucket"][1])
def test_bucketing_sym_gen_gives_mxnet_json_bytes(key):
    with mx.name.NameManager():
        sym, data_names, label_names = nets.bucket_sym_gen(mx, key)
    assert sym.tojson() == (CKPT / f"bucket-{key}-symbol.json").read_text()
    assert (data_names, label_names) == (("data",), ("softmax_label",))


@pytest.mark.parametrize("name", list(nets.NETS))
def test_mxnet_checkpoint_reproduces_mxnet_outputs(name):
    _, dshape, lshape, _ = nets.NETS[name]
    sym, arg, aux = mx.model.load_checkpoint(str(CKPT / name), 0)
    assert sym.tojson() == (CKPT / f"{name}-symbol.json").read_text()
    io = np.load(CKPT / f"{name}-io.npz")
    got = outputs(bound_module(sym, dshape, lshape, arg, aux), io["data"], io["label"])
    for key, val in got.items():
        np.testing.assert_allclose(val, io[key], **TOL, err_msg=key)


def test_mxnet_bucketing_checkpoint_reproduces_outputs():
    _, keys, batch = nets.BUCKETING["bucket"]
    arg, aux = mx.model.load_params(str(CKPT / "bucket"), 0)
    io = np.load(CKPT / "bucket-io.npz")
    assert mx.nd.load(str(CKPT / "bucket.buckets"))[0].asnumpy().tolist() == [8, 3, 5]
    for key in keys:
        sym = mx.sym.load(str(CKPT / f"bucket-{key}-symbol.json"))
        mod = bound_module(sym, (batch, key), (batch,), arg, aux, for_training=False)
        mod.forward(mx.io.DataBatch([mx.nd.array(io[f"data_{key}"])]), is_train=False)
        np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), io[f"out_{key}"], **TOL)


def write_mxmod_checkpoints(folder):
    """Build every fixture net in mxmod, save it with mxmod, record mxmod's outputs."""
    manifest = []
    for i, (name, (builder, dshape, lshape, int_data)) in enumerate(nets.NETS.items()):
        sym = builder(mx)
        arg_shapes, out_shapes, aux_shapes = sym.infer_shape(data=dshape)
        args = dict(zip(sym.list_arguments(), arg_shapes))
        for inp in ("data", "softmax_label"):
            args.pop(inp)
        arg, aux = nets.make_params(
            args, dict(zip(sym.list_auxiliary_states(), aux_shapes)), seed=100 + i
        )
        data, label = nets.make_inputs(dshape, lshape, out_shapes[0][1], int_data, seed=i)
        mod = bound_module(
            sym,
            dshape,
            lshape,
            {k: mx.nd.array(v) for k, v in arg.items()},
            {k: mx.nd.array(v) for k, v in aux.items()},
        )
        got = outputs(mod, data, label)
        mod.save_checkpoint(str(folder / name), i + 1)
        np.savez(folder / f"{name}-io.npz", data=data, label=label, **got)
        manifest.append(
            {
                "prefix": name,
                "epoch": i + 1,
                "data_shape": list(dshape),
                "label_shape": list(lshape),
            }
        )
    sym_gen, keys, batch = nets.BUCKETING["bucket"]
    syms = {k: sym_gen(mx, k)[0] for k in keys}
    shapes = syms[max(keys)].infer_shape(data=(batch, max(keys)))
    arg_shapes = dict(zip(syms[max(keys)].list_arguments(), shapes[0]))
    for inp in ("data", "softmax_label"):
        arg_shapes.pop(inp)
    arg = {k: mx.nd.array(v) for k, v in nets.make_params(arg_shapes, {}, seed=7)[0].items()}
    io = {}
    for k in keys:
        syms[k].save(str(folder / f"bucket-{k}-symbol.json"))
        data, label = nets.make_inputs((batch, k), (batch,), 3, True, seed=k)
        mod = bound_module(syms[k], (batch, k), (batch,), arg, {}, for_training=False)
        mod.forward(mx.io.DataBatch([mx.nd.array(data)]), is_train=False)
        io.update({f"data_{k}": data, f"out_{k}": mod.get_outputs()[0].asnumpy()})
    mx.model.save_checkpoint(str(folder / "bucket"), 2, None, arg, {})
    mx.nd.save(str(folder / "bucket.buckets"), mx.nd.array(keys, dtype="int32"))
    np.savez(folder / "bucket-io.npz", **io)
    manifest.append({"prefix": "bucket", "epoch": 2, "bucket_keys": list(keys), "batch": batch})
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return manifest


def test_mxmod_checkpoints_load_into_real_mxnet(tmp_path):
    manifest = write_mxmod_checkpoints(tmp_path)
    for e in manifest:  # mxmod reads its own files back to the same JSON
        if "bucket_keys" not in e:
            sym, _, _ = mx.model.load_checkpoint(str(tmp_path / e["prefix"]), e["epoch"])
            assert sym.tojson() == (tmp_path / f"{e['prefix']}-symbol.json").read_text()
    if not os.path.exists(MXNET_PY):
        msg = (
            f"real MXNet not installed at {MXNET_PY} "
            "(set MXNET_PYTHON to a Python with mxnet==1.9.1; see tests/fixtures/README.md)"
            f": cannot load mxmod's checkpoints into "
            f"MXNet (the JSON bytes are still checked against MXNet's own fixtures)"
        )
        print(msg)
        pytest.skip(msg)
    res = subprocess.run(
        [MXNET_PY, str(CHECKER), str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"{len(manifest)}/{len(manifest)} checkpoints match" in res.stdout
