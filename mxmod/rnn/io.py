"""Sentence encoding and the bucketing language-model iterator of MXNet's ``mx.rnn.io``."""

from __future__ import annotations

import bisect
import random
from typing import Any, Optional

import numpy as np

from .. import ndarray
from ..io import DataBatch, DataDesc, DataIter

__all__ = ["encode_sentences", "BucketSentenceIter"]


class UnknownTokenError(KeyError, AssertionError):
    """A word missing from the vocabulary given to ``encode_sentences`` (MXNet asserts)."""

    def __str__(self) -> str:
        return str(self.args[0])


def encode_sentences(
    sentences: list,
    vocab: Optional[dict] = None,
    invalid_label: int = -1,
    invalid_key: str = "\n",
    start_label: int = 0,
    unknown_token: Optional[str] = None,
) -> tuple[list, dict]:
    """Map token lists to integer lists, building the vocabulary on the way, exactly as
    MXNet 1.9.1's ``mx.rnn.encode_sentences``.

    A new vocabulary starts as ``{invalid_key: invalid_label}``. Every word not in the
    vocabulary takes the next id counted from ``start_label`` (skipping ``invalid_label``);
    a given ``vocab`` is updated in place and returned. With ``unknown_token``, such a word
    is recorded as ``unknown_token`` instead, re-numbered at each unknown word: ``UNK``
    gets ``start_label`` for the first one, ``start_label + 1`` for the next..., and these
    ids may coincide with ids the given vocabulary already uses (MXNet's own arithmetic).

    Args:
        sentences: list of lists of tokens.
        vocab: an existing token -> id dict (updated in place), or None to build one.
        invalid_label: id of ``invalid_key`` (end of sentence) and of padding.
        invalid_key: token of ``invalid_label`` in a new vocabulary.
        start_label: the first id given to a word not in the vocabulary.
        unknown_token: token recorded for words not in the vocabulary.

    Returns:
        ``(encoded, vocab)``.

    Raises:
        UnknownTokenError: (a KeyError and, as MXNet's check, an AssertionError) a word is
            not in the given ``vocab`` and no ``unknown_token`` was given.
    """
    idx = start_label
    new_vocab = vocab is None
    if new_vocab:
        vocab = {invalid_key: invalid_label}
    res = []
    for sent in sentences:
        coded = []
        for word in sent:
            if word not in vocab:
                if not (new_vocab or unknown_token):
                    raise UnknownTokenError(
                        f"Unknown token {word!r}: it is not in the given vocab; pass "
                        "unknown_token=... to map unknown words to it"
                    )
                if idx == invalid_label:
                    idx += 1
                if unknown_token:
                    word = unknown_token
                vocab[word] = idx
                idx += 1
            coded.append(vocab[word])
        res.append(coded)
    return res, vocab


class BucketSentenceIter(DataIter):
    """Batches of same-length (padded) sentences for a language model, as MXNet's
    ``mx.rnn.BucketSentenceIter``: the label of each step is the next token.

    Every sentence goes to the smallest bucket at least as long, right-padded with
    ``invalid_label``; longer sentences are dropped (a message says how many). Each batch
    comes from one bucket and carries ``bucket_key`` = that bucket's length. ``reset()``
    shuffles the batch order with Python's ``random`` and the rows of each bucket with
    ``numpy.random``, exactly as MXNet does, so seeding both gives MXNet's batches.

    Args:
        sentences: encoded sentences (lists of ints).
        batch_size: sentences per batch; only full batches are produced.
        buckets: bucket lengths; None makes one per length that has at least
            ``batch_size`` sentences.
        invalid_label: padding id, and the label after the last token.
        data_name: name of the data input.
        label_name: name of the label input.
        dtype: dtype of data and label.
        layout: ``'NT'`` (batch, time) or ``'TN'`` (time, batch).

    Raises:
        ValueError: a bad layout, or no bucket that holds a full batch.
    """

    def __init__(
        self,
        sentences: list,
        batch_size: int,
        buckets: Optional[list] = None,
        invalid_label: int = -1,
        data_name: str = "data",
        label_name: str = "softmax_label",
        dtype: Any = "float32",
        layout: str = "NT",
    ):
        super().__init__(batch_size)
        if not isinstance(layout, str) or layout.find("N") not in (0, 1):
            raise ValueError(
                f"Invalid layout {layout!r}: must be 'NT' (batch major) or 'TN' (time major)"
            )
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise TypeError(f"batch_size must be a positive int, got {batch_size!r}")
        if not buckets:
            counts = np.bincount([len(s) for s in sentences])
            buckets = [i for i, j in enumerate(counts) if j >= batch_size]
        buckets = sorted(buckets)

        ndiscard = 0
        data: list[list] = [[] for _ in buckets]
        for sent in sentences:
            buck = bisect.bisect_left(buckets, len(sent))
            if buck == len(buckets):
                ndiscard += 1
                continue
            buff = np.full((buckets[buck],), invalid_label, dtype=dtype)
            buff[: len(sent)] = sent
            data[buck].append(buff)
        self.buckets = [b for b, rows in zip(buckets, data) if rows]
        self.data = [np.asarray(rows, dtype=dtype) for rows in data if rows]
        print("WARNING: discarded %d sentences longer than the largest bucket." % ndiscard)
        if not self.buckets:
            raise ValueError(
                f"BucketSentenceIter: no sentence fits the buckets {buckets} "
                f"(of {len(sentences)} sentences); give longer buckets, or "
                "buckets=None to make one per common length"
            )

        self.data_name = data_name
        self.label_name = label_name
        self.dtype = dtype
        self.invalid_label = invalid_label
        self.nddata: list = []
        self.ndlabel: list = []
        self.major_axis = layout.find("N")
        self.layout = layout
        self.default_bucket_key = max(self.buckets)
        shape = (
            (batch_size, self.default_bucket_key)
            if self.major_axis == 0
            else (self.default_bucket_key, batch_size)
        )
        self.provide_data = [DataDesc(name=data_name, shape=shape, layout=layout)]
        self.provide_label = [DataDesc(name=label_name, shape=shape, layout=layout)]

        self.idx = [
            (i, j)
            for i, buck in enumerate(self.data)
            for j in range(0, len(buck) - batch_size + 1, batch_size)
        ]
        if not self.idx:
            sizes = {b: len(rows) for b, rows in zip(self.buckets, self.data)}
            raise ValueError(
                f"BucketSentenceIter: no bucket holds a full batch of "
                f"{batch_size} sentences (sentences per bucket: {sizes}); use a "
                "smaller batch_size or fewer buckets"
            )
        self.curr_idx = 0
        self.reset()

    def reset(self) -> None:
        """Go back to the start: reshuffle the batch order and the rows of each bucket."""
        self.curr_idx = 0
        random.shuffle(self.idx)
        for buck in self.data:
            np.random.shuffle(buck)
        # Batches are sliced from host copies: one transfer per batch and no compiled slice
        # per bucket shape; ``nddata``/``ndlabel`` keep MXNet's NDArray attributes.
        self._host = []
        self.nddata = []
        self.ndlabel = []
        for buck in self.data:
            label = np.empty_like(buck)
            label[:, :-1] = buck[:, 1:]
            label[:, -1] = self.invalid_label
            self._host.append((np.asarray(buck, self.dtype), np.asarray(label, self.dtype)))
            self.nddata.append(ndarray.array(buck, dtype=self.dtype))
            self.ndlabel.append(ndarray.array(label, dtype=self.dtype))
        self._host_of = self.nddata

    def next(self) -> DataBatch:
        """The next batch (``bucket_key`` = its bucket length); StopIteration at the end."""
        if self.curr_idx == len(self.idx):
            raise StopIteration
        i, j = self.idx[self.curr_idx]
        self.curr_idx += 1
        if getattr(self, "_host_of", None) is not self.nddata:
            # a subclass's reset() rebuilt nddata/ndlabel (MXNet's attributes): slice those
            self._host = [(d.asnumpy(), lb.asnumpy()) for d, lb in zip(self.nddata, self.ndlabel)]
            self._host_of = self.nddata
        host_data, host_label = self._host[i]
        data = host_data[j : j + self.batch_size]
        label = host_label[j : j + self.batch_size]
        if self.major_axis == 1:
            data, label = data.T, label.T
        data = ndarray.array(np.ascontiguousarray(data), dtype=self.dtype)
        label = ndarray.array(np.ascontiguousarray(label), dtype=self.dtype)
        return DataBatch(
            [data],
            [label],
            pad=0,
            bucket_key=self.buckets[i],
            provide_data=[DataDesc(name=self.data_name, shape=data.shape, layout=self.layout)],
            provide_label=[DataDesc(name=self.label_name, shape=label.shape, layout=self.layout)],
        )
