"""Several worker processes: ``jax.distributed`` set up from the launcher's environment.

MXNet's ``dist_*`` stores talk to ps-lite servers; mxmod has no servers. Its workers are
the processes of one multi-controller JAX program, and the gradient sum is a ``psum``
over a mesh spanning every process's devices (see ``executor/placement.py``).

Where the job comes from (read once, by :func:`initialize`):

* MXNet's launcher variables (``tools/launch.py``, ``dmlc_tracker``, ``python -m
  mxmod.launch``): ``DMLC_PS_ROOT_URI`` and ``DMLC_PS_ROOT_PORT`` (the coordinator
  address), ``DMLC_NUM_WORKER`` and the worker's rank in ``DMLC_WORKER_ID`` or
  ``DMLC_TASK_ID``. Processes started with ``DMLC_ROLE=server``/``scheduler`` have no
  work in mxmod and exit at import, as MXNet's servers exit once they are done.
* JAX's: ``JAX_COORDINATOR_ADDRESS`` with ``JAX_NUM_PROCESSES`` and ``JAX_PROCESS_ID``
  (the arguments of ``jax.distributed.initialize``), or ``JAX_COORDINATOR_ADDRESS`` alone
  where JAX detects the rest from the cluster (SLURM, Open MPI, ...).

A worker connects at ``import mxmod`` when ``DMLC_ROLE`` or ``JAX_PROCESS_ID`` is set
(``jax.distributed`` must start before JAX's first computation), else when a ``dist_*``
store is created. ``MXMOD_DIST_INIT_TIMEOUT`` (seconds, default 120) bounds the wait for
the other workers; ``MXMOD_DIST_HEARTBEAT_TIMEOUT`` (default 60) how long a dead worker
goes unnoticed.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys

import numpy as np

from ..base import MXNetError

__all__ = ["check_same", "initialize", "is_initialized", "num_workers", "rank"]

_DMLC = ("DMLC_PS_ROOT_URI", "DMLC_PS_ROOT_PORT", "DMLC_NUM_WORKER")
_STATE: dict = {}


def _int_var(env, name: str, low: int = 0) -> int:
    raw = env[name]
    try:
        value = int(raw)
    except ValueError:
        raise MXNetError(f"{name}={raw!r} is not an integer; set it to a number") from None
    if value < low:
        raise MXNetError(f"{name}={value} must be >= {low}")
    return value


def _timeout(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = int(float(raw))
    except ValueError:
        raise MXNetError(f"{name}={raw!r} is not a number of seconds") from None
    if value < 1:
        raise MXNetError(f"{name}={value} must be at least 1 second")
    return value


def resolve(env=None):
    """``(coordinator, num_processes, process_id, source)`` from the environment, or None
    when nothing names a job. ``num_processes``/``process_id`` are None when JAX is left to
    detect them from the cluster.

    Raises:
        MXNetError: a variable of a family is missing, not a number, or inconsistent.
    """
    env = os.environ if env is None else env
    found = None
    if any(v in env for v in _DMLC):
        missing = [v for v in _DMLC if v not in env]
        rank_var = next((v for v in ("DMLC_WORKER_ID", "DMLC_TASK_ID") if v in env), None)
        if rank_var is None:
            missing.append("DMLC_WORKER_ID (or DMLC_TASK_ID)")
        if missing:
            raise MXNetError(
                f"dist kvstore: the MXNet launcher variables are incomplete: "
                f"{', '.join(missing)} not set; start the workers with "
                f"`python -m mxmod.launch -n N ...` or set all of "
                f"{', '.join(_DMLC)} and DMLC_WORKER_ID"
            )
        port = _int_var(env, "DMLC_PS_ROOT_PORT", 1)
        n = _int_var(env, "DMLC_NUM_WORKER", 1)
        pid = _int_var(env, rank_var)
        if pid >= n:
            raise MXNetError(
                f"{rank_var}={pid} is not a worker rank of DMLC_NUM_WORKER={n} "
                f"(ranks are 0..{n - 1})"
            )
        found = (f"{env['DMLC_PS_ROOT_URI']}:{port}", n, pid, "DMLC_*")
    jax_vars = ("JAX_NUM_PROCESSES", "JAX_PROCESS_ID")
    if "JAX_COORDINATOR_ADDRESS" in env or any(v in env for v in jax_vars):
        if "JAX_COORDINATOR_ADDRESS" not in env:
            raise MXNetError(
                "JAX_NUM_PROCESSES/JAX_PROCESS_ID are set but "
                "JAX_COORDINATOR_ADDRESS is not; set it to host:port of rank 0"
            )
        given = [v in env for v in jax_vars]
        if any(given) and not all(given):
            lack = jax_vars[given.index(False)]
            raise MXNetError(
                f"{lack} is not set (the other of JAX_NUM_PROCESSES/"
                "JAX_PROCESS_ID is); set both, or neither to let JAX detect them"
            )
        n = _int_var(env, "JAX_NUM_PROCESSES", 1) if all(given) else None
        pid = _int_var(env, "JAX_PROCESS_ID") if all(given) else None
        if n is not None and pid >= n:
            raise MXNetError(
                f"JAX_PROCESS_ID={pid} is not a rank of JAX_NUM_PROCESSES={n} "
                f"(ranks are 0..{n - 1})"
            )
        mine = (env["JAX_COORDINATOR_ADDRESS"], n, pid, "JAX_*")
        if found is not None and mine[:3] != found[:3] and n is not None:
            raise MXNetError(
                f"the DMLC_* variables describe worker {found[2]} of {found[1]} at "
                f"{found[0]} but the JAX_* ones worker {pid} of {n} at {mine[0]}; "
                "unset one family"
            )
        found = found or mine
    return found


def is_initialized() -> bool:
    """Whether this process is one worker of a multi-process job."""
    return bool(_STATE.get("up"))


def _jax_distributed_up() -> bool:
    from jax._src import distributed  # the only way to ask without starting a backend

    return getattr(distributed.global_state, "client", None) is not None


def _backends_started() -> bool:
    from jax._src import xla_bridge

    return xla_bridge.backends_are_initialized()


def initialize(required: bool = False) -> bool:
    """Join the job the environment describes (idempotent). Returns whether this process
    is a worker of a multi-process job.

    Args:
        required: raise when the environment describes no job (a ``dist_*`` store).

    Raises:
        MXNetError: variables missing or inconsistent; the coordinator cannot be reached
            in ``MXMOD_DIST_INIT_TIMEOUT`` seconds; JAX already ran a computation.
    """
    if _STATE.get("up") or _jax_distributed_up():
        _STATE["up"] = True
        return True
    job = resolve()
    if job is None:
        if required:
            raise MXNetError(
                "a dist kvstore needs several worker processes, but no launcher variables "
                "are set: start the script with `python -m mxmod.launch -n N python "
                "script.py` (or MXNet's tools/launch.py), or set JAX_COORDINATOR_ADDRESS, "
                "JAX_NUM_PROCESSES and JAX_PROCESS_ID in every worker; on one machine "
                "use kvstore 'local' or 'device'"
            )
        return False
    address, n, pid, source = job
    if _backends_started():
        raise MXNetError(
            f"the {source} variables describe worker {pid} of {n}, but JAX already ran a "
            "computation in this process, so it cannot join the job any more: create the "
            "dist kvstore (or import mxmod) before anything touches a device"
        )
    import jax

    init_t = _timeout("MXMOD_DIST_INIT_TIMEOUT", 120)
    hb_t = _timeout("MXMOD_DIST_HEARTBEAT_TIMEOUT", 60)
    if pid != 0:  # JAX ends the process when it cannot connect: check first, and say why
        _wait_for_coordinator(address, init_t, pid, n, source)
    else:  # JAX ends rank 0 with its own message if some worker never comes: say what for
        print(
            f"mxmod: worker 0 of {n} serving the job at {address}; waiting up to {init_t} s "
            f"(MXMOD_DIST_INIT_TIMEOUT) for ranks 1..{n - 1} to join",
            file=sys.stderr,
            flush=True,
        )
    try:
        jax.distributed.initialize(
            address, n, pid, initialization_timeout=init_t, heartbeat_timeout_seconds=hb_t
        )
    except Exception as err:  # noqa: BLE001 - JAX raises several types (runtime, value...)
        raise MXNetError(
            f"worker {pid} of {n} could not join the job at {address} (from the {source} "
            f"variables) within {init_t} s: {str(err).splitlines()[0][:300]}. Check that "
            "rank 0 is running and that the address is reachable; MXMOD_DIST_INIT_TIMEOUT "
            "sets the wait"
        ) from None
    _STATE["up"] = True
    logging.getLogger(__name__).info(
        "mxmod: worker %d of %d joined %s", jax.process_index(), jax.process_count(), address
    )
    return True


def _wait_for_coordinator(address: str, timeout: int, pid: int, n: int, source: str) -> None:
    import socket
    import time

    host, _, port = address.rpartition(":")
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=2):
                return
        except OSError as err:
            if time.monotonic() >= deadline:
                raise MXNetError(
                    f"worker {pid} of {n} could not join the job at {address} (from the "
                    f"{source} variables) within {timeout} s: nothing accepts connections "
                    f"there ({err}). Check that rank 0 is running and that the address is "
                    "reachable; MXMOD_DIST_INIT_TIMEOUT sets the wait"
                ) from None
            time.sleep(0.2)


def exit_if_server_role() -> None:
    """MXNet's launcher also starts parameter servers and a scheduler running the same
    script; mxmod needs neither, so such a process ends here (as MXNet's do when done)."""
    role = os.environ.get("DMLC_ROLE", "worker")
    if role in ("server", "scheduler"):
        print(
            f"mxmod: DMLC_ROLE={role}: mxmod needs no parameter servers or scheduler "
            "(workers reduce with jax.distributed); exiting",
            file=sys.stderr,
        )
        sys.exit(0)


def maybe_initialize_at_import() -> None:
    """Join the job at import when a launcher started this process (see the module doc)."""
    env = os.environ
    if "DMLC_ROLE" not in env and "JAX_PROCESS_ID" not in env:
        return
    exit_if_server_role()
    if env.get("DMLC_ROLE", "worker") == "worker" or "JAX_PROCESS_ID" in env:
        initialize()


def rank() -> int:
    import jax

    return jax.process_index() if is_initialized() else 0


def num_workers() -> int:
    import jax

    return jax.process_count() if is_initialized() else 1


def allgather(values: np.ndarray) -> np.ndarray:
    """``values`` of every worker, stacked on a new leading axis (rank order)."""
    import jax
    from jax.experimental import multihost_utils

    try:
        return np.asarray(multihost_utils.process_allgather(np.asarray(values)))
    except jax.errors.JaxRuntimeError as err:
        raise_worker_lost(err)


def check_same(what: str, text: str) -> None:
    """Raise naming the workers whose ``text`` differs from rank 0's (a symbol, shapes).

    Raises:
        MXNetError: some worker disagrees.
    """
    if num_workers() <= 1:
        return
    digest = np.frombuffer(hashlib.sha256(text.encode()).digest(), np.uint8).astype(np.int32)
    every = allgather(digest)
    bad = [r for r in range(every.shape[0]) if not np.array_equal(every[r], every[0])]
    if bad:
        raise MXNetError(
            f"workers disagree on {what}: rank(s) {bad} differ from rank 0; "
            "every worker must build the same symbol and bind the same shapes"
        )


def lost_ranks() -> list:
    """Ranks the coordination service no longer hears from (empty when unknown)."""
    import jax
    from jax._src import distributed

    client = getattr(distributed.global_state, "client", None)
    if client is None or not hasattr(client, "get_live_nodes"):
        return []
    try:
        live = client.get_live_nodes(list(range(jax.process_count())))
    except Exception:  # noqa: BLE001 - the service itself may be gone (rank 0 died)
        return [0] if jax.process_index() != 0 else []
    return [r for r in range(jax.process_count()) if r not in live]


def raise_worker_lost(err: Exception) -> None:
    """Re-raise a failed collective as an error naming the workers that are gone.

    Waits (at most the heartbeat timeout) for the coordination service to notice which.

    Raises:
        MXNetError: always.
    """
    import time

    hb = _timeout("MXMOD_DIST_HEARTBEAT_TIMEOUT", 60)
    print(
        f"mxmod dist_sync: a collective failed on worker {rank()} (a peer worker stopped?); "
        f"asking the coordination service which (at most {hb} s)",
        file=sys.stderr,
        flush=True,
    )
    deadline = time.monotonic() + hb + 5
    lost = lost_ranks()
    while not lost and time.monotonic() < deadline:
        time.sleep(0.2)
        lost = lost_ranks()
    who = f"worker rank(s) {lost} stopped" if lost else "a worker stopped or failed"
    raise MXNetError(
        f"dist_sync: {who} during a step on worker {rank()}, so the gradient "
        f"sum cannot complete; stopping this worker too. Cause: "
        f"{str(err).splitlines()[0][:300]}"
    ) from None


def flush_across_workers(group) -> None:
    """``group.flush()`` of a Module on a mesh spanning processes: a failed collective
    names the lost workers, and at most two steps are in flight (queued gloo collectives
    across processes stall on CPU), so each flush waits for the step before it."""
    import jax

    try:
        group._flush()
        prev, group._in_flight = getattr(group, "_in_flight", None), group._outs[:1]
        jax.block_until_ready(prev)
    except jax.errors.JaxRuntimeError as err:
        raise_worker_lost(err)
