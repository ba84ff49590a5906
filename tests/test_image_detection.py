"""mx.image.ImageDetIter and the detection augmenters (mxnet.image.detection).

Crop/pad proposals draw from Python's ``random`` in MXNet's order; a side-by-side run
against MXNet 1.9.1 (seeds 0..5, DetRandomCropAug, DetRandomPadAug and a full
CreateDetAugmenter list) gave identical shapes and labels. Here we check the behaviour
itself: geometry of boxes, label layout and padding, shapes and errors.
"""

import random

import cv2
import numpy as np
import pytest

import mxmod as mx

OBJS = [
    [[1, 0.1, 0.2, 0.5, 0.6]],
    [[3, 0.4, 0.3, 0.9, 0.95], [2, 0.05, 0.5, 0.2, 0.9]],
    [[0, 0.2, 0.2, 0.8, 0.8], [4, 0.1, 0.1, 0.3, 0.3], [5, 0.6, 0.6, 0.7, 0.9]],
    [[2, 0.3, 0.1, 0.6, 0.4]],
    [[1, 0.0, 0.0, 1.0, 1.0]],
]


@pytest.fixture()
def det_list(tmp_path):
    """Five images with 1-3 objects each, as ``[2, 5, objects..., path]`` items."""
    rng = np.random.RandomState(0)
    items = []
    for k, objs in enumerate(OBJS):
        path = str(tmp_path / f"im{k}.png")
        cv2.imwrite(path, rng.randint(0, 256, (40 + 4 * k, 50, 3)).astype(np.uint8))
        items.append([2, 5] + [v for o in objs for v in o] + [path])
    return items


def test_label_shape_padding_and_plain_resize(det_list):
    it = mx.image.ImageDetIter(2, (3, 16, 16), imglist=det_list, path_root="")
    assert it.label_shape == (3, 5)
    assert it.provide_label[0][1] == (2, 3, 5)
    batches = list(it)
    assert len(batches) == 3 and batches[-1].pad == 1
    labels = np.concatenate([b.label[0].asnumpy() for b in batches])
    for k, objs in enumerate(OBJS):  # no random augmenter: labels go through unchanged
        np.testing.assert_allclose(labels[k, : len(objs)], objs, rtol=1e-6)
        assert (labels[k, len(objs) :] == -1).all()
    # data: a forced (bicubic) resize of the RGB image, CHW float32
    src = cv2.imread(det_list[1][-1])[:, :, ::-1]
    want = cv2.resize(src, (16, 16), interpolation=cv2.INTER_CUBIC).transpose(2, 0, 1)
    got = batches[0].data[0].asnumpy()[1]
    assert got.dtype == np.float32 and np.abs(got - want).max() <= 1


def test_path_imglist_and_last_batch_handle(det_list, tmp_path):
    lst = tmp_path / "det.lst"
    lst.write_text(
        "".join("\t".join(str(v) for v in [k] + item) + "\n" for k, item in enumerate(det_list))
    )
    counts = {}
    for handle in ("pad", "discard", "roll_over"):
        it = mx.image.ImageDetIter(
            2, (3, 8, 8), path_imglist=str(lst), path_root="", last_batch_handle=handle
        )
        counts[handle] = sum(1 for _ in it)
    assert counts == {"pad": 3, "discard": 2, "roll_over": 2}


def test_flip_mirrors_boxes():
    img = np.arange(2 * 4 * 3, dtype=np.uint8).reshape(2, 4, 3)
    label = np.array([[1, 0.1, 0.2, 0.4, 0.6]], np.float32)
    out, lab = mx.image.DetHorizontalFlipAug(1.0)(mx.nd.array(img, dtype="uint8"), label.copy())
    np.testing.assert_array_equal(out.asnumpy(), img[:, ::-1])
    np.testing.assert_allclose(lab, [[1, 0.6, 0.2, 0.9, 0.6]], rtol=1e-6)


@pytest.mark.parametrize("seed", range(5))
def test_random_crop_keeps_objects_and_rescales_boxes(seed):
    img = np.random.RandomState(seed).randint(0, 255, (120, 160, 3)).astype(np.uint8)
    label = np.array([[1, 0.1, 0.2, 0.5, 0.6], [3, 0.4, 0.3, 0.9, 0.95]], np.float32)
    aug = mx.image.DetRandomCropAug(min_object_covered=0.3, area_range=(0.2, 1.0))
    random.seed(seed)
    crop = aug._random_crop_proposal(label, 120, 160)
    random.seed(seed)
    out, lab = aug(img, label.copy())
    if not crop:
        assert out.shape == img.shape and np.array_equal(lab, label)
        return
    x, y, w, h, _ = crop
    np.testing.assert_array_equal(out, img[y : y + h, x : x + w])
    assert ((lab[:, 1:5] >= 0) & (lab[:, 1:5] <= 1)).all()
    assert (lab[:, 3] > lab[:, 1]).all() and (lab[:, 4] > lab[:, 2]).all()
    # each kept box maps back inside its original box (crop coordinates -> image)
    for row in lab:
        orig = label[label[:, 0] == row[0]][0]
        back_x = (row[[1, 3]] * w + x) / 160
        back_y = (row[[2, 4]] * h + y) / 120
        assert back_x[0] >= orig[1] - 1e-5 and back_x[1] <= orig[3] + 1e-5
        assert back_y[0] >= orig[2] - 1e-5 and back_y[1] <= orig[4] + 1e-5


def test_random_pad_places_image_on_canvas():
    img = np.full((30, 40, 3), 200, np.uint8)
    label = np.array([[1, 0.0, 0.0, 1.0, 1.0]], np.float32)
    random.seed(3)
    out, lab = mx.image.DetRandomPadAug(area_range=(1.5, 3.0), pad_val=(1, 2, 3))(img, label)
    assert out.shape[0] > 30 and out.shape[1] > 40
    x0, y0 = round(lab[0, 1] * out.shape[1]), round(lab[0, 2] * out.shape[0])
    np.testing.assert_array_equal(out[y0 : y0 + 30, x0 : x0 + 40], img)
    assert (out[out[:, :, 0] != 200] == [1, 2, 3]).all()


def test_all_augmenters_run_and_keep_layout(det_list):
    random.seed(0)
    np.random.seed(0)
    it = mx.image.ImageDetIter(
        2,
        (3, 32, 32),
        imglist=det_list,
        path_root="",
        resize=48,
        rand_crop=1,
        rand_pad=1,
        rand_gray=0.5,
        rand_mirror=True,
        mean=True,
        std=True,
        brightness=0.1,
        contrast=0.1,
        saturation=0.1,
        pca_noise=0.1,
        hue=0.1,
        inter_method=10,
    )
    for batch in it:
        lab = batch.label[0].asnumpy()
        assert batch.data[0].shape == (2, 3, 32, 32) and lab.shape == (2, 3, 5)
        real = lab[lab[:, :, 0] >= 0]
        assert ((real[:, 1:5] >= 0) & (real[:, 1:5] <= 1 + 1e-6)).all()


def test_sync_label_shape_and_reshape(det_list):
    small = mx.image.ImageDetIter(1, (3, 8, 8), imglist=det_list[:1], path_root="")
    big = mx.image.ImageDetIter(1, (3, 8, 8), imglist=det_list, path_root="")
    assert small.label_shape == (1, 5) and big.label_shape == (3, 5)
    assert big.sync_label_shape(small) is small
    assert small.label_shape == (3, 5) and small.provide_label[0][1] == (1, 3, 5)
    assert (small.next().label[0].asnumpy()[0, 1:] == -1).all()
    with pytest.raises(ValueError, match="reduce label count from 3 to 2"):
        small.reshape(label_shape=(2, 5))
    with pytest.raises(ValueError, match="object width inconsistent: 5 vs 6"):
        small.reshape(label_shape=(3, 6))
    big.reshape(data_shape=(3, 10, 12))  # the augmenters keep their size, as in MXNet
    assert big.provide_data[0][1] == (1, 3, 10, 12) and big.data_shape == (3, 10, 12)
    with pytest.raises(TypeError, match="needs an ImageDetIter"):
        big.sync_label_shape(mx.image.ImageIter(1, (3, 8, 8), imglist=[[0, det_list[0][-1]]]))


def test_label_errors(det_list):
    it = mx.image.ImageDetIter(1, (3, 8, 8), imglist=det_list, path_root="")
    with pytest.raises(RuntimeError, match="Label shape is invalid"):
        it._parse_label(np.array([2, 5, 1, 0.1]))
    with pytest.raises(RuntimeError, match="inconsistent with annotation width 5"):
        it._parse_label(np.array([2, 5, 1, 0.1, 0.1, 0.2, 0.2, 7]))
    with pytest.raises(RuntimeError, match="no valid label"):
        it._parse_label(np.array([2, 5, 1, 0.5, 0.1, 0.2, 0.2]))
    with pytest.raises(TypeError, match="needs an mx.image.Augmenter"):
        mx.image.DetBorrowAug(lambda x: x)
    with pytest.raises(ValueError, match="DetAugmenters only"):
        mx.image.DetRandomSelectAug([mx.image.CastAug()])
    with pytest.raises(NotImplementedError, match="draw_next"):
        it.draw_next()


def test_dumps_and_module_aliases():
    aug = mx.image.DetBorrowAug(mx.image.CastAug())
    assert aug.dumps()[0] == "detborrowaug" and "castaug" in aug.dumps()[1]
    sel = mx.image.CreateMultiRandCropAugmenter(min_object_covered=[0.1, 0.5], skip_prob=0.2)
    assert len(sel.aug_list) == 2 and sel.skip_prob == 0.2
    assert mx.image.det.ImageDetIter is mx.image.detection.ImageDetIter is mx.image.ImageDetIter
    assert mx.img.image.imread is mx.image.imread
