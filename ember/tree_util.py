"""`ember.tree_util`: `jax.tree_util`'s names for the pytree functions of `ember.tree`
(one implementation, over optree), plus the class decorator and `Partial`.

Example:
    >>> from ember import tree_util
    >>> tree_util.tree_map(lambda v: v * 2, {"a": 1, "b": (2, 3)})
    {'a': 2, 'b': (4, 6)}
"""
from __future__ import annotations

import functools

from .tree import (flatten as tree_flatten, flatten_with_path as tree_flatten_with_path,  # noqa: F401
                   leaves as tree_leaves, leaves_with_path as tree_leaves_with_path,
                   map as tree_map, map_with_path as tree_map_with_path, reduce as tree_reduce,
                   register_dataclass, register_pytree_node, structure as tree_structure,
                   transpose as tree_transpose, unflatten as tree_unflatten)

__all__ = ["Partial", "register_dataclass", "register_pytree_node", "register_pytree_node_class",
           "tree_all", "tree_flatten", "tree_flatten_with_path", "tree_leaves",
           "tree_leaves_with_path", "tree_map", "tree_map_with_path", "tree_reduce",
           "tree_structure", "tree_transpose", "tree_unflatten", "treedef_is_leaf"]


def register_pytree_node_class(cls):
    """Class decorator: register `cls` with its `tree_flatten(self) -> (children, aux)`
    method and `tree_unflatten(cls, aux, children)` classmethod.

    Example:
        >>> @register_pytree_node_class
        ... class Box:
        ...     def __init__(self, v): self.v = v
        ...     def tree_flatten(self): return (self.v,), None
        ...     @classmethod
        ...     def tree_unflatten(cls, aux, children): return cls(*children)
        >>> tree_leaves(Box(3))
        [3]
    """
    return register_pytree_node(cls, lambda obj: obj.tree_flatten(), cls.tree_unflatten)


def tree_all(tree, *, is_leaf=None) -> bool:
    """Whether every leaf is truthy (`all(tree_leaves(tree))`).

    Example:
        >>> tree_all({"a": True, "b": [1, 2]}), tree_all([1, 0])
        (True, False)
    """
    return all(tree_leaves(tree, is_leaf=is_leaf))


def treedef_is_leaf(treedef) -> bool:
    """Whether a structure is a single leaf.

    Example:
        >>> treedef_is_leaf(tree_structure(1.0)), treedef_is_leaf(tree_structure((1.0,)))
        (True, False)
    """
    return treedef.num_nodes == 1 and treedef.num_leaves == 1


class Partial(functools.partial):
    """`functools.partial` that is a pytree: its bound arguments are the children and
    the function is static, so it can be passed to and returned from transformed
    functions (jax.tree_util.Partial).

    Example:
        >>> import ember, ember.numpy as enp
        >>> add = Partial(enp.add, enp.ones(2))
        >>> ember.jit(lambda f, x: f(x))(add, enp.ones(2)).tolist()
        [2.0, 2.0]
    """

    def __new__(cls, func, *args, **kw):
        if isinstance(func, functools.partial):  # flatten nested partials, as JAX does
            args, kw = func.args + args, {**func.keywords, **kw}
            func = func.func
        return super().__new__(cls, func, *args, **kw)


register_pytree_node(
    Partial,
    lambda p: ((p.args, p.keywords), p.func),
    lambda func, children: Partial(func, *children[0], **children[1]))
