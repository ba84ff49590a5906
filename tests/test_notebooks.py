"""notebooks/: each notebook runs top to bottom on CPU (small sizes injected after its
``parameters`` cell, as papermill does) and draws a curve that moves the right way.

The notebooks are committed without outputs; these tests execute fresh copies with
nbclient in a Jupyter kernel (the 8 simulated CPU devices of conftest reach it through
the environment) and read the curve data each notebook saves next to its plot.
"""

import json
import os

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "notebooks")


def _check_quickstart(curve):
    assert curve["loss"][-1] < curve["loss"][0]
    assert curve["accuracy"][-1] > curve["accuracy"][0] and curve["accuracy"][-1] > 0.9


def _check_data_parallel(curve):
    assert curve["loss"][-1] < curve["loss"][0]
    assert curve["max_param_diff"] < 1e-4  # 1 and 4 devices train the same model
    assert set(curve["samples_per_sec"]) == {"1", "4"}
    assert min(curve["samples_per_sec"].values()) > 0


def _check_bucketing(curve):
    assert curve["loss"][-1] < curve["loss"][0]  # validation perplexity falls
    assert curve["train"][-1] < curve["train"][0]


def _check_checkpoint(curve):
    assert curve["accuracy"][-1] > curve["accuracy"][0]
    assert curve["before"]["5-9"] < 0.1  # MXNet's model never saw 5-9
    assert curve["after"]["5-9"] > 0.5  # fine-tuning fc2 learnt them
    assert curve["after"]["0-4"] > 0.9  # old ones kept


def _check_export(curve):
    assert curve["x"] == ["mxmod", "onnx", "stablehlo"]
    assert len(set(curve["accuracy"])) == 1 and curve["accuracy"][0] > 0.9  # digits 0-4
    assert max(curve["max_rel_diff"].values()) <= 1e-5
    assert min(curve["agree"].values()) == 1.0


# notebook: (small parameters, curve file stem, check of the curve data)
CASES = {
    "01_module_quickstart.ipynb": (
        "NUM_EPOCH = 5\nLOOP_EPOCH = 1",
        "quickstart_curve",
        _check_quickstart,
    ),
    "02_data_parallel.ipynb": (
        "NUM_EPOCH = 4\nN_CPU_DEVICES = 4\nNUM_HIDDEN = 64",
        "data_parallel_curve",
        _check_data_parallel,
    ),
    "03_bucketing_lstm.ipynb": (
        "NUM_EPOCH = 3\nNUM_LAYERS = 1\nNUM_HIDDEN = NUM_EMBED = 32\nMAX_SENTENCES = 640",
        "bucketing_curve",
        _check_bucketing,
    ),
    "04_mxnet_checkpoint.ipynb": ("NUM_EPOCH = 4", "checkpoint_curve", _check_checkpoint),
    "05_export.ipynb": ("N_SAMPLES = 200", "export_curve", _check_export),
}


def _read(name):
    return nbformat.read(os.path.join(NOTEBOOKS, name), as_version=4)


def _parameters_index(nb):
    tagged = [i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1, "each notebook has exactly one cell tagged 'parameters'"
    return tagged[0]


def test_every_notebook_has_a_case():
    found = sorted(f for f in os.listdir(NOTEBOOKS) if f.endswith(".ipynb"))
    assert found == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_notebook_is_committed_clean_with_badge_and_install_cell(name):
    nb = _read(name)
    nbformat.validate(nb)
    badge = nb.cells[0].source
    assert nb.cells[0].cell_type == "markdown" and "colab-badge.svg" in badge
    assert f"/blob/main/notebooks/{name})" in badge  # the badge opens this notebook
    setup = nb.cells[1].source
    assert nb.cells[1].cell_type == "code"
    # installs when `import mxmod` lacks mxmod.sym: a clone in ./mxmod alone is found by name
    # (a namespace package), see test_notebooks_colab.py
    assert 'hasattr(mxmod, "sym")' in setup and '"pip", "install"' in setup
    git = setup.split('MXMOD_GIT = "')[1].split('"')[0]
    assert badge.split("/github/")[1].split("/blob/")[0] == git.split("github.com/")[1]
    assert _parameters_index(nb) == 2
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, "commit without outputs"


# 17-33 s each on 2 cores: the default suite runs 04 (its fastest); .ci/run runs 01 in
# test_notebooks_colab.py, .ci/run-slow all of them
DEFAULT_RUN = "04_mxnet_checkpoint.ipynb"


@pytest.mark.parametrize(
    "name",
    [n if n == DEFAULT_RUN else pytest.param(n, marks=pytest.mark.slow) for n in sorted(CASES)],
)
def test_notebook_runs_and_its_curve_moves(name, tmp_path):
    overrides, stem, check = CASES[name]
    nb = _read(name)
    injected = nbformat.v4.new_code_cell(f"{overrides}\nOUT_DIR = {str(tmp_path)!r}")
    nb.cells.insert(_parameters_index(nb) + 1, injected)
    client = nbclient.NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": NOTEBOOKS}}
    )
    client.execute()
    with open(tmp_path / f"{stem}.png", "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    shown = [
        o
        for c in nb.cells
        if c.cell_type == "code" and f"{stem}.png" in c.source
        for o in c.outputs
        if o.output_type == "display_data"
    ]
    assert any("image/png" in o.data for o in shown), "the plot is displayed in the notebook"
    with open(tmp_path / f"{stem}.json") as f:
        curve = json.load(f)
    assert len(curve["x"]) == len(curve.get("loss", curve.get("accuracy")))
    check(curve)
