"""MXNet's deterministic graph operators for DGL (``mx.nd.contrib``): a graph is a square
CSR matrix whose stored values are edge ids. ``edge_id`` looks edges up, ``dgl_adjacency``
makes the 0/1 adjacency matrix, ``dgl_subgraph`` the subgraphs induced by vertex sets.
Like MXNet's (CPU-only) kernels they run on the host; the neighbour-sampling operators are
not here."""

from __future__ import annotations

import numpy as np

from ..base import MXNetError
from .ndarray import NDArray
from .creation import array as _array
from .sparse import CSRNDArray, csr_matrix


def _graph(data, what: str):
    if not isinstance(data, CSRNDArray):
        raise MXNetError(f"{what}: the graph must be a CSRNDArray, got {type(data).__name__}")
    n, m = data.shape
    if n != m:
        raise MXNetError(f"{what}: the graph's CSR matrix must be square, got {data.shape}")
    return (
        data.data.asnumpy(),
        data.indices.asnumpy().astype(np.int64),
        data.indptr.asnumpy().astype(np.int64),
    )


def edge_id(data, u, v, out=None) -> NDArray:
    """The edge id (stored value) of each edge ``u[i] -> v[i]``, -1 where there is none."""
    values, cols, indptr = _graph(data, "edge_id")
    us = u.asnumpy().astype(np.int64).ravel()
    vs = v.asnumpy().astype(np.int64).ravel()
    if us.shape != vs.shape:
        raise MXNetError(f"edge_id: u and v must have the same length, got {us.size} and {vs.size}")
    result = np.full(us.shape, -1, values.dtype)
    for i, (src, dst) in enumerate(zip(us, vs)):
        row = cols[indptr[src] : indptr[src + 1]]
        hit = np.nonzero(row == dst)[0]
        if hit.size:
            result[i] = values[indptr[src] + hit[0]]
    res = _array(result, dtype=result.dtype)
    if out is not None:
        out[:] = res
        return out
    return res


def dgl_adjacency(data, out=None) -> CSRNDArray:
    """The graph's adjacency matrix: its CSR structure with float32 ones."""
    values, cols, indptr = _graph(data, "dgl_adjacency")
    return csr_matrix((np.ones(values.shape, np.float32), cols, indptr), shape=data.shape)


def dgl_subgraph(graph, *vertex_sets, return_mapping=False, num_args=None):
    """For each vertex set (sorted vertex ids), the subgraph it induces: a CSR matrix over
    the set's positions whose values number the kept edges 0, 1, ... in CSR order; with
    ``return_mapping``, then for each set the same structure holding the original edge
    ids."""
    if num_args is not None and num_args != len(vertex_sets) + 1:
        raise MXNetError(
            f"dgl_subgraph: num_args={num_args} but {len(vertex_sets)} vertex sets were given"
        )
    values, cols, indptr = _graph(graph, "dgl_subgraph")
    subgraphs, mappings = [], []
    for vertices in vertex_sets:
        vs = vertices.asnumpy().astype(np.int64).ravel()
        if np.any(np.diff(vs) <= 0):
            raise MXNetError("dgl_subgraph: each vertex set must be sorted, without repeats")
        position = {int(v): i for i, v in enumerate(vs)}
        new_cols, new_ptr, originals = [], [0], []
        for v in vs:
            for k in range(indptr[v], indptr[v + 1]):
                if int(cols[k]) in position:
                    new_cols.append(position[int(cols[k])])
                    originals.append(values[k])
            new_ptr.append(len(new_cols))
        shape = (len(vs), len(vs))
        ids = np.arange(len(new_cols), dtype=values.dtype)
        subgraphs.append(csr_matrix((ids, np.asarray(new_cols, np.int64), new_ptr), shape=shape))
        kept = np.asarray(originals, values.dtype)
        mappings.append(csr_matrix((kept, np.asarray(new_cols, np.int64), new_ptr), shape=shape))
    outs = subgraphs + (mappings if return_mapping else [])
    return outs[0] if len(outs) == 1 else outs
