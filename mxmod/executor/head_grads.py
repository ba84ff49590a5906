"""Which outputs' head gradients a backward pass reads: MXNet's ``backward()`` rule.

MXNet builds the gradient graph of the differentiated arguments and keeps only the nodes
those gradients reach. An output's head gradient is an input of that graph only when
the gradients depend on it: a loss head (``SoftmaxOutput``, ``MakeLoss``, ...) ignores
its head gradient, so a ``Reshape``/``Flatten``/scaling of one (whose backward only
feeds the loss head) needs none, nor does a ``BlockGrad`` or ``argmax`` output. Only
when a gradient does read an output's head gradient must ``backward()`` be given
``out_grads`` (MXNet: "Because the last operator is not Loss function, head_gradient is
required ..."); the missing ones are then fed as ones, which changes nothing.

mxmod finds the same set by tracing the VJP abstractly and removing dead code: a head
gradient the gradients do not read is an unused input of the traced program.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax._src.interpreters import partial_eval as pe

from ..base import MXNetError


def _spec(x):
    return jax.ShapeDtypeStruct(jnp.shape(x), jnp.result_type(x))


def outputs_needing_head_grads(
    graph, args: dict, aux: dict, key, diff_names, is_train: bool
) -> list:
    """Names of ``graph``'s outputs whose head gradient the gradients w.r.t.
    ``diff_names`` read (empty when no output needs one). Cached per graph, differentiated
    set, mode and argument shapes; only abstract values are traced, nothing runs."""
    heads = graph.symbol._outputs
    blocked = [n.op is not None and n.op.name == "BlockGrad" for n, _ in heads]
    if all(loss or b for loss, b in zip(graph.is_loss, blocked)):
        return []  # loss heads and BlockGrad never read theirs: nothing to trace
    args = {n: args[n] for n in graph.arg_names if n in args}
    aux = {n: aux[n] for n in graph.aux_names if n in aux}
    diff = tuple(n for n in diff_names if n in args)
    if not diff:
        return []
    cache = graph.head_grads_needed
    shapes = tuple((n, _signature(v)) for n, v in args.items())
    aux_shapes = tuple((n, _signature(v)) for n, v in aux.items())
    ck = (diff, bool(is_train), shapes, aux_shapes)
    if ck not in cache:
        cache[ck] = _trace_needed(graph, args, aux, key, diff, bool(is_train))
    return cache[ck]


def _signature(value) -> tuple:
    """Structure, shapes and dtypes of an argument (an array or a sparse ``CsrParts``)."""
    leaves, tree = jax.tree_util.tree_flatten(value)
    return str(tree), tuple((tuple(jnp.shape(x)), str(jnp.result_type(x))) for x in leaves)


def _specs(value):
    return jax.tree_util.tree_map(_spec, value)


def _trace_needed(graph, args, aux, key, diff, is_train) -> list:
    const = {n: v for n, v in args.items() if n not in diff}

    def f(d):
        outs, _ = graph({**const, **d}, aux, key, is_train)
        return outs

    if graph.dynamic_nodes:  # shapes depend on values: differentiate the given arrays
        outs, vjp = jax.vjp(f, {n: args[n] for n in diff})
        closed = jax.make_jaxpr(vjp)([_spec(o) for o in outs])
        n_heads = len(outs)
    else:

        def grads_of(diff_vals, const_vals, aux_vals, rng, heads):
            consts = dict(zip(const, const_vals))

            def g(d):
                return graph({**consts, **d}, aux_vals, rng, is_train)[0]

            return jax.vjp(g, dict(zip(diff, diff_vals)))[1](list(heads))

        specs = ({n: _spec(v) for n, v in aux.items()}, _spec(key) if key is not None else None)
        out_specs = jax.eval_shape(
            lambda a, x, r: graph(a, x, r, is_train)[0],
            {n: _specs(v) for n, v in args.items()},
            *specs,
        )
        closed = jax.make_jaxpr(grads_of)(
            [_specs(args[n]) for n in diff], [_specs(v) for v in const.values()], *specs,
            [_spec(o) for o in out_specs],
        )  # fmt: skip
        n_heads = len(out_specs)
    jaxpr = closed.jaxpr
    _, used = pe.dce_jaxpr(jaxpr, [True] * len(jaxpr.outvars))
    head_used = used[len(used) - n_heads :]
    return [name for name, u in zip(graph.output_names, head_used) if u]


def missing_head_grads_error(names: list) -> MXNetError:
    """The error of ``backward()`` without ``out_grads`` when outputs ``names`` need them."""
    return MXNetError(
        f"backward() needs out_grads for the non-loss outputs {names}: they are not loss "
        "outputs and the gradients depend on their head gradient, so give it "
        "(backward(out_grads=[...]), one array per output); to minimise an output as an "
        "objective, pass it through MakeLoss"
    )


def check_trailing_head_grads(output_names: list, given: int, needed: list) -> None:
    """``backward(out_grads)`` with fewer arrays than outputs: MXNet reads them by position,
    so the outputs past ``given`` must be ones whose head gradient no gradient reads
    (``needed``: ``outputs_needing_head_grads``); they get ones, which change nothing."""
    lacking = [n for n in output_names[given:] if n in needed]
    if lacking:
        raise MXNetError(
            f"backward got {given} out_grads for {len(output_names)} outputs {output_names}: "
            f"the gradients read the head gradient of {lacking}, so give one array per "
            "output up to the last of them (in the order of list_outputs())"
        )
