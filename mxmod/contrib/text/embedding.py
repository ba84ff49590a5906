"""``mx.contrib.text.embedding``: token embeddings from pre-trained vector files.

A token embedding is a :class:`~mxmod.contrib.text.vocab.Vocabulary` with a vector per
token (``idx_to_vec``, an NDArray; row 0 the unknown token's). Files are text, one token and
its numbers per line; a token seen twice keeps its first vector, and a line with one number
(fastText's header) is skipped. ``GloVe`` and ``FastText`` read MXNet's released files from
``embedding_root/<glove|fasttext>/<file>`` (``$MXNET_HOME/embeddings`` or
``~/.mxnet/embeddings``): mxmod never downloads, and says where to put a missing file.
Reserved tokens get rows of their own (zeros unless the file has them; MXNet 1.9.1 gives
them no rows, shifting every vector after them).
"""

from __future__ import annotations

import io
import logging
import os
import warnings

import numpy as np

from ... import ndarray as nd
from . import _pretrained_files
from .vocab import UNKNOWN_IDX, Vocabulary

__all__ = [
    "register",
    "create",
    "get_pretrained_file_names",
    "GloVe",
    "FastText",
    "CustomEmbedding",
    "CompositeEmbedding",
]

_REGISTRY: dict = {}
_DOWNLOAD_ROOT = "https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/gluon/embeddings"


def _default_root() -> str:
    return os.path.join(os.environ.get("MXNET_HOME", os.path.join("~", ".mxnet")), "embeddings")


def register(embedding_cls):
    """Make ``embedding_cls`` creatable by its lower-cased name (``create``); returns it."""
    if not (isinstance(embedding_cls, type) and issubclass(embedding_cls, _TokenEmbedding)):
        raise TypeError(f"register: {embedding_cls!r} is not a token embedding class")
    _REGISTRY[embedding_cls.__name__.lower()] = embedding_cls
    return embedding_cls


def create(embedding_name, **kwargs):
    """An instance of the embedding registered as ``embedding_name`` (any case)."""
    cls = _REGISTRY.get(str(embedding_name).lower())
    if cls is None:
        raise KeyError(
            f"Cannot find token embedding {embedding_name!r}; registered: {sorted(_REGISTRY)}"
        )
    return cls(**kwargs)


def get_pretrained_file_names(embedding_name=None):
    """The pre-trained file names of ``embedding_name``, or of every registered embedding (a
    dict) when it is None."""
    if embedding_name is not None:
        if embedding_name not in _REGISTRY:
            raise KeyError(
                f"Cannot find `embedding_name` {embedding_name}; the valid names are "
                f"{sorted(_REGISTRY)}"
            )
        return list(_REGISTRY[embedding_name].pretrained_file_names)
    return {name: list(cls.pretrained_file_names) for name, cls in _REGISTRY.items()}


class _TokenEmbedding(Vocabulary):
    """A vocabulary with a vector per token (see the module docstring)."""

    pretrained_file_names: tuple = ()

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._vec_len = None
        self._idx_to_vec = None

    @property
    def vec_len(self):
        return self._vec_len

    @property
    def idx_to_vec(self):
        return self._idx_to_vec

    def _load_embedding(self, path, elem_delim, init_unknown_vec, encoding="utf8") -> None:
        path = os.path.expanduser(path)
        if not os.path.isfile(path):
            raise ValueError(
                f"`pretrained_file_path` must be a valid path to the pre-trained token "
                f"embedding file; {path!r} is not a file"
            )
        logging.info("Loading pre-trained token embedding vectors from %s", path)
        rows: dict = {}  # index -> vector
        with io.open(path, "r", encoding=encoding) as f:
            for line_num, line in enumerate(f, 1):
                elems = line.rstrip().split(elem_delim)
                if len(elems) < 2:
                    raise ValueError(
                        f"line {line_num} of {path}: expected a token and its vector, got "
                        f"{line.rstrip()!r}"
                    )
                token, vec = elems[0], [float(x) for x in elems[1:]]
                index = self._token_to_idx.get(token)
                if len(vec) == 1:
                    warnings.warn(
                        f"At line {line_num} of {path}: token {token} with the 1-dimensional "
                        f"vector {vec} is likely a header and is skipped."
                    )
                    continue
                if index is not None and index in rows:
                    warnings.warn(
                        f"At line {line_num} of {path}: the vector of token {token} has been "
                        "loaded already; this duplicate is skipped."
                    )
                    continue
                if self._vec_len is None:
                    self._vec_len = len(vec)
                elif len(vec) != self._vec_len:
                    raise ValueError(
                        f"line {line_num} of {path}: token {token} has {len(vec)} numbers, "
                        f"the tokens before it {self._vec_len}; all must have the same"
                    )
                if index is None:
                    index = self._token_to_idx[token] = len(self._idx_to_token)
                    self._idx_to_token.append(token)
                rows[index] = vec
        if self._vec_len is None:
            raise ValueError(f"{path} holds no token vectors")
        table = np.zeros((len(self._idx_to_token), self._vec_len), np.float32)
        for index, vec in rows.items():
            table[index] = vec
        if UNKNOWN_IDX not in rows:
            table[UNKNOWN_IDX] = np.asarray(init_unknown_vec(shape=self._vec_len).asnumpy())
        self._idx_to_vec = nd.array(table)

    def _index_tokens_from_vocabulary(self, vocabulary) -> None:
        self._token_to_idx = dict(vocabulary.token_to_idx)
        self._idx_to_token = list(vocabulary.idx_to_token)
        self._unknown_token = vocabulary.unknown_token
        reserved = vocabulary.reserved_tokens
        self._reserved_tokens = list(reserved) if reserved is not None else None

    def _set_idx_to_vec_by_embeddings(self, token_embeddings, vocab_len, vocab_idx_to_token):
        """Rows for ``vocab_idx_to_token`` from each of ``token_embeddings``, side by side;
        row 0 holds each embedding's unknown vector."""
        parts = []
        for embed in token_embeddings:
            part = np.zeros((vocab_len, embed.vec_len), np.float32)
            part[0] = embed.idx_to_vec[0].asnumpy()
            if vocab_len > 1:
                part[1:] = embed.get_vecs_by_tokens(list(vocab_idx_to_token[1:])).asnumpy()
            parts.append(part)
        self._vec_len = sum(embed.vec_len for embed in token_embeddings)
        self._idx_to_vec = nd.array(np.concatenate(parts, axis=1))

    def _build_embedding_for_vocabulary(self, vocabulary) -> None:
        if vocabulary is None:
            return
        if not isinstance(vocabulary, Vocabulary):
            raise TypeError(
                "vocabulary must be an mx.contrib.text.vocab.Vocabulary, got "
                f"{type(vocabulary).__name__}"
            )
        self._set_idx_to_vec_by_embeddings([self], len(vocabulary), vocabulary.idx_to_token)
        self._index_tokens_from_vocabulary(vocabulary)

    def get_vecs_by_tokens(self, tokens, lower_case_backup=False):
        """The vector of a token (1-D), or of each of a list of tokens (2-D); unknown tokens
        get row 0. ``lower_case_backup``: a token not found is looked up lower-cased."""
        single = not isinstance(tokens, list)
        indices = []
        for token in [tokens] if single else tokens:
            index = self._token_to_idx.get(token)
            if index is None and lower_case_backup:
                index = self._token_to_idx.get(token.lower())
            indices.append(UNKNOWN_IDX if index is None else index)
        table = self._idx_to_vec
        vecs = nd.Embedding(
            nd.array(indices), table, input_dim=table.shape[0], output_dim=table.shape[1]
        )
        return vecs[0] if single else vecs

    def update_token_vectors(self, tokens, new_vectors) -> None:
        """Write ``new_vectors`` (a row per token; 1-D for one token) into ``idx_to_vec``."""
        if self._idx_to_vec is None:
            raise ValueError("update_token_vectors: this embedding has no vectors yet")
        if not isinstance(new_vectors, nd.NDArray):
            raise TypeError("update_token_vectors: new_vectors must be an NDArray")
        tokens = tokens if isinstance(tokens, list) else [tokens]
        new = new_vectors.asnumpy()
        if new.ndim == 1 and len(tokens) == 1:
            new = new[None]
        if new.shape != (len(tokens), self._vec_len):
            raise ValueError(
                f"update_token_vectors: new_vectors must have shape ({len(tokens)}, "
                f"{self._vec_len}) for {len(tokens)} token(s), got {new_vectors.shape}"
            )
        indices = []
        for token in tokens:
            if token not in self._token_to_idx:
                raise ValueError(
                    f"Token {token} is unknown. To update the embedding vector for an unknown "
                    f"token, name the unknown token {self._idx_to_token[UNKNOWN_IDX]!r} in "
                    "`tokens`; this avoids unintended updates."
                )
            indices.append(self._token_to_idx[token])
        table = self._idx_to_vec.asnumpy()
        table[indices] = new
        self._idx_to_vec[:] = table

    @classmethod
    def _pretrained_file(cls, embedding_root, file_name) -> str:
        kind = cls.__name__.lower()
        if file_name not in cls.pretrained_file_names:
            raise KeyError(
                f"Cannot find pretrained file {file_name} for token embedding {kind}; valid "
                f"files: get_pretrained_file_names({kind!r})"
            )
        path = os.path.join(os.path.expanduser(embedding_root), kind, file_name)
        if not os.path.isfile(path):
            raise FileNotFoundError(
                f"{kind} embedding file {path} not found: mxmod does not download. Fetch the "
                f"archive holding {file_name} from {_DOWNLOAD_ROOT}/{kind}/ (where MXNet "
                f"downloads it from), unpack it and put {file_name} at {path}"
            )
        return path


class _PretrainedEmbedding(_TokenEmbedding):
    """A released embedding, read from ``embedding_root/<glove|fasttext>/<file>``."""

    default_file = ""

    def __init__(
        self,
        pretrained_file_name=None,
        embedding_root=_default_root(),
        init_unknown_vec=nd.zeros,
        vocabulary=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        path = self._pretrained_file(embedding_root, pretrained_file_name or self.default_file)
        self._load_embedding(path, " ", init_unknown_vec)
        self._build_embedding_for_vocabulary(vocabulary)


@register
class GloVe(_PretrainedEmbedding):
    """GloVe vectors (``glove.6B.50d.txt`` ...; default ``glove.840B.300d.txt``)."""

    pretrained_file_names = _pretrained_files.GLOVE
    default_file = "glove.840B.300d.txt"


@register
class FastText(_PretrainedEmbedding):
    """fastText vectors (``wiki.simple.vec`` ...; the default)."""

    pretrained_file_names = _pretrained_files.FASTTEXT
    default_file = "wiki.simple.vec"


class CustomEmbedding(_TokenEmbedding):
    """Vectors from any local file of ``token<elem_delim>v1<elem_delim>v2...`` lines."""

    def __init__(
        self,
        pretrained_file_path,
        elem_delim=" ",
        encoding="utf8",
        init_unknown_vec=nd.zeros,
        vocabulary=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self._load_embedding(pretrained_file_path, elem_delim, init_unknown_vec, encoding)
        self._build_embedding_for_vocabulary(vocabulary)


class CompositeEmbedding(_TokenEmbedding):
    """``vocabulary``'s tokens with the vectors of each of ``token_embeddings`` joined end
    to end."""

    def __init__(self, vocabulary, token_embeddings):
        if not isinstance(vocabulary, Vocabulary):
            raise TypeError("CompositeEmbedding: vocabulary must be a Vocabulary")
        embeds = token_embeddings if isinstance(token_embeddings, list) else [token_embeddings]
        for embed in embeds:
            if not isinstance(embed, _TokenEmbedding):
                raise TypeError(
                    "CompositeEmbedding: token_embeddings must be token embeddings, got "
                    f"{type(embed).__name__}"
                )
        super().__init__()
        self._index_tokens_from_vocabulary(vocabulary)
        self._set_idx_to_vec_by_embeddings(embeds, len(vocabulary), vocabulary.idx_to_token)
