"""Initializers that delegate to others: ``Load`` and ``Mixed`` (MXNet 1.9.1 semantics).

Neither is an ``Initializer`` subclass (as in MXNet); ``create`` accepts their instances."""

from __future__ import annotations

import logging
import re
from typing import Any, Sequence


from .. import ndarray as nd
from ._fill import _assign

__all__ = ["Load", "Mixed"]


class Load:
    """Initialise from saved parameters, else from ``default_init`` (MXNet ``mx.init.Load``).

    Args:
        param: a file name (read with ``mx.nd.load``) or a dict name -> NDArray/array;
            ``arg:``/``aux:`` prefixes are stripped.
        default_init: initializer for names not in ``param``.
        verbose: log ``'Initialized <name> by loading'`` / ``'by default'``.

    Raises:
        TypeError: ``param`` is neither a file name nor a dict.
    """

    def __init__(self, param: Any, default_init: Any = None, verbose: bool = False):
        if isinstance(param, str):
            param = nd.load(param)
        if not isinstance(param, dict):
            raise TypeError(
                f"Load needs a dict of name -> array or a file saved with mx.nd.save(fname, "
                f"dict), got {type(param).__name__}"
            )
        self.param = {}
        for name, arr in param.items():
            if name.startswith("arg:") or name.startswith("aux:"):
                self.param[name[4:]] = arr
            else:
                self.param[name] = arr
        self.default_init = default_init
        self.verbose = verbose

    def __call__(self, name: Any, arr: Any) -> None:
        if name in self.param:
            src = self.param[name]
            if tuple(arr.shape) != tuple(src.shape):
                raise ValueError(
                    f"Parameter {name} cannot be initialized from loading. Shape mismatch, "
                    f"target {tuple(arr.shape)} vs loaded {tuple(src.shape)}"
                )
            _assign(arr, src)
            if self.verbose:
                logging.info("Initialized %s by loading", name)
        else:
            if self.default_init is None:
                raise ValueError(
                    f"Cannot Initialize {name}. Not found in loaded param and no default "
                    f"Initializer is provided: pass Load(..., default_init=mx.init.Xavier())"
                )
            self.default_init(name, arr)
            if self.verbose:
                logging.info("Initialized %s by default", name)


class Mixed:
    """Pick the initializer by regex on the name (MXNet ``mx.init.Mixed``).

    Patterns are tried in order with ``re.match`` (anchored at the start); the first match
    initialises the parameter.

    Raises:
        ValueError: the two lists differ in length; at call time, no pattern matches.
    """

    def __init__(self, patterns: Sequence[str], initializers: Sequence[Any]):
        if len(patterns) != len(initializers):
            raise ValueError(
                f"Mixed needs one initializer per pattern: got {len(patterns)} patterns and "
                f"{len(initializers)} initializers"
            )
        self.map = list(zip([re.compile(p) for p in patterns], initializers))

    def __call__(self, name: Any, arr: Any) -> None:
        for prog, init in self.map:
            if prog.match(name):
                init(name, arr)
                return
        raise ValueError(
            f"Parameter name {name} did not match any pattern. Consider add a \".*\" pattern "
            f"at the end with default Initializer."
        )
