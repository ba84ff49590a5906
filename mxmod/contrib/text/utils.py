"""``mx.contrib.text.utils``: counting the tokens of a string."""

from __future__ import annotations

import collections
import re

__all__ = ["count_tokens_from_str"]


def count_tokens_from_str(
    source_str, token_delim=" ", seq_delim="\n", to_lower=False, counter_to_update=None
):
    """Count the tokens of ``source_str``, split on the regular expressions ``token_delim``
    or ``seq_delim`` (empty pieces dropped), lower-cased when ``to_lower``. Updates and
    returns ``counter_to_update`` when given, else a new ``collections.Counter``."""
    tokens = [t for t in re.split(f"{token_delim}|{seq_delim}", source_str) if t]
    if to_lower:
        tokens = [t.lower() for t in tokens]
    if counter_to_update is None:
        return collections.Counter(tokens)
    counter_to_update.update(tokens)
    return counter_to_update
