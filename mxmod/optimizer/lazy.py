"""MXNet 1.9.1's lazy (row_sparse) optimizer updates, derived from each optimizer's rule.

MXNet's row_sparse kernels (``sgd_update``/``sgd_mom_update``/``adam_update`` with
``lazy_update=True``, ``ftrl_update`` on row_sparse weight and states,
``_sparse_adagrad_update``, ``_contrib_group_adagrad_update``) move only the weight rows the
gradient stores, and only those rows of every state: the other rows keep their values
(no weight decay, no momentum decay). Each kernel is its optimizer's dense formula applied
row by row, so :func:`lazy_step` gathers the stored rows, runs the optimizer's ``_rule``
(through :func:`rules.leaf_step`, multi-precision included) and scatters them back.

Which optimizers have such a kernel (class attribute ``_lazy_kernel``):

* ``"lazy_update"`` (SGD, ccSGD, Adam): lazy when the optimizer's ``lazy_update`` is on;
  otherwise MXNet's *std* update, which equals the dense update with the row_sparse
  gradient densified;
* ``"always"`` (AdaGrad, GroupAdaGrad): a row_sparse gradient always takes the sparse
  kernel (which refuses a non-zero weight decay);
* ``"row_sparse_weight"`` (Ftrl): only for a row_sparse weight (its states are then
  row_sparse too); a dense weight falls back to the dense update.

Every other optimizer has no row_sparse kernel: MXNet falls back to the dense update.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from .rules import LeafInfo, leaf_step, use_mp

__all__ = ["supports_lazy", "lazy_step", "check_lazy_wd"]


def supports_lazy(opt: Any, weight_stype: str = "default", mp: bool = False) -> bool:
    """Whether MXNet 1.9.1 updates a parameter of ``opt`` lazily given a row_sparse gradient.

    Args:
        opt: an optimizer instance.
        weight_stype: the weight's storage type (``'default'`` or ``'row_sparse'``); only
            Ftrl depends on it.
        mp: the parameter is updated through a float32 master copy: SGD's ``mp_sgd_*``
            kernels have no row_sparse form (``_lazy_mp = False``), MXNet falls back to dense.
    """
    if mp and not getattr(type(opt), "_lazy_mp", True):
        return False
    kind = getattr(type(opt), "_lazy_kernel", None)
    if kind == "lazy_update":
        return bool(getattr(opt, "lazy_update", False))
    if kind == "always":
        return True
    if kind == "row_sparse_weight":
        return weight_stype == "row_sparse"
    return False


def check_lazy_wd(opt: Any, wds) -> None:
    """MXNet's sparse AdaGrad kernel has no weight decay: refuse a non-zero one.

    Raises:
        ValueError: ``opt`` is AdaGrad-like (``_lazy_no_wd``) and a weight decay is not 0.
    """
    if not getattr(type(opt), "_lazy_no_wd", False):
        return
    for wd in wds:
        if float(wd) != 0.0:
            raise ValueError(
                f"{type(opt).__name__}: a row_sparse gradient takes MXNet's sparse "
                f"{type(opt).__name__} kernel, which does not support weight decay "
                f"(got wd={float(wd):g}); set wd=0 (and wd_mult) or pass a dense gradient"
            )


def lazy_step(opt: Any, w, rows, g_rows, state, leaf: LeafInfo, mp: bool | None = None):
    """MXNet's lazy update of one parameter: pure and jittable.

    Args:
        opt: the optimizer (its ``_rule``, or ``_lazy_rule`` where the sparse kernel differs
            from the dense formula).
        w: the full weight ``(N, ...)``.
        rows: int32 ``(K,)`` unique row ids the gradient stores; entries equal to ``N`` are
            padding and are dropped.
        g_rows: the gradient's rows ``(K, ...)`` (padding rows: any value).
        state: the parameter's state (as ``create_state_multi_precision``'s layout); every
            leaf whose leading dimension is ``N`` moves with the rows, others pass whole.
        leaf: the parameter's :class:`~mxmod.optimizer.rules.LeafInfo`.
        mp: update through the float32 master copy; default ``use_mp(opt, w.dtype)``.

    Returns:
        ``(new_w, new_state)``: only rows ``rows`` changed.
    """
    n = w.shape[0]
    rows = jnp.asarray(rows, jnp.int32)
    mp = use_mp(opt, w.dtype) if mp is None else bool(mp)

    def per_row(x):
        return x is not None and jnp.ndim(x) >= 1 and x.shape[0] == n

    def gather(x):
        return x.at[rows].get(mode="fill", fill_value=0) if per_row(x) else x

    def scatter(full, new):
        return full.at[rows].set(new.astype(full.dtype), mode="drop") if per_row(full) else new

    rule = getattr(opt, "_lazy_rule", None)
    new_w, new_s = leaf_step(
        opt, gather(w), g_rows, jax.tree_util.tree_map(gather, state), leaf, mp, rule=rule
    )
    return scatter(w, new_w), jax.tree_util.tree_map(scatter, state, new_s)
