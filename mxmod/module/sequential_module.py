"""``SequentialModule``: modules chained output-to-input (spec 1.5)."""

from __future__ import annotations

import copy
import logging

from ..base import MXNetError
from ..io import DataDesc
from .base_module import BaseModule
from .stages import require


class SequentialModule(BaseModule):
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

    @property
    def data_shapes(self):
        require(self, "data_shapes", "binded")
        return self._modules[0].data_shapes

    @property
    def label_shapes(self):
        require(self, "label_shapes", "binded")
        return self._label_shapes

    @property
    def output_shapes(self):
        require(self, "output_shapes", "binded")
        return self._modules[-1].output_shapes

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

    def init_params(
        self,
        initializer=None,
        arg_params=None,
        aux_params=None,
        allow_missing=False,
        force_init=False,
        allow_extra=False,
    ):
        if self.params_initialized and not force_init:
            return
        require(self, "init_params", "binded")
        for module in self._modules:
            module.init_params(
                initializer=initializer,
                arg_params=arg_params,
                aux_params=aux_params,
                allow_missing=allow_missing,
                force_init=force_init,
                allow_extra=allow_extra,
            )
        self._check_unique_names()
        self.params_initialized = True

    def _check_unique_names(self) -> None:
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
    def bind(
        self,
        data_shapes,
        label_shapes=None,
        for_training=True,
        inputs_need_grad=False,
        force_rebind=False,
        shared_module=None,
        grad_req="write",
    ):
        """Bind every layer, feeding each the previous layer's ``output_shapes``."""
        if self.binded and not force_rebind:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if inputs_need_grad and not for_training:
            raise MXNetError("inputs_need_grad=True needs for_training=True")
        if shared_module is not None:
            raise MXNetError("SequentialModule.bind(shared_module=...) is not supported")
        if not self._modules:
            raise MXNetError("Attempting to bind an empty SequentialModule: add() modules first")
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self.binded = True
        self._label_shapes = label_shapes
        my_data = data_shapes
        any_labels = False
        try:
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
                    grad_req=grad_req,
                )
                my_data = module.output_shapes
        except BaseException:
            self.binded = False
            raise
        if not any_labels:
            self._label_shapes = None

    def init_optimizer(
        self,
        kvstore="local",
        optimizer="sgd",
        optimizer_params=(("learning_rate", 0.01),),
        force_init=False,
    ):
        require(self, "init_optimizer", "binded", "params_initialized")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring.")
            return
        for module in self._modules:
            module.init_optimizer(
                kvstore=kvstore,
                optimizer=optimizer,
                optimizer_params=optimizer_params,
                force_init=force_init,
            )
        self.optimizer_initialized = True

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

    def get_outputs(self, merge_multi_context=True):
        require(self, "get_outputs", "binded", "params_initialized")
        return self._modules[-1].get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        require(self, "get_input_grads", "binded", "params_initialized")
        if not self.inputs_need_grad:
            raise MXNetError("get_input_grads() needs bind(..., inputs_need_grad=True)")
        return self._modules[0].get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Update ``eval_metric`` from every layer added with ``take_labels=True``."""
        require(self, "update_metric", "binded", "params_initialized")
        for i, module in enumerate(self._modules):
            if self._takes_labels(i):
                module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon):
        require(self, "install_monitor", "binded")
        for module in self._modules:
            module.install_monitor(mon)
