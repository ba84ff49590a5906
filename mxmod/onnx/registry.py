"""The table of ONNX translations: MXNet operator name -> function writing ONNX nodes."""

from __future__ import annotations

from typing import Callable, Optional

from ..ops import OPS, get_op

#: opsets the exporter writes: 12 and 13 as MXNet 1.9.1's mx2onnx, up to 17 (the last
#: before ReduceMean & co. took their axes as an input)
MIN_OPSET, MAX_OPSET, DEFAULT_OPSET = 12, 17, 13

# canonical MXNet op name -> (translation, lowest opset it supports)
_TRANSLATIONS: dict[str, tuple[Callable, int]] = {}


def register(*names: str, min_opset: int = MIN_OPSET) -> Callable:
    """Decorator: ``fn(b: GraphBuilder, n: NodeCtx)`` translates the operators ``names``."""

    def wrap(fn: Callable) -> Callable:
        for name in names:
            canonical = get_op(name).name
            if canonical in _TRANSLATIONS:
                raise ValueError(f"ONNX translation for {canonical!r} registered twice")
            _TRANSLATIONS[canonical] = (fn, min_opset)
        return fn

    return wrap


def translation(op_name: str, opset: int) -> Optional[Callable]:
    entry = _TRANSLATIONS.get(op_name)
    if entry is None or opset < entry[1]:
        return None
    return entry[0]


def check_opset(opset_version: Optional[int]) -> int:
    opset = DEFAULT_OPSET if opset_version is None else int(opset_version)
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise NotImplementedError(
            f"ONNX export: opset_version={opset} is not supported; use {MIN_OPSET}..{MAX_OPSET} "
            f"(default {DEFAULT_OPSET})"
        )
    return opset


def get_operator_support(opset_version: Optional[int] = None) -> list:
    """The MXNet operator names (with their aliases) ``export_model`` translates, sorted.

    Same as MXNet 1.9.1's ``mx.onnx.get_operator_support``; ``opset_version`` (default 13)
    must be one the exporter writes (12..17). Unlike MXNet's it does not need ``onnx``.
    """
    opset = check_opset(opset_version)
    names = set()
    for name in OPS.names():
        canonical = get_op(name).name
        entry = _TRANSLATIONS.get(canonical)
        if entry is not None and opset >= entry[1]:
            names.add(name)
    return sorted(names)
