"""Splitting operators: ``SliceChannel`` (``split``: equal parts) and ``_split_v2``
(``split_v2``: equal sections or parts between cut points), with MXNet 1.9.1's attribute
names, defaults and shape rules."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ._attrs import Param, p_bool, p_int, p_shape
from ._def import OpDef, fail, register
from .shape import norm_axis


# ------------------------------------------------------------- SliceChannel
def _split_shape(a, s):
    ax = norm_axis(a.axis, len(s))
    n = a.num_outputs
    if n < 1:
        fail(f"num_outputs must be >= 1, got {n}")
    if s[ax] % n:
        fail(f"cannot split axis {a.axis} of shape {s} into num_outputs={n} equal parts")
    if a.squeeze_axis:
        if s[ax] != n:
            fail(
                f"squeeze_axis=True needs the split axis size to equal num_outputs; "
                f"shape {s}, axis={a.axis}, num_outputs={n}"
            )
        return s[:ax] + s[ax + 1 :]
    return s[:ax] + (s[ax] // n,) + s[ax + 1 :]


def _split_lower(a, ins, aux, ctx):
    x = ins[0]
    ax = a.axis % x.ndim
    parts = jnp.split(x, a.num_outputs, axis=ax)
    return [p.squeeze(ax) if a.squeeze_axis else p for p in parts]


register(
    OpDef(
        name="SliceChannel",
        aliases=("split",),
        params={
            "num_outputs": Param(p_int),
            "axis": Param(p_int, 1),
            "squeeze_axis": Param(p_bool, False),
        },
        outputs=lambda a: [f"output{i}" for i in range(a.num_outputs)],
        infer_shape=lambda a, s: (
            s,
            [None if s[0] is None else _split_shape(a, tuple(s[0]))] * a.num_outputs,
        ),
        lower=_split_lower,
    )
)


# ------------------------------------------------------------- _split_v2
def split_v2_attrs(indices_or_sections) -> dict:
    """``_split_v2``'s attributes from ``split_v2``'s argument, as MXNet's wrappers make
    them: an int is a number of equal sections; cut points get a 0 in front."""
    if isinstance(indices_or_sections, (int, np.integer)) and not isinstance(
        indices_or_sections, bool
    ):
        return {"sections": int(indices_or_sections), "indices": ()}
    if isinstance(indices_or_sections, (tuple, list)):
        return {"sections": 0, "indices": (0, *(int(i) for i in indices_or_sections))}
    raise ValueError(
        f"split_v2: indices_or_sections must be an int (sections) or a tuple of ints (cut "
        f"points), got {type(indices_or_sections).__name__}"
    )


def split_v2_bounds(a, size: int) -> list:
    """``_split_v2``'s parts along its axis as (start, end): ``sections`` equal parts, or
    ``indices`` (MXNet's wrapper puts a 0 first) each running to the next, the last to
    the end of the axis."""
    if a.sections > 0:
        if size % a.sections:
            fail(
                f"split_v2: axis {a.axis} of size {size} does not split into {a.sections} "
                "equal sections (array split does not result in an equal division)"
            )
        step = size // a.sections
        return [(i * step, (i + 1) * step) for i in range(a.sections)]
    idx = [int(i) for i in a.indices]
    if not idx or idx[0] != 0:
        fail(
            f"split_v2: indices={tuple(idx)} must start with 0 (mx.sym.split_v2 adds it: pass "
            "the cut points there)"
        )
    ends = idx[1:] + [size]
    for start, end in zip(idx, ends):
        if not 0 <= start <= end <= size:
            fail(
                f"split_v2: indices {tuple(idx[1:])} must be ascending and within the axis "
                f"size {size}"
            )
    return list(zip(idx, ends))


def _split_v2_count(a) -> int:
    return a.sections if a.sections > 0 else max(len(a.indices), 1)


def _split_v2_shape(a, s):
    if s[0] is None:
        return s, [None] * _split_v2_count(a)
    shape = tuple(s[0])
    ax = norm_axis(a.axis, len(shape))
    outs = []
    for start, end in split_v2_bounds(a, shape[ax]):
        if a.squeeze_axis:
            if end - start != 1:
                fail(
                    f"split_v2: squeeze_axis=True needs parts of size 1 along axis {a.axis}, "
                    f"got one of size {end - start}"
                )
            outs.append(shape[:ax] + shape[ax + 1 :])
        else:
            outs.append(shape[:ax] + (end - start,) + shape[ax + 1 :])
    return s, outs


def _split_v2_lower(a, ins, aux, ctx):
    x = ins[0]
    ax = norm_axis(a.axis, x.ndim)
    parts = [
        jax.lax.slice_in_dim(x, start, end, axis=ax)
        for start, end in split_v2_bounds(a, x.shape[ax])
    ]
    return [p.squeeze(ax) if a.squeeze_axis else p for p in parts]


register(
    OpDef(
        name="_split_v2",
        params={
            "indices": Param(p_shape, ()),
            "axis": Param(p_int, 1),
            "squeeze_axis": Param(p_bool, False),
            "sections": Param(p_int, 0),
        },
        outputs=lambda a: [f"output{i}" for i in range(_split_v2_count(a))],
        infer_shape=_split_v2_shape,
        lower=_split_v2_lower,
    )
)
