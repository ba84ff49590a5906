"""``mx.contrib.text``: MXNet's text utilities: token counting (``utils``), vocabularies
(``vocab``) and token embeddings loaded from local files (``embedding``)."""

from . import embedding, utils, vocab

__all__ = ["embedding", "utils", "vocab"]
