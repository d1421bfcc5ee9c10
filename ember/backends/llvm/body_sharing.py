"""One loop body for kernels that differ only in their buffers: a program's
kernels often repeat (the pieces of a concatenation, one per Taylor order; the
same layer of an MLP's Taylor propagation at every depth), and LLVM optimises
and code-generates each function it is given (~8 ms for a copy loop, ~100 ms
for a row group of Taylor recurrences at O3), so a repeated body is emitted
once and called from each kernel's ABI function.

Two pieces:

* `base_offsets(step)`: per buffer, the smallest constant term of the step's
  (affine) addresses into it.  The ABI function adds it to the buffer's
  pointer and the body addresses the buffer relative to it
  (`ValueEmitter.address`), so kernels that write different parts of one
  buffer, or read different slices, render identical bodies.
* `SharedBodies`: while a module is rendered, the text of each kernel body
  (LLVM's own text, so two bodies are shared only when their instructions are
  identical); a repeated body is dropped and the kernel's ABI function calls
  the first one, which is then `noinline` (inlined, each copy would be
  optimised again).  `module_text` prints the module reusing those texts.

Example:
    >>> import ember, numpy as np
    >>> import ember.numpy as enp
    >>> from ember.backends.kernels import schedule
    >>> from ember.backends.llvm.codegen import render_program
    >>> from ember.backends.llvm.kernel_target import cpu_target
    >>> g = ember.make_graph(lambda a, b: enp.concatenate([a, b]))(np.ones(64), np.ones(64))
    >>> text = render_program(schedule(g, cpu_target()), "m")[0]
    >>> text.count("define internal")   # both pieces call one body
    1
"""
from __future__ import annotations

from ..kernels.affine import affine_terms
from ..kernels.loop_ir import E, GemmKernel, MapKernel, ReduceKernel, RowKernel, linearize
from ..kernels.walk import unique_nodes


def _accesses(k):
    """(buffer, index expression) of every load and store of map or reduce kernel `k`."""
    roots = [k.body]
    if isinstance(k, MapKernel):
        at = k.store if k.store is not None else linearize(tuple(E("v", i) for i in range(len(k.shape))), k.shape)
        roots.append(at)
        yield k.out, at
    else:
        kept = k.kept
        yield k.out, linearize(tuple(E("v", i) for i in kept), [k.space[i] for i in kept])
    for root in roots:
        for e in unique_nodes(root):
            if e[0] == "load":
                yield e[1], e[2]


def base_offsets(step) -> dict:
    """{buffer id: element offset} for a map, reduce or row kernel: the smallest
    constant term of its addresses into the buffer, for buffers whose every
    address is affine (others, aliased row buffers and other kernel kinds: none).

    Example:
        >>> import numpy as np
        >>> from ember.backends.kernels.loop_ir import E, MapKernel
        >>> k = MapKernel("k", 1, (4,), E("load", 0, E("v", 0), np.dtype("f8")),
        ...               store=E("+", E("v", 0), E("c", 8)))
        >>> base_offsets(k)
        {1: 8}
    """
    if isinstance(step, RowKernel):
        members = step.members
        fixed = set(step.aliases) | set(step.aliases.values()) | set(step.scratch)
    elif isinstance(step, (MapKernel, ReduceKernel)):
        members, fixed = [step], set()
    else:
        return {}
    low: dict = {}
    for m in members:
        for bid, e in _accesses(m):
            if bid in fixed:
                continue
            terms = affine_terms(e)
            if terms is None:
                fixed.add(bid)
                low.pop(bid, None)
            else:
                c = terms[1]
                low[bid] = min(low.get(bid, c), c)
    return {b: c for b, c in low.items() if c and b not in fixed}


def argument_order(step, buffer_ids) -> list:
    """`buffer_ids` (once each) in the order a map, reduce, row or gemm kernel
    first uses them (its output, then its loads as its expressions are walked;
    a product: A, B, C, then its epilogues), the rest in increasing order.  Body
    arguments in this order make two kernels that do the same thing on other
    buffers render alike, where increasing buffer ids need not.

    Example:
        >>> import numpy as np
        >>> from ember.backends.kernels.loop_ir import E, MapKernel
        >>> k = MapKernel("k", 0, (4,), E("load", 7, E("v", 0), np.dtype("f8")), [7])
        >>> argument_order(k, [7, 0])
        [0, 7]
    """
    wanted = set(buffer_ids)
    if isinstance(step, RowKernel):
        members = step.members
    elif isinstance(step, (MapKernel, ReduceKernel)):
        members = [step]
    elif isinstance(step, GemmKernel):
        members = step.epilogue
    else:
        members = []
    first = [step.a, step.b, step.out] if isinstance(step, GemmKernel) else []
    order = dict.fromkeys(b for b in first if b in wanted)
    for m in members:
        for bid, _ in _accesses(m):
            if bid in wanted:
                order.setdefault(bid)
    return list(order) + sorted(wanted - set(order))


class SharedBodies:
    """The bodies of one module's kernels, each text once: see the module docstring."""

    def __init__(self):
        self._first: dict = {}    # (signature, body text) -> the body function
        self._text: dict = {}     # body function name -> its blocks' text

    def add(self, em) -> bool:
        """Register emitter `em`'s finished body; when an identical body is already
        in the module, drop `em`'s and call that one instead.  True when shared.

        Example::

            shared.add(em)   # after em.emit_map(step)
        """
        fn = em.fn
        buf: list = []
        fn.descr_body(buf)
        text = "".join(buf)
        key = (str(fn.ftype), text)
        first = self._first.get(key)
        if first is None:
            self._first[key] = fn
            self._text[fn.name] = text
            return False
        del em.m.globals[fn.name]
        em.call.replace_callee(first)
        em.fn = first
        if "alwaysinline" in first.attributes:
            first.attributes.discard("alwaysinline")
            first.attributes.add("noinline")
        return True

    def module_text(self, module) -> str:
        """`str(module)`, printing the registered bodies from their stored text.

        Example::

            text = shared.module_text(module)
        """
        lines = ['; ModuleID = "%s"' % (module.name,),
                 'target triple = "%s"' % (module.triple,),
                 'target datalayout = "%s"' % (module.data_layout,),
                 '']
        lines += [it.get_declaration() for it in module.get_identified_types().values()]
        for v in module.globals.values():
            text = self._text.get(v.name)
            if text is None or not v.blocks:
                lines.append(str(v))
            else:
                buf: list = []
                v.descr_prototype(buf)
                lines.append("".join(buf) + "{\n" + text + "}\n")
        lines += module._get_metadata_lines()
        return "\n".join(lines)
