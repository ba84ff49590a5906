"""mxmod's AMP operator classes are MXNet 1.9.1's for every operator mxmod registers
(``tests/fixtures/amp/mxnet_lists.json``, from ``gen_amp_lists.py``)."""

import json
import os

import pytest

from mxmod.contrib.amp import lists
from mxmod.ops import list_ops

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "fixtures", "amp", "mxnet_lists.json")) as f:
    MXNET = json.load(f)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("cls", ["lp", "follow", "fp32", "widest"])
def test_classes_are_mxnets_for_registered_operators(dtype, cls):
    ours = lists.table(dtype)[cls]
    theirs = set(MXNET[dtype][cls])
    assert sorted((theirs & set(list_ops())) - ours) == []  # an operator added unclassed
    assert sorted(ours - theirs) == []
