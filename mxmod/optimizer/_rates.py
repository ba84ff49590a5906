"""Each parameter's rates read through the optimizer's own hooks, as MXNet's ``update``
reads them: SGD, LARS and LAMB call ``_get_lrs(indices)``/``_get_wds(indices)``, the
others ``_get_lr(index)``/``_get_wd(index)`` (``Optimizer._rate_hooks``). A user subclass
that overrides a hook (Keras-MXNet's decayed ``_get_lr``) gets its rates computed on the
host each step and passed to the compiled update; other optimizers skip this (their
multipliers are compile-time constants and only the base rate is traced)."""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

HOOKS = ("_get_lr", "_get_lrs", "_get_wd", "_get_wds")
_overriding: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # class -> bool


def overrides_rates(opt: Any) -> bool:
    """Whether ``opt``'s class defines one of ``HOOKS`` outside mxmod."""
    cls = type(opt)
    found = _overriding.get(cls)
    if found is None:
        found = any(
            not getattr(getattr(cls, hook), "__module__", "mxmod.").startswith("mxmod.")
            for hook in HOOKS
        )
        _overriding[cls] = found
    return found


def host_rates(opt: Any, indices: list) -> tuple:
    """``(lrs, wds)`` for ``indices`` (after counting), read as the class's MXNet
    ``update`` reads them."""
    if opt._rate_hooks == "many":
        lrs, wds = opt._get_lrs(list(indices)), opt._get_wds(list(indices))
    else:
        lrs = [opt._get_lr(i) for i in indices]
        wds = [opt._get_wd(i) for i in indices]
    return np.asarray(lrs, np.float32), np.asarray(wds, np.float32)
