"""The fused form of optimizers written the MXNet way (no MXNet namesake).

A registered ``mx.optimizer.Optimizer`` subclass that overrides ``create_state(index,
weight)`` and ``update(index, weight, grad, state)`` with NDArray operations
(``weight[:] -= lr * grad``, ``mx.nd.square``, ``state[:] = ...``) runs inside the compiled
train step: NDArrays wrap the traced arrays, and the user's ``update`` runs once per
parameter while ``jit`` traces the step.

* ``fused_init`` calls the user's ``create_state_multi_precision`` on the real weights (on
  the host, once, as MXNet does) and keeps the NDArrays' arrays as the state.
* ``fused_update`` runs ``update_multi_precision`` on a *twin*: a shallow copy of the
  optimizer whose ``_get_lr``/``learning_rate``/``lr`` give this step's traced rate (the rate
  before counting for the first parameter, as MXNet's per-index Updater reads it), whose
  ``num_update`` and ``_index_update_count[index]`` give the traced count and whose
  ``_update_count`` does nothing (``fused_hyper`` counted on the host). ``wd``, multipliers
  and every other attribute are trace-time constants: the signature covers them.
* Code that needs host values cannot run traced: ``asnumpy()``, ``asscalar()``, ``float()``
  of an array, a Python ``if`` on an array value, or host state changed per step (an
  attribute set or a container of the optimizer edited inside ``update``).
  :func:`probe` traces one update and reports why; such optimizers answer
  ``fused_supported() == False`` and train through the imperative Updater.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..ndarray import NDArray
from ._counts import UpdateCounts
from ._mults import first_name, index_of, positions
from ._settings import STEP_ATTRS, settings_key

_HOST_ERRORS = (
    jax.errors.ConcretizationTypeError,
    jax.errors.TracerArrayConversionError,
    jax.errors.TracerIntegerConversionError,
    jax.errors.TracerBoolConversionError,
)
# attributes the twin replaces or the bookkeeping owns (not user settings)
_OWN = STEP_ATTRS | {"lr_scheduler", "_update_count", "_fused_shapes", "_static_cache"}
# covered by the signature's per-name multipliers
_MULTS = {"lr_mult", "wd_mult", "idx2name", "param_dict", "sym_info"}


class HostStateError(RuntimeError):
    """The user's ``update`` changed host state, which a compiled step cannot repeat."""


def _wrap(x: Any) -> Any:
    return NDArray(x)


def _unwrap(state: Any, name: str) -> Any:
    def leaf(x):
        if isinstance(x, NDArray):
            return x._data
        if isinstance(x, (np.ndarray, jax.Array)):
            return jnp.asarray(x)
        raise NotImplementedError(
            f"the state of {name!r} holds a {type(x).__name__}; a compiled step needs "
            f"NDArray states (or None, tuples and lists of them)"
        )

    return jax.tree_util.tree_map(leaf, state, is_leaf=lambda x: isinstance(x, NDArray))


def _rewrap(state: Any) -> Any:
    return jax.tree_util.tree_map(_wrap, state)


def _twin(opt: Any, t: Any) -> Any:
    """A shallow copy of ``opt`` (containers copied one level) for tracing its update."""
    twin = object.__new__(type(opt))
    d = twin.__dict__
    for k, v in opt.__dict__.items():
        d[k] = copy.copy(v) if isinstance(v, (dict, list, set)) else v
    d["lr_scheduler"] = None
    d["num_update"] = t
    d["_counts"] = UpdateCounts.traced(t)
    d["_jit_fn"] = None
    return twin


def _check_host_state(opt: Any, twin: Any) -> None:
    """Raise :class:`HostStateError` when the traced update changed the optimizer."""
    orig = opt.__dict__
    for k, v in twin.__dict__.items():
        if k in _OWN or k in type(opt)._step_attrs:
            continue
        if k not in orig:
            raise HostStateError(f"update() sets the attribute {k!r} on the host")
        o = orig[k]
        if isinstance(o, dict):
            same = (
                isinstance(v, dict)
                and len(v) == len(o)
                and all(key in o and v[key] is o[key] for key in v)
            )
        elif isinstance(o, list):
            same = isinstance(v, list) and len(v) == len(o) and all(a is b for a, b in zip(v, o))
        elif isinstance(o, set):
            same = v == o
        else:
            same = v is o
        if not same:
            raise HostStateError(f"update() changes the optimizer's {k!r} on the host")


def fused_init(opt: Any, params: dict) -> dict:
    """The user's ``create_state_multi_precision`` per parameter, as JAX arrays."""
    state = {}
    for name, w in params.items():
        w = jnp.asarray(w)
        nd_state = opt.create_state_multi_precision(index_of(opt.idx2name, name), _wrap(w))
        state[name] = jax.tree_util.tree_map(
            lambda x, w=w: _place_like(x, w), _unwrap(nd_state, name)
        )
    return state


def _place_like(x: jax.Array, w: jax.Array) -> jax.Array:
    """Place a state leaf like its weight (committed or not), as the built-in rules' states
    are, so the first compiled step is not specialised to a different placement."""
    if getattr(w, "committed", False):
        return jax.device_put(x, w.sharding)
    return jnp.asarray(np.asarray(x))


def fused_update(opt: Any, params: dict, grads: dict, state: dict, hyper: dict) -> tuple:
    """Run the user's ``update_multi_precision`` on NDArray-wrapped (traced) values."""
    lr, t = hyper["lr"], hyper["t"]
    lr_pre = hyper.get("lr_pre", lr)
    active = [n for n in params if grads.get(n) is not None]
    pos = positions(opt._counts.names, active)
    first = first_name(opt.idx2name, sorted(active, key=pos.get))
    twin = _twin(opt, t)
    d = twin.__dict__
    new_p, new_s = dict(params), dict(state)
    for name in [first] + [n for n in active if n != first] if active else []:
        w = params[name]
        weight, grad = _wrap(w), _wrap(grads[name])
        st = _rewrap(state[name])
        d["lr"] = lr_pre if name == first else lr
        d["_update_count"] = lambda index, _d=d: _d.__setitem__("lr", lr)
        twin.update_multi_precision(index_of(opt.idx2name, name), weight, grad, st)
        new_w = weight._data
        if tuple(new_w.shape) != tuple(jnp.shape(w)):
            raise ValueError(
                f"{type(opt).__name__}.update changed the shape of {name!r} from "
                f"{tuple(jnp.shape(w))} to {tuple(new_w.shape)}"
            )
        new_p[name] = new_w.astype(jnp.result_type(w))
        leaves = jax.tree_util.tree_map(
            lambda n, o: n.astype(jnp.result_type(o)), _unwrap(st, name), state[name]
        )
        new_s[name] = leaves
    _check_host_state(opt, twin)
    return new_p, new_s


def probe(opt: Any, params: Any) -> str | None:
    """Trace one fused step of ``opt`` on abstract values: None if it works, else why not.

    ``params``: dict name -> array/ShapeDtypeStruct; default the ``fused_init`` shapes, else
    one float32 weight of shape (4,). Cached until a setting or the shapes change.
    """
    if params is None:
        shapes = opt.__dict__.get("_fused_shapes") or {
            "weight": jax.ShapeDtypeStruct((4,), jnp.float32)
        }
    else:
        shapes = {n: jax.ShapeDtypeStruct(jnp.shape(w), jnp.result_type(w))
                  for n, w in params.items()}  # fmt: skip
    key = (settings_key(opt), tuple((n, tuple(s.shape), str(s.dtype))
                                      for n, s in shapes.items()))  # fmt: skip
    cached = opt.__dict__.get("_custom_probe")
    if cached is not None and cached[0] == key:
        return cached[1]

    def run(p, hyper):
        init_twin = _twin(opt, hyper["t"])
        make = init_twin.create_state_multi_precision
        state = {n: _unwrap(make(index_of(opt.idx2name, n), _wrap(w)), n) for n, w in p.items()}
        return fused_update(opt, p, p, state, hyper)

    scalar = jax.ShapeDtypeStruct((), jnp.float32)
    hyper = {"lr": scalar, "lr_pre": scalar, "t": jax.ShapeDtypeStruct((), jnp.int32)}
    reason = None
    try:
        jax.eval_shape(run, shapes, hyper)
    except _HOST_ERRORS as e:
        reason = f"it needs host values: {type(e).__name__}: {str(e).splitlines()[0]}"
    except HostStateError as e:
        reason = str(e)
    except Exception as e:  # noqa: BLE001 - any failure to trace means: run it imperatively
        reason = f"tracing it raised {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    opt.__dict__["_custom_probe"] = (key, reason)
    return reason


def static_key(opt: Any) -> tuple:
    """Every setting a traced user ``update`` may read: the simple attribute values
    (numbers, strings, tuples of them), other objects by identity."""
    items = []
    skip = _OWN | _MULTS | type(opt)._step_attrs
    for k in sorted(opt.__dict__):
        if k not in skip:
            items.append((k, _freeze(opt.__dict__[k])))
    return (type(opt), tuple(items))


def _freeze(v: Any) -> Any:
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return ("nan",) if math.isnan(v) else v
    if isinstance(v, np.generic):
        return _freeze(v.item())
    if isinstance(v, (list, tuple)):
        return tuple(_freeze(x) for x in v)
    return ("id", id(v))
