"""``mx.onnx``: export MXNet models to ONNX, as MXNet 1.9.1's ``mxnet.onnx`` (mx2onnx).

``export_model(sym, params, in_shapes, ...)`` writes an ONNX file that onnxruntime (or
any ONNX runtime) runs; ``get_operator_support()`` lists the operators it translates.
The ``onnx`` package is an optional extra (``pip install 'mxmod[onnx]'``): this module
imports without it and ``export_model`` then raises ImportError naming the extra.
See README.md in this folder for what exports and what raises.
"""

from .export import export_model
from .registry import get_operator_support

__all__ = ["export_model", "get_operator_support"]
