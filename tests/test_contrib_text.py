"""mx.contrib.text against MXNet 1.9.1 (tests/fixtures/gen_text_goldens.py)."""

import collections
import json
import os

import numpy as np
import pytest

import mxmod as mx
from mxmod.contrib import text

HERE = os.path.join(os.path.dirname(__file__), "fixtures", "text")
with open(os.path.join(HERE, "goldens.json"), encoding="utf8") as f:
    G = json.load(f)
VECTORS = os.path.join(HERE, "vectors.txt")
TAB = os.path.join(HERE, "vectors_tab.txt")
SOURCE = " Life is great ! \n life is good . \n the the café\n"


def close(nd, want):
    np.testing.assert_allclose(nd.asnumpy(), np.array(want, np.float32), rtol=1e-6)


def counter():
    return text.utils.count_tokens_from_str(SOURCE, " ", "\n", True)


def test_count_tokens():
    assert dict(counter()) == G["count_lower"]
    assert dict(text.utils.count_tokens_from_str("*a*b*\n*a*c*\n", r"\*", "\n")) == G["count_star"]
    upd = collections.Counter({"a": 5})
    assert text.utils.count_tokens_from_str("a b a", counter_to_update=upd) is upd
    assert dict(upd) == G["count_update"]


@pytest.mark.parametrize(
    "name,kw",
    [
        ("plain", {}),
        ("capped", dict(most_freq_count=3)),
        ("min2", dict(min_freq=2, unknown_token="<UNK>")),
        ("reserved", dict(reserved_tokens=["<pad>", "is"])),
    ],
)
def test_vocabulary(name, kw):
    v = text.vocab.Vocabulary(counter(), **kw)
    want = G["vocab"][name]
    assert v.idx_to_token == want["idx_to_token"] and len(v) == len(want["idx_to_token"])
    assert v.to_indices(["life", "nope", "is"]) == want["to_indices"]
    assert v.to_indices("good") == want["to_index"]
    assert v.to_tokens([0, len(v) - 1]) == want["to_tokens"]
    assert v.token_to_idx == {t: i for i, t in enumerate(want["idx_to_token"])}


def test_vocabulary_refuses_bad_arguments():
    with pytest.raises(ValueError, match="min_freq"):
        text.vocab.Vocabulary(counter(), min_freq=0)
    with pytest.raises(ValueError, match="unknown token"):
        text.vocab.Vocabulary(reserved_tokens=["<unk>"])
    with pytest.raises(ValueError, match="duplicates"):
        text.vocab.Vocabulary(reserved_tokens=["a", "a"])
    with pytest.raises(TypeError, match="collections.Counter"):
        text.vocab.Vocabulary({"a": 1})
    with pytest.raises(ValueError, match="index 9 .* invalid"):
        text.vocab.Vocabulary(counter()).to_tokens(9)
    with pytest.raises(ValueError, match="index -1 .* invalid"):  # MXNet wraps around
        text.vocab.Vocabulary(counter()).to_tokens(-1)


def test_custom_embedding_loads_lookups_and_updates():
    with pytest.warns(UserWarning, match="header"):
        emb = text.embedding.CustomEmbedding(VECTORS)
    want = G["custom"]
    assert emb.idx_to_token == want["idx_to_token"] and emb.vec_len == 3
    close(emb.idx_to_vec, want["idx_to_vec"])
    close(emb.get_vecs_by_tokens(["great", "Great", "zzz"]), want["vecs"])
    close(emb.get_vecs_by_tokens(["LIFE", "Great"], lower_case_backup=True), want["vecs_lower"])
    close(emb.get_vecs_by_tokens("is"), want["vec_one"])
    table = emb.idx_to_vec
    emb.update_token_vectors(["is", "<unk>"], mx.nd.array([[7, 7, 7], [8, 8, 8]]))
    close(emb.idx_to_vec, want["updated"])
    close(table, want["updated"])  # in place, as MXNet
    with pytest.raises(ValueError, match="Token nope is unknown"):
        emb.update_token_vectors("nope", mx.nd.ones((3,)))
    with pytest.raises(ValueError, match="shape"):
        emb.update_token_vectors(["is"], mx.nd.ones((2, 3)))


def test_delimiters_unknown_init_vocabulary_and_composite():
    tabbed = text.embedding.CustomEmbedding(TAB, elem_delim="\t", init_unknown_vec=mx.nd.ones)
    close(tabbed.idx_to_vec, G["tabbed"])
    vocab = text.vocab.Vocabulary(counter(), most_freq_count=4)
    with pytest.warns(UserWarning):
        with_vocab = text.embedding.CustomEmbedding(VECTORS, vocabulary=vocab)
        emb = text.embedding.CustomEmbedding(VECTORS)
    assert with_vocab.idx_to_token == G["with_vocab"]["idx_to_token"]
    close(with_vocab.idx_to_vec, G["with_vocab"]["idx_to_vec"])
    emb.update_token_vectors(["is", "<unk>"], mx.nd.array([[7, 7, 7], [8, 8, 8]]))
    comp = text.embedding.CompositeEmbedding(vocab, [emb, tabbed])
    assert comp.idx_to_token == G["composite"]["idx_to_token"]
    assert comp.vec_len == G["composite"]["vec_len"]
    close(comp.idx_to_vec, G["composite"]["idx_to_vec"])


def test_reserved_tokens_get_their_own_rows():
    # MXNet 1.9.1 gives reserved tokens no rows: every vector after them shifts
    with pytest.warns(UserWarning):
        emb = text.embedding.CustomEmbedding(VECTORS, reserved_tokens=["<pad>"])
    assert emb.idx_to_token[:3] == ["<unk>", "<pad>", "the"]
    assert emb.idx_to_vec.shape == (len(emb), 3)
    close(emb.get_vecs_by_tokens(["<pad>", "the"]), [[0, 0, 0], [0.1, 0.2, 0.3]])


def test_pretrained_files_are_read_locally_and_never_downloaded(tmp_path):
    assert {k: len(v) for k, v in text.embedding.get_pretrained_file_names().items()} == G[
        "pretrained"
    ]
    with pytest.raises(FileNotFoundError, match="does not download"):
        text.embedding.create(
            "glove", pretrained_file_name="glove.6B.50d.txt", embedding_root=str(tmp_path)
        )
    with pytest.raises(KeyError, match="Cannot find pretrained file"):
        text.embedding.GloVe("glove.7B.txt", embedding_root=str(tmp_path))
    (tmp_path / "fasttext").mkdir()
    (tmp_path / "fasttext" / "wiki.simple.vec").write_text(open(VECTORS, encoding="utf8").read())
    with pytest.warns(UserWarning):
        ft = text.embedding.create("FastText", embedding_root=str(tmp_path))
    assert isinstance(ft, text.embedding.FastText) and ft.vec_len == 3
    with pytest.raises(KeyError, match="Cannot find token embedding"):
        text.embedding.create("word2vec")
