"""``mx.sym.contrib`` (and ``mx.contrib.symbol``): MXNet's contrib operator constructors.

MXNet registers its contrib operators under JSON names with a ``_contrib_`` prefix
(``_contrib_ROIAlign``) and exposes each as ``mx.sym.contrib.<Name>`` with the prefix
stripped. This module does the same generically: every operator (or alias) of the table
named ``_contrib_<Name>`` is ``contrib.<Name>``, so registering an OpDef is all an
operator file has to do. Automatic node names use the lower-cased function name
(``bilinearresize2d0``, ``ctc_loss0``), as MXNet's do.
"""

from __future__ import annotations

import math

from ..ops import OPS
from ..registry import prefixed_module
from .control_flow import cond, foreach, while_loop  # noqa: F401
from .creation import creator
from .random import uniform

PREFIX = "_contrib_"


contrib_names, __getattr__, __dir__ = prefixed_module(
    __name__, OPS, PREFIX, lambda name: creator(PREFIX + name, hint=name.lower())
)


def rand_zipfian(true_classes, num_sampled: int, range_max: int):
    """``mx.nd.contrib.rand_zipfian`` as symbols: the sampled classes (int32) and the
    expected counts of the true and the sampled classes."""

    def expected(classes):
        c = creator("Cast")(classes, dtype="float32")
        return creator("log")((c + 2.0) / (c + 1.0)) / math.log(range_max + 1) * num_sampled

    draws = uniform(0, math.log(range_max + 1), shape=(int(num_sampled),))
    sampled = creator("Cast")(creator("exp")(draws) - 1, dtype="int32") % int(range_max)
    return sampled, expected(true_classes), expected(sampled)
