"""Short jobs, cold and warm: mxmod's wall time against real MXNet 1.9.1 (issue 24).

MXNet never compiled; mxmod compiles every program once per shape, and on a short job that
wait is most of the run. This benchmark runs two short jobs, written once in
``benchmarks/short_jobs_prog.py`` (``import mxnet as mx`` or ``import mxmod as mx``):

- ``seq2seq``: an NMT toolkit's integration test (Sockeye 1.x style). An attention LSTM
  encoder-decoder on ``BucketingModule`` over 4 source buckets, 10 updates of
  ``forward_backward``/``update``/``update_metric`` on a synthetic reverse task, then beam
  search over 6 sentences with per-bucket encoder and one-step decoder Modules bound
  ``for_training=False`` with ``shared_module``, the search itself in ``mx.nd`` ops.
- ``cnn``: a fine-tune. A conv/BatchNorm/pool network is saved as a "pretrained" checkpoint,
  loaded, given a new head, ``set_params`` and ``Module.fit`` for 20 batches, then scored.

Each job runs in a fresh child process three times: under MXNet (its own venv), under mxmod
COLD (``MXMOD_CACHE_DIR`` a new empty folder: no compiled program on disk) and under mxmod
WARM (a second process on the folder the cold run filled). Wall time is the whole child
process, Python start and imports included (mxmod's bytecode compiled first, as an install
does); import time is also shown apart. Inside the
mxmod child, JAX's monitoring events count the programs built
(``/jax/core/compile/backend_compile_duration``: an XLA compile or a persistent-cache load),
the persistent-cache hits among them, and their seconds.

Both frameworks start from the same weights (a numpy-seeded initialiser), so the printed
perplexities, translations, beam scores and accuracies should agree to about 1e-4: the
reader sees that the same work was done.

Goals (issue 24), as ratios to MXNet in one run: cold within 5x at the least, 2x the aim;
warm within 1.5x at the least, 1.2x the aim.

Run:  python3 benchmarks/short_jobs.py [--quick] [--jobs seq2seq,cnn] [--repeat N]
          [--mxnet-python PATH] [--env MXMOD_COMPILE=...]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PROG = os.path.join(HERE, "short_jobs_prog.py")
MARK = "SHORT_JOBS_RESULT "
GOALS = {"cold": (5.0, 2.0), "warm": (1.5, 1.2)}  # (at the least, the aim)
# the MXNet venv of tests/fixtures/README.md (Python 3.11, mxnet 1.9.1, numpy 1.23.5)
DEFAULT_MXNET_PYTHON = ""


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer updates, batches, sentences")
    ap.add_argument("--jobs", default="seq2seq,cnn", help="comma-separated: seq2seq, cnn")
    ap.add_argument("--repeat", type=int, default=1, help="runs per cell; the fastest is shown")
    ap.add_argument(
        "--mxnet-python",
        default=os.environ.get("MXNET_PYTHON", DEFAULT_MXNET_PYTHON),
        help="a Python with mxnet 1.9.1 (default $MXNET_PYTHON)",
    )
    ap.add_argument("--python", default=sys.executable, help="the Python with mxmod")
    ap.add_argument(
        "--env", action="append", default=[], metavar="KEY=VALUE", help="extra env for mxmod runs"
    )
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per child process")
    ap.add_argument("--json", help="also write every run's result to this file")
    args = ap.parse_args()
    for item in args.env:
        if "=" not in item:
            ap.error(f"--env takes KEY=VALUE, got {item!r}")
    return args


def run_child(python, framework, job, quick, env, timeout):
    """One fresh process: its result dict with ``wall_s`` and ``load`` added, or an error."""
    cmd = [python, PROG, "--framework", framework, "--job", job] + (["--quick"] if quick else [])
    load = os.getloadavg()[0]
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s", "load": load}
    wall = time.perf_counter() - start
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(MARK)]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-25:]
        return {"error": f"exit {proc.returncode}\n" + "\n".join(tail), "load": load}
    result = json.loads(lines[-1][len(MARK) :])
    result.update(wall_s=round(wall, 3), load=load)
    return result


def compile_bytecode(python):
    """Write mxmod's ``.pyc`` files, as ``pip install`` does for an installed package (and
    did for MXNet's venv). Without them (an editable install under
    ``PYTHONDONTWRITEBYTECODE=1``) every mxmod process compiles its sources again: about
    0.35 s of each run on this benchmark's 2-core machine."""
    code = (
        "import compileall, os, mxmod; "
        "compileall.compile_dir(os.path.dirname(mxmod.__file__), quiet=1)"
    )
    subprocess.run([python, "-c", code], check=True)


def child_env(extra, cache_dir=None):
    env = dict(os.environ)
    env.pop("JAX_COMPILATION_CACHE_DIR", None)  # a user's JAX cache would win over mxmod's
    if cache_dir is not None:
        env["MXMOD_CACHE_DIR"] = cache_dir
    env.update(item.split("=", 1) for item in extra)
    return env


def measure(args, job, scratch):
    """{'mxnet': result, 'cold': result, 'warm': result}, the fastest of ``--repeat`` each."""
    runs = {"mxnet": [], "cold": [], "warm": []}
    for rep in range(args.repeat):
        env = child_env([])
        runs["mxnet"].append(
            run_child(args.mxnet_python, "mxnet", job, args.quick, env, args.timeout)
        )
        cache = os.path.join(scratch, f"{job}-{rep}")  # new and empty: the cold run fills it
        env = child_env(args.env, cache)
        for kind in ("cold", "warm"):
            runs[kind].append(run_child(args.python, "mxmod", job, args.quick, env, args.timeout))
        for kind, results in runs.items():
            print(f"  {job} run {rep + 1} {kind}: {brief(results[-1])}", flush=True)
    return {kind: min(rs, key=lambda r: r.get("wall_s", float("inf"))) for kind, rs in runs.items()}


def brief(r):
    if "error" in r:
        return "FAILED " + r["error"].splitlines()[0]
    extra = f", {programs(r)}" if "compiles" in r else ""
    return f"{r['wall_s']:.2f} s (load {r['load']:.1f}){extra}"


def programs(r):
    """'95 programs, 95 XLA compiles, 102.8 s': backend events, minus persistent-cache hits."""
    hits = r.get("jax_events", {}).get("/jax/compilation_cache/cache_hits", 0)
    return f"{r['compiles']} programs, {r['compiles'] - hits} XLA compiles, {r['compile_s']:.1f} s"


def ratio_cell(r, base, kind):
    if "error" in r or "error" in base:
        return "failed"
    ratio = r["wall_s"] / base["wall_s"]
    least, aim = GOALS[kind]
    verdict = "aim met" if ratio <= aim else ("ok" if ratio <= least else f"> {least:g}x")
    return f"{r['wall_s']:.2f} ({ratio:.1f}x, {verdict})"


def print_tables(results):
    rows = [("job", "MXNet s", "mxmod cold s", "mxmod warm s", "cold compiles", "warm compiles")]
    for job, r in results.items():
        base = r["mxnet"]
        rows.append(
            (
                job,
                "failed" if "error" in base else f"{base['wall_s']:.2f}",
                ratio_cell(r["cold"], base, "cold"),
                ratio_cell(r["warm"], base, "warm"),
                programs(r["cold"]) if "compiles" in r["cold"] else "-",
                programs(r["warm"]) if "compiles" in r["warm"] else "-",
            )
        )
    print(
        "\nWall time of the whole child process (goals: cold <= 5x, aim 2x; warm <= 1.5x, aim 1.2x)"
    )
    print_rows(rows)

    rows = [("job", "run", "load", "import s", "phases s (in process)", "in-process s")]
    for job, r in results.items():
        for kind in ("mxnet", "cold", "warm"):
            res = r[kind]
            if "error" in res:
                rows.append((job, kind, f"{res['load']:.1f}", "failed", "", ""))
                continue
            phases = dict(res["phases"])
            imp = phases.pop("import")
            detail = ", ".join(f"{k} {v:.2f}" for k, v in phases.items())
            rows.append(
                (
                    job,
                    kind,
                    f"{res['load']:.1f}",
                    f"{imp:.2f}",
                    detail,
                    f"{res['in_process_s']:.2f}",
                )
            )
    print("\nPhases (load: 1-minute load average when the child started)")
    print_rows(rows)


def print_rows(rows):
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(str(cell).ljust(w) for cell, w in zip(row, widths)).rstrip())


WORK_FIELDS = {
    "seq2seq": (
        "train_perplexity",
        "loss_decreased",
        "nbest",
        "nbest_scores",
        "correct",
    ),
    "cnn": ("train_accuracy_every_5", "val"),
}


def print_work(results):
    """The job's own outputs under each run, so a reader sees the same work was done."""
    print("\nThe work done (same initial weights: expect agreement to about 1e-4)")
    for job, r in results.items():
        if job == "seq2seq" and "sources" in r["mxnet"]:
            print(f"{job}: sources {r['mxnet']['sources']}")
        for field in WORK_FIELDS[job]:
            for kind in ("mxnet", "cold", "warm"):
                value = r[kind].get(field, "failed" if "error" in r[kind] else "-")
                print(f"  {job:8s} {field:24s} {kind:5s} {json.dumps(value)}")
        for kind in ("cold", "warm"):
            if "error" not in r[kind] and "error" not in r["mxnet"]:
                agree = agrees(r["mxnet"], r[kind], WORK_FIELDS[job])
                print(f"  {job:8s} mxmod {kind} agrees with MXNet (rtol 1e-3): {agree}")
    print("\nWhere mxmod's cold compile seconds go (JAX function name: programs, seconds; top 12)")
    for job, r in results.items():
        for name, count, secs in r["cold"].get("compiles_by_name", [])[:12]:
            print(f"  {job:8s} {secs:7.2f} s  {count:3d}  {name}")
    for job, r in results.items():
        for kind in ("mxnet", "cold", "warm"):
            if "error" in r[kind]:
                print(f"\n{job} {kind} FAILED:\n{r[kind]['error']}")


def agrees(a, b, fields):
    def close(x, y):
        if isinstance(x, dict):
            return x.keys() == y.keys() and all(close(x[k], y[k]) for k in x)
        if isinstance(x, (list, tuple)):
            return len(x) == len(y) and all(close(i, j) for i, j in zip(x, y))
        if isinstance(x, float) or isinstance(y, float):
            return abs(x - y) <= 1e-3 * max(abs(x), abs(y), 1e-6)
        return x == y

    return all(f in a and f in b and close(a[f], b[f]) for f in fields)


def main():
    args = parse_args()
    jobs = [j.strip() for j in args.jobs.split(",") if j.strip()]
    unknown = sorted(set(jobs) - set(WORK_FIELDS))
    if unknown:
        sys.exit(f"unknown job(s) {unknown}: choose from {sorted(WORK_FIELDS)}")
    if not os.path.exists(args.mxnet_python):
        sys.exit(f"no MXNet Python at {args.mxnet_python}: pass --mxnet-python or set MXNET_PYTHON")
    print(
        f"short jobs{' (--quick)' if args.quick else ''}: {', '.join(jobs)}; "
        f"cores {os.cpu_count()}; load {os.getloadavg()}; mxmod env {args.env or 'default'}"
    )
    compile_bytecode(args.python)
    with tempfile.TemporaryDirectory(prefix="mxmod-short-jobs-") as scratch:
        results = {job: measure(args, job, scratch) for job in jobs}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    print_tables(results)
    print_work(results)
    print(f"\nload at the end {os.getloadavg()}")


if __name__ == "__main__":
    main()
