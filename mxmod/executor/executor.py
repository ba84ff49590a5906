"""``Executor``: a bound symbol with its argument, gradient and aux arrays (MXNet's
``simple_bind``/``bind`` result). Forward and forward+backward are each one jitted
function, cached per symbol; jit's own cache keys them by shapes, dtypes and is_train.
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from typing import Any, Optional

import jax
import jax.numpy as jnp
import numpy as np

from .. import xla_options
from .. import random as mxrandom
from ..base import MXNetError
from ..ndarray import NDArray
from ..symbol.cse import eliminate_common_expr
from ..symbol.cse import enabled as cse_enabled
from ..symbol.graph import copy_graph
from ..symbol.symbol import Symbol
from ..ndarray import sparse
from ..ndarray.sparse import BaseSparseNDArray, CSRNDArray, RowSparseNDArray
from ..symbol.stype import infer_stypes
from ..ndarray.sparse.parts import RowParts
from .arrays import on_ctx, reshaped_arrays, set_argument, to_jax
from .rows import only_dot_lhs
from .sparse_io import program_value, store_sparse_grad
from .head_grads import (
    check_trailing_head_grads,
    missing_head_grads_error,
    outputs_needing_head_grads,
)
from .lower import GraphFn
from .memory import allocated_bytes, allocated_line
from .monitor_taps import backward_taps, in_run_order, with_hidden_outputs
from .programs import vjp_step
from .layout import channel_last_enabled
from .step import zero_key
from ..program_tiers import compile_mode


class Compiled:
    """The jitted functions of one symbol, shared by all its executors, and the
    Module programs bound to it (``programs``, filled by ``programs_for``)."""

    def __init__(self, sym, structure=None):
        self.graph = GraphFn(sym)
        self.programs: dict = {}
        # what the programs are built from (``compiled_for``'s key), None for user code
        self.structure = structure
        g = self.graph

        def forward(args, aux, key, is_train):
            return g(args, aux, key, is_train)

        def forward_backward(
            diff, const, aux, key, head_grads, is_train, row_sparse=(), index_args=None
        ):
            return vjp_step(
                g,
                {**const, **diff},
                aux,
                key,
                list(diff),
                head_grads,
                is_train,
                g.aux_reached(list(diff)),
                row_sparse=row_sparse,
                index_args=index_args,
            )

        if g.dynamic_nodes:  # output shapes depend on values (boolean_mask): op by op
            self.forward, self.forward_backward = forward, forward_backward
        else:
            self.forward = xla_options.jit(forward, static_argnames=("is_train",))
            self.forward_backward = xla_options.jit(
                forward_backward, static_argnames=("is_train", "row_sparse")
            )


_BY_STRUCTURE: OrderedDict = OrderedDict()  # canonical JSON -> Compiled, least recent first
MAX_GRAPHS = 256


def forward_internals(symbol, args: dict, aux: dict, key, is_train: bool) -> list:
    """``[(name, NDArray)]`` of every operator output of ``symbol`` for these inputs, in
    graph order (one extra forward of its internals): what MXNet's monitor sees."""
    internals = with_hidden_outputs(symbol).get_internals()
    forward = xla_options.jit(compiled_for(internals).graph, static_argnames="is_train")
    outs, _ = forward(args, aux, key, is_train=is_train)
    names = internals.list_outputs()
    return [(n, NDArray(o)) for n, o in zip(names, outs) if n not in args and n not in aux]


def compiled_for(sym) -> Compiled:
    """The compiled functions of ``sym``, kept on the symbol (graphs are immutable) and
    shared by every symbol with the same structure (its JSON: nodes, attributes, heads), so
    a rebuilt but identical graph (a bucket's ``sym_gen``, a second ``Module``) compiles
    nothing new. The ``MAX_GRAPHS`` most recently bound structures stay cached."""
    if sym._compiled is None:
        # the graph, and the settings its programs are built under
        # (tojson() drops amp_cast nodes by default: two graphs would share a key)
        key = (sym.tojson(remove_amp_cast=False), channel_last_enabled(), compile_mode())
        storable = '"op": "Custom"' not in key[0]  # a CustomOp runs the user's Python
        compiled = _BY_STRUCTURE.pop(key, None) or Compiled(sym, key if storable else None)
        _BY_STRUCTURE[key] = compiled
        if len(_BY_STRUCTURE) > MAX_GRAPHS:
            _BY_STRUCTURE.popitem(last=False)
        sym._compiled = compiled
    return sym._compiled


def forget_compiled() -> None:
    """Drop the structural cache of compiled graphs (symbols already bound keep theirs):
    symbols bound afterwards compile afresh."""
    _BY_STRUCTURE.clear()


class Executor:
    """A bound symbol, as ``mx.executor.Executor``.

    As in MXNet, ``outputs``/``output_dict`` exist from bind on (MXNet's hold uninitialised
    memory until the first forward, mxmod's zeros) and each forward writes into them.

    As MXNet's CPU build, moving statistics (BatchNorm) move in ``backward`` and only
    for the BatchNorms the backward pass reaches; a training ``forward`` alone leaves them.
    """

    def __init__(
        self,
        sym,
        ctx,
        arg_names,
        arg_arrays,
        grad_arrays,
        grad_req,
        aux_names,
        aux_arrays,
        out_specs=None,
    ):
        self._symbol = sym
        self._ctx = ctx
        self._compiled = compiled_for(sym)
        self._arg_names = list(arg_names)
        self._aux_names = list(aux_names)
        self.arg_arrays = list(arg_arrays)
        self.grad_arrays = list(grad_arrays)
        self.aux_arrays = list(aux_arrays)
        self._grad_req = dict(grad_req)
        self._last: Optional[tuple] = None
        self._monitor = None
        self.outputs: list = self._allocate_outputs(out_specs)
        self._shares_outputs_of: Optional[Executor] = None  # set by reshape()
        self._fold_common = cse_enabled()  # read at bind, as MXNet

    # ----------------------------------------------------------- dict views
    @property
    def arg_dict(self) -> dict:
        return dict(zip(self._arg_names, self.arg_arrays))

    @property
    def grad_dict(self) -> dict:
        # as MXNet: every argument, None for those without a gradient (grad_req 'null')
        return dict(zip(self._arg_names, self.grad_arrays))

    @property
    def aux_dict(self) -> dict:
        return dict(zip(self._aux_names, self.aux_arrays))

    @property
    def output_dict(self) -> dict:
        return dict(zip(self._symbol.list_outputs(), self.outputs))

    @property
    def symbol(self):
        return self._symbol

    def _allocate_outputs(self, out_specs) -> list:
        """Zero arrays of the output shapes and dtypes, as MXNet allocates its outputs at
        bind; ``forward`` writes into them in place, so a reference taken before it sees the
        results. ``out_specs`` lists ``(shape, dtype)`` per output, or is None (or holds a
        None) when shape inference could not decide: then the graph is traced abstractly."""
        graph = self._compiled.graph
        if graph.dynamic_nodes:  # shapes known after a forward (MXNet: unknown until then)
            out_specs = [
                (s and s[0] or (0,), s and s[1] or np.float32)
                for s in (out_specs or [None] * len(graph.output_names))
            ]
        elif out_specs is None or any(s is None or s[0] is None or s[1] is None for s in out_specs):
            forward = functools.partial(self._compiled.forward, is_train=False)
            outs, _ = jax.eval_shape(forward, self._args(), self._aux(), zero_key())
            out_specs = [(o.shape, o.dtype) for o in outs]
        device = self._ctx.jax_device
        stypes = self._output_stypes()
        return [
            on_ctx(jax.device_put(jnp.zeros(shape, dtype), device), self._ctx)
            if st == "default"
            else sparse.zeros(st, shape, ctx=self._ctx, dtype=dtype)
            for (shape, dtype), st in zip(out_specs, stypes)
        ]

    def _output_stypes(self) -> list:
        """MXNet's storage type of each output (``symbol/stype.py``) for the bound arrays:
        a row_sparse or csr output is held as such (written from the program's values)."""
        if not any(isinstance(a, BaseSparseNDArray) for a in self.arg_arrays):
            return ["default"] * len(self._symbol._outputs)
        arg_st = {n: a.stype for n, a in zip(self._arg_names, self.arg_arrays)}
        entries, _ = infer_stypes(self._symbol, arg_st)
        return [entries[(id(n), k)] for n, k in self._symbol._outputs]

    # ----------------------------------------------------------- running
    def _args(self, dense_names=()) -> dict:
        """The program's arguments: a csr argument as ``CsrParts`` (dense where its
        gradient is asked for), a row_sparse one dense (``sparse_io.program_value``)."""
        dev = self._ctx.jax_device
        return {
            n: program_value(a, dev, n in dense_names)
            for n, a in zip(self._arg_names, self.arg_arrays)
        }

    def _aux(self) -> dict:
        dev = self._ctx.jax_device
        return {n: _on(a._data, dev) for n, a in zip(self._aux_names, self.aux_arrays)}

    def _key(self):
        return mxrandom.next_key() if self._compiled.graph.has_random else zero_key()

    def forward(self, is_train: bool = False, **kwargs: Any) -> list:
        """Run the graph; ``kwargs`` are copied into the named argument arrays first."""
        args = self.arg_dict
        for name, value in kwargs.items():
            if name not in args:
                raise MXNetError(
                    f"forward got {name!r}, which is not an argument of the symbol; "
                    f"arguments are {self._arg_names}"
                )
            set_argument(args[name], value, f"forward {name!r}")
        key = self._key()
        outs, new_aux = self._compiled.forward(
            self._args(), self._aux(), key, is_train=bool(is_train)
        )
        self._last = (key, bool(is_train))
        self._set_outputs(outs)
        fwd_aux = self._compiled.graph.forward_aux
        if fwd_aux:  # aux an operator's forward writes itself (custom ops), in any mode
            self._store_aux({k: v for k, v in new_aux.items() if k in fwd_aux})
        if self._monitor is not None:  # every operator's outputs, as MXNet's executor
            for name, out in forward_internals(
                self._symbol, self._args(), self._aux(), key, bool(is_train)
            ):
                self._monitor(name, out)
        return self.outputs

    def backward(self, out_grads: Any = None, is_train: bool = True) -> None:
        """Gradients of the last forward into ``grad_arrays`` per grad_req."""
        if self._last is None:
            raise MXNetError("backward() needs a forward(is_train=True) first")
        key, fwd_train = self._last
        wanted = [
            n
            for n, g in zip(self._arg_names, self.grad_arrays)
            if g is not None and self._grad_req.get(n, "null") != "null"
        ]
        # MXNet 1.9.1's dot leaves the gradient of its csr lhs zero: such an argument is
        # not differentiated (it stays csr); any other csr argument runs dense
        csr_zero = [
            n for n in wanted
            if isinstance(self.arg_dict[n], CSRNDArray) and only_dot_lhs(self._compiled.graph, n)
        ]  # fmt: skip
        wanted = [n for n in wanted if n not in csr_zero]
        values = self._args(dense_names=wanted)
        diff = {n: values[n] for n in wanted}
        const = {n: v for n, v in values.items() if n not in diff}
        head_grads = self._head_grads(out_grads, {**const, **diff}, list(diff), key, fwd_train)
        row_sparse = tuple(
            n for n, g in zip(self._arg_names, self.grad_arrays)
            if n in diff and isinstance(g, RowSparseNDArray)
        )  # fmt: skip
        # MXNet differentiates the graph in the mode of the last forward
        # a differentiated csr argument runs dense; its csr parts still pick the rows
        csr_diff = any(isinstance(a, CSRNDArray) and n in diff for n, a in self.arg_dict.items())
        _, new_aux, grads = self._compiled.forward_backward(
            diff, const, self._aux(), key, head_grads, is_train=fwd_train,
            row_sparse=row_sparse, index_args=self._args() if row_sparse and csr_diff else None,
        )  # fmt: skip
        zeros = {n: jnp.zeros(self.grad_dict[n].shape, self.grad_dict[n].dtype) for n in csr_zero}
        self._store_grads({**grads, **zeros})
        if self._monitor is not None:  # MXNet's monitor also sees the backward nodes
            args = {**const, **diff}
            graph = self._compiled.graph
            taps = backward_taps(graph, args, self._aux(), key, fwd_train, head_grads)
            for name, g in in_run_order(taps):
                self._monitor(name, NDArray(g))
        if fwd_train:  # forward-written aux (custom ops) were stored by forward already
            fwd_aux = self._compiled.graph.forward_aux
            self._store_aux({k: v for k, v in new_aux.items() if k not in fwd_aux})

    def _head_grads(self, out_grads: Any, args: dict, diff: list, key, is_train: bool) -> list:
        shapes = [o.shape for o in self.outputs]
        dtypes = [np.dtype(o.dtype) for o in self.outputs]
        if out_grads is None or (isinstance(out_grads, (list, tuple)) and not out_grads):
            # MXNet reads backward([]) as backward(): only the head gradients the
            # gradients read must be given (head_grads.py); the others are unused
            missing = outputs_needing_head_grads(
                self._compiled.graph, args, self._aux(), key, diff, is_train
            )
            if missing:
                raise missing_head_grads_error(missing)
            return [jnp.ones(s, d) for s, d in zip(shapes, dtypes)]
        if isinstance(out_grads, (NDArray, np.ndarray)) or hasattr(out_grads, "shape"):
            out_grads = [out_grads]
        out_grads = list(out_grads)[: len(shapes)]  # as MXNet: those past the outputs unread
        if len(out_grads) < len(shapes):
            # as MXNet: the trailing outputs may go without when no gradient reads theirs
            needed = outputs_needing_head_grads(
                self._compiled.graph, args, self._aux(), key, diff, is_train
            )
            check_trailing_head_grads(self._compiled.graph.output_names, len(out_grads), needed)
            rest = zip(shapes[len(out_grads) :], dtypes[len(out_grads) :])
            out_grads = list(out_grads) + [np.ones(s, d) for s, d in rest]
        return [
            _on(to_jax(g, jax.ShapeDtypeStruct(s, d), f"out_grads[{i}]"), self._ctx.jax_device)
            for i, (g, s, d) in enumerate(zip(out_grads, shapes, dtypes))
        ]

    def _set_outputs(self, outs: list) -> None:
        if len(self.outputs) == len(outs):
            for holder, o in zip(self.outputs, outs):
                holder._set_data(o)
        else:
            self.outputs = [on_ctx(o, self._ctx) for o in outs]
        base = self._shares_outputs_of
        if base is not None:
            _write_prefixes(base.outputs, outs)

    def _store_aux(self, new_aux: dict) -> None:
        for n, a in zip(self._aux_names, self.aux_arrays):
            if n in new_aux:
                a._set_data(new_aux[n])

    def _store_grads(self, grads: dict) -> None:
        for n, g in zip(self._arg_names, self.grad_arrays):
            if n not in grads:
                continue
            grad = grads[n]
            if isinstance(g, BaseSparseNDArray):
                store_sparse_grad(g, grad, self._grad_req.get(n) == "add")
                continue
            if isinstance(grad, RowParts):
                grad = grad.dense()
            if grad.dtype == jax.dtypes.float0:  # an integer argument: zeros of its dtype
                grad = jnp.zeros(g.shape, g._data.dtype)
            new = _on(grad, _device_of(g._data))  # a gradient array stays where it is
            if self._grad_req.get(n) == "add":
                g._set_data(g._data + new)
            else:
                g._set_data(new)

    # ----------------------------------------------------------- parameters
    def copy_params_from(
        self, arg_params: dict, aux_params: Optional[dict] = None, allow_extra_params: bool = False
    ) -> None:
        for source, names, arrays, kind in (
            (arg_params, self._arg_names, self.arg_arrays, "arg"),
            (aux_params or {}, self._aux_names, self.aux_arrays, "aux"),
        ):
            index = dict(zip(names, arrays))
            for name, value in source.items():
                if name not in index:
                    if allow_extra_params:
                        continue
                    raise MXNetError(
                        f"copy_params_from: {kind} parameter {name!r} is not in the "
                        "symbol; pass allow_extra_params=True to skip it"
                    )
                set_argument(index[name], value, f"parameter {name!r}")

    def reshape(self, partial_shaping: bool = False, allow_up_sizing: bool = False, **kwargs):
        """A new executor for new input shapes, sharing arrays whose shapes are unchanged."""
        args, grads, aux, out_specs = reshaped_arrays(
            self, partial_shaping, allow_up_sizing, kwargs
        )
        new = Executor(
            self._symbol, self._ctx, self._arg_names, args, grads, self._grad_req,
            self._aux_names, aux, out_specs,
        )  # fmt: skip
        new._shares_outputs_of = self  # MXNet's reshaped executor writes into the base's memory
        return new

    def get_optimized_symbol(self):
        """The graph as MXNet 1.9.1 binds it: common sub-expressions folded unless
        ``MXNET_ELIMINATE_COMMON_EXPR=0`` was set at bind (``symbol/cse.py``). mxmod runs
        the bound graph either way (XLA folds them too): only the returned symbol differs.
        MXNet's backend fusions (MKLDNN subgraphs) are not shown."""
        if self._fold_common:
            return Symbol(eliminate_common_expr(self._symbol._outputs))
        return Symbol(copy_graph(self._symbol._outputs, {}))

    def set_monitor_callback(self, callback, monitor_all: bool = False) -> None:
        self._monitor = callback

    def debug_str(self) -> str:
        """The graph, then MXNet's two summary lines: ``Total <N> MB allocated``
        (``memory.py``) and ``Total 0 TempSpace resource requested`` (MXNet counts the
        scratch buffers its operators ask for; XLA plans those inside the program, so
        mxmod asks for none). Tools such as memonger parse the first by its position."""
        diff = [
            n
            for n, g in zip(self._arg_names, self.grad_arrays)
            if g is not None and self._grad_req.get(n, "null") != "null"
        ]
        args, aux = self._args(), self._aux()
        nbytes = allocated_bytes(self._compiled.graph, args, aux, zero_key(), diff, self.outputs)
        temp = "Total 0 TempSpace resource requested"
        return f"{self._symbol.debug_str()}{allocated_line(nbytes)}\n{temp}\n"


def _write_prefixes(holders: list, outs: list) -> None:
    """Write each output into the start of the base executor's output of the same
    dtype and at least its size: MXNet's reshaped executor (``reshape`` to a size no
    larger) shares the base's memory, so the base's outputs show the new results."""
    for holder, o in zip(holders, outs):
        base = holder._data
        if base.dtype != o.dtype or o.size > base.size:
            continue
        flat = base.reshape(-1).at[: o.size].set(_on(o.reshape(-1), _device_of(base)))
        holder._set_data(flat.reshape(base.shape))


def _device_of(arr):
    devs = arr.devices() if hasattr(arr, "devices") else ()
    return next(iter(devs)) if len(devs) == 1 else None


def _on(arr, device):
    """``arr`` on ``device`` (arrays bound on another context, e.g. a ``ctx_group``'s)."""
    here = _device_of(arr)
    if device is None or here is None or here == device:
        return arr
    return jax.device_put(arr, device)
