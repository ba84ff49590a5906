"""``mx.rtc``: MXNet's run-time compiled CUDA kernels.

mxmod's programs are compiled by XLA for whatever device runs them; there is no CUDA
source to compile. Constructing a ``CudaModule`` says so and names the ways to write the
computation instead."""

from __future__ import annotations

__all__ = ["CudaModule", "CudaKernel"]

_ADVICE = (
    "mxmod compiles through XLA, not NVRTC: write the kernel with mx.nd / mx.sym operators "
    "(or as a jax / Pallas function inside an mx.operator.CustomOp)"
)


class CudaModule:
    def __init__(self, source, options=(), exports=()):
        raise NotImplementedError(f"mx.rtc.CudaModule: {_ADVICE}")


class CudaKernel:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError(f"mx.rtc.CudaKernel: {_ADVICE}")
