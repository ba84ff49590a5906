"""A newcomer's commonest Module mistake: the iterator's data/label names differ from the
symbol's. The error names both sides and a fix; these tests apply the printed fix, word for
word, and train (Module and BucketingModule, through ``fit`` and through ``bind``)."""

import re

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError


def _data():
    rng = np.random.RandomState(0)
    x = rng.rand(200, 6).astype(np.float32)
    y = (x[:, :3].sum(1) > x[:, 3:].sum(1)).astype(np.float32)
    return x, y


def _net(data="data", label=None):
    fc = mx.sym.FullyConnected(mx.sym.Variable(data), num_hidden=2, name="fc")
    if label is None:
        return mx.sym.SoftmaxOutput(fc, name="softmax")
    return mx.sym.SoftmaxOutput(fc, label=mx.sym.Variable(label), name="softmax")


def _train(mod, it):
    mod.fit(it, num_epoch=8, optimizer_params={"learning_rate": 0.5})
    it.reset()
    ((name, acc),) = mod.score(it, "acc")
    assert acc > 0.8, "the module trained after following the advice"


def _error_of(mod, it):
    with pytest.raises((MXNetError, ValueError)) as err:
        mod.fit(it, num_epoch=1)
    return str(err.value)


def _advice(msg, pattern):
    """The value the printed fix names, e.g. the name in ``label_name='softmax_label'``."""
    found = re.findall(pattern, msg)
    assert found, f"the error gives no {pattern!r} fix: {msg}"
    return found[0]


def test_iterator_label_named_label_fix_renames_the_iterators_label():
    x, y = _data()
    it = mx.io.NDArrayIter(x, y, batch_size=20, label_name="label")
    with pytest.warns(UserWarning):
        msg = _error_of(mx.mod.Module(_net()), it)
    assert "'label'" in msg and "'softmax_label'" in msg  # both sides named
    label_name = _advice(msg, r"NDArrayIter\(\.\.\., label_name='(\w+)'\)")
    _train(mx.mod.Module(_net()), mx.io.NDArrayIter(x, y, batch_size=20, label_name=label_name))


def test_iterator_label_named_label_fix_renames_the_symbols_label():
    x, y = _data()
    it = mx.io.NDArrayIter(x, y, batch_size=20, label_name="label")
    with pytest.warns(UserWarning):
        msg = _error_of(mx.mod.Module(_net()), it)
    label_var = _advice(msg, r"label=mx\.sym\.Variable\('(\w+)'\)")
    label_names = _advice(msg, r"label_names=\['(\w+)'\]")
    _train(mx.mod.Module(_net(label=label_var), label_names=[label_names]), it)


def test_the_old_advice_label_names_none_still_gets_the_working_fix():
    """The old message said ``label_names=None``; doing so now prints the same real fix."""
    x, y = _data()
    it = mx.io.NDArrayIter(x, y, batch_size=20, label_name="label")
    msg = _error_of(mx.mod.Module(_net(), label_names=None), it)
    assert "label_name='softmax_label'" in msg and "label_names=['label']" in msg


def test_iterator_data_named_x_fix_renames_the_iterators_data():
    x, y = _data()
    it = mx.io.NDArrayIter({"x": x}, y, batch_size=20)
    msg = _error_of(mx.mod.Module(_net()), it)
    assert "'x'" in msg and "'data'" in msg
    data_name = _advice(msg, r"NDArrayIter\(\.\.\., data_name='(\w+)'\)")
    _train(mx.mod.Module(_net()), mx.io.NDArrayIter(x, y, batch_size=20, data_name=data_name))
    dict_key = _advice(msg, r"NDArrayIter\(\{'(\w+)': x\}\)")
    _train(mx.mod.Module(_net()), mx.io.NDArrayIter({dict_key: x}, y, batch_size=20))


def test_iterator_data_named_x_fix_renames_the_symbols_data():
    x, y = _data()
    it = mx.io.NDArrayIter({"x": x}, y, batch_size=20)
    msg = _error_of(mx.mod.Module(_net()), it)
    var = _advice(msg, r"mx\.sym\.Variable\('(\w+)'\)")
    data_names = _advice(msg, r"data_names=\['(\w+)'\]")
    _train(mx.mod.Module(_net(data=var), data_names=[data_names]), it)


def test_bind_with_label_shapes_named_label_fix_works():
    x, y = _data()
    mod = mx.mod.Module(_net())
    with pytest.warns(UserWarning), pytest.raises(MXNetError) as err:
        mod.bind(data_shapes=[("data", (20, 6))], label_shapes=[("label", (20,))])
    label_name = _advice(str(err.value), r"label_name='(\w+)'")
    mod = mx.mod.Module(_net())
    mod.bind(data_shapes=[("data", (20, 6))], label_shapes=[(label_name, (20,))])
    assert mod.binded


class _OneBucketIter(mx.io.NDArrayIter):
    """NDArrayIter whose batches carry the bucket key 6 (BucketingModule switches on it)."""

    default_bucket_key = 6

    def next(self):
        batch = super().next()
        batch.bucket_key = 6
        return batch


def test_bucketing_module_label_mismatch_fix_works():
    x, y = _data()

    def sym_gen(label):
        return lambda key: (_net(label=label), ("data",), (label or "softmax_label",))

    it = _OneBucketIter(x, y, batch_size=20, label_name="label")
    with pytest.warns(UserWarning):
        msg = _error_of(mx.mod.BucketingModule(sym_gen(None), default_bucket_key=6), it)
    label_name = _advice(msg, r"label_name='(\w+)'")
    fixed_it = _OneBucketIter(x, y, batch_size=20, label_name=label_name)
    _train(mx.mod.BucketingModule(sym_gen(None), default_bucket_key=6), fixed_it)
    label_var = _advice(msg, r"label=mx\.sym\.Variable\('(\w+)'\)")
    it.reset()
    _train(mx.mod.BucketingModule(sym_gen(label_var), default_bucket_key=6), it)
