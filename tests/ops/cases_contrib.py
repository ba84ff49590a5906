"""Operator cases for issue #16's spatial, sequence and transformer operators
(BilinearResize2D, AdaptiveAvgPooling2D, UpSampling bilinear, GridGenerator,
BilinearSampler, SpatialTransformer, CTCLoss, interleaved_matmul_*, div_sqrt_dim,
arange_like, index_copy, quadratic, SyncBatchNorm). Loaded by ``cases.py`` (see
``_sibling`` there); stdlib only. ``boolean_mask`` has no case here: its output shape
depends on the mask values, so MXNet's symbolic executor cannot bind it either
(``tests/ops/test_contrib_ops.py`` checks it imperatively)."""

from __future__ import annotations

from typing import Any, Callable

D = 'data'
QKV = 'queries_keys_values'
KV = 'keys_values'
BN_POS = {'op_moving_var'}

# CTC labels: blank 'first' reserves 0 (tokens 1..C-1, padding 0 after the tokens);
# blank 'last' reserves C-1 (tokens 0..C-2, padding -1).
_CTC_PAD_FIRST = [[1, 2, 2], [3, 0, 0]]
_CTC_PAD_LAST = [[0, 1, -1], [2, 2, 1]]


def cases(C: Callable[..., Any]) -> list:
    """The contrib cases, built with `cases.C`."""
    rb = 'contrib.BilinearResize2D'
    ap = 'contrib.AdaptiveAvgPooling2D'
    return [
        # BilinearResize2D
        C('bilinear_resize_size', rb, {D: (1, 2, 3, 4)}, {'height': 5, 'width': 7}),
        C('bilinear_resize_down', rb, {D: (2, 1, 6, 5)}, {'height': 4, 'width': 3}),
        C(
            'bilinear_resize_no_align',
            rb,
            {D: (1, 2, 3, 4)},
            {'height': 5, 'width': 3, 'align_corners': False},
        ),
        C(
            'bilinear_resize_scale',
            rb,
            {D: (1, 1, 4, 3)},
            {'scale_height': 2.0, 'scale_width': 1.5},
        ),
        C(
            'bilinear_resize_odd_scale',
            rb,
            {D: (1, 1, 5, 4)},
            {'scale_height': 2.0, 'scale_width': 0.5, 'mode': 'odd_scale'},
        ),
        C('bilinear_resize_like', rb, {D: (1, 2, 3, 3), 'like': (1, 1, 5, 4)}, {'mode': 'like'}),
        C('bilinear_resize_to_even_up', rb, {D: (1, 1, 5, 4)}, {'mode': 'to_even_up'}),
        C(
            'bilinear_resize_to_odd_down',
            rb,
            {D: (1, 1, 4, 6)},
            {'mode': 'to_odd_down', 'align_corners': False},
        ),
        # AdaptiveAvgPooling2D
        C('adaptive_avg_pool', ap, {D: (2, 2, 5, 7)}, {'output_size': (2, 3)}),
        C('adaptive_avg_pool_int', ap, {D: (1, 2, 7, 5)}, {'output_size': 3}),
        C('adaptive_avg_pool_up', ap, {D: (1, 1, 3, 2)}, {'output_size': (4, 5)}),
        C('adaptive_avg_pool_default', ap, {D: (1, 3, 4, 4)}),
        # UpSampling bilinear (a fixed depthwise Deconvolution; weight is an argument)
        C(
            'upsampling_bilinear',
            'UpSampling',
            {D: (1, 2, 3, 3)},
            {'scale': 2, 'sample_type': 'bilinear', 'num_filter': 2},
        ),
        C(
            'upsampling_bilinear_3x',
            'UpSampling',
            {D: (1, 1, 2, 3)},
            {'scale': 3, 'sample_type': 'bilinear', 'num_filter': 1},
        ),
        # GridGenerator / BilinearSampler / SpatialTransformer
        C(
            'gridgen_affine',
            'GridGenerator',
            {D: (2, 6)},
            {'transform_type': 'affine', 'target_shape': (3, 4)},
        ),
        C('gridgen_warp', 'GridGenerator', {D: (2, 2, 3, 4)}, {'transform_type': 'warp'}),
        C('bilinear_sampler', 'BilinearSampler', {D: (2, 2, 4, 5), 'grid': (2, 2, 3, 3)}),
        C(
            'spatial_transformer',
            'SpatialTransformer',
            {D: (1, 2, 5, 5), 'loc': (1, 6)},
            {'target_shape': (3, 4), 'transform_type': 'affine', 'sampler_type': 'bilinear'},
        ),
        # CTC loss (layout TNC; activations are unnormalised, softmax is inside)
        # (one shape for every case: eager op-by-op compiles are shared between them)
        C(
            'ctc_loss_first',
            'contrib.ctc_loss',
            {D: (6, 2, 5), 'label': (2, 3)},
            ints={'label': (1, 5)},
        ),
        C(
            'ctc_loss_last',
            'contrib.CTCLoss',
            {D: (6, 2, 5), 'label': (2, 3)},
            {'blank_label': 'last'},
            ints={'label': (0, 4)},
        ),
        C(
            'ctc_loss_padding_first',
            'CTCLoss',
            {D: (6, 2, 5), 'label': (2, 3)},
            values={'label': _CTC_PAD_FIRST},
            no_grad={'label'},
        ),
        C(
            'ctc_loss_padding_last',
            'ctc_loss',
            {D: (6, 2, 5), 'label': (2, 3)},
            {'blank_label': 'last'},
            values={'label': _CTC_PAD_LAST},
            no_grad={'label'},
        ),
        C(
            'ctc_loss_lengths',
            'contrib.ctc_loss',
            {D: (6, 2, 5), 'label': (2, 3), 'data_lengths': (2,), 'label_lengths': (2,)},
            {'use_data_lengths': True, 'use_label_lengths': True},
            values={
                'label': [[1, 2, 3], [3, 3, 0]],
                'data_lengths': [6, 4],
                'label_lengths': [3, 1],
            },
            no_grad={'label', 'data_lengths', 'label_lengths'},
        ),
        C(
            'ctc_loss_data_lengths_last',
            'contrib.ctc_loss',
            {D: (6, 2, 5), 'label': (2, 3), 'data_lengths': (2,)},
            {'use_data_lengths': True, 'blank_label': 'last'},
            values={'label': [[0, 1, -1], [2, 3, 3]], 'data_lengths': [3, 6]},
            no_grad={'label', 'data_lengths'},
        ),
        C(
            'ctc_loss_infeasible',
            'contrib.ctc_loss',
            {D: (6, 2, 5), 'label': (2, 3), 'data_lengths': (2,)},
            {'use_data_lengths': True},
            values={'label': [[1, 1, 2], [1, 2, 3]], 'data_lengths': [3, 6]},
            no_grad={'label', 'data_lengths'},
        ),
        # transformer helpers (interleaved multi-head attention, layout (seq, batch, ...))
        C('selfatt_qk', 'contrib.interleaved_matmul_selfatt_qk', {QKV: (3, 2, 12)}, {'heads': 2}),
        C(
            'selfatt_valatt',
            'contrib.interleaved_matmul_selfatt_valatt',
            {QKV: (3, 2, 12), 'attention': (4, 3, 3)},
            {'heads': 2},
        ),
        C(
            'encdec_qk',
            'contrib.interleaved_matmul_encdec_qk',
            {'queries': (3, 2, 6), KV: (4, 2, 12)},
            {'heads': 3},
        ),
        C(
            'encdec_valatt',
            'contrib.interleaved_matmul_encdec_valatt',
            {KV: (4, 2, 12), 'attention': (6, 3, 4)},
            {'heads': 3},
        ),
        C('div_sqrt_dim', 'contrib.div_sqrt_dim', {D: (2, 3, 4)}),
        C('arange_like', 'contrib.arange_like', {D: (2, 3)}, {'start': 1.5, 'step': 0.5}),
        C(
            'arange_like_axis_repeat',
            'contrib.arange_like',
            {D: (2, 5, 3)},
            {'axis': 1, 'repeat': 2, 'start': -1.0},
        ),
        C(
            'index_copy',
            'contrib.index_copy',
            {'old_tensor': (5, 3), 'index_vector': (2,), 'new_tensor': (2, 3)},
            values={'index_vector': [3, 0]},
            no_grad={'index_vector'},
        ),
        C(
            'index_copy_3d',
            'contrib.index_copy',
            {'old_tensor': (4, 2, 2), 'index_vector': (3,), 'new_tensor': (3, 2, 2)},
            values={'index_vector': [1, 3, 2]},
            no_grad={'index_vector'},
        ),
        C('quadratic', 'contrib.quadratic', {D: (3, 4)}, {'a': 0.5, 'b': -1.0, 'c': 2.0}),
        C('quadratic_default', 'contrib.quadratic', {D: (2, 3)}),
        # SyncBatchNorm: on one device MXNet's result is BatchNorm's with SyncBatchNorm names
        # (its CPU kernel needs 4-D data; its backward after an inference forward is NaN)
        C(
            'sync_bn_train',
            'contrib.SyncBatchNorm',
            {D: (4, 3, 2, 2)},
            {'key': 'sbn', 'fix_gamma': False, 'momentum': 0.8},
            positive=BN_POS,
        ),
        C(
            'sync_bn_fix_gamma',
            'contrib.SyncBatchNorm',
            {D: (2, 2, 3, 3)},
            {'key': 'sbn'},
            positive=BN_POS,
        ),
        C(
            'sync_bn_infer',
            'contrib.SyncBatchNorm',
            {D: (2, 3, 2, 2)},
            {'key': 'sbn', 'fix_gamma': False},
            positive=BN_POS,
            is_train=False,
            check_grad=False,
        ),
        C(
            'sync_bn_global_stats',
            'contrib.SyncBatchNorm',
            {D: (2, 3, 2, 2)},
            {'key': 'sbn', 'fix_gamma': False, 'use_global_stats': True},
            positive=BN_POS,
        ),
        C(
            'sync_bn_output_mean_var',
            'contrib.SyncBatchNorm',
            {D: (4, 3)},
            {'key': 'sbn', 'fix_gamma': False, 'output_mean_var': True, 'eps': 1e-4},
            positive=BN_POS,
        ),
        # gradientmultiplier (issue 23: identity forward, backward scaled by `scalar`)
        C('gradmult_reverse', 'contrib.gradientmultiplier', {D: (2, 3, 4)}, {'scalar': -0.7}),
        C('gradmult_default', 'contrib.gradientmultiplier', {D: (5,)}),
    ]
