"""Checks of the arguments an optimizer is created with, each error naming the fix (issue 26).

MXNet 1.9.1 accepts ``learning_rate='0.1'`` and fails at the first update (``can't multiply
sequence by non-int``), reports ``lr_scheduler=0.1`` as ``'float' object has no attribute
'base_lr'`` and a misspelt ``optimizer_params`` key as Python's keyword error. mxmod refuses
them when the optimizer is created, saying what to write instead.
"""

from __future__ import annotations

import difflib
import inspect
import numbers
import re
from typing import Any

__all__ = ["check_number", "check_base_args", "check_lr_scheduler", "unknown_param_error"]

# the numeric settings of mx.lr_scheduler classes (those a scheduler has are checked)
_SCHEDULER_NUMBERS = ("base_lr", "warmup_steps", "warmup_begin_lr", "step", "factor",
                      "stop_factor_lr", "max_update", "final_lr", "pwr", "max_steps")  # fmt: skip


def _as_written(value: str) -> str | None:
    try:
        number = float(value)
    except ValueError:
        return None
    return repr(int(number)) if number.is_integer() and "." not in value else repr(number)


def check_number(owner: str, name: str, value: Any, allow_none: bool = False) -> None:
    """Raise ``TypeError`` naming ``owner`` and ``name`` unless ``value`` is a real number
    (``None`` too when ``allow_none``); a string gets the unquoted form to write."""
    if value is None and allow_none:
        return
    if isinstance(value, numbers.Real) or getattr(value, "ndim", None) == 0:  # 0-d arrays too
        return
    if isinstance(value, (str, bytes)):
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        number = _as_written(text)
        if number is None:
            raise TypeError(f"{owner}: {name} must be a number, got {value!r}")
        raise TypeError(
            f"{owner}: {name} must be a number, got the string {value!r}; write "
            f"{name}={number} without quotes (e.g. optimizer_params={{{name!r}: {number}}})"
        )
    none = " or None" if allow_none else ""
    raise TypeError(f"{owner}: {name} must be a number{none}, got {type(value).__name__} {value!r}")


def check_lr_scheduler(owner: str, scheduler: Any) -> None:
    """``lr_scheduler`` must be None or a schedule: callable with ``num_update`` (an
    ``mx.lr_scheduler.LRScheduler``); its numeric settings must be numbers."""
    if scheduler is None:
        return
    if isinstance(scheduler, (numbers.Real, str)):
        raise TypeError(
            f"{owner}: lr_scheduler must be an mx.lr_scheduler.LRScheduler, got "
            f"{type(scheduler).__name__} {scheduler!r}; for a fixed rate write "
            f"learning_rate={scheduler!r} instead, for a schedule e.g. "
            "lr_scheduler=mx.lr_scheduler.FactorScheduler(step=1000, factor=0.9)"
        )
    if not callable(scheduler):
        raise TypeError(
            f"{owner}: lr_scheduler must be an mx.lr_scheduler.LRScheduler (callable with "
            f"num_update), got {type(scheduler).__name__}; e.g. "
            "lr_scheduler=mx.lr_scheduler.FactorScheduler(step=1000, factor=0.9)"
        )
    kind = type(scheduler).__name__
    for attr in _SCHEDULER_NUMBERS:
        value = getattr(scheduler, "__dict__", {}).get(attr)
        for v in value if isinstance(value, (list, tuple)) else [value]:  # MultiFactor's steps
            if isinstance(v, (str, bytes)):
                check_number(f"{owner}: lr_scheduler {kind}", attr, v)


def check_base_args(owner: str, args: dict) -> None:
    """The numeric arguments of ``Optimizer.__init__`` (``learning_rate`` may be None, as
    may ``clip_gradient``) and ``lr_scheduler``."""
    for name in ("learning_rate", "wd", "rescale_grad", "clip_gradient", "begin_num_update"):
        check_number(owner, name, args[name], allow_none=name in ("learning_rate", "clip_gradient"))
    check_lr_scheduler(owner, args["lr_scheduler"])


# numeric settings whose __init__ default is None or that are stored under another name
_NUMERIC_ALWAYS = frozenset(
    {"lr", "learning_rate", "wd", "rescale_grad", "clip_gradient", "clip_weights",
     "lower_bound", "upper_bound", "float_stable_eps"}
)  # fmt: skip
_numeric_cache: dict = {}


def numeric_settings(klass: type) -> frozenset:
    """The settings of optimizer class ``klass`` that hold numbers: those of its ``__init__``
    chain with a number as default, and the base class's."""
    known = _numeric_cache.get(klass)
    if known is None:
        names = set(_NUMERIC_ALWAYS)
        for cls in klass.__mro__:
            init = cls.__dict__.get("__init__")
            if init is None or cls is object:
                continue
            try:
                params = inspect.signature(init).parameters.values()
            except (TypeError, ValueError):
                continue
            names.update(
                p.name
                for p in params
                if isinstance(p.default, numbers.Real) and not isinstance(p.default, bool)
            )
        known = _numeric_cache[klass] = frozenset(names)
    return known


def check_setting(opt: Any, name: str, value: Any) -> None:
    """Refuse a string assigned to a numeric setting of ``opt`` (``momentum='0.9'``)."""
    if name in numeric_settings(type(opt)):
        check_number(type(opt).__name__, "learning_rate" if name == "lr" else name, value)


def _init_params(klass: type) -> tuple[list, bool]:
    """The keyword names ``klass(...)`` accepts along its ``__init__`` chain, and whether the
    chain ends in ``**kwargs`` that accept anything (then no name can be refused)."""
    names: list = []
    for cls in klass.__mro__:
        init = cls.__dict__.get("__init__")
        if init is None:
            continue
        if cls is object:
            return names, True
        try:
            params = inspect.signature(init).parameters.values()
        except (TypeError, ValueError):
            return names, True
        keyword = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        names += [p.name for p in params if p.kind in keyword and p.name != "self"]
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            return list(dict.fromkeys(names)), False
    return names, True


def unknown_param_error(klass: type, error: TypeError, kwargs: dict) -> TypeError | None:
    """For Python's ``unexpected keyword argument 'momentun'`` raised by ``klass(**kwargs)``:
    an error listing ``klass``'s parameters and the closest to the misspelt one (None when
    ``error`` is another TypeError)."""
    m = re.search(r"unexpected keyword argument '(\w+)'", str(error))
    if m is None or m.group(1) not in kwargs:
        return None
    key = m.group(1)
    valid, _ = _init_params(klass)
    close = difflib.get_close_matches(key, valid, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return TypeError(
        f"optimizer {klass.__name__} has no parameter {key!r} (from optimizer_params or "
        f"the optimizer's keyword arguments); {hint}{klass.__name__} takes: "
        f"{', '.join(sorted(valid))}"
    )
