"""``Symbol.get_backend_symbol`` and ``Symbol.optimize_for``: MXNet's graph partitioning
for a backend library.

MXNet 1.9.1's CPU build registers the oneDNN backends (``MKLDNN``, ``MKLDNN_QUANTIZE``),
which replace operator patterns (convolution + batch norm + activation + sum...) by fused
subgraph nodes computing the same values. XLA fuses a graph as it compiles it, so for these
backends mxmod returns an equivalent graph (a copy: later edits do not reach the original);
any other backend is unknown, as in an MXNet build without it.
"""

from __future__ import annotations

from typing import Any

from ..base import MXNetError
from .symbol import Symbol

FUSING_BACKENDS = ("MKLDNN", "MKLDNN_QUANTIZE", "ONEDNN", "ONEDNN_QUANTIZE")


def _check_backend(backend: Any, where: str) -> None:
    if backend not in FUSING_BACKENDS:
        raise MXNetError(
            f"{where}: SubgraphProperty {backend} is not found in SubgraphBackendRegistry "
            f"(mxmod knows {', '.join(FUSING_BACKENDS)}: XLA fuses their patterns itself)"
        )


def get_backend_symbol(self: Symbol, backend: str) -> Symbol:
    """The graph partitioned for ``backend``: for the oneDNN backends, an equal graph."""
    _check_backend(backend, "get_backend_symbol")
    return self.__copy__()


def optimize_for(
    self: Symbol,
    backend: str,
    args: Any = None,
    aux: Any = None,
    ctx: Any = None,
    shape_dict: Any = None,
    type_dict: Any = None,
    stype_dict: Any = None,
    skip_infer: bool = False,
    **kwargs: Any,
) -> Symbol:
    """The graph optimised for ``backend`` with its parameters ``args``/``aux`` (which a
    partitioner may extend in place; the oneDNN ones do not): for the oneDNN backends, an
    equal graph. The shape/type hints only guide a partitioner; of the backend options,
    ``dedup_subgraph`` (how MXNet lays out fused nodes) is known, others raise."""
    _check_backend(backend, "optimize_for")
    unknown = sorted(set(kwargs) - {"dedup_subgraph"})
    if unknown:
        raise NotImplementedError(
            f"optimize_for({backend!r}): backend option(s) {', '.join(unknown)} are not "
            "supported by mxmod"
        )
    for name, value in (("args", args), ("aux", aux)):
        if value is not None and not isinstance(value, (dict, list)):
            raise TypeError(f"optimize_for: {name} must be a dict or list of NDArrays")
    return self.__copy__()


def install() -> None:
    Symbol.get_backend_symbol = get_backend_symbol
    Symbol.optimize_for = optimize_for
