"""Row_sparse gradients without a dense gradient buffer.

An argument whose gradient MXNet stores row_sparse (``symbol/stype.py``: the weight of
``Embedding(sparse_grad=True)``/``contrib.SparseEmbedding``, ``W`` in ``dot(csr, W)``, a
row_sparse ``_square_sum`` input) is differentiated through the rows the batch reads: the
indices feeding its readers (embedding indices, the csr's columns) give ``rows``
(``parts.unique_rows``), the program reads ``RowParts(rows, W[rows])`` in its place
(``ops/sparse.py`` looks rows up in it) and the gradient is a ``RowParts`` of those rows.

That needs every consumer of the weight to be a row reader, possibly through row-wise
operators (``_square_sum(axis=1)``, zero-keeping unary ops) whose own consumers are row
readers, and the index inputs not to depend on the weight. Otherwise (``row_plan`` returns
None) the gradient is computed dense and held as a ``RowParts`` of every row: MXNet's
values, without the saving.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..ndarray.sparse.parts import CsrParts, RowParts, unique_rows
from ..ops.sparse import ZERO_KEEPING
from ..symbol.stype import infer_stypes, variable_stypes
from .step import dense_grads  # noqa: F401  (re-exported for programs.py)

_READERS = ("Embedding", "_contrib_SparseEmbedding")


def _row_wise(node) -> bool:
    if node.op.name in ZERO_KEEPING:
        return True
    if node.op.name != "_square_sum":
        return False
    a = node.parsed()
    return tuple(a.axis or ()) in ((1,), (-1,)) and not a.exclude


def _ancestors(node) -> set:
    seen, stack = set(), [node]
    while stack:
        n = stack.pop()
        if id(n) not in seen:
            seen.add(id(n))
            stack.extend(c for c, _ in n.inputs)
    return seen


def row_plan(graph, name: str):
    """The row readers of argument ``name``: ``[(kind, entry)]`` with kind ``'index'``
    (an embedding's indices) or ``'csr'`` (a ``dot`` lhs whose columns pick rows); None
    when some consumer reads the weight otherwise."""
    var = next(n for n in graph._order if n.is_var and n.name == name)
    front = {(id(var), 0)}
    readers = []
    for node in graph._order:
        if node.is_var:
            continue
        n_data = node.n_data_inputs()
        for j, (c, k) in enumerate(node.inputs):
            if (id(c), k) not in front:
                continue
            op, a = node.op.name, node.parsed()
            if j >= n_data:
                return None
            if op in _READERS and j == 1:
                readers.append(("index", node.inputs[0]))
            elif op == "dot" and j == 1 and not a.transpose_a and not a.transpose_b:
                readers.append(("csr", node.inputs[0]))
            elif j == 0 and n_data == 1 and _row_wise(node):
                front.add((id(node), 0))
            else:
                return None
    if any((id(n), k) in front for n, k in graph.symbol._outputs):
        return None
    if any(id(var) in _ancestors(entry[0]) for _, entry in readers):
        return None
    return readers


def plans(graph, names) -> dict:
    """``{name: row_plan}`` cached on the graph."""
    cache = graph.__dict__.setdefault("_row_plans", {})
    for n in names:
        if n not in cache:
            cache[n] = row_plan(graph, n)
    return {n: cache[n] for n in names}


def gathered(graph, args: dict, aux: dict, key, is_train, names, axis_name=None) -> dict:
    """``{name: RowParts(rows, W[rows])}`` for the arguments ``names`` whose rows can be
    gathered (the others are left out: their gradient is computed dense)."""
    found = {n: p for n, p in plans(graph, names).items() if p}
    entries = [e for p in found.values() for _, e in p]
    values = dict(zip(map(_ref, entries), graph.values_of(args, aux, key, is_train, entries,
                                                            axis_name)))  # fmt: skip
    out = {}
    for name, plan in found.items():
        w = args[name]
        n_rows = w.shape[0]
        picked = []
        for kind, entry in plan:
            v = values[_ref(entry)]
            if kind == "csr":
                if not isinstance(v, CsrParts):
                    break
                picked.append(v.cols)
            else:
                picked.append(jnp.clip(jnp.ravel(v).astype(jnp.int32), 0, n_rows - 1))
        else:
            flat = jnp.concatenate(picked) if len(picked) > 1 else picked[0]
            rows = unique_rows(flat, min(flat.shape[0], n_rows), n_rows)
            values_w = jnp.take(w, rows, axis=0, mode="fill", fill_value=0)
            out[name] = RowParts(rows, values_w, tuple(w.shape))
    return out


def _ref(entry):
    return (id(entry[0]), entry[1])


def as_rows(grad, view):
    """The gradient of a row_sparse argument as a ``RowParts``: of the gathered ``view``'s
    rows, or (computed dense, ``view`` None) of every row."""
    if view is not None:
        return RowParts(view.rows, grad.values, view.shape)
    n = grad.shape[0]
    return RowParts(jnp.arange(n, dtype=jnp.int32), grad, tuple(grad.shape))


def combine(grad: RowParts, axis_name) -> RowParts:
    """The sum of the devices' row gradients (inside a mesh program): every device's rows
    gathered, duplicates added (``unique`` + ``segment_sum``)."""
    rows = jax.lax.all_gather(grad.rows, axis_name, tiled=True)
    values = jax.lax.all_gather(grad.values, axis_name, tiled=True)
    return _unite(rows, values, grad.shape)


def merge(grads: list) -> RowParts:
    """The sum of several row gradients of one argument (per-device replicas)."""
    rows = jnp.concatenate([g.rows for g in grads])
    values = jnp.concatenate([g.values for g in grads])
    return _unite(rows, values, grads[0].shape)


def _unite(rows, values, shape) -> RowParts:
    n_rows = shape[0]
    size = min(rows.shape[0], n_rows)
    uniq, inv = jnp.unique(rows, size=size, fill_value=n_rows, return_inverse=True)
    summed = jax.ops.segment_sum(values, jnp.ravel(inv), num_segments=size)
    return RowParts(uniq, summed, shape)


def row_sparse_args(graph, diff_names) -> tuple:
    """The arguments among ``diff_names`` whose gradient MXNet stores row_sparse, by the
    variables' ``__storage_type__`` (what a Module binds)."""
    _, grad_st = infer_stypes(graph.symbol, variable_stypes(graph.symbol))
    return tuple(n for n in diff_names if grad_st.get(n) == "row_sparse")


def only_dot_lhs(graph, name: str) -> bool:
    """Whether argument ``name`` is read only as the lhs of ``dot`` (no ``transpose_b``)."""
    uses = [
        (node, j)
        for node in graph._order
        if not node.is_var
        for j, (c, _) in enumerate(node.inputs)
        if c.is_var and c.name == name
    ]
    return bool(uses) and all(
        node.op.name == "dot" and j == 0 and not node.parsed().transpose_b for node, j in uses
    )
