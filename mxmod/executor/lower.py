"""Lowering: a Symbol becomes a pure JAX function of explicit state."""

from __future__ import annotations

from typing import Any

import jax

from ..base import MXNetError
from ..ops import LowerCtx
from ..ops.sparse import dense, is_sparse, lower_sparse
from ..ops.transformer import DYNAMIC_SHAPE_OPS
from ..symbol.graph import aux_var_ids, topo_order
from ..symbol.infer import propagate_shapes
from .layout import Values, channel_last_enabled, lower_channel_last
from .reroll import Loop, schedule
from .shared_lower import lower_op, shared_nodes


_SHAPE_OPS = ("_zeros", "_ones", "_full")


class GraphFn:
    """``fn(args, aux, key, is_train) -> (outputs, new_aux)`` for one symbol.

    ``args``/``aux`` are dicts name -> jax.Array; ``new_aux`` holds the aux states the
    graph updated (BatchNorm moving statistics in training). Pure and jittable.
    """

    def __init__(self, sym):
        self.symbol = sym
        order = topo_order(sym._outputs)
        aux_ids = aux_var_ids(order)
        self.arg_names = [n.name for n in order if n.is_var and id(n) not in aux_ids]
        self.aux_names = [n.name for n in order if n.is_var and id(n) in aux_ids]
        self.output_names = sym.list_outputs()
        pos = {id(n): i for i, n in enumerate(order)}
        self._steps = []
        for i, node in enumerate(order):
            if node.is_var:
                self._steps.append((i, None, node.name, None, None, 0))
                continue
            a = node.parsed()
            n_data = len(node.op.input_names(a))
            refs = [(pos[id(c)], k) for c, k in node.inputs]
            aux_vars = [c.name for c, _ in node.inputs[n_data:]]
            self._steps.append((i, node, refs[:n_data], refs[n_data:], aux_vars, n_data))
        self._heads = [(pos[id(n)], k) for n, k in sym._outputs]
        self.is_loss = [n.op is not None and n.op.loss_head(n.parsed()) for n, _ in sym._outputs]
        self._subgraph_fns: dict = {}
        # nodes needing a PRNG key: random operators, and control flow whose bodies hold some
        self._random_ids = {
            id(n)
            for n in order
            if n.op is not None
            and (n.op.random or any(self.subgraph_fn(g).has_random for g in n.subgraphs))
        }
        self.has_random = bool(self._random_ids)
        # nodes whose output shapes depend on values (boolean_mask): the graph runs eagerly
        self.dynamic_nodes = [
            n.name for n in order if n.op is not None and n.op.name in DYNAMIC_SHAPE_OPS
        ]
        self._needs_shapes = [
            n
            for n in order
            if n.op is not None and (n.op.needs_out_shapes or n.op.name in _SHAPE_OPS)
        ]
        self._order = order
        self._pos = pos
        self._plan = self._reroll_plan(order, sym._outputs)
        self._shared = shared_nodes(order)  # lowerings traced once for all like them
        self._aux_reached: dict = {}
        self.head_grads_needed: dict = {}  # head_grads.py's cache
        # 2-D convolution regions lowered channel-last (layout.py; MXMOD_CONV_LAYOUT)
        self.channel_last = channel_last_enabled()
        # aux states an operator's forward writes itself (Python custom ops), in any mode
        self.forward_aux = frozenset(
            c.name
            for n in order
            if n.op is not None and n.op.aux_in_forward
            for c, _ in n.inputs[len(n.op.input_names(n.parsed())) :]
        )

    def subgraph_fn(self, sym) -> "GraphFn":
        """The ``GraphFn`` of a control-flow node's body (one per body, kept with it)."""
        if id(sym) not in self._subgraph_fns:
            self._subgraph_fns[id(sym)] = (sym, GraphFn(sym))
        return self._subgraph_fns[id(sym)][1]

    def _reroll_plan(self, order, heads):
        """Evaluation order with the time steps of unrolled ``mx.rnn`` cells as loops run
        by ``lax.scan`` (``executor/reroll.py``); None when the graph has no such loop."""
        plan = schedule(order, heads)
        if not any(isinstance(item, Loop) for item in plan):
            return None
        steps = {id(n): st for n, st in zip(order, self._steps)}
        return [item if isinstance(item, Loop) else steps[id(item)] for item in plan]

    def aux_reached(self, diff_names) -> frozenset:
        """Aux states of the nodes that depend on a differentiated argument: the ones a
        backward pass reaches, which (MXNet's CPU BatchNorm) are the ones it moves."""
        key = frozenset(diff_names)
        if key not in self._aux_reached:
            hit: set = set()
            names: set = set()
            for node in self._order:
                if node.is_var:
                    if node.name in key:
                        hit.add(id(node))
                    continue
                if any(id(c) in hit for c, _ in node.inputs):
                    hit.add(id(node))
                    n_data = len(node.op.input_names(node.parsed()))
                    names.update(c.name for c, _ in node.inputs[n_data:])
            self._aux_reached[key] = frozenset(names) | self.forward_aux
        return self._aux_reached[key]

    def _out_shapes(self, args: dict, aux: dict) -> dict:
        """Inferred output shapes of the nodes that need them (trace time only)."""
        known = {n: tuple(v.shape) for n, v in {**args, **aux}.items()}
        _, shapes = propagate_shapes(self.symbol, known)
        return {
            id(n): [shapes.get((id(n), k)) for k in range(n.num_outputs())]
            for n in self._needs_shapes
        }

    def __call__(self, args: dict, aux: dict, key: Any, is_train: bool, axis_name=None):
        """Run the graph; ``axis_name`` names the device axis when called per device inside
        a mesh program (cross-device operators such as SyncBatchNorm reduce over it)."""
        env = Values()
        new_aux: dict[str, Any] = {}
        out_shapes = self._out_shapes(args, aux) if self._needs_shapes else {}
        stacked: dict = {}
        for step in self._plan or self._steps:
            if not isinstance(step, tuple):  # a rerolled loop of RNN time steps
                res = step.run(
                    lambda e: env.first((self._pos[id(e[0])], e[1])),
                    key,
                    is_train,
                    stacked,
                    axis_name=axis_name,
                )
                for (n, o), v in res.items():
                    env.set((self._pos[id(n)], o), v)
                continue
            self._eval(step, env, args, aux, new_aux, key, is_train, axis_name, out_shapes)
        missing = [h for h in self._heads if h not in env]
        if missing:
            raise MXNetError(
                f"output {missing[0]} of the graph is a hidden output mxmod does not compute"
            )
        return [dense(env.first(h)) for h in self._heads], new_aux

    def _eval(self, step, env, args, aux, new_aux, key, is_train, axis_name, out_shapes):
        """Evaluate one node (or bind one variable) into ``env``."""
        i, node, refs, aux_refs, aux_vars, _ = step
        if node is None:
            name = refs
            src = args if name in args else aux
            if name not in src:
                raise MXNetError(f"no value bound for input {name!r}")
            env.set((i, 0), src[name])
            return
        aux_in = [new_aux.get(v, env.first(r)) for v, r in zip(aux_vars, aux_refs)]
        rng = (
            jax.random.fold_in(key, i)
            if (id(node) in self._random_ids and key is not None)
            else None
        )
        ctx = LowerCtx(
            is_train=is_train,
            node_name=node.name,
            rng=rng,
            axis_name=axis_name,
            out_shapes=out_shapes.get(id(node)),
            lower_subgraph=self.subgraph_fn if node.subgraphs else None,
            shared=id(node) in self._shared,
        )
        a = node.parsed()
        ins = [env.first(r) for r in refs]
        if any(is_sparse(v) for v in ins):  # csr / gathered rows (ops/sparse.py)
            res, last = lower_sparse(node.op, a, ins, aux_in, ctx), ()
        else:
            done = (
                lower_channel_last(node, a, refs, env, aux_in, ctx) if self.channel_last else None
            )
            if done is None:
                res, last = lower_op(node.op, a, ins, aux_in, ctx), ()
            else:
                res, last = done
        if aux_vars:
            outs, updated = res
            if updated is not None:
                for v, val in zip(aux_vars, updated):
                    new_aux[v] = val
        else:
            outs = res
        for k, o in enumerate(outs):
            env.set((i, k), o, last=k < len(last) and last[k])

    def values_of(self, args: dict, aux: dict, key: Any, is_train: bool, entries, axis_name=None):
        """The values of graph ``entries`` (``(node, output)``), evaluating only the nodes
        they depend on (the index inputs a row_sparse gradient reads: ``rows.py``)."""
        need: set = set()
        stack = [n for n, _ in entries]
        while stack:
            n = stack.pop()
            if id(n) not in need:
                need.add(id(n))
                stack.extend(c for c, _ in n.inputs)
        env, new_aux = Values(), {}
        out_shapes = self._out_shapes(args, aux) if self._needs_shapes else {}
        for step, node in zip(self._steps, self._order):
            if id(node) in need:
                self._eval(step, env, args, aux, new_aux, key, is_train, axis_name, out_shapes)
        return [env.first((self._pos[id(n)], k)) for n, k in entries]
