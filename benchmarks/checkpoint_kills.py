"""Kill -9 a checkpoint writer at random moments and count the temp files left (issue 26).

A child process imports only ``mxmod/fileio.py`` (no jax, so it starts in milliseconds) and
commits checkpoints (~2 MB params, states, symbol) in a loop; it is killed after a random
delay. After each kill the folder is listed *before* anything else writes or loads there:
``.tmp-*`` files are what the kill left beside the checkpoint.

Run:  python3 benchmarks/checkpoint_kills.py [--trials 50] [--fileio path/to/fileio.py]
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import textwrap
import time

HERE = os.path.dirname(os.path.abspath(__file__))

WRITER = textwrap.dedent("""
    import os, sys, types
    package = types.ModuleType("mxmod")
    package.__path__ = [os.path.dirname(sys.argv[1])]
    sys.modules["mxmod"] = package
    from mxmod import fileio
    prefix = sys.argv[2]
    params, states, sym = os.urandom(2 << 20), os.urandom(256 << 10), b'{"nodes": []}'
    epoch = 0
    while True:
        fileio.write_checkpoint(prefix, epoch % 5, sym, params, states)
        print(epoch, flush=True)
        epoch += 1
""")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trials", type=int, default=50)
    ap.add_argument("--seed", type=int, default=26)
    ap.add_argument("--fileio", default=os.path.join(HERE, "..", "mxmod", "fileio.py"))
    args = ap.parse_args()
    rng = random.Random(args.seed)
    folder = tempfile.mkdtemp(prefix="mxmod-kills-")
    script = os.path.join(folder, "writer.py")
    with open(script, "w") as f:
        f.write(WRITER)
    prefix = os.path.join(folder, "ck")
    left = 0
    for _ in range(args.trials):
        proc = subprocess.Popen(
            [sys.executable, script, os.path.abspath(args.fileio), prefix],
            stdout=subprocess.PIPE,
            text=True,
        )
        proc.stdout.readline()  # one checkpoint committed
        time.sleep(rng.uniform(0.0, 0.05))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        temps = [n for n in os.listdir(folder) if n.startswith(".tmp-")]
        left += len(temps)
        for name in temps:  # count each kill's leftovers once
            os.unlink(os.path.join(folder, name))
    print(f"{args.trials} kills: {left} temp files left beside the checkpoint ({args.fileio})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
