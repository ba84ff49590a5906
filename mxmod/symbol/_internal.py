"""``mx.sym._internal``: MXNet's underscore-named operators (``_plus_scalar``,
``_identity_with_attr_like_rhs``...) as symbol constructors, like every ``mx.sym.<op>``."""

import sys


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(sys.modules[__package__], name)  # the package, loaded before this module
