"""mx.recordio against files written by MXNet 1.9.1 (tests/fixtures/data/recordio, made by
gen_data_fixtures.py) and the reverse (bytes identical with MXNet's)."""

import json
import multiprocessing
import os
import pickle
import shutil
import struct
import subprocess

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "data", "recordio")
CHECKER = os.path.join(os.path.dirname(__file__), "fixtures", "check_mxmod_rec_in_mxnet.py")
# the MXNet venv of tests/fixtures/README.md
MXNET_PY = os.environ.get("MXNET_PYTHON", "/opt/mxnet-venv/bin/python")


@pytest.fixture(scope="module")
def expect():
    with open(os.path.join(FIX, "expect.json")) as f:
        d = json.load(f)
    return [bytes.fromhex(p) for p in d["payloads"]], [bytes.fromhex(p) for p in d["packed"]]


def test_read_mxnet_plain_rec(expect):
    payloads, _ = expect
    r = mx.recordio.MXRecordIO(os.path.join(FIX, "plain.rec"), "r")
    got = []
    while True:
        s = r.read()
        if s is None:
            break
        got.append(s)
    assert got == payloads  # includes records holding the magic number (split records)
    r.reset()
    assert r.read() == payloads[0]
    r.close()


def test_write_is_byte_identical_with_mxnet(tmp_path, expect):
    payloads, packed = expect
    w = mx.recordio.MXRecordIO(str(tmp_path / "p.rec"), "w")
    for p in payloads:
        w.write(p)
    w.close()
    assert (tmp_path / "p.rec").read_bytes() == open(os.path.join(FIX, "plain.rec"), "rb").read()
    w = mx.recordio.MXIndexedRecordIO(str(tmp_path / "i.idx"), str(tmp_path / "i.rec"), "w")
    for k in range(6):
        label = float(k) * 1.5 if k % 2 == 0 else [k, k + 0.25, -k]
        s = mx.recordio.pack(mx.recordio.IRHeader(0, label, 100 + k, 7), b"payload%d" % k)
        assert s == packed[k]
        w.write_idx(10 * k + 3, s)
    w.close()
    for ext in ("rec", "idx"):
        mine = (tmp_path / f"i.{ext}").read_bytes()
        assert mine == open(os.path.join(FIX, f"indexed.{ext}"), "rb").read()


def test_indexed_read_and_unpack(expect):
    _, packed = expect
    r = mx.recordio.MXIndexedRecordIO(
        os.path.join(FIX, "indexed.idx"), os.path.join(FIX, "indexed.rec"), "r"
    )
    assert r.keys == [3, 13, 23, 33, 43, 53]
    assert r.read_idx(33) == packed[3]
    header, payload = mx.recordio.unpack(r.read_idx(33))
    assert header.flag == 3 and header.id == 103 and header.id2 == 7 and payload == b"payload3"
    np.testing.assert_array_equal(header.label, np.array([3, 3.25, -3], np.float32))
    header, payload = mx.recordio.unpack(r.read_idx(23))
    assert header.flag == 0 and header.label == 3.0 and payload == b"payload2"
    assert r.read() == packed[3]  # sequential read continues after the seek
    r.close()


def test_tell_and_string_payload_error(tmp_path):
    w = mx.recordio.MXIndexedRecordIO(str(tmp_path / "a.idx"), str(tmp_path / "a.rec"), "w")
    assert w.tell() == 0
    w.write_idx(0, b"abc")
    assert w.tell() == 12
    with pytest.raises(TypeError, match="takes bytes"):
        w.write("text")
    w.close()


def _read_in_child(r, q):
    q.put(r.read_idx(13))


def test_pickle_reopens_in_another_process(expect):
    _, packed = expect
    r = mx.recordio.MXIndexedRecordIO(
        os.path.join(FIX, "indexed.idx"), os.path.join(FIX, "indexed.rec"), "r"
    )
    r2 = pickle.loads(pickle.dumps(r))
    assert r2.read_idx(3) == packed[0]
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_read_in_child, args=(r, q))
    p.start()
    p.join(60)
    assert q.get(timeout=5) == packed[1]


def test_forked_handle_refuses_sequential_read():
    r = mx.recordio.MXRecordIO(os.path.join(FIX, "plain.rec"), "r")
    r.pid = -1  # what a handle inherited across fork looks like
    with pytest.raises(RuntimeError, match="Forbidden operation in multiple processes"):
        r.read()


def test_missing_files_name_the_path(tmp_path):
    with pytest.raises(MXNetError, match="cannot open RecordIO file .*nope.rec"):
        mx.recordio.MXRecordIO(str(tmp_path / "nope.rec"), "r")
    shutil.copy(os.path.join(FIX, "indexed.rec"), tmp_path / "x.rec")
    with pytest.raises(MXNetError, match="cannot open index file .*x.idx"):
        mx.recordio.MXIndexedRecordIO(str(tmp_path / "x.idx"), str(tmp_path / "x.rec"), "r")
    with pytest.raises(ValueError, match="Invalid flag 'a'"):
        mx.recordio.MXRecordIO(str(tmp_path / "x.rec"), "a")


def test_truncated_rec_names_file_and_record(tmp_path):
    data = open(os.path.join(FIX, "plain.rec"), "rb").read()
    (tmp_path / "t.rec").write_bytes(data[:-10])
    r = mx.recordio.MXRecordIO(str(tmp_path / "t.rec"), "r")
    with pytest.raises(MXNetError, match=r"t.rec: record 7 is truncated"):
        while r.read() is not None:
            pass
    (tmp_path / "g.rec").write_bytes(b"garbage!" * 4)
    r = mx.recordio.MXRecordIO(str(tmp_path / "g.rec"), "r")
    with pytest.raises(MXNetError, match="record 0 does not start with the RecordIO magic"):
        r.read()


def test_stale_and_malformed_index(tmp_path):
    shutil.copy(os.path.join(FIX, "indexed.rec"), tmp_path / "s.rec")
    (tmp_path / "s.idx").write_text("3\t0\n13\t5\n99\t100000\n")
    r = mx.recordio.MXIndexedRecordIO(str(tmp_path / "s.idx"), str(tmp_path / "s.rec"), "r")
    with pytest.raises(MXNetError, match="key 13 .*magic number"):
        r.read_idx(13)
    with pytest.raises(MXNetError, match="key 99 of .*points past the end"):
        r.read_idx(99)
    with pytest.raises(KeyError, match="key 4 is not in the index"):
        r.read_idx(4)
    (tmp_path / "s.idx").write_text("3\t0\nbad line\n")
    with pytest.raises(MXNetError, match=r"s.idx:2: malformed index line"):
        mx.recordio.MXIndexedRecordIO(str(tmp_path / "s.idx"), str(tmp_path / "s.rec"), "r")


def test_pack_img_roundtrip_and_bad_image():
    img = (np.arange(20 * 12 * 3) % 251).astype(np.uint8).reshape(20, 12, 3)
    s = mx.recordio.pack_img(mx.recordio.IRHeader(0, [1, 2], 5, 0), img, quality=3, img_fmt=".png")
    header, out = mx.recordio.unpack_img(s)
    np.testing.assert_array_equal(out, img)
    np.testing.assert_array_equal(header.label, [1, 2])
    with pytest.raises(MXNetError, match="record id 9: .*not a decodable image"):
        mx.recordio.unpack_img(mx.recordio.pack(mx.recordio.IRHeader(0, 1, 9, 0), b"xx"))
    with pytest.raises(ValueError, match="use '.jpg' or '.png'"):
        mx.recordio.pack_img(mx.recordio.IRHeader(0, 1, 9, 0), img, img_fmt=".bmp")
    with pytest.raises(MXNetError, match="shorter than the 24-byte header"):
        mx.recordio.unpack(b"abc")
    bad = struct.pack("IfQQ", 4, 0, 0, 0) + b"12"
    with pytest.raises(MXNetError, match="declares 4 labels"):
        mx.recordio.unpack(bad)


def test_mxnet_reads_mxmod_files(tmp_path, expect):
    """The reverse golden: MXNet reads what mxmod writes (payloads and an image batch)."""
    payloads, _ = expect
    w = mx.recordio.MXRecordIO(str(tmp_path / "plain.rec"), "w")
    for p in payloads:
        w.write(p)
    w.close()
    w = mx.recordio.MXIndexedRecordIO(
        str(tmp_path / "images.idx"), str(tmp_path / "images.rec"), "w"
    )
    rng = np.random.RandomState(0)
    keys = [5, 2, 9, 4]
    for k in keys:
        img = rng.randint(0, 256, (12, 14, 3)).astype(np.uint8)
        w.write_idx(
            k,
            mx.recordio.pack_img(
                mx.recordio.IRHeader(0, [k, -k], k, 0), img, quality=3, img_fmt=".png"
            ),
        )
    w.close()
    it = mx.io.ImageRecordIter(
        path_imgrec=str(tmp_path / "images.rec"),
        path_imgidx=str(tmp_path / "images.idx"),
        data_shape=(3, 10, 10),
        batch_size=4,
        label_width=2,
    )
    batch = it.next()
    np.savez(tmp_path / "expect.npz", data=batch.data[0].asnumpy(), label=batch.label[0].asnumpy())
    with open(tmp_path / "expect.json", "w") as f:
        json.dump(
            {
                "payloads": [p.hex() for p in payloads],
                "keys": keys,
                "data_shape": [3, 10, 10],
                "batch_size": 4,
            },
            f,
        )
    if not os.path.exists(MXNET_PY):
        pytest.skip(
            f"real MXNet not installed at {MXNET_PY} "
            "(set MXNET_PYTHON to a Python with mxnet==1.9.1; see tests/fixtures/README.md)"
            f": the byte-identity tests above "
            "still compare mxmod's files with MXNet's own"
        )
    res = subprocess.run(
        [MXNET_PY, CHECKER, str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0 and "OK" in res.stdout, res.stdout + res.stderr[-3000:]


def test_pickled_sequential_reader_is_open_from_the_start():
    r = mx.recordio.MXRecordIO(os.path.join(FIX, "plain.rec"), "r")
    first = r.read()
    r.read()
    r2 = pickle.loads(pickle.dumps(r))
    assert r2.is_open and r2.read() == first  # reopened at record 0, as MXNet
