"""``mx.sym.contrib.foreach`` and ``cond``, built as MXNet 1.9.1 builds them, so the graph,
its names and its JSON are MXNet's.

``foreach``: a loop over axis 0 of its data as one ``_foreach`` node holding the loop body's
graph (run as a ``lax.scan``: ``ops/foreach.py``). ``body(data_slices, states) ->
(outputs, new_states)`` runs once on placeholder variables (``<name>-<output index>`` of
each data and state symbol) inside ``AttrScope(__subgraph_name__=foreach<k>)``; outputs
that are not the body's own nodes pass through ``identity``. Outer values the body reads
become the node's extra inputs, read in the body through fresh variables named after the
outputs they stand for.

``cond(pred, then_func, else_func)``: one ``_cond`` node holding three graphs (``pred``,
``then_func()``, ``else_func()``, each made in its own scope ``cond_pred<k>``...) over the
union of their outer inputs, matched by name as MXNet matches them (``ops/cond.py``).
"""

from __future__ import annotations

import collections
import copy
import threading
from typing import Any

from .creation import Variable, creator
from .graph import Node, topo_order
from .naming import AttrScope
from .symbol import Symbol

_COUNTS: collections.Counter = collections.Counter()
_LOCK = threading.Lock()
_SCOPE_KEY = "__subgraph_name__"


def _flatten(args: Any, what: str) -> tuple[list, Any]:
    if isinstance(args, Symbol):
        n = len(args.list_outputs())
        return [args], n if n > 1 else 0
    if not isinstance(args, (list, tuple)):
        raise TypeError(f"{what} must be a Symbol or a nested list of Symbols, got {args!r}")
    flat, fmt = [], []
    for item in args:
        items, item_fmt = _flatten(item, what)
        flat.extend(items)
        fmt.append(item_fmt)
    return flat, fmt


def _regroup(args: list, fmt: Any) -> tuple[Any, list]:
    if isinstance(fmt, int):
        return (args[0], args[1:]) if fmt == 0 else (args[:fmt], args[fmt:])
    out = []
    for item in fmt:
        res, args = _regroup(args, item)
        out.append(res)
    return out, args


def _subgraph_name(name: str) -> str:
    """``foreach0``, ``foreach1``...; inside another loop body ``<outer>$foreach0``."""
    outer = AttrScope.current().get(None).get(_SCOPE_KEY, "")
    if outer:
        name = f"{outer}${name}"
    with _LOCK:
        _COUNTS[name] += 1
        return f"{name}{_COUNTS[name] - 1}"


def _placeholder_name(sym: Symbol) -> str:
    node, index = sym._outputs[0]
    return f"{node.name}-{index}"


def _inner(node: Node, name: str) -> bool:
    return node.attrs.get(_SCOPE_KEY) == name


def _own_outputs(symbols: list, name: str, repeats_from: int | None = None) -> Symbol:
    """The group of ``symbols``, each passing through ``identity`` unless it is a node of
    subgraph ``name`` and not an input of the group (nor, from index ``repeats_from`` on,
    the name of an earlier output): MXNet's rule for a subgraph's outputs."""
    inputs = set(Symbol([e for s in symbols for e in s._outputs]).list_inputs())
    earlier = {s.name for s in symbols[:repeats_from]} if repeats_from is not None else set()
    heads = []
    for i, s in enumerate(symbols):
        own = s.name not in inputs and _inner(s._outputs[0][0], name)
        if repeats_from is not None and i >= repeats_from and s.name in earlier:
            own = False
        heads.append(s if own else creator("identity")(s))
    return Symbol([e for s in heads for e in s._outputs])


def _cut(body: Symbol, name: str) -> tuple[Symbol, dict]:
    """A copy of the body whose inputs from outside it (variables too: those made outside
    the body) are read through new attribute-less variables named after the output they
    stand for; returns it and ``{variable name: outer entry}``."""
    copies: dict[int, Node] = {}
    cut: dict[tuple, Node] = {}
    outer: dict[str, tuple] = {}
    for node in topo_order(body._outputs):
        if node.is_var or not _inner(node, name):
            continue
        ins = []
        for child, k in node.inputs:
            if id(child) in copies:
                ins.append((copies[id(child)], k))
            elif _inner(child, name):
                ins.append((child, k))
            else:
                key = (id(child), k)
                if key not in cut:
                    var_name = child.output_names()[k]
                    cut[key] = Node(None, var_name)
                    outer[var_name] = (child, k)
                ins.append((cut[key], 0))
        new = Node(node.op, node.name, node.attrs, ins)
        new.subgraphs = node.subgraphs
        new.versions = node.versions
        copies[id(node)] = new
    heads = [(copies.get(id(n), n), k) for n, k in body._outputs]
    return Symbol(heads), outer


def foreach(body, data, init_states, name: str = "foreach"):
    """Run ``body(data_slice, states) -> (outputs, new_states)`` over axis 0 of ``data``:
    returns the outputs stacked along axis 0 and the final states, each in the nesting
    ``body`` gave them."""
    flat_data, data_fmt = _flatten(data, "foreach data")
    flat_states, state_fmt = _flatten(init_states, "foreach init_states")
    name = _subgraph_name(name)
    with AttrScope(**{_SCOPE_KEY: name}):
        slices = [Variable(_placeholder_name(s)) for s in flat_data]
        states = [Variable(_placeholder_name(s)) for s in flat_states]
        sym_out, sym_states = body(
            _regroup(slices, data_fmt)[0], _regroup(states, copy.deepcopy(state_fmt))[0]
        )
        sym_out, out_fmt = _flatten(sym_out, "the loop body's outputs")
        sym_states, new_fmt = _flatten(sym_states, "the loop body's states")
        if new_fmt != state_fmt:
            raise ValueError(
                f"foreach: the loop body returned states nested as {new_fmt}, its "
                f"init_states are nested as {state_fmt}"
            )
        graph = _own_outputs(sym_out + sym_states, name, repeats_from=len(sym_out))
    graph, outer = _cut(graph, name)
    names = graph.list_inputs()
    data_names = [_placeholder_name(s) for s in flat_data]
    state_names = [_placeholder_name(s) for s in flat_states]
    for what, wanted in (("data", data_names), ("states", state_names)):
        unused = [n for n in wanted if n not in names]
        if unused:
            raise ValueError(f"foreach: the loop body does not use its {what} {unused}")
    ordered = list(flat_data) + list(flat_states)
    remain_locs = []
    variables = {n.name: n for n in topo_order(graph._outputs) if n.is_var}
    for i, in_name in enumerate(names):
        if in_name in outer:
            ordered.append(Symbol([outer[in_name]]))
        elif in_name in data_names or in_name in state_names:
            continue
        else:
            ordered.append(Symbol([(variables[in_name], 0)]))
        remain_locs.append(i)
    n_out = len(sym_out)
    node_sym = creator("_foreach")(
        *ordered,
        num_args=len(ordered) + 1,
        num_outputs=n_out + len(sym_states),
        num_out_data=n_out,
        in_state_locs=[names.index(n) for n in state_names],
        in_data_locs=[names.index(n) for n in data_names],
        remain_locs=remain_locs,
    )
    node = node_sym._outputs[0][0]
    node.subgraphs, node._parsed = [graph], None
    outs = [node_sym[i] for i in range(n_out)]
    finals = [node_sym[n_out + i] for i in range(len(sym_states))]
    return _regroup(outs, out_fmt)[0], _regroup(finals, state_fmt)[0]


def _branch(func, name: str) -> tuple[Symbol, int, Any, str]:
    """A graph of ``func()``'s outputs made in its own subgraph scope (outputs that are not
    its own nodes pass through ``identity``), their count and nesting."""
    name = _subgraph_name(name)
    with AttrScope(**{_SCOPE_KEY: name}):
        outputs, fmt = _flatten(func(), "cond outputs")
        graph = _own_outputs(outputs, name)
    return graph, len(outputs), fmt, name


def _union_inputs(scoped_graphs, known) -> tuple[list, list]:
    """The node inputs of several subgraphs and ``[(cut graph, locs)]``: each graph is cut
    (``_cut``), and each of its inputs is ``known(name, inputs so far)`` when that gives a
    Symbol, else the outer entry it was cut from, else its own variable; an input already
    taken (the same Symbol) is shared. ``locs``: the node input of each graph input."""
    inputs: list[Symbol] = []
    where: dict[int, int] = {}
    out = []
    for graph, scope in scoped_graphs:
        graph, outer = _cut(graph, scope)
        own = {n.name: n for n in topo_order(graph._outputs) if n.is_var}
        locs = []
        for in_name in graph.list_inputs():
            sym = known(in_name, inputs)
            if sym is None:
                sym = Symbol([outer[in_name] if in_name in outer else (own[in_name], 0)])
            if id(sym) not in where:
                where[id(sym)] = len(inputs)
                inputs.append(sym)
            locs.append(where[id(sym)])
        out.append((graph, locs))
    return inputs, out


def cond(pred, then_func, else_func, name: str = "cond"):
    """``then_func()`` if the scalar ``pred`` is non-zero, else ``else_func()`` (both give
    outputs of the same shapes), as one ``_cond`` node: only the chosen branch runs."""
    if not isinstance(pred, Symbol) or len(pred.list_outputs()) != 1:
        raise ValueError(f"cond: pred must be a Symbol with a single output, got {pred!r}")
    pred_g, _, _, pred_name = _branch(lambda: pred, name + "_pred")
    then_g, n_then, then_fmt, then_name = _branch(then_func, name + "_then")
    else_g, n_else, _, else_name = _branch(else_func, name + "_else")
    if n_then != n_else:
        raise ValueError(f"cond: the then branch gives {n_then} outputs, the else branch {n_else}")
    inputs, cut = _union_inputs(
        ((pred_g, pred_name), (then_g, then_name), (else_g, else_name)),
        lambda in_name, so_far: next((s for s in reversed(so_far) if s.name == in_name), None),
    )
    graphs, all_locs = [g for g, _ in cut], [locs for _, locs in cut]
    node_sym = creator("_cond")(
        *inputs,
        num_args=len(inputs) + 3,
        num_outputs=n_then,
        cond_input_locs=all_locs[0],
        then_input_locs=all_locs[1],
        else_input_locs=all_locs[2],
    )
    node = node_sym._outputs[0][0]
    node.subgraphs, node._parsed = graphs, None
    return _regroup([node_sym[i] for i in range(n_then)], then_fmt)[0]


def while_loop(cond, func, loop_vars, max_iterations=None, name: str = "while_loop"):
    """Run ``func(*loop_vars) -> (step_outputs, new_loop_vars)`` while
    ``cond(*loop_vars)`` is non-zero, at most ``max_iterations`` times: returns the step
    outputs stacked along axis 0 (``max_iterations`` rows; rows of steps not run are 0)
    and the final loop variables."""
    if max_iterations is None:
        raise ValueError("while_loop: max_iterations is required (the outputs' first axis)")
    if hasattr(max_iterations, "asscalar"):
        max_iterations = max_iterations.asscalar()
    try:
        max_iterations = int(max_iterations)
    except (TypeError, ValueError):
        raise ValueError(f"while_loop: max_iterations {max_iterations!r} is not an int") from None
    flat_vars, var_fmt = _flatten(loop_vars, "while_loop loop_vars")
    if not flat_vars:
        raise ValueError("while_loop: loop_vars needs at least one Symbol")

    def graph_of(body, scope: str):
        scope = _subgraph_name(scope)
        with AttrScope(**{_SCOPE_KEY: scope}):
            placeholders = [Variable(_placeholder_name(s)) for s in flat_vars]
            outputs, new_vars = body(_regroup(placeholders, var_fmt)[0])
            graph = _own_outputs(outputs + new_vars, scope)
        return graph, len(outputs), scope

    def cond_body(vars_):
        result = cond(*vars_) if isinstance(vars_, list) else cond(vars_)
        if not isinstance(result, Symbol):
            raise ValueError(f"while_loop: cond must return a Symbol, got {result!r}")
        return [], [result]

    fmts: dict = {}

    def func_body(vars_):
        res = func(*vars_) if isinstance(vars_, list) else func(vars_)
        step_out, new_vars = res
        # each may be one Symbol, a (nested) list or None, as MXNet's _to_symbol_tuple
        step_out, fmts["out"] = _flatten([] if step_out is None else step_out, "while_loop outputs")
        new_vars, _ = _flatten([] if new_vars is None else new_vars, "while_loop loop_vars")
        if len(new_vars) != len(flat_vars):
            raise ValueError(
                f"while_loop: func returned {len(new_vars)} loop variables, "
                f"loop_vars has {len(flat_vars)}"
            )
        return step_out, new_vars

    cond_g, _, cond_scope = graph_of(cond_body, name + "_cond")
    func_g, n_out, func_scope = graph_of(func_body, name + "_func")
    var_names = [_placeholder_name(s) for s in flat_vars]
    inputs, locs_of = _union_inputs(
        ((cond_g, cond_scope), (func_g, func_scope)),
        lambda in_name, _: flat_vars[var_names.index(in_name)] if in_name in var_names else None,
    )
    func_inputs = locs_of[1][0].list_inputs()
    var_locs = [func_inputs.index(v) if v in func_inputs else -1 for v in var_names]
    missing = [i + 1 for i, loc in enumerate(var_locs) if loc == -1]
    if missing:
        raise ValueError(f"while_loop: func does not use loop variable(s) {missing}")
    (cond_g, cond_locs), (func_g, func_locs) = locs_of
    node_sym = creator("_while_loop")(
        *inputs,
        num_args=len(inputs) + 2,
        max_iterations=max_iterations,
        cond_input_locs=cond_locs,
        func_input_locs=func_locs,
        func_var_locs=var_locs,
        num_out_data=n_out,
        num_outputs=n_out + len(flat_vars),
    )
    node = node_sym._outputs[0][0]
    node.subgraphs, node._parsed = [cond_g, func_g], None
    outs = _regroup([node_sym[i] for i in range(n_out)], fmts.get("out", []))[0]
    finals = _regroup([node_sym[n_out + i] for i in range(len(flat_vars))], var_fmt)[0]
    return outs, finals
