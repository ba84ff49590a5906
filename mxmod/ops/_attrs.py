"""Typed operator attributes: MXNet stores every attribute as the Python ``str()``
of what the user passed (``"(3, 3)"``, ``"True"``, ``"0.9"``); these parsers read
both that string form and plain Python values."""

from __future__ import annotations

import ast
import math
import re
from typing import Any, Callable

import numpy as np

REQUIRED = object()


class AttrError(ValueError):
    """An attribute value that does not parse; the op layer adds op/node names."""


_LONG_SUFFIX = re.compile(r"(?<=\d)[lL]\b")  # Python 2's long literals: '(2L, 3L)'


def _literal(text: str) -> Any:
    try:
        return ast.literal_eval(_LONG_SUFFIX.sub("", text))
    except (ValueError, SyntaxError):
        raise AttrError(f"cannot parse {text!r}") from None


INT32 = (-(2**31), 2**31 - 1)  # MXNet's ``int`` attributes (dmlc parses a C++ int)
INT64 = (-(2**63), 2**63 - 1)  # ``long`` attributes and the sizes of a ``Shape(tuple)``
UINT32 = (-(2**63), 2**32 - 1)  # ``int (non-negative)``: MXNet wraps negatives, refuses >= 2**32
UINT64 = (-(2**64 - 1), 2**64 - 1)  # ``long (non-negative)`` (``workspace``); wraps too


def _bounded(v: int, lo: int, hi: int, kind: str) -> int:
    if not lo <= v <= hi:
        raise AttrError(f"{v} is out of the range of {kind} ({lo} to {hi})")
    return v


def p_int(v: Any) -> int:
    """An MXNet ``int`` attribute: a 32-bit signed integer."""
    return _bounded(_to_int(v), *INT32, "a 32-bit int")


def p_int64(v: Any) -> int:
    """An MXNet ``long`` attribute: a 64-bit signed integer."""
    return _bounded(_to_int(v), *INT64, "a 64-bit int")


def p_uint32(v: Any) -> int:
    """An MXNet ``int (non-negative)`` attribute (a C++ ``uint32_t``)."""
    return _bounded(_to_int(v), *UINT32, "an unsigned 32-bit int")


def p_uint64(v: Any) -> int:
    """An MXNet ``long (non-negative)`` attribute (a C++ ``uint64_t``)."""
    return _bounded(_to_int(v), *UINT64, "an unsigned 64-bit int")


def int_at_least(lo: int, parse: Callable[[Any], int] = p_int) -> Callable[[Any], int]:
    """An integer attribute (read by ``parse``) with MXNet's lower bound ``lo``
    (``set_lower_bound``)."""

    def parse_int_at_least(v: Any) -> int:
        n = parse(v)
        if n < lo:
            raise AttrError(f"expected an integer >= {lo}, got {v!r}")
        return n

    return parse_int_at_least


def _to_int(v: Any) -> int:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str):
        try:
            return int(v.strip())
        except ValueError:
            pass
        try:
            f = float(v)
        except ValueError:
            raise AttrError(f"expected an integer, got {v!r}") from None
        if f.is_integer():
            return int(f)
    raise AttrError(f"expected an integer, got {v!r}")


def p_float(v: Any) -> float:
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float, np.number)):
        return float(v)
    if isinstance(v, str):
        try:
            x = float(v.strip())
        except ValueError:
            pass
        else:  # MXNet refuses a literal out of float range ('1e400'), not 'inf' itself
            if math.isinf(x) and "inf" not in v.lower():
                raise AttrError(f"{v!r} is out of the range of a float")
            return x
    raise AttrError(f"expected a number, got {v!r}")


def p_bool(v: Any) -> bool:
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)) and int(v) in (0, 1):
        return bool(v)
    if isinstance(v, str):
        s = v.strip().lower()
        if s in ("true", "1"):
            return True
        if s in ("false", "0"):
            return False
    raise AttrError(f"expected True or False, got {v!r}")


def p_shape(v: Any) -> tuple:
    """A tuple of ints: ``(3, 3)``, ``[3, 3]``, ``"(3, 3)"``, ``"3"`` or ``3``."""
    if isinstance(v, str):
        s = v.strip()
        if s in ("", "None"):
            raise AttrError(f"expected a shape tuple, got {v!r}")
        v = _literal(s)
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return (p_int64(v),)
    if isinstance(v, (tuple, list)):
        try:
            return tuple(p_int64(x) for x in v)
        except AttrError:
            pass
    raise AttrError(f"expected a shape tuple such as (3, 3), got {v!r}")


def p_shape_nonzero(v: Any) -> tuple:
    """A shape whose sizes are all nonzero (MXNet's ``enforce_nonzero``), or ``()``."""
    shape = p_shape(v)
    if any(d == 0 for d in shape):
        raise AttrError(f"{shape} must be nonzero in all dimensions")
    return shape


def p_float_tuple(v: Any) -> tuple:
    if isinstance(v, str):
        v = _literal(v.strip())
    if isinstance(v, (int, float)):
        return (float(v),)
    if isinstance(v, (tuple, list)):
        return tuple(p_float(x) for x in v)
    raise AttrError(f"expected a tuple of numbers, got {v!r}")


def p_str(v: Any) -> str:
    if isinstance(v, str):
        return v
    raise AttrError(f"expected a string, got {v!r}")


def p_dtype(v: Any) -> str:
    if isinstance(v, str) and v.strip() in ("None",):
        raise AttrError("expected a dtype name, got 'None'")
    try:
        return np.dtype(v).name if not isinstance(v, str) else _dtype_name(v)
    except TypeError:
        raise AttrError(f"expected a dtype name such as 'float32', got {v!r}") from None


def _dtype_name(s: str) -> str:
    s = s.strip()
    if s == "bfloat16":
        return s
    return np.dtype(s).name


def optional(parse: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Accept ``None``/``"None"`` as well as what ``parse`` accepts."""

    def parse_opt(v: Any) -> Any:
        if v is None or (isinstance(v, str) and v.strip() == "None"):
            return None
        return parse(v)

    parse_opt.__name__ = "optional_" + parse.__name__
    return parse_opt


def choice(*options: str) -> Callable[[Any], str]:
    def parse_choice(v: Any) -> str:
        s = p_str(v) if isinstance(v, str) else str(v)
        if s not in options:
            raise AttrError(f"expected one of {', '.join(map(repr, options))}, got {v!r}")
        return s

    return parse_choice


def attr_str(v: Any) -> str:
    """The string MXNet stores for an attribute value (Python ``str()``; dtypes by name)."""
    if isinstance(v, str):
        return v
    if isinstance(v, type) and issubclass(v, np.generic):
        return np.dtype(v).name
    if isinstance(v, np.dtype):
        return v.name
    return str(_plain(v))


def _plain(v: Any) -> Any:
    """numpy scalars as Python numbers, inside tuples/lists too (numpy 2 reprs them)."""
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, (tuple, list)):
        return type(v)(_plain(x) for x in v)
    return v


class Param:
    """One attribute of an operator: its parser and default (``REQUIRED`` if none)."""

    __slots__ = ("parse", "default", "doc")

    def __init__(self, parse: Callable[[Any], Any], default: Any = REQUIRED, doc: str = ""):
        self.parse = parse
        self.default = default
        self.doc = doc


class Attrs(dict):
    """Parsed attributes with attribute access (``a.num_hidden``)."""

    def __getattr__(self, key: str) -> Any:
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None
