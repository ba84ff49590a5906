"""MXNet's module path ``mx.optimizer.optimizer``: MXNet 1.9.1 defines every optimizer here;
mxmod groups them by family (``sgd``, ``adam``, ...) and this module names them again, so
``from mxnet.optimizer.optimizer import SGD`` keeps working."""

from ..ndarray import abs as NDabs  # noqa: N812  (MXNet exports this name here)
from ._base import Optimizer, create, register
from .adagrad import AdaDelta, AdaGrad, Ftrl, RMSProp
from .adam import Adam, Adamax, Nadam
from .ftml import FTML
from .large_batch import LAMB, LARS, LBSGD
from .sgd import DCASGD, NAG, SGD, SGLD, Signum, ccSGD
from .testing import Test
from .updater import Updater, get_updater

__all__ = ["Optimizer", "register", "create", "AdaDelta", "AdaGrad", "Adam", "Adamax",
           "DCASGD", "FTML", "Ftrl", "LARS", "LBSGD", "NAG", "NDabs", "Nadam", "RMSProp",
           "SGD", "SGLD", "Signum", "LAMB", "Test", "Updater", "ccSGD", "get_updater"]  # fmt: skip
