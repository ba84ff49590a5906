"""mx.io.ImageDetRecordIter: label rows ``[c, h, w, n] + raw label + padding``, the batch
stream, mirroring with boxes, and errors. Checked side by side with MXNet 1.9.1 on a
7-record file: identical labels, pads, indices and parts, identical pixels for bilinear
resizes (bicubic differs by OpenCV version, as for ImageRecordIter)."""

import cv2
import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError


@pytest.fixture()
def det_rec(tmp_path):
    """7 images (30+i)x40 with 1-3 boxes each; returns (path, raw labels, BGR images)."""
    rng = np.random.RandomState(0)
    path = str(tmp_path / "det.rec")
    w = mx.recordio.MXRecordIO(path, "w")
    raws, imgs = [], []
    for i in range(7):
        img = rng.randint(0, 256, (30 + i, 40, 3)).astype(np.uint8)
        objs = []
        for k in range(1 + i % 3):
            x0, y0 = rng.uniform(0, 0.5, 2)
            objs += [k, x0, y0, x0 + 0.3, y0 + 0.4]
        raw = np.array([2, 5] + objs, np.float32)
        header = mx.recordio.IRHeader(0, raw, i, 0)
        w.write(mx.recordio.pack_img(header, img, quality=9, img_fmt=".png"))
        raws.append(raw)
        imgs.append(img)
    w.close()
    return path, raws, imgs


def test_label_layout_stream_and_pixels(det_rec):
    path, raws, imgs = det_rec
    it = mx.io.ImageDetRecordIter(path_imgrec=path, data_shape=(3, 24, 16), batch_size=3)
    assert it.provide_label[0].shape == (3, 4 + 17)  # longest raw label: 2 + 3 * 5
    batches = [b for _ in range(2) for b in (list(it), it.reset())[0]]
    assert [(b.pad, [int(i) for i in b.index]) for b in batches] == [
        (0, [0, 1, 2]),
        (0, [3, 4, 5]),
        (2, [6, 0, 1]),
        (0, [2, 3, 4]),
        (1, [5, 6, 0]),
    ]
    for b in batches:
        for row, i in zip(b.label[0].asnumpy(), b.index):
            raw = raws[int(i)]
            np.testing.assert_allclose(row[:4], [3, 24, 16, raw.size])
            np.testing.assert_allclose(row[4 : 4 + raw.size], raw, rtol=1e-6)
            assert (row[4 + raw.size :] == -1).all()
    want = cv2.resize(imgs[1], (16, 24), interpolation=cv2.INTER_LINEAR)[:, :, ::-1]
    np.testing.assert_array_equal(batches[0].data[0].asnumpy()[1], want.transpose(2, 0, 1))


def test_mirror_flips_boxes_and_normalization(det_rec):
    path, raws, imgs = det_rec
    it = mx.io.ImageDetRecordIter(
        path_imgrec=path,
        data_shape=(3, 24, 16),
        batch_size=2,
        rand_mirror_prob=1.0,
        mean_r=10,
        std_r=2,
        label_pad_width=20,
    )
    b = it.next()
    assert b.label[0].shape == (2, 24)
    objs = b.label[0].asnumpy()[0, 6 : 6 + 5]
    x0, x1 = raws[0][3], raws[0][5]
    np.testing.assert_allclose(objs[[1, 3]], [1 - x1, 1 - x0], rtol=1e-6)
    mirrored = cv2.resize(imgs[0], (16, 24), interpolation=cv2.INTER_LINEAR)[:, ::-1, ::-1]
    got = b.data[0].asnumpy()[0]
    np.testing.assert_allclose(got[0], (mirrored[:, :, 0] - 10.0) / 2, rtol=1e-6)
    np.testing.assert_array_equal(got[1], mirrored[:, :, 1])  # std 0 means no division


def test_errors(det_rec, tmp_path):
    path, _, _ = det_rec
    with pytest.raises(MXNetError, match="label_pad_width 5 is smaller than the longest label"):
        mx.io.ImageDetRecordIter(
            path_imgrec=path, data_shape=(3, 8, 8), batch_size=2, label_pad_width=5
        )
    with pytest.raises(MXNetError, match="min_crop_scales has 2 values but num_crop_sampler is 3"):
        mx.io.ImageDetRecordIter(
            path_imgrec=path,
            data_shape=(3, 8, 8),
            batch_size=2,
            num_crop_sampler=3,
            min_crop_scales=(0.1, 0.2),
        )
    with pytest.raises(MXNetError, match="crop_emit_mode 'edge'"):
        mx.io.ImageDetRecordIter(
            path_imgrec=path, data_shape=(3, 8, 8), batch_size=2, crop_emit_mode="edge"
        )
    with pytest.raises(NotImplementedError, match="resize_mode='fit' is not implemented"):
        mx.io.ImageDetRecordIter(
            path_imgrec=path, data_shape=(3, 8, 8), batch_size=2, resize_mode="fit"
        )
    plain = str(tmp_path / "plain.rec")
    w = mx.recordio.MXRecordIO(plain, "w")
    img = np.zeros((8, 8, 3), np.uint8)
    w.write(mx.recordio.pack_img(mx.recordio.IRHeader(0, 3.0, 0, 0), img, img_fmt=".png"))
    w.close()
    with pytest.raises(MXNetError, match=r"record 0: label \[3.0\] is not a detection label"):
        mx.io.ImageDetRecordIter(path_imgrec=plain, data_shape=(3, 8, 8), batch_size=1)
    with pytest.raises(TypeError, match="keyword arguments"):
        mx.io.ImageDetRecordIter(path)


def _objects(row):
    raw = row[4 : 4 + int(row[3])]
    return raw[2:].reshape(-1, 5)


def test_random_pad_shrinks_boxes_onto_a_filled_canvas(det_rec):
    path, raws, _ = det_rec
    it = mx.io.ImageDetRecordIter(
        path_imgrec=path,
        data_shape=(3, 40, 40),
        batch_size=7,
        dtype="uint8",
        rand_pad_prob=1.0,
        max_pad_scale=3.0,
        fill_value=50,
        seed=2,
    )
    b = it.next()
    padded = 0
    for row, img, i in zip(b.label[0].asnumpy(), b.data[0].asnumpy(), b.index):
        objs, orig = _objects(row), raws[int(i)][2:].reshape(-1, 5)
        scale = (orig[:, 3] - orig[:, 1]) / (objs[:, 3] - objs[:, 1])
        assert np.allclose(scale, scale[0], rtol=1e-3) and 1 - 1e-3 <= scale[0] <= 3 + 1e-3
        if scale[0] > 1.05:
            padded += 1
            assert (img[:, 0, 0] == 50).all() or (img[:, -1, -1] == 50).all()
    assert padded >= 4


def test_random_crop_keeps_boxes_inside_and_meets_coverage(det_rec):
    path, raws, _ = det_rec
    it = mx.io.ImageDetRecordIter(
        path_imgrec=path,
        data_shape=(3, 16, 16),
        batch_size=7,
        rand_crop_prob=1.0,
        num_crop_sampler=2,
        min_crop_scales=(0.3, 0.5),
        max_crop_scales=(0.8, 1.0),
        min_crop_aspect_ratios=(0.5,),
        max_crop_aspect_ratios=(2.0,),
        min_crop_object_coverages=(0.5,),
        crop_emit_mode="overlap",
        emit_overlap_thresh=0.5,
        seed=4,
    )
    changed = 0
    for _ in range(3):
        for b in it:
            for row, i in zip(b.label[0].asnumpy(), b.index):
                objs, orig = _objects(row), raws[int(i)][2:].reshape(-1, 5)
                assert 1 <= len(objs) <= len(orig)
                assert ((objs[:, 1:5] >= 0) & (objs[:, 1:5] <= 1)).all()
                assert (objs[:, 3] > objs[:, 1]).all() and (objs[:, 4] > objs[:, 2]).all()
                assert set(objs[:, 0]) <= set(orig[:, 0])
                changed += not np.array_equal(objs, orig)
        it.reset()
    assert changed > 10  # crops happen (a crop can fail all its trials and keep the image)


def test_color_jitter_changes_pixels_with_its_probability(det_rec):
    path, _, _ = det_rec
    kw = dict(path_imgrec=path, data_shape=(3, 16, 16), batch_size=7, dtype="uint8")
    base = mx.io.ImageDetRecordIter(**kw).next().data[0].asnumpy().astype(float)
    out = mx.io.ImageDetRecordIter(
        random_contrast_prob=1.0, max_random_contrast=0.5, seed=1, **kw
    ).next()
    ratio = out.data[0].asnumpy().astype(float).mean(axis=(1, 2, 3)) / base.mean(axis=(1, 2, 3))
    assert ((ratio > 0.45) & (ratio < 1.55)).all() and np.std(ratio) > 0.02
    same = mx.io.ImageDetRecordIter(random_hue_prob=1e-9, max_random_hue=30, **kw).next()
    np.testing.assert_array_equal(same.data[0].asnumpy(), base)
