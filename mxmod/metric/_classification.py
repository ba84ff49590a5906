"""Classification metrics: Accuracy, TopKAccuracy, F1, MCC, PCC (MXNet 1.9.1 semantics)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy

from ._base import EvalMetric, _jx, _np, _num, _pairs, _StatsMetric
from ._registry import alias, register

__all__ = ["Accuracy", "TopKAccuracy", "F1", "MCC", "PCC"]


def _len_mismatch(n_label, n_pred):
    return ValueError(f"Shape of labels {n_label} does not match shape of predictions {n_pred}")


@register
@alias("acc")
class Accuracy(_StatsMetric):
    """Classification accuracy, as ``mxnet.metric.Accuracy``.

    If a prediction's shape differs from its label's, ``argmax(pred, axis)`` gives the
    predicted class; both are truncated to int32 and flattened; the metric is the fraction
    of equal entries. Device stats: ``(num_correct, num_samples)`` (int32).

    Args:
        axis: class axis of the predictions.
        name: display name.
        output_names: outputs used by ``update_dict``.
        label_names: labels used by ``update_dict``.
    """

    def __init__(self, axis=1, name="accuracy", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names, axis=axis)

    def _stats(self, labels, preds, xp):
        correct, num = 0, 0
        for label, pred in zip(labels, preds):
            if pred.shape != label.shape:
                pred = xp.argmax(pred, axis=self.axis)
            pred = pred.astype(numpy.int32).ravel()
            label = label.astype(numpy.int32).ravel()
            if label.shape[0] != pred.shape[0]:
                raise _len_mismatch(label.shape[0], pred.shape[0])
            correct = correct + (pred == label).sum()
            num += pred.shape[0]
        return correct, xp.asarray(num, numpy.int32)


@register
@alias("top_k_accuracy", "top_k_acc")
class TopKAccuracy(_StatsMetric):
    """Top-k accuracy, as ``mxnet.metric.TopKAccuracy``: a hit when the label is among the
    ``top_k`` highest scores. The name becomes ``'top_k_accuracy_<k>'``.

    MXNet quirk kept: for 1-D predictions only the local sum is updated. Those have no
    device form (``_device_stats`` raises NotImplementedError). Ties among scores may pick
    different classes on host (``argpartition``) and device (``lax.top_k``).

    Args:
        top_k: number of top classes; must be > 1 (use Accuracy for 1).
        name: display name prefix.
        output_names: outputs used by ``update_dict``.
        label_names: labels used by ``update_dict``.

    Raises:
        ValueError: if ``top_k <= 1``.
    """

    def __init__(self, top_k=1, name="top_k_accuracy", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names, top_k=top_k)
        if not self.top_k > 1:
            raise ValueError(f"Please use Accuracy if top_k is no more than 1 (got top_k={top_k})")
        self.name += "_%d" % self.top_k

    def _stats(self, labels, preds, xp):
        local, glob, num = 0, 0, 0
        for label, pred in zip(labels, preds):
            if pred.ndim > 2:
                raise ValueError(
                    f"Predictions should be no more than 2 dims, got shape {pred.shape}"
                )
            label = label.astype(numpy.int32).ravel()
            if label.shape[0] != pred.shape[0]:
                raise _len_mismatch(label.shape[0], pred.shape[0])
            if pred.ndim == 1:
                if xp is not numpy:
                    raise NotImplementedError("TopKAccuracy with 1-D predictions is host-only")
                idx = numpy.argpartition(pred.astype(numpy.float32), -self.top_k)
                local = local + (idx == label).sum()
            else:
                n_cls = pred.shape[1]
                if self.top_k > n_cls:
                    raise ValueError(
                        f"TopKAccuracy: top_k={self.top_k} exceeds the {n_cls} classes of the "
                        "predictions; use a smaller top_k"
                    )
                if xp is numpy:
                    idx = numpy.argpartition(pred.astype(numpy.float32), -self.top_k)
                    idx = idx[:, n_cls - self.top_k :]
                else:
                    idx = jax.lax.top_k(pred.astype(jnp.float32), self.top_k)[1]
                hits = (idx == label[:, None]).any(axis=1).sum()
                local, glob = local + hits, glob + hits
            num += pred.shape[0]
        return local, glob, xp.asarray(num, numpy.int32)

    def _fold_stats(self, stats):
        self._add(float(stats[0]), _num(stats[2]), global_value=float(stats[1]))


def _binary_counts(labels, preds, xp, cls_name):
    """(tp, fp, fn, tn) summed over pairs, and how many pairs had > 2 label values."""
    counts, nonbinary = 0, 0
    for label, pred in zip(labels, preds):
        label = label.astype(numpy.int32).ravel()
        if label.shape[0] != pred.shape[0]:
            raise _len_mismatch(label.shape[0], pred.shape[0])
        pred_true = xp.argmax(pred, axis=1) == 1
        label_true = label == 1
        counts = counts + xp.stack(
            [
                (pred_true & label_true).sum(),
                (pred_true & ~label_true).sum(),
                (~pred_true & label_true).sum(),
                (~pred_true & ~label_true).sum(),
            ]
        )
        # more than two distinct values <=> some value lies strictly between min and max
        many = ((label > label.min()) & (label < label.max())).any() if label.size else False
        if xp is numpy and many:
            raise ValueError(f"{cls_name} currently only supports binary classification.")
        nonbinary = nonbinary + xp.asarray(many).astype(numpy.int32)
    if isinstance(counts, int):
        counts = xp.zeros(4, numpy.int32)
    return counts, xp.asarray(nonbinary, numpy.int32)


def _f1(counts, xp):
    tp, fp, fn = (counts[i].astype(numpy.float32 if xp is not numpy else float) for i in range(3))
    prec = xp.where(tp + fp > 0, tp / xp.maximum(tp + fp, 1), 0.0)
    rec = xp.where(tp + fn > 0, tp / xp.maximum(tp + fn, 1), 0.0)
    return xp.where(prec + rec > 0, 2 * prec * rec / xp.where(prec + rec > 0, prec + rec, 1), 0.0)


def _mcc(counts, xp):
    c = counts.astype(numpy.float32 if xp is not numpy else float)
    tp, fp, fn, tn = c[0], c[1], c[2], c[3]
    terms = xp.stack([tp + fp, tp + fn, tn + fp, tn + fn])
    denom = xp.prod(xp.where(terms != 0, terms, 1.0))
    value = (tp * tn - fp * fn) / xp.sqrt(denom)
    return xp.where(c.sum() > 0, value, 0.0)


class _BinaryMetric(_StatsMetric):
    """Shared F1/MCC logic: confusion counts per update call, 'macro' or 'micro' average.

    Device stats: macro ``(score_of_this_call, 1, nonbinary)``; micro ``(counts[4],
    nonbinary)``. A non-binary label seen on device raises when the stats are folded.
    """

    _score = None

    def __init__(self, name, output_names, label_names, average):
        if average not in ("macro", "micro"):
            raise ValueError(f"average must be 'macro' or 'micro', got {average!r}")
        self.average = average  # not a config entry: MXNet's get_config leaves it out
        super().__init__(name, output_names, label_names)

    def _stats(self, labels, preds, xp):
        counts, nonbinary = _binary_counts(labels, preds, xp, type(self).__name__)
        if self.average == "macro":
            return type(self)._score(counts, xp), xp.asarray(1, numpy.int32), nonbinary
        return counts, nonbinary

    def _fold_stats(self, stats):
        if int(stats[-1]):
            raise ValueError(
                f"{type(self).__name__} currently only supports binary classification."
            )
        if self.average == "macro":
            self._add(float(stats[0]), _num(stats[1]))
            return
        self._lcounts = self._lcounts + numpy.asarray(stats[0], numpy.int64)
        self._gcounts = self._gcounts + numpy.asarray(stats[0], numpy.int64)
        d, score = self.__dict__, type(self)._score
        d["_num_inst"], d["_global_num_inst"] = int(self._lcounts.sum()), int(self._gcounts.sum())
        d["_sum_metric"] = float(score(self._lcounts, numpy)) * d["_num_inst"]
        d["_global_sum_metric"] = float(score(self._gcounts, numpy)) * d["_global_num_inst"]

    def reset(self):
        """Reset local and global statistics and confusion counts."""
        super().reset()
        self._lcounts = numpy.zeros(4, numpy.int64)
        self._gcounts = numpy.zeros(4, numpy.int64)

    def reset_local(self):
        """Reset local statistics and confusion counts."""
        super().reset_local()
        self._lcounts = numpy.zeros(4, numpy.int64)


@register
class F1(_BinaryMetric):
    """Binary F1 score, as ``mxnet.metric.F1`` (class 1 positive, ``argmax(pred, 1)``).

    ``average='macro'`` averages per-update F1 values; ``'micro'`` pools all counts.

    Raises:
        ValueError: labels with more than two distinct values; an unknown ``average``.
    """

    _score = staticmethod(_f1)

    def __init__(self, name="f1", output_names=None, label_names=None, average="macro"):
        super().__init__(name, output_names, label_names, average)


@register
class MCC(_BinaryMetric):
    """Binary Matthews correlation coefficient, as ``mxnet.metric.MCC``.

    ``(tp*tn - fp*fn) / sqrt(product of the non-zero marginals)``; 0 with no examples.
    """

    _score = staticmethod(_mcc)

    def __init__(self, name="mcc", output_names=None, label_names=None, average="macro"):
        super().__init__(name, output_names, label_names, average)


def _calc_mcc(cmat):
    n = cmat.sum()
    x, y = cmat.sum(axis=1), cmat.sum(axis=0)
    cov_xx, cov_yy = numpy.sum(x * (n - x)), numpy.sum(y * (n - y))
    if cov_xx == 0 or cov_yy == 0:
        return float("nan")
    cov_xy = numpy.sum(cmat.diagonal() * n - x * y)
    return cov_xy / math.sqrt(cov_xx * cov_yy)


@register
class PCC(EvalMetric):
    """Multi-class Matthews correlation from a confusion matrix, as ``mxnet.metric.PCC``.

    ``num_inst`` counts update calls; ``sum_metric`` is ``mcc * num_inst``. Device form
    needs class scores ``(N, C)`` and labels in ``[0, C)``; its stats are
    ``(confusion[C, C], out_of_range_labels, 1)``.
    """

    def __init__(self, name="pcc", output_names=None, label_names=None, has_global_stats=True):
        self.k = 2
        super().__init__(
            name,
            output_names=output_names,
            label_names=label_names,
            has_global_stats=has_global_stats,
        )

    def _grow(self, k):
        if k > self.k:
            inc = k - self.k
            self.lcm = numpy.pad(self.lcm, ((0, inc), (0, inc)), "constant")
            self.gcm = numpy.pad(self.gcm, ((0, inc), (0, inc)), "constant")
            self.k = k

    def update(self, labels, preds):
        """Add each (label, pred) pair to the confusion matrices (host path)."""
        labels, preds = _pairs(labels, preds)
        for label, pred in zip(labels, preds):
            label = _np(label).astype(numpy.int32)
            pred = _np(pred)
            pred = pred.argmax(axis=1) if pred.shape != label.shape else pred.astype(numpy.int32)
            pred, label = pred.ravel(), label.ravel()
            if pred.size:
                self._grow(int(max(pred.max(), label.max())) + 1)
            bcm = numpy.zeros((self.k, self.k))
            numpy.add.at(bcm, (pred, label), 1)
            self.lcm += bcm
            self.gcm += bcm
        self.__dict__["_num_inst"] += 1
        self.__dict__["_global_num_inst"] += 1

    def _device_stats(self, labels, preds):
        labels, preds = _pairs(labels, preds)
        pairs = [(_jx(lab), _jx(p)) for lab, p in zip(labels, preds)]
        if any(p.shape == lab.shape or p.ndim != 2 for lab, p in pairs):
            raise NotImplementedError("PCC's device form needs (N, C) class scores")
        k = max([2] + [p.shape[1] for _, p in pairs])
        cm, oob = jnp.zeros((k, k), jnp.float32), jnp.zeros((), jnp.int32)
        for label, pred in pairs:
            label = label.astype(jnp.int32).ravel()
            onehot_p = jax.nn.one_hot(jnp.argmax(pred, axis=1), k, dtype=jnp.float32)
            cm = cm + onehot_p.T @ jax.nn.one_hot(label, k, dtype=jnp.float32)
            oob = oob + ((label < 0) | (label >= k)).sum()
        return cm, oob, jnp.ones((), jnp.int32)

    def _fold_stats(self, stats):
        cm, oob, calls = stats
        if int(oob):
            raise ValueError(
                "PCC: a label outside [0, num_classes) reached the device-side metric; "
                "use labels within the prediction's classes or update on the host"
            )
        k = cm.shape[0]
        self._grow(k)
        self.lcm[:k, :k] += cm
        self.gcm[:k, :k] += cm
        self.__dict__["_num_inst"] += int(calls)
        self.__dict__["_global_num_inst"] += int(calls)

    @property
    def sum_metric(self):
        num = self.num_inst  # folds queued device stats first
        return _calc_mcc(self.lcm) * num

    @property
    def global_sum_metric(self):
        num = self.global_num_inst
        return _calc_mcc(self.gcm) * num

    def reset(self):
        """Reset both confusion matrices and counters."""
        self._pending = []
        self.__dict__["_global_num_inst"] = 0.0
        self.gcm = numpy.zeros((self.k, self.k))
        self.__dict__["_num_inst"] = 0.0
        self.lcm = numpy.zeros((self.k, self.k))

    def reset_local(self):
        """Reset the local confusion matrix and counter."""
        self._fold_pending()
        self.__dict__["_num_inst"] = 0.0
        self.lcm = numpy.zeros((self.k, self.k))
