"""How a batch is split over devices (spec 2.2), in MXNet's exact rules."""

from __future__ import annotations

from typing import Optional

from ..base import MXNetError


def batch_axis(layout: Optional[str]) -> int:
    return 0 if layout is None else layout.find("N")


def split_input_slice(batch_size: int, work_load_list: list) -> list[slice]:
    """Per-device slices: ``round(w_k * batch / sum(w))`` each, remainder to the last."""
    total = float(sum(work_load_list))
    sizes = [round(w * batch_size / total) for w in work_load_list]
    if sum(sizes) < batch_size:
        sizes[-1] += batch_size - sum(sizes)
    slices, begin = [], 0
    for n in sizes:
        end = min(begin + n, batch_size)
        if begin >= end:
            raise ValueError(
                "Too many slices. Some splits are empty: batch size "
                f"{batch_size} cannot be split over work_load_list {work_load_list}"
            )
        slices.append(slice(begin, end))
        begin = end
    return slices


def decide_slices(descs: list, work_load_list: list) -> tuple[Optional[int], list, list[int]]:
    """(batch_size, slices, batch axis per desc) for data or label descriptors."""
    axes = [batch_axis(getattr(d, "layout", None)) for d in descs]
    batch_size = None
    for d, axis in zip(descs, axes):
        if axis < 0:
            continue
        if axis >= len(d.shape):
            raise MXNetError(f"input {d.name!r} has layout {d.layout!r} but shape {d.shape}")
        n = d.shape[axis]
        if batch_size is None:
            batch_size = n
        elif n != batch_size:
            raise MXNetError(
                f"all data must have the same batch size: batch_size = {batch_size}, "
                f"but {d.name} has shape {d.shape}"
            )
    slices = split_input_slice(batch_size, work_load_list) if batch_size else []
    return batch_size, slices, axes


def sliced_shape(shape: tuple, axis: int, s: slice) -> tuple:
    if axis < 0:
        return tuple(shape)
    out = list(shape)
    out[axis] = s.stop - s.start
    return tuple(out)
