"""Hidden keys in symbol files older than MXNet 1.9.1 (nnvm's ``LoadLegacyJSON``,
``UpgradeJSON_FixParsing`` in ``src/nnvm/legacy_json_util.cc``).

Files written before the reading version stored optimizer and placement hints as plain
attributes: ``lr_mult`` on a variable, ``wd_mult``/``ctx_group`` on an operator, and
``<input>_lr_mult`` (e.g. ``weight_lr_mult`` on a FullyConnected) meant for one input
variable. MXNet 1.9.1 sets every attribute whose name starts or ends with a hidden key
aside before parsing the operator's parameters, then puts it back:

* the hidden key itself becomes ``__key__`` on the node (``lr_mult`` -> ``__lr_mult__``);
* ``<input>_<key>`` on an operator becomes ``__key__`` on that input when it is a variable
  (the operator loses the attribute);
* anything else (on a variable, an input that is no variable or not an input name,
  ``lr_multiplier``) stays as it was; MXNet then parses the operator's attributes again,
  so an operator with parameters refuses it (one without keeps it).

Files written by 1.9.1 itself get none of this: their operator attributes must parse.
"""

from __future__ import annotations

from ..base import MXNetError
from . import json_schema
from .graph import Node
from .naming import HIDDEN_KEYS


def node_attrs(raw: dict) -> dict:
    """A file node's attributes: ``attrs``, or the older ``attr`` and ``param`` fields."""
    attrs: dict = {}
    for key in ("param", "attr", "attrs"):
        attrs.update(raw.get(key, {}))
    return attrs


def set_aside(attrs: dict) -> tuple[dict, dict]:
    """``attrs`` split into what the operator parses and the keys that start or end with
    a hidden key (kept in file order)."""
    parsed, aside = {}, {}
    for key, value in attrs.items():
        hit = False
        for hidden in HIDDEN_KEYS:
            pos = key.rfind(hidden)  # the last occurrence, as MXNet
            if pos == 0 or (pos != -1 and pos == len(key) - len(hidden)):
                hit = True
                break
        (aside if hit else parsed)[key] = value
    return parsed, aside


def put_back(node: Node, aside: dict, source: str = "", where: str = "") -> None:
    """Place the keys :func:`set_aside` took from ``node`` (its inputs linked). MXNet
    parses an operator's attributes again afterwards, so a key kept on an operator with
    parameters is refused there (operators without parameters keep it)."""
    kept = [key for key, value in aside.items() if not _place(node, key, value)]
    for key in kept:
        node.attrs[key] = aside[key]
    if kept and not node.is_var:
        node._parsed = None
        try:
            node.parsed()
        except MXNetError as e:
            raise json_schema.fail(
                source,
                f"{where}.attrs",
                f"{e} (pre-1.9.1 attribute(s) {kept} name no variable input of {node.name!r})",
                f"attributes {node.op.name} accepts, or <input>_<key> for a variable input",
            ) from None


def _place(node: Node, key: str, value: str) -> bool:
    for hidden in HIDDEN_KEYS:
        pos = key.rfind(hidden)  # the last occurrence, as MXNet
        if pos == 0 and len(key) == len(hidden):
            node.attrs[f"__{hidden}__"] = value
            return True
        if pos > 1 and pos == len(key) - len(hidden):
            if node.is_var:
                return False
            slots = node.input_slot_names()
            target = key[: pos - 1]  # drop the separator before the hidden key
            if target not in slots:
                return False
            k = slots.index(target)
            if k < len(node.inputs) and node.inputs[k][0].is_var:
                node.inputs[k][0].attrs[f"__{hidden}__"] = value
                return True
            return False
    return False
