"""Integer attributes are bounded by their MXNet type, and Pooling's kernel is checked, when a
node is created or loaded: the same verdicts as MXNet 1.9.1 (``fuzz/attr_bound_verdicts.json``
from ``tests/fixtures/gen_attr_bound_verdicts.py``)."""

import json
from pathlib import Path

import pytest

import mxmod as mx
from mxmod.base import MXNetError, MXNetFileError
from mxmod.ops._attrs import AttrError, int_at_least, p_int, p_shape_nonzero, p_uint32, p_uint64

VERDICTS = json.loads(
    (
        Path(__file__).resolve().parents[1] / "fixtures" / "fuzz" / "attr_bound_verdicts.json"
    ).read_text()
)["cases"]


@pytest.mark.parametrize("case_id", sorted(VERDICTS))
def test_attribute_bounds_match_mxnet(case_id):
    case = VERDICTS[case_id]
    graph = case["graph"]
    node = next(n for n in graph["nodes"] if n["name"] == "node")
    mine = []
    for value in case["values"]:
        node["attrs"][case["attr"]] = value
        try:
            mx.sym.load_json(json.dumps(graph))
            mine.append("A")
        except MXNetFileError as e:
            assert f"attribute {case['attr']}=" in str(e) or "Pooling 'node'" in str(e), e
            mine.append("R")
    assert "".join(mine) == case["verdicts"], list(zip(case["values"], mine, case["verdicts"]))


def test_parsers_name_the_range():
    assert p_int("2147483647") == 2**31 - 1 and p_int(-(2**31)) == -(2**31)
    with pytest.raises(
        AttrError,
        match=r"2147483648 is out of the range of a 32-bit int "
        r"\(-2147483648 to 2147483647\)",
    ):
        p_int("2147483648")
    assert p_uint32("4294967295") == 2**32 - 1 and p_uint64(str(2**64 - 1)) == 2**64 - 1
    with pytest.raises(AttrError, match="out of the range of an unsigned 32-bit int"):
        p_uint32(2**32)
    with pytest.raises(AttrError, match=r"expected an integer >= 1, got '0'"):
        int_at_least(1)("0")
    with pytest.raises(AttrError, match=r"\(2, 0\) must be nonzero in all dimensions"):
        p_shape_nonzero("(2, 0)")


def test_creation_refuses_as_loading_does():
    data = mx.sym.Variable("data")
    with pytest.raises(
        MXNetError,
        match=r"FullyConnected 'fc': attribute num_hidden='0' is "
        r"invalid: expected an integer >= 1",
    ):
        mx.sym.FullyConnected(data, num_hidden=0, name="fc")
    with pytest.raises(
        MXNetError,
        match=r"Pooling 'p': kernel is required unless "
        r"global_pool=True; pass e\.g\. kernel=\(2, 2\)",
    ):
        mx.sym.Pooling(data, name="p")
    with pytest.raises(
        MXNetError,
        match=r"Pooling 'p': kernel \(2, 2, 2, 2\) has 4 "
        r"dimensions; pooling is 1-, 2- or 3-D",
    ):
        mx.sym.Pooling(data, kernel=(2, 2, 2, 2), global_pool=True, name="p")
    pooled = mx.sym.Pooling(data, global_pool=True, pool_type="avg")
    assert pooled.infer_shape(data=(2, 3, 4, 4))[1] == [(2, 3, 1, 1)]
