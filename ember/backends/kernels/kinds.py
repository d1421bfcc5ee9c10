"""What kind of operation a primitive is, as the backends ask it (one helper).

Example:
    >>> from ember.fx.prims import elementwise as ew
    >>> is_elementwise(ew.exp_p), is_elementwise(ew.population_count_p)
    (True, True)
    >>> is_expensive(ew.exp_p), is_expensive(ew.add_p)
    (True, False)
"""
from __future__ import annotations

from .schedule import ELEMENTWISE, EXPENSIVE


def is_elementwise(prim) -> bool:
    """True if `prim` maps elements to elements (a scalar function applied per
    element, fusible into a loop kernel).

    The primitive's own `kind` decides; primitives whose factories do not set it
    yet fall back to the scheduler's name table.

    Example:
        >>> from ember.fx.prims import shape
        >>> is_elementwise(shape.reshape_p)
        False
    """
    if prim.kind is not None:
        return prim.kind == "elementwise"
    return prim.name in ELEMENTWISE


def is_expensive(prim) -> bool:
    """True if one evaluation of elementwise `prim` costs about a transcendental
    (worth computing once when several consumers read it).

    Example:
        >>> from ember.fx.prims import elementwise as ew
        >>> is_expensive(ew.div_p)
        True
    """
    if prim.kind is not None:
        return prim.cost == "expensive"
    return prim.name in EXPENSIVE
