"""Issue #23: MXNet 1.9.1's linear-algebra operators (``mx.sym.linalg``, ``mx.nd.linalg`` and
the flat ``linalg_*`` names) against goldens recorded with real MXNet
(``tests/fixtures/gen_linalg.py``, cases in ``tests/fixtures/linalg_nets.py``).

Per-operator forward/backward goldens of bound symbols (46 configurations) are in the
table-driven suite (``tests/ops/cases_linalg.py``); here: the namespaces, imperative calls
with batch dimensions, a graph mixing every op saved by MXNet (loaded, run forward and
backward, re-saved byte for byte), MXNet's zero gradient at singular matrices, and the
errors for shapes MXNet rejects.
"""

import json
import os
import sys
import zlib

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError

FIX = os.path.join(os.path.dirname(__file__), "fixtures")
LINALG = os.path.join(FIX, "linalg")
sys.path.insert(0, FIX)
import linalg_nets  # noqa: E402

OPS = [
    "det", "extractdiag", "extracttrian", "gelqf", "gemm", "gemm2", "inverse", "makediag",
    "maketrian", "potrf", "potri", "slogdet", "sumlogdiag", "syevd", "syrk", "trmm", "trsm",
]  # fmt: skip
RTOL, ATOL = 1e-4, 1e-5


def _close(got, want, what):
    np.testing.assert_allclose(np.asarray(got), want, rtol=RTOL, atol=ATOL, err_msg=what)


def _npz(name):
    with np.load(os.path.join(LINALG, name)) as z:
        return {k: z[k] for k in z.files}


def _resolve(root, path):
    for part in path.split("."):
        root = getattr(root, part)
    return root


# ------------------------------------------------------------------------- namespaces
def test_every_mxnet_linalg_name_resolves_in_both_namespaces():
    with open(os.path.join(FIX, "mxnet_ops", "operators.json")) as f:
        mxnet = json.load(f)["operators"]
    names = sorted(py.split(".", 1)[1] for py in mxnet.values() if py.startswith("linalg."))
    assert names == OPS
    for name in OPS:
        for root in (mx.sym, mx.nd):
            assert callable(getattr(root.linalg, name)), name
            flat = f"linalg_{name}"
            # MXNet registers every flat alias except linalg_syevd
            assert callable(getattr(root, flat, None)) == (flat in mxnet), flat
    assert sorted(mx.sym.linalg.linalg_names()) == OPS
    assert set(OPS) <= set(dir(mx.nd.linalg))


def test_unknown_name_lists_the_namespace():
    with pytest.raises(AttributeError, match="no operator 'cholesky'.*potrf"):
        mx.sym.linalg.cholesky
    with pytest.raises(AttributeError, match="no operator 'cholesky'"):
        mx.nd.linalg.cholesky


def test_symbol_names_and_outputs_are_mxnet_s():
    A, B = mx.sym.var("A"), mx.sym.var("B")
    assert mx.sym.linalg.det(A).list_outputs() == ["det0_output0"]
    assert mx.sym.linalg.slogdet(A).list_outputs() == ["slogdet0_output0", "slogdet0_output1"]
    assert mx.sym.linalg.gelqf(A).list_outputs() == ["gelqf0_output0", "gelqf0_output1"]
    assert mx.sym.linalg.syevd(A).list_outputs() == ["syevd0_output0", "syevd0_output1"]
    assert mx.sym.linalg.gemm2(A, B).list_outputs() == ["gemm20_output"]
    assert mx.sym.linalg_potrf(A).name == "linalg_potrf0"
    gemm = mx.sym.linalg.gemm(A, B, mx.sym.var("C"))
    assert gemm.list_arguments() == ["A", "B", "C"]
    # det/slogdet have MXNet's two hidden outputs (LU, pivots): 3 and 4 in node_row_ptr
    graph = json.loads(mx.sym.Group([mx.sym.linalg.det(A), mx.sym.linalg.slogdet(B)]).tojson())
    assert graph["node_row_ptr"] == [0, 1, 4, 5, 9]


def test_shape_inference_with_batch_dims():
    A, B = mx.sym.var("A"), mx.sym.var("B")
    infer = lambda s, **kw: s.infer_shape(**kw)[1]  # noqa: E731
    assert infer(mx.sym.linalg.det(A), A=(3, 3)) == [(1,)]
    assert infer(mx.sym.linalg.slogdet(A), A=(2, 5, 3, 3)) == [(2, 5), (2, 5)]
    assert infer(mx.sym.linalg.sumlogdiag(A), A=(4, 2, 2)) == [(4,)]
    assert infer(mx.sym.linalg.gelqf(A), A=(2, 3, 5)) == [(2, 3, 5), (2, 3, 3)]
    assert infer(mx.sym.linalg.syevd(A), A=(2, 4, 4)) == [(2, 4, 4), (2, 4)]
    assert infer(mx.sym.linalg.maketrian(A, offset=-1), A=(2, 6)) == [(2, 4, 4)]
    assert infer(mx.sym.linalg.extracttrian(A, offset=1), A=(5, 5)) == [(10,)]
    assert infer(mx.sym.linalg.gemm2(A, B, axis=0), A=(3, 2, 4), B=(4, 2, 5)) == [(3, 2, 5)]
    # gemm's C takes the shape of op(A) * op(B), as MXNet's shape inference assigns it
    gemm = mx.sym.linalg.gemm(A, B, mx.sym.var("C"), transpose_b=True)
    assert gemm.infer_shape(A=(2, 3), B=(4, 3))[0] == [(2, 3), (4, 3), (2, 4)]
    assert infer(mx.sym.linalg.trsm(A, B, rightside=True), A=(2, 3, 3), B=(2, 4, 3)) == [(2, 4, 3)]
    assert mx.sym.linalg.det(A).infer_type(A=np.float32)[1] == [np.float32]


# ------------------------------------------------------------------ imperative goldens
@pytest.mark.parametrize("cid", sorted(linalg_nets.ND_CASES))
def test_nd_matches_mxnet(cid):
    path, kinds, kwargs = linalg_nets.ND_CASES[cid]
    rec = _npz("nd.npz")
    ins = [mx.nd.array(rec[f"in:{cid}:{i}"]) for i in range(len(kinds))]
    outs = _resolve(mx.nd, path)(*ins, **kwargs)
    outs = outs if isinstance(outs, list) else [outs]
    want = [rec[k] for k in sorted(k for k in rec if k.startswith(f"out:{cid}:"))]
    assert len(outs) == len(want)
    for j, (o, w) in enumerate(zip(outs, want)):
        assert o.shape == w.shape, f"{cid} output {j}: {o.shape} vs MXNet {w.shape}"
        _close(o.asnumpy(), w, f"{cid} output {j}")
    flat = f"linalg_{path.split('.')[1]}"
    if hasattr(mx.nd, flat):  # the flat alias is the same operator
        again = getattr(mx.nd, flat)(*ins, **kwargs)
        again = again if isinstance(again, list) else [again]
        for o, a in zip(outs, again):
            np.testing.assert_array_equal(a.asnumpy(), o.asnumpy())


def test_inputs_of_the_nd_fixture_are_the_shared_generator_s():
    rec = _npz("nd.npz")
    for cid in ("potrf", "syevd", "trsm"):
        _, kinds, _ = linalg_nets.ND_CASES[cid]
        rng = np.random.RandomState(zlib.crc32(cid.encode()))
        for i, (kind, shape) in enumerate(kinds):
            np.testing.assert_array_equal(
                linalg_nets.make_input(kind, shape, rng), rec[f"in:{cid}:{i}"]
            )


def test_factorisations_reconstruct_their_input():
    rng = np.random.RandomState(5)
    spd = linalg_nets.make_input("spd", (2, 4, 4), rng)
    L = mx.nd.linalg.potrf(mx.nd.array(spd)).asnumpy()
    _close(L @ np.swapaxes(L, -1, -2), spd, "potrf: L L^T")
    U = mx.nd.linalg.potrf(mx.nd.array(spd), lower=False).asnumpy()
    _close(np.swapaxes(U, -1, -2) @ U, spd, "potrf upper: U^T U")
    _close(
        mx.nd.linalg.potri(mx.nd.array(L)).asnumpy() @ spd,
        np.broadcast_to(np.eye(4), spd.shape),
        "potri",
    )
    A = rng.standard_normal((2, 3, 5)).astype(np.float32)
    Q, Lq = (o.asnumpy() for o in mx.nd.linalg.gelqf(mx.nd.array(A)))
    _close(Lq @ Q, A, "gelqf: L Q")
    _close(Q @ np.swapaxes(Q, -1, -2), np.broadcast_to(np.eye(3), (2, 3, 3)), "gelqf: Q Q^T")
    S = linalg_nets.make_input("separated", (3, 3), rng)
    Ue, lam = (o.asnumpy() for o in mx.nd.linalg.syevd(mx.nd.array(S)))
    _close(Ue @ S, lam[:, None] * Ue, "syevd: U A = diag(lam) U")
    lead = np.take_along_axis(Ue, np.abs(Ue).argmax(-1)[:, None], -1)
    assert (lead > 0).all(), "syevd: each eigenvector's largest entry is positive (MXNet's signs)"


@pytest.mark.parametrize(
    "name,kind,kwargs",
    [("potrf", "spd", {}), ("potrf", "spd", {"lower": False}), ("syevd", "separated", {})],
)
def test_symmetric_gradient_matches_differences_along_symmetric_directions(name, kind, kwargs):
    # potrf/syevd read one triangle but give MXNet's symmetric gradient: it is the slope
    # along symmetric perturbations (the only ones that keep the input symmetric)
    rng = np.random.RandomState(11)
    A = linalg_nets.make_input(kind, (2, 3, 3), rng)
    fn = getattr(mx.sym.linalg, name)(mx.sym.var("A"), **kwargs)
    grad = mx.nd.zeros(A.shape)
    exe = fn.bind(mx.cpu(), args={"A": mx.nd.array(A)}, args_grad={"A": grad})
    outs = exe.forward(is_train=True)
    heads = [rng.standard_normal(o.shape) for o in outs]
    exe.backward([mx.nd.array(h) for h in heads])
    g = grad.asnumpy().astype(np.float64)
    np.testing.assert_allclose(g, np.swapaxes(g, -1, -2), atol=1e-5, err_msg="not symmetric")

    def loss(x):
        res = getattr(mx.nd.linalg, name)(mx.nd.array(x.astype(np.float32)), **kwargs)
        res = res if isinstance(res, list) else [res]
        return sum(float((o.asnumpy().astype(np.float64) * h).sum()) for o, h in zip(res, heads))

    for _ in range(3):
        d = rng.standard_normal(A.shape)
        d = d + np.swapaxes(d, -1, -2)
        eps = 1e-2
        numeric = (loss(A + eps * d) - loss(A - eps * d)) / (2 * eps)
        assert abs(numeric - (g * d).sum()) <= 2e-2 * max(1.0, abs(numeric)), (
            numeric,
            (g * d).sum(),
        )


# --------------------------------------------------------------- graph saved by MXNet
def test_mxnet_graph_loads_runs_forward_backward_and_resaves():
    with open(os.path.join(LINALG, "gp-symbol.json")) as f:
        text = f.read()
    io = _npz("gp-io.npz")
    sym = mx.sym.load_json(text)
    assert sym.tojson() == text, "load_json(MXNet's JSON).tojson() differs from MXNet's text"
    assert linalg_nets.gp_net(mx).tojson() == text, "the same graph built in mxmod differs"
    args = {k[4:]: v for k, v in io.items() if k.startswith("arg:")}
    grads = {n: mx.nd.zeros(v.shape) for n, v in args.items()}
    exe = sym.bind(mx.cpu(), args={n: mx.nd.array(v) for n, v in args.items()}, args_grad=grads)
    outs = exe.forward(is_train=True)
    n_out = len([k for k in io if k.startswith("out:")])
    assert len(outs) == n_out
    for i, o in enumerate(outs):
        _close(o.asnumpy(), io[f"out:{i}"], f"gp output {i} ({sym.list_outputs()[i]})")
    exe.backward([mx.nd.array(io[f"ograd:{i}"]) for i in range(n_out)])
    for n, g in grads.items():
        _close(g.asnumpy(), io[f"grad:{n}"], f"gp gradient of {n}")


def test_singular_matrix_gets_mxnet_s_zero_gradient():
    rec = _npz("singular.npz")
    A = rec["A"]
    for name in ("det", "slogdet"):
        sym = getattr(mx.sym.linalg, name)(mx.sym.var("A"))
        grad = mx.nd.zeros(A.shape)
        exe = sym.bind(mx.cpu(), args={"A": mx.nd.array(A)}, args_grad={"A": grad})
        outs = exe.forward(is_train=True)
        for j, o in enumerate(outs):
            _close(o.asnumpy(), rec[f"{name}:out:{j}"], f"{name} output {j}")
        exe.backward([mx.nd.ones(o.shape) for o in outs])
        _close(grad.asnumpy(), rec[f"{name}:grad"], f"{name} gradient")
        assert not grad.asnumpy()[0].any(), f"{name}: the singular matrix gets a zero gradient"


# ------------------------------------------------------------------------------ errors
@pytest.mark.parametrize("cid", sorted(linalg_nets.ERROR_CASES))
def test_bad_shapes_are_rejected_naming_op_and_shape(cid):
    with open(os.path.join(LINALG, "errors.json")) as f:
        verdict = json.load(f)[cid]
    assert verdict["rejected"], f"MXNet accepts {cid}: {verdict}"
    name, shapes, kwargs, names_what = linalg_nets.ERROR_CASES[cid]
    slots = ["A", "B"][: len(shapes)]
    sym = getattr(mx.sym.linalg, name)(*[mx.sym.var(n) for n in slots], **kwargs)
    with pytest.raises(MXNetError) as sym_err:
        sym.infer_shape(**dict(zip(slots, shapes)))
    with pytest.raises(MXNetError) as nd_err:
        getattr(mx.nd.linalg, name)(*[mx.nd.ones(s) for s in shapes], **kwargs)
    for err in (sym_err, nd_err):
        msg = str(err.value)
        assert f"linalg.{name}" in msg and str(tuple(shapes[0])) in msg, msg
        assert names_what in msg, msg


def test_non_float_input_is_rejected():
    with pytest.raises(MXNetError, match="linalg.inverse: input type int32 .*float32 or float64"):
        mx.sym.linalg.inverse(mx.sym.var("A")).infer_type(A=np.int32)
    with pytest.raises(MXNetError, match="linalg.potrf: input type float16 .*float32 or float64"):
        mx.nd.linalg.potrf(mx.nd.ones((2, 2), dtype="float16"))
