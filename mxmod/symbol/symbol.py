"""``Symbol``: MXNet's symbolic graph handle (a list of output entries)."""

from __future__ import annotations

from typing import Any, Callable, Iterator, Optional

from ..base import MXNetError, NotImplementedForSymbol, named
from . import infer, json_io
from .graph import Node, aux_var_ids, copy_graph, topo_order
from .naming import HIDDEN_KEYS, dunder

#: ``'bind'``/``'simple_bind'``: the functions behind ``Symbol.bind``/``simple_bind``
#: (``mxmod.executor`` sets them at its import; ``import mxmod`` imports it).
EXECUTOR_HOOKS: dict[str, Callable] = {}


def _executor_hook(name: str) -> Callable:
    try:
        return EXECUTOR_HOOKS[name]
    except KeyError:
        raise MXNetError(
            f"Symbol.{name} needs mxmod.executor: import mxmod (or mxmod.executor) first"
        ) from None


class Symbol:
    """A symbolic graph, as ``mx.sym.Symbol``: one or more output entries over a DAG.

    Differences from MXNet: composition (``sym(data=x)``) returns a new symbol instead
    of mutating in place, and there is no C handle.
    """

    __slots__ = ("_outputs", "_compiled", "__weakref__")

    def __init__(self, outputs: list[tuple[Node, int]]):
        self._outputs = list(outputs)
        self._compiled = None  # the executor's jitted functions, made on first bind

    # ------------------------------------------------------------ structure
    def _topo(self) -> list[Node]:
        return topo_order(self._outputs)

    @property
    def name(self) -> Optional[str]:
        """The node's name when every output is one node's (a multi-output operator like
        SliceChannel too), else None (a group), as MXNet."""
        node = self._one_node()
        return None if node is None else node.name

    def _one_node(self):
        """The node all outputs come from, or None (a group of several nodes)."""
        first = self._outputs[0][0] if self._outputs else None
        return first if all(n is first for n, _ in self._outputs) else None

    def list_arguments(self) -> list[str]:
        order = self._topo()
        aux = aux_var_ids(order)
        return [n.name for n in order if n.is_var and id(n) not in aux]

    def list_auxiliary_states(self) -> list[str]:
        order = self._topo()
        aux = aux_var_ids(order)
        return [n.name for n in order if n.is_var and id(n) in aux]

    def list_inputs(self) -> list[str]:
        return [n.name for n in self._topo() if n.is_var]

    def list_outputs(self) -> list[str]:
        out = []
        for node, idx in self._outputs:
            names = node.output_names()
            out.append(names[idx] if idx < len(names) else f"{node.name}_output{idx}")
        return out

    def __len__(self) -> int:
        return len(self._outputs)

    def __iter__(self) -> Iterator["Symbol"]:
        return (Symbol([e]) for e in self._outputs)

    def __getitem__(self, index: Any) -> "Symbol":
        if isinstance(index, str):
            names = self.list_outputs()
            matches = [i for i, n in enumerate(names) if n == index]
            if not matches:
                raise ValueError(f"no output named {index!r}; outputs are {names}")
            if len(matches) > 1:
                raise ValueError(f"there are several outputs named {index!r}")
            index = matches[0]
        if isinstance(index, slice):
            return Symbol(self._outputs[index])
        if not isinstance(index, int):
            raise TypeError(
                f"Symbol index must be an int, a slice or an output name, got {index!r}"
            )
        if not -len(self._outputs) <= index < len(self._outputs):
            raise IndexError(f"output index {index} out of range for {len(self._outputs)} outputs")
        return Symbol([self._outputs[index]])

    def get_internals(self) -> "Symbol":
        entries = []
        for node in self._topo():
            n_vis = 1 if node.is_var else len(node.op.output_names(node.parsed()))
            entries.extend((node, i) for i in range(n_vis))
        return Symbol(entries)

    def get_children(self) -> Optional["Symbol"]:
        nodes = list({id(node): node for node, _ in self._outputs}.values())
        entries = [e for node in nodes for e in node.inputs]
        return Symbol(entries) if entries else None

    # ------------------------------------------------------------ attributes
    def attr(self, key: str) -> Optional[str]:
        node = self._one_node()
        if node is None:
            return None
        return node.attrs.get(dunder(key), node.attrs.get(key))

    def list_attr(self, recursive: bool = False) -> dict:
        if recursive:
            raise NotImplementedError(
                "list_attr(recursive=True) was removed in MXNet; use attr_dict()"
            )
        # MXNet's shallow list: the first output's node, even in a group
        return _with_aliases(self._outputs[0][0].attrs) if self._outputs else {}

    def attr_dict(self) -> dict:
        return {n.name: _with_aliases(n.attrs) for n in self._topo() if n.attrs}

    def _set_attr(self, **kwargs: Any) -> None:
        for key, value in kwargs.items():
            if not isinstance(value, str):
                raise ValueError(f"attribute {key} must be a string, got {value!r}")
            for node, _ in self._outputs:
                node.attrs[dunder(key)] = value
                node._parsed = None

    # ------------------------------------------------------------ composition
    def __call__(self, *args: "Symbol", **kwargs: "Symbol") -> "Symbol":
        """Compose: replace this symbol's variables by other symbols (by position or name).
        ``name=`` renames the first output's node, as MXNet's compose."""
        new_name = kwargs.pop("name", None)
        order = self._topo()
        variables = {n.name: n for n in order if n.is_var}
        arg_names = self.list_arguments()
        replace: dict[int, tuple[Node, int]] = {}
        if args:
            if len(args) > len(arg_names):
                raise MXNetError(
                    f"compose got {len(args)} positional symbols but the symbol "
                    f"has only {len(arg_names)} arguments: {arg_names}"
                )
            for name, s in zip(arg_names, args):
                replace[id(variables[name])] = _single(s, name)
        for name, s in kwargs.items():
            if name not in variables:
                raise MXNetError(
                    f"compose: the symbol has no argument named {name!r}; "
                    f"its inputs are {list(variables)}"
                )
            replace[id(variables[name])] = _single(s, name)
        composed = Symbol(copy_graph(self._outputs, replace, variables=True))
        head = composed._outputs[0][0] if composed._outputs else None
        if new_name and head is not None and not head.is_var:  # op nodes are copies
            head.name = str(new_name)
        return composed

    def __getstate__(self) -> dict:
        return {"handle": self.tojson()}  # as MXNet: a symbol pickles as its JSON

    def __setstate__(self, state: dict) -> None:
        self._outputs = json_io.heads_from_json(state["handle"], make_symbol=Symbol)
        self._compiled = None

    def __copy__(self) -> "Symbol":
        return Symbol(copy_graph(self._outputs, {}, variables=True))

    def __deepcopy__(self, memo) -> "Symbol":
        return self.__copy__()

    def __repr__(self) -> str:
        if self.name is not None:
            return f"<Symbol {self.name}>"
        return f"<Symbol group [{', '.join(node.name for node, _ in self._outputs)}]>"

    # ------------------------------------------------------------ inference, json, bind
    def infer_shape(self, *args, **kwargs):
        return infer.infer_shape(self, args, kwargs, partial=False)

    def infer_shape_partial(self, *args, **kwargs):
        return infer.infer_shape(self, args, kwargs, partial=True)

    def infer_type(self, *args, **kwargs):
        return infer.infer_type(self, args, kwargs)

    def infer_type_partial(self, *args, **kwargs):
        return infer.infer_type(self, args, kwargs, partial=True)

    def tojson(self, remove_amp_cast: bool = True) -> str:
        return json_io.to_json(self, remove_amp_cast)

    def save(self, fname: str, remove_amp_cast: bool = True) -> None:
        json_io.save(self, fname, remove_amp_cast)

    def debug_str(self) -> str:
        """The graph in MXNet's (nnvm's) print format: the outputs, then each node in
        order, an operator with its inputs (``node(index)``; a variable's ``version=0``)
        and its attributes sorted by key."""
        lines = ["Symbol Outputs:"]
        lines += [f"\toutput[{k}]={n.name}({i})" for k, (n, i) in enumerate(self._outputs)]
        for n in self._topo():
            if n.is_var:
                lines.append(f"Variable:{n.name}")
                continue
            lines += ["-" * 20, f"Op:{n.op.name}, Name={n.name}", "Inputs:"]
            for k, (c, i) in enumerate(n.inputs):
                lines.append(f"\targ[{k}]={c.name}({i})" + (" version=0" if c.is_var else ""))
            if n.attrs:
                lines.append("Attrs:")
                lines += [f"\t{key}={n.attrs[key]}" for key in sorted(n.attrs)]
        return "\n".join(lines) + "\n"

    def simple_bind(self, ctx, *args, **kwargs):
        """An Executor with every array allocated from the input shapes given as keywords
        (MXNet's ``Symbol.simple_bind``; see :func:`mxmod.executor.simple_bind`)."""
        return _executor_hook("simple_bind")(self, ctx, *args, **kwargs)

    def bind(self, ctx, args, *more, **kwargs):
        """An Executor over the given argument (and aux, gradient) arrays (MXNet's
        ``Symbol.bind``; see :func:`mxmod.executor.bind`)."""
        return _executor_hook("bind")(self, ctx, args, *more, **kwargs)

    # ------------------------------------------------------------ operator sugar
    # ``+ - * / % ** < <= > >= == != abs -`` make operator nodes (mxmod.symbol.arith).
    __hash__ = object.__hash__


# As MXNet: truth values, in-place arithmetic and the NDArray data methods raise
# NotImplementedForSymbol (``%=``/``**=`` fall back to ``%``/``**`` there too). MXNet's data
# methods take no arguments; these accept any, so ``sym.as_in_context(ctx)`` names the
# real problem. In-place operators report their operand (and MXNet's extra ``1`` for +=).
_IN_PLACE = {"__iadd__": ("+=", (1,)), "__isub__": ("-=", ()), "__imul__": ("*=", ()),
             "__idiv__": ("/=", ()), "__itruediv__": ("/=", ())}  # fmt: skip
_NDARRAY_METHODS = ("wait_to_read", "asnumpy", "asscalar", "copy", "as_in_context", "detach",
                    "backward")  # fmt: skip


def _ndarray_only(name: str, alias: Optional[str], operand: bool, extra: tuple = ()):
    def method(self, *args, **_kwargs):
        raise NotImplementedForSymbol(method, alias, *((*args[:1], *extra) if operand else ()))

    return named(method, name)


Symbol.__bool__ = _ndarray_only("__bool__", "bool", False)
for _name, (_alias, _extra) in _IN_PLACE.items():
    setattr(Symbol, _name, _ndarray_only(_name, _alias, True, _extra))
for _name in _NDARRAY_METHODS:
    setattr(Symbol, _name, _ndarray_only(_name, None, False))


def _with_aliases(attrs: dict) -> dict:
    out = dict(attrs)
    for key in HIDDEN_KEYS:
        if f"__{key}__" in attrs:
            out[key] = attrs[f"__{key}__"]
    return out


def _single(s: Any, what: str) -> tuple[Node, int]:
    if not isinstance(s, Symbol):
        raise TypeError(f"input {what!r} must be a Symbol, got {type(s).__name__}")
    if len(s._outputs) != 1:
        raise MXNetError(
            f"input {what!r} must have a single output, got {len(s._outputs)} "
            f"({s.list_outputs()}); pick one with sym[i]"
        )
    return s._outputs[0]
