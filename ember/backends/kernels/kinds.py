"""What kind of operation a primitive is, as the backends ask it (one helper over
`Primitive.kind` and `Primitive.cost`, which the factories set).

Example:
    >>> from ember.fx.prims import elementwise as ew
    >>> is_elementwise(ew.exp_p), is_elementwise(ew.population_count_p)
    (True, True)
    >>> is_expensive(ew.exp_p), is_expensive(ew.add_p)
    (True, False)
"""
from __future__ import annotations


def is_elementwise(prim) -> bool:
    """True if `prim` maps elements to elements (a scalar function applied per
    element, fusible into a loop kernel).

    Example:
        >>> from ember.fx.prims import shape
        >>> is_elementwise(shape.reshape_p)
        False
    """
    return prim.kind == "elementwise"


def is_expensive(prim) -> bool:
    """True if one evaluation of elementwise `prim` costs about a transcendental
    (worth computing once when several consumers read it).

    Example:
        >>> from ember.fx.prims import elementwise as ew
        >>> is_expensive(ew.div_p)
        True
    """
    return prim.cost == "expensive"
