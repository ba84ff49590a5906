"""``group2ctxs``: where the arrays of a symbol's ``ctx_group``s live.

MXNet places the nodes of ``mx.AttrScope(ctx_group='dev1')`` on the context that
``group2ctxs`` maps ``'dev1'`` to (per data-parallel device). mxmod compiles the whole
graph into one XLA program on the module's contexts, so the computation is not split
across those devices; the arrays MXNet hands out for a grouped variable (its argument,
gradient and input-gradient arrays) are reported on, and copied to, the group's context,
so code that checks ``.context`` or mixes them with arrays there keeps working.
"""

from __future__ import annotations

from ..base import MXNetError
from ..context import Context


def prepare_group2ctxs(group2ctxs, n_ctx: int) -> list:
    """One ``{group: Context}`` per data-parallel context (MXNet's accepted forms: a
    list of such dicts, or one dict whose values are a Context or a list of 1 or
    ``n_ctx`` Contexts)."""
    if group2ctxs is None:
        return [None] * n_ctx
    if isinstance(group2ctxs, list):
        if len(group2ctxs) != n_ctx:
            raise MXNetError(
                f"group2ctxs has {len(group2ctxs)} dicts but there are {n_ctx} contexts; "
                "give one {group: context} dict per context, or one dict for all"
            )
        for d in group2ctxs:
            _check_map(d)
        return list(group2ctxs)
    if not isinstance(group2ctxs, dict):
        raise TypeError(
            "group2ctxs must be a dict {group: context or [contexts]} or a list of "
            f"such dicts (one per context), got {type(group2ctxs).__name__}"
        )
    out: list = [{} for _ in range(n_ctx)]
    for group, value in group2ctxs.items():
        if not isinstance(value, (Context, list, tuple)):
            raise TypeError(
                f"group2ctxs[{group!r}] must be a Context or a list of Contexts, "
                f"got {type(value).__name__} {value!r}"
            )
        ctxs = [value] * n_ctx if isinstance(value, Context) else list(value)
        if len(ctxs) == 1:
            ctxs = ctxs * n_ctx
        if len(ctxs) != n_ctx:
            raise MXNetError(
                f"group2ctxs[{group!r}] has {len(ctxs)} contexts; give 1 or {n_ctx} "
                "(one per context of the module)"
            )
        for k, c in enumerate(ctxs):
            out[k][group] = c
    for d in out:
        _check_map(d)
    return out


def _check_map(d) -> None:
    if not isinstance(d, dict) or not all(isinstance(c, Context) for c in d.values()):
        raise TypeError(f"group2ctxs entries must map group names to Contexts, got {d!r}")


def variable_groups(symbol) -> dict:
    """``{variable name: ctx_group}`` of the symbol's grouped variables."""
    out = {}
    for name, attrs in symbol.attr_dict().items():
        group = attrs.get("__ctx_group__") or attrs.get("ctx_group")
        if group is not None:
            out[name] = group
    return {n: out[n] for n in symbol.list_inputs() if n in out}
