"""The pure per-device programs of a Module and their placement on devices.

Every function here is pure: parameters, aux states, optimizer state and inputs are
explicit. ``Programs`` wraps them for one device (plain ``jit``) or for a mesh of
devices (``shard_map`` with the kvstore reduction as a ``psum`` inside).
"""
from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

AXIS = "dev"


def _spec(axis: int) -> P:
    """PartitionSpec splitting ``axis`` over the device mesh (None: replicated)."""
    if axis < 0:
        return P()
    return P(*([None] * axis + [AXIS]))


class Programs:
    """Compiled forward / forward-backward / update / train-step for one bound layout.

    Args:
      graph: the symbol's ``GraphFn``.
      devices: jax devices (unique; one program over all of them).
      input_axes: input name -> batch axis (-1: not split).
      output_axes: batch axis per output.
      diff_names: arguments that get gradients.
      is_loss: per output, whether it is a loss head (implicit head gradient).
    """

    def __init__(self, graph, devices: list, input_axes: dict, output_axes: list,
                 diff_names: list, is_loss: list):
        self.graph = graph
        self.devices = list(devices)
        self.multi = len(devices) > 1
        self.mesh = Mesh(devices, (AXIS,)) if self.multi else None
        self.input_axes = dict(input_axes)
        self.output_axes = list(output_axes)
        self.diff_names = list(diff_names)
        self.is_loss = list(is_loss)
        self._cache: dict = {}
        self._keepalive: list = []  # objects whose id() keys the cache

    # ------------------------------------------------------------ placement
    def replicated(self):
        return NamedSharding(self.mesh, P()) if self.multi else self.devices[0]

    def input_sharding(self, name: str):
        if not self.multi:
            return self.devices[0]
        return NamedSharding(self.mesh, _spec(self.input_axes.get(name, 0)))

    def output_sharding(self, i: int):
        if not self.multi:
            return self.devices[0]
        return NamedSharding(self.mesh, _spec(self.output_axes[i]))

    def _wrap(self, per_device: Callable, in_specs, out_specs) -> Callable:
        if not self.multi:
            return per_device
        return jax.shard_map(per_device, mesh=self.mesh, in_specs=in_specs, out_specs=out_specs,
                             check_vma=False)

    def _device_key(self, key):
        if self.multi:
            return jax.random.fold_in(key, jax.lax.axis_index(AXIS))
        return key

    def _reduce(self, tree, op):
        return op(tree, AXIS) if self.multi else tree

    def _in_specs(self, inputs: dict) -> dict:
        return {n: _spec(self.input_axes.get(n, 0)) for n in inputs}

    def _out_specs(self) -> list:
        return [_spec(a) for a in self.output_axes]

    # ------------------------------------------------------------ programs
    def _metric_stats(self, metric, label_names, output_names, inputs, outs):
        if metric is None:
            return ()
        labels = {n: inputs[n] for n in label_names if n in inputs}
        stats = metric._device_stats_dict(labels, dict(zip(output_names, outs)))
        return jax.tree_util.tree_map(lambda x: jnp.asarray(x)[None], stats)

    def forward(self, is_train: bool, input_names: tuple, metric=None, names=((), ())):
        key = ("fwd", is_train, input_names, _metric_key(metric))
        if key not in self._cache:
            self._keepalive.append(metric)
            g = self.graph

            def per_device(params, aux, inputs, rng):
                outs, new_aux = g({**params, **inputs}, aux, self._device_key(rng), is_train)
                new_aux = self._reduce(new_aux, jax.lax.pmean)
                stats = self._metric_stats(metric, names[0], names[1], inputs, outs)
                return outs, new_aux, stats

            in_specs = (P(), P(), {n: _spec(self.input_axes.get(n, 0)) for n in input_names}, P())
            fn = self._wrap(per_device, in_specs, (self._out_specs(), P(), P(AXIS)))
            self._cache[key] = jax.jit(fn)
        return self._cache[key]

    def metric_stats(self, metric, names, input_names: tuple):
        """Per-device metric statistics of given inputs and outputs."""
        key = ("metric", input_names, _metric_key(metric))
        if key not in self._cache:
            self._keepalive.append(metric)

            def per_device(inputs, outs):
                return self._metric_stats(metric, names[0], names[1], inputs, outs)

            in_specs = ({n: _spec(self.input_axes.get(n, 0)) for n in input_names},
                        self._out_specs())
            self._cache[key] = jax.jit(self._wrap(per_device, in_specs, P(AXIS)))
        return self._cache[key]

    def _fwd_bwd_device(self, metric, names):
        g = self.graph

        def per_device(params, aux, inputs, rng, head_grads):
            diff = {n: v for n, v in {**params, **inputs}.items() if n in self.diff_names}
            const = {n: v for n, v in {**params, **inputs}.items() if n not in diff}
            rng = self._device_key(rng)

            def f(d):
                return g({**const, **d}, aux, rng, True)

            outs, vjp, new_aux = jax.vjp(f, diff, has_aux=True)
            if head_grads is None:
                head_grads = [jnp.ones_like(o) for o in outs]
            (grads,) = vjp(list(head_grads))
            param_grads = {n: v for n, v in grads.items() if n in params}
            input_grads = {n: v for n, v in grads.items() if n not in params}
            param_grads = self._reduce(param_grads, jax.lax.psum)
            new_aux = self._reduce(new_aux, jax.lax.pmean)
            stats = self._metric_stats(metric, names[0], names[1], inputs, outs)
            return outs, new_aux, param_grads, input_grads, stats

        return per_device

    def _fwd_bwd_specs(self, input_names, with_head_grads):
        ins = {n: _spec(self.input_axes.get(n, 0)) for n in input_names}
        in_specs = (P(), P(), ins, P(), self._out_specs() if with_head_grads else None)
        out_specs = (self._out_specs(), P(), P(), {n: ins[n] for n in input_names
                                                   if n in self.diff_names}, P(AXIS))
        return in_specs, out_specs

    def forward_backward(self, input_names: tuple, with_head_grads: bool, metric=None,
                         names=((), ())):
        key = ("fb", input_names, with_head_grads, _metric_key(metric))
        if key not in self._cache:
            self._keepalive.append(metric)
            per_device = self._fwd_bwd_device(metric, names)
            in_specs, out_specs = self._fwd_bwd_specs(input_names, with_head_grads)
            if not with_head_grads:
                inner = per_device
                per_device = lambda p, a, i, r: inner(p, a, i, r, None)  # noqa: E731
                in_specs = in_specs[:4]
            self._cache[key] = jax.jit(self._wrap(per_device, in_specs, out_specs))
        return self._cache[key]

    def update(self, optimizer):
        key = ("upd", id(optimizer), optimizer.fused_signature())
        if key not in self._cache:
            self._keepalive.append(optimizer)
            def update(params, grads, opt_state, hyper):
                trained = {n: params[n] for n in grads}
                new, opt_state = optimizer.fused_update(trained, grads, opt_state, hyper)
                return {**params, **new}, opt_state

            self._cache[key] = jax.jit(update, donate_argnums=(0, 2))
        return self._cache[key]

    def train_step(self, input_names: tuple, optimizer, metric=None, names=((), ())):
        """forward + backward + reduction + update (+ metric statistics): one dispatch."""
        key = ("step", input_names, id(optimizer), optimizer.fused_signature(), _metric_key(metric))
        if key not in self._cache:
            self._keepalive.append((optimizer, metric))
            per_device = self._fwd_bwd_device(metric, names)
            in_specs, out_specs = self._fwd_bwd_specs(input_names, False)
            inner = per_device
            fb = self._wrap(lambda p, a, i, r: inner(p, a, i, r, None), in_specs[:4], out_specs)

            def step(params, aux, opt_state, inputs, rng, hyper):
                outs, new_aux, grads, _, stats = fb(params, aux, inputs, rng)
                trained = {n: params[n] for n in grads}
                new, opt_state = optimizer.fused_update(trained, grads, opt_state, hyper)
                return {**params, **new}, {**aux, **new_aux}, opt_state, outs, stats

            self._cache[key] = jax.jit(step, donate_argnums=(0, 1, 2))
        return self._cache[key]



def _metric_key(metric):
    """Metrics of the same type and configuration share compiled statistics."""
    if metric is None:
        return None
    return (type(metric), repr(sorted(metric.get_config().items())))
