"""Stage checks: a call made out of order says which call is missing."""

from __future__ import annotations

from ..base import MXNetError

_FIX = {
    "binded": "call bind(data_shapes=..., label_shapes=...) first",
    "params_initialized": "call init_params() (or set_params()) first",
    "optimizer_initialized": "call init_optimizer() first",
    "for_training": "re-bind with for_training=True",
}


class StageError(MXNetError, AssertionError):
    """A Module method called before the stage it needs (MXNet raises a bare
    AssertionError here; this is one too, with a message that names the fix)."""


def require(module, method: str, *flags: str) -> None:
    for flag in flags:
        if not getattr(module, flag):
            what = flag.replace("_", " ").replace("binded", "bound")
            raise StageError(f"{method}() needs a module that is {what}: {_FIX[flag]}")
