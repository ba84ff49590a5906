"""Common-subexpression elimination: the graph ``Executor.get_optimized_symbol`` returns.

MXNet 1.9.1 binds a graph with this pass unless ``MXNET_ELIMINATE_COMMON_EXPR=0``: two
nodes with the same operator, the same attribute strings and the same inputs become one
(the first in graph order stays), repeatedly, so whole repeated sub-expressions fold.
After each round of folding, a graph output that repeats an earlier one gets a ``_copy``
node (``<node>_<k>_copy``) so the outputs stay distinct arrays. Nodes that never fold, as in
MXNet: variables, nodes without inputs, random operators, operators writing their aux
states, and stateful operators (MXNet's legacy ``OperatorProperty`` ops such as
``SliceChannel``, ``MakeLoss``, ``Dropout``, ``Custom``).

mxmod runs the graph as bound (XLA folds common sub-expressions itself); the pass only
gives MXNet's optimized symbol.
"""

from __future__ import annotations

import os

from ..ops import get_op
from .graph import Node, copy_graph, topo_order

#: Operators MXNet 1.9.1 never folds (stateful or legacy operators), by mxmod name.
STATEFUL_OPS = frozenset(
    """Custom Dropout MakeLoss SliceChannel Crop SequenceMask SequenceLast SequenceReverse
    L2Normalization SVMOutput IdentityAttachKLSparseReg Correlation ROIPooling GridGenerator
    BilinearSampler SpatialTransformer InstanceNorm Pad SwapAxis RNN BatchNorm
    _contrib_Proposal _contrib_MultiProposal _contrib_MultiBoxPrior _contrib_MultiBoxTarget
    _contrib_MultiBoxDetection _contrib_PSROIPooling _contrib_DeformableConvolution
    _contrib_DeformablePSROIPooling _contrib_SyncBatchNorm _contrib_count_sketch _contrib_fft
    _contrib_ifft""".split()
)


def enabled() -> bool:
    """Whether a bind now applies the pass (``MXNET_ELIMINATE_COMMON_EXPR``, default on)."""
    return os.environ.get("MXNET_ELIMINATE_COMMON_EXPR", "1").strip() != "0"


def _foldable(node: Node) -> bool:
    if node.is_var or not node.inputs or node.op.random or node.op.name in STATEFUL_OPS:
        return False
    if node.subgraphs:  # equal attributes do not make equal loop bodies
        return False
    return node.n_data_inputs() == len(node.inputs)  # aux inputs: it writes them


def _same(n: Node, m: Node) -> bool:
    return n.op.name == m.op.name and n.attrs == m.attrs


def _fold_once(order: list[Node]) -> dict[int, Node]:
    """``{id(replaced): kept}`` for one round: nodes with equal inputs, op and attributes."""
    groups: dict[tuple, list[Node]] = {}
    for node in order:
        if _foldable(node):
            key = tuple((id(c), k) for c, k in node.inputs)
            groups.setdefault(key, []).append(node)
    replaced: dict[int, Node] = {}
    for nodes in groups.values():
        for i, kept in enumerate(nodes):
            if id(kept) in replaced:
                continue
            for other in nodes[i + 1 :]:
                if id(other) not in replaced and _same(kept, other):
                    replaced[id(other)] = kept
    return replaced


def eliminate_common_expr(heads: list[tuple[Node, int]]) -> list[tuple[Node, int]]:
    """The heads of a copy of the graph under ``heads`` with common sub-expressions folded.

    As MXNet, each round folds what it finds, then gives every output that repeats an
    earlier one a ``_copy`` node; copies fold too in later rounds (three equal outputs
    end as ``x``, ``x_0_copy``, ``x_0_copy_0_copy``)."""
    heads = copy_graph(heads, {})  # fresh operator nodes: folding rewires their inputs
    copy_op = get_op("_copy")
    while True:
        order = topo_order(heads)
        replaced = _fold_once(order)
        if not replaced:
            return heads
        for node in order:
            node.inputs = [(replaced.get(id(c), c), k) for c, k in node.inputs]
        heads = [(replaced.get(id(n), n), k) for n, k in heads]
        copies: dict[tuple, int] = {}
        for i, (node, k) in enumerate(heads):
            key = (id(node), k)
            if key not in copies:
                copies[key] = 0
                continue
            heads[i] = (Node(copy_op, f"{node.name}_{copies[key]}_copy", {}, [(node, k)]), 0)
            copies[key] += 1
