"""InitDesc, the Initializer base with MXNet's name dispatch, and the registry."""

from __future__ import annotations

import json
import logging
import warnings
from typing import Any, Callable

import numpy as np

from ..ndarray import NDArray
from ..registry import Registry, adopt
from ._composite import Load, Mixed
from ._fill import _assign, _rng

__all__ = ["InitDesc", "Initializer", "register", "alias", "create"]

_REGISTRY = Registry("initializer", case_sensitive=False)


class InitDesc(str):
    """A parameter name carrying its symbol attributes (MXNet ``mx.init.InitDesc``).

    Args:
        name: the parameter name (the string value).
        attrs: the variable's attributes, e.g. ``{'__init__': '["zero", {}]'}``.
        global_init: the initializer that ``Module.init_params`` was given.
    """

    def __new__(cls, name: str, attrs: dict | None = None, global_init: Any = None):
        ret = super().__new__(cls, name)
        ret.attrs = attrs or {}
        ret.global_init = global_init
        return ret


class Initializer:
    """Base class of parameter initializers (MXNet ``mx.init.Initializer``).

    Subclasses implement ``_init_weight(desc, arr)``; ``__call__`` dispatches on the name
    exactly as MXNet 1.9.1 does (see :meth:`__call__`). ``arr`` is an mxmod ``NDArray``;
    it is filled in place. Random draws use ``mxmod.random`` (seed with ``mx.random.seed``);
    the distributions match MXNet but not its random streams.
    """

    def __init__(self, **kwargs: Any):
        self._kwargs = kwargs
        self._verbose = False
        self._print_func: Callable | None = None

    def set_verbosity(self, verbose: bool = False, print_func: Callable | None = None):
        """Log ``'Initialized <name> as <pattern>: <stat>'`` for every initialised array.

        Args:
            verbose: whether to log.
            print_func: ``f(arr) -> str``; default ``norm(arr) / sqrt(arr.size)``.

        Returns:
            self.
        """
        self._verbose = verbose
        if print_func is None:

            def print_func(x):
                a = np.asarray(x._data, dtype=np.float64)
                return str(np.linalg.norm(a) / np.sqrt(max(a.size, 1)))

        self._print_func = print_func
        return self

    def _verbose_print(self, desc: str, init: str, arr: Any) -> None:
        if self._verbose and self._print_func:
            logging.info("Initialized %s as %s: %s", desc, init, self._print_func(arr))

    def dumps(self) -> str:
        """JSON ``[name_lower, kwargs]``, the form ``create`` and ``__init__`` attrs accept."""
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, Initializer):
            return NotImplemented
        return self.__class__ is other.__class__ and self._kwargs == other._kwargs

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._kwargs})"

    def __call__(self, desc: Any, arr: Any) -> None:
        """Initialise ``arr`` in place according to ``desc``.

        With an :class:`InitDesc` (what ``Module.init_params`` passes): a non-empty
        ``desc.attrs['__init__']`` wins (``create(attrs['__init__'])._init_weight``, whatever
        the name); otherwise the name suffix decides: ``weight`` -> ``_init_weight``, ``bias``
        -> 0, ``gamma`` -> 1, ``beta`` -> 0, ``min`` -> 0, ``max`` -> 1, ``weight_quantize``
        -> one random int in [-127, 126] broadcast (as MXNet), ``bias_quantize`` -> 0.
        mxmod addition: ``moving_mean``, ``moving_inv_var``, ``moving_avg`` -> 0 and
        ``moving_var`` -> 1 where MXNet would raise (it relies on the ``__init__`` attribute
        BatchNorm sets). Anything else raises.
        A plain string takes MXNet's deprecated legacy path (with a DeprecationWarning).

        Raises:
            ValueError: no rule matches the name.
            TypeError: ``arr`` is not an NDArray.
        """
        if not hasattr(arr, "_set_data"):
            raise TypeError(
                f"initializer target for {str(desc)!r} must be an mxmod NDArray, got "
                f"{type(arr).__name__}; wrap it with mx.nd.array(...)"
            )
        if getattr(arr, "stype", "default") != "default":
            # MXNet's initializers write every row of a row_sparse parameter (zeros
            # included); a csr one takes the dense value's non-zeros
            dense = NDArray(np.zeros(arr.shape, arr.dtype), arr.context)
            self(desc, dense)
            if arr.stype == "row_sparse":
                every_row = np.arange(arr.shape[0], dtype=np.int64)
                arr._set_parts(arr.shape, dense.asnumpy(), [every_row])
            else:
                arr[:] = dense
            return
        if not isinstance(desc, InitDesc):
            self._legacy_init(desc, arr)
            return
        if desc.global_init is None:
            desc.global_init = self
        init = desc.attrs.get("__init__", "")
        if init:
            create(init)._init_weight(desc, arr)
            self._verbose_print(desc, init, arr)
            return
        for suffix, method in _SUFFIX_RULES:
            if desc.endswith(suffix):
                getattr(self, method)(desc, arr)
                self._verbose_print(desc, suffix, arr)
                return
        self._init_default(desc, arr)

    def _legacy_init(self, name: Any, arr: Any) -> None:
        warnings.warn(
            "Calling initializer with init(str, NDArray) has been deprecated. "
            "please use init(mx.init.InitDesc(...), NDArray) instead.",
            DeprecationWarning,
            stacklevel=3,
        )
        if not isinstance(name, str):
            raise TypeError(f"name must be string, got {type(name).__name__}")
        if name.startswith("upsampling"):
            self._init_bilinear(name, arr)
        elif name.startswith("stn_loc") and name.endswith("weight"):
            self._init_zero(name, arr)
        elif name.startswith("stn_loc") and name.endswith("bias"):
            self._init_loc_bias(name, arr)
        else:
            for suffix, method in _LEGACY_RULES:
                if name.endswith(suffix):
                    getattr(self, method)(name, arr)
                    return
            self._init_default(name, arr)

    # ------------------------------------------------------------------ fill rules
    def _init_bilinear(self, _: Any, arr: Any) -> None:
        shape = arr.shape
        if len(shape) != 4:
            raise ValueError(f"bilinear initialisation needs a 4-D weight, got shape {shape}")
        f = np.ceil(shape[3] / 2.0)
        c = (2 * f - 1 - f % 2) / (2.0 * f)
        i = np.arange(int(np.prod(shape)))
        x = i % shape[3]
        y = (i // shape[3]) % shape[2]
        weight = (1 - np.abs(x / f - c)) * (1 - np.abs(y / f - c))
        _assign(arr, weight.astype(np.float32).reshape(shape))

    def _init_loc_bias(self, name: Any, arr: Any) -> None:
        if tuple(arr.shape) != (6,):
            raise ValueError(f"{name}: the stn_loc bias must have shape (6,), got {arr.shape}")
        _assign(arr, np.array([1.0, 0, 0, 0, 1.0, 0], np.float32))

    def _init_zero(self, _: Any, arr: Any) -> None:
        _assign(arr, 0.0)

    def _init_one(self, _: Any, arr: Any) -> None:
        _assign(arr, 1.0)

    _init_bias = _init_zero
    _init_beta = _init_zero
    _init_gamma = _init_one

    def _init_quantized_weight(self, _: Any, arr: Any) -> None:
        # As MXNet 1.9.1: ONE int drawn from [-127, 127) and broadcast to the whole array.
        _assign(arr, np.int8(_rng().integers(-127, 127)))

    def _init_weight(self, name: Any, arr: Any) -> None:
        raise NotImplementedError("Must override it")

    def _init_default(self, name: Any, _: Any) -> None:
        raise ValueError(
            f"Unknown initialization pattern for {name}. Default initialization is now limited "
            f'to "weight", "bias", "gamma" (1.0), and "beta" (0.0). Please use '
            f"mx.sym.Variable(init=mx.init.*) to set initialization pattern, e.g. "
            f"mx.sym.Variable('{name}', init=mx.init.Zero())"
        )


adopt(Initializer, _REGISTRY)  # mx.registry.get_register_func(Initializer, ...) files here


_SUFFIX_RULES = (
    ("weight", "_init_weight"),
    ("bias", "_init_bias"),
    ("gamma", "_init_gamma"),
    ("beta", "_init_beta"),
    ("min", "_init_zero"),
    ("max", "_init_one"),
    ("weight_quantize", "_init_quantized_weight"),
    ("bias_quantize", "_init_bias"),
    # mxmod fallbacks (MXNet relies on BatchNorm's __init__ attribute here)
    ("moving_mean", "_init_zero"),
    ("moving_var", "_init_one"),
    ("moving_inv_var", "_init_zero"),
    ("moving_avg", "_init_zero"),
)

_LEGACY_RULES = (
    ("bias", "_init_bias"),
    ("gamma", "_init_gamma"),
    ("beta", "_init_beta"),
    ("weight", "_init_weight"),
    ("moving_mean", "_init_zero"),
    ("moving_var", "_init_one"),
    ("moving_inv_var", "_init_zero"),
    ("moving_avg", "_init_zero"),
    ("min", "_init_zero"),
    ("max", "_init_one"),
)


# ----------------------------------------------------------------------------- registry
def register(klass: type) -> type:
    """Register an Initializer class under its lower-cased name (``mx.init.register``).

    Re-registering a name warns and replaces, as in MXNet.
    """
    if not (isinstance(klass, type) and issubclass(klass, Initializer)):
        raise TypeError(f"can only register Initializer subclasses, got {klass!r}")
    name = klass.__name__.lower()
    old = _REGISTRY.find(name)
    if old is not None and old is not klass:
        warnings.warn(f"new initializer {klass.__module__}.{klass.__name__} overrides {name!r}")
    _REGISTRY.register(name, klass, override=True)
    return klass


def alias(*aliases: str) -> Callable[[type], type]:
    """Decorator adding extra registry names for an Initializer class (``mx.init.alias``)."""

    def reg(klass: type) -> type:
        for name in aliases:
            _REGISTRY.register(name, klass, override=True)
        return klass

    return reg


def create(*args: Any, **kwargs: Any) -> Any:
    """Make an initializer from a name, JSON string, dict or instance (``mx.init.create``).

    Accepts an instance (returned as is), a registered name (case-insensitive) plus
    constructor kwargs, ``'["xavier", {"magnitude": 2}]'``, ``'{"initializer": "xavier"}'``,
    or a dict ``{'initializer': 'xavier', ...}``.

    Raises:
        ValueError: an unknown name (the message lists the registered ones), or extra
            arguments given with an instance or a JSON string.
        TypeError: the name is not a string.
    """
    if args:
        name, args = args[0], args[1:]
    elif "initializer" in kwargs:
        name = kwargs.pop("initializer")
    else:
        raise TypeError("create() needs an initializer name, e.g. create('xavier')")

    if isinstance(name, (Initializer, Mixed, Load)):
        if args or kwargs:
            raise ValueError(
                f"initializer {name!r} is already an instance. Additional arguments are invalid"
            )
        return name
    if isinstance(name, dict):
        return create(**name)
    if not isinstance(name, str):
        raise TypeError(f"initializer must be of string type, got {type(name).__name__}")
    if name.startswith("[") or name.startswith("{"):
        if args or kwargs:
            raise ValueError(f"no extra arguments allowed with the JSON initializer {name!r}")
        parsed = json.loads(name)
        if isinstance(parsed, list):
            return create(parsed[0], **parsed[1])
        return create(**parsed)
    return _REGISTRY.get(name)(*args, **kwargs)
