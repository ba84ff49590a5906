"""Making symbols: ``Variable``, ``Group`` and the ``mx.sym.<Op>`` constructors."""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Optional

import numpy as np

from ..base import DTYPE_FLAGS, MXNetError, match_inputs, named
from ..ops import get_op
from ..ops._def import positional_attrs
from ..ops._attrs import attr_str
from . import json_io
from .graph import Node
from .naming import AttrScope, NameManager, dunder
from .symbol import Symbol


def _dtype_name(dtype: Any) -> str:
    if isinstance(dtype, str) and dtype == "bfloat16":
        return dtype
    try:
        return np.dtype(dtype).name
    except TypeError:
        raise TypeError(f"unknown dtype {dtype!r}; use a numpy dtype such as 'float32'") from None


def Variable(
    name: str,
    attr: Optional[dict] = None,
    shape: Optional[tuple] = None,
    lr_mult: Optional[float] = None,
    wd_mult: Optional[float] = None,
    dtype: Any = None,
    init: Any = None,
    stype: Optional[str] = None,
    **kwargs: Any,
) -> Symbol:
    """A graph input (``mx.sym.Variable`` / ``mx.sym.var``)."""
    if not isinstance(name, str):
        raise TypeError(f"Variable name must be a string, got {type(name).__name__}")
    attrs = AttrScope.current().get(attr)
    if shape is not None:
        attrs["__shape__"] = str(tuple(shape) if isinstance(shape, list) else shape)
    if lr_mult is not None:
        attrs["__lr_mult__"] = str(lr_mult)
    if wd_mult is not None:
        attrs["__wd_mult__"] = str(wd_mult)
    if dtype is not None:
        attrs["__dtype__"] = str(DTYPE_FLAGS[_dtype_name(dtype)])
    if init is not None:
        attrs["__init__"] = init if isinstance(init, str) else init.dumps()
    if stype is not None:
        flags = {"default": "0", "row_sparse": "1", "csr": "2"}
        if stype not in flags:
            raise ValueError(f"unknown stype {stype!r}; use 'default', 'row_sparse' or 'csr'")
        attrs["__storage_type__"] = flags[stype]  # MXNet records the default too
    for k, v in kwargs.items():
        if not (k.startswith("__") and k.endswith("__")):
            raise ValueError(
                f"Variable got unexpected keyword {k!r}; extra attributes must be "
                f"__dunder__ names such as __{k}__"
            )
        attrs[k] = str(v)
    return Symbol([(Node(None, name, attrs), 0)])


var = Variable


def Group(symbols: list) -> Symbol:
    """One symbol whose outputs are the outputs of ``symbols`` in order."""
    if not symbols or not all(isinstance(s, Symbol) for s in symbols):
        raise TypeError("Group expects a non-empty list of Symbols")
    return Symbol([e for s in symbols for e in s._outputs])


# Keys an operator call accepts as node attributes rather than operator parameters.
HIDDEN_KEYS = ("ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage")


def _check_not_hidden_suffix(op_name: str, key: str, value: Any) -> None:
    """MXNet refuses ``<input>_lr_mult=...`` on an operator: the variable must carry it."""
    for hidden in HIDDEN_KEYS:
        if key.endswith("_" + hidden):
            inp = key[: -len(hidden) - 1]
            raise MXNetError(
                f"{op_name}: setting variable attributes with {key} is deprecated; "
                f"use w = mx.sym.Variable({inp!r}, {hidden}={value!r}) and "
                f"{op_name}({inp}=w)"
            )


def make_op(
    op_name: str,
    args: list,
    kwargs: dict,
    name: Optional[str] = None,
    attr: Optional[dict] = None,
    hint: Optional[str] = None,
) -> Symbol:
    """Create an operator node; ``args`` are positional input symbols, ``kwargs`` holds both
    named input symbols and attributes."""
    op = get_op(op_name)
    # MXNet's mx.sym functions end with (..., name=None, attr=None, out=None)
    args, kwargs = positional_attrs(
        op, f"{op.name} {name or ''}".rstrip(), args, kwargs, lambda a: isinstance(a, Symbol),
        tail=("name", "attr", "out"),
    )  # fmt: skip
    kwargs = dict(kwargs)
    name = kwargs.pop("name", None) if name is None and "name" not in op.params else name
    attr = kwargs.pop("attr", None) if attr is None and "attr" not in op.params else attr
    if "out" not in op.params and not (callable(op.inputs) or "out" in op.inputs):
        kwargs.pop("out", None)  # MXNet's symbol functions take out= and ignore it
    if name is not None and not isinstance(name, str):
        raise TypeError(f"{op.name}: name must be a string, got {type(name).__name__} {name!r}")
    node_name = NameManager.current().get(name, hint or op_name.lower())
    inputs_by_name: dict[str, Symbol] = {}
    raw: dict[str, str] = AttrScope.current().get(attr)
    static_inputs = op.inputs if isinstance(op.inputs, (list, tuple)) else ()
    for key, value in kwargs.items():
        if isinstance(value, Symbol):
            inputs_by_name[key] = value
        elif value is None and key not in op.params and key not in HIDDEN_KEYS:
            continue  # an input given as None: MXNet drops it (bias=None with no_bias=True)
        elif key in static_inputs or (key == "data" and key not in op.params):
            raise TypeError(
                f"{op.name} {node_name!r}: input {key!r} must be a Symbol (e.g. "
                f"mx.sym.Variable({key!r}) or another layer's output), got "
                f"{type(value).__name__} {value!r}"
            )
        elif key == "dtype" and value is not None:
            raw[key] = _dtype_name(value)
        elif key in HIDDEN_KEYS:  # MXNet stores these as the node's hidden __key__ attribute
            raw[dunder(key)] = attr_str(value)
        else:
            _check_not_hidden_suffix(op.name, key, value)
            raw[key] = attr_str(value)
    positional = []
    for a in args:
        if isinstance(a, (list, tuple)) and op.variadic:
            positional.extend(a)
        else:
            positional.append(a)
    for i, a in enumerate(positional):
        if a is None:  # an input left out by position (MXNet's None)
            continue
        if not isinstance(a, Symbol):
            raise TypeError(
                f"{op.name} {node_name!r}: positional argument {i} must be a Symbol, "
                f"got {type(a).__name__}; pass attributes by keyword"
            )
    if op.variadic:  # as MXNet: the count of inputs given, by position and by name
        raw[op.variadic] = str(len(positional) + len(inputs_by_name))
    parsed = op.parse(raw, node_name)
    slots = op.input_names(parsed) + op.aux_names(parsed)
    unknown = sorted(set(inputs_by_name) - set(slots))
    if op.variadic and unknown:
        raise MXNetError(
            f"{op.name} {node_name!r} has no input named {unknown}; its inputs are "
            f"{slots}: pass them positionally"
        )
    if len(positional) > len(slots):
        raise MXNetError(
            f"{op.name} {node_name!r} takes at most {len(slots)} inputs "
            f"({', '.join(slots)}), got {len(positional)}"
        )

    def new_variable(slot: str) -> Symbol:
        s = Variable(f"{node_name}_{slot}", attr=dict(raw))
        s._outputs[0][0].attrs = dict(raw)
        return s

    given = match_inputs(
        f"{op.name} {node_name!r}", slots, positional, inputs_by_name, new_variable
    )
    entries = []
    for slot, s in zip(slots, given):
        entry = _entry(s, op.name, node_name, slot)
        hook = op.input_attrs.get(slot)
        if hook and entry[0].is_var:  # a Variable's own init= wins, as in MXNet
            for key, value in hook.items():
                entry[0].attrs.setdefault(key, value)
        entries.append(entry)
    node = Node(op, node_name, raw, entries)
    node._parsed = parsed
    return Symbol([(node, i) for i in range(len(op.output_names(parsed)))])


def _entry(s: Any, op_name: str, node: str, slot: str):
    if not isinstance(s, Symbol):
        raise TypeError(
            f"{op_name} {node!r}: input {slot!r} must be a Symbol, got {type(s).__name__}"
        )
    if len(s._outputs) != 1:
        raise MXNetError(
            f"{op_name} {node!r}: input {slot!r} has {len(s._outputs)} outputs; "
            "pick one with sym[i]"
        )
    return s._outputs[0]


def creator(op_name: str, hint: Optional[str] = None):
    """The ``mx.sym.<op_name>`` function."""

    def create(*args: Any, name: Optional[str] = None, attr: Optional[dict] = None, **kwargs: Any):
        return make_op(op_name, list(args), kwargs, name=name, attr=attr, hint=hint)

    return named(
        create, op_name, f"Create a ``{get_op(op_name).name}`` node (MXNet's ``mx.sym.{op_name}``)."
    )


def op_function(name: str):
    """``mx.sym.<name>`` as the package exports it (looked up when called)."""
    return getattr(sys.modules[__package__], name)


def load_json(text: str, source: str = "JSON string") -> Symbol:
    """``mx.sym.load_json``: the Symbol of MXNet symbol JSON (any MXNet version's format).

    Raises:
        TypeError: ``text`` is not a str.
        MXNetFileError: the text is not a valid symbol file (see
            :func:`mxmod.symbol.json_io.heads_from_json`).
        NotImplementedError: the graph uses an operator or feature mxmod does not support.
    """
    return Symbol(json_io.heads_from_json(text, source, Symbol))


def load(fname: str | os.PathLike) -> Symbol:
    """``mx.sym.load``: the Symbol of a ``-symbol.json`` file.

    Raises:
        TypeError: ``fname`` is not a path.
        MXNetFileError: the file is missing, unreadable or not a valid symbol file.
    """
    return Symbol(json_io.heads_from_file(fname, Symbol))


def zeros(shape, dtype="float32", name=None, attr=None, **kwargs) -> Symbol:
    return make_op("_zeros", [], dict(shape=shape, dtype=dtype, **kwargs), name=name, attr=attr)


def ones(shape, dtype="float32", name=None, attr=None, **kwargs) -> Symbol:
    return make_op("_ones", [], dict(shape=shape, dtype=dtype, **kwargs), name=name, attr=attr)


def full(shape, val, dtype="float32", name=None, attr=None, **kwargs) -> Symbol:
    """``mx.sym.full``: a constant array of ``shape`` filled with ``val``."""
    return make_op(
        "_full", [], dict(shape=shape, value=val, dtype=dtype, **kwargs), name=name, attr=attr
    )


def parse_init_attr(text: str) -> Any:
    """Decode a ``__init__`` attribute (``'["zero", {}]'``)."""
    try:
        return json.loads(text)
    except ValueError:
        return text


_ = dunder
