"""Regression and probability metrics: MAE, MSE, RMSE, CrossEntropy, NegativeLogLikelihood,
Perplexity, PearsonCorrelation, Loss/Torch/Caffe (MXNet 1.9.1 semantics)."""

from __future__ import annotations

import math

import numpy

from ._base import _np, _num, _StatsMetric
from ._registry import alias, register

__all__ = [
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


def _index_dtype(xp):
    return numpy.int64 if xp is numpy else numpy.int32


def _float_dtype(xp):
    """float64 on the host (MXNet's Python counters), float32 on device."""
    return numpy.float64 if xp is numpy else numpy.float32


class _PairMean(_StatsMetric):
    """Mean of one value per (label, pred) pair: MXNet averages per-batch (and per-device)
    values, not samples. 1-D labels/preds are reshaped to (N, 1) and broadcast.
    Device stats: ``(sum_of_values, num_pairs)``."""

    @staticmethod
    def _value(diff, xp):
        raise NotImplementedError

    def _stats(self, labels, preds, xp):
        total, num = 0.0, 0
        for label, pred in zip(labels, preds):
            if label.ndim == 1:
                label = label.reshape(label.shape[0], 1)
            if pred.ndim == 1:
                pred = pred.reshape(pred.shape[0], 1)
            try:
                diff = label - pred
            except (ValueError, TypeError) as err:
                raise ValueError(
                    f"{type(self).__name__}: label shape {label.shape} and prediction shape "
                    f"{pred.shape} do not broadcast"
                ) from err
            total = total + self._value(diff, xp)
            num += 1
        return total, xp.asarray(num, numpy.int32)


@register
class MAE(_PairMean):
    """Mean absolute error, as ``mxnet.metric.MAE`` (mean over per-batch values)."""

    def __init__(self, name="mae", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _value(diff, xp):
        return xp.abs(diff).mean()


@register
class MSE(_PairMean):
    """Mean squared error, as ``mxnet.metric.MSE`` (mean over per-batch values)."""

    def __init__(self, name="mse", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _value(diff, xp):
        return (diff**2.0).mean()


@register
class RMSE(_PairMean):
    """Root mean squared error, as ``mxnet.metric.RMSE``: the mean of per-batch RMSEs."""

    def __init__(self, name="rmse", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _value(diff, xp):
        return xp.sqrt((diff**2.0).mean())


@register
@alias("ce")
class CrossEntropy(_StatsMetric):
    """Cross entropy of the labelled class, as ``mxnet.metric.CrossEntropy``.

    Per pair: ``-sum(log(pred[i, label[i]] + eps))`` over the N samples; the metric is the
    mean per sample. Device stats: ``(sum_of_losses, num_samples)``.

    Args:
        eps: added to the probability before the log.
        name: display name.
        output_names: outputs used by ``update_dict``.
        label_names: labels used by ``update_dict``.
    """

    def __init__(self, eps=1e-12, name="cross-entropy", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names, eps=eps)

    def _stats(self, labels, preds, xp):
        total, num = 0.0, 0
        for label, pred in zip(labels, preds):
            label = label.ravel()
            n = label.shape[0]
            if pred.ndim < 2 or pred.shape[0] != n:
                raise ValueError(
                    f"{type(self).__name__}: {n} labels but predictions of shape {pred.shape}; "
                    "predictions need one row of class probabilities per label"
                )
            prob = pred[xp.arange(n), label.astype(_index_dtype(xp))]
            total = total + (-xp.log(prob + self.eps)).sum()
            num += n
        return total, xp.asarray(num, numpy.int32)


@register
@alias("nll_loss")
class NegativeLogLikelihood(CrossEntropy):
    """Negative log-likelihood, as ``mxnet.metric.NegativeLogLikelihood`` (same computation
    as CrossEntropy)."""

    def __init__(self, eps=1e-12, name="nll-loss", output_names=None, label_names=None):
        super().__init__(eps=eps, name=name, output_names=output_names, label_names=label_names)


@register
class Perplexity(_StatsMetric):
    """Perplexity ``exp(-mean(log p(label)))``, as ``mxnet.metric.Perplexity``.

    ``ignore_label`` is a required argument, as in MXNet (``None`` keeps every entry);
    ignored entries count as probability 1 and do not count as samples. Probabilities are
    clipped at 1e-10 and label indices into ``[0, C)`` (``pick``'s clip mode). mxmod also
    accepts N-d predictions: every position along the other axes is one entry.
    Device stats: ``(negative_log_likelihood_sum, num_entries)``.
    """

    def __init__(
        self, ignore_label, axis=-1, name="perplexity", output_names=None, label_names=None
    ):
        super().__init__(name, output_names, label_names, ignore_label=ignore_label)
        self.axis = axis  # not a config entry, as in MXNet

    def _stats(self, labels, preds, xp):
        loss, num = 0.0, 0.0
        for label, pred in zip(labels, preds):
            axis = self.axis % pred.ndim
            n_cls = pred.shape[axis]
            pred = xp.moveaxis(pred, axis, -1).reshape(-1, n_cls)
            if label.size != pred.shape[0]:
                raise ValueError(f"shape mismatch: {label.shape} vs. {pred.shape}")
            label = label.reshape(-1)
            idx = xp.clip(label.astype(numpy.int32), 0, n_cls - 1)
            picked = pred[xp.arange(pred.shape[0]), idx]
            if self.ignore_label is not None:
                ignore = (label == self.ignore_label).astype(picked.dtype)
                num = num - ignore.sum()
                picked = picked * (1 - ignore) + ignore
            loss = loss - xp.log(xp.maximum(1e-10, picked)).sum()
            num = num + picked.size
        return loss, xp.asarray(num, _float_dtype(xp))

    def _fold_stats(self, stats):
        self._add(float(stats[0]), float(stats[1]))

    def get(self):
        """Return ``(name, exp(sum_metric / num_inst))`` (nan without samples)."""
        num = self.num_inst
        if num == 0:
            return (self.name, float("nan"))
        return (self.name, math.exp(self.sum_metric / num))

    def get_global(self):
        """Return ``(name, exp(global_sum_metric / global_num_inst))``."""
        num = self.global_num_inst
        if num == 0:
            return (self.name, float("nan"))
        return (self.name, math.exp(self.global_sum_metric / num))


def _moments(label, pred, xp):
    """(n, mean_l, mean_p, centred sum sq of l, of p, centred cross sum) of one pair."""
    n = label.shape[0]
    mean_l, mean_p = label.mean(), pred.mean()
    dl, dp = label - mean_l, pred - mean_p
    return (
        xp.asarray(n, _float_dtype(xp)),
        mean_l,
        mean_p,
        (dl * dl).sum(),
        (dp * dp).sum(),
        (dl * dp).sum(),
    )


def _check_same_shape(label, pred) -> None:
    if label.shape != pred.shape:
        raise ValueError(
            f"Shape of labels {label.shape} does not match shape of predictions {pred.shape}"
        )


@register
@alias("pearsonr")
class PearsonCorrelation(_StatsMetric):
    """Pearson correlation, as ``mxnet.metric.PearsonCorrelation``.

    ``average='macro'``: mean of per-pair correlations (device stats ``(sum_r, pairs)``).
    ``'micro'``: pooled correlation over every element seen (device stats: per pair the
    count, means and centred sums, combined exactly on the host; not additive).
    MXNet quirk kept: in micro mode ``get_global()`` returns 0.0.

    Raises:
        ValueError: label and prediction shapes differ; unknown ``average``.
    """

    def __init__(self, name="pearsonr", output_names=None, label_names=None, average="macro"):
        if average not in ("macro", "micro"):
            raise ValueError(f"average must be 'macro' or 'micro', got {average!r}")
        self.average = average  # not a config entry: MXNet's get_config leaves it out
        super().__init__(name, output_names, label_names)

    @property
    def _device_additive(self):
        return self.average == "macro"

    def reset_micro(self):
        """Reset the pooled (micro) moments."""
        self._count, self._mean_l, self._mean_p = 0.0, 0.0, 0.0
        self._sse_l, self._sse_p, self._conv = 0.0, 0.0, 0.0

    def reset(self):
        """Reset counters and pooled moments."""
        super().reset()
        self.reset_micro()

    def update(self, labels, preds):
        """Host path, computed as MXNet 1.9.1 computes it, so results are bit-identical:
        per pair in float64, ``macro`` adds ``numpy.corrcoef(pred, label)[0, 1]``;
        ``micro`` updates running means and centred sums batch by batch (Welford)."""
        labels, preds = self._inputs(labels, preds, _np)
        for label, pred in zip(labels, preds):
            _check_same_shape(label, pred)
            label = label.ravel().astype(numpy.float64)
            pred = pred.ravel().astype(numpy.float64)
            if self.average == "macro":
                with numpy.errstate(divide="ignore", invalid="ignore"):
                    self._add(numpy.corrcoef(pred, label)[0, 1], 1)
                continue
            self._count += label.shape[0]
            label_mean = self._mean_l + numpy.sum((label - self._mean_l) / self._count)
            self._sse_l += numpy.sum((label - self._mean_l) * (label - label_mean))
            self._mean_l = label_mean
            # the cross sum reads the new label mean and the old prediction mean
            self._conv += numpy.sum((label - self._mean_l) * (pred - self._mean_p))
            pred_mean = self._mean_p + numpy.sum((pred - self._mean_p) / self._count)
            self._sse_p += numpy.sum((pred - self._mean_p) * (pred - pred_mean))
            self._mean_p = pred_mean
            self.__dict__["_num_inst"] += 1
            self.__dict__["_global_num_inst"] += 1

    def _device_stats(self, labels, preds):
        """The statistics ``update`` folds, from ``_stats`` in float32 on the device (this
        override marks ``update`` above as matching it)."""
        return super()._device_stats(labels, preds)

    def _stats(self, labels, preds, xp):
        out = []
        for label, pred in zip(labels, preds):
            _check_same_shape(label, pred)
            dtype = _float_dtype(xp)
            out.append(_moments(label.ravel().astype(dtype), pred.ravel().astype(dtype), xp))
        if self.average == "micro":
            return tuple(out)
        total = 0.0
        for _, _, _, sl, sp, c in out:
            with numpy.errstate(divide="ignore", invalid="ignore"):
                total = total + c / xp.sqrt(sl * sp)
        return total, xp.asarray(len(out), numpy.int32)

    def _fold_stats(self, stats):
        if self.average == "macro":
            self._add(float(stats[0]), _num(stats[1]))
            return
        for n_b, ml_b, mp_b, sl_b, sp_b, c_b in stats:
            n_a, n_b = self._count, float(n_b)
            n = n_a + n_b
            dl, dp = float(ml_b) - self._mean_l, float(mp_b) - self._mean_p
            w = n_a * n_b / n if n else 0.0
            self._mean_l += dl * n_b / n if n else 0.0
            self._mean_p += dp * n_b / n if n else 0.0
            self._sse_l += float(sl_b) + dl * dl * w
            self._sse_p += float(sp_b) + dp * dp * w
            self._conv += float(c_b) + dl * dp * w
            self._count = n
            self.__dict__["_num_inst"] += 1
            self.__dict__["_global_num_inst"] += 1

    def get(self):
        """Return the macro mean or the pooled micro correlation (nan without updates)."""
        num = self.num_inst
        if num == 0:
            return (self.name, float("nan"))
        if self.average == "macro":
            return (self.name, self.sum_metric / num)
        n = numpy.float64(self._count)
        with numpy.errstate(divide="ignore", invalid="ignore"):
            r = self._conv / (
                (n - 1) * numpy.sqrt(self._sse_p / (n - 1)) * numpy.sqrt(self._sse_l / (n - 1))
            )
        return (self.name, r)


@register
class Loss(_StatsMetric):
    """Mean of all output elements, as ``mxnet.metric.Loss`` (labels are ignored).

    Device stats: ``(sum_of_outputs, num_elements)``.
    """

    _check_pairs = False

    def __init__(self, name="loss", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    def _inputs(self, labels, preds, conv):
        return [], super()._inputs([], preds, conv)[1]

    def _stats(self, labels, preds, xp):
        total, num = 0.0, 0
        for pred in preds:
            total = total + pred.sum()
            num += pred.size
        return total, xp.asarray(num, numpy.int32)


@register
class Torch(Loss):
    """Dummy metric for torch criterions (same as Loss, name ``'torch'``)."""

    def __init__(self, name="torch", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)


@register
class Caffe(Loss):
    """Dummy metric for caffe criterions (same as Loss, name ``'caffe'``)."""

    def __init__(self, name="caffe", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)
