"""The pure compiled programs of a bound symbol, used by Executor and Module alike.

``vjp_step`` is the package's only ``jax.vjp``. ``Programs`` builds, for one layout
(input batch axes, output batch axes, differentiated arguments) and one placement, the
jitted forward, forward-backward, update and fused train step. Programs are shared by
every Module bound to the same symbol, devices and layout (``replicas.programs_for``), and each
keeps its jitted functions keyed by what they close over (input names, optimizer
signature, metric type/config), so a second Module compiles nothing new.
"""

from __future__ import annotations


import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P

from ..ndarray.sparse.parts import RowParts
from . import rows
from .sparse_io import local_inputs
from .placement import AXIS, spec
from .step import SUM, Keyed, compose_step, make_update, scan_steps, split_per_device
from ..program_store import program_key
from ..program_tiers import program_jit


def vjp_step(
    graph,
    args: dict,
    aux: dict,
    rng,
    diff_names,
    head_grads=None,
    is_train: bool = True,
    aux_trained=None,
    axis_name=None,
    row_sparse=(),
    index_args=None,
):
    """Outputs, updated aux states and gradients of ``graph`` w.r.t. ``diff_names``.

    Head gradients default to ones (loss heads ignore them, as in MXNet). Only the aux
    states in ``aux_trained`` (default: all) are returned as updated: MXNet's CPU
    BatchNorm moves its statistics in backward, so a BatchNorm the backward pass does
    not reach keeps them. The gradients of the arguments in ``row_sparse`` are
    ``RowParts`` of the rows the batch reads (``rows.py``), found from ``index_args``
    (default ``args``: a differentiated csr argument is dense in ``args``, csr there).
    """
    diff = {n: args[n] for n in diff_names if n in args}
    const = {n: v for n, v in args.items() if n not in diff}
    sparse = [n for n in row_sparse if n in diff]
    found = index_args if index_args is not None else args
    views = rows.gathered(graph, found, aux, rng, is_train, sparse, axis_name) if sparse else {}
    diff.update(views)

    def f(d):
        return graph({**const, **d}, aux, rng, is_train, axis_name)

    outs, vjp, new_aux = jax.vjp(f, diff, has_aux=True)
    if head_grads is None:
        head_grads = [jnp.ones_like(o) for o in outs]
    (grads,) = vjp(list(head_grads))
    grads.update({n: rows.as_rows(grads[n], views.get(n)) for n in sparse})
    # an integer argument's gradient is JAX's float0 placeholder: zeros of its dtype (MXNet)
    grads = {
        n: jnp.zeros(jnp.shape(diff[n]), jnp.result_type(diff[n]))
        if not isinstance(g, RowParts) and g.dtype == jax.dtypes.float0
        else g
        for n, g in grads.items()
    }
    if aux_trained is not None:
        new_aux = {k: v for k, v in new_aux.items() if k in aux_trained}
    return outs, new_aux, grads


def metric_key(metric):
    """Metrics of the same type and configuration share compiled statistics."""
    if metric is None:
        return None
    key = getattr(metric, "_mxmod_key", None)
    if key is None:
        key = (type(metric), repr(sorted(metric.get_config().items())))
        try:
            metric._mxmod_key = key
        except AttributeError:
            pass
    return key


class Programs:
    """Compiled programs for one bound layout on one placement.

    Args:
      graph: the symbol's ``GraphFn``.
      placement: ``OneDevice`` or ``MeshPlacement``.
      input_axes: input name -> batch axis (-1: not split).
      output_axes: batch axis per output.
      diff_names: arguments that get gradients.
      label_names, output_names: what metric statistics read.
    """

    def __init__(
        self,
        graph,
        placement,
        input_axes: dict,
        output_axes: list,
        diff_names: list,
        label_names=(),
        output_names=(),
    ):
        self.graph = graph
        self.placement = placement
        self.input_axes = dict(input_axes)
        self.output_axes = list(output_axes)
        self.diff_names = list(diff_names)
        self.aux_trained = graph.aux_reached(self.diff_names)
        # arguments whose gradients are row_sparse (MXNet's storage rules): RowParts
        self.row_sparse = rows.row_sparse_args(graph, self.diff_names)
        self.names = (tuple(label_names), tuple(output_names))
        self._axis = AXIS if placement.multi else None
        self._cache: dict = {}
        self._keepalive: list = []  # objects whose identity a cached closure holds
        self.stored_as = None  # what this layout is built from: its executables go to disk

    # ------------------------------------------------------------ placement
    def replicated(self):
        return self.placement.replicated()

    def input_sharding(self, name: str):
        return self.placement.sharding(self.input_axes.get(name, 0))

    def output_sharding(self, i: int):
        return self.placement.sharding(self.output_axes[i])

    def _in_specs(self, input_names) -> dict:
        return {n: spec(self.input_axes.get(n, 0)) for n in input_names}

    def _out_specs(self) -> list:
        return [spec(a) for a in self.output_axes]

    def _stats(self, metric, inputs, outs):
        if metric is None:
            return ()
        labels = {n: inputs[n] for n in self.names[0] if n in inputs}
        stats = metric._device_stats_dict(labels, dict(zip(self.names[1], outs)))
        return self.placement.stack(stats)

    def cached(self, key, build, keep=None):
        """The program stored under ``key``, built by ``build(disk_key)`` on first use
        (``disk_key``: ``program_jit``'s ``key``); ``keep`` holds what the program closes
        over by identity (optimizer, metric) alive."""
        try:
            return self._cache[key]
        except KeyError:
            if keep is not None:
                self._keepalive.append(keep)
            disk_key = None if self.stored_as is None else program_key(self.stored_as, key)
            fn = self._cache[key] = build(disk_key)
            return fn

    # ------------------------------------------------------------ programs
    def forward(self, is_train: bool, input_names: tuple, metric=None):
        """``fn(params, aux, inputs, key) -> (outs, new_aux, stats)``; ``new_aux`` holds only
        the aux states an operator's forward writes itself (``graph.forward_aux``): moving
        statistics move in backward."""
        pl = self.placement
        keep = self.graph.forward_aux

        def build(disk_key):
            def per_device(params, aux, inputs, rng):
                params, inputs = split_per_device(params, local_inputs(inputs))
                outs, new_aux = self.graph(
                    {**params, **inputs}, aux, pl.device_key(rng), is_train, self._axis
                )
                new_aux = pl.pmean({k: v for k, v in new_aux.items() if k in keep})
                return outs, new_aux, self._stats(metric, inputs, outs)

            in_specs = (P(), P(), self._in_specs(input_names), P())
            out_specs = (self._out_specs(), P(), P(AXIS))
            return program_jit(pl.wrap(per_device, in_specs, out_specs), disk_key)

        return self.cached(("fwd", is_train, input_names, metric_key(metric)), build, metric)

    def metric_stats(self, metric, input_names: tuple):
        """``fn(inputs, outs) -> stats``: per-device metric statistics of stored outputs."""
        pl = self.placement

        def build(disk_key):
            def per_device(inputs, outs):
                return self._stats(metric, inputs, outs)

            in_specs = (self._in_specs(input_names), self._out_specs())
            return program_jit(pl.wrap(per_device, in_specs, P(AXIS)), disk_key)

        return self.cached(("metric", input_names, metric_key(metric)), build, metric)

    def _fb(self, input_names, with_head_grads: bool, metric, stacked: bool):
        """The per-device forward-backward, wrapped over the placement (not jitted)."""
        pl = self.placement

        def per_device(params, aux, inputs, rng, head_grads=None):
            params, inputs = split_per_device(params, local_inputs(inputs))
            outs, new_aux, grads = vjp_step(
                self.graph,
                {**params, **inputs},
                aux,
                pl.device_key(rng),
                self.diff_names,
                head_grads,
                True,
                self.aux_trained,
                self._axis,
                row_sparse=self.row_sparse,
            )
            pgrads = {n: g for n, g in grads.items() if n in params}
            igrads = rows.dense_grads({n: g for n, g in grads.items() if n not in params})
            if stacked:
                pgrads = pl.stack(rows.dense_grads(pgrads))
            else:
                sparse = {n: g for n, g in pgrads.items() if isinstance(g, RowParts)}
                pgrads = pl.psum({n: g for n, g in pgrads.items() if n not in sparse})
                if self._axis is not None:
                    sparse = {n: rows.combine(g, self._axis) for n, g in sparse.items()}
                pgrads.update(sparse)
            return outs, pl.pmean(new_aux), pgrads, igrads, self._stats(metric, inputs, outs)

        ins = self._in_specs(input_names)
        in_specs = (P(), P(), ins, P()) + ((self._out_specs(),) if with_head_grads else ())
        out_specs = (
            self._out_specs(),
            P(),
            P(AXIS) if stacked else P(),
            {n: ins[n] for n in input_names if n in self.diff_names},
            P(AXIS),
        )
        if not with_head_grads:
            inner = per_device

            def per_device(params, aux, inputs, rng):  # noqa: F811 - no head grads
                return inner(params, aux, inputs, rng)

        return pl.wrap(per_device, in_specs, out_specs)

    def forward_backward(
        self, input_names: tuple, with_head_grads: bool, metric=None, stacked: bool = False
    ):
        """``fn(params, aux, inputs, key[, head_grads]) -> (outs, new_aux, grads,
        input_grads, stats)``; ``stacked`` keeps per-device gradients on a leading axis
        (what MXNet's per-device ``grad_arrays`` show) instead of their sum."""
        key = ("fb", input_names, with_head_grads, metric_key(metric), stacked)
        return self.cached(
            key,
            lambda disk_key: program_jit(
                self._fb(input_names, with_head_grads, metric, stacked), disk_key
            ),
            metric,
        )

    def update(self, rule: Keyed, reduction=SUM, stacked: bool = False):
        """``fn(state, grads, hyper) -> (state, reduced grads)``: ``Module.update()`` after a
        separate forward-backward; ``stacked`` grads carry a leading device axis."""

        def build(disk_key):
            update = make_update(rule.fn, reduction, fixed_gammas(self.graph.symbol))

            def run(state, grads, hyper):
                if stacked and not reduction.stacked:
                    grads = {n: g.sum(0) for n, g in grads.items()}
                elif reduction.stacked and not stacked:  # one sender
                    grads = {n: g[None] for n, g in grads.items()}
                return update(state, grads, hyper)

            return program_jit(run, disk_key, donate_argnums=(0,))

        return self.cached(("upd", rule.key, reduction, stacked), build, rule)

    def _step(self, input_names, rule: Keyed, metric, keep, reduction, feed):
        fb = self._fb(input_names, False, metric, reduction.stacked)
        update = make_update(rule.fn, reduction, fixed_gammas(self.graph.symbol))
        return compose_step(fb, update, keep, feed)

    def train_step(
        self, input_names: tuple, rule: Keyed, metric=None, keep=(), reduction=SUM, feed=None
    ):
        """forward + backward + reduction + update (+ metric statistics): one dispatch,
        ``fn(state, batch, hyper) -> (state, StepResult)`` (``step.compose_step``); ``feed``
        (a ``Keyed``) gives the graph arguments other than the parameters."""

        def build(disk_key):
            step = self._step(input_names, rule, metric, keep, reduction, feed and feed.fn)
            return program_jit(step, disk_key, donate_argnums=(0,))

        key = ("step", input_names, rule.key, metric_key(metric), keep, reduction)
        if feed is not None:
            key += (feed.key,)
        return self.cached(key, build, (rule, metric))

    def train_steps(
        self, n: int, input_names: tuple, rule: Keyed, metric=None, feed=None, reduction=SUM
    ):
        """``n`` train steps in one ``lax.scan`` (``step.scan_steps``): ``fn(state,
        [inputs] * n, keys, hypers) -> (state, last outputs, stats rows)``; ``feed`` (a
        ``Keyed``) gives the graph arguments other than the parameters."""

        def build(disk_key):
            step = self._step(input_names, rule, metric, (), reduction, feed and feed.fn)
            return program_jit(scan_steps(step), disk_key, donate_argnums=(0,))

        key = ("steps", n, input_names, rule.key, metric_key(metric), feed and feed.key)
        key += (reduction,)
        return self.cached(key, build, (rule, metric))


_FIX_GAMMA_OPS = ("BatchNorm", "BatchNorm_v1", "_contrib_SyncBatchNorm")


def fixed_gammas(symbol) -> frozenset:
    """The gamma variables of ``symbol``'s BatchNorms with ``fix_gamma`` (each update
    starts them from ones, as MXNet's forward writes 1 into them)."""
    names = set()
    for node in symbol._topo():
        if node.op is not None and node.op.name in _FIX_GAMMA_OPS and node.parsed().fix_gamma:
            gamma = node.inputs[1][0] if len(node.inputs) > 1 else None
            if gamma is not None and gamma.is_var:
                names.add(gamma.name)
    return frozenset(names)
