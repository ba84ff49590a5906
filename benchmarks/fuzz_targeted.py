"""Targeted mutants of symbol and optimizer-state files (issue 26), beside fuzz_readers.py.

``tests/fixtures/targeted_mutations.py`` lists the mutants (empty heads, swapped nodes,
odd attribute text; state dtype strings, swapped arrays and states, string counts and
optimizer attributes). Each goes through a reader and then the use that follows a load
(symbol: ``fuzz_readers``' checks plus shape and type inference with the base's input
shapes, and with ``--full-bind`` ``simple_bind`` and a forward pass; states: an update of
each weight, or a Module's training step). Outcomes are classified as in ``fuzz_readers``
(``ok``, ``clean``, ``other``, ``raw``,
``deferred``: loaded, then the use failed), plus, for an Updater without weights,
``clean_at_first_weight``: a state that fits the optimizer's layout but not its weight,
refused (naming the source) when
the weight arrives, the earliest it can be known.

Symbol mutants are compared with MXNet 1.9.1's verdicts
(``tests/fixtures/issue26/symbol_verdicts.json``): ``mxnet_refused_mxmod_loaded``,
``mxnet_loaded_mxmod_refused`` (split by whether MXNet could bind it: ``..._mxnet_binds``),
and ``deferred_mxnet_binds`` (mxmod loads but cannot bind what MXNet binds). Exit status 1
when any of raw, other, deferred (for states), mxnet_refused_mxmod_loaded,
mxnet_loaded_mxmod_refused_mxnet_binds or deferred_mxnet_binds is not 0.

Run:  python3 benchmarks/fuzz_targeted.py [--readers symbol,updater,module] [--limit N]
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import inspect
import io
import json
import os
import sys
import tempfile
import zipfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fuzz_readers as fr  # noqa: E402

sys.path.insert(0, fr.FIXTURES)
import targeted_mutations as tm  # noqa: E402

import mxmod as mx  # noqa: E402
from mxmod.optimizer import _codec  # noqa: E402

VERDICTS = os.path.join(fr.FIXTURES, "issue26", "symbol_verdicts.json")
BAD = ("raw", "other", "mxnet_refused_mxmod_loaded", "mxnet_loaded_mxmod_refused_mxnet_binds",
       "deferred_mxnet_binds", "updater/deferred", "module/deferred")  # fmt: skip


def _bind(sym, shapes, full: bool):
    """What bind needs first: complete shape and type inference with the base's shapes
    (``full``: also ``simple_bind`` and a forward pass, which compile: slow)."""
    try:
        labels = {n: (shapes["data"][0],) for n in sym.list_arguments() if n.endswith("label")}
        arg, out, aux = sym.infer_shape(**shapes, **labels)
        if arg is None or out is None or aux is None:
            raise ValueError("shape inference is incomplete")
        sym.infer_type(data="float32")
        if full:
            ex = sym.simple_bind(mx.cpu(), grad_req="null", **shapes, **labels)
            ex.forward(is_train=False)[0].asnumpy()
    except Exception as e:  # noqa: BLE001 - any failure of the use
        raise fr.Deferred(f"bind: {type(e).__name__}: {str(e)[:200]}") from None


class Targeted:
    def __init__(self, limit: int | None = None, full_bind: bool = False):
        self.limit, self.full_bind = limit, full_bind
        self.n_examples = 6
        self.counts = collections.defaultdict(collections.Counter)
        self.examples = collections.defaultdict(list)

    def record(self, reader, outcome, detail, case):
        self.counts[reader][outcome] += 1
        if outcome not in ("ok", "clean", "clean_at_first_weight") and (
            len(self.examples[(reader, outcome)]) < self.n_examples
        ):
            self.examples[(reader, outcome)].append(f"{case}: {detail}")

    def symbol(self):
        verdicts = json.load(open(VERDICTS))["bases"]
        for rel, v in verdicts.items():
            cases = tm.symbol_mutants(fr.fm.read_base(rel).decode())
            digest = hashlib.sha256(b"".join(t.encode() for _, t in cases)).hexdigest()
            if digest != v["digest"]:
                raise SystemExit(f"{rel}: mutants differ from those MXNet judged; regenerate")
            shapes = {k: tuple(s) for k, s in v["shapes"].items()}
            for k, (case, text) in enumerate(cases[: self.limit]):
                loaded = []

                def fn(text=text, loaded=loaded):
                    loaded.append(mx.sym.load_json(text, source="t.json"))
                    fr._use_symbol(loaded[0])
                    _bind(loaded[0], shapes, self.full_bind)

                outcome, detail = fr._classify(fn, ["t.json"], 64 * 2**20)
                self.record("symbol", outcome, detail, f"{rel} {case}")
                mxnet_load, mxnet_bind = v["load"][k], v["bind"][k]
                if mxnet_load != "A" and loaded:
                    self.record("symbol", "mxnet_refused_mxmod_loaded", detail, f"{rel} {case}")
                if mxnet_load == "A" and not loaded:
                    key = "mxnet_loaded_mxmod_refused" + ("_mxnet_binds" * (mxnet_bind == "B"))
                    self.record("symbol", key, detail, f"{rel} {case}")
                if outcome == "deferred":
                    key = "deferred_mxnet_binds" if mxnet_bind == "B" else "deferred_in_both"
                    self.record("symbol", key, detail, f"{rel} {case}")

    @staticmethod
    def _bases():
        shapes = [(3, 2), (4,)]
        out = []
        for opt, dump in ((mx.optimizer.SGD(momentum=0.9), False), (mx.optimizer.Adam(), True)):
            upd = mx.optimizer.get_updater(opt)
            for i, s in enumerate(shapes):
                upd(i, mx.nd.ones(s), mx.nd.ones(s))
            out.append((type(opt).__name__, upd.get_states(dump_optimizer=dump)))
        return shapes, out

    @staticmethod
    def _mutants(blob):
        with zipfile.ZipFile(io.BytesIO(blob)) as z:
            members = {n: z.read(n) for n in z.namelist()}
        name = _codec.META + ".npy"
        meta = json.loads(np.load(io.BytesIO(members[name])).tobytes())
        for case, m in tm.states_meta_mutants(meta):
            buf = io.BytesIO()
            np.save(buf, np.frombuffer(json.dumps(m).encode(), np.uint8))
            out = io.BytesIO()
            with zipfile.ZipFile(out, "w") as z:
                for n, raw in {**members, name: buf.getvalue()}.items():
                    z.writestr(n, raw)
            yield case, out.getvalue()

    def updater(self):
        shapes, bases = self._bases()
        named, names = {"source": "optimizer states 't.states'"}, ["t.states"]
        if "source" not in inspect.signature(mx.optimizer.Updater.set_states).parameters:
            named, names = {}, ["optimizer states"]  # mxmod before issue 26
        for kind, blob in bases:
            for case, mutant in list(self._mutants(blob))[: self.limit]:
                upd = mx.optimizer.get_updater(mx.optimizer.create(kind.lower()))
                loaded = []

                def fn(mutant=mutant, upd=upd, loaded=loaded):
                    upd.set_states(mutant, **named)
                    loaded.append(True)
                    for i, s in enumerate(shapes):
                        w = mx.nd.ones(s)
                        upd(i, mx.nd.ones(s), w)
                        w.asnumpy()

                outcome, detail = fr._classify(fn, names, 64 * 2**20)
                if loaded and outcome == "clean":  # refused when a weight arrived
                    outcome = "clean_at_first_weight"
                elif loaded and outcome != "ok":
                    outcome = "deferred"
                self.record("updater", outcome, detail, f"{kind} {case}")

    def module(self):
        mod = fr._bound_module()
        tmp = tempfile.mkdtemp(prefix="mxmod-fuzz26-")
        path = os.path.join(tmp, "m.states")
        mod.save_optimizer_states(path)
        base = open(path, "rb").read()
        batch = mx.io.DataBatch([mx.nd.ones((4, 3))], [mx.nd.zeros((4,))])
        for case, mutant in list(self._mutants(base))[: self.limit]:
            with open(path, "wb") as f:
                f.write(mutant)
            loaded = []

            def fn(loaded=loaded):
                mod.load_optimizer_states(path)
                loaded.append(True)
                mod.forward_backward(batch)
                mod.update()

            outcome, detail = fr._classify(fn, [path], 64 * 2**20)
            if loaded and outcome != "ok":
                outcome = "deferred"
            self.record("module", outcome, detail, case)
            with open(path, "wb") as f:
                f.write(base)
            mod.load_optimizer_states(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--readers", default="symbol,updater,module")
    ap.add_argument("--limit", type=int, default=None, help="mutants per base (default all)")
    ap.add_argument("--full-bind", action="store_true", help="also simple_bind + forward (slow)")
    ap.add_argument("--examples", type=int, default=6, help="examples shown per outcome")
    args = ap.parse_args()
    import warnings

    warnings.simplefilter("ignore")
    t = Targeted(args.limit, args.full_bind)
    t.n_examples = args.examples
    for reader in args.readers.split(","):
        getattr(t, reader)()
    bad = 0
    for reader, c in t.counts.items():
        print(f"{reader:8s} " + ", ".join(f"{k} {n}" for k, n in sorted(c.items())))
        bad += sum(n for k, n in c.items() if k in BAD or f"{reader}/{k}" in BAD)
    for key, lines in sorted(t.examples.items()):
        print(f"-- {key[0]}/{key[1]}")
        for line in lines:
            print("   ", line)
    print(f"targeted mutants: {bad} bad outcomes")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
