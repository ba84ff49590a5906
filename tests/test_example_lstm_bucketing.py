"""examples/lstm_bucketing.py (MXNet's bucketing LSTM recipe) trains: perplexity falls."""

import importlib.util
import os

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def _load_example():
    path = os.path.join(HERE, os.pardir, "examples", "lstm_bucketing.py")
    spec = importlib.util.spec_from_file_location("lstm_bucketing", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_small_lstm_lm_perplexity_falls():
    hist = _load_example().main(
        [
            "--num-hidden",
            "32",
            "--num-embed",
            "32",
            "--num-layers",
            "1",
            "--buckets",
            "20,40",
            "--max-sentences",
            "600",
            "--num-epochs",
            "3",
            "--lr",
            "0.05",
        ]
    )
    assert len(hist["train"]) == len(hist["val"]) == 3
    assert hist["train"][-1] < 0.8 * hist["train"][0], hist
    assert hist["val"][-1] < hist["val"][0], hist
