"""Pytree structures as JSON: tuples, lists, dicts (str/int keys), None and leaves; anything else is refused.

Example:
    >>> from ember import tree
    >>> td = tree.structure(({"b": 1, "a": [2, None]}, 3))
    >>> tree_from_json(tree_to_json(td)) == td
    True
"""
from __future__ import annotations

from ..tree import tree_structure, tree_unflatten


class _Leaf:
    """The placeholder leaf of a skeleton (an ordinary object is a pytree leaf)."""
    __slots__ = ()


_LEAF = _Leaf()


def tree_to_json(treedef, what: str = "the structure") -> object:
    """The JSON form of a pytree structure: `"*"` a leaf, `null` None, `{"tuple": [...]}`,
    `{"list": [...]}`, `{"dict": [[key, child], ...]}`.  Built without recursion."""
    from . import ExportError
    skeleton = tree_unflatten(treedef, [_LEAF] * treedef.num_leaves)
    out: dict = {}
    stack = [(skeleton, False)]
    keep = []
    while stack:
        node, done = stack.pop()
        keep.append(node)
        t = type(node)
        if node is _LEAF:
            out[id(node)] = "*"
        elif node is None:
            out[id(node)] = None
        elif t in (tuple, list, dict):
            kids = list(node.values()) if t is dict else list(node)
            if not done:
                stack.append((node, True))
                stack.extend((c, False) for c in kids)
                continue
            enc = [out[id(c)] for c in kids]
            if t is dict:
                for k in node:
                    if type(k) not in (str, int):
                        raise ExportError(f"{what} has a dict key {k!r} of type {type(k).__name__}; "
                                          f"exported structures may use str or int keys only")
                out[id(node)] = {"dict": [[k, e] for k, e in zip(node, enc)]}
            else:
                out[id(node)] = {t.__name__: enc}
        else:
            raise ExportError(f"{what} contains a {t.__module__}.{t.__qualname__} node; an exported "
                              f"function's arguments and results may only be nested tuples, lists, "
                              f"dicts and None (convert it, e.g. a namedtuple with tuple(...) or a "
                              f"dataclass with dataclasses.asdict)")
    return out[id(skeleton)]


def tree_from_json(obj, what: str = "the structure"):
    """The pytree structure `tree_to_json` encoded (a ValueError for anything else)."""
    from . import ExportError
    built: dict = {}
    stack = [(obj, False)]
    keep = []
    while stack:
        node, done = stack.pop()
        keep.append(node)
        if node == "*":
            built[id(node)] = _LEAF
            continue
        if node is None:
            built[id(node)] = None
            continue
        if not (isinstance(node, dict) and len(node) == 1 and next(iter(node)) in ("tuple", "list", "dict")):
            raise ExportError(f"{what} in the file is malformed: {str(node)[:80]}")
        kind, items = next(iter(node.items()))
        if not isinstance(items, list):
            raise ExportError(f"{what} in the file is malformed: {kind} holds {type(items).__name__}")
        if kind == "dict" and not all(isinstance(p, list) and len(p) == 2 and type(p[0]) in (str, int)
                                      for p in items):
            raise ExportError(f"{what} in the file is malformed: bad dict entries")
        kids = [p[1] for p in items] if kind == "dict" else items
        if not done:
            stack.append((node, True))
            stack.extend((c, False) for c in kids)
            continue
        vals = [built[id(c)] for c in kids]
        built[id(node)] = (tuple(vals) if kind == "tuple" else vals if kind == "list"
                           else {p[0]: v for p, v in zip(items, vals)})
    return tree_structure(built[id(obj)], is_leaf=lambda x: x is _LEAF)
