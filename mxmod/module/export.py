"""Exporting a model for serving: ``Module.export`` (mxmod's addition) and the StableHLO
artifact of a symbol's inference forward.

StableHLO goes through ``jax.export``: the forward of ``symbol`` at the given input shapes,
parameters baked in as constants, lowered for CPU, CUDA and TPU. The result is the bytes of
``jax.export.Exported.serialize()``; any JAX program reloads it with
``jax.export.deserialize(data).call(*inputs)`` (no mxmod needed), and the module text
(``.mlir_module()``) feeds any StableHLO consumer.

The parameters are constants of the program, so the first call compiles them in (ResNet-50:
~12 s on 2 busy CPU cores, then 0.7 s per batch of 4). XLA folds operations on constants at
that compile: a dense layer lowered as ``x @ w.T`` makes it transpose the weight element by
element (VGG's 400 MB fc6: minutes on CPU).
"""

from __future__ import annotations

import os
from typing import Any, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from ..base import MXNetError
from ..executor.lower import GraphFn
from ..ndarray import NDArray
from ..onnx import export_model as onnx_export_model
from ..symbol.infer import propagate_shapes
from .stages import require

FORMATS = ("stablehlo", "onnx")
#: platforms the StableHLO artifact is lowered for by default
PLATFORMS = ("cpu", "cuda", "tpu")


def _array(value: Any) -> np.ndarray:
    return value.asnumpy() if isinstance(value, NDArray) else np.asarray(value)


def _label_shapes(sym, inputs: dict, params: dict) -> dict:
    """Shapes of the symbol's arguments that are neither inputs nor parameters (loss heads'
    labels, unused by the inference forward but bound by the graph function)."""
    known = {**{n: s for n, (s, _) in inputs.items()}, **{n: v.shape for n, v in params.items()}}
    order, shapes = propagate_shapes(sym, known)
    missing = {}
    for node in order:
        if node.is_var and node.name not in known and node.name in sym.list_arguments():
            shape = shapes.get((id(node), 0))
            if shape is None:
                raise MXNetError(
                    f"export: cannot infer the shape of {node.name!r}: give it as an input "
                    f"(data_shapes) or a parameter"
                )
            missing[node.name] = tuple(shape)
    return missing


def export_stablehlo(
    sym,
    arg_params: dict,
    aux_params: dict,
    data_shapes: Sequence,
    path: Optional[str] = None,
    dynamic_batch: bool = False,
    platforms: Sequence[str] = PLATFORMS,
    precision: Optional[str] = "highest",
) -> bytes:
    """Serialize ``sym``'s inference forward as a ``jax.export`` StableHLO artifact.

    Args:
      sym: the Symbol.
      arg_params, aux_params: name -> NDArray/array (baked into the program).
      data_shapes: ``[(name, shape)]``, ``[(name, shape, dtype)]`` or DataDesc, in the order
        the exported function takes its inputs.
      path: where the bytes are written (also returned).
      dynamic_batch: the first dim of every input is the symbolic ``batch``.
      platforms: the backends the artifact is lowered for.
      precision: the matmul/convolution precision written into the program: ``'highest'``
        (float32 as float32 on every backend; a GPU would otherwise use TF32, ~5e-4
        relative error on ResNets), or a ``jax.default_matmul_precision`` value (None: JAX's).

    Returns:
      the serialized bytes; ``jax.export.deserialize(b).call(*inputs)`` returns the
      symbol's outputs as a tuple.
    """
    inputs = {}
    for desc in data_shapes:
        name, shape = desc[0], tuple(int(d) for d in desc[1])
        dtype = np.dtype(getattr(desc, "dtype", None) or (desc[2] if len(desc) > 2 else "float32"))
        inputs[name] = (shape, dtype)
    params = {n: _array(v) for n, v in {**arg_params, **aux_params}.items()}
    used = set(sym.list_inputs())
    fn = GraphFn(sym)
    args = {n: jnp.asarray(v) for n, v in params.items() if n in fn.arg_names}
    aux = {n: jnp.asarray(v) for n, v in params.items() if n in fn.aux_names}
    absent = [n for n in fn.aux_names if n not in aux]
    if absent:
        raise MXNetError(f"export: aux_params lacks {absent}")
    labels = _label_shapes(sym, inputs, {n: v for n, v in params.items() if n in used})
    names = list(inputs)
    batch0 = next(iter(inputs.values()))[0][0] if inputs else None

    def forward(*values):
        env = dict(args)
        env.update(zip(names, values))
        batch = values[0].shape[0] if values else None
        for label, shape in labels.items():  # follow a symbolic batch where the label has it
            lead = (batch,) if dynamic_batch and shape and shape[0] == batch0 else shape[:1]
            env[label] = jnp.zeros(lead + shape[1:], jnp.float32)
        outs, _ = fn(env, aux, None, False)
        return tuple(outs)

    if dynamic_batch:
        scope = jax.export.SymbolicScope()
        batch_dim = jax.export.symbolic_shape("batch", scope=scope)[0]
        specs = [jax.ShapeDtypeStruct((batch_dim,) + s[1:], d) for s, d in inputs.values()]
    else:
        specs = [jax.ShapeDtypeStruct(s, d) for s, d in inputs.values()]
    try:
        with jax.default_matmul_precision(precision):
            exported = jax.export.export(jax.jit(forward), platforms=tuple(platforms))(*specs)
    except Exception as e:  # noqa: BLE001  (shape polymorphism's errors are private classes)
        if not dynamic_batch:
            raise
        raise NotImplementedError(
            "export(dynamic_batch=True): this graph needs a concrete batch size while it is "
            f"traced ({type(e).__name__}: {str(e).splitlines()[0]}); export with "
            "dynamic_batch=False, once per batch size"
        ) from e
    data = bytes(exported.serialize())
    if path is not None:
        with open(path, "wb") as f:
            f.write(data)
    return data


def export_module(module, path: str, format: str = "stablehlo", dynamic_batch: bool = False,
                  **kwargs) -> str:  # fmt: skip
    """``Module.export``: the bound module's inference forward and current parameters to
    ``path`` as StableHLO (``jax.export`` bytes) or ONNX; returns ``path``.

    ``kwargs`` go to :func:`export_stablehlo` (``platforms``) or ``mx.onnx.export_model``
    (``opset_version``, ``run_shape_inference``, ``verbose``, ...)."""
    if format not in FORMATS:
        raise ValueError(f"export: format={format!r} is not one of {FORMATS}")
    require(module, "export", "binded", "params_initialized")
    arg, aux = module.get_params()
    descs = list(module.data_shapes)
    sym = module.symbol
    if format == "stablehlo":
        export_stablehlo(sym, arg, aux, descs, os.fspath(path), dynamic_batch, **kwargs)
        return path
    order = [n for n in sym.list_inputs() if n in {d.name for d in descs}]
    by_name = {d.name: d for d in descs}
    onnx_export_model(
        sym,
        [arg, aux],
        [by_name[n].shape for n in order],
        [np.dtype(by_name[n].dtype) for n in order],
        onnx_file_path=os.fspath(path),
        dynamic=dynamic_batch,
        **kwargs,
    )
    return path
