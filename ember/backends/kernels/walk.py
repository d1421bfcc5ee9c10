"""Iterative walks over kernel expression DAGs (hash-consed `E` nodes), shared by
the code generators and the cost model: fused chains are far deeper than
Python's recursion limit, so every walk uses an explicit stack.

Example:
    >>> from ember.backends.kernels.loop_ir import E
    >>> x = E("v", 0)
    >>> sorted(n[0] for n in unique_nodes(E("+", x, E("c", 1))))
    ['+', 'c', 'v']
"""
from __future__ import annotations

from .loop_ir import operands


def unique_nodes(root):
    """Each distinct node of the DAG under `root` once (shared nodes are one
    object), in no particular order.

    Example:
        >>> from ember.backends.kernels.loop_ir import E
        >>> i = E("v", 0)
        >>> sorted(n[0] for n in unique_nodes(E("+", i, i)))
        ['+', 'v']
    """
    seen, stack = set(), [root]
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        stack.extend(operands(e))


def postorder(root, done):
    """The nodes under `root` for which `done(node)` is false, each after its
    operands, the first operand's sub-DAG first (the order a recursive walk
    would take: the instruction order LLVM starts from changes its schedule, so
    a code generator emits in this order).  The caller makes `done(node)` true
    for each node it is given before asking for the next.

    Example:
        >>> from ember.backends.kernels.loop_ir import E
        >>> seen = set()
        >>> x = E("v", 0)
        >>> out = []
        >>> for n in postorder(E("+", x, x), lambda n: n in seen):
        ...     seen.add(n)
        ...     out.append(n[0])
        >>> out
        ['v', '+']
    """
    stack = [root]
    while stack:
        e = stack[-1]
        if done(e):
            stack.pop()
            continue
        todo = [c for c in operands(e) if not done(c)]
        if todo:
            stack.extend(reversed(todo))
            continue
        stack.pop()
        yield e
