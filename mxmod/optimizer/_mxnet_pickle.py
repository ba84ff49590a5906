"""Reading MXNet's pickled optimizer states (``.states`` files), behind an explicit opt-in.

MXNet 1.x writes ``Updater.get_states()`` / ``Module.save_optimizer_states`` as a Python
pickle of ``{index or name: state}`` whose arrays are ``mxnet.ndarray.ndarray.NDArray``
objects (each pickled as one NDArray file record, spec 10.1). Unpickling an untrusted file
can run arbitrary code, so mxmod only reads these files when the caller passes
``allow_pickle=True``, and even then with :class:`RestrictedUnpickler`: it resolves only
MXNet's NDArray (to :class:`PickledNDArray`, a stand-in that decodes the record bytes),
``bytearray``, numpy arrays/dtypes/scalars (numeric only, through checked wrappers) and
``collections.OrderedDict``; any other global (an optimizer object from
``dump_optimizer=True``, ``os.system``, ...) is refused.

:func:`to_fused` maps the loaded states, keyed by MXNet's index ``i*num_device+k`` or by
parameter name (spec Appendix B #6), onto a Module's fused, name-keyed state.
"""

from __future__ import annotations

import codecs
import collections
import io
import math
import pickle
from typing import Any

import jax
import numpy as np

from ..base import MXNetFileError
from ..fileio import check_pickle_stream
from ..ndarray.records import Reader, read_record

REFUSED_HELP = (
    "unpickling can run arbitrary code, so mxmod never unpickles state files unless asked. "
    "If you trust the file (e.g. you wrote it with MXNet yourself), pass allow_pickle=True "
    "(mod.load_optimizer_states(fname, allow_pickle=True), Module.load(..., "
    "load_optimizer_states=True, allow_pickle=True) or updater.set_states(data, "
    "allow_pickle=True)); mxmod then uses a restricted unpickler that accepts only numpy "
    "arrays, MXNet NDArrays and plain containers"
)


def is_pickle(data: bytes) -> bool:
    """True for protocol 2+ pickles (what MXNet writes)."""
    return bytes(data[:1]) == b"\x80"


class PickledNDArray:
    """Stand-in for ``mxnet.ndarray.ndarray.NDArray`` inside a pickle.

    MXNet pickles an NDArray as ``NDArray(None)`` plus the state
    ``{'handle': <one NDArray record>}``; ``array`` is the decoded numpy array (None for an
    empty handle).
    """

    def __init__(self, handle: Any = None):
        self.array = None

    def __setstate__(self, state: Any) -> None:
        raw = state.get("handle") if isinstance(state, dict) else None
        if raw is None:
            self.array = None
            return
        if not isinstance(raw, (bytes, bytearray)):
            raise _Refused(
                f"a pickled MXNet NDArray has a {type(raw).__name__} handle "
                f"(expected the bytes of one NDArray record)"
            )
        reader = Reader(bytes(raw), "pickled MXNet NDArray")
        arr = read_record(reader, "record")
        if not isinstance(arr, np.ndarray):
            raise NotImplementedError(f"pickled MXNet NDArray {arr.what}; {arr.fix}")
        self.array = arr


class _Refused(pickle.UnpicklingError):
    """Something the restricted unpickler does not allow."""


def _latin1_encode(text: str, encoding: str = "latin1") -> bytes:
    """``_codecs.encode`` as protocol-2 pickles use it for bytes; nothing else allowed."""
    if not isinstance(text, str) or not isinstance(encoding, str):
        raise _Refused("_codecs.encode is only allowed for latin-1 bytes")
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        name = ""
    if name != "iso8859-1":
        raise _Refused("_codecs.encode is only allowed for latin-1 bytes")
    return text.encode("latin1")


def _bytearray(*args: Any) -> bytearray:
    """``bytearray`` of bytes or latin-1 text only (never ``bytearray(size)``)."""
    if not args:
        return bytearray()
    if len(args) == 1 and isinstance(args[0], (bytes, bytearray)):
        return bytearray(args[0])
    if len(args) == 2 and isinstance(args[0], str):
        return bytearray(_latin1_encode(*args))
    raise _Refused(
        f"bytearray({', '.join(type(a).__name__ for a in args)}) is not allowed: "
        f"only bytearray(bytes) builds NDArray handles"
    )


def _dtype(*args: Any) -> np.dtype:
    try:
        dt = np.dtype(*args)
    except (TypeError, ValueError) as e:
        raise _Refused(f"invalid numpy dtype {args[:1]!r} ({e})") from None
    if dt.hasobject:
        raise _Refused("numpy object arrays are not allowed in optimizer states")
    if dt.kind not in "biufc" or dt.fields is not None or dt.subdtype is not None:
        raise _Refused(
            f"numpy arrays of dtype {dt} are not allowed in optimizer states "
            f"(numeric dtypes only; no object arrays)"
        )
    return dt


try:
    from numpy._core import multiarray as _multiarray
except ImportError:  # numpy 1.x
    from numpy.core import multiarray as _multiarray


class _NdarrayClass:
    """What ``numpy.ndarray`` resolves to: usable only as ``_reconstruct``'s first argument
    (so a pickle cannot call ``ndarray(shape, 'O')`` directly)."""


def _check_size(shape: Any, dtype: Any, limit: int, what: str) -> tuple:
    """``shape`` as a tuple of ints whose array of ``dtype`` fits in ``limit`` bytes."""
    shape = (shape,) if isinstance(shape, int) else shape
    if (
        not isinstance(shape, tuple)
        or len(shape) > 32
        or not all(type(d) is int and d >= 0 for d in shape)
    ):
        raise _Refused(f"{what}: shape {shape!r} is not up to 32 sizes >= 0")
    dt = _dtype(dtype)
    need = math.prod(shape) * dt.itemsize
    if need > limit:
        raise _Refused(
            f"{what}: shape {shape} of {dt} needs {need} bytes, more than the "
            f"{limit}-byte pickle holds"
        )
    return shape


class _Globals:
    """The numpy constructors a pickle may call, bounded by the pickle's size."""

    def __init__(self, limit: int):
        self.limit = limit

    def reconstruct(self, subtype: Any, shape: Any, dtype: Any) -> np.ndarray:
        if subtype is not _NdarrayClass:
            raise _Refused("numpy _reconstruct is only allowed for plain numpy arrays")
        shape = _check_size(shape, dtype, self.limit, "numpy _reconstruct")
        return _multiarray._reconstruct(np.ndarray, shape, _dtype(dtype))

    def scalar(self, dtype: Any, *args: Any) -> Any:
        if (
            not isinstance(dtype, np.dtype)
            or dtype.kind not in "biufc"
            or len(args) > 1
            or (args and not isinstance(args[0], (bytes, bytearray)))
        ):
            raise _Refused("numpy scalars must have a numeric dtype and bytes")
        return _multiarray.scalar(dtype, *args)

    def frombuffer(self, buf: Any, dtype: Any, shape: Any, order: str) -> np.ndarray:
        """numpy's protocol-5 array constructor, numeric dtypes only."""
        if not isinstance(buf, (bytes, bytearray)) or order not in ("C", "F"):
            raise _Refused("numpy _frombuffer is only allowed for numeric arrays from bytes")
        shape = _check_size(shape, dtype, len(buf), "numpy _frombuffer")
        dt = _dtype(dtype)
        if math.prod(shape) * dt.itemsize != len(buf):
            raise _Refused(f"numpy _frombuffer: {len(buf)} bytes for shape {shape} of {dt}")
        return np.frombuffer(buf, dt).reshape(shape, order=order).copy()


_ALLOWED = {
    ("mxnet.ndarray.ndarray", "NDArray"): PickledNDArray,
    ("mxnet.ndarray", "NDArray"): PickledNDArray,
    ("builtins", "bytearray"): _bytearray,
    ("__builtin__", "bytearray"): _bytearray,
    ("_codecs", "encode"): _latin1_encode,
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("numpy", "ndarray"): _NdarrayClass,
    ("numpy", "dtype"): _dtype,
}
_BOUNDED = {}  # (module, name) -> method of _Globals
for _mod in ("numpy.core.multiarray", "numpy._core.multiarray"):
    _BOUNDED[(_mod, "_reconstruct")] = "reconstruct"
    _BOUNDED[(_mod, "scalar")] = "scalar"
for _mod in ("numpy.core.numeric", "numpy._core.numeric"):
    _BOUNDED[(_mod, "_frombuffer")] = "frombuffer"


class RestrictedUnpickler(pickle.Unpickler):
    """A pickle reader that resolves only the globals MXNet optimizer states use.

    Args:
        file: the pickle stream.
        limit: the pickle's size in bytes; numpy arrays built from it may not be larger.
    """

    def __init__(self, file: Any, limit: int):
        super().__init__(file)
        self._globals = _Globals(limit)

    def find_class(self, module: str, name: str) -> Any:
        bounded = _BOUNDED.get((module, name))
        if bounded is not None:
            return getattr(self._globals, bounded)
        found = _ALLOWED.get((module, name))
        if found is None:
            hint = ""
            if module.startswith(("mxnet.optimizer", "mxnet.lr_scheduler")):
                hint = (
                    " (the file holds an optimizer object: it was saved with "
                    "dump_optimizer=True; re-save the states without it)"
                )
            raise _Refused(
                f"refusing to load global {module}.{name}: only numpy arrays, MXNet NDArrays "
                f"and plain containers are allowed in optimizer states{hint}"
            )
        return found


MAX_DEPTH = 64  # nesting of the states (a dict of tuples of arrays is 3 deep)


def _plain(obj: Any, source: str, where: str = "states", depth: int = 0) -> Any:
    """Replace stand-ins by numpy arrays; check the tree holds only what states hold."""
    if depth > MAX_DEPTH:
        raise _fail(
            source,
            where,
            f"nested more than {MAX_DEPTH} levels deep",
            f"at most {MAX_DEPTH} levels",
        )
    if isinstance(obj, PickledNDArray):
        return obj.array
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind not in "biufc":
            raise _fail(source, where, f"an array of dtype {obj.dtype}", "numeric arrays")
        return obj
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, (tuple, list)):
        items = [_plain(v, source, f"{where}[{i}]", depth + 1) for i, v in enumerate(obj)]
        return tuple(items) if isinstance(obj, tuple) else items
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if not isinstance(k, (int, str, bytes, bytearray)) or isinstance(k, bool):
                raise _fail(
                    source,
                    f"{where} key {k!r}",
                    f"a {type(k).__name__} key",
                    "parameter indices or names",
                )
            out[_key(k)] = _plain(v, source, f"{where}[{k!r}]", depth + 1)
        return out
    raise _fail(
        source,
        where,
        f"a {type(obj).__name__}",
        "NDArrays, numpy arrays, numbers and tuples/lists/dicts of them",
    )


def _key(k: Any) -> Any:
    if isinstance(k, (bytes, bytearray)):
        return bytes(k).decode("utf-8", "surrogateescape")
    return k


def states_error(source: str, where: str, problem: str, expected: str, what: str):
    """The error of both state-file readers: the file, the field, what was wrong there."""
    return MXNetFileError(
        f"{source}: {where}: {problem} (expected {expected}); the file is damaged or not {what}",
        source,
        where,
        expected,
    )


def _fail(source: str, where: str, problem: str, expected: str) -> MXNetFileError:
    return states_error(source, where, problem, expected, "MXNet optimizer states")


def restricted_loads(data: bytes, source: str = "optimizer states") -> dict:
    """Decode MXNet's pickled ``{index or name: state}`` with numpy arrays as leaves.

    The opcodes are walked first (``fileio.check_pickle_stream``: frame lengths, memo
    indices, truncation), then the restricted unpickler runs with every array it builds
    bounded by the pickle's size.

    Raises:
        MXNetFileError: the pickle is refused (a disallowed global) or malformed, or it is not
            a states dict, naming ``source`` and the offset or entry.
    """
    data = bytes(data)
    check_pickle_stream(data, source)
    try:
        obj = RestrictedUnpickler(io.BytesIO(data), len(data)).load()
    except _Refused as e:
        raise _fail(
            source, "pickle", str(e), "only NDArrays, numpy arrays and containers"
        ) from None
    except MXNetFileError as e:  # an NDArray record inside the pickle
        raise MXNetFileError(f"{source}: {e}", source, e.where, e.expected) from None
    except NotImplementedError as e:
        raise NotImplementedError(f"{source}: {e}") from None
    except Exception as e:  # noqa: BLE001 - any failure of the C unpickler is a bad file
        raise _fail(
            source,
            "pickle",
            f"not a valid MXNet optimizer-state pickle ({type(e).__name__}: {e})",
            "a pickle written by MXNet",
        ) from None
    if isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[0], dict):
        obj = obj[0]  # (states, optimizer) cannot get here: optimizers are refused above
    if not isinstance(obj, dict):
        raise _fail(
            source,
            "pickle",
            f"expected a pickled dict of optimizer states, got {type(obj).__name__}",
            "a dict index or name -> state",
        )
    return _plain(obj, source)


def _shapes(leaf: Any) -> list:
    return [np.shape(x) for x in jax.tree_util.tree_leaves(leaf)]


def _pick_num_device(
    states: dict, param_names: list, fused: dict, param_shapes: dict, first: int
) -> int:
    """The ``num_device`` D for which index keys ``i*D+k`` fit the module's parameters
    (every trained parameter covered, every state array shaped like its parameter)."""
    keys = list(states)

    def fits(d: int) -> bool:
        covered = set()
        for key in keys:
            i = key // d
            if i >= len(param_names) or param_names[i] not in fused:
                return False
            want = tuple(param_shapes[param_names[i]])
            if any(shape != want for shape in _shapes(states[key])):
                return False
            covered.add(param_names[i])
        return covered == set(fused)

    for d in dict.fromkeys([first, *range(1, max(keys) + 2)]):
        if d >= 1 and fits(d):
            return d
    raise MXNetFileError(
        f"the states are keyed by indices {sorted(keys)[:12]}, which do not map onto this "
        f"module's trained parameters {[n for n in param_names if n in fused]} as "
        f"index*num_device+device for any "
        f"num_device (or their shapes differ); load them into a Module with the same symbol, "
        f"input shapes and fixed_param_names, and the optimizer they were saved with"
    )


def to_fused(
    states: dict,
    param_names: list,
    fused: dict,
    param_shapes: dict,
    num_device: int,
    source: str = "optimizer states",
) -> dict:
    """Map MXNet states onto a fused state ``{name: leaf}`` shaped like ``fused``.

    Args:
        states: from :func:`loads`: ``{int index or str name: leaf}``.
        param_names: the module's ``_param_names`` (MXNet's index ``i`` is a position here).
        fused: the module's current fused state (gives names, structures, shapes).
        param_shapes: ``{name: shape}`` of the trained parameters.
        num_device: the module's number of contexts (tried first for index keys).

    Returns:
        ``{name: leaf}`` with numpy leaves (device copy 0 for per-device index states).

    Raises:
        MXNetFileError: keys, structures or shapes do not fit, naming the parameter.
    """
    keys = list(states)
    if not keys:
        raise MXNetFileError(f"{source} holds no states")
    if all(isinstance(k, str) for k in keys):
        by_name = dict(states)
    elif all(isinstance(k, int) and k >= 0 for k in keys):
        d = _pick_num_device(states, param_names, fused, param_shapes, num_device)
        by_name = {}
        for key in sorted(keys):
            by_name.setdefault(param_names[key // d], states[key])
    else:
        raise MXNetFileError(
            f"{source} mixes key types ({sorted(map(repr, keys))[:6]}); expected "
            f"all parameter indices or all parameter names"
        )
    # MXNet's parameter order (a fused state that went through jax may be key-sorted)
    order = [n for n in param_names if n in fused] + [n for n in fused if n not in param_names]
    missing = [n for n in order if n not in by_name]
    extra = [n for n in by_name if n not in fused]
    if missing or extra:
        raise MXNetFileError(
            f"{source} does not match this module's trained parameters: "
            f"missing {missing}, unknown {extra}"
        )
    out = {}
    for name in order:
        cur, got = fused[name], by_name[name]
        if jax.tree_util.tree_structure(got) != jax.tree_util.tree_structure(cur):
            raise MXNetFileError(
                f"{source}: the state of {name!r} is "
                f"{jax.tree_util.tree_structure(got)} but this optimizer keeps "
                f"{jax.tree_util.tree_structure(cur)}; use the optimizer (and momentum / "
                f"multi_precision settings) the states were saved with"
            )
        if _shapes(got) != _shapes(cur):
            raise MXNetFileError(
                f"{source}: the state of {name!r} has shapes {_shapes(got)} but "
                f"this module needs {_shapes(cur)}"
            )
        out[name] = got
    return out
