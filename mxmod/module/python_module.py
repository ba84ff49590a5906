"""``PythonModule`` / ``PythonLossModule``: modules computed in Python (spec 1.6)."""

from __future__ import annotations

import logging

from .. import ndarray as nd
from ..base import MXNetError, as_list, names_list
from .base_module import BaseModule
from .input_checks import _parse_data_desc_list
from .stages import StageError


def _named_shapes(shapes, kind: str, names) -> list:
    """``{kind}_shapes`` as DataDescs, named as the module's ``{kind}_names`` in order."""
    descs = _parse_data_desc_list(shapes, f"{kind}_shapes")
    given = [d.name for d in descs]
    if names is None or given != names:
        raise MXNetError(
            f"{kind}_shapes name {given} but this module's {kind}_names are {names} "
            "(same names, same order)"
        )
    return descs


class PythonModule(BaseModule):
    """MXNet's ``mx.mod.PythonModule``: the base of modules whose computation is written
    in Python (no parameters, no optimizer); subclasses implement
    ``_compute_output_shapes``, ``forward``, ``get_outputs`` and, for training,
    ``backward``/``get_input_grads``.

    Difference from MXNet (the fix spec 1.6 lists): ``bind``, ``init_params`` and
    ``init_optimizer`` set ``binded``, ``params_initialized`` and
    ``optimizer_initialized``, so a bare PythonModule runs ``fit``/``score``/``predict``
    on its own (MXNet's never set them, so it only worked inside a SequentialModule).

    Args:
        data_names, label_names, output_names: the module's input and output names.
        logger: as every module.
    """

    def __init__(self, data_names, label_names, output_names, logger=logging):
        super().__init__(logger=logger)
        self._data_names = names_list(data_names)
        self._label_names = None if label_names is None else as_list(label_names)
        self._output_names = names_list(output_names)
        self._data_shapes = None
        self._label_shapes = None
        self._output_shapes = None

    data_names = property(lambda self: self._data_names)
    output_names = property(lambda self: self._output_names)
    data_shapes = property(lambda self: self._data_shapes)
    label_shapes = property(lambda self: self._label_shapes)
    output_shapes = property(lambda self: self._output_shapes)

    def get_params(self):
        """``({}, {})``: a PythonModule has no parameters (subclasses may override)."""
        return {}, {}

    def init_params(self, *args, **kwargs):
        """Nothing to initialise (MXNet's arguments, all ignored); marks the module
        initialised."""
        self.params_initialized = True

    def update(self):
        """No parameters to update (subclasses with parameters override this)."""

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """``eval_metric.update(labels, get_outputs())``; nothing when bound without
        labels."""
        if self._label_shapes is None:
            return
        if pre_sliced:
            raise RuntimeError("PythonModule does not support presliced labels")
        eval_metric.update(labels, self.get_outputs())

    def _bind(self, data_shapes, label_shapes, shared_module, force_rebind):
        """Record the shapes (names must be in the module's order) and compute the output
        shapes."""
        if self._grad_req != "write":
            raise NotImplementedError(
                f"{type(self).__name__}.bind(grad_req={self._grad_req!r}): "
                "a Python module only supports grad_req='write'"
            )
        self._data_shapes = _named_shapes(data_shapes, "data", self._data_names)
        if label_shapes is not None:
            label_shapes = _named_shapes(label_shapes, "label", self._label_names)
        self._label_shapes = label_shapes
        self._output_shapes = self._compute_output_shapes()

    def _compute_output_shapes(self):
        """``[(output_name, shape), ...]`` from ``self._data_shapes``/``_label_shapes``;
        subclasses implement it."""
        raise NotImplementedError(f"{type(self).__name__} must implement _compute_output_shapes()")

    def init_optimizer(self, *args, **kwargs):
        """No optimizer is needed (MXNet's arguments, all ignored); marks the module ready
        to train."""
        self.optimizer_initialized = True


class PythonLossModule(PythonModule):
    """MXNet's ``mx.mod.PythonLossModule``: a loss written in Python. Its output is its
    input (the scores); ``backward`` asks ``grad_func(scores, labels)`` for the gradient
    of the loss with respect to the scores.

    Args:
        name: the output is named ``name + '_output'``.
        data_names, label_names: exactly one name each.
        logger: as every module.
        grad_func: ``(scores: NDArray, labels: NDArray) -> gradient`` (NDArray or
            array-like). Without it, subclass and override ``_backward_impl``.
    """

    def __init__(
        self,
        name="pyloss",
        data_names=("data",),
        label_names=("softmax_label",),
        logger=logging,
        grad_func=None,
    ):
        super().__init__(data_names, label_names, [name + "_output"], logger=logger)
        if len(self._data_names) != 1 or len(self._label_names or []) != 1:
            raise MXNetError(
                f"PythonLossModule takes exactly one data name and one label "
                f"name, got data_names={list(data_names)}, "
                f"label_names={list(label_names or [])}"
            )
        if grad_func is not None and not callable(grad_func):
            raise TypeError(
                f"grad_func must be callable (scores, labels) -> gradient, got "
                f"{type(grad_func).__name__}"
            )
        self._name = name
        self._scores = None
        self._labels = None
        self._scores_grad = None
        self._grad_func = grad_func

    def _compute_output_shapes(self):
        return [(self._name + "_output", self._data_shapes[0].shape)]

    def forward(self, data_batch, is_train=None):
        """Keep the scores (and, when training, the labels) for ``backward``."""
        self._scores = data_batch.data[0]
        if is_train is None:
            is_train = self.for_training
        if is_train:
            self._labels = data_batch.label[0]

    def get_outputs(self, merge_multi_context=True):
        _merged_only("get_outputs", merge_multi_context)
        return [self._scores]

    def backward(self, out_grads=None):
        if out_grads is not None:
            raise MXNetError("For a loss module, out_grads should be None")
        if not self.for_training:
            raise StageError("backward() needs a module bound with for_training=True")
        self._backward_impl()

    def _backward_impl(self):
        """``self._scores_grad = grad_func(self._scores, self._labels)``."""
        if self._grad_func is None:
            raise NotImplementedError(
                "PythonLossModule without grad_func: pass "
                "grad_func=(scores, labels) -> gradient, or override "
                "_backward_impl"
            )
        grad = self._grad_func(self._scores, self._labels)
        if not isinstance(grad, nd.NDArray):
            grad = nd.array(grad)
        self._scores_grad = grad

    def get_input_grads(self, merge_multi_context=True):
        _merged_only("get_input_grads", merge_multi_context)
        return [self._scores_grad]

    def install_monitor(self, mon):
        raise NotImplementedError(
            "PythonLossModule.install_monitor: a Python loss has no executors to monitor"
        )


def _merged_only(method: str, merge_multi_context) -> None:
    if merge_multi_context is not True:
        raise MXNetError(
            f"PythonLossModule computes on one context: use {method}(merge_multi_context=True)"
        )
