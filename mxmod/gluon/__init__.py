"""``mx.gluon`` stand-in: importing works, using anything raises NotImplementedError.

MXNet's Gluon (imperative ``Block``/``HybridBlock``, ``Trainer``, ``gluon.nn``...) is
outside mxmod, which implements the symbolic Module API. Scripts that import Gluon
for a name they never use load unchanged; ``from mxnet.gluon import nn`` and
``from mxnet.gluon.nn import Dense`` give stand-ins whose first use raises, naming the
Module-API replacement.
"""

from .._placeholder import install_stub_modules, package_getattr

_ADVICE = (
    "Gluon is outside mxmod (the symbolic Module API); build the network with mx.sym "
    "and train it with mx.mod.Module (model-zoo networks: load their exported "
    "-symbol.json/.params with mx.model.load_checkpoint)"
)

__getattr__ = package_getattr(__name__, "mx.gluon", _ADVICE)
install_stub_modules(__name__, "mx.gluon", _ADVICE)  # `from mxnet.gluon.nn import Dense` loads
