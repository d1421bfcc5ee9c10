"""What kind of operation a primitive is, as the backends ask it (one helper).

Example:
    >>> from ember.fx.prims import elementwise as ew
    >>> is_elementwise(ew.exp_p), is_elementwise(ew.population_count_p)
    (True, True)
"""
from __future__ import annotations

from .schedule import ELEMENTWISE


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
