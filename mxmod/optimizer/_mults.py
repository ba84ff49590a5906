"""Each parameter's lr/wd multipliers, index and update order, resolved as MXNet does.

An optimizer keeps MXNet's attributes (``lr_mult``, ``wd_mult``, ``idx2name``,
``param_dict``, ``sym_info``); these functions read them. MXNet's imperative path keys by
index (:func:`index_mults`); the fused step keys by name (:func:`name_mults`), looking a
name up in ``param_dict``, then in the multiplier dict, then under any index of that name.
"""

from __future__ import annotations

import math
from typing import Any


def sym_mults(sym_info: tuple, attr: str) -> dict:
    """``{name: float(value)}`` of a symbol's ``attr`` (``__lr_mult__``/``__wd_mult__``)."""
    mult = {}
    if sym_info:
        attrs, arg_names = sym_info
        for name in arg_names:
            if name in attrs and attr in attrs[name]:
                mult[name] = _mult_value(name, attr, attrs[name][attr])
    return mult


def _mult_value(name: str, attr: str, text: Any) -> float:
    try:
        return float(text)
    except (TypeError, ValueError):
        kw = attr.strip("_")
        raise ValueError(
            f"the symbol's variable {name!r} has {attr}={text!r}, which is not a number; set "
            f"it to a number (mx.sym.Variable({name!r}, {kw}=2.0) writes {attr}='2.0') or "
            f"remove the attribute (fix the -symbol.json file if it was loaded from one)"
        ) from None


def index_mults(opt: Any, indices: list, mults: dict, attr: str) -> list:
    """The multiplier of each index: ``param_dict``, the index, then its name, else 1."""
    out = []
    for index in indices:
        if index in opt.param_dict:
            out.append(getattr(opt.param_dict[index], attr))
        elif index in mults:
            out.append(mults[index])
        elif index in opt.idx2name:
            out.append(mults.get(opt.idx2name[index], 1.0))
        else:
            out.append(1.0)
    return out


def name_mults(opt: Any, names: Any) -> dict:
    """``{name: (lr_mult, wd)}`` for name keys (the fused step's)."""
    by_name: dict = {}
    for idx, n in opt.idx2name.items():
        by_name.setdefault(n, []).append(idx)

    def mult(name: str, mults: dict, attr: str) -> float:
        if name in opt.param_dict:
            return float(getattr(opt.param_dict[name], attr))
        if name in mults:
            return float(mults[name])
        for idx in by_name.get(name, ()):
            if idx in mults:
                return float(mults[idx])
        return 1.0

    wd = float(opt.wd)
    return {n: (mult(n, opt.lr_mult, "lr_mult"), wd * mult(n, opt.wd_mult, "wd_mult"))
            for n in names}  # fmt: skip


def index_of(idx2name: dict, name: str) -> Any:
    """The index MXNet's Updater passes for ``name``: its lowest integer index in
    ``idx2name``, else the name itself."""
    best = None
    for idx, n in idx2name.items():
        if n == name and isinstance(idx, int) and (best is None or idx < best):
            best = idx
    return name if best is None else best


def first_name(idx2name: dict, names: list) -> Any:
    """The name MXNet updates first: lowest integer index in ``idx2name`` (jit sorts dict
    keys, so the dict order is not MXNet's order), else the first of ``names``."""
    rank: dict = {}
    for idx, n in idx2name.items():
        if isinstance(idx, int) and (n not in rank or idx < rank[n]):
            rank[n] = idx
    order = sorted(range(len(names)), key=lambda i: (rank.get(names[i], math.inf), i))
    return names[order[0]] if names else None


def positions(fused_names: tuple, names: list) -> dict:
    """MXNet's update order: the ``fused_init`` order, unknown names after it."""
    fused = {n: i for i, n in enumerate(fused_names)}
    return {n: fused.get(n, len(fused) + j) for j, n in enumerate(names)}
