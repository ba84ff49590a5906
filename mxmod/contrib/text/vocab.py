"""``mx.contrib.text.vocab``: a vocabulary indexing tokens as MXNet's does.

Index 0 is the unknown token, then the reserved tokens in order, then the counter's tokens
by decreasing frequency (ties in token order), those below ``min_freq`` left out and at most
``most_freq_count`` of them."""

from __future__ import annotations

import collections

__all__ = ["Vocabulary", "UNKNOWN_IDX"]

UNKNOWN_IDX = 0


class Vocabulary:
    def __init__(
        self,
        counter=None,
        most_freq_count=None,
        min_freq=1,
        unknown_token="<unk>",
        reserved_tokens=None,
    ):
        if not min_freq > 0:
            raise ValueError(f"Vocabulary: min_freq must be positive, got {min_freq}")
        if reserved_tokens is not None:
            if unknown_token in reserved_tokens:
                raise ValueError(
                    f"Vocabulary: reserved_tokens must not hold the unknown token {unknown_token!r}"
                )
            if len(set(reserved_tokens)) != len(reserved_tokens):
                raise ValueError(f"Vocabulary: reserved_tokens has duplicates: {reserved_tokens}")
        self._unknown_token = unknown_token
        self._reserved_tokens = list(reserved_tokens) if reserved_tokens is not None else None
        self._idx_to_token = [unknown_token, *(reserved_tokens or ())]
        self._token_to_idx = {token: i for i, token in enumerate(self._idx_to_token)}
        if counter is not None:
            self._index_counter(counter, most_freq_count, min_freq)

    def _index_counter(self, counter, most_freq_count, min_freq) -> None:
        if not isinstance(counter, collections.Counter):
            raise TypeError(f"Vocabulary: counter must be a collections.Counter, got {counter!r}")
        special = {self._unknown_token, *(self._reserved_tokens or ())}
        by_frequency = sorted(counter.items(), key=lambda kv: kv[0])
        by_frequency.sort(key=lambda kv: kv[1], reverse=True)
        cap = len(special) + (len(counter) if most_freq_count is None else most_freq_count)
        for token, freq in by_frequency:
            if freq < min_freq or len(self._idx_to_token) == cap:
                break
            if token not in special:
                self._token_to_idx[token] = len(self._idx_to_token)
                self._idx_to_token.append(token)

    def __len__(self) -> int:
        return len(self._idx_to_token)

    @property
    def token_to_idx(self) -> dict:
        return self._token_to_idx

    @property
    def idx_to_token(self) -> list:
        return self._idx_to_token

    @property
    def unknown_token(self):
        return self._unknown_token

    @property
    def reserved_tokens(self):
        return self._reserved_tokens

    def to_indices(self, tokens):
        """The index of a token (the unknown token's for one not in the vocabulary), or a
        list of indices for a list of tokens."""
        if not isinstance(tokens, list):
            return self._token_to_idx.get(tokens, UNKNOWN_IDX)
        return [self._token_to_idx.get(t, UNKNOWN_IDX) for t in tokens]

    def to_tokens(self, indices):
        """The token at an index, or a list of tokens for a list of indices."""
        single = not isinstance(indices, list)
        tokens = []
        for idx in [indices] if single else indices:
            if not isinstance(idx, int) or not 0 <= idx < len(self._idx_to_token):
                raise ValueError(
                    f"Token index {idx} in the provided `indices` is invalid: the vocabulary "
                    f"indexes 0 to {len(self._idx_to_token) - 1}"
                )
            tokens.append(self._idx_to_token[idx])
        return tokens[0] if single else tokens
