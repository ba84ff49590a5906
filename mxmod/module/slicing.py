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


class BatchSizeMismatch(MXNetError, AssertionError):
    """Inputs disagree on the batch size (MXNet asserts it)."""


def decide_slices(group, descs: list) -> list[int]:
    """MXNet's ``DataParallelExecutorGroup.decide_slices``: the batch axis of each desc.
    The first desc with one sets ``group.batch_size`` and ``group.slices`` (split over
    ``group.workload``) unless the group has a batch size already; the others must agree."""
    if not descs:
        raise MXNetError("decide_slices needs at least one data shape (data_shapes is empty)")
    axes = [batch_axis(getattr(d, "layout", None)) for d in descs]
    for d, axis in zip(descs, axes):
        if axis < 0:
            continue
        name, shape = d
        if axis >= len(shape):
            raise MXNetError(f"input {name!r} has layout {d.layout!r} but shape {shape}")
        if group.batch_size is None:
            group.batch_size = shape[axis]
            group.slices = split_input_slice(group.batch_size, group.workload)
        elif shape[axis] != group.batch_size:
            raise BatchSizeMismatch(
                f"all data must have the same batch size: batch_size = {group.batch_size}, "
                f"but {name} has shape {tuple(shape)}"
            )
    return axes


def sliced_shape(shape: tuple, axis: int, s: Optional[slice]) -> tuple:
    """``shape`` with its batch axis cut to ``s`` (whole when there is none)."""
    if axis < 0 or s is None:
        return tuple(shape)
    out = list(shape)
    out[axis] = s.stop - s.start
    return tuple(out)
