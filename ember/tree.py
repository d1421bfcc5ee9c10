"""Pytrees on optree, in the `ember` namespace.

Containers (tuple, list, dict, namedtuple, OrderedDict, defaultdict, deque and
registered classes) are nodes; everything else is a leaf.  `None` is an empty
node, as in JAX.

Example:
    >>> from ember import tree
    >>> tree.leaves({"a": 1, "b": (2, None)})
    [1, 2]
"""
from __future__ import annotations

import dataclasses

import optree

NAMESPACE = "ember"


def flatten(tree, is_leaf=None):
    """Leaves and the structure of a pytree.

    Example:
        >>> leaves, treedef = flatten([1, (2, 3)])
        >>> leaves
        [1, 2, 3]
    """
    return optree.tree_flatten(tree, is_leaf=is_leaf, none_is_leaf=False, namespace=NAMESPACE)


def unflatten(treedef, leaves):
    """Rebuild a pytree from its structure and leaves.

    Example:
        >>> leaves, td = flatten((1, 2))
        >>> unflatten(td, [3, 4])
        (3, 4)
    """
    return optree.tree_unflatten(treedef, leaves)


def leaves(tree, is_leaf=None):
    """The leaves of a pytree, in order.

    Example:
        >>> leaves([1, {"x": 2}])
        [1, 2]
    """
    return optree.tree_leaves(tree, is_leaf=is_leaf, none_is_leaf=False, namespace=NAMESPACE)


def structure(tree, is_leaf=None):
    """The structure (treedef) of a pytree.

    Example:
        >>> structure((1, 2)).num_leaves
        2
    """
    return optree.tree_structure(tree, is_leaf=is_leaf, none_is_leaf=False, namespace=NAMESPACE)


def map(f, tree, *rest, is_leaf=None):  # noqa: A001 - mirrors jax.tree.map
    """Apply `f` leaf-wise over one or more pytrees of the same structure.

    Example:
        >>> map(lambda a, b: a + b, (1, 2), (10, 20))
        (11, 22)
    """
    return optree.tree_map(f, tree, *rest, is_leaf=is_leaf, none_is_leaf=False, namespace=NAMESPACE)


def map_with_path(f, tree, *rest, is_leaf=None):
    """Like `map`, with the key path (a tuple of keys/indices) as first argument.

    Example:
        >>> map_with_path(lambda p, x: p, {"a": 1})
        {'a': ('a',)}
    """
    return optree.tree_map_with_path(f, tree, *rest, is_leaf=is_leaf, none_is_leaf=False,
                                     namespace=NAMESPACE)


def leaves_with_path(tree, is_leaf=None):
    """(path, leaf) pairs of a pytree.

    Example:
        >>> leaves_with_path({"a": 1})
        [(('a',), 1)]
    """
    paths, lvs, _ = optree.tree_flatten_with_path(tree, is_leaf=is_leaf, none_is_leaf=False,
                                                  namespace=NAMESPACE)
    return list(zip(paths, lvs))


def flatten_with_path(tree, is_leaf=None):
    """(path, leaf) pairs and the structure of a pytree (`jax.tree.flatten_with_path`; a path
    is a tuple of keys/indices, as in `leaves_with_path`).

    Example:
        >>> pairs, td = flatten_with_path({"a": 1, "b": [2]})
        >>> pairs, td.num_leaves
        ([(('a',), 1), (('b', 0), 2)], 2)
    """
    paths, lvs, td = optree.tree_flatten_with_path(tree, is_leaf=is_leaf, none_is_leaf=False,
                                                   namespace=NAMESPACE)
    return list(zip(paths, lvs)), td


_NO_INITIAL = object()


def reduce(function, tree, initializer=_NO_INITIAL, is_leaf=None):  # noqa: A001
    """Fold `function(accumulated, leaf)` over the leaves, left to right (`functools.reduce`,
    as `jax.tree.reduce`).

    Example:
        >>> reduce(lambda a, b: a + b, {"a": 1, "b": (2, 3)}), reduce(max, [], 0)
        (6, 0)
    """
    import functools
    lvs = leaves(tree, is_leaf=is_leaf)
    if initializer is _NO_INITIAL:
        if not lvs:
            raise TypeError("tree.reduce of a pytree without leaves needs an initializer, "
                            "e.g. tree.reduce(f, tree, 0)")
        return functools.reduce(function, lvs)
    return functools.reduce(function, lvs, initializer)


def transpose(outer_treedef, inner_treedef, pytree_to_transpose):
    """Turn an outer structure of inner structures inside out (`jax.tree.transpose`): a list
    of dicts becomes a dict of lists. `inner_treedef=None` reads it from the first inner tree.

    Example:
        >>> rows = [{"x": 1, "y": 2}, {"x": 3, "y": 4}]
        >>> transpose(structure([0, 0]), None, rows)
        {'x': [1, 3], 'y': [2, 4]}
    """
    if inner_treedef is None:
        firsts = outer_treedef.flatten_up_to(pytree_to_transpose)
        if not firsts:
            raise ValueError("tree.transpose: the outer structure has no leaves, so the inner "
                             "structure cannot be inferred; pass inner_treedef")
        inner_treedef = structure(firsts[0])
    expected = outer_treedef.num_leaves * inner_treedef.num_leaves
    got = structure(pytree_to_transpose)
    if got.num_leaves != expected:
        raise TypeError(f"tree.transpose: expected {outer_treedef} of {inner_treedef} "
                        f"({expected} leaves), got {got} ({got.num_leaves} leaves)")
    return optree.tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose)


def register_pytree_node(cls, flatten_fn, unflatten_fn):
    """Register a container type.

    `flatten_fn(obj) -> (children, aux_data)`; `unflatten_fn(aux_data, children) -> obj`.

    Example:
        >>> class Pair:
        ...     def __init__(self, a, b): self.a, self.b = a, b
        >>> _ = register_pytree_node(Pair, lambda p: ((p.a, p.b), None), lambda aux, ch: Pair(*ch))
        >>> leaves(Pair(1, 2))
        [1, 2]
    """
    optree.register_pytree_node(cls, flatten_fn, lambda aux, children: unflatten_fn(aux, list(children)),
                                namespace=NAMESPACE)
    return cls


def register_dataclass(cls=None, *, data_fields=None, meta_fields=None):
    """Register a dataclass as a pytree node: data fields are children, meta fields static.

    Usable as a decorator.  Without explicit lists, every field is a data field
    unless its metadata has `static=True`.

    Example:
        >>> @register_dataclass
        ... @dataclasses.dataclass
        ... class P:
        ...     w: float
        ...     name: str = dataclasses.field(default="p", metadata={"static": True})
        >>> leaves(P(1.0))
        [1.0]
    """
    def wrap(c):
        if not dataclasses.is_dataclass(c):
            raise TypeError(f"register_dataclass needs a dataclass, got {c!r}")
        fields = dataclasses.fields(c)
        data = list(data_fields) if data_fields is not None else [
            f.name for f in fields if not f.metadata.get("static", False)]
        meta = list(meta_fields) if meta_fields is not None else [
            f.name for f in fields if f.metadata.get("static", False)]

        def fl(obj):
            return tuple(getattr(obj, n) for n in data), tuple(getattr(obj, n) for n in meta)

        def unfl(aux, children):
            kw = dict(zip(data, children))
            kw.update(zip(meta, aux))
            obj = object.__new__(c)
            for k, v in kw.items():
                object.__setattr__(obj, k, v)
            return obj

        optree.register_pytree_node(c, fl, unfl, namespace=NAMESPACE)
        return c

    return wrap if cls is None else wrap(cls)


# JAX-style aliases used across the code base.
tree_flatten = flatten
tree_unflatten = unflatten
tree_leaves = leaves
tree_structure = structure
tree_map = map

__all__ = ["flatten", "unflatten", "leaves", "structure", "map", "map_with_path",
           "leaves_with_path", "flatten_with_path", "reduce", "transpose", "register_pytree_node",
           "register_dataclass"]
