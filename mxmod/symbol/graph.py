"""The symbol DAG: nodes and their traversal. Imports no JAX."""

from __future__ import annotations

from typing import Optional

from ..base import MXNetError
from ..ops import OpDef
from ..ops._attrs import Attrs


class Node:
    """One graph node: an operator application, or a variable when ``op`` is None."""

    __slots__ = ("op", "name", "attrs", "inputs", "_parsed", "versions", "subgraphs")

    def __init__(
        self,
        op: Optional[OpDef],
        name: str,
        attrs: Optional[dict] = None,
        inputs: Optional[list] = None,
    ):
        self.op = op
        self.name = name
        self.attrs: dict[str, str] = dict(attrs or {})
        self.inputs: list[tuple[Node, int]] = list(inputs or [])
        self._parsed: Optional[Attrs] = None
        # Input-entry versions read from a JSON file (kept so load -> save is byte-exact);
        # None for nodes built in Python, whose versions the writer counts.
        self.versions: Optional[list[int]] = None
        # the graphs a control-flow node runs (``_foreach``'s loop body), as Symbols
        self.subgraphs: list = []

    @property
    def is_var(self) -> bool:
        return self.op is None

    def parsed(self) -> Attrs:
        if self._parsed is None:
            self._parsed = self.op.parse(self.attrs, self.name)
            if self.subgraphs:  # what a control-flow operator's rules read
                self._parsed["subgraphs"] = self.subgraphs
        return self._parsed

    def n_data_inputs(self) -> int:
        return len(self.op.input_names(self.parsed()))

    def input_slot_names(self) -> list[str]:
        a = self.parsed()
        return self.op.input_names(a) + self.op.aux_names(a)

    def output_names(self) -> list[str]:
        if self.is_var:
            return [self.name]
        return [f"{self.name}_{o}" for o in self.op.output_names(self.parsed())]

    def num_outputs(self) -> int:
        return 1 if self.is_var else self.op.total_outputs(self.parsed())

    def __repr__(self) -> str:
        return f"<Node {self.op.name if self.op else 'var'} {self.name}>"


def topo_order(heads: list[tuple[Node, int]]) -> list[Node]:
    """Post-order DFS from the heads (MXNet's JSON node order), iterative."""
    order: list[Node] = []
    seen: set[int] = set()
    for head, _ in heads:
        if id(head) in seen:
            continue
        stack = [(head, 0)]
        seen.add(id(head))
        while stack:
            node, i = stack.pop()
            if i < len(node.inputs):
                stack.append((node, i + 1))
                child = node.inputs[i][0]
                if id(child) not in seen:
                    seen.add(id(child))
                    stack.append((child, 0))
            else:
                order.append(node)
    return order


def aux_var_ids(order: list[Node]) -> set[int]:
    """ids of variable nodes used as auxiliary states."""
    aux: set[int] = set()
    for node in order:
        if node.is_var:
            continue
        n = node.n_data_inputs()
        for child, _ in node.inputs[n:]:
            if not child.is_var:
                raise MXNetError(
                    f"{node.op.name} {node.name!r}: auxiliary state inputs must be "
                    f"variables, got the output of {child.name!r}"
                )
            aux.add(id(child))
    return aux


def copy_graph(
    heads: list[tuple[Node, int]], replace: dict[int, tuple[Node, int]], variables: bool = False
) -> list:
    """Copy the operator nodes under ``heads`` (``variables``: the variables too, as
    MXNet's symbol copy); entries whose variable id is in ``replace`` are swapped."""
    order = topo_order(heads)
    new: dict[int, Node] = {}
    for node in order:
        if node.is_var:
            if id(node) in replace:
                continue
            new[id(node)] = Node(None, node.name, node.attrs) if variables else node
            continue
        ins = []
        for child, idx in node.inputs:
            if id(child) in replace:
                ins.append(replace[id(child)])
            else:
                ins.append((new[id(child)], idx))
        n = Node(node.op, node.name, node.attrs, ins)
        n._parsed = node._parsed
        n.versions = node.versions
        n.subgraphs = node.subgraphs
        new[id(node)] = n

    def remap(entry):
        node, idx = entry
        if id(node) in replace:
            return replace[id(node)]
        return (new[id(node)], idx)

    return [remap(h) for h in heads]
