"""The memory figure of ``Executor.debug_str()`` (MXNet's ``Total <N> MB allocated`` line).

MXNet prints the size of its memory plan: the storage of the graph's internal values
(outputs and intermediates, after in-place reuse), not the bound argument, gradient and
aux arrays. XLA fuses element-wise chains so its own temporary buffers say little about
the graph (ten chained multiplies and their gradient need none); mxmod reports the graph
the same way MXNet's plan does instead: the executor's outputs plus, when some argument
is bound with a gradient, the values the backward pass keeps from the forward pass (the
residuals ``jax.vjp`` records, which may include inputs it keeps). Traced abstractly:
nothing is computed or compiled.
"""

from __future__ import annotations

import math

import jax
import numpy as np

MB = 1 << 20


def _nbytes(leaves) -> int:
    return sum(math.prod(x.shape) * np.dtype(x.dtype).itemsize for x in leaves)


def allocated_bytes(graph, args: dict, aux: dict, key, diff_names: list, outputs: list) -> int:
    """Bytes of ``outputs`` plus the backward pass's residuals w.r.t. ``diff_names``."""
    total = _nbytes(o._data for o in outputs)
    if not diff_names or graph.dynamic_nodes:  # value-dependent shapes: outputs only
        return total
    const = {n: v for n, v in args.items() if n not in diff_names}

    def residuals(diff):
        def f(d):
            return graph({**const, **d}, aux, key, True)

        return jax.vjp(f, diff, has_aux=True)[1]

    kept = jax.eval_shape(residuals, {n: args[n] for n in diff_names})
    return total + _nbytes(jax.tree_util.tree_leaves(kept))


def allocated_line(nbytes: int) -> str:
    """MXNet's summary line (whole megabytes, rounded down as MXNet does)."""
    return f"Total {nbytes // MB} MB allocated"
