"""Handing the group's state to a compiled step and keeping what it returns.

``_step_state`` builds the ``StepState`` a step takes (the holder's own value when
nothing needs adding), ``_adopt`` keeps the one it returns, ``_reduction`` picks the
gradient reduction (exact sum or the kvstore's 2-bit compression) and ``_residual`` the
2-bit residuals of the group's senders. Like ``group_run.py``, the functions taking
``self`` are ``DataParallelExecutorGroup``'s methods, bound by name in its class body.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..executor.step import SUM, StepState, TwoBit
from ..kvstore.compression import threshold_of


def _params_in(self) -> dict:
    if self._consts:
        return {**self.state.params, **self._consts}
    return self.state.params


def _store_params(self, params: dict) -> None:
    st = self.state
    st.params = {n: params[n] for n in st.params}
    if self._consts:
        self._consts = {n: params[n] for n in self._consts}
    self.state.version += 1


def _reduction(self):
    """How the devices' gradients combine: an exact sum, or the module's kvstore's
    2-bit compression."""
    box = self.state.opt
    threshold = None if box is None or box.kvstore is None else threshold_of(box.kvstore)
    return SUM if threshold is None else TwoBit(float(threshold))


def _residual(self) -> dict:
    """The 2-bit residuals of this group's senders (zeros when the senders changed)."""
    holder = self.state.opt.holder
    progs = self._progs
    pl = progs.placement
    devices = getattr(progs, "all_devices", None)
    key = (pl.key, devices and tuple(devices))
    if holder.residual_key == key:
        return holder.value.residual
    senders = len(devices or pl.devices)
    res = {}
    for n in self._diff_params:
        shape = (senders // pl.processes,) + tuple(self._arg_shape[n])
        zeros = jnp.zeros(shape, self._arg_type[n])
        if pl.processes > 1:
            res[n] = pl.put(zeros, 0)
        elif devices:
            res[n] = zeros
        else:
            res[n] = jax.device_put(zeros, pl.sharding(0))
    holder.residual_key = key
    holder.value = holder.value.replace(residual=res)
    return res


def _step_state(self, reduction) -> StepState:
    """The state a compiled step takes (it donates it: adopt what it returns). The
    holder's own value when this group has no constant arguments and its optimizer
    is its holder's (no copy, no rebuilding)."""
    holder = self.state
    if reduction.residual:
        self._residual()  # zeros when the senders changed
    box = holder.opt
    if not self._consts and box.holder is holder:
        return holder.value
    residual = box.holder.value.residual if reduction.residual else {}
    return StepState(self._params_in(), holder.aux, box.state, residual)


def _adopt(self, state: StepState, reduction) -> None:
    """Keep the state a compiled step returned."""
    holder = self.state
    box = holder.opt
    if not self._consts and box.holder is holder:
        holder.value = state
        holder.version += 1
        return
    self._store_params(state.params)
    holder.aux = state.aux
    box.state = state.opt
    if reduction.residual:
        box.holder.value = box.holder.value.replace(residual=state.residual)
