"""Optimizers: MXNet's ``mx.optimizer`` (mxmod also exports it as ``mx.opt``).

Every optimizer has MXNet's imperative API (``create_state``, ``update`` on NDArrays, used
through :class:`Updater`) and a pure functional core for compiled training
(``fused_init``/``fused_update``/``fused_hyper``, ``to_optax``); both come from one
per-parameter rule, so they give the same numbers. See ``README.md``.
"""

from ..ndarray import abs as NDabs  # noqa: N812  (MXNet exports this name here)
from . import contrib, optimizer, updater  # noqa: F401  (submodules, as mx.optimizer.optimizer)
from ._base import Optimizer, create, register
from ._optax import OptaxState
from .adagrad import AdaDelta, AdaGrad, Ftrl, RMSProp
from .adam import Adam, Adamax, AdamW, Nadam
from .contrib import GroupAdaGrad
from .ftml import FTML
from .large_batch import LAMB, LARS, LBSGD
from .sgd import DCASGD, NAG, SGD, SGLD, Signum, ccSGD
from .testing import Test
from .updater import Updater, get_updater

__all__ = [
    "Optimizer",
    "OptaxState",
    "register",
    "create",
    "Updater",
    "get_updater",
    "NDabs",
    "SGD",
    "ccSGD",
    "NAG",
    "Signum",
    "DCASGD",
    "SGLD",
    "FTML",
    "LARS",
    "LAMB",
    "LBSGD",
    "Adam",
    "AdamW",
    "Adamax",
    "Nadam",
    "AdaGrad",
    "RMSProp",
    "AdaDelta",
    "Ftrl",
    "GroupAdaGrad",
    "Test",
    "contrib",
]
