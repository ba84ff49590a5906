"""Views of ``stype='row_sparse'`` parameters: RowSparseNDArrays over the group's state.

MXNet's executors hold a row_sparse weight as a ``RowSparseNDArray``; so do
``execs[k].arg_dict``, ``param_arrays`` and the group's ``arg_dict`` here. The compiled
step keeps the weight dense, so the view stores every row (as the weights
``get_params`` hands out); reading and writing go through the group's state as
``StateView``'s do.
"""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from ..ndarray.sparse import RowSparseNDArray


class RowSparseStateView(RowSparseNDArray):
    """A RowSparseNDArray whose rows live in the group's state (all of them stored)."""

    def __init__(self, read: Callable, write: Callable, ctx, shape: tuple):
        self._base, self._offset, self._vshape, self._cache = None, 0, (), (None, None)
        self._arr = None
        self._read = read
        self._write = write
        self._ctx = ctx
        self._sshape = tuple(int(d) for d in shape)

    @classmethod
    def _from_parts(cls, shape: tuple, data: Any, aux: list, ctx) -> RowSparseNDArray:
        """New arrays made from a view (copies, results) are plain RowSparseNDArrays."""
        return RowSparseNDArray._from_parts(shape, data, aux, ctx)

    @property
    def _sdata(self):
        """The stored rows (all of them), on the view's device."""
        x = self._read()
        return x if len(x.devices()) == 1 else jax.device_put(x, self._ctx.jax_device)

    def _densify(self):
        return self._read()  # every row stored: the dense value itself

    @property
    def _saux(self) -> tuple:
        return (jnp.arange(self._sshape[0], dtype=jnp.int32),)

    def _set_parts(self, shape: tuple, data: Any, aux: list) -> None:
        """Writes (``[:] = ``, ``copyto``, ``+=``) set the stored rows; the others are zero."""
        if tuple(shape) != self._sshape:
            raise ValueError(f"cannot write an array of shape {tuple(shape)} into {self._sshape}")
        dev = self._ctx.jax_device  # one device: the parts may be replicated over several
        data = jax.device_put(jnp.asarray(data), dev)
        rows = np.asarray(aux[0])
        if len(rows) == self._sshape[0] and (rows == np.arange(len(rows))).all():
            self._write(data)  # every row stored, in order
            return
        zeros = jax.device_put(jnp.zeros(self._sshape, data.dtype), dev)
        self._write(zeros.at[jax.device_put(jnp.asarray(rows), dev)].set(data))
