"""Symbolic checks of ``mx.test_utils``: forward/backward against expected values, finite
differences, optimizer comparison (cross-context consistency: ``_test_consistency``).

They follow MXNet 1.9.1's ``test_utils`` step by step (same executor calls, same random
projection for numeric gradients, same ground-truth choice in ``check_consistency``),
so MXNet's own unit tests written with them run unchanged. float64 needs
``jax_enable_x64``; without it JAX computes in float32 (with a warning).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from . import random as mx_random
from . import symbol as sym_mod
from .context import Context
from .ndarray import array, empty, waitall
from .ndarray.sparse import zeros as sparse_zeros
from .test_utils import (
    assert_almost_equal,
    compare_ndarray_tuple,
    default_context,
    default_dtype,
    default_numeric_eps,
    get_tolerance,
    rand_ndarray,
)

__all__ = [
    "simple_forward",
    "numeric_grad",
    "check_numeric_gradient",
    "check_symbolic_forward",
    "check_symbolic_backward",
    "compare_optimizer",
    "check_speed",
]

_FLOATS = (np.float16, np.float32, np.float64)


def _check_dtype(dtype: Any, allow_asnumpy: bool = True) -> None:
    ok = (allow_asnumpy and isinstance(dtype, str) and dtype == "asnumpy") or (
        not isinstance(dtype, str) and np.dtype(dtype) in [np.dtype(t) for t in _FLOATS]
    )
    if not ok:
        allowed = "'asnumpy', " if allow_asnumpy else ""
        raise TypeError(
            f"dtype must be {allowed}np.float16, np.float32 or np.float64, got {dtype!r}"
        )


def _to_nd(value: Any, ctx: Context, dtype: Any) -> Any:
    if isinstance(value, np.ndarray):
        return array(value, ctx=ctx, dtype=value.dtype if _is_asnumpy(dtype) else dtype)
    return value


def _is_asnumpy(dtype: Any) -> bool:
    return isinstance(dtype, str) and dtype == "asnumpy"


def _parse_location(sym: Any, location: Any, ctx: Context, dtype: Any) -> dict:
    if not isinstance(location, (dict, list, tuple)):
        raise TypeError(
            f"location must be a dict name -> array or a list in "
            f"list_arguments() order, got {type(location).__name__}"
        )
    names = sym.list_arguments()
    if isinstance(location, dict):
        if set(location) != set(names):
            raise ValueError(
                "Symbol arguments and keys of the given location do not match."
                f"symbol args:{set(names)}, location.keys():{set(location)}"
            )
    else:
        location = dict(zip(names, location))
    return {k: _to_nd(location[k], ctx, dtype) for k in sorted(location)}


def _parse_aux_states(sym: Any, aux_states: Any, ctx: Context, dtype: Any) -> dict | None:
    if aux_states is None:
        return None
    names = sym.list_auxiliary_states()
    if isinstance(aux_states, dict):
        if set(aux_states) != set(names):
            raise ValueError(
                "Symbol aux_states names and given aux_states do not match."
                f"symbol aux_names:{set(names)}, aux_states.keys:{set(aux_states)}"
            )
    else:
        aux_states = dict(zip(names, aux_states))
    return {
        k: array(v, ctx=ctx, dtype=v.dtype if _is_asnumpy(dtype) else dtype)
        for k, v in aux_states.items()
    }


def simple_forward(
    sym: Any, ctx: Context | None = None, is_train: bool = False, **inputs: Any
) -> Any:
    """Bind ``sym`` to the numpy ``inputs``, run forward, return numpy output(s)."""
    ctx = ctx or default_context()
    exe = sym.bind(ctx, args={k: array(v) for k, v in inputs.items()})
    exe.forward(is_train=is_train)
    outputs = [x.asnumpy() for x in exe.outputs]
    return outputs[0] if len(outputs) == 1 else outputs


def numeric_grad(
    executor: Any,
    location: dict,
    aux_states: dict | None = None,
    eps: float = 1e-4,
    use_forward_train: bool = True,
    dtype: Any = default_dtype(),
) -> dict:
    """Central finite differences of ``sum(outputs[0])`` for each floating argument."""
    _check_dtype(dtype, allow_asnumpy=False)
    grads = {k: np.zeros(v.shape, dtype=dtype) for k, v in location.items()}
    for k, v in location.items():
        executor.arg_dict[k][:] = array(v, dtype=dtype)
    location = {k: np.array(v, order="C") for k, v in location.items()}

    def run(k, v):
        executor.arg_dict[k][:] = array(v, dtype=dtype)
        for key, val in (aux_states or {}).items():
            executor.aux_dict[key][:] = array(val, dtype=dtype)
        executor.forward(is_train=use_forward_train)
        return executor.outputs[0].asnumpy()

    for k, v in location.items():
        if v.dtype.kind != "f":
            continue
        old = v.copy()
        flat = v.reshape(-1)
        for i in range(flat.size):
            flat[i] += eps / 2.0
            plus = run(k, v)
            flat[i] -= eps
            minus = run(k, v)
            grads[k].reshape(-1)[i] = (plus - minus).sum() / eps
            flat[i] = old.reshape(-1)[i]
        executor.arg_dict[k][:] = array(old, dtype=dtype)
    return grads


def _grad_requests(grad_nodes: Any, names: list) -> dict:
    if grad_nodes is None:
        return {k: "write" for k in names}
    if isinstance(grad_nodes, (list, tuple)):
        return {k: "write" for k in grad_nodes}
    if isinstance(grad_nodes, dict):
        return dict(grad_nodes)
    raise TypeError(
        f"grad_nodes must be None, a list of names or a dict name -> grad_req, "
        f"got {type(grad_nodes).__name__}"
    )


def _check_grads(reqs, expected, grads, start, rtol, atol, prefix, equal_nan=False) -> None:
    """Compare each ``(name, grad_req)`` gradient: ``'write'`` to ``expected``, ``'add'``
    to ``expected`` after subtracting the ``start`` value, ``'null'`` to ``start``."""
    for name, req in reqs:
        want, got = expected.get(name), grads[name]
        if req == "add":
            got = got.asnumpy() - start[name]
        elif req == "null":
            want = start[name]
        elif req != "write":
            raise ValueError(
                f"Invalid grad_req {req} for argument {name}: use 'write', 'add' or 'null'"
            )
        labels = (f"{prefix}_{name}", f"BACKWARD_{name}")
        assert_almost_equal(want, got, rtol, atol, labels, equal_nan=equal_nan)


def _sparse_grads(grads: dict, start: dict, stypes: Any) -> None:
    """Gradient arrays of a sparse storage type (``grad_stypes``) start empty, as MXNet's."""
    for k, st in (stypes or {}).items():
        if st not in (None, "default") and k in grads:
            grads[k] = sparse_zeros(st, grads[k].shape, ctx=grads[k].context,
                                    dtype=grads[k].dtype)  # fmt: skip
            start[k] = np.zeros(grads[k].shape, grads[k].dtype)


def check_numeric_gradient(
    sym: Any,
    location: Any,
    aux_states: Any = None,
    numeric_eps: Any = None,
    rtol: Any = None,
    atol: Any = None,
    grad_nodes: Any = None,
    use_forward_train: bool = True,
    ctx: Context | None = None,
    grad_stype_dict: Any = None,
    dtype: Any = default_dtype(),
) -> None:
    """Check ``sym``'s backward against finite differences of ``sum(sym * random_proj)``.

    Raises:
        AssertionError: a gradient differs (names ``NUMERICAL_<arg>``/``BACKWARD_<arg>``).
    ``grad_stype_dict`` binds those gradient arrays with that storage type (empty).
    """
    _check_dtype(dtype, allow_asnumpy=False)
    ctx = ctx or default_context()
    location = _parse_location(sym, location, ctx, dtype)
    location_np = {k: v.asnumpy() for k, v in location.items()}
    aux = _parse_aux_states(sym, aux_states, ctx, dtype)
    aux_np = {k: v.asnumpy() for k, v in aux.items()} if aux is not None else None
    grad_req = _grad_requests(grad_nodes, sym.list_arguments())
    _, out_shape, _ = sym.infer_shape(**{k: v.shape for k, v in location.items()})
    proj = sym_mod.Variable("__random_proj")
    out = sym_mod.make_loss(sym * proj)
    location = dict(location)
    location["__random_proj"] = array(np.random.rand(*out_shape[0]) + 0.1, ctx=ctx, dtype=dtype)
    grads_np = {k: np.random.normal(0, 0.01, size=location[k].shape) for k in grad_req}
    grads_np["__random_proj"] = np.random.normal(0, 0.01, size=out_shape[0])
    args_grad = {k: array(v, ctx=ctx, dtype=dtype) for k, v in grads_np.items()}
    _sparse_grads(args_grad, grads_np, grad_stype_dict)
    exe = out.bind(ctx, grad_req=grad_req, args=location, args_grad=args_grad, aux_states=aux)
    exe.forward(is_train=True)
    eps = get_tolerance(exe.outputs[0], numeric_eps, default_numeric_eps())
    exe.backward()
    numeric = numeric_grad(
        exe, location_np, aux_np, eps=eps, use_forward_train=use_forward_train, dtype=dtype
    )
    _check_grads(grad_req.items(), numeric, exe.grad_dict, grads_np, rtol, atol, "NUMERICAL")


def check_symbolic_forward(
    sym: Any,
    location: Any,
    expected: Any,
    rtol: Any = None,
    atol: Any = None,
    aux_states: Any = None,
    ctx: Context | None = None,
    equal_nan: bool = False,
    dtype: Any = default_dtype(),
) -> list:
    """Run ``sym`` forward (``is_train=False``) at ``location`` and compare to ``expected``.

    Returns:
        The executor's outputs.
    """
    _check_dtype(dtype)
    ctx = ctx or default_context()
    location = _parse_location(sym, location, ctx, dtype)
    aux = _parse_aux_states(sym, aux_states, ctx, dtype)
    if isinstance(expected, dict):
        expected = [expected[k] for k in sym.list_outputs()]
    grads = {
        k: empty(v.shape, ctx=ctx, dtype=v.dtype if _is_asnumpy(dtype) else dtype)
        for k, v in location.items()
    }
    exe = sym.bind(ctx=ctx, args=location, args_grad=grads, aux_states=aux)
    exe.forward(is_train=False)
    for name, expect, got in zip(sym.list_outputs(), expected, exe.outputs):
        assert_almost_equal(
            expect,
            got,
            rtol,
            atol,
            ("EXPECTED_%s" % name, "FORWARD_%s" % name),
            equal_nan=equal_nan,
        )
    return exe.outputs


def check_symbolic_backward(
    sym: Any,
    location: Any,
    out_grads: Any,
    expected: Any,
    rtol: Any = None,
    atol: Any = None,
    aux_states: Any = None,
    grad_req: Any = "write",
    ctx: Context | None = None,
    grad_stypes: Any = None,
    equal_nan: bool = False,
    dtype: Any = default_dtype(),
) -> dict:
    """Run forward (``is_train=True``) and backward with ``out_grads``; compare gradients.

    ``'add'`` gradients start from random values and are compared after subtracting
    them; ``'null'`` ones must be left untouched.

    Returns:
        The gradient arrays by argument name.
    """
    _check_dtype(dtype)
    ctx = ctx or default_context()
    location = _parse_location(sym, location, ctx, dtype)
    aux = _parse_aux_states(sym, aux_states, ctx, dtype)
    if isinstance(expected, (list, tuple)):
        expected = dict(zip(sym.list_arguments(), expected))
    start = {k: np.random.normal(size=np.shape(v)) for k, v in sorted(expected.items())}
    grads = {
        k: array(v, ctx=ctx, dtype=np.asarray(expected[k]).dtype if _is_asnumpy(dtype) else dtype)
        for k, v in start.items()
    }
    _sparse_grads(grads, start, grad_stypes)
    if isinstance(grad_req, str):
        grad_req = {k: grad_req for k in sym.list_arguments()}
    elif isinstance(grad_req, (list, tuple)):
        grad_req = dict(zip(sym.list_arguments(), grad_req))
    exe = sym.bind(ctx=ctx, args=location, args_grad=grads, aux_states=aux, grad_req=grad_req)
    exe.forward(is_train=True)
    if isinstance(out_grads, (list, tuple)):
        out_grads = [_to_nd(g, ctx, dtype) for g in out_grads]
    elif isinstance(out_grads, dict):
        out_grads = {k: _to_nd(g, ctx, dtype) for k, g in out_grads.items()}
    elif out_grads is not None:
        raise TypeError("out_grads must be None, a list or a dict of arrays")
    exe.backward(out_grads)
    reqs = ((name, grad_req[name]) for name in expected)
    _check_grads(reqs, expected, grads, start, rtol, atol, "EXPECTED", equal_nan)
    return grads


def compare_optimizer(
    opt1: Any,
    opt2: Any,
    shape: Any,
    dtype: Any,
    w_stype: str = "default",
    g_stype: str = "default",
    rtol: float = 1e-4,
    atol: float = 1e-5,
    compare_states: bool = True,
    ntensors: int = 1,
) -> None:
    """Apply one update of ``opt1`` and ``opt2`` to the same random weight and gradient and
    check states and weights agree (``shape`` a list: ``opt2`` updates ``ntensors`` at once).

    Sparse ``w_stype``/``g_stype`` (``'row_sparse'``, ``'csr'``) give ``opt2`` a random
    sparse weight (every row stored) / gradient and ``opt1`` their dense copies, as MXNet.

    Raises:
        ValueError: an unknown ``w_stype``/``g_stype``, or sparse with a list of shapes.
    """
    ctx = default_context()
    if not isinstance(shape, list):
        if ntensors != 1:
            raise ValueError("compare_optimizer: ntensors > 1 needs a list of shapes")
        w1, w2 = _optimizer_inputs(shape, dtype, w_stype, ctx, density=1)
        g1, g2 = _optimizer_inputs(shape, dtype, g_stype, ctx, density=None)
        state1 = opt1.create_state_multi_precision(0, w1)
        state2 = opt2.create_state_multi_precision(0, w2)
        if compare_states:
            compare_ndarray_tuple(state1, state2)
        opt1.update_multi_precision(0, w1, g1, state1)
        opt2.update_multi_precision(0, w2, g2, state2)
        if compare_states:
            compare_ndarray_tuple(state1, state2, rtol=rtol, atol=atol)
        assert_almost_equal(w1, w2, rtol=rtol, atol=atol)
        return
    if w_stype != "default" or g_stype != "default":
        raise ValueError("compare_optimizer: sparse stypes need a single shape, not a list")
    w1 = tuple(mx_random.uniform(shape=s, ctx=ctx, dtype=dtype) for s in shape)
    g1 = tuple(mx_random.uniform(shape=s, ctx=ctx, dtype=dtype) for s in shape)
    w2 = tuple(w.copy() for w in w1)
    g2 = tuple(g.copy() for g in g1)
    state2 = [opt2.create_state_multi_precision(0, w2[i]) for i in range(ntensors)]
    opt2.update_multi_precision(list(range(ntensors)), w2, g2, state2)
    for i in range(ntensors):
        state1 = opt1.create_state_multi_precision(i, w1[i])
        opt1.update_multi_precision(i, w1[i], g1[i], state1)
        if compare_states:
            compare_ndarray_tuple(state1, state2[i], rtol, atol)
        compare_ndarray_tuple(w1[i], w2[i], rtol, atol)


def _optimizer_inputs(shape: Any, dtype: Any, stype: str, ctx: Any, density: Any) -> tuple:
    """``(dense copy for the reference optimizer, array for the tested one)``."""
    if stype == "default":
        arr = mx_random.uniform(shape=shape, ctx=ctx, dtype=dtype)
        return arr.copyto(ctx), arr
    if stype in ("row_sparse", "csr"):
        arr = rand_ndarray(shape, stype, density=density, dtype=dtype)
        return arr.copyto(ctx).tostype("default"), arr
    raise ValueError(f"compare_optimizer: unknown stype {stype!r}; use default, row_sparse or csr")


def check_speed(
    sym: Any,
    location: Any = None,
    ctx: Context | None = None,
    N: int = 20,  # noqa: N803 (MXNet's name)
    grad_req: Any = None,
    typ: str = "whole",
    **kwargs: Any,
) -> float:
    """Seconds one run of ``sym`` takes, averaged over ``N`` runs after a warm-up one:
    forward and backward (``typ='whole'``, the outputs as head gradients) or forward only
    (``typ='forward'``). ``location`` (name -> array) sets the arguments, else they are
    drawn from a standard normal with the shapes ``kwargs`` give ``simple_bind``."""
    if typ not in ("whole", "forward"):
        raise ValueError(f"typ={typ!r}: use 'whole' or 'forward'")
    ctx = ctx or default_context()
    grad_req = "write" if grad_req is None else grad_req
    if location is None:
        exe = sym.simple_bind(ctx=ctx, grad_req=grad_req, **kwargs)
        location = {k: np.random.normal(size=a.shape, scale=1.0) for k, a in exe.arg_dict.items()}
    else:
        if not isinstance(location, dict):
            raise TypeError(f"check_speed: location must be a dict, got {location!r}")
        exe = sym.simple_bind(
            ctx=ctx, grad_req=grad_req, **{k: np.shape(v) for k, v in location.items()}
        )
    for name, value in location.items():
        exe.arg_dict[name][:] = np.asarray(value).astype(exe.arg_dict[name].dtype)
    train = typ == "whole"

    def run() -> None:
        exe.forward(is_train=train)
        if train:
            exe.backward(out_grads=exe.outputs)

    run()
    waitall()
    start = time.time()
    for _ in range(N):
        run()
    waitall()
    return (time.time() - start) / N
