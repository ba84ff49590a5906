"""Optimizer states that are plain Python objects (sockeye's ``EveState``: arrays and
numbers as attributes) or namedtuples, kept in states files without pickle.

A file stores such an object as its class name and attributes; loading gives a
``StateObject`` record, which ``conform`` turns back into the optimizer's own type by
filling the attributes into a copy of the state the optimizer creates (no class is
looked up by name: nothing a file says is imported or run). ``conform`` also gives a
namedtuple state its type back and a numpy array state its dtype.
"""

from __future__ import annotations

import copy
from typing import Any, NamedTuple

import jax
import numpy as np

_AS_PYTREES: set = set()  # the user state classes registered with JAX


class StateObject(NamedTuple):
    """A loaded object state: its class name and attributes (still to conform)."""

    name: str
    attrs: dict


_FRAMEWORKS = {"mxmod", "numpy", "jax", "jaxlib", "builtins", "ml_dtypes"}


def is_plain_object(obj: Any) -> bool:
    """An instance of a user class (not an array type) holding its state in ``__dict__``."""
    cls = type(obj)
    return (
        hasattr(obj, "__dict__")
        and not isinstance(obj, type)
        and not callable(obj)
        and cls.__module__.split(".")[0] not in _FRAMEWORKS
    )


def as_pytree(cls: type) -> None:
    """Let JAX's tree functions see into a user state class (its attributes are the
    children), so states of that class are checked, placed and stored like tuples."""
    if cls in _AS_PYTREES:
        return
    _AS_PYTREES.add(cls)

    def flatten(obj):
        keys = tuple(vars(obj))
        return [getattr(obj, k) for k in keys], keys

    def unflatten(keys, children):
        obj = cls.__new__(cls)
        obj.__dict__.update(zip(keys, children))
        return obj

    try:
        jax.tree_util.register_pytree_node(cls, flatten, unflatten)
    except ValueError:  # registered already (by the user, or by JAX itself)
        pass


def conform(got: Any, want: Any) -> Any:
    """``got`` (a decoded state) in the types of ``want`` (the state the optimizer creates
    for the same weight); parts that do not correspond are left for the layout check."""
    if is_plain_object(want):
        as_pytree(type(want))
    if isinstance(got, StateObject):
        if is_plain_object(want) and type(want).__name__ == got.name:
            out = copy.copy(want)
            for k, v in got.attrs.items():
                setattr(out, k, conform(v, getattr(want, k, None)))
            return out
        return got
    if isinstance(want, tuple) and isinstance(got, (tuple, list)) and len(got) == len(want):
        items = [conform(g, w) for g, w in zip(got, want)]
        return type(want)(*items) if hasattr(want, "_fields") else tuple(items)
    if isinstance(want, list) and isinstance(got, list) and len(got) == len(want):
        return [conform(g, w) for g, w in zip(got, want)]
    if isinstance(want, dict) and isinstance(got, dict):
        return {k: conform(v, want.get(k)) for k, v in got.items()}
    if isinstance(want, np.ndarray) and hasattr(got, "shape") and tuple(got.shape) == want.shape:
        return np.asarray(getattr(got, "_data", got), dtype=want.dtype)
    return got
