"""mx.io.ImageRecordIter against MXNet 1.9.1 (tests/fixtures/data/record_iter.npz, cases in
record_iter_cases.json, made by gen_data_fixtures.py), its bad-input errors, the
prefetch pipeline, and a conv net trained from an im2rec-made .rec.

Tolerance: pixel-exact (float32 arithmetic as MXNet) except bicubic resizes (inter_method 2,
or 9 when enlarging), which may differ by 1 grey level (OpenCV 3.4 in MXNet vs 4.x here).
"""

import json
import os
import shutil
import threading

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError

DATA = os.path.join(os.path.dirname(__file__), "fixtures", "data")
REC = os.path.join(DATA, "im2rec")
Z = np.load(os.path.join(DATA, "record_iter.npz"))
with open(os.path.join(DATA, "record_iter_cases.json")) as _f:
    CASES = json.load(_f)


def _kwargs(kw):
    kw = dict(kw)
    kw["path_imgrec"] = os.path.join(REC, kw.pop("rec", "imgs.rec"))
    for key in ("path_imgidx", "path_imglist"):
        if key in kw:
            kw[key] = os.path.join(REC, kw[key])
    return kw


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_mxnet(name):
    kw = _kwargs(CASES[name])
    it = mx.io.ImageRecordIter(**kw)
    shapes = json.loads(str(Z[name + ":provide"]))
    assert [list(d.shape) for d in it.provide_data] == shapes[0]
    assert [list(d.shape) for d in it.provide_label] == shapes[1]
    assert np.dtype(it.provide_data[0].dtype).name == shapes[2]
    bicubic = kw.get("inter_method") == 9
    for epoch in range(3):
        n = 0
        for b, batch in enumerate(it):
            pre = f"{name}:{epoch}:{b}:"
            if pre + "data" not in Z.files:
                break  # epochs MXNet was not recorded for
            want = Z[pre + "data"]
            got = batch.data[0].asnumpy()
            assert got.dtype == np.dtype(shapes[2]) and got.shape == want.shape
            pad = int(Z[pre + "pad"])
            # MXNet leaves uninitialised memory (and pad=0) in a round_batch=False tail
            real = len(got) - (3 if name == "no_round" and b == 2 else pad)
            diff = np.abs(got[:real].astype(np.float32) - want[:real].astype(np.float32))
            assert diff.max() <= (1 if bicubic else 1e-5), pre
            np.testing.assert_array_equal(batch.label[0].asnumpy()[:real], Z[pre + "label"][:real])
            assert batch.pad == (3 if name == "no_round" and b == 2 else pad)
            n += 1
        if f"{name}:{epoch}:0:data" in Z.files:
            assert f"{name}:{epoch}:{n}:data" not in Z.files and n > 0
        it.reset()


def test_uint8_and_int8_variants():
    kw = dict(path_imgrec=os.path.join(REC, "imgs.rec"), data_shape=(3, 16, 16), batch_size=6)
    u8 = mx.io.ImageRecordUInt8Iter(**kw).next().data[0].asnumpy()
    np.testing.assert_array_equal(u8, Z["uint8:0:0:data"])
    i8 = mx.io.ImageRecordInt8Iter(mean_r=100, mean_g=100, mean_b=100, **kw).next()
    assert i8.data[0].dtype == np.int8
    np.testing.assert_array_equal(i8.data[0].asnumpy(), np.clip(u8.astype(int) - 100, -128, 127))
    assert mx.io.ImageRecordIter_v1 is mx.io.ImageRecordIter


def test_mean_img_created_then_loaded(tmp_path):
    path = str(tmp_path / "mean.bin")
    kw = dict(
        path_imgrec=os.path.join(REC, "imgs.rec"),
        data_shape=(3, 16, 16),
        batch_size=4,
        mean_img=path,
    )
    it = mx.io.ImageRecordIter(**kw)
    np.testing.assert_allclose(
        mx.nd.load(path)["mean_img"].asnumpy(), Z["mean_img:mean"], atol=1e-4
    )  # MXNet sums in float32, mxmod in float64
    np.testing.assert_allclose(it.next().data[0].asnumpy(), Z["mean_img:0:0:data"], atol=1e-4)
    it2 = mx.io.ImageRecordIter(**kw)  # the file now exists: loaded, not recomputed
    np.testing.assert_allclose(it2.next().data[0].asnumpy(), Z["mean_img:0:0:data"], atol=1e-4)


def _epoch_labels(it):
    it.reset()
    return [tuple(b.label[0].asnumpy()) for b in it]


def test_shuffle_and_random_augmentation_are_seeded():
    kw = dict(
        path_imgrec=os.path.join(REC, "imgs.rec"),
        path_imgidx=os.path.join(REC, "imgs.idx"),
        data_shape=(3, 16, 16),
        batch_size=4,
        shuffle=True,
        rand_crop=True,
        rand_mirror=True,
        max_random_scale=1.2,
        min_random_scale=0.9,
        random_h=10,
        random_s=10,
        random_l=10,
        max_aspect_ratio=0.2,
        seed=5,
        preprocess_threads=2,
    )
    a, b = mx.io.ImageRecordIter(**kw), mx.io.ImageRecordIter(**kw)
    for _ in range(2):
        ba, bb = a.next(), b.next()
        np.testing.assert_array_equal(ba.data[0].asnumpy(), bb.data[0].asnumpy())
    first, second = _epoch_labels(a), _epoch_labels(a)
    assert sorted(sum(first, ())) == sorted(sum(second, ()))  # same images
    assert first != second  # a new order every epoch
    c = mx.io.ImageRecordIter(**dict(kw, seed=6))
    assert not np.array_equal(
        c.next().data[0].asnumpy(), mx.io.ImageRecordIter(**kw).next().data[0].asnumpy()
    )


def test_place_on_puts_batches_on_a_sharded_mesh():
    import jax
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    mesh = Mesh(np.array(jax.devices()[:4]), ("d",))
    it = mx.io.ImageRecordIter(
        path_imgrec=os.path.join(REC, "imgs.rec"), data_shape=(3, 16, 16), batch_size=4
    )
    it.place_on(
        {
            "data": NamedSharding(mesh, PartitionSpec("d")),
            "softmax_label": NamedSharding(mesh, PartitionSpec("d")),
        }
    )
    batch = it.next()
    sharding = batch.data[0]._data.sharding
    assert isinstance(sharding, NamedSharding) and sharding.spec == PartitionSpec("d")
    assert len(batch.label[0]._data.addressable_shards) == 4
    it.place_on(mx.cpu(1))
    assert it.next().data[0]._data.devices() == {jax.devices()[1]}


def test_parameter_errors():
    rec = os.path.join(REC, "imgs.rec")
    with pytest.raises(TypeError, match="can only accept keyword arguments"):
        mx.io.ImageRecordIter(rec)
    # MXNet ignores unknown names (its tests pass typos like and_mirror): mxmod warns
    with pytest.warns(UserWarning, match=r"unknown parameter\(s\) \['rand_flip'\] ignored"):
        it = mx.io.ImageRecordIter(
            path_imgrec=rec, data_shape=(3, 8, 8), batch_size=2, rand_flip=True
        )
    assert it.next().data[0].shape == (2, 3, 8, 8)
    with pytest.raises(MXNetError, match="ctx='tpu' must be 'cpu' or 'gpu'"):
        mx.io.ImageRecordIter(path_imgrec=rec, data_shape=(3, 8, 8), batch_size=2, ctx="tpu")
    with pytest.raises(MXNetError, match="required parameter data_shape is missing"):
        mx.io.ImageRecordIter(path_imgrec=rec, batch_size=2)
    with pytest.raises(NotImplementedError, match="aug_seq='det_aug_default'"):
        mx.io.ImageRecordIter(
            path_imgrec=rec, data_shape=(3, 8, 8), batch_size=2, aug_seq="det_aug_default"
        )
    with pytest.raises(MXNetError, match="dtype 'float16': use float32, uint8 or int8"):
        mx.io.ImageRecordIter(path_imgrec=rec, data_shape=(3, 8, 8), batch_size=2, dtype="float16")
    with pytest.raises(MXNetError, match="must be bigger than the batch size"):
        mx.io.ImageRecordIter(path_imgrec=rec, data_shape=(3, 8, 8), batch_size=40)
    it = mx.io.ImageRecordIter(path_imgrec=rec, data_shape=(3, 40, 40), batch_size=2)
    assert it.next().data[0].shape == (2, 3, 40, 40)  # small images scaled up, as MXNet


def test_missing_and_truncated_files(tmp_path):
    with pytest.raises(MXNetError, match="cannot open RecordIO file .*none.rec"):
        mx.io.ImageRecordIter(
            path_imgrec=str(tmp_path / "none.rec"), data_shape=(3, 8, 8), batch_size=2
        )
    with pytest.raises(MXNetError, match="cannot open index file .*none.idx"):
        mx.io.ImageRecordIter(
            path_imgrec=os.path.join(REC, "imgs.rec"),
            path_imgidx=str(tmp_path / "none.idx"),
            data_shape=(3, 8, 8),
            batch_size=2,
        )
    raw = open(os.path.join(REC, "imgs.rec"), "rb").read()
    (tmp_path / "cut.rec").write_bytes(raw[: len(raw) - 300])
    with pytest.raises(MXNetError, match=r"cut.rec: record 11 is truncated"):
        mx.io.ImageRecordIter(
            path_imgrec=str(tmp_path / "cut.rec"), data_shape=(3, 8, 8), batch_size=2
        )
    # with the index the cut is found when the record is read, in next()
    it = mx.io.ImageRecordIter(
        path_imgrec=str(tmp_path / "cut.rec"),
        path_imgidx=os.path.join(REC, "imgs.idx"),
        data_shape=(3, 8, 8),
        batch_size=4,
    )
    with pytest.raises(MXNetError, match=r"cut.rec: record 11 .*truncated"):
        for _ in it:
            pass
    (tmp_path / "bad.idx").write_text("0\t999999\n")
    with pytest.raises(MXNetError, match="bad.idx: offset 999999 is past the end"):
        mx.io.ImageRecordIter(
            path_imgrec=os.path.join(REC, "imgs.rec"),
            path_imgidx=str(tmp_path / "bad.idx"),
            data_shape=(3, 8, 8),
            batch_size=1,
        )


def test_undecodable_image_and_label_width(tmp_path):
    path = str(tmp_path / "x.rec")
    w = mx.recordio.MXRecordIO(path, "w")
    img = np.full((10, 10, 3), 50, np.uint8)
    w.write(mx.recordio.pack_img(mx.recordio.IRHeader(0, 1.0, 0, 0), img, img_fmt=".png"))
    w.write(mx.recordio.pack(mx.recordio.IRHeader(0, 1.0, 7, 0), b"definitely not a jpeg"))
    w.close()
    it = mx.io.ImageRecordIter(path_imgrec=path, data_shape=(3, 8, 8), batch_size=2)
    with pytest.raises(MXNetError, match=r"x.rec: record 1 \(image id 7\) failed to decode"):
        it.next()
    it.reset()  # the pipeline restarts after an error
    with pytest.raises(MXNetError, match="failed to decode"):
        it.next()
    multi = os.path.join(REC, "multi.rec")
    it = mx.io.ImageRecordIter(path_imgrec=multi, data_shape=(3, 8, 8), batch_size=2)
    with pytest.raises(
        MXNetError, match="provides 2-dimensional label but label_width is set to 1"
    ):
        it.next()
    it = mx.io.ImageRecordIter(
        path_imgrec=os.path.join(REC, "imgs.rec"), data_shape=(3, 8, 8), batch_size=2, label_width=3
    )
    with pytest.raises(MXNetError, match="label_width must be 1 unless an imglist"):
        it.next()
    with pytest.raises(MXNetError, match=r"multi.lst:1: 2 label\(s\) but label_width is 3"):
        mx.io.ImageRecordIter(
            path_imgrec=multi,
            data_shape=(3, 8, 8),
            batch_size=2,
            label_width=3,
            path_imglist=os.path.join(REC, "multi.lst"),
        )


def test_four_channel_png(tmp_path):
    path = str(tmp_path / "rgba.rec")
    bgra = np.zeros((6, 6, 4), np.uint8)
    bgra[..., 0], bgra[..., 1], bgra[..., 2], bgra[..., 3] = 10, 20, 30, 40  # B, G, R, A
    w = mx.recordio.MXRecordIO(path, "w")
    w.write(
        mx.recordio.pack_img(mx.recordio.IRHeader(0, 1.0, 0, 0), bgra, quality=1, img_fmt=".png")
    )
    w.write(
        mx.recordio.pack_img(
            mx.recordio.IRHeader(0, 1.0, 1, 0), bgra[..., :3], quality=1, img_fmt=".png"
        )
    )
    w.close()
    it = mx.io.ImageRecordIter(
        path_imgrec=path, data_shape=(4, 6, 6), batch_size=1, mean_a=40, round_batch=False
    )
    np.testing.assert_array_equal(it.next().data[0].asnumpy()[0, :, 0, 0], [30, 20, 10, 0])
    with pytest.raises(MXNetError, match="Invalid image with index 1 .*expected 4 channels, got 3"):
        it.next()


def test_worker_failure_is_reported_not_hung(monkeypatch):
    it = mx.io.ImageRecordIter(
        path_imgrec=os.path.join(REC, "imgs.rec"),
        data_shape=(3, 8, 8),
        batch_size=2,
        preprocess_threads=2,
    )

    def boom(*a):
        raise ValueError("worker exploded")

    monkeypatch.setattr(it, "_sample", boom)
    it.reset()
    with pytest.raises(ValueError, match="worker exploded"):
        it.next()
    # a producer thread that vanishes without a result
    monkeypatch.setattr(it.pipeline, "_produce", lambda *a: None)
    it.reset()
    with pytest.raises(MXNetError, match="prefetch thread stopped without a result"):
        it.next()


def test_reset_mid_epoch_stops_prefetch():
    it = mx.io.ImageRecordIter(
        path_imgrec=os.path.join(REC, "imgs.rec"),
        data_shape=(3, 8, 8),
        batch_size=2,
        prefetch_buffer=1,
    )
    it.next()
    before = threading.active_count()
    for _ in range(5):
        it.reset()
    assert threading.active_count() <= before + 1
    assert len(list(it)) == 6


def test_epoch_cut_short_carries_no_wrap():
    kw = dict(path_imgrec=os.path.join(REC, "imgs.rec"), data_shape=(3, 8, 8), batch_size=5)
    it = mx.io.ImageRecordIter(**kw)
    first = it.next().label[0].asnumpy()
    it.reset()  # before the wrapped third batch: the next epoch starts at record 0
    np.testing.assert_array_equal(it.next().label[0].asnumpy(), first)
    it.reset()
    assert [b.pad for b in it] == [0, 0, 3]
    it.reset()  # after the wrap: starts at record 3, as MXNet (fixture case "plain")
    np.testing.assert_array_equal(it.next().label[0].asnumpy(), Z["plain:1:0:label"])


def test_dropped_iterator_releases_its_threads():
    import gc
    import time
    import weakref

    before = {t.ident for t in threading.enumerate()}
    it = mx.io.ImageRecordIter(
        path_imgrec=os.path.join(REC, "imgs.rec"),
        data_shape=(3, 8, 8),
        batch_size=2,
        prefetch_buffer=1,
        preprocess_threads=2,
    )
    it.next()  # the producer now waits on a full queue
    ref = weakref.ref(it)
    del it
    deadline = time.time() + 5
    while time.time() < deadline and ref() is not None:  # the producer may hold it briefly
        gc.collect()
        time.sleep(0.05)
    assert ref() is None
    while time.time() < deadline and {t.ident for t in threading.enumerate()} - before:
        time.sleep(0.05)
    assert not {t.ident for t in threading.enumerate()} - before


def test_train_conv_net_from_im2rec(tmp_path):
    from mxmod.tools import im2rec

    shutil.copytree(os.path.join(DATA, "img"), tmp_path / "img")
    prefix = str(tmp_path / "train")
    assert im2rec.main(["--list", "--recursive", prefix, str(tmp_path / "img")]) == 0
    assert im2rec.main([prefix, str(tmp_path / "img"), "--resize", "20", "--num-thread", "2"]) == 0
    train = mx.io.ImageRecordIter(
        path_imgrec=prefix + ".rec",
        path_imgidx=prefix + ".idx",
        data_shape=(3, 16, 16),
        batch_size=4,
        shuffle=True,
        rand_mirror=True,
        mean_r=128,
        mean_g=128,
        mean_b=128,
        scale=1 / 64.0,
        preprocess_threads=2,
    )
    data = mx.sym.Variable("data")
    net = mx.sym.Convolution(data, kernel=(3, 3), num_filter=8, name="conv1")
    net = mx.sym.Activation(net, act_type="relu")
    net = mx.sym.Pooling(net, kernel=(2, 2), stride=(2, 2), pool_type="max")
    net = mx.sym.FullyConnected(mx.sym.Flatten(net), num_hidden=2, name="fc")
    net = mx.sym.SoftmaxOutput(net, name="softmax")
    mod = mx.mod.Module(net, context=mx.cpu())
    mx.random.seed(0)
    mod.fit(
        train,
        num_epoch=15,
        optimizer="adam",
        optimizer_params={"learning_rate": 0.01},
        initializer=mx.init.Xavier(),
        eval_metric="acc",
    )
    acc = mod.score(
        mx.io.ImageRecordIter(
            path_imgrec=prefix + ".rec",
            data_shape=(3, 16, 16),
            batch_size=4,
            mean_r=128,
            mean_g=128,
            mean_b=128,
            scale=1 / 64.0,
        ),
        "acc",
    )[0][1]
    assert acc >= 0.9


def _raw_batch(**kw):
    rec = os.path.join(REC, "imgs.rec")
    it = mx.io.ImageRecordIter(path_imgrec=rec, data_shape=(3, 8, 8), batch_size=8, **kw)
    return it.next().data[0].asnumpy().astype(np.float64)


def test_brightness_scales_each_image_by_one_factor():
    base, out = _raw_batch(dtype="uint8"), _raw_batch(dtype="uint8", brightness=0.4, seed=3)
    factors = []
    for b, o in zip(base, out):
        fit = o < 255  # least-squares factor of this image, on unclipped pixels
        a = (o * b)[fit].sum() / (b * b)[fit].sum()
        assert 0.6 - 1e-2 <= a <= 1.4 + 1e-2
        assert np.abs(np.clip(np.rint(b * a), 0, 255) - o).max() <= 1
        factors.append(a)
    assert np.std(factors) > 0.02  # one random factor per image


def test_pca_noise_shifts_each_channel_by_a_constant():
    base, out = _raw_batch(dtype="uint8"), _raw_batch(dtype="uint8", pca_noise=0.1, seed=5)
    shifts = []
    for b, o in zip(base, out):
        for c in range(3):
            keep = (b[c] > 20) & (b[c] < 235)  # away from clipping
            d = (o[c] - b[c])[keep]
            assert d.size and d.min() == d.max()
            shifts.append(d[0])
    assert len(set(shifts)) > 3
    # contrast/saturation keep an image's mean brightness roughly, and need color
    out = _raw_batch(dtype="uint8", contrast=0.3, saturation=0.3, seed=1)
    means = base.mean(axis=(1, 2, 3))
    assert (np.abs(out.mean(axis=(1, 2, 3)) - means) < 0.15 * means).all()
    assert not np.array_equal(out, base)
    rec = os.path.join(REC, "imgs.rec")
    gray = mx.io.ImageRecordIter(path_imgrec=rec, data_shape=(1, 8, 8), batch_size=2, contrast=0.2)
    with pytest.raises(MXNetError, match="need 3-channel images"):
        gray.next()


def test_shuffle_chunk_size_reads_chunks_of_the_file_in_a_new_order(tmp_path):
    """A .rec without .idx and shuffle_chunk_size (MB): MXNet cuts the file into
    ceil(1.1 * size / chunk) chunks and reads them in a new order each epoch (records in
    file order inside a chunk, shuffled within it with shuffle=True)."""
    rec, idx = str(tmp_path / "big.rec"), str(tmp_path / "big.idx")
    rng = np.random.RandomState(0)
    w = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
    for i in range(48):  # noise PNGs of ~49 KB: a 2.4 MB file, three 1 MB chunks
        img = rng.randint(0, 256, (128, 128, 3)).astype(np.uint8)
        header = mx.recordio.IRHeader(0, float(i), i, 0)
        w.write_idx(i, mx.recordio.pack_img(header, img, quality=1, img_fmt=".png"))
    w.close()
    kw = dict(path_imgrec=rec, data_shape=(3, 8, 8), batch_size=8, shuffle_chunk_size=1)
    it = mx.io.ImageRecordIter(**kw, shuffle_chunk_seed=3)
    epochs = []
    for _ in range(4):
        it.reset()
        epochs.append(np.concatenate([b.label[0].asnumpy() for b in it]).astype(int))
    for order in epochs:  # three whole chunks of 16 records, each in file order
        for chunk in order.reshape(3, 16):
            assert chunk[0] % 16 == 0 and list(chunk) == list(range(chunk[0], chunk[0] + 16))
    assert len({tuple(o) for o in epochs}) > 1  # a new order of chunks across epochs
    shuffled = mx.io.ImageRecordIter(**kw, shuffle=True, seed=1)
    order = np.concatenate([b.label[0].asnumpy() for b in shuffled])
    assert sorted(order) == list(range(48)) and len(np.nonzero(np.diff(order) != 1)[0]) > 3
    # an index file lets records shuffle one by one: the chunk size is not used (as MXNet)
    plain = mx.io.ImageRecordIter(**kw, path_imgidx=idx)
    order = np.concatenate([b.label[0].asnumpy() for b in plain])
    np.testing.assert_array_equal(order, np.arange(48))
    with pytest.raises(MXNetError, match="shuffle_chunk_size -1 must be >= 0"):
        mx.io.ImageRecordIter(**dict(kw, shuffle_chunk_size=-1))
