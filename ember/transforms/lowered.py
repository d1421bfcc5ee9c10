"""Ahead-of-time lowering: `jit(f).lower(*args)` -> `Lowered` (the IR after passes,
the scheduled kernels, LLVM IR, assembly, a cost estimate) -> `.compile()`.

A `Lowered` reads like the ClosedGraph it wraps (`.graph`, `.consts`,
`.equations`, `.out_avals`, `str()`), which is what `lower` used to return.

Example:
    >>> import ember, ember.numpy as enp
    >>> low = ember.jit(lambda x: enp.sin(x) * 2.0).lower(enp.ones(4))
    >>> [e.prim.name for e in low.equations]
    ['sin', 'mul']
    >>> low.compile()(enp.zeros(4)).tolist()
    [0.0, 0.0, 0.0, 0.0]
"""
from __future__ import annotations

_DIALECTS = ("ir", "kernels", "llvm", "asm")


class Lowered:
    """A jitted function lowered for one signature (see the module docstring).

    Example:
        >>> import ember
        >>> low = ember.jit(lambda x: x + 1.0).lower(1.0)
        >>> low.cost_analysis()["flops"]
        1
    """

    def __init__(self, jitted, entry, in_tree, avals, static_key=()):
        self._jitted, self._entry, self._static = jitted, entry, static_key
        self._in_tree, self._avals = in_tree, list(avals)
        self.closed = entry.graph
        self.backend = jitted.backend or "cpu"
        self._program = None

    # --- what a ClosedGraph offers (old callers of `lower`) ---------------------------
    @property
    def graph(self):
        """The optimised `Graph` (captured constants are its leading inputs)."""
        return self.closed.graph

    @property
    def consts(self):
        return self.closed.consts

    @property
    def equations(self):
        return self.closed.equations

    @property
    def in_avals(self):
        return self.closed.in_avals

    @property
    def out_avals(self):
        return self.closed.out_avals

    def pretty(self, source: bool = False) -> str:
        """The IR text, with `# file:line` per equation when `source` (ClosedGraph.pretty)."""
        return self.closed.pretty(source=source)

    def __str__(self):
        return str(self.closed)

    __repr__ = __str__

    def _repr_pretty_(self, p, cycle):
        p.text(str(self))

    # --- below the IR ------------------------------------------------------------------
    def _native(self, what: str):
        if self.backend != "cpu":
            raise ValueError(f"Lowered.{what}: the {self.backend!r} backend compiles no kernels; "
                             f"only backend='cpu' (the LLVM backend) has kernel, LLVM and assembly text")

    def kernels(self):
        """The scheduled program (steps over numbered buffers) the LLVM backend compiles;
        `as_text("kernels")` prints it.

        Example:
            >>> import ember, ember.numpy as enp
            >>> prog = ember.jit(lambda x: enp.exp(x).sum()).lower(enp.ones(3)).kernels()
            >>> len(prog.steps) >= 1
            True
        """
        self._native("kernels()")
        if self._program is None:
            from ..backends.kernels import schedule
            from ..backends.llvm.kernel_target import cpu_target
            self._program = schedule(self.closed, cpu_target())
        return self._program

    def as_text(self, dialect: str = "ir") -> str:
        """The program as text: "ir" (the graph after the passes), "kernels" (the
        scheduled kernel IR, what EMBER_DUMP_KERNELS prints), "llvm" (the LLVM IR
        module, one function per kernel, before LLVM's optimisation) or "asm" (the
        host assembly of that module, optimised as a compile would).

        Example:
            >>> import ember, ember.numpy as enp
            >>> low = ember.jit(lambda x: enp.exp(x) * 2.0).lower(enp.ones(3))
            >>> "define void" in low.as_text("llvm")
            True
        """
        if dialect == "ir":
            return str(self.closed)
        if dialect not in _DIALECTS:
            raise ValueError(f"Lowered.as_text: unknown dialect {dialect!r}; choose one of {list(_DIALECTS)}")
        self._native(f"as_text({dialect!r})")
        if dialect == "kernels":
            from ..backends.kernels import format_program
            return format_program(self.kernels())
        from ..backends.llvm.codegen import render_program
        text = render_program(self.kernels(), "ember")[0]
        if dialect == "llvm":
            return text
        from ..backends.llvm.compiler import inspect_ir
        return inspect_ir(text, opt=3)[1]

    def cost_analysis(self) -> dict:
        """Estimated work: `{"flops", "bytes accessed", "kernels": [per step {"name",
        "kind", "flops", "bytes"}]}` from the scheduled kernels (library steps have
        flops None and are not in the flop total; see backends/kernels/cost.py).

        Example:
            >>> import ember, ember.numpy as enp
            >>> c = ember.jit(lambda a, b: a @ b).lower(enp.ones((4, 5)), enp.ones((5, 6))).cost_analysis()
            >>> c["flops"]
            240
        """
        from ..backends.kernels.cost import program_costs
        steps = program_costs(self.kernels())
        return {"flops": sum(s["flops"] for s in steps if s["flops"] is not None),
                "bytes accessed": sum(s["bytes"] for s in steps), "kernels": steps}

    def compile(self) -> "Compiled":
        """A callable that runs this program (compiled now) for arguments of the lowered
        signature.

        Example:
            >>> import ember
            >>> float(ember.jit(lambda x: x * 3.0).lower(2.0).compile()(4.0))
            12.0
        """
        from .jit import executable_for
        executable_for(self.closed, self.backend)
        return Compiled(self)


class Compiled:
    """The executable of a `Lowered`: call it with arguments of the lowered signature
    (same pytree structure, shapes and dtypes; static arguments as when lowered).

    Example:
        >>> import ember
        >>> c = ember.jit(lambda x: x - 1.0).lower(1.0).compile()
        >>> float(c(5.0))
        4.0
    """

    def __init__(self, lowered: Lowered):
        self.lowered = lowered

    def __call__(self, *args, **kwargs):
        from ..tree import tree_flatten, tree_unflatten
        from .jit import jit_call_p
        low = self.lowered
        jitted, entry = low._jitted, low._entry
        static, dyn_args, dyn_kwargs, nums = jitted._signature(args, kwargs)
        leaves, in_tree = tree_flatten((dyn_args, dyn_kwargs))
        ops, avals = jitted._operands(leaves, in_tree, len(args), nums)
        if jitted._static_cache_key(static) != low._static:
            raise TypeError("this compiled program was lowered with other static arguments; lower "
                            "again for these (static values are part of the program)")
        if in_tree != low._in_tree or [a.strip_weak() for a in avals] != [a.strip_weak() for a in low._avals]:
            want = ", ".join(a.str_user() for a in low._avals)
            got = ", ".join(a.str_user() for a in avals)
            raise TypeError(f"this compiled program was lowered for arguments ({want}) but was called "
                            f"with ({got}); lower again (or call the jitted function, which compiles "
                            f"per signature)")
        outs = jit_call_p.bind(*entry.consts, *ops, graph=entry.graph,
                               name=getattr(jitted.fun, "__name__", "fun"), backend=low.backend)
        return tree_unflatten(entry.out_tree, outs)
