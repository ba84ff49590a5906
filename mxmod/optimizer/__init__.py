"""Optimizers: MXNet's ``mx.optimizer`` (mxmod also exports it as ``mx.opt``).

Every optimizer has MXNet's imperative API (``create_state``, ``update`` on NDArrays, used
through :class:`Updater`) and a pure functional core for compiled training
(``fused_init``/``fused_update``/``fused_hyper``, ``to_optax``); both come from one
per-parameter rule, so they give the same numbers. See ``README.md``.
"""

from . import adaptive, sgd, sgd_family, testing
from .adaptive import *  # noqa: F401,F403
from .sgd_family import *  # noqa: F401,F403
from ._fused import OptaxState
from .optimizer import Optimizer, create, register
from .sgd import SGD, ccSGD
from .testing import Test
from .updater import Updater, get_updater

__all__ = [
    "Optimizer",
    "OptaxState",
    "register",
    "create",
    "Updater",
    "get_updater",
    "SGD",
    "ccSGD",
    "Test",
    "sgd",
    *sgd_family.__all__,
    *adaptive.__all__,
]
