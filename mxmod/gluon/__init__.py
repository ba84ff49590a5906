"""``mx.gluon`` stand-in: importing and subclassing work, using anything raises
NotImplementedError.

MXNet's Gluon (imperative ``Block``/``HybridBlock``, ``Trainer``, ``gluon.nn``...) is
outside mxmod, which implements the symbolic Module API. Scripts that import Gluon
for a name they never use load unchanged; ``from mxnet.gluon import nn`` and
``from mxnet.gluon.nn import Dense`` give stand-ins whose first use raises, naming the
Module-API replacement; classes (``HybridBlock``, ``nn.Dense``...) can be subclassed, and
creating an instance raises (see ``_standin.py``).
"""

import sys

from ._standin import GluonFinder, gluon_attr

_ADVICE = (
    "Gluon is outside mxmod (the symbolic Module API); build the network with mx.sym "
    "and train it with mx.mod.Module (model-zoo networks: load their exported "
    "-symbol.json/.params with mx.model.load_checkpoint)"
)


def __getattr__(name):
    return gluon_attr(__name__, "mx.gluon", name, _ADVICE)


# `from mxnet.gluon.nn import Dense` loads (the finder goes last: real modules come first)
if not any(isinstance(f, GluonFinder) for f in sys.meta_path):
    sys.meta_path.append(GluonFinder(__name__, "mx.gluon", _ADVICE, ()))
