"""Per-device replicas: the fallback when one program cannot span the devices.

Used when the batch splits unevenly (``work_load_list``) or several contexts share a
device (``[mx.cpu(0), mx.cpu(1)]`` on a one-CPU machine). Each device runs the
single-device program on its own slice, exactly MXNet's executor-per-device model;
gradients are summed (or stacked, per device) and aux states averaged on the first device.
"""

from __future__ import annotations

from typing import Any, Optional

import jax
import jax.numpy as jnp

from ..base import MXNetError
from ..ndarray.sparse.parts import CsrParts, RowParts
from ..program_store import load_ahead
from . import rows
from .placement import OneDevice
from .programs import Programs, metric_key
from .step import SUM, compose_step, dense_grads


def device_block(slices: list, batch_size: int, k: int, length: int, what: str) -> slice:
    """Device ``k``'s part of a result merged from the devices' own results along an axis of
    ``length`` elements (MXNet concatenates each executor's whole output): its batch slice
    when the axis holds the batch, else its share of ``length`` (e.g. a ``(T*N, C)``
    output holds ``T`` rows per sample; a per-device loss of shape ``(1,)``, one row)."""
    if length == batch_size:
        return slices[k]
    bounds = [length * s.start / batch_size for s in slices] + [float(length)]
    if all(b.is_integer() for b in bounds):
        return slice(int(bounds[k]), int(bounds[k + 1]))
    n = len(slices)
    if length % n == 0:  # the same part per device, whatever its share of the batch
        return slice(k * length // n, (k + 1) * length // n)
    raise MXNetError(
        f"{what}: its split axis has {length} elements, which the {n} devices' batch slices "
        f"{[(s.stop - s.start) for s in slices]} do not divide; give the output a "
        "'__layout__' attribute naming its batch axis, or merge it (merge_multi_context=True)"
    )


def _slice(x, axis, s):
    if axis < 0:
        return x
    if isinstance(x, CsrParts):  # csr data: the rows in s, renumbered; others padding
        if axis != 0:
            raise NotImplementedError(f"splitting a csr input along axis {axis} (only 0)")
        n = s.stop - s.start
        keep = (x.rows >= s.start) & (x.rows < s.stop)
        return CsrParts(
            jnp.where(keep, x.data, 0),
            jnp.where(keep, x.rows - s.start, n),
            jnp.where(keep, x.cols, x.shape[1]),
            (n, x.shape[1]),
        )
    return jax.lax.slice_in_dim(x, s.start, s.stop, axis=axis)


def _sum(parts):
    """The devices' gradients added (row_sparse ones: rows united, duplicates added)."""
    if isinstance(parts[0], RowParts):
        return rows.merge(parts)
    return sum(parts)


def _concat(parts, axis):
    if axis < 0:
        return parts[0]
    return jnp.concatenate(parts, axis=axis)


class ReplicaPrograms(Programs):
    """Same interface as ``Programs``; loops over the devices in Python."""

    def __init__(
        self,
        graph,
        devices,
        slices,
        input_axes,
        output_axes,
        diff_names,
        label_names=(),
        output_names=(),
    ):
        super().__init__(
            graph,
            OneDevice(devices[0]),
            input_axes,
            output_axes,
            diff_names,
            label_names,
            output_names,
        )
        self.all_devices = list(devices)
        self.slices = list(slices)
        self._per_device = [
            Programs(
                graph, OneDevice(d), input_axes, output_axes, diff_names, label_names, output_names
            )
            for d in devices
        ]

    def _home(self, x):
        return jax.device_put(x, self.placement.devices[0])

    def _split(self, tree: dict, axes: dict, k: int) -> dict:
        dev = self.all_devices[k]
        return {
            n: jax.device_put(_slice(v, axes.get(n, 0), self.slices[k]), dev)
            for n, v in tree.items()
        }

    def _split_outs(self, outs: list, k: int, what: str) -> list:
        """Device ``k``'s part of each merged output (or head gradient): the block its own
        program produced (``device_block``)."""
        dev, batch = self.all_devices[k], self.slices[-1].stop
        parts = []
        for i, (x, axis) in enumerate(zip(outs, self.output_axes)):
            if axis >= 0:
                s = device_block(self.slices, batch, k, x.shape[axis], f"{what} {i}")
                x = _slice(x, axis, s)
            parts.append(jax.device_put(x, dev))
        return parts

    def _everywhere(self, tree, k):
        return jax.device_put(tree, self.all_devices[k])

    def _cat_stats(self, stats_per_dev):
        if stats_per_dev[0] == ():
            return ()
        return jax.tree_util.tree_map(
            lambda *xs: jnp.concatenate([self._home(x) for x in xs]), *stats_per_dev
        )

    def _cat_outs(self, outs_per_dev):
        return [
            _concat([self._home(o[i]) for o in outs_per_dev], self.output_axes[i])
            for i in range(len(outs_per_dev[0]))
        ]

    def forward(self, is_train, input_names, metric=None):
        fns = [p.forward(is_train, input_names, metric) for p in self._per_device]

        def run(params, aux, inputs, key):
            res = [
                fn(
                    self._everywhere(params, k),
                    self._everywhere(aux, k),
                    self._split(inputs, self.input_axes, k),
                    jax.random.fold_in(key, k),
                )
                for k, fn in enumerate(fns)
            ]
            n = len(res)
            new_aux = {a: sum(self._home(r[1][a]) for r in res) / n for a in res[0][1]}
            return (
                self._cat_outs([r[0] for r in res]),
                new_aux,
                self._cat_stats([r[2] for r in res]),
            )

        return run

    def forward_backward(self, input_names, with_head_grads, metric=None, stacked=False):
        fns = [
            p.forward_backward(input_names, with_head_grads, metric, False)
            for p in self._per_device
        ]

        def run(params, aux, inputs, key, head_grads=None):
            res = []
            for k, fn in enumerate(fns):
                args = [
                    self._everywhere(params, k),
                    self._everywhere(aux, k),
                    self._split(inputs, self.input_axes, k),
                    jax.random.fold_in(key, k),
                ]
                if with_head_grads:
                    args.append(self._split_outs(head_grads, k, "head gradient"))
                res.append(fn(*args))
            n = len(res)
            new_aux = {a: sum(self._home(r[1][a]) for r in res) / n for a in res[0][1]}
            if stacked:
                dense = [dense_grads(r[2]) for r in res]
                grads = {g: jnp.stack([self._home(d[g]) for d in dense]) for g in res[0][2]}
            else:
                grads = {g: _sum([self._home(r[2][g]) for r in res]) for g in res[0][2]}
            input_grads = {
                g: _concat([self._home(r[3][g]) for r in res], self.input_axes.get(g, 0))
                for g in res[0][3]
            }
            return (
                self._cat_outs([r[0] for r in res]),
                new_aux,
                grads,
                input_grads,
                self._cat_stats([r[4] for r in res]),
            )

        return run

    def train_step(self, input_names, rule, metric=None, keep=(), reduction=SUM):
        """The same ``compose_step`` as one program, run eagerly: the forward-backward
        loops over the devices, the update is one jitted program on the first."""
        key = ("replica-step", input_names, rule.key, metric_key(metric), keep, reduction)

        def build(_disk_key):  # eager: nothing compiled to store
            fb = self.forward_backward(input_names, False, metric, reduction.stacked)
            update = self.update(rule, reduction, reduction.stacked)
            return compose_step(fb, update, keep)

        return self.cached(key, build, (rule, metric))

    def metric_stats(self, metric, input_names):
        fns = [p.metric_stats(metric, input_names) for p in self._per_device]

        def run(inputs, outs):
            stats = []
            for k, fn in enumerate(fns):
                mine = self._split_outs(outs, k, "output")
                stats.append(fn(self._split(inputs, self.input_axes, k), mine))
            return self._cat_stats(stats)

        return run


def programs_for(
    compiled,
    placement,
    input_axes: dict,
    output_axes: list,
    diff_names: list,
    label_names=(),
    output_names=(),
    slices: Optional[list] = None,
    replica_devices: Optional[list] = None,
) -> Any:
    """The shared ``Programs`` of one symbol, placement and layout; with ``slices`` and
    ``replica_devices``, per-device replicas (uneven splits, shared devices)."""
    key = (
        placement.key,
        tuple(replica_devices or ()),
        tuple(sorted(input_axes.items())),
        tuple(output_axes),
        tuple(diff_names),
        tuple(label_names),
        tuple(output_names),
        tuple((s.start, s.stop) for s in slices) if slices else None,
    )
    progs = compiled.programs.get(key)
    if progs is None:
        if slices:
            progs = ReplicaPrograms(
                compiled.graph,
                replica_devices,
                slices,
                input_axes,
                output_axes,
                diff_names,
                label_names,
                output_names,
            )
        else:
            progs = Programs(
                compiled.graph,
                placement,
                input_axes,
                output_axes,
                diff_names,
                label_names,
                output_names,
            )
        if compiled.structure is not None:
            progs.stored_as = (compiled.structure, key)
            load_ahead()
        compiled.programs[key] = progs
    return progs
