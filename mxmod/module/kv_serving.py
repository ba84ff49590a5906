"""What a Module's kvstore holds when the compiled step does the updating.

MXNet's Module pushes gradients to its kvstore and pulls the results every update: with
``update_on_kvstore`` the store holds the weights, else the last summed gradients (the
initial weights before any update). mxmod's fused step reduces and updates on the
devices, so the store serves those values from the Module when read (``KVStore.serve``):
``kv.pull``/``row_sparse_pull`` after ``init_optimizer(kvstore=kv)`` see what MXNet's would.
"""

from __future__ import annotations

from typing import Any


def serve_from_module(kv: Any, group: Any, names: list, update_on_kvstore: bool) -> None:
    """Serve each parameter of ``group`` under its name in ``kv``."""
    optimizer = group.state.opt.optimizer if group.state.opt is not None else None
    start = getattr(optimizer, "num_update", 0)
    for index, name in enumerate(names):
        if update_on_kvstore:
            kv.serve(name, lambda n=name: group._param_view(n, None), _owner(group, name))
        else:
            kv.serve(name, lambda i=index, n=name: _summed_grads(group, i, n, start))


def _owner(group: Any, name: str):
    """Whether an array is one of ``group``'s views of parameter ``name`` (the FM
    example row_sparse_pulls the store into ``_exec_group.param_arrays`` each batch)."""

    def owns(array: Any) -> bool:
        devices = [None, *range(len(group.contexts))]
        return any(array is group._param_view(name, k) for k in devices)

    return owns


def _summed_grads(group: Any, index: int, name: str, start: int) -> Any:
    """The devices' gradients of parameter ``index`` added; before the first update the
    weights (still the initial ones: MXNet's store holds those until then)."""
    box = group.state.opt
    if box is None or box.optimizer.num_update <= start:
        return group._param_view(name, None)
    grads = [g for g in group.grad_arrays[index] if g is not None]
    if not grads:
        return group._param_view(name, None)
    total = grads[0].copy()
    for g in grads[1:]:
        total += g.as_in_context(total.context)
    return total
