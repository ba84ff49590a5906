"""The elementwise and structured initializers of ``mx.init`` (MXNet 1.9.1 semantics)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from ._base import Initializer, alias, register
from ._fill import _assign, _draw

__all__ = [
    "Zero",
    "One",
    "Constant",
    "Uniform",
    "Normal",
    "Orthogonal",
    "Xavier",
    "MSRAPrelu",
    "Bilinear",
    "LSTMBias",
]


@register
@alias("zeros")
class Zero(Initializer):
    """Fill with 0 (MXNet ``mx.init.Zero``, alias ``'zeros'``)."""

    def __init__(self):
        super().__init__()

    def _init_weight(self, _: Any, arr: Any) -> None:
        _assign(arr, 0.0)


@register
@alias("ones")
class One(Initializer):
    """Fill with 1 (MXNet ``mx.init.One``, alias ``'ones'``)."""

    def __init__(self):
        super().__init__()

    def _init_weight(self, _: Any, arr: Any) -> None:
        _assign(arr, 1.0)


@register
class Constant(Initializer):
    """Fill with ``value``, a scalar or an array broadcastable to the parameter.

    Same as MXNet ``mx.init.Constant``; ``dumps`` turns array values into lists.
    """

    def __init__(self, value: Any):
        super().__init__(value=value)
        self.value = value

    def _init_weight(self, _: Any, arr: Any) -> None:
        _assign(arr, self.value)

    def dumps(self) -> str:
        val = self._kwargs["value"]
        if not np.isscalar(val):
            if hasattr(val, "asnumpy"):
                val = val.asnumpy()
            self._kwargs["value"] = np.asarray(val).tolist()
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])


@register
class Uniform(Initializer):
    """Uniform samples in ``[-scale, scale)`` (MXNet ``mx.init.Uniform``)."""

    def __init__(self, scale: float = 0.07):
        super().__init__(scale=scale)
        self.scale = scale

    def _init_weight(self, _: Any, arr: Any) -> None:
        _assign(arr, _draw("uniform", arr.shape, -self.scale, self.scale))


@register
class Normal(Initializer):
    """Gaussian samples with mean 0 and standard deviation ``sigma`` (MXNet ``Normal``)."""

    def __init__(self, sigma: float = 0.01):
        super().__init__(sigma=sigma)
        self.sigma = sigma

    def _init_weight(self, _: Any, arr: Any) -> None:
        _assign(arr, _draw("normal", arr.shape, 0.0, self.sigma))


@register
class Orthogonal(Initializer):
    """Scaled (semi-)orthogonal matrix (MXNet ``mx.init.Orthogonal``).

    Draws ``(shape[0], prod(shape[1:]))`` from U(-1, 1) (``rand_type='uniform'``) or N(0, 1)
    (``'normal'``), takes the thin SVD factor of that shape, multiplies by ``scale``.

    Raises:
        ValueError: an unknown ``rand_type``.
    """

    def __init__(self, scale: float = 1.414, rand_type: str = "uniform"):
        super().__init__(scale=scale, rand_type=rand_type)
        if rand_type not in ("uniform", "normal"):
            raise ValueError(
                f"Orthogonal rand_type must be 'uniform' or 'normal', got {rand_type!r}"
            )
        self.scale = scale
        self.rand_type = rand_type

    def _init_weight(self, _: Any, arr: Any) -> None:
        nout = int(arr.shape[0])
        nin = int(np.prod(arr.shape[1:]))
        if self.rand_type == "uniform":
            tmp = np.asarray(_draw("uniform", (nout, nin), -1.0, 1.0), np.float64)
        else:
            tmp = np.asarray(_draw("normal", (nout, nin), 0.0, 1.0), np.float64)
        u, _s, v = np.linalg.svd(tmp, full_matrices=False)
        res = u if u.shape == tmp.shape else v
        _assign(arr, (self.scale * res.reshape(arr.shape)).astype(np.float32))


@register
class Xavier(Initializer):
    """Glorot/Xavier initialisation (MXNet ``mx.init.Xavier``).

    ``hw = prod(shape[2:])``, ``fan_in = shape[1] * hw``, ``fan_out = shape[0] * hw``;
    ``factor`` = (in + out) / 2 (``'avg'``), in (``'in'``) or out (``'out'``);
    ``scale = sqrt(magnitude / factor)``; U(-scale, scale) (``rnd_type='uniform'``) or
    N(0, scale) (``'gaussian'``).

    Raises:
        ValueError: a parameter with fewer than 2 dimensions, or an unknown
            ``factor_type``/``rnd_type``.
    """

    def __init__(self, rnd_type: str = "uniform", factor_type: str = "avg", magnitude: float = 3):
        super().__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        self.rnd_type = rnd_type
        self.factor_type = factor_type
        self.magnitude = float(magnitude)

    def _init_weight(self, name: Any, arr: Any) -> None:
        shape = arr.shape
        if len(shape) < 2:
            raise ValueError(
                f"Xavier initializer cannot be applied to vector {name}. It requires at least "
                f"2D (shape {tuple(shape)}); give it another init, e.g. "
                f"mx.sym.Variable('{name}', init=mx.init.Zero())"
            )
        hw_scale = float(np.prod(shape[2:])) if len(shape) > 2 else 1.0
        fan_in, fan_out = shape[1] * hw_scale, shape[0] * hw_scale
        if self.factor_type == "avg":
            factor = (fan_in + fan_out) / 2.0
        elif self.factor_type == "in":
            factor = fan_in
        elif self.factor_type == "out":
            factor = fan_out
        else:
            raise ValueError(
                f"Incorrect factor type {self.factor_type!r}: use 'avg', 'in' or 'out'"
            )
        scale = float(np.sqrt(self.magnitude / factor))
        if self.rnd_type == "uniform":
            _assign(arr, _draw("uniform", shape, -scale, scale))
        elif self.rnd_type == "gaussian":
            _assign(arr, _draw("normal", shape, 0.0, scale))
        else:
            raise ValueError(f"Unknown random type {self.rnd_type!r}: use 'uniform' or 'gaussian'")


@register
class MSRAPrelu(Xavier):
    """He/MSRA initialisation for PReLU nets (MXNet ``mx.init.MSRAPrelu``).

    ``Xavier('gaussian', factor_type, magnitude=2 / (1 + slope**2))``.
    """

    def __init__(self, factor_type: str = "avg", slope: float = 0.25):
        magnitude = 2.0 / (1 + slope**2)
        super().__init__("gaussian", factor_type, magnitude)
        self._kwargs = {"factor_type": factor_type, "slope": slope}


@register
class Bilinear(Initializer):
    """Bilinear up-sampling kernel for Deconvolution weights (MXNet ``mx.init.Bilinear``)."""

    def __init__(self):
        super().__init__()

    def _init_weight(self, name: Any, arr: Any) -> None:
        self._init_bilinear(name, arr)


@register
class LSTMBias(Initializer):
    """Zeros, with the forget-gate quarter ``[H:2H]`` set to ``forget_bias`` (MXNet namesake).

    Gate order is i, f, c, o as in MXNet's LSTM cells.
    """

    def __init__(self, forget_bias: float = 1.0):
        super().__init__(forget_bias=forget_bias)
        self.forget_bias = forget_bias

    def _init_weight(self, name: Any, arr: Any) -> None:
        num_hidden = int(arr.shape[0] / 4)
        val = np.zeros(arr.shape, np.float32)
        val[num_hidden : 2 * num_hidden] = self.forget_bias
        _assign(arr, val)
