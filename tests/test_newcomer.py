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
    with pytest.warns(UserWarning, match="don't match names"):
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


# ---- the other errors that print a fix: apply the fix, it works


def test_label_names_typo_fix_from_the_warning_trains():
    x, y = _data()
    with pytest.warns(UserWarning) as record:
        mx.mod.Module(_net(), label_names=["lbl"])
    names = _advice(str(record[0].message), r"Did you mean label_names=\['(\w+)'\]")
    _train(mx.mod.Module(_net(), label_names=[names]), mx.io.NDArrayIter(x, y, batch_size=20))


def test_data_names_typo_fix_from_the_error_trains():
    x, y = _data()
    with pytest.raises(ValueError) as err:
        mx.mod.Module(_net(), data_names=["x"])
    first = _advice(str(err.value), r"Did you mean one of: \['(\w+)'")
    _train(mx.mod.Module(_net(), data_names=[first]), mx.io.NDArrayIter(x, y, batch_size=20))


def test_dict_data_shapes_fix_binds():
    shapes = {"data": (20, 6)}
    with pytest.raises(TypeError, match=r"list\(your_dict\.items\(\)\)"):
        mx.mod.Module(_net()).bind(data_shapes=shapes, for_training=False)
    mod = mx.mod.Module(_net())
    mod.bind(data_shapes=list(shapes.items()), for_training=False)
    mod.init_params()
    mod.forward(mx.io.DataBatch([mx.nd.ones((20, 6))]), is_train=False)
    assert mod.get_outputs()[0].shape == (20, 2)


def test_fit_on_an_iterator_without_labels_fix_trains_and_predict_needs_none():
    x, y = _data()
    with pytest.warns(UserWarning), pytest.raises(ValueError) as err:
        mx.mod.Module(_net()).fit(mx.io.NDArrayIter(x, batch_size=20), num_epoch=1)
    assert "mx.io.NDArrayIter(data, label, batch_size=...)" in str(err.value)
    mod = mx.mod.Module(_net())
    _train(mod, mx.io.NDArrayIter(x, y, batch_size=20))
    assert "predict needs none" in str(err.value)
    assert mod.predict(mx.io.NDArrayIter(x, batch_size=20)).shape == (200, 2)


def test_following_each_stage_error_reaches_a_training_step():
    """forward/update out of order: each error names the call that is missing; making it
    (with the arguments the message shows) gets one step further, until a step runs."""
    x, y = _data()
    mod = mx.mod.Module(_net())
    batch = mx.io.DataBatch([mx.nd.array(x[:20])], [mx.nd.array(y[:20])])
    calls = {
        "bind": lambda: mod.bind(
            data_shapes=[("data", (20, 6))], label_shapes=[("softmax_label", (20,))]
        ),
        "init_params": mod.init_params,
        "init_optimizer": mod.init_optimizer,
    }
    followed = []
    for _ in range(len(calls) + 1):
        try:
            mod.forward(batch, is_train=True)
            mod.backward()
            mod.update()
            break
        except MXNetError as err:
            advised = _advice(str(err), r"call (\w+)\(")
            assert advised not in followed, f"the same advice twice: {err}"
            followed.append(advised)
            calls[advised]()
    assert followed == ["bind", "init_params", "init_optimizer"]
    assert mod.get_outputs()[0].shape == (20, 2)


def test_training_batch_without_labels_fix_runs():
    x, y = _data()
    mod = mx.mod.Module(_net())
    mod.bind(data_shapes=[("data", (20, 6))], label_shapes=[("softmax_label", (20,))])
    mod.init_params()
    with pytest.raises(MXNetError, match="give the DataBatch its label arrays"):
        mod.forward(mx.io.DataBatch([mx.nd.array(x[:20])]), is_train=True)
    mod.forward(mx.io.DataBatch([mx.nd.array(x[:20])], [mx.nd.array(y[:20])]), is_train=True)
    mod.backward()
    assert mod.get_outputs()[0].shape == (20, 2)


def test_bucketing_module_without_default_bucket_key_fix_trains():
    x, y = _data()
    it = _OneBucketIter(x, y, batch_size=20)

    def sym_gen(key):
        return _net(), ("data",), ("softmax_label",)

    with pytest.raises(MXNetError, match=r"e\.g\. train_iter\.default_bucket_key"):
        mx.mod.BucketingModule(sym_gen)
    _train(mx.mod.BucketingModule(sym_gen, default_bucket_key=it.default_bucket_key), it)
