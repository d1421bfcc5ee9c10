"""Export: a jitted function as a versioned artifact that reloads and runs without its Python source.

Example:
    >>> import ember
    >>> g = ember.export.trace_custom_rules(ember.make_graph(lambda x: x + 1.0)(1.0))
    >>> len(g.equations)
    1
"""
from ..fx import parse as _parse  # noqa: F401  (makes ember.fx.parse callable after `import ember`)
from ._rules import trace_custom_rules  # noqa: F401
