"""``mx.sym.sparse``: MXNet's sparse symbol constructors (its generated ``gen_sparse``
module). Each is the operator of the same name (``retain`` is ``_sparse_retain``): a graph
does not record storage, so ``mx.sym.sparse.dot`` and ``mx.sym.dot`` build the same node and
the executor picks the sparse lowering from the bound arrays (``symbol/stype.py``).
MXNet's sparse optimizer-update operators are not symbols mxmod has."""

from __future__ import annotations

from ..ops import OPS
from .creation import creator

_NAMES = (
    "ElementWiseSum Embedding FullyConnected LinearRegressionOutput LogisticRegressionOutput "
    "MAERegressionOutput abs add_n arccos arccosh arcsin arcsinh arctan arctanh broadcast_add "
    "broadcast_div broadcast_minus broadcast_mul broadcast_plus broadcast_sub cast_storage cbrt "
    "ceil clip concat cos cosh degrees dot elemwise_add elemwise_div elemwise_mul elemwise_sub "
    "exp expm1 fix floor gamma gammaln log log10 log1p log2 make_loss mean negative norm "
    "radians relu rint round rsqrt sigmoid sign sin sinh slice sqrt square stop_gradient sum "
    "tan tanh trunc where zeros_like"
).split()
_UPDATES = "adagrad_update adam_update ftrl_update sgd_mom_update sgd_update".split()

retain = creator("_sparse_retain", hint="retain")
_square_sum = creator("_square_sum")


def __getattr__(name: str):
    if name in _NAMES and name in OPS:
        fn = creator(name)
        globals()[name] = fn
        return fn
    if name in ("_contrib_round_ste", "_contrib_sign_ste"):
        fn = creator(name, hint=name)  # node names as MXNet: _contrib_round_ste0
        globals()[name] = fn
        return fn
    if name in _UPDATES or name in _NAMES:
        raise NotImplementedError(
            f"mx.sym.sparse.{name}: mxmod has no {name} symbol; optimizers update parameters "
            "in the training step (Module.update / mx.optimizer)"
        )
    raise AttributeError(f"mxmod.symbol.sparse has no attribute {name!r}")


def __dir__() -> list:
    return sorted([*_NAMES, "retain", "_square_sum", "_contrib_round_ste", "_contrib_sign_ste"])
