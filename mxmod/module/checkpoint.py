"""Checkpoint files, as ``mxnet.model``'s helpers: ``BatchEndParam`` and the functions that
read and write ``<prefix>-symbol.json`` and ``<prefix>-<epoch:04d>.params``.

They live below the Module classes, which use them; ``mxmod.model`` re-exports them under
MXNet's names. The files are MXNet 1.9.1's (spec 8.4), so checkpoints move both ways
between MXNet and mxmod. A checkpoint's files are committed as one unit
(``mxmod.fileio.write_checkpoint``): a crash leaves the previous complete checkpoint. Every
reading failure is an ``MXNetFileError`` naming the file.
"""

import glob
import logging
import os
import re
from collections import namedtuple

from ..base import MXNetFileError
from ..context import cpu
from ..fileio import remove_stale_temps, write_checkpoint
from ..ndarray import NDArray
from ..ndarray.io import load as nd_load
from ..ndarray.io import to_bytes
from ..symbol import load as load_symbol

__all__ = [
    "BatchEndParam",
    "save_checkpoint",
    "load_checkpoint",
    "load_params",
    "write_checkpoint_files",
]

#: What batch-end and eval-end callbacks receive, as ``mxnet.model.BatchEndParam``
#: (note the type name ``BatchEndParams``). ``nbatch`` is 0-based within the epoch and
#: ``locals`` is the caller's ``locals()``.
BatchEndParam = namedtuple("BatchEndParams", ["epoch", "nbatch", "eval_metric", "locals"])


def _params_file(prefix, epoch):
    return "%s-%04d.params" % (prefix, epoch)


def _on_cpu(value):
    return value.as_in_context(cpu()) if isinstance(value, NDArray) else value


def save_checkpoint(prefix, epoch, symbol, arg_params, aux_params, remove_amp_cast=True):
    """Save a checkpoint, as ``mx.model.save_checkpoint``.

    Writes ``'%s-symbol.json' % prefix`` (skipped when ``symbol`` is None) and
    ``'%s-%04d.params' % (prefix, epoch)`` holding ``arg:<name>`` then ``aux:<name>`` arrays
    (moved to cpu), then logs ``Saved checkpoint to "<params file>"`` via ``logging.info``.
    Unlike MXNet the files are committed as one unit, params last (see
    ``mxmod.fileio.write_checkpoint``), with the permissions an ordinary write gives.

    Args:
        prefix: path prefix of the files.
        epoch: epoch number put in the params file name (zero-padded to 4 digits).
        symbol: the network Symbol, or None.
        arg_params: dict name -> NDArray of arguments (weights); None counts as empty.
        aux_params: dict name -> NDArray of auxiliary states; None counts as empty.
        remove_amp_cast: passed to ``Symbol.save``.

    Raises:
        TypeError: params are not dicts of arrays (from ``mx.nd.save``).
    """
    paths = write_checkpoint_files(prefix, epoch, symbol, arg_params, aux_params, remove_amp_cast)
    logging.info('Saved checkpoint to "%s"', paths["params"])


def tagged_params(arg_params, aux_params) -> dict:
    """``{'arg:<name>': array, 'aux:<name>': array}`` on cpu: what a ``.params`` file holds.

    Raises:
        TypeError: params (None counts as empty) are not dicts.
    """
    save_dict = {}
    for tag, params in (("arg", arg_params), ("aux", aux_params)):
        if params is None:
            continue
        if not isinstance(params, dict):
            raise TypeError(
                f"save_checkpoint: {tag}_params must be a dict name -> NDArray, "
                f"got {type(params).__name__}"
            )
        save_dict.update({"%s:%s" % (tag, k): _on_cpu(v) for k, v in params.items()})
    return save_dict


def split_tagged_params(save_dict: dict, fname: str) -> tuple[dict, dict, list]:
    """``(arg_params, aux_params, other_keys)`` of a ``.params`` file's dict, keys split at
    the first ``:``.

    Raises:
        ValueError: a key has no ``tag:`` prefix (e.g. a Gluon ``save_parameters`` file).
    """
    params = {"arg": {}, "aux": {}}
    others = []
    for key, value in save_dict.items():
        if ":" not in key:
            raise ValueError(
                f"{fname!r}: key {key!r} has no 'arg:'/'aux:' prefix, so this is "
                f"not a Module checkpoint (a Gluon save_parameters file?); read it "
                f"with mx.nd.load and pass the dicts yourself"
            )
        tag, name = key.split(":", 1)
        if tag in params:
            params[tag][name] = value
        else:
            others.append(key)
    return params["arg"], params["aux"], others


def write_checkpoint_files(
    prefix, epoch, symbol, arg_params, aux_params, remove_amp_cast=True, states=None
):
    """Commit a checkpoint as one unit (mxmod helper of :func:`save_checkpoint` and
    ``Module.save_checkpoint``); logs nothing.

    Args:
        prefix, epoch, symbol, arg_params, aux_params, remove_amp_cast: as
            :func:`save_checkpoint`.
        states: the ``.states`` bytes (``Updater.get_states`` format), or None for none.

    Returns:
        ``{'symbol': path, 'params': path, 'states': path}`` of the files written.
    """
    save_dict = tagged_params(arg_params, aux_params)
    sym_json = (
        None if symbol is None else symbol.tojson(remove_amp_cast=remove_amp_cast).encode("utf-8")
    )
    return write_checkpoint(prefix, epoch, sym_json, to_bytes(save_dict), states)


def _missing_params_message(fname, prefix):
    pattern = re.compile(re.escape(os.path.basename(prefix)) + r"-(\d{4,})\.params$")
    epochs = sorted(
        int(m.group(1))
        for f in glob.glob(glob.escape(prefix) + "-*.params")
        if (m := pattern.match(os.path.basename(f)))
    )
    found = (
        f"epochs saved under this prefix: {', '.join(map(str, epochs))}"
        if epochs
        else "no params file exists under this prefix"
    )
    return (
        f"checkpoint params file {fname!r} does not exist ({found}); check the prefix and "
        f"epoch (save_checkpoint(prefix, epoch, ...) writes '<prefix>-<epoch:04d>.params')"
    )


def load_params(prefix, epoch):
    """Load ``(arg_params, aux_params)`` from ``'%s-%04d.params' % (prefix, epoch)``.

    As ``mx.model.load_params``: keys are split at the first ``:``; ``arg:`` and ``aux:``
    entries are kept, other prefixes ignored; an empty file logs a warning and gives two
    empty dicts.

    Raises:
        MXNetFileError: the file is missing (the message lists the epochs that exist) or is
            not a valid NDArray file, or it stores an unnamed list instead of a dict.
        ValueError: a key has no ``tag:`` prefix (e.g. a Gluon ``save_parameters`` file).
    """
    fname = _params_file(prefix, epoch)
    remove_stale_temps(os.path.dirname(os.path.abspath(fname)))  # of writers killed mid-save
    if not os.path.isfile(fname):
        raise MXNetFileError(_missing_params_message(fname, prefix), repr(fname), "path")
    save_dict = nd_load(fname)
    if not save_dict:
        logging.warning("Params file '%s' is empty", fname)
        return ({}, {})
    if not isinstance(save_dict, dict):
        raise MXNetFileError(
            f"{fname!r} holds an unnamed list of {len(save_dict)} arrays, not a checkpoint; "
            f"checkpoints need 'arg:<name>'/'aux:<name>' keys (write them with "
            f"save_checkpoint), or read the list with mx.nd.load",
            repr(fname),
            "names",
            "'arg:<name>'/'aux:<name>' keys",
        )
    arg_params, aux_params, _ = split_tagged_params(save_dict, fname)
    return (arg_params, aux_params)


def load_checkpoint(prefix, epoch):
    """Load ``(symbol, arg_params, aux_params)``, as ``mx.model.load_checkpoint``.

    Reads ``'%s-symbol.json' % prefix`` with ``mx.sym.load`` and the params with
    :func:`load_params`.

    Raises:
        MXNetFileError: a file is missing (the message names it and the fix) or invalid.
    """
    sym_file = "%s-symbol.json" % prefix
    if not os.path.isfile(sym_file):
        raise MXNetFileError(
            f"checkpoint symbol file {sym_file!r} does not exist; check the prefix "
            f"(save_checkpoint(prefix, epoch, symbol, ...) writes '<prefix>-symbol.json' when "
            f"symbol is not None; without it use load_params(prefix, epoch))",
            repr(sym_file),
            "path",
        )
    symbol = load_symbol(sym_file)
    arg_params, aux_params = load_params(prefix, epoch)
    return (symbol, arg_params, aux_params)
