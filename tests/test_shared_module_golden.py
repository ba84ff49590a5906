"""Two Modules sharing parameters (``bind(shared_module=first)``, which borrows the
optimizer) stepping in turn, against MXNet 1.9.1 (``tests/fixtures/group_surface/``):
outputs, per-device parameters, aux states and ``get_params`` after every step.

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
