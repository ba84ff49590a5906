"""Which nodes of an unrolled graph make up which time step (for ``reroll.py``).

Steps are found by name: ``mx.rnn`` cells name step ``k``'s nodes ``<prefix>t<k>_<suffix>``
and a hand-written loop often tags its layers ``<name>_t<k>`` (``att_query_t3``). The
unnamed nodes between them (operator sugar: ``concat``, ``expand_dims``, ``_plus``...) join
a step when everything reading them sits in that step, or (``extended``) when they read only
that step's nodes and feed some step, e.g. the attention output an input-feeding decoder
passes to its next step (only when every step has such a node alike). A wrong guess
costs only the rerolling: ``reroll._match`` still requires isomorphic steps.

Nodes are grouped by name prefix (one group per cell). Groups that read each other's steps
(a decoder cell and its attention) cannot run as separate scans, so ``units`` merges them
into one loop; a unit that still reads its own results through outside nodes is dropped.
"""

from __future__ import annotations

import re
from typing import Optional

_CELL_NAME = re.compile(r"^((?:.*_)?)t(\d+)_(.*)$")  # prefix empty or ending in "_"
_TAG_NAME = re.compile(r"^(.*_)t(\d+)$")


def step_name(name: str, tags: bool = True) -> Optional[tuple[str, int, str]]:
    """``(prefix, step, suffix)`` of a step node's name, None for any other name; ``tags``
    also accepts a trailing ``_t<k>`` (suffix "")."""
    m = _CELL_NAME.match(name)
    if m:
        return m.group(1), int(m.group(2)), m.group(3)
    m = _TAG_NAME.match(name) if tags else None
    return (m.group(1), int(m.group(2)), "") if m else None


def assign_steps(order: list, heads: list, extended: bool) -> dict[int, tuple[str, int]]:
    """``(prefix, step)`` of every node that belongs to a step, by node id.

    Args:
        order: the graph's nodes in topological order.
        heads: the graph's output entries.
        extended: also accept ``_t<k>`` tags and helpers assigned by what they read (and
            take a graph output for a consumer outside every step); False keeps to cell
            names and helpers assigned by their consumers.
    """
    consumers: dict[int, list] = {}
    for node in order:
        for child, _ in node.inputs:
            consumers.setdefault(id(child), []).append(node)
    outputs = {id(n) for n, _ in heads} if extended else set()
    step_of: dict[int, tuple[str, int]] = {}
    named: set = set()
    for node in order:
        parsed = None if node.is_var else step_name(node.name, extended)
        if parsed:
            step_of[id(node)] = parsed[:2]
            named.add(id(node))
    for node in reversed(order):
        if node.is_var or id(node) in step_of or id(node) in outputs:
            continue
        steps = {step_of.get(id(c)) for c in consumers.get(id(node), [])}
        if len(steps) == 1 and None not in steps:
            step_of[id(node)] = steps.pop()
    by_reads: set = set()
    if extended:
        for node in order:
            if node.is_var or id(node) in step_of:
                continue
            keys = [step_of[id(c)] for c, _ in node.inputs if id(c) in step_of]
            if keys and len({k[1] for k in keys}) == 1:
                step_of[id(node)] = keys[0]
                by_reads.add(id(node))
    dropped = _drop_constants(order, step_of, named, by_reads, near=extended)
    if extended:
        fixed = named | _restore_first_steps(order, consumers, step_of, named, dropped)
        _keep_uniform_tails(order, consumers, step_of, named, fixed, by_reads)
    return step_of


def _drop_constants(order, step_of, fixed, by_reads, near=True) -> dict:
    """Helpers (not in ``fixed``) must read a step node (constants stay outside the loop),
    with ``near`` one of the same step or the one before (``zeros_like`` of an encoder's last
    state is the decoder's begin state); returns the dropped ones' steps by node id."""

    def reads_step(node, k):
        keys = [step_of.get(id(c)) for c, _ in node.inputs]
        return any(key is not None and (not near or k - key[1] in (0, 1)) for key in keys)

    dropped = {}
    changed = True
    while changed:
        changed = False
        for node in order:
            if id(node) in step_of and id(node) not in fixed:
                if not reads_step(node, step_of[id(node)][1]):
                    dropped[id(node)] = step_of.pop(id(node))
                    by_reads.discard(id(node))
                    changed = True
    return dropped


def _restore_first_steps(order, consumers, step_of, named, dropped) -> set:
    """Take back a dropped helper when another step of its group keeps one like it (same
    operator and attributes, read by the same nodes): step 0's ``concat(x_0, h_begin)``
    reads no step node, yet it is the same node as ``concat(x_k, h_k-1)`` of step ``k``."""

    def like(node, key):
        ident = []
        for c in consumers.get(id(node), []):
            if step_of.get(id(c)) != key:
                return None
            parsed = step_name(c.name) if id(c) in named else None
            ident.append(parsed[::2] if parsed else (c.op.name,))
        return node.op.name, tuple(sorted(node.attrs.items())), tuple(sorted(ident))

    restored: set = set()
    changed = True
    while changed:
        kept: dict = {}
        for node in order:
            key = step_of.get(id(node))
            if key is not None and id(node) not in named:
                kept.setdefault((key[0], like(node, key)), set()).add(key[1])
        changed = False
        for node in order:
            key = dropped.get(id(node))
            ident = None if key is None else like(node, key)
            if ident is not None and kept.get((key[0], ident), set()) - {key[1]}:
                step_of[id(node)] = dropped.pop(id(node))
                restored.add(id(node))
                changed = True
    return restored


def _keep_uniform_tails(order, consumers, step_of, named, fixed, by_reads) -> None:
    """Drop the helpers assigned by what they read unless they feed a step (before the
    group's last step) and every step of the group has the same ones: a classifier on the
    last step's output, or a per-step ``expand_dims`` for the merged outputs, stays out."""
    if not by_reads:
        return
    last: dict[str, int] = {}
    for prefix, k in step_of.values():
        last[prefix] = max(last.get(prefix, k), k)
    feeds: set = set()
    for node in reversed(order):
        if any(
            id(c) in step_of and (id(c) not in by_reads or id(c) in feeds)
            for c in consumers.get(id(node), [])
        ):
            feeds.add(id(node))
    for node in order:
        key = step_of.get(id(node))
        if id(node) in by_reads and key[1] < last[key[0]] and id(node) not in feeds:
            del step_of[id(node)]
            by_reads.discard(id(node))
    while True:
        sig_ids: dict[tuple, int] = {}
        sig_of: dict[int, int] = {}
        counts: dict[tuple, int] = {}
        for node in order:
            if id(node) not in by_reads:
                continue
            ins = []
            for c, o in node.inputs:
                if id(c) in sig_of:
                    ins.append(("tail", sig_of[id(c)], o))
                elif id(c) in named:
                    prefix, _, suffix = step_name(c.name)
                    ins.append(("named", prefix, suffix, o))
                else:
                    ins.append(("other",))
            sig = (node.op.name, tuple(sorted(node.attrs.items())), tuple(ins))
            sig_of[id(node)] = sig_ids.setdefault(sig, len(sig_ids))
            key = step_of[id(node)]
            counts[(key, sig_of[id(node)])] = counts.get((key, sig_of[id(node)]), 0) + 1
        steps: dict[str, set] = {}
        for prefix, k in step_of.values():
            steps.setdefault(prefix, set()).add(k)
        drop = [
            node
            for node in order
            if id(node) in by_reads
            and any(
                counts.get(((step_of[id(node)][0], k), sig_of[id(node)]), 0)
                != counts[(step_of[id(node)], sig_of[id(node)])]
                for k in steps[step_of[id(node)][0]]
            )
        ]
        if not drop:
            return
        for node in drop:  # the helpers reading them change signature: recount
            del step_of[id(node)]
            by_reads.discard(id(node))
        _drop_constants(order, step_of, fixed, by_reads)


def canonical(nodes: list, tags: bool = True) -> list:
    """A step's nodes in an order that depends only on its structure: depth-first from the
    named nodes sorted by (prefix, suffix), inputs in slot order; then the helpers nothing
    in the step reads, each once its step inputs are placed, by operator and wiring."""
    members = {id(n) for n in nodes}
    roots = sorted(
        (n for n in nodes if step_name(n.name, tags)),
        key=lambda n: (step_name(n.name, tags)[0], step_name(n.name, tags)[2]),
    )
    out: list = []
    seen: set = set()
    for root in roots:
        if id(root) in seen:
            continue
        seen.add(id(root))
        stack = [(root, 0)]
        while stack:
            node, i = stack.pop()
            if i < len(node.inputs):
                stack.append((node, i + 1))
                child = node.inputs[i][0]
                if id(child) in members and id(child) not in seen:
                    seen.add(id(child))
                    stack.append((child, 0))
            else:
                out.append(node)
    rest = [n for n in nodes if id(n) not in seen]
    while rest:
        pos = {id(n): i for i, n in enumerate(out)}
        ready = [n for n in rest if all(id(c) in pos or id(c) not in members for c, _ in n.inputs)]
        if not ready:
            return []
        ready.sort(
            key=lambda n: (
                n.op.name,
                sorted(n.attrs.items()),
                [(pos.get(id(c), -1), o) for c, o in n.inputs],
            )
        )
        out.append(ready[0])
        rest.remove(ready[0])
    return out


def step_groups(order: list, step_of: dict) -> dict[str, dict[int, list]]:
    """Per prefix, its nodes by step, for the prefixes with steps ``0..T-1``, ``T >= 2``."""
    groups: dict[str, dict[int, list]] = {}
    for node in order:
        key = step_of.get(id(node))
        if key is not None:
            groups.setdefault(key[0], {}).setdefault(key[1], []).append(node)
    return {p: g for p, g in groups.items() if len(g) >= 2 and sorted(g) == list(range(len(g)))}


def units(order: list, step_of: dict) -> list[list[dict[int, list]]]:
    """Candidate loops: per loop, the groups (``{step: nodes}``, steps ``0..T-1``) it merges.

    Groups whose steps read each other's directly are merged (they need the same steps);
    a merged unit that reads its own steps through outside nodes, or lies on a cycle of
    units, is not a loop.
    """
    groups = step_groups(order, step_of)
    group_of = {id(n): p for p, g in groups.items() for nodes in g.values() for n in nodes}
    direct: dict[str, set] = {p: set() for p in groups}
    via: dict[str, set] = {p: set() for p in groups}  # groups read through outside nodes
    reach: dict[int, frozenset] = {}
    for node in order:
        here = group_of.get(id(node))
        found: set = set()
        for child, _ in node.inputs:
            there = group_of.get(id(child))
            if there is None:
                found |= reach[id(child)]
                if here is not None:
                    via[here] |= reach[id(child)]
            else:
                found.add(there)
                if here is not None and there != here:
                    direct[here].add(there)
        reach[id(node)] = frozenset(found)
    merged = _components(list(groups), direct)
    unit_of = {p: i for i, comp in enumerate(merged) for p in comp}
    # a unit reading itself through outside nodes is a cycle; its own direct reads are not
    edges = [
        {unit_of[q] for p in comp for q in via[p]}
        | {unit_of[q] for p in comp for q in direct[p] if unit_of[q] != i}
        for i, comp in enumerate(merged)
    ]
    cyclic = {i for i in range(len(merged)) if any(i in _reachable(j, edges) for j in edges[i])}
    out = []
    for i, comp in enumerate(merged):
        lengths = {len(groups[p]) for p in comp}
        if i not in cyclic and len(lengths) == 1:
            out.append([groups[p] for p in sorted(comp)])
    return out


def _reachable(start, edges) -> set:
    seen, todo = {start}, [start]
    while todo:
        for nxt in edges[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def _components(keys, edges) -> list[list]:
    """Strongly connected components (keys that reach each other), in first-key order."""
    keys = list(keys)
    reach = {k: _reachable(k, edges) for k in keys}
    comps, placed = [], set()
    for k in keys:
        if k not in placed:
            comp = [j for j in keys if j in reach[k] and k in reach[j]]
            placed.update(comp)
            comps.append(comp)
    return comps
