"""Nested dicts of arrays <-> ordered dicts of dotted names (`state_dict` keys,
`functional_call` state, checkpoints).

Example:
    >>> flatten_names({"layer": {"w": 1}})
    OrderedDict([('layer.w', 1)])
"""
from __future__ import annotations

from collections import OrderedDict


def flatten_names(tree: dict, prefix: str = "") -> "OrderedDict[str, object]":
    """A nested dict of arrays as an ordered dict of dotted names.

    Example:
        >>> flatten_names({"a": {"b": 1, "c": 2}, "d": 3})
        OrderedDict([('a.b', 1), ('a.c', 2), ('d', 3)])
    """
    out = OrderedDict()
    for k, v in tree.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten_names(v, name + "."))
        else:
            out[name] = v
    return out


def unflatten_names(flat: dict) -> dict:
    """An ordered dict of dotted names as a nested dict.

    Example:
        >>> unflatten_names({"a.b": 1, "d": 3})
        {'a': {'b': 1}, 'd': 3}
    """
    out: dict = {}
    for name, v in flat.items():
        parts = name.split(".")
        node = out
        for p in parts[:-1]:
            nxt = node.setdefault(p, {})
            if not isinstance(nxt, dict):
                raise ValueError(f"name {name!r} conflicts with the entry {p!r}")
            node = nxt
        if parts[-1] in node and isinstance(node[parts[-1]], dict):
            raise ValueError(f"name {name!r} conflicts with nested entries under it")
        node[parts[-1]] = v
    return out
