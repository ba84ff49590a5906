"""Issue 24: Module programs kept on disk by structure; a second process runs them untraced."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import mxmod as mx
from mxmod import compile_cache, program_files
from mxmod import program_store as stored

PROGRAM = r"""
import json, sys
import numpy as np
import mxmod as mx
from mxmod import program_store as stored
mx.random.seed(0)
x = mx.sym.Variable("data")
net = mx.sym.FullyConnected(x, num_hidden=8, name="fc1")
net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(net, num_hidden=3, name="fc2"), name="softmax")
rng = np.random.RandomState(0)
it = mx.io.NDArrayIter(rng.randn(32, 5).astype("f"), rng.randint(0, 3, 32).astype("f"), 8)
mod = mx.mod.Module(net, context=[mx.cpu(0), mx.cpu(1)] if "two" in sys.argv else mx.cpu())
mod.fit(it, num_epoch=2, initializer=mx.init.Uniform(0.1), eval_metric="acc",
        optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
w = mod.get_params()[0]["fc2_weight"].asnumpy()
pred = mod.predict(it).asnumpy()
top = mx.nd.topk(mx.nd.array(rng.randn(4, 6)), k=2, axis=1)  # an imperative operator
soft = mx.nd.softmax(top).sum(axis=1)  # mx.nd functions outside the operator table
pred = np.concatenate([pred.ravel(), top.asnumpy().ravel(), soft.asnumpy().ravel()])
print(json.dumps({"counts": stored.COUNTS, "w": w.ravel().tolist(),
                  "pred": pred.ravel().tolist(), "folder": stored.folder()}))
"""


def run(cache_dir, *argv, **env_changes):
    env = {**os.environ, "MXMOD_CACHE_DIR": str(cache_dir), **env_changes}
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    out = subprocess.run(
        [sys.executable, "-c", PROGRAM, *argv], env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_second_process_runs_the_stored_programs_untraced(tmp_path):
    first = run(tmp_path, "two")
    second = run(tmp_path, "two")
    assert first["counts"]["built"] > 0 and first["counts"]["loaded"] == 0
    assert first["counts"]["saved"] == first["counts"]["built"]
    # nothing traced or compiled again: every Module program came from the folder
    assert second["counts"]["built"] == 0, second["counts"]
    assert second["counts"]["loaded"] == first["counts"]["built"]
    assert second["w"] == first["w"] and second["pred"] == first["pred"]  # bit for bit
    names = os.listdir(first["folder"])
    programs = [n for n in names if not n.startswith("recent-") and "." not in n]
    assert len(programs) == first["counts"]["saved"]
    # quick builds (tiered) have their switch schedule beside them
    schedules = [n for n in names if n.endswith(stored.SCHEDULE)]
    assert schedules and all(n[: -len(stored.SCHEDULE)] in programs for n in schedules)
    # the record of what the processes used, in first-use order, for loading ahead
    (record,) = [n for n in names if n.startswith("recent-")]
    with open(os.path.join(first["folder"], record)) as f:
        assert sorted(f.read().split()) == sorted(programs)


def test_the_next_process_loads_the_recorded_programs_ahead(tmp_path):
    first = run(tmp_path, "two")
    folder = first["folder"]
    (record,) = [n for n in os.listdir(folder) if n.startswith("recent-")]
    with open(os.path.join(folder, record)) as f:
        digests = f.read().split()
    ahead = program_files.Ahead(folder, record[len("recent-") :])  # its environment
    assert ahead._record.endswith(record)
    loaded = [ahead.take(d) for d in digests]
    # each was loaded by the background thread (or, if not started yet, left to the caller)
    assert all(exe is None or hasattr(exe, "execute") or callable(exe) for exe in loaded)
    assert any(exe is not None for exe in loaded)
    assert ahead.take(digests[0]) is None  # handed over once
    ahead.note_used("f" * 64)
    with open(os.path.join(folder, record)) as f:
        assert f.read().split() == ["f" * 64, *digests]  # this process's first


@pytest.mark.slow
def test_a_torn_file_is_rebuilt_and_a_zero_budget_keeps_nothing(tmp_path):
    first = run(tmp_path)
    for name in os.listdir(first["folder"]):
        with open(os.path.join(first["folder"], name), "r+b") as f:
            f.truncate(100)  # a crash mid-write of an older version, say
    again = run(tmp_path)
    assert again["counts"]["loaded"] == 0 and again["counts"]["built"] > 0
    assert again["w"] == first["w"]
    third = run(tmp_path)
    assert third["counts"]["built"] == 0 and third["w"] == first["w"]

    bare = tmp_path / "bare"
    capped = run(bare, MXMOD_CACHE_MAX_MB="0")
    assert capped["w"] == first["w"] and os.listdir(capped["folder"]) == []


@pytest.fixture
def store_on(tmp_path):
    compile_cache.enable(str(tmp_path))
    try:
        yield tmp_path
    finally:
        compile_cache.disable()


def test_user_code_is_never_part_of_a_stored_key(store_on):
    class MyAccuracy(mx.metric.Accuracy):  # user code: its text may change between runs
        pass

    assert stored.program_key(("fwd", mx.metric.Accuracy)) is not None
    assert stored.program_key(("fwd", MyAccuracy)) is None
    assert stored.program_key(("fwd", lambda x: x)) is None
    assert stored.program_key(("fwd", object())) is None
    # equal parts give equal texts; different parts differ
    a = stored.program_key(("step", ("data",), 0.1, np.float32(2), {"b": 1, "a": (2, None)}))
    b = stored.program_key(("step", ("data",), 0.1, np.float32(2), {"a": (2, None), "b": 1}))
    assert a == b and a != stored.program_key(("step", ("data",), 0.2))


def test_nothing_is_stored_with_the_cache_off():
    assert compile_cache.ours() is None  # the suite runs with MXMOD_CACHE_DIR=""
    assert stored.folder() is None and stored.program_key(("fwd",)) is None


def test_a_custom_op_graph_is_not_stored(store_on):
    class Twice(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0] * 2)

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            self.assign(in_grad[0], req[0], out_grad[0] * 2)

    @mx.operator.register("stored_twice")
    class TwiceProp(mx.operator.CustomOpProp):
        def list_arguments(self):
            return ["data"]

        def infer_shape(self, in_shape):
            return in_shape, in_shape, []

        def create_operator(self, ctx, shapes, dtypes):
            return Twice()

    x = mx.sym.Variable("data")
    net = mx.sym.Custom(mx.sym.FullyConnected(x, num_hidden=2), op_type="stored_twice")
    mod = mx.mod.Module(net, label_names=None)
    mod.bind(data_shapes=[("data", (2, 3))])
    mod.init_params()
    # the operator's own ``* 2`` is an mx.nd (library) program: kept, and not the graph
    (mx.nd.ones((2, 2)) * 2).wait_to_read()
    folder = stored.folder()
    kept = set(os.listdir(folder)) if os.path.exists(folder) else set()
    mod.forward(mx.io.DataBatch([mx.nd.ones((2, 3))]), is_train=False)
    assert mod.get_outputs()[0].shape == (2, 2)
    assert (set(os.listdir(folder)) if os.path.exists(folder) else set()) == kept


class _Evil:
    def __reduce__(self):
        return (print, ("a stored program file ran code",))


def test_a_file_holding_anything_but_a_program_is_refused(tmp_path, capsys):
    import pickle

    path = tmp_path / "entry"
    path.write_bytes(pickle.dumps((b"", _Evil(), None, [0])))
    assert program_files.load(str(path)) is None  # rebuilt, never run
    assert "ran code" not in capsys.readouterr().out


def test_only_library_functions_name_an_imperative_program():
    import jax.numpy as jnp

    from mxmod.ndarray._programs import code_text

    assert code_text((("fn", jnp.sum), ("axis", (0,)))) == code_text(
        (("fn", jnp.sum), ("axis", (0,)))
    )
    assert "jax" in code_text(jnp.exp)
    with pytest.raises(stored.Unstable):
        code_text(lambda x: x)  # user code and closures are never stored

    def user_fn(x):
        return x

    with pytest.raises(stored.Unstable):
        code_text(user_fn)
