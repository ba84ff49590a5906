"""examples/module_tutorial.py (MXNet's Module tutorial) runs top to bottom, fast mode."""

import importlib.util
import os
import shutil

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def _load_example():
    path = os.path.join(HERE, os.pardir, "examples", "module_tutorial.py")
    spec = importlib.util.spec_from_file_location("module_tutorial", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_module_tutorial_runs(tmp_path, capsys):
    results = _load_example().main(["--fast", "--out", str(tmp_path)])
    printed = capsys.readouterr().out
    assert "Layer (type)" in printed and "Total params: 2778" in printed  # mx.viz table
    assert "Epoch 1, Training ('accuracy'" in printed  # the intermediate-level loop
    assert results["fit_accuracy"] > 0.9  # 26 well-separated synthetic classes
    assert results["resumed_accuracy"] > 0.15  # well above chance (1/26) after resuming
    for epoch in (1, 2, 3, 4):
        assert (tmp_path / f"mx_mlp-{epoch:04d}.params").exists()
    assert (tmp_path / "mx_mlp-symbol.json").exists()
    if shutil.which("dot"):
        with open(tmp_path / "module_tutorial_net.png", "rb") as f:
            assert f.read(4) == b"\x89PNG"


def test_synthetic_data_shape():
    data, label = _load_example().synthetic_letters(100)
    assert data.shape == (100, 16) and label.shape == (100,)
    assert data.min() >= 0 and data.max() <= 15 and set(label) <= set(range(26))
    with pytest.raises(OSError):
        _load_example().load_letters(os.path.join(HERE, "no-such-letters.data"))
