"""``mx.sym._internal``: MXNet's underscore-named operators (``_plus_scalar``,
``_identity_with_attr_like_rhs``...) as symbol constructors, like every ``mx.sym.<op>``."""


def __getattr__(name: str):
    from .. import symbol

    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(symbol, name)
