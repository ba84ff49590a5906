"""examples/sparse_linear_classification.py: csr data (LibSVMIter) and a row_sparse weight
trained by Module.fit; its shipped data is what make_data writes."""

import filecmp
import importlib.util
import os

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PATH = os.path.join(HERE, os.pardir, "examples", "sparse_linear_classification.py")


def _example():
    spec = importlib.util.spec_from_file_location("sparse_linear_classification", PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_shipped_data_is_make_data_output(tmp_path):
    ex = _example()
    ex.make_data(str(tmp_path))
    for name in ("train.libsvm", "test.libsvm"):
        assert filecmp.cmp(tmp_path / name, os.path.join(ex.DATA_DIR, name), shallow=False)
    total = sum(os.path.getsize(os.path.join(ex.DATA_DIR, n)) for n in os.listdir(ex.DATA_DIR))
    assert total < 1 << 20


@pytest.mark.slow
def test_example_trains_a_row_sparse_weight(capsys):
    results = _example().main(["--epochs", "3"])
    assert "train accuracy" in capsys.readouterr().out
    assert results["weight_stype"] == "row_sparse"
    assert results["train_accuracy"] > 0.8 and results["test_accuracy"] > 0.7  # chance: ~0.5
