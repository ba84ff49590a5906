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
            kv.serve(name, lambda n=name: group._param_view(n, None))
        else:
            initial = group._param_view(name, None).copy()
            kv.serve(name, lambda i=index, w=initial: _summed_grads(group, i, w, start))


def _summed_grads(group: Any, index: int, initial: Any, start: int) -> Any:
    box = group.state.opt
    if box is None or box.optimizer.num_update <= start:
        return initial
    grads = [g for g in group.grad_arrays[index] if g is not None]
    if not grads:
        return initial
    total = grads[0].copy()
    for g in grads[1:]:
        total += g.as_in_context(total.context)
    return total
