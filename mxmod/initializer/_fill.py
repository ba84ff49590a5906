"""Array fills shared by the initializers: in-place assignment and host-side random draws."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .. import random as _random


# ----------------------------------------------------------------------------- array helpers
# Values are built on the host with numpy and moved once with device_put: no XLA compile per
# parameter shape (eager jax.random would compile threefry for every new shape).
def _assign(arr: Any, value: Any) -> None:
    """``arr[:] = value`` for an NDArray, keeping its dtype, shape and placement."""
    old = arr._data
    if hasattr(value, "_data"):
        value = value._data
    if isinstance(value, jax.Array) and value.shape == old.shape and value.dtype == old.dtype:
        new = value
    else:
        new = np.ascontiguousarray(np.broadcast_to(np.asarray(value, dtype=old.dtype), old.shape))
    sharding = getattr(old, "sharding", None)
    arr._set_data(jax.device_put(new, sharding) if sharding is not None else jnp.asarray(new))


def _rng() -> np.random.Generator:
    """A numpy generator seeded from ``mxmod.random.next_key()`` (so ``mx.random.seed`` works)."""
    key = _random.next_key()
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        key = jax.random.key_data(key)
    return np.random.default_rng(np.asarray(key).astype(np.uint32).ravel().tolist())


def _draw(kind: str, shape: tuple, a: float, b: float) -> np.ndarray:
    """float32 samples: ``kind='uniform'`` in [a, b), ``'normal'`` mean a, std b."""
    shape = tuple(int(s) for s in shape)
    rng = _rng()
    if kind == "uniform":
        x, scale = rng.random(shape, dtype=np.float32), b - a
    else:
        x, scale = rng.standard_normal(shape, dtype=np.float32), b
    x *= scale  # in place: float32 arithmetic as ``a + scale * x``, without temporaries
    x += a
    return x
