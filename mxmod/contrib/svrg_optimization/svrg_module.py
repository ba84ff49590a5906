"""``SVRGModule``: MXNet's stochastic variance-reduced gradient Module."""

from __future__ import annotations

import logging

import jax
import jax.numpy as jnp

from ... import optimizer as opt
from ...base import MXNetError
from ...kvstore import _create_kvstore
from ...module import Module
from ...module.stages import require
from ...ndarray import NDArray, zeros
from .svrg_optimizer import _SVRGOptimizer


@jax.jit
def _svrg_rule(grads: dict, special: dict, full: dict) -> dict:
    """``g - g_special + g_full`` for every parameter (MXNet's SVRG gradient)."""
    return {n: g - special[n] + full[n] for n, g in grads.items()}


@jax.jit
def _accumulate(acc: dict, grads: dict) -> dict:
    return {n: acc[n] + grads[n] for n in acc}


def _summed_grads(group) -> dict:
    """The group's gradients of its trained parameters, summed over devices."""
    group.flush()
    grads = group._current_grads()
    if group._grads_stacked:
        return {n: g.sum(0) for n, g in grads.items()}
    return dict(grads)


def _replace_grads(group, new: dict) -> None:
    """Make ``new`` (summed over devices) the gradients the next update applies."""
    if group._grads_stacked:
        n_dev = group._grads[next(iter(new))].shape[0]
        new = {n: jnp.broadcast_to(g / n_dev, (n_dev,) + g.shape) for n, g in new.items()}
    group._grads = {**group._grads, **new}


class SVRGModule(Module):
    """MXNet's ``mx.contrib.svrg_optimization.svrg_module.SVRGModule`` on JAX.

    A :class:`Module` that trains with SVRG: every ``update_freq`` epochs it takes a
    snapshot of the weights into an auxiliary Module and the mean gradient over all the
    training data at that snapshot (``update_full_grads``); each batch then applies
    ``g(w) - g(w_snapshot) + full_grad`` with the optimizer given to ``fit`` (wrapped in
    :class:`_SVRGOptimizer`). Both modules run their compiled forward-backward; the
    correction is one small jitted function.

    Differences from MXNet 1.9.1: ``update_full_grads`` starts each pass from zero
    (MXNet 1.9.1 added the previous pass's mean to the new sum, so every pass after the
    first was off by ``old_mean / num_batches``); the full gradients are exact sums over
    devices computed inside the step, not pushed through the kvstore under
    ``<name>_full`` keys. ``fit`` is :meth:`BaseModule.fit` with SVRG's epoch start
    (:meth:`_begin_fit_epoch`), so it logs the epoch's whole training metric as
    ``Module.fit`` does (MXNet's SVRG loop logged the local one, which differs after a
    callback such as ``Speedometer(auto_reset=True)`` resets it) and takes
    ``steps_per_dispatch`` (blocks run single steps: SVRG rewrites each batch's
    gradients).

    Args:
        symbol, data_names, label_names, logger, context, work_load_list,
        fixed_param_names, state_names, group2ctxs, compression_params: as Module.
        update_freq: recompute the full gradient every ``update_freq`` epochs (a
            positive int).
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
        update_freq=None,
    ):
        module_args = dict(
            data_names=data_names,
            label_names=label_names,
            logger=logger,
            context=context,
            work_load_list=work_load_list,
            fixed_param_names=fixed_param_names,
            state_names=state_names,
            group2ctxs=group2ctxs,
            compression_params=compression_params,
        )
        super().__init__(symbol, **module_args)
        if not isinstance(update_freq, int) or isinstance(update_freq, bool):
            raise TypeError(
                "update_freq in SVRGModule must be an integer to represent the "
                f"frequency for calculating full gradients, got {update_freq!r}"
            )
        if update_freq <= 0:
            raise ValueError(
                "update_freq in SVRGModule must be a positive integer to represent "
                f"the frequency for calculating full gradients, got {update_freq}"
            )
        self.update_freq = update_freq
        # the snapshot module: the same network on the same devices
        self._mod_aux = Module(symbol, **{**module_args, "context": self._context})
        self._full_grads = None
        self._ctx_len = len(self._context)

    def _reset_bind(self):
        super()._reset_bind()
        self._mod_aux._reset_bind()

    def reshape(self, data_shapes, label_shapes=None):
        super().reshape(data_shapes, label_shapes=label_shapes)
        self._mod_aux.reshape(data_shapes, label_shapes=label_shapes)

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
        """Bind this module and, for training, the snapshot module with the same shapes."""
        args = (data_shapes, label_shapes, for_training, inputs_need_grad, force_rebind)
        super().bind(*args, shared_module, grad_req)
        if for_training:
            self._mod_aux.bind(*args, shared_module, grad_req)

    def init_optimizer(
        self,
        kvstore="local",
        optimizer="sgd",
        optimizer_params=(("learning_rate", 0.01),),
        force_init=False,
    ):
        """Install ``_SVRGOptimizer`` wrapping ``optimizer`` (a name or an Optimizer)."""
        require(self, "init_optimizer", "binded", "params_initialized")
        group = self._exec_group
        self._full_grads = {
            n: jnp.zeros(group.state.params[n].shape, group.state.params[n].dtype)
            for n in group._diff_params
        }
        svrg = self._create_optimizer(
            _SVRGOptimizer.__name__,
            default_opt=optimizer,
            kvstore=kvstore,
            optimizer_params=optimizer_params,
        )
        super().init_optimizer(
            kvstore=kvstore,
            optimizer=svrg,
            optimizer_params=optimizer_params,
            force_init=force_init,
        )
        if self._kvstore:  # MXNet's keys for exchanging full gradients between workers
            for name in group.param_names:
                self._kvstore.init(name + "_full", zeros(self._arg_params[name].shape))

    @property
    def _param_dict(self):
        """MXNet's per-device full gradients: device ``k`` holds its share (``1/num
        devices``) of the mean gradient summed over devices (None before init_optimizer)."""

        if self._full_grads is None:
            return None
        n = self._ctx_len
        return [
            {
                name: NDArray(jax.device_put(g / n, c.jax_device), c)
                for name, g in self._full_grads.items()
            }
            for c in self._context
        ]

    def _accumulate_kvstore(self, key, value):
        """MXNet's exchange of ``key``'s full gradient: push the per-device arrays
        ``value`` under ``key + '_full'``, pull the sum back into them, and make that
        sum the full gradient of ``key``."""
        if not self._kvstore:
            raise MXNetError(
                "_accumulate_kvstore needs a kvstore: init_optimizer(kvstore=...) with "
                "several devices or a KVStore object"
            )
        self._kvstore.push(key + "_full", value)
        self._kvstore.pull(key + "_full", out=value)
        self._full_grads = {**self._full_grads, key: value[0]._data}

    def _create_optimizer(self, optimizer, default_opt, kvstore, optimizer_params):
        """The ``_SVRGOptimizer`` with Module's rescale_grad and index map, plus one
        ``<name>_full`` key per parameter (as MXNet)."""

        batch_size = self._exec_group.batch_size
        kv, update_on_kvstore = _create_kvstore(kvstore, self._ctx_len, self._arg_params)
        if kv and "dist" in kv.type and "_sync" in kv.type:
            batch_size *= kv.num_workers
        names = self._exec_group.param_names
        if update_on_kvstore:
            idx2name = dict(enumerate(names))
        else:
            idx2name = {
                i * self._ctx_len + k: n for k in range(self._ctx_len) for i, n in enumerate(names)
            }
        for name in self._arg_params:
            idx2name[max(idx2name) + 1 if idx2name else 0] = name + "_full"
        params = dict(optimizer_params)
        params.setdefault("rescale_grad", 1.0 / batch_size)
        params["default_optimizer"] = default_opt
        params["param_idx2name"] = idx2name
        return opt.create(optimizer, **params)

    def forward(self, data_batch, is_train=None):
        """Forward on this module and, when training, on the snapshot module (``is_train``
        None means the module's ``for_training``, as for ``Module.forward``)."""
        super().forward(data_batch, is_train)
        if is_train is None:
            is_train = self.for_training
        if is_train and self._mod_aux.binded:
            self._mod_aux.forward(data_batch, is_train)

    def backward(self, out_grads=None):
        super().backward(out_grads)
        if self._mod_aux.binded:
            self._mod_aux.backward(out_grads)

    def update(self):
        """Replace this batch's gradients by the SVRG ones, then apply the optimizer."""
        require(self, "update", "binded", "params_initialized", "optimizer_initialized")
        self._update_svrg_gradients()
        super().update()

    def _update_svrg_gradients(self) -> None:
        if not self._mod_aux.binded:
            raise MXNetError(
                "SVRGModule.update() needs the snapshot module: bind with for_training=True"
            )
        group = self._exec_group
        grads = _summed_grads(group)
        special = _summed_grads(self._mod_aux._exec_group)
        _replace_grads(group, self._svrg_grads_update_rule(grads, special, self._full_grads))

    @staticmethod
    def _svrg_grads_update_rule(
        g_curr_batch_curr_weight, g_curr_batch_special_weight, g_special_weight_all_batch
    ):
        """``g_curr - g_special + g_full`` (dicts name -> array)."""
        return _svrg_rule(
            g_curr_batch_curr_weight, g_curr_batch_special_weight, g_special_weight_all_batch
        )

    def update_full_grads(self, train_data):
        """Snapshot the weights into the auxiliary module and take the mean over
        ``train_data``'s batches of their summed gradients at that snapshot (the last
        batch's ``pad`` counts as a fraction of a batch, as MXNet)."""
        require(self, "update_full_grads", "binded", "params_initialized", "optimizer_initialized")
        arg, aux = self.get_params()
        self._mod_aux.set_params(arg_params=arg, aux_params=aux)
        train_data.reset()
        acc = {n: jnp.zeros_like(g) for n, g in self._full_grads.items()}
        nbatch = padding = 0
        for batch in train_data:
            self._mod_aux.forward(batch, is_train=True)
            self._mod_aux.backward()
            acc = _accumulate(acc, _summed_grads(self._mod_aux._exec_group))
            nbatch += 1
            padding = batch.pad or 0
        if nbatch == 0:
            raise MXNetError("update_full_grads: train_data yields no batches")
        batch_size = getattr(train_data, "batch_size", None) or batch.data[0].shape[0]
        true_num_batch = nbatch - padding / batch_size
        self._full_grads = jax.tree_util.tree_map(lambda g: g / true_num_batch, acc)

    def prepare(self, data_batch, sparse_row_id_fn=None):
        super().prepare(data_batch, sparse_row_id_fn=sparse_row_id_fn)
        self._mod_aux.prepare(data_batch, sparse_row_id_fn=sparse_row_id_fn)

    def _begin_fit_epoch(self, epoch, train_data):
        """MXNet's SVRG ``fit``: the full gradient at every epoch divisible by
        ``update_freq``, and the data rewound at the start of each epoch (not its end)."""
        if epoch % self.update_freq == 0:
            self.update_full_grads(train_data)
        train_data.reset()

    def _end_fit_epoch(self, epoch, train_data):
        """Nothing: :meth:`_begin_fit_epoch` rewinds the data."""
