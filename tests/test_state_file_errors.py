"""Malformed optimizer-state blobs, MXNet state pickles and RecordIO files are refused with
``MXNetFileError`` naming the place, before anything oversized is allocated (issue 15)."""

import io
import json
import pickle
import re
import struct
import sys
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetFileError
from mxmod.optimizer import _codec

sys.path.insert(0, str(Path(__file__).parent / "fixtures"))
import file_mutations as fm  # noqa: E402

META = _codec.META + ".npy"


def trained_updater(kind="sgd", **kw):
    upd = mx.optimizer.get_updater(mx.optimizer.create(kind, learning_rate=0.1, **kw))
    for i in range(2):
        upd(i, mx.nd.ones((3, 2)), mx.nd.ones((3, 2)) * (i + 1))
    return upd


def members(blob):
    with zipfile.ZipFile(io.BytesIO(blob)) as z:
        return {n: z.read(n) for n in z.namelist()}


def rezip(parts):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, raw in parts.items():
            z.writestr(name, raw)
    return out.getvalue()


def with_meta(blob, edit):
    """``blob`` with its JSON description edited by ``edit(meta)``."""
    parts = members(blob)
    meta = json.loads(np.load(io.BytesIO(parts[META])).tobytes())
    edit(meta)
    buf = io.BytesIO()
    np.save(buf, np.frombuffer(json.dumps(meta).encode(), np.uint8))
    parts[META] = buf.getvalue()
    return rezip(parts)


def refusal(fn, *args, **kwargs):
    """``(the MXNetFileError fn raised, peak bytes allocated meanwhile)``."""
    tracemalloc.start()
    try:
        fn(*args, **kwargs)
    except MXNetFileError as e:
        err = e
    else:
        err = None
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert err is not None, f"{fn} loaded the bad input"
    return err, peak


def test_npz_header_bomb_allocates_nothing():
    parts = members(trained_updater(momentum=0.9).get_states())
    parts["a0.npy"] = fm._npy_header_bomb((10**10,))
    upd = mx.optimizer.get_updater(mx.optimizer.SGD(momentum=0.9))
    err, peak = refusal(upd.set_states, rezip(parts))
    assert peak < 4 * 2**20
    assert re.search(
        r"optimizer states: member 'a0\.npy' header: shape \(10000000000,\) of "
        r"float32 needs 40000000000 bytes but the member holds 8",
        str(err),
    )


@pytest.mark.parametrize(
    "edit, match",
    [
        (
            lambda m: m.pop("format"),
            r"description \['counts', 'kind', 'optimizer', 'states', 'version'\] \(expected "
            r"an object with keys format, version, states, optimizer, kind, counts "
            r"\(version 2\)",
        ),
        (
            lambda m: m.update(version=3),
            r"format: 'mxmod-optimizer-states' version 3 \(expected "
            r"'mxmod-optimizer-states' version 1 to 2",
        ),
        (
            lambda m: m["states"]["__dict__"][0][1].update(__nd__="a9"),
            r"states\[0\]\.__nd__: 'a9' names no array member",
        ),
        (
            lambda m: m["states"]["__dict__"][0][1].update(dtype="float64"),
            r"states\[0\]\.dtype: 'float64' but member 'a0' holds float32",
        ),
        (
            lambda m: m["states"]["__dict__"][0][1].update(ctx="cpu"),
            r"states\[0\]\.ctx: 'cpu' is not a context \(expected \[device_type, device_id\]",
        ),
        (
            lambda m: m["states"]["__dict__"][0][1].update(extra=1),
            r"states\[0\]: an object with keys \['__nd__', 'ctx', 'dtype', 'extra'\]",
        ),
        (lambda m: m["states"].update(__dict__=[[[1], 2]]), r"states\.key0: \[1\] is not hashable"),
        (
            lambda m: m.update(optimizer={"__optimizer__": "nosuch", "attrs": {}}),
            r"optimizer\.__optimizer__: unknown class 'nosuch' \(expected a registered optimizer",
        ),
        (
            lambda m: m.update(optimizer={"__optimizer__": "sgd", "attrs": {"aggregate_num": "x"}}),
            r"optimizer \(sgd\)\.aggregate_num: 'x' is not an int >= 0",
        ),
        (
            lambda m: m.update(optimizer={"__optimizer__": "sgd", "attrs": {"lr": None}}),
            r"optimizer \(sgd\)\.lr: None without an lr_scheduler",
        ),
        (
            lambda m: m.update(
                optimizer={
                    "__optimizer__": "sgd",
                    "attrs": {"lr_mult": {"__dict__": [["w", "big"]]}},
                }
            ),
            r"lr_mult: multiplier of 'w' is 'big'",
        ),
        (
            lambda m: m.update(optimizer={"__optimizer__": "sgd", "attrs": {"momentum": 1e999}}),
            r"optimizer \(sgd\)\.momentum: inf is not finite",
        ),
        (
            lambda m: m.update(optimizer={"__optimizer__": "adam", "attrs": {"beta1": 2.0}}),
            r"optimizer \(adam\): settings refused by Adam",
        ),
        (
            lambda m: m.update(
                optimizer={
                    "__optimizer__": "sgd",
                    "attrs": {
                        "lr_scheduler": {
                            "__lr_scheduler__": "FactorScheduler",
                            "attrs": {"step": 0},
                        }
                    },
                }
            ),
            r"optimizer\.lr_scheduler \(FactorScheduler\): settings refused by FactorScheduler",
        ),
    ],
)
def test_description_errors_name_the_field(edit, match):
    blob = with_meta(trained_updater(momentum=0.9).get_states(), edit)
    upd = mx.optimizer.get_updater(mx.optimizer.SGD(momentum=0.9))
    with pytest.raises(MXNetFileError, match=match) as err:
        upd.set_states(blob)
    assert err.value.source == "optimizer states" and err.value.where


def test_dumped_optimizer_and_scheduler_round_trip():
    sched = mx.lr_scheduler.FactorScheduler(step=2, factor=0.5, base_lr=0.1)
    upd = trained_updater("sgd", momentum=0.9, lr_scheduler=sched)
    upd2 = mx.optimizer.get_updater(mx.optimizer.SGD())
    upd2.set_states(upd.get_states(dump_optimizer=True))
    assert upd2.optimizer.momentum == 0.9 and upd2.optimizer.lr_scheduler.step == 2


def test_loaded_states_are_checked_against_held_and_created_states():
    blob = trained_updater(momentum=0.9).get_states()
    held = trained_updater(momentum=0.9)
    held.states[1] = mx.nd.zeros((4,))
    with pytest.raises(
        MXNetFileError,
        match=r"optimizer states: state of index 1 holds "
        r"\(3, 2\) float32 where the state held holds "
        r"\(4,\) float32",
    ):
        held.set_states(blob)
    upd = mx.optimizer.get_updater(mx.optimizer.SGD(momentum=0.9))
    upd.set_states(blob)
    w = mx.nd.ones((5,))
    with pytest.raises(
        MXNetFileError,
        match=r"state of index 0 holds \(3, 2\) float32 where "
        r"the state SGD creates for a weight of shape "
        r"\(5,\) float32 holds \(5,\) float32",
    ):
        upd(0, mx.nd.ones((5,)), w)
    np.testing.assert_array_equal(w.asnumpy(), np.ones(5))  # nothing was updated
    upd(1, mx.nd.ones((3, 2)), mx.nd.ones((3, 2)))  # a fitting state is used as is


def test_module_states_fields_are_checked(tmp_path):
    net = mx.sym.SoftmaxOutput(
        mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc"), name="softmax"
    )
    mod = mx.mod.Module(net)
    mod.bind([("data", (2, 4))], [("softmax_label", (2,))])
    mod.init_params()
    mod.init_optimizer(optimizer_params={"momentum": 0.9})
    fname = tmp_path / "m.states"
    mod.save_optimizer_states(str(fname))
    good = fname.read_bytes()

    # the file is an Updater's (format version 2, issue 9): states, counts, optimizer
    fname.write_bytes(with_meta(good, lambda m: m["counts"].update(num_update=-3)))
    with pytest.raises(
        MXNetFileError, match=r"m\.states': counts\.num_update: -3 \(expected an int"
    ):
        mod.load_optimizer_states(str(fname))
    fname.write_bytes(with_meta(good, lambda m: m.update(states=[1])))
    with pytest.raises(MXNetFileError, match=r"states: a list \(expected a dict index -> state"):
        mod.load_optimizer_states(str(fname))
    fname.write_bytes(good[:-30])
    with pytest.raises(MXNetFileError, match=r"m\.states'.*zip directory"):
        mod.load_optimizer_states(str(fname))
    fname.write_bytes(good)
    mod.load_optimizer_states(str(fname))


@pytest.mark.parametrize(
    "i, match",
    [
        (0, r"bytearray\(int\) is not allowed: only bytearray\(bytes\) builds NDArray handles"),
        (2, r"offset 2 \(FRAME\): frame of 9223372036854775807 bytes"),
        (3, r"refusing to load global os\.system"),
        (4, r"expected a pickled dict of optimizer states, got list"),
        (5, r"states\[0\](\[0\]){64}: nested more than 64 levels deep"),
    ],
)
def test_hostile_pickles_are_refused_small(i, match):
    deep = b"\x80\x02}K\x00" + b"]" * 1000 + b"a" * 999 + b"s."  # {0: [[[...]]]}
    upd = mx.optimizer.get_updater(mx.optimizer.SGD())
    err, peak = refusal(upd.set_states, (fm.HOSTILE_PICKLES + [deep])[i], allow_pickle=True)
    assert re.search(match, str(err)), err
    assert peak < 64 * 2**20


def test_pickled_numpy_arrays_are_bounded_by_the_pickle():
    upd = mx.optimizer.get_updater(mx.optimizer.SGD(momentum=0.9))  # its state: one array
    blob = pickle.dumps({0: np.arange(4, dtype=np.float32)}, protocol=2)
    huge = blob.replace(b"K\x00\x85", b"J\x00\x00\x00\x10\x85", 1)  # _reconstruct((2**28,))
    assert huge != blob
    with pytest.raises(
        MXNetFileError,
        match=r"numpy _reconstruct: shape \(268435456,\) of "
        r"int8 needs 268435456 bytes, more than the",
    ):
        upd.set_states(huge, allow_pickle=True)
    upd.set_states(blob, allow_pickle=True)
    assert upd.states[0].asnumpy().tolist() == [0.0, 1.0, 2.0, 3.0]


def test_recordio_length_checked_against_the_file(tmp_path):
    path = tmp_path / "f.rec"
    w = mx.recordio.MXRecordIO(str(path), "w")
    w.write(b"abcdefgh")
    w.close()
    raw = bytearray(path.read_bytes())
    struct.pack_into("<I", raw, 4, (1 << 29) - 1)  # a 512 MiB record in a 16-byte file
    path.write_bytes(bytes(raw))
    err, peak = refusal(mx.recordio.MXRecordIO(str(path), "r").read)
    assert peak < 4 * 2**20
    assert re.search(
        r"f\.rec: record 0 is truncated: it needs 536870911 bytes but the file has "
        r"8 left \(at byte 0;",
        str(err),
    )
    assert err.where == "record 0 at byte 0"
    with pytest.raises(
        MXNetFileError,
        match=r"image record declares 3 labels but holds only "
        r"0 bytes",
    ):
        mx.recordio.unpack(struct.pack("IfQQ", 3, 0.0, 0, 0))
    (tmp_path / "f.idx").write_text("0\t-8\n")
    with pytest.raises(MXNetFileError, match=r"f\.idx:1: malformed index line.*offset >= 0"):
        mx.recordio.MXIndexedRecordIO(str(tmp_path / "f.idx"), str(path), "r")
