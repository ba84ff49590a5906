"""Imperative autograd for NDArrays (``mx.autograd``): a tape of JAX pullbacks.

Inside ``record()`` an NDArray operator whose inputs depend on a marked variable
(``attach_grad``, ``mark_variables``) runs under ``jax.vjp``: each result keeps the
pullback and its inputs' entries. ``backward()`` walks that graph from the heads, newest
node first (a node is always newer than its inputs), and writes (``grad_req='write'``) or
adds (``'add'``) each variable's gradient into its buffer. Operators whose inputs depend
on no variable run as they do outside ``record``. ``record(train_mode=True)`` (the
default) also runs operators in training mode (Dropout drops, BatchNorm uses the batch
statistics), as MXNet.

This is what custom operators written for MXNet use inside ``forward``/``backward``
(FPN's ROI pooling, PACT/LSQ quantizers): record a few operators, then differentiate
them. Whole networks train through ``mx.mod.Module``, compiled.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import threading
from typing import Any, Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np

from ..base import MXNetError
from .ndarray import NDArray


class _State(threading.local):
    """Per thread, as MXNet's: whether operators are recorded, and run in training mode."""

    recording = False
    training = False
    pending: Optional[list] = None  # writes deferred to backward by the operator recording


_state = _State()
_ids = itertools.count()


def is_recording() -> bool:
    return _state.recording


def is_training() -> bool:
    return _state.training


def set_recording(flag: bool) -> bool:
    """Turn recording on or off; returns the previous state."""
    prev, _state.recording = is_recording(), bool(flag)
    return prev


def set_training(flag: bool) -> bool:
    """Turn training mode on or off; returns the previous state."""
    prev, _state.training = is_training(), bool(flag)
    return prev


@contextlib.contextmanager
def scope(recording: Optional[bool], training: Optional[bool]):
    """Set recording and/or training mode (None: unchanged) for the block."""
    old = (is_recording(), is_training())
    if recording is not None:
        set_recording(recording)
    if training is not None:
        set_training(training)
    try:
        yield
    finally:
        set_recording(old[0])
        set_training(old[1])


# ---------------------------------------------------------------- the graph
class Variable:
    """A marked array: gradients flowing to it land in ``array._grad``."""

    __slots__ = ("array", "id")

    def __init__(self, array: NDArray):
        self.array, self.id = array, next(_ids)


class Node:
    """One recorded operator call: its pullback, its inputs' entries (``(node, index)``
    or None for a constant) and its outputs' shapes and dtypes."""

    __slots__ = ("pullback", "inputs", "outs", "id", "freed", "on_backward")

    def __init__(self, pullback: Callable, inputs: list, outs: list, on_backward=()):
        self.pullback, self.inputs, self.outs = pullback, inputs, outs
        self.id, self.freed = next(_ids), False
        self.on_backward = list(on_backward)  # (array, value) written when backward runs it


def live(entry: Any) -> Any:
    """``entry`` (an array's ``_tape``) while its graph is held; None once a backward
    without ``retain_graph`` freed it (the array is then a constant, as in MXNet)."""
    if entry is None or (isinstance(entry[0], Node) and entry[0].freed):
        return None
    return entry


def mark(array: NDArray, grad: Optional[NDArray], grad_req: str = "write") -> None:
    """Make ``array`` a variable whose gradient goes to ``grad`` (``mark_variables``)."""
    if grad_req not in ("write", "add", "null"):
        raise ValueError(f"grad_req {grad_req!r} is invalid: use 'write', 'add' or 'null'")
    if not isinstance(array, NDArray):
        raise TypeError(f"only NDArrays can be marked, got {type(array).__name__}")
    if grad is not None and tuple(grad.shape) != tuple(array.shape):
        raise MXNetError(
            f"gradient buffer of shape {tuple(grad.shape)} for a variable of shape "
            f"{tuple(array.shape)}"
        )
    array._grad, array._grad_req = grad, grad_req
    array._tape = (Variable(array), 0)


def attach_grad(self: NDArray, grad_req: str = "write", stype: Any = None) -> None:
    """``NDArray.attach_grad``: a zero gradient buffer; the array becomes a variable."""
    if stype not in (None, "default"):
        raise NotImplementedError(f"attach_grad(stype={stype!r}): only dense gradients")
    grad = None if grad_req == "null" else NDArray(jnp.zeros(self.shape, self.dtype), self._ctx)
    mark(self, grad, grad_req)


def detach(self: NDArray) -> NDArray:
    """The same memory (a view, as MXNet's), cut from the recorded graph."""
    return NDArray._view(self, 0, tuple(self.shape))


def check_inplace(target: NDArray, value: Any = None) -> None:
    """Refuse an in-place write (``x[i] = v``, ``x += v``) that involves the graph while
    recording, as MXNet: there the target is an input and the output of the write, which
    a graph cannot hold. (A whole-array copy ``x[:] = v`` is recorded: ``record_write``.)"""
    if not _state.recording:
        return
    value_live = isinstance(value, NDArray) and live(value._tape) is not None
    if live(target._tape) is not None or value_live:
        raise MXNetError(
            "Inplace operations (+=, -=, x[:]=, etc) are not supported when recording with "
            "autograd: write the result to a new array (y = x + v) or leave record() first"
        )


# ---------------------------------------------------------------- recording
def _arrays_in(args: tuple, kwargs: dict) -> list:
    """The NDArrays among the arguments (and in lists/tuples of them)."""
    found = []
    given = (v for k, v in kwargs.items() if k != "out")
    for v in itertools.chain(args, given):
        if isinstance(v, NDArray):
            found.append(v)
        elif isinstance(v, (list, tuple)):
            found.extend(x for x in v if isinstance(x, NDArray))
    return found


def _with(value: Any, swap: dict) -> Any:
    if isinstance(value, NDArray):
        return swap.get(id(value), value)
    if isinstance(value, (list, tuple)) and any(isinstance(x, NDArray) for x in value):
        return type(value)(swap.get(id(x), x) if isinstance(x, NDArray) else x for x in value)
    return value


def _stand_in(like: NDArray, data: Any) -> NDArray:
    """An NDArray holding ``data`` (a tracer while ``jax.vjp`` traces) on ``like``'s
    context."""
    out = NDArray.__new__(NDArray)
    out._base, out._offset, out._vshape, out._cache = None, 0, (), (None, None)
    out._arr, out._ctx = data, like._ctx
    return out


def recorded(fn: Callable, what: Optional[str] = None) -> Callable:
    """``fn`` (an NDArray operator) recorded on the tape while ``record()`` is on and an
    input depends on a variable."""
    label = what or getattr(fn, "__name__", "operator")

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any):
        if not _state.recording:  # the common case: one attribute read
            return fn(*args, **kwargs)
        inputs = _arrays_in(args, kwargs)
        if not any(live(x._tape) is not None for x in inputs):
            return fn(*args, **kwargs)
        out = kwargs.pop("out", None)
        res = _record(fn, label, args, kwargs, inputs)
        return res if out is None else write_out(out, res)

    call._on_tape = True
    return call


def write_in_backward(targets: list, values: list) -> None:
    """From inside an operator being recorded: write each value into its target array
    when a backward goes through the operator (MXNet's BatchNorm moves its running
    statistics in its backward pass). Nothing happens for an operator not recorded."""
    if _state.pending is not None:
        _state.pending.extend(zip(targets, values))


class _NotForUs(Exception):
    """The operator answered NotImplemented (Python tries the other operand)."""


def _record(fn, label, args, kwargs, inputs):
    unique = list({id(x): x for x in inputs}.values())
    shape: dict = {}

    def pure(*datas):
        swap = {id(x): _stand_in(x, d) for x, d in zip(unique, datas)}
        outer, _state.pending = _state.pending, []
        try:
            swapped = {k: _with(v, swap) for k, v in kwargs.items()}
            res = fn(*[_with(a, swap) for a in args], **swapped)
        finally:
            deferred, _state.pending = _state.pending, outer
        if res is NotImplemented:
            raise _NotForUs
        original = {id(swap[id(x)]): x for x in unique}
        shape["deferred"] = [original[id(t)] for t, _ in deferred if id(t) in original]
        deferred_values = [v for t, v in deferred if id(t) in original]
        outs = res if isinstance(res, (list, tuple)) else [res]
        if not all(isinstance(o, NDArray) for o in outs):
            raise MXNetError(f"{label} returned {type(res).__name__}, not NDArrays")
        shape["kind"] = type(res) if isinstance(res, (list, tuple)) else None
        shape["ctx"] = [o._ctx for o in outs]
        return [o._data for o in outs], deferred_values

    try:
        out_datas, pullback, deferred_values = jax.vjp(
            pure, *[x._data for x in unique], has_aux=True
        )
    except _NotForUs:
        return NotImplemented
    except jax.errors.JAXTypeError as err:
        raise NotImplementedError(
            f"mx.autograd: {label} cannot be recorded in mxmod (it reads its input's "
            f"values on the host: {type(err).__name__}); compute it outside record(), or "
            "differentiate the network with mx.mod.Module"
        ) from err
    node = Node(
        pullback,
        [live(x._tape) for x in unique],
        [(d.shape, d.dtype) for d in out_datas],
        zip(shape["deferred"], deferred_values),
    )
    outs = []
    for i, (d, ctx) in enumerate(zip(out_datas, shape["ctx"])):
        o = NDArray(d, ctx)
        o._tape = (node, i)
        outs.append(o)
    return outs if shape["kind"] is list else tuple(outs) if shape["kind"] else outs[0]


def write_out(out: Any, res: Any) -> Any:
    """``out=``: the recorded results written into ``out`` (an array or a list), which
    take their place in the graph."""
    targets = list(out) if isinstance(out, (list, tuple)) else [out]
    results = list(res) if isinstance(res, (list, tuple)) else [res]
    for t, r in zip(targets, results):
        check_inplace(t)
        t._set_data(r._data.astype(t._data.dtype))
        t._tape = r._tape
    return out


def record_write(target: NDArray, value: Any, write: Callable, whole: bool) -> bool:
    """Inside ``record()``: the in-place write ``write(target, value)``. A copy of a
    recorded ``value`` over the whole of an array outside the graph (``buf[:] = f(x)``) is
    recorded, the array then holding the result; a partial write that involves the graph
    raises (``check_inplace``), as MXNet. False when there is nothing to record."""
    if not _state.recording:
        return False
    value_live = isinstance(value, NDArray) and live(value._tape) is not None
    if not whole or not value_live or live(target._tape) is not None or target._base is not None:
        check_inplace(target, value)
        return False

    def written(t, v):
        fresh = _stand_in(t, t._data)
        write(fresh, v)
        return fresh

    res = _record(written, "a whole-array copy", (target, value), {}, [target, value])
    target._set_data(res._data)
    target._tape = res._tape
    return True


# ---------------------------------------------------------------- backward
def _cotangent_zero(shape, dtype):
    if not jnp.issubdtype(dtype, jnp.inexact):
        return np.zeros(shape, jax.dtypes.float0)
    return jnp.zeros(shape, dtype)


def gradients(heads: list, head_grads: Optional[list], retain_graph: bool = True) -> dict:
    """``{Variable: gradient}`` of the heads (weighted by ``head_grads``, ones when None).
    Without ``retain_graph`` the nodes it went through are freed, as MXNet frees the graph:
    a second backward through them raises, and their results become constants."""
    heads = [h for h in heads]
    if head_grads is None:
        head_grads = [None] * len(heads)
    if len(head_grads) != len(heads):
        raise MXNetError(f"backward got {len(head_grads)} head gradients for {len(heads)} heads")
    cts: dict = {}  # Node or Variable -> {index: cotangent}
    nodes: dict = {}

    def add(entry, ct):
        owner, i = entry
        slot = cts.setdefault(owner, {})
        slot[i] = ct if i not in slot else slot[i] + ct

    for h, g in zip(heads, head_grads):
        if h._tape is not None and live(h._tape) is None:
            raise MXNetError(
                "this head's graph was freed by an earlier backward; record it again, or "
                "pass retain_graph=True to the first backward to differentiate it twice"
            )
        if h._tape is None:
            raise MXNetError(
                "cannot differentiate a head that does not depend on a marked variable "
                "(attach_grad() the inputs, then compute the head inside autograd.record())"
            )
        ct = jnp.ones(h.shape, h.dtype) if g is None else jnp.asarray(_data_of(g), h.dtype)
        add(h._tape, ct)
    # every node reachable from the heads, newest first
    stack = [h._tape[0] for h in heads]
    while stack:
        n = stack.pop()
        if isinstance(n, Node) and n.id not in nodes and not n.freed:
            nodes[n.id] = n
            stack.extend(e[0] for e in n.inputs if live(e) is not None)
    for nid in sorted(nodes, reverse=True):
        n = nodes[nid]
        got = cts.pop(n, None)
        if got is None:
            continue
        outs = [got.get(i, _cotangent_zero(s, d)) for i, (s, d) in enumerate(n.outs)]
        for target, value in n.on_backward:
            target._set_data(value)
        for entry, ct in zip(n.inputs, n.pullback(outs)):
            if live(entry) is not None and getattr(ct, "dtype", None) != jax.dtypes.float0:
                add(entry, ct)
    if not retain_graph:
        for n in nodes.values():
            n.freed, n.pullback = True, None
    return {v: slot[0] for v, slot in cts.items() if isinstance(v, Variable)}


def _data_of(x: Any):
    return x._data if isinstance(x, NDArray) else x


def backward(heads: Any, head_grads: Any = None, retain_graph: bool = False) -> None:
    """Gradients of ``heads`` into their variables' buffers (``mx.autograd.backward``)."""
    heads = [heads] if isinstance(heads, NDArray) else list(heads)
    if head_grads is not None and not isinstance(head_grads, (list, tuple)):
        head_grads = [head_grads]
    for var, g in gradients(heads, head_grads, retain_graph).items():
        arr = var.array
        if arr._grad is None or arr._grad_req == "null":
            continue
        g = g.astype(arr._grad.dtype)
        arr._grad._set_data(g if arr._grad_req == "write" else arr._grad._data + g)
        arr._fresh_grad = True  # MXNet's flag: a backward wrote this gradient


def grad(
    heads: Any, variables: Any, head_grads: Any = None, retain_graph: Any = None,
    create_graph: bool = False, train_mode: bool = True,
) -> list:  # fmt: skip
    """Gradients of ``heads`` w.r.t. ``variables``, returned (buffers left as they are)."""
    if create_graph:
        raise NotImplementedError("mx.autograd.grad(create_graph=True): higher-order gradients")
    heads = [heads] if isinstance(heads, NDArray) else list(heads)
    variables = [variables] if isinstance(variables, NDArray) else list(variables)
    if head_grads is not None and not isinstance(head_grads, (list, tuple)):
        head_grads = [head_grads]
    for v in variables:
        if v._tape is None or not isinstance(v._tape[0], Variable):
            raise MXNetError("grad(): every variable must be marked (attach_grad) first")
    retain = create_graph if retain_graph is None else retain_graph
    found = gradients(heads, head_grads, retain)
    by_array = {id(v.array): g for v, g in found.items()}
    out = []  # a list, as MXNet's, even for one variable
    for i, v in enumerate(variables):
        g = by_array.get(id(v))
        if g is None:
            raise MXNetError(
                f"grad(): variable {i} (shape {tuple(v.shape)}) is unreachable from the heads: "
                "they were not computed from it inside autograd.record()"
            )
        out.append(NDArray(g, v._ctx))
    return out


def grad_property(self: NDArray) -> Optional[NDArray]:
    """``NDArray.grad``: the gradient buffer (None before ``attach_grad``)."""
    return self._grad


def ndarray_backward(
    self: NDArray, out_grad: Any = None, retain_graph: bool = False, train_mode: bool = True
) -> None:
    """``NDArray.backward``: gradients of this array into its variables' buffers."""
    with scope(None, train_mode):
        backward([self], None if out_grad is None else [out_grad], retain_graph)


# functions of the mx.nd namespaces with nothing to differentiate: creation, random
# draws, files, optimizer updates (in place), control flow (its bodies record themselves)
_NOT_RECORDED = {
    "array", "zeros", "ones", "full", "empty", "arange", "linspace", "eye", "from_jax",
    "from_numpy", "from_dlpack", "to_dlpack_for_read", "to_dlpack_for_write", "save", "load",
    "load_frombuffer", "waitall", "cast_storage", "cond", "foreach", "while_loop",
    "nd_function", "named", "prefixed_module", "contrib_names", "linalg_names",
    "image_names", "check_boolean_mask_axis", "rand_zipfian", "calibrate_entropy",
}  # fmt: skip


def record_namespace(module: Any) -> None:
    """Put the module's NDArray functions not yet on the tape on it (``mx.nd.maximum``,
    ``mx.nd.contrib.boolean_mask``...)."""
    for name, fn in list(vars(module).items()):
        if (
            name.startswith("_")
            or name in _NOT_RECORDED
            or not callable(fn)
            or isinstance(fn, type)
            or getattr(fn, "_on_tape", False)
            or getattr(fn, "__module__", "").split(".")[:2] != ["mxmod", "ndarray"]
            or name.startswith(("random_", "sample_"))
            or name.endswith("_update")
        ):
            continue
        setattr(
            module,
            name,
            recorded(fn, f"{module.__name__.replace('mxmod.ndarray', 'mx.nd')}.{name}"),
        )


def install() -> None:
    """NDArray's autograd surface, and its own operators (indexing, reshape, casts...)
    recorded like the ``mx.nd`` functions."""
    NDArray.attach_grad = attach_grad
    NDArray.backward = ndarray_backward
    NDArray.grad = property(grad_property)
    NDArray.detach = detach
    for name in ("__getitem__", "reshape", "astype", "copy", "as_in_context"):
        setattr(NDArray, name, recorded(getattr(NDArray, name), f"NDArray.{name}"))
    NDArray.T = property(recorded(NDArray.T.fget, "NDArray.T"))
