"""What ``NDArray.asnumpy()`` returns: a ``numpy.ndarray`` that converts to a Python number
when it holds one element, as arrays did under the NumPy 1 MXNet ran with.

MXNet's reductions give shape ``(1,)`` arrays, and a great deal of MXNet code writes
``float(loss.asnumpy())``, ``int(label[i])`` or ``'%f' % acc``; NumPy 2 (which JAX needs)
converts 0-d arrays only and raises ``TypeError`` on those. Everything else is numpy's own
behaviour: ``repr`` and pickles show a plain ``ndarray``, reductions to one value give
numpy scalars.
"""

from __future__ import annotations

import numpy as np


class HostArray(np.ndarray):
    """A numpy array whose one-element form converts with ``int``/``float``/``complex``."""

    def _one(self):
        if self.size != 1:
            raise TypeError(
                f"only arrays with one element convert to a Python number; this one has "
                f"shape {self.shape} (index an element first)"
            )
        return self.view(np.ndarray).reshape(-1)[0]

    def __float__(self) -> float:
        return float(self._one())

    def __int__(self) -> int:
        return int(self._one())

    def __complex__(self) -> complex:
        return complex(self._one())

    def __repr__(self) -> str:
        return repr(self.view(np.ndarray))

    def __reduce__(self):
        return self.view(np.ndarray).__reduce__()

    def __array_wrap__(self, array, context=None, return_scalar=False):
        # a reduction to one value is a numpy scalar, as for a plain ndarray (metrics
        # test isinstance(v, np.generic), hash it, use it as a key)
        if return_scalar or array.ndim == 0:
            return array.view(np.ndarray)[()]
        return super().__array_wrap__(array, context, return_scalar)


def host_array(data) -> np.ndarray:
    """A new writable copy of ``data`` as a ``HostArray``."""
    return np.array(data).view(HostArray)
