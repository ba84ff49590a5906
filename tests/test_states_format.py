"""One ``.states`` format for ``Updater`` and ``Module`` (issue 9).

A Module writes what an ``Updater`` holding its states would write: ``{MXNet index: state}``
(``i * num_device + device``; parameter names with ``update_on_kvstore``, as MXNet) plus
the update counts, in mxmod's safe codec. Either side reads the other's files; files of
mxmod's first Module format (``tests/fixtures/states_v1``) still load.
"""

import io
import sys
from pathlib import Path

import numpy as np
import pytest

import mxmod as mx

FIX = Path(__file__).parent / "fixtures"
sys.path.insert(0, str(FIX))
import gen_states_v1_fixture as v1  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:Parameters already initialized")


def params_of(mod):
    arg, _ = mod.get_params()
    return {k: v.asnumpy() for k, v in arg.items()}


# ------------------------------------------------------------ files of the first format
@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(v1.CASES))
def test_first_format_checkpoint_resumes_exactly(case):
    optimizer, params, ndev = v1.CASES[case]
    ctx = [mx.cpu(i) for i in range(ndev)]
    prefix = str(FIX / "states_v1" / case)
    mod = mx.mod.Module.load(prefix, 1, load_optimizer_states=True, context=ctx)
    fit = dict(optimizer=optimizer, optimizer_params=dict(params), kvstore="local")
    mod.fit(v1.data(mx), begin_epoch=1, num_epoch=2, **fit)
    final = np.load(FIX / "states_v1" / f"{case}-final.npz")
    got = params_of(mod)
    for key in final.files:
        np.testing.assert_allclose(got[key[4:]], final[key], rtol=0, atol=1e-6, err_msg=key)
    fresh = mx.mod.Module.load(prefix, 1, context=ctx)  # the states matter
    fresh.fit(v1.data(mx), begin_epoch=1, num_epoch=2, **fit)
    assert max(np.abs(params_of(fresh)[k[4:]] - final[k]).max() for k in final.files) > 1e-4


# ------------------------------------------------------------ helpers
@mx.optimizer.register
class HostClipMomentum(mx.optimizer.Optimizer):
    """Momentum whose step shrinks with the update count and whose clipping decides on the
    host: it cannot be compiled, so the Module runs it through MXNet's per-index Updater."""

    def __init__(self, momentum=0.9, max_norm=0.5, **kwargs):
        super().__init__(**kwargs)
        self.momentum, self.max_norm = momentum, max_norm

    def create_state(self, index, weight):
        return mx.nd.zeros(weight.shape, weight.context, dtype=weight.dtype)

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        g = grad * self.rescale_grad
        norm = float(mx.nd.norm(g).asscalar())
        if norm > self.max_norm:
            g = g * (self.max_norm / norm)
        t = self._index_update_count[index]
        state[:] = self.momentum * state - lr / t**0.5 * (g + wd * weight)
        weight[:] += state


OPTIMIZERS = {
    "adam": ("adam", {"learning_rate": 0.01, "wd": 1e-3}),
    "host": ("hostclipmomentum", {"learning_rate": 0.1, "wd": 1e-3}),
}
PARAMS = ["fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias"]


def ctx_of(ndev):
    return [mx.cpu(i) for i in range(ndev)]


def train(opt, ndev, epochs, prefix=None, begin=0, kvstore="local", load=None, **kw):
    """A module trained ``epochs`` epochs (optionally from checkpoint ``load``), saving a
    checkpoint with states at each epoch end when ``prefix`` is given."""
    name, params = OPTIMIZERS[opt]
    if load is None:
        mod = mx.mod.Module(v1.net(mx), context=ctx_of(ndev))
        kw.setdefault("arg_params", v1.initial_params(mx))
    else:
        mod = mx.mod.Module.load(load, begin, load_optimizer_states=True, context=ctx_of(ndev))
    cb = mx.callback.module_checkpoint(mod, prefix, save_optimizer_states=True) if prefix else None
    mod.fit(
        v1.data(mx),
        begin_epoch=begin,
        num_epoch=epochs,
        optimizer=name,
        optimizer_params=dict(params),
        kvstore=kvstore,
        epoch_end_callback=cb,
        **kw,
    )
    return mod


def fused(mod):
    return mod._exec_group.state.opt.fused


def updater_of(opt):
    name, params = OPTIMIZERS[opt]
    return mx.optimizer.get_updater(mx.optimizer.create(name, **params))


def states_numpy(upd):
    return {
        k: [a.asnumpy() for a in (v if isinstance(v, tuple) else (v,))]
        for k, v in upd.states.items()
    }


def same_content(f1, f2):
    """Two states files hold the same description and arrays (zip timestamps aside)."""
    import test_state_file_errors as tse

    m1, m2 = (tse.members(f.read_bytes()) for f in (f1, f2))
    return m1.keys() == m2.keys() and all(
        np.array_equal(np.load(io.BytesIO(m1[k])), np.load(io.BytesIO(m2[k]))) for k in m1
    )


def assert_same_params(a, b, atol=1e-6):
    pa, pb = params_of(a), params_of(b)
    for k in PARAMS:
        np.testing.assert_allclose(pa[k], pb[k], rtol=0, atol=atol, err_msg=k)


# ------------------------------------------------------------ one format
@pytest.mark.slow
@pytest.mark.parametrize(
    "opt,ndev",
    [("adam", 1), ("adam", 2), ("host", 1), ("host", 2)],
)
def test_module_file_is_an_updater_file(tmp_path, monkeypatch, opt, ndev):
    """Keys are MXNet's indices i*D+k (update_on_kvstore off), fused or not; the counts
    come along; Module -> Updater -> Module resumes exactly as an unbroken run."""
    monkeypatch.setenv("MXNET_UPDATE_ON_KVSTORE", "0")
    whole = train(opt, ndev, 2)
    prefix = str(tmp_path / "m")
    first = train(opt, ndev, 1, prefix=prefix)
    assert fused(first) == (opt == "adam")
    upd = updater_of(opt)
    upd.set_states((tmp_path / "m-0001.states").read_bytes())
    assert sorted(upd.states) == list(range(len(PARAMS) * ndev))
    assert upd.optimizer.num_update == 4  # 16 samples, batch 4
    for i, name in enumerate(PARAMS):  # every device's copy, shaped like its parameter
        shape = first.get_params()[0][name].shape
        for k in range(ndev):
            leaves = upd.states[i * ndev + k]
            leaves = leaves if isinstance(leaves, tuple) else (leaves,)
            assert [a.shape for a in leaves] == [shape] * len(leaves)
            np.testing.assert_array_equal(
                leaves[0].asnumpy(), states_numpy(upd)[i * ndev][0], err_msg=name
            )
    (tmp_path / "m-0001.states").write_bytes(upd.get_states())  # written back by the Updater
    resumed = train(opt, ndev, 2, begin=1, load=prefix)
    assert_same_params(resumed, whole)
    fresh = mx.mod.Module.load(prefix, 1, context=ctx_of(ndev))  # without the states
    fresh.fit(v1.data(mx), begin_epoch=1, num_epoch=2, optimizer=OPTIMIZERS[opt][0],
              optimizer_params=dict(OPTIMIZERS[opt][1]))  # fmt: skip
    assert max(np.abs(params_of(fresh)[k] - params_of(whole)[k]).max() for k in PARAMS) > 1e-4


@pytest.mark.slow
@pytest.mark.parametrize("opt", ["adam", "host"])
def test_update_on_kvstore_files_are_keyed_by_name(tmp_path, opt):
    """Two devices with kvstore 'local': the store runs the optimizer, so (as in MXNet) the
    file is keyed by parameter name, and KVStore.load_optimizer_states reads it."""
    whole = train(opt, 2, 2)
    prefix = str(tmp_path / "kv")
    train(opt, 2, 1, prefix=prefix)
    kv = mx.kv.create("local")
    kv.set_optimizer(mx.optimizer.create(OPTIMIZERS[opt][0], **OPTIMIZERS[opt][1]))
    kv.load_optimizer_states(prefix + "-0001.states")
    kv.save_optimizer_states(prefix + "-0001.states")
    upd = updater_of(opt)
    upd.set_states((tmp_path / "kv-0001.states").read_bytes())
    assert list(upd.states) == PARAMS and upd.optimizer.num_update == 4
    assert_same_params(train(opt, 2, 2, begin=1, load=prefix), whole)


@pytest.mark.parametrize("opt", ["adam", "host"])
def test_files_move_between_device_counts_and_key_kinds(tmp_path, monkeypatch, opt):
    """A one-device file (keys i) loads into two devices (keys 2i+k or names) and back;
    every device's copy gets the saved state."""
    monkeypatch.setenv("MXNET_UPDATE_ON_KVSTORE", "0")
    prefix = str(tmp_path / "one")
    one = train(opt, 1, 1, prefix=prefix)
    saved = updater_of(opt)
    saved.set_states((tmp_path / "one-0001.states").read_bytes())
    for by_name in (False, True):
        monkeypatch.setenv("MXNET_UPDATE_ON_KVSTORE", str(int(by_name)))
        two = mx.mod.Module.load(prefix, 1, load_optimizer_states=True, context=ctx_of(2))
        two.bind([("data", (4, 6))], [("softmax_label", (4,))])
        two.init_optimizer(optimizer=OPTIMIZERS[opt][0], optimizer_params=OPTIMIZERS[opt][1])
        two.save_optimizer_states(str(tmp_path / "two.states"))
        back = updater_of(opt)
        back.set_states((tmp_path / "two.states").read_bytes())
        for i, name in enumerate(PARAMS):
            for key in [name] if by_name else [2 * i, 2 * i + 1]:
                for a, b in zip(states_numpy(back)[key], states_numpy(saved)[i]):
                    np.testing.assert_array_equal(a, b, err_msg=f"{name} {key}")
        one.load_optimizer_states(str(tmp_path / "two.states"))  # and back to one device


def test_updater_written_states_load_into_a_module(tmp_path):
    """States an Updater made by MXNet's per-index calls (index = parameter position) are
    what a one-device Module continues from."""
    mod = mx.mod.Module(v1.net(mx), context=mx.cpu())
    mod.bind([("data", (4, 6))], [("softmax_label", (4,))])
    mod.init_params(arg_params=v1.initial_params(mx))
    mod.init_optimizer(optimizer="adam", optimizer_params=OPTIMIZERS["adam"][1])
    upd = updater_of("adam")
    rng = np.random.RandomState(3)
    weights = [mod.get_params()[0][n].copy() for n in PARAMS]
    for _ in range(3):
        upd(list(range(4)), [mx.nd.array(rng.randn(*w.shape)) for w in weights], weights)
    (tmp_path / "u.states").write_bytes(upd.get_states())
    mod.load_optimizer_states(str(tmp_path / "u.states"))
    mod.save_optimizer_states(str(tmp_path / "m.states"))
    again = updater_of("adam")
    again.set_states((tmp_path / "m.states").read_bytes())
    assert again.optimizer.num_update == 3
    for i in range(4):
        for a, b in zip(states_numpy(again)[i], states_numpy(upd)[i]):
            np.testing.assert_array_equal(a, b)


def test_updater_restores_update_counts():
    """Adam's bias correction reads the per-index count: a reloaded Updater continues with
    the same numbers, on whichever device the index runs."""
    ref, w_ref = updater_of("adam"), mx.nd.ones((3,), mx.cpu(1))
    for _ in range(3):
        ref(5, mx.nd.full((3,), 0.5, mx.cpu(1)), w_ref)
    upd, w = updater_of("adam"), w_ref.copy()
    upd.set_states(ref.get_states())
    assert upd.optimizer.num_update == 3 and 5 not in upd.optimizer._index_update_count
    ref(5, mx.nd.full((3,), 0.5, mx.cpu(1)), w_ref)
    upd(5, mx.nd.full((3,), 0.5, mx.cpu(1)), w)
    assert upd.optimizer._all_index_update_counts[1][5] == 4
    np.testing.assert_array_equal(w.asnumpy(), w_ref.asnumpy())


def bound(opt="adam", ndev=1):
    name, params = OPTIMIZERS[opt]
    mod = mx.mod.Module(v1.net(mx), context=ctx_of(ndev))
    mod.bind([("data", (4, 6))], [("softmax_label", (4,))])
    mod.init_params(arg_params=v1.initial_params(mx))
    mod.init_optimizer(optimizer=name, optimizer_params=dict(params))
    return mod


def stepped(opt="adam", ndev=1, steps=2):
    mod = bound(opt, ndev)
    it = v1.data(mx)
    for _ in range(steps):
        mod.forward_backward(next(it))
        mod.update()
    return mod


@pytest.mark.parametrize("opt", ["adam", "host"])
def test_round_trip_module_updater_module(tmp_path, opt):
    """Fused (adam) or not (host): Module -> Updater -> Module keeps states and counts."""
    mod = stepped(opt)
    assert fused(mod) == (opt == "adam")
    mod.save_optimizer_states(str(tmp_path / "a.states"))
    upd = updater_of(opt)
    upd.set_states((tmp_path / "a.states").read_bytes())
    assert sorted(upd.states) == [0, 1, 2, 3] and upd.optimizer.num_update == 2
    (tmp_path / "b.states").write_bytes(upd.get_states())
    assert same_content(tmp_path / "a.states", tmp_path / "b.states")  # what it would write
    other = bound(opt)
    other.load_optimizer_states(str(tmp_path / "b.states"))
    other.save_optimizer_states(str(tmp_path / "c.states"))
    again = updater_of(opt)
    again.set_states((tmp_path / "c.states").read_bytes())
    assert again.optimizer.num_update == 2
    for key, leaves in states_numpy(upd).items():
        for a, b in zip(states_numpy(again)[key], leaves):
            np.testing.assert_array_equal(a, b)
    assert any(np.abs(x).max() > 0 for v in states_numpy(again).values() for x in v)


def test_first_format_files_load():
    """Files of mxmod's first Module format load (states by name, counts restored), on one
    or two devices."""
    for case, (opt, params, ndev) in v1.CASES.items():
        prefix = str(FIX / "states_v1" / case)
        mod = mx.mod.Module.load(prefix, 1, load_optimizer_states=True, context=ctx_of(ndev))
        mod.bind([("data", (4, 6))], [("softmax_label", (4,))])
        mod.init_optimizer(optimizer=opt, optimizer_params=dict(params))
        assert mod._optimizer.num_update == 4
        assert dict(mod._optimizer._index_update_count) == dict.fromkeys(PARAMS, 4)
    upd = updater_of("adam")
    with pytest.raises(
        mx.base.MXNetFileError,
        match=r"a Module's states in mxmod's first format.*Module\.load_optimizer_states",
    ):
        upd.set_states((FIX / "states_v1" / "adam_1dev-0001.states").read_bytes())


# ------------------------------------------------------------ bad files
def edited(blob, edit):
    import test_state_file_errors as tse

    return tse.with_meta(blob, edit)


def test_bad_files_name_the_problem(tmp_path):
    f = tmp_path / "s.states"
    mod = stepped("adam")
    mod.save_optimizer_states(str(f))
    good = f.read_bytes()

    def load(blob, into=mod):
        f.write_bytes(blob)
        into.load_optimizer_states(str(f))

    def stray_count(meta):
        meta["counts"]["index_update_count"]["__dict__"].append([99, 1])

    with pytest.raises(mx.base.MXNetFileError, match=r"counts for indices \[99\] that have no"):
        load(edited(good, stray_count))
    with pytest.raises(mx.base.MXNetFileError, match=r"kind: 3 \(expected null or an optimizer"):
        load(edited(good, lambda m: m.update(kind=3)))
    with pytest.raises(
        mx.base.MXNetFileError,
        match=r"saved by optimizer 'adam' but this module uses 'hostclipmomentum'; "
        r"init_optimizer\(optimizer='adam'\) first",
    ):
        load(good, into=bound("host"))
    upd = updater_of("adam")
    upd.set_states(good)
    upd.states["fc1_weight"] = upd.states.pop(0)
    with pytest.raises(mx.base.MXNetFileError, match=r"keys mix types"):
        load(upd.get_states())
    upd.set_states(good)
    upd.states[2] = (upd.states[2][0] * np.nan, upd.states[2][1])
    with pytest.raises(
        mx.base.MXNetFileError, match=r"state of 'fc2_weight' holds non-finite values"
    ):
        load(upd.get_states())
    upd.states = {i: upd.states[0] for i in range(4)}
    with pytest.raises(
        mx.base.MXNetFileError,
        match=r"state of 'fc1_bias' has shape \(5, 6\) but the bound parameter needs \(5,\) "
        r"\(the file's key 1\)",
    ):
        load(upd.get_states())
    upd.states[10**15] = upd.states[0]  # a damaged key: refused at once
    with pytest.raises(
        mx.base.MXNetFileError,
        match=r"keyed by indices \[0, 1, 2, 3, 1000000000000000\], which do not map onto "
        r"this module's trained parameters",
    ):
        load(upd.get_states())
    upd.states = {}
    with pytest.raises(mx.base.MXNetFileError, match=r"holds no states"):
        load(upd.get_states())
    empty = bound("host")  # an Updater's states before its first update: nothing to check
    load(updater_of("host").get_states(), into=empty)
    with pytest.raises(mx.base.MXNetError, match=r"cannot read optimizer states .*nope"):
        mod.load_optimizer_states(str(tmp_path / "nope"))
    kv = mx.kv.create("local")
    kv.set_optimizer(mx.optimizer.Adam())
    with pytest.raises(mx.base.MXNetError, match=r"cannot read optimizer states .*nope"):
        kv.load_optimizer_states(str(tmp_path / "nope"))
    load(good)  # the good file still loads
