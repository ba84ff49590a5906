"""``mx.test_utils.check_consistency``: one symbol on several contexts and dtypes.

Follows MXNet 1.9.1 step by step: the same random inputs on every ``simple_bind``
entry, the entry with the widest output dtype as ground truth, outputs compared after
an inference forward, then outputs and gradients after a training forward and a
backward with the least precise outputs as head gradients.
"""

from __future__ import annotations

import traceback
from typing import Any

import numpy as np

from .ndarray import array
from .test_utils import assert_almost_equal, get_tols

__all__ = ["check_consistency"]


def _smaller(dt1: Any, dt2: Any) -> Any:
    return dt1 if dt2 is None or np.dtype(dt1).itemsize < np.dtype(dt2).itemsize else dt2


def check_consistency(
    sym: Any,
    ctx_list: list,
    scale: float = 1.0,
    grad_req: Any = "write",
    arg_params: dict | None = None,
    aux_params: dict | None = None,
    rtol: Any = None,
    atol: Any = None,
    raise_on_err: bool = True,
    ground_truth: dict | None = None,
    equal_nan: bool = False,
    use_uniform: bool = False,
    rand_type: Any = np.float64,
) -> dict:
    """Check that ``sym`` gives the same outputs and gradients on every entry of ``ctx_list``.

    Each entry is ``{'ctx': ..., '<input>': shape, ..., 'type_dict': {...}}`` (the
    ``simple_bind`` arguments). The entry with the widest output dtype is the ground
    truth unless ``ground_truth`` is given. A missing device raises MXNetError naming it.

    Returns:
        The ground truth (outputs and gradients by name).
    """
    if len(ctx_list) < 2:
        raise ValueError("check_consistency needs at least two entries in ctx_list")
    syms = [sym] * len(ctx_list) if not isinstance(sym, (list, tuple)) else list(sym)
    if len(syms) != len(ctx_list):
        raise ValueError(f"check_consistency: {len(syms)} symbols for {len(ctx_list)} contexts")
    output_names, arg_names = syms[0].list_outputs(), syms[0].list_arguments()
    exes = []
    for s, spec in zip(syms, ctx_list):
        if s.list_arguments() != arg_names or s.list_outputs() != output_names:
            raise ValueError(
                "check_consistency: every symbol must have the same arguments and outputs"
            )
        exes.append(s.simple_bind(grad_req=grad_req, **spec))
    arg_params = {} if arg_params is None else arg_params
    aux_params = {} if aux_params is None else aux_params
    for name, arr in sorted(exes[0].arg_dict.items()):
        if name not in arg_params:
            arg_params[name] = (
                np.random.uniform(-0.92 * scale, 0.92 * scale, size=arr.shape)
                if use_uniform
                else np.random.normal(size=arr.shape, scale=scale)
            ).astype(rand_type)
    for name in exes[0].aux_dict:
        aux_params.setdefault(name, 0)
    for exe in exes:
        for name, arr in exe.arg_dict.items():
            arr[:] = arg_params[name]
        for name, arr in exe.aux_dict.items():
            arr[:] = aux_params[name]
        if grad_req == "add":
            for arr in exe.grad_arrays:
                if arr is not None:
                    arr[:] = 0
    for exe in exes:
        exe.forward(is_train=False)
    dtypes = [np.dtype(exe.outputs[0].dtype) for exe in exes]
    gt_idx = int(np.argmax(dtypes))
    own_truth = ground_truth is None

    def truth():  # MXNet's ground truth aliases the executor's arrays: read them live
        out = dict(zip(output_names, exes[gt_idx].outputs))
        if grad_req != "null":
            out.update(exes[gt_idx].grad_dict)
        return out

    gt = truth() if own_truth else ground_truth

    def compare(arr, ref, what, i, rt=rtol, at=atol):
        try:
            assert_almost_equal(arr, ref, rtol=rt, atol=at, equal_nan=equal_nan)
        except AssertionError as err:
            print(f"{what} Err: ctx {i} vs ctx {gt_idx}")
            traceback.print_exc()
            if raise_on_err:
                raise
            print(str(err))

    for i, exe in enumerate(exes):
        if i != gt_idx:
            for name, arr in zip(output_names, exe.outputs):
                compare(arr, gt[name], f"Predict ({name})", i)
    if grad_req == "null":
        return gt
    for exe in exes:
        exe.forward(is_train=True)
    least = [out.dtype for out in exes[0].outputs]
    for exe in exes:
        least = [_smaller(out.dtype, dt) for out, dt in zip(exe.outputs, least)]
    golden = [out.astype(dt).asnumpy() for out, dt in zip(exes[0].outputs, least)]
    for exe in exes:
        exe.backward(
            [array(g, ctx=out.context, dtype=out.dtype) for g, out in zip(golden, exe.outputs)]
        )
    if own_truth:
        gt = truth()
    for i, exe in enumerate(exes):
        if i == gt_idx:
            continue
        for name, arr in zip(output_names + arg_names, exe.outputs + exe.grad_arrays):
            if gt[name] is None:
                if arr is not None:
                    raise AssertionError(f"{name}: ground truth has no gradient but ctx {i} has")
                continue
            ref = gt[name]
            rt, at = rtol, atol
            small_arr, small_ref = (
                _smaller(arr.dtype, dtypes[i]),
                _smaller(ref.dtype, dtypes[gt_idx]),
            )
            if small_arr != arr.dtype or small_ref != ref.dtype:
                rt, at = get_tols(arr.astype(small_arr), ref.astype(small_ref), rtol, atol)
            compare(arr, ref, f"Train ({name})", i, rt, at)
    return gt
