"""``_SVRGOptimizer`` and ``_AssignmentOptimizer`` of MXNet's ``contrib.svrg_optimization``."""

from __future__ import annotations

from typing import Any

from ...base import as_list
from ...optimizer import Optimizer, create, register
from ...optimizer.fused import ClassOrInstance, Signature

# the settings the Optimizer base takes; the rest go to the wrapped optimizer only
_BASE_PARAMS = (
    "rescale_grad",
    "param_idx2name",
    "wd",
    "clip_gradient",
    "learning_rate",
    "lr_scheduler",
    "sym",
    "begin_num_update",
    "multi_precision",
    "param_dict",
)


@register
class _AssignmentOptimizer(Optimizer):
    """MXNet's ``_AssignmentOptimizer``: ``weight[:] = grad`` (how ``SVRGModule`` stores
    full gradients under ``<name>_full`` keys)."""

    def update(self, index, weight, grad, state):
        for w, g in zip(as_list(weight), as_list(grad)):
            w[:] = g


def _svrg_fused_supported(cls, obj, params=None) -> bool:
    if obj is None:
        return False
    return obj.default_opt.fused_supported(params)


@register
class _SVRGOptimizer(Optimizer):
    """MXNet's ``_SVRGOptimizer``: the optimizer ``SVRGModule`` installs. Keys whose name
    contains ``'full'`` go to an :class:`_AssignmentOptimizer`, the others to
    ``default_opt`` (the optimizer the user asked for, built from the same settings).

    In a compiled step (``fused_*``) it is ``default_opt``: the SVRG correction is
    applied to the gradients before the step (``SVRGModule.update``), so the update
    itself is the wrapped optimizer's, with its state layout and counts.

    Args:
        default_optimizer: an optimizer name or an :class:`Optimizer` instance.
        **kwargs: settings; the base ones (``learning_rate``, ``wd``, ...) also set this
            wrapper, all of them build ``default_opt`` when it is given by name.
    """

    def __init__(self, default_optimizer, **kwargs):
        base = {k: v for k, v in kwargs.items() if k in _BASE_PARAMS}
        super().__init__(**base)
        if isinstance(default_optimizer, str):
            self.default_opt = create(default_optimizer, **kwargs)
        elif isinstance(default_optimizer, Optimizer):
            self.default_opt = default_optimizer
        else:
            raise TypeError(
                f"default_optimizer must be an optimizer name or an "
                f"mx.optimizer.Optimizer, got {type(default_optimizer).__name__}"
            )
        self.aux_opt = create(_AssignmentOptimizer.__name__)

    def _check_index(self, index):
        """The parameter name of ``index`` (a name or an ``idx2name`` key)."""
        if index in self.idx2name.values():
            return index
        if index not in self.idx2name:
            raise KeyError(f"_SVRGOptimizer: index {index!r} is not in param_idx2name")
        return self.idx2name[index]

    def _pick(self, index):
        return self.aux_opt if "full" in str(self._check_index(index)) else self.default_opt

    def create_state(self, index, weight):
        return self._pick(index).create_state(index, weight)

    def update(self, index, weight, grad, state):
        if isinstance(index, (list, tuple)):
            for i, w, g, s in zip(index, weight, grad, state):
                self._pick(i).update(i, w, g, s)
        else:
            self._pick(index).update(index, weight, grad, state)

    # ---------------------------------------------------------- compiled step
    fused_supported = ClassOrInstance(_svrg_fused_supported)

    def fused_init(self, params: dict) -> dict:
        self._fused_names = tuple(params)
        return self.default_opt.fused_init(params)

    def fused_hyper(self, names: Any = None) -> dict:
        return self.default_opt.fused_hyper(names)

    def fused_signature(self, names: Any = None) -> Signature:
        return Signature(("svrg", self.default_opt.fused_signature(names)))

    def fused_update(self, params: dict, grads: dict, state: dict, hyper: dict) -> tuple:
        return self.default_opt.fused_update(params, grads, state, hyper)


SVRGOptimizer = _SVRGOptimizer
