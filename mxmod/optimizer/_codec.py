"""Safe (pickle-free) serialisation of optimizer states and optimizers.

The bytes are an uncompressed NPZ archive (``numpy.savez``) read back with
``allow_pickle=False``: member ``__mxmod_optimizer_states__`` is UTF-8 JSON describing the
object tree, members ``a0``, ``a1``, ... hold the arrays. See ``README.md`` for the layout.
Only registered optimizer classes and ``mx.lr_scheduler`` classes are ever instantiated on
load, and only by setting their attributes (no constructor, no import by name).
"""

from __future__ import annotations

import io
import json
from typing import Any, NamedTuple

import jax.numpy as jnp
import numpy as np

from ..context import Context, current_context
from ..fileio import read_npz
from ..lr_scheduler import LRScheduler
from ..ndarray import NDArray
from ._base import Optimizer
from ._codec_attrs import TRANSIENT, attrs_of, check_attrs
from ._state_objects import StateObject, is_plain_object
from ._mxnet_pickle import REFUSED_HELP, states_error

FORMAT = "mxmod-optimizer-states"
VERSION = 2  # 2 added "kind" and "counts"; version 1 files are still read
META = "__mxmod_optimizer_states__"
_META_KEYS = {
    1: ("format", "version", "states", "optimizer"),
    2: ("format", "version", "states", "optimizer", "kind", "counts"),
}


def _keys_wanted(version: int) -> str:
    return f"an object with keys {', '.join(_META_KEYS[version])} (version {version})"


class Counts(NamedTuple):
    """Update counts stored beside the states: ``num_update`` and ``{index: count}``."""

    num_update: int
    per_index: dict


class HostNDArray(NamedTuple):
    """A host array written as an NDArray on ``(device_type, device_id)`` (what a Module
    writes for each device's copy, without placing the copies on the devices)."""

    array: np.ndarray
    device_type: str
    device_id: int


class StatesFile(NamedTuple):
    """What a states blob holds; ``version`` is the format version that wrote it."""

    states: Any
    optimizer: Any
    counts: Counts | None
    kind: str | None  # the name of the optimizer class the states were made by
    version: int


# mxmod's first Module format (version 1): these keys in place of the states
V1_MODULE_KEYS = (
    {"fused_state", "num_update", "index_update_count"},  # required
    {"fused_state", "num_update", "index_update_count", "optimizer"},  # allowed
)


def is_v1_module_payload(got: StatesFile) -> bool:
    """True for a Module file of mxmod's first format (``{"fused_state": {name: state},
    "num_update", "index_update_count"[, "optimizer"]}``, version 1)."""
    s = got.states
    return (
        got.version == 1
        and isinstance(s, dict)
        and V1_MODULE_KEYS[0] <= set(s) <= V1_MODULE_KEYS[1]
    )


class _Encoder:
    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}

    def array(self, a: Any, tag: str, extra: dict) -> dict:
        host = np.asarray(a)
        dtype = np.dtype(host.dtype)
        if dtype.kind not in "biufc":  # bfloat16 & co: store the raw bits
            host = host.view(f"u{dtype.itemsize}")
        key = f"a{len(self.arrays)}"
        self.arrays[key] = np.ascontiguousarray(host)
        return {tag: key, "dtype": dtype.name, **extra}

    def __call__(self, obj: Any, where: str = "state") -> Any:
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, (int, float)):
            return obj
        if isinstance(obj, np.generic):
            return obj.item()
        if isinstance(obj, HostNDArray):
            ctx = [obj.device_type, obj.device_id]
            return self.array(obj.array, "__nd__", {"ctx": ctx})
        if hasattr(obj, "_set_data") and hasattr(obj, "_data"):  # NDArray
            ctx = obj.context
            extra = {"ctx": [ctx.device_type, ctx.device_id]}
            if getattr(obj, "stype", "default") != "default":  # stored dense, cast back
                extra["stype"] = obj.stype
            return self.array(obj._data, "__nd__", extra)
        if isinstance(obj, np.ndarray) or type(obj).__module__.startswith("jax"):
            return self.array(obj, "__array__", {})
        if isinstance(obj, tuple):
            return {"__tuple__": [self(v, where) for v in obj]}
        if isinstance(obj, list):
            return [self(v, where) for v in obj]
        if isinstance(obj, dict):
            items = obj.items()
            return {"__dict__": [[self(k, where), self(v, f"{where}[{k!r}]")] for k, v in items]}
        if isinstance(obj, Optimizer):
            return {"__optimizer__": type(obj).__name__.lower(), "attrs": self.attrs(obj)}
        if isinstance(obj, LRScheduler):
            return {"__lr_scheduler__": type(obj).__name__, "attrs": self.attrs(obj)}
        if is_plain_object(obj):  # a user class's state (attributes only: no pickle)
            attrs = {k: self(v, f"{where}.{k}") for k, v in vars(obj).items()}
            return {"__object__": type(obj).__name__, "attrs": attrs}
        raise TypeError(
            f"cannot serialise {where} of type {type(obj).__name__} without pickle; "
            f"save with dump_optimizer=False or keep such attributes off the optimizer"
        )

    def attrs(self, obj: Any) -> dict:
        out = {}
        for k, v in attrs_of(obj).items():
            if k not in TRANSIENT:
                out[k] = self(v, f"{type(obj).__name__}.{k}")
        return out


def dumps(
    states: dict, optimizer: Any = None, counts: Counts | None = None, kind: str | None = None
) -> bytes:
    """Serialise an Updater's ``states`` (optionally with its optimizer, its update counts
    and ``kind``, the lower-case name of the optimizer class that made the states)."""
    enc = _Encoder()
    meta = {
        "format": FORMAT,
        "version": VERSION,
        "states": enc(states),
        "optimizer": enc(optimizer, "optimizer") if optimizer is not None else None,
        "kind": kind,
        "counts": None
        if counts is None
        else {"num_update": counts.num_update, "index_update_count": enc(counts.per_index)},
    }
    blob = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
    buf = io.BytesIO()
    np.savez(buf, **{META: blob}, **enc.arrays)
    return buf.getvalue()


def _subclasses(cls: type) -> dict[str, type]:
    out, todo = {}, [cls]
    while todo:
        c = todo.pop()
        out[c.__name__] = c
        todo.extend(c.__subclasses__())
    return out


MAX_DEPTH = 64  # nesting of the JSON description (states are a few levels deep)
_TAGS = {
    "__nd__": {"__nd__", "dtype", "ctx"},
    "__array__": {"__array__", "dtype"},
    "__tuple__": {"__tuple__"},
    "__dict__": {"__dict__"},
    "__optimizer__": {"__optimizer__", "attrs"},
    "__lr_scheduler__": {"__lr_scheduler__", "attrs"},
    "__object__": {"__object__", "attrs"},
}
_OPTIONAL_KEYS = {"__nd__": {"stype"}}  # a sparse NDArray's storage type


def _fail(source: str, where: str, problem: str, expected: str) -> Exception:
    return states_error(source, where, problem, expected, "an mxmod optimizer-state file")


def _short(obj: Any) -> str:
    text = json.dumps(obj) if not isinstance(obj, str) else repr(obj)
    return text if len(text) <= 60 else text[:57] + "..."


class _Decoder:
    """Turns the JSON description back into states, checking every field it reads."""

    def __init__(self, arrays: dict, source: str) -> None:
        self.arrays, self.source = arrays, source

    def fail(self, where: str, problem: str, expected: str) -> Exception:
        return _fail(self.source, where, problem, expected)

    def array(self, obj: dict, key: str, where: str) -> np.ndarray:
        member = obj[key]
        if not isinstance(member, str) or member not in self.arrays:
            raise self.fail(
                f"{where}.{key}",
                f"{_short(member)} names no array member",
                f"one of the members {sorted(self.arrays)[:5]}",
            )
        name = obj.get("dtype")
        dtype = state_dtype(name)
        if dtype is None:
            raise self.fail(
                f"{where}.dtype",
                f"{_short(name)} is not a dtype",
                "a numeric dtype name such as 'float32'",
            )
        host = self.arrays[member]
        if host.dtype == dtype:
            return host
        if dtype.kind not in "biufc" and host.dtype == np.dtype(f"u{dtype.itemsize}"):
            return host.view(dtype)  # bfloat16 & co are stored as raw bits
        raise self.fail(
            f"{where}.dtype",
            f"{name!r} but member {member!r} holds {host.dtype}",
            "the dtype of the stored array",
        )

    def __call__(self, obj: Any, where: str = "states", depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise self.fail(
                where, f"nested more than {MAX_DEPTH} levels deep", f"at most {MAX_DEPTH} levels"
            )
        if isinstance(obj, list):
            return [self(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(obj)]
        if not isinstance(obj, dict):
            return obj
        tags = [t for t in _TAGS if t in obj]
        if len(tags) != 1 or not (
            _TAGS[tags[0]] <= set(obj) <= _TAGS[tags[0]] | _OPTIONAL_KEYS.get(tags[0], set())
        ):
            raise self.fail(
                where,
                f"an object with keys {sorted(obj)[:4]}",
                "one of the tagged objects get_states writes",
            )
        tag = tags[0]
        if tag == "__nd__":
            ctx = obj["ctx"]
            if ctx is not None and not (
                isinstance(ctx, list)
                and len(ctx) == 2
                and isinstance(ctx[0], str)
                and type(ctx[1]) is int
                and ctx[1] >= 0
            ):
                raise self.fail(
                    f"{where}.ctx",
                    f"{_short(ctx)} is not a context",
                    "[device_type, device_id], e.g. ['cpu', 0]",
                )
            arr = _make_ndarray(self.array(obj, tag, where), ctx)
            stype = obj.get("stype", "default")
            if stype not in ("row_sparse", "csr", "default"):
                raise self.fail(f"{where}.stype", repr(stype), "'row_sparse' or 'csr'")
            return arr if stype == "default" else arr.tostype(stype)
        if tag == "__array__":
            return jnp.asarray(self.array(obj, tag, where))
        items = obj[tag]
        if tag == "__tuple__":
            if not isinstance(items, list):
                raise self.fail(
                    f"{where}.{tag}",
                    f"{_short(items)} is not a list",
                    "a list of the tuple's items",
                )
            return tuple(self(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(items))
        if tag == "__dict__":
            return self.mapping(items, where, depth)
        return self.instance(obj, tag, where, depth)

    def mapping(self, items: Any, where: str, depth: int) -> dict:
        if not isinstance(items, list) or not all(
            isinstance(kv, list) and len(kv) == 2 for kv in items
        ):
            raise self.fail(
                f"{where}.__dict__",
                f"{_short(items)} is not a list of pairs",
                "[[key, value], ...]",
            )
        out = {}
        for i, (k, v) in enumerate(items):
            key = self(k, f"{where}.key{i}", depth + 1)
            try:
                hash(key)
            except TypeError:
                raise self.fail(
                    f"{where}.key{i}",
                    f"{_short(k)} is not hashable",
                    "a name, number or tuple as a key",
                ) from None
            out[key] = self(v, f"{where}[{key!r}]", depth + 1)
        return out

    def instance(self, obj: dict, tag: str, where: str, depth: int) -> Any:
        name, attrs = obj[tag], obj["attrs"]
        if not isinstance(name, str) or not isinstance(attrs, dict):
            raise self.fail(
                where,
                f"{tag} {_short(name)} with attrs {_short(attrs)}",
                "a class name and an object of attributes",
            )
        if tag == "__object__":  # conformed to the optimizer's own state when loaded
            return StateObject(
                name, {k: self(v, f"{where}.{k}", depth + 1) for k, v in attrs.items()}
            )
        if tag == "__optimizer__":
            cls = Optimizer.opt_registry.get(name)
            help_ = (
                "a registered optimizer; import or register it (mx.optimizer.register) "
                "before loading the states"
            )
        else:
            cls = _subclasses(LRScheduler).get(name)
            help_ = "an mx.lr_scheduler class; define it before loading"
        if cls is None:
            raise self.fail(f"{where}.{tag}", f"unknown class {name!r}", help_)
        values = {k: self(v, f"{where}.{k}", depth + 1) for k, v in attrs.items()}
        return check_attrs(cls, values, f"{where} ({name})", self.fail)


def state_dtype(name: Any) -> np.dtype | None:
    """The numpy dtype a state array may have for dtype name ``name``: a number type, or an
    ``ml_dtypes`` one (``bfloat16``, stored as raw bits); None for anything else (strings,
    dates, void, objects, or a name numpy cannot read such as ``'u16'`` or ``'(-1,3)'``)."""
    if not isinstance(name, str):
        return None
    try:
        dtype = np.dtype(jnp.dtype(name))
    except (TypeError, ValueError, SyntaxError):
        return None
    if dtype.kind in "biufc":
        return dtype
    bits_ok = dtype.itemsize in (1, 2, 4, 8) and dtype.type.__module__ == "ml_dtypes"
    return dtype if bits_ok else None


def _make_ndarray(host: np.ndarray, ctx: Any) -> Any:
    c = current_context()
    if ctx is not None:
        try:
            c = Context(*ctx)
            c.jax_device  # noqa: B018  (raises when the device is missing here)
        except Exception:  # noqa: BLE001 - a device this machine lacks: the current one
            c = current_context()
    return NDArray(host, c)


def loads(data: bytes, source: str = "optimizer states") -> tuple[dict, Any]:
    """Inverse of :func:`dumps`: returns ``(states, optimizer_or_None)``; see
    :func:`loads_file` (which also returns the update counts)."""
    got = loads_file(data, source)
    return got.states, got.optimizer


def loads_file(data: bytes, source: str = "optimizer states") -> StatesFile:
    """Inverse of :func:`dumps`.

    Every size is checked before anything is allocated (``fileio.read_npz``) and every
    field of the JSON description is checked as it is read.

    Args:
        data: the blob.
        source: how error messages name it (e.g. the file name).

    Raises:
        NotImplementedError: ``data`` is an MXNet pickle (read only by
            ``Updater.set_states(..., allow_pickle=True)``, for safety).
        MXNetFileError: ``data`` is not a well-formed mxmod optimizer-state blob, naming
            ``source``, the member or JSON field and what was expected.
    """
    meta, arrays = _read_meta(data, source)
    dec = _Decoder(arrays, source)
    states = dec(meta["states"], "states")
    opt = dec(meta["optimizer"], "optimizer") if meta["optimizer"] is not None else None
    if opt is not None and not isinstance(opt, Optimizer):
        raise _fail(source, "optimizer", f"a {type(opt).__name__}", "a dumped optimizer")
    counts = _counts(dec, meta.get("counts"), source)
    kind = meta.get("kind")
    if kind is not None and not isinstance(kind, str):
        raise _fail(source, "kind", f"{_short(kind)}", "null or an optimizer name")
    return StatesFile(states, opt, counts, kind, meta["version"])


def _counts(dec: _Decoder, raw: Any, source: str) -> Counts | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or set(raw) != {"num_update", "index_update_count"}:
        raise _fail(
            source,
            "counts",
            f"{_short(raw)}",
            "null or an object with keys num_update, index_update_count",
        )
    num = raw["num_update"]
    if type(num) is not int or num < 0:
        raise _fail(source, "counts.num_update", f"{_short(num)}", "an int >= 0")
    per_index = dec(raw["index_update_count"], "counts.index_update_count")
    if not isinstance(per_index, dict):
        raise _fail(source, "counts.index_update_count", f"a {type(per_index).__name__}", "a dict")
    for key, c in per_index.items():
        if type(c) is not int or c < 0:
            raise _fail(
                source, f"counts.index_update_count[{key!r}]", f"{_short(c)}", "an int >= 0"
            )
    return Counts(num, per_index)


def _read_meta(data: Any, source: str) -> tuple[dict, dict]:
    """The checked JSON description and the array members of a blob."""
    if isinstance(data, str):
        data = data.encode("latin-1")
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"optimizer states must be bytes, got {type(data).__name__}")
    data = bytes(data)
    if data[:1] == b"\x80":
        raise NotImplementedError(
            f"these optimizer states are a Python pickle (written by MXNet); {REFUSED_HELP}"
        )
    if data[:2] != b"PK":
        raise _fail(
            source,
            "offset 0",
            f"starts with {data[:4]!r}",
            "an mxmod optimizer-state blob (the NPZ format of get_states, 'PK...')",
        )
    arrays = read_npz(data, source)
    raw = arrays.pop(META, None)
    if raw is None:
        raise _fail(source, f"member {META!r}", "missing", "the JSON description of the states")
    if raw.dtype != np.uint8 or raw.ndim != 1:
        raise _fail(
            source,
            f"member {META!r}",
            f"{raw.dtype} array of shape {raw.shape}",
            "1-D uint8 (UTF-8 JSON)",
        )
    try:
        meta = json.loads(raw.tobytes().decode("utf-8"))
    except UnicodeDecodeError as e:
        raise _fail(source, f"member {META!r} byte {e.start}", "not UTF-8", "UTF-8 JSON") from None
    except json.JSONDecodeError as e:
        raise _fail(source, f"member {META!r} char {e.pos}", e.msg, "valid JSON") from None
    except RecursionError:
        raise _fail(
            source, f"member {META!r}", "JSON nested too deeply", f"at most {MAX_DEPTH} levels"
        ) from None
    if not isinstance(meta, dict):
        raise _fail(
            source, f"member {META!r}", f"description {type(meta).__name__}", _keys_wanted(VERSION)
        )
    version = meta.get("version")
    known = type(version) is int and version in _META_KEYS
    if {"format", "version"} <= set(meta) and (meta["format"] != FORMAT or not known):
        raise _fail(
            source,
            f"member {META!r} format",
            f"{_short(meta['format'])} version {_short(version)}",
            f"{FORMAT!r} version 1 to {VERSION} (a newer mxmod wrote it?)",
        )
    if not known or set(meta) != set(_META_KEYS[version]):
        want = _keys_wanted(version if known else VERSION)
        raise _fail(source, f"member {META!r}", f"description {sorted(meta)[:6]}", want)
    return meta, arrays
