"""``convert_symbol`` / ``convert_model``: MXNet 1.9.1's AMP graph pass, re-implemented.

The pass walks the graph in MXNet's node order and gives every operator node a class from
``lists`` (low precision, float32, conditional float32, widest type, or "follow its
input"), inserting ``amp_cast``/``amp_multicast`` nodes named as MXNet names them
(``<node>[_<output>]_amp_cast_<dtype>``, ``<node>[_<output>]_amp_multicast``). Casts of one
graph entry to one dtype are made once and shared by every consumer. The rules below were
read off real MXNet 1.9.1 conversions (``tests/fixtures/amp/``):

* low-precision op: inputs already available in low precision are used as they are,
  the others get a cast; its outputs are low precision;
* float32 op (or a name in ``excluded_sym_names``): variables are used as they are, other
  entries get a float32 cast (one existing float32 cast is reused); outputs are float32;
* conditional float32 op whose attribute matches: every input gets a float32 cast;
* widest-type op: all inputs available in low precision and none in float32 -> runs in
  low precision; all available in low precision or float32 -> float32 (casts where
  needed); otherwise one ``amp_multicast`` over the inputs as they are;
* any other op follows the type of its first input;
* graph outputs that are not float32 ops are cast back to float32.
"""

from __future__ import annotations

from ...base import DTYPE_FLAGS, FLAG_DTYPES, MXNetError
from ...ops import get_op
from ...ops._def import np_dtype
from ...symbol.graph import Node, topo_order
from ...symbol.symbol import Symbol
from . import lists

_TYPE_FLAG = {"float16": "2", "bfloat16": "12"}


class _Pass:
    """State of one conversion (see the module docstring for the rules)."""

    def __init__(self, target, classes, conditional, excluded):
        self.lp = target
        self.cls = classes
        self.conditional = {}
        for op, attr, values in conditional:
            self.conditional.setdefault(op, []).append((attr, [str(v) for v in values]))
        self.excluded = set(excluded)
        self.mirror: dict[int, Node] = {}
        self.native_lp: set = set()  # entries whose converted output is low precision
        self.lp_cast: dict = {}  # entry -> (cast node, 0) to low precision
        self.f32: dict = {}  # entry -> a float32 entry (cast or float32 output)
        self.casts: set = set()  # ids of the cast nodes made

    # ------------------------------------------------------------ entries
    def new_entry(self, e):
        return (self.mirror[id(e[0])], e[1])

    def suffix(self, e) -> str:
        node, idx = e
        if node.is_var:
            return ""
        if node.op.name in lists.NAMED_OUTPUTS:
            names = node.op.output_names(node.parsed())
            return "_" + (names[idx] if idx < len(names) else str(idx))
        return f"_{idx}"

    def cast(self, e, dtype, cache):
        if e in cache:
            return cache[e]
        node = Node(
            get_op("amp_cast"),
            f"{e[0].name}{self.suffix(e)}_amp_cast_{dtype}",
            {"dtype": dtype},
            [self.new_entry(e)],
        )
        self.casts.add(id(node))
        cache[e] = (node, 0)
        return cache[e]

    def lp_avail(self, e) -> bool:
        return e in self.native_lp or e in self.lp_cast

    def lp_entry(self, e):
        return self.new_entry(e) if e in self.native_lp else self.lp_cast[e]

    # ------------------------------------------------------------ classes
    def kind(self, node) -> str:
        if node.name in self.excluded or node.op.name in self.cls["fp32"]:
            return "fp32"
        for attr, values in self.conditional.get(node.op.name, ()):
            if str(node.attrs.get(attr)) in values:
                return "cond"
        if node.op.name in self.cls["lp"]:
            return "lp"
        if node.op.name in self.cls["widest"]:
            return "widest"
        return "follow"

    def visit(self, old: Node) -> None:
        new = Node(old.op, old.name, old.attrs, [])
        new._parsed = old._parsed
        new.subgraphs = old.subgraphs  # a loop body keeps its own (unconverted) types
        self.mirror[id(old)] = new
        if old.is_var:
            return
        kind = self.kind(old)
        outs = [(old, i) for i in range(old.num_outputs())]
        if kind in ("fp32", "cond"):
            for e in old.inputs:
                if e in self.f32:
                    new.inputs.append(self.f32[e])
                elif kind == "fp32" and e[0].is_var:
                    new.inputs.append(self.new_entry(e))
                else:
                    new.inputs.append(self.cast(e, "float32", self.f32))
            self.f32.update({e: (new, e[1]) for e in outs})
        elif kind == "lp":
            for e in old.inputs:
                new.inputs.append(
                    self.lp_entry(e) if self.lp_avail(e) else self.cast(e, self.lp, self.lp_cast)
                )
            self.native_lp.update(outs)
        elif kind == "widest":
            self.widest(old, new, outs)
        else:
            new.inputs = [self.new_entry(e) for e in old.inputs]
            if old.inputs and old.inputs[0] in self.native_lp and self.keeps_lp(old):
                self.native_lp.update(outs)

    def keeps_lp(self, old) -> bool:
        """Whether a follow-op with a low-precision first input gives low-precision outputs."""
        try:
            n_in = len(old.inputs)
            _, out = old.op.run_infer_type(old.parsed(), [np_dtype(self.lp)] + [None] * (n_in - 1))
        except Exception:  # noqa: BLE001 - a rule that cannot decide: assume it follows
            return True
        return not out or out[0] is None or np_dtype(out[0]) == np_dtype(self.lp)

    def widest(self, old, new, outs) -> None:
        ins = old.inputs
        if all(self.lp_avail(e) for e in ins) and not any(e in self.f32 for e in ins):
            new.inputs = [self.lp_entry(e) for e in ins]
            self.native_lp.update(outs)
        elif all(self.lp_avail(e) or e in self.f32 for e in ins):
            new.inputs = [
                self.f32[e] if e in self.f32 else self.cast(e, "float32", self.f32) for e in ins
            ]
            self.f32.update({e: (new, e[1]) for e in outs})
        else:
            first = ins[0]
            mc = Node(
                get_op("amp_multicast"),
                f"{first[0].name}{self.suffix(first)}_amp_multicast",
                {"num_outputs": str(len(ins))},
                [self.new_entry(e) for e in ins],
            )
            self.casts.add(id(mc))
            new.inputs = [(mc, i) for i in range(len(ins))]

    def head(self, e):
        node = e[0]
        if node.is_var or self.kind(node) in ("fp32", "cond"):
            return self.new_entry(e)
        return self.f32[e] if e in self.f32 else self.cast(e, "float32", self.f32)

    def cast_params_offline(self, heads, param_names) -> None:
        """``cast_optional_params``: a parameter whose every consumer reads its low-precision
        cast is stored in low precision instead (``__dtype__`` on the variable)."""
        order = topo_order(heads)
        users: dict[int, list] = {}
        for node in order:
            if id(node) in self.casts:
                continue
            for k, (child, _) in enumerate(node.inputs):
                users.setdefault(id(child), []).append((node, k))
        for old_e, (cast_node, _) in list(self.lp_cast.items()):
            var = old_e[0]
            if not var.is_var or var.name not in param_names:
                continue
            new_var = self.mirror[id(var)]
            direct = [u for u in users.get(id(new_var), [])]
            via = users.get(id(cast_node), [])
            if direct or not via:
                continue
            for node, k in via:
                node.inputs[k] = (new_var, 0)
            new_var.attrs = {**new_var.attrs, "__dtype__": _TYPE_FLAG[self.lp]}


def _check_list(name, value):
    if value is not None and not isinstance(value, list):
        raise TypeError(f"{name} must be a list, got {type(value).__name__}")


def convert_symbol(
    sym,
    target_dtype="float16",
    target_dtype_ops=None,
    fp32_ops=None,
    conditional_fp32_ops=None,
    excluded_sym_names=None,
    data_names=None,
    cast_optional_params=False,
):
    """A copy of ``sym`` with AMP casts inserted, as MXNet's ``amp.convert_symbol``.

    Args:
      sym: the float32 network.
      target_dtype: 'float16' or 'bfloat16'.
      target_dtype_ops, fp32_ops, conditional_fp32_ops: replace MXNet's default lists
        (``list_lp16_ops``, ``list_fp32_ops``, ``list_conditional_fp32_ops``).
      excluded_sym_names: node names kept in float32.
      data_names: the inputs that are data, not parameters (default: inputs without a
        ``__dtype__`` attribute); only ``cast_optional_params`` reads it.
      cast_optional_params: store parameters that are only read in low precision in low
        precision (their variables get ``__dtype__``) instead of casting them in the graph.

    Returns:
      The converted Symbol; ``tojson(remove_amp_cast=False)`` shows the casts.
    """
    if not isinstance(sym, Symbol):
        raise TypeError(
            f"convert_symbol needs a Symbol as its first argument, got {type(sym).__name__}"
        )
    if target_dtype not in ("float16", "bfloat16"):
        raise ValueError(
            f"convert_symbol: target_dtype must be 'float16' or 'bfloat16', got {target_dtype!r}"
        )
    for name, value in (
        ("target_dtype_ops", target_dtype_ops),
        ("fp32_ops", fp32_ops),
        ("conditional_fp32_ops", conditional_fp32_ops),
        ("excluded_sym_names", excluded_sym_names),
        ("data_names", data_names),
    ):
        _check_list(name, value)
    base = lists.table(target_dtype)
    lp = set(target_dtype_ops) if target_dtype_ops is not None else set(base["lp"])
    f32 = set(fp32_ops) if fp32_ops is not None else set(base["fp32"])
    cond = (
        list(conditional_fp32_ops) if conditional_fp32_ops is not None else list(lists.CONDITIONAL)
    )
    for c in cond:
        if not (
            isinstance(c, tuple)
            and len(c) == 3
            and isinstance(c[0], str)
            and isinstance(c[1], str)
            and isinstance(c[2], list)
        ):
            raise TypeError(
                f"conditional_fp32_ops entries must be (op name, attribute name, "
                f"[values]) tuples, got {c!r}"
            )
    cond_names = {c[0] for c in cond}
    for a, b, what in (
        (lp, f32, "target_dtype_ops and fp32_ops"),
        (lp, cond_names, "target_dtype_ops and conditional_fp32_ops"),
        (cond_names, f32, "fp32_ops and conditional_fp32_ops"),
    ):
        if a & b:
            raise ValueError(
                f"convert_symbol: operators {sorted(a & b)} are in both {what}; "
                "an operator can be in one list only"
            )
    known = (
        base["lp"]
        | base["fp32"]
        | base["follow"]
        | base["widest"]
        | {c[0] for c in lists.CONDITIONAL}
    )
    unknown = (lp | f32 | cond_names) - known
    if unknown:
        raise ValueError(
            f"convert_symbol: operators {sorted(unknown)} are in none of AMP's "
            "lists; choose from list_lp16_ops, list_fp32_ops, "
            "list_lp16_fp32_ops and list_conditional_fp32_ops"
        )
    classes = {"lp": lp, "fp32": f32, "widest": base["widest"] - lp - f32 - cond_names}
    p = _Pass(target_dtype, classes, cond, excluded_sym_names or [])
    for node in topo_order(sym._outputs):
        if node.op is not None and node.op.name in ("amp_cast", "amp_multicast"):
            raise MXNetError(
                f"convert_symbol: the graph already holds AMP casts ({node.name!r}); "
                "convert the original float32 symbol"
            )
        p.visit(node)
    heads = [p.head(e) for e in sym._outputs]
    attrs = sym.attr_dict()
    inputs = sym.list_inputs()
    if data_names is None:
        data_names = [n for n in inputs if "__dtype__" not in attrs.get(n, {})]
    model_params = set(inputs) - set(data_names)
    if cast_optional_params:
        p.cast_params_offline(heads, model_params)
    out = Symbol(heads)
    _record_input_dtypes(out, data_names, model_params)
    return out


def _record_input_dtypes(out: Symbol, data_names, model_params: set) -> None:
    """``__dtype__`` on the converted graph's inputs, as MXNet's pass leaves it: every model
    parameter (the inputs not in ``data_names``) gets the dtype the converted graph gives it
    (float32 where none is inferred); without parameters, only inputs that had ``__dtype__``
    are updated. Data inputs are float32 (the model is a float32 one)."""
    arg_types, _, aux_types = out.infer_type_partial(**{n: "float32" for n in data_names})
    names = out.list_arguments() + out.list_auxiliary_states()
    types = dict(zip(names, arg_types + aux_types))
    for node in topo_order(out._outputs):
        if not node.is_var:
            continue
        chosen = node.name in model_params if model_params else "__dtype__" in node.attrs
        if chosen:
            dtype = np_dtype(types.get(node.name) or "float32")
            flag = DTYPE_FLAGS["bfloat16" if dtype.name == "bfloat16" else dtype.name]
            node.attrs = {**node.attrs, "__dtype__": str(flag)}


def convert_model(
    sym,
    arg_params,
    aux_params,
    target_dtype="float16",
    target_dtype_ops=None,
    fp32_ops=None,
    conditional_fp32_ops=None,
    excluded_sym_names=None,
    cast_optional_params=False,
):
    """Convert a float32 model (symbol and parameters), as MXNet's ``amp.convert_model``.

    The symbol goes through ``convert_symbol`` (data names: the inputs that are not in
    ``arg_params``/``aux_params``); parameters whose variable the conversion marked with
    ``__dtype__`` (``cast_optional_params=True``) are returned in that dtype.

    Returns:
      ``(symbol, arg_params, aux_params)``; the dicts given are updated in place, as MXNet's.
    """
    if excluded_sym_names is not None and not isinstance(excluded_sym_names, list):
        raise ValueError(
            "excluded_sym_names must be a list of strings representing the names "
            f"of the symbols that should not be casted, got "
            f"{type(excluded_sym_names).__name__}"
        )
    if not isinstance(sym, Symbol):
        raise TypeError(
            f"convert_model needs a Symbol as its first argument, got {type(sym).__name__}"
        )
    for name, value in (("arg_params", arg_params), ("aux_params", aux_params)):
        if not isinstance(value, dict):
            raise TypeError(
                f"convert_model: {name} must be a dict of name to NDArray, got "
                f"{type(value).__name__}"
            )
    params = set(arg_params) | set(aux_params)
    data_names = [n for n in sym.list_inputs() if n not in params]
    out = convert_symbol(
        sym,
        target_dtype,
        target_dtype_ops,
        fp32_ops,
        conditional_fp32_ops,
        excluded_sym_names,
        data_names,
        cast_optional_params,
    )
    attrs = out.attr_dict()
    for table, names in (
        (arg_params, out.list_arguments()),
        (aux_params, out.list_auxiliary_states()),
    ):
        for name in names:
            flag = attrs.get(name, {}).get("__dtype__", "-1")
            if flag != "-1" and name in table:
                table[name] = _cast_param(table[name], FLAG_DTYPES[int(flag)])
    return out, arg_params, aux_params


def _cast_param(value, dtype: str):
    """A parameter in the dtype its variable declares, as MXNet's ``convert_model``: to
    bfloat16 only from float32 (float16 too off the CPU), other arrays are left alone."""
    if dtype != "bfloat16":
        return value.astype(dtype)
    sources = ("float32", "bfloat16") + (() if value.context.device_type == "cpu" else ("float16",))
    return value.astype(dtype) if np_dtype(value.dtype).name in sources else value
