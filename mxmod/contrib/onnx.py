"""``mx.contrib.onnx``: MXNet 1.9.1's older path to the ONNX exporter (``mx.onnx``).

``export_model`` is ``mx.onnx.export_model``; MXNet's ONNX importers (``import_model``,
``get_model_metadata``, ``import_to_gluon``) are not part of mxmod and raise.
"""

from ..onnx import export_model, get_operator_support


def _no_import(name: str):
    def unavailable(*_args, **_kwargs):
        raise NotImplementedError(
            f"mx.contrib.onnx.{name}: importing ONNX models is not supported by mxmod "
            "(MXNet deprecated it); mxmod exports with mx.onnx.export_model"
        )

    unavailable.__name__ = name
    return unavailable


import_model = _no_import("import_model")
get_model_metadata = _no_import("get_model_metadata")
import_to_gluon = _no_import("import_to_gluon")

__all__ = ["export_model", "get_operator_support", "import_model", "get_model_metadata",
           "import_to_gluon"]  # fmt: skip
