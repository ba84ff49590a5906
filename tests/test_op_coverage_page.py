"""docs/operators.md is generated from the op table and MXNet 1.9.1's operator list
(tests/fixtures/mxnet_ops/operators.json, by gen_mxnet_op_list.py); it must be current, and
what it says of an operator must be what ``mx.sym``/``mx.nd`` do with that name."""

import json
import os

import pytest

import mxmod as mx
from mxmod.tools import op_coverage

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(ROOT, "docs", "operators.md")
MXNET_OPS = os.path.join(ROOT, "tests", "fixtures", "mxnet_ops", "operators.json")


@pytest.fixture(scope="module")
def mxnet():
    with open(MXNET_OPS) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def answers(mxnet):
    return {op: op_coverage.status(op, py) for op, py in mxnet["operators"].items()}


def test_committed_page_is_current(mxnet):
    with open(PAGE) as f:
        committed = f.read()
    assert committed == op_coverage.render(mxnet), (
        f"docs/operators.md is out of date; run: {op_coverage.COMMAND} > docs/operators.md"
    )


def test_mxnet_list_is_mxnet_1_9_1_legacy_namespaces(mxnet):
    assert mxnet["mxnet_version"] == "1.9.1"
    ops = mxnet["operators"]
    assert ops["FullyConnected"] == "FullyConnected"
    assert ops["_contrib_box_nms"] == "contrib.box_nms"
    assert ops["_plus_scalar"] == "_internal._plus_scalar"
    assert not [op for op in ops if op.startswith(("_backward_", "_np_", "_npi_", "_npx_"))]


def _resolve(root, python_name):
    namespace, _, attr = python_name.rpartition(".")
    module = getattr(root, namespace) if namespace else root
    return getattr(module, attr)


def test_yes_means_the_name_works_and_not_yet_means_it_does_not(mxnet, answers):
    public = {op: py for op, py in mxnet["operators"].items() if not py.startswith("_internal")}
    for op, py in public.items():
        answer = answers[op]
        if answer == "yes":
            assert callable(_resolve(mx.sym, py)) and callable(_resolve(mx.nd, py)), op
        elif answer.startswith("yes (`mx.nd` only)"):
            assert callable(_resolve(mx.nd, py)), op
        elif answer.startswith(("not yet", "partly")) and not py.startswith(("sparse.", "image.")):
            with pytest.raises((AttributeError, mx.base.MXNetError, NotImplementedError)):
                _resolve(mx.sym, py)


def test_every_registered_op_is_on_the_page(mxnet):
    page = op_coverage.render(mxnet)
    for name in mx.ops.list_ops():
        assert f"`{name}`" in page, name


def test_out_of_scope_answers_say_why(answers):
    assert answers["_while_loop"] == "yes"
    assert answers["_foreach"] == "yes"
    assert answers["Correlation"] == "yes"
    assert answers["_contrib_edge_id"] == "yes (`mx.nd` only)"
    assert "sparse" in answers["_contrib_dgl_graph_compact"]
    assert answers["_contrib_getnnz"] == "yes (`mx.nd` only)"
    assert answers["_image_to_tensor"] == "yes"
    assert "Gluon" in answers["_CachedOp"]
    for name in ("cast_storage", "_square_sum", "_contrib_SparseEmbedding"):  # issue 28
        assert answers[name] == "yes", name
    assert answers["FullyConnected"] == "yes" and answers["sgd_update"].startswith("yes")
