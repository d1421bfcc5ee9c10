"""Common-subexpression elimination: equal equations on equal inputs run once.

Example:
    >>> import ember, ember.numpy as enp
    >>> g = ember.make_graph(lambda x: enp.sin(x) + enp.sin(x))(1.0)
    >>> [e.prim.name for e in cse(g.graph).equations]
    ['sin', 'add']
"""
from __future__ import annotations

from ..ir import Graph, Literal, Var, hashable_key


def _key_atom(a, rename):
    if type(a) is Literal:
        # bits, not values: 0.0 and -0.0 are different literals (weak types differ too)
        return ("lit", a.aval.weak_type, a.key)
    return rename.get(a, a)


def _hashable(params):
    try:
        items = hashable_key(tuple(sorted(params.items())))
        hash(items)
        return items
    except TypeError:
        return None


def cse(graph: Graph) -> Graph:
    """Merge equations with the same primitive, params and inputs."""
    rename: dict[Var, Var] = {}
    seen: dict = {}
    out_eqs = []
    changed = False
    for eq in graph.equations:
        inputs = [rename.get(a, a) if type(a) is Var else a for a in eq.inputs]
        p = _hashable(eq.params)
        key = None
        if p is not None and not eq.prim.effectful:
            atoms = tuple(_key_atom(a, rename) for a in inputs)
            if eq.prim.name in _COMMUTATIVE and len(atoms) == 2:
                # `mul 1.0 x` and `mul x 1.0` are one value: a canonical operand order
                atoms = tuple(sorted(atoms, key=_order))
            key = (eq.prim, atoms, p)
            prev = seen.get(key)
            if prev is not None:
                for v, w in zip(eq.outputs, prev.outputs):
                    rename[v] = w
                changed = True
                continue
        new_eq = eq if inputs == eq.inputs else eq.replace(inputs=inputs)
        changed |= new_eq is not eq
        if key is not None:
            seen[key] = new_eq
        out_eqs.append(new_eq)
    if not changed:
        return graph
    outs = [rename.get(a, a) if type(a) is Var else a for a in graph.outputs]
    return Graph(graph.constvars, graph.inputs, out_eqs, outs)


# Binary primitives whose result does not depend on operand order, bit for bit (float
# add/mul are commutative in IEEE arithmetic; max/min order -0 < +0 and propagate NaN).
_COMMUTATIVE = {"add", "mul", "max", "min", "and", "or", "xor", "eq", "ne"}


def _order(atom):
    # Vars by creation count, literals after them by their bits
    return (0, atom.count, ()) if type(atom) is Var else (1, 0, atom)

