"""Convert an MXNet checkpoint to ONNX or StableHLO, without MXNet.

    python -m mxmod.tools.export PREFIX EPOCH --format onnx --shape data:1,3,224,224
    python -m mxmod.tools.export PREFIX EPOCH --format stablehlo --shape data:1,3,224,224 \\
        --dynamic-batch

reads ``PREFIX-symbol.json`` and ``PREFIX-EPOCH.params`` (as ``mx.model.load_checkpoint``),
prints a progress line, writes ``PREFIX-EPOCH.onnx`` / ``PREFIX-EPOCH.stablehlo`` (or
``--output``) and a summary: operators, parameters, file size, time.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time

import numpy as np

from ..module.checkpoint import load_checkpoint
from ..module.export import export_stablehlo
from ..onnx import export_model
from ..symbol.graph import topo_order

SUFFIX = {"onnx": ".onnx", "stablehlo": ".stablehlo"}


def parse_shape(text: str) -> tuple[str, tuple]:
    """``name:d0,d1,...`` -> (name, shape)."""
    name, sep, dims = text.partition(":")
    try:
        shape = tuple(int(d) for d in dims.split(","))
    except ValueError:
        shape = ()
    if not sep or not name or not shape or any(d <= 0 for d in shape):
        raise argparse.ArgumentTypeError(
            f"--shape {text!r}: expected NAME:D0,D1,... with positive dims, e.g. data:1,3,224,224"
        )
    return name, shape


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m mxmod.tools.export",
        description="Convert an MXNet checkpoint (PREFIX-symbol.json, PREFIX-EPOCH.params) "
        "to ONNX or StableHLO.",
    )
    p.add_argument("prefix", help="checkpoint prefix")
    p.add_argument("epoch", type=int, help="checkpoint epoch")
    p.add_argument("--format", choices=sorted(SUFFIX), default="onnx")
    p.add_argument("--shape", type=parse_shape, action="append", required=True,
                   help="an input and its shape, NAME:D0,D1,...; once per input")  # fmt: skip
    p.add_argument("--dtype", default="float32", help="input dtype (all inputs)")
    p.add_argument("--dynamic-batch", action="store_true", help="make the batch dim dynamic")
    p.add_argument("--opset", type=int, default=None, help="ONNX opset (12..17, default 13)")
    p.add_argument("--output", default=None, help="output file (default PREFIX-EPOCH.<fmt>)")
    return p


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return ""


def run(args) -> str:
    sym, arg_params, aux_params = load_checkpoint(args.prefix, args.epoch)
    nodes = [n for n in topo_order(sym._outputs) if not n.is_var]
    kinds = collections.Counter(n.op.name for n in nodes)
    params = {**arg_params, **aux_params}
    count = sum(int(np.prod(v.shape)) for v in params.values())
    nbytes = sum(v.asnumpy().nbytes for v in params.values())
    out = args.output or "%s-%04d%s" % (args.prefix, args.epoch, SUFFIX[args.format])
    print(f"exporting {args.prefix}-{args.epoch:04d} ({len(nodes)} operators, {count:,} "
          f"parameters) to {args.format}: {out} ...", flush=True)  # fmt: skip
    tic = time.time()
    names, shapes = [s[0] for s in args.shape], [s[1] for s in args.shape]
    if args.format == "onnx":
        order = [n for n in sym.list_inputs() if n in names]
        if sorted(order) != sorted(names):
            unknown = sorted(set(names) - set(order))
            raise SystemExit(f"error: --shape names {unknown} are not inputs of the symbol")
        export_model(sym, [arg_params, aux_params], [shapes[names.index(n)] for n in order],
                     np.dtype(args.dtype), out, dynamic=args.dynamic_batch,
                     opset_version=args.opset)  # fmt: skip
    else:
        descs = [(n, s, args.dtype) for n, s in zip(names, shapes)]
        export_stablehlo(sym, arg_params, aux_params, descs, out, args.dynamic_batch)
    size = os.path.getsize(out)
    top = ", ".join(f"{k} x{v}" for k, v in kinds.most_common(4))
    print(f"wrote {out}: {len(nodes)} operators ({len(kinds)} kinds: {top}), {count:,} "
          f"parameters ({_size(nbytes)}), file {_size(size)} "
          f"({100.0 * size / max(nbytes, 1):.1f}% of the parameters), "
          f"{time.time() - tic:.1f} s")  # fmt: skip
    return out


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
