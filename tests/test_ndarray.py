"""NDArray behaviour; expected values were recorded from real MXNet 1.9.1."""

import pickle
import warnings

import jax
import numpy as np
import pytest

from mxmod import ndarray as nd
from mxmod.base import MXNetError
from mxmod.context import cpu, gpu
from mxmod.test_utils import assert_almost_equal


def np_eq(a, b):
    assert isinstance(a, nd.NDArray)
    np.testing.assert_array_equal(a.asnumpy(), np.asarray(b))


# ---------------------------------------------------------------- creation
def test_array_default_dtypes_follow_mxnet():
    assert nd.array([1, 2]).dtype is np.float32
    assert nd.array(np.arange(3)).dtype is np.float32  # numpy int64 -> float32, as MXNet
    assert nd.array(np.arange(3.0)).dtype is np.float32
    assert nd.array([1, 2], dtype="int32").dtype is np.int32
    src = nd.array([1, 2], dtype=np.int32)
    assert nd.array(src).dtype is np.int32 and nd.array(src, dtype="float16").dtype is np.float16
    assert nd.array(5).shape == () and nd.array([]).shape == (0,)
    assert nd.array(jax.numpy.arange(3)).dtype is np.float32


def test_array_rejects_ragged():
    with pytest.raises(TypeError, match="source_array must be array like object"):
        nd.array([[1, 2], [3]])


def test_array_context_and_copy_semantics():
    src = nd.ones(2, ctx=cpu(1))
    a = nd.array(src)
    assert a.context == cpu(0) and a._data.devices() == {jax.devices()[0]}
    b = nd.array([1.0], ctx=cpu(2))
    assert b.context == cpu(2) and b.ctx == cpu(2) and b._data.devices() == {jax.devices()[2]}


def test_zeros_ones_full_empty():
    z = nd.zeros((2, 3))
    assert z.shape == (2, 3) and z.dtype is np.float32
    np_eq(nd.zeros(3), [0, 0, 0])
    np_eq(nd.ones((2,), dtype="int32"), [1, 1])
    assert nd.ones((2,), dtype=np.int32).dtype is np.int32
    f = nd.full((2,), 3, dtype="int32")
    np_eq(f, [3, 3])
    assert f.dtype is np.int32
    assert nd.empty((2, 2)).shape == (2, 2) and nd.empty(2).dtype is np.float32
    out = nd.zeros(3)
    assert nd.full((3,), 7, out=out) is out
    np_eq(out, [7, 7, 7])
    assert nd.zeros((2,), ctx=cpu(3))._data.devices() == {jax.devices()[3]}
    with pytest.raises(MXNetError, match="csr array is 2-D"):  # sparse: test_sparse_nd.py
        nd.zeros((2,), stype="csr")
    with pytest.raises(TypeError, match=r"ones\(\) got unsupported keyword arguments \['foo'\]"):
        nd.ones((2,), foo=1)


def test_arange():
    np_eq(nd.arange(3, repeat=2), [0, 0, 1, 1, 2, 2])
    np_eq(nd.arange(2, 5), [2, 3, 4])
    np_eq(nd.arange(0, 1, 0.25), [0, 0.25, 0.5, 0.75])
    np_eq(nd.arange(2, 8, 2, repeat=2), [2, 2, 4, 4, 6, 6])
    assert nd.arange(5).dtype is np.float32 and nd.arange(5, dtype="int32").dtype is np.int32
    with pytest.raises(ValueError, match="step must not be 0"):
        nd.arange(0, 3, 0)


def test_gpu_array_fails_with_device_list():
    with pytest.raises(MXNetError, match=r"gpu\(0\) does not exist: available devices are"):
        nd.ones((2,), ctx=gpu(0))


# -------------------------------------------------------------- properties
def test_properties_and_repr():
    a = nd.array([[1, 2]])
    assert repr(a) == "\n[[1. 2.]]\n<NDArray 1x2 @cpu(0)>"
    assert repr(nd.array(5)) == "\n5.0\n<NDArray  @cpu(0)>"
    int_repr = "\n[[1 2]\n [3 4]]\n<NDArray 2x2 @cpu(0)>"
    assert repr(nd.array([[1, 2], [3, 4]], dtype="int32")) == int_repr
    assert (a.shape, a.size, a.ndim, a.stype, a.dtype) == ((1, 2), 2, 2, "default", np.float32)
    assert isinstance(a.asnumpy(), np.ndarray) and a.asnumpy().flags.writeable
    assert np.asarray(a).dtype == np.float32 and np.asarray(a, dtype=np.int32).dtype == np.int32
    assert a.T.shape == (2, 1) and nd.ones((2, 3, 4)).T.shape == (4, 3, 2)
    v = nd.array([1, 2])
    assert v.T is v
    a.wait_to_read()


def test_asscalar():
    s = nd.array([7]).asscalar()
    assert s == 7.0 and type(s) is np.float32
    assert nd.array([3], dtype="int32").asscalar().dtype == np.int32
    with pytest.raises(ValueError, match=r"The current array is not a scalar: shape \(1, 2\)"):
        nd.array([[1, 2]]).asscalar()


def test_bool_len_iter_float():
    assert bool(nd.array([2])) and not bool(nd.array([0])) and not bool(nd.zeros((0,)))
    with pytest.raises(ValueError, match="truth value of an NDArray with multiple elements"):
        bool(nd.ones(2))
    x = nd.array([[1, 2], [3, 4]])
    assert len(x) == 2
    rows = list(x)
    assert len(rows) == 2 and rows[1].shape == (2,)
    np_eq(rows[1], [3, 4])
    with pytest.raises(IndexError, match="0-d NDArray"):
        len(nd.array(3))
    assert float(nd.array([2.5])) == 2.5 and int(nd.array([2.5])) == 2


def test_pickle_roundtrip():
    a = nd.array([[1, 2]], ctx=cpu(1))
    b = pickle.loads(pickle.dumps(a))
    np_eq(b, [[1, 2]])
    assert b.context == cpu(1)


# ------------------------------------------------------------------ copies
def test_copyto_ndarray_and_context():
    src = nd.ones((2, 3))
    dst = nd.zeros((2, 3), dtype="int32")
    assert src.copyto(dst) is dst
    np_eq(dst, np.ones((2, 3)))
    assert dst.dtype is np.int32  # target keeps its dtype, as MXNet
    moved = src.copyto(cpu(1))
    assert moved.context == cpu(1) and moved._data.devices() == {jax.devices()[1]}
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert src.copyto(src) is src
    assert "copy an array to itself" in str(w[0].message)


def test_copyto_errors():
    msg = r"source shape \(2, 3\) does not match target shape \(3, 2\)"
    with pytest.raises(MXNetError, match=msg):
        nd.ones((2, 3)).copyto(nd.ones((3, 2)))
    with pytest.raises(TypeError, match="copyto does not support type <class 'str'>"):
        nd.ones((2, 3)).copyto("cpu")


def test_copy_as_in_context_astype():
    a = nd.array([1.5, 2.5])
    c = a.copy()
    c[:] = 0
    np_eq(a, [1.5, 2.5])
    assert a.as_in_context(cpu(0)) is a
    b = a.as_in_context(cpu(2))
    assert b.context == cpu(2) and b is not a
    assert a.astype("float32", copy=False) is a and a.astype("float32") is not a
    np_eq(a.astype("int32"), [1, 2])
    assert a.astype(np.float16).dtype is np.float16
    assert a.tostype("default").stype == "default"
    with pytest.raises(ValueError, match="CSR, the NDArray should be 2 Dimensional"):
        a.tostype("csr")  # sparse casts: test_sparse_nd.py
    with pytest.raises(TypeError, match="'foo' is not a dtype|not understood"):
        a.astype("foo")


# ----------------------------------------------------------------- reshape
@pytest.mark.parametrize(
    "codes,kw,expected",
    [
        ((0, -1), {}, (2, 12)),
        ((-1, 0), {}, (8, 3)),
        ((4, 0, -1), {}, (4, 3, 2)),
        ((-2,), {}, (2, 3, 4)),
        ((-3, 4), {}, (6, 4)),
        ((0, -4, 3, 1, -2), {}, (2, 3, 1, 4)),
        ((-4, 1, 2, -2), {}, (1, 2, 3, 4)),
        ((-4, -1, 1, 0, 0), {}, (2, 1, 3, 4)),
        ((-2, 1, 1), {}, (2, 3, 4, 1, 1)),
        ((-1, 0), {"reverse": True}, (6, 4)),
        ((24,), {}, (24,)),
    ],
)
def test_reshape_codes(codes, kw, expected):
    x = nd.arange(24).reshape((2, 3, 4))
    assert x.reshape(codes, **kw).shape == expected


def test_reshape_call_forms_and_view():
    a = nd.arange(6)
    assert a.reshape(2, 3).shape == (2, 3) and a.reshape(shape=(3, 2)).shape == (3, 2)
    y = a.reshape((2, 3))
    y[:] = 1  # reshape shares memory in MXNet
    np_eq(a, np.ones(6))
    assert nd.reshape(a, (3, 2)).shape == (3, 2)


@pytest.mark.parametrize(
    "codes,exc,msg",
    [
        ((5, -1), ValueError, r"Cannot reshape array of size 24 into shape \(5, -1\)"),
        ((0, 0, 0, 0), MXNetError, "code 0 copies a dimension that does not exist"),
        ((-1, -1), MXNetError, "One and only one dim can be inferred"),
        ((-3, -3), MXNetError, "code -3 merges two dimensions"),
        ((-5,), MXNetError, "must be >= -1, while received -5"),
        ((-4, -1, -1, 12), MXNetError, "Split dims cannot both be -1"),
        ((-4, 4, -1, 12), MXNetError, "Split dims 4, 0 do not divide original dim 2"),
    ],
)
def test_reshape_errors(codes, exc, msg):
    with pytest.raises(exc, match=msg):
        nd.arange(24).reshape((2, 3, 4)).reshape(codes)


def test_reshape_bad_keyword():
    with pytest.raises(TypeError, match="unknown keywords in reshape: foo"):
        nd.arange(6).reshape((2, -1), foo=1)


# ---------------------------------------------------------------- indexing
def test_getitem_shapes():
    x = nd.arange(24).reshape((2, 3, 4))
    assert x[1].shape == (3, 4) and x[1:2].shape == (1, 3, 4) and x[1, 2].shape == (4,)
    assert x[1, 2, 3].shape == (1,) and x[1, 2, 3].asscalar() == 23  # MXNet 1.x: (1,)
    assert x[-1].shape == (3, 4) and x[5:9].shape == (0, 3, 4) and x[None].shape == (1, 2, 3, 4)
    assert x[..., 1].shape == (2, 3) and x[:, ::2].shape == (2, 2, 4)
    np_eq(nd.arange(4)[::-1], [3, 2, 1, 0])
    np_eq(nd.arange(4)[2::-2], [2, 0])
    np_eq(x[nd.array([1, 0])][:, 0, 0], [12, 0])
    np_eq(x[[0, 1], 0, 0], [0, 12])


def test_getitem_errors():
    x = nd.zeros((2, 3))
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 2"):
        x[5]
    with pytest.raises(IndexError, match=r"too many indices \(3\) for array with 2 dimensions"):
        x[0, 0, 0]
    with pytest.raises(ValueError, match="does not support slicing with key 1.5"):
        x[1.5]


def test_contiguous_slices_are_views_others_copies():
    x = nd.arange(6).reshape((3, 2))
    v = x[1:3]
    v[:] = 0
    np_eq(x, [[0, 1], [0, 0], [0, 0]])
    x[:] = 7
    np_eq(v, [[7, 7], [7, 7]])  # the view reads the parent's current values
    x[2][1] = 100
    assert x[2, 1].asscalar() == 100
    x[1:2, 0][:] = -1
    assert x[1, 0].asscalar() == -1
    c = x[::2]
    c[:] = 5
    assert x[0, 0].asscalar() == 7  # strided: copy
    r = x[1:3].reshape((4,))
    r[:] = 9
    np_eq(x, [[7, 7], [9, 9], [9, 9]])
    rows = list(x)
    rows[0] += 1
    np_eq(x[0], [8, 8])


def test_setitem_forms():
    x = nd.zeros((3, 2))
    x[:] = 1
    x[1] = 5
    np_eq(x, [[1, 1], [5, 5], [1, 1]])
    x[0:2] = np.array([[7, 8]])
    x[2, 1] = 9
    np_eq(x, [[7, 8], [7, 8], [1, 9]])
    x[:] = nd.array([1, 2])
    x[:, 1] = 3
    np_eq(x, [[1, 3], [1, 3], [1, 3]])
    x[nd.array([0, 2])] = 0
    np_eq(x, [[0, 0], [1, 3], [0, 0]])
    x[1] = np.ones((1, 2)) * 4  # leading 1s of the value are dropped
    np_eq(x[1], [4, 4])
    x[:] = nd.ones((3, 2), ctx=cpu(1))
    assert x._data.devices() == {jax.devices()[0]}
    r = nd.arange(4)
    r[::-1] = nd.array([1, 2, 3, 4])
    np_eq(r, [4, 3, 2, 1])
    i = nd.array([1, 2], dtype="int32")
    i[:] = 2.7
    np_eq(i, [2, 2])
    assert i.dtype is np.int32


def test_setitem_errors():
    x = nd.zeros((3, 2))
    msg = r"cannot assign a value of shape \(4, 2\) .* of shape \(3, 2\)"
    with pytest.raises(ValueError, match=msg):
        x[:] = np.ones((4, 2))
    with pytest.raises(TypeError, match="cannot assign"):
        x[:] = "abc"


# -------------------------------------------------------------- arithmetic
def test_arithmetic_and_reflected():
    a = nd.array([1, 2])
    np_eq(a + 1, [2, 3])
    np_eq(1 - a, [0, -1])
    np_eq(a * a, [1, 4])
    np_eq(2 / a, [2, 1])
    np_eq(a % 2, [1, 0])
    np_eq(2**a, [2, 4])
    np_eq(a**2, [1, 4])
    np_eq(-a, [-1, -2])
    np_eq(abs(nd.array([-1])), [1])
    np_eq(nd.array([[1, 2]]) + nd.array([[1], [2]]), [[2, 3], [3, 4]])
    np_eq(a + True, [2, 3])
    np_eq(np.float32(2) * a, [2, 4])  # numpy scalars defer to NDArray
    np_eq(a + np.float64(2), [3, 4])


def test_integer_arithmetic_matches_mxnet():
    i = nd.array([-7, 7], dtype="int32")
    np_eq(i / 2, [-3, 3])
    np_eq(i % 3, [2, 1])
    np_eq(i % nd.array([3, -3], dtype="int32"), [2, -2])
    np_eq(10 % nd.array([-7, 7]), [-4, 3])
    np_eq(nd.array([1, 2], dtype="int32") * 1.5, [1, 2])  # scalar cast to int first
    np_eq(2**i, [0, 128])
    np_eq(nd.array([1, 2], dtype="uint8") - 3, [254, 255])
    assert (i / 2).dtype is np.int32


def test_comparisons_return_same_dtype():
    a = nd.array([2, 3])
    np_eq(a != 2, [0, 1])
    np_eq(2 > a, [0, 0])
    np_eq(a >= nd.array([3, 3]), [0, 1])
    np_eq(a == 3, [0, 1])
    i = nd.array([1, 2], dtype="int32")
    assert (i < 2).dtype is np.int32 and (a == a).dtype is np.float32
    assert (a == "x") is False and (a != None) is True  # noqa: E711


def test_inplace_mutates_handle():
    a = nd.array([1, 2])
    alias = a
    a += 1
    a *= 3
    a -= 1
    a /= 2
    assert alias is a
    np_eq(alias, [2.5, 4])
    with pytest.raises(MXNetError, match=r"in-place \+= would change shape \(2,\) to \(2, 2\)"):
        a += nd.ones((2, 2))


def test_arithmetic_errors():
    a = nd.array([1, 2])
    with pytest.raises(MXNetError, match=r"dtypes differ \(float32 vs int32\).*astype"):
        a + nd.array([1, 2], dtype="int32")
    msg = r"could not be broadcast together with shapes \(2,\) \(3,\)"
    with pytest.raises(MXNetError, match=msg):
        a + nd.array([1, 2, 3])
    with pytest.raises(TypeError, match="numpy.ndarray'> not supported"):
        a + np.ones(2)
    with pytest.raises(TypeError, match="numpy.ndarray'> not supported"):
        np.ones(2) + a
    with pytest.raises(TypeError, match="list'> not supported"):
        a * [1, 2]


def test_copies_never_share_a_buffer():
    """Copies must survive jit buffer donation of their source (MXNet copies are real)."""
    a = nd.array([1, 2, 3])
    targets = nd.zeros(3)
    a.copyto(targets)
    setto = nd.zeros(3)
    setto[:] = a
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # cpu(8) shares device 0 with cpu(0) (8 devices)
        wrapped = a.copyto(cpu(8))
    copies = [
        a.copy(),
        a.copyto(cpu(0)),
        wrapped,
        a.astype("float32"),
        nd.array(a),
        nd.broadcast_to(a, (3,)),
        nd.transpose(a),
        targets,
        setto,
        nd.slice_axis(a, 0, 0, None),
        nd.clip(a, 0, 10),
    ]
    jax.jit(lambda x: x + 1, donate_argnums=0)(a._data)  # deletes a's buffer
    for c in copies:
        np_eq(c, [1, 2, 3])


def test_mixed_contexts_follow_left_operand():
    out = nd.ones(2, ctx=cpu(1)) + nd.ones(2, ctx=cpu(0))
    assert out.context == cpu(1) and out._data.devices() == {jax.devices()[1]}
    np_eq(out, [2, 2])


# ----------------------------------------------------------- view plumbing
def test_set_data_replaces_and_view_checks_size():
    a = nd.zeros(4)
    a._set_data(jax.numpy.ones(4))
    np_eq(a, np.ones(4))
    v = a[1:3]
    v._set_data(jax.numpy.full((2,), 5.0))
    np_eq(a, [1, 5, 5, 1])
    msg = r"cannot write an array of shape \(3,\) into a view of shape \(2,\)"
    with pytest.raises(MXNetError, match=msg):
        v._set_data(jax.numpy.ones(3))
    on1 = nd.zeros(2, ctx=cpu(1))
    on1._set_data(jax.numpy.ones(2))  # uncommitted data goes to the array's device
    assert on1._data.devices() == {jax.devices()[1]}
    assert nd.NDArray(jax.numpy.ones(2), cpu(2))._data.devices() == {jax.devices()[2]}
    assert nd.NDArray(np.ones(2), cpu(3))._data.devices() == {jax.devices()[3]}
    f = nd.from_jax(jax.numpy.arange(3))
    assert f.dtype is np.int32 and f.context == cpu(0)
    with pytest.raises(TypeError, match="from_jax expects a jax.Array"):
        nd.from_jax(np.ones(2))


# --------------------------------------------------------------- functions
def test_reductions_follow_mxnet_shapes():
    x = nd.array([[1, 3], [4, 2]])
    np_eq(nd.sum(x), [10])  # full reductions give shape (1,)
    assert nd.sum(x, axis=(0, 1), keepdims=True).shape == (1, 1)
    np_eq(nd.sum(x, axis=0, exclude=True), [4, 6])
    np_eq(x.sum(axis=1), [4, 6])
    np_eq(x.mean(axis=0), [2.5, 2.5])
    np_eq(nd.mean(nd.array([1, 2], dtype="int32")), [1])  # integer mean stays int
    np_eq(x.max(axis=1, keepdims=True), [[3], [4]])
    np_eq(nd.min(x), [1])
    np_eq(nd.max(x, axis=-1), [3, 4])
    np_eq(nd.prod(x), [24])
    with pytest.raises(MXNetError, match="axis 2 is out of range for an array with 2 dimensions"):
        nd.sum(x, axis=2)


def test_argmax_argmin():
    x = nd.array([[1, 3], [4, 2]])
    np_eq(nd.argmax(x, axis=1), [1, 0])
    assert nd.argmax(x, axis=1).dtype is np.float32
    np_eq(x.argmax(), [2])
    np_eq(nd.argmin(x, axis=0), [0, 1])
    i = nd.array([[1, 5], [3, 2]], dtype="int32")
    assert nd.argmax(i, axis=1).dtype is np.int32
    assert nd.argmax(x, axis=1, keepdims=True).shape == (2, 1)


def test_norm():
    np_eq(nd.norm(nd.array([3, 4])), [5])
    np_eq(nd.norm(nd.array([[3, 4], [0, 0]]), axis=1), [5, 0])
    np_eq(nd.norm(nd.array([[3, 4], [0, 0]]), ord=1), [7])
    np_eq(nd.array([[1, 2]]).norm(), [np.sqrt(5).astype(np.float32)])
    with pytest.raises(MXNetError, match="norm only supports ord=1 and ord=2, got ord=3"):
        nd.norm(nd.array([1]), ord=3)


def test_pick():
    x = nd.array([[1, 2], [3, 4]])
    np_eq(nd.pick(x, nd.array([0, 1])), [1, 4])
    np_eq(nd.pick(x, nd.array([5, -1])), [2, 3])  # 'clip' mode, as MXNet
    np_eq(nd.pick(x, nd.array([2, -1]), mode="wrap"), [1, 4])
    np_eq(nd.pick(x, nd.array([1, 0]), axis=0), [3, 2])
    np_eq(nd.pick(x, nd.array([[0], [1]]), axis=1, keepdims=True), [[1], [4]])
    np_eq(x.pick(nd.array([1, 1])), [2, 4])
    msg = r"pick: index shape \(3,\) does not match data shape \(2, 2\)"
    with pytest.raises(MXNetError, match=msg):
        nd.pick(x, nd.array([0, 1, 0]))


def test_one_hot_softmax_where_clip():
    np_eq(nd.one_hot(nd.array([0, 2]), 3), [[1, 0, 0], [0, 0, 1]])
    oh = nd.one_hot(nd.array([0, 1]), 3, on_value=5, off_value=-1, dtype="int32")
    np_eq(oh, [[5, -1, -1], [-1, 5, -1]])
    assert oh.dtype is np.int32
    tight = {"rtol": 1e-6, "atol": 1e-7}  # MXNet's float32 defaults (1e-4, 1e-3) are loose
    assert_almost_equal(nd.softmax(nd.array([[1, 2]])), [[0.26894143, 0.7310586]], **tight)
    assert_almost_equal(
        nd.softmax(nd.array([[1, 2], [3, 5]]), axis=0),
        [[0.11920292, 0.04742587], [0.880797, 0.95257413]],
        **tight,
    )
    assert_almost_equal(
        nd.softmax(nd.array([[1, 2]]), temperature=2.0), [[0.37754068, 0.62245935]], **tight
    )
    assert_almost_equal(nd.log_softmax(nd.array([[0, 0]])), [[-0.6931472] * 2], **tight)
    with pytest.raises(MXNetError, match="only support floating point types, not int32"):
        nd.softmax(nd.array([1], dtype="int32"))
    with pytest.raises(MXNetError, match="needs the length input as an NDArray, got NoneType"):
        nd.softmax(nd.array([1]), use_length=True)
    np_eq(nd.where(nd.array([1, 0]), nd.array([1, 2]), nd.array([10, 20])), [1, 20])
    np_eq(nd.where(nd.array([1, 0]), nd.ones((2, 2)), nd.zeros((2, 2))), [[1, 1], [0, 0]])
    msg = r"where: condition shape \(3,\) must equal x shape \(2, 2\)"
    with pytest.raises(MXNetError, match=msg):
        nd.where(nd.array([1, 0, 1]), nd.ones((2, 2)), nd.zeros((2, 2)))
    np_eq(nd.clip(nd.array([1, 2]), 1.5, 3), [1.5, 2])
    np_eq(nd.array([[1, 5]], dtype="int32").clip(2, 4), [[2, 4]])


def test_shape_functions():
    m = nd.arange(6).reshape((2, 3))
    np_eq(nd.slice_axis(m, axis=1, begin=1, end=None), [[1, 2], [4, 5]])
    np_eq(nd.slice_axis(m, axis=1, begin=-2, end=-1), [[1], [4]])
    msg = r"slice_axis: invalid begin=0, end=5 for axis 0 of size 2"
    with pytest.raises(MXNetError, match=msg):
        nd.slice_axis(m, axis=0, begin=0, end=5)
    assert nd.transpose(nd.ones((2, 3, 4)), axes=(1, 0, 2)).shape == (3, 2, 4)
    assert m.transpose().shape == (3, 2)
    with pytest.raises(MXNetError, match=r"axes \(0, 1\) must list all 3 axes"):
        nd.transpose(nd.ones((2, 3, 4)), axes=(0, 1))
    assert nd.flatten(nd.ones((2, 3, 4))).shape == (2, 12)
    assert nd.flatten(nd.ones(2)).shape == (2, 1)
    assert nd.expand_dims(m, axis=-1).shape == (2, 3, 1) and m.expand_dims(0).shape == (1, 2, 3)
    with pytest.raises(MXNetError, match=r"axis must be in the range \[-3, 2\] \(3 provided\)"):
        nd.expand_dims(m, axis=3)
    np_eq(nd.broadcast_to(nd.ones((1, 3)), shape=(2, 0)), np.ones((2, 3)))
    with pytest.raises(MXNetError, match=r"cannot be broadcasted from \(2, 3\) to \(4, 3\)"):
        nd.broadcast_to(m, shape=(4, 3))


def test_dot():
    np_eq(nd.dot(nd.ones((2, 3)), nd.ones((3, 2))), np.full((2, 2), 3))
    np_eq(nd.dot(nd.ones((3, 2)), nd.ones((3, 2)), transpose_a=True), np.full((2, 2), 3))
    np_eq(nd.dot(nd.ones((2, 3)), nd.ones((2, 3)), transpose_b=True), np.full((2, 2), 3))
    assert nd.dot(nd.ones((2, 3, 4)), nd.ones((4, 5))).shape == (2, 3, 5)
    np_eq(nd.dot(nd.ones(3), nd.ones(3)), [3])
    with pytest.raises(MXNetError, match=r"dot shape error: \(2, 3\) X \(2, 3\)"):
        nd.dot(nd.ones((2, 3)), nd.ones((2, 3)))


def test_concat_concatenate_stack():
    assert nd.concat(nd.ones((2, 2)), nd.zeros((2, 3)), dim=1).shape == (2, 5)
    assert nd.concat(nd.ones((2, 2)), nd.ones((3, 2)), dim=0).shape == (5, 2)
    out = nd.concat(nd.ones(2, ctx=cpu(1)), nd.ones(2, ctx=cpu(0)), dim=0)
    assert out.context == cpu(1) and out.shape == (4,)
    np_eq(nd.concatenate([nd.array([1, 2]), nd.array([3])]), [1, 2, 3])
    np_eq(nd.stack(nd.array([1, 2]), nd.array([3, 4]), axis=1), [[1, 3], [2, 4]])
    assert nd.stack(nd.ones(2), nd.ones(2), axis=-1).shape == (2, 2)
    with pytest.raises(
        MXNetError,
        match=r"concat: input 1 has shape \(3, 2\), incompatible with "
        r"input 0 of shape \(2, 2\) along axis 1",
    ):
        nd.concat(nd.ones((2, 2)), nd.ones((3, 2)), dim=1)
    with pytest.raises(MXNetError, match=r"stack: input 1 has shape \(3,\)"):
        nd.stack(nd.ones(2), nd.ones(3))
    with pytest.raises(MXNetError, match="concat needs at least one input"):
        nd.concat(dim=0)
    with pytest.raises(MXNetError, match="input 1 has dtype int32, input 0 has float32"):
        nd.concat(nd.ones(2), nd.ones(2, dtype="int32"), dim=0)


def test_elementwise_functions_keep_dtype():
    i = nd.array([1, 2], dtype="int32")
    np_eq(nd.log(i), [0, 0])  # MXNet computes in the input dtype
    np_eq(nd.sqrt(i), [1, 1])
    assert nd.exp(i).dtype is np.int32
    assert_almost_equal(nd.array([[1, 2]]).exp(), [[np.e, np.e**2]], rtol=1e-6, atol=0)
    np_eq(nd.square(nd.array([1, 3])), [1, 9])
    np_eq(nd.abs(nd.array([-1, 2])), [1, 2])
    np_eq(nd.maximum(nd.array([1, 2]), 1.5), [1.5, 2])
    np_eq(nd.maximum(1.5, nd.array([1, 2])), [1.5, 2])
    np_eq(nd.minimum(nd.array([1, 2]), nd.array([0, 5])), [0, 2])
    with pytest.raises(MXNetError, match="dtypes differ"):
        nd.maximum(i, nd.ones(2))
    z = nd.zeros_like(nd.ones((2,), dtype="int32", ctx=cpu(3)))
    assert z.dtype is np.int32 and z.context == cpu(3) and z._data.devices() == {jax.devices()[3]}
    np_eq(nd.ones_like(nd.zeros(2)), [1, 1])
    with pytest.raises(TypeError, match="log: data must be an NDArray"):
        nd.log(np.ones(2))


def test_waitall_returns():
    a = nd.ones((4, 4)) * 2
    assert nd.waitall() is None
    np_eq(a, np.full((4, 4), 2))
