"""Parameter initializers: MXNet's ``mx.init`` / ``mx.initializer``.

``Module.init_params`` calls ``initializer(InitDesc(name, attrs, global_init), arr)`` for every
parameter; the initializer fills the mxmod NDArray in place. Dispatch follows MXNet 1.9.1
(``__init__`` attribute first, then the name suffix); see :class:`Initializer`.
Random initializers draw from ``mxmod.random`` (seed it with ``mx.random.seed``): same
distributions as MXNet, not the same streams.
"""

from . import _base, _basic, _composite, _fused_rnn
from ._base import *  # noqa: F403
from ._basic import *  # noqa: F403
from ._composite import *  # noqa: F403
from ._fused_rnn import *  # noqa: F403

__all__ = _base.__all__ + _basic.__all__ + _composite.__all__ + _fused_rnn.__all__
