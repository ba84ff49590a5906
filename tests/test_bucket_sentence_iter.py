"""``mx.rnn.encode_sentences`` and ``mx.rnn.BucketSentenceIter`` against MXNet 1.9.1
(``fixtures/rnn_cells/bucket_iter.*`` from ``fixtures/gen_rnn_cells.py``)."""

import json
import random
from pathlib import Path

import numpy as np
import pytest

import mxmod as mx

DIR = Path(__file__).parent / "fixtures" / "rnn_cells"
REC = json.loads((DIR / "bucket_iter.json").read_text())
CONFIGS = {
    "nt": dict(batch_size=4, buckets=[5, 10, 15, 20], invalid_label=0),
    "tn_auto": dict(batch_size=3, buckets=None, invalid_label=-1, layout="TN", dtype="int32"),
    "nt_short": dict(batch_size=5, buckets=[8, 12], invalid_label=0),
}


@pytest.fixture(scope="module")
def arrays():
    with np.load(DIR / "bucket_iter.npz") as z:
        return {k: z[k] for k in z.files}


def test_encode_sentences_matches_mxnet():
    coded, vocab = mx.rnn.encode_sentences(REC["sentences"], invalid_label=0, start_label=1)
    assert coded == REC["coded"] and vocab == REC["vocab"]
    coded2, vocab2 = mx.rnn.encode_sentences(REC["sentences"][:10], invalid_label=3, start_label=2)
    assert coded2 == REC["coded2"] and vocab2 == REC["vocab2"]
    assert 3 not in [v for k, v in vocab2.items() if k != "\n"]  # the invalid id is skipped


def test_encode_sentences_with_a_given_vocab():
    vocab = {"\n": 0, "a": 1, "b": 2}
    coded, out = mx.rnn.encode_sentences([["a", "b", "a"]], vocab=vocab)
    assert coded == [[1, 2, 1]] and out == vocab
    with pytest.raises(KeyError, match="Unknown token 'zz'.*unknown_token"):
        mx.rnn.encode_sentences([["a", "zz"]], vocab=vocab)
    # MXNet 1.9.1: each unknown word re-numbers the unknown token from start_label, and the
    # given vocab is updated in place (tests/test_issue23_surface.py has MXNet's goldens)
    coded, out = mx.rnn.encode_sentences([["a", "zz", "yy"]], vocab=vocab, unknown_token="<unk>")
    assert coded == [[1, 0, 1]] and out is vocab and vocab["<unk>"] == 1


@pytest.mark.parametrize("key", sorted(CONFIGS))
def test_batches_match_mxnet_for_the_same_seeds(key, arrays, capsys):
    meta = REC["iters"][key]
    random.seed(11)
    np.random.seed(11)
    it = mx.rnn.BucketSentenceIter(REC["coded"], **CONFIGS[key])
    assert "WARNING: discarded" in capsys.readouterr().out
    assert it.buckets == meta["buckets"]
    assert it.default_bucket_key == meta["default_bucket_key"]
    assert [[d.name, list(d.shape), d.layout] for d in it.provide_data] == meta["provide_data"]
    assert [[d.name, list(d.shape), d.layout] for d in it.provide_label] == meta["provide_label"]
    n = 0
    for epoch in range(2):
        it.reset()
        for b, batch in enumerate(it):
            bucket_key, pad, shape = meta["batches"][n]
            n += 1
            assert (batch.bucket_key, batch.pad, list(batch.provide_data[0].shape)) == (
                bucket_key,
                pad,
                shape,
            )
            assert batch.provide_label[0].layout == CONFIGS[key].get("layout", "NT")
            data = batch.data[0].asnumpy()
            np.testing.assert_array_equal(data, arrays[f"{key}:{epoch}:{b}:data"])
            np.testing.assert_array_equal(
                batch.label[0].asnumpy(), arrays[f"{key}:{epoch}:{b}:label"]
            )
            assert data.dtype == np.dtype(CONFIGS[key].get("dtype", "float32"))
    assert n == len(meta["batches"])


def test_labels_are_the_next_token_and_buckets_pad():
    sents = [[1, 2, 3], [4, 5], [6, 7, 8, 9], [1, 1]]
    it = mx.rnn.BucketSentenceIter(sents, 2, buckets=[4], invalid_label=0)
    rows = {}
    for batch in it:
        for d, lab in zip(batch.data[0].asnumpy(), batch.label[0].asnumpy()):
            rows[tuple(d)] = tuple(lab)
    assert rows[(1, 2, 3, 0)] == (2, 3, 0, 0)
    assert rows[(6, 7, 8, 9)] == (7, 8, 9, 0)
    assert len(rows) == 4


def test_iterator_errors(capsys):
    sents = [[1, 2, 3]] * 4
    with pytest.raises(ValueError, match="Invalid layout 'CT'"):
        mx.rnn.BucketSentenceIter(sents, 2, buckets=[4], layout="CT")
    with pytest.raises(TypeError, match="batch_size must be a positive int"):
        mx.rnn.BucketSentenceIter(sents, 0, buckets=[4])
    with pytest.raises(ValueError, match=r"no sentence fits the buckets \[2\]"):
        mx.rnn.BucketSentenceIter(sents, 2, buckets=[2])
    assert "discarded 4 sentences" in capsys.readouterr().out
    with pytest.raises(
        ValueError,
        match=r"no bucket holds a full batch of 8 sentences "
        r"\(sentences per bucket: \{4: 4\}\)",
    ):
        mx.rnn.BucketSentenceIter(sents, 8, buckets=[4])
