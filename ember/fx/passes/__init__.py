"""Graph -> Graph optimisation passes run before compilation."""
from .cse import cse
from .dce import dce, dce_closed
from .fold import fold_constants
from ..ir import ClosedGraph


def optimize(closed: ClosedGraph) -> ClosedGraph:
    """Constant folding, CSE, then DCE.

    Example:
        >>> import ember
        >>> g = optimize(ember.make_graph(lambda x: x * 1.0 + x * 1.0)(2.0))
        >>> [e.prim.name for e in g.equations]
        ['mul', 'add']
    """
    g = dce(cse(fold_constants(closed.graph)))
    if g is closed.graph:
        return closed
    return ClosedGraph(g, closed.consts, closed.in_tree, closed.out_tree)


__all__ = ["cse", "dce", "dce_closed", "fold_constants", "optimize"]
