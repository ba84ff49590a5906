"""``Module``: a symbol bound to devices and trained with an optimizer (spec 1.3)."""

from __future__ import annotations

import logging
import warnings
from typing import Any

import jax
import numpy as np

from ..base import MXNetError
from .checkpoint import load_checkpoint, write_checkpoint_files
from .. import ndarray as nd
from .. import initializer as _init
from .. import optimizer as opt
from ..kvstore.model_helpers import (
    create_kvstore,
    initialize_kvstore,
    update_params,
    update_params_on_kvstore,
)
from ..kvstore import dist
from ..fileio import checkpoint_paths
from ..fileio import atomic_write
from .module_states import states_bytes_of
from .module_states import load_states_into
from ..ndarray import NDArray
from ..context import Context, cpu
from ..io import DataDesc
from ..symbol.stype import variable_stypes
from ..base import names_list
from .base_module import BaseModule, _check_input_names_strict
from .input_checks import normalize_shapes
from .kv_serving import serve_from_module
from .call_checks import check_data_batch, check_symbol
from .ctx_groups import prepare_group2ctxs
from .executor_group import DataParallelExecutorGroup
from .sparse_inputs import prepare_rows
from .stages import require
from .train_state import OptBox, box_field


class Module(BaseModule):
    """MXNet's ``mx.mod.Module`` on JAX.

    One compiled program per input-shape signature runs over all bound devices;
    ``fit`` (and ``forward_backward`` + ``update``) is one fused jitted dispatch per
    batch. Differences from MXNet: stage errors carry messages that name the missing
    call (they still subclass ``AssertionError``).
    """

    def __init__(
        self,
        symbol,
        data_names=("data",),
        label_names=("softmax_label",),
        logger=logging,
        context=None,
        work_load_list=None,
        fixed_param_names=None,
        state_names=None,
        group2ctxs=None,
        compression_params=None,
    ):
        super().__init__(logger=logger)
        if context is None:
            context = cpu()
        if isinstance(context, Context):
            context = [context]
        self._context = list(context)
        if work_load_list is None:
            work_load_list = [1] * len(self._context)
        if len(work_load_list) != len(self._context):
            raise MXNetError(
                f"work_load_list has {len(work_load_list)} entries but there are "
                f"{len(self._context)} contexts; give one weight per context"
            )
        self._work_load_list = list(work_load_list)
        self._group2ctxs = group2ctxs
        prepare_group2ctxs(group2ctxs, len(self._context))  # its mistakes surface here
        self._compression_params = compression_params
        check_symbol(symbol)
        self._symbol = symbol
        self._data_names = names_list(data_names)
        self._label_names = names_list(label_names)
        self._state_names = names_list(state_names)
        self._fixed_param_names = names_list(fixed_param_names)
        args = symbol.list_arguments()
        self._check_names(self._data_names, args, "data", raise_=True)
        self._check_names(self._label_names, args, "label", raise_=False)
        self._check_names(self._state_names, args, "state", raise_=True)
        self._check_names(self._fixed_param_names, args, "fixed_param", raise_=True)
        inputs = set(self._data_names + self._label_names + self._state_names)
        self._param_names = [a for a in args if a not in inputs]
        self._aux_names = symbol.list_auxiliary_states()
        self._output_names = symbol.list_outputs()
        self._arg_params = None
        self._aux_params = None
        self._params_dirty = False
        self._exec_group = None
        self._opt_box = None  # the optimizer, its kvstore and updater (shared when borrowed)
        self._preload_opt_states = None
        self._synced_version = None
        self._data_shapes = None
        self._label_shapes = None
        self._grad_req = None
        self._monitor = None

    @staticmethod
    def _check_names(names, args, kind, raise_):
        _check_input_names_strict(names, args, kind, raise_)

    _optimizer = box_field("optimizer")
    _kvstore = box_field("kvstore")
    _updater = box_field("updater")
    _update_on_kvstore = box_field("update_on_kvstore")

    @property
    def _opt_state(self):
        """The fused optimizer state ``{name: leaf_state}`` (None before init_optimizer)."""
        box = self._exec_group.state.opt if self._exec_group is not None else None
        return None if box is None else box.state

    @property
    def _total_exec_bytes(self):
        return self._exec_group._total_exec_bytes if self._exec_group is not None else 0

    @_total_exec_bytes.setter
    def _total_exec_bytes(self, value):
        pass  # MXNet's BaseModule assigns 0 here; the value is measured on demand

    # ------------------------------------------------------------ properties
    data_names = property(lambda self: self._data_names)
    label_names = property(lambda self: self._label_names)
    output_names = property(lambda self: self._output_names)

    @property
    def data_shapes(self):
        require(self, "data_shapes", "binded")
        return self._data_shapes

    @property
    def label_shapes(self):
        require(self, "label_shapes", "binded")
        return self._label_shapes

    @property
    def output_shapes(self):
        require(self, "output_shapes", "binded")
        return self._exec_group.get_output_shapes()

    # ------------------------------------------------------------ binding
    def _reset_bind(self):
        self.binded = False
        self._exec_group = None
        self._data_shapes = None
        self._label_shapes = None

    def _normalize(self, data_shapes, label_shapes, warn=True):
        return normalize_shapes(self, data_shapes, label_shapes, warn)

    def bind(
        self,
        data_shapes,
        label_shapes=None,
        for_training=True,
        inputs_need_grad=False,
        force_rebind=False,
        shared_module=None,
        grad_req="write",
    ):
        old_group = self._exec_group
        if force_rebind:
            if old_group is not None and self._params_dirty:  # MXNet loses these updates
                self._sync_params_from_devices()
            self._reset_bind()
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if not for_training and inputs_need_grad:
            raise MXNetError("inputs_need_grad=True needs for_training=True")
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._grad_req = grad_req
        self._data_shapes, self._label_shapes = self._normalize(data_shapes, label_shapes)
        shared_group = None
        if shared_module is not None:
            if not (
                isinstance(shared_module, Module)
                and shared_module.binded
                and shared_module.params_initialized
            ):
                raise MXNetError("shared_module must be a bound Module with initialized params")
            shared_group = shared_module._exec_group
        self._exec_group = DataParallelExecutorGroup(
            self._symbol,
            self._context,
            self._work_load_list,
            self._data_shapes,
            self._label_shapes,
            self._param_names,
            for_training,
            inputs_need_grad,
            shared_group,
            logger=self.logger,
            fixed_param_names=self._fixed_param_names,
            grad_req=grad_req,
            state_names=self._state_names,
            group2ctxs=self._group2ctxs,
        )
        if shared_module is not None:
            self.params_initialized = True
            self._arg_params = shared_module._arg_params
            self._aux_params = shared_module._aux_params
        elif self.params_initialized:
            self._exec_group.set_params(self._arg_params, self._aux_params)
        else:
            st = self._exec_group.state
            stypes = variable_stypes(self._symbol)
            self._arg_params = {
                n: _param_zeros(stypes.get(n, "default"), st.params[n]) for n in self._param_names
            }
            self._aux_params = {
                n: nd.zeros(st.aux[n].shape, dtype=st.aux[n].dtype) for n in self._aux_names
            }
        if shared_module is not None and shared_module.optimizer_initialized:
            self.borrow_optimizer(shared_module)
        elif self._opt_box is not None:  # re-bound: the optimizer and its state carry over
            self._rehome_optimizer(old_group)
        self.binded = True

    def _rehome_optimizer(self, old_group) -> None:
        """Give the optimizer box (and the optimizer state the old group held) to the new
        group."""
        box, group = self._opt_box, self._exec_group
        if old_group is not None and box.holder is old_group.state:
            opt_state = box.state
            box.holder = group.state
            box.state = opt_state
        elif box.holder is None:
            box.holder = group.state
        group.state.opt = box

    def _input_shardings(self):
        g = self._exec_group
        if g is None:
            return None
        return {n: g._progs.input_sharding(n) for n in g.data_names + g.label_names}

    def reshape(self, data_shapes, label_shapes=None):
        require(self, "reshape", "binded")
        self._data_shapes, self._label_shapes = self._normalize(
            data_shapes, label_shapes, warn=False
        )
        self._exec_group.reshape(self._data_shapes, self._label_shapes)

    # ------------------------------------------------------------ parameters
    def init_params(
        self,
        initializer=None,
        arg_params=None,
        aux_params=None,
        allow_missing=False,
        force_init=False,
        allow_extra=False,
    ):
        if self.params_initialized and not force_init:
            warnings.warn(
                "Parameters already initialized and force_init=False. init_params call ignored.",
                stacklevel=2,
            )
            return
        require(self, "init_params", "binded")
        if initializer is None and arg_params is None and aux_params is None:
            initializer = _init.Uniform(0.01)
        attrs = self._symbol.attr_dict()

        def fill(name, arr, cache):
            if cache is not None:
                if name in cache:
                    src = cache[name]
                    if src is not arr:
                        _copy_param(name, src, arr)
                    return
                if not allow_missing:
                    raise RuntimeError(
                        f"{name} is not presented: arg_params/aux_params lack it; "
                        "pass allow_missing=True to initialize it instead"
                    )
            if initializer is not None:
                initializer(_init.InitDesc(name, attrs.get(name, None)), arr)

        for name, arr in sorted(self._arg_params.items()):
            fill(name, arr, arg_params)
        for name, arr in sorted(self._aux_params.items()):
            fill(name, arr, aux_params)
        self.params_initialized = True
        self._params_dirty = False
        self._exec_group.set_params(self._arg_params, self._aux_params, allow_extra=allow_extra)

    def _write_params(self, arg_params, aux_params, force_init, allow_extra):
        """``set_params(allow_missing=True)``: the given values into the bound arrays."""
        self._exec_group.set_params(arg_params, aux_params, allow_extra=allow_extra)

    def get_params(self):
        require(self, "get_params", "params_initialized")
        group = self._exec_group
        if self._params_dirty or (
            group is not None and group.state.version != self._synced_version
        ):
            self._sync_params_from_devices()
        return self._arg_params, self._aux_params

    def _sync_params_from_devices(self):
        self._exec_group.get_params(self._arg_params, self._aux_params)
        self._synced_version = self._exec_group.state.version
        self._params_dirty = False

    # ------------------------------------------------------------ optimizer
    def init_optimizer(
        self,
        kvstore="local",
        optimizer="sgd",
        optimizer_params=(("learning_rate", 0.01),),
        force_init=False,
    ):
        require(self, "init_optimizer", "binded", "params_initialized")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring...")
            return
        if self._params_dirty:
            self._sync_params_from_devices()
        kv, update_on_kvstore = create_kvstore(kvstore, len(self._context), self._arg_params)
        if kv is not None and "dist" in kv.type and kv.num_workers > 1:
            self._exec_group.enable_dist()  # one mesh over every worker's devices
            self._params_dirty = True
        if kv is not None and self._compression_params:
            kv.set_gradient_compression(self._compression_params)  # applied in the step
        batch_size = self._exec_group.batch_size
        if kv and "dist" in kv.type and "_sync" in kv.type:
            batch_size *= kv.num_workers
        rescale_grad = 1.0 / batch_size
        if update_on_kvstore:
            idx2name = dict(enumerate(self._param_names))
        else:
            n_dev = len(self._context)
            idx2name = {
                i * n_dev + k: n for i, n in enumerate(self._param_names) for k in range(n_dev)
            }
        if isinstance(optimizer, str):
            params = dict(optimizer_params)
            params.setdefault("rescale_grad", rescale_grad)
            optimizer = opt.create(optimizer, sym=self._symbol, param_idx2name=idx2name, **params)
        elif isinstance(optimizer, opt.Optimizer):
            if optimizer.rescale_grad != rescale_grad:
                warnings.warn(
                    "Optimizer created manually outside Module but rescale_grad is not "
                    f"normalized to 1.0/batch_size/num_workers ({optimizer.rescale_grad} "
                    f"vs. {rescale_grad}). Is this intended?",
                    stacklevel=2,
                )
            if not optimizer.idx2name:
                optimizer.idx2name = dict(idx2name)
        else:
            raise TypeError(
                f"optimizer must be a name such as 'sgd' or an mx.optimizer.Optimizer, "
                f"got {type(optimizer).__name__}"
            )
        updater = None if update_on_kvstore else opt.get_updater(optimizer)
        if kv and update_on_kvstore:
            kv.set_optimizer(optimizer)
        group = self._exec_group
        group.flush()
        state = None
        trained = {n: group.state.params[n] for n in group._diff_params}
        fused = optimizer.fused_supported(trained)  # traces a user's update() once
        if not fused and group._progs.placement.processes > 1:
            raise NotImplementedError(
                f"dist_sync over several workers needs an optimizer with a compiled update; "
                f"{type(optimizer).__name__}.update reads host values (asnumpy, float(), a "
                "Python if on an array...), so it would run through MXNet's per-index Updater "
                "on this worker's arrays only: use a built-in optimizer or keep update() to "
                "array operations (mxmod/optimizer/README.md)"
            )
        if fused:
            state = jax.device_put(optimizer.fused_init(trained), group._progs.replicated())
        elif kv:
            initialize_kvstore(
                kv, group.param_arrays, self._arg_params, self._param_names, update_on_kvstore
            )
        box = self._opt_box = OptBox(optimizer, group.state, kv, updater, update_on_kvstore, fused)
        group.state.opt = box
        box.state = state
        if fused and kv is not None and hasattr(kv, "serve"):
            serve_from_module(kv, group, self._param_names, update_on_kvstore)
        self.optimizer_initialized = True
        if self._preload_opt_states is not None:
            self.load_optimizer_states(
                self._preload_opt_states, allow_pickle=getattr(self, "_preload_allow_pickle", False)
            )
            self._preload_opt_states = None

    def prepare(self, data_batch, sparse_row_id_fn=None):
        """MXNet's ``Module.prepare``: with a kvstore that updates the weights,
        ``sparse_row_id_fn(data_batch)`` names the rows of each row_sparse parameter the
        batch needs (``sparse_inputs.prepare_rows``)."""
        require(self, "prepare", "binded")
        if sparse_row_id_fn is not None:
            prepare_rows(self, data_batch, sparse_row_id_fn)

    def borrow_optimizer(self, shared_module):
        if not shared_module.optimizer_initialized:
            raise MXNetError(
                "borrow_optimizer: the shared module has no optimizer; call its "
                "init_optimizer() first"
            )
        self._opt_box = self._exec_group.state.opt = shared_module._opt_box
        self.optimizer_initialized = True

    # ------------------------------------------------------------ computation
    def forward(self, data_batch, is_train=None):
        require(self, "forward", "binded", "params_initialized")
        check_data_batch(data_batch)
        if isinstance(data_batch, list):  # pre-sliced; a namedtuple batch is one batch
            data_batch = self._exec_group.merge_presliced(data_batch)
        cur = [tuple(d.shape) for d in self._data_shapes]
        new = [tuple(x.shape) for x in data_batch.data]
        if cur != new:
            if getattr(data_batch, "provide_data", None):
                new_data = data_batch.provide_data
            else:
                new_data = [
                    DataDesc(d.name, s, d.dtype, d.layout) for d, s in zip(self._data_shapes, new)
                ]
            new_label = None
            if getattr(data_batch, "provide_label", None):
                new_label = data_batch.provide_label
            elif getattr(data_batch, "label", None) and self._label_shapes:
                new_label = [
                    DataDesc(d.name, tuple(x.shape), d.dtype, d.layout)
                    for d, x in zip(self._label_shapes, data_batch.label)
                ]
            self.reshape(new_data, new_label)
        self._exec_group.forward(data_batch, is_train)

    def backward(self, out_grads=None):
        require(self, "backward", "binded", "params_initialized")
        self._exec_group.backward(out_grads=out_grads)

    def update(self):
        """Apply the optimizer to this batch's gradients (MXNet's ``Module.update``): one
        compiled step with the forward-backward when the optimizer has a fused form, else
        MXNet's own kvstore/updater path over the executor group's arrays."""
        require(self, "update", "binded", "params_initialized", "optimizer_initialized")
        self._params_dirty = True
        group = self._exec_group
        box = group.state.opt
        if box.fused and (box.kvstore is not None or len(self._context) == 1):
            group.request_update()
            return
        # MXNet's per-index loop: through the kvstore, or without one (several devices)
        # each device's copy stepping with its own gradient
        if self._update_on_kvstore:
            update_params_on_kvstore(
                group.param_arrays, group.grad_arrays, self._kvstore, group.param_names
            )
        else:
            update_params(
                group.param_arrays,
                group.grad_arrays,
                updater=self._updater,
                num_device=len(self._context),
                kvstore=self._kvstore,
                param_names=group.param_names,
            )

    def get_outputs(self, merge_multi_context=True):
        require(self, "get_outputs", "binded", "params_initialized")
        return self._exec_group.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        require(self, "get_input_grads", "binded", "params_initialized")
        if not self.inputs_need_grad:
            raise MXNetError("get_input_grads() needs bind(..., inputs_need_grad=True)")
        return self._exec_group.get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        self._exec_group.update_metric(eval_metric, labels, pre_sliced)

    def get_states(self, merge_multi_context=True):
        require(self, "get_states", "binded", "params_initialized")
        return self._exec_group.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states=None, value=None):
        require(self, "set_states", "binded", "params_initialized")
        self._exec_group.set_states(states, value)

    def install_monitor(self, mon):
        require(self, "install_monitor", "binded")
        self._monitor = mon
        self._exec_group.install_monitor(mon)  # MXNet's: on every device's executor

    # ------------------------------------------------------------ files
    def save_checkpoint(self, prefix, epoch, save_optimizer_states=False, remove_amp_cast=True):
        """``<prefix>-symbol.json``, ``<prefix>-<epoch>.params`` (and ``.states``), committed
        as one unit (``mxmod.fileio.write_checkpoint``): a crash leaves the previous complete
        checkpoint, never params without their states. In a multi-worker ``dist_sync`` job
        only rank 0 writes (the workers hold equal weights)."""
        if dist.rank() != 0:
            return
        arg_params, aux_params = self.get_params()
        states = self._optimizer_states_bytes() if save_optimizer_states else None
        paths = write_checkpoint_files(
            prefix, epoch, self._symbol, arg_params, aux_params, remove_amp_cast, states
        )
        logging.info('Saved checkpoint to "%s"', paths["params"])
        if states is not None:
            logging.info('Saved optimizer state to "%s"', paths["states"])

    @staticmethod
    def load(prefix, epoch, load_optimizer_states=False, allow_pickle=False, **kwargs):
        """As ``mx.mod.Module.load``; ``allow_pickle`` (mxmod addition) lets the preloaded
        ``.states`` file be an MXNet pickle (see :meth:`load_optimizer_states`)."""
        sym, args, auxs = load_checkpoint(prefix, epoch)
        mod = Module(symbol=sym, **kwargs)
        mod._arg_params = args
        mod._aux_params = auxs
        mod.params_initialized = True
        if load_optimizer_states:
            mod._preload_opt_states = checkpoint_paths(prefix, epoch)["states"]
            mod._preload_allow_pickle = allow_pickle
        return mod

    def save_optimizer_states(self, fname):
        """Write the optimizer states (atomically) as MXNet does: the bytes of
        ``Updater.get_states()`` for the updater holding them, keyed ``i*num_device+k`` (by
        name with ``update_on_kvstore``), in mxmod's pickle-free format with the update
        counts (``mxmod/module/opt_states.py``). ``Updater.set_states`` reads the file."""
        atomic_write(fname, self._optimizer_states_bytes())

    def _optimizer_states_bytes(self) -> bytes:
        return states_bytes_of(self)

    def load_optimizer_states(self, fname, allow_pickle=False):
        """Load a ``.states`` file: one written by :meth:`save_optimizer_states` or
        ``Updater.get_states`` (for any device count; the update counts are restored), by
        mxmod's first Module format, or, only with ``allow_pickle=True`` (mxmod addition:
        unpickling can run code), an MXNet pickle read by a restricted unpickler. The states
        are checked against this module's before any is used."""
        load_states_into(self, fname, allow_pickle)

    def export(self, path, format="stablehlo", dynamic_batch=False, **kwargs):
        """mxmod's addition: the inference forward and parameters of this bound module, for
        serving, as StableHLO (``jax.export`` bytes) or ONNX; see mxmod/module/export.py."""
        from .export import export_module  # jax.export and the ONNX tables: on first use

        return export_module(self, path, format, dynamic_batch, **kwargs)


# what fit's one-step loop (multi_step) stands in for: a subclass overriding one of these
# runs fit through its own calls
Module._plain_step_methods = {
    name: getattr(Module, name)
    for name in ("forward", "backward", "update", "update_metric", "forward_backward", "prepare")
}


def _param_zeros(stype: str, like) -> NDArray:
    """A host parameter array of ``like``'s shape and dtype in the variable's storage type
    (MXNet's ``Module._arg_params``: a ``stype='row_sparse'`` weight is a RowSparseNDArray)."""
    if stype == "default":
        return nd.zeros(like.shape, dtype=like.dtype)
    return nd.sparse.zeros(stype, like.shape, dtype=like.dtype)


def _copy_param(name: str, src: Any, dst) -> None:
    data = src if isinstance(src, NDArray) else np.asarray(src)
    if tuple(data.shape) != tuple(dst.shape):
        raise MXNetError(
            f"parameter {name!r} has shape {tuple(data.shape)} but the symbol needs "
            f"{tuple(dst.shape)}"
        )
    dst[:] = data
