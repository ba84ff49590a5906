"""The Module's state in one place, and the deferred step that changes it.

* ``TrainState``: parameters and aux states (``jax.Array``s on the bound devices) and
  the optimizer box. Modules that share parameters (``shared_module``, bucketing) share
  one TrainState; ``borrow_optimizer`` shares the box.
* ``OptBox``: the optimizer, its fused state (``{name: leaf_state}``) and the MXNet
  objects around it (kvstore, updater).
* ``PendingStep``: what ``forward``/``backward``/``update``/``update_metric`` asked for
  on the current batch. The first time a result is needed (or the step is complete:
  update requested and a metric given) one flush turns it into one compiled dispatch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional


class OptBox:
    """The optimizer and its state, shared by modules that borrow the optimizer."""

    def __init__(
        self, optimizer, state, kvstore=None, updater=None, update_on_kvstore=False, fused=True
    ):
        self.optimizer = optimizer
        self.state = state
        self.kvstore = kvstore
        self.updater = updater
        self.update_on_kvstore = update_on_kvstore
        self.fused = fused  # the optimizer runs inside the compiled step


class TrainState:
    """Parameters, aux states and the optimizer box of one set of weights."""

    def __init__(self):
        self.params: dict = {}
        self.aux: dict = {}
        self.opt: Optional[OptBox] = None
        self.groups: list = []  # groups bound to this state (flushed before any other runs)
        self.version = 0  # bumped whenever params change (host dicts resync lazily)
        # the group whose gradients were computed last: MXNet's buckets share gradient
        # buffers, so grad_req='add' in one bucket adds to what another wrote
        self.grad_owner = None

    def flush_all(self) -> None:
        for g in self.groups:
            g.flush()


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
