"""Checks of a dumped optimizer's or lr_scheduler's attributes before it is rebuilt.

``Updater.get_states(dump_optimizer=True)`` stores the optimizer as its attributes (MXNet
pickles the object). Decoding sets attributes without running a constructor, so a damaged
file could otherwise give an optimizer whose ``aggregate_num`` is a string or whose
scheduler loops for ever. Each attribute is compared with the same attribute of a freshly
built instance of the class (kind of value, finite numbers, the contents of MXNet's
bookkeeping dicts), the optimizer's hyperparameter checks run, and a scheduler is rebuilt
through its constructor (which checks its settings) before its state is put back.
"""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Callable
from typing import Any

from ..lr_scheduler import LRScheduler
from ._base import Optimizer

# Attributes never written (live objects, caches) and rebuilt on load.
TRANSIENT = (
    "param_dict",
    "_jit_fn",
    "_index_update_count",
    "_sig_cache",
    "_static_cache",
    "_custom_probe",
    "_fused_base_t",
    "_fused_shapes",
)
_REFUSALS = (TypeError, ValueError, ArithmeticError, KeyError, IndexError, AttributeError)

# bookkeeping counters of every optimizer: ints >= 0
_COUNTERS = (
    "num_update",
    "begin_num_update",
    "aggregate_num",
    "_cur_dev",
    "_fused_pending",
    "_fused_dev",
    "_settings_version",
)
_NUMBER_DICTS = ("lr_mult", "wd_mult")


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _finite(v: Any) -> bool:
    return not isinstance(v, float) or math.isfinite(v)


def _kind_problem(name: str, value: Any, ref: Any) -> str | None:
    """What is wrong with ``value`` given the fresh instance's ``ref``; None if fine."""
    if _is_number(value) and not _finite(value):
        return f"{value} is not finite"
    if name == "lr_scheduler" and not (value is None or isinstance(value, LRScheduler)):
        return f"a {type(value).__name__}, not an lr_scheduler"
    if name == "clip_gradient" and not (value is None or _is_number(value)):
        return f"{value!r} is not None or a number"
    if ref is None or (name == "lr" and value is None):  # lr None: the scheduler's rate
        return None
    if isinstance(ref, bool):
        return None if isinstance(value, bool) else f"{value!r} is not True/False"
    if isinstance(ref, int) and name in _COUNTERS:
        ok = type(value) is int and value >= 0
        return None if ok else f"{value!r} is not an int >= 0"
    if _is_number(ref):
        return None if _is_number(value) else f"{value!r} is not a number"
    if isinstance(ref, str):
        return None if isinstance(value, str) else f"{value!r} is not a string"
    if isinstance(ref, dict):
        return None if isinstance(value, dict) else f"a {type(value).__name__}, not a dict"
    if isinstance(ref, (tuple, list)):
        ok = isinstance(value, (tuple, list))
        return None if ok else f"a {type(value).__name__}, not a sequence"
    if isinstance(ref, LRScheduler):
        ok = value is None or isinstance(value, LRScheduler)
        return None if ok else f"a {type(value).__name__}, not an lr_scheduler"
    return None


def _content_problem(name: str, value: Any) -> str | None:
    """Checks of the contents of the base class's bookkeeping attributes."""
    if name in _NUMBER_DICTS:
        bad = [k for k, v in value.items() if not _is_number(v) or not _finite(v)]
        return f"multiplier of {bad[0]!r} is {value[bad[0]]!r}" if bad else None
    if name == "idx2name":
        bad = [k for k, v in value.items() if not isinstance(v, str)]
        return f"name of index {bad[0]!r} is {value[bad[0]]!r}" if bad else None
    if name == "_all_index_update_counts":
        for dev, counts in value.items():
            if type(dev) is not int or not isinstance(counts, dict):
                return f"device {dev!r} maps to {type(counts).__name__}"
            bad = [k for k, c in counts.items() if type(c) is not int or c < 0]
            if bad:
                return f"count of index {bad[0]!r} on device {dev} is {counts[bad[0]]!r}"
    if (
        name == "sym_info"
        and value
        and not (len(value) == 2 and isinstance(value[0], dict) and isinstance(value[1], list))
    ):
        return "not (attr_dict, argument names)"
    return None


def _reference(cls: type, values: dict) -> Any:
    """A fresh instance of ``cls``: built without arguments (optimizers) or, for a
    scheduler, from the saved constructor arguments (so its own checks run)."""
    kwargs = {}
    if issubclass(cls, LRScheduler):
        params = inspect.signature(cls.__init__).parameters
        kwargs = {p: values[p] for p in params if p != "self" and p in values}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cls(**kwargs)


def check_attrs(cls: type, values: dict, where: str, fail: Callable[..., Exception]) -> Any:
    """Rebuild a ``cls`` object from decoded attribute ``values`` after checking them.

    Args:
        cls: the optimizer or lr_scheduler class the file names.
        values: the decoded attributes.
        where: the JSON field, for messages.
        fail: ``fail(where, problem, expected) -> MXNetFileError`` of the decoder.

    Returns:
        The restored object (attributes the file lacks take the fresh instance's values).

    Raises:
        MXNetFileError: an attribute of the wrong kind, a non-finite number, settings the
            class refuses.
    """
    ref = _unless_refused(lambda: attrs_of(_reference(cls, values)), cls, where, fail)
    for name, value in values.items():
        problem = _kind_problem(name, value, ref.get(name))
        if problem is None and isinstance(value, (dict, tuple, list)):
            problem = _content_problem(name, value)
        if problem is not None:
            kind = type(ref.get(name)).__name__
            raise fail(
                f"{where}.{name}", problem, f"a value like the {kind} of a fresh {cls.__name__}"
            )
    attrs = {**{k: v for k, v in ref.items() if k not in values and k not in TRANSIENT}, **values}
    if attrs.get("lr", 0) is None and attrs.get("lr_scheduler") is None:
        raise fail(
            f"{where}.lr",
            "None without an lr_scheduler",
            "a learning rate, or an lr_scheduler that gives it",
        )
    return _unless_refused(lambda: restore(cls, attrs, check=True), cls, where, fail)


def _unless_refused(build: Callable[[], Any], cls: type, where: str, fail: Callable) -> Any:
    """``build()``, or the decoder's error when ``cls`` refuses the settings."""
    try:
        return build()
    except _REFUSALS as e:
        raise fail(
            where,
            f"settings refused by {cls.__name__} ({e})",
            f"the settings of a valid {cls.__name__}",
        ) from None


def attrs_of(obj: Any) -> dict:
    """The attributes an optimizer or lr_scheduler is stored as (its pickled state)."""
    return obj.__getstate__() if isinstance(obj, Optimizer) else vars(obj)


def restore(cls: type, attrs: dict, check: bool = False) -> Any:
    """A ``cls`` object from its stored attributes (no constructor runs); ``check`` runs
    an optimizer's hyperparameter checks."""
    obj = cls.__new__(cls)
    obj.__dict__.update(attrs)
    if isinstance(obj, Optimizer):
        obj._after_restore()
        if check:
            obj._validate()
    return obj
