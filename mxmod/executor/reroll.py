"""Rerolling: find the time steps that ``mx.rnn`` cells unrolled into a graph, so the
lowering can run them as one ``jax.lax.scan`` instead of ``T`` copies.

An unrolled graph (``cell.unroll(T, ...)``) holds ``T`` isomorphic step subgraphs: step
``k`` reads per-step inputs (``x_k``), loop invariants (weights) and the previous step's
states, and MXNet's cells name its nodes ``<prefix>t<k>_<suffix>``. XLA compiles ``T``
copies slowly (minutes for 2 LSTM layers of 40 steps on CPU) and runs them slower than one
scan, so ``find_loops`` recovers the loop structure from the graph alone (it works for a
graph loaded from JSON too) and ``Loop.run`` evaluates it with ``lax.scan``. The graph,
its names and its JSON are unchanged; only the lowering differs. A decoder written as a
Python loop over ``t`` (a cell plus attention layers tagged ``<name>_t<k>``, feeding its
attention output to the next step) is one loop too: ``reroll_steps.py`` finds which nodes
make up each step and which cells' steps must run together.

A step is accepted only when every step has the same operators, attributes and wiring;
anything else (aux states, ops that need inferred shapes, inputs from two steps back)
leaves the graph as it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import jax
import jax.numpy as jnp

from ..ops import LowerCtx
from .reroll_steps import assign_steps, canonical, step_groups, step_name, units

Entry = tuple[Any, int]  # (Node, output index)


@dataclass
class Loop:
    """``T`` isomorphic steps of an unrolled graph.

    Attributes:
        steps: per step, its nodes in topological order (position ``i`` of every step is
            the same operator with the same attributes).
        refs: per template node, per input: ``("int", i, o)`` (output ``o`` of node ``i``
            of the same step), ``("carry", c)``, ``("inv", j)`` or ``("seq", j)``.
        invariants: entries every step reads unchanged (weights, biases).
        seq: per per-step input, its entry for each step.
        carry_init: per carried state, the entry step 0 reads.
        carry_src: per carried state, ``(i, o)``: the output of the step that the next
            step reads.
        outputs: ``(i, o)`` outputs of a step that something outside the loop reads.
    """

    steps: list
    refs: list = field(default_factory=list)
    invariants: list = field(default_factory=list)
    seq: list = field(default_factory=list)
    carry_init: list = field(default_factory=list)
    carry_src: list = field(default_factory=list)
    outputs: list = field(default_factory=list)

    @property
    def length(self) -> int:
        return len(self.steps)

    def nodes(self) -> set:
        """ids of every node the loop replaces."""
        return {id(n) for step in self.steps for n in step}

    def run(
        self,
        value: Callable[[Entry], Any],
        key: Any,
        is_train: bool,
        stacked: Optional[dict] = None,
        **ctx_kwargs: Any,
    ) -> dict:
        """Evaluate the loop with ``lax.scan``.

        Args:
            value: the array of an entry outside the loop.
            key: the graph's PRNG key (or None); random nodes get
                ``fold_in(fold_in(key, i), k)`` for template node ``i`` at step ``k``.
            is_train: training mode for the operators.
            stacked: shared between the loops of one graph: per-step outputs of earlier
                loops, already stacked, so a stacked layer reads them without re-stacking.
            **ctx_kwargs: more ``LowerCtx`` fields (e.g. ``axis_name``).

        Returns:
            ``{(node, o): array}`` for every output of every step read outside the loop.
        """
        stacked = {} if stacked is None else stacked
        template = self.steps[0]
        inv = [value(e) for e in self.invariants]
        xs = []
        for entries in self.seq:
            sig = tuple((id(n), o) for n, o in entries)
            if sig in stacked:
                xs.append(stacked[sig])
            elif _split_steps(entries):  # x_k = x[:, k]: the split input, time axis first
                node = entries[0][0]
                x = value(node.inputs[0])
                xs.append(jnp.moveaxis(x, node.parsed().axis % x.ndim, 0))
            else:
                xs.append(jnp.stack([value(e) for e in entries]))
        init = [value(e) for e in self.carry_init]

        def body(carry, step_in):
            x_k, k = step_in
            local: list = []
            for i, node in enumerate(template):
                ins = []
                for ref in self.refs[i]:
                    kind = ref[0]
                    if kind == "int":
                        ins.append(local[ref[1]][ref[2]])
                    elif kind == "carry":
                        ins.append(carry[ref[1]])
                    elif kind == "inv":
                        ins.append(inv[ref[1]])
                    else:
                        ins.append(x_k[ref[1]])
                rng = None
                if node.op.random and key is not None:
                    rng = jax.random.fold_in(jax.random.fold_in(key, i), k)
                ctx = LowerCtx(is_train=is_train, node_name=node.name, rng=rng, **ctx_kwargs)
                local.append(node.op.lower(node.parsed(), ins, [], ctx))
            new_carry = [local[i][o] for i, o in self.carry_src]
            return new_carry, [local[i][o] for i, o in self.outputs]

        steps_in = (xs, jnp.arange(self.length))
        first = jax.tree_util.tree_map(lambda a: a[0], steps_in)
        carried = jax.eval_shape(lambda c: body(c, first)[0], init)
        if all(c.shape == i.shape for c, i in zip(carried, init)):
            # a begin state may have another dtype than the state a step returns
            init = [i.astype(c.dtype) for c, i in zip(carried, init)]
            _, ys = jax.lax.scan(body, init, steps_in)
        else:  # the states change shape after step 0: evaluate step by step
            carry, per_step = init, []
            for k in range(self.length):
                carry, y = body(carry, jax.tree_util.tree_map(lambda a: a[k], steps_in))
                per_step.append(y)
            ys = [jnp.stack([y[j] for y in per_step]) for j in range(len(self.outputs))]
        result = {}
        for j, (i, o) in enumerate(self.outputs):
            stacked[tuple((id(step[i]), o) for step in self.steps)] = ys[j]
            for k, step in enumerate(self.steps):
                result[(step[i], o)] = ys[j][k]
        return result


def _split_steps(entries: list) -> bool:
    """Whether per-step inputs are the outputs ``0..T-1`` of one ``split(squeeze_axis=1)``
    into ``T`` (as ``cell.unroll`` splits its input)."""
    node = entries[0][0]
    if node.op is None or node.op.name != "SliceChannel":
        return False
    a = node.parsed()
    return (
        bool(a.squeeze_axis)
        and a.num_outputs == len(entries)
        and all(n is node and o == k for k, (n, o) in enumerate(entries))
    )


def find_loops(order: list, heads: list) -> list[Loop]:
    """The rerollable loops of a graph, all of which ``schedule`` can place.

    Each loop is a cell's steps, or (a decoder with attention written as a Python loop over
    ``t``) the cell's steps merged with the steps of the layers that feed its next step, or
    layers tagged ``<name>_t<k>`` that carry a state from step to step or map several
    operators over per-step activations. The loops found by cell names and
    consumer-assigned helpers alone (the rules before tags) are returned instead when
    these do not cover all of their nodes.

    Args:
        order: the graph's nodes in topological order.
        heads: the graph's output entries ``(node, o)``.

    Returns:
        Disjoint loops, each of at least two steps.
    """
    loops = []
    for unit in units(order, assign_steps(order, heads, extended=True)):
        steps = [[n for g in unit for n in g[k]] for k in range(len(unit[0]))]
        loop = _match(order, heads, [canonical(s) for s in steps])
        if loop is None:
            continue
        # layers only tagged ``_t<k>`` are a loop when they carry a state, or when each step
        # is several operators on per-step activations (attention on a cell's outputs); a
        # lone per-step operator (BidirectionalCell's output concat) or per-step weights
        # stay as they are
        cell = any(step_name(n.name, tags=False) for n in steps[0])
        mapped = len(steps[0]) > 1 and not any(n.is_var for es in loop.seq for n, _ in es)
        if cell or loop.carry_src or mapped:
            loops.append(loop)
    if loops and _place(order, heads, loops) is None:
        loops = []  # not expected: units() leaves out what lies on a cycle
    covered = {nid for lp in loops for nid in lp.nodes()}
    groups = step_groups(order, assign_steps(order, heads, extended=False))
    if all(id(n) in covered for g in groups.values() for s in g.values() for n in s):
        return loops
    cells = _cell_loops(order, heads, groups)
    return loops if all(lp.nodes() <= covered for lp in cells) else cells


def _cell_loops(order: list, heads: list, groups: dict) -> list[Loop]:
    """One loop per cell prefix (``groups``), helpers assigned by consumers only; none when
    they cannot all be placed."""
    loops = []
    for by_step in groups.values():
        steps = [canonical(by_step[k], tags=False) for k in range(len(by_step))]
        loop = _match(order, heads, steps)
        if loop is not None:
            loops.append(loop)
    return loops if loops and _place(order, heads, loops) is not None else []


def schedule(order: list, heads: list) -> list:
    """The graph's evaluation order with each rerollable loop as one item.

    Args:
        order: the graph's nodes in topological order.
        heads: the graph's output entries.

    Returns:
        A list of ``Node`` (lower as usual) and ``Loop`` items (``Loop.run``) in which every
        item comes after everything it reads; ``order`` itself when there is no loop.
    """
    if any(n.subgraphs for n in order):  # control flow: steps would match by attributes only
        return list(order)
    loops = find_loops(order, heads)
    plan = _place(order, heads, loops) if loops else None
    return list(order) if plan is None else plan


def _place(order: list, heads: list, loops: list) -> Optional[list]:
    """``schedule``'s list for these loops; None when a loop's outside inputs depend on its
    own outputs (then it is not a scan)."""
    owner = {nid: lp for lp in loops for nid in lp.nodes()}

    def unit(node):
        return owner.get(id(node), node)

    def deps(item):
        if isinstance(item, Loop):
            entries = item.invariants + item.carry_init + [e for es in item.seq for e in es]
            return [unit(n) for n, _ in entries]
        return [unit(c) for c, _ in item.inputs]

    out: list = []
    state: dict[int, int] = {}  # 1: on the stack, 2: done
    for head, _ in heads:
        start = unit(head)
        if state.get(id(start)) == 2:
            continue
        stack = [(start, iter(deps(start)))]
        state[id(start)] = 1
        while stack:
            item, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                stack.pop()
                state[id(item)] = 2
                out.append(item)
            elif state.get(id(nxt)) == 1:
                return None  # a cycle through a loop
            elif id(nxt) not in state:
                state[id(nxt)] = 1
                stack.append((nxt, iter(deps(nxt))))
    return out


def _match(order: list, heads: list, steps: list) -> Optional[Loop]:
    n = len(steps[0])
    if n == 0 or any(len(s) != n for s in steps):
        return None
    for i in range(n):
        node = steps[0][i]
        if (
            node.op.aux_names(node.parsed())
            or node.op.needs_out_shapes
            or node.op.name in ("_zeros", "_ones", "_full")
        ):
            return None
        for s in steps[1:]:
            other = s[i]
            if (
                other.op is not node.op
                or other.attrs != node.attrs
                or len(other.inputs) != len(node.inputs)
            ):
                return None
    index = [{id(nd): i for i, nd in enumerate(s)} for s in steps]
    step_of = {nid: k for k, idx in enumerate(index) for nid in idx}
    loop = Loop(steps=steps)
    carries: dict[tuple, int] = {}
    invs: dict[tuple, int] = {}
    for i in range(n):
        node_refs = []
        for slot in range(len(steps[0][i].inputs)):
            ref = _classify(steps, index, step_of, i, slot, loop, carries, invs)
            if ref is None:
                return None
            node_refs.append(ref)
        loop.refs.append(node_refs)
    inside = loop.nodes()
    read_outside = {(id(c), o) for node in order if id(node) not in inside for c, o in node.inputs}
    read_outside |= {(id(h), o) for h, o in heads}
    for i in range(n):
        for o in range(steps[0][i].num_outputs()):
            if any((id(s[i]), o) in read_outside for s in steps):
                loop.outputs.append((i, o))
    return loop


def _classify(steps, index, step_of, i, slot, loop, carries, invs):
    """How input ``slot`` of template node ``i`` is wired, the same way in every step."""
    kinds = []
    for k, s in enumerate(steps):
        child, o = s[i].inputs[slot]
        if id(child) in index[k]:
            kinds.append(("int", index[k][id(child)], o))
        elif k > 0 and id(child) in index[k - 1]:
            kinds.append(("prev", index[k - 1][id(child)], o))
        elif id(child) in step_of:
            return None  # reads a step further back: not a first-order recurrence
        else:
            kinds.append(("out", child, o))
    first, rest = kinds[0], kinds[1:]
    if all(r == rest[0] for r in rest) and rest[0][0] == "int":
        return rest[0] if first == rest[0] else None
    if all(r[0] == "prev" and r[1:] == rest[0][1:] for r in rest) and first[0] == "out":
        src = rest[0][1:]
        key = (id(first[1]), first[2], src)
        if key not in carries:
            carries[key] = len(loop.carry_init)
            loop.carry_init.append(first[1:])
            loop.carry_src.append(src)
        return ("carry", carries[key])
    if all(r[0] == "out" for r in kinds):
        entries = [(r[1], r[2]) for r in kinds]
        if all(id(e[0]) == id(entries[0][0]) and e[1] == entries[0][1] for e in entries):
            key = (id(entries[0][0]), entries[0][1])
            if key not in invs:
                invs[key] = len(loop.invariants)
                loop.invariants.append(entries[0])
            return ("inv", invs[key])
        loop.seq.append(entries)
        return ("seq", len(loop.seq) - 1)
    return None
