"""Fuzz every checkpoint reader with mutated files (issue 15).

Mutants come from ``tests/fixtures/file_mutations.py`` (deterministic per seed), built from
files written by MXNet 1.9.1 (the fixtures) and by mxmod. Each outcome is classified:

* ``ok``        loaded, and the follow-up use (round trip, shape inference, an update) works;
* ``clean``     refused with ``MXNetFileError`` (or ``NotImplementedError`` for a valid but
                unsupported file) whose message names the file;
* ``other``     refused with another named error (``MXNetError``/``ValueError``/...);
* ``raw``       any other exception escaped (``KeyError``, ``RecursionError``, ...);
* ``oversized`` the read allocated more than ``--alloc-limit`` MiB (``tracemalloc`` peak);
* ``deferred``  loaded, but the follow-up use failed;
* ``slow``      one input took more than 5 s.

Symbol mutants that have an MXNet verdict (``tests/fixtures/fuzz/symbol_verdicts.json``)
are also counted as ``mxnet_refused_mxmod_loaded`` / ``mxnet_loaded_mxmod_refused``.

Every reader (``nd``, ``symbol``, ``checkpoint``, the optimizer-state readers
``updater_npz``, ``updater_pickle``, ``module_states``, and ``recordio``) must report 0
other/raw/oversized/deferred/slow; the exit status is 1 otherwise.

Run:  python3 benchmarks/fuzz_readers.py [--n 10000] [--seed 0] [--json out.json]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import tempfile
import time
import tracemalloc
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "tests", "fixtures")
sys.path.insert(0, FIXTURES)
import file_mutations as fm  # noqa: E402

import mxmod as mx  # noqa: E402
from mxmod.base import MXNetError, MXNetFileError  # noqa: E402

OWN = ("nd", "symbol", "checkpoint")
OPTIMIZER = ("updater_npz", "updater_pickle", "module_states")
OTHERS = ("recordio",)
# share of --n per reader
SHARES = {
    "nd": 0.27,
    "symbol": 0.3,
    "checkpoint": 0.06,
    "updater_npz": 0.13,
    "updater_pickle": 0.1,
    "module_states": 0.1,
    "recordio": 0.04,
}


class Deferred(Exception):
    """The load succeeded but using its result failed."""


# ----------------------------------------------------------------------------- bases
def _mxmod_nd_bases() -> list[bytes]:
    from mxmod.ndarray.io import to_bytes

    rng = np.random.RandomState(0)
    return [
        to_bytes(
            {
                "arg:w": rng.randn(3, 4).astype(np.float32),
                "aux:m": np.arange(5, dtype=np.int64),
                "s": np.array(2.5),
            }
        ),
        to_bytes([rng.randn(2, 2).astype(np.float16), np.zeros((0, 3), np.int8)]),
    ]


def _net():
    data = mx.sym.Variable("data")
    h = mx.sym.FullyConnected(data, num_hidden=4, name="fc1")
    h = mx.sym.BatchNorm(h, name="bn1")
    return mx.sym.SoftmaxOutput(mx.sym.Activation(h, act_type="relu"), name="softmax")


def _updater_blob(kind: str) -> bytes:
    opt = mx.optimizer.create(
        kind, learning_rate=0.1, **({"momentum": 0.9} if kind == "sgd" else {})
    )
    upd = mx.optimizer.get_updater(opt)
    for i in range(2):
        w = mx.nd.ones((3, 2)) * (i + 1)
        upd(i, mx.nd.ones((3, 2)), w)
    return upd.get_states(dump_optimizer=kind == "adam")


def _bound_module():
    mod = mx.mod.Module(_net(), context=mx.cpu())
    mod.bind(data_shapes=[("data", (4, 3))], label_shapes=[("softmax_label", (4,))])
    mod.init_params(mx.init.Uniform(0.1))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    return mod


# ----------------------------------------------------------------------------- follow-ups
def _use_nd(out):
    from mxmod.ndarray.io import load_frombuffer, to_bytes

    values = out.values() if isinstance(out, dict) else out
    hosts = [v.asnumpy() for v in values]
    again = load_frombuffer(to_bytes(out))
    back = again.values() if isinstance(again, dict) else again
    for a, b in zip(hosts, back):
        if a.shape != b.shape or a.tobytes() != b.asnumpy().tobytes():
            raise Deferred("save -> load round trip changed an array")


def _use_symbol(sym):
    sym.list_arguments(), sym.list_outputs(), sym.list_auxiliary_states()
    text = sym.tojson()
    if mx.sym.load_json(text).tojson() != text:
        raise Deferred("tojson -> load_json -> tojson is not stable")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sym.infer_shape_partial()


# ----------------------------------------------------------------------------- one input
def _classify(fn, source_names, limit_bytes):
    """Run ``fn`` under tracemalloc; returns (outcome, detail)."""
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # 64-bit arrays narrowed: expected, not a fault
            fn()
        outcome, detail = "ok", ""
    except Deferred as e:
        outcome, detail = "deferred", str(e)
    except (MXNetFileError, NotImplementedError) as e:
        named = any(s in str(e) for s in source_names)
        outcome, detail = ("clean" if named else "other"), f"{type(e).__name__}: {e}"
    except (MXNetError, ValueError, TypeError) as e:
        outcome, detail = "other", f"{type(e).__name__}: {e}"
    except Exception as e:  # noqa: BLE001 - what the fuzzer hunts
        outcome, detail = "raw", f"{type(e).__name__}: {e}"
    except RecursionError as e:
        outcome, detail = "raw", f"RecursionError: {e}"
    elapsed = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    if peak > limit_bytes:
        outcome, detail = "oversized", f"peak {peak / 2**20:.0f} MiB; {detail}"
    elif elapsed > 5.0:
        outcome, detail = "slow", f"{elapsed:.1f} s; {detail}"
    return outcome, detail[:300]


class Fuzzer:
    """Runs mutants through one reader at a time and tallies the outcomes."""

    def __init__(self, seed: int = 0, alloc_limit_mib: float = 64.0):
        self.seed, self.limit = seed, alloc_limit_mib * 2**20
        self.counts = collections.defaultdict(collections.Counter)
        self.examples = collections.defaultdict(list)
        self.tmp = tempfile.mkdtemp(prefix="mxmod-fuzz-")
        verdicts = json.load(open(os.path.join(FIXTURES, "fuzz", "symbol_verdicts.json")))
        self.verdicts = {k: v["verdicts"] for k, v in verdicts["bases"].items()}

    def _record(self, reader, outcome, detail, case):
        self.counts[reader][outcome] += 1
        if outcome not in ("ok", "clean") and len(self.examples[(reader, outcome)]) < 5:
            self.examples[(reader, outcome)].append(f"{case}: {detail}")

    def nd(self, n):
        bases = [(rel, fm.read_base(rel)) for rel in fm.ND_BASES]
        bases += [(f"mxmod{i}", b) for i, b in enumerate(_mxmod_nd_bases())]
        path = os.path.join(self.tmp, "fuzz.params")
        for k in range(n):
            rel, base = bases[k % len(bases)]
            blob = fm.mutate_nd(base, self.seed * 1_000_003 + k)
            if k % 10 == 0:  # from a file: the message names the path
                with open(path, "wb") as f:
                    f.write(blob)
                fn, names = (lambda: _use_nd(mx.nd.load(path))), [path]
            else:
                fn, names = (lambda: _use_nd(mx.nd.load_frombuffer(blob))), ["buffer"]
            self._record("nd", *_classify(fn, names, self.limit), f"{rel} seed {k}")

    def symbol(self, n):
        bases = [(rel, fm.read_base(rel).decode()) for rel in fm.SYMBOL_BASES]
        bases.append(("mxmod", _net().tojson()))
        for k in range(n):
            rel, base = bases[k % len(bases)]
            seed = k // len(bases) if self.seed == 0 else self.seed * 1_000_003 + k
            text = fm.mutate_symbol(base, seed)
            loaded = []

            def fn():
                loaded.append(mx.sym.load_json(text, source="fuzz.json"))
                _use_symbol(loaded[0])

            outcome, detail = _classify(fn, ["fuzz.json"], self.limit)
            self._record("symbol", outcome, detail, f"{rel} seed {seed}")
            verdict = self.verdicts.get(rel, "")
            if seed < len(verdict):
                mine = "A" if loaded else "R"
                mxnet = "R" if verdict[seed] in "RC" else "A"
                if mine != mxnet:
                    key = (
                        "mxnet_refused_mxmod_loaded"
                        if mxnet == "R"
                        else "mxnet_loaded_mxmod_refused"
                    )
                    self._record("symbol", key, detail or "(loaded)", f"{rel} seed {seed}")

    def checkpoint(self, n):
        sym_base = fm.read_base("checkpoint/bn_net-symbol.json").decode()
        par_base = fm.read_base("checkpoint/bn_net-0000.params")
        prefix = os.path.join(self.tmp, "ck")
        for k in range(n):
            seed = self.seed * 1_000_003 + k
            sym = fm.mutate_symbol(sym_base, seed) if k % 2 else sym_base
            par = fm.mutate_nd(par_base, seed) if k % 2 == 0 or k % 3 == 0 else par_base
            with open(prefix + "-symbol.json", "w", encoding="utf-8", errors="surrogatepass") as f:
                f.write(sym)
            with open(prefix + "-0000.params", "wb") as f:
                f.write(par)

            def fn():
                s, arg, aux = mx.model.load_checkpoint(prefix, 0)
                _use_symbol(s)
                _use_nd({**arg, **aux})

            self._record("checkpoint", *_classify(fn, [prefix], self.limit), f"seed {seed}")

    def updater_npz(self, n):
        bases = [_updater_blob("sgd"), _updater_blob("adam")]
        for k in range(n):
            blob = fm.mutate_npz(bases[k % 2], self.seed * 1_000_003 + k)
            upd = mx.optimizer.get_updater(mx.optimizer.create("sgd", momentum=0.9))

            def fn():
                upd.set_states(blob)
                for idx in list(upd.states)[:2]:
                    upd(idx, mx.nd.ones((3, 2)), mx.nd.ones((3, 2)))

            self._record(
                "updater_npz", *_classify(fn, ["optimizer", "states"], self.limit), f"seed {k}"
            )

    def updater_pickle(self, n):
        bases = [fm.read_base(rel) for rel in fm.PICKLE_BASES]
        for k in range(n):
            blob = fm.mutate_pickle(bases[k % 2], self.seed * 1_000_003 + k)
            upd = mx.optimizer.get_updater(mx.optimizer.create("sgd", momentum=0.9))
            fn = lambda: upd.set_states(blob, allow_pickle=True)  # noqa: E731
            self._record(
                "updater_pickle", *_classify(fn, ["optimizer", "states"], self.limit), f"seed {k}"
            )

    def module_states(self, n):
        mod = _bound_module()
        path = os.path.join(self.tmp, "m.states")
        mod.save_optimizer_states(path)
        base = open(path, "rb").read()
        want = [
            (tuple(x.shape), x.dtype)
            for x in __import__("jax").tree_util.tree_leaves(mod._opt_state)
        ]
        batch = mx.io.DataBatch([mx.nd.ones((4, 3))], [mx.nd.zeros((4,))])
        for k in range(n):
            with open(path, "wb") as f:
                f.write(fm.mutate_npz(base, self.seed * 1_000_003 + k))

            def fn():
                mod.load_optimizer_states(path)
                got = [
                    (tuple(x.shape), x.dtype)
                    for x in __import__("jax").tree_util.tree_leaves(mod._opt_state)
                ]
                if got != want:
                    raise Deferred(f"states loaded with shapes/dtypes {got[:3]}")
                mod.forward_backward(batch)
                mod.update()

            self._record("module_states", *_classify(fn, [path], self.limit), f"seed {k}")
            with open(path, "wb") as f:
                f.write(base)
            mod.load_optimizer_states(path)  # back to a sane state for the next input

    def recordio(self, n):
        from mxmod import recordio as rio

        path = os.path.join(self.tmp, "f.rec")
        writer = rio.MXRecordIO(path, "w")
        for i in range(5):
            writer.write(rio.pack(rio.IRHeader(i % 2, [i, i + 0.5], i, 0), b"x" * (3 + i * 7)))
        writer.close()
        base = open(path, "rb").read()
        for k in range(n):
            with open(path, "wb") as f:
                f.write(fm.mutate_nd(base, self.seed * 1_000_003 + k))

            def fn():
                reader = rio.MXRecordIO(path, "r")
                try:
                    i = 0
                    while (rec := reader.read()) is not None:
                        try:
                            rio.unpack(rec)
                        except MXNetFileError as e:  # unpack sees bytes: name their file
                            raise MXNetFileError(
                                f"{path}: record {i}: {e}", path, f"record {i}", e.expected
                            ) from None
                        i += 1
                finally:
                    reader.close()

            self._record("recordio", *_classify(fn, [path], self.limit), f"seed {k}")

    def run(self, n_total: int, readers=OWN + OPTIMIZER + OTHERS) -> dict:
        t0 = time.perf_counter()
        for reader in readers:
            getattr(self, reader)(max(1, int(round(n_total * SHARES[reader]))))
        return {
            "seconds": round(time.perf_counter() - t0, 1),
            "counts": {r: dict(c) for r, c in self.counts.items()},
            "examples": {f"{r}/{o}": v for (r, o), v in self.examples.items()},
        }


BAD = ("other", "raw", "oversized", "deferred", "slow", "mxnet_refused_mxmod_loaded")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=10000, help="mutants in all (default 10000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--alloc-limit", type=float, default=64.0, help="MiB per input")
    ap.add_argument("--readers", default=",".join(OWN + OPTIMIZER + OTHERS))
    ap.add_argument("--json", help="write the full report here")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    report = Fuzzer(args.seed, args.alloc_limit).run(args.n, tuple(args.readers.split(",")))
    total = sum(sum(c.values()) for r, c in report["counts"].items())
    print(f"{total} outcomes in {report['seconds']} s (seed {args.seed})")
    cols = ("ok", "clean") + BAD + ("mxnet_loaded_mxmod_refused",)
    print(f"{'reader':15s}" + "".join(f"{c[:12]:>13s}" for c in cols))
    for reader, c in report["counts"].items():
        print(f"{reader:15s}" + "".join(f"{c.get(k, 0):13d}" for k in cols))
    for key, lines in sorted(report["examples"].items()):
        print(f"-- {key}")
        for line in lines:
            print("   ", line)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    bad = sum(c.get(k, 0) for c in report["counts"].values() for k in BAD)
    print(f"mxmod file readers: {bad} bad outcomes")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
