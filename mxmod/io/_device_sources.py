"""NDArrayIter's arrays kept on the device(s), batches gathered there.

``place_on`` puts every source once on the devices of the Module's input sharding (a full
copy per device: any device can then produce its own rows of a batch). Batch ``j`` from
``start`` takes samples ``perm[(start + j * batch + arange(batch)) % n]`` along the batch
axis, so a padded last batch wraps to the start exactly as the host path does. One
compiled program gathers a run of consecutive batches at a time (as many as fit
``RUN_BYTES``, at most ``MAX_RUN``: a dispatch costs more than gathering a small batch;
XLA:CPU compiles a run of 32 in about 0.8 s (16: 0.4 s, but steps_per_dispatch=16 lost 15%)),
each batch a separate array with the input sharding the compiled step reads, so the
step's own ``device_put`` is a no-op. No data crosses from the host per batch.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, SingleDeviceSharding
from jax.sharding import PartitionSpec as P

from .. import xla_options
from ..ndarray._device import ctx_of
from ..program_tiers import wrap


def as_sharding(name, target):
    """A jax Sharding for the placement target of source ``name``: a Sharding, a jax
    Device or an mxmod Context."""
    target = getattr(target, "jax_device", target)  # a Context
    if isinstance(target, jax.sharding.Sharding):
        return target
    if isinstance(target, jax.Device):
        return SingleDeviceSharding(target)
    raise TypeError(
        f"NDArrayIter.place_on: the target of {name!r} is {target!r}; give a jax "
        "Sharding, a jax Device or an mx.Context (or a dict of them by input name)"
    )


def replicated(sharding):
    """A sharding holding a full copy on every device of ``sharding``."""
    if isinstance(sharding, SingleDeviceSharding):
        return sharding
    if isinstance(sharding, NamedSharding):
        return NamedSharding(sharding.mesh, P())
    devices = sorted(sharding.device_set, key=lambda d: d.id)
    return NamedSharding(Mesh(np.array(devices), ("_all",)), P())


MAX_RUN = 32  # batches gathered per dispatch (XLA:CPU compile time grows with it)
RUN_BYTES = 4 << 20  # ...and at most this many bytes of them


def _gather(arrays, perm, start, *, n, batch, axis, run):
    """``run`` consecutive batches from ``start``: a flat list, batch by batch."""
    pos = (start + jnp.arange(run * batch, dtype=perm.dtype)) % n
    idx = perm[pos].reshape(run, batch)
    out = []
    for j in range(run):
        out.extend(jnp.take(a, idx[j], axis=axis, mode="clip") for a in arrays)
    return out


_GATHERS: dict = {}  # (static layout, output shardings) -> the jitted gather


def _light(traced, args) -> float:
    return 0.0


class DeviceSources:
    """The sources of one NDArrayIter on its placement's devices.

    Args:
        arrays: the host arrays (all sources, data then label).
        shardings: where each source's batches go (one per array, same devices).
        axis: the batch axis.
        batch: the batch size.
    """

    def __init__(self, arrays, shardings, axis, batch):
        self.shardings = list(shardings)
        self._home = replicated(self.shardings[0])
        self.arrays = jax.device_put(list(arrays), [self._home] * len(arrays))
        # the Context of each source's batches (None: several devices, the current one)
        self.contexts = [
            ctx_of(a) if isinstance(sh, SingleDeviceSharding) else None
            for a, sh in zip(self.arrays, self.shardings)
        ]
        self.n = n = int(arrays[0].shape[axis])
        self.batch = int(batch)
        sample_bytes = sum(a.nbytes for a in arrays) // max(n, 1)
        self.run = max(1, min(MAX_RUN, RUN_BYTES // max(1, sample_bytes * self.batch)))
        self._static = dict(n=n, batch=self.batch, axis=axis, run=self.run)
        self._programs = {}  # which sources -> the jitted gather
        self._order_host = self._order = None
        self._ready = {}  # which sources -> (perm, first start, [batch arrays...])

    def _program(self, which):
        fn = self._programs.get(which)
        if fn is None:  # shared by every iterator with this layout: a new one compiles nothing
            out = tuple(self.shardings[i] for i in which) * self.run
            key = (tuple(sorted(self._static.items())), out)
            fn = _GATHERS.get(key)
            if fn is None:
                jitted = xla_options.jit(partial(_gather, **self._static), out_shardings=list(out))
                # a gather moves at most RUN_BYTES: light, whatever the sources' size
                fn = _GATHERS[key] = wrap(jitted, None, _light)
            self._programs[which] = fn
        return fn

    def _order_on_device(self, perm):
        """The sample order on the devices (re-sent only when the host order changes)."""
        if self._order is None or perm is not self._order_host:
            order = np.arange(self.n) if perm is None else perm
            self._order = jax.device_put(order.astype(np.int32), self._home)
            self._order_host = perm
        return self._order

    def gather(self, which, perm, start):
        """Arrays of sources ``which`` (a tuple of indices) for the batch at ``start``
        (a sample position, possibly past the end: it wraps), in the order ``perm``."""
        ready = self._ready.get(which)
        if ready is not None and ready[0] is perm:
            j, off = divmod(start - ready[1], self.batch)
            if off == 0 and 0 <= j < self.run:
                k = len(which)
                return ready[2][j * k : (j + 1) * k]
        fn = self._program(which)
        out = fn([self.arrays[i] for i in which], self._order_on_device(perm), start)
        self._ready[which] = (perm, start, out)
        return out[: len(which)]

    def compiles(self, which):
        """How many programs the gather of ``which`` has compiled (tests)."""
        fn = self._programs.get(which)
        return 0 if fn is None else fn._cache_size()
