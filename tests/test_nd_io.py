"""mx.nd.save / mx.nd.load against files written by real MXNet 1.9.1 (tests/fixtures/nd)."""

import json
import os
import re
import struct
import subprocess
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mxmod as mx
from mxmod import fileio
from mxmod.base import MXNetError
from mxmod.ndarray import io

ND = Path(__file__).parent / "fixtures" / "nd"
MANIFEST = json.loads((ND / "manifest.json").read_text())
EXPECTED = np.load(ND / "expected.npz")
MXNET_PY = os.environ.get("MXNET_PYTHON", "/opt/mxnet-venv/bin/python")
CHECKER = Path(__file__).parent / "fixtures" / "check_mxmod_files_in_mxnet.py"
GOOD = sorted(f for f, e in MANIFEST.items() if e["kind"] != "error")
BF16 = np.dtype(jnp.bfloat16)


@pytest.fixture
def x64():
    old = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", old)


def expected_arrays(fname):
    """Fixture values with their real dtypes (bfloat16 rebuilt from its bits)."""
    e = MANIFEST[fname]
    out = []
    for i, dname in enumerate(e["dtypes"]):
        val = EXPECTED[f"{fname}|{i}"]
        out.append(val.view(BF16) if dname == "bfloat16" else val)
    return out


def as_container(fname, arrays):
    e = MANIFEST[fname]
    return dict(zip(e["names"], arrays)) if e["kind"] == "dict" else list(arrays)


def values_of(loaded):
    return list(loaded.values()) if isinstance(loaded, dict) else loaded


def same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    return got.dtype == want.dtype and got.shape == want.shape and got.tobytes() == want.tobytes()


# ------------------------------------------------------------ reading MXNet files
@pytest.mark.parametrize("fname", GOOD)
def test_load_numpy_reads_mxnet_files_exactly(fname):
    loaded = io.load_numpy(str(ND / fname))
    e = MANIFEST[fname]
    assert isinstance(loaded, dict if e["kind"] == "dict" else list)
    if e["kind"] == "dict":
        assert list(loaded) == e["names"]
    got = values_of(loaded)
    assert [a.dtype.name for a in got] == e["dtypes"]
    for g, w in zip(got, expected_arrays(fname)):
        assert same(g, w)


@pytest.mark.parametrize("fname", GOOD)
def test_nd_load_gives_ndarrays_on_cpu(fname, x64):
    loaded = mx.nd.load(str(ND / fname))
    if MANIFEST[fname]["kind"] == "dict":
        assert list(loaded) == MANIFEST[fname]["names"]
    for g, w in zip(values_of(loaded), expected_arrays(fname)):
        assert isinstance(g, mx.nd.NDArray) and g.context == mx.cpu(0)
        assert np.dtype(g.dtype) == w.dtype and g.shape == w.shape
        assert same(g.asnumpy(), w)


def test_load_without_x64_narrows_64_bit_with_a_warning():
    with pytest.warns(UserWarning, match=r"arg:f64: float64->float32.*arg:i64: int64->int32"):
        d = mx.nd.load(str(ND / "dtypes_dict.params"))
    assert d["arg:f64"].dtype == np.float32 and d["arg:i64"].dtype == np.int32
    np.testing.assert_array_equal(d["arg:i64"].asnumpy()[1:], [-3, 7])
    assert d["arg:f32"].dtype == np.float32 and d["arg:bf16"].dtype == BF16


def test_empty_files_and_arrays():
    assert mx.nd.load(str(ND / "empty_list.nd")) == []
    assert mx.nd.load(str(ND / "empty_dict.params")) == []  # MXNet stores no names for {}
    a, b = mx.nd.load(str(ND / "empty_array.nd"))
    assert a.shape == (0,) and a.dtype == np.float32
    assert b.shape == (2, 0, 3) and b.dtype == np.int32


def test_scalar_v3_file_loads_as_0d():
    s, v = mx.nd.load(str(ND / "scalar_v3.nd"))
    assert s.shape == () and float(s.asnumpy()) == 3.5
    assert v.shape == (2,)


# ------------------------------------------------------ writing MXNet's exact bytes
@pytest.mark.parametrize("fname", GOOD)
def test_saving_numpy_values_gives_mxnet_bytes(fname, tmp_path):
    out = tmp_path / "x"
    mx.nd.save(str(out), as_container(fname, expected_arrays(fname)))
    assert out.read_bytes() == (ND / fname).read_bytes()


@pytest.mark.parametrize("fname", GOOD)
def test_saving_ndarrays_gives_mxnet_bytes(fname, tmp_path, x64):
    arrays = [mx.nd.array(a, dtype=a.dtype) for a in expected_arrays(fname)]
    out = tmp_path / "x"
    mx.nd.save(out, as_container(fname, arrays))
    assert out.read_bytes() == (ND / fname).read_bytes()


def test_single_ndarray_is_a_list_of_one(tmp_path):
    mx.nd.save(str(tmp_path / "s"), mx.nd.array([4.0, 5.0]))
    assert (tmp_path / "s").read_bytes() == (ND / "single.nd").read_bytes()
    assert isinstance(mx.nd.load(str(tmp_path / "s")), list)


@pytest.mark.parametrize(
    "dtype",
    ["float32", "float16", "uint8", "int8", "int32", "bool", "bfloat16", "float64", "int64"],
)
def test_round_trip_every_dtype(dtype, tmp_path, x64):
    host = np.array([[0, 1, 2], [3, 1, 0]]).astype(dtype)
    a = mx.nd.array(host, dtype=dtype)
    mx.nd.save(str(tmp_path / "f"), {"arg:a": a, "aux:b": a[1:]})
    d = mx.nd.load(str(tmp_path / "f"))
    assert list(d) == ["arg:a", "aux:b"]
    assert np.dtype(d["arg:a"].dtype) == np.dtype(dtype)
    assert same(d["arg:a"].asnumpy(), host) and same(d["aux:b"].asnumpy(), host[1:])
    assert same(io.load_numpy(str(tmp_path / "f"))["arg:a"], host)


def test_round_trip_32_bit_without_x64_and_0d(tmp_path):
    vals = [
        mx.nd.array([1.5, 2.5]),
        mx.nd.ones((2, 2), dtype="int32"),
        mx.nd.array(np.float32(7.0)),
    ]
    mx.nd.save(str(tmp_path / "f"), vals)
    got = mx.nd.load_frombuffer((tmp_path / "f").read_bytes())
    assert [g.shape for g in got] == [(2,), (2, 2), ()]
    for g, v in zip(got, vals):
        assert same(g.asnumpy(), v.asnumpy())
    assert (tmp_path / "f").read_bytes()[24:28] == struct.pack("<I", io.V3_MAGIC)


def test_numpy_64_bit_keeps_dtype_without_x64(tmp_path):
    mx.nd.save(str(tmp_path / "f"), [np.array([0.1]), np.array([2**40])])
    f64, i64 = io.load_numpy(str(tmp_path / "f"))
    assert f64.dtype == np.float64 and f64[0] == 0.1 and i64.dtype == np.int64


def test_context_is_written_and_load_goes_to_cpu0(tmp_path):
    mx.nd.save(str(tmp_path / "f"), [mx.nd.ones((1,), ctx=mx.cpu(3))])
    raw = (tmp_path / "f").read_bytes()
    assert struct.unpack_from("<ii", raw, 24 + 4 + 4 + 4 + 8) == (1, 3)
    gpu_rec = raw[:44] + struct.pack("<ii", 2, 1) + raw[52:]
    (a,) = mx.nd.load_frombuffer(gpu_rec)
    assert a.context == mx.cpu(0) and a.asnumpy()[0] == 1


def legacy_file(magic_and_shape: bytes, data=b"\x00\x00\x80\x3f\x00\x00\x00\x40"):
    body = magic_and_shape + struct.pack("<iii", 1, 0, 0) + data
    return struct.pack("<QQQ", 0x112, 0, 1) + body + struct.pack("<Q", 0)


def test_legacy_records_load():
    v1 = legacy_file(struct.pack("<Iiq", io.V1_MAGIC, 1, 2))
    pre_v1 = legacy_file(struct.pack("<III", 2, 1, 2))  # ndim 2 as the first u32, u32 dims
    assert same(mx.nd.load_frombuffer(v1)[0].asnumpy(), np.array([1, 2], "f4"))
    assert same(mx.nd.load_frombuffer(pre_v1)[0].asnumpy(), np.array([[1, 2]], "f4"))


# ------------------------------------------------------------------------ errors
def test_sparse_records_load_and_save_back_byte_identical(tmp_path):
    # MXNet-written sparse files: full coverage in tests/test_sparse_nd.py
    params = mx.nd.load(str(ND / "row_sparse.params"))
    assert params["arg:emb"].stype == "row_sparse" and params["arg:dense"].stype == "default"
    assert mx.nd.load(str(ND / "csr.nd"))[0].stype == "csr"
    for fname in ("row_sparse.params", "csr.nd"):
        mx.nd.save(str(tmp_path / fname), mx.nd.load(str(ND / fname)))
        assert (tmp_path / fname).read_bytes() == (ND / fname).read_bytes()


def test_none_record_raises_not_implemented():
    raw = struct.pack("<QQQIii", 0x112, 0, 1, io.V2_MAGIC, 0, 0) + struct.pack("<Q", 0)
    with pytest.raises(NotImplementedError, match="empty-handle"):
        mx.nd.load_frombuffer(raw)


@pytest.mark.parametrize("fname", ["spec_dict.params", "dtypes_list.nd", "row_sparse.params"])
def test_truncated_files_raise_mxnet_error_at_every_cut(fname, tmp_path):
    raw = (ND / fname).read_bytes()
    for cut in range(len(raw)):  # every cut point, from memory
        with pytest.raises(MXNetError) as info:
            mx.nd.load_frombuffer(raw[:cut])
        msg = str(info.value)
        assert msg.startswith("Invalid NDArray file format: buffer: "), (cut, msg)
        assert "truncated or corrupted" in msg, (cut, msg)
        assert any(w in msg for w in ("remain", "too short", "follow")), (cut, msg)
    path = tmp_path / fname
    for cut in (0, 7, 24, 30, len(raw) // 2, len(raw) - 1):  # from a file: names the file
        path.write_bytes(raw[:cut])
        prefix = "Invalid NDArray file format: file " + repr(str(path)) + ": "
        with pytest.raises(MXNetError, match=re.escape(prefix)):
            mx.nd.load(str(path))


def test_wrong_magic(tmp_path):
    path = tmp_path / "sym.json"
    path.write_bytes((ND / "ckpt-symbol.json").read_bytes())
    with pytest.raises(MXNetError, match=r"sym\.json.*wrong magic number 0x.*starts with 0x112"):
        mx.nd.load(str(path))


@pytest.mark.parametrize("seed", range(20))
def test_garbage_never_crashes_elsewhere(seed, tmp_path):
    rng = np.random.RandomState(seed)
    base = bytearray((ND / "dtypes_dict.params").read_bytes())
    if seed < 5:
        raw = rng.bytes(rng.randint(0, 200))
    else:  # valid header, random body, or random bytes flipped in a valid file
        if seed < 10:
            raw = base[:24] + rng.bytes(rng.randint(0, 300))
        else:
            for pos in rng.randint(24, len(base), size=3):
                base[pos] = rng.randint(256)
            raw = bytes(base)
    try:
        out = mx.nd.load_frombuffer(bytes(raw))
    except MXNetError as err:
        assert "Invalid NDArray file format: buffer" in str(err)
    except NotImplementedError:
        pass
    else:  # flips inside array data are undetectable; the structure must still be right
        assert len(out) == 9


@pytest.mark.parametrize(
    "patch, match",
    [
        ((24, "<I", 0xDEADBEEF), r"array 0 starts with 0xdeadbeef, not an NDArray record magic"),
        ((28, "<i", 7), r"array 0 has an invalid storage type 7"),
        ((32, "<i", 1 << 30), r"array 0 shape \(1073741824 dims\) needs"),
        ((36, "<q", -5), r"array 0 shape has a negative dimension"),
        ((36, "<q", 1 << 40), r"array 0 data \(3298534883328 x float32\) needs"),
        ((52, "<i", 9), r"array 0 names an invalid context \(dev_type 9"),
        ((60, "<i", 42), r"array 0 has an unknown dtype flag 42"),
        ((16, "<Q", 1 << 60), r"header claims 1152921504606846976 arrays"),
        ((122, "<Q", 1), r"it holds 2 arrays but 1 names"),
        ((130, "<Q", 1 << 50), r"name 0 needs"),
    ],
)
def test_corrupted_fields(patch, match):
    raw = bytearray((ND / "spec_dict.params").read_bytes())
    pos, fmt, value = patch
    struct.pack_into(fmt, raw, pos, value)
    with pytest.raises(MXNetError, match="Invalid NDArray file format: buffer: " + match):
        mx.nd.load_frombuffer(bytes(raw))


def test_bad_utf8_name():
    raw = bytearray((ND / "spec_dict.params").read_bytes())
    raw[138] = 0xFF
    with pytest.raises(MXNetError, match="name 0 is not valid UTF-8"):
        mx.nd.load_frombuffer(bytes(raw))


def test_missing_file_and_bad_arguments(tmp_path):
    missing = str(tmp_path / "nope.params")
    with pytest.raises(MXNetError, match=r"nope\.params' does not exist; check the path"):
        mx.nd.load(missing)
    with pytest.raises(FileNotFoundError):
        mx.nd.load(missing)
    with pytest.raises(MXNetError, match="is a folder"):
        mx.nd.load(str(tmp_path))
    with pytest.raises(TypeError, match="fname required to be a string"):
        mx.nd.load(3)
    with pytest.raises(TypeError, match="fname required to be a string"):
        mx.nd.save(None, [])
    with pytest.raises(TypeError, match="buf required to be bytes"):
        mx.nd.load_frombuffer("abc")
    with pytest.raises(ValueError, match="data needs to either be a NDArray.*got tuple"):
        mx.nd.save(missing, (mx.nd.ones((1,)),))
    with pytest.raises(TypeError, match="key 3 is not a str"):
        mx.nd.save(missing, {3: mx.nd.ones((1,))})
    with pytest.raises(TypeError, match="item 1 is a str"):
        mx.nd.save(missing, [mx.nd.ones((1,)), "x"])
    with pytest.raises(TypeError, match="value 'c' has dtype complex64"):
        mx.nd.save(missing, {"c": np.ones(2, np.complex64)})
    assert not os.path.exists(missing)


# ------------------------------------------------------------------ atomic writes
def test_crash_during_save_keeps_previous_file(tmp_path, monkeypatch):
    path = tmp_path / "model.params"
    mx.nd.save(str(path), {"arg:w": mx.nd.ones((3,))})
    before = path.read_bytes()

    def boom(*args):
        raise OSError("simulated crash")

    monkeypatch.setattr(fileio.os, "replace", boom)
    with pytest.raises(OSError, match="simulated crash"):
        mx.nd.save(str(path), {"arg:w": mx.nd.zeros((1000,))})
    monkeypatch.undo()
    monkeypatch.setattr(fileio.os, "fsync", boom)  # crash after a partial write
    with pytest.raises(OSError, match="simulated crash"):
        mx.nd.save(str(path), {"arg:w": mx.nd.zeros((1000,))})
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["model.params"]  # no temp files left behind
    with pytest.raises(TypeError):  # bad data fails before anything is written
        mx.nd.save(str(path), {"arg:w": "oops"})
    assert path.read_bytes() == before


# ------------------------------------------------------- loading mxmod files in MXNet
def test_mxmod_files_load_in_real_mxnet(tmp_path, x64):
    if not os.path.exists(MXNET_PY):
        pytest.skip(
            f"real MXNet not installed at {MXNET_PY} "
            "(set MXNET_PYTHON to a Python with mxnet==1.9.1; see tests/fixtures/README.md)"
            f"; byte equality with its files "
            f"is still checked against tests/fixtures/nd"
        )
    manifest, expected = {}, {}
    rng = np.random.RandomState(0)
    cases = {
        "all_list.nd": [
            rng.randn(2, 3).astype(d) for d in ("float32", "float64", "float16", "int32", "int64")
        ]
        + [
            np.arange(5, dtype="uint8"),
            np.array([-3, 4], "int8"),
            np.array([True, False]),
            np.array([1.0, -2.5], "f4").astype(BF16),
            np.zeros((0,), "f4"),
        ],
        "dict.params": {"arg:w\u00e9": rng.randn(4, 2).astype("f4"), "aux:m": np.ones(3, "f2")},
        "scalar.nd": [np.array(2.5, "f4"), np.array([1.0], "f4")],
    }
    for fname, data in cases.items():
        values = data if isinstance(data, list) else list(data.values())
        nds = [mx.nd.array(v, dtype=v.dtype) for v in values]
        mx.nd.save(str(tmp_path / fname), nds if isinstance(data, list) else dict(zip(data, nds)))
        manifest[fname] = {
            "kind": "list" if isinstance(data, list) else "dict",
            "names": None if isinstance(data, list) else list(data),
            "dtypes": [v.dtype.name for v in values],
            "shapes": [list(v.shape) for v in values],
            "np_shape": fname == "scalar.nd",
        }
        for i, v in enumerate(values):
            expected[f"{fname}|{i}"] = v.view("<u2") if v.dtype == BF16 else v
    sym = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    arg = {"fc_weight": mx.nd.ones((3, 2)), "fc_bias": mx.nd.array([1, 2, 3])}
    aux = {"bn_moving_mean": mx.nd.zeros((2,))}
    mx.model.save_checkpoint(str(tmp_path / "ck"), 7, sym, arg, aux)
    manifest["ck"] = {
        "kind": "checkpoint",
        "prefix": "ck",
        "epoch": 7,
        "arg": list(arg),
        "aux": list(aux),
    }
    for tag, params in (("arg", arg), ("aux", aux)):
        expected.update({f"ckpt|{tag}:{k}": v.asnumpy() for k, v in params.items()})
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    np.savez(tmp_path / "expected.npz", **expected)
    res = subprocess.run(
        [MXNET_PY, str(CHECKER), str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert "4/4 files match" in res.stdout
