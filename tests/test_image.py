"""mx.image against MXNet 1.9.1 goldens (tests/fixtures/data/image_goldens.npz and
image_iter.npz, made by gen_data_fixtures.py).

Tolerance: decoding, nearest/bilinear/area/lanczos resizes, crops and borders are
pixel-exact. Bicubic (interp=2, mx.image's default) differs by at most 1 grey level on a
few percent of pixels: MXNet bundles OpenCV 3.4, whose bicubic kernel rounds differently
from OpenCV 4's. Float normalization agrees to 1 ulp, rotation to 3e-5.
"""

import json
import os
import random

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError

DATA = os.path.join(os.path.dirname(__file__), "fixtures", "data")
ROOT = os.path.join(DATA, "img")
G = np.load(os.path.join(DATA, "image_goldens.npz"))
FILES = sorted(os.path.join(dp, f) for dp, _, fs in os.walk(ROOT) for f in fs)[:4]


def _np(x):
    return x.asnumpy() if hasattr(x, "asnumpy") else np.asarray(x)


def close(name, key, got, bicubic=False):
    want = G[f"{name}:{key}"]
    got = _np(got)
    assert got.shape == want.shape, name
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    if bicubic:
        assert diff.max() <= 1 and (diff > 0).mean() < 0.1, (name, key)
    elif want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=name)
    else:
        assert diff.max() == 0, (name, key, diff.max())


@pytest.mark.parametrize("path", FILES, ids=lambda p: os.path.basename(p))
def test_decode_resize_crop_match_mxnet(path):
    key = os.path.relpath(path, ROOT).replace(os.sep, "_")
    n = FILES.index(path)
    buf = open(path, "rb").read()
    img = mx.image.imdecode(buf)
    assert isinstance(img, mx.nd.NDArray) and img.dtype == np.uint8
    close("dec", key, img)
    close("gray", key, mx.image.imdecode(buf, flag=0))
    close("bgr", key, mx.image.imdecode(buf, to_rgb=0))
    close("dec", key, mx.image.imread(path))
    for interp in range(5):
        close(f"resize{interp}", key, mx.image.imresize(img, 33, 21, interp), interp == 2)
        if n < 2:
            close(f"resizeup{interp}", key, mx.image.imresize(img, 45, 61, interp), interp == 2)
    close("short", key, mx.image.resize_short(img, 26), bicubic=True)
    close("center", key, mx.image.center_crop(img, (20, 18))[0])
    close("fixed", key, mx.image.fixed_crop(img, 3, 4, 15, 12, size=(10, 8)), bicubic=True)
    random.seed(n)  # MXNet draws crops from Python's random: same seed, same crop
    close("random", key, mx.image.random_crop(img, (20, 18))[0])
    random.seed(n)
    close(
        "rsize", key, mx.image.random_size_crop(img, (16, 16), 0.3, (0.75, 1.33))[0], bicubic=True
    )
    close("border", key, mx.image.copyMakeBorder(img, 1, 2, 3, 4, value=7))
    # numpy in, numpy out (the iterators' path), same pixels
    close("center", key, mx.image.center_crop(img.asnumpy(), (20, 18))[0])


def test_normalize_and_create_augmenter_match_mxnet():
    key = os.path.relpath(FILES[0], ROOT).replace(os.sep, "_")
    img = mx.image.imdecode(open(FILES[0], "rb").read())
    close(
        "norm",
        key,
        mx.image.color_normalize(
            img.astype("float32"),
            mx.nd.array([120.0, 110.0, 100.0]),
            mx.nd.array([50.0, 60.0, 70.0]),
        ),
    )
    random.seed(10)
    augs = mx.image.CreateAugmenter(
        (3, 16, 16), resize=20, rand_crop=True, rand_mirror=True, mean=True, std=True
    )
    x = img
    for a in augs:
        x = a(x)
    assert isinstance(x, mx.nd.NDArray) and x.dtype == np.float32
    np.testing.assert_allclose(_np(x), G["augs:" + key], atol=0.02)  # bicubic +-1 / std
    assert json.dumps([a.dumps() for a in augs]) == str(G["augs_dumps"])


def test_imrotate_matches_mxnet():
    img = mx.image.imdecode(open(FILES[0], "rb").read())[:20, :24]
    chw = img.astype("float32").transpose((2, 0, 1))
    for deg, zi, zo in ((30, False, False), (-75, True, False), (120, False, True)):
        got = mx.image.imrotate(chw, deg, zoom_in=zi, zoom_out=zo)
        assert isinstance(got, mx.nd.NDArray)
        np.testing.assert_allclose(got.asnumpy(), G[f"rot:{deg}"], rtol=1e-4, atol=1e-3)
    np.random.seed(4)  # MXNet draws the angles from numpy's global RNG
    batch = np.stack([chw.asnumpy(), chw.asnumpy() * 0.5])
    np.testing.assert_allclose(
        mx.image.random_rotate(batch, (-40, 40)), G["rot:random"], rtol=1e-4, atol=1e-3
    )
    with pytest.raises(TypeError, match="Only `float32` images"):
        mx.image.imrotate(img.transpose((2, 0, 1)), 10)
    with pytest.raises(ValueError, match="cannot be both True"):
        mx.image.imrotate(chw, 10, zoom_in=True, zoom_out=True)
    with pytest.raises(TypeError, match="rotation angle is required to be a scalar"):
        mx.image.imrotate(chw, [10])
    with pytest.raises(ValueError, match="number of images must be equal"):
        mx.image.imrotate(batch, [10, 20, 30])


def test_color_jitter_augmenters_are_type_preserving():
    img = np.full((4, 5, 3), 100, np.uint8)
    random.seed(0)
    for aug in (
        mx.image.BrightnessJitterAug(0.3),
        mx.image.ContrastJitterAug(0.3),
        mx.image.SaturationJitterAug(0.3),
        mx.image.HueJitterAug(0.1),
        mx.image.RandomGrayAug(1.0),
        mx.image.HorizontalFlipAug(1.0),
        mx.image.LightingAug(0.1, np.array([55.46, 4.794, 1.148]), np.eye(3)),
    ):
        out_np = aug(img.astype(np.float32))
        assert isinstance(out_np, np.ndarray) and out_np.shape == img.shape
        out_nd = aug(mx.nd.array(img))
        assert isinstance(out_nd, mx.nd.NDArray) and out_nd.shape == img.shape
    # contrast 0-range and a gray image: unchanged
    np.testing.assert_allclose(
        mx.image.ContrastJitterAug(0.0)(img.astype(np.float32)), 100, rtol=1e-5
    )


def test_image_errors():
    with pytest.raises(ValueError, match="buf must be of type bytes"):
        mx.image.imdecode("not bytes")
    with pytest.raises(MXNetError, match="Decoding failed"):
        mx.image.imdecode(b"\x00\x01garbage")
    with pytest.raises(MXNetError, match="imread: cannot open .*missing.jpg"):
        mx.image.imread("missing.jpg")
    with pytest.raises(ValueError, match="Unknown interp method 7"):
        mx.image.imresize(np.zeros((4, 4, 3), np.uint8), 2, 2, interp=7)
    with pytest.raises(ValueError, match="rand_resize=True needs rand_crop=True"):
        mx.image.CreateAugmenter((3, 8, 8), rand_resize=True)
    with pytest.raises(ValueError, match="mean must be True, None or an array"):
        mx.image.CreateAugmenter((3, 8, 8), mean=[1, 2])
    with pytest.raises(TypeError, match="unexpected keyword arguments"):
        mx.image.random_size_crop(np.zeros((8, 8, 3), np.uint8), (4, 4), 0.5, (1, 1), foo=1)


IT = np.load(os.path.join(DATA, "image_iter.npz"))
REC = os.path.join(DATA, "im2rec")
CASES = {
    "rec_seq": dict(path_imgrec=os.path.join(REC, "imgs.rec")),
    "rec_idx": dict(
        path_imgrec=os.path.join(REC, "imgs.rec"), path_imgidx=os.path.join(REC, "imgs.idx")
    ),
    "lst": dict(path_imglist=os.path.join(REC, "imgs.lst"), path_root=ROOT),
    "imglist": dict(
        imglist=[[float(k), "cat/im%02d.jpg" % k] for k in (0, 1, 2, 3)], path_root=ROOT
    ),
    "multi": dict(path_imgrec=os.path.join(REC, "multi.rec"), label_width=2),
    "parts": dict(
        path_imgrec=os.path.join(REC, "imgs.rec"),
        path_imgidx=os.path.join(REC, "imgs.idx"),
        num_parts=2,
        part_index=1,
    ),
    "discard": dict(path_imgrec=os.path.join(REC, "imgs.rec"), last_batch_handle="discard"),
    "roll": dict(path_imgrec=os.path.join(REC, "imgs.rec"), last_batch_handle="roll_over"),
}


def _check_batches(it, name, epochs):
    for epoch in range(epochs):
        n = 0
        for b, batch in enumerate(it):
            pre = f"{name}:{epoch}:{b}:"
            want = IT[pre + "data"].astype(np.float32)
            got = batch.data[0].asnumpy()
            assert got.shape == want.shape and got.dtype == np.float32
            diff = np.abs(got - want)
            assert diff.max() <= 1 and (diff > 0).mean() < 0.1, pre  # bicubic, see top
            np.testing.assert_array_equal(batch.label[0].asnumpy(), IT[pre + "label"])
            assert batch.pad == int(IT[pre + "pad"])
            n += 1
        assert f"{name}:{epoch}:{n}:data" not in IT.files and n > 0
        it.reset()


@pytest.mark.parametrize("name", sorted(CASES))
def test_image_iter_matches_mxnet(name):
    it = mx.image.ImageIter(batch_size=5, data_shape=(3, 16, 16), **CASES[name])
    _check_batches(it, name, 2 if name in ("rec_seq", "discard", "roll") else 1)


def test_image_iter_shuffle_and_augment_match_mxnet_seeded():
    random.seed(3)
    it = mx.image.ImageIter(
        batch_size=4,
        data_shape=(3, 16, 16),
        shuffle=True,
        path_imgrec=os.path.join(REC, "imgs.rec"),
        path_imgidx=os.path.join(REC, "imgs.idx"),
        rand_crop=True,
        rand_mirror=True,
        resize=18,
    )
    _check_batches(it, "shuffle", 1)


class _Scale(mx.image.Augmenter):
    def __call__(self, src):
        assert isinstance(src, mx.nd.NDArray)  # user augmenters see NDArrays, as in MXNet
        return src.astype("float32") * 0 + 1


def test_image_iter_user_augmenter_and_errors(tmp_path):
    it = mx.image.ImageIter(
        batch_size=2,
        data_shape=(3, 4, 4),
        path_imgrec=os.path.join(REC, "imgs.rec"),
        aug_list=[mx.image.CenterCropAug((4, 4)), _Scale()],
    )
    assert np.all(it.next().data[0].asnumpy() == 1)
    with pytest.raises(ValueError, match="needs path_imgrec, path_imglist or imglist"):
        mx.image.ImageIter(2, (3, 4, 4))
    with pytest.raises(ValueError, match="expects inputs to have 3 channels"):
        mx.image.ImageIter(2, (1, 4, 4), path_imgrec=os.path.join(REC, "imgs.rec"))
    with pytest.raises(ValueError, match="needs its index: pass path_imgidx"):
        mx.image.ImageIter(2, (3, 4, 4), path_imgrec=os.path.join(REC, "imgs.rec"), shuffle=True)
    it = mx.image.ImageIter(2, (3, 16, 16), path_imgrec=os.path.join(REC, "multi.rec"))
    with pytest.raises(MXNetError, match="has 2 label.*label_width is 1"):
        it.next()
    (tmp_path / "bad.jpg").write_bytes(b"not an image")
    it = mx.image.ImageIter(1, (3, 4, 4), imglist=[[1.0, "bad.jpg"]], path_root=str(tmp_path))
    with pytest.raises(MXNetError, match="Broken image filename: bad.jpg"):
        it.next()


def test_out_arguments_and_empty_buffer():
    src = mx.nd.array(np.arange(5 * 6 * 3).reshape(5, 6, 3), dtype="uint8")
    out = mx.nd.zeros((3, 4, 3), dtype="uint8")
    assert mx.image.imresize(src, 4, 3, interp=0, out=out) is out
    np.testing.assert_array_equal(out.asnumpy(), mx.image.imresize(src, 4, 3, interp=0).asnumpy())
    out = mx.nd.zeros((7, 8, 3), dtype="uint8")
    res = mx.image.copyMakeBorder(src, 1, 1, 1, 1, type=0, values=[9, 9, 9], out=out)
    assert res is out and (out.asnumpy()[0] == 9).all()
    np.testing.assert_array_equal(out.asnumpy()[1:-1, 1:-1], src.asnumpy())
    with pytest.raises(ValueError, match=r"out has shape \(2, 2, 3\), the result \(3, 4, 3\)"):
        mx.image.imresize(src, 4, 3, out=mx.nd.zeros((2, 2, 3), dtype="uint8"))
    with pytest.raises(MXNetError, match="empty buffer"):
        mx.image.imdecode(b"")
    assert mx.image.image.imread is mx.image.imread and mx.img is mx.image
