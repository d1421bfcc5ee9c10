"""Graph -> Graph optimisation passes run before compilation."""
from .cse import cse
from .dce import dce, dce_closed
from .fold import fold_constants
from .simplify import simplify
from ..ir import ClosedGraph


def optimize(closed: ClosedGraph) -> ClosedGraph:
    """Constant folding, algebraic simplification, CSE (which may expose `x + x`), a
    second simplification, then DCE.

    Example:
        >>> import ember
        >>> g = optimize(ember.make_graph(lambda x: x * 1.0 + 1.0 * x)(2.0))
        >>> [str(e) for e in g.equations]
        ['b:f32[]~ = mul a 2.0:f32~']
    """
    g = dce(simplify(cse(simplify(fold_constants(closed.graph)))))
    if g is closed.graph:
        return closed
    return ClosedGraph(g, closed.consts, closed.in_tree, closed.out_tree)


__all__ = ["cse", "dce", "dce_closed", "fold_constants", "optimize", "simplify"]
