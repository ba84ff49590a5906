"""``mx.contrib``: MXNet's contrib package. ``mx.contrib.symbol``/``mx.contrib.sym`` and
``mx.contrib.ndarray``/``mx.contrib.nd`` are the same modules as ``mx.sym.contrib`` and
``mx.nd.contrib`` (every ``_contrib_<Name>`` operator as ``<Name>``)."""

from ..ndarray import contrib as ndarray
from ..symbol import contrib as symbol
from . import amp, autograd, tensorboard, text

sym = symbol
nd = ndarray

__all__ = ["symbol", "sym", "ndarray", "nd", "amp", "autograd", "tensorboard", "text"]

# Parts of MXNet's contrib that have not arrived yet: importing them works (so
# `from mxnet.contrib import amp` at the top of a script loads); using them raises
# NotImplementedError naming the part. A real mxmod/contrib/<part>.py replaces its stand-in.
from .._placeholder import install_stub_modules as _install_stub_modules  # noqa: E402
from .._placeholder import package_getattr as _package_getattr  # noqa: E402

_MISSING = (
    "svrg_optimization",
    "onnx",
    "io",
    "quantization",
    "quant",
    "tensorrt",
)
_ADVICE = {
    "svrg_optimization": "use mx.mod.Module with an mx.optimizer optimizer",
    "*": "this contrib part is not implemented by mxmod",
}
__getattr__ = _package_getattr(__name__, "mx.contrib", _ADVICE, known=_MISSING)
_install_stub_modules(__name__, "mx.contrib", _ADVICE, known=_MISSING)
