"""``mx.model.FeedForward``: MXNet's legacy estimator API, built on :class:`mxmod.mod.Module`.

MXNet 1.9.1 keeps ``FeedForward`` (deprecated since 0.10) for old scripts:
``FeedForward.create(...)``, ``fit``, ``predict``, ``score``, ``save``, ``load``. mxmod
runs the same steps with a Module: parameters are created exactly as FeedForward does
(given ``arg_params``/``aux_params`` first, the rest by the initializer called with the
parameter name, MXNet's legacy initializer path), the optimizer gets
``rescale_grad=1/batch_size`` and the extra constructor keywords, training is
``Module.fit`` and prediction a Module bound for inference.

Differences: ``epoch_size`` (batches per epoch across iterator resets) raises
NotImplementedError; the default ``eval_end_callback`` is Module.fit's own validation
log line (``Epoch[i] Validation-<metric>=...``, the same text MXNet's default logs).
"""

from __future__ import annotations

import logging
import warnings
from typing import Any

import numpy as np

from . import metric as _metric
from .base import MXNetError, names_list
from .context import Context, cpu
from .initializer import Uniform
from .io import DataBatch, DataDesc, DataIter, NDArrayIter
from .module import Module
from .module.checkpoint import BatchEndParam, load_checkpoint, save_checkpoint
from .ndarray import NDArray, zeros
from .optimizer import Optimizer
from .symbol import Symbol

__all__ = ["FeedForward"]


def _check_unique_names(symbol: Any) -> None:
    for kind, names in (
        ("argument", symbol.list_arguments()),
        ("auxiliary state", symbol.list_auxiliary_states()),
    ):
        seen = set()
        for name in names:
            if name in seen:
                raise ValueError(
                    f"Find duplicated {kind} name \"{name}\": please make the "
                    f"weight name non-duplicated (using name arguments), "
                    f"arguments are {names}"
                )
            seen.add(name)


class _TrainingModule(Module):
    """The Module FeedForward.fit trains: MXNet's old training loop logs each epoch's end
    as ``Epoch[i] Resetting Data Iterator`` (no ``Train-`` metric lines)."""

    def _log_train_summary(self, epoch: int, eval_name_vals: list) -> None:
        self.logger.info("Epoch[%d] Resetting Data Iterator", epoch)


class FeedForward:
    """A feed-forward network estimator (MXNet's deprecated ``mx.model.FeedForward``).

    Args:
        symbol: the network, or a function ``bucket_key -> Symbol`` (called with the
            training iterator's ``default_bucket_key``).
        ctx: a Context or list of Contexts (data parallel); default ``cpu()``.
        num_epoch: training epochs.
        epoch_size: unsupported (must be None).
        optimizer: optimizer name or ``mx.optimizer.Optimizer``.
        initializer: called as ``initializer(name, array)`` for parameters not given.
        numpy_batch_size: batch size when ``X`` is a numpy array or NDArray.
        arg_params: initial (or trained) parameters, name -> NDArray.
        aux_params: initial auxiliary states, name -> NDArray.
        allow_extra_params: drop given parameters the symbol does not use
            (otherwise they are an error at fit time).
        begin_epoch: the first epoch number (``load`` sets it).
        **kwargs: optimizer arguments, e.g. ``learning_rate=0.1, momentum=0.9``.

    Raises:
        NotImplementedError: ``epoch_size`` is not None.
        ValueError: the symbol repeats an argument name.
    """

    def __init__(
        self,
        symbol: Any,
        ctx: Any = None,
        num_epoch: int | None = None,
        epoch_size: int | None = None,
        optimizer: Any = "sgd",
        initializer: Any = None,
        numpy_batch_size: int = 128,
        arg_params: dict | None = None,
        aux_params: dict | None = None,
        allow_extra_params: bool = False,
        begin_epoch: int = 0,
        **kwargs: Any,
    ):
        warnings.warn(
            "mxnet.model.FeedForward has been deprecated. Please use mxnet.mod.Module instead.",
            DeprecationWarning,
            stacklevel=2,
        )
        if epoch_size is not None:
            raise NotImplementedError(
                "FeedForward(epoch_size=...) is not supported by mxmod: "
                "give the iterator the epoch length you want"
            )
        if isinstance(symbol, Symbol):
            self.symbol, self.sym_gen = symbol, None
        elif callable(symbol):
            self.symbol, self.sym_gen = None, symbol
        else:
            raise TypeError(
                f"FeedForward symbol must be a Symbol or a function returning one, "
                f"got {type(symbol).__name__}"
            )
        self.arg_params, self.aux_params = arg_params, aux_params
        self.allow_extra_params = allow_extra_params
        if self.symbol is not None:
            self._check_arguments()
        self.ctx = [cpu()] if ctx is None else [ctx] if isinstance(ctx, Context) else list(ctx)
        self.num_epoch, self.epoch_size = num_epoch, epoch_size
        self.kwargs = kwargs.copy()
        self.optimizer = optimizer
        self.initializer = initializer if initializer is not None else Uniform(0.01)
        self.numpy_batch_size = numpy_batch_size
        self.begin_epoch = begin_epoch
        self._pred_mod = None

    def _check_arguments(self) -> None:
        _check_unique_names(self.symbol)
        if self.allow_extra_params:
            args = set(self.symbol.list_arguments())
            auxs = set(self.symbol.list_auxiliary_states())
            if self.arg_params:
                self.arg_params = {k: v for k, v in self.arg_params.items() if k in args}
            if self.aux_params:
                self.aux_params = {k: v for k, v in self.aux_params.items() if k in auxs}

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_pred_mod"] = None
        return state

    # ------------------------------------------------------------------ data
    def _init_iter(self, X: Any, y: Any, is_train: bool) -> Any:
        if isinstance(X, (np.ndarray, NDArray)):
            if y is None:
                if is_train:
                    raise ValueError("y must be specified when X is numpy.ndarray")
                y = np.zeros(X.shape[0])
            if not isinstance(y, (np.ndarray, NDArray)):
                raise TypeError("y must be ndarray when X is numpy.ndarray")
            if X.shape[0] != y.shape[0]:
                raise ValueError("The numbers of data points and labels not equal")
            if y.ndim == 2 and y.shape[1] == 1:
                y = y.reshape(-1) if isinstance(y, np.ndarray) else y.reshape((-1,))
            if y.ndim != 1:
                raise ValueError("Label must be 1D or 2D (with 2nd dimension being 1)")
            batch = min(X.shape[0], self.numpy_batch_size)
            if is_train:
                return NDArrayIter(X, y, batch, shuffle=True, last_batch_handle="roll_over")
            return NDArrayIter(X, y, batch, shuffle=False)
        if not isinstance(X, DataIter):
            raise TypeError("X must be DataIter, NDArray or numpy.ndarray")
        return X

    def _init_eval_iter(self, eval_data: Any) -> Any:
        if eval_data is None:
            return None
        if isinstance(eval_data, (tuple, list)) and len(eval_data) == 2:
            if eval_data[0] is None:
                raise ValueError("Eval data is NONE")
            if eval_data[1] is None and isinstance(eval_data[0], DataIter):
                return eval_data[0]
            data, label = (np.array(x) if isinstance(x, list) else x for x in eval_data)
            return self._init_iter(data, label, is_train=True)
        if not isinstance(eval_data, DataIter):
            raise TypeError(
                "Eval data must be DataIter, or NDArray/numpy.ndarray/list pair "
                "(i.e. tuple/list of length 2)"
            )
        return eval_data

    def _init_params(self, inputs: list) -> None:
        """Create every parameter as FeedForward does: given values first, else initializer."""

        inputs = [x if isinstance(x, DataDesc) else DataDesc(*x) for x in inputs]
        shapes = {x.name: x.shape for x in inputs}
        arg_shapes, _, aux_shapes = self.symbol.infer_shape(**shapes)
        if arg_shapes is None:
            raise MXNetError(
                f"FeedForward: cannot infer the parameter shapes from the inputs {shapes}"
            )
        arg_types, _, aux_types = self.symbol.infer_type(**{x.name: x.dtype for x in inputs})
        names = self.symbol.list_arguments()
        params = {
            n: zeros(s, dtype=t) for n, s, t in zip(names, arg_shapes, arg_types) if n not in shapes
        }
        auxs = {
            n: zeros(s, dtype=t)
            for n, s, t in zip(self.symbol.list_auxiliary_states(), aux_shapes, aux_types)
        }
        for given, created in ((self.arg_params, params), (self.aux_params, auxs)):
            for name, arr in created.items():
                if given and name in given:
                    arr[:] = given[name]
                else:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", DeprecationWarning)
                        self.initializer(name, arr)
        self.arg_params, self.aux_params = params, auxs

    # ----------------------------------------------------------------- train
    def fit(
        self,
        X: Any,
        y: Any = None,
        eval_data: Any = None,
        eval_metric: Any = "acc",
        epoch_end_callback: Any = None,
        batch_end_callback: Any = None,
        kvstore: Any = "local",
        logger: Any = None,
        work_load_list: Any = None,
        monitor: Any = None,
        eval_end_callback: Any = None,
        eval_batch_end_callback: Any = None,
    ) -> None:
        """Train for ``num_epoch`` epochs on ``X`` (a DataIter, or arrays with labels ``y``).

        ``eval_data`` is a DataIter or a ``(data, label)`` pair. Callbacks have
        Module.fit's signatures (``epoch_end_callback(epoch, symbol, arg, aux)``).
        """

        data = self._init_iter(X, y, is_train=True)
        eval_data = self._init_eval_iter(eval_data)
        if self.sym_gen is not None:
            if not hasattr(data, "default_bucket_key"):
                raise TypeError(
                    "FeedForward with a symbol generator needs a training iterator "
                    "with default_bucket_key (a bucketing iterator); pass a Symbol "
                    "for plain iterators"
                )
            self.symbol = self.sym_gen(data.default_bucket_key)
            self._check_arguments()
        self._init_params(list(data.provide_data) + list(data.provide_label))
        if isinstance(self.optimizer, Optimizer):
            optimizer, opt_params = self.optimizer, ()
        elif isinstance(self.optimizer, str):
            optimizer, opt_params = self.optimizer, dict(self.kwargs)
        else:
            raise TypeError(
                f"optimizer must be a name or an mx.optimizer.Optimizer, got "
                f"{type(self.optimizer).__name__}"
            )
        mod = _TrainingModule(
            self.symbol,
            data_names=[d[0] for d in data.provide_data],
            label_names=[d[0] for d in data.provide_label],
            context=self.ctx,
            work_load_list=work_load_list,
            logger=logger or logging,
        )
        (logger or logging).info("Start training with %s", str(self.ctx))
        mod.fit(
            data,
            eval_data=eval_data,
            eval_metric=eval_metric,
            epoch_end_callback=epoch_end_callback,
            batch_end_callback=_count_from_one(batch_end_callback),
            kvstore=kvstore,
            optimizer=optimizer,
            optimizer_params=opt_params,
            eval_end_callback=eval_end_callback,
            eval_batch_end_callback=eval_batch_end_callback,
            arg_params=self.arg_params,
            aux_params=self.aux_params,
            force_init=True,
            begin_epoch=self.begin_epoch,
            num_epoch=self.num_epoch,
            monitor=monitor,
        )
        self.arg_params, self.aux_params = mod.get_params()
        self._pred_mod = None

    # --------------------------------------------------------------- predict
    def _predictor(self, data: Any) -> Any:
        if self.arg_params is None:
            raise MXNetError(
                "FeedForward has no parameters: call fit() first or pass "
                "arg_params (e.g. FeedForward.load(prefix, epoch))"
            )
        shapes = [tuple(d[1]) for d in data.provide_data]
        if self._pred_mod is not None and self._pred_mod[1] == shapes:
            return self._pred_mod[0]
        inputs = {d[0] for d in data.provide_data}
        labels = [
            n for n in self.symbol.list_arguments() if n not in inputs and n not in self.arg_params
        ]
        mod = Module(
            self.symbol,
            data_names=[d[0] for d in data.provide_data],
            label_names=labels,
            context=self.ctx[0],
        )
        mod.bind(data_shapes=data.provide_data, for_training=False)
        mod.set_params(self.arg_params, self.aux_params or {}, allow_extra=True)
        self._pred_mod = (mod, shapes)
        return mod

    def predict(
        self, X: Any, num_batch: int | None = None, return_data: bool = False, reset: bool = True
    ) -> Any:
        """Run inference on ``X`` (one device); returns numpy output(s).

        With ``return_data`` also returns the data and labels seen, as MXNet.
        """

        X = self._init_iter(X, None, is_train=False)
        if reset:
            X.reset()
        mod = self._predictor(X)
        outputs, datas, labels = None, [], []
        for i, batch in enumerate(X):
            if num_batch is not None and i == num_batch:
                break
            mod.forward(DataBatch(batch.data), is_train=False)
            real = X.batch_size - (batch.pad or 0)
            outs = mod.get_outputs()
            outputs = outputs or [[] for _ in outs]
            for store, out in zip(outputs, outs):
                store.append(out[0:real].asnumpy())
            if return_data:
                datas.append([x[0:real].asnumpy() for x in batch.data])
                labels.append([x[0:real].asnumpy() for x in batch.label or []])
        result = [np.concatenate(x) for x in outputs or []]
        result = result[0] if len(result) == 1 else result
        if not return_data:
            return result
        data = [np.concatenate(parts) for parts in zip(*datas)]
        label = [np.concatenate(parts) for parts in zip(*labels)]
        return (result, data[0] if len(data) == 1 else data, label[0] if len(label) == 1 else label)

    def score(
        self,
        X: Any,
        eval_metric: Any = "acc",
        num_batch: int | None = None,
        batch_end_callback: Any = None,
        reset: bool = True,
    ) -> float:
        """Evaluate ``eval_metric`` over ``X``; returns the metric value."""

        if not isinstance(eval_metric, _metric.EvalMetric):
            eval_metric = _metric.create(eval_metric)
        X = self._init_iter(X, None, is_train=False)
        if reset:
            X.reset()
        mod = self._predictor(X)
        for i, batch in enumerate(X):
            if num_batch is not None and i == num_batch:
                break
            mod.forward(DataBatch(batch.data), is_train=False)
            eval_metric.update(batch.label, mod.get_outputs())
            if batch_end_callback is not None:
                params = BatchEndParam(epoch=0, nbatch=i, eval_metric=eval_metric, locals=locals())
                for callback in names_list(batch_end_callback):
                    callback(params)
        return eval_metric.get()[1]

    # ----------------------------------------------------------------- files
    def save(self, prefix: str, epoch: int | None = None, remove_amp_cast: bool = True) -> None:
        """Write ``prefix-symbol.json`` and ``prefix-%04d.params`` (epoch defaults to num_epoch).

        Raises:
            ValueError: no epoch given and ``num_epoch`` is None.
        """

        epoch = self.num_epoch if epoch is None else epoch
        if epoch is None:
            raise ValueError("FeedForward.save needs an epoch: pass save(prefix, epoch)")
        save_checkpoint(
            prefix,
            epoch,
            self.symbol,
            self.arg_params,
            self.aux_params,
            remove_amp_cast=remove_amp_cast,
        )

    @staticmethod
    def load(prefix: str, epoch: int, ctx: Any = None, **kwargs: Any) -> "FeedForward":
        """A FeedForward from ``prefix-symbol.json``/``prefix-%04d.params`` (begin_epoch=epoch)."""

        symbol, arg_params, aux_params = load_checkpoint(prefix, epoch)
        return FeedForward(
            symbol,
            ctx=ctx,
            arg_params=arg_params,
            aux_params=aux_params,
            begin_epoch=epoch,
            **kwargs,
        )

    @staticmethod
    def create(
        symbol: Any,
        X: Any,
        y: Any = None,
        ctx: Any = None,
        num_epoch: int | None = None,
        epoch_size: int | None = None,
        optimizer: Any = "sgd",
        initializer: Any = None,
        *fit_args: Any,
        **kwargs: Any,
    ) -> "FeedForward":
        """Build a FeedForward and ``fit`` it in one call (MXNet's functional form).

        After ``initializer`` come :meth:`fit`'s arguments in MXNet's order
        (``_CREATE_FIT_ARGS``: eval_data, eval_metric, epoch_end_callback,
        batch_end_callback, kvstore, logger, work_load_list, eval_end_callback,
        eval_batch_end_callback), by position or by name; other keywords are optimizer
        arguments (``learning_rate=0.1``...), as for the constructor.
        """
        if len(fit_args) > len(_CREATE_FIT_ARGS):
            raise TypeError(
                f"FeedForward.create takes at most {8 + len(_CREATE_FIT_ARGS)} positional "
                f"arguments ({', '.join(_CREATE_FIT_ARGS)} after initializer); pass the "
                "others by name"
            )
        fit_kwargs = dict(zip(_CREATE_FIT_ARGS, fit_args))
        for name in _CREATE_FIT_ARGS:
            if name in kwargs:
                if name in fit_kwargs:
                    raise TypeError(f"FeedForward.create got multiple values for {name!r}")
                fit_kwargs[name] = kwargs.pop(name)
        model = FeedForward(
            symbol,
            ctx=ctx,
            num_epoch=num_epoch,
            epoch_size=epoch_size,
            optimizer=optimizer,
            initializer=initializer,
            **kwargs,
        )
        model.fit(X, y, **fit_kwargs)
        return model


#: ``FeedForward.create``'s arguments that go to ``fit``, in MXNet's positional order.
_CREATE_FIT_ARGS = (
    "eval_data",
    "eval_metric",
    "epoch_end_callback",
    "batch_end_callback",
    "kvstore",
    "logger",
    "work_load_list",
    "eval_end_callback",
    "eval_batch_end_callback",
)


def _count_from_one(callbacks: Any) -> Any:
    """MXNet's FeedForward gives ``batch_end_callback`` the batches done so far (1, 2, ...),
    Module.fit the batch index (0, 1, ...): a Speedometer(frequent=10) over 20 batches logs
    twice, not once."""
    if callbacks is None:
        return None
    callbacks = names_list(callbacks)

    def call(param):
        done = param._replace(nbatch=param.nbatch + 1)
        for callback in callbacks:
            callback(done)

    return call
