"""``CompositeModule``: the base of the modules made of other modules."""

from __future__ import annotations

from ..base import MXNetError
from .base_module import BaseModule
from .stages import require


class CompositeModule(BaseModule):
    """A module whose work is done by child modules (BucketingModule: one Module per
    bucket; SequentialModule: a chain of modules). MXNet wrote these methods once per
    composite; here they are written once.

    A subclass gives its children: ``_child_modules()`` (all of them),
    ``_param_modules()`` (those that initialise parameters and an optimizer; the others
    share theirs), ``_input_module()`` and ``_output_module()``; and may add a step after
    the children's parameters or optimizer are set up (``_after_init_params``,
    ``_after_init_optimizer``).
    """

    def _child_modules(self) -> list:
        self._abstract("_child_modules")

    def _param_modules(self) -> list:
        self._abstract("_param_modules")

    def _input_module(self) -> BaseModule:
        self._abstract("_input_module")

    def _output_module(self) -> BaseModule:
        self._abstract("_output_module")

    def _after_init_params(self) -> None:
        """Run once the children's parameters are initialised (default: nothing)."""

    def _after_init_optimizer(self) -> None:
        """Run once the children's optimizers are set up (default: nothing)."""

    # ------------------------------------------------------------ parameters
    def init_params(
        self,
        initializer=None,
        arg_params=None,
        aux_params=None,
        allow_missing=False,
        force_init=False,
        allow_extra=False,
    ):
        """Each child initialises its parameters (nothing when already done, unless
        ``force_init``)."""
        if self.params_initialized and not force_init:
            return
        require(self, "init_params", "binded")
        for module in self._param_modules():
            module.init_params(
                initializer=initializer,
                arg_params=arg_params,
                aux_params=aux_params,
                allow_missing=allow_missing,
                force_init=force_init,
                allow_extra=allow_extra,
            )
        self._after_init_params()
        self.params_initialized = True

    def init_optimizer(
        self,
        kvstore="local",
        optimizer="sgd",
        optimizer_params=(("learning_rate", 0.01),),
        force_init=False,
    ):
        """Each child that owns parameters sets up its optimizer."""
        require(self, "init_optimizer", "binded", "params_initialized")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring.")
            return
        for module in self._param_modules():
            module.init_optimizer(
                kvstore=kvstore,
                optimizer=optimizer,
                optimizer_params=optimizer_params,
                force_init=force_init,
            )
        self._after_init_optimizer()
        self.optimizer_initialized = True

    # ------------------------------------------------------------ computation
    def get_outputs(self, merge_multi_context=True):
        require(self, "get_outputs", "binded", "params_initialized")
        return self._output_module().get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        require(self, "get_input_grads", "binded", "params_initialized")
        if not self.inputs_need_grad:
            raise MXNetError("get_input_grads() needs bind(..., inputs_need_grad=True)")
        return self._input_module().get_input_grads(merge_multi_context=merge_multi_context)

    def install_monitor(self, mon):
        """Install ``mon`` on every bound child (kept for children bound later)."""
        require(self, "install_monitor", "binded")
        self._monitor = mon
        for module in self._child_modules():
            if module.binded:
                module.install_monitor(mon)
