"""Helpers for the table-driven operator suite (`test_op_table.py`).

Each check of a case is run inside `Report.check`, which records a failure (with the
innermost mxmod source line for exceptions) instead of stopping, so one test run names
every broken check of a case. Only a missing operator skips a case.
"""

from __future__ import annotations

import contextlib
import json
import traceback
import zlib
from pathlib import Path
from typing import Any, Optional

import jax
import numpy as np
import pytest

import mxmod as mx

from .cases import FD_SKIP_EXTRA, HEAD_GRAD_IGNORED, Case, resolve_op

FIXTURES = Path(__file__).resolve().parent.parent / 'fixtures' / 'ops'


class Golden:
    """One MXNet 1.9.1 golden (`tests/fixtures/ops/<id>.npz`, see the fixtures README)."""

    def __init__(self, case_id: str):
        path = FIXTURES / f'{case_id}.npz'
        if not path.exists():
            raise FileNotFoundError(
                f'no golden {path}; regenerate with '
                'tests/fixtures/gen_op_goldens.py (see its README)'
            )
        with np.load(path) as z:
            data = {k: z[k] for k in z.files}

        def group(prefix: str) -> dict:
            return {k[len(prefix) :]: v for k, v in data.items() if k.startswith(prefix)}

        self.args = group('arg:')
        self.aux = group('aux:')
        self.grads = group('grad:')
        self.auxout = group('auxout:')
        outs, ograds = group('out:'), group('ograd:')
        self.outs = [outs[str(i)] for i in range(len(outs))]
        self.ograds = [ograds[str(i)] for i in range(len(ograds))]
        self.json = str(data['json'])
        self.arg_names = [str(s) for s in data['arg_names']]
        self.aux_names = [str(s) for s in data['aux_names']]

    def json_ops(self) -> list[str]:
        """Operator names of the graph's nodes, in node order, without duplicates."""
        nodes = json.loads(self.json)['nodes']
        return list(dict.fromkeys(n['op'] for n in nodes if n['op'] != 'null'))


def skip_if_missing(case: Case, golden: Golden) -> None:
    """Skips the test when mxmod lacks an operator the case needs (and only then)."""
    missing = [] if case.is_sugar or resolve_op(case, mx) is not None else [case.op]
    missing += [op for op in golden.json_ops() if mx.ops.OPS.find(op) is None and op not in missing]
    if missing:
        pytest.skip(f"op {', '.join(missing)} not implemented yet")


def case_ops(case: Case, golden: Golden) -> set[str]:
    """The case's mx.sym function name plus every canonical op in its graph."""
    return set(golden.json_ops()) | ({case.op} if not case.is_sugar else set())


# ----------------------------------------------------------------- failure collection
class GateFailed(Exception):
    """A check whose failure makes the remaining checks meaningless."""


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    inner = [f for f in frames if '/mxmod/' in f.filename.replace('\\', '/')]
    f = (inner or frames or [None])[-1]
    if f is None:
        return ''
    path = f.filename.split('/work/main/')[-1]
    return f' (at {path}:{f.lineno} in {f.name})'


class Report:
    """Collects the failures of one case's checks."""

    def __init__(self, case_id: str):
        self.case_id = case_id
        self.failures: list[str] = []

    @contextlib.contextmanager
    def check(self, name: str, gate: bool = False):
        """Runs the block; a failure is recorded under `name` (and stops the case if `gate`)."""
        try:
            yield
        except pytest.skip.Exception:
            raise
        except AssertionError as e:
            self._fail(name, f'{e}', gate)
        except Exception as e:  # noqa: BLE001  every crash is a finding
            self._fail(name, f'{type(e).__name__}: {e}{_where(e)}', gate)

    def _fail(self, name: str, msg: str, gate: bool) -> None:
        self.failures.append(f'[{name}] {msg}')
        if gate:
            raise GateFailed

    def finish(self) -> None:
        if self.failures:
            pytest.fail(
                f'{self.case_id}: {len(self.failures)} check(s) failed:\n  '
                + '\n  '.join(self.failures),
                pytrace=False,
            )


# ----------------------------------------------------------------- comparisons
def expected_dtype(d: np.dtype) -> np.dtype:
    """What mxmod can produce for MXNet dtype `d` (float64 -> float32 while x64 is off)."""
    return np.dtype(jax.dtypes.canonicalize_dtype(d))


def assert_close(
    actual: Any,
    expected: Any,
    what: str,
    rtol: float = 1e-4,
    atol: float = 1e-4,
    check_dtype: bool = True,
) -> None:
    """`actual` ~= `expected`; atol is scaled by max(1, max|expected|); ints compare exactly."""
    a, e = np.asarray(actual), np.asarray(expected)
    if a.shape != e.shape:
        raise AssertionError(f'{what}: shape {a.shape}, expected {e.shape}')
    if check_dtype and a.dtype != expected_dtype(e.dtype):
        raise AssertionError(f'{what}: dtype {a.dtype}, expected {e.dtype}')
    if a.size == 0:
        return
    a64, e64 = a.astype(np.float64), e.astype(np.float64)
    if 'float16' in (a.dtype.name, e.dtype.name):
        rtol, atol = max(rtol, 2e-3), max(atol, 2e-3)
    exact = a.dtype.kind in 'iub' and e.dtype.kind in 'iub'
    scale = max(1.0, float(np.nanmax(np.abs(e64)))) if np.isfinite(e64).any() else 1.0
    tol = 0.0 if exact else atol * scale + rtol * np.abs(e64)
    err = np.abs(a64 - e64)
    bad = ~(err <= tol) & ~(np.isnan(a64) & np.isnan(e64))
    if bad.any():
        i = np.unravel_index(
            int(np.argmax(np.where(bad, np.nan_to_num(err, nan=np.inf), -1))), a.shape
        )
        raise AssertionError(
            f'{what}: {int(bad.sum())}/{a.size} elements differ; worst at {tuple(map(int, i))}: '
            f'got {a64[i]:.6g}, expected {e64[i]:.6g} (max abs err {np.nanmax(err):.3g}, '
            f'atol {atol * scale:.3g}, rtol {rtol})'
        )


# ----------------------------------------------------------------- running
def on_cpu(x: np.ndarray) -> jax.Array:
    """A committed array on mx.cpu(), as the executor holds its arrays (same jit cache key)."""
    return jax.device_put(np.asarray(x), mx.cpu().jax_device)


def bind_golden(sym: Any, golden: Golden) -> Any:
    """`sym.bind` with the golden's inputs; grad_req 'write' exactly where MXNet had one."""
    ctx = mx.cpu()
    req = {n: 'write' if n in golden.grads else 'null' for n in golden.arg_names}
    return sym.bind(
        ctx,
        args={n: mx.nd.array(v, ctx=ctx) for n, v in golden.args.items()},
        args_grad={n: mx.nd.zeros(golden.args[n].shape, ctx=ctx) for n in golden.grads},
        grad_req=req,
        aux_states={n: mx.nd.array(v, ctx=ctx) for n, v in golden.aux.items()},
    )


def check_dropout(case: Case, golden: Golden, out: np.ndarray, grad: Optional[np.ndarray]) -> None:
    """Distribution-free properties of a training Dropout step (masks differ from MXNet's)."""
    p = float(case.kwargs.get('p', 0.5))
    x = golden.args['data']
    kept = out != 0
    assert 0 < kept.mean() < 1, f'mask keeps {kept.mean():.2f} of the elements (p={p})'
    assert_close(out[kept], x[kept] / (1 - p), 'kept outputs vs data/(1-p)', rtol=1e-5)
    for ax in case.kwargs.get('axes', ()):
        same = np.all(kept == np.take(kept, [0], axis=ax), axis=ax)
        assert same.all(), f'mask varies along broadcast axis {ax}'
    if grad is not None:
        want = np.where(kept, golden.ograds[0] / (1 - p), 0.0).astype(np.float32)
        assert_close(grad, want, 'grad vs ograd/(1-p) where kept, 0 elsewhere', rtol=1e-5)


# ----------------------------------------------------------------- finite differences
# Ops whose forward is piecewise constant: the gradient is zero by definition and central
# differences are zero or unbounded (at steps); the golden check covers their gradients.
NON_DIFFERENTIABLE = frozenset(
    {
        '_greater',
        '_greater_equal',
        '_lesser',
        '_lesser_equal',
        '_equal',
        '_not_equal',
        '_greater_scalar',
        '_greater_equal_scalar',
        '_lesser_scalar',
        '_lesser_equal_scalar',
        '_equal_scalar',
        '_not_equal_scalar',
        'broadcast_equal',
        'broadcast_not_equal',
        'broadcast_greater',
        'broadcast_greater_equal',
        'broadcast_lesser',
        'broadcast_lesser_equal',
        'broadcast_logical_and',
        'broadcast_logical_or',
        'broadcast_logical_xor',
        'floor',
        'ceil',
        'round',
        'rint',
        'fix',
        'trunc',
        'sign',
        'argmax',
        'argmin',
        'argsort',
        'argmax_channel',
        'one_hot',
    }
)
# Cases whose gradient cannot be checked by float32 central differences.
FD_SKIP_CASES = {
    'cast_float16': 'float16 output rounding (~1e-3) swamps a 1e-3 step',
    # MXNet 1.9.1's instance-mode SoftmaxActivation normalises the last axis of >2-D data
    # but its backward works over axis 1 (checked against the golden); mxmod copies that.
    'softmaxact_instance': "MXNet's >2-D instance-mode backward is not its forward's derivative",
    # lhs % rhs jumps where lhs/rhs crosses an integer; with rhs ~ N(0, 1), lhs/rhs is often
    # large and a 1e-3 step crosses jumps (d/drhs = -floor(lhs/rhs) is large too).
    'broadcast_mod': 'discontinuous: steps cross the jumps of lhs % rhs',
    # MXNet 1.9.1's selu backward for x <= 0 is lambda * (y + alpha), not the derivative
    # y + lambda * alpha (checked against the golden); mxmod copies it.
    'leaky_selu': "MXNet's selu gradient is not its forward's derivative for x <= 0",
    # Backward after forward(is_train=False): MXNet applies the batch-statistics gradient
    # formula at the moving statistics, which is not the inference forward's derivative
    # (the golden check covers the values).
    'bn_4d_infer': "MXNet's inference-mode BatchNorm gradient is not the forward's derivative",
    'bn_2d_infer_fix_gamma': "MXNet's inference-mode BatchNorm gradient is not the forward's "
    "derivative",
}
# Ops whose MXNet backward uses only the head gradient of output 0 (BatchNorm's mean/var
# outputs with output_mean_var=True are not differentiated, see MXNet's BatchNormGrad).
FD_FIRST_OUTPUT_ONLY = frozenset({'BatchNorm', '_contrib_SyncBatchNorm'})


def fd_skip_reason(case: Case, golden: Golden) -> Optional[str]:
    ops = case_ops(case, golden)
    if not golden.grads:
        return 'no gradients (check_grad=False or only integer inputs)'
    if case.random:
        return 'random op'
    if ops & HEAD_GRAD_IGNORED:
        return f'head gradient ignored by {sorted(ops & HEAD_GRAD_IGNORED)}'
    if ops & NON_DIFFERENTIABLE:
        return f'piecewise-constant op {sorted(ops & NON_DIFFERENTIABLE)}'
    if 'BatchNorm' in ops and not case.is_train and not case.kwargs.get('use_global_stats'):
        # MXNet's backward after forward(is_train=False) is the batch-statistics formula at
        # the moving statistics (ops/norm.py reproduces it), not the affine forward's slope
        return "MXNet's inference-mode BatchNorm gradient is not its forward's derivative"
    return FD_SKIP_CASES.get(case.id) or FD_SKIP_EXTRA.get(case.id)


def check_finite_differences(
    case: Case, golden: Golden, forward: Any, grads: dict[str, np.ndarray]
) -> None:
    """<grad, d> vs f(x + d/2) - f(x - d/2), f = sum(out * ograd), d = the float32 step 2 eps v.

    `forward(args) -> outputs` runs the graph at is_train=case.is_train. Three directions
    v (random plus a component along grad) must all agree. The outputs are float32: their
    rounding (a few ulps, independent across elements) puts noise of about
    6e-8 * ||out * ograd||_2 / eps on the difference quotient; the tolerance allows ten
    times that (over the table, 99% of quotients are within 5 times) plus 0.5% for
    truncation. A step of 1e-3 may cross a kink (relu, max, abs...); a direction that fails
    is retried with a step of 1e-4. Catches a gradient scaled by 1.01 in nearly every case.
    """
    n_out = 1 if case_ops(case, golden) & FD_FIRST_OUTPUT_ONLY else len(golden.ograds)
    ograds = [g.astype(np.float64) for g in golden.ograds[:n_out]]
    base = {n: np.asarray(v) for n, v in golden.args.items()}

    def f(args: dict) -> tuple[float, float]:
        outs = forward({n: on_cpu(v) for n, v in args.items()})[:n_out]
        terms = [
            np.asarray(o, np.float64) * g
            for o, g in zip(outs, ograds)
            if np.asarray(o).dtype.kind == 'f'
        ]
        return (
            sum(float(t.sum()) for t in terms),
            float(np.sqrt(sum(float(np.square(t).sum()) for t in terms))),
        )

    _, mag = f(base)
    rng = np.random.RandomState(zlib.crc32(case.id.encode()))
    g64 = {n: grads[n].astype(np.float64) for n in sorted(grads)}
    size = sum(g.size for g in g64.values())
    gnorm = float(np.sqrt(sum(float(np.square(g).sum()) for g in g64.values())))
    along = np.sqrt(size) / gnorm if gnorm > 0 else 0.0
    for direction in range(3):
        # random plus a component along grad, so that <grad, v> is never accidentally ~0
        v = {n: rng.standard_normal(g.shape) + along * g for n, g in g64.items()}
        tries = []
        for eps in (1e-3, 1e-4):
            plus = {n: (base[n] + eps * v[n]).astype(np.float32) for n in v}
            minus = {n: (base[n] - eps * v[n]).astype(np.float32) for n in v}
            analytic = sum(
                float(np.sum(g64[n] * (plus[n].astype(np.float64) - minus[n]))) for n in v
            ) / (2 * eps)
            numeric = (f({**base, **plus})[0] - f({**base, **minus})[0]) / (2 * eps)
            tol = 5e-3 * max(abs(analytic), abs(numeric)) + 6e-7 * mag / eps + 1e-7
            if abs(analytic - numeric) <= tol:
                break
            tries.append(
                f'eps={eps:g}: <grad,v>={analytic:.6g} vs fd={numeric:.6g} (tol {tol:.2g})'
            )
        else:
            raise AssertionError(
                f"gradient of {sorted(grads)} disagrees with finite "
                f"differences along random direction {direction}: " + '; '.join(tries)
            )
