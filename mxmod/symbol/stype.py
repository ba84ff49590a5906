"""Storage types of a graph's values and gradients: MXNet 1.9.1's FInferStorageType rules
for the operators mxmod runs sparse, everything else dense (MXNet's storage fallback).

Forward: a variable's stype is its ``__storage_type__`` (or ``simple_bind(stype_dict=)``);
``dot(csr, x)`` is default, ``dot(csr.T, dense)`` row_sparse, zero-keeping unary operators
and scalar ``*``/``/`` keep csr/row_sparse, ``_square_sum(rsp, axis=1)`` is row_sparse,
``cast_storage`` its ``stype``, ``retain`` row_sparse, ``elemwise_add/sub/mul`` of two alike
sparse values keep it; anything else is default.

Backward (head gradients dense): the rhs of ``dot(csr, rhs)`` (no transposes), the weight of
``Embedding(sparse_grad=True)``/``contrib.SparseEmbedding`` and the row_sparse input of
``_square_sum`` get row_sparse gradients, a csr input of ``square`` a csr one; a variable's
gradient has the stype of the gradients reaching it when they all agree (MXNet's
ElementwiseSum), else default.
Imports no JAX.
"""

from __future__ import annotations

from .graph import aux_var_ids, topo_order

FLAGS = {"0": "default", "1": "row_sparse", "2": "csr", "-1": "default"}
STYPES = ("default", "row_sparse", "csr")
_ZERO_KEEPING = tuple(
    "square sqrt abs sign negative relu sin tan arcsin arctan sinh tanh arcsinh arctanh "
    "floor ceil rint round trunc fix expm1 log1p degrees radians".split()
)


def variable_stypes(sym, stype_dict=None) -> dict:
    """``{variable: stype}``: ``stype_dict`` over the ``__storage_type__`` attributes.

    Raises:
        ValueError: an unknown stype, or a ``stype_dict`` name that is not an input.
    """
    out = {}
    names = set()
    for node in topo_order(sym._outputs):
        if node.is_var:
            names.add(node.name)
            out[node.name] = FLAGS.get(node.attrs.get("__storage_type__", "0"), "default")
    for name, st in (stype_dict or {}).items():
        if name not in names:
            raise ValueError(
                f"stype_dict names {name!r}, which is not an input of the symbol; its inputs "
                f"are {sorted(names)}"
            )
        if st not in STYPES:
            raise ValueError(f"stype_dict[{name!r}] = {st!r}; use one of {STYPES}")
        out[name] = st
    return out


def _forward(node, ins: list) -> list:
    name, a = node.op.name, node.parsed()
    n_out = node.num_outputs()
    st = "default"
    if name == "dot" and ins[0] == "csr" and not a.transpose_b:
        if a.transpose_a and ins[1] == "default":
            st = "row_sparse"
    elif name in _ZERO_KEEPING + ("_mul_scalar", "_div_scalar") and ins[0] != "default":
        st = ins[0]
    elif name == "_square_sum" and ins[0] == "row_sparse" and _row_wise(a):
        st = "row_sparse"
    elif name == "cast_storage":
        st = a.stype
    elif name == "_sparse_retain":
        st = "row_sparse"
    elif name in ("elemwise_add", "elemwise_sub", "elemwise_mul", "_grad_add"):
        if ins[0] == ins[1] and ins[0] != "default":
            st = ins[0]
    return [st] * n_out


def _row_wise(a) -> bool:
    """A ``_square_sum`` over axis 1 only (MXNet's row_sparse-output case)."""
    axes = tuple(a.axis) if a.axis else ()
    return axes in ((1,), (-1,)) and not a.exclude


def _backward(node, ins: list) -> list:
    """Gradient stype per data input (None: no gradient from this node)."""
    name, a = node.op.name, node.parsed()
    out = ["default"] * len(ins)
    if name == "dot" and ins[0] == "csr" and not a.transpose_a and not a.transpose_b:
        out[1] = "row_sparse"
    elif name in ("Embedding", "_contrib_SparseEmbedding") and (
        name != "Embedding" or a.sparse_grad
    ):
        out[1] = "row_sparse"
    elif name == "_square_sum" and ins[0] == "row_sparse":
        out[0] = "row_sparse"
    elif name == "square" and ins[0] == "csr":
        out[0] = "csr"
    return out


def _sum_stype(stypes: list) -> str:
    """The stype of the sum of a variable's gradients: theirs when all alike, else default."""
    return stypes[0] if stypes and all(s == stypes[0] for s in stypes) else "default"


def infer_stypes(sym, var_stypes: dict) -> tuple:
    """``(entry stypes {(id(node), k): stype}, gradient stype per argument)``."""
    order = topo_order(sym._outputs)
    aux_ids = aux_var_ids(order)
    st: dict = {}
    grads: dict = {}
    for node in order:
        if node.is_var:
            st[(id(node), 0)] = var_stypes.get(node.name, "default")
            continue
        n_data = node.n_data_inputs()
        ins = [st[(id(c), k)] for c, k in node.inputs[:n_data]]
        for k, s in enumerate(_forward(node, ins)):
            st[(id(node), k)] = s
        for (c, _), g in zip(node.inputs[:n_data], _backward(node, ins)):
            if c.is_var and id(c) not in aux_ids:
                grads.setdefault(c.name, []).append(g)
    grad_st = {
        n.name: _sum_stype(grads.get(n.name, []))
        for n in order
        if n.is_var and id(n) not in aux_ids
    }
    return st, grad_st
