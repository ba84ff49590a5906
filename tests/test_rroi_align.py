"""``_contrib_RROIAlign`` against MXNet 1.9.1 goldens (``fixtures/rroi_align/``, recorded
by ``fixtures/gen_rroi_align_goldens.py``): adaptive and fixed sampling grids, scaled
coordinates, regions off the map, degenerate and rotated boxes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError

with np.load(Path(__file__).resolve().parent / "fixtures" / "rroi_align" / "goldens.npz") as z:
    G = {k: z[k] for k in z.files}
CASES = sorted({k.split(":")[0] for k in G})


@pytest.mark.parametrize("case", CASES)
def test_matches_mxnet(case):
    attrs = json.loads(str(G[f"{case}:attrs"]))
    out = mx.nd.contrib.RROIAlign(
        mx.nd.array(G[f"{case}:data"]), mx.nd.array(G[f"{case}:rois"]), **attrs
    )
    np.testing.assert_allclose(out.asnumpy(), G[f"{case}:out"], rtol=1e-4, atol=1e-5)


def test_symbol_shape_and_no_gradient():
    sym = mx.sym.contrib.RROIAlign(
        mx.sym.var("data"), mx.sym.var("rois"), pooled_size=(2, 3), spatial_scale=0.5
    )
    _, out, _ = sym.infer_shape(data=(2, 4, 8, 8), rois=(5, 6))
    assert out == [(5, 4, 2, 3)]
    ex = sym.simple_bind(
        mx.cpu(), data=(2, 4, 8, 8), rois=(5, 6), grad_req={"data": "write", "rois": "null"}
    )
    ex.forward(is_train=True)
    with pytest.raises(NotImplementedError, match="no gradient"):
        ex.backward(mx.nd.ones((5, 4, 2, 3)))
    with pytest.raises(MXNetError, match=r"\(num_rois, 6\)"):
        sym.infer_shape(data=(2, 4, 8, 8), rois=(5, 5))
