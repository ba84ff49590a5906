"""``mx.nd`` / ``mx.ndarray``: NDArray and its imperative functions (MXNet namesake).

``NDArray`` is a thin mutable handle on a ``jax.Array`` (see
:mod:`mxmod.ndarray.ndarray`). ``save``/``load`` live in ``mxmod.ndarray.io``.
"""

import importlib
import sys

from ..ops import OPS, get_op
from . import _arith, _setget  # noqa: F401  (NDArray's operators and indexing)
from . import contrib, image, linalg, random, sparse
from .custom import nd_custom as Custom  # noqa: F401  (mx.nd.Custom)
from .histogram import histogram  # noqa: F401
from .io import load, load_frombuffer, save
from .op_table import nd_function
from .binary_funcs import *  # noqa: F403  (add, divide, equal ... as MXNet)
from .creation import arange, array, empty, full, ones, waitall, zeros
from .ndarray import NDArray, from_jax
from .sparse import CSRNDArray, RowSparseNDArray, cast_storage
from .ops import (
    abs,
    argmax,
    argmin,
    clip,
    dot,
    exp,
    log,
    log_softmax,
    max,
    maximum,
    mean,
    min,
    minimum,
    norm,
    one_hot,
    ones_like,
    pick,
    prod,
    softmax,
    sqrt,
    square,
    sum,
    where,
    zeros_like,
)
from .shape_ops import (
    broadcast_to,
    concat,
    concatenate,
    expand_dims,
    flatten,
    reshape,
    slice_axis,
    stack,
    transpose,
)

__all__ = [
    "NDArray",
    "from_jax",
    "contrib",
    "image",
    "linalg",
    "random",
    "sparse",
    "CSRNDArray",
    "RowSparseNDArray",
    "cast_storage",
    "array",
    "zeros",
    "ones",
    "full",
    "empty",
    "arange",
    "waitall",
    "abs",
    "argmax",
    "argmin",
    "broadcast_to",
    "clip",
    "concat",
    "concatenate",
    "dot",
    "exp",
    "expand_dims",
    "flatten",
    "log",
    "log_softmax",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "norm",
    "one_hot",
    "ones_like",
    "pick",
    "prod",
    "reshape",
    "slice_axis",
    "softmax",
    "sqrt",
    "square",
    "stack",
    "sum",
    "transpose",
    "where",
    "zeros_like",
]

__all__ += ["save", "load", "load_frombuffer"]


def __getattr__(name):
    """Every other operator of the table is available as ``mx.nd.<Op>``."""
    if name in ("utils", "_internal"):
        return importlib.import_module(f"{__name__}.{name}")
    if name == "Correlation":
        get_op(name)  # raises the out-of-scope NotImplementedError
    if name in OPS:
        fn = nd_function(name)
        globals()[name] = fn
        return fn
    raise AttributeError(f"module 'mxmod.ndarray' has no attribute {name!r}")


from . import extra as _extra  # noqa: E402
from .extra import *  # noqa: E402,F403

_extra.install()
__all__ += _extra.__all__

from . import update_ops as _update_ops  # noqa: E402
from .update_ops import *  # noqa: E402,F403

__all__ += _update_ops.__all__

from . import update_ops_mp as _update_ops_mp  # noqa: E402
from .update_ops_mp import *  # noqa: E402,F403

__all__ += _update_ops_mp.__all__

# every differentiable function of the namespaces on autograd's tape inside record()
from . import tape  # noqa: E402

for _ns in (sys.modules[__name__], contrib, linalg, image):
    tape.record_namespace(_ns)
