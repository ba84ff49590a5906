"""Per-device replicas: the fallback when one program cannot span the devices.

Used when the batch splits unevenly (``work_load_list``) or several contexts share a
device (``[mx.cpu(0), mx.cpu(1)]`` on a one-CPU machine). Each device runs the
single-device program on its own slice, exactly MXNet's executor-per-device model;
gradients are summed and aux states averaged on the first device.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from .programs import Programs


def _slice(x, axis, s):
    if axis < 0:
        return x
    return jax.lax.slice_in_dim(x, s.start, s.stop, axis=axis)


def _concat(parts, axis):
    if axis < 0:
        return parts[0]
    return jnp.concatenate(parts, axis=axis)


class ReplicaPrograms(Programs):
    """Same interface as ``Programs``; loops over devices in Python."""

    def __init__(self, graph, devices, slices, input_axes, output_axes, diff_names, is_loss):
        super().__init__(graph, devices[:1], input_axes, output_axes, diff_names, is_loss)
        self.all_devices = list(devices)
        self.slices = list(slices)
        self._per_device = [Programs(graph, [d], input_axes, output_axes, diff_names, is_loss)
                            for d in devices]

    def _split(self, tree: dict, axes: dict, k: int) -> dict:
        dev = self.all_devices[k]
        return {n: jax.device_put(_slice(v, axes.get(n, 0), self.slices[k]), dev)
                for n, v in tree.items()}

    def _everywhere(self, tree, k):
        return jax.device_put(tree, self.all_devices[k])

    def _gather(self, outs_per_dev, new_aux_per_dev, stats_per_dev):
        home = self.devices[0]
        outs = [_concat([jax.device_put(o[i], home) for o in outs_per_dev], self.output_axes[i])
                for i in range(len(outs_per_dev[0]))]
        n = len(new_aux_per_dev)
        new_aux = {k: sum(jax.device_put(a[k], home) for a in new_aux_per_dev) / n
                   for k in new_aux_per_dev[0]}
        stats = jax.tree_util.tree_map(lambda *xs: jnp.concatenate(
            [jax.device_put(x, home) for x in xs]), *stats_per_dev) if stats_per_dev[0] != () else ()
        return outs, new_aux, stats

    def forward(self, is_train, input_names, metric=None, names=((), ())):
        fns = [p.forward(is_train, input_names, metric, names) for p in self._per_device]

        def run(params, aux, inputs, key):
            res = [fn(self._everywhere(params, k), self._everywhere(aux, k),
                      self._split(inputs, self.input_axes, k), jax.random.fold_in(key, k))
                   for k, fn in enumerate(fns)]
            return self._gather([r[0] for r in res], [r[1] for r in res], [r[2] for r in res])

        return run

    def forward_backward(self, input_names, with_head_grads, metric=None, names=((), ())):
        fns = [p.forward_backward(input_names, with_head_grads, metric, names)
               for p in self._per_device]
        out_axes = {f"\0{i}": a for i, a in enumerate(self.output_axes)}
        home = self.devices[0]

        def run(params, aux, inputs, key, head_grads=None):
            res = []
            for k, fn in enumerate(fns):
                args = [self._everywhere(params, k), self._everywhere(aux, k),
                        self._split(inputs, self.input_axes, k), jax.random.fold_in(key, k)]
                if with_head_grads:
                    hg = self._split({f"\0{i}": g for i, g in enumerate(head_grads)}, out_axes, k)
                    args.append([hg[f"\0{i}"] for i in range(len(head_grads))])
                res.append(fn(*args))
            outs, new_aux, stats = self._gather([r[0] for r in res], [r[1] for r in res],
                                                [r[4] for r in res])
            grads = {n: sum(jax.device_put(r[2][n], home) for r in res) for n in res[0][2]}
            input_grads = {n: _concat([jax.device_put(r[3][n], home) for r in res],
                                      self.input_axes.get(n, 0)) for n in res[0][3]}
            return outs, new_aux, grads, input_grads, stats

        return run

    def train_step(self, input_names, optimizer, metric=None, names=((), ())):
        fb = self.forward_backward(input_names, False, metric, names)
        update = self.update(optimizer)

        def run(params, aux, opt_state, inputs, key, hyper):
            outs, new_aux, grads, _, stats = fb(params, aux, inputs, key)
            params, opt_state = update(params, grads, opt_state, hyper)
            return params, {**aux, **new_aux}, opt_state, outs, stats

        return run

    def metric_stats(self, metric, names, input_names):
        fns = [p.metric_stats(metric, names, input_names) for p in self._per_device]
        out_axes = {f"\0{i}": a for i, a in enumerate(self.output_axes)}

        def run(inputs, outs):
            stats = []
            for k, fn in enumerate(fns):
                o = self._split({f"\0{i}": x for i, x in enumerate(outs)}, out_axes, k)
                stats.append(fn(self._split(inputs, self.input_axes, k),
                                [o[f"\0{i}"] for i in range(len(outs))]))
            return jax.tree_util.tree_map(lambda *xs: jnp.concatenate(
                [jax.device_put(x, self.devices[0]) for x in xs]), *stats)

        return run
