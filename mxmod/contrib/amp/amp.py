"""``mx.contrib.amp.amp``: the AMP functions (MXNet keeps them in this submodule and
re-exports them from ``mx.contrib.amp``; ``from mxnet.contrib.amp import amp`` loads it)."""

from __future__ import annotations

from ...base import MXNetError
from ...module import BucketingModule, Module
from ...optimizer import Optimizer
from . import lists
from .convert import convert_model, convert_symbol
from .init import init, is_initialized
from .loss_scaler import SCALE_NAME, LossScaler, insert_loss_scale

__all__ = [
    "init",
    "init_trainer",
    "scale_loss",
    "unscale",
    "convert_model",
    "convert_symbol",
    "convert_hybrid_block",
    "convert_bucketing_module",
    "list_lp16_ops",
    "list_fp32_ops",
    "list_lp16_fp32_ops",
    "list_conditional_fp32_ops",
    "list_widest_type_cast",
    "list_loss_output_functions",
    "list_lp16_use_fp32_params",
    "LossScaler",
    "insert_loss_scale",
]


def list_lp16_ops(target_dtype):
    """Operators AMP runs in ``target_dtype`` (MXNet's FP16_FUNCS / BF16_FUNCS)."""
    return sorted(lists.table(target_dtype)["lp"])


def list_fp32_ops(target_dtype):
    """Operators AMP keeps in float32."""
    return sorted(lists.table(target_dtype)["fp32"])


def list_lp16_fp32_ops(target_dtype):
    """Operators that run in the type of their inputs."""
    return sorted(lists.table(target_dtype)["follow"])


def list_conditional_fp32_ops(target_dtype):
    """``(op, attribute, values)``: float32 when the attribute has one of the values."""
    lists.table(target_dtype)
    return [tuple(c) for c in lists.CONDITIONAL]


def list_widest_type_cast(target_dtype):
    """Operators that run in the widest type of their inputs."""
    return sorted(lists.table(target_dtype)["widest"])


def list_loss_output_functions(target_dtype):
    """Loss heads (whose ``grad_scale`` a loss scale multiplies in MXNet's NDArray API)."""
    lists.table(target_dtype)
    return list(lists.LOSS_OUTPUTS)


def list_lp16_use_fp32_params(target_dtype):
    """Per operator, the inputs kept in float32 when it runs in low precision (bfloat16
    only; None for float16, as MXNet)."""
    if lists._dtype_name(target_dtype) == "float16":
        return None
    return {k: list(v) for k, v in lists.BF16_FP32_PARAMS.items()}


def _gluon_only(fn_name, optimizer_or_trainer):
    if isinstance(optimizer_or_trainer, Optimizer):
        raise TypeError(
            f"amp.{fn_name}: AMP loss scaling for an Optimizer is not MXNet's API "
            "(MXNet: 'AMP is currently only compatible with Gluon Trainer'); with "
            "Module, call amp.init_trainer(module) on a module built from "
            "amp.insert_loss_scale(sym)"
        )
    raise TypeError(
        f"amp.{fn_name}: optimizer_or_trainer should be a Gluon Trainer or an "
        f"optimizer, instead is {type(optimizer_or_trainer)}; mxmod has no Gluon "
        "Trainer"
    )


def init_trainer(optimizer_or_trainer):
    """Dynamic loss scaling. MXNet takes a Gluon Trainer (an Optimizer raises TypeError, as
    MXNet's). mxmod also takes a ``Module`` whose symbol went through
    ``insert_loss_scale`` (bound with ``fixed_param_names=['amp_loss_scale']``): its ``fit``
    then runs every step with the loss scale in the compiled step (scaled backward,
    unscaled gradients, the update skipped on overflow, MXNet's scale rule) and returns the
    ``LossScaler``. A hand-written ``forward``/``backward``/``update`` loop cannot scale the
    loss: the module's ``update()`` then raises, naming ``fit``.
    """
    if isinstance(optimizer_or_trainer, Module):
        mod = optimizer_or_trainer
        if SCALE_NAME not in mod.symbol.list_arguments():
            raise ValueError(
                f"amp.init_trainer: the module's symbol has no {SCALE_NAME!r} "
                "argument; build it with amp.insert_loss_scale(sym)"
            )
        if SCALE_NAME not in (mod._fixed_param_names or []):
            raise ValueError(
                f"amp.init_trainer: bind the Module with fixed_param_names="
                f"[{SCALE_NAME!r}] so the loss scale is not trained"
            )
        mod._amp_scaler = LossScaler()
        mod.update = _update_refused  # this module's update(); fit's blocks never call it
        return mod._amp_scaler
    if not is_initialized():
        raise MXNetError(
            "amp.init_trainer: AMP not initialized, did you forget to call amp.init()?"
        )
    _gluon_only("init_trainer", optimizer_or_trainer)


def _update_refused():
    raise MXNetError(
        "Module.update(): amp.init_trainer(module) scales the loss inside Module.fit's "
        "compiled steps, which a hand-written forward/backward/update loop does not run; "
        "train with module.fit(...), or bind a module without amp.init_trainer (its "
        f"{SCALE_NAME!r} then stays 1: no loss scaling)"
    )


def scale_loss(loss, optimizer_or_trainer):
    """MXNet's Gluon-Trainer context manager; raises TypeError (see the module docstring)."""
    _gluon_only("scale_loss", optimizer_or_trainer)


def unscale(optimizer_or_trainer):
    """MXNet's Gluon-Trainer helper; raises TypeError (see the module docstring)."""
    _gluon_only("unscale", optimizer_or_trainer)


def convert_bucketing_module(
    bucketing_mod,
    target_dtype="float16",
    target_dtype_ops=None,
    fp32_ops=None,
    conditional_fp32_ops=None,
    excluded_sym_names=None,
    cast_optional_params=False,
):
    """A new BucketingModule whose buckets are ``convert_model`` of the given one's, as
    MXNet's: every bound bucket's symbol is converted with the current parameters, and new
    buckets come from the same ``sym_gen`` (unconverted, as MXNet). The given module's
    parameters are read, not changed.

    Raises:
        TypeError: ``bucketing_mod`` is not a BucketingModule.
        MXNetError: it has no bucket yet or its parameters are not initialised.
    """
    if not isinstance(bucketing_mod, BucketingModule):
        raise TypeError(
            f"amp.convert_bucketing_module needs a BucketingModule, got "
            f"{type(bucketing_mod).__name__}"
        )
    if not bucketing_mod._buckets:
        raise MXNetError("amp.convert_bucketing_module: the BucketingModule has no bucket: bind it")
    if not bucketing_mod.params_initialized:
        raise MXNetError(
            "amp.convert_bucketing_module: initialise the BucketingModule's parameters first "
            "(init_params or fit)"
        )
    arg_params, aux_params = (dict(p) for p in bucketing_mod._curr_module.get_params())
    sym_dict = {}
    for key, mod in bucketing_mod._buckets.items():
        sym_dict[key], arg_params, aux_params = convert_model(
            mod._symbol,
            arg_params,
            aux_params,
            target_dtype=target_dtype,
            target_dtype_ops=target_dtype_ops,
            fp32_ops=fp32_ops,
            conditional_fp32_ops=conditional_fp32_ops,
            excluded_sym_names=excluded_sym_names,
            cast_optional_params=cast_optional_params,
        )
    return BucketingModule.load_dict(
        sym_dict,
        sym_gen=bucketing_mod._sym_gen,
        arg_params=arg_params,
        aux_params=aux_params,
        default_bucket_key=bucketing_mod._default_bucket_key,
        logger=bucketing_mod.logger,
        context=bucketing_mod._context,
        work_load_list=bucketing_mod._work_load_list,
        fixed_param_names=bucketing_mod._fixed_param_names,
        state_names=bucketing_mod._state_names,
        group2ctxs=bucketing_mod._group2ctxs,
        compression_params=bucketing_mod._compression_params,
    )


def convert_hybrid_block(block, *args, **kwargs):
    """MXNet's Gluon HybridBlock conversion: mxmod has no Gluon.

    Raises:
        NotImplementedError: always; export the block's symbol and use ``convert_model``.
    """
    raise NotImplementedError(
        "amp.convert_hybrid_block: mxmod has no Gluon HybridBlock; convert the exported "
        "-symbol.json/.params with amp.convert_model(sym, arg_params, aux_params) instead"
    )
