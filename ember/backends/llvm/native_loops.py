"""scan and while_loop run as native loops inside a compiled program.

A loop's body (and a while_loop's condition) is compiled like any program
(`executable.compile_graph`); when every step of it is a kernel that runs on
the calling thread, the loop is translated into loop code for the native
interpreter of `loop_vm.py`, following the loop's description in
`fx/drivers.py` (`ScanSpec` / `WhileSpec`), so no Python runs per iteration:

- each body program keeps its own buffer numbering in a range of one slot
  table; its intermediates live in an arena laid out by the neutral
  `kernels.runner.plan_arena` (the plan the body's executable made);
- carries live in the loop's result arrays: the initial values are copied in
  once, and after each iteration the body's new carries are copied over them
  (a carry that is another carry's old value goes through a staging buffer, so
  swaps are right);
- a scanned input's slot points at row i of the operand, and a stacked output
  computed by a kernel is written in place into row i of the result (its slot
  is moved before the body runs); other stacked outputs (an input passed
  through, a constant) are copied into their row;
- reductions that accumulate into a pre-filled buffer get it by a copy of an
  identity-filled array before their kernel.

A compiled program calls such a loop like a kernel (`kernel_state`: the loop
code's prologue BINDs its operands and results from the program's buffer
table, so a loop call costs no Python); an inner loop of a native body is a
CALL of the interpreter on the inner loop's code, so nested loops are native.
Called from Python (`NativeLoop(...)(*arrays)`), the prologue reads the
arrays' addresses from handle slots instead.

cond/switch (`SwitchSpec`) is the same kind of code without the loop: a
SWITCH on the index operand jumps to one branch's instructions (its kernels
CALLed on the operands' slots, its results written in place or copied), so a
body with a cond stays native, and so does a program's top-level cond.  A cond
or a call of a sub-graph inside a body is inlined into the body's code (no
interpreter call, no operand binding per run).

Bodies (or branches) that contain a library step (sort, linalg, a cond whose
branch has one: anything not a kernel or a native loop) or a kernel big enough
for the thread pool fall back to the shared driver (`fx/drivers.py`), which
loops in Python over the body's executable (`LoopFallback`, with the reason);
`NativeExecutable.loop_paths()` says which path each loop of a program took.
A native loop inside a fallback's body is still native.

*Why a pooled kernel is not called from loop code:* `pool.NativePool.run` is
Python: it takes the pool's busy lock (a `threading.Lock`), keeps the adaptive
serial-mode counters, and wakes sleeping workers through their Python queues;
only posting a job and taking chunks are native.  Loop code runs inside a ctypes
call without the GIL, so it could neither lock nor wake a sleeper: calling the
pool from it means moving the lock and the counters into the pool's shared table
(atomics) and waking workers by futex, a redesign of pool.py.  The gain is
small: a kernel is split over the pool from ~2^17 elements of work on, i.e.
>= ~50 us per call, while the driver costs ~3-8 us per iteration (a fori_loop
over 2^18 float32, load ~2: driver + pool 64-73 us per iteration, natively on
one thread 68-155 us).

Example:
    >>> import ember, numpy as np
    >>> f = ember.jit(lambda c, xs: ember.scan(lambda c, x: (c * x, c + x), c, xs))
    >>> c, ys = f(np.float32(1), np.arange(1, 4, dtype=np.float32))
    >>> float(c), ys.tolist()
    (6.0, [2.0, 3.0, 5.0])
    >>> from ember.backends.llvm.executable import compile_graph
    >>> g = ember.make_graph(lambda c, xs: ember.scan(lambda c, x: (c * x, c + x), c, xs))(
    ...     np.float32(1), np.ones(3, np.float32))
    >>> compile_graph(g).loop_paths()
    [('scan', 'native')]
"""
from __future__ import annotations

import math
import threading

import numpy as np

from ...fx import trampoline
from ...fx.drivers import CallSpec, ScanSpec, SwitchSpec, loop_spec
from ..kernels.runner import host_library_step
from . import loop_vm as vm

_ALIGN = 64


class LoopFallback:
    """The shared driver of a loop whose body cannot run natively, with the reason."""

    def __init__(self, run, reason: str):
        self.run, self.reason = run, reason

    def __call__(self, *vals):
        return self.run(*vals)


def bind_library_step(step, compile, compile_body=None):
    """The host callable of a library step, as `kernels.runner.host_library_step`,
    except that a scan or while_loop whose bodies allow it runs as a `NativeLoop`
    (else a `LoopFallback` over the shared driver).  `compile(closed_graph)` is
    the backend's compiler, returning its executables; loop bodies are compiled
    by `compile_body` (default: `compile`), which may optimise harder.

    Example:
        >>> import ember, numpy as np
        >>> from ember.backends.kernels import schedule
        >>> from ember.backends.llvm.kernel_target import cpu_target
        >>> from ember.backends.llvm.executable import compile_graph
        >>> g = ember.make_graph(lambda c: ember.while_loop(lambda v: v < 10.0, lambda v: v * 2.0, c))(1.0)
        >>> step = next(s for s in schedule(g, cpu_target()).steps if hasattr(s, "eq"))
        >>> loop = bind_library_step(step, compile_graph)
        >>> type(loop).__name__, [float(v) for v in loop(np.float32(1.0))]
        ('NativeLoop', [16.0])
    """
    eq = step.eq
    spec = loop_spec(eq.prim, eq.params)
    if spec is None:
        return host_library_step(step, compile)
    if isinstance(spec, CallSpec):   # run once: compiled as its caller is
        graphs = [spec.graph]
    elif isinstance(spec, SwitchSpec):
        graphs = list(spec.branches)
    else:
        graphs = [spec.body] if isinstance(spec, ScanSpec) else [spec.cond, spec.body]
        compile = compile_body or compile
    built = {}
    reason = None
    what = "branch" if isinstance(spec, SwitchSpec) else "body"
    for g in graphs:
        if g not in built:
            built[g] = compile(g)
        reason = reason or _unsupported(built[g], what)
    if reason is None:
        return NativeLoop(eq, spec, built, step)
    return LoopFallback(host_library_step(step, lambda g: built[g] if g in built else compile(g)), reason)


def _unsupported(exe, what="body") -> str | None:
    """Why `exe` (a NativeExecutable) cannot be a native loop body (or `what`:
    a cond's branch), or None."""
    from .executable import DATA_OFFSET, _K_INLINE, _K_LOOP, _LIB
    if DATA_OFFSET is None:
        return "numpy arrays' data pointers cannot be read natively on this interpreter"
    for d in exe._steps:
        if d.kind == _K_LOOP:
            continue    # an inner native loop: called from the loop code like a kernel
        if d.kind == _LIB:
            return f"the {what} has a library step ({d.step.eq.prim.name})"
        if d.kind != _K_INLINE:
            return f"the {what}'s kernel {d.step.name} is split over the thread pool"
    return None


def _nbytes(aval) -> int:
    return int(math.prod(aval.shape)) * np.dtype(aval.dtype).itemsize


class _Layout:
    """Slot numbering, loop code and per-state storage of one loop (`NativeLoop._new_state`
    makes the arrays and resolves the code's placeholders)."""

    def __init__(self):
        self.n_slots = 0
        self.code = []          # [op, a, b, c, d, e] with table / storage placeholders
        self.storage = []       # (slot, shape, dtype, fill or None): arrays a state allocates
        self.tables = []        # the _Body of each kernel table a state allocates
        self.inner = []         # inner NativeLoops, each with a state per state of this loop
        self.bodies = []        # the _Body of every program placed here (inlined ones too)

    def slot(self, n=1) -> int:
        s = self.n_slots
        self.n_slots += n
        return s

    def emit(self, op, *words):
        self.code.append([op, *words, *[0] * (vm.WIDTH - 1 - len(words))])
        return len(self.code) - 1

    def array(self, shape, dtype, fill=None) -> int:
        """A slot holding the data pointer of an array every state owns."""
        s = self.slot()
        self.storage.append((s, tuple(shape), np.dtype(dtype), fill))
        return s


class _Body:
    """One compiled body program placed in the slot table."""

    def __init__(self, lay: _Layout, exe):
        self.exe = exe
        lay.bodies.append(self)
        prog = exe.program
        self.prog = prog
        self.n_table = max(len(prog.buffers), 1)
        self.base = lay.slot(self.n_table)
        self.table = len(lay.tables)
        lay.tables.append(self)
        # buffer -> a slot of the caller's: an inlined program's operands and in-place
        # results, whose table entries point at the caller's slots (no MOVE per run)
        self.alias = {}
        self.consts = {b: c for b, c in exe.const_slots}
        self.kernel_written = {o for d in exe._steps for o in d.outputs}
        self.inputs = set(prog.inputs)
        self.placed = set()     # kernel-written outputs whose slot the loop moves (stacked in place)
        self.own = set()        # kernel-written outputs given storage of their own

    def s(self, b) -> int:
        return self.alias.get(b, self.base + b)

    def input_slot(self, k) -> int:
        return self.s(self.prog.inputs[k])

    def out_loc(self, lay, j, aval):
        """The slot holding body output j's data pointer after the body ran."""
        o = self.prog.outputs[j]
        if type(o) is not int:
            return lay.array(aval.shape, aval.dtype, fill=o[1])
        if o not in self.inputs and o not in self.consts and o not in self.placed:
            self.own.add(o)   # written by a kernel (or empty): storage of its own
        return self.s(o)

    def emit_run(self, lay, bufs):
        """The body's kernels in order (reduction identities copied in first); an
        inner native loop is a CALL of the interpreter on its own code, an inner
        cond/switch or call of a sub-graph is inlined: this generator yields
        ``(inner NativeLoop, its operand and result slots)`` for `_emit` to
        translate in place (nested branches on `_emit`'s stack, not recursion)."""
        from .executable import _K_LOOP
        for d in self.exe._steps:
            if d.kind == _K_LOOP and isinstance(d.loop.spec, _INLINED):
                inner = d.loop
                data = [self.s(a) if type(a) is int else
                        lay.array(inner.in_avals[k].shape, inner.in_avals[k].dtype, fill=a[1])
                        for k, a in enumerate(d.step.args)]
                yield inner, data + [self.s(o) for o in d.step.outputs]
                continue
            if d.kind == _K_LOOP:
                lay.inner.append(d.loop)
                q = len(lay.inner) - 1
                lay.emit(vm.CALL, ("vm",), ("code", q), ("slots", q), ("table", self.table))
                continue
            for b, v in d.init:
                ident = lay.array(bufs[b].shape, bufs[b].dtype, fill=v)
                lay.emit(vm.COPY, self.s(b), ident, bufs[b].size * bufs[b].dtype.itemsize)
            lay.emit(vm.CALL, d.addr, 0, d.total, ("table", self.table))


# specs translated into their caller's loop code rather than CALLed as a loop of their own:
# no prologue to bind operands and no second interpreter frame per run (a cond in a scan
# body: ~60-70 -> ~26-35 ns per iteration, a body without one ~17-21 ns); the inlined
# program's table entries point at the caller's slots for its operands and in-place
# results (`_Body.alias`), so a run costs no MOVEs either
_INLINED = (SwitchSpec, CallSpec)


def _emit(lay, gen):
    """Run an emitting generator (`_Body.emit_run`, `NativeLoop._run_once`,
    `NativeLoop._switch`) to its end, translating the inner branches and calls it
    yields into `lay` on an explicit stack (`fx.trampoline`)."""
    return trampoline.run(gen, lambda req: req[0]._inline(lay, req[1]))


class _State:
    __slots__ = ("slots", "code", "keep", "run")


class NativeLoop:
    """A scan or while_loop run by the native loop interpreter (module docstring),
    or a cond/switch or a single call of a sub-graph (jit_call, remat, a custom
    rule's call: the same code without the loop).  Called with the operands
    (numpy arrays), returns the results."""

    def __init__(self, eq, spec, built, step=None):
        self.spec = spec
        self.step = step
        self.in_avals = [v.aval for v in eq.inputs]
        self.out_avals = [v.aval for v in eq.outputs]
        self.n_in, self.n_out = len(self.in_avals), len(self.out_avals)
        self.kind = eq.prim.name
        lay = self.layout = _Layout()
        self.handles = lay.slot(self.n_in + self.n_out)
        data = [lay.slot() for _ in range(self.n_in + self.n_out)]
        self._data = data
        # the prologue, one instruction per operand and result, depends on how the
        # loop is called (`_prologue`): placeholders here
        for k in range(self.n_in + self.n_out):
            lay.emit(vm.END)
        self._literals = {}
        if step is not None:
            for k, a in enumerate(step.args):
                if type(a) is not int:
                    aval = self.in_avals[k]
                    self._literals[k] = lay.array(aval.shape, aval.dtype, fill=a[1])
        self._built = built
        if isinstance(spec, (SwitchSpec, CallSpec)):   # no loop: the same code as when inlined
            _emit(lay, self._inline(lay, data))
        elif isinstance(spec, ScanSpec):
            self._scan(lay, built[spec.body], data)
        else:
            self._while(lay, built[spec.cond], built[spec.body], data)
        lay.emit(vm.END)
        self._finish_bodies(lay)
        self._lock = threading.Lock()
        self._state = None

    # --- translation -----------------------------------------------------------------------------
    def _carry_in(self, lay, bodies_inputs, data_in, data_out, nk):
        """Bind every body's carry inputs to the result arrays; copy the initial carries in."""
        for j in range(nk):
            for body, k in bodies_inputs:
                lay.emit(vm.MOVE, body.input_slot(k + j), data_out[j])
            lay.emit(vm.COPY, data_out[j], data_in[j], _nbytes(self.out_avals[j]))

    def _update_carries(self, lay, body, n_first_out, nk, carry_k):
        """After the body: its carry outputs copied over the carry inputs."""
        phase1, phase2 = [], []
        carry_slots = {body.input_slot(carry_k + j) for j in range(nk)}
        for j in range(nk):
            aval = self.out_avals[j]
            dst = body.input_slot(carry_k + j)
            src = body.out_loc(lay, n_first_out + j, aval)
            if src == dst:
                continue
            n = _nbytes(aval)
            if src in carry_slots:  # another carry's old value: stage it before any carry changes
                tmp = lay.array(aval.shape, aval.dtype)
                phase1.append((tmp, src, n))
                src = tmp
            phase2.append((dst, src, n))
        for dst, src, n in phase1 + phase2:
            lay.emit(vm.COPY, dst, src, n)

    def _scan(self, lay, exe, data):
        spec = self.spec
        body = _Body(lay, exe)
        nc, nk, length = spec.num_consts, spec.num_carry, spec.length
        nx = self.n_in - nc - nk
        d_out = data[self.n_in:]
        for k in range(nc):
            lay.emit(vm.MOVE, body.input_slot(k), data[k])
        self._carry_in(lay, [(body, nc)], data[nc:nc + nk], d_out, nk)
        ctr = lay.slot()
        rev = length if spec.reverse else 0
        lay.emit(vm.SET, ctr, 0)
        top = lay.emit(vm.BRGE, ctr, length, -1)
        bufs = exe.program.buffers
        for k in range(nx):
            xb = bufs[exe.program.inputs[nc + nk + k]]
            row = xb.size * xb.dtype.itemsize
            lay.emit(vm.OFFSET, body.input_slot(nc + nk + k), data[nc + nk + k], row, ctr, rev)
        # stacked outputs written by a kernel: in place, the first time a buffer is one
        copies = []
        for k in range(self.n_out - nk):
            y_aval = spec.body.out_avals[nk + k]
            row = _nbytes(y_aval)
            o = exe.program.outputs[nk + k]
            if type(o) is int and o in body.kernel_written and o not in body.placed:
                body.placed.add(o)
                lay.emit(vm.OFFSET, body.s(o), d_out[nk + k], row, ctr, rev)
            else:
                copies.append((k, row, y_aval))
        _emit(lay, body.emit_run(lay, bufs))
        for k, row, y_aval in copies:
            src = body.out_loc(lay, nk + k, y_aval)
            tmp = lay.slot()
            lay.emit(vm.OFFSET, tmp, d_out[nk + k], row, ctr, rev)
            lay.emit(vm.COPY, tmp, src, row)
        self._update_carries(lay, body, 0, nk, nc)
        lay.emit(vm.INC, ctr)
        lay.emit(vm.JUMP, top)
        lay.code[top][3] = len(lay.code)

    def _inline(self, lay, data):
        """Emit this cond/switch or call of a sub-graph into `lay`, its operands and
        results the data pointers in slots `data` (a generator, see `_emit`)."""
        if isinstance(self.spec, SwitchSpec):
            yield from self._switch(lay, [self._built[b] for b in self.spec.branches], data)
        else:
            yield from self._run_once(lay, self._built[self.spec.graph], data, 0)

    def _run_once(self, lay, exe, data, first):
        """One run of `exe` on the operands from `first` on: results written by a
        kernel in place, the others copied (a generator, see `_emit`)."""
        body = _Body(lay, exe)
        for k in range(self.n_in - first):
            body.alias[exe.program.inputs[k]] = data[first + k]
        d_out = data[self.n_in:]
        copies = []
        for j in range(self.n_out):
            o = exe.program.outputs[j]
            if type(o) is int and o in body.kernel_written and o not in body.placed:
                body.placed.add(o)
                body.alias[o] = d_out[j]
            else:
                copies.append(j)
        yield from body.emit_run(lay, exe.program.buffers)
        for j in copies:
            aval = self.out_avals[j]
            lay.emit(vm.COPY, d_out[j], body.out_loc(lay, j, aval), _nbytes(aval))

    def _switch(self, lay, exes, data):
        """cond/switch (`SwitchSpec`): SWITCH on the index operand into a table of
        jumps, each to one branch run once (on the operands after the index),
        then to the end (a generator, see `_emit`)."""
        index = self.in_avals[0]
        dt = np.dtype(index.dtype)
        table = lay.emit(vm.SWITCH, data[0], len(exes), -1, dt.itemsize, int(dt.kind == "i"))
        lay.code[table][3] = len(lay.code)
        jumps = [lay.emit(vm.JUMP, -1) for _ in exes]
        ends = []
        for jump, exe in zip(jumps, exes):
            lay.code[jump][1] = len(lay.code)
            yield from self._run_once(lay, exe, data, 1)
            ends.append(lay.emit(vm.JUMP, -1))
        for e in ends:
            lay.code[e][1] = len(lay.code)

    def _while(self, lay, cexe, bexe, data):
        spec = self.spec
        cnc, bnc = spec.cond_nconsts, spec.body_nconsts
        nk = self.n_in - cnc - bnc
        cond, body = _Body(lay, cexe), _Body(lay, bexe)
        d_out = data[self.n_in:]
        for k in range(cnc):
            lay.emit(vm.MOVE, cond.input_slot(k), data[k])
        for k in range(bnc):
            lay.emit(vm.MOVE, body.input_slot(k), data[cnc + k])
        self._carry_in(lay, [(cond, cnc), (body, bnc)], data[cnc + bnc:], d_out, nk)
        top = len(lay.code)
        _emit(lay, cond.emit_run(lay, cexe.program.buffers))
        flag = cond.out_loc(lay, 0, spec.cond.out_avals[0])
        exit_ = lay.emit(vm.BRFALSE, flag, -1)
        _emit(lay, body.emit_run(lay, bexe.program.buffers))
        self._update_carries(lay, body, 0, nk, bnc)
        lay.emit(vm.JUMP, top)
        lay.code[exit_][2] = len(lay.code)

    def _finish_bodies(self, lay):
        """Storage for each body's arena, constants and own outputs (filled per state)."""
        self._bodies = lay.bodies
        for body in lay.bodies:
            bufs = body.prog.buffers
            for o in sorted(body.own):
                lay.storage.append((body.s(o), bufs[o].shape, bufs[o].dtype, None))

    # --- states and calls --------------------------------------------------------------------------
    def _prologue(self, table: bool) -> list:
        """Bind the data slots: from the handles Python writes (a call from Python),
        or from the calling program's buffer table (`table`: a compiled program
        calls the loop as a kernel, its operands and results buffers of its own)."""
        code = []
        for k in range(self.n_in + self.n_out):
            if not table:
                code.append([vm.DEREF, self._data[k], self.handles + k, 0, 0, 0])
            elif k in self._literals:
                code.append([vm.MOVE, self._data[k], self._literals[k], 0, 0, 0])
            else:
                buf = self.step.args[k] if k < self.n_in else self.step.outputs[k - self.n_in]
                code.append([vm.BIND, self._data[k], buf, 0, 0, 0])
        return code

    def kernel_state(self) -> "_State":
        """A state for calls as a kernel: ``ember_loop_run(code, slots, table)`` with
        ``state.code`` and ``state.slots``' addresses and the caller's buffer table.
        Inner loops get states of their own (made innermost first, without recursion)."""
        order, stack = [], [self]
        while stack:
            loop = stack.pop()
            order.append(loop)
            stack.extend(loop.layout.inner)
        made = {}
        for loop in reversed(order):   # children before parents
            inner = [made[id(c)].pop() for c in loop.layout.inner]
            made.setdefault(id(loop), []).append(loop._new_state(table=True, inner=inner))
        return made[id(self)].pop()

    def _new_state(self, table=False, inner=None) -> _State:
        lay = self.layout
        st = _State()
        st.keep = []
        st.slots = np.zeros(max(lay.n_slots, 1), np.int64)
        base_addr = st.slots.ctypes.data
        tables = []
        for body in lay.tables:
            t = base_addr + 8 * np.array([body.s(b) for b in range(body.n_table)], np.int64)
            st.keep.append(t)
            tables.append(t.ctypes.data)
        for s, shape, dtype, fill in lay.storage:
            a = np.empty(shape, dtype) if fill is None else np.full(shape, fill, dtype)
            st.keep.append(a)
            st.slots[s] = a.ctypes.data
        for body in self._bodies:
            exe = body.exe
            raw = np.empty(exe._arena_bytes + _ALIGN, np.uint8)
            skip = (-raw.ctypes.data) % _ALIGN
            st.keep.append(raw)
            for b, off in exe._offsets.items():
                st.slots[body.s(b)] = raw.ctypes.data + skip + off
            for b, c in exe.const_slots:
                st.slots[body.s(b)] = c.ctypes.data
                st.keep.append(c)
        if inner is None:
            inner = [c.kernel_state() for c in lay.inner]
        st.keep.extend(inner)
        refs = {"vm": vm.loop_address()}

        def word(t):
            if type(t) is not tuple:
                return t
            if t[0] == "table":
                return tables[t[1]]
            if t[0] == "code":
                return inner[t[1]].code.ctypes.data
            if t[0] == "slots":
                return inner[t[1]].slots.ctypes.data
            return refs[t[0]]
        code = np.array(self._prologue(table) + [[word(t) for t in ins] for ins in lay.code[self.n_in + self.n_out:]],
                        np.int64)
        st.code = np.ascontiguousarray(code.reshape(-1))
        st.run = None if table else self._make_runner(st)
        return st

    def _make_runner(self, st):
        """`run(vals)` for state `st` as straight-line code: check and bind the
        operands, allocate the results, write their addresses to the handle slots
        (the loop code reads the data pointers), run the loop code."""
        from .executable import DATA_OFFSET
        env = {"ndarray": np.ndarray, "conv": np.ascontiguousarray, "empty": np.empty,
               "mv": memoryview(st.slots), "OFF": DATA_OFFSET, "fn": vm.loop_function(),
               "CODE": st.code.ctypes.data, "SLOTS": st.slots.ctypes.data}
        h = self.handles
        lines = ["def run(vals):"]
        if self.n_in:
            lines.append(f"    {', '.join(f'x{j}' for j in range(self.n_in))}, = vals")
        for j, a in enumerate(self.in_avals):
            env[f"D{j}"] = np.dtype(a.dtype)
            lines += [f"    if type(x{j}) is not ndarray or x{j}.dtype is not D{j} or not x{j}.flags.c_contiguous:",
                      f"        x{j} = conv(x{j}, D{j})",
                      f"    mv[{h + j}] = id(x{j}) + OFF"]
        for j, a in enumerate(self.out_avals):
            env[f"S{j}"], env[f"E{j}"] = tuple(a.shape), np.dtype(a.dtype)
            lines += [f"    o{j} = empty(S{j}, E{j})", f"    mv[{h + self.n_in + j}] = id(o{j}) + OFF"]
        lines += ["    fn(CODE, SLOTS, 0)", f"    return [{', '.join(f'o{j}' for j in range(self.n_out))}]"]
        exec("\n".join(lines), env)  # noqa: S102 - our own text, built from the loop's signature
        return env["run"]

    def __call__(self, *vals):
        if self._lock.acquire(False):
            try:
                st = self._state
                if st is None:
                    st = self._state = self._new_state()
                return st.run(vals)
            finally:
                self._lock.release()
        st = self._new_state()   # (held here: its code, tables and arenas must outlive the run)
        return st.run(vals)
