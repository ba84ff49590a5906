"""Operator cases for issue #16's detection operators (MultiBox*, box_*, ROI*, Proposal,
Deformable*). Loaded by ``cases.py`` (see ``_sibling`` there); stdlib only.

Boxes, ROIs and image info are explicit `values` (deterministic, from `random.Random`), so
every case exercises real overlaps; ROI inputs are `no_grad` (MXNet writes no gradient there).
"""

from __future__ import annotations

import random
from typing import Any, Callable

# Ops whose MXNet backward writes zeros: their gradients are compared with MXNet's goldens,
# never with finite differences (both names: the JSON op and the mx.sym.contrib function).
_ZERO = (
    'MultiBoxPrior',
    'MultiBoxTarget',
    'MultiBoxDetection',
    'Proposal',
    'MultiProposal',
    'box_iou',
    'bipartite_matching',
)
ZERO_GRAD_OPS = frozenset([f'_contrib_{n}' for n in _ZERO] + [f'contrib.{n}' for n in _ZERO])

# case id -> why finite differences cannot check its (golden-checked) gradient
FD_SKIP = {
    'box_nms_corner_to_center': "MXNet copies the head gradient through the format conversion",
    'box_nms_center_to_corner': "MXNet copies the head gradient through the format conversion",
    'box_nms_force_background': 'class ids are compared exactly with background_id',
    'box_nms_minus_one_ids': 'class ids are compared exactly with background_id',
    **{
        k: "MXNet's trans gradient ignores the clamp to the feature map"
        for k in ('deform_psroi', 'deform_psroi_classes_parts')
    },
}


def _boxes(n: int, seed: int, size: float = 10.0, clusters: int = 3) -> list:
    """`n` corner boxes [x1, y1, x2, y2] in [0, size), clustered so that many overlap."""
    rng = random.Random(seed)
    centers = [(rng.uniform(2, size - 2), rng.uniform(2, size - 2)) for _ in range(clusters)]
    out = []
    for i in range(n):
        cx, cy = centers[i % clusters]
        cx, cy = cx + rng.uniform(-1, 1), cy + rng.uniform(-1, 1)
        w, h = rng.uniform(1.5, 4), rng.uniform(1.5, 4)
        out.append(
            [round(cx - w / 2, 3), round(cy - h / 2, 3), round(cx + w / 2, 3), round(cy + h / 2, 3)]
        )
    return out


def _unit_boxes(n: int, seed: int) -> list:
    """`n` corner boxes inside the unit square (anchors)."""
    return [[round(v / 10, 4) for v in b] for b in _boxes(n, seed)]


def _labels(batch: int, n: int, seed: int, width: int = 5) -> list:
    """(batch, n, width) rows [cls, x1, y1, x2, y2, ...] in the unit square; batch element b
    has n - b valid rows then -1 padding (the last element may have none)."""
    rng = random.Random(seed)
    out = []
    for b in range(batch):
        rows = [
            [float(rng.randrange(3)), *box] + [0.0] * (width - 5)
            for box in _unit_boxes(n, seed + b)
        ]
        out.append([r if i < n - b else [-1.0] * width for i, r in enumerate(rows)])
    return out


def _scores(n: int, seed: int, lo: float = -0.2, hi: float = 1.0) -> list:
    """`n` distinct scores in [lo, hi), shuffled (no ties: MXNet's sort order is then exact)."""
    rng = random.Random(seed)
    vals = [round(lo + (hi - lo) * (i + 0.5) / n, 4) for i in range(n)]
    rng.shuffle(vals)
    return vals


def _det_rows(
    batch: int, n: int, seed: int, classes: int = 3, layout: str = 'isb', id_offset: float = 0.5
) -> list:
    """Rows of [id, score, x1, y1, x2, y2] (layout 'isb'), or [score, x1..y2, id] ('sbi').

    Ids are ``k + id_offset``: MXNet truncates them, so 0.5 keeps finite differences away
    from the class boundaries.
    """
    rng = random.Random(seed)
    rows = []
    for b in range(batch):
        boxes, scores = _boxes(n, seed + b), _scores(n, seed + 7 * b)
        ids = [rng.randrange(classes) + id_offset for _ in range(n)]
        if layout == 'isb':
            rows.append([[i, s, *bx] for i, s, bx in zip(ids, scores, boxes)])
        else:
            rows.append([[s, *bx, i] for i, s, bx in zip(ids, scores, boxes)])
    return rows


# [batch, x1, y1, x2, y2] in a 14x12 image: inside, across the border, tiny, whole image
_ROIS = [
    [0, 1.0, 2.0, 9.0, 7.0],
    [1, 3.3, 0.6, 13.2, 11.1],
    [1, 8.0, 5.0, 16.0, 14.0],
    [0, 4.2, 4.4, 4.6, 4.9],
    [1, 0.0, 0.0, 13.0, 11.0],
]
_PROP = {'cls_prob': (1, 12, 4, 5), 'bbox_pred': (1, 24, 4, 5), 'im_info': (1, 3)}
_PROP_ATTRS = {
    'scales': (2, 4),
    'ratios': (0.5, 1, 2),
    'feature_stride': 16,
    'rpn_pre_nms_top_n': 50,
    'rpn_post_nms_top_n': 12,
    'rpn_min_size': 4,
    'threshold': 0.6,
}


def cases(C: Callable[..., Any]) -> list:
    """The detection cases, built with `cases.C`."""
    D = 'data'
    nms = 'contrib.box_nms'
    return [
        # box_nms / box_non_maximum_suppression
        C('box_nms_default', nms, {D: (2, 8, 6)}, values={D: _det_rows(2, 8, 1)}),
        C(
            'box_nms_classes_topk',
            nms,
            {D: (2, 10, 6)},
            {'overlap_thresh': 0.3, 'valid_thresh': 0.1, 'topk': 6, 'id_index': 0},
            values={D: _det_rows(2, 10, 2)},
        ),
        C(
            'box_nms_force_background',
            nms,
            {D: (1, 10, 6)},
            {'overlap_thresh': 0.2, 'id_index': 0, 'background_id': 0, 'force_suppress': True},
            values={D: _det_rows(1, 10, 3, id_offset=0.0)},
        ),
        C(
            'box_nms_minus_one_ids',
            nms,
            {D: (1, 8, 6)},
            {'id_index': 0, 'overlap_thresh': 0.3},
            values={
                D: [
                    [
                        [-1.0 if i % 3 == 0 else r[0], *r[1:]]
                        for i, r in enumerate(_det_rows(1, 8, 8, id_offset=0.0)[0])
                    ]
                ]
            },
        ),
        C(
            'box_nms_layout',
            'contrib.box_non_maximum_suppression',
            {D: (9, 6)},
            {'coord_start': 1, 'score_index': 0, 'id_index': 5, 'overlap_thresh': 0.4},
            values={D: _det_rows(1, 9, 4, layout='sbi')[0]},
        ),
        C(
            'box_nms_corner_to_center',
            nms,
            {D: (1, 8, 6)},
            {'out_format': 'center'},
            values={D: _det_rows(1, 8, 5)},
        ),
        C(
            'box_nms_center_to_corner',
            nms,
            {D: (2, 3, 7, 6)},
            {'in_format': 'center', 'overlap_thresh': 0.3},
            values={
                D: [
                    [
                        [
                            [i, s, (x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1]
                            for i, s, x1, y1, x2, y2 in rows
                        ]
                        for rows in _det_rows(3, 7, 6 + k)
                    ]
                    for k in range(2)
                ]
            },
        ),
        # MultiBoxPrior
        C(
            'mbox_prior',
            'contrib.MultiBoxPrior',
            {D: (1, 2, 3, 4)},
            {'sizes': (0.5, 0.25), 'ratios': (1, 2, 0.5)},
        ),
        C(
            'mbox_prior_steps_clip',
            'contrib.MultiBoxPrior',
            {D: (2, 1, 4, 3)},
            {
                'sizes': (0.6,),
                'ratios': (1, 3),
                'steps': (0.3, 0.2),
                'offsets': (0.2, 0.7),
                'clip': True,
            },
        ),
        # MultiBoxTarget (anchors in [0, 1], labels padded with -1 rows)
        C(
            'mbox_target',
            'contrib.MultiBoxTarget',
            {'anchor': (1, 12, 4), 'label': (2, 3, 5), 'cls_pred': (2, 3, 12)},
            values={'anchor': _unit_boxes(12, 20), 'label': _labels(2, 3, 21)},
            no_grad={'anchor', 'label'},
        ),
        C(
            'mbox_target_mining',
            'contrib.MultiBoxTarget',
            {'anchor': (1, 12, 4), 'label': (3, 3, 6), 'cls_pred': (3, 4, 12)},
            {
                'negative_mining_ratio': 2,
                'negative_mining_thresh': 0.4,
                'overlap_threshold': 0.3,
                'ignore_label': -2,
                'variances': (0.2, 0.1, 0.3, 0.25),
            },
            values={'anchor': _unit_boxes(12, 22), 'label': _labels(3, 3, 23, width=6)},
            no_grad={'anchor', 'label'},
        ),
        C(
            'mbox_target_no_objects',
            'contrib.MultiBoxTarget',
            {'anchor': (1, 8, 4), 'label': (2, 1, 5), 'cls_pred': (2, 2, 8)},
            {'overlap_threshold': 0.2, 'ignore_label': -3},
            values={'anchor': _unit_boxes(8, 27), 'label': _labels(2, 1, 28)},
            no_grad={'anchor', 'label'},
        ),
        # MultiBoxDetection (positive class scores; anchors in [0, 1])
        C(
            'mbox_detection',
            'contrib.MultiBoxDetection',
            {'cls_prob': (2, 3, 12), 'loc_pred': (2, 48), 'anchor': (1, 12, 4)},
            {'threshold': 0.9, 'nms_threshold': 0.3},
            values={'anchor': _unit_boxes(12, 24)},
            positive={'cls_prob'},
        ),
        C(
            'mbox_detection_force_topk',
            'contrib.MultiBoxDetection',
            {'cls_prob': (1, 4, 12), 'loc_pred': (1, 48), 'anchor': (1, 12, 4)},
            {
                'force_suppress': True,
                'nms_topk': 5,
                'clip': False,
                'nms_threshold': 0.2,
                'variances': (0.2, 0.2, 0.1, 0.1),
            },
            values={'anchor': _unit_boxes(12, 25)},
            positive={'cls_prob'},
        ),
        C(
            'mbox_detection_no_nms',
            'contrib.MultiBoxDetection',
            {'cls_prob': (2, 3, 12), 'loc_pred': (2, 48), 'anchor': (1, 12, 4)},
            {'nms_threshold': 0.0, 'threshold': 1.0},
            values={'anchor': _unit_boxes(12, 26)},
            positive={'cls_prob'},
        ),
        # Proposal / MultiProposal (4x5 feature map, stride 16, 6 anchors per cell)
        C(
            'proposal',
            'contrib.Proposal',
            _PROP,
            _PROP_ATTRS,
            values={'im_info': [[56.0, 80.0, 1.0]]},
            positive={'cls_prob'},
        ),
        C(
            'proposal_score_cycle',
            'contrib.Proposal',
            _PROP,
            {**_PROP_ATTRS, 'threshold': 0.3, 'rpn_post_nms_top_n': 40, 'output_score': True},
            values={'im_info': [[64.0, 70.0, 1.5]]},
            positive={'cls_prob'},
        ),
        C(
            'proposal_post_over_pre',
            'contrib.Proposal',
            _PROP,
            {**_PROP_ATTRS, 'rpn_pre_nms_top_n': 20, 'rpn_post_nms_top_n': 30, 'threshold': 0.5},
            values={'im_info': [[64.0, 80.0, 1.0]]},
            positive={'cls_prob'},
        ),
        C(
            'proposal_iou_loss',
            'contrib.Proposal',
            _PROP,
            {**_PROP_ATTRS, 'iou_loss': True},
            values={'im_info': [[64.0, 80.0, 1.0]]},
            positive={'cls_prob'},
        ),
        C(
            'multi_proposal',
            'contrib.MultiProposal',
            {'cls_prob': (2, 12, 4, 5), 'bbox_pred': (2, 24, 4, 5), 'im_info': (2, 3)},
            {**_PROP_ATTRS, 'output_score': True},
            values={'im_info': [[64.0, 80.0, 1.0], [50.0, 66.0, 2.0]]},
            positive={'cls_prob'},
        ),
        # ROIAlign (7x6 map at spatial_scale 0.5 of a 14x12 image)
        C(
            'roi_align',
            'contrib.ROIAlign',
            {D: (2, 3, 6, 7), 'rois': (5, 5)},
            {'pooled_size': (2, 3), 'spatial_scale': 0.5},
            values={'rois': _ROIS},
            no_grad={'rois'},
        ),
        C(
            'roi_align_sample2_aligned',
            'contrib.ROIAlign',
            {D: (2, 3, 6, 7), 'rois': (5, 5)},
            {'pooled_size': (3, 2), 'spatial_scale': 0.5, 'sample_ratio': 2, 'aligned': True},
            values={'rois': _ROIS},
            no_grad={'rois'},
        ),
        C(
            'roi_align_position_sensitive',
            'contrib.ROIAlign',
            {D: (2, 8, 6, 7), 'rois': (5, 5)},
            {
                'pooled_size': (2, 2),
                'spatial_scale': 0.5,
                'position_sensitive': True,
                'sample_ratio': 3,
            },
            values={'rois': _ROIS},
            no_grad={'rois'},
        ),
        C(
            'roi_align_aligned_adaptive',
            'contrib.ROIAlign',
            {D: (1, 2, 6, 7), 'rois': (3, 5)},
            {'pooled_size': (2, 2), 'spatial_scale': 1.0, 'aligned': True},
            values={
                'rois': [[0, 0.5, 0.2, 6.5, 5.0], [0, 2.2, 1.1, 4.0, 3.3], [0, -1.0, 2.0, 8.0, 7.0]]
            },
            no_grad={'rois'},
        ),
        # ROIPooling (legacy top-level op)
        C(
            'roi_pooling',
            'ROIPooling',
            {D: (2, 3, 6, 7), 'rois': (5, 5)},
            {'pooled_size': (2, 2), 'spatial_scale': 0.5},
            values={'rois': _ROIS},
            no_grad={'rois'},
        ),
        C(
            'roi_pooling_3x2',
            'ROIPooling',
            {D: (2, 2, 6, 7), 'rois': (5, 5)},
            {'pooled_size': (3, 2), 'spatial_scale': 0.5},
            values={'rois': _ROIS},
            no_grad={'rois'},
        ),
        # PSROIPooling
        C(
            'psroi_pooling',
            'contrib.PSROIPooling',
            {D: (2, 18, 6, 7), 'rois': (5, 5)},
            {'spatial_scale': 0.5, 'output_dim': 2, 'pooled_size': 3},
            values={'rois': _ROIS},
            no_grad={'rois'},
        ),
        C(
            'psroi_pooling_group2',
            'contrib.PSROIPooling',
            {D: (2, 8, 6, 7), 'rois': (5, 5)},
            {'spatial_scale': 0.5, 'output_dim': 2, 'pooled_size': 3, 'group_size': 2},
            values={'rois': _ROIS},
            no_grad={'rois'},
        ),
        # DeformableConvolution (standard-normal offsets)
        C(
            'deform_conv',
            'contrib.DeformableConvolution',
            {D: (2, 4, 5, 6), 'offset': (2, 18, 5, 6)},
            {'kernel': (3, 3), 'num_filter': 3, 'pad': (1, 1)},
        ),
        C(
            'deform_conv_groups',
            'contrib.DeformableConvolution',
            {D: (1, 4, 7, 7), 'offset': (1, 36, 4, 4)},
            {
                'kernel': (3, 3),
                'num_filter': 4,
                'stride': (2, 2),
                'pad': (1, 1),
                'num_group': 2,
                'num_deformable_group': 2,
                'no_bias': True,
            },
        ),
        C(
            'deform_conv_dilate',
            'contrib.DeformableConvolution',
            {D: (1, 2, 6, 6), 'offset': (1, 8, 4, 5)},
            {'kernel': (2, 2), 'num_filter': 2, 'dilate': (2, 1)},
        ),
        # DeformablePSROIPooling
        C(
            'deform_psroi',
            'contrib.DeformablePSROIPooling',
            {D: (2, 18, 6, 7), 'rois': (5, 5), 'trans': (5, 2, 3, 3)},
            {
                'spatial_scale': 0.5,
                'output_dim': 2,
                'group_size': 3,
                'pooled_size': 3,
                'sample_per_part': 2,
                'trans_std': 0.1,
            },
            values={'rois': _ROIS},
            no_grad={'rois'},
        ),
        C(
            'deform_psroi_classes_parts',
            'contrib.DeformablePSROIPooling',
            {D: (2, 8, 6, 7), 'rois': (5, 5), 'trans': (5, 4, 2, 2)},
            {
                'spatial_scale': 0.5,
                'output_dim': 2,
                'group_size': 2,
                'pooled_size': 3,
                'part_size': 2,
                'sample_per_part': 3,
                'trans_std': 0.2,
            },
            values={'rois': _ROIS},
            no_grad={'rois'},
        ),
        C(
            'deform_psroi_no_trans',
            'contrib.DeformablePSROIPooling',
            {D: (2, 8, 6, 7), 'rois': (5, 5)},
            {
                'spatial_scale': 0.5,
                'output_dim': 2,
                'group_size': 2,
                'pooled_size': 2,
                'sample_per_part': 2,
                'no_trans': True,
            },
            values={'rois': _ROIS},
            no_grad={'rois'},
        ),
        # box_iou
        C(
            'box_iou_corner',
            'contrib.box_iou',
            {'lhs': (2, 3, 4), 'rhs': (5, 4)},
            values={'lhs': _boxes(6, 10), 'rhs': _boxes(5, 11)},
        ),
        C(
            'box_iou_center',
            'contrib.box_iou',
            {'lhs': (4, 4), 'rhs': (2, 3, 4)},
            {'format': 'center'},
            values={
                'lhs': [[2, 2, 3, 2], [3, 3, 2, 4], [5, 5, 1, 1], [2.5, 2, 2, 2]],
                'rhs': [
                    [2, 2.5, 2, 3],
                    [4, 4, 3, 3],
                    [0, 0, 1, 1],
                    [3, 3, 4, 4],
                    [2, 2, 3, 2],
                    [6, 5, 2, 2],
                ],
            },
        ),
        # bipartite_matching (standard-normal score matrices)
        C('bipartite_matching', 'contrib.bipartite_matching', {D: (2, 5, 3)}, {'threshold': 0.1}),
        C(
            'bipartite_matching_ascend_topk',
            'contrib.bipartite_matching',
            {D: (6, 4)},
            {'threshold': 0.8, 'is_ascend': True, 'topk': 2},
        ),
        # issue 23: MultiBoxPrior 1.9.1 gives the `sizes` anchors the first ratio
        C(
            'mbox_prior_first_ratio',
            'contrib.MultiBoxPrior',
            {D: (1, 2, 3, 5)},
            {'sizes': (0.4, 0.3), 'ratios': (2.5, 1, 0.5), 'offsets': (0.25, 0.6)},
        ),
    ]
