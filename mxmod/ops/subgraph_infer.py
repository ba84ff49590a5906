"""Shape and type inference through the graphs a control-flow node holds (``_cond``,
``_while_loop``): each graph is inferred from the node inputs that feed it, and what it
infers of an input (a weight's shape) is given back to the node."""

from __future__ import annotations


def infer_through(graphs_and_locs, values: list, method: str) -> tuple[list, list]:
    """``(node inputs, [outputs of each graph])`` after ``graph.<method>``
    (``infer_shape_partial``/``infer_type_partial``) of every ``(graph, locs)``, ``locs[i]``
    being the node input that feeds the graph's ``i``-th input (``list_inputs()`` order)."""
    ins = list(values)
    outs = []
    for graph, locs in graphs_and_locs:
        names = graph.list_inputs()
        known = {n: ins[loc] for n, loc in zip(names, locs) if ins[loc] is not None}
        args, got, _ = getattr(graph, method)(**known)
        for name, value in zip(graph.list_arguments(), args):
            loc = locs[names.index(name)]
            if ins[loc] is None and value is not None:
                ins[loc] = tuple(value) if isinstance(value, (list, tuple)) else value
        outs.append(list(got))
    return ins, outs


def merge(first: list, second: list) -> list:
    """Per output, the first known of two branches' inferred values."""
    return [a if a is not None else b for a, b in zip(first, second)]
