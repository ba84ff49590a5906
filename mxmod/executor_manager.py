"""``mx.executor_manager``: MXNet's pre-Module data-parallel helpers.

Old training code (the FeedForward era, and projects such as mx-rcnn or Deformable ConvNets
that built their own module classes) imports these: ``_split_input_slice`` (a batch's
per-device slices), ``_check_arguments``, ``_load_data``/``_load_label`` (copy a batch into
sliced executor inputs), ``_bind_exec`` (bind one executor, sharing parameters and data
buffers with another) and the ``DataParallelExecutorGroup``/``DataParallelExecutorManager``
classes (one executor per device, bucketing through ``sym_gen``). They run on mxmod's
executors (``Symbol.bind``) with MXNet's names, arguments and errors.
"""

from __future__ import annotations

import logging
import math
from typing import Any, Optional

import numpy as np

from . import ndarray as nd
from .context import cpu
from .io import DataDesc

__all__ = ["DataParallelExecutorGroup", "DataParallelExecutorManager"]


def _split_input_slice(batch_size: int, work_load_list: list) -> list:
    """The slices of a batch of ``batch_size`` for devices weighted by ``work_load_list``
    (each device's share rounded; the last takes what rounding leaves).

    Raises:
        ValueError: a device would get an empty slice.
    """
    total = sum(work_load_list)
    counts = [round(w * batch_size / total) for w in work_load_list]
    if sum(counts) < batch_size:
        counts[-1] += batch_size - sum(counts)
    slices, end = [], 0
    for count in counts:
        begin = min(end, batch_size)
        end = min(begin + count, batch_size)
        if begin >= end:
            raise ValueError("Too many slices. Some splits are empty.")
        slices.append(slice(int(begin), int(end)))
    return slices


def _check_arguments(symbol) -> None:
    """Raise ValueError if ``symbol`` names an argument or auxiliary state twice."""
    args = symbol.list_arguments()
    for kind, names in (("argument", args), ("auxiliary param", symbol.list_auxiliary_states())):
        seen: set = set()
        for name in names:
            if name in seen:
                raise ValueError(
                    f'Find duplicated {kind} name "{name}", please make the weight name '
                    f"non-duplicated(using name arguments), arguments are {args}"
                )
            seen.add(name)


def _load_general(data: list, targets: list) -> None:
    """Copy each array of ``data`` into its target: an NDArray, or a list of
    ``(slice, NDArray)`` pairs that together cover the batch."""
    for src, dst in zip(data, targets):
        if isinstance(dst, nd.NDArray):
            src.copyto(dst)
            continue
        if dst[-1][0].stop != src.shape[0]:
            raise AssertionError(
                f"Batch size miss match. Expected {dst[-1][0].stop}, got {src.shape[0]}"
            )
        for part, target in dst:
            src[part].copyto(target)


def _load_data(batch, targets: list) -> None:
    """Copy ``batch.data`` into sliced executor inputs (see ``_load_general``)."""
    _load_general(batch.data, targets)


def _load_label(batch, targets: list) -> None:
    """Copy ``batch.label`` into sliced executor inputs (see ``_load_general``)."""
    _load_general(batch.label, targets)


def _need_grad_set(need_grad: Any, arg_names: list, input_names) -> set:
    if need_grad is False:
        return set()
    if need_grad is True:
        return set(arg_names) - set(input_names)
    if isinstance(need_grad, set):
        return need_grad
    raise AssertionError("need_grad must be boolean or set.")


def _input_array(name, shape, dtype, ctx, shared: Optional[dict], logger):
    """A data/label input: the shared buffer when it has the same size, a fresh array when
    it is larger (MXNet's reshape to fewer elements raises there), and a fresh array that
    replaces it when it is smaller."""
    if shared is not None and name in shared:
        buf = shared[name]
        if math.prod(buf.shape) >= math.prod(shape):
            if np.dtype(buf.dtype) != np.dtype(dtype):
                raise AssertionError(
                    f"_bind_exec: shared input {name!r} is {np.dtype(buf.dtype).name}, the "
                    f"graph needs {np.dtype(dtype).name}"
                )
            if math.prod(buf.shape) == math.prod(shape):
                return buf.reshape(shape)
            return nd.zeros(shape, ctx, dtype=dtype)
        logger.warning(
            'bucketing: data "%s" has a shape %s, which is larger than already allocated '
            "shape %s. Need to re-allocate. Consider putting default_bucket_key to be the "
            "bucket taking the largest input for better memory sharing.",
            name,
            shape,
            buf.shape,
        )
    arr = nd.zeros(shape, ctx, dtype=dtype)
    if shared is not None:
        shared[name] = arr
    return arr


def _bind_exec(
    sym,
    ctx,
    input_shapes: dict,
    param_names,
    need_grad: Any = False,
    base_exec=None,
    shared_data_arrays: Optional[dict] = None,
    input_types: Optional[dict] = None,
    logger=logging,
):
    """Bind ``sym`` on ``ctx`` for ``input_shapes``. Parameters (and their gradients and
    the auxiliary states) are ``base_exec``'s when given, else fresh zeros; data and label
    inputs reuse ``shared_data_arrays``' buffers where large enough. ``need_grad``: True
    (every non-input argument), False, or a set of argument names."""
    arg_shapes, _, aux_shapes = sym.infer_shape(**input_shapes)
    if arg_shapes is None:
        raise ValueError(f"_bind_exec: cannot infer the shapes from {input_shapes}")
    if input_types is None:
        input_types = {k: np.float32 for k in input_shapes}
    arg_types, _, aux_types = sym.infer_type(**input_types)
    arg_names = sym.list_arguments()
    need = _need_grad_set(need_grad, arg_names, input_shapes)
    grads: Optional[dict] = {} if need_grad is not False else None
    args = []
    for name, shape, dtype in zip(arg_names, arg_shapes, arg_types):
        if name not in param_names:
            args.append(_input_array(name, shape, dtype, ctx, shared_data_arrays, logger))
        elif base_exec is None:
            args.append(nd.zeros(shape, ctx, dtype=dtype))
            if name in need:
                grads[name] = nd.zeros(shape, ctx, dtype=dtype)
        else:
            arr = base_exec.arg_dict[name]
            if arr.shape != tuple(shape) or np.dtype(arr.dtype) != np.dtype(dtype):
                raise AssertionError(
                    f"_bind_exec: shared parameter {name!r} is {arr.shape} "
                    f"{np.dtype(arr.dtype).name}, the graph needs {tuple(shape)} "
                    f"{np.dtype(dtype).name}"
                )
            args.append(arr)
            if name in need:
                grads[name] = base_exec.grad_dict[name]
    if base_exec is None:
        aux = [nd.zeros(s, ctx, dtype=t) for s, t in zip(aux_shapes, aux_types)]
    else:
        aux = list(base_exec.aux_arrays)
        for a, s in zip(aux, aux_shapes):
            if a.shape != tuple(s):
                raise AssertionError(f"_bind_exec: shared auxiliary state {a.shape} != {s}")
    grad_req = {name: "write" if name in need else "null" for name in arg_names}
    return sym.bind(
        ctx=ctx,
        args=args,
        args_grad=grads,
        aux_states=aux,
        grad_req=grad_req,
        shared_exec=base_exec,
    )


def _input_descs(data) -> list:
    return list(data.provide_data) + list(data.provide_label or [])


class DataParallelExecutorGroup:
    """One training executor per device of ``ctx``, each on its ``slices`` part of the
    batch; parameters shared with ``shared_group``'s executors when given (bucketing)."""

    def __init__(
        self, sym, arg_names, param_names, ctx, slices, train_data, shared_group=None
    ) -> None:
        _check_arguments(sym)
        self.shared_data_arrays = (
            [{} for _ in ctx] if shared_group is None else shared_group.shared_data_arrays
        )
        self.data_names = [d[0] for d in train_data.provide_data]
        self.label_names = [d[0] for d in (train_data.provide_label or [])]
        self.aux_names = sym.list_auxiliary_states()
        self.param_idx = [i for i, name in enumerate(arg_names) if name in param_names]
        self.param_names = [arg_names[i] for i in self.param_idx]
        self.train_execs = []
        for i, dev in enumerate(ctx):
            shapes, types = {}, {}
            for desc in _input_descs(train_data):
                name, shape = desc[0], tuple(desc[1])
                shapes[name] = (slices[i].stop - slices[i].start,) + shape[1:]
                types[name] = desc.dtype if isinstance(desc, DataDesc) else np.float32
            base = None if shared_group is None else shared_group.train_execs[i]
            self.train_execs.append(
                _bind_exec(
                    sym,
                    dev,
                    shapes,
                    self.param_names,
                    need_grad=True,
                    base_exec=base,
                    shared_data_arrays=self.shared_data_arrays[i],
                    input_types=types,
                )
            )
        execs = self.train_execs
        self.data_arrays = [
            [(slices[i], e.arg_dict[n]) for i, e in enumerate(execs)] for n in self.data_names
        ]
        self.label_arrays = [
            [(slices[i], e.arg_dict[n]) for i, e in enumerate(execs)] for n in self.label_names
        ]
        self.param_arrays = [[e.arg_arrays[i] for e in execs] for i in self.param_idx]
        self.grad_arrays = [[e.grad_arrays[i] for e in execs] for i in self.param_idx]
        self.aux_arrays = [[e.aux_arrays[i] for e in execs] for i in range(len(self.aux_names))]
        self.slices = slices

    def load_data_batch(self, data_batch) -> None:
        """Copy a batch's data and labels into the executors' slices."""
        _load_data(data_batch, self.data_arrays)
        _load_label(data_batch, self.label_arrays)

    def forward(self, is_train: bool = False) -> None:
        for texec in self.train_execs:
            texec.forward(is_train=is_train)

    def backward(self) -> None:
        for texec in self.train_execs:
            texec.backward()

    def update_metric(self, metric, labels, pre_sliced: bool = False) -> None:
        """Update ``metric`` with each executor's outputs and its slice of ``labels``."""
        for i, (texec, part) in enumerate(zip(self.train_execs, self.slices)):
            mine = labels[i] if pre_sliced else [label[part] for label in labels]
            metric.update(mine, texec.outputs)


class DataParallelExecutorManager:
    """Data-parallel training over ``ctx`` (batches split by ``work_load_list``), with a
    group of executors per bucket when ``sym_gen`` is given."""

    def __init__(
        self,
        symbol,
        ctx,
        train_data,
        arg_names,
        param_names,
        aux_names,
        work_load_list=None,
        logger=None,
        sym_gen=None,
    ) -> None:
        logger = logger or logging
        logger.info("Start training with %s", str(ctx))
        if work_load_list is None:
            work_load_list = [1] * len(ctx)
        if not isinstance(work_load_list, list) or len(work_load_list) != len(ctx):
            raise AssertionError(
                f"Invalid settings for work load: work_load_list={work_load_list!r} needs one "
                f"number per context ({len(ctx)})"
            )
        self.slices = _split_input_slice(train_data.batch_size, work_load_list)
        self.arg_names, self.param_names, self.aux_names = arg_names, param_names, aux_names
        self.ctx = ctx
        self.symbol = symbol
        self.sym_gen = sym_gen
        self.execgrp = DataParallelExecutorGroup(
            symbol, arg_names, param_names, ctx, self.slices, train_data
        )
        self.curr_execgrp = None  # set by load_data_batch
        if sym_gen is not None:
            self.execgrp_bucket = {train_data.default_bucket_key: self.execgrp}

    def install_monitor(self, monitor) -> None:
        if self.sym_gen is not None:
            raise NotImplementedError(
                "DataParallelExecutorManager.install_monitor: monitoring is not implemented "
                "for bucketing (sym_gen), as in MXNet"
            )
        for texec in self.execgrp.train_execs:
            monitor.install(texec)

    def set_params(self, arg_params: dict, aux_params: dict) -> None:
        """Copy the given parameters into every executor."""
        for texec in self.execgrp.train_execs:
            texec.copy_params_from(arg_params, aux_params)

    def copy_to(self, arg_params: dict, aux_params: dict) -> None:
        """Write the devices' mean of each parameter (and auxiliary state) into the given
        arrays, in place."""
        for names, blocks, target in (
            (self.param_names, self.param_arrays, arg_params),
            (self.aux_names, self.aux_arrays, aux_params),
        ):
            for name, block in zip(names, blocks):
                mean = sum(w.copyto(cpu()) for w in block) / len(block)
                mean.astype(target[name].dtype).copyto(target[name])

    @property
    def param_arrays(self) -> list:
        return self.execgrp.param_arrays

    @property
    def grad_arrays(self) -> list:
        return self.execgrp.grad_arrays

    @property
    def aux_arrays(self) -> list:
        return self.execgrp.aux_arrays

    def load_data_batch(self, data_batch) -> None:
        """Pick (or bind, for a new bucket key) the executor group and load the batch."""
        if self.sym_gen is not None:
            key = data_batch.bucket_key
            if key not in self.execgrp_bucket:
                self.execgrp_bucket[key] = DataParallelExecutorGroup(
                    self.sym_gen(key),
                    self.arg_names,
                    self.param_names,
                    self.ctx,
                    self.slices,
                    data_batch,
                    shared_group=self.execgrp,
                )
            self.curr_execgrp = self.execgrp_bucket[key]
        else:
            self.curr_execgrp = self.execgrp
        self.curr_execgrp.load_data_batch(data_batch)

    def forward(self, is_train: bool = False) -> None:
        self.curr_execgrp.forward(is_train=is_train)

    def backward(self) -> None:
        self.curr_execgrp.backward()

    def update_metric(self, metric, labels, pre_sliced: bool = False) -> None:
        self.curr_execgrp.update_metric(metric, labels, pre_sliced)
