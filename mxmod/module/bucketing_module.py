"""``BucketingModule``: one Module per bucket key, all sharing one set of weights (spec 1.4)."""

from __future__ import annotations

import logging

import numpy as np

from .. import ndarray as nd
from .. import symbol as sym
from ..base import MXNetError, names_list
from ..context import cpu
from ..symbol import NameManager
from .checkpoint import load_params
from .ctx_groups import prepare_group2ctxs
from .base_module import _bound_property
from .composite import CompositeModule
from .input_checks import _check_module_names, _parse_data_desc_list
from .module import Module
from .stages import require


def _of_current_bucket(name: str) -> property:
    """A property read from the current bucket's Module (the module must be bound)."""
    return _bound_property(name, lambda self: getattr(self._curr_module, name))


class BucketingModule(CompositeModule):
    """MXNet's ``mx.mod.BucketingModule`` on JAX.

    ``sym_gen(bucket_key) -> (symbol, data_names, label_names)`` builds the network of
    one bucket (e.g. an RNN unrolled to that length). Every bucket is a
    :class:`Module` bound with ``shared_module=<the default bucket's module>``, so all
    buckets read and write one ``TrainState`` (parameters, aux states, optimizer state
    and update counts). Each bucket's symbol compiles its programs once; switching
    back to a bucket already seen reuses its Module and its compiled step, so neither
    time nor memory grows with the number of switches.

    Differences from MXNet: a bucket whose symbol has a parameter the default bucket
    lacks, or a parameter of another shape, raises ``MXNetError`` naming it (MXNet
    allocated a fresh, never initialised array); a ``sym_gen`` failure names the
    bucket key; switching buckets first runs the step still pending on the old bucket
    (its update must land before the new bucket reads the weights).

    Args:
        sym_gen: ``bucket_key -> (Symbol, data_names, label_names)``.
        default_bucket_key: the key of the largest bucket (binds first; its parameters
            are the reference every bucket shares).
        logger, context, work_load_list, fixed_param_names, state_names, group2ctxs,
        compression_params: as :class:`Module`.
    """

    def __init__(
        self,
        sym_gen,
        default_bucket_key=None,
        logger=logging,
        context=None,
        work_load_list=None,
        fixed_param_names=None,
        state_names=None,
        group2ctxs=None,
        compression_params=None,
    ):
        super().__init__(logger=logger)
        if default_bucket_key is None:
            raise MXNetError(
                "BucketingModule needs default_bucket_key: pass the key of the "
                "largest bucket (e.g. train_iter.default_bucket_key)"
            )
        if not callable(sym_gen):
            raise TypeError(
                f"sym_gen must be a function bucket_key -> (symbol, data_names, "
                f"label_names), got {type(sym_gen).__name__}"
            )
        if compression_params:
            raise NotImplementedError(
                "BucketingModule(compression_params=...): gradient "
                "compression is not supported (the reduction is an "
                "exact psum)"
            )
        self._default_bucket_key = default_bucket_key
        self._sym_gen = sym_gen
        symbol, data_names, label_names = self._call_sym_gen(default_bucket_key)
        self._fixed_param_names = names_list(fixed_param_names)
        self._state_names = names_list(state_names)
        _check_module_names(
            symbol.list_arguments(),
            names_list(data_names),
            names_list(label_names),
            self._state_names,
            self._fixed_param_names,
        )
        self._context = context if context is not None else cpu()
        self._work_load_list = work_load_list
        n_ctx = len(context) if isinstance(context, (list, tuple)) else 1
        prepare_group2ctxs(group2ctxs, n_ctx)  # its mistakes surface here
        self._group2ctxs = group2ctxs
        self._compression_params = compression_params
        self._buckets: dict = {}
        self._curr_module = None
        self._curr_bucket_key = None
        self._params_dirty = False
        self._monitor = None
        self._grad_req = None

    # ------------------------------------------------------------ sym_gen
    def _call_sym_gen(self, bucket_key, fresh_names=True):
        """``sym_gen(bucket_key)`` in a fresh NameManager (automatic names restart per
        bucket, so parameters line up by name), with errors naming the key."""

        try:
            if fresh_names:
                with NameManager():
                    out = self._sym_gen(bucket_key)
            else:
                out = self._sym_gen(bucket_key)
        except Exception as err:  # re-raised with the bucket key
            raise MXNetError(
                f"sym_gen({bucket_key!r}) failed: {type(err).__name__}: {err}. "
                "Give the data iterator only bucket keys that sym_gen can build "
                "(e.g. BucketSentenceIter(buckets=[...]) with lengths sym_gen "
                "accepts)"
            ) from err
        if not (isinstance(out, (tuple, list)) and len(out) == 3):
            raise TypeError(
                f"sym_gen({bucket_key!r}) must return (symbol, data_names, "
                f"label_names), got {type(out).__name__}"
            )
        return out[0], names_list(out[1]), names_list(out[2])

    def _new_module(self, symbol, data_names, label_names) -> Module:
        return Module(
            symbol,
            data_names,
            label_names,
            logger=self.logger,
            context=self._context,
            work_load_list=self._work_load_list,
            fixed_param_names=self._fixed_param_names,
            state_names=self._state_names,
            group2ctxs=self._group2ctxs,
            compression_params=self._compression_params,
        )

    # ------------------------------------------------------------ properties
    @property
    def data_names(self):
        if self.binded:
            return self._curr_module.data_names
        return self._call_sym_gen(self._default_bucket_key)[1]

    @property
    def output_names(self):
        if self.binded:
            return self._curr_module.output_names
        return self._call_sym_gen(self._default_bucket_key)[0].list_outputs()

    data_shapes = _of_current_bucket("data_shapes")
    label_shapes = _of_current_bucket("label_shapes")
    output_shapes = _of_current_bucket("output_shapes")
    symbol = _of_current_bucket("symbol")

    # ------------------------------------------------------------ children
    def _child_modules(self) -> list:
        return list(self._buckets.values())

    def _param_modules(self) -> list:
        return [self._curr_module]  # the other buckets share its state

    def _input_module(self) -> Module:
        return self._curr_module

    _output_module = _input_module

    def _after_init_params(self) -> None:
        self._params_dirty = False

    def _after_init_optimizer(self) -> None:
        for mod in self._buckets.values():
            if mod is not self._curr_module and mod.binded:
                mod.borrow_optimizer(self._curr_module)

    # ------------------------------------------------------------ parameters
    def get_params(self):
        require(self, "get_params", "params_initialized")
        self._curr_module._params_dirty = self._params_dirty
        params = self._curr_module.get_params()
        self._params_dirty = False
        return params

    def _write_params(self, arg_params, aux_params, force_init, allow_extra):
        self._curr_module.set_params(
            arg_params,
            aux_params,
            allow_missing=True,
            force_init=force_init,
            allow_extra=allow_extra,
        )

    def get_states(self, merge_multi_context=True):
        require(self, "get_states", "binded", "params_initialized")
        return self._curr_module.get_states(merge_multi_context)

    def set_states(self, states=None, value=None):
        require(self, "set_states", "binded", "params_initialized")
        self._curr_module.set_states(states, value)

    # ------------------------------------------------------------ binding
    def _bind(self, data_shapes, label_shapes, shared_module, force_rebind):
        """Bind the default bucket (the others bind on first use, in ``switch_bucket``);
        parameters already set carry over to the new binding."""
        if shared_module is not None:
            raise MXNetError(
                "BucketingModule.bind(shared_module=...) is not supported: the "
                "buckets of one BucketingModule already share their parameters"
            )
        params = self.get_params() if self.params_initialized else None
        if force_rebind:
            self._buckets = {}
        module = self._buckets.get(self._default_bucket_key)  # loaded buckets keep their symbol
        if module is None:
            module = self._new_module(*self._call_sym_gen(self._default_bucket_key))
        module.bind(
            data_shapes,
            label_shapes,
            self.for_training,
            self.inputs_need_grad,
            force_rebind=False,
            shared_module=None,
            grad_req=self._grad_req,
        )
        self._curr_module = module
        self._curr_bucket_key = self._default_bucket_key
        self._buckets[self._default_bucket_key] = module
        self.binded = True
        if params is not None:
            self.set_params(*params)

    def switch_bucket(self, bucket_key, data_shapes, label_shapes=None):
        """Make ``bucket_key``'s Module current, building and binding it on first use.

        Args:
            bucket_key: the key (``DataBatch.bucket_key``).
            data_shapes, label_shapes: the batch's ``provide_data``/``provide_label``,
                used when the bucket is bound here.
        """
        require(self, "switch_bucket", "binded")
        module = self._buckets.get(bucket_key)
        if module is None or not module.binded:
            if module is None:
                module = self._new_module(*self._call_sym_gen(bucket_key))
            self._bind_bucket(bucket_key, module, data_shapes, label_shapes)
            self._buckets[bucket_key] = module
        if module is not self._curr_module and self._curr_module is not None:
            # the old bucket's pending update must land before this one reads the weights
            self._curr_module._exec_group.flush()
        self._curr_module = module
        self._curr_bucket_key = bucket_key

    def _bind_bucket(self, bucket_key, module, data_shapes, label_shapes) -> None:
        default = self._buckets[self._default_bucket_key]
        if data_shapes is None:
            raise MXNetError(
                f"bucket {bucket_key!r} is not bound yet: switch_bucket needs its "
                "data_shapes (the batch's provide_data)"
            )
        self._check_shared_params(bucket_key, module, default, data_shapes, label_shapes)
        module.bind(
            data_shapes,
            label_shapes,
            self._curr_module.for_training,
            self._curr_module.inputs_need_grad,
            force_rebind=False,
            shared_module=default,
            grad_req=self._grad_req,
        )
        if self._monitor is not None:
            module.install_monitor(self._monitor)

    def _check_shared_params(self, key, module, default, data_shapes, label_shapes) -> None:
        """A bucket may use a subset of the default bucket's parameters, each with the same
        shape; anything else would silently get a fresh array."""
        state = default._exec_group.state
        for names, store, what in (
            (module._param_names, state.params, "parameter"),
            (module._symbol.list_auxiliary_states(), state.aux, "auxiliary state"),
        ):
            extra = [n for n in names if n not in store]
            if extra:
                raise MXNetError(
                    f"sym_gen({key!r}) returned a symbol with {what} {extra[0]!r} that the "
                    f"default bucket ({self._default_bucket_key!r}) does not have; every bucket "
                    "must use the default bucket's parameters (same names: build the layers "
                    "with the same name= or prefix in every bucket)"
                )
        descs = _parse_data_desc_list(data_shapes, "data_shapes")
        if label_shapes is not None:
            descs += _parse_data_desc_list(label_shapes, "label_shapes")
        known = {d.name: tuple(d.shape) for d in descs}
        try:
            arg_shapes, _, aux_shapes = module._symbol.infer_shape_partial(**known)
        except MXNetError as err:
            raise MXNetError(f"bucket {key!r}: {err}") from None
        args = module._symbol.list_arguments()
        got = dict(zip(args, arg_shapes or []))
        got.update(zip(module._symbol.list_auxiliary_states(), aux_shapes or []))
        for name in module._param_names + module._symbol.list_auxiliary_states():
            want = state.params.get(name, state.aux.get(name))
            shape = tuple(got.get(name) or ())
            if shape and 0 not in shape and shape != tuple(want.shape):
                raise MXNetError(
                    f"sym_gen({key!r}) returned a symbol whose parameter {name!r} has shape "
                    f"{shape}, but the default bucket ({self._default_bucket_key!r}) has "
                    f"{tuple(want.shape)}; parameters are shared by all buckets, so their "
                    "shapes must not depend on the bucket key"
                )

    # ------------------------------------------------------------ computation
    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Bind the next batch's bucket ahead of its forward, then switch back."""
        require(self, "prepare", "binded", "params_initialized")
        original = self._curr_bucket_key
        self.switch_bucket(data_batch.bucket_key, data_batch.provide_data, data_batch.provide_label)
        self._curr_module.prepare(data_batch, sparse_row_id_fn=sparse_row_id_fn)
        self.switch_bucket(original, None, None)

    def forward(self, data_batch, is_train=None):
        require(self, "forward", "binded", "params_initialized")
        key = getattr(data_batch, "bucket_key", None)
        if key is None:
            key = self._default_bucket_key
        self.switch_bucket(
            key,
            getattr(data_batch, "provide_data", None),
            getattr(data_batch, "provide_label", None),
        )
        self._curr_module.forward(data_batch, is_train=is_train)

    def backward(self, out_grads=None):
        require(self, "backward", "binded", "params_initialized")
        self._curr_module.backward(out_grads=out_grads)

    def update(self):
        require(self, "update", "binded", "params_initialized", "optimizer_initialized")
        self._params_dirty = True
        self._curr_module.update()

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        require(self, "update_metric", "binded", "params_initialized")
        self._curr_module.update_metric(eval_metric, labels, pre_sliced)

    # ------------------------------------------------------------ files
    def save_checkpoint(self, prefix, epoch, remove_amp_cast=False):
        """``<prefix>-<epoch>.params``, ``<prefix>-<key>-symbol.json`` for every bucket and
        ``<prefix>.buckets`` (the integer keys), as MXNet. As MXNet, ``sym_gen`` is called
        without a fresh NameManager here."""

        if not self._buckets:
            raise MXNetError("Empty BucketingModule cannot be saved: bind it (or fit) first")
        keys = list(self._buckets)
        bad = [k for k in keys if not isinstance(k, (int, np.integer))]
        if bad:
            raise MXNetError(
                f"save_checkpoint needs integer bucket keys (the .buckets file "
                f"holds int32), got {bad[0]!r}"
            )
        self.save_params(f"{prefix}-{epoch:04d}.params")
        for key in keys:
            symbol = self._call_sym_gen(key, fresh_names=False)[0]
            symbol.save(f"{prefix}-{key}-symbol.json", remove_amp_cast=remove_amp_cast)
        nd.save(f"{prefix}.buckets", nd.array(keys, dtype=np.int32))

    @staticmethod
    def load(prefix, epoch, sym_gen=None, default_bucket_key=None, **kwargs):
        """A BucketingModule from :meth:`save_checkpoint`'s files (one Module per saved
        bucket, built from its saved JSON; names from ``sym_gen``); bind before use."""

        if sym_gen is None:
            raise MXNetError(
                "BucketingModule.load needs sym_gen (sym_gen is required for "
                "loading BucketingModule)"
            )
        if default_bucket_key is None:
            raise MXNetError("BucketingModule.load needs default_bucket_key")
        buckets = nd.load(f"{prefix}.buckets")
        keys = [int(k) for k in buckets[0].asnumpy().astype("int32")]
        mod = BucketingModule(sym_gen, default_bucket_key, **kwargs)
        built = {
            k: (sym.load(f"{prefix}-{k}-symbol.json"),) + tuple(mod._call_sym_gen(k)[1:])
            for k in keys
        }
        arg_params, aux_params = load_params(prefix, epoch)
        mod._fill_loaded(built, arg_params, aux_params)
        return mod

    @staticmethod
    def load_dict(
        sym_dict=None,
        sym_gen=None,
        default_bucket_key=None,
        arg_params=None,
        aux_params=None,
        **kwargs,
    ):
        """A BucketingModule from in-memory ``{bucket_key: Symbol}`` and parameters."""
        for what, value in (
            ("sym_dict", sym_dict),
            ("sym_gen", sym_gen),
            ("default_bucket_key", default_bucket_key),
            ("arg_params", arg_params),
            ("aux_params", aux_params),
        ):
            if value is None:
                raise MXNetError(f"BucketingModule.load_dict needs {what}")
        mod = BucketingModule(sym_gen, default_bucket_key, **kwargs)
        _, data_names, label_names = mod._call_sym_gen(default_bucket_key)
        built = {k: (s, data_names, label_names) for k, s in sym_dict.items()}
        mod._fill_loaded(built, arg_params, aux_params)
        return mod

    def _fill_loaded(self, built, arg_params, aux_params) -> None:
        """Unbound bucket Modules from ``{key: (symbol, data_names, label_names)}``."""
        for key, (symbol, data_names, label_names) in built.items():
            self._buckets[key] = self._new_module(symbol, data_names, label_names)
        if self._default_bucket_key not in self._buckets:
            raise MXNetError(
                f"the saved buckets {list(built)} do not include "
                f"default_bucket_key {self._default_bucket_key!r}"
            )
        self._curr_module = self._buckets[self._default_bucket_key]
        self._curr_bucket_key = self._default_bucket_key
        self._curr_module._arg_params = arg_params
        self._curr_module._aux_params = aux_params
        self._curr_module.params_initialized = True
        self.params_initialized = True
