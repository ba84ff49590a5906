"""The operator coverage page (``docs/operators.md``): every operator name MXNet 1.9.1
registers for the legacy ``mx.sym``/``mx.nd`` namespaces, and whether mxmod has it.

    python3 -m mxmod.tools.op_coverage tests/fixtures/mxnet_ops/operators.json > docs/operators.md

The JSON file (MXNet's names, made in MXNet 1.9.1 by
``tests/fixtures/gen_mxnet_op_list.py``) maps each operator to its Python name there. Without
it, the page lists mxmod's own operators only.
"""

from __future__ import annotations

import argparse
import json
import sys

from .. import image, nd, sym
from ..base import MXNetError
from ..ops import OPS, get_op

COMMAND = "python3 -m mxmod.tools.op_coverage tests/fixtures/mxnet_ops/operators.json"

# (namespace in MXNet's operators.json, heading); "" is mx.sym/mx.nd itself
SECTIONS = [
    ("", "`mx.sym` / `mx.nd`"),
    ("contrib", "`mx.sym.contrib` / `mx.nd.contrib`"),
    ("linalg", "`mx.sym.linalg` / `mx.nd.linalg`"),
    ("random", "`mx.sym.random` / `mx.nd.random` (the `*_like` operators)"),
    ("image", "`mx.nd.image`"),
    ("sparse", "`mx.sym.sparse` / `mx.nd.sparse`"),
    ("_internal", "`_internal` (in saved symbol JSON and behind MXNet's Python functions)"),
]

# MXNet operators its users reach through a Python function of another name
WRAPPERS = {
    "_cvimdecode": (image, "imdecode", "mx.image.imdecode"),
    "_cvimread": (image, "imread", "mx.image.imread"),
    "_cvimresize": (image, "imresize", "mx.image.imresize"),
    "_cvcopyMakeBorder": (image, "copyMakeBorder", "mx.image.copyMakeBorder"),
    "_onehot_encode": (nd, "onehot_encode", "mx.nd.onehot_encode"),
    "_shuffle": (nd.random, "shuffle", "mx.nd.random.shuffle"),
    "_adamw_update": (nd.contrib, "adamw_update", "mx.nd.contrib.adamw_update"),
    "_mp_adamw_update": (nd.contrib, "mp_adamw_update", "mx.nd.contrib.mp_adamw_update"),
    "_multi_adamw_update": (nd.contrib, "multi_adamw_update", "mx.nd.contrib.multi_adamw_update"),
    "_multi_mp_adamw_update": (
        nd.contrib,
        "multi_mp_adamw_update",
        "mx.nd.contrib.multi_mp_adamw_update",
    ),
    "_multi_lamb_update": (nd.contrib, "multi_lamb_update", "mx.nd.contrib.multi_lamb_update"),
    "_multi_mp_lamb_update": (
        nd.contrib,
        "multi_mp_lamb_update",
        "mx.nd.contrib.multi_mp_lamb_update",
    ),
}

SPARSE = (
    "not yet: this sparse operator (csr/row_sparse arrays, symbols, executors, sparse "
    "gradients and the sparse operators marked yes work)"
)
SPARSE_OPS = {"_contrib_getnnz"}
GLUON = "out of scope: Gluon-only"
INTERNAL = "out of scope: inserted by MXNet's executor or autograd, never written in a graph"
INTERNAL_OPS = {"_CrossDeviceCopy", "_NoGradient", "_grad_add", "_broadcast_backward"}


def out_of_scope(op: str, namespace: str) -> str | None:
    """Why mxmod leaves MXNet operator ``op`` out, or None if it is only not done yet."""
    if namespace == "sparse" or op in SPARSE_OPS:
        return SPARSE
    if op.startswith("_contrib_dgl_") or op == "_contrib_edge_id":
        return SPARSE + " (DGL graph sampling on CSR arrays)"
    if op in ("_CachedOp", "_CachedOpThreadSafe", "_CustomFunction"):
        return GLUON + " (HybridBlock.hybridize, autograd.Function)"
    if op.startswith("_sg_mkldnn_"):
        return "out of scope: oneDNN fusions of MXNet's CPU backend (XLA fuses instead)"
    if op == "_imdecode":
        return (
            "out of scope: MXNet 1.9.1's own `mx.nd.imdecode` fails (its output shape is "
            "unknown); images decode with `mx.image.imdecode`"
        )
    if op in ("_NDArray", "_Native"):
        return "out of scope: pre-CustomOp Python operators (mxmod has mx.operator.CustomOp)"
    if op in INTERNAL_OPS or op.startswith("_contrib_backward_") or op.endswith("_backward"):
        return INTERNAL
    try:
        get_op(op)
    except NotImplementedError as err:  # mxmod's own out-of-scope table
        return "out of scope: " + str(err).split(": ", 1)[-1]
    except MXNetError:
        pass
    return None


def resolves(root, python_name: str) -> bool:
    """Whether ``root`` (``mx.sym`` or ``mx.nd``) has the function ``python_name``."""
    namespace, _, attr = python_name.rpartition(".")
    try:
        module = getattr(root, namespace) if namespace else root
        return callable(getattr(module, attr))
    except (AttributeError, MXNetError, NotImplementedError):
        return False


# oneDNN fused nodes that hold their operators as a subgraph (``symbol/onednn_json.py``)
INLINED = ("_sg_mkldnn_conv", "_sg_mkldnn_fully_connected")


def status(op: str, python_name: str) -> str:
    """mxmod's answer for MXNet operator ``op`` (``python_name`` under mx.sym/mx.nd)."""
    if op in INLINED:
        return "yes: in a symbol file, it loads as the operators its subgraph holds"
    if OPS.find(op) is not None:
        if resolves(sym, python_name) and resolves(nd, python_name):
            return "yes"
        return f"partly: in graphs and symbol JSON, but no `mx.sym.{python_name}` yet"
    if resolves(nd, python_name):
        return "yes (`mx.nd` only)"
    if op in WRAPPERS:
        module, attr, shown = WRAPPERS[op]
        if callable(getattr(module, attr, None)):
            return f"yes, as `{shown}`"
    namespace = python_name.rpartition(".")[0]
    return out_of_scope(op, namespace) or "not yet"


KINDS = ("yes", "partly", "not yet", "out of scope")


def _kind(answer: str) -> str:
    return next(k for k in reversed(KINDS) if answer.startswith(k))


def _own_ops() -> tuple[int, int]:
    return len({id(op) for _, op in OPS.items()}), len(OPS.names())


def render(mxnet: dict | None) -> str:
    distinct, names = _own_ops()
    lines = [
        "# MXNet operators in mxmod",
        "",
        f"mxmod registers {names} operator names ({distinct} operators and their aliases);",
        "`mxmod.ops.list_ops()` lists them. Symbols, `mx.nd` and saved symbol JSON share them.",
        "",
    ]
    if mxnet is None:
        lines += ["| operator |", "|---|"] + [f"| `{n}` |" for n in OPS.names()]
        return "\n".join(lines) + "\n"
    ops = mxnet["operators"]
    left = mxnet["left_out"]
    lines += [
        f"Below, every operator MXNet {mxnet['mxnet_version']} registers for its legacy "
        "namespaces, and",
        "whether mxmod has it. Generated (do not edit; `tests/test_op_coverage_page.py` fails",
        "when it is out of date):",
        "",
        f"    {COMMAND} > docs/operators.md",
        "",
        f"Not listed: MXNet's {left['backward']} `_backward_*` operators (gradients; mxmod",
        f"differentiates with JAX) and its {left['numpy']} `mx.np`/`mx.npx` operators (the",
        "NumPy interface of Gluon; out of scope).",
        "",
    ]
    answers = {op: status(op, py) for op, py in ops.items()}
    table = ["| namespace | MXNet | " + " | ".join(KINDS) + " |", "|---|---:|---:|---:|---:|---:|"]
    sections = []
    for namespace, heading in SECTIONS:
        members = sorted(op for op, py in ops.items() if py.rpartition(".")[0] == namespace)
        kinds = [_kind(answers[op]) for op in members]
        counts = [kinds.count(k) for k in KINDS]
        table.append(f"| {heading} | {len(members)} | " + " | ".join(map(str, counts)) + " |")
        sections += ["", f"## {heading}", "", "| operator | mxmod |", "|---|---|"]
        sections += [f"| `{op}` | {answers[op]} |" for op in members]
    kinds = [_kind(a) for a in answers.values()]
    counts = [kinds.count(k) for k in KINDS]
    table.append(f"| all | {len(ops)} | " + " | ".join(map(str, counts)) + " |")
    extra = sorted(set(OPS.names()) - set(ops))
    tail = ["", "## mxmod names MXNet 1.9.1 does not register", ""]
    tail += [f"* `{n}`" for n in extra] or ["(none)"]
    return "\n".join(lines + table + sections + tail) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mxnet_ops", nargs="?", help="MXNet's operators.json (see above)")
    args = parser.parse_args(argv)
    mxnet = None
    if args.mxnet_ops:
        with open(args.mxnet_ops) as f:
            mxnet = json.load(f)
    sys.stdout.write(render(mxnet))


if __name__ == "__main__":
    main()
