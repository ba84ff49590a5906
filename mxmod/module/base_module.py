"""``BaseModule``: fit/score/predict written only against the abstract Module API, so
every subclass (Module, BucketingModule, ...) gets them for free (spec 1.2)."""

from __future__ import annotations

import logging
import time
import warnings
from typing import Any

import numpy as np

from .. import initializer as _init
from .. import metric as _metric
from .. import ndarray as nd
from ..base import MXNetError, as_list, names_list
from ..io import DataBatch, DataIter
from ..kvstore.dist_iter import wrap_for_workers
from . import multi_step
from .checkpoint import BatchEndParam, split_tagged_params, tagged_params
from .input_checks import (  # noqa: F401  (MXNet's base_module helpers, imported from here)
    _check_input_names,
    _check_input_names_strict,
    _parse_data_desc,
    _parse_data_desc_list,
)
from .stages import require

_as_list = as_list  # MXNet's base_module name


def _bound_property(name: str, read) -> property:
    """A property that needs the module bound (else a stage error naming ``name``), read
    as ``read(module)``."""

    def get(self):
        require(self, name, "binded")
        return read(self)

    return property(get)


def _call(callbacks: Any, *args: Any) -> None:
    for cb in names_list(callbacks):
        cb(*args)


class BaseModule:
    """The abstract module, as ``mx.mod.BaseModule``.

    Subclasses implement bind/init_params/init_optimizer/forward/backward/update/
    update_metric/get_outputs/get_params and the shape properties.
    """

    def __init__(self, logger=logging):
        self.logger = logger
        self.binded = False
        self.for_training = False
        self.inputs_need_grad = False
        self.params_initialized = False
        self.optimizer_initialized = False
        self._symbol = None
        self._total_exec_bytes = 0

    # ------------------------------------------------------------ high level
    def forward_backward(self, data_batch) -> None:
        self.forward(data_batch, is_train=True)
        self.backward()

    def score(
        self,
        eval_data,
        eval_metric,
        num_batch=None,
        batch_end_callback=None,
        score_end_callback=None,
        reset=True,
        epoch=0,
        sparse_row_id_fn=None,
    ):
        """Evaluate ``eval_metric`` over ``eval_data``; returns ``[(name, value), ...]``."""
        require(self, "score", "binded", "params_initialized")
        if reset:
            eval_data.reset()
        if not isinstance(eval_metric, _metric.EvalMetric):
            eval_metric = _metric.create(eval_metric)
        eval_metric.reset()
        self._place_batches(eval_data)
        # the callbacks' ``locals`` carry MXNet's names (``eval_batch``, ``actual_num_batch``,
        # ``batch_end_params``): callbacks written for MXNet read them
        actual_num_batch = 0
        for nbatch, eval_batch in self._run_inference(eval_data, num_batch, sparse_row_id_fn):
            self._update_metric_with(eval_metric, eval_batch)
            if batch_end_callback is not None:
                batch_end_params = BatchEndParam(epoch, nbatch, eval_metric, locals())
                _call(batch_end_callback, batch_end_params)
            actual_num_batch += 1
        _call(score_end_callback, BatchEndParam(epoch, actual_num_batch, eval_metric, locals()))
        return eval_metric.get_name_value()

    def iter_predict(self, eval_data, num_batch=None, reset=True, sparse_row_id_fn=None):
        """Yield ``(outputs, nbatch, batch)`` with pad rows trimmed."""
        require(self, "iter_predict", "binded", "params_initialized")
        if reset:
            eval_data.reset()
        for nbatch, batch in self._run_inference(eval_data, num_batch, sparse_row_id_fn):
            pad = batch.pad or 0
            outputs = [o[0 : o.shape[0] - pad] for o in self.get_outputs()]
            yield outputs, nbatch, batch

    def _run_inference(self, eval_data, num_batch, sparse_row_id_fn):
        """Yield ``(nbatch, batch)`` for the first ``num_batch`` batches of ``eval_data``
        (all when None), each prepared and run forward for inference."""
        for nbatch, batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(batch, is_train=False)
            yield nbatch, batch

    def _update_metric_with(self, eval_metric, batch) -> None:
        """``update_metric`` with the batch's labels (a list of batches: pre-sliced, one
        per device)."""
        if isinstance(batch, list):
            self.update_metric(eval_metric, [b.label for b in batch], pre_sliced=True)
        else:
            self.update_metric(eval_metric, batch.label)

    def predict(
        self,
        eval_data,
        num_batch=None,
        merge_batches=True,
        reset=True,
        always_output_list=False,
        sparse_row_id_fn=None,
    ):
        """Run inference over ``eval_data`` (a DataIter or an array)."""
        require(self, "predict", "binded", "params_initialized")
        if isinstance(eval_data, (nd.NDArray, np.ndarray)):
            if isinstance(eval_data, np.ndarray):
                eval_data = nd.array(eval_data)
            self.forward(DataBatch([eval_data]))
            return self.get_outputs()[0]
        if not isinstance(eval_data, DataIter):
            raise ValueError("eval_data must be of type NDArray or DataIter")
        outputs = [
            [o.copy() for o in outs]
            for outs, _, _ in self.iter_predict(eval_data, num_batch, reset, sparse_row_id_fn)
        ]
        if not outputs:
            return []
        if not merge_batches:
            return outputs
        n = len(outputs[0])
        if any(len(o) != n for o in outputs):
            raise MXNetError(
                "Cannot merge batches, as num of outputs is not the same in "
                "mini-batches. Maybe bucketing is used?"
            )
        merged = [nd.concatenate([o[i] for o in outputs]) for i in range(n)]
        if n == 1 and not always_output_list:
            return merged[0]
        return merged

    def fit(
        self,
        train_data,
        eval_data=None,
        eval_metric="acc",
        epoch_end_callback=None,
        batch_end_callback=None,
        kvstore="local",
        optimizer="sgd",
        optimizer_params=(("learning_rate", 0.01),),
        eval_end_callback=None,
        eval_batch_end_callback=None,
        initializer=None,
        arg_params=None,
        aux_params=None,
        allow_missing=False,
        force_rebind=False,
        force_init=False,
        begin_epoch=0,
        num_epoch=None,
        validation_metric=None,
        monitor=None,
        sparse_row_id_fn=None,
        steps_per_dispatch=1,
    ):
        """Train: bind, init params and optimizer, then run epochs (spec 1.2 ``fit``).

        ``steps_per_dispatch`` (mxmod only) runs that many batches per compiled dispatch
        (``lax.scan``); the result equals single steps (see ``module/multi_step.py`` for
        what callbacks see).
        """
        if num_epoch is None:
            raise ValueError("fit() needs num_epoch: please specify number of epochs")
        if initializer is None:
            initializer = _init.Uniform(0.01)

        # a multi-worker dist_sync job: every worker runs the same number of steps
        train_data, eval_data = wrap_for_workers(kvstore, train_data, eval_data, self.logger)
        self.bind(
            data_shapes=train_data.provide_data,
            label_shapes=train_data.provide_label,
            for_training=True,
            force_rebind=force_rebind,
        )
        self._place_batches(train_data)
        if monitor is not None:
            self.install_monitor(monitor)
        self.init_params(
            initializer=initializer,
            arg_params=arg_params,
            aux_params=aux_params,
            allow_missing=allow_missing,
            force_init=force_init,
        )
        self.init_optimizer(kvstore=kvstore, optimizer=optimizer, optimizer_params=optimizer_params)
        if validation_metric is None:
            validation_metric = eval_metric
        if not isinstance(eval_metric, _metric.EvalMetric):
            eval_metric = _metric.create(eval_metric)
        if not isinstance(steps_per_dispatch, int) or steps_per_dispatch < 1:
            raise ValueError(
                f"fit(steps_per_dispatch={steps_per_dispatch!r}): give a positive "
                "int (1: one dispatch per batch, MXNet's behaviour)"
            )

        blocks = multi_step.use_blocks(self, eval_metric, monitor, steps_per_dispatch)
        if begin_epoch > 0 and hasattr(train_data, "set_epoch"):
            # a resumed run sees the batches an uninterrupted one would (mxmod iterators)
            train_data.set_epoch(begin_epoch)
        for epoch in range(begin_epoch, num_epoch):
            tic = time.time()
            eval_metric.reset()
            self._begin_fit_epoch(epoch, train_data)
            nbatch = 0
            data_iter = iter(train_data)
            end_of_batch = False
            next_data_batch = _first_batch(train_data, data_iter)
            eval_name_vals = []
            if blocks:
                eval_name_vals = multi_step.fit_epoch(
                    self,
                    data_iter,
                    next_data_batch,
                    eval_metric,
                    epoch,
                    steps_per_dispatch,
                    batch_end_callback,
                    sparse_row_id_fn,
                )
                end_of_batch = True
            while not end_of_batch:
                data_batch = next_data_batch
                if monitor is not None:
                    monitor.tic()
                self.forward_backward(data_batch)
                self.update()
                self._update_metric_with(eval_metric, data_batch)
                try:
                    next_data_batch = next(data_iter)
                    self.prepare(next_data_batch, sparse_row_id_fn=sparse_row_id_fn)
                except StopIteration:
                    end_of_batch = True
                if monitor is not None:
                    monitor.toc_print()
                if end_of_batch:
                    eval_name_vals = eval_metric.get_global_name_value()
                if batch_end_callback is not None:
                    _call(batch_end_callback, BatchEndParam(epoch, nbatch, eval_metric, locals()))
                nbatch += 1
            self._log_train_summary(epoch, eval_name_vals)
            self.logger.info("Epoch[%d] Time cost=%.3f", epoch, time.time() - tic)
            arg_params_, aux_params_ = self.get_params()
            self.set_params(arg_params_, aux_params_)
            _call(epoch_end_callback, epoch, self.symbol, arg_params_, aux_params_)
            if eval_data is not None:
                res = self.score(
                    eval_data,
                    validation_metric,
                    score_end_callback=eval_end_callback,
                    batch_end_callback=eval_batch_end_callback,
                    epoch=epoch,
                )
                for name, val in res:
                    self.logger.info("Epoch[%d] Validation-%s=%f", epoch, name, val)
            self._end_fit_epoch(epoch, train_data)

    def _log_train_summary(self, epoch: int, eval_name_vals: list) -> None:
        """``fit``'s lines after an epoch's batches (before its time cost)."""
        for name, val in eval_name_vals:
            self.logger.info("Epoch[%d] Train-%s=%f", epoch, name, val)

    def _begin_fit_epoch(self, epoch: int, train_data) -> None:
        """Hook run by ``fit`` before each epoch's batches (after the metric reset); the
        default does nothing (SVRGModule recomputes its full gradient here)."""

    def _end_fit_epoch(self, epoch: int, train_data) -> None:
        """Hook ending each ``fit`` epoch: rewind ``train_data`` for the next one."""
        train_data.reset()

    def _place_batches(self, data_iter) -> None:
        """Ask an iterator that can (``place_on``, mxmod's native iterators) to put its
        batches where the step reads them, sharded over the bound devices."""
        shardings = self._input_shardings()
        if shardings and hasattr(data_iter, "place_on"):
            data_iter.place_on(shardings)

    def _input_shardings(self):
        """``{input name: jax Sharding}`` of the bound inputs (None: no opinion)."""
        return None

    # ------------------------------------------------------------ parameters
    @property
    def symbol(self):
        return self._symbol

    def set_params(
        self, arg_params, aux_params, allow_missing=False, force_init=True, allow_extra=False
    ):
        """Assign parameter values: MXNet's ``init_params`` with them and no initializer. A
        module that writes a partial set in place (``_write_params``: Module,
        BucketingModule) does so under ``allow_missing=True``, leaving the others as they
        are."""
        if not allow_missing or self._write_params is None:
            self.init_params(
                initializer=None,
                arg_params=arg_params,
                aux_params=aux_params,
                allow_missing=allow_missing,
                force_init=force_init,
                allow_extra=allow_extra,
            )
            return
        if self.params_initialized and not force_init:
            warnings.warn(
                "Parameters already initialized and force_init=False. set_params call ignored.",
                stacklevel=2,
            )
            return
        self._write_params(arg_params, aux_params, force_init, allow_extra)
        self._params_dirty = True
        self.params_initialized = True

    #: ``(arg_params, aux_params, force_init, allow_extra) -> None`` writing the given
    #: parameters into the module's arrays, for ``set_params(allow_missing=True)``; None:
    #: the module has no such path (``set_params`` calls ``init_params``).
    _write_params = None

    def save_params(self, fname: str) -> None:
        """Write ``arg:``/``aux:`` prefixed parameters in MXNet's ``.params`` format."""
        nd.save(fname, tagged_params(*self.get_params()))

    def load_params(self, fname: str) -> None:
        """Set the parameters of a :meth:`save_params` file (a key tagged neither ``arg:``
        nor ``aux:`` is an error, as MXNet)."""
        arg_params, aux_params, others = split_tagged_params(nd.load(fname), fname)
        if others:
            raise ValueError(f"Invalid param file {fname}: key {others[0]!r} is not arg:/aux:")
        self.set_params(arg_params, aux_params)

    def get_states(self, merge_multi_context=True):
        # MXNet's base asserts on merge_multi_context=True; both forms work here
        require(self, "get_states", "binded", "params_initialized")
        return []

    def set_states(self, states=None, value=None):
        require(self, "set_states", "binded", "params_initialized")
        if states or value:
            raise MXNetError("this module has no states to set")

    def prepare(self, data_batch, sparse_row_id_fn=None):
        if sparse_row_id_fn is not None:
            warnings.warn(UserWarning("sparse_row_id_fn is not invoked for BaseModule."))

    # ------------------------------------------------------------ abstract
    def _abstract(self, what):
        raise NotImplementedError(f"{type(self).__name__} does not implement {what}")

    data_names = property(lambda self: self._abstract("data_names"))
    output_names = property(lambda self: self._abstract("output_names"))
    data_shapes = property(lambda self: self._abstract("data_shapes"))
    label_shapes = property(lambda self: self._abstract("label_shapes"))
    output_shapes = property(lambda self: self._abstract("output_shapes"))

    def get_params(self):
        self._abstract("get_params")

    def init_params(self, *a, **k):
        self._abstract("init_params")

    def install_monitor(self, mon):
        self._abstract("install_monitor")

    def forward(self, data_batch, is_train=None):
        self._abstract("forward")

    def backward(self, out_grads=None):
        self._abstract("backward")

    def get_outputs(self, merge_multi_context=True):
        self._abstract("get_outputs")

    def get_input_grads(self, merge_multi_context=True):
        self._abstract("get_input_grads")

    def update(self):
        self._abstract("update")

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        self._abstract("update_metric")

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
        """Bind the module to its input shapes, as MXNet's ``bind``: the stage rules every
        module shares (``force_rebind``, already bound, ``inputs_need_grad`` only for
        training), then the subclass's ``_bind``."""
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if inputs_need_grad and not for_training:
            raise MXNetError("inputs_need_grad=True needs for_training=True")
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._grad_req = grad_req
        self._bind(data_shapes, label_shapes, shared_module, force_rebind)
        self.binded = True

    def _bind(self, data_shapes, label_shapes, shared_module, force_rebind) -> None:
        """Bind for :meth:`bind`, which has set ``for_training``, ``inputs_need_grad`` and
        ``_grad_req``; ``force_rebind`` is for children to rebind too."""
        self._abstract("bind")

    def _reset_bind(self) -> None:
        """Forget the binding (``bind(force_rebind=True)``)."""
        self.binded = False

    def init_optimizer(self, *a, **k):
        self._abstract("init_optimizer")


def _first_batch(train_data, data_iter):
    """The first batch of an epoch. MXNet raises StopIteration out of fit when the
    iterator was left exhausted (e.g. by a manual loop before fit); mxmod resets it once."""
    try:
        return next(data_iter)
    except StopIteration:
        train_data.reset()
    try:
        return next(iter(train_data))
    except StopIteration as e:
        why = f": {e}" if str(e) else ""  # an iterator may say why (NDArrayIter does)
        raise MXNetError(f"fit(): train_data yields no batches even after reset(){why}") from None
