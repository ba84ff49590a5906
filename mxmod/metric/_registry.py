"""The metric registry: ``register``, ``alias`` and name/config lookup for ``create``."""

from __future__ import annotations

import json

from ..base import numeric_types, string_types
from ..registry import Registry, adopt, get_alias_func, get_register_func
from ._base import EvalMetric

__all__ = ["register", "alias", "registry_create"]

_REGISTRY = Registry("metric", case_sensitive=False)
adopt(EvalMetric, _REGISTRY)  # mx.registry.get_register_func(EvalMetric, ...) files here


# ``register(klass, name=None)`` and ``@alias(*names)``: MXNet's registry functions
register = get_register_func(EvalMetric, "metric")
alias = get_alias_func(EvalMetric, "metric")


def registry_create(metric, *args, **kwargs):
    """Create a registered metric from a name, config dict/JSON string or instance."""
    if isinstance(metric, EvalMetric):
        if args or kwargs:
            raise TypeError(
                f"metric {metric.name!r} is already an EvalMetric instance; additional "
                "arguments are invalid (pass them to its constructor instead)"
            )
        return metric
    if isinstance(metric, dict):
        config = dict(metric)
        if "metric" not in config:
            raise ValueError(f"metric config {metric!r} needs a 'metric' key naming the class")
        return registry_create(config.pop("metric"), *args, **config, **kwargs)
    if not isinstance(metric, string_types):
        raise TypeError(
            "metric must be a name, an EvalMetric, a list, a callable or a config dict; "
            f"got {type(metric).__name__}"
        )
    if metric.startswith("["):
        name, config = json.loads(metric)
        return registry_create(name, *args, **config, **kwargs)
    if metric.startswith("{"):
        return registry_create(json.loads(metric), *args, **kwargs)
    return _REGISTRY.get(metric.lower())(*args, **kwargs)


def _names_values(metrics, getter):
    """Concatenate children's ``(name, value)`` into two flat lists (Composite's get)."""
    names, values = [], []
    for m in metrics:
        name, value = getattr(m, getter)()
        names.extend([name] if isinstance(name, string_types) else name)
        values.extend([value] if isinstance(value, numeric_types) else value)
    return names, values
