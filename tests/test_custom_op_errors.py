"""Mistakes with Python custom operators raise errors that name the operator and the fix."""

import numpy as np
import pytest

import mxmod as mx


def _prop(name, **methods):
    """Register a CustomOpProp subclass with the given methods under ``name``."""
    cls = type(f"Prop_{name}", (mx.operator.CustomOpProp,), methods)
    return mx.operator.register(name)(cls)


def _op(forward=None, backward=None):
    methods = {}
    if forward is not None:
        methods["forward"] = forward
    if backward is not None:
        methods["backward"] = backward
    return type("Op", (mx.operator.CustomOp,), methods)


def _copy_forward(self, is_train, req, in_data, out_data, aux):
    self.assign(out_data[0], req[0], in_data[0])


def _run(sym, shape=(2, 3), is_train=False):
    ex = sym.simple_bind(mx.cpu(), grad_req="null", x=shape)
    return [o.asnumpy() for o in ex.forward(is_train=is_train, x=mx.nd.ones(shape))]


def test_op_type_missing_or_unknown():
    with pytest.raises(mx.MXNetError, match=r"mx.sym.Custom needs op_type="):
        mx.sym.Custom(mx.sym.var("x"))
    with pytest.raises(
        mx.MXNetError,
        match=r"Cannot find custom operator 'no_such_op'.*"
        r"@mx.operator.register\('no_such_op'\)",
    ):
        mx.sym.Custom(mx.sym.var("x"), op_type="no_such_op")
    with pytest.raises(mx.MXNetError, match="mx.nd.Custom needs op_type="):
        mx.nd.Custom(mx.nd.ones((2, 2)))
    bad_json = (
        '{"nodes": [{"op": "null", "name": "x", "inputs": []}, {"op": "Custom", '
        '"name": "c", "inputs": [[0, 0, 0]]}], "arg_nodes": [0], "heads": [[1, 0, 0]]}'
    )
    with pytest.raises(mx.MXNetError, match="required attribute 'op_type' is missing"):
        mx.sym.load_json(bad_json).list_outputs()


def test_register_checks_its_arguments():
    with pytest.raises(TypeError, match="operator name as a non-empty string"):
        mx.operator.register(None)
    with pytest.raises(TypeError, match="subclass of mx.operator.CustomOpProp"):
        mx.operator.register("e_not_a_prop")(object)


def test_prop_constructor_rejects_kwargs():
    _prop("e_no_kwargs", __init__=lambda self: mx.operator.CustomOpProp.__init__(self))
    with pytest.raises(
        mx.MXNetError,
        match=r"e_no_kwargs.*scale='2'.*go to the CustomOpProp "
        "constructor as strings",
    ):
        mx.sym.Custom(mx.sym.var("x"), op_type="e_no_kwargs", scale=2)


def test_bad_list_and_dependency_answers():
    _prop("e_bad_list", list_outputs=lambda self: "output")
    with pytest.raises(mx.MXNetError, match=r"list_outputs\(\) must return a list of strings"):
        mx.sym.Custom(mx.sym.var("x"), op_type="e_bad_list")
    _prop("e_bad_deps", declare_backward_dependency=lambda self, og, i, o: [99])
    with pytest.raises(mx.MXNetError, match=r"declare_backward_dependency\(\) must return ids"):
        mx.sym.Custom(mx.sym.var("x"), op_type="e_bad_deps")


def test_infer_shape_answers_are_checked():
    _prop("e_shape_count", infer_shape=lambda self, s: (s, [s[0], s[0]], []))
    sym = mx.sym.Custom(mx.sym.var("x"), op_type="e_shape_count", name="c")
    with pytest.raises(
        mx.MXNetError,
        match=r"Custom 'c'.*infer_shape returned 2 output shapes "
        r"but list_outputs\(\) names 1",
    ):
        sym.infer_shape(x=(2, 3))
    _prop("e_shape_raises", infer_shape=lambda self, s: (s, [(s[0][0], 1 // 0)], []))
    sym = mx.sym.Custom(mx.sym.var("x"), op_type="e_shape_raises", name="c")
    with pytest.raises(
        mx.MXNetError,
        match=r"infer_shape\(\[\[2, 3\]\]\) raised "
        "ZeroDivisionError",
    ):
        sym.infer_shape(x=(2, 3))
    _prop("e_shape_input", infer_shape=lambda self, s: ([(5, 5)], [(5, 5)], []))
    sym = mx.sym.Custom(mx.sym.var("x"), op_type="e_shape_input", name="c")
    with pytest.raises(mx.MXNetError, match=r"Custom 'c': data given \(2, 3\).*\(5, 5\)"):
        sym.infer_shape(x=(2, 3))


def test_infer_type_answers_are_checked():
    _prop("e_type", infer_type=lambda self, t: (t, ["not a type"], []))
    sym = mx.sym.Custom(mx.sym.var("x"), op_type="e_type")
    with pytest.raises(mx.MXNetError, match="infer_type must return numpy types"):
        sym.infer_type(x="float32")


def test_forward_errors_name_the_operator():
    def boom(self, is_train, req, in_data, out_data, aux):
        raise ValueError("boom")

    _prop("e_boom", create_operator=lambda self, ctx, s, d: _op(boom)())
    sym = mx.sym.Custom(mx.sym.var("x"), op_type="e_boom", name="b")
    with pytest.raises(
        RuntimeError,
        match=r"custom operator 'e_boom' \(b\): forward raised "
        "ValueError: boom",
    ):
        _run(sym)
    _prop("e_no_forward", create_operator=lambda self, ctx, s, d: _op()())
    sym = mx.sym.Custom(mx.sym.var("x"), op_type="e_no_forward")
    with pytest.raises(RuntimeError, match=r"must override CustomOp.forward"):
        _run(sym)


def test_writing_a_wrong_shape_fails_clearly():
    def wrong(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], mx.nd.ones((4, 4)))

    _prop("e_wrong_shape", create_operator=lambda self, ctx, s, d: _op(wrong)())
    with pytest.raises(
        RuntimeError,
        match=r"'e_wrong_shape'.*forward raised ValueError: cannot "
        r"assign a value of shape \(4, 4\)",
    ):
        _run(mx.sym.Custom(mx.sym.var("x"), op_type="e_wrong_shape"))


def test_backward_errors_name_the_operator():
    def bad_backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        raise KeyError("grad")

    _prop("e_bad_bwd", create_operator=lambda self, ctx, s, d: _op(_copy_forward, bad_backward)())
    sym = mx.sym.Custom(mx.sym.var("x"), op_type="e_bad_bwd", name="bb")
    ex = sym.simple_bind(mx.cpu(), x=(2, 3))
    ex.forward(is_train=True, x=mx.nd.ones((2, 3)))
    with pytest.raises(RuntimeError, match=r"'e_bad_bwd' \(bb\): backward raised KeyError"):
        ex.backward(mx.nd.ones((2, 3)))
        ex.grad_dict["x"].asnumpy()


def test_default_backward_gives_zero_gradients():
    _prop("e_fwd_only", create_operator=lambda self, ctx, s, d: _op(_copy_forward)())
    ex = mx.sym.Custom(mx.sym.var("x"), op_type="e_fwd_only").simple_bind(mx.cpu(), x=(2, 3))
    ex.forward(is_train=True, x=mx.nd.ones((2, 3)))
    ex.backward(mx.nd.ones((2, 3)))
    np.testing.assert_array_equal(ex.grad_dict["x"].asnumpy(), np.zeros((2, 3)))


def test_assign_rejects_unknown_req():
    op = mx.operator.CustomOp()
    dst = mx.nd.zeros((2,))
    op.assign(dst, "add", mx.nd.ones((2,)))
    op.assign(dst, "add", mx.nd.ones((2,)))
    op.assign(dst, "null", mx.nd.ones((2,)))
    np.testing.assert_array_equal(dst.asnumpy(), [2, 2])
    with pytest.raises(ValueError, match="unknown req 'overwrite'; use 'null', 'write'"):
        op.assign(dst, "overwrite", mx.nd.ones((2,)))


def test_sparse_storage_is_refused():
    prop = mx.operator.CustomOpProp()
    assert prop.infer_storage_type(["default"]) == (["default"], ["default"], [])
    with pytest.raises(NotImplementedError, match="storage type 'csr' .*sparse storage"):
        prop.infer_storage_type(["csr"])
    with pytest.raises(NotImplementedError, match="'row_sparse'"):
        prop.infer_storage_type_backward(["row_sparse"], [], [], [], [])


def test_nd_custom_input_mistakes():
    x = mx.nd.ones((2, 3))
    _prop(
        "e_two_in",
        list_arguments=lambda self: ["data", "label"],
        create_operator=lambda self, ctx, s, d: _op(_copy_forward)(),
    )
    with pytest.raises(mx.MXNetError, match=r"needs input 'label' \(inputs: data, label\)"):
        mx.nd.Custom(x, op_type="e_two_in")
    with pytest.raises(mx.MXNetError, match="takes 2 inputs"):
        mx.nd.Custom(x, x, x, op_type="e_two_in")
    with pytest.raises(mx.MXNetError, match="no input named 'lable'"):
        mx.nd.Custom(x, lable=x, op_type="e_two_in")
    with pytest.raises(TypeError, match="input 'label' must be an NDArray, got list"):
        mx.nd.Custom(x, [1, 2], op_type="e_two_in")


def test_operator_module_refuses_unknown_names():
    # NumpyOp/NDArrayOp/PythonOp run as CustomOps (tests/test_mxnet_examples.py)
    with pytest.raises(NotImplementedError, match="get_operator_arguments"):
        mx.operator.get_operator_arguments
    with pytest.raises(AttributeError, match="no attribute 'CustomOpp'"):
        mx.operator.CustomOpp
