"""``amp.init``: wrap the ``mx.sym`` constructors so new networks get AMP casts.

As MXNet's ``amp.init``: after it, building a low-precision op (``FullyConnected``...)
casts its non-aux inputs with ``amp_cast`` to the target dtype, a float32 op (softmax,
norms, losses) casts them to float32, a conditional float32 op does so when its attribute
matches, and a widest-type op (``elemwise_add``, ``Concat``...) gets one ``amp_multicast``
over its symbol inputs. The casts are named automatically (``amp_cast0``...). It runs once
per process; later calls do nothing, as MXNet's. Imperative ``mx.nd`` calls are not
wrapped: mxmod runs NDArray operators in the dtype of their inputs, so cast NDArrays
explicitly (``x.astype('float16')``).
"""

from __future__ import annotations

import functools
import logging

from ... import symbol as _sym_mod
from ...symbol.symbol import Symbol
from . import lists

_STATE = {"dtype": None}


def is_initialized() -> bool:
    return _STATE["dtype"] is not None


def _cast(entry, dtype):
    return _sym_mod.amp_cast(Symbol([entry]), dtype=dtype)._outputs[0]


def _wrap_inputs(f, dtype, cond=None):
    """A constructor whose result's non-aux inputs are cast to ``dtype``."""

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        if cond is not None and str(kwargs.get(cond[0])) not in cond[1]:
            return f(*args, **kwargs)
        sym = f(*args, **kwargs)
        node = sym._outputs[0][0]
        n_data = node.n_data_inputs()
        node.inputs = [_cast(e, dtype) if k < n_data else e for k, e in enumerate(node.inputs)]
        return sym

    return wrapped


def _wrap_widest(f):
    """A constructor whose Symbol arguments first go through one ``amp_multicast``."""

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        slots = [("a", i) for i, v in enumerate(args) if isinstance(v, Symbol)]
        slots += [("k", k) for k, v in kwargs.items() if isinstance(v, Symbol)]
        if not slots:
            return f(*args, **kwargs)
        args = list(args)
        syms = [args[i] if kind == "a" else kwargs[i] for kind, i in slots]
        cast = _sym_mod.amp_multicast(*syms, num_outputs=len(syms))
        for j, (kind, i) in enumerate(slots):
            if kind == "a":
                args[i] = cast[j]
            else:
                kwargs[i] = cast[j]
        return f(*args, **kwargs)

    return wrapped


def _loss_warning(f):
    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        logging.warning(
            "%s does not support dynamic loss scaling in symbolic and hybridized execution.",
            f.__name__,
        )
        return f(*args, **kwargs)

    return wrapped


def init(
    target_dtype="float16", target_precision_ops=None, conditional_fp32_ops=None, fp32_ops=None
):
    """Enable AMP for symbols built from now on (MXNet's ``amp.init``).

    Args:
      target_dtype: 'float16' or 'bfloat16'.
      target_precision_ops, conditional_fp32_ops, fp32_ops: replace the default lists.
    """
    if is_initialized():
        return
    name = lists._dtype_name(target_dtype)
    table = lists.table(name)
    logging.info("Using AMP")
    wrap = {}
    for op in target_precision_ops if target_precision_ops is not None else table["lp"]:
        wrap[op] = lambda f: _wrap_inputs(f, name)
    for op in fp32_ops if fp32_ops is not None else table["fp32"]:
        wrap[op] = lambda f: _wrap_inputs(f, "float32")
    for op, attr, values in (
        conditional_fp32_ops if conditional_fp32_ops is not None else lists.CONDITIONAL
    ):
        wrap[op] = (lambda a, v: lambda f: _wrap_inputs(f, "float32", (a, [str(x) for x in v])))(
            attr, values
        )
    for op in table["widest"]:
        wrap.setdefault(op, _wrap_widest)
    for op, how in wrap.items():
        f = getattr(_sym_mod, op, None)
        if f is None:
            raise ValueError(f"amp.init: {op!r} is not an operator mxmod implements")
        setattr(_sym_mod, op, how(f))
    for op in lists.LOSS_OUTPUTS:
        setattr(_sym_mod, op, _loss_warning(getattr(_sym_mod, op)))
    _STATE["dtype"] = name
