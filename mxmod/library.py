"""``mx.library``: loading compiled C++ operator libraries.

MXNet loads ``.so`` files of custom C++ operators into its engine. mxmod runs on JAX and
has no C++ operator interface: ``load`` says so and names what does work (Python custom
operators, ``mx.operator.CustomOp``)."""

from __future__ import annotations

__all__ = ["load"]


def load(path, verbose=True):
    raise NotImplementedError(
        f"mx.library.load({path!r}): mxmod cannot load compiled MXNet operator libraries; "
        "write the operator as a Python mx.operator.CustomOp (its forward/backward in "
        "mx.nd calls), which mxmod runs inside its compiled programs"
    )
