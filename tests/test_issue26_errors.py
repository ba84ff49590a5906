"""Issue 26: every common mistake named with its fix; no file accepted that fails later.

Each mistake test makes the mistake, checks the message names the problem and the fix, and
(where the message suggests a fix) applies it. The file tests load damaged files and check
the refusal comes at load, as an MXNetFileError naming the file and field.
"""

import io
import json
import os
import pickle
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

import mxmod as mx
from mxmod import fileio
from mxmod.base import MXNetError, MXNetFileError
from mxmod.optimizer import _codec

CKPT = Path(__file__).parent / "fixtures" / "checkpoint"


def net():
    fc = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    return mx.sym.SoftmaxOutput(fc, name="softmax")


def xy(n=8):
    rng = np.random.RandomState(0)
    return rng.randn(n, 5).astype("f4"), (np.arange(n) % 3).astype("f4")


def train_iter(n=8, **kw):
    x, y = xy(n)
    return mx.io.NDArrayIter(x, y, batch_size=4, **kw)


def bound():
    mod = mx.mod.Module(net())
    mod.bind(data_shapes=[("data", (4, 5))], label_shapes=[("softmax_label", (4,))])
    mod.init_params(mx.init.Uniform(0.1))
    return mod


# ----------------------------------------------------------------------------- mistakes
@pytest.mark.parametrize(
    "params,match",
    [
        ({"learning_rate": "0.1"}, r"SGD: learning_rate must be a number, got the string '0\.1'; "
         r"write learning_rate=0\.1 without quotes"),
        ({"momentum": "0.9"}, r"SGD: momentum must be a number, got the string '0\.9'; write "
         r"momentum=0\.9 without quotes"),
        ({"wd": "1e-4"}, r"wd must be a number, got the string '1e-4'; write wd=0\.0001"),
        ({"lr_scheduler": 0.1}, r"lr_scheduler must be an mx\.lr_scheduler\.LRScheduler, got "
         r"float 0\.1; for a fixed rate write learning_rate=0\.1 instead"),
        ({"momentun": 0.9}, r"optimizer SGD has no parameter 'momentun' .*did you mean "
         r"'momentum'\? SGD takes: .*learning_rate, lr_scheduler, momentum"),
    ],
)  # fmt: skip
def test_optimizer_params_mistakes_name_the_fix(params, match):
    mod = mx.mod.Module(net())
    with pytest.raises(TypeError, match=match):
        mod.fit(train_iter(), num_epoch=1, optimizer_params=params)


def test_optimizer_params_fixes_work():
    fixed = [
        {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-4},
        {"lr_scheduler": mx.lr_scheduler.FactorScheduler(step=1, factor=0.9, base_lr=0.1)},
    ]
    for params in fixed:
        mod = mx.mod.Module(net())
        mod.fit(train_iter(), num_epoch=1, optimizer_params=params)
        assert mod.score(train_iter(), "acc")[0][1] >= 0


@pytest.mark.parametrize("name", sorted(mx.optimizer.Optimizer.opt_registry))
def test_every_optimizer_refuses_a_string_for_a_number(name):
    for kw in ("learning_rate", "wd", "rescale_grad", "clip_gradient"):
        with pytest.raises(TypeError, match=f"{kw} must be a number, got the string '0.5'"):
            mx.optimizer.create(name, **{kw: "0.5"})
    with pytest.raises(TypeError, match=r"has no parameter 'bogus'.*takes: "):
        mx.optimizer.create(name, bogus=1)
    opt = mx.optimizer.create(name)
    with pytest.raises(TypeError, match="learning_rate must be a number, got the string '0.2'"):
        opt.set_learning_rate("0.2")


def test_scheduler_hyperparameter_as_string_is_refused():
    sched = mx.lr_scheduler.FactorScheduler(step=10, factor=0.5)
    sched.base_lr = "0.1"
    with pytest.raises(TypeError, match=r"lr_scheduler FactorScheduler: base_lr must be a "
                       r"number, got the string '0\.1'"):  # fmt: skip
        mx.optimizer.SGD(lr_scheduler=sched)


def test_non_numeric_lr_mult_names_the_variable():
    w = mx.sym.Variable("fc_weight", attr={"__lr_mult__": "x"})
    fc = mx.sym.FullyConnected(mx.sym.Variable("data"), weight=w, num_hidden=3, name="fc")
    with pytest.raises(ValueError, match=r"variable 'fc_weight' has __lr_mult__='x', which is "
                       r"not a number; set it to a number \(mx\.sym\.Variable\('fc_weight', "
                       r"lr_mult=2\.0\)"):  # fmt: skip
        mx.optimizer.SGD(sym=fc)
    w = mx.sym.Variable("fc_weight", lr_mult=2.0)
    fc = mx.sym.FullyConnected(mx.sym.Variable("data"), weight=w, num_hidden=3, name="fc")
    assert mx.optimizer.SGD(sym=fc).lr_mult == {"fc_weight": 2.0}


def test_module_with_a_string_symbol():
    match = (
        r"Module\(symbol=\.\.\.\) needs an mx\.sym\.Symbol, got the string 'mlp'; "
        r".*mx\.sym\.load\('<prefix>-symbol\.json'\)"
    )
    with pytest.raises(TypeError, match=match):
        mx.mod.Module("mlp")


def test_module_forward_with_an_array():
    mod = bound()
    x = np.ones((4, 5), "f4")
    with pytest.raises(TypeError, match=r"Module\.forward needs a DataBatch, got a numpy\.ndarray "
                       r"of shape \(4, 5\); wrap the arrays: mod\.forward\(mx\.io\.DataBatch\("
                       r"data=\[mx\.nd\.array\(x\)\]"):  # fmt: skip
        mod.forward(x, is_train=False)
    with pytest.raises(TypeError, match=r"got a mxmod\.NDArray of shape \(4, 5\).*data=\[x\]"):
        mod.forward(mx.nd.array(x), is_train=False)
    mod.forward(mx.io.DataBatch(data=[mx.nd.array(x)]), is_train=False)  # the fix
    assert mod.get_outputs()[0].shape == (4, 3)


@pytest.mark.parametrize("handle", ["discard", "roll_over"])
def test_iterator_smaller_than_a_batch(handle):
    x, y = xy(10)
    it = mx.io.NDArrayIter(x, y, batch_size=32, last_batch_handle=handle)
    match = (
        rf"NDArrayIter has 10 samples, fewer than batch_size=32, and last_batch_handle="
        rf"'{handle}' drops an incomplete batch, so it yields no batch; use batch_size <= 10, "
        r"or last_batch_handle='pad'"
    )
    with pytest.raises(MXNetError, match=match):
        mx.mod.Module(net()).fit(it, num_epoch=1)
    for fixed in (
        mx.io.NDArrayIter(x, y, batch_size=10, last_batch_handle=handle),
        mx.io.NDArrayIter(x, y, batch_size=32, last_batch_handle="pad"),
    ):
        mx.mod.Module(net()).fit(fixed, num_epoch=1)


def test_save_checkpoint_into_a_missing_folder(tmp_path):
    mod = bound()
    prefix = tmp_path / "runs" / "a" / "ck"
    with pytest.raises(FileNotFoundError) as err:
        mod.save_checkpoint(str(prefix), 1)
    text = str(err.value)
    assert f"the folder {str(tmp_path / 'runs')!r} does not exist" in text
    assert f"os.makedirs({str(prefix.parent)!r}, exist_ok=True)" in text and ".tmp-" not in text
    os.makedirs(prefix.parent, exist_ok=True)  # the fix
    mod.save_checkpoint(str(prefix), 1)
    assert (prefix.parent / "ck-0001.params").is_file()


@pytest.mark.filterwarnings("ignore:Data provided by label_shapes")
def test_fit_on_an_iterator_without_labels():
    x, _ = xy()
    match = (
        r"there are no labels: give the data iterator its labels, e\.g\. "
        r"mx\.io\.NDArrayIter\(data, label, batch_size=\.\.\.\)"
    )
    with pytest.raises(ValueError, match=match):
        mx.mod.Module(net()).fit(mx.io.NDArrayIter(x, batch_size=4), num_epoch=1)
    mx.mod.Module(net()).fit(train_iter(), num_epoch=1)  # the fix


def test_ragged_nd_array_names_where_and_the_fix():
    with pytest.raises(TypeError, match=r"it is ragged, \[0\] has 2 items but \[1\] has 1 item; "
                       r"pad the rows to one length"):  # fmt: skip
        mx.nd.array([[1, 2], [3]])
    with pytest.raises(TypeError, match=r"\[1\]\[0\] has 2 items but \[1\]\[1\] has 1 item"):
        mx.nd.array([[[1, 2], [3, 4]], [[1, 2], [3]]])
    assert mx.nd.array([[1, 2], [3, 0]]).shape == (2, 2)  # the fix


# ----------------------------------------------------------------------------- files
def trained_updater(opt):
    upd = mx.optimizer.get_updater(opt)
    for i, shape in enumerate([(3, 2), (4,)]):
        upd(i, mx.nd.ones(shape), mx.nd.ones(shape))
    return upd


def rewrite_meta(blob, edit):
    with zipfile.ZipFile(io.BytesIO(blob)) as z:
        members = {n: z.read(n) for n in z.namelist()}
    name = _codec.META + ".npy"
    raw = np.load(io.BytesIO(members[name]))
    meta = edit(json.loads(raw.tobytes()))
    buf = io.BytesIO()
    np.save(buf, np.frombuffer(json.dumps(meta).encode(), np.uint8))
    members[name] = buf.getvalue()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for n, raw in members.items():
            z.writestr(n, raw)
    return out.getvalue()


@pytest.mark.parametrize("dtype", ["u16", "(-1,3)", "V16", "S16", "<U4", "datetime64", "str"])
def test_state_dtype_strings_are_file_errors(dtype):
    blob = trained_updater(mx.optimizer.SGD(momentum=0.9)).get_states()

    def edit(meta):
        meta["states"]["__dict__"][0][1]["dtype"] = dtype
        return meta

    upd = mx.optimizer.get_updater(mx.optimizer.SGD(momentum=0.9))
    with pytest.raises(MXNetFileError, match=r"states\[0\]\.dtype: .* is not a dtype"):
        upd.set_states(rewrite_meta(blob, edit))


def test_swapped_states_are_refused_at_load_against_the_optimizer():
    adam = trained_updater(mx.optimizer.Adam())
    mean, var = adam.states[0]
    adam.states[0] = (mean, var.reshape((2, 3)))  # arrays of one state disagree
    with pytest.raises(MXNetFileError, match=r"optimizer states: state of index 0 holds \(2, 3\) "
                       r"float32 where the state Adam creates for a weight of shape"):  # fmt: skip
        mx.optimizer.get_updater(mx.optimizer.Adam()).set_states(adam.get_states())
    sgd_blob = trained_updater(mx.optimizer.SGD(momentum=0.9)).get_states()
    for other in (mx.optimizer.Adam(), mx.optimizer.SGD()):  # another layout: refused at load
        with pytest.raises(MXNetFileError, match=r"state of index 0 has the layout"):
            mx.optimizer.get_updater(other).set_states(sgd_blob, source="'m.states'")
    ints = trained_updater(mx.optimizer.SGD(momentum=0.9))
    ints.states[1] = mx.nd.ones((4,), dtype="int8")
    with pytest.raises(MXNetFileError, match=r"state of index 1 holds \(4,\) int8"):
        mx.optimizer.get_updater(mx.optimizer.SGD(momentum=0.9)).set_states(ints.get_states())


def test_swapped_states_are_refused_at_the_first_weight_with_the_source():
    good = trained_updater(mx.optimizer.SGD(momentum=0.9))
    good.states[0], good.states[1] = good.states[1], good.states[0]  # swapped between indices
    upd = mx.optimizer.get_updater(mx.optimizer.SGD(momentum=0.9))
    upd.set_states(good.get_states(), source="optimizer states 'run-0003.states'")
    with pytest.raises(MXNetFileError, match=r"optimizer states 'run-0003\.states': state of "
                       r"index 0 holds \(4,\) float32 where the state SGD creates for a weight "
                       r"of shape \(3, 2\)"):  # fmt: skip
        upd(0, mx.nd.ones((3, 2)), mx.nd.ones((3, 2)))


def test_mxnet_pickled_states_are_checked_at_load():
    blob = (CKPT / "mlp_adam-0001.states").read_bytes()
    match = (
        r"pickled MXNet optimizer states: state of index 0 has the layout "
        r"PyTreeDef\(\(\*, \*\)\) but the state SGD creates"
    )
    with pytest.raises(MXNetFileError, match=match):
        mx.optimizer.get_updater(mx.optimizer.SGD(momentum=0.9)).set_states(blob, allow_pickle=True)
    bad = pickle.dumps({0: (np.zeros((2, 3), "f4"), np.zeros((3, 2), "f4"))}, protocol=2)
    with pytest.raises(MXNetFileError, match=r"state of index 0 holds \(3, 2\) float32 where"):
        mx.optimizer.get_updater(mx.optimizer.Adam()).set_states(bad, allow_pickle=True)


def test_module_states_of_another_shape_are_refused_at_load(tmp_path):
    mod = bound()
    mod.init_optimizer(optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    upd = mx.optimizer.get_updater(mx.optimizer.SGD(momentum=0.9))
    upd(0, mx.nd.ones((3, 2)), mx.nd.ones((3, 2)))
    upd(1, mx.nd.ones((3,)), mx.nd.ones((3,)))
    (tmp_path / "m.states").write_bytes(upd.get_states())
    with pytest.raises(MXNetFileError, match=r"m\.states.*'fc_weight'.*has shape \(3, 2\) but "
                       r"the bound parameter needs \(3, 5\)"):  # fmt: skip
        mod.load_optimizer_states(str(tmp_path / "m.states"))


def sym_json(edit):
    g = json.loads(net().tojson())
    edit(g)
    return json.dumps(g)


def test_symbol_with_empty_heads_or_bad_dtype_flag_is_refused_at_load(tmp_path):
    path = tmp_path / "bad-symbol.json"
    path.write_text(sym_json(lambda g: g.update(heads=[])))
    with pytest.raises(MXNetFileError, match=r"bad-symbol\.json'?: heads: empty \(the graph has "
                       r"no outputs\)"):  # fmt: skip
        mx.sym.load(str(path))

    def dtype(g):
        g["nodes"][0]["attrs"] = {"__dtype__": "(-1,3)"}

    path.write_text(sym_json(dtype))
    with pytest.raises(MXNetFileError, match=r"nodes\[0\]\.attrs\.__dtype__: '\(-1,3\)' is not a "
                       r"dtype flag"):  # fmt: skip
        mx.sym.load(str(path))


def test_reordered_symbol_loads_and_binds_as_in_mxnet():
    g = json.loads(net().tojson())
    n = len(g["nodes"])
    flip = lambda i: n - 1 - i  # noqa: E731
    g["nodes"] = g["nodes"][::-1]
    for node in g["nodes"]:
        node["inputs"] = [[flip(e[0])] + e[1:] for e in node["inputs"]]
    g["arg_nodes"] = sorted(flip(i) for i in g["arg_nodes"])
    g["heads"] = [[flip(e[0])] + e[1:] for e in g["heads"]]
    sym = mx.sym.load_json(json.dumps(g))
    ex = sym.simple_bind(mx.cpu(), data=(2, 5), softmax_label=(2,))
    assert ex.forward()[0].shape == (2, 3)


def test_no_temp_file_after_a_killed_write_and_load_cleans_stale_ones(tmp_path):
    prefix = str(tmp_path / "ck")
    mx.model.save_checkpoint(prefix, 1, net(), {"w": mx.nd.ones((2,))}, {})
    dead = __import__("subprocess").Popen(["true"])
    dead.wait()
    stale = tmp_path / f".tmp-{dead.pid}-{fileio._HOST_TAG}-0123abcd-ck-0002.params"
    stale.write_bytes(b"torn")
    mx.model.load_checkpoint(prefix, 1)  # a load removes what a killed writer left
    assert not stale.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".tmp-")] == []


# ----------------------------------------------------------------------------- MXNet verdicts
FIXTURES = Path(__file__).parent / "fixtures"
sys.path.insert(0, str(FIXTURES))
# operator attributes (the operator table, mxmod/ops, owns their parsing): bounds MXNet
# checks at load and mxmod at shape inference (Convolution num_filter=0, LeakyReLU
# slope=1e400), and Python 2 longs in tuples ('(2L, 3L)'), which MXNet reads and mxmod refuses
LONG_SUFFIX = "_" + str(__import__("targeted_mutations").ATTR_VALUES.index("(2L, 3L)"))
OPS_BOUNDS = {
    ("checkpoint/bn_net-symbol.json", "attr_18_slope_4"),
    ("checkpoint/lenet-symbol.json", "attr_3_num_filter_6"),
    ("checkpoint/lenet-symbol.json", "attr_8_num_filter_6"),
}


@pytest.mark.parametrize(
    "every", [4, pytest.param(1, marks=pytest.mark.slow)], ids=["quarter", "all"]
)
def test_targeted_symbol_mutants_refused_as_mxnet_refuses(every):
    import file_mutations as fm
    import targeted_mutations as tm

    verdicts = json.loads((FIXTURES / "issue26" / "symbol_verdicts.json").read_text())["bases"]
    loaded_but_refused_by_mxnet, refused_but_mxnet_binds = set(), []
    for rel, v in verdicts.items():
        cases = tm.symbol_mutants(fm.read_base(rel).decode())
        assert len(cases) == v["n"]
        for k, (case, text) in list(enumerate(cases))[::every]:
            try:
                mx.sym.load_json(text, source="t.json")
                loaded = True
            except (MXNetFileError, NotImplementedError) as e:
                assert "t.json" in str(e)
                loaded = False
            if loaded and v["load"][k] != "A":
                loaded_but_refused_by_mxnet.add((rel, case))
            unsupported = "__storage_type__" in case  # sparse storage (NotImplementedError)
            if not loaded and v["bind"][k] == "B" and not unsupported:
                refused_but_mxnet_binds.append((rel, case))
    assert loaded_but_refused_by_mxnet <= OPS_BOUNDS
    assert all(c.endswith(LONG_SUFFIX) for _, c in refused_but_mxnet_binds)


@pytest.mark.parametrize(
    "make, name",
    [
        (lambda: mx.lr_scheduler.FactorScheduler(step="10"), "step"),
        (lambda: mx.lr_scheduler.FactorScheduler(step=10, base_lr="0.1"), "base_lr"),
        (lambda: mx.lr_scheduler.FactorScheduler(step=10, factor="0.5"), "factor"),
        (lambda: mx.lr_scheduler.PolyScheduler(100, base_lr="0.1"), "base_lr"),
        (lambda: mx.lr_scheduler.PolyScheduler(100, pwr="2"), "pwr"),
        (lambda: mx.lr_scheduler.CosineScheduler(100, final_lr="0"), "final_lr"),
        (lambda: mx.lr_scheduler.MultiFactorScheduler(step=[5, "10"]), r"step\[1\]"),
        (lambda: mx.lr_scheduler.FactorScheduler(step=5, warmup_begin_lr="0"), "warmup_begin_lr"),
    ],
)
def test_schedule_settings_given_as_strings_name_the_fix(make, name):
    with pytest.raises(TypeError, match=f"{name} must be a .*number, got '.*'; pass .* without"):
        make()


def test_attributes_mxnet_refuses_are_refused_when_the_graph_is_built():
    """MXNet 1.9.1's verdicts: num_filter has a lower bound of 1; a float literal out of
    range is refused ('inf' itself is a float); Python 2's long literals '(2L, 3L)' read."""
    x = mx.sym.var("x")
    with pytest.raises(mx.MXNetError, match="num_filter='0' is invalid: expected an integer >= 1"):
        mx.sym.Convolution(x, kernel=(3, 3), num_filter="0")
    with pytest.raises(mx.MXNetError, match="'1e400' is out of the range of a float"):
        mx.sym.LeakyReLU(x, slope="1e400")
    assert mx.sym.LeakyReLU(x, slope="inf").infer_shape(x=(2, 2))[1] == [(2, 2)]
    assert mx.sym.Reshape(x, shape="(2L, 3L)").infer_shape(x=(6,))[1] == [(2, 3)]
