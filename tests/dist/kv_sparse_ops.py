"""A worker pushing row_sparse values in a dist_sync job (tests/test_kvstore_sparse_dist.py).

    python -m mxmod.launch -n 2 --cpu-devices 2 python tests/dist/kv_sparse_ops.py OUT

Writes OUT/kv-sparse-rank<R>.npz.
"""

import os
import sys

import numpy as np

import mxmod as mx


def rsp(rows, value, ctx):
    data = np.full((len(rows), 2), value, np.float32)
    return mx.nd.sparse.row_sparse_array((data, np.array(rows)), shape=(4, 2), ctx=ctx)


def main():
    out = sys.argv[1]
    kv = mx.kv.create("dist_sync")
    r = kv.rank
    rec = {"rank": np.array(r)}
    # rank 0's value everywhere, its stored zero row included
    kv.init("w", rsp([0, 2], 10.0, mx.cpu(0)) if r == 0 else rsp([1], 11.0, mx.cpu(0)))
    seen = []

    def update(key, recv, local):
        seen.append((recv.indices.asnumpy(), recv.data.asnumpy()))
        local += recv

    kv._set_updater(update)
    # worker r: row r holds 1 + r on cpu(0); cpu(1) stores row 3 as zeros
    kv.push("w", [rsp([r], 1.0 + r, mx.cpu(0)), rsp([3], 0.0, mx.cpu(1))])
    rec["recv_indices"], rec["recv_data"] = seen[0]
    o = mx.nd.sparse.zeros("row_sparse", (4, 2))
    kv.row_sparse_pull("w", out=o, row_ids=mx.nd.array([3, 2, 0, 1]))
    rec["pulled_indices"], rec["pulled"] = o.indices.asnumpy(), o.asnumpy()
    np.savez(os.path.join(out, f"kv-sparse-rank{r}.npz"), **rec)


if __name__ == "__main__":
    main()
