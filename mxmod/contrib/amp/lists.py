"""Operator classes of MXNet 1.9.1's AMP, for the operators mxmod implements.

MXNet's ``amp.convert_symbol`` decides per operator name whether a node runs in the low
precision type (``*_LP``: Convolution, FullyConnected...), follows the type of its inputs
(``*_FOLLOW``: BatchNorm, Pooling, relu...), is kept in float32 (``*_FP32``: softmax, norms,
losses, exp/log...), runs in the widest type of its inputs (``*_WIDEST``: additions,
Concat...), or is float32 only for some attribute values (``CONDITIONAL``). The classes
below are MXNet's (``mxnet/contrib/amp/lists/symbol_{fp16,bf16}.py``) restricted to
operator names mxmod registers; they differ between float16 and bfloat16.
"""

from __future__ import annotations

import numpy as np


def _names(text: str) -> frozenset:
    return frozenset(text.split())


_FP16_LP = _names("""
Convolution Deconvolution FullyConnected RNN
""")

_FP16_FOLLOW = _names("""
BatchNorm BilinearSampler BlockGrad Cast Crop Dropout Embedding Flatten GridGenerator Pad
Pooling ROIPooling Reshape SequenceLast SequenceMask SequenceReverse SliceChannel
SpatialTransformer SwapAxis UpSampling _DivScalar _EqualScalar _GreaterEqualScalar
_GreaterScalar _LesserEqualScalar _LesserScalar _LogicalAndScalar _LogicalOrScalar
_LogicalXorScalar _MaximumScalar _MinimumScalar _MinusScalar _ModScalar _MulScalar
_NotEqualScalar _PlusScalar _RMinusScalar _RModScalar _add _contrib_AdaptiveAvgPooling2D
_contrib_BilinearResize2D _contrib_bipartite_matching _contrib_boolean_mask
_contrib_div_sqrt_dim _contrib_index_copy _contrib_quadratic _copy _div_scalar _equal_scalar
_full _greater_equal_scalar _greater_scalar _lesser_equal_scalar _lesser_scalar
_logical_and_scalar _logical_or_scalar _logical_xor_scalar _maximum_scalar _minimum_scalar
_minus_scalar _mod_scalar _mul_scalar _not_equal_scalar _ones _plus_scalar _rminus_scalar
_rmod_scalar _zeros _zeros_without_dtype abs arccosh arcsinh arctan argmax argmax_channel
argmin broadcast_axes
broadcast_axis broadcast_like broadcast_to cast cbrt ceil clip cos crop degrees erf
expand_dims fix flatten flip floor hard_sigmoid identity logical_not max max_axis min
min_axis negative one_hot ones_like pad pick radians relu repeat reshape reshape_like
reverse rint round shape_array sigmoid sign sin size_array slice slice_axis slice_like
softsign sort split sqrt squeeze stop_gradient swapaxes take tanh tile transpose trunc
zeros_like
""") | _names("""
_arange _contrib_SparseEmbedding _contrib_gradientmultiplier _contrib_index_array _eye
_contrib_dequantize _contrib_quantize _contrib_quantize_v2 _contrib_requantize
_identity_with_attr_like_rhs _linspace _random_exponential _random_exponential_like
_random_gamma _random_gamma_like _random_generalized_negative_binomial
_random_generalized_negative_binomial_like _random_negative_binomial
_random_negative_binomial_like _random_normal _random_normal_like _random_poisson
_random_poisson_like _random_uniform _random_uniform_like _ravel_multi_index
_sample_multinomial _sparse_retain _split_v2 _unravel_index amp_cast amp_multicast batch_take
cast_storage depth_to_space diag gather_nd normal random_exponential random_gamma
random_generalized_negative_binomial random_negative_binomial random_normal random_poisson
random_uniform ravel_multi_index sample_multinomial scatter_nd space_to_depth uniform
unravel_index
_random_randint _rnn_param_concat _shuffle random_randint
_histogram
shuffle
_sample_exponential _sample_gamma _sample_generalized_negative_binomial
_sample_negative_binomial _sample_normal _sample_poisson _sample_uniform sample_exponential
sample_gamma sample_generalized_negative_binomial sample_negative_binomial sample_normal
sample_poisson sample_uniform
BatchNorm_v1 Pooling_v1 _cond _contrib_ifft _foreach _while_loop
_image_adjust_lighting _image_crop _image_flip_left_right _image_flip_top_bottom
_image_normalize _image_random_brightness _image_random_color_jitter _image_random_contrast
_image_random_flip_left_right _image_random_flip_top_bottom _image_random_hue
_image_random_lighting _image_random_saturation _image_resize _image_to_tensor
""")

_FP16_FP32 = _names("""
Convolution_v1 _contrib_count_sketch _contrib_fft
_linalg_det _linalg_extractdiag _linalg_extracttrian _linalg_gelqf _linalg_gemm
_linalg_inverse _linalg_makediag _linalg_maketrian _linalg_potrf _linalg_potri
_linalg_slogdet _linalg_sumlogdiag _linalg_syevd _linalg_syrk _linalg_trmm _linalg_trsm
linalg_det linalg_extractdiag linalg_extracttrian linalg_gelqf linalg_gemm linalg_inverse
linalg_makediag linalg_maketrian linalg_potrf linalg_potri linalg_slogdet
linalg_sumlogdiag linalg_syrk linalg_trmm linalg_trsm
CTCLoss Custom IdentityAttachKLSparseReg InstanceNorm L2Normalization LRN LayerNorm
LinearRegressionOutput LogisticRegressionOutput MAERegressionOutput MakeLoss SVMOutput
Softmax SoftmaxActivation SoftmaxOutput _Hypot _HypotScalar _Power _PowerScalar _RDivScalar
_RPowerScalar _contrib_CTCLoss _contrib_DeformableConvolution
_contrib_DeformablePSROIPooling _contrib_MultiBoxDetection _contrib_MultiBoxPrior
_contrib_MultiBoxTarget _contrib_SyncBatchNorm _contrib_ctc_loss _hypot _hypot_scalar
_linalg_gemm2 _power _power_scalar _rdiv_scalar _rpower_scalar arccos arcsin arctanh argsort
broadcast_hypot broadcast_power cosh ctc_loss erfinv exp expm1 gamma gammaln linalg_gemm2
log log10 log1p log2 log_softmax make_loss mean nanprod nansum norm prod rcbrt reciprocal
rsqrt sinh smooth_l1 softmax softmax_cross_entropy softmin square sum sum_axis tan topk
""") | _names("""
GroupNorm _square_sum khatri_rao moments _contrib_hawkesll
""")

_FP16_WIDEST = _names("""
Correlation
Concat ElementWiseSum _Div _Equal _Greater _Greater_Equal _Lesser _Lesser_Equal _Logical_And
_Logical_Or _Logical_Xor _Maximum _Minimum _Minus _Mod _Mul _Not_Equal _Plus
_contrib_MultiProposal _contrib_PSROIPooling _contrib_Proposal _contrib_ROIAlign
_contrib_box_iou _contrib_box_nms _contrib_box_non_maximum_suppression
_contrib_interleaved_matmul_encdec_qk _contrib_interleaved_matmul_encdec_valatt
_contrib_interleaved_matmul_selfatt_qk _contrib_interleaved_matmul_selfatt_valatt _div
_equal _greater _greater_equal _lesser _lesser_equal _logical_and _logical_or _logical_xor
_maximum _minimum _minus _mod _mul _not_equal _plus _sub add_n batch_dot broadcast_add
broadcast_div broadcast_equal broadcast_greater broadcast_greater_equal broadcast_lesser
broadcast_lesser_equal broadcast_logical_and broadcast_logical_or broadcast_logical_xor
broadcast_maximum broadcast_minimum broadcast_minus broadcast_mod broadcast_mul
broadcast_not_equal broadcast_plus broadcast_sub concat dot elemwise_add elemwise_div
elemwise_mul elemwise_sub stack where
_random_pdf_dirichlet _random_pdf_exponential _random_pdf_gamma
_random_pdf_generalized_negative_binomial _random_pdf_negative_binomial _random_pdf_normal
_random_pdf_poisson _random_pdf_uniform random_pdf_dirichlet random_pdf_exponential
random_pdf_gamma random_pdf_generalized_negative_binomial random_pdf_negative_binomial
random_pdf_normal random_pdf_poisson random_pdf_uniform
""")

_BF16_LP = _names("""
Convolution FullyConnected
""")

_BF16_FOLLOW = _names("""
BatchNorm Concat LRN Pooling _add abs clip concat relu sqrt square tanh
_shuffle
shuffle
""")

_BF16_FP32 = _names("""
BatchNorm_v1 Convolution_v1 Pooling_v1 _cond _contrib_count_sketch _contrib_fft _contrib_ifft
_foreach _while_loop
_image_adjust_lighting _image_crop _image_flip_left_right _image_flip_top_bottom
_image_normalize _image_random_brightness _image_random_color_jitter _image_random_contrast
_image_random_flip_left_right _image_random_flip_top_bottom _image_random_hue
_image_random_lighting _image_random_saturation _image_resize _image_to_tensor
_linalg_det _linalg_extractdiag _linalg_extracttrian _linalg_gelqf _linalg_gemm
_linalg_inverse _linalg_makediag _linalg_maketrian _linalg_potrf _linalg_potri
_linalg_slogdet _linalg_sumlogdiag _linalg_syevd _linalg_syrk _linalg_trmm _linalg_trsm
linalg_det linalg_extractdiag linalg_extracttrian linalg_gelqf linalg_gemm linalg_inverse
linalg_makediag linalg_maketrian linalg_potrf linalg_potri linalg_slogdet
linalg_sumlogdiag linalg_syrk linalg_trmm linalg_trsm
BilinearSampler BlockGrad CTCLoss Cast Crop Custom Deconvolution Dropout Embedding Flatten
GridGenerator IdentityAttachKLSparseReg InstanceNorm L2Normalization LayerNorm
LinearRegressionOutput LogisticRegressionOutput MAERegressionOutput MakeLoss Pad RNN
ROIPooling Reshape SVMOutput SequenceLast SequenceMask SequenceReverse SliceChannel Softmax
SoftmaxActivation SoftmaxOutput SpatialTransformer SwapAxis UpSampling _DivScalar
_EqualScalar _GreaterEqualScalar _GreaterScalar _Hypot _HypotScalar _LesserEqualScalar
_LesserScalar _LogicalAndScalar _LogicalOrScalar _LogicalXorScalar _MaximumScalar
_MinimumScalar _MinusScalar _ModScalar _MulScalar _NotEqualScalar _PlusScalar _Power
_PowerScalar _RDivScalar _RMinusScalar _RModScalar _RPowerScalar
_contrib_AdaptiveAvgPooling2D _contrib_BilinearResize2D _contrib_CTCLoss
_contrib_DeformableConvolution _contrib_DeformablePSROIPooling _contrib_SyncBatchNorm
_contrib_bipartite_matching _contrib_boolean_mask _contrib_ctc_loss _contrib_div_sqrt_dim
_contrib_index_copy _contrib_quadratic _copy _div_scalar _equal_scalar _full
_greater_equal_scalar _greater_scalar _hypot _hypot_scalar _lesser_equal_scalar
_lesser_scalar _linalg_gemm2 _logical_and_scalar _logical_or_scalar _logical_xor_scalar
_maximum_scalar _minimum_scalar _minus_scalar _mod_scalar _mul_scalar _not_equal_scalar
_ones _plus_scalar _power _power_scalar _rdiv_scalar _rminus_scalar _rmod_scalar
_rpower_scalar _zeros _zeros_without_dtype arccos arccosh arcsin arcsinh arctan arctanh
argmax argmax_channel
argmin argsort broadcast_axes broadcast_axis broadcast_hypot broadcast_like broadcast_mul
broadcast_power broadcast_to cast cbrt ceil cos cosh crop ctc_loss degrees erf erfinv exp
expand_dims expm1 fix flatten flip floor gamma gammaln hard_sigmoid identity linalg_gemm2
log log10 log1p log2 log_softmax logical_not make_loss max max_axis mean min min_axis
nanprod nansum negative norm one_hot ones_like pad pick prod radians rcbrt reciprocal repeat
reshape reshape_like reverse rint round rsqrt shape_array sigmoid sign sin sinh size_array
slice slice_axis slice_like smooth_l1 softmax softmax_cross_entropy softmin softsign sort
split squeeze stop_gradient sum sum_axis swapaxes take tan tile topk transpose trunc
zeros_like
""") | _names("""
GroupNorm _arange _contrib_SparseEmbedding _contrib_hawkesll _contrib_gradientmultiplier
_contrib_dequantize _contrib_quantize _contrib_quantize_v2 _contrib_requantize
_contrib_index_array
_eye _identity_with_attr_like_rhs _linspace _random_exponential _random_exponential_like
_random_gamma _random_gamma_like _random_generalized_negative_binomial
_random_generalized_negative_binomial_like _random_negative_binomial
_random_negative_binomial_like _random_normal _random_normal_like _random_poisson
_random_poisson_like _random_uniform _random_uniform_like _ravel_multi_index
_sample_multinomial _sparse_retain _split_v2 _square_sum _unravel_index batch_take cast_storage
depth_to_space diag gather_nd khatri_rao moments normal random_exponential random_gamma
random_generalized_negative_binomial random_negative_binomial random_normal random_poisson
random_uniform ravel_multi_index sample_multinomial scatter_nd space_to_depth uniform
unravel_index
_random_randint _rnn_param_concat random_randint
_histogram
_sample_exponential _sample_gamma _sample_generalized_negative_binomial
_sample_negative_binomial _sample_normal _sample_poisson _sample_uniform sample_exponential
sample_gamma sample_generalized_negative_binomial sample_negative_binomial sample_normal
sample_poisson sample_uniform
""")

_BF16_WIDEST = _names("""
Correlation
ElementWiseSum _Div _Equal _Greater _Greater_Equal _Lesser _Lesser_Equal _Logical_And
_Logical_Or _Logical_Xor _Maximum _Minimum _Minus _Mod _Mul _Not_Equal _Plus
_contrib_MultiBoxDetection _contrib_MultiBoxPrior _contrib_MultiBoxTarget
_contrib_MultiProposal _contrib_PSROIPooling _contrib_Proposal _contrib_ROIAlign
_contrib_box_iou _contrib_box_nms _contrib_box_non_maximum_suppression _div _equal _greater
_greater_equal _lesser _lesser_equal _logical_and _logical_or _logical_xor _maximum _minimum
_minus _mod _mul _not_equal _plus _sub add_n batch_dot broadcast_add broadcast_div
broadcast_equal broadcast_greater broadcast_greater_equal broadcast_lesser
broadcast_lesser_equal broadcast_logical_and broadcast_logical_or broadcast_logical_xor
broadcast_maximum broadcast_minimum broadcast_minus broadcast_mod broadcast_not_equal
broadcast_plus broadcast_sub dot elemwise_add elemwise_div elemwise_mul elemwise_sub stack
where
_random_pdf_dirichlet _random_pdf_exponential _random_pdf_gamma
_random_pdf_generalized_negative_binomial _random_pdf_negative_binomial _random_pdf_normal
_random_pdf_poisson _random_pdf_uniform random_pdf_dirichlet random_pdf_exponential
random_pdf_gamma random_pdf_generalized_negative_binomial random_pdf_negative_binomial
random_pdf_normal random_pdf_poisson random_pdf_uniform
""")

CONDITIONAL = (("Activation", "act_type", ["softrelu"]), ("LeakyReLU", "act_type", ["elu", "selu"]))
LOSS_OUTPUTS = (
    "SoftmaxOutput",
    "LinearRegressionOutput",
    "LogisticRegressionOutput",
    "MAERegressionOutput",
)
# bfloat16 BatchNorm keeps gamma/beta/moving statistics in float32 (data input: "").
BF16_FP32_PARAMS = {"BatchNorm": ["", "gamma", "beta", "moving_mean", "moving_var"]}

# Operators whose outputs MXNet names (its FListOutputNames): a cast inserted after one is
# called ``<node>_<output name>_amp_cast_<dtype>``; after any other operator
# ``<node>_<output index>_amp_cast_<dtype>`` (``relu1_0_amp_cast_float16``).
NAMED_OUTPUTS = _names("""
Activation BatchNorm BilinearSampler Concat Convolution Correlation Crop Deconvolution
Dropout FullyConnected GridGenerator IdentityAttachKLSparseReg InstanceNorm
L2Normalization LRN LayerNorm LeakyReLU MakeLoss Pad Pooling RNN ROIPooling SVMOutput
SequenceLast SequenceMask SequenceReverse SliceChannel SoftmaxActivation SoftmaxOutput
SpatialTransformer SwapAxis UpSampling _contrib_SyncBatchNorm elemwise_add make_loss softmax
""")

_TABLES = {
    "float16": {"lp": _FP16_LP, "follow": _FP16_FOLLOW, "fp32": _FP16_FP32, "widest": _FP16_WIDEST},
    "bfloat16": {
        "lp": _BF16_LP,
        "follow": _BF16_FOLLOW,
        "fp32": _BF16_FP32,
        "widest": _BF16_WIDEST,
    },
}


def table(target_dtype) -> dict:
    """The operator classes for ``target_dtype`` ('float16' or 'bfloat16')."""
    name = _dtype_name(target_dtype)
    return _TABLES[name]


def _dtype_name(target_dtype) -> str:
    if isinstance(target_dtype, str) and target_dtype in _TABLES:
        return target_dtype
    try:
        name = np.dtype(target_dtype).name
    except TypeError:
        name = str(target_dtype)
    if name not in _TABLES:
        raise ValueError(f"AMP target_dtype must be 'float16' or 'bfloat16', got {target_dtype!r}")
    return name
