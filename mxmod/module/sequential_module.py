"""``SequentialModule``: modules chained output-to-input (spec 1.5)."""

from __future__ import annotations

import copy
import logging

from ..base import MXNetError
from ..io import DataDesc
from .base_module import BaseModule, _bound_property
from .composite import CompositeModule
from .stages import require


class SequentialModule(CompositeModule):
    """MXNet's ``mx.mod.SequentialModule``: runs its modules one after another, each
    layer's outputs being the next layer's data, and backpropagates through them in
    reverse (``get_input_grads`` of layer ``i + 1`` are the ``out_grads`` of layer
    ``i``). Each child keeps its own parameters and optimizer; every child that is a
    :class:`Module` runs its own compiled step.

    Meta options of :meth:`add`: ``take_labels=True`` gives the batch labels to that
    module (its metric is updated); ``auto_wiring=True`` renames the incoming data to
    the module's ``data_names``.

    Difference from MXNet: a wrong meta name or a mismatched wiring raises
    ``MXNetError`` naming it (MXNet asserted).
    """

    META_TAKE_LABELS = "take_labels"
    META_AUTO_WIRING = "auto_wiring"

    def __init__(self, logger=logging):
        super().__init__(logger=logger)
        self._modules: list = []
        self._metas: list = []
        self._label_shapes = None
        self._data_shapes = None
        self._monitor = None
        self._meta_keys = {self.META_TAKE_LABELS, self.META_AUTO_WIRING}

    def add(self, module, **kwargs):
        """Append ``module`` (with meta options); returns ``self`` so calls chain."""
        for key in kwargs:
            if key not in self._meta_keys:
                raise MXNetError(
                    f'Unknown meta "{key}", a typo? Use one of {sorted(self._meta_keys)}'
                )
        if not isinstance(module, BaseModule):
            raise TypeError(
                f"SequentialModule.add takes a module (mx.mod.Module, ...), got "
                f"{type(module).__name__}"
            )
        self._modules.append(module)
        self._metas.append(kwargs)
        # a new layer invalidates the whole chain's setup
        self.binded = False
        self.params_initialized = False
        self.optimizer_initialized = False
        return self

    # ------------------------------------------------------------ properties
    @property
    def data_names(self):
        return self._modules[0].data_names if self._modules else []

    @property
    def output_names(self):
        return self._modules[-1].output_names if self._modules else []

    data_shapes = _bound_property("data_shapes", lambda self: self._modules[0].data_shapes)
    label_shapes = _bound_property("label_shapes", lambda self: self._label_shapes)
    output_shapes = _bound_property("output_shapes", lambda self: self._modules[-1].output_shapes)

    def _child_modules(self) -> list:
        return self._modules

    _param_modules = _child_modules

    def _input_module(self) -> BaseModule:
        return self._modules[0]

    def _output_module(self) -> BaseModule:
        return self._modules[-1]

    def _takes_labels(self, i) -> bool:
        return bool(self._metas[i].get(self.META_TAKE_LABELS, False))

    # ------------------------------------------------------------ parameters
    def get_params(self):
        """The children's parameters merged into two dicts (later layers win)."""
        require(self, "get_params", "binded", "params_initialized")
        arg_params, aux_params = {}, {}
        for module in self._modules:
            arg, aux = module.get_params()
            arg_params.update(arg)
            aux_params.update(aux)
        return arg_params, aux_params

    def _after_init_params(self) -> None:
        """No two layers may hold a parameter of the same name."""
        seen: dict = {}
        for i, module in enumerate(self._modules):
            arg, aux = module.get_params()
            for name in list(arg) + list(aux):
                if name in seen:
                    raise MXNetError(
                        f"Duplicated parameter names: {name!r} is in layer {seen[name]} "
                        f"({type(self._modules[seen[name]]).__name__}) and layer {i} "
                        f"({type(module).__name__}); give the layers distinct names"
                    )
                seen[name] = i

    # ------------------------------------------------------------ binding
    def _bind(self, data_shapes, label_shapes, shared_module, force_rebind):
        """Bind every layer, feeding each the previous layer's ``output_shapes``."""
        if shared_module is not None:
            raise MXNetError("SequentialModule.bind(shared_module=...) is not supported")
        if not self._modules:
            raise MXNetError("Attempting to bind an empty SequentialModule: add() modules first")
        for_training, inputs_need_grad = self.for_training, self.inputs_need_grad
        self._label_shapes = label_shapes
        my_data = data_shapes
        any_labels = False
        for i, module in enumerate(self._modules):
            my_labels = None
            if self._takes_labels(i):
                my_labels = label_shapes
                any_labels = True
            if self._metas[i].get(self.META_AUTO_WIRING, False):
                names = module.data_names
                if len(names) != len(my_data):
                    raise MXNetError(
                        f"auto_wiring layer {i}: it has data_names {list(names)} but the "
                        f"previous layer gives {len(my_data)} outputs"
                    )
                my_data = [DataDesc(n, tuple(d[1])) for n, d in zip(names, my_data)]
            module.bind(
                data_shapes=my_data,
                label_shapes=my_labels,
                for_training=for_training,
                inputs_need_grad=inputs_need_grad or (for_training and i > 0),
                force_rebind=force_rebind,
                shared_module=None,
                grad_req=self._grad_req,
            )
            my_data = module.output_shapes
        if not any_labels:
            self._label_shapes = None

    # ------------------------------------------------------------ computation
    def forward(self, data_batch, is_train=None):
        require(self, "forward", "binded", "params_initialized")
        batch = copy.copy(data_batch)
        for i, module in enumerate(self._modules):
            module.forward(batch, is_train=is_train)
            if i + 1 == len(self._modules):
                break
            batch.data = module.get_outputs()
            if hasattr(batch, "provide_data"):
                names = [name for name, _ in module.output_shapes]
                if len(names) != len(batch.data):
                    raise MXNetError(
                        f"layer {i} reports {len(names)} output shapes but gave "
                        f"{len(batch.data)} outputs"
                    )
                batch.provide_data = [
                    DataDesc(n, tuple(x.shape)) for n, x in zip(names, batch.data)
                ]

    def backward(self, out_grads=None):
        require(self, "backward", "binded", "params_initialized")
        for i, module in reversed(list(enumerate(self._modules))):
            module.backward(out_grads=out_grads)
            if i == 0:
                break
            out_grads = module.get_input_grads()

    def update(self):
        require(self, "update", "binded", "params_initialized", "optimizer_initialized")
        for module in self._modules:
            module.update()

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Update ``eval_metric`` from every layer added with ``take_labels=True``."""
        require(self, "update_metric", "binded", "params_initialized")
        for i, module in enumerate(self._modules):
            if self._takes_labels(i):
                module.update_metric(eval_metric, labels, pre_sliced)
