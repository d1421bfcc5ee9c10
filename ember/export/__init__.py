"""Export: a jitted function as a versioned artifact that reloads and runs without its Python source.

`export(fn)(*args_or_ShapeDtypeStructs)` stages `fn` and returns an `Exported`
(its pytree structures, avals, the optimised graph and its consts);
`Exported.serialize()` writes the format documented in docs/export.md and
`deserialize(data)` reads it back, running no code and unpickling nothing.

Example:
    >>> import ember, ember.numpy as enp
    >>> exp = ember.export.export(ember.jit(lambda x: enp.sin(x) * 2.0))(enp.ones(3))
    >>> again = ember.export.deserialize(exp.serialize())
    >>> [round(v, 4) for v in again.call(enp.zeros(3) + 0.5).tolist()]
    [0.9589, 0.9589, 0.9589]
"""
from ..fx import parse as _parse  # noqa: F401  (makes ember.fx.parse callable after `import ember`)
from ._exported import Exported, ExportError, deserialize, export  # noqa: F401
from ._rules import trace_custom_rules  # noqa: F401
from ..fx.staging import ShapeDtypeStruct  # noqa: F401
