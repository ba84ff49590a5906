"""Where a program runs: one device, or a mesh of devices (``shard_map`` + collectives).

A placement is a strategy object the programs are written against, not a subclass that
overrides them: ``wrap`` turns a per-device function into one over all devices, and the
collectives (``psum``/``pmean``/``stack``) are the identity on one device. ``put`` places a
batch array (this process's rows) and ``local`` returns this process's part of a result;
both only differ from ``device_put``/identity for ``ProcessMeshPlacement``, the mesh over
every worker's devices of a multi-process ``dist_sync`` job.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, SingleDeviceSharding
from jax.sharding import PartitionSpec as P

AXIS = "dev"


def spec(axis: int) -> P:
    """PartitionSpec splitting ``axis`` over the mesh (a negative axis: replicated)."""
    if axis < 0:
        return P()
    return P(*([None] * axis + [AXIS]))


class OneDevice:
    """Everything on one device: plain ``jit``."""

    multi = False
    n = 1
    processes = 1

    def __init__(self, device):
        self.devices = [device]
        self.key = ("one", device)
        self._sharding = SingleDeviceSharding(device)

    def replicated(self):
        return self._sharding

    def sharding(self, axis: int):
        return self._sharding

    def wrap(self, per_device: Callable, in_specs, out_specs) -> Callable:
        return per_device

    def device_key(self, key):
        return key

    def psum(self, tree):
        return tree

    def pmean(self, tree):
        return tree

    def stack(self, tree):
        """Per-device values with a leading device axis (of size 1 here)."""
        return jax.tree_util.tree_map(lambda x: jnp.asarray(x)[None], tree)

    def put(self, x, axis: int):
        """``x`` (this process's rows of a batch array) placed split along ``axis``."""
        return jax.device_put(x, self.sharding(axis))

    def local(self, x, axis: int):
        """This process's part of a program result split along ``axis`` (all of it)."""
        return x


class MeshPlacement(OneDevice):
    """One program over a 1-d mesh of distinct devices; the batch axis is split."""

    multi = True

    def __init__(self, devices: list):
        self.devices = list(devices)
        self.n = len(self.devices)
        self.mesh = Mesh(self.devices, (AXIS,))
        self.key = ("mesh", tuple(self.devices))

    def replicated(self):
        return NamedSharding(self.mesh, P())

    def sharding(self, axis: int):
        return NamedSharding(self.mesh, spec(axis))

    def wrap(self, per_device: Callable, in_specs, out_specs) -> Callable:
        return jax.shard_map(
            per_device, mesh=self.mesh, in_specs=in_specs, out_specs=out_specs, check_vma=False
        )

    def device_key(self, key):
        return jax.random.fold_in(key, jax.lax.axis_index(AXIS))

    def psum(self, tree):
        return jax.lax.psum(tree, AXIS)

    def pmean(self, tree):
        return jax.lax.pmean(tree, AXIS)


class ProcessMeshPlacement(MeshPlacement):
    """A mesh over the devices of every process of a ``jax.distributed`` job (``dist_sync``).

    Each worker binds the same number of devices; the mesh lists them rank by rank, so a
    global batch is the workers' batches stacked in rank order and ``psum`` sums the
    gradients of all of them. Replicated arrays (parameters) are equal on every worker.
    """

    def __init__(self, local_devices: list):
        mine = jax.local_devices()
        positions = [mine.index(d) for d in local_devices]
        every = [jax.local_devices(process_index=p) for p in range(jax.process_count())]
        super().__init__([devs[i] for devs in every for i in positions])
        self.processes = jax.process_count()
        self.local_devices = list(local_devices)
        self.local_mesh = Mesh(self.local_devices, (AXIS,))
        self.key = ("procmesh", tuple(self.devices))

    def put(self, x, axis: int):
        if axis < 0:
            return jax.make_array_from_process_local_data(self.replicated(), x)
        shape = list(x.shape)
        shape[axis] *= self.processes
        return jax.make_array_from_process_local_data(self.sharding(axis), x, tuple(shape))

    def place_replicated(self, x):
        """``x`` (the same value in every process) as a replicated global array, without
        the cross-process equality check ``device_put`` makes."""
        if isinstance(x, jax.Array) and x.sharding == self.replicated():
            return x
        if isinstance(x, jax.Array) and not x.is_fully_addressable:
            x = x.addressable_data(0)
        host = np.asarray(x)
        return jax.make_array_from_callback(host.shape, self.replicated(), lambda i: host[i])

    def local(self, x, axis: int):
        if not isinstance(x, jax.Array):
            return jax.tree_util.tree_map(lambda leaf: self.local(leaf, axis), x)
        if x.is_fully_addressable:
            return x
        if axis < 0 or x.sharding.is_fully_replicated:
            return x.addressable_data(0)
        shards = sorted(x.addressable_shards, key=lambda s: s.index[axis].start or 0)
        shape = list(x.shape)
        shape[axis] //= self.processes
        return jax.make_array_from_single_device_arrays(
            tuple(shape), NamedSharding(self.local_mesh, spec(axis)), [s.data for s in shards]
        )
