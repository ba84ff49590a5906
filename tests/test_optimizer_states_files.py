"""Optimizer-state files: fine-tuning from a checkpoint, and MXNet's pickled ``.states``.

MXNet fixtures (tests/fixtures/checkpoint, from gen_checkpoint_fixtures.py): ``mlp_sgd``
(one context: states keyed by index), ``mlp_sgd_kv`` (two contexts, update_on_kvstore:
keyed by name) and ``mlp_adam``, each with the parameters MXNet reached by resuming with
``Module.load(prefix, 1, load_optimizer_states=True)`` + ``fit(begin_epoch=1, num_epoch=2)``.
"""

import pickle
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError

FIX = Path(__file__).parent / "fixtures"
CKPT = FIX / "checkpoint"
sys.path.insert(0, str(FIX))
import checkpoint_nets as nets  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:Parameters already initialized")


def train_iter():
    x, y = nets.train_data()
    return mx.io.NDArrayIter(x, y, batch_size=4, shuffle=False)


def params_of(mod):
    arg, aux = mod.get_params()
    return {k: v.asnumpy() for k, v in {**arg, **aux}.items()}


# ------------------------------------------------------------ fine-tuning (mxmod files)
def bn_mlp():
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=16, name="fc1")
    net = mx.sym.BatchNorm(net, fix_gamma=False, name="bn1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.FullyConnected(net, num_hidden=4, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def initial_params(sym):
    arg_shapes, _, aux_shapes = sym.infer_shape(data=(4, 10))
    args = dict(zip(sym.list_arguments(), arg_shapes))
    args.pop("data"), args.pop("softmax_label")
    arg, aux = nets.make_params(args, dict(zip(sym.list_auxiliary_states(), aux_shapes)), 3)
    return (
        {k: mx.nd.array(v) for k, v in arg.items()},
        {k: mx.nd.array(v) for k, v in aux.items()},
    )


FINE_TUNE = {
    "sgd_momentum": ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-3}),
    "adam": ("adam", {"learning_rate": 0.01, "wd": 1e-3}),
}


@pytest.mark.parametrize("case,ndev", [("sgd_momentum", 1), ("sgd_momentum", 2), ("adam", 1)])
def test_fine_tune_from_checkpoint_continues_exactly(tmp_path, case, ndev):
    optimizer, opt_params = FINE_TUNE[case]
    if optimizer not in mx.optimizer.Optimizer.opt_registry:
        pytest.skip(f"optimizer {optimizer!r} is not implemented yet")
    ctx = [mx.cpu(i) for i in range(ndev)]
    prefix = str(tmp_path / "ft")
    sym = bn_mlp()
    arg, aux = initial_params(sym)
    fit = {"optimizer": optimizer, "optimizer_params": dict(opt_params), "kvstore": "local"}

    whole = mx.mod.Module(sym, context=ctx)
    it = train_iter()
    whole.fit(
        it,
        num_epoch=4,
        arg_params=arg,
        aux_params=aux,
        **fit,
        epoch_end_callback=mx.callback.module_checkpoint(whole, prefix, save_optimizer_states=True),
    )
    want = params_of(whole)

    resumed = mx.mod.Module.load(prefix, 2, load_optimizer_states=True, context=ctx)
    it.reset()
    resumed.fit(it, begin_epoch=2, num_epoch=4, **fit)
    got = params_of(resumed)
    assert got.keys() == want.keys()
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=0, atol=1e-6, err_msg=name)

    fresh = mx.mod.Module.load(prefix, 2, context=ctx)  # same params, states not loaded
    it.reset()
    fresh.fit(it, begin_epoch=2, num_epoch=4, **fit)
    assert max(np.abs(params_of(fresh)[n] - want[n]).max() for n in want) > 1e-3


# ------------------------------------------------------------ MXNet pickles
def resume_from_mxnet(name, ndev=None, allow_pickle=True, **fit_overrides):
    optimizer, params, file_ndev = nets.OPT_FIXTURES[name]
    ctx = [mx.cpu(i) for i in range(ndev or file_ndev)]
    mod = mx.mod.Module.load(
        str(CKPT / name), 1, load_optimizer_states=True, allow_pickle=allow_pickle, context=ctx
    )
    fit = {"optimizer": optimizer, "optimizer_params": dict(params), "kvstore": "local"}
    fit.update(fit_overrides)
    mod.fit(train_iter(), begin_epoch=1, num_epoch=2, **fit)
    return params_of(mod)


@pytest.mark.parametrize(
    "name,ndev",
    [
        ("mlp_sgd", None),
        ("mlp_sgd_kv", None),
        ("mlp_sgd", 2),
        ("mlp_sgd_kv", 1),
        ("mlp_adam", None),
    ],
)
def test_mxnet_states_resume_like_mxnet(name, ndev):
    if nets.OPT_FIXTURES[name][0] not in mx.optimizer.Optimizer.opt_registry:
        pytest.skip(f"optimizer {nets.OPT_FIXTURES[name][0]!r} is not implemented yet")
    got = resume_from_mxnet(name, ndev)
    final = np.load(CKPT / f"{name}-final.npz")
    for key in final.files:
        if key.startswith("resumed:"):
            np.testing.assert_allclose(got[key[8:]], final[key], rtol=0, atol=1e-6, err_msg=key)
    if ndev is not None:
        return
    # the momentum really came from the file: without it training ends elsewhere
    fresh = mx.mod.Module.load(str(CKPT / name), 1)
    fresh.fit(
        train_iter(),
        begin_epoch=1,
        num_epoch=2,
        optimizer=nets.OPT_FIXTURES[name][0],
        optimizer_params=dict(nets.OPT_FIXTURES[name][1]),
    )
    assert (
        max(
            np.abs(v - final[f"resumed:{k}"]).max()
            for k, v in params_of(fresh).items()
            if f"resumed:{k}" in final.files
        )
        > 1e-3
    )


def test_mxnet_states_refused_without_opt_in():
    with pytest.raises(
        MXNetError,
        match=r"mlp_sgd-0001\.states' is a Python pickle \(optimizer "
        r"states written by MXNet\); unpickling can run "
        r"arbitrary code.*pass allow_pickle=True",
    ):
        resume_from_mxnet("mlp_sgd", allow_pickle=False)
    mod = mx.mod.Module.load(str(CKPT / "mlp_sgd"), 1)
    mod.bind([("data", (4, 10))], [("softmax_label", (4,))])
    mod.init_optimizer(optimizer="sgd", optimizer_params={"momentum": 0.9})
    with pytest.raises(MXNetError, match="allow_pickle=True"):
        mod.load_optimizer_states(str(CKPT / "mlp_sgd-0001.states"))
    mod.load_optimizer_states(str(CKPT / "mlp_sgd-0001.states"), allow_pickle=True)


def test_updater_set_states_opt_in():
    blob = (CKPT / "mlp_sgd_kv-0001.states").read_bytes()
    upd = mx.optimizer.get_updater(mx.optimizer.SGD(momentum=0.9))
    with pytest.raises(NotImplementedError, match="never unpickles.*allow_pickle=True"):
        upd.set_states(blob)
    upd.set_states(blob, allow_pickle=True)
    assert list(upd.states) == [
        "fc1_weight",
        "fc1_bias",
        "fc2_weight",
        "fc2_bias",
        "fc3_weight",
        "fc3_bias",
    ]
    mom = upd.states["fc1_weight"]
    assert isinstance(mom, mx.nd.NDArray) and mom.shape == (16, 10) and mom.context == mx.cpu()
    with pytest.raises(
        MXNetError,
        match=r"state of index 0 has the layout PyTreeDef\(\(\*, \*\)\) "
        r"but the state SGD creates for a weight of shape \(16, 10\)",
    ):
        upd.set_states((CKPT / "mlp_adam-0001.states").read_bytes(), allow_pickle=True)
    upd = mx.optimizer.get_updater(mx.optimizer.Adam())  # issue 26: checked at load
    upd.set_states((CKPT / "mlp_adam-0001.states").read_bytes(), allow_pickle=True)
    assert isinstance(upd.states[0], tuple) and [s.shape for s in upd.states[0]] == [(16, 10)] * 2
    with pytest.raises(
        MXNetError,
        match=r"state of index 3 has the layout PyTreeDef\(\[\*\]\) "
        r"but the state held has PyTreeDef\(\(\*, \*\)\)",
    ):
        upd.set_states(pickle.dumps({3: [np.ones(2, "f4")]}), allow_pickle=True)
    upd = mx.optimizer.get_updater(mx.optimizer.SGD())
    upd.set_states(pickle.dumps({b"w": None}, protocol=2), allow_pickle=True)
    assert upd.states["w"] is None  # bytes keys become str
    upd = mx.optimizer.get_updater(mx.optimizer.Adam())
    upd.set_states(
        pickle.dumps({3: (np.ones(2, "f4"), np.zeros(2, "f4"))}, protocol=2), allow_pickle=True
    )  # numpy arrays become NDArrays
    assert upd.states[3][0].asnumpy().tolist() == [1.0, 1.0]
    upd = mx.optimizer.get_updater(mx.optimizer.SGD(momentum=0.9))
    upd.set_states(pickle.dumps({0: np.arange(3, dtype="f4")}, protocol=5), allow_pickle=True)
    assert upd.states[0].asnumpy().tolist() == [0.0, 1.0, 2.0]


class _Sentinel:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_restricted_unpickler_refuses_other_globals(tmp_path):
    target = tmp_path / "pwned"
    upd = mx.optimizer.get_updater(mx.optimizer.SGD())
    with pytest.raises(
        MXNetError,
        match=r"refusing to load global (_?io|builtins)\.open: only "
        r"numpy arrays, MXNet NDArrays and plain containers",
    ):
        upd.set_states(pickle.dumps({0: _Sentinel(str(target))}), allow_pickle=True)
    assert not target.exists()
    with_optimizer = b"\x80\x02cmxnet.optimizer.optimizer\nSGD\nq\x00."
    with pytest.raises(MXNetError, match=r"mxnet\.optimizer\.optimizer\.SGD.*dump_optimizer=True"):
        upd.set_states(with_optimizer, allow_pickle=True)
    with pytest.raises(MXNetError, match="numpy object arrays are not allowed"):
        upd.set_states(pickle.dumps({0: np.array([None])}), allow_pickle=True)
    truncated = (CKPT / "mlp_sgd-0001.states").read_bytes()[:300]
    with pytest.raises(
        MXNetError,
        match=r"optimizer states: offset 2 \(FRAME\): frame of 1822 "
        r"bytes \(expected at most the 298 bytes left\)",
    ):
        upd.set_states(truncated, allow_pickle=True)
    with pytest.raises(MXNetError, match="expected a pickled dict of optimizer states, got list"):
        upd.set_states(pickle.dumps([1, 2]), allow_pickle=True)


def bound_with(sym, optimizer="sgd", **opt_params):
    mod = mx.mod.Module(sym)
    mod.bind([("data", (4, 10))], [("softmax_label", (4,))])
    mod.init_params(mx.init.Uniform(0.1))
    mod.init_optimizer(optimizer=optimizer, optimizer_params=opt_params)
    return mod


def test_mxnet_states_that_do_not_fit_name_the_problem(tmp_path):
    fname = str(CKPT / "mlp_sgd-0001.states")
    mod = bound_with(nets.mlp(mx))  # SGD without momentum keeps no state
    with pytest.raises(
        MXNetError,
        match=r"the state of 'fc1_(weight|bias)' is PyTreeDef\(\*\) but "
        r"this optimizer keeps PyTreeDef\(None\); use the "
        r"optimizer \(and momentum",
    ):
        mod.load_optimizer_states(fname, allow_pickle=True)
    other = mx.sym.SoftmaxOutput(
        mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=4, name="fc"), name="softmax"
    )
    with pytest.raises(
        MXNetError,
        match=r"keyed by indices \[0, 1, 2, 3, 4, 5\], which do not "
        r"map onto this module's trained parameters",
    ):
        bound_with(other, momentum=0.9).load_optimizer_states(fname, allow_pickle=True)
    with pytest.raises(
        MXNetError,
        match=r"missing \['fc_weight', 'fc_bias'\], unexpected "
        r"\['fc1_weight'",
    ):
        bound_with(other, momentum=0.9).load_optimizer_states(
            str(CKPT / "mlp_sgd_kv-0001.states"), allow_pickle=True
        )
    wide = nets.mlp(mx)
    mod = mx.mod.Module(wide)
    mod.bind([("data", (4, 12))], [("softmax_label", (4,))])
    mod.init_params(mx.init.Uniform(0.1))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"momentum": 0.9})
    with pytest.raises(
        MXNetError,
        match=r"the state of 'fc1_weight' has shape \(16, 10\) "
        r"but the bound parameter needs \(16, 12\)",
    ):
        mod.load_optimizer_states(str(CKPT / "mlp_sgd_kv-0001.states"), allow_pickle=True)


def test_mxmod_states_file_is_not_a_pickle(tmp_path):
    mod = bound_with(nets.mlp(mx), momentum=0.9)
    mod.save_optimizer_states(str(tmp_path / "s.states"))
    assert (tmp_path / "s.states").read_bytes()[:2] == b"PK"  # an npz, never a pickle
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mod.load_optimizer_states(str(tmp_path / "s.states"), allow_pickle=True)
