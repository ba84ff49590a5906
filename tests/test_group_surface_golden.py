"""MXNet 1.9.1's ``DataParallelExecutorGroup`` surface, checked against real MXNet.

Goldens: ``tests/fixtures/group_surface/`` (``gen_group_surface_goldens.py``, run under
MXNet 1.9.1): the structure (shapes, contexts, slices) of ``param_arrays``,
``grad_arrays``, ``aux_arrays``, ``data_arrays``, ``label_arrays``, ``input_grad_arrays``
and the executors' dicts right after bind and after one step, with their values; which
object identities hold; ``decide_slices``/``_sliced_shape``; reshape before any forward;
what ``install_monitor`` makes a Monitor report.
"""

import json
import os
from collections import defaultdict

import numpy as np
import pytest

import mxmod as mx


HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "group_surface")
with open(os.path.join(HERE, "surface.json")) as _f:
    GOLD = json.load(_f)
FLAT = np.load(os.path.join(HERE, "surface.npz"))["flat"]
BATCH, FEAT = GOLD["batch"], GOLD["feat"]


def arr(key):
    off, shape = GOLD["arrays"][key]
    return FLAT[off : off + int(np.prod(shape))].reshape(shape)


def mlp():
    x = mx.sym.Variable("data")
    x = mx.sym.FullyConnected(x, name="fc1", num_hidden=6)
    x = mx.sym.Activation(x, name="relu1", act_type="relu")
    x = mx.sym.FullyConnected(x, name="fc2", num_hidden=3)
    return mx.sym.SoftmaxOutput(x, name="softmax")


def bn_net():
    x = mx.sym.Variable("data")
    x = mx.sym.FullyConnected(x, name="fc1", num_hidden=6)
    x = mx.sym.BatchNorm(x, name="bn1", fix_gamma=False)
    x = mx.sym.Activation(x, name="relu1", act_type="relu")
    x = mx.sym.FullyConnected(x, name="fc2", num_hidden=3)
    return mx.sym.SoftmaxOutput(x, name="softmax")


NETS = {"mlp": mlp, "bn": bn_net}


def contexts(n):
    return [mx.cpu(k) for k in range(n)]


def batch_of(seed, batch=BATCH):
    x, y = arr(f"input/{seed}/{batch}/data"), arr(f"input/{seed}/{batch}/label")
    return mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)])


def initial(net):
    args = {
        k.rsplit("/", 1)[1]: mx.nd.array(arr(k))
        for k in GOLD["arrays"]
        if k.startswith(f"init/{net}/arg/")
    }
    aux = {
        k.rsplit("/", 1)[1]: mx.nd.array(arr(k))
        for k in GOLD["arrays"]
        if k.startswith(f"init/{net}/aux/")
    }
    return args, aux


def module(net, ndev, **bind_kw):
    mod = mx.mod.Module(NETS[net](), context=contexts(ndev))
    mod.bind([("data", (BATCH, FEAT))], [("softmax_label", (BATCH,))], **bind_kw)
    mod.init_params(arg_params=initial(net)[0], aux_params=initial(net)[1])
    return mod


# ------------------------------------------------------------------ descriptions
def desc(x, key=None, checked=None):
    """The generator's description of ``x``; values under ``key`` are compared with the
    golden's (``checked`` counts them)."""
    if x is None:
        return None
    if isinstance(x, mx.nd.NDArray):
        if key is not None and key in GOLD["arrays"]:
            np.testing.assert_allclose(x.asnumpy(), arr(key), rtol=1e-5, atol=5e-6, err_msg=key)
            if checked is not None:
                checked.append(key)
        return {"nd": list(x.shape), "ctx": str(x.context), "dtype": np.dtype(x.dtype).name}
    sub = (lambda i: None) if key is None else (lambda i: f"{key}/{i}")
    if isinstance(x, slice):
        return {"slice": [x.start, x.stop, x.step]}
    if isinstance(x, tuple):
        return {"tuple": [desc(v, sub(i), checked) for i, v in enumerate(x)]}
    if isinstance(x, list):
        return [desc(v, sub(i), checked) for i, v in enumerate(x)]
    if isinstance(x, dict):
        return {"dict": [[k, desc(v, sub(k), checked)] for k, v in x.items()]}
    return {"repr": repr(x)}


GROUP_ATTRS = [
    "param_arrays",
    "grad_arrays",
    "aux_arrays",
    "data_arrays",
    "label_arrays",
    "state_arrays",
    "input_grad_arrays",
]
EXEC_ATTRS = ["arg_dict", "grad_dict", "aux_dict", "arg_arrays", "grad_arrays", "aux_arrays"]


def check_surface(g, want, key=None, shared=True, no_values=()):
    checked = []
    for a in GROUP_ATTRS:
        at = key and a not in no_values and f"{key}/{a}"
        assert desc(getattr(g, a), at or None, checked) == want[a], a
    assert len(g.execs) == len(want["execs"])
    for e, we in zip(g.execs, want["execs"]):
        for a in EXEC_ATTRS:
            assert desc(getattr(e, a)) == we[a], a
    assert [[list(o.shape) for o in e.outputs] for e in g.execs] == want["exec_outputs_shapes"]
    assert g.batch_size == want["batch_size"]
    assert desc(g.slices) == want["slices"]
    assert list(g.data_layouts) == want["data_layouts"]
    assert list(g.label_layouts) == want["label_layouts"]
    default = None if g._default_execs is None else len(g._default_execs)
    assert default == want["default_execs"]
    if shared:  # after a reshape MXNet's still hold the first binding's arrays
        pool = [sorted([n, list(a.shape)] for n, a in d.items()) for d in g.shared_data_arrays]
        assert pool == want["shared_data_arrays"]
    assert [[d.name, list(d.shape)] for d in g.data_shapes] == want["data_shapes"]
    assert [[d.name, list(d.shape)] for d in g.label_shapes] == want["label_shapes"]
    return checked


CASES = ["mlp_1", "mlp_2", "bn_1", "bn_2"]


@pytest.mark.parametrize("case", CASES)
def test_surface_at_bind_and_after_a_step(case):
    net, ndev = case.split("_")
    gold = GOLD["surface"][case]
    mod = module(net, int(ndev))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    g = mod._exec_group
    # before any forward: every array exists, data and gradients hold zeros
    checked = check_surface(g, gold["bind"], f"{case}/bind")
    assert any("/data_arrays/" in k for k in checked) and any("/grad_arrays/" in k for k in checked)
    mod.forward_backward(batch_of(1))
    mod.update()
    # per-device gradients after the fused step: test_per_device_gradients_after_update
    # aux states: mxmod averages them over the devices every step (README), MXNet in
    # get_params; each device holds MXNet's average
    skip = ("grad_arrays", "aux_arrays") if ndev == "2" else ()
    checked += check_surface(g, gold["step"], f"{case}/step", no_values=skip)
    for i, row in enumerate(g.aux_arrays if skip else []):
        mean = np.mean([arr(f"{case}/step/aux_arrays/{i}/{k}") for k in range(len(row))], 0)
        for view in row:
            np.testing.assert_allclose(view.asnumpy(), mean, rtol=1e-5, atol=5e-6)
    for k, e in enumerate(g.execs):
        desc(e.outputs, f"{case}/step/execs/{k}/outputs", checked)
    arg, aux = mod.get_params()
    desc(arg, f"{case}/step/get_params/arg", checked)
    desc(aux, f"{case}/step/get_params/aux", checked)
    want = {k for k in GOLD["arrays"] if k.startswith(f"{case}/")}
    assert set(checked) == {k for k in want if not any(f"/step/{a}/" in k for a in skip)}


GET_OUTPUTS = "get_outputs(False)[0][{k}] is execs[{k}].outputs[0]"


def identities(g, outputs=True):
    """The generator's identity checks, on mxmod's group (``outputs=False``: without
    ``get_outputs``)."""
    arg_names, aux_names = g.arg_names, g.aux_names
    res = {}
    for k, e in enumerate(g.execs):
        pi = [j for j, n in enumerate(arg_names) if n in g.param_names]
        res[f"param_arrays[i][{k}] is execs[{k}].arg_arrays[j]"] = all(
            g.param_arrays[i][k] is e.arg_arrays[j] for i, j in enumerate(pi)
        )
        if g.grad_arrays is not None:
            res[f"grad_arrays[i][{k}] is execs[{k}].grad_arrays[j]"] = all(
                g.grad_arrays[i][k] is e.grad_arrays[j] for i, j in enumerate(pi)
            )
        res[f"aux_arrays[i][{k}] is execs[{k}].aux_arrays[i]"] = all(
            g.aux_arrays[i][k] is e.aux_arrays[i] for i in range(len(aux_names))
        )
        res[f"data_arrays[i][{k}][1] is execs[{k}].arg_dict[name]"] = all(
            g.data_arrays[i][k][1] is e.arg_dict[n] for i, n in enumerate(g.data_names)
        )
        res[f"label_arrays[i][{k}][1] is execs[{k}].arg_dict[name]"] = all(
            g.label_arrays[i][k][1] is e.arg_dict[n] for i, n in enumerate(g.label_names)
        )
        res[f"execs[{k}].arg_dict[name] is execs[{k}].arg_arrays[j]"] = all(
            e.arg_dict[n] is e.arg_arrays[j] for j, n in enumerate(arg_names)
        )
        res[f"execs[{k}].grad_dict[name] is execs[{k}].grad_arrays[j]"] = all(
            e.grad_dict[n] is e.grad_arrays[j]
            for j, n in enumerate(arg_names)
            if e.grad_arrays[j] is not None
        )
        res[f"execs[{k}].aux_dict[name] is execs[{k}].aux_arrays[i]"] = all(
            e.aux_dict[n] is e.aux_arrays[i] for i, n in enumerate(aux_names)
        )
        res[f"execs[{k}].outputs[0] is execs[{k}].outputs[0]"] = e.outputs[0] is e.outputs[0]
        if outputs:
            res[GET_OUTPUTS.format(k=k)] = (
                g.get_outputs(merge_multi_context=False)[0][k] is e.outputs[0]
            )
        if g.input_grad_arrays is not None:
            ji = arg_names.index("data")
            res[f"input_grad_arrays[0][{k}] is execs[{k}].grad_arrays[j]"] = (
                g.input_grad_arrays[0][k] is e.grad_arrays[ji]
            )
    res["param_arrays is param_arrays"] = g.param_arrays is g.param_arrays
    res["execs[0] is execs[0]"] = g.execs[0] is g.execs[0]
    return res


def snapshot(g):
    return {
        "param_arrays": g.param_arrays,
        "grad_arrays": g.grad_arrays,
        "data_arrays": g.data_arrays,
        "execs": list(g.execs),
        "w": g.execs[0].arg_dict["fc1_weight"],
    }


def kept_identities(before, g):
    return {
        "param_arrays": before["param_arrays"] is g.param_arrays,
        "param_arrays[0][0]": before["param_arrays"][0][0] is g.param_arrays[0][0],
        "grad_arrays[0][0]": before["grad_arrays"][0][0] is g.grad_arrays[0][0],
        "data_arrays[0][0][1]": before["data_arrays"][0][0][1] is g.data_arrays[0][0][1],
        "execs[0]": before["execs"][0] is g.execs[0],
        "execs[0].arg_dict[fc1_weight]": before["w"] is g.execs[0].arg_dict["fc1_weight"],
    }


@pytest.mark.parametrize("case", CASES)
def test_identities(case):
    net, ndev = case.split("_")
    gold = GOLD["surface"][case]
    mod = module(net, int(ndev))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    g = mod._exec_group
    want = {n: v for n, v in gold["ids_bind"].items() if not n.startswith("get_outputs")}
    assert identities(g, outputs=False) == want
    before = snapshot(g)
    mod.forward_backward(batch_of(1))
    mod.update()
    assert identities(g) == gold["ids_step"]
    assert kept_identities(before, g) == gold["kept_after_step"]


def test_input_grad_arrays():
    gold = GOLD["surface"]["mlp_2_igrad"]
    mod = module("mlp", 2, inputs_need_grad=True)
    g = mod._exec_group
    check_surface(g, gold["bind"])
    want = {n: v for n, v in gold["ids_bind"].items() if not n.startswith("get_outputs")}
    assert identities(g, outputs=False) == want
    mod.forward_backward(batch_of(1))
    check_surface(g, gold["step"])
    checked = []
    desc(g.input_grad_arrays, "mlp_2_igrad/step/input_grad_arrays", checked)
    assert len(checked) == 2
    # no input gradients asked: None (MXNet), and none without training
    assert module("mlp", 2)._exec_group.input_grad_arrays is None
    mod = mx.mod.Module(mlp(), context=contexts(2))
    mod.bind([("data", (BATCH, FEAT))], [("softmax_label", (BATCH,))], for_training=False)
    check_surface(mod._exec_group, GOLD["surface"]["mlp_2_infer"]["bind"])


@pytest.mark.parametrize("rec", GOLD["decide_slices"], ids=lambda r: str(r["shapes"]))
def test_decide_slices(rec):
    g = module("mlp", 2)._exec_group
    descs = [mx.io.DataDesc(n, tuple(s), layout=lay) for n, s, lay in rec["shapes"]]
    if rec.get("keep_batch"):  # a bound group keeps its batch size
        with pytest.raises(AssertionError):
            g.decide_slices(descs)
        assert g.batch_size == rec["batch_size"]
        assert g.decide_slices([mx.io.DataDesc("data", (4, 5), layout="NC")]) == rec["same"]
        assert desc(g.slices) == rec["slices"]
        return
    g.workload = rec["workload"]
    g.batch_size, g.slices = None, None
    if "error" in rec:
        with pytest.raises(getattr(__builtins__, rec["error"], None) or eval(rec["error"])):
            g.decide_slices(descs)
        assert g.batch_size == rec["batch_size"]
        return
    axes = g.decide_slices(descs)
    assert axes == rec["major_axis"]
    assert g.batch_size == rec["batch_size"] and desc(g.slices) == rec["slices"]
    got = [
        [[d.name, list(d.shape), np.dtype(d.dtype).name, d.layout] for d in sl]
        for sl in (g._sliced_shape(descs, i, axes) for i in range(len(g.slices)))
    ]
    assert got == rec["sliced_shape"]
    assert all(isinstance(d, mx.io.DataDesc) for d in g._sliced_shape(descs, 0, axes))


@pytest.mark.parametrize("how", ["module", "group", "bind_exec"])
@pytest.mark.parametrize("ndev", [1, 2])
def test_reshape_before_any_forward(how, ndev):
    case = f"reshape_{how}_{ndev}"
    gold = GOLD["reshape"][case]
    mod = module("mlp", ndev)
    g = mod._exec_group
    before = snapshot(g)
    execs0 = list(g.execs)
    shapes = [mx.io.DataDesc("data", (2 * BATCH, FEAT))]
    labels = [mx.io.DataDesc("softmax_label", (2 * BATCH,))]
    if how == "module":
        mod.reshape(shapes, labels)
    elif how == "group":
        g.reshape(shapes, labels)
    else:
        g._default_execs = list(g.execs)
        g.bind_exec(shapes, labels, reshape=True)
    check_surface(g, gold["reshaped"], shared=False)
    assert kept_identities(before, g) == gold["kept"]
    same_old = g._default_execs is not None and all(
        a is b for a, b in zip(g._default_execs, execs0)
    )
    assert same_old == gold["default_execs_are_old_execs"]
    mod.forward(batch_of(2, 2 * BATCH), is_train=False)
    desc(mod.get_outputs(), f"{case}/outputs", checked := [])
    assert len(checked) == 1


def by_name(entries):
    out = defaultdict(list)
    for _, name, value in entries:
        out[name].append(None if value is None else float(value))
    return out


@pytest.mark.parametrize("case", CASES)
def test_install_monitor(case):
    net, ndev = case.split("_")
    gold = GOLD["monitor"][case]
    mod = module(net, int(ndev))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    mon = mx.mon.Monitor(1)
    mod._exec_group.install_monitor(mon)
    assert len(mon.exes) == gold["n_exes"]
    mon.tic()
    mod.forward_backward(batch_of(1))
    mod.update()
    got = by_name((s, n, v.split()[0]) for s, n, v in mon.toc())
    want = by_name(gold["toc"])
    assert set(got) == set(want)  # BatchNorm's hidden mean and var included
    # gradients of arguments with grad_req 'null' (label, data): MXNet never writes them
    want = {n: v for n, v in want.items() if None not in v}
    for i, name in enumerate(("bn1_moving_mean", "bn1_moving_var") if net == "bn" else ()):
        # averaged over the devices (README): the RMS of the average of MXNet's values
        # after the same step (the surface golden's)
        rows = [arr(f"{case}/step/aux_arrays/{i}/{k}") for k in range(int(ndev))]
        rms = float(np.sqrt(np.mean(np.mean(rows, 0) ** 2)))
        want[name] = [rms] * int(ndev)
    for name in want:  # each device's value, in device order
        np.testing.assert_allclose(got[name], want[name], rtol=1e-4, atol=5e-6, err_msg=name)


def test_get_outputs_per_device_before_any_forward():
    g = module("mlp", 2)._exec_group
    outs = g.get_outputs(merge_multi_context=False)
    assert all(outs[0][k] is g.execs[k].outputs[0] for k in range(2))


def test_per_device_gradients_after_update():
    """MXNet's grad_arrays[i][k] after update: device k's own gradient."""
    mod = module("mlp", 2)
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    g = mod._exec_group
    grads = g.grad_arrays  # asked before the step
    mod.forward_backward(batch_of(1))
    mod.update()
    desc(grads, "mlp_2/step/grad_arrays", checked := [])
    assert len(checked) == 8
    # one fused program keeps each device's gradient: no separate forward-backward or update
    assert sorted({k[0] for k in g._progs._cache}) == ["step"]


def test_monitor_reports_batchnorm_mean_and_var():
    mod = module("bn", 1)
    mon = mx.mon.Monitor(1, pattern="bn1_(mean|var)")
    mod._exec_group.install_monitor(mon)
    mon.tic()
    mod.forward_backward(batch_of(1))
    got = by_name((s, n, v.split()[0]) for s, n, v in mon.toc())
    want = {n: v for n, v in by_name(GOLD["monitor"]["bn_1"]["toc"]).items() if n in got}
    assert sorted(got) == ["bn1_mean", "bn1_var"]
    for name in got:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-4)


def test_writing_data_arrays_before_any_forward_feeds_the_executors():
    """MXNet's bound data buffers can be filled directly, then the executors run."""
    mod = module("mlp", 2)
    g = mod._exec_group
    x = arr(f"input/1/{BATCH}/data")
    for s, view in g.data_arrays[0]:
        assert not view.asnumpy().any()  # zeros until a batch is loaded
        view[:] = x[s]
    g.execs[0].forward(is_train=False)
    for k, e in enumerate(g.execs):
        desc(e.outputs, f"mlp_2/step/execs/{k}/outputs", checked := [])
        assert len(checked) == 1
