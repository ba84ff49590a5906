"""Elementwise operators: MXNet's ``elemwise_*``, ``_*_scalar``, ``broadcast_*``, unary
math, ``add_n``, ``_copy``/``identity``, ``clip``, ``smooth_l1``, ``Cast`` and ``*_like``.

Semantics follow MXNet 1.9.1 (checked against it): scalars are cast to the input dtype
(``int32 + 2.5`` adds 2), integer division truncates, ``%`` is Python-style and ``x % 0``
is 0, comparisons and logical ops return 0/1 in the input dtype, ``round`` rounds half
away from zero and ``rint`` half down. Gradients are JAX's, shaped to MXNet's where they
differ: ``maximum``/``minimum`` ties and ``clip`` boundaries send the gradient to the
left operand / through, as MXNet does.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax
from jax.scipy import special

from ._attrs import Param, p_bool, p_dtype, p_float
from ._def import OpDef, fail, np_dtype, register
from .dense import same_shape

_LR = ("lhs", "rhs")


# ------------------------------------------------------------------ shape helpers
def merge_shapes(shapes, what="inputs"):
    """The common shape of same-shape inputs; 0 (or None) marks an unknown dim/shape."""
    known = [tuple(s) for s in shapes if s is not None]
    if not known:
        return None
    nd = len(known[0])
    out = list(known[0])
    for s in known[1:]:
        if len(s) != nd:
            fail(f"{what} must have the same shape, got {' and '.join(map(str, known))}")
        for i, d in enumerate(s):
            if d and out[i] and d != out[i]:
                fail(f"{what} must have the same shape, got {' and '.join(map(str, known))}")
            out[i] = out[i] or d
    return tuple(out)


def same_shapes(a, s):
    """All inputs and the output share one shape (elemwise_add, add_n, ...)."""
    out = merge_shapes(s)
    return [out] * len(s), [out]


def broadcast_shape(lhs, rhs):
    """NumPy broadcasting of two shapes, as MXNet's ``BinaryBroadcastShape`` (0 = unknown)."""
    nd = max(len(lhs), len(rhs))
    lp = (1,) * (nd - len(lhs)) + tuple(lhs)
    rp = (1,) * (nd - len(rhs)) + tuple(rhs)
    out = []
    for l, r in zip(lp, rp):
        if l == 0 or r == 0:
            out.append(0)
        elif l != r and l != 1 and r != 1:
            fail(f"operands could not be broadcast together with shapes {tuple(lhs)} {tuple(rhs)}")
        else:
            out.append(max(l, r) if 1 in (l, r) else l)
    return tuple(out)


def _broadcast_infer(a, s):
    lhs, rhs = s
    if lhs is None or rhs is None:
        return s, [None]
    return s, [broadcast_shape(lhs, rhs)]


# ------------------------------------------------------------------ math helpers
def _div(x, y):
    """MXNet division: truncating for integers."""
    if jnp.issubdtype(x.dtype, jnp.integer):
        return lax.div(x, y)
    return x / y


def _mod(x, y):
    """Python-style modulo; MXNet returns 0 where the divisor is 0."""
    zero = y == 0
    safe = jnp.where(zero, jnp.ones_like(y), y)
    return jnp.where(zero, jnp.zeros_like(x), jnp.mod(x, safe))


def _maximum(x, y):  # ties: gradient to x (MXNet's ``ge``)
    return jnp.where(x >= y, x, y)


def _minimum(x, y):  # ties: gradient to x (MXNet's ``le``)
    return jnp.where(x <= y, x, y)


def _bool(fn):
    """A predicate returning 0/1 in the dtype of its first argument (no gradient)."""
    return lambda x, y: fn(x, y).astype(x.dtype)


def _nz(v):
    return v != 0


_BINARY = {
    "add": jnp.add,
    "sub": jnp.subtract,
    "mul": jnp.multiply,
    "div": _div,
    "mod": _mod,
    "power": jnp.power,
    "maximum": _maximum,
    "minimum": _minimum,
    "hypot": jnp.hypot,
    "equal": _bool(jnp.equal),
    "not_equal": _bool(jnp.not_equal),
    "greater": _bool(jnp.greater),
    "greater_equal": _bool(jnp.greater_equal),
    "lesser": _bool(jnp.less),
    "lesser_equal": _bool(jnp.less_equal),
    "logical_and": _bool(lambda x, y: _nz(x) & _nz(y)),
    "logical_or": _bool(lambda x, y: _nz(x) | _nz(y)),
    "logical_xor": _bool(lambda x, y: _nz(x) ^ _nz(y)),
}


def _binary_lower(fn):
    return lambda a, ins, aux, ctx: [fn(ins[0], ins[1])]


# ----------------------------------------------------- same-shape binary operators
_ELEMWISE = {  # canonical name -> (function key, aliases); aliases from MXNet 1.9.1
    "elemwise_add": ("add", ("_plus", "_Plus", "_add")),
    "elemwise_sub": ("sub", ("_minus", "_Minus", "_sub")),
    "elemwise_mul": ("mul", ("_mul", "_Mul")),
    "elemwise_div": ("div", ("_div", "_Div")),
    "_mod": ("mod", ("_Mod",)),
    "_power": ("power", ("_Power",)),
    "_maximum": ("maximum", ("_Maximum",)),
    "_minimum": ("minimum", ("_Minimum",)),
    "_hypot": ("hypot", ("_Hypot",)),
    "_equal": ("equal", ("_Equal",)),
    "_not_equal": ("not_equal", ("_Not_Equal",)),
    "_greater": ("greater", ("_Greater",)),
    "_greater_equal": ("greater_equal", ("_Greater_Equal",)),
    "_lesser": ("lesser", ("_Lesser",)),
    "_lesser_equal": ("lesser_equal", ("_Lesser_Equal",)),
    "_logical_and": ("logical_and", ("_Logical_And",)),
    "_logical_or": ("logical_or", ("_Logical_Or",)),
    "_logical_xor": ("logical_xor", ("_Logical_Xor",)),
}

for _name, (_key, _aliases) in _ELEMWISE.items():
    register(
        OpDef(
            name=_name,
            inputs=_LR,
            infer_shape=same_shapes,
            lower=_binary_lower(_BINARY[_key]),
            aliases=_aliases,
        )
    )

# ----------------------------------------------------------- broadcast operators
_BROADCAST_ALIASES = {"add": ("broadcast_plus",), "sub": ("broadcast_minus",)}
for _key, _fn in _BINARY.items():
    register(
        OpDef(
            name=f"broadcast_{_key}",
            inputs=_LR,
            infer_shape=_broadcast_infer,
            lower=_binary_lower(_fn),
            aliases=_BROADCAST_ALIASES.get(_key, ()),
        )
    )


# --------------------------------------------------------------- scalar operators
def _scalar_lower(fn, reverse):
    def lower(a, ins, aux, ctx):
        x = ins[0]
        s = jnp.asarray(a.scalar, dtype=x.dtype)  # MXNet casts the scalar to the dtype
        return [fn(s, x) if reverse else fn(x, s)]

    return lower


_SCALAR_PARAMS = {"scalar": Param(p_float, 1.0), "is_int": Param(p_bool, True)}
_SCALAR = {  # canonical name -> (function key, reversed, MXNet alias)
    "_plus_scalar": ("add", False, "_PlusScalar"),
    "_minus_scalar": ("sub", False, "_MinusScalar"),
    "_rminus_scalar": ("sub", True, "_RMinusScalar"),
    "_mul_scalar": ("mul", False, "_MulScalar"),
    "_div_scalar": ("div", False, "_DivScalar"),
    "_rdiv_scalar": ("div", True, "_RDivScalar"),
    "_mod_scalar": ("mod", False, "_ModScalar"),
    "_rmod_scalar": ("mod", True, "_RModScalar"),
    "_power_scalar": ("power", False, "_PowerScalar"),
    "_rpower_scalar": ("power", True, "_RPowerScalar"),
    "_maximum_scalar": ("maximum", False, "_MaximumScalar"),
    "_minimum_scalar": ("minimum", False, "_MinimumScalar"),
    "_hypot_scalar": ("hypot", False, "_HypotScalar"),
    "_equal_scalar": ("equal", False, "_EqualScalar"),
    "_not_equal_scalar": ("not_equal", False, "_NotEqualScalar"),
    "_greater_scalar": ("greater", False, "_GreaterScalar"),
    "_greater_equal_scalar": ("greater_equal", False, "_GreaterEqualScalar"),
    "_lesser_scalar": ("lesser", False, "_LesserScalar"),
    "_lesser_equal_scalar": ("lesser_equal", False, "_LesserEqualScalar"),
    "_logical_and_scalar": ("logical_and", False, "_LogicalAndScalar"),
    "_logical_or_scalar": ("logical_or", False, "_LogicalOrScalar"),
    "_logical_xor_scalar": ("logical_xor", False, "_LogicalXorScalar"),
}

for _name, (_key, _rev, _alias) in _SCALAR.items():
    register(
        OpDef(
            name=_name,
            params=dict(_SCALAR_PARAMS),
            infer_shape=same_shape,
            lower=_scalar_lower(_BINARY[_key], _rev),
            aliases=(_alias,),
        )
    )


# ------------------------------------------------------------------------ add_n
def _arg_names(a):
    if a.num_args is None:
        raise ValueError("num_args is missing: pass the inputs (num_args is set from them)")
    return [f"arg{i}" for i in range(int(a.num_args))]


def _add_n_lower(a, ins, aux, ctx):
    out = ins[0]
    for x in ins[1:]:
        out = out + x
    return [out]


register(
    OpDef(
        name="add_n",
        inputs=_arg_names,
        variadic="num_args",
        infer_shape=same_shapes,
        lower=_add_n_lower,
        aliases=("ElementWiseSum",),
    )
)


# ------------------------------------------------------------------- unary math
def round_half_away(x):
    """C's ``round``: half away from zero (exact: no ``x + 0.5`` that rounds up
    0.49999997)."""
    if not jnp.issubdtype(x.dtype, jnp.floating):
        return x
    t = jnp.trunc(x)
    return jnp.where(jnp.abs(x - t) >= 0.5, t + jnp.sign(x), t)


def _abs(x):  # gradient sign(x): 0 at 0, as MXNet
    return x * lax.stop_gradient(jnp.sign(x))


def _rint(x):  # MXNet: the nearer of floor/ceil, floor on a tie
    lo, hi = jnp.floor(x), jnp.ceil(x)
    return jnp.where(x - lo <= hi - x, lo, hi)


_UNARY = {
    "exp": jnp.exp,
    "log": jnp.log,
    "log2": jnp.log2,
    "log10": jnp.log10,
    "log1p": jnp.log1p,
    "expm1": jnp.expm1,
    "sqrt": jnp.sqrt,
    "rsqrt": lax.rsqrt,
    "cbrt": jnp.cbrt,
    "rcbrt": lambda x: 1 / jnp.cbrt(x),
    "square": jnp.square,
    "abs": _abs,
    "sign": jnp.sign,
    "sin": jnp.sin,
    "cos": jnp.cos,
    "tan": jnp.tan,
    "arcsin": jnp.arcsin,
    "arccos": jnp.arccos,
    "arctan": jnp.arctan,
    "sinh": jnp.sinh,
    "cosh": jnp.cosh,
    "tanh": jnp.tanh,
    "arcsinh": jnp.arcsinh,
    "arccosh": jnp.arccosh,
    "arctanh": jnp.arctanh,
    "degrees": jnp.degrees,
    "radians": jnp.radians,
    "sigmoid": jax.nn.sigmoid,
    "relu": jax.nn.relu,
    "softsign": lambda x: x / (1 + jnp.abs(x)),
    "floor": jnp.floor,
    "ceil": jnp.ceil,
    "round": round_half_away,
    "rint": _rint,
    "fix": jnp.trunc,
    "trunc": jnp.trunc,
    "reciprocal": jnp.reciprocal,
    "negative": jnp.negative,
    "erf": special.erf,
    "erfinv": special.erfinv,
    "gamma": special.gamma,
    "gammaln": special.gammaln,
    "logical_not": lambda x: (x == 0).astype(x.dtype),
    "zeros_like": jnp.zeros_like,
    "ones_like": jnp.ones_like,
    "_copy": lambda x: x,
}
_UNARY_ALIASES = {"_copy": ("identity",)}

for _name, _fn in _UNARY.items():
    register(
        OpDef(
            name=_name,
            infer_shape=same_shape,
            lower=(lambda f: lambda a, ins, aux, ctx: [f(ins[0])])(_fn),
            aliases=_UNARY_ALIASES.get(_name, ()),
        )
    )


def _hard_sigmoid(a, ins, aux, ctx):
    return [jnp.clip(a.alpha * ins[0] + a.beta, 0, 1)]


register(
    OpDef(
        name="hard_sigmoid",
        params={"alpha": Param(p_float, 0.2), "beta": Param(p_float, 0.5)},
        infer_shape=same_shape,
        lower=_hard_sigmoid,
    )
)


# ------------------------------------------------------------- clip, smooth_l1
def _clip_lower(a, ins, aux, ctx):
    x = ins[0]
    lo = jnp.asarray(a.a_min, x.dtype)
    hi = jnp.asarray(a.a_max, x.dtype)
    # boundaries pass the gradient (MXNet zeroes it only strictly outside [a_min, a_max])
    return [jnp.where(x < lo, lo, jnp.where(x > hi, hi, x))]


register(
    OpDef(
        name="clip",
        params={"a_min": Param(p_float), "a_max": Param(p_float)},
        infer_shape=same_shape,
        lower=_clip_lower,
    )
)


def _smooth_l1_lower(a, ins, aux, ctx):
    x = ins[0]
    s2 = a.scalar * a.scalar
    ax = jnp.abs(x)
    return [jnp.where(ax < 1.0 / s2, 0.5 * s2 * x * x, ax - 0.5 / s2)]


register(
    OpDef(
        name="smooth_l1",
        params={"scalar": Param(p_float, 1.0)},
        infer_shape=same_shape,
        lower=_smooth_l1_lower,
    )
)


# ---------------------------------------------------------------------- Cast
def _cast_type(a, dtypes):
    return dtypes, [np_dtype(a.dtype)]


register(
    OpDef(
        name="Cast",
        params={"dtype": Param(p_dtype)},
        infer_shape=same_shape,
        infer_type=_cast_type,
        aliases=("cast",),
        lower=lambda a, ins, aux, ctx: [
            ins[0].astype(jax.dtypes.canonicalize_dtype(np_dtype(a.dtype)))
        ],
    )
)
