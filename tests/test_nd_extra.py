"""mx.nd helpers MXNet's own tests use: legacy operators, fluent methods, in-place views."""

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError


def test_setitem_value_broadcasts_against_indexed_shape():
    dst = mx.nd.zeros((1, 3, 1))
    dst[0, :3, 0] = [1, 2, 3]  # every axis covered, int axes dropped from the value's shape
    assert dst.asnumpy().ravel().tolist() == [1, 2, 3]
    with pytest.raises(ValueError, match="must broadcast"):
        dst[0, :3, 0] = [1, 2]


def test_inplace_reshaping_methods_share_memory():
    x = mx.nd.arange(6).reshape(1, 2, 3)
    flat, expanded, squeezed = (
        x.flatten(inplace=True),
        x.expand_dims(0, inplace=True),
        x.squeeze(axis=0, inplace=True),
    )
    copy = x.flatten()
    x[:] = -1
    for view, shape in ((flat, (1, 6)), (expanded, (1, 1, 2, 3)), (squeezed, (2, 3))):
        assert view.shape == shape and (view.asnumpy() == -1).all()
    assert copy.asnumpy().ravel().tolist() == list(range(6))
    with pytest.raises(MXNetError, match="axis 1 has size 2"):
        x.squeeze(axis=1, inplace=True)


def test_fluent_operator_methods():
    x = mx.nd.array([[-1.5, 2.5], [0.2, -0.7]])
    assert x.floor().asnumpy().tolist() == [[-2, 2], [0, -1]]
    assert x.sign().asnumpy().tolist() == [[-1, 1], [1, -1]]
    parts = x.split_v2(2, axis=1)
    assert [p.shape for p in parts] == [(2, 1), (2, 1)]


def test_moveaxis_and_errors():
    x = mx.nd.zeros((4, 1, 2, 3))
    assert mx.nd.moveaxis(x, [0, 1], [2, 3]).shape == (2, 3, 4, 1)
    assert mx.nd.moveaxis(x, -1, 0).shape == (3, 4, 1, 2)
    with pytest.raises(ValueError, match="out of bounds"):
        mx.nd.moveaxis(x, 4, 0)
    with pytest.raises(ValueError, match="repeated axis"):
        mx.nd.moveaxis(x, [0, 0], [1, 2])


def test_linspace_eye_and_out_arguments():
    got = mx.nd.linspace(0, 1, 5, endpoint=False).asnumpy()
    np.testing.assert_allclose(got, np.linspace(0, 1, 5, endpoint=False), rtol=1e-6)
    assert (mx.nd.eye(3, 4, 1).asnumpy() == np.eye(3, 4, 1)).all()
    out = mx.nd.zeros((2, 2))
    assert mx.nd.ones((2, 2), out=out) is out and out.asnumpy().sum() == 4
    with pytest.raises(ValueError, match="out= has shape"):
        mx.nd.zeros((3,), out=out)


def test_legacy_row_operators():
    a = mx.nd.array(np.arange(12).reshape(3, 4))
    idx = mx.nd.array([3, 0, 1])
    assert mx.nd.choose_element_0index(a, idx).asnumpy().tolist() == [3, 4, 9]
    filled = mx.nd.fill_element_0index(a, mx.nd.array([-1, -2, -3]), idx).asnumpy()
    assert filled[0, 3] == -1 and filled[1, 0] == -2 and filled[2, 1] == -3
    hot = mx.nd.zeros((3, 4))
    mx.nd.onehot_encode(idx, out=hot)
    assert hot.asnumpy().argmax(axis=1).tolist() == [3, 0, 1]


def test_crop_assign_writes_the_box():
    x = mx.nd.ones((2, 3))
    mx.nd._internal._crop_assign_scalar(x, scalar=5, begin=(0, 1), end=(2, 3), out=x)
    assert x.asnumpy().tolist() == [[1, 5, 5], [1, 5, 5]]
    y = mx.nd._internal._crop_assign(x, mx.nd.zeros((1, 3)), begin=(1, 0), end=(2, 3))
    assert y.asnumpy().tolist() == [[1, 5, 5], [0, 0, 0]] and x.asnumpy()[1].sum() == 11


def test_contrib_float_tests_return_data_dtype():
    x = mx.nd.array([np.inf, -np.inf, np.nan, 1.0])
    assert mx.nd.contrib.isinf(x).asnumpy().tolist() == [1, 1, 0, 0]
    assert mx.nd.contrib.isfinite(x).asnumpy().tolist() == [0, 0, 0, 1]
    assert mx.nd.contrib.isnan(x).dtype == np.float32


def test_basic_index_contiguity_matches_numpy():
    probe = mx.nd.NDArray._basic_indexing_slice_is_contiguous
    x = np.zeros((4, 5))
    for key in [(slice(1, 3), slice(None)), (slice(None), slice(1, 3)), (1, slice(None, None, -1))]:
        assert probe(key, x.shape) == x[key].flags.contiguous


def test_test_utils_reduction_helpers():
    from mxmod.test_utils import np_reduce, random_sample

    d = np.arange(24.0).reshape(2, 3, 4)
    assert np_reduce(d, (0, 2), True, np.sum).shape == (1, 3, 1)
    assert np_reduce(d, 1, False, np.max).tolist() == d.max(axis=1).tolist()
    pick = random_sample([1, 2, 3, 4], 3)
    assert len(set(pick)) == 3 and set(pick) <= {1, 2, 3, 4}
    with pytest.raises(ValueError, match="k=5"):
        random_sample([1, 2], 5)


def test_broadcast_like_refuses_empty_axes():
    lhs, rhs = mx.nd.ones((1, 2)), mx.nd.ones((3, 2))
    assert mx.nd.broadcast_like(lhs, rhs, lhs_axes=(0,), rhs_axes=(0,)).shape == (3, 2)
    with pytest.raises(MXNetError, match="empty lhs_axes"):
        mx.nd.broadcast_like(lhs, rhs, lhs_axes=(), rhs_axes=())


def test_cached_op_runs_a_symbol_on_arrays():
    sym = mx.sym.Convolution(kernel=(3, 3), num_filter=2, name="c") + 2
    op = mx.nd.CachedOp(sym)
    data, weight, bias = mx.nd.ones((1, 1, 4, 4)), mx.nd.ones((2, 1, 3, 3)), mx.nd.zeros((2,))
    out = op(data, weight, bias)
    assert out.shape == (1, 2, 2, 2) and (out.asnumpy() == 11).all()
    dst = mx.nd.zeros((1, 2, 2, 2))
    assert op(data, weight, bias, out=dst) is dst and (dst.asnumpy() == 11).all()
    assert (mx.nd.CachedOp(mx.sym.zeros((2, 2)))(None, default_ctx=mx.cpu()).asnumpy() == 0).all()
    with pytest.raises(ValueError, match="3 inputs"):
        op(data)


def test_detach_shares_memory_and_leaves_the_tape():
    x = mx.nd.ones((2,))
    x.attach_grad()
    with mx.autograd.record():
        view = (x * 2).detach()
    assert view._tape is None
    y = mx.nd.ones((2,))
    same = y.detach()
    y[:] = 3
    assert same.asnumpy().tolist() == [3, 3]


def test_unpickles_mxnet_raw_ndarray_state():
    import struct

    # one V2 record: magic, dense stype, shape (3,), context gpu(0), float32 flag, data
    raw = struct.pack("<Iiiq", 0xF993FAC9, 0, 1, 3) + struct.pack("<iii", 2, 0, 0)
    raw += np.array([1.5, -2, 4], dtype=np.float32).tobytes()
    a = mx.nd.zeros((1,))
    a.__setstate__({"handle": bytearray(raw)})
    assert a.asnumpy().tolist() == [1.5, -2, 4] and a.context == mx.cpu()
    with pytest.raises(MXNetError, match="pickled NDArray"):
        a.__setstate__({"handle": raw[:-2]})


def test_setitem_with_new_axes_in_the_key():
    x = mx.nd.zeros((2, 3, 4))
    ref = np.zeros((2, 3, 4), dtype=np.float32)
    value = np.arange(6, dtype=np.float32).reshape(2, 3, 1)  # numpy's x[:, ..., None, 1] shape
    x[:, ..., None, 1] = value
    ref[:, ..., None, 1] = value
    np.testing.assert_array_equal(x.asnumpy(), ref)
    x[None, 1, :2] = 7
    ref[None, 1, :2] = 7
    np.testing.assert_array_equal(x.asnumpy(), ref)


def test_dlpack_round_trips():
    a = mx.nd.array(np.arange(6.0).reshape(2, 3))
    for capsule in (a.to_dlpack_for_read(), mx.nd.to_dlpack_for_write(a)):
        b = mx.nd.from_dlpack(capsule)
        assert isinstance(b, mx.nd.NDArray) and (b.asnumpy() == a.asnumpy()).all()
    assert mx.nd.from_dlpack(np.ones(2)).asnumpy().tolist() == [1, 1]


def test_a_negative_zero_fill_keeps_its_sign():
    # zero fills take the OS's zeroed pages; -0.0 must not become +0.0 on the way
    assert np.signbit(mx.nd.full((3,), -0.0).asnumpy()).all()
    assert not np.signbit(mx.nd.zeros((3,)).asnumpy()).any()
