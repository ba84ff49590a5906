"""``khatri_rao``: the column-wise Kronecker product of matrices ``(r_i, k)`` -> ``(prod r_i,
k)``, the first matrix's row index the slowest."""

from __future__ import annotations


from ._def import OpDef, fail, register


def _shape(a, s):
    if any(x is None for x in s):
        return s, [None]
    if any(len(x) != 2 for x in s) or len({x[1] for x in s}) > 1:
        fail(f"khatri_rao needs matrices with the same number of columns, got shapes {s}")
    rows = 1
    for x in s:
        rows *= x[0]
    return s, [(rows, s[0][1])]


def _lower(a, ins, aux, ctx):
    _shape(a, [x.shape for x in ins])  # mx.nd calls skip shape inference: its checks run here
    out = ins[0]
    for m in ins[1:]:
        out = (out[:, None, :] * m[None, :, :]).reshape(-1, m.shape[1])
    return [out]


register(
    OpDef(
        name="khatri_rao",
        inputs=lambda a: [f"arg{i}" for i in range(a.num_args)],
        variadic="num_args",
        infer_shape=_shape,
        lower=_lower,
    )
)
