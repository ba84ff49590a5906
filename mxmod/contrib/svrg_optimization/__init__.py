"""``mx.contrib.svrg_optimization``: SVRG training (MXNet's ``SVRGModule`` and the
optimizers it installs)."""

from . import svrg_module, svrg_optimizer
from .svrg_module import SVRGModule
from .svrg_optimizer import SVRGOptimizer, _AssignmentOptimizer, _SVRGOptimizer

__all__ = [
    "SVRGModule",
    "SVRGOptimizer",
    "_AssignmentOptimizer",
    "_SVRGOptimizer",
    "svrg_module",
    "svrg_optimizer",
]
