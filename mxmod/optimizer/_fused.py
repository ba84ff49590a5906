"""Old path of two names of :mod:`.fused` (``contrib/svrg_optimization`` imports them here)."""

from .fused import ClassOrInstance as _ClassOrInstance  # noqa: F401
from .fused import Signature  # noqa: F401
