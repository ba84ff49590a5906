"""Checks of the names and shapes a module is given (MXNet's ``_check_input_names`` and
``_parse_data_desc``), with errors that show the right form; shared by every module."""

from __future__ import annotations

import warnings

from ..base import MXNetError, as_list, names_list
from ..io import DataDesc

_PARAM_SUFFIXES = ("_weight", "_bias", "_gamma", "_beta")


def _check_input_names(symbol, names, typename, throw) -> None:
    """Check that ``names`` are inputs of ``symbol`` (MXNet's helper of the same name)."""
    _check_input_names_strict(names_list(names), symbol.list_arguments(), typename, throw)


def _check_module_names(args, data_names, label_names, state_names, fixed_param_names) -> None:
    """A Module's names checked against ``symbol.list_arguments()`` (``args``): data, state
    and fixed parameter names must be inputs (``ValueError``), label names should be (a
    warning: MXNet's ``throw=False``)."""
    for names, typename, throw in (
        (data_names, "data", True),
        (label_names, "label", False),
        (state_names, "state", True),
        (fixed_param_names, "fixed_param", True),
    ):
        _check_input_names_strict(names, args, typename, throw)


def _check_input_names_strict(names, args, typename, throw) -> None:
    for name in names:
        if name in args:
            continue
        candidates = [a for a in args if not a.endswith(_PARAM_SUFFIXES)]
        hint = f"Did you mean one of: {candidates}?"
        if typename == "label":
            labels = [a for a in candidates if "label" in a]
            if labels:
                hint = f"Did you mean label_names={labels}?"
            hint += (
                " (label_names=None only for a symbol without labels: a label input "
                "left out of label_names would be trained as a parameter)"
            )
        _complain(
            f"You created Module with Module(..., {typename}_names={list(names)}) but input "
            f"with name {name!r} is not found in symbol.list_arguments(). {hint}",
            throw,
            stacklevel=5,
        )


def _complain(msg: str, throw: bool, stacklevel: int) -> None:
    """Raise ``ValueError(msg)``, or only warn (MXNet's ``throw=False`` for label names)."""
    if throw:
        raise ValueError(msg)
    warnings.warn(msg, UserWarning, stacklevel=stacklevel)


def _parse_data_desc_list(shapes, what: str) -> list:
    """``data_shapes``/``label_shapes`` as DataDescs, with errors that show the right form."""

    example = (
        f"{what}=[('data', (10, 20))]"
        if what == "data_shapes"
        else f"{what}=[('softmax_label', (10,))]"
    )
    if isinstance(shapes, dict):
        raise TypeError(
            f"{what} must be a list of (name, shape) pairs or DataDescs, not a "
            f"dict; write {example} (or list(your_dict.items()))"
        )
    if isinstance(shapes, (DataDesc, tuple)) and shapes and isinstance(shapes[0], str):
        shapes = [shapes]
    out = []
    for d in as_list(shapes):
        if isinstance(d, DataDesc):
            out.append(d)
            continue
        if (
            not isinstance(d, (list, tuple))
            or len(d) < 2
            or not isinstance(d[0], str)
            or not isinstance(d[1], (list, tuple))
            or not all(isinstance(n, (int,)) or hasattr(n, "__index__") for n in d[1])
        ):
            raise TypeError(
                f"{what} entry {d!r} is not (name, shape) with shape a tuple of "
                f"ints; write {example}"
            )
        out.append(DataDesc(*d))
    return out


def _check_names_match(names, shapes, kind: str, throw: bool) -> None:
    actual = [d[0] for d in shapes]
    if sorted(names) != sorted(actual):
        _complain(
            f"Data provided by {kind}_shapes don't match names specified by {kind}_names "
            f"({[tuple(d) for d in shapes]} vs. {list(names)})",
            throw,
            stacklevel=4,
        )


def _parse_data_desc(data_names, label_names, data_shapes, label_shapes):
    """DataDescs of the data and label shapes, checked against the names (MXNet's helper)."""
    data_shapes = _parse_data_desc_list(data_shapes, "data_shapes")
    _check_names_match(data_names, data_shapes, "data", True)
    if label_shapes is not None:
        label_shapes = _parse_data_desc_list(label_shapes, "label_shapes")
        _check_names_match(label_names, label_shapes, "label", False)
    else:
        _check_names_match(label_names, [], "label", False)
    return data_shapes, label_shapes


def _iterator_name_fix(kind, given, module_names, args) -> str:
    """The fix for iterator/``bind`` ``kind`` names (``"data"`` or ``"label"``) that do not
    match the module's: rename the iterator's side, or the symbol's and the module's."""
    inputs = [a for a in args if not a.endswith(_PARAM_SUFFIXES)]
    wanted = [n for n in module_names if n in args]
    if not wanted:
        wanted = [a for a in inputs if kind != "label" or "label" in a] or inputs
    if len(given) == 1 and len(wanted) == 1:
        ours, theirs = wanted[0], given[0]
        if kind == "label":
            iterator = f"mx.io.NDArrayIter(..., label_name={ours!r})"
            symbol = f"mx.sym.SoftmaxOutput(..., label=mx.sym.Variable({theirs!r}))"
        else:
            iterator = f"mx.io.NDArrayIter(..., data_name={ours!r}) or NDArrayIter({{{ours!r}: x}})"
            symbol = f"mx.sym.Variable({theirs!r})"
        return (
            f"Fix: name the data iterator's {kind} {ours!r}, the symbol's {kind} input "
            f"(e.g. {iterator}), or name the symbol's {kind} input {theirs!r} (e.g. {symbol}) "
            f"and create the Module with {kind}_names=[{theirs!r}] (a BucketingModule's "
            "sym_gen returns them)"
        )
    return (
        f"Fix: name the data iterator's {kind} arrays after the symbol's inputs {wanted} "
        f"(NDArrayIter takes a dict name -> array), or name the symbol's inputs {list(given)} "
        f"and create the Module with {kind}_names={list(given)}"
    )


def normalize_shapes(mod, data_shapes, label_shapes, warn=True):
    """A module's ``(data, labels)`` DataDesc lists from what ``bind``/``reshape`` were
    given, checked against its data and label names (errors name the fix)."""
    norm = _parse_data_desc_list
    data = norm(data_shapes, "data_shapes")
    if sorted(d.name for d in data) != sorted(mod._data_names):
        raise ValueError(
            f"Data provided by data_shapes don't match names specified by "
            f"data_names ({[d.name for d in data]} vs. {mod._data_names}). "
            + _iterator_name_fix(
                "data", [d.name for d in data], mod._data_names, mod._symbol.list_arguments()
            )
        )
    if label_shapes is None:
        if warn and mod._label_names and mod.for_training:
            warnings.warn(
                f"bind() got no label_shapes but label_names are {mod._label_names}",
                UserWarning,
                stacklevel=3,
            )
        return data, None
    labels = norm(label_shapes, "label_shapes")
    if sorted(d.name for d in labels) != sorted(mod._label_names):
        warnings.warn(
            f"Data provided by label_shapes don't match names specified by "
            f"label_names ({[d.name for d in labels]} vs. {mod._label_names})",
            UserWarning,
            stacklevel=3,
        )
    args = set(mod._symbol.list_arguments())
    for d in labels:
        if d.name not in args:
            given = [d.name for d in labels]
            raise MXNetError(
                f"label {d.name!r} (of label_shapes, or the iterator's provide_label) is "
                f"not an input of the symbol. "
                + _iterator_name_fix("label", given, mod._label_names, mod._symbol.list_arguments())
            )
    return data, labels
