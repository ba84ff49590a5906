"""Issue #16 contrib operators beyond the op table: the ``contrib`` namespaces, graphs MXNet
wrote with contrib operators (load, run, re-save byte for byte), SyncBatchNorm's
cross-device ``psum`` against MXNet's one-device result on the whole batch,
``boolean_mask`` (eager only) and the user errors of the new operators.

Goldens: ``tests/fixtures/contrib/`` (``gen_contrib_fixtures.py``) and the op-table goldens
of ``cases_contrib.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import mxmod as mx
from mxmod.base import MXNetError
from mxmod.ops import LowerCtx, OpDef, get_op, register
from mxmod.ops._attrs import Param, p_float

from ._harness import Golden, assert_close
from .cases import CONTRIB_CASES, build_symbol

FIX = Path(__file__).resolve().parent.parent / 'fixtures' / 'contrib'


# ------------------------------------------------------------------- namespaces
def test_every_contrib_op_is_in_the_namespaces():
    names = [n[len('_contrib_') :] for n in mx.ops.list_ops() if n.startswith('_contrib_')]
    assert {
        'BilinearResize2D',
        'AdaptiveAvgPooling2D',
        'ctc_loss',
        'CTCLoss',
        'SyncBatchNorm',
        'interleaved_matmul_selfatt_qk',
        'boolean_mask',
        'quadratic',
    } <= set(names)
    for n in names:
        assert callable(getattr(mx.sym.contrib, n)) and callable(getattr(mx.nd.contrib, n))
        assert n in dir(mx.sym.contrib) and n in dir(mx.nd.contrib)
    assert mx.contrib.symbol is mx.sym.contrib and mx.contrib.sym is mx.sym.contrib
    assert mx.contrib.ndarray is mx.nd.contrib and mx.contrib.nd is mx.nd.contrib
    assert mx.symbol.contrib is mx.sym.contrib and mx.ndarray.contrib is mx.nd.contrib


def test_new_contrib_registration_appears_without_namespace_code():
    op = OpDef(
        name='_contrib_TestOnlyScale',
        params={'k': Param(p_float, 2.0)},
        infer_shape=lambda a, s: (s, [s[0]]),
        lower=lambda a, ins, aux, ctx: [ins[0] * a.k],
    )
    register(op)
    try:
        s = mx.sym.contrib.TestOnlyScale(mx.sym.var('x'), k=3.0)
        assert s.name == 'testonlyscale0'
        assert json.loads(s.tojson())['nodes'][1]['op'] == '_contrib_TestOnlyScale'
        y = mx.nd.contrib.TestOnlyScale(mx.nd.array([1.0, 2.0]), k=3.0)
        np.testing.assert_allclose(y.asnumpy(), [3.0, 6.0])
    finally:
        mx.ops.OPS._items.pop('_contrib_TestOnlyScale')
        mx.sym.contrib.__dict__.pop('TestOnlyScale', None)
        mx.nd.contrib.__dict__.pop('TestOnlyScale', None)


def test_contrib_names_and_json_op_names_match_mxnet():
    with mx.name.NameManager():
        d, lab = mx.sym.var('d'), mx.sym.var('l')
        a = mx.sym.contrib.BilinearResize2D(d, height=4, width=4)
        b = mx.sym.contrib.ctc_loss(d, lab)
        c = mx.sym.contrib.SyncBatchNorm(d, key='k')
    # names and outputs as MXNet 1.9.1 prints them
    assert a.name == 'bilinearresize2d0' and b.name == 'ctc_loss0'
    assert b.list_outputs() == ['ctc_loss0_output0']
    assert c.list_arguments() == ['d', 'syncbatchnorm0_gamma', 'syncbatchnorm0_beta']
    ops = [json.loads(s.tojson())['nodes'][-1]['op'] for s in (a, b, c)]
    assert ops == ['_contrib_BilinearResize2D', 'CTCLoss', '_contrib_SyncBatchNorm']


def test_unknown_contrib_name_is_a_clear_attribute_error():
    with pytest.raises(AttributeError, match="no operator 'NoSuchOp'.*'_contrib_NoSuchOp'"):
        mx.sym.contrib.NoSuchOp
    with pytest.raises(AttributeError, match="no operator 'NoSuchOp'"):
        mx.nd.contrib.NoSuchOp


@pytest.mark.parametrize(
    'case_id',
    ['bilinear_resize_size', 'adaptive_avg_pool', 'selfatt_qk', 'ctc_loss_first', 'quadratic'],
)
def test_nd_contrib_matches_the_golden(case_id):
    case = next(c for c in CONTRIB_CASES if c.id == case_id)
    g = Golden(case_id)
    fn = mx.nd
    for part in case.op.split('.'):
        fn = getattr(fn, part)
    got = fn(*[mx.nd.array(g.args[n]) for n in case.args], **case.kwargs)
    assert_close(got.asnumpy(), g.outs[0], f'mx.nd.{case.op}')


def test_contrib_case_json_is_byte_identical_to_mxnet():
    for case in CONTRIB_CASES:
        g = Golden(case.id)
        assert build_symbol(case, mx).tojson() == g.json, case.id
        assert mx.sym.load_json(g.json).tojson() == g.json, case.id


# --------------------------------------------------------- graphs MXNet wrote
def _run_mxnet_graph(name: str):
    text = (FIX / f'{name}-symbol.json').read_text()
    missing = sorted(
        {
            n['op']
            for n in json.loads(text)['nodes']
            if n['op'] != 'null' and mx.ops.OPS.find(n['op']) is None
        }
    )
    if missing:
        pytest.skip(f"operators not implemented yet: {', '.join(missing)}")
    sym = mx.sym.load(str(FIX / f'{name}-symbol.json'))
    assert sym.tojson() == text, 'load + tojson differs from the JSON MXNet wrote'
    with np.load(FIX / f'{name}-io.npz') as z:
        io = {k: z[k] for k in z.files}
    exe = sym.bind(
        mx.cpu(),
        args={k[4:]: mx.nd.array(v) for k, v in io.items() if k.startswith('arg:')},
        aux_states={k[4:]: mx.nd.array(v) for k, v in io.items() if k.startswith('aux:')},
        grad_req='null',
    )
    outs = exe.forward(is_train=False)
    assert len(outs) == len([k for k in io if k.startswith('out:')])
    for i, o in enumerate(outs):
        assert_close(o.asnumpy(), io[f'out:{i}'], f'{name} output {i}')
    return sym, text


def test_spatial_sequence_graph_from_mxnet_loads_runs_and_resaves(tmp_path):
    sym, text = _run_mxnet_graph('spatial_seq')
    sym.save(str(tmp_path / 'again-symbol.json'))
    assert (tmp_path / 'again-symbol.json').read_text() == text


def test_detection_graph_from_mxnet_loads_runs_and_resaves(tmp_path):
    sym, text = _run_mxnet_graph('detection')
    sym.save(str(tmp_path / 'again-symbol.json'))
    assert (tmp_path / 'again-symbol.json').read_text() == text


# --------------------------------------------------------------- SyncBatchNorm
def _sync_bn(axis_name):
    op = get_op('_contrib_SyncBatchNorm')
    attrs = op.parse({'key': 'sbn8', 'fix_gamma': 'False', 'momentum': '0.8'})

    def run(x, gamma, beta, mm, mv):
        ctx = LowerCtx(is_train=True, node_name='bn', axis_name=axis_name)
        outs, new_aux = op.lower(attrs, [x, gamma, beta], [mm, mv], ctx)
        return outs[0], new_aux[0], new_aux[1]

    return run


@pytest.mark.parametrize('devices', [1, 8])
def test_sync_bn_psum_over_devices_matches_mxnet_on_the_whole_batch(devices):
    with np.load(FIX / 'sync_bn_8.npz') as z:
        g = {k: z[k] for k in z.files}
    params = [jnp.asarray(g[k]) for k in ('gamma', 'beta', 'moving_mean', 'moving_var')]
    data = jnp.asarray(g['data'])
    if devices == 1:
        fwd = _sync_bn(None)
    else:
        mesh = jax.make_mesh((devices,), ('dp',))
        # each device sees 1 of the 8 samples; the statistics are psum'd over 'dp'
        fwd = jax.shard_map(
            _sync_bn('dp'),
            mesh=mesh,
            in_specs=(P('dp'), P(), P(), P(), P()),
            out_specs=(P('dp'), P(), P()),
        )
        data = jax.device_put(data, NamedSharding(mesh, P('dp')))
        params = [jax.device_put(p, NamedSharding(mesh, P())) for p in params]

    def loss(x, gamma, beta):
        y, _, _ = fwd(x, gamma, beta, *params[2:])
        return jnp.sum(y * g['ograd'])

    out, mm, mv = jax.jit(fwd)(data, *params)
    assert_close(out, g['out'], 'output', rtol=1e-5, atol=1e-5)
    assert_close(mm, g['moving_mean_after'], 'moving_mean', rtol=1e-5, atol=1e-6)
    assert_close(mv, g['moving_var_after'], 'moving_var', rtol=1e-5, atol=1e-6)
    grads = jax.jit(jax.grad(loss, argnums=(0, 1, 2)))(data, *params[:2])
    for got, name in zip(grads, ('data', 'bn_gamma', 'bn_beta')):
        assert_close(got, g[f'grad_{name}'], f'gradient of {name}', rtol=1e-4, atol=1e-5)


def test_sync_bn_gradient_taken_inside_shard_map_matches_mxnet():
    """As a data-parallel step does it: per-device vjp of the local loss, parameter
    gradients psum'd (``check_vma=False``, as mxmod's mesh placement runs)."""
    with np.load(FIX / 'sync_bn_8.npz') as z:
        g = {k: z[k] for k in z.files}
    mesh = jax.make_mesh((8,), ('dp',))
    run = _sync_bn('dp')

    def per_device(x, ograd, gamma, beta, mm, mv):
        y, vjp = jax.vjp(lambda x_, g_, b_: run(x_, g_, b_, mm, mv)[0], x, gamma, beta)
        dx, dg, db = vjp(ograd)
        return dx, jax.lax.psum(dg, 'dp'), jax.lax.psum(db, 'dp')

    step = jax.jit(
        jax.shard_map(
            per_device,
            mesh=mesh,
            check_vma=False,
            in_specs=(P('dp'), P('dp'), P(), P(), P(), P()),
            out_specs=(P('dp'), P(), P()),
        )
    )
    split, rep = NamedSharding(mesh, P('dp')), NamedSharding(mesh, P())
    dx, dg, db = step(
        jax.device_put(g['data'], split),
        jax.device_put(g['ograd'], split),
        *[jax.device_put(g[k], rep) for k in ('gamma', 'beta', 'moving_mean', 'moving_var')],
    )
    assert_close(dx, g['grad_data'], 'gradient of data', rtol=1e-4, atol=1e-5)
    assert_close(dg, g['grad_bn_gamma'], 'gradient of gamma', rtol=1e-4, atol=1e-5)
    assert_close(db, g['grad_bn_beta'], 'gradient of beta', rtol=1e-4, atol=1e-5)


def test_sync_bn_local_statistics_differ_from_the_global_ones():
    """Per-device statistics (no axis name) are not the whole batch's: the psum matters."""
    with np.load(FIX / 'sync_bn_8.npz') as z:
        g = {k: z[k] for k in z.files}
    mesh = jax.make_mesh((8,), ('dp',))
    local = jax.shard_map(
        _sync_bn(None),
        mesh=mesh,
        in_specs=(P('dp'), P(), P(), P(), P()),
        out_specs=(P('dp'), P('dp'), P('dp')),
    )
    rep = NamedSharding(mesh, P())
    out = local(
        jax.device_put(jnp.asarray(g['data']), NamedSharding(mesh, P('dp'))),
        *[
            jax.device_put(jnp.asarray(g[k]), rep)
            for k in ('gamma', 'beta', 'moving_mean', 'moving_var')
        ],
    )[0]
    assert np.abs(np.asarray(out) - g['out']).max() > 0.1


def test_sync_bn_requires_key():
    with pytest.raises(MXNetError, match="required attribute 'key' is missing"):
        mx.sym.contrib.SyncBatchNorm(mx.sym.var('d'))


# ---------------------------------------------------------------- boolean_mask
@pytest.mark.parametrize('key', ['rows', 'rows3d', 'none'])
def test_boolean_mask_eager_matches_mxnet(key):
    with np.load(FIX / 'boolean_mask.npz') as z:
        data, index, want = z[f'{key}:data'], z[f'{key}:index'], z[f'{key}:out']
    got = mx.nd.contrib.boolean_mask(mx.nd.array(data), mx.nd.array(index))
    assert got.shape == want.shape
    assert_close(got.asnumpy(), want, 'boolean_mask')


def test_boolean_mask_errors():
    x, m = mx.nd.ones((4, 3)), mx.nd.array([1, 0, 1, 0])
    with pytest.raises(NotImplementedError, match='axis=1: MXNet 1.9.1 supports only axis=0'):
        mx.nd.contrib.boolean_mask(x, mx.nd.array([1, 0, 1]), axis=1)
    with pytest.raises(ValueError, match=r'index \(3,\) must be 1-D with data.shape\[0\] = 4'):
        mx.nd.contrib.boolean_mask(x, mx.nd.array([1, 0, 1]))
    with pytest.raises(TypeError, match='index must be an NDArray'):
        mx.nd.contrib.boolean_mask(x, [1, 0, 1, 0])
    # the jit-compiled path (mx.nd.<op> and bound symbols) names the eager alternative
    with pytest.raises(
        MXNetError, match='output shape depends on the mask values.*mx.nd.contrib.boolean_mask'
    ):
        mx.nd._contrib_boolean_mask(x, m)
    sym = mx.sym.contrib.boolean_mask(mx.sym.var('d'), mx.sym.var('m'))
    # as in MXNet: the output shape stays unknown, so simple_bind fails (bind runs it:
    # tests/test_issue23_graph.py)
    assert sym.infer_shape_partial(d=(4, 3), m=(4,))[1] == [()]
    with pytest.raises(MXNetError, match='simple_bind: the output shapes of'):
        sym.simple_bind(mx.cpu(), d=(4, 3), m=(4,))


# ------------------------------------------------------------------ user errors
def _sym_error(fn, match, **shapes):
    with pytest.raises(MXNetError, match=match):
        fn().infer_shape(**shapes)


V = mx.sym.var


@pytest.mark.parametrize(
    'build, shapes, match',
    [
        (
            lambda: mx.sym.contrib.BilinearResize2D(V('d'), mode='odd_scale'),
            {'d': (1, 1, 4, 4)},
            "mode='odd_scale' needs scale_height",
        ),
        (
            lambda: mx.sym.contrib.BilinearResize2D(V('d'), height=2, width=2),
            {'d': (1, 4, 4)},
            r'data \(1, 4, 4\) must be 4-D',
        ),
        (
            lambda: mx.sym.contrib.AdaptiveAvgPooling2D(V('d'), output_size=(1, 2, 3)),
            {'d': (1, 1, 4, 4)},
            r'output_size \(1, 2, 3\) must be an int or an \(height, width\)',
        ),
        (
            lambda: mx.sym.GridGenerator(V('d'), transform_type='affine'),
            {'d': (2, 6)},
            r'needs target_shape=\(height, width\)',
        ),
        (
            lambda: mx.sym.GridGenerator(V('d'), transform_type='affine', target_shape=(2, 2)),
            {'d': (2, 4)},
            r'must be \(batch, 6\)',
        ),
        (
            lambda: mx.sym.BilinearSampler(V('d'), V('g')),
            {'d': (1, 1, 4, 4), 'g': (1, 3, 2, 2)},
            r'grid \(1, 3, 2, 2\) must be \(batch, 2, height, width\)',
        ),
        (
            lambda: mx.sym.SpatialTransformer(
                V('d'),
                V('l'),
                target_shape=(2, 2),
                transform_type='affine',
                sampler_type='bilinear',
            ),
            {'d': (2, 1, 4, 4), 'l': (2, 4)},
            r'loc \(2, 4\) must be \(batch, 6\)',
        ),
        (
            lambda: mx.sym.contrib.ctc_loss(V('d'), V('l')),
            {'d': (4, 5), 'l': (2, 3)},
            r'data \(4, 5\) must be 3-D \(sequence length, batch, alphabet size\)',
        ),
        (
            lambda: mx.sym.contrib.ctc_loss(V('d'), V('l')),
            {'d': (4, 2, 5), 'l': (3, 3)},
            'label batch 3 differs from data batch 2',
        ),
        (
            lambda: mx.sym.contrib.interleaved_matmul_selfatt_qk(V('q'), heads=4),
            {'q': (3, 2, 18)},
            'last dim 18 is not divisible by 3 \\* heads = 12',
        ),
        (
            lambda: mx.sym.contrib.interleaved_matmul_encdec_valatt(V('kv'), V('a'), heads=2),
            {'kv': (4, 2, 8), 'a': (4, 3, 5)},
            r'attention \(4, 3, 5\) must be \(batch \* heads',
        ),
        (
            lambda: mx.sym.contrib.index_copy(V('o'), V('i'), V('n')),
            {'o': (5, 3), 'i': (2,), 'n': (2, 4)},
            r'new_tensor \(2, 4\) must be',
        ),
        (
            lambda: mx.sym.contrib.arange_like(V('d'), repeat=0),
            {'d': (2, 3)},
            'repeat=0 must be a positive integer',
        ),
        (
            lambda: mx.sym.contrib.arange_like(V('d'), axis=3),
            {'d': (2, 3)},
            'axis 3 is out of range for 2-D data',
        ),
    ],
)
def test_user_errors_name_the_problem(build, shapes, match):
    _sym_error(build, match, **shapes)


def test_ctc_gradient_scales_with_the_head_gradient():
    """MXNet's CTC backward multiplies its stored gradient by each sample's head gradient."""
    g = Golden('ctc_loss_first')
    sym = build_symbol(next(c for c in CONTRIB_CASES if c.id == 'ctc_loss_first'), mx)
    exe = sym.bind(
        mx.cpu(),
        args={k: mx.nd.array(v) for k, v in g.args.items()},
        args_grad={'data': mx.nd.zeros(g.args['data'].shape)},
        grad_req={'data': 'write', 'label': 'null'},
    )
    exe.forward(is_train=True)
    exe.backward(out_grads=[mx.nd.array([1.0, 0.0])])
    grad = exe.grad_dict['data'].asnumpy()
    assert np.abs(grad[:, 0]).max() > 1e-3 and np.abs(grad[:, 1]).max() == 0
    # softmax minus occupancy: every frame's gradient sums to zero over the alphabet
    np.testing.assert_allclose(grad[:, 0].sum(-1), 0, atol=1e-5)


def test_ctc_loss_trains_in_a_module_like_mxnets_ocr_example():
    """``MakeLoss(contrib.ctc_loss(...))`` in a Module: forward_backward/update lower it."""
    t, n, c, width = 8, 4, 5, 3
    h = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=t * c, name='fc')
    seq = mx.sym.transpose(mx.sym.reshape(h, shape=(-1, t, c)), axes=(1, 0, 2))
    loss = mx.sym.MakeLoss(mx.sym.contrib.ctc_loss(seq, mx.sym.var('label'), name='ctc'))
    rng = np.random.RandomState(0)
    it = mx.io.NDArrayIter(
        rng.standard_normal((16, 6)).astype(np.float32),
        rng.randint(1, c, size=(16, width)).astype(np.float32),
        batch_size=n,
        label_name='label',
    )
    mod = mx.mod.Module(loss, data_names=['data'], label_names=['label'], context=mx.cpu())
    mod.bind(it.provide_data, it.provide_label)
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer='adam', optimizer_params={'learning_rate': 0.05})

    def mean_loss():
        it.reset()
        vals = []
        for batch in it:
            mod.forward(batch, is_train=False)
            vals.append(mod.get_outputs()[0].asnumpy().mean())
        return float(np.mean(vals))

    before = mean_loss()
    for _ in range(4):
        it.reset()
        for batch in it:
            mod.forward_backward(batch)
            mod.update()
    assert mean_loss() < 0.7 * before
