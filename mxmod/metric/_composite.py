"""CompositeEvalMetric, CustomMetric, ``np`` and ``create`` (MXNet 1.9.1 semantics)."""

from __future__ import annotations

from collections import OrderedDict

import numpy

from ._base import EvalMetric, _wrap_arrays, _np, _pairs
from ._registry import _names_values, alias, register, registry_create

__all__ = ["CompositeEvalMetric", "CustomMetric", "np", "create"]


def create(metric, *args, **kwargs):
    """Create a metric, as ``mxnet.metric.create``.

    Args:
        metric: a registered name (case-insensitive, e.g. ``'acc'``, ``'ce'``,
            ``'top_k_accuracy'``), an ``EvalMetric`` instance (returned as is), a list
            (-> ``CompositeEvalMetric`` of ``create(each, *args, **kwargs)``), a callable
            ``feval(label, pred)`` (-> ``CustomMetric``), a config dict/JSON string as
            produced by ``get_config``, or (mxmod) an ``EvalMetric`` subclass.
        *args: constructor arguments.
        **kwargs: constructor keyword arguments.

    Returns:
        The EvalMetric.

    Raises:
        ValueError: unknown name (the message lists the known ones).
        TypeError: arguments given with an instance, or an unsupported ``metric`` type.
    """
    if isinstance(metric, type) and issubclass(metric, EvalMetric):
        return metric(*args, **kwargs)
    if callable(metric) and not isinstance(metric, EvalMetric):
        return CustomMetric(metric, *args, **kwargs)
    if isinstance(metric, list):
        composite = CompositeEvalMetric()
        for child in metric:
            composite.add(create(child, *args, **kwargs))
        return composite
    return registry_create(metric, *args, **kwargs)


@register
@alias("composite")
class CompositeEvalMetric(EvalMetric):
    """Several metrics updated together, as ``mxnet.metric.CompositeEvalMetric``.

    ``get()`` returns ``(names, values)`` lists concatenating the children. The device form
    delegates: stats are the tuple of the children's stats.

    Args:
        metrics: child metrics (anything ``create`` accepts).
        name: display name.
        output_names: outputs kept before the children's ``update_dict``.
        label_names: labels kept before the children's ``update_dict``.
    """

    def __init__(self, metrics=None, name="composite", output_names=None, label_names=None):
        super().__init__(
            name, output_names=output_names, label_names=label_names, has_global_stats=True
        )
        self.metrics = [create(m) for m in (metrics or [])]

    def add(self, metric):
        """Add a child metric (anything ``create`` accepts)."""
        self.metrics.append(create(metric))

    def get_metric(self, index):
        """Return child ``index``; as MXNet, a bad index *returns* a ValueError object."""
        try:
            return self.metrics[index]
        except IndexError:
            return ValueError(f"Metric index {index} is out of range 0 and {len(self.metrics)}")

    def _filter(self, labels, preds):
        if self.label_names is not None:
            labels = OrderedDict(i for i in labels.items() if i[0] in self.label_names)
        if self.output_names is not None:
            preds = OrderedDict(i for i in preds.items() if i[0] in self.output_names)
        return labels, preds

    def update_dict(self, labels, preds):
        """Filter by own names, then call every child's ``update_dict``."""
        labels, preds = self._filter(labels, preds)
        for metric in self.metrics:
            metric.update_dict(labels, preds)

    def update(self, labels, preds):
        """Call every child's ``update``."""
        for metric in self.metrics:
            metric.update(labels, preds)

    def reset(self):
        """Reset every child."""
        self._run_deferred()  # a queued Module step adds its stats before the reset
        self._pending = []
        for metric in getattr(self, "metrics", []):
            metric.reset()

    def reset_local(self):
        """Reset every child's local statistics."""
        self._run_deferred()
        for metric in getattr(self, "metrics", []):
            metric.reset_local()

    def get(self):
        """Return ``([names], [values])`` over the children."""
        # the Module defers its step's stats on the composite, not on the children
        self._run_deferred()
        return _names_values(self.metrics, "get")

    def get_global(self):
        """Return ``([names], [global values])`` over the children."""
        self._run_deferred()
        return _names_values(self.metrics, "get_global")

    def get_config(self):
        """Own config plus ``metrics``: the children's configs."""
        config = super().get_config()
        config.update({"metrics": [m.get_config() for m in self.metrics]})
        return config

    # -- device form: delegate to the children
    def _supports_device(self):
        return all(m._supports_device() for m in self.metrics)

    def _host_reason(self):
        return "; ".join(
            f"child {type(m).__name__} '{m.name}': {m._host_reason()}"
            for m in self.metrics
            if not m._supports_device()
        )

    @property
    def _device_additive(self):
        return all(m._device_additive for m in self.metrics)

    def _device_stats(self, labels, preds):
        return tuple(m._device_stats(labels, preds) for m in self.metrics)

    def _device_stats_dict(self, labels, preds):
        labels, preds = self._filter(labels, preds)
        return tuple(m._device_stats_dict(labels, preds) for m in self.metrics)

    def _defer(self, source):
        # reading a child alone (get_metric(i).get()) must also run the queued step
        super()._defer(source)
        for metric in self.metrics:
            metric._defer(source)

    def _accumulate_device(self, stats, stacked=False):
        if len(stats) != len(self.metrics):
            raise ValueError(
                f"CompositeEvalMetric has {len(self.metrics)} children but got stats for "
                f"{len(stats)}; children were added after the stats were computed"
            )
        for metric, child_stats in zip(self.metrics, stats):
            metric._accumulate_device(child_stats, stacked)


@register
class CustomMetric(EvalMetric):
    """Metric from a host function ``feval(label, pred)`` on numpy arrays, as
    ``mxnet.metric.CustomMetric``. ``feval`` returns ``(sum, num)`` or a value (counted
    once). Host-only: it has no device form.

    Args:
        feval: the function.
        name: display name (default ``feval.__name__``, ``'custom(<lambda>)'`` for lambdas).
        allow_extra_outputs: allow more predictions than labels (pairs are zipped).
        output_names: outputs used by ``update_dict``.
        label_names: labels used by ``update_dict``.
    """

    def __init__(
        self, feval, name=None, allow_extra_outputs=False, output_names=None, label_names=None
    ):
        if name is None:
            name = feval.__name__
            if name.find("<") != -1:
                name = "custom(%s)" % name
        super().__init__(
            name,
            feval=feval,
            allow_extra_outputs=allow_extra_outputs,
            output_names=output_names,
            label_names=label_names,
            has_global_stats=True,
        )
        self._feval = feval
        self._allow_extra_outputs = allow_extra_outputs

    def update(self, labels, preds):
        """Call ``feval`` on each (label, pred) pair as numpy arrays."""
        if not self._allow_extra_outputs:
            labels, preds = _pairs(labels, preds)
        else:
            labels, preds = _wrap_arrays(labels), _wrap_arrays(preds)
        for pred, label in zip(preds, labels):
            reval = self._feval(_np(label), _np(pred))
            if isinstance(reval, tuple):
                self._add(_as_double(reval[0]), reval[1])
            else:
                self._add(_as_double(reval), 1)

    def _host_reason(self):
        return "its feval is a host function"

    def get_config(self):
        """Not supported, as in MXNet."""
        raise NotImplementedError("CustomMetric cannot be serialized")


def np(numpy_feval, name=None, allow_extra_outputs=False):
    """Wrap a numpy function ``f(label, pred) -> float`` into a ``CustomMetric``, as
    ``mxnet.metric.np``; the metric is named after the function."""

    def feval(label, pred):
        return numpy_feval(label, pred)

    feval.__name__ = numpy_feval.__name__
    return CustomMetric(feval, name, allow_extra_outputs)


def _as_double(value):
    """A float32 (or float16) result of a metric function, summed as a Python float: as
    MXNet under NumPy 1, whose promotion made the running sum float64."""
    if isinstance(value, numpy.floating) or (
        isinstance(value, numpy.ndarray) and value.ndim == 0 and value.dtype.kind == "f"
    ):
        return float(value)
    return value
