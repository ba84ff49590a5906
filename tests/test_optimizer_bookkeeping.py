"""Per-step host cost of the fused path (issue 9): ``fused_hyper`` counts lazily (O(1) in the
number of parameters, MXNet's per-index counts when read), ``fused_signature`` is cached
until a setting changes (attributes, ``set_*_mult``, in-place dict edits)."""

import pickle
import types

import jax.numpy as jnp
import pytest

import mxmod as mx

N = 160
NAMES = [f"l{i // 2}_{'weight' if i % 2 == 0 else 'bias'}" for i in range(N)]


def make(name="sgd", **kw):
    opt = mx.optimizer.create(name, param_idx2name=dict(enumerate(NAMES)), **kw)
    opt.fused_init({n: jnp.zeros((2,)) for n in NAMES})
    return opt


def test_steady_state_does_no_per_parameter_work(monkeypatch):
    from mxmod.optimizer import fused

    opt = make(momentum=0.9)
    sig = opt.fused_signature()
    opt.fused_hyper()  # the first step reads the counts once (O(parameters))
    calls = []

    def spy(owner, attr):
        fn = getattr(owner, attr)
        monkeypatch.setattr(owner, attr, lambda *x: (calls.append(attr), fn(*x))[1])

    spy(fused, "name_mults")
    spy(fused, "_signature_key")
    spy(opt._counts, "flush")
    spy(opt._counts, "count")
    # written into __dict__ directly: setting an attribute would count as a setting
    opt.__dict__["_update_count"] = lambda *x: calls.append("_update_count")
    for k in range(2, 52):
        h = opt.fused_hyper()
        assert opt.fused_signature() is sig
        assert int(h["t"]) == k
    assert calls == [] and opt.num_update == 51
    assert opt._counts.tables[0] == {}  # not written yet
    assert opt._index_update_count == dict.fromkeys(NAMES, 51)  # written when read


def reference_counts(history, begin=0):
    """MXNet's rule, one index at a time: per name count, num_update = max."""
    counts, num = {}, begin
    for names in history:
        for n in names:
            counts[n] = counts.get(n, begin) + 1
            num = max(num, counts[n])
    return counts, num


def test_lazy_counts_equal_mxnet_counts_when_mixed_with_imperative_updates():
    opt = make(begin_num_update=5)
    history = []
    for _ in range(3):
        opt.fused_hyper()
        history.append(NAMES)
    w = mx.nd.ones((2,))
    for _ in range(4):  # the Updater counts one name more
        opt.update(NAMES[7], w, mx.nd.ones((2,)), None)
        history.append([NAMES[7]])
    h = opt.fused_hyper()  # t is the max over the names, as before
    history.append(NAMES)
    counts, num = reference_counts(history, begin=5)
    assert opt._index_update_count == counts and opt.num_update == num == int(h["t"])
    assert int(opt.fused_hyper()["t"]) == num + 1
    # explicit other names: counted exactly, one by one
    h = opt.fused_hyper(names=["extra"])
    assert int(h["t"]) == 6 and opt._index_update_count["extra"] == 6


def test_counts_follow_the_device_and_survive_pickle_and_codec():
    opt = make()
    opt.fused_hyper()
    opt._set_current_context(1)
    opt.fused_hyper()
    opt.fused_hyper()
    assert opt._all_index_update_counts == {0: dict.fromkeys(NAMES, 1), 1: dict.fromkeys(NAMES, 2)}
    opt.fused_hyper()  # pending again
    o2 = pickle.loads(pickle.dumps(opt))
    assert o2._all_index_update_counts[1] == dict.fromkeys(NAMES, 3)
    upd = mx.optimizer.get_updater(opt)
    opt.fused_hyper()
    upd2 = mx.optimizer.get_updater(mx.optimizer.SGD())
    upd2.set_states(upd.get_states(dump_optimizer=True))
    o3 = upd2.optimizer
    assert o3._all_index_update_counts[1] == dict.fromkeys(NAMES, 4) and o3.num_update == 4
    assert o3._index_update_count is o3._all_index_update_counts[1]


def test_editing_the_counts_in_place_is_seen_by_the_next_step():
    opt = make()
    opt.fused_hyper()
    opt._index_update_count.update(dict.fromkeys(NAMES, 41))  # what loading states does
    opt.num_update = 41
    assert int(opt.fused_hyper()["t"]) == 42


def test_signature_cache_tracks_every_setting():
    opt = make(momentum=0.9, wd=0.1)
    seen = [opt.fused_signature()]

    def changed():
        sig = opt.fused_signature()
        assert sig != seen[-1] and sig is opt.fused_signature()
        seen.append(sig)

    opt.set_learning_rate(0.5)  # traced, not a setting
    opt.fused_hyper()
    assert opt.fused_signature() is seen[-1]
    opt.momentum = 0.5
    changed()
    opt.lr_mult["l0_weight"] = 2.0  # in place
    changed()
    opt.wd_mult.update({"l0_weight": 0.5})
    changed()
    opt.set_wd_mult({})
    changed()
    opt.idx2name[0] = "l0_bias"  # changes the default wd multipliers' names
    opt.set_wd_mult({})
    changed()
    opt.rescale_grad = 0.25
    changed()
    del opt.lr_mult["l0_weight"]
    changed()
    gluon_param = types.SimpleNamespace(lr_mult=0.5, wd_mult=1.0)
    opt.param_dict = {"l1_weight": gluon_param}
    changed()
    gluon_param.lr_mult = 3.0  # param_dict objects are re-read
    changed()


def test_signature_is_content_based_and_hash_cached():
    a, b = make(momentum=0.9), make(momentum=0.9)
    assert a.fused_signature() == b.fused_signature()
    assert hash(a.fused_signature()) == hash(b.fused_signature())
    b.momentum = 0.8
    assert a.fused_signature() != b.fused_signature()
    assert a.fused_signature(NAMES[:2]) != a.fused_signature()


def test_bad_setting_is_reported_when_the_signature_is_rebuilt():
    opt = make("adam")
    opt.fused_signature()
    opt.beta2 = 1.0
    with pytest.raises(ValueError, match=r"Adam: beta2 must be in \[0, 1\), got beta2=1.0"):
        opt.fused_signature()
