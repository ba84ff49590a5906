"""Gluon model-zoo exports from real MXNet run through mxmod's Module (slow; ``-m slow``).

The same path as ``benchmarks/model_zoo_check.py`` (which covers the whole zoo), for three
small models: MXNet exports them with ``tests/fixtures/gen_model_zoo.py`` into a temporary
folder, then mxmod loads each with ``load_checkpoint`` + ``Module`` and must reproduce
MXNet's output to 1e-4 of its scale and its symbol file byte for byte.
"""

import importlib.util
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
MXNET_PY = os.environ.get("MXNET_PYTHON", "/opt/mxnet-venv/bin/python")
GEN = ROOT / "tests" / "fixtures" / "gen_model_zoo.py"
MODELS = ["squeezenet1.1", "mobilenet0.25", "resnet18_v1"]

pytestmark = pytest.mark.slow


def zoo_check():
    spec = importlib.util.spec_from_file_location(
        "model_zoo_check", ROOT / "benchmarks" / "model_zoo_check.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    if not os.path.exists(MXNET_PY):
        msg = (
            f"real MXNet not installed at {MXNET_PY}; cannot export the model zoo (set "
            "MXNET_PYTHON to a Python with mxnet==1.9.1; see tests/fixtures/README.md)"
        )
        print(msg)
        pytest.skip(msg)
    out = tmp_path_factory.mktemp("zoo")
    res = subprocess.run(
        [MXNET_PY, str(GEN), str(out), *MODELS], capture_output=True, text=True, timeout=600
    )
    assert res.returncode == 0, res.stdout + res.stderr
    return out


@pytest.mark.parametrize("name", MODELS)
def test_zoo_model_matches_mxnet(exported, name):
    result = zoo_check().check_model(str(exported / name))
    assert result["rel_err"] <= 1e-4, result
    assert result["json_same"], result
