"""``mx.contrib.onnx``: MXNet 1.9.1's ONNX entry points: ``export_model`` (``mx.onnx``'s
exporter), ``import_model`` and ``get_model_metadata`` (``mxmod/onnx/import_graph.py``).
``import_to_gluon`` raises: mxmod has no Gluon."""

from ..onnx import export_model, get_operator_support
from ..onnx.import_graph import get_model_metadata, import_model


def import_to_gluon(model_file, ctx=None):
    raise NotImplementedError(
        "mx.contrib.onnx.import_to_gluon: mxmod has no Gluon; use import_model, then bind the "
        "symbol in an mx.mod.Module and set_params(arg_params, aux_params)"
    )


__all__ = ["export_model", "get_operator_support", "import_model", "get_model_metadata",
           "import_to_gluon"]  # fmt: skip
