"""Shared basics: the error type and small helpers (MXNet's ``mxnet.base``).

Like MXNet's ``mxnet.base`` this module holds :class:`MXNetError` and the type
tuples used to recognise Python numbers. It imports no JAX so every module can
use it.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

__all__ = [
    "MXNetError",
    "NotImplementedForSymbol",
    "MXNetFileError",
    "integer_types",
    "numeric_types",
    "string_types",
    "np_dtype",
    "dtype_name",
    "mx_real_t",
    "py_str",
    "check_call",
    "as_list",
    "names_list",
    "match_inputs",
    "named",
    "DTYPE_FLAGS",
    "FLAG_DTYPES",
]


class MXNetError(RuntimeError):
    """Error raised by mxmod where MXNet raises ``mxnet.base.MXNetError``.

    MXNet raises it for failures inside its C++ engine (shape/type checks,
    missing devices). mxmod raises it for the same user mistakes, with a
    message that names the wrong thing and the fix. It subclasses
    ``RuntimeError`` so ``except RuntimeError`` still catches it.
    """


class MXNetFileError(MXNetError):
    """A file (or in-memory blob) that cannot be read: malformed, truncated, oversized.

    mxmod addition. MXNet's readers raise ``MXNetError`` with the C++ check that failed;
    every mxmod reader (``mx.nd.load``, ``mx.sym.load``/``load_json``, ``load_checkpoint``,
    optimizer-state files) raises this subclass instead, so ``except MXNetError`` keeps
    working. The message names the file, the place in it (byte offset, JSON field, member)
    and what was expected there; the same facts are attributes.

    Args:
        message: the full message.
        source: the file path (or ``'buffer'``/``'JSON string'``) that was read.
        where: the field, offset or member at fault.
        expected: what a valid file has there ('' when the message says it).
    """

    def __init__(self, message: str, source: str = "", where: str = "", expected: str = ""):
        super().__init__(message)
        self.source, self.where, self.expected = source, where, expected

    def __reduce__(self):  # keyword attributes survive pickling (multiprocessing)
        return (type(self), (str(self), self.source, self.where, self.expected))


class NotImplementedForSymbol(MXNetError):
    """Raised when an NDArray-only function is called on a Symbol (MXNet's namesake).

    Args:
        function: the function called (its ``__name__`` is reported).
        alias: the operator name it stands for, or None.
        *args: the arguments given (their types are reported).
    """

    def __init__(self, function: Any, alias: Any, *args: Any):
        super().__init__()
        self.function = getattr(function, "__name__", str(function))
        self.alias = alias
        self.args = [str(type(a)) for a in args]

    def __str__(self) -> str:
        msg = f"Function {self.function}"
        if self.alias:
            msg += f' (namely operator "{self.alias}")'
        if self.args:
            msg += f" with arguments ({', '.join(self.args)})"
        return msg + " is not implemented for Symbol and only available in NDArray."


integer_types = (int, np.integer)
numeric_types = (float, int, np.generic)
string_types = (str,)

#: MXNet's default real type (``mx_real_t``).
mx_real_t = np.float32


def check_call(ret: Any) -> None:
    """MXNet's ``check_call``: raise ``MXNetError`` for a non-zero C API return code."""
    if ret != 0:
        raise MXNetError(f"C API call failed with return code {ret!r}")


class _NoNativeLibrary:
    """``mxnet.base._LIB``: MXNet's C library. mxmod has none, so each C function names
    itself and the way out when called."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)

        def call(*args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError(
                f"_LIB.{name}: MXNet's C API does not exist in mxmod (it runs on JAX/XLA); "
                "use the Python API that wraps it (see docs/migrating.md)"
            )

        call.__name__ = name
        return call


_LIB = _NoNativeLibrary()


def py_str(x: Any) -> str:
    """MXNet's ``py_str``: bytes from the C API as ``str`` (``str`` passes through)."""
    return x.decode("utf-8") if isinstance(x, bytes) else x


def np_dtype(dtype: Any) -> np.dtype:
    """Normalise a dtype given the ways MXNet programs spell it.

    Accepts ``'float32'``, ``np.float32``, ``np.dtype('float32')``,
    ``jnp.float32``/``jnp.bfloat16`` and anything with a ``.dtype`` (arrays).

    Args:
        dtype: the dtype spelling.

    Returns:
        The ``numpy.dtype``.

    Raises:
        TypeError: if ``dtype`` does not name a numeric dtype.
    """
    if isinstance(dtype, np.dtype):
        return dtype
    if dtype is None:
        raise TypeError("dtype must not be None here: pass e.g. 'float32' or np.float32")
    if hasattr(dtype, "dtype") and not isinstance(dtype, type):
        return np.dtype(dtype.dtype)
    try:
        out = np.dtype(dtype)
    except TypeError as err:
        raise TypeError(
            f"{dtype!r} is not a dtype: use a name such as 'float32' or a type such as np.float32"
        ) from err
    if out.kind not in "biufc" and out.name != "bfloat16":
        raise TypeError(f"{dtype!r} is not a numeric dtype: use e.g. 'float32' or 'int32'")
    return out


def dtype_name(dtype: Any) -> str:
    """Return the canonical name (``'float32'``) of any dtype spelling."""
    return np_dtype(dtype).name


def is_number(x: Any) -> bool:
    """True for Python/numpy scalars (bool included), as MXNet's ``numeric_types``."""
    return isinstance(x, (numbers.Number, np.generic)) and not isinstance(x, np.ndarray)


def as_list(obj):
    """``obj`` as a list, as MXNet's ``_as_list``: a list or tuple's items, anything else
    (``None`` included) as ``[obj]``."""
    if isinstance(obj, (list, tuple)):
        return list(obj)
    return [obj]


def names_list(obj) -> list:
    """An optional list of names (or callbacks) as a list: ``None`` is none (``[]``); a
    name or a callback is one; any other iterable (a set, ``dict.keys()``, a generator, a
    numpy array, as MXNet's ``list(...)`` takes) gives its items."""
    if obj is None:
        return []
    if isinstance(obj, (str, bytes)) or callable(obj) or not hasattr(obj, "__iter__"):
        return [obj]
    return [str(x) if isinstance(x, np.str_) else x for x in obj]


def named(fn: Any, name: str, doc: str | None = None) -> Any:
    """``fn`` (a function made by a factory) given its public ``name`` and docstring."""
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


def two_operands(where: str, params: tuple, args: tuple, kwargs: dict) -> tuple:
    """The two operands of a binary function whose MXNet signature names them ``params``
    (``power(base, exp)``, ``maximum(left, right)``), given by position or by name."""
    if len(args) > 2:
        raise TypeError(f"{where}() takes 2 operands ({', '.join(params)}), got {len(args)}")
    given = dict(zip(params, args))
    for key in list(kwargs):
        if key not in params:
            raise TypeError(f"{where}() got an unexpected keyword argument {key!r}")
        if key in given:
            raise TypeError(f"{where}() got multiple values for {key!r}")
        given[key] = kwargs.pop(key)
    missing = [p for p in params if p not in given]
    if missing:
        raise TypeError(f"{where}() missing operand {missing[0]!r}")
    return given[params[0]], given[params[1]]


def match_inputs(where: str, slots: list, positional: list, named: dict, missing) -> list:
    """An operator's inputs in ``slots`` order: the positional ones first, then by name;
    ``missing(slot)`` gives (or refuses) the others.

    Raises:
        MXNetError: for a name that is no slot (the message starts with ``where``).
    """
    unknown = sorted(set(named) - set(slots))
    if unknown:
        raise MXNetError(
            f"{where}: no input named {unknown[0]!r}; its inputs are {', '.join(slots) or 'none'}"
        )
    given = [positional[i] if i < len(positional) else None for i in range(len(slots))]
    return [
        given[i] if given[i] is not None else named[slot] if slot in named else missing(slot)
        for i, slot in enumerate(slots)
    ]


_as_list = as_list  # MXNet's name
_names_list = names_list

#: MXNet's numeric type flags, as stored in a variable's ``__dtype__`` attribute and passed
#: to ``CustomOpProp.create_operator``.
DTYPE_FLAGS = {
    "float32": 0,
    "float64": 1,
    "float16": 2,
    "uint8": 3,
    "int32": 4,
    "int8": 5,
    "int64": 6,
    "bool": 7,
    "int16": 8,
    "uint16": 9,
    "uint32": 10,
    "uint64": 11,
    "bfloat16": 12,
}
FLAG_DTYPES = {v: k for k, v in DTYPE_FLAGS.items()}


def require_cv2(what: str):
    """OpenCV (MXNet decodes and resizes images with its bundled copy; an optional
    dependency here), or an ImportError saying that ``what`` needs it and how to get it."""
    try:
        import cv2
    except ImportError:
        raise ImportError(f"{what} needs OpenCV: pip install opencv-python-headless") from None
    return cv2
