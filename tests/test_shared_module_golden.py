"""Per-device weights and shared weights against MXNet 1.9.1
(``tests/fixtures/group_surface/``):

* ``mx.model._update_params(..., kvstore=None)`` over 2 devices: each device's weights
  step with that device's own gradient and momentum, so the copies differ;
  ``get_params`` averages them (and ``Module.update()`` without a kvstore does the same).
* Two Modules sharing parameters (``bind(shared_module=first)``, which borrows the
  optimizer) stepping in turn: outputs, per-device parameters, aux states and
  ``get_params`` after every step.

One difference, a fixed MXNet bug: after ``second.update()`` MXNet's ``first.get_params()``
returns stale values (``first._params_dirty`` is never set); mxmod's returns the shared
weights as they are, which the stepping module's golden gives."""

import pytest

import mxmod as mx
from test_group_surface_golden import GOLD, NETS, batch_of, contexts, desc, module


def check_tree(x, key):
    checked = []
    desc(x, key, checked)
    assert checked, key


@pytest.mark.parametrize("case", ["shared_bn_1", "shared_mlp_2"])
def test_shared_module_pair_steps_in_turn(case):
    _, net, ndev = case.split("_")
    first = module(net, int(ndev))
    first.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.5, "momentum": 0.9})
    second = mx.mod.Module(NETS[net](), context=contexts(int(ndev)))
    second.bind(
        [("data", (GOLD["batch"], GOLD["feat"]))],
        [("softmax_label", (GOLD["batch"],))],
        shared_module=first,
    )
    assert (second._updater is first._updater) == GOLD["shared_module"][case]["borrowed_updater"]
    seed = 20
    for step in range(2):
        for who, mod in (("first", first), ("second", second)):
            mod.forward_backward(batch_of(seed))
            seed += 1
            check_tree(mod.get_outputs(), f"{case}/{step}/{who}/outputs")
            mod.update()
            check_tree(mod._exec_group.param_arrays, f"{case}/{step}/{who}/param_arrays")
            if mod._exec_group.aux_arrays and int(ndev) == 1:
                check_tree(mod._exec_group.aux_arrays, f"{case}/{step}/{who}/aux_arrays")
            for m in (first, second):  # both hold the weights the stepping module has
                arg, aux = m.get_params()
                check_tree(arg, f"{case}/{step}/{who}/get_params_{who}/arg")
                if aux:
                    check_tree(aux, f"{case}/{step}/{who}/get_params_{who}/aux")


@pytest.mark.parametrize("through", ["_update_params", "Module.update"])
def test_per_device_updates_without_a_kvstore(through):
    mod = module("mlp", 2)
    mod.init_optimizer(
        kvstore=None, optimizer="sgd", optimizer_params={"learning_rate": 0.5, "momentum": 0.9}
    )
    g = mod._exec_group
    assert mod._update_on_kvstore == GOLD["update_params"]["update_on_kvstore"]
    for step in range(2):
        mod.forward_backward(batch_of(10 + step))
        check_tree(g.grad_arrays, f"update_params/{step}/grad_arrays")
        if through == "Module.update":
            mod.update()
        else:
            mx.model._update_params(
                g.param_arrays,
                g.grad_arrays,
                updater=mod._updater,
                num_device=2,
                kvstore=None,
                param_names=g.param_names,
            )
        check_tree(g.param_arrays, f"update_params/{step}/param_arrays")
    check_tree(mod.get_params()[0], "update_params/get_params")
