"""The operator case table shared by the golden generator and the mxmod op tests.

Pure data: imports only the standard library, so both the mxmod environment and the
side environment with real MXNet 1.9.1 (`tests/fixtures/gen_op_goldens.py`) import it.

A `Case` names one symbol and the inputs to run it on:

* `op` is either the name of an `mx.sym` function, called as
  ``getattr(mx.sym, op)(*variables, name='op', **kwargs)``, or a Python operator-sugar
  expression ``'sugar:<expr>'``. The expression may use the names in `args` (bound to
  `mx.sym.Variable`s) and the keys of `kwargs` (plain Python scalars), e.g.
  ``'sugar:data + scalar'`` with ``kwargs={'scalar': 2.5}`` builds `_plus_scalar`,
  ``'sugar:scalar - data'`` builds `_rminus_scalar`, ``'sugar:a > b'`` builds `_greater`.
  Sugar cannot take a name, so it is evaluated inside a fresh ``mx.name.NameManager()``
  and the node keeps MXNet's automatic name (``_plusscalar0``, ``_greater_scalar0``...).
  `build_symbol` does both, given the `mx` module of either package.
* `args` are the variables passed positionally, in order; `shapes` gives their shapes.
  Everything else (weights, biases, labels left out of `args`, aux states) is created by
  the op and sized by shape inference; such names (``op_weight``, ``op_label``,
  ``op_moving_var``...) may still appear in `ints` and `positive`.
* `ints[name] = K` fills `name` with integer values in ``[0, K)`` stored as float32 (class
  labels, indices); ``(lo, hi)`` means ``[lo, hi)``. Integer inputs get ``grad_req='null'``;
  float labels keep ``'write'`` (MXNet writes zeros there).
* `positive` names inputs filled from ``uniform[0.5, 2)`` (log/sqrt arguments,
  denominators, variances); every other input is standard normal.
* `values[name]` gives an input's values explicitly (nested lists, reshaped to the inferred
  shape): boxes, ROIs, image info. `no_grad` names inputs bound with ``grad_req='null'``
  (ROIs, anchors: MXNet writes no meaningful gradient there).
* `op` may be dotted (``'contrib.ROIAlign'``): resolved attribute by attribute from `mx.sym`.
* `is_train` is passed to ``forward``; `random=True` marks stochastic ops (Dropout): the
  fixture is still saved but tests compare only distribution-free properties.
* `check_grad=False`: the op has no meaningful gradient (integer outputs, argmax...); the
  generator binds every input with ``grad_req='null'`` and runs no backward, so the
  fixture has no ``ograd:``/``grad:`` keys.

Ops in `HEAD_GRAD_IGNORED` return a gradient that is not the derivative of their forward
(loss heads, BlockGrad): compare them to the goldens, never to numeric gradients.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SUGAR = 'sugar:'

HEAD_GRAD_IGNORED = frozenset(
    {
        'SoftmaxOutput',
        'LinearRegressionOutput',
        'LogisticRegressionOutput',
        'MAERegressionOutput',
        'SVMOutput',
        'MakeLoss',
        'make_loss',
        'BlockGrad',
        'stop_gradient',
    }
)


@dataclass
class Case:
    """One operator configuration; see the module docstring for each field."""

    id: str
    op: str
    args: list[str] = field(default_factory=lambda: ['data'])
    kwargs: dict[str, Any] = field(default_factory=dict)
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    ints: dict[str, int | tuple[int, int]] = field(default_factory=dict)
    positive: set[str] = field(default_factory=set)
    values: dict[str, Any] = field(default_factory=dict)
    no_grad: set[str] = field(default_factory=set)
    is_train: bool = True
    random: bool = False
    check_grad: bool = True

    def __post_init__(self) -> None:
        missing = [a for a in self.args if a not in self.shapes]
        if missing:
            raise ValueError(f'case {self.id!r}: args {missing} have no entry in shapes')

    @property
    def is_sugar(self) -> bool:
        return self.op.startswith(SUGAR)

    @property
    def int_range(self) -> dict[str, tuple[int, int]]:
        """`ints` normalised to half-open ``(lo, hi)`` ranges."""
        return {k: (0, v) if isinstance(v, int) else tuple(v) for k, v in self.ints.items()}


def resolve_op(case: Case, mx: Any) -> Any:
    """The `mx.sym` function of a non-sugar case (dotted names walk namespaces); None if absent."""
    fn = mx.sym
    for part in case.op.split('.'):
        fn = getattr(fn, part, None)
        if fn is None:
            return None
    return fn


def build_symbol(case: Case, mx: Any) -> Any:
    """Builds the case's symbol with `mx` (real `mxnet` or `mxmod`)."""
    variables = {name: mx.sym.Variable(name) for name in case.args}
    if case.is_sugar:
        scope = {**case.kwargs, **variables}
        with mx.name.NameManager():
            return eval(case.op[len(SUGAR) :], {'__builtins__': {}}, scope)  # noqa: S307
    fn = resolve_op(case, mx)
    if fn is None:
        raise AttributeError(f'case {case.id!r}: mx.sym has no {case.op!r}')
    return fn(*[variables[n] for n in case.args], name='op', **case.kwargs)


def C(id: str, op: str, shapes: dict, kwargs: dict | None = None, **fields: Any) -> Case:
    """Compact constructor: `args` defaults to the keys of `shapes`, in order."""
    fields.setdefault('args', list(shapes))
    fields['ints'] = dict(fields.get('ints', {}))  # no sharing between cases
    fields['positive'] = set(fields.get('positive', ()))
    fields['no_grad'] = set(fields.get('no_grad', ()))
    return Case(id=id, op=op, shapes=dict(shapes), kwargs=dict(kwargs or {}), **fields)


D = 'data'
BN_POS = {'op_moving_var'}

# ----------------------------------------------------------------------------- issue #2
ISSUE2_CASES: list[Case] = [
    # FullyConnected
    C('fc_basic', 'FullyConnected', {D: (2, 5)}, {'num_hidden': 3}),
    C('fc_flatten_4d', 'FullyConnected', {D: (2, 3, 2, 2)}, {'num_hidden': 4}),
    C('fc_flatten_false', 'FullyConnected', {D: (2, 3, 4)}, {'num_hidden': 5, 'flatten': False}),
    C('fc_no_bias', 'FullyConnected', {D: (3, 4)}, {'num_hidden': 2, 'no_bias': True}),
    C(
        'fc_flatten_false_no_bias',
        'FullyConnected',
        {D: (2, 2, 3)},
        {'num_hidden': 3, 'flatten': False, 'no_bias': True},
    ),
    # Convolution
    C('conv1d', 'Convolution', {D: (2, 3, 8)}, {'kernel': (3,), 'num_filter': 4}),
    C(
        'conv1d_stride_pad_dilate',
        'Convolution',
        {D: (2, 2, 9)},
        {'kernel': (3,), 'num_filter': 3, 'stride': (2,), 'pad': (1,), 'dilate': (2,)},
    ),
    C('conv2d', 'Convolution', {D: (2, 3, 6, 6)}, {'kernel': (3, 3), 'num_filter': 4}),
    C(
        'conv2d_stride_pad',
        'Convolution',
        {D: (2, 2, 5, 5)},
        {'kernel': (3, 3), 'num_filter': 3, 'stride': (2, 2), 'pad': (1, 1)},
    ),
    C(
        'conv2d_dilate',
        'Convolution',
        {D: (1, 2, 7, 7)},
        {'kernel': (3, 3), 'num_filter': 2, 'dilate': (2, 2)},
    ),
    C(
        'conv2d_rect',
        'Convolution',
        {D: (1, 2, 5, 6)},
        {'kernel': (2, 3), 'num_filter': 2, 'stride': (1, 2), 'pad': (0, 1)},
    ),
    C(
        'conv2d_group',
        'Convolution',
        {D: (1, 4, 5, 5)},
        {'kernel': (3, 3), 'num_filter': 6, 'num_group': 2},
    ),
    C(
        'conv2d_depthwise',
        'Convolution',
        {D: (1, 4, 5, 5)},
        {'kernel': (3, 3), 'num_filter': 4, 'num_group': 4, 'pad': (1, 1)},
    ),
    C(
        'conv2d_no_bias',
        'Convolution',
        {D: (2, 2, 4, 4)},
        {'kernel': (2, 2), 'num_filter': 3, 'no_bias': True},
    ),
    C('conv3d', 'Convolution', {D: (1, 2, 4, 4, 4)}, {'kernel': (2, 2, 2), 'num_filter': 2}),
    C(
        'conv3d_stride_pad_group',
        'Convolution',
        {D: (1, 2, 4, 4, 4)},
        {
            'kernel': (3, 3, 3),
            'num_filter': 2,
            'stride': (2, 2, 2),
            'pad': (1, 1, 1),
            'num_group': 2,
            'no_bias': True,
        },
    ),
    # Pooling
    C(
        'pool_max_2d',
        'Pooling',
        {D: (2, 2, 5, 5)},
        {'kernel': (2, 2), 'stride': (2, 2), 'pool_type': 'max'},
    ),
    C(
        'pool_max_full',
        'Pooling',
        {D: (2, 2, 5, 5)},
        {'kernel': (2, 2), 'stride': (2, 2), 'pool_type': 'max', 'pooling_convention': 'full'},
    ),
    C(
        'pool_max_pad',
        'Pooling',
        {D: (1, 2, 5, 5)},
        {'kernel': (3, 3), 'stride': (2, 2), 'pad': (1, 1), 'pool_type': 'max'},
    ),
    C('pool_avg_2d', 'Pooling', {D: (1, 2, 5, 5)}, {'kernel': (3, 3), 'pool_type': 'avg'}),
    C(
        'pool_avg_valid',
        'Pooling',
        {D: (1, 2, 5, 5)},
        {'kernel': (2, 2), 'stride': (2, 2), 'pool_type': 'avg', 'pooling_convention': 'valid'},
    ),
    C(
        'pool_avg_full',
        'Pooling',
        {D: (1, 2, 5, 5)},
        {'kernel': (2, 2), 'stride': (2, 2), 'pool_type': 'avg', 'pooling_convention': 'full'},
    ),
    C(
        'pool_avg_pad_default',
        'Pooling',
        {D: (1, 2, 5, 5)},
        {'kernel': (3, 3), 'stride': (2, 2), 'pad': (1, 1), 'pool_type': 'avg'},
    ),
    C(
        'pool_avg_pad_include',
        'Pooling',
        {D: (1, 2, 5, 5)},
        {
            'kernel': (3, 3),
            'stride': (2, 2),
            'pad': (1, 1),
            'pool_type': 'avg',
            'count_include_pad': True,
        },
    ),
    C(
        'pool_avg_pad_exclude',
        'Pooling',
        {D: (1, 2, 5, 5)},
        {
            'kernel': (3, 3),
            'stride': (2, 2),
            'pad': (1, 1),
            'pool_type': 'avg',
            'count_include_pad': False,
        },
    ),
    C(
        'pool_sum',
        'Pooling',
        {D: (1, 2, 4, 4)},
        {'kernel': (2, 2), 'stride': (2, 2), 'pool_type': 'sum'},
    ),
    C(
        'pool_sum_pad_full',
        'Pooling',
        {D: (1, 2, 5, 5)},
        {
            'kernel': (2, 2),
            'stride': (2, 2),
            'pad': (1, 1),
            'pool_type': 'sum',
            'pooling_convention': 'full',
        },
    ),
    C(
        'pool_global_max',
        'Pooling',
        {D: (2, 3, 4, 4)},
        {'kernel': (2, 2), 'global_pool': True, 'pool_type': 'max'},
    ),
    C(
        'pool_global_avg',
        'Pooling',
        {D: (2, 3, 4, 4)},
        {'kernel': (1, 1), 'global_pool': True, 'pool_type': 'avg'},
    ),
    C(
        'pool_global_sum',
        'Pooling',
        {D: (2, 3, 3, 3)},
        {'kernel': (3, 3), 'global_pool': True, 'pool_type': 'sum'},
    ),
    C(
        'pool_1d_max',
        'Pooling',
        {D: (2, 2, 7)},
        {'kernel': (3,), 'stride': (2,), 'pool_type': 'max'},
    ),
    C(
        'pool_3d_avg',
        'Pooling',
        {D: (1, 2, 4, 4, 4)},
        {'kernel': (2, 2, 2), 'stride': (2, 2, 2), 'pool_type': 'avg'},
    ),
    C(
        'pool_lp2',
        'Pooling',
        {D: (1, 2, 4, 4)},
        {'kernel': (2, 2), 'stride': (2, 2), 'pool_type': 'lp', 'p_value': 2},
    ),
    # Activation
    *[
        C(f'act_{t}', 'Activation', {D: (3, 4)}, {'act_type': t})
        for t in ('relu', 'sigmoid', 'tanh', 'softrelu', 'softsign')
    ],
    C('act_relu_4d', 'Activation', {D: (2, 2, 3, 3)}, {'act_type': 'relu'}),
    # BatchNorm (CPU MXNet writes the moving stats during backward; auxout is after it)
    C('bn_2d_fix_gamma_default', 'BatchNorm', {D: (4, 3)}, positive=BN_POS),
    C('bn_2d_train', 'BatchNorm', {D: (4, 3)}, {'fix_gamma': False}, positive=BN_POS),
    C(
        'bn_4d_train',
        'BatchNorm',
        {D: (2, 3, 3, 3)},
        {'fix_gamma': False, 'momentum': 0.8, 'eps': 1e-3},
        positive=BN_POS,
    ),
    C(
        'bn_4d_fix_gamma',
        'BatchNorm',
        {D: (2, 3, 3, 3)},
        {'fix_gamma': True, 'eps': 2e-5},
        positive=BN_POS,
    ),
    C(
        'bn_4d_infer',
        'BatchNorm',
        {D: (2, 3, 3, 3)},
        {'fix_gamma': False},
        positive=BN_POS,
        is_train=False,
    ),
    C('bn_2d_infer_fix_gamma', 'BatchNorm', {D: (4, 3)}, positive=BN_POS, is_train=False),
    C(
        'bn_4d_global_stats',
        'BatchNorm',
        {D: (2, 3, 3, 3)},
        {'fix_gamma': False, 'use_global_stats': True},
        positive=BN_POS,
    ),
    C(
        'bn_3d_axis_last',
        'BatchNorm',
        {D: (2, 3, 4)},
        {'fix_gamma': False, 'axis': -1, 'momentum': 0.5},
        positive=BN_POS,
    ),
    C(
        'bn_output_mean_var',
        'BatchNorm',
        {D: (4, 3)},
        {'fix_gamma': False, 'output_mean_var': True},
        positive=BN_POS,
    ),
    # Dropout
    C('dropout_train', 'Dropout', {D: (4, 10)}, {'p': 0.5}, random=True),
    C('dropout_train_p03', 'Dropout', {D: (4, 10)}, {'p': 0.3}, random=True),
    C('dropout_axes', 'Dropout', {D: (2, 3, 8)}, {'p': 0.5, 'axes': (2,)}, random=True),
    C('dropout_infer', 'Dropout', {D: (4, 10)}, {'p': 0.5}, is_train=False),
    # Flatten
    C('flatten_4d', 'Flatten', {D: (2, 3, 2, 2)}),
    C('flatten_2d', 'Flatten', {D: (3, 4)}),
    C('flatten_alias', 'flatten', {D: (2, 3, 4)}),
    # Reshape
    C('reshape_plain', 'Reshape', {D: (2, 3, 4)}, {'shape': (4, 6)}),
    C('reshape_code0_m1', 'Reshape', {D: (2, 3, 4)}, {'shape': (0, -1)}),
    C('reshape_m1_middle', 'Reshape', {D: (2, 3, 4)}, {'shape': (2, -1, 2)}),
    C('reshape_m2', 'Reshape', {D: (2, 3, 4)}, {'shape': (-2,)}),
    C('reshape_0_m2', 'Reshape', {D: (2, 3, 4)}, {'shape': (0, -2)}),
    C('reshape_m3', 'Reshape', {D: (2, 3, 4)}, {'shape': (-3, 0)}),
    C('reshape_m4', 'Reshape', {D: (2, 3, 4)}, {'shape': (-4, 1, 2, -2)}),
    C('reshape_m4_m1', 'Reshape', {D: (6, 4)}, {'shape': (-4, -1, 3, 0)}),
    C('reshape_reverse', 'Reshape', {D: (10, 5, 4)}, {'shape': (-1, 0), 'reverse': True}),
    C('reshape_alias', 'reshape', {D: (2, 3, 4)}, {'shape': (-1,)}),
    # Concat
    C('concat_dim1_3in', 'Concat', {'a': (2, 3), 'b': (2, 2), 'c': (2, 4)}, {'dim': 1}),
    C('concat_dim0_3in', 'Concat', {'a': (1, 3), 'b': (2, 3), 'c': (3, 3)}, {'dim': 0}),
    C('concat_dim2_2in', 'Concat', {'a': (2, 2, 3), 'b': (2, 2, 1)}, {'dim': 2}),
    C('concat_default_dim', 'concat', {'a': (2, 1, 2), 'b': (2, 3, 2)}),
    # elementwise binary ops and operator sugar
    C('elemwise_add', 'elemwise_add', {'a': (3, 4), 'b': (3, 4)}),
    C('elemwise_sub', 'elemwise_sub', {'a': (3, 4), 'b': (3, 4)}),
    C('elemwise_mul', 'elemwise_mul', {'a': (3, 4), 'b': (3, 4)}),
    C('elemwise_div', 'elemwise_div', {'a': (3, 4), 'b': (3, 4)}, positive={'b'}),
    *[
        C(f'sugar_{n}', f'sugar:a {o} b', {'a': (3, 4), 'b': (3, 4)}, positive=p)
        for n, o, p in (
            ('plus', '+', set()),
            ('minus', '-', set()),
            ('mul', '*', set()),
            ('div', '/', {'b'}),
        )
    ],
    *[
        C(f'sugar_{n}', f'sugar:{e}', {D: (3, 4)}, {'scalar': s}, positive=p)
        for n, e, s, p in (
            ('plus_scalar', 'data + scalar', 2.5, set()),
            ('plus_scalar_int', 'data + scalar', 2, set()),
            ('radd_scalar', 'scalar + data', 1.5, set()),
            ('minus_scalar', 'data - scalar', 0.5, set()),
            ('rminus_scalar', 'scalar - data', 3.0, set()),
            ('mul_scalar', 'data * scalar', -1.5, set()),
            ('rmul_scalar', 'scalar * data', 4, set()),
            ('div_scalar', 'data / scalar', 4.0, set()),
            ('rdiv_scalar', 'scalar / data', 2.0, {D}),
            ('power_scalar', 'data ** scalar', 3.0, set()),
            ('power_scalar_half', 'data ** scalar', 0.5, {D}),
            ('rpower_scalar', 'scalar ** data', 2.0, set()),
            ('mod_scalar', 'data % scalar', 0.75, {D}),
            ('greater_scalar', 'data > scalar', 0.1, set()),
            ('greater_equal_scalar', 'data >= scalar', 0.1, set()),
            ('lesser_scalar', 'data < scalar', -0.2, set()),
            ('lesser_equal_scalar', 'data <= scalar', -0.2, set()),
            ('equal_scalar', 'data == scalar', 0.0, set()),
            ('not_equal_scalar', 'data != scalar', 0.0, set()),
        )
    ],
    C('sugar_negative', 'sugar:-data', {D: (3, 4)}),
    *[
        C(f'sugar_{n}', f'sugar:a {o} b', {'a': (3, 4), 'b': (3, 4)})
        for n, o in (
            ('greater', '>'),
            ('greater_equal', '>='),
            ('lesser', '<'),
            ('lesser_equal', '<='),
            ('equal', '=='),
            ('not_equal', '!='),
        )
    ],
    C(
        'sugar_expr_chain',
        'sugar:(a + b) * scalar - a / 2',
        {'a': (2, 3), 'b': (2, 3)},
        {'scalar': 3.0},
    ),
    # SoftmaxOutput (labels are auto-created `op_label` unless passed in args)
    C('so_plain', 'SoftmaxOutput', {D: (4, 5)}, ints={'op_label': 5}),
    C('so_grad_scale', 'SoftmaxOutput', {D: (4, 5)}, {'grad_scale': 2.0}, ints={'op_label': 5}),
    C(
        'so_norm_null',
        'SoftmaxOutput',
        {D: (4, 3)},
        {'normalization': 'null', 'grad_scale': 2.0},
        ints={'op_label': 3},
    ),
    C(
        'so_norm_batch',
        'SoftmaxOutput',
        {D: (4, 3)},
        {'normalization': 'batch', 'grad_scale': 2.0},
        ints={'op_label': 3},
    ),
    C(
        'so_norm_valid_no_use_ignore',
        'SoftmaxOutput',
        {D: (6, 3)},
        {'normalization': 'valid', 'ignore_label': 0, 'grad_scale': 2.0},
        ints={'op_label': 3},
    ),
    C(
        'so_use_ignore',
        'SoftmaxOutput',
        {D: (6, 3)},
        {'use_ignore': True, 'ignore_label': 2},
        ints={'op_label': 3},
    ),
    C(
        'so_use_ignore_valid',
        'SoftmaxOutput',
        {D: (6, 3)},
        {'use_ignore': True, 'ignore_label': 1, 'normalization': 'valid'},
        ints={'op_label': 3},
    ),
    C(
        'so_ignore_minus1',
        'SoftmaxOutput',
        {D: (8, 3)},
        {'use_ignore': True, 'normalization': 'valid'},
        ints={'op_label': (-1, 3)},
    ),
    C('so_out_of_range_label', 'SoftmaxOutput', {D: (8, 3)}, ints={'op_label': (-1, 6)}),
    C('so_smooth_alpha', 'SoftmaxOutput', {D: (4, 5)}, {'smooth_alpha': 0.1}, ints={'op_label': 5}),
    C(
        'so_multi_output',
        'SoftmaxOutput',
        {D: (2, 3, 2, 2)},
        {'multi_output': True},
        ints={'op_label': 3},
    ),
    C(
        'so_multi_output_3d',
        'SoftmaxOutput',
        {D: (2, 3, 4)},
        {'multi_output': True},
        ints={'op_label': 3},
    ),
    C(
        'so_multi_output_batch',
        'SoftmaxOutput',
        {D: (2, 3, 2, 2)},
        {'multi_output': True, 'normalization': 'batch'},
        ints={'op_label': 3},
    ),
    C(
        'so_multi_output_valid_ignore',
        'SoftmaxOutput',
        {D: (2, 3, 2, 2)},
        {'multi_output': True, 'normalization': 'valid', 'use_ignore': True, 'ignore_label': 2},
        ints={'op_label': 3},
    ),
    C(
        'so_multi_output_label_nhw',
        'SoftmaxOutput',
        {D: (2, 3, 2, 2), 'label': (2, 2, 2)},
        {'multi_output': True},
        ints={'label': 3},
    ),
    C(
        'so_preserve_shape',
        'SoftmaxOutput',
        {D: (2, 3, 4)},
        {'preserve_shape': True},
        ints={'op_label': 4},
    ),
    C('so_prob_labels', 'SoftmaxOutput', {D: (3, 4), 'label': (3, 4)}, positive={'label'}),
    C('so_4d_flat', 'SoftmaxOutput', {D: (2, 3, 2, 2)}, ints={'op_label': 12}),
    C('so_out_grad', 'SoftmaxOutput', {D: (3, 4)}, {'out_grad': True}, ints={'op_label': 4}),
    C('so_alias_softmax', 'Softmax', {D: (3, 4)}, ints={'op_label': 4}),
    # regression outputs
    C('linreg', 'LinearRegressionOutput', {D: (3, 4)}),
    C('linreg_grad_scale', 'LinearRegressionOutput', {D: (3, 3)}, {'grad_scale': 3.0}),
    C('linreg_n1', 'LinearRegressionOutput', {D: (4, 1), 'label': (4,)}),
    C('logreg', 'LogisticRegressionOutput', {D: (3, 4)}, ints={'op_label': 2}),
    C('logreg_grad_scale', 'LogisticRegressionOutput', {D: (3, 2)}, {'grad_scale': 0.5}),
    C('logreg_n1', 'LogisticRegressionOutput', {D: (4, 1), 'label': (4,)}, ints={'label': 2}),
    C('maereg', 'MAERegressionOutput', {D: (3, 4)}),
    C('maereg_grad_scale', 'MAERegressionOutput', {D: (3, 4)}, {'grad_scale': 2.0}),
    C('maereg_n1', 'MAERegressionOutput', {D: (4, 1), 'label': (4,)}),
    # MakeLoss / make_loss / BlockGrad
    C('makeloss_null', 'MakeLoss', {D: (3, 4)}),
    C('makeloss_grad_scale', 'MakeLoss', {D: (3, 4)}, {'grad_scale': 0.5}),
    C('makeloss_batch', 'MakeLoss', {D: (3, 4)}, {'normalization': 'batch', 'grad_scale': 3.0}),
    C(
        'makeloss_valid',
        'MakeLoss',
        {D: (2, 3)},
        {'normalization': 'valid', 'valid_thresh': 0.5, 'grad_scale': 2.0},
    ),
    C('makeloss_valid_default_thresh', 'MakeLoss', {D: (3, 4)}, {'normalization': 'valid'}),
    C('make_loss', 'make_loss', {D: (3, 4)}),
    C('blockgrad', 'BlockGrad', {D: (3, 4)}),
    C('stop_gradient', 'stop_gradient', {D: (3, 4)}),
    # softmax / log_softmax
    C('softmax_default', 'softmax', {D: (3, 4)}),
    C('softmax_axis0', 'softmax', {D: (3, 4)}, {'axis': 0}),
    C('softmax_axis1_3d', 'softmax', {D: (2, 3, 4)}, {'axis': 1}),
    C('softmax_temperature', 'softmax', {D: (3, 4)}, {'temperature': 2.0}),
    C('log_softmax_default', 'log_softmax', {D: (3, 4)}),
    C('log_softmax_axis0', 'log_softmax', {D: (3, 4)}, {'axis': 0}),
    C('log_softmax_temperature', 'log_softmax', {D: (2, 3, 2)}, {'axis': 1, 'temperature': 0.5}),
]

# ----------------------------------------------------------------------------- issue #5
_UNARY = (
    'exp',
    'expm1',
    'cbrt',
    'square',
    'abs',
    'sign',
    'negative',
    'sin',
    'cos',
    'arctan',
    'sinh',
    'cosh',
    'tanh',
    'arcsinh',
    'sigmoid',
    'relu',
    'softsign',
    'erf',
    'floor',
    'ceil',
    'round',
    'rint',
    'fix',
    'trunc',
    'degrees',
    'radians',
    'identity',
)
_UNARY_POS = (
    'log',
    'log2',
    'log10',
    'log1p',
    'sqrt',
    'rsqrt',
    'rcbrt',
    'reciprocal',
    'gamma',
    'gammaln',
)
_BROADCAST = (
    'add',
    'sub',
    'mul',
    'div',
    'power',
    'maximum',
    'minimum',
    'hypot',
    'mod',
    'equal',
    'not_equal',
    'greater',
    'greater_equal',
    'lesser',
    'lesser_equal',
    'logical_and',
    'logical_or',
    'logical_xor',
)
_REDUCE = {'sum': set(), 'mean': set(), 'max': set(), 'min': set(), 'prod': {D}, 'nansum': set()}
_RED = {
    'all': {},
    'axis1': {'axis': 1},
    'axes02_keepdims': {'axis': (0, 2), 'keepdims': True},
    'exclude': {'axis': 1, 'exclude': True},
}
_SEQ = {D: (4, 3, 2), 'sequence_length': (3,)}
_SEQ_INTS = {'sequence_length': (1, 5)}


def _rnn(id: str, mode: str, layers: int, bidir: bool, states: bool, **kw: Any) -> Case:
    attrs = {
        'mode': mode,
        'state_size': 3,
        'num_layers': layers,
        'bidirectional': bidir,
        'state_outputs': states,
        **kw,
    }
    return C(id, 'RNN', {D: (3, 2, 4)}, attrs)


ISSUE5_CASES: list[Case] = [
    # Deconvolution
    C('deconv2d', 'Deconvolution', {D: (1, 2, 4, 4)}, {'kernel': (3, 3), 'num_filter': 3}),
    C(
        'deconv2d_stride_pad_adj',
        'Deconvolution',
        {D: (1, 2, 4, 4)},
        {'kernel': (3, 3), 'num_filter': 3, 'stride': (2, 2), 'pad': (1, 1), 'adj': (1, 1)},
    ),
    C(
        'deconv2d_target_shape',
        'Deconvolution',
        {D: (1, 2, 4, 4)},
        {'kernel': (3, 3), 'num_filter': 2, 'stride': (2, 2), 'target_shape': (8, 8)},
    ),
    C(
        'deconv2d_bias_group',
        'Deconvolution',
        {D: (1, 4, 3, 3)},
        {'kernel': (2, 2), 'num_filter': 4, 'num_group': 2, 'no_bias': False},
    ),
    C(
        'deconv2d_dilate',
        'Deconvolution',
        {D: (1, 2, 3, 3)},
        {'kernel': (2, 2), 'num_filter': 2, 'dilate': (2, 2)},
    ),
    C(
        'deconv1d',
        'Deconvolution',
        {D: (2, 2, 5)},
        {'kernel': (3,), 'num_filter': 2, 'stride': (2,), 'no_bias': False},
    ),
    # LeakyReLU
    C('leaky_default', 'LeakyReLU', {D: (3, 4)}),
    C('leaky_slope', 'LeakyReLU', {D: (3, 4)}, {'act_type': 'leaky', 'slope': 0.1}),
    C('leaky_prelu', 'LeakyReLU', {D: (2, 3, 2, 2)}, {'act_type': 'prelu'}),
    C('leaky_elu', 'LeakyReLU', {D: (3, 4)}, {'act_type': 'elu', 'slope': 0.7}),
    C('leaky_selu', 'LeakyReLU', {D: (3, 4)}, {'act_type': 'selu'}),
    C('leaky_gelu', 'LeakyReLU', {D: (3, 4)}, {'act_type': 'gelu'}),
    # No rrelu case: MXNet 1.9.1 lists a second output `op_mask` that is uninitialised memory
    # at inference, and rrelu with is_train=True crashes the CPU build (kTempSpace check).
    # Embedding and normalisations
    C('embedding', 'Embedding', {D: (2, 3)}, {'input_dim': 5, 'output_dim': 4}, ints={D: 5}),
    C(
        'embedding_oob',
        'Embedding',
        {D: (4,)},
        {'input_dim': 3, 'output_dim': 2},
        ints={D: (-2, 6)},
    ),
    C('layernorm', 'LayerNorm', {D: (2, 3, 4)}),
    C('layernorm_axis1', 'LayerNorm', {D: (2, 3, 4)}, {'axis': 1, 'eps': 1e-3}),
    C('instancenorm', 'InstanceNorm', {D: (2, 3, 4, 4)}),
    C('instancenorm_3d', 'InstanceNorm', {D: (2, 2, 5)}, {'eps': 0.01}),
    *[
        C(f'l2norm_{m}', 'L2Normalization', {D: (2, 3, 2, 2)}, {'mode': m})
        for m in ('instance', 'channel', 'spatial')
    ],
    C('lrn', 'LRN', {D: (1, 4, 3, 3)}, {'nsize': 3}),
    C(
        'lrn_params',
        'LRN',
        {D: (2, 5, 2, 2)},
        {'nsize': 5, 'alpha': 0.01, 'beta': 0.5, 'knorm': 1.0},
    ),
    C(
        'upsampling_nearest',
        'UpSampling',
        {D: (1, 2, 3, 3)},
        {'scale': 2, 'sample_type': 'nearest'},
    ),
    C(
        'upsampling_nearest_3x',
        'UpSampling',
        {D: (2, 1, 2, 2)},
        {'scale': 3, 'sample_type': 'nearest'},
    ),
    C('crop_hw', 'Crop', {D: (1, 2, 5, 5)}, {'h_w': (3, 3), 'offset': (1, 1)}),
    C('crop_like_center', 'Crop', {'a': (1, 2, 6, 6), 'b': (1, 1, 3, 4)}, {'center_crop': True}),
    C('crop_like_offset', 'Crop', {'a': (1, 2, 6, 6), 'b': (1, 1, 3, 4)}, {'offset': (2, 1)}),
    C(
        'pad_constant',
        'Pad',
        {D: (1, 2, 3, 3)},
        {'mode': 'constant', 'pad_width': (0, 0, 0, 0, 1, 1, 2, 0), 'constant_value': 1.5},
    ),
    C(
        'pad_edge',
        'Pad',
        {D: (1, 2, 3, 3)},
        {'mode': 'edge', 'pad_width': (0, 0, 0, 0, 1, 2, 1, 1)},
    ),
    C(
        'pad_reflect',
        'pad',
        {D: (1, 2, 3, 3)},
        {'mode': 'reflect', 'pad_width': (0, 0, 0, 0, 2, 1, 1, 2)},
    ),
    # sequence ops (layout TNC; lengths in [1, T])
    C('seqmask_nolen', 'SequenceMask', {D: (4, 3, 2)}),
    C(
        'seqmask',
        'SequenceMask',
        _SEQ,
        {'use_sequence_length': True, 'value': -1.0},
        ints=_SEQ_INTS,
    ),
    C(
        'seqmask_axis1',
        'SequenceMask',
        {D: (4, 4, 2), 'sequence_length': (4,)},
        {'use_sequence_length': True, 'axis': 1},
        ints={'sequence_length': (1, 5)},
    ),
    C('seqlast_nolen', 'SequenceLast', {D: (4, 3, 2)}),
    C('seqlast', 'SequenceLast', _SEQ, {'use_sequence_length': True}, ints=_SEQ_INTS),
    C('seqreverse_nolen', 'SequenceReverse', {D: (4, 3, 2)}),
    C('seqreverse', 'SequenceReverse', _SEQ, {'use_sequence_length': True}, ints=_SEQ_INTS),
    C('softmaxact_instance', 'SoftmaxActivation', {D: (2, 3, 2)}),
    C('softmaxact_channel', 'SoftmaxActivation', {D: (2, 3, 2, 2)}, {'mode': 'channel'}),
    C('svm_l2', 'SVMOutput', {D: (4, 3)}, ints={'op_label': 3}),
    C('svm_l1', 'SVMOutput', {D: (4, 3)}, {'use_linear': True}, ints={'op_label': 3}),
    C(
        'svm_margin_coef',
        'SVMOutput',
        {D: (4, 3)},
        {'margin': 0.5, 'regularization_coefficient': 2.0},
        ints={'op_label': 3},
    ),
    # shape manipulation
    C('transpose_default', 'transpose', {D: (2, 3, 4)}),
    C('transpose_axes', 'transpose', {D: (2, 3, 4)}, {'axes': (0, 2, 1)}),
    C('expand_dims_1', 'expand_dims', {D: (2, 3)}, {'axis': 1}),
    C('expand_dims_neg', 'expand_dims', {D: (2, 3)}, {'axis': -1}),
    C('squeeze_all', 'squeeze', {D: (2, 1, 3, 1)}),
    C('squeeze_axis', 'squeeze', {D: (2, 1, 3, 1)}, {'axis': (1,)}),
    C('swapaxes', 'swapaxes', {D: (2, 3, 4)}, {'dim1': 0, 'dim2': 2}),
    C('swapaxis_op', 'SwapAxis', {D: (2, 3, 4)}, {'dim1': 1, 'dim2': 2}),
    C('slicechannel', 'SliceChannel', {D: (2, 6, 2)}, {'num_outputs': 3}),
    C(
        'slicechannel_squeeze',
        'SliceChannel',
        {D: (3, 2)},
        {'num_outputs': 3, 'axis': 0, 'squeeze_axis': True},
    ),
    C('split_alias', 'split', {D: (2, 4)}, {'num_outputs': 2, 'axis': -1}),
    C('slice', 'slice', {D: (3, 4)}, {'begin': (0, 1), 'end': (2, 3)}),
    C(
        'slice_none_step',
        'slice',
        {D: (3, 4, 2)},
        {'begin': (None, 3), 'end': (None, 0), 'step': (None, -1)},
    ),
    C('slice_axis', 'slice_axis', {D: (3, 5)}, {'axis': 1, 'begin': 1, 'end': 4}),
    C('slice_axis_end_none', 'slice_axis', {D: (4, 3)}, {'axis': 0, 'begin': -2, 'end': None}),
    C('slice_like', 'slice_like', {D: (4, 5), 'shape_like': (2, 3)}),
    C('slice_like_axes', 'slice_like', {D: (4, 5), 'shape_like': (2, 3)}, {'axes': (1,)}),
    C('take', 'take', {'a': (5, 3), 'indices': (2, 2)}, ints={'indices': 5}),
    C(
        'take_axis1_clip',
        'take',
        {'a': (2, 4), 'indices': (5,)},
        {'axis': 1, 'mode': 'clip'},
        ints={'indices': (-2, 7)},
    ),
    C(
        'take_wrap',
        'take',
        {'a': (4, 2), 'indices': (8,)},
        {'mode': 'wrap'},
        ints={'indices': (-5, 12)},
    ),
    C('pick', 'pick', {D: (3, 4), 'index': (3,)}, ints={'index': 4}),
    C(
        'pick_axis0_keepdims',
        'pick',
        {D: (3, 4), 'index': (4,)},
        {'axis': 0, 'keepdims': True},
        ints={'index': 3},
    ),
    C('one_hot', 'one_hot', {'indices': (4,)}, {'depth': 5}, ints={'indices': 5}),
    C(
        'one_hot_values',
        'one_hot',
        {'indices': (2, 2)},
        {'depth': 3, 'on_value': 2.0, 'off_value': -1.0},
        ints={'indices': 3},
    ),
    C('where', 'where', {'condition': (3, 4), 'x': (3, 4), 'y': (3, 4)}, ints={'condition': 2}),
    C(
        'where_vector_cond',
        'where',
        {'condition': (3,), 'x': (3, 4), 'y': (3, 4)},
        ints={'condition': 2},
    ),
    C('tile', 'tile', {D: (2, 3)}, {'reps': (2, 1)}),
    C('tile_more_reps', 'tile', {D: (2, 3)}, {'reps': (2, 2, 2)}),
    C('repeat_axis', 'repeat', {D: (2, 3)}, {'repeats': 2, 'axis': 1}),
    C('repeat_flat', 'repeat', {D: (2, 3)}, {'repeats': 3}),
    C('stack_axis0', 'stack', {'a': (2, 3), 'b': (2, 3), 'c': (2, 3)}),
    C('stack_axis_last', 'stack', {'a': (2, 3), 'b': (2, 3)}, {'axis': -1}),
    C('reverse', 'reverse', {D: (3, 4)}, {'axis': 0}),
    C('reverse_2axes', 'reverse', {D: (2, 3, 2)}, {'axis': (0, 2)}),
    C('broadcast_to', 'broadcast_to', {D: (1, 3)}, {'shape': (2, 3)}),
    C('broadcast_to_code0', 'broadcast_to', {D: (2, 1, 3)}, {'shape': (0, 4, 0)}),
    C('broadcast_like', 'broadcast_like', {'lhs': (1, 3), 'rhs': (4, 3)}),
    C('broadcast_axis', 'broadcast_axis', {D: (2, 1, 1)}, {'axis': (1, 2), 'size': (3, 2)}),
    C('reshape_like', 'reshape_like', {'lhs': (2, 6), 'rhs': (3, 4)}),
    C('cast_float16', 'Cast', {D: (3, 4)}, {'dtype': 'float16'}),
    C('cast_float64', 'cast', {D: (3, 4)}, {'dtype': 'float64'}),
    C('cast_int32', 'Cast', {D: (3, 4)}, {'dtype': 'int32'}, check_grad=False),
    C('zeros_like', 'zeros_like', {D: (3, 4)}),
    C('ones_like', 'ones_like', {D: (3, 4)}),
    C('clip', 'clip', {D: (3, 4)}, {'a_min': -0.5, 'a_max': 0.5}),
    # sorting and indexing
    # sort's backward fails in MXNet 1.9.1 unless `axis` is given explicitly
    C('sort_default_axis', 'sort', {D: (3, 4)}, check_grad=False),
    C('sort', 'sort', {D: (3, 4)}, {'axis': -1}),
    C('sort_desc_axis0', 'sort', {D: (3, 4)}, {'axis': 0, 'is_ascend': False}),
    C('argsort', 'argsort', {D: (3, 4)}, check_grad=False),
    C(
        'argsort_desc_axis0',
        'argsort',
        {D: (3, 4)},
        {'axis': 0, 'is_ascend': False},
        check_grad=False,
    ),
    C('topk_indices', 'topk', {D: (3, 5)}, {'k': 2}, check_grad=False),
    C('topk_value', 'topk', {D: (3, 5)}, {'k': 2, 'ret_typ': 'value'}),
    C('topk_both_axis0', 'topk', {D: (4, 3)}, {'k': 2, 'axis': 0, 'ret_typ': 'both'}),
    C(
        'topk_mask',
        'topk',
        {D: (3, 5)},
        {'k': 3, 'ret_typ': 'mask', 'is_ascend': True},
        check_grad=False,
    ),
    C('argmax', 'argmax', {D: (3, 4)}, {'axis': 1}, check_grad=False),
    C('argmax_keepdims', 'argmax', {D: (3, 4)}, {'axis': 0, 'keepdims': True}, check_grad=False),
    C('argmin', 'argmin', {D: (3, 4)}, {'axis': 1}, check_grad=False),
    C('argmax_channel', 'argmax_channel', {D: (3, 4)}, check_grad=False),
    # linear algebra
    C('dot', 'dot', {'a': (2, 3), 'b': (3, 4)}),
    C('dot_transpose_a', 'dot', {'a': (3, 2), 'b': (3, 4)}, {'transpose_a': True}),
    C('dot_transpose_b', 'dot', {'a': (2, 3), 'b': (4, 3)}, {'transpose_b': True}),
    C('dot_3d', 'dot', {'a': (2, 3, 4), 'b': (4, 2)}),
    C('batch_dot', 'batch_dot', {'a': (2, 3, 4), 'b': (2, 4, 5)}),
    C(
        'batch_dot_transpose',
        'batch_dot',
        {'a': (2, 4, 3), 'b': (2, 5, 4)},
        {'transpose_a': True, 'transpose_b': True},
    ),
    # reductions
    *[
        C(f'{op}_{k}', op, {D: (2, 3, 4)}, kw, positive=pos)
        for op, pos in _REDUCE.items()
        for k, kw in _RED.items()
    ],
    C('norm_default', 'norm', {D: (3, 4)}),
    C('norm_axis1', 'norm', {D: (3, 4)}, {'axis': 1}),
    C('norm_ord1_keepdims', 'norm', {D: (2, 3, 2)}, {'ord': 1, 'axis': (1,), 'keepdims': True}),
    C('norm_2axes', 'norm', {D: (2, 3, 2)}, {'axis': (0, 2)}),
    # broadcast binary ops (both sides broadcast)
    *[
        C(
            f'broadcast_{n}',
            f'broadcast_{n}',
            {'lhs': (2, 1, 3), 'rhs': (1, 4, 3)},
            positive={'lhs'} if n in ('power', 'mod') else {'rhs'} if n == 'div' else set(),
        )
        for n in _BROADCAST
    ],
    C('broadcast_plus_alias', 'broadcast_plus', {'lhs': (2, 3), 'rhs': (1, 3)}),
    C('broadcast_minus_alias', 'broadcast_minus', {'lhs': (2, 3), 'rhs': (2, 1)}),
    # unary math
    *[C(f'unary_{n}', n, {D: (3, 4)}) for n in _UNARY],
    *[C(f'unary_{n}', n, {D: (3, 4)}, positive={D}) for n in _UNARY_POS],
    C('smooth_l1', 'smooth_l1', {D: (3, 4)}, {'scalar': 1.0}),
    C('smooth_l1_sigma2', 'smooth_l1', {D: (3, 4)}, {'scalar': 2.0}),
    C(
        'softmax_cross_entropy',
        'softmax_cross_entropy',
        {D: (3, 4), 'label': (3,)},
        ints={'label': 4},
    ),
    # RNN (layout TNC: seq 3, batch 2, input 4; state_size 3)
    _rnn('rnn_lstm_2l_bi_states', 'lstm', 2, True, True),
    _rnn('rnn_gru_2l_bi_states', 'gru', 2, True, True),
    _rnn('rnn_lstm_1l', 'lstm', 1, False, False),
    _rnn('rnn_gru_2l_states', 'gru', 2, False, True),
    _rnn('rnn_tanh_bi', 'rnn_tanh', 1, True, True),
    _rnn('rnn_relu_2l', 'rnn_relu', 2, False, False),
]


def _sibling(name: str) -> Any:
    """Loads ``tests/ops/<name>.py`` by path, as the generator loads this file (no package).

    A sibling case file imports nothing from here: it defines ``cases(C) -> list[Case]``
    and receives the `C` constructor.
    """
    import importlib.util
    import sys
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        f'op_cases_{name}', Path(__file__).with_name(f'{name}.py')
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


# issue #16, detection operators (their zero-gradient ops are not checked numerically)
_detection = _sibling('cases_detection')
DETECTION_CASES: list[Case] = _detection.cases(C)
HEAD_GRAD_IGNORED = HEAD_GRAD_IGNORED | _detection.ZERO_GRAD_OPS
# case id -> why its MXNet gradient is not the derivative of its forward
FD_SKIP_EXTRA: dict[str, str] = {**_detection.FD_SKIP}

# issue #16, spatial / sequence / transformer contrib operators
CONTRIB_CASES: list[Case] = _sibling('cases_contrib').cases(C)

CASES: list[Case] = ISSUE2_CASES + ISSUE5_CASES + DETECTION_CASES + CONTRIB_CASES
CASES_BY_ID: dict[str, Case] = {c.id: c for c in CASES}
if len(CASES_BY_ID) != len(CASES):
    _dups = sorted({c.id for c in CASES if sum(d.id == c.id for d in CASES) > 1})
    raise ValueError(f'duplicate case ids: {_dups}')

# issue #23, linear-algebra operators (mx.sym.linalg.* and the flat linalg_* names)
_linalg = _sibling('cases_linalg')
LINALG_CASES: list[Case] = _linalg.cases(C)
FD_SKIP_EXTRA.update(_linalg.FD_SKIP)
CASES += LINALG_CASES
CASES_BY_ID.update({c.id: c for c in LINALG_CASES})
if len(CASES_BY_ID) != len(CASES):
    raise ValueError(f'duplicate case ids among {[c.id for c in LINALG_CASES]}')

# issue #23 (MXNet's unit tests): gradientmultiplier's backward scales the head gradient
FD_SKIP_EXTRA.update(
    {
        k: "gradientmultiplier's backward is scalar * head gradient, not the identity's"
        for k in ('gradmult_reverse',)
    }
)
