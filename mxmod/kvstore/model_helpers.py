"""The Module's kvstore helpers (MXNet keeps them in ``model.py``; spec 3.2, 3.3).

``_update_params*`` recognise a Module's own executor-group arrays (with its own updater
or store) and queue the update into the Module's compiled step instead of MXNet's
per-index loop; any other arrays run MXNet's loop.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from .base import KVStoreBase
from .create import check_type, create


def create_kvstore(kvstore: Any, num_device: int, arg_params: dict) -> tuple:
    """Pick the store and whether it runs the optimizer (MXNet ``model._create_kvstore``).

    ``None`` -> no store; a store object -> used as is; a string -> no store for one device
    unless ``'dist'`` is in it, else ``create(kvstore)`` (for exactly ``'local'``, a parameter
    above 16M elements turns ``update_on_kvstore`` off). ``update_on_kvstore`` starts from
    ``MXNET_UPDATE_ON_KVSTORE`` (default 1) and needs ``kv.is_capable('optimizer')``.

    Returns:
        ``(kv or None, update_on_kvstore)``.

    Raises:
        TypeError: ``kvstore`` is none of the above.
    """
    update_on_kvstore = bool(int(os.getenv("MXNET_UPDATE_ON_KVSTORE", "1")))
    if kvstore is None:
        kv = None
    elif isinstance(kvstore, KVStoreBase):
        kv = kvstore
    elif isinstance(kvstore, str):
        if num_device == 1 and "dist" not in kvstore:
            check_type(kvstore)  # no store is needed, but a misspelt name is still an error
            kv = None
        else:
            kv = create(kvstore)
            if kvstore == "local":
                sizes = [int(np.prod(p.shape)) for p in (arg_params or {}).values()]
                if max(sizes, default=0) > 1024 * 1024 * 16:
                    update_on_kvstore = False
    else:
        raise TypeError("kvstore must be KVStore, str or None")
    if kv is None:
        update_on_kvstore = False
    else:
        update_on_kvstore &= kv.is_capable(KVStoreBase.OPTIMIZER)
    return kv, update_on_kvstore


def initialize_kvstore(kvstore, param_arrays, arg_params, param_names, update_on_kvstore):
    """``init`` each parameter (or ``broadcast`` it to the devices when the store updates)."""
    for idx, param_on_devs in enumerate(param_arrays):
        name = param_names[idx]
        if not update_on_kvstore or getattr(arg_params[name], "stype", "default") != "default":
            kvstore.init(name, arg_params[name])
        else:
            kvstore.broadcast(name, arg_params[name], out=param_on_devs)


def _module_box(param_arrays, grad_arrays):
    """The optimizer box of a Module whose own executor-group arrays these are (None
    otherwise): such calls become one compiled update instead of a per-index loop."""
    group = getattr(param_arrays, "group", None)
    if group is None or getattr(grad_arrays, "group", None) is not group:
        return None, None
    box = group.state.opt
    if box is None or not box.fused:
        return None, None
    return group, box


def update_params_on_kvstore(param_arrays, grad_arrays, kvstore, param_names):
    """Push each parameter's device gradients and pull the store-updated weight back."""
    group, box = _module_box(param_arrays, grad_arrays)
    if group is not None and kvstore is box.kvstore and box.update_on_kvstore:
        group.request_update()  # the same sum-then-update, fused into the step
        return
    for index, (arg_list, grad_list) in enumerate(zip(param_arrays, grad_arrays)):
        if grad_list[0] is None:
            continue
        name = param_names[index]
        kvstore.pushpull(name, grad_list, out=arg_list, priority=-index)


def update_params(param_arrays, grad_arrays, updater, num_device, kvstore=None, param_names=None):
    """Sum gradients through the store (if any), then update every device's replica.

    Device ``k``'s copy of parameter ``i`` uses updater index ``i * num_device + k``; one
    aggregated updater call per device.
    """
    group, box = _module_box(param_arrays, grad_arrays)
    if (
        group is not None
        and updater is box.updater
        and not box.update_on_kvstore
        and ((kvstore is not None and kvstore is box.kvstore) or num_device == 1)
    ):
        group.request_update()  # the same sum-then-update, fused into the step
        return
    # otherwise MXNet's loop; without a kvstore each device's copy steps with its own
    # gradient (a Module keeps such copies apart: StepState.per_device)
    updates: list = [[] for _ in range(num_device)]
    for i, (arg_list, grad_list) in enumerate(zip(param_arrays, grad_arrays)):
        if grad_list[0] is None:
            continue
        if kvstore:
            kvstore.pushpull(param_names[i], grad_list, priority=-i)
        for k, (w, g) in enumerate(zip(arg_list, grad_list)):
            updates[k].append((i * num_device + k, g, w))
    for dev_updates in updates:
        if dev_updates:
            idx, grads, weights = zip(*dev_updates)
            updater(list(idx), list(grads), list(weights))


# MXNet's names (``mx.model._update_params`` and friends)
_create_kvstore = create_kvstore
_initialize_kvstore = initialize_kvstore
_update_params = update_params
_update_params_on_kvstore = update_params_on_kvstore
