"""The Module's state in one place, and the deferred step that changes it.

* ``TrainState``: the one small holder of a set of weights: ``value`` is the
  ``StepState`` pytree (parameters, aux states, optimizer state, compression residuals)
  that compiled steps take and return. Modules that share parameters (``shared_module``,
  bucketing) share one holder; ``params``/``aux`` read and replace its fields.
* ``OptBox``: the optimizer and the MXNet objects around it (kvstore, updater), shared by
  ``borrow_optimizer``; its ``state`` is the optimizer-state field of its holder's value.
* ``PendingStep``: what ``forward``/``backward``/``update``/``update_metric`` asked for
  on the current batch. The first time a result is needed (or the step is complete:
  update requested and a metric given) one flush turns it into one compiled dispatch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from ..executor.step import StepState, optimizer_rule


class TrainState:
    """The holder of one set of weights and what steps on it (``value``)."""

    def __init__(self):
        self.value = StepState({}, {})
        self.residual_key = None  # the senders the 2-bit residuals belong to
        self.opt: Optional[OptBox] = None
        self.groups: list = []  # groups bound to this state (flushed before any other runs)
        self.version = 0  # bumped whenever params change (host dicts resync lazily)
        # the group whose gradients were computed last: MXNet's buckets share gradient
        # buffers, so grad_req='add' in one bucket adds to what another wrote
        self.grad_owner = None

    @property
    def params(self) -> dict:
        return self.value.params

    @params.setter
    def params(self, params: dict) -> None:
        self.value = self.value.replace(params=params)

    @property
    def aux(self) -> dict:
        return self.value.aux

    @aux.setter
    def aux(self, aux: dict) -> None:
        self.value = self.value.replace(aux=aux)

    def flush_all(self) -> None:
        for g in self.groups:
            g.flush()


class OptBox:
    """The optimizer and its MXNet companions, shared by modules that borrow the optimizer;
    the optimizer state itself lives in ``holder.value.opt``."""

    def __init__(
        self, optimizer, holder, kvstore=None, updater=None, update_on_kvstore=False, fused=True
    ):
        self.optimizer = optimizer
        self.holder = holder
        self.kvstore = kvstore
        self.updater = updater
        self.update_on_kvstore = update_on_kvstore
        self.fused = fused  # the optimizer runs inside the compiled step

    @property
    def state(self):
        return self.holder.value.opt

    def rule(self, lazy_rows=()):
        """The optimizer's step rule (remade when its fused signature changes); the
        parameters ``lazy_rows`` take MXNet's lazy row_sparse update
        (``sparse_inputs.lazy_rows``)."""
        lazy = tuple(sorted(lazy_rows))
        rule = self.__dict__.get("_rule")
        if rule is None or rule.key != ("optimizer", self.optimizer.fused_signature(), lazy):
            rule = self._rule = optimizer_rule(self.optimizer, lazy)
        return rule

    @state.setter
    def state(self, opt) -> None:
        self.holder.value = self.holder.value.replace(opt=opt)


@dataclass
class PendingStep:
    """One batch and the work asked of it (filled by the MXNet-named calls)."""

    inputs: dict
    labels: Any
    is_train: bool
    key: Any
    backward: bool = False
    head_grads: Optional[list] = None
    update: bool = False
    metrics: list = field(default_factory=list)
    outs_done: bool = False
    grads_done: bool = False
    update_done: bool = False
    keep_outs: bool = False  # merged multi-device outputs were handed out: keep them
    saved_outs: Optional[list] = None  # those outputs, once a later batch replaced this one
    monitor_state: Optional[tuple] = None  # (params, aux) this batch ran with, for a Monitor
    per_device: Optional[dict] = None  # the per-device weights ``inputs`` carry (PER_DEVICE)
    hyper: Optional[dict] = None  # the optimizer step's hyper-parameters, counted at update()


def box_field(name: str):
    """One of MXNet's ``Module`` attributes (``_optimizer``, ``_kvstore``, ``_updater``,
    ``_update_on_kvstore``) as a field of the module's ``OptBox``: reading and assigning it
    (edited copies of MXNet's ``init_optimizer`` assign them) goes to the one box."""

    def get(self):
        box = self._opt_box
        return None if box is None else getattr(box, name)

    def put(self, value):
        if self._opt_box is None:
            if value is None:
                return
            group = self._exec_group
            self._opt_box = OptBox(None, None if group is None else group.state, fused=False)
            if group is not None and group.state.opt is None:
                group.state.opt = self._opt_box
        setattr(self._opt_box, name, value)

    return property(get, put)
