"""One ``.states`` format for ``Updater`` and ``Module`` (issue 9).

A Module writes what an ``Updater`` holding its states would write: ``{MXNet index: state}``
(``i * num_device + device``; parameter names with ``update_on_kvstore``, as MXNet) plus
the update counts, in mxmod's safe codec. Either side reads the other's files; files of
mxmod's first Module format (``tests/fixtures/states_v1``) still load.
"""

import sys
from pathlib import Path

import numpy as np
import pytest

import mxmod as mx

FIX = Path(__file__).parent / "fixtures"
sys.path.insert(0, str(FIX))
import gen_states_v1_fixture as v1  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:Parameters already initialized")


def params_of(mod):
    arg, _ = mod.get_params()
    return {k: v.asnumpy() for k, v in arg.items()}


# ------------------------------------------------------------ files of the first format
@pytest.mark.parametrize("case", sorted(v1.CASES))
def test_first_format_checkpoint_resumes_exactly(case):
    optimizer, params, ndev = v1.CASES[case]
    ctx = [mx.cpu(i) for i in range(ndev)]
    prefix = str(FIX / "states_v1" / case)
    mod = mx.mod.Module.load(prefix, 1, load_optimizer_states=True, context=ctx)
    fit = dict(optimizer=optimizer, optimizer_params=dict(params), kvstore="local")
    mod.fit(v1.data(mx), begin_epoch=1, num_epoch=2, **fit)
    final = np.load(FIX / "states_v1" / f"{case}-final.npz")
    got = params_of(mod)
    for key in final.files:
        np.testing.assert_allclose(got[key[4:]], final[key], rtol=0, atol=1e-6, err_msg=key)
    fresh = mx.mod.Module.load(prefix, 1, context=ctx)  # the states matter
    fresh.fit(v1.data(mx), begin_epoch=1, num_epoch=2, **fit)
    assert max(np.abs(params_of(fresh)[k[4:]] - final[k]).max() for k in final.files) > 1e-4
