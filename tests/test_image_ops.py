"""``mx.nd.image`` / ``mx.sym.image`` against MXNet 1.9.1 (gen_image_op_goldens.py)."""

import os

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError

HERE = os.path.dirname(__file__)
G = np.load(os.path.join(HERE, "fixtures", "image_ops", "goldens.npz"))
img = mx.nd.image
GRAY = np.array([0.299, 0.587, 0.114], np.float32)


def nd(name):
    x = G[name]
    return mx.nd.array(x, dtype=x.dtype)


def close(got, want, atol=1e-4):
    got = got.asnumpy() if hasattr(got, "asnumpy") else got
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got.astype("f8"), want.astype("f8"), rtol=1e-5, atol=atol)


@pytest.mark.parametrize("name", ["u8", "f32", "batch"])
def test_to_tensor(name):
    close(img.to_tensor(nd(name)), G[f"to_tensor:{name}"])


def test_normalize_batch_and_one_mean():
    t = img.to_tensor(nd("batch"))
    mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
    close(img.normalize(t, mean=mean, std=std), G["normalize:batch"])
    close(img.normalize(t[0], mean=(0.5,), std=(0.25,)), G["normalize:one"])


def test_normalize_defaults_work_for_three_channels():
    # MXNet's defaults are four zeros and four ones, which no 1- or 3-channel input accepts
    x = mx.nd.array(np.arange(12, dtype="float32").reshape(3, 2, 2))
    close(img.normalize(x), x.asnumpy())


def check_flip(got, raw, want, axis):
    """``got`` is ``raw`` mirrored on ``axis``; MXNet's ``want`` agrees except on an odd
    size's middle row or column, which MXNet leaves unwritten."""
    got = got.asnumpy()
    np.testing.assert_array_equal(got, np.flip(raw, axis))
    size = raw.shape[axis]
    keep = [i for i in range(size) if size % 2 == 0 or i != size // 2]
    np.testing.assert_array_equal(np.take(got, keep, axis), np.take(want, keep, axis))


@pytest.mark.parametrize("name", ["u8", "f32", "gray1"])
def test_flips_and_enhancements(name):
    a, raw = nd(name), G[name]
    check_flip(img.flip_left_right(a), raw, G[f"flip_left_right:{name}"], 1)
    check_flip(img.flip_top_bottom(a), raw, G[f"flip_top_bottom:{name}"], 0)
    for factor in (0.5, 1.7):
        for op in ("brightness", "contrast"):
            fn = getattr(img, "random_" + op)
            close(
                fn(a, min_factor=factor, max_factor=factor), G[f"{op}:{name}:{factor}"], atol=1e-3
            )


@pytest.mark.parametrize("name", ["u8", "f32"])
def test_saturation_uses_the_full_gray_where_mxnet_keeps_only_blue(name):
    a, x = nd(name), G[name].astype("f4")
    for factor in (0.5, 1.7):
        got = img.random_saturation(a, min_factor=factor, max_factor=factor).asnumpy()
        gray = (x * GRAY).sum(-1, keepdims=True)
        want = x * factor + (1 - factor) * gray
        if name == "u8":
            want = np.clip(want, 0, 255).astype("uint8")
        np.testing.assert_allclose(got.astype("f8"), want, atol=1.001, rtol=1e-5)
        blue_only = x * factor + (1 - factor) * x[..., 2:] * GRAY[2]  # MXNet's
        if name == "u8":
            blue_only = np.clip(blue_only, 0, 255).astype("uint8")
        np.testing.assert_allclose(G[f"saturation:{name}:{factor}"], blue_only, atol=1.001)
    gray1 = nd("gray1")
    close(img.random_saturation(gray1, min_factor=0.3, max_factor=0.3), G["saturation:gray1:0.5"])


@pytest.mark.parametrize("name", ["u8", "f32"])
def test_hue_lighting_crop(name):
    a = nd(name)
    for factor in (0.05, 0.3, 0.8):
        want = G[f"hue:{name}:{factor}"]
        got = img.random_hue(a, min_factor=factor, max_factor=factor)
        close(got, want, atol=1.001 if name == "u8" else 2e-3)  # float rounding at .0 edges
    close(img.adjust_lighting(a, alpha=(0.1, -0.2, 0.3)), G[f"lighting:{name}"], atol=1e-3)
    close(img.crop(a, x=1, y=2, width=4, height=3), G[f"crop:{name}"])
    # one channel: MXNet leaves the output unwritten; mxmod returns the image
    gray = nd("gray1")
    close(img.random_hue(gray, min_factor=0.3, max_factor=0.3), G["gray1"])
    close(img.adjust_lighting(gray, alpha=(0.1, 0.2, 0.3)), G["gray1"])


@pytest.mark.parametrize("name", ["u8", "f32"])
def test_resize_is_opencvs(name):
    pytest.importorskip("cv2")
    a = nd(name)
    for interp in range(5):
        close(img.resize(a, size=(9, 4), interp=interp), G[f"resize:{name}:{interp}"], atol=1e-3)
    close(img.resize(a, size=3, keep_ratio=True), G[f"resize_keep:{name}"], atol=1e-3)
    close(img.resize(nd("batch"), size=(3, 7)), G["resize:batch"])
    close(img.crop(nd("batch"), x=0, y=1, width=5, height=2), G["crop:batch"])


def grad_of(sym, head):
    x = G["f32"]
    exe = sym.simple_bind(mx.cpu(), data=x.shape)
    exe.arg_dict["data"][:] = x
    exe.forward(is_train=True)
    exe.backward(mx.nd.array(head))
    return exe.grad_dict["data"]


def test_gradients_of_normalize_and_crop():
    data = mx.sym.var("data")
    chw = mx.sym.transpose(data, axes=(2, 0, 1))
    norm = mx.sym.image.normalize(chw, mean=(1.0, 2.0, 3.0), std=(0.5, 2.0, 4.0))
    close(grad_of(norm, G["normalize_head"]), G["normalize_grad"], atol=1e-6)
    crop = mx.sym.image.crop(data, x=1, y=2, width=4, height=3)
    close(grad_of(crop, G["crop_head"]), G["crop_grad"], atol=1e-6)


def test_symbol_json_matches_mxnet_and_runs_in_a_module():
    data = mx.sym.var("data")
    mx.sym.image.normalize(mx.sym.image.to_tensor(data), mean=(0.5, 0.4, 0.3), std=(0.2,) * 3)
    net = mx.sym.image.flip_left_right(data)
    net = mx.sym.image.crop(mx.sym.image.resize(net, size=(8, 6)), 0, 0, 4, 4)
    norm = mx.sym.image.normalize(mx.sym.image.to_tensor(data), mean=(0.5,), std=(0.2,))
    jitter = mx.sym.image.random_color_jitter(data, 0.1, 0.2, 0.3, 0.05)
    graph = mx.sym.Group([net, norm, jitter])
    assert graph.tojson() == str(G["json"])
    loaded = mx.sym.load_json(str(G["json"]))
    _, out_shapes, _ = loaded.infer_shape(data=(5, 6, 3))
    assert out_shapes == [(4, 4, 3), (3, 5, 6), (5, 6, 3)]
    mod = mx.mod.Module(mx.sym.Group([norm, jitter]), data_names=["data"], label_names=None)
    mod.bind([("data", (5, 6, 3))], for_training=False)
    mod.init_params()
    mod.forward(mx.io.DataBatch([nd("f32")]), is_train=False)
    t = G["f32"].transpose(2, 0, 1) / 255.0
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), (t - 0.5) / 0.2, rtol=1e-5)
    assert mod.get_outputs()[1].shape == (5, 6, 3)


def test_random_operators_draw_as_mxnet_does():
    mx.random.seed(3)
    x = nd("f32")
    flips = [img.random_flip_left_right(x).asnumpy() for _ in range(40)]
    same = sum(np.array_equal(f, G["f32"]) for f in flips)
    mirrored = sum(np.array_equal(f, G["f32"][:, ::-1]) for f in flips)
    assert same + mirrored == 40 and 8 <= same <= 32  # a fair coin
    factors = [
        img.random_brightness(mx.nd.ones((1, 1, 3)), min_factor=0.5, max_factor=1.5).asnumpy()[
            0, 0, 0
        ]
        for _ in range(30)
    ]
    assert 0.5 <= min(factors) and max(factors) <= 1.5 and np.std(factors) > 0.1
    lit = img.random_lighting(x, alpha_std=0.0)
    close(lit, G["f32"])
    jitter = img.random_color_jitter(x, 0, 0, 0, 0)  # MXNet: an unwritten output
    close(jitter, G["f32"])
    a = img.random_color_jitter(x, 0.3, 0.3, 0.3, 0.1).asnumpy()
    b = img.random_color_jitter(x, 0.3, 0.3, 0.3, 0.1).asnumpy()
    assert a.shape == x.shape and not np.array_equal(a, b)


def test_bad_input_is_named():
    with pytest.raises(MXNetError, match="1 or 3 channels"):
        img.flip_left_right(mx.nd.ones((4, 4, 2)))
    with pytest.raises(MXNetError, match=r"\(height, width, channels\)"):
        img.random_brightness(mx.nd.ones((2, 4, 4, 3)), min_factor=0.5, max_factor=0.5)
    with pytest.raises(MXNetError, match="mean must have 1 or 3 elements"):
        img.normalize(mx.nd.ones((3, 2, 2)), mean=(1, 2))
    with pytest.raises(MXNetError, match="x \\+ width"):
        img.crop(mx.nd.ones((4, 4, 3)), x=2, y=0, width=3, height=2)
    with pytest.raises(MXNetError, match="min_factor 2.0 is greater than max_factor 1.0"):
        img.random_contrast(mx.nd.ones((4, 4, 3)), min_factor=2, max_factor=1)
    with pytest.raises(MXNetError, match="alpha must hold 3 weights"):
        img.adjust_lighting(mx.nd.ones((4, 4, 3)), alpha=(0.1, 0.2))
    with pytest.raises(MXNetError, match="cast it first"):
        img.resize(mx.nd.ones((4, 4, 3), dtype="float16"), size=2)
