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

from ._base import EvalMetric, check_label_shapes
from ._registry import alias, register
from ._classification import F1, MCC, PCC, Accuracy, TopKAccuracy
from ._composite import CompositeEvalMetric, CustomMetric, create, np
from ._regression import (
    MAE,
    MSE,
    RMSE,
    Caffe,
    CrossEntropy,
    Loss,
    NegativeLogLikelihood,
    PearsonCorrelation,
    Perplexity,
    Torch,
)

__all__ = [
    "EvalMetric",
    "check_label_shapes",
    "register",
    "alias",
    "create",
    "np",
    "CompositeEvalMetric",
    "CustomMetric",
    "Accuracy",
    "TopKAccuracy",
    "F1",
    "MCC",
    "PCC",
    "MAE",
    "MSE",
    "RMSE",
    "CrossEntropy",
    "NegativeLogLikelihood",
    "Perplexity",
    "PearsonCorrelation",
    "Loss",
    "Torch",
    "Caffe",
]
