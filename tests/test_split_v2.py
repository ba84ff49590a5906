"""split_v2 (the ``_split_v2`` operator) in graphs, symbol files and mx.nd, against shapes,
values and gradients printed by MXNet 1.9.1."""

import json

import numpy as np
import pytest

import mxmod as mx

X = mx.sym.var("x")
VALUES = np.arange(10, dtype=np.float32).reshape(2, 5)


@pytest.mark.parametrize(
    "split,shapes",
    [
        (dict(indices_or_sections=(1, 3), axis=1), [(2, 1), (2, 2), (2, 2)]),
        (dict(indices_or_sections=(2, 2), axis=1), [(2, 2), (2, 0), (2, 3)]),
        (dict(indices_or_sections=5, axis=-1, squeeze_axis=True), [(2,)] * 5),
        (dict(indices_or_sections=2, axis=0), [(1, 5), (1, 5)]),
    ],
)
def test_parts_match_mxnet(split, shapes):
    parts = mx.nd.split_v2(mx.nd.array(VALUES), **split)
    assert [p.shape for p in parts] == shapes
    ax = split["axis"]
    np.testing.assert_array_equal(
        np.concatenate([p.asnumpy().reshape(s) for p, s in zip(parts, shapes)], axis=ax)
        if not split.get("squeeze_axis")
        else np.stack([p.asnumpy() for p in parts], axis=ax),
        VALUES,
    )


def test_symbol_names_shapes_json_and_gradient_as_mxnet():
    s = mx.sym.split_v2(X, (1, 3), axis=1)
    assert s.list_outputs() == ["_split_v20_output0", "_split_v20_output1", "_split_v20_output2"]
    assert s.infer_shape(x=(2, 5))[1] == [(2, 1), (2, 2), (2, 2)]
    node = json.loads(s.tojson())["nodes"][1]
    assert node["op"] == "_split_v2"
    assert node["attrs"]["sections"] == "0" and node["attrs"]["indices"] == "(0, 1, 3)"
    ex = s.simple_bind(mx.cpu(), x=(2, 5))
    ex.arg_dict["x"][:] = VALUES
    outs = ex.forward(is_train=True)
    ex.backward([mx.nd.ones(o.shape) * (i + 1) for i, o in enumerate(outs)])
    np.testing.assert_array_equal(ex.grad_dict["x"].asnumpy(), [[1, 2, 2, 3, 3]] * 2)
    assert X.split_v2(5, axis=1, squeeze_axis=True).infer_shape(x=(2, 5))[1] == [(2,)] * 5


def test_mxnet_symbol_file_loads():
    # the node as MXNet 1.9.1 writes it (its indices in brackets)
    graph = {
        "nodes": [
            {"op": "null", "name": "x", "inputs": []},
            {
                "op": "_split_v2",
                "name": "_split_v20",
                "attrs": {
                    "axis": "1",
                    "indices": "[0, 1, 3]",
                    "sections": "0",
                    "squeeze_axis": "False",
                },  # fmt: skip
                "inputs": [[0, 0, 0]],
            },
        ],
        "arg_nodes": [0],
        "node_row_ptr": [0, 1, 4],
        "heads": [[1, 0, 0], [1, 1, 0], [1, 2, 0]],
        "attrs": {"mxnet_version": ["int", 10901]},
    }
    s = mx.sym.load_json(json.dumps(graph))
    assert s.infer_shape(x=(2, 5))[1] == [(2, 1), (2, 2), (2, 2)]


@pytest.mark.parametrize(
    "make,match",
    [
        (lambda: mx.sym.split_v2(X, (3, 1), axis=1), "must be ascending"),
        (lambda: mx.sym.split_v2(X, (1, 7), axis=1), "within the axis size 5"),
        (lambda: mx.sym.split_v2(X, 3, axis=1), "does not split into 3 equal sections"),
        (lambda: mx.sym.split_v2(X, (1, 2), axis=1, squeeze_axis=True), "parts of size 1"),
        (lambda: mx.sym._internal._split_v2(X, indices=(1, 3), axis=1), "must start with 0"),
    ],
)
def test_bad_splits_name_the_problem(make, match):
    with pytest.raises(mx.base.MXNetError, match=match):
        make().infer_shape(x=(2, 5))


def test_nd_unequal_sections_and_bad_argument_raise_value_error():
    with pytest.raises(ValueError, match="does not split into 3 equal sections"):
        mx.nd.split_v2(mx.nd.zeros((2, 5)), 3, axis=1)
    with pytest.raises(ValueError, match="an int \\(sections\\) or a tuple of ints"):
        mx.sym.split_v2(X, 1.5)
