"""mx.viz.print_summary / plot_network against MXNet 1.9.1 (tests/fixtures/surface/)."""

import contextlib
import io
import json
import os
import shutil
import sys
import types

import pytest

import mxmod as mx

FIX = os.path.join(os.path.dirname(__file__), "fixtures")
sys.path.insert(0, FIX)
import surface_nets  # noqa: E402

GOLD = os.path.join(FIX, "surface")


def _gold(name):
    with open(os.path.join(GOLD, name)) as f:
        return json.load(f)


@pytest.mark.parametrize("case", sorted(surface_nets.SUMMARY_CASES))
def test_print_summary_matches_mxnet(case):
    build, shape, kwargs = surface_nets.SUMMARY_CASES[case]
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        mx.viz.print_summary(build(mx), shape=shape, **kwargs)
    assert buf.getvalue() == _gold("summary.json")[case]


def test_print_summary_errors():
    with pytest.raises(TypeError, match="symbol must be Symbol"):
        mx.viz.print_summary("net")
    with pytest.raises(ValueError, match="Input shape is incomplete"):
        mx.viz.print_summary(surface_nets.mlp(mx), shape={})


class _Recorder:
    def __init__(self, name=None, format=None):
        self.record = {"name": name, "format": format, "nodes": [], "edges": []}

    def node(self, name, label=None, **attrs):
        self.record["nodes"].append([name, label, attrs])

    def edge(self, tail_name, head_name, **attrs):
        self.record["edges"].append([tail_name, head_name, attrs])


@pytest.fixture
def recording_graphviz(monkeypatch):
    fake = types.ModuleType("graphviz")
    fake.Digraph = _Recorder
    monkeypatch.setitem(sys.modules, "graphviz", fake)


@pytest.mark.parametrize("case", sorted(surface_nets.PLOT_CASES))
def test_plot_network_matches_mxnet(case, recording_graphviz):
    build, kwargs = surface_nets.PLOT_CASES[case]
    got = mx.viz.plot_network(build(mx), **kwargs).record
    assert json.loads(json.dumps(got)) == _gold("plot.json")[case]


def test_plot_network_is_a_digraph_with_mxnet_labels():
    graphviz = pytest.importorskip("graphviz")
    dot = mx.viz.plot_network(surface_nets.convnet(mx), shape={"data": (2, 3, 8, 8)})
    assert isinstance(dot, graphviz.Digraph)
    src = dot.source
    assert "Convolution\n3x3/1, 8" in src and "#fb8072" in src
    assert "conv1_weight" not in src  # weights hidden by default
    assert "8x4x4" in src  # edge label: pool1's output shape without the batch axis


def test_plot_network_warns_on_repeated_names(recording_graphviz):
    a = mx.sym.Variable("x")
    net = mx.sym.FullyConnected(a, name="x", num_hidden=2)
    with pytest.warns(RuntimeWarning, match="Repeated names: x"):
        mx.viz.plot_network(net)


def test_plot_network_errors(recording_graphviz):
    with pytest.raises(TypeError, match="symbol must be a Symbol"):
        mx.viz.plot_network(None)
    with pytest.raises(ValueError, match="Input shape is incomplete"):
        mx.viz.plot_network(surface_nets.mlp(mx), shape={})


def test_plot_network_without_graphviz(monkeypatch):
    monkeypatch.setitem(sys.modules, "graphviz", None)
    with pytest.raises(ImportError, match="Draw network requires graphviz library"):
        mx.viz.plot_network(surface_nets.mlp(mx))


@pytest.mark.skipif(
    shutil.which("dot") is None,
    reason="Graphviz's dot program is not on PATH (apt-get install graphviz, "
    "brew install graphviz or conda install graphviz)",
)
def test_plot_network_renders_png(tmp_path):
    pytest.importorskip("graphviz")
    dot = mx.viz.plot_network(surface_nets.mlp(mx), shape={"data": (1, 20)}, save_format="png")
    path = dot.render(filename="mlp", directory=str(tmp_path), cleanup=True)
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
