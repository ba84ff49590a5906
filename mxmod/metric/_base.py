"""EvalMetric base class and shared helpers (MXNet's ``mxnet.metric``).

The device-side protocol used by the fused training step is documented on
:class:`EvalMetric`.
"""

from __future__ import annotations

import logging
import weakref
from collections import OrderedDict
from typing import Any

import jax
import jax.numpy as jnp
import numpy


__all__ = ["EvalMetric", "check_label_shapes"]

_MAX_PENDING = 256  # fold the oldest queued stats once this many are waiting
_KEEP_PENDING = 16  # ...but leave the newest ones (likely still computing) queued
_STACK_RUN = 16  # queued stats of one layout are fetched this many per transfer


def _layout(entry):
    """What must match for queued ``(stats, stacked)`` entries to be stacked together:
    every leaf a jax Array, with its shape, dtype and sharding (None: not stackable)."""
    stats, stacked = entry
    leaves, treedef = jax.tree_util.tree_flatten(stats)
    key = []
    for x in leaves:  # a loop, not generators: this runs once per training batch
        if not isinstance(x, jax.Array):
            return None
        sharding = x.sharding
        # one device only: on XLA:CPU a multi-device stacking program beside the sharded
        # step can deadlock the in-process all-reduce
        if len(sharding.device_set) > 1:
            return None
        key.append((x.shape, x.dtype, sharding))
    return stacked, treedef, tuple(key)


@jax.jit
def _stack_stats(run):
    return jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *run)


def _fetch(todo):
    """Host copies of queued entries, in order. Runs of ``_STACK_RUN`` entries with one
    layout are stacked on the device first: one program and one transfer instead of a
    transfer per array (a few microseconds each, per batch of a training loop)."""
    layouts = [_layout(e) for e in todo]
    out, plain, i = [None] * len(todo), [], 0
    while i < len(todo):
        j = i
        while j < len(todo) and j - i < _STACK_RUN and layouts[i] and layouts[j] == layouts[i]:
            j += 1
        if j - i < _STACK_RUN:
            plain.append(i)
            i += 1
            continue
        stacked = jax.device_get(_stack_stats([stats for stats, _ in todo[i:j]]))
        leaves, treedef = jax.tree_util.tree_flatten(stacked)
        for k in range(i, j):
            out[k] = (treedef.unflatten([x[k - i, ...] for x in leaves]), todo[k][1])
        i = j
    for k, entry in zip(plain, jax.device_get([todo[k] for k in plain])):
        out[k] = entry
    return out


# ----------------------------------------------------------------------------- helpers
def _is_single_array(x: Any) -> bool:
    return not isinstance(x, (list, tuple)) and hasattr(x, "shape")


def _wrap_arrays(x: Any) -> list:
    """Wrap a single array (NDArray/jax/numpy) into a list, MXNet's ``wrap=True``."""
    return [x] if _is_single_array(x) else list(x)


def _pairs(labels: Any, preds: Any) -> tuple[list, list]:
    """Wrap single arrays and check the two lists have the same length."""
    labels, preds = _wrap_arrays(labels), _wrap_arrays(preds)
    if len(labels) != len(preds):
        fix = "pass one label per prediction (or select outputs with output_names=[...])"
        if not labels:  # fit/score on an iterator without labels (issue 26)
            fix = (
                "there are no labels: give the data iterator its labels, e.g. "
                "mx.io.NDArrayIter(data, label, batch_size=...) (mod.predict needs none)"
            )
        raise ValueError(
            f"Shape of labels {len(labels)} does not match shape of predictions {len(preds)}: "
            + fix
        )
    return labels, preds


def _np(x: Any) -> numpy.ndarray:
    """Host numpy view of an NDArray, jax array or array-like."""
    if hasattr(x, "asnumpy"):
        return x.asnumpy()
    return numpy.asarray(x)


def _jx(x: Any) -> jax.Array:
    """JAX array of an NDArray (its ``_data``), a jax array/tracer or an array-like."""
    if hasattr(x, "asnumpy") and hasattr(x, "_data"):
        return x._data
    return jnp.asarray(x)


def _num(x: Any) -> int | float:
    """Host scalar: Python int for integer stats (MXNet's int num_inst), float otherwise."""
    x = numpy.asarray(x)
    return int(x) if x.dtype.kind in "iub" else float(x)


_HOST_LOGGED: weakref.WeakSet = weakref.WeakSet()  # metrics whose host updates were logged


def note_host_update(metric, reason: str, logger=logging) -> None:
    """Log once per metric object that the Module updates it on the host, and why."""
    try:
        if metric in _HOST_LOGGED:
            return
        _HOST_LOGGED.add(metric)
    except TypeError:  # unhashable user metric: log every time rather than never
        pass
    logger.warning(
        "%s '%s' is updated on the host (%s): each update waits for the step and copies outputs "
        "and labels to the host. Built-in metrics run on device inside the training step.",
        type(metric).__name__,
        metric.name,
        reason,
    )


def _defining_class(cls: type, attr: str) -> type | None:
    for klass in cls.__mro__:
        if attr in vars(klass):
            return klass
    return None


def check_label_shapes(labels: Any, preds: Any, wrap: bool = False, shape: bool = False):
    """Check that labels and predictions agree in length (or shape), as MXNet's helper.

    Args:
        labels: list of arrays (or one array).
        preds: list of arrays (or one array).
        wrap: wrap single arrays into 1-element lists (after the check, as MXNet).
        shape: compare ``.shape`` instead of ``len()``.

    Returns:
        ``(labels, preds)``, wrapped when ``wrap``.

    Raises:
        ValueError: ``"Shape of labels {} does not match shape of predictions {}"``.
    """
    if not shape:
        label_shape, pred_shape = len(labels), len(preds)
    else:
        label_shape, pred_shape = labels.shape, preds.shape
    if label_shape != pred_shape:
        raise ValueError(
            f"Shape of labels {label_shape} does not match shape of predictions {pred_shape}"
        )
    if wrap:
        labels, preds = _wrap_arrays(labels), _wrap_arrays(preds)
    return labels, preds


# ----------------------------------------------------------------------------- base
class EvalMetric:
    """Base class of evaluation metrics, as ``mxnet.metric.EvalMetric``.

    Same counters and API as MXNet 1.9.1: local ``sum_metric``/``num_inst`` (cleared by
    ``reset_local``, e.g. by ``Speedometer``) and global ``global_sum_metric``/
    ``global_num_inst`` (cleared only by ``reset``).

    Device-side protocol (mxmod addition, used by the fused training step): every built-in
    metric except ``CustomMetric`` computes the statistics of one MXNet
    ``update(labels, preds)`` call as a pure, jittable JAX function, and folds them into
    its counters later, so training never syncs to the host. As in MXNet's
    ``update_metric``, one update call per device gives per-device semantics (e.g. MSE
    averages per-device batch means).

    * ``_supports_device() -> bool``: True when the class's ``update`` and ``_device_stats``
      come from the same class (a user subclass that overrides ``update`` falls back to the
      host path automatically). ``_host_reason()`` says why not; the Module logs it once per
      metric object (``note_host_update``) the first time it updates the metric on the host.
    * ``_device_stats(labels, preds) -> pytree``: ``labels``/``preds`` are lists of
      ``jax.Array`` (tracers inside ``jit``). Returns a small pytree of JAX arrays: the stats
      of that one ``update`` call (for most metrics ``(sum_metric, num_inst)``). Shape errors
      raise at trace time; ``NotImplementedError`` means "use the host path for these inputs"
      (e.g. ``TopKAccuracy`` with 1-D predictions).
    * ``_device_stats_dict(label_dict, pred_dict)``: the same, selecting inputs by
      ``label_names``/``output_names`` exactly like ``update_dict``. Pass ``OrderedDict`` s
      (a plain dict is re-ordered by key when it crosses a ``jit`` boundary).
    * ``_device_additive`` (bool attribute/property): True when stats of several update
      calls may be summed leaf-wise (``jax.tree.map(jnp.add, a, b)``) before they are
      accumulated (e.g. a ``psum`` over devices). False only for
      ``PearsonCorrelation(average='micro')``.
    * ``_accumulate_device(stats, stacked=False)``: queue stats (device or host arrays) for
      folding; no host sync happens here. With
      ``stacked=True`` every leaf has a leading axis of separate update calls (e.g. one per
      device) that are folded in order.
    * Pending stats are folded (in float64 on the host, as MXNet's Python counters) the first
      time ``sum_metric``/``num_inst``/``global_*``/``get*()`` are read, on ``reset_local()``,
      and, oldest first, once many are queued. ``reset()`` drops them.
    * ``_update_dict_device(label_dict, pred_dict)`` / ``_update_device(labels, preds)``:
      convenience for the imperative path: jit ``_device_stats*`` once per metric and
      accumulate, taking NDArrays, jax arrays or numpy arrays.

    Args:
        name: display name.
        output_names: outputs used by ``update_dict`` (default: all, in order).
        label_names: labels used by ``update_dict`` (default: all, in order).
        **kwargs: kept for ``get_config``; ``has_global_stats`` is popped from them.
    """

    _device_additive = True

    def __init__(self, name, output_names=None, label_names=None, **kwargs):
        self.name = str(name)
        self.output_names = output_names
        self.label_names = label_names
        self._has_global_stats = kwargs.pop("has_global_stats", False)
        self._kwargs = kwargs
        self._pending: list = []
        self._jitted = None
        self.reset()

    def __str__(self):
        return f"EvalMetric: {dict(self.get_name_value())}"

    def __getstate__(self):  # copy/pickle: fold queued device stats, drop compiled functions
        self._fold_pending()
        state = self.__dict__.copy()
        state["_jitted"] = None
        state.pop("_deferred", None)
        state.pop("_mxmod_key", None)
        return state

    # -- counters (properties so that queued device stats are folded when read)
    def _counter(attr):  # noqa: N805 - small property factory
        def fget(self):
            if getattr(self, "_pending", None) or self.__dict__.get("_deferred"):
                self._fold_pending()
            return self.__dict__.get(attr, 0)

        def fset(self, value):
            self.__dict__[attr] = value

        return property(fget, fset)

    sum_metric = _counter("_sum_metric")
    num_inst = _counter("_num_inst")
    global_sum_metric = _counter("_global_sum_metric")
    global_num_inst = _counter("_global_num_inst")
    del _counter

    def get_config(self) -> dict:
        """Configuration from which ``metric.create(**config)`` rebuilds the metric."""
        config = self._kwargs.copy()
        config.update(
            {
                "metric": self.__class__.__name__,
                "name": self.name,
                "output_names": self.output_names,
                "label_names": self.label_names,
            }
        )
        return config

    def _select(self, labels: dict, preds: dict) -> tuple[list, list]:
        try:
            if self.output_names is not None:
                pred_list = [preds[name] for name in self.output_names]
            else:
                pred_list = list(preds.values())
            if self.label_names is not None:
                label_list = [labels[name] for name in self.label_names]
            else:
                label_list = list(labels.values())
        except KeyError as err:
            raise KeyError(
                f"{type(self).__name__} '{self.name}': no output or label named {err.args[0]!r}; "
                f"outputs are {list(preds)}, labels are {list(labels)} "
                "(check output_names/label_names)"
            ) from None
        return label_list, pred_list

    def update_dict(self, label, pred):
        """Update with name->array dicts, selecting ``label_names``/``output_names``."""
        labels, preds = self._select(label, pred)
        self.update(labels, preds)

    def update(self, labels, preds):
        """Update the statistics with lists of labels and predictions (abstract)."""
        raise NotImplementedError(f"{type(self).__name__} must implement update(labels, preds)")

    def _reset_counters(self, local_only: bool = False):
        d = self.__dict__
        d["_num_inst"], d["_sum_metric"] = 0, 0.0
        if not local_only:
            d["_global_num_inst"], d["_global_sum_metric"] = 0, 0.0

    def reset(self):
        """Reset local and global statistics (drops queued device stats)."""
        self._run_deferred()
        self._pending = []
        self._reset_counters()

    def reset_local(self):
        """Reset the local statistics only; global (epoch) totals survive."""
        self._fold_pending()
        self._reset_counters(local_only=True)

    def get(self):
        """Return ``(name, sum_metric / num_inst)``, or ``(name, nan)`` with no samples."""
        num_inst = self.num_inst
        if num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, self.sum_metric / num_inst)

    def get_global(self):
        """Like ``get`` but with the global statistics (``get()`` without them)."""
        if self._has_global_stats:
            num_inst = self.global_num_inst
            if num_inst == 0:
                return (self.name, float("nan"))
            return (self.name, self.global_sum_metric / num_inst)
        return self.get()

    @staticmethod
    def _zip_name_value(name, value):
        if not isinstance(name, list):
            name = [name]
        if not isinstance(value, list):
            value = [value]
        return list(zip(name, value))

    def get_name_value(self):
        """Return ``[(name, value), ...]``."""
        return self._zip_name_value(*self.get())

    def get_global_name_value(self):
        """Return ``[(name, global value), ...]`` (local values without global stats)."""
        if self._has_global_stats:
            return self._zip_name_value(*self.get_global())
        return self.get_name_value()

    # -- device-side protocol (see module docstring)
    def _supports_device(self) -> bool:
        cls = type(self)
        owner = _defining_class(cls, "_device_stats")
        return owner is not EvalMetric and owner is _defining_class(cls, "update")

    def _host_reason(self) -> str:
        """Why this metric has no device form (for the Module's one-time log line)."""
        return "it has no _device_stats() matching its update(), so no device-side form"

    def _device_stats(self, labels, preds):
        raise NotImplementedError(
            f"{type(self).__name__} has no device-side form; update it on the host with "
            "update()/update_dict()"
        )

    def _device_stats_dict(self, labels: dict, preds: dict):
        return self._device_stats(*self._select(labels, preds))

    def _accumulate_device(self, stats, stacked: bool = False):
        self._pending.append((stats, stacked))
        if len(self._pending) >= _MAX_PENDING:
            self._fold_pending(keep=_KEEP_PENDING)

    def _defer(self, source) -> None:
        """A Module step that will add this metric's statistics when it runs: reading
        the metric runs it first (``source.flush()``)."""
        deferred = self.__dict__.setdefault("_deferred", [])
        if source not in deferred:
            deferred.append(source)

    def _run_deferred(self) -> None:
        deferred = self.__dict__.get("_deferred")
        while deferred:
            deferred.pop(0).flush()

    def _fold_pending(self, keep: int = 0):
        self._run_deferred()
        pending = getattr(self, "_pending", None)
        if not pending or len(pending) <= keep:
            return
        cut = len(pending) - keep
        todo, self._pending = pending[:cut], pending[cut:]
        for stats, stacked in _fetch(todo):
            if stacked:
                leaves, treedef = jax.tree_util.tree_flatten(stats)
                for i in range(leaves[0].shape[0] if leaves else 0):
                    self._fold_stats(treedef.unflatten([x[i] for x in leaves]))
            else:
                self._fold_stats(stats)

    def _fold_stats(self, stats):
        """Fold host stats of one update call; default stats are ``(sum, num)``."""
        self._add(float(stats[0]), _num(stats[1]))

    def _add(self, value, num, global_value=None):
        """Add to local and global counters (writes the raw fields: no folding)."""
        d = self.__dict__
        d["_sum_metric"] = d["_sum_metric"] + value
        d["_num_inst"] = d["_num_inst"] + num
        d["_global_sum_metric"] = d["_global_sum_metric"] + (
            value if global_value is None else global_value
        )
        d["_global_num_inst"] = d["_global_num_inst"] + num

    def _update_device(self, labels, preds):
        """Jitted device update with lists of arrays (NDArray, jax or numpy)."""
        self._update_dict_device(
            OrderedDict((f"l{i}", x) for i, x in enumerate(_wrap_arrays(labels))),
            OrderedDict((f"p{i}", x) for i, x in enumerate(_wrap_arrays(preds))),
            _positional=True,
        )

    def _update_dict_device(self, labels: dict, preds: dict, _positional: bool = False):
        """Jitted device ``update_dict``: no host sync; counters fold when read."""
        labels = OrderedDict((k, _jx(v)) for k, v in labels.items())
        preds = OrderedDict((k, _jx(v)) for k, v in preds.items())
        if self._jitted is None:
            self._jitted = (
                jax.jit(lambda l, p: self._device_stats(list(l.values()), list(p.values()))),
                jax.jit(self._device_stats_dict),
            )
        self._accumulate_device(self._jitted[0 if _positional else 1](labels, preds))


class _StatsMetric(EvalMetric):
    """A metric written once as ``_stats(labels, preds, xp)`` for ``xp`` = numpy or jax.numpy.

    ``update`` runs it on host numpy arrays and folds the result at once (MXNet's eager
    behaviour); ``_device_stats`` runs the same code with ``jax.numpy`` under ``jit``.
    """

    _check_pairs = True

    def __init__(self, name, output_names=None, label_names=None, **config):
        """Global statistics on (all of MXNet's built-in metrics keep them); each ``config``
        entry is set as an attribute and kept for ``get_config``, as MXNet's do."""
        self.__dict__.update(config)
        super().__init__(
            name,
            output_names=output_names,
            label_names=label_names,
            has_global_stats=True,
            **config,
        )

    def _inputs(self, labels, preds, conv):
        if self._check_pairs:
            labels, preds = _pairs(labels, preds)
        else:
            labels, preds = _wrap_arrays(labels), _wrap_arrays(preds)
        return [conv(x) for x in labels], [conv(x) for x in preds]

    def _stats(self, labels: list, preds: list, xp):
        raise NotImplementedError

    def update(self, labels, preds):
        """Update the statistics with lists of labels and predictions (host path)."""
        self._fold_stats(self._stats(*self._inputs(labels, preds, _np), numpy))

    def _device_stats(self, labels, preds):
        return self._stats(*self._inputs(labels, preds, _jx), jnp)
