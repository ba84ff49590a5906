"""Detection operators: what the generic op table cannot check.

Symbol JSON byte-identical to MXNet's, fixed-size outputs padded where MXNet pads
them, one compilation for changing data inside a jitted training step with no host
callbacks, zero gradients where MXNet writes none, the two attributes MXNet 1.9.1
accepts but ignores, and the errors for user mistakes.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mxmod as mx
from mxmod.executor.lower import GraphFn

from ._harness import Golden
from .cases import DETECTION_CASES, build_symbol


@pytest.mark.parametrize("case", DETECTION_CASES, ids=[c.id for c in DETECTION_CASES])
def test_json_is_byte_identical_to_mxnet(case):
    """The symbol MXNet wrote loads and re-saves byte for byte; building it here writes the
    same text (``_contrib_*`` op names, attribute strings, hidden outputs in node_row_ptr)."""
    want = Golden(case.id).json
    assert build_symbol(case, mx).tojson() == want
    assert mx.sym.load_json(want).tojson() == want


def _nms_input(n=6):
    rng = np.random.RandomState(0)
    xy = rng.uniform(0, 4, (n, 2))
    boxes = np.concatenate([xy, xy + rng.uniform(1, 3, (n, 2))], 1)
    score = np.linspace(0.9, -0.1, n)
    return np.concatenate([np.zeros((n, 1)), score[:, None], boxes], 1).astype(np.float32)


def test_box_nms_pads_with_minus_one_rows_after_the_kept_boxes():
    data = _nms_input()
    data[1, 2:] = data[0, 2:] + 0.01  # a near duplicate of the best box: suppressed
    out = mx.nd.contrib.box_nms(mx.nd.array(data), overlap_thresh=0.5).asnumpy()
    kept = out[out[:, 0] >= 0]
    # the duplicate and the negative-score box are gone, the rest keep score order
    assert 2 <= len(kept) <= 4
    np.testing.assert_allclose(kept[0], data[0])
    assert np.all(np.diff(kept[:, 1]) < 0)
    assert not any(np.allclose(r, data[1]) for r in kept)
    np.testing.assert_array_equal(out[len(kept) :], -1)


def test_box_nms_gradient_goes_back_to_the_source_rows():
    data = jnp.asarray(_nms_input())
    op = mx.ops.get_op("_contrib_box_nms")
    a = op.parse({"overlap_thresh": "0.3"})

    def f(x):
        return op.lower(a, [x], [], mx.ops.LowerCtx(True, "nms"))[0]

    out, vjp = jax.vjp(f, data)
    (g,) = vjp(jnp.ones_like(out))
    kept = np.asarray(out)[:, 0] >= 0
    rows_with_grad = np.asarray(g).any(axis=1)
    assert rows_with_grad.sum() == kept.sum()  # every kept row, nothing else
    assert np.all(np.asarray(g)[rows_with_grad] == 1)


def _head():
    """Proposal + ROIAlign + FC: the Faster R-CNN head of the benchmark, small."""
    cls = mx.sym.Variable("cls_prob")
    bbox = mx.sym.Variable("bbox_pred")
    info = mx.sym.Variable("im_info")
    feat = mx.sym.Variable("data")
    rois = mx.sym.contrib.Proposal(
        cls,
        bbox,
        info,
        feature_stride=16,
        scales=(2, 4),
        ratios=(0.5, 1, 2),
        rpn_pre_nms_top_n=60,
        rpn_post_nms_top_n=16,
        rpn_min_size=4,
        name="rois",
    )
    pooled = mx.sym.contrib.ROIAlign(
        feat, rois, pooled_size=(2, 2), spatial_scale=1 / 16, sample_ratio=2, name="roi_align"
    )
    return mx.sym.FullyConnected(pooled, num_hidden=5, name="fc")


def _head_inputs(seed):
    rng = np.random.RandomState(seed)
    return {
        "cls_prob": rng.uniform(0, 1, (1, 12, 4, 5)).astype(np.float32),
        "bbox_pred": (rng.randn(1, 24, 4, 5) * 0.2).astype(np.float32),
        "im_info": np.array([[64, 80, 1]], np.float32),
        "data": rng.randn(1, 3, 4, 5).astype(np.float32),
        "fc_weight": rng.randn(5, 12).astype(np.float32) * 0.1,
        "fc_bias": np.zeros(5, np.float32),
    }


def test_detection_head_compiles_once_inside_a_jitted_step_without_host_callbacks():
    fn = GraphFn(_head())
    traces = []

    @jax.jit
    def step(args):
        traces.append(1)

        def loss(params):
            outs, _ = fn({**args, **params}, {}, None, True)
            return jnp.sum(outs[0] ** 2)

        params = {k: args[k] for k in ("fc_weight", "fc_bias", "data", "cls_prob")}
        return jax.value_and_grad(loss)(params)

    results = [step({k: jnp.asarray(v) for k, v in _head_inputs(s).items()}) for s in range(3)]
    assert len(traces) == 1, "the detection head retraced for new values"
    assert results[0][0] != results[1][0]
    grads = results[0][1]
    assert np.abs(np.asarray(grads["fc_weight"])).sum() > 0
    assert np.abs(np.asarray(grads["data"])).sum() > 0  # through ROIAlign
    np.testing.assert_array_equal(np.asarray(grads["cls_prob"]), 0)  # Proposal: none
    text = str(jax.make_jaxpr(step)({k: jnp.asarray(v) for k, v in _head_inputs(0).items()}))
    assert "callback" not in text


def test_roi_align_gives_rois_no_gradient():
    op = mx.ops.get_op("_contrib_ROIAlign")
    a = op.parse({"pooled_size": "(2, 2)", "spatial_scale": "1.0"})
    data = jnp.asarray(np.random.RandomState(1).randn(1, 2, 5, 5), jnp.float32)
    rois = jnp.asarray([[0, 0.5, 0.5, 3.5, 4.0]], jnp.float32)
    _, vjp = jax.vjp(lambda d, r: op.lower(a, [d, r], [], None)[0], data, rois)
    gd, gr = vjp(jnp.ones((1, 2, 2, 2)))
    assert np.abs(np.asarray(gd)).sum() > 0
    np.testing.assert_array_equal(np.asarray(gr), 0)


def test_attributes_mxnet_accepts_but_ignores():
    """MXNet 1.9.1's CPU kernels ignore MultiBoxTarget's minimum_negative_samples and
    MultiBoxDetection's background_id (checked against MXNet when these tests were written)."""
    rng = np.random.RandomState(0)
    anchor = mx.nd.contrib.MultiBoxPrior(
        mx.nd.zeros((1, 1, 2, 2)), sizes=(0.3, 0.6), ratios=(1, 2, 0.5)
    )
    n = anchor.shape[1]
    label = mx.nd.array([[[1, 0.1, 0.1, 0.4, 0.5], [0, 0.5, 0.5, 0.9, 0.8]]])
    pred = mx.nd.array(rng.randn(1, 3, n))
    a = mx.nd.contrib.MultiBoxTarget(anchor, label, pred, negative_mining_ratio=1)
    b = mx.nd.contrib.MultiBoxTarget(
        anchor, label, pred, negative_mining_ratio=1, minimum_negative_samples=5
    )
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x.asnumpy(), y.asnumpy())
    prob = mx.nd.softmax(mx.nd.array(rng.randn(1, 3, n)), axis=1)
    loc = mx.nd.array(rng.randn(1, n * 4) * 0.1)
    d0 = mx.nd.contrib.MultiBoxDetection(prob, loc, anchor, threshold=0.3)
    d1 = mx.nd.contrib.MultiBoxDetection(prob, loc, anchor, threshold=0.3, background_id=1)
    np.testing.assert_array_equal(d0.asnumpy(), d1.asnumpy())


def _infer(sym, **shapes):
    return sym.infer_shape(**shapes)


def test_errors_name_the_problem_and_the_fix():
    d, r = mx.sym.Variable("data"), mx.sym.Variable("rois")
    with pytest.raises(mx.MXNetError, match="use contrib.MultiProposal"):
        _infer(mx.sym.contrib.Proposal(name="p", scales=(2,), ratios=(1,)), p_cls_prob=(2, 2, 3, 3))
    with pytest.raises(mx.MXNetError, match=r"cls_prob .* must be \(batch, 2 \* 6"):
        _infer(
            mx.sym.contrib.Proposal(name="p", scales=(2, 4), ratios=(0.5, 1, 2)),
            p_cls_prob=(1, 6, 3, 3),
        )
    with pytest.raises(mx.MXNetError, match=r"rois \(3, 4\) must be \(num_rois, 5\)"):
        _infer(
            mx.sym.ROIPooling(d, r, pooled_size=(2, 2), spatial_scale=1.0),
            data=(1, 2, 4, 4),
            rois=(3, 4),
        )
    with pytest.raises(mx.MXNetError, match="output_dim \\* group_size\\^2"):
        _infer(
            mx.sym.contrib.PSROIPooling(d, r, spatial_scale=1.0, output_dim=2, pooled_size=2),
            data=(1, 6, 4, 4),
            rois=(3, 5),
        )
    with pytest.raises(mx.MXNetError, match=r"rois \(3, 4\) must be \(num_rois, 5\)"):
        _infer(
            mx.sym.contrib.ROIAlign(d, r, pooled_size=(2, 2), spatial_scale=1.0),
            data=(1, 2, 4, 4),
            rois=(3, 4),
        )
    with pytest.raises(mx.MXNetError, match="multiple of pooled height"):
        _infer(
            mx.sym.contrib.ROIAlign(
                d, r, pooled_size=(2, 2), spatial_scale=1.0, position_sensitive=True
            ),
            data=(1, 6, 4, 4),
            rois=(3, 5),
        )
    with pytest.raises(mx.MXNetError, match="score_index=3 must lie"):
        _infer(mx.sym.contrib.box_nms(d, score_index=3), data=(2, 5, 6))
    with pytest.raises(mx.MXNetError, match="required attribute 'threshold'"):
        mx.sym.contrib.bipartite_matching(d)
    with pytest.raises(mx.MXNetError, match="anchors are shared by the batch"):
        _infer(
            mx.sym.contrib.MultiBoxTarget(name="t"),
            t_anchor=(2, 4, 4),
            t_label=(2, 1, 5),
            t_cls_pred=(2, 3, 4),
        )
    with pytest.raises(mx.MXNetError, match=r"trans .* must be \(num_rois, 2 \* num_classes"):
        _infer(
            mx.sym.contrib.DeformablePSROIPooling(
                d,
                r,
                mx.sym.Variable("trans"),
                spatial_scale=1.0,
                output_dim=2,
                group_size=2,
                pooled_size=2,
            ),
            data=(1, 8, 4, 4),
            rois=(3, 5),
            trans=(3, 3, 2, 2),
        )
    with pytest.raises(NotImplementedError, match="layout='NCW'"):
        _infer(
            mx.sym.contrib.DeformableConvolution(d, kernel=(3, 3), num_filter=2, layout="NCW"),
            data=(1, 2, 5, 5),
        )
    with pytest.raises(mx.MXNetError, match="only 2-D deformable convolution"):
        _infer(mx.sym.contrib.DeformableConvolution(d, kernel=(3,), num_filter=2), data=(1, 2, 5))


def test_proposal_head_under_module_with_one_image_per_device():
    """mx-rcnn's layout: batch 2 over two contexts, so each device's Proposal sees one image;
    gradients equal the single-image runs."""
    sym = mx.sym.MakeLoss(mx.sym.mean(_head()))
    names = ("data", "cls_prob", "bbox_pred", "im_info")
    v0, v1 = _head_inputs(0), _head_inputs(1)

    def run(ctx, vals):
        mod = mx.mod.Module(sym, data_names=names, label_names=None, context=ctx)
        mod.bind(
            data_shapes=[(n, vals[n].shape) for n in names],
            for_training=True,
            inputs_need_grad=True,
        )
        mod.init_params(arg_params={k: mx.nd.array(v0[k]) for k in ("fc_weight", "fc_bias")})
        mod.forward(mx.io.DataBatch([mx.nd.array(vals[n]) for n in names], None), is_train=True)
        mod.backward()
        return mod.get_input_grads()[0].asnumpy()

    both = run([mx.cpu(0), mx.cpu(1)], {n: np.concatenate([v0[n], v1[n]]) for n in names})
    single = np.concatenate([run(mx.cpu(0), v0), run(mx.cpu(0), v1)])
    assert np.abs(single).sum() > 0
    np.testing.assert_allclose(both, single, rtol=1e-5, atol=1e-6)
