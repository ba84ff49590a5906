"""MXNet's bind-time refusal of gradients through operators registered without one.

MXNet builds the backward graph when an executor is bound with gradients; an operator
without an ``FGradient`` on the way from a differentiated argument to an output (not cut
by ``BlockGrad``/``stop_gradient``) fails the bind. JAX would differentiate (or silently
zero) some of these, so the same graphs are refused here, with MXNet's message.
"""

from __future__ import annotations

from ..base import MXNetError
from ..symbol.graph import topo_order

# operators MXNet 1.9.1 registers without FGradient (checked by binding each with gradients)
NON_DIFFERENTIABLE = frozenset({"batch_take", "argmax_channel", "_contrib_allclose"})
_CUTS = frozenset({"BlockGrad"})  # its input gets no gradient: the backward stops there


def check_differentiable(sym, grad_names) -> None:
    """Raise as MXNet's bind does when a gradient of ``grad_names`` would pass through an
    operator without one."""
    grad_names = set(grad_names)
    if not grad_names:
        return
    order = topo_order(sym._outputs)
    from_grad: set = set()
    for node in order:
        if node.is_var:
            if node.name in grad_names:
                from_grad.add(id(node))
        elif any(id(c) in from_grad for c, _ in node.inputs):
            from_grad.add(id(node))
    reached = {id(h) for h, _ in sym._outputs}  # nodes a non-zero output gradient reaches
    for node in reversed(order):
        if id(node) not in reached or node.is_var or node.op.name in _CUTS:
            continue
        if node.op.name in NON_DIFFERENTIABLE and id(node) in from_grad:
            raise MXNetError(
                f"Operator {node.op.name} is non-differentiable because it didn't register "
                f"FGradient attribute (node {node.name!r}); bind with grad_req='null' for "
                f"the arguments before it, or cut the gradient with mx.sym.BlockGrad"
            )
        reached.update(id(c) for c, _ in node.inputs)
