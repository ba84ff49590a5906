"""A fresh Colab runtime, simulated offline: mxmod is not installed and the notebook's first
cell has just cloned the repository into ./mxmod. That folder is found by
``import mxmod`` as an empty namespace package, so the cell must install mxmod from the
clone (not trust that the name is found), and the notebook must then run.

The kernel is a fresh Python without mxmod (tests/isolated_python.py) started in a folder
that holds a copy of this checkout as ``mxmod``; pip installs from it without network.
"""

import json
import os
import shutil

import pytest

from isolated_python import make_python_without_mxmod, offline_env
from test_notebooks import CASES, _parameters_index, _read

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTEBOOK = "01_module_quickstart.ipynb"

# Before the setup cell: the trap is there (the clone is found, as a namespace package).
PROBE = """import importlib.util
_spec = importlib.util.find_spec("mxmod")
assert _spec is not None and _spec.origin is None, _spec  # ./mxmod: a namespace package
"""
# After it: mxmod is the installed package, not the clone's folder.
INSTALLED = """import mxmod as _mx
assert "site-packages" in _mx.__file__ and hasattr(_mx, "sym"), _mx.__file__
"""


def _clone_into(folder):
    """What `git clone` gives the cell, less tests/ and docs."""
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "build", ".ipynb_checkpoints")
    for name in ("mxmod", "examples", "notebooks"):
        shutil.copytree(os.path.join(ROOT, name), os.path.join(folder, name), ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(os.path.join(ROOT, name), os.path.join(folder, name))


def _kernel_spec(jupyter_path, python):
    folder = os.path.join(jupyter_path, "kernels", "fresh-colab")
    os.makedirs(folder)
    argv = [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    with open(os.path.join(folder, "kernel.json"), "w") as f:
        json.dump({"argv": argv, "display_name": "fresh runtime", "language": "python"}, f)


@pytest.mark.slow  # a venv, a pip install of mxmod and a notebook run
def test_fresh_runtime_setup_cell_installs_mxmod_from_the_clone(tmp_path, monkeypatch):
    runtime = tmp_path / "content"  # Colab's working directory
    runtime.mkdir()
    _clone_into(str(runtime / "mxmod"))
    python = make_python_without_mxmod(str(tmp_path / "env"))
    jupyter_path = str(tmp_path / "jupyter")
    _kernel_spec(jupyter_path, python)
    monkeypatch.setenv("JUPYTER_PATH", jupyter_path)

    overrides, stem, check = CASES[NOTEBOOK]
    nb = _read(NOTEBOOK)
    nb.cells.insert(_parameters_index(nb) + 1, nbformat.v4.new_code_cell(INSTALLED))
    nb.cells.insert(1, nbformat.v4.new_code_cell(PROBE))
    out_dir = str(tmp_path / "out")
    injected = nbformat.v4.new_code_cell(f"{overrides}\nOUT_DIR = {out_dir!r}")
    nb.cells.insert(_parameters_index(nb) + 1, injected)
    client = nbclient.NotebookClient(
        nb, timeout=600, kernel_name="fresh-colab", resources={"metadata": {"path": str(runtime)}}
    )
    client.execute(env=offline_env(JUPYTER_PATH=jupyter_path))
    setup_out = "".join(o.get("text", "") for o in nb.cells[2].outputs)
    assert f"mxmod repository: {runtime / 'mxmod'}" in setup_out
    with open(os.path.join(out_dir, f"{stem}.json")) as f:
        check(json.load(f))
