"""Module checkpoints and optimizer-state files (spec 1.3)."""
from __future__ import annotations

import logging

from .stages import require


class ModuleFiles:
    """Mixin of ``Module``: ``save_checkpoint``, ``Module.load`` and optimizer states."""

    def save_checkpoint(self, prefix, epoch, save_optimizer_states=False, remove_amp_cast=True):
        self._symbol.save(f"{prefix}-symbol.json", remove_amp_cast=remove_amp_cast)
        param_name = "%s-%04d.params" % (prefix, epoch)
        self.save_params(param_name)
        logging.info('Saved checkpoint to "%s"', param_name)
        if save_optimizer_states:
            state_name = "%s-%04d.states" % (prefix, epoch)
            self.save_optimizer_states(state_name)
            logging.info('Saved optimizer state to "%s"', state_name)

    @staticmethod
    def load(prefix, epoch, load_optimizer_states=False, allow_pickle=False, **kwargs):
        """As ``mx.mod.Module.load``; ``allow_pickle`` (mxmod addition) lets the preloaded
        ``.states`` file be an MXNet pickle (see :meth:`load_optimizer_states`)."""
        from ..model import load_checkpoint
        sym, args, auxs = load_checkpoint(prefix, epoch)
        from .module import Module
        mod = Module(symbol=sym, **kwargs)
        mod._arg_params = args
        mod._aux_params = auxs
        mod.params_initialized = True
        if load_optimizer_states:
            mod._preload_opt_states = "%s-%04d.states" % (prefix, epoch)
            mod._preload_allow_pickle = allow_pickle
        return mod

    def save_optimizer_states(self, fname):
        from .opt_states import save_states
        require(self, "save_optimizer_states", "optimizer_initialized")
        save_states(self, fname)

    def load_optimizer_states(self, fname, allow_pickle=False):
        """Load a ``.states`` file: mxmod's own (pickle-free) format, or, only with
        ``allow_pickle=True`` (mxmod addition: unpickling can run code), an MXNet pickle,
        read by a restricted unpickler and mapped onto this module's parameters."""
        from .opt_states import load_states
        require(self, "load_optimizer_states", "optimizer_initialized")
        load_states(self, fname, allow_pickle=allow_pickle)
