"""Evaluation metrics, as ``mxnet.metric`` (MXNet 1.9.1 semantics).

Every metric keeps MXNet's counters and API (``update``, ``update_dict``, ``reset``,
``reset_local``, ``get``, ``get_global``, ``get_name_value``, ...). mxmod adds a
device-side form used by the fused training step: see :mod:`mxmod.metric._base` and
:class:`EvalMetric` (``_device_stats``, ``_device_stats_dict``, ``_accumulate_device``).

Registry names: acc, accuracy, caffe, ce, composite, compositeevalmetric, crossentropy,
custommetric, f1, loss, mae, mcc, mse, negativeloglikelihood, nll_loss, pcc,
pearsoncorrelation, pearsonr, perplexity, rmse, top_k_acc, top_k_accuracy, topkaccuracy,
torch.
"""

from ._base import EvalMetric, check_label_shapes, note_host_update
from ._registry import alias, register
from . import _classification, _composite, _regression
from ._classification import *  # noqa: F403
from ._composite import *  # noqa: F403
from ._regression import *  # noqa: F403

__all__ = [
    "EvalMetric",
    "check_label_shapes",
    "note_host_update",  # what a custom training loop calls when it updates a metric on the host
    "register",
    "alias",
    *_composite.__all__,
    *_classification.__all__,
    *_regression.__all__,
]
