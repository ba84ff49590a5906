"""MXNet's ``_contrib_fft``, ``_contrib_ifft`` and ``_contrib_count_sketch`` (GPU-only in
MXNet 1.9.1; mxmod runs them anywhere). Each works on the last axis of 2-D ``(N, d)`` or
4-D ``(N1, N2, N3, d)`` data:

- ``fft``: the unnormalised discrete Fourier transform of real data, as
  ``[real0, imag0, real1, imag1, ...]`` (last axis ``2d``).
- ``ifft``: the real part of the unnormalised inverse transform (no ``1/d``, as MXNet's,
  which follows Caffe) of data in that interleaved layout (last axis ``d/2``).
- ``count_sketch``: ``out[..., h[i]] += data[..., i] * s[i]`` into ``out_dim`` buckets, with
  ``h`` (bucket indices) and ``s`` (signs) of shape ``(1, d)``; they get no gradient.

``compute_size`` and ``processing_batch_size`` choose MXNet's GPU batching only.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ._attrs import Param, p_int
from ._def import OpDef, fail, register


def _last_axis_shape(name: str, data, last: int):
    if len(data) not in (2, 4):
        fail(f"{name}: data {tuple(data)} must be 2-D (N, d) or 4-D (N1, N2, N3, d)")
    return tuple(data[:-1]) + (last,)


def _fft_shape(a, s):
    (data,) = s
    if data is None:
        return s, [None]
    return [tuple(data)], [_last_axis_shape("fft", data, 2 * data[-1])]


def _fft_lower(a, ins, aux, ctx):
    (x,) = ins
    z = jnp.fft.fft(x.astype(jnp.float32), axis=-1)
    out = jnp.stack([z.real, z.imag], axis=-1).reshape(x.shape[:-1] + (2 * x.shape[-1],))
    return [out.astype(x.dtype)]


def _ifft_shape(a, s):
    (data,) = s
    if data is None:
        return s, [None]
    if data[-1] % 2:
        fail(f"ifft: the last axis of data {tuple(data)} must be even (real, imag pairs)")
    return [tuple(data)], [_last_axis_shape("ifft", data, data[-1] // 2)]


def _ifft_lower(a, ins, aux, ctx):
    (x,) = ins
    d = x.shape[-1] // 2
    pairs = x.astype(jnp.float32).reshape(x.shape[:-1] + (d, 2))
    z = jax.lax.complex(pairs[..., 0], pairs[..., 1])
    return [(jnp.fft.ifft(z, axis=-1).real * d).astype(x.dtype)]


_SIZE = {"compute_size": Param(p_int, 128)}
for _name, _shape, _lower in (("fft", _fft_shape, _fft_lower), ("ifft", _ifft_shape, _ifft_lower)):
    register(OpDef(name=f"_contrib_{_name}", params=dict(_SIZE), infer_shape=_shape, lower=_lower))


def _sketch_shape(a, s):
    data, h, sign = s
    if data is None:
        return s, [None]
    if a.out_dim < 1:
        fail(f"count_sketch: out_dim {a.out_dim} must be positive")
    d = data[-1]
    for name, given in (("h", h), ("s", sign)):
        if given is not None and (len(given) != 2 or given[1] != d):
            fail(f"count_sketch: {name} {tuple(given)} must be (1, {d}) like data's last axis")
    return [tuple(data), (1, d), (1, d)], [_last_axis_shape("count_sketch", data, a.out_dim)]


def _sketch_lower(a, ins, aux, ctx):
    data, h, sign = ins
    idx = jax.lax.stop_gradient(h).reshape(-1).astype(jnp.int32)
    values = data * jax.lax.stop_gradient(sign).reshape(-1).astype(data.dtype)
    out = jnp.zeros(data.shape[:-1] + (a.out_dim,), data.dtype)
    return [out.at[..., idx].add(values)]


register(
    OpDef(
        name="_contrib_count_sketch",
        params={"out_dim": Param(p_int), "processing_batch_size": Param(p_int, 32)},
        inputs=("data", "h", "s"),
        infer_shape=_sketch_shape,
        lower=_sketch_lower,
    )
)
