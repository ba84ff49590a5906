"""``mx.sym.random``: sampling symbols with scalar parameters, as MXNet's ``uniform``/``normal``."""

from .creation import creator
from .symbol import Symbol


def _scalar_params(fn_name: str, **params) -> None:
    for key, value in params.items():
        if isinstance(value, Symbol):
            raise NotImplementedError(
                f"mx.sym.random.{fn_name}({key}=<Symbol>): per-element parameters "
                f"(MXNet's sample_{fn_name}) are not supported by mxmod; give a number"
            )


def _with_dtype(kwargs: dict, dtype) -> dict:
    return kwargs if dtype is None else {**kwargs, "dtype": dtype}


def uniform(low=0, high=1, shape=(), dtype=None, **kwargs):
    """Samples from U[low, high) of ``shape``, as ``mx.sym.random.uniform``."""
    _scalar_params("uniform", low=low, high=high)
    return creator("_random_uniform")(low=low, high=high, shape=shape, **_with_dtype(kwargs, dtype))


def normal(loc=0, scale=1, shape=(), dtype=None, **kwargs):
    """Samples from N(loc, scale^2) of ``shape``, as ``mx.sym.random.normal``."""
    _scalar_params("normal", loc=loc, scale=scale)
    return creator("_random_normal")(
        loc=loc, scale=scale, shape=shape, **_with_dtype(kwargs, dtype)
    )
