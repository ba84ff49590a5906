"""One compiled program per imperative operator call site's (function, static arguments):
``mx.nd`` reductions, softmaxes and element-wise functions that are not table operators.

Each (function, static arguments) gets one jitted function, kept (the 4096 most recent; a new
``jax.jit`` per call would trace every call). When the function and its arguments have a
deterministic text (functions of mxmod, JAX or numpy, not user code), the program is also a
``program_tiers.Tiered`` one: a later process loads it from disk untraced.
"""

from __future__ import annotations

import functools
import types
from typing import Any

from .. import xla_options
from ..program_store import Unstable, program_key, stable_text
from ..program_tiers import size_estimate, wrap

_PROGRAMS: dict = {}  # (fn, static) -> program, oldest first
MAX_PROGRAMS = 4096
_CODE_ROOTS = ("mxmod", "jax", "jaxlib", "numpy")


def program(fn, static: tuple):
    """``fn`` with keyword arguments ``static`` (pairs) as one jitted program."""
    try:
        return _PROGRAMS[(fn, static)]
    except KeyError:
        pass
    except TypeError:  # an unhashable static value: a program of its own, not kept
        return xla_options.jit(functools.partial(fn, **dict(static)))
    jitted = xla_options.jit(functools.partial(fn, **dict(static)))
    try:
        key = program_key("nd-fn", code_text(fn), code_text(static))
    except Unstable:
        key = None
    if len(_PROGRAMS) >= MAX_PROGRAMS:
        del _PROGRAMS[next(iter(_PROGRAMS))]
    made = _PROGRAMS[(fn, static)] = wrap(jitted, key, size_estimate)
    return made


def code_text(obj: Any) -> str:
    """A deterministic text of ``obj`` where functions are named by their module and
    qualified name; raises ``Unstable`` for user code and closures."""
    if isinstance(obj, functools.partial):
        return f"partial({code_text(obj.func)},{code_text(obj.args)},{code_text(obj.keywords)})"
    if isinstance(obj, tuple):
        return "(" + ",".join(code_text(x) for x in obj) + ")"
    if isinstance(obj, dict):
        return "{" + ",".join(f"{k}:{code_text(v)}" for k, v in sorted(obj.items())) + "}"
    if callable(obj) and not isinstance(obj, type):
        module = getattr(obj, "__module__", None) or ""
        name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
        if not name or "<" in name or module.split(".")[0] not in _CODE_ROOTS:
            raise Unstable(repr(obj))
        kind = "ufunc" if isinstance(obj, types.BuiltinFunctionType) else "fn"
        return f"{kind}:{module}.{name}"
    return stable_text(obj)
