"""``mx.nd.image``: MXNet's image operators, imperative (``_image_<name>`` as ``<name>``; see
``mxmod/ops/image_transforms.py``)."""

from __future__ import annotations

from ..ops import OPS
from ..registry import prefixed_module
from .op_table import nd_function

PREFIX = "_image_"


image_names, __getattr__, __dir__ = prefixed_module(
    __name__, OPS, PREFIX, lambda name: nd_function(PREFIX + name)
)
