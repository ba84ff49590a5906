"""``DataParallelExecutorGroup``: one compiled program over the bound devices.

MXNet keeps one executor per device; mxmod keeps one set of (replicated) parameters in a
``TrainState`` and runs one jitted program over a mesh of the devices (``shard_map``),
splitting each batch along its batch axis and reducing gradients with a ``psum`` inside
the program. Work is deferred (``group_run.py``); MXNet's attributes are views of the
state (``group_surface.py``).

Differences from MXNet, by design:
  * aux states (BatchNorm moving statistics) are averaged over devices in every step
    (``pmean``) instead of only when ``get_params`` syncs; the average of linear
    moving-average updates is the same number either way.
  * the per-device copies of a parameter are one replicated array: writing device
    ``k``'s copy (``param_arrays[i][k][:] = x``) sets the parameter (device 0's write
    wins when several differ).
"""

from __future__ import annotations

import logging

import jax
import numpy as np

from ..base import MXNetError
from ..executor import compiled_for
from ..executor.placement import MeshPlacement, OneDevice, ProcessMeshPlacement
from ..executor.replicas import programs_for
from ..executor.grad_check import check_differentiable
from ..io import DataDesc
from ..kvstore import dist
from ..symbol.stype import variable_stypes
from .ctx_groups import prepare_group2ctxs, variable_groups
from . import group_run as run
from . import group_state as state_io
from . import group_surface as surface
from .slicing import batch_axis, decide_slices, sliced_shape
from .train_state import TrainState


def _resolve_grad_req(
    grad_req, arg_names, param_names, data_names, fixed, for_training, inputs_need_grad
) -> dict:
    if not for_training:
        return {n: "null" for n in arg_names}
    if isinstance(grad_req, str) or isinstance(grad_req, dict):
        base = grad_req if isinstance(grad_req, str) else "write"
        reqs = {}
        for n in arg_names:
            if n in param_names:
                reqs[n] = "null" if n in fixed else base
            elif n in data_names:
                reqs[n] = base if inputs_need_grad else "null"
            else:
                reqs[n] = "null"
        if isinstance(grad_req, dict):
            reqs.update(grad_req)
    elif isinstance(grad_req, (list, tuple)):
        if len(grad_req) != len(arg_names):
            raise ValueError(
                f"grad_req list has {len(grad_req)} entries but the symbol has "
                f"{len(arg_names)} arguments {arg_names}"
            )
        reqs = dict(zip(arg_names, grad_req))
    else:
        raise ValueError("grad_req must be one of str, list, tuple, or dict.")
    for n, r in reqs.items():
        if r not in ("write", "add", "null"):
            raise ValueError(f"grad_req {r!r} for {n!r} is invalid; use 'write', 'add' or 'null'")
    return reqs


def _desc(d) -> DataDesc:
    return d if isinstance(d, DataDesc) else DataDesc(*d)


class DataParallelExecutorGroup:
    """The devices, arrays and compiled programs behind a bound Module (spec 2), with
    MXNet 1.9.1's constructor signature and attributes."""

    def __init__(
        self,
        symbol,
        contexts,
        workload,
        data_shapes,
        label_shapes,
        param_names,
        for_training,
        inputs_need_grad,
        shared_group=None,
        logger=logging,
        fixed_param_names=None,
        grad_req="write",
        state_names=None,
        group2ctxs=None,
    ):
        self.symbol = symbol
        self._group2ctxs = prepare_group2ctxs(group2ctxs, len(contexts))
        self._var_groups = variable_groups(symbol) if group2ctxs else {}
        self.contexts = list(contexts)
        self.workload = list(workload)
        self.param_names = list(param_names)
        self.arg_names = symbol.list_arguments()
        self.aux_names = symbol.list_auxiliary_states()
        self.output_names = symbol.list_outputs()
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self.fixed_param_names = list(fixed_param_names or [])
        self.state_names = list(state_names or [])
        self.logger = logger
        self._var_stypes = variable_stypes(symbol)  # row_sparse parameters' views are such
        self._compiled = compiled_for(symbol)
        self._graph = self._compiled.graph
        self._devices = list(dict.fromkeys(c.jax_device for c in self.contexts))
        self._grad_req_arg = grad_req
        self.state = shared_group.state if shared_group is not None else TrainState()
        self._dist = getattr(shared_group, "_dist", False)  # dist_sync: the same mesh
        self.state.groups.append(self)
        self._pending = None
        self._outs: list = []
        self._out_views = None
        self._grads: dict = {}
        self._grads_stacked = False
        self._grads_valid = False
        self._input_grads: dict = {}
        self._want_stacked = False
        self._keep_grads = False
        # per-device parameter writes not yet in the state; a group bound with
        # shared_group shares them (MXNet: the two groups' arrays are the same memory)
        self._overlay: dict = (
            shared_group._overlay
            if shared_group is not None and len(shared_group.contexts) == len(self.contexts)
            else {}
        )
        self._tables: dict = {}
        # MXNet's shared_data_arrays: one dict per context, the shared group's when given
        self._owns_shared_arrays = shared_group is None
        self._shared_arrays = (
            [{} for _ in self.contexts] if shared_group is None else shared_group.shared_data_arrays
        )
        self._consts: dict = {}
        self._states: dict = {}
        self._host_metrics: set = set()
        self.bind_exec(data_shapes, label_shapes, shared_group)
        if shared_group is not None:  # MXNet enters this group's arrays at bind
            _ = self.shared_data_arrays

    # ------------------------------------------------------------ binding
    def bind_exec(self, data_shapes, label_shapes, shared_group=None, reshape=False):
        self.flush()
        self.retire_pending()  # merged outputs already handed out stay readable
        self.data_shapes = [_desc(d) for d in data_shapes]
        self.label_shapes = None if label_shapes is None else [_desc(d) for d in label_shapes]
        self.data_names = [d.name for d in self.data_shapes]
        self.label_names = [d.name for d in self.label_shapes] if self.label_shapes else []
        self.batch_size, self.slices = None, []
        self.data_layouts = self.decide_slices(self.data_shapes) if self.data_shapes else []
        self.label_layouts = self.decide_slices(self.label_shapes) if self.label_shapes else []
        self.grad_req = _resolve_grad_req(
            self._grad_req_arg,
            self.arg_names,
            self.param_names,
            self.data_names,
            self.fixed_param_names,
            self.for_training,
            self.inputs_need_grad,
        )
        self._has_add = "add" in self.grad_req.values()
        check_differentiable(self.symbol, [n for n, r in self.grad_req.items() if r != "null"])
        sizes = [s.stop - s.start for s in self.slices]
        # one program over a mesh when every device gets an equal slice of distinct
        # hardware; otherwise per-device replicas (MXNet's executor-per-device model)
        replicas = len(self.contexts) > 1 and (
            len(set(sizes)) > 1 or len(self._devices) < len(self.contexts)
        )
        n_dev = 1 if replicas else len(self._devices)
        descs = self.data_shapes + (self.label_shapes or [])
        axes = self.data_layouts + self.label_layouts
        if replicas:
            dev_slice = self.slices[0]
        else:
            dev_slice = slice(0, self.batch_size // n_dev) if self.batch_size else slice(0, 0)
        dev_shapes = {d.name: sliced_shape(d.shape, a, dev_slice) for d, a in zip(descs, axes)}
        dtypes = {d.name: np.dtype(d.dtype).name for d in descs}
        known = dict(dev_shapes)
        known.update({n: a.shape for n, a in self.state.params.items() if n in self.arg_names})
        arg_shapes, out_shapes, aux_shapes = self._infer(known)
        arg_types, out_types, aux_types = self.symbol.infer_type(**dtypes)
        if arg_types is None:
            arg_types = [np.float32] * len(self.arg_names)
            aux_types = [np.float32] * len(self.aux_names)
        self._out_dev_types = out_types or [np.float32] * len(out_shapes)
        self._arg_shape = dict(zip(self.arg_names, arg_shapes))
        self._arg_type = dict(zip(self.arg_names, arg_types))
        input_axes = {d.name: a for d, a in zip(descs, axes)}
        for s in self.state_names:
            input_axes[s] = 0
        self._input_axes = input_axes
        self.output_layouts = [
            batch_axis(self.symbol[i].attr("__layout__")) for i in range(len(self.output_names))
        ]
        self._out_dev_shapes = out_shapes
        diff = [n for n in self.arg_names if self.grad_req[n] != "null"]
        self._diff_params = [n for n in diff if n in self.param_names]
        if self._dist:  # dist_sync over several processes
            if replicas:
                raise NotImplementedError(
                    "dist_sync with uneven work_load_list splits or contexts sharing a device "
                    "is not supported; give each worker distinct devices and equal weights"
                )
            placement = ProcessMeshPlacement(self._devices)
        elif n_dev > 1:
            placement = MeshPlacement(self._devices)
        else:
            placement = OneDevice(self._devices[0])
        self._progs = programs_for(
            self._compiled,
            placement,
            input_axes,
            self.output_layouts,
            diff,
            self.label_names,
            self.output_names,
            self.slices if replicas else None,
            [c.jax_device for c in self.contexts] if replicas else None,
        )
        rep = self._progs.replicated()
        put_rep = getattr(placement, "place_replicated", lambda x: jax.device_put(x, rep))
        st = self.state
        params, aux = dict(st.params), dict(st.aux)
        for n in self.param_names:
            want = tuple(self._arg_shape[n])
            if shared_group is not None and n in params and tuple(params[n].shape) != want:
                raise MXNetError(
                    f"bind(shared_module=...): parameter {n!r} has shape "
                    f"{tuple(params[n].shape)} in the shared module but this symbol "
                    f"needs {want}; modules that share parameters need equal shapes"
                )
            if n not in params or tuple(params[n].shape) != want:
                params[n] = put_rep(np.zeros(want, self._arg_type[n]))
            elif getattr(params[n], "sharding", None) != rep:
                params[n] = put_rep(params[n])
        for n, shape, t in zip(self.aux_names, aux_shapes, aux_types):
            if n not in aux or tuple(aux[n].shape) != tuple(shape):
                aux[n] = put_rep(np.zeros(shape, t))
            elif getattr(aux[n], "sharding", None) != rep:
                aux[n] = put_rep(aux[n])
        st.params, st.aux = params, aux
        bound = set(self.data_names) | set(self.label_names) | set(self.state_names)
        self._consts = {
            n: put_rep(np.zeros(self._arg_shape[n], self._arg_type[n]))
            for n in self.arg_names
            if n not in self.param_names and n not in bound
        }
        self._states = {}
        for n in self.state_names:
            shape = tuple(self._arg_shape[n])
            per_dev = dev_slice.stop - dev_slice.start
            full = (self.batch_size,) + shape[1:] if shape and shape[0] == per_dev else shape
            zeros = np.zeros(full, self._arg_type[n])
            self._states[n] = (
                placement.put(zeros, 0)
                if placement.processes > 1
                else jax.device_put(zeros, self._progs.input_sharding(n))
            )
        self._pending = None
        self._outs, self._out_views = [], None
        self._grads, self._grads_valid, self._input_grads = {}, False, {}
        self._tables = {}

    def enable_dist(self) -> None:
        """Re-bind over every worker's devices (``dist_sync`` with several processes):
        checks that the workers agree on the symbol and shapes, then gives every worker
        rank 0's parameters (MXNet's kvstore ``init`` takes worker 0's values)."""
        from jax.experimental import multihost_utils

        if self._dist:
            return
        self.flush()
        shapes = {n: tuple(a.shape) for n, a in sorted(self.state.params.items())}
        dist.check_same("the symbol", self.symbol.tojson())
        dist.check_same(
            "the bound shapes",
            repr(
                (
                    shapes,
                    len(self._devices),
                    [
                        (d.name, tuple(d.shape))
                        for d in self.data_shapes + (self.label_shapes or [])
                    ],
                )
            ),
        )
        st = self.state
        st.flush_all()
        host = multihost_utils.broadcast_one_to_all(
            (
                {n: np.asarray(a) for n, a in st.params.items()},
                {n: np.asarray(a) for n, a in st.aux.items()},
            )
        )
        st.params, st.aux = dict(host[0]), dict(host[1])
        for group in [self] + [g for g in st.groups if g is not self]:  # bucketing shares st
            group._dist = True
            group.bind_exec(group.data_shapes, group.label_shapes)
        st.version += 1

    def _infer(self, shapes: dict):
        try:
            arg_shapes, out_shapes, aux_shapes = self.symbol.infer_shape_partial(**shapes)
        except MXNetError as e:
            raise MXNetError(f"bind: {e}") from None
        unknown = [n for n, s in zip(self.arg_names, arg_shapes) if not s or 0 in s]
        if unknown:
            raise MXNetError(
                f"bind: cannot infer the shapes of {unknown} from data shapes "
                f"{shapes}; add their shapes to data_shapes/label_shapes or give the "
                "variables a shape"
            )
        return arg_shapes, out_shapes, aux_shapes

    def reshape(self, data_shapes, label_shapes):
        new_d = [_desc(d) for d in data_shapes]
        new_l = None if label_shapes is None else [_desc(d) for d in label_shapes]

        def key(descs):
            return None if descs is None else [(d.name, tuple(d.shape)) for d in descs]

        if key(new_d) == key(self.data_shapes) and key(new_l) == key(self.label_shapes):
            return
        if self._default_execs is None:
            self._default_execs = list(self.execs)
        self.bind_exec(new_d, new_l, reshape=True)

    # ------------------------------------------------------------ the methods by concept
    # One class, no inheritance: the step's methods live in group_run.py, MXNet's surface
    # (views of the state and the last step) in group_surface.py, bound here by name.
    # the deferred step and its flush (group_run.py)
    _load = run._load
    merge_presliced = run.merge_presliced
    _place = run._place
    forward = run.forward
    retire_pending = run.retire_pending
    _require_pending = run._require_pending
    backward = run.backward
    request_update = run.request_update
    update_metric = run.update_metric
    _update_metric_host = run._update_metric_host
    _accumulates = run._accumulates
    flush = run.flush
    _flush = run._flush
    _params_in = state_io._params_in
    _store_params = state_io._store_params
    _reduction = state_io._reduction
    _residual = state_io._residual
    _step_state = state_io._step_state
    _adopt = state_io._adopt
    _run_train_step = run._run_train_step
    _run_fwd_bwd = run._run_fwd_bwd
    _add_base = run._add_base
    _apply_update = run._apply_update
    _rerun_forward = run._rerun_forward
    _run_forward = run._run_forward
    ensure_outputs = run.ensure_outputs
    outputs = run.outputs
    get_outputs = run.get_outputs
    get_input_grads = run.get_input_grads
    get_output_shapes = run.get_output_shapes

    # MXNet's attributes as views (group_surface.py)
    _dev = surface._dev
    _ctx = surface._ctx
    _var_ctx = surface._var_ctx
    _grouped = surface._grouped
    _slice = surface._slice
    _block = surface._block
    _commit_overlay = surface._commit_overlay
    _write_whole = surface._write_whole
    _view = surface._view
    _param_view = surface._param_view
    _aux_view = surface._aux_view
    _grad_view = surface._grad_view
    _input_view = surface._input_view
    _output_view = surface._output_view
    _kept_output_view = surface._kept_output_view
    _input_grad_view = surface._input_grad_view
    _current_grads = surface._current_grads
    _zero_grads = surface._zero_grads
    _input_names = surface._input_names
    _table = surface._table
    _per_dev = surface._per_dev
    _per_name = surface._per_name
    _sliced_inputs = surface._sliced_inputs
    param_arrays = surface.param_arrays
    grad_arrays = surface.grad_arrays
    aux_arrays = surface.aux_arrays
    data_arrays = surface.data_arrays
    label_arrays = surface.label_arrays
    state_arrays = surface.state_arrays
    input_grad_arrays = surface.input_grad_arrays
    execs = surface.execs
    shared_data_arrays = surface.shared_data_arrays
    install_monitor = surface.install_monitor
    num_outputs = surface.num_outputs
    _total_exec_bytes = surface._total_exec_bytes
    _sliced_shape = surface._sliced_shape
    _collect_arrays = surface._collect_arrays
    _bind_ith_exec = surface._bind_ith_exec
    get_params = surface.get_params
    set_params = surface.set_params
    get_states = surface.get_states
    set_states = surface.set_states
    set_monitor_callback = surface.set_monitor_callback
    arg_dict = surface.arg_dict
    aux_dict = surface.aux_dict
    _device_part = surface._device_part
    monitor_internals = surface.monitor_internals
    decide_slices = decide_slices  # MXNet's method (slicing.py)
    _default_execs = None  # MXNet's: the executors of the first bind, once reshaped
