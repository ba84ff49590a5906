"""Start N local worker processes of a ``dist_sync`` job (MXNet's ``tools/launch.py``, local mode).

    python -m mxmod.launch -n 2 python train.py --kv-store dist_sync

Every worker runs the command with MXNet's launcher variables (``DMLC_ROLE=worker``,
``DMLC_PS_ROOT_URI``/``DMLC_PS_ROOT_PORT``: the address of rank 0's coordinator,
``DMLC_NUM_WORKER``, ``DMLC_WORKER_ID``), so ``import mxmod`` joins the job
(``mxmod/kvstore/dist.py``). No servers or scheduler are started: the workers reduce with
``jax.distributed``. For development and tests on one machine; on a cluster start one
process per host with your scheduler, as JAX documents, and set the same variables (or
JAX's).

When a worker exits with an error the launcher names its rank, stops the others
(``SIGTERM``, then ``SIGKILL`` after ``--grace`` seconds) and exits with that code.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time

__all__ = ["main", "worker_env"]


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def worker_env(
    rank: int, num_workers: int, host: str, port: int, cpu_devices=None, base=None
) -> dict:
    """The environment of worker ``rank`` (a copy of ``base``, default ``os.environ``)."""
    env = dict(os.environ if base is None else base)
    for stale in ("JAX_COORDINATOR_ADDRESS", "JAX_NUM_PROCESSES", "JAX_PROCESS_ID", "DMLC_TASK_ID"):
        env.pop(stale, None)
    env.update(
        {
            "DMLC_ROLE": "worker",
            "DMLC_PS_ROOT_URI": host,
            "DMLC_PS_ROOT_PORT": str(port),
            "DMLC_NUM_WORKER": str(num_workers),
            "DMLC_NUM_SERVER": "0",
            "DMLC_WORKER_ID": str(rank),
        }
    )
    if cpu_devices:
        flags = [
            f
            for f in env.get("XLA_FLAGS", "").split()
            if not f.startswith("--xla_force_host_platform_device_count")
        ]
        flags.append(f"--xla_force_host_platform_device_count={cpu_devices}")
        env["XLA_FLAGS"] = " ".join(flags)
        env["JAX_PLATFORMS"] = "cpu"
    return env


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m mxmod.launch",
        allow_abbrev=False,
        description="Start N local mxmod workers of a dist_sync job (MXNet's launch.py "
        "--launcher local).",
    )
    p.add_argument(
        "-n", "--num-workers", type=int, required=True, help="number of worker processes"
    )
    p.add_argument(
        "-s",
        "--num-servers",
        type=int,
        default=None,
        help="accepted for MXNet launch scripts; mxmod starts no servers",
    )
    p.add_argument(
        "--launcher", default="local", help="only 'local' (start the workers on this machine)"
    )
    p.add_argument("--host", default="127.0.0.1", help="coordinator address (rank 0's host)")
    p.add_argument("--port", type=int, default=0, help="coordinator port (0: a free one)")
    p.add_argument(
        "--cpu-devices",
        type=int,
        default=None,
        help="simulate this many CPU devices per worker (XLA_FLAGS)",
    )
    p.add_argument(
        "--grace",
        type=float,
        default=5.0,
        help="seconds the other workers get to stop after one fails",
    )
    p.add_argument(
        "command",
        nargs="*",
        help="the command every worker runs (after the launcher's own options)",
    )
    return p


_VALUED = {
    "-n",
    "--num-workers",
    "-s",
    "--num-servers",
    "--launcher",
    "--host",
    "--port",
    "--cpu-devices",
    "--grace",
}


def _split(argv: list) -> tuple:
    """(launcher options, command): the command starts at the first word that is neither
    an option of the launcher nor its value, so its own options are left alone."""
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            return argv[:i], argv[i + 1 :]
        if not word.startswith("-"):
            break
        i += 2 if word in _VALUED else 1
    return argv[:i], argv[i:]


def _stop(procs: dict, grace: float) -> None:
    for proc in procs.values():
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for proc in procs.values():
        left = max(0.0, deadline - time.monotonic())
        try:
            proc.wait(timeout=left)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def main(argv=None) -> int:
    """Run the launcher; returns the exit code (0 when every worker succeeded)."""
    own, command = _split(list(sys.argv[1:] if argv is None else argv))
    args = _parser().parse_args(own)
    if not command:
        _parser().error("give the command every worker runs, e.g. python train.py")
    if args.num_workers < 1:
        _parser().error(f"-n must be at least 1, got {args.num_workers}")
    if args.launcher != "local":
        raise NotImplementedError(
            f"--launcher {args.launcher!r}: mxmod.launch only starts local workers; on a "
            "cluster start one process per host with your scheduler and set DMLC_* (or "
            "JAX_COORDINATOR_ADDRESS/JAX_NUM_PROCESSES/JAX_PROCESS_ID) in each"
        )
    port = args.port or _free_port(args.host)

    def on_term(signum, frame):  # a killed launcher must not leave its workers running
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        return _run(command, args, port)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _run(command: list, args, port: int) -> int:
    procs = {}
    for rank in range(args.num_workers):
        env = worker_env(rank, args.num_workers, args.host, port, args.cpu_devices)
        procs[rank] = subprocess.Popen(command, env=env, start_new_session=True)
    try:
        while True:
            codes = {r: p.poll() for r, p in procs.items()}
            failed = [(r, c) for r, c in codes.items() if c not in (None, 0)]
            if failed:
                rank, code = failed[0]
                print(
                    f"mxmod.launch: worker rank {rank} exited with code {code}; stopping "
                    f"the other workers",
                    file=sys.stderr,
                    flush=True,
                )
                _stop(procs, args.grace)
                return code if code > 0 else 1
            if all(c == 0 for c in codes.values()):
                return 0
            time.sleep(0.1)
    except KeyboardInterrupt:
        print("mxmod.launch: interrupted; stopping the workers", file=sys.stderr, flush=True)
        _stop(procs, args.grace)
        return 130


if __name__ == "__main__":
    sys.exit(main())
