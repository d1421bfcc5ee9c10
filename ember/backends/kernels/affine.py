"""Affine index expressions in one canonical form: `sum(coef * var) + const`,
variables in increasing order.  Code generators render every affine address in
this form, with the constant split off, so that two kernels that differ only in
where their buffers start (the pieces of a concatenation, a slice per Taylor
order) render to the same loop body, and the constant goes into the buffer
pointer the body is given.

Example:
    >>> from ember.backends.kernels.loop_ir import E
    >>> i0, i1 = E("v", 0), E("v", 1)
    >>> e = E("*", E("+", E("+", i0, E("c", 1)), i1), 64)   # (i0 + 1 + i1) * 64
    >>> rel, c = split_constant(e)
    >>> rel, c
    (('+', ('*', ('v', 0), 64), ('*', ('v', 1), 64)), 64)
    >>> split_constant(E("/", i0, 2)) is None
    True
"""
from __future__ import annotations

from .loop_ir import E, iadd, iconst, imul


def affine_terms(e):
    """`({var: coefficient}, constant)` of index expression `e` when it is affine
    in the loop variables (only `v`, `c`, `+` and `*` nodes), else None.  Iterative:
    an address can be a long chain of sums.

    Example:
        >>> from ember.backends.kernels.loop_ir import E
        >>> affine_terms(E("+", E("*", E("v", 2), 3), E("c", 5)))
        ({2: 3}, 5)
    """
    coefs: dict = {}
    const = 0
    stack = [(e, 1)]
    while stack:
        x, k = stack.pop()
        t = x[0]
        if t == "v":
            coefs[x[1]] = coefs.get(x[1], 0) + k
        elif t == "c":
            const += k * x[1]
        elif t == "+":
            stack.append((x[2], k))
            stack.append((x[1], k))
        elif t == "*":
            stack.append((x[1], k * x[2]))
        else:
            return None
    return {v: c for v, c in coefs.items() if c}, const


def affine_expr(coefs: dict, const: int = 0):
    """The canonical expression `sum(coefs[v] * v) + const` (variables in
    increasing order, the constant last and left out when 0).

    Example:
        >>> affine_expr({1: 1, 0: 64}, 3)
        ('+', ('+', ('*', ('v', 0), 64), ('v', 1)), ('c', 3))
    """
    out = None
    for v in sorted(coefs):
        term = imul(E("v", v), coefs[v])
        out = term if out is None else iadd(out, term)
    if out is None:
        return iconst(const)
    return iadd(out, iconst(const)) if const else out


def split_constant(e):
    """`(canonical expression without its constant, constant)` for an affine
    index expression, None for any other.

    Example:
        >>> from ember.backends.kernels.loop_ir import E
        >>> split_constant(E("c", 7))
        (('c', 0), 7)
    """
    terms = affine_terms(e)
    if terms is None:
        return None
    coefs, const = terms
    return affine_expr(coefs), const
