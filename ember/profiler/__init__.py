"""The profiler: `with ember.profiler.trace("out_dir"):` records every jitted call,
each step of its compiled program (kernel or library step, with estimated flops
and bytes), every trace/compile with its cause, and each wait for a DataLoader batch; it writes
`out_dir/trace.json` (Chrome trace events, for Perfetto or chrome://tracing), and
`summary()` prints a table of the recorded events sorted by total time.

While no trace is active nothing is recorded and no call path checks anything:
entering or leaving a trace starts a new dispatch epoch, which makes `jit` look
its executables up again (through `executable_for`, which wraps them while
profiling).

Example:
    >>> import ember, ember.numpy as enp, json, os, tempfile
    >>> f = ember.jit(lambda x: enp.sin(x).sum())
    >>> d = tempfile.mkdtemp()
    >>> with ember.profiler.trace(d):
    ...     _ = f(enp.ones(1000))
    >>> names = {e["name"] for e in json.load(open(os.path.join(d, "trace.json")))["traceEvents"]}
    >>> "jit <lambda>" in names
    True
"""
from __future__ import annotations

import contextlib
import json
import os
import threading
import time

from .. import dtypes as _dt

active = False          # read by jit.executable_for: wrap executables while a trace runs
_events: list = []      # the current (or last) trace's events
_wrapped: dict = {}     # (id(graph), backend, name) -> profiled executable, for one trace
_causes: dict = {}      # function name -> why it was last traced (jit's compile log reason)
_pid = os.getpid()


def _now_us() -> float:
    return time.perf_counter_ns() / 1000.0


def _record(name: str, cat: str, ts: float, dur: float, args: dict | None = None) -> None:
    _events.append({"name": name, "cat": cat, "ph": "X", "ts": ts, "dur": dur, "pid": _pid,
                    "tid": threading.get_ident(), "args": args or {}})


@contextlib.contextmanager
def trace(out_dir: str | os.PathLike, *, create: bool = True):
    """Record what runs inside the block; write `out_dir/trace.json` when it ends.

    Events (Chrome trace "X" events, microseconds): `jit <name>` per compiled call,
    one per program step inside it (`k3_exp`, `library sort`, with `kind`, `flops`,
    `bytes` and the jitted function's name, `program`, in `args`), `trace <name>` (with its `cause`) and
    `compile <name>` (the backend compile, with the cause and the equation count),
    and `dataloader wait` per batch of a DataLoader iterated inside the block.

    Example:
        >>> import ember, tempfile
        >>> with ember.profiler.trace(tempfile.mkdtemp()) as events:
        ...     _ = ember.jit(lambda x: x * 2.0)(1.0)
        >>> sorted({e["cat"] for e in events})
        ['call', 'compile', 'step', 'trace']
    """
    global active
    if active:
        raise RuntimeError("ember.profiler.trace: a trace is already active (traces do not nest)")
    out_dir = os.fspath(out_dir)
    if create:
        os.makedirs(out_dir, exist_ok=True)
    elif not os.path.isdir(out_dir):
        raise FileNotFoundError(f"ember.profiler.trace: no directory {out_dir!r}")
    _events.clear()
    _wrapped.clear()
    active = True
    _dt.default_epoch += 1   # jit's fastest path looks its executables up again
    try:
        yield _events
    finally:
        active = False
        _dt.default_epoch += 1
        _wrapped.clear()
        with open(os.path.join(out_dir, "trace.json"), "w") as fh:
            json.dump({"traceEvents": list(_events), "displayTimeUnit": "ms"}, fh)


def summary(file=None) -> str:
    """Print (to `file`, default stdout) and return a table of the last trace's events
    by name: count, total and mean time, share of the traced jit calls' time, and
    the estimated flops and bytes of program steps, sorted by total time.

    Example:
        >>> import ember, tempfile
        >>> with ember.profiler.trace(tempfile.mkdtemp()):
        ...     _ = ember.jit(lambda x: x + 1.0)(1.0)
        >>> "jit <lambda>" in summary(file=open(os.devnull, "w"))
        True
    """
    import sys
    rows: dict = {}
    for e in _events:
        # steps of different programs share kernel names (k1_mul): keyed by program too
        prog = e["args"].get("program")
        r = rows.setdefault((f"{prog}: {e['name']}" if prog else e["name"], e["cat"]), [0, 0.0, 0, 0])
        r[0] += 1
        r[1] += e["dur"]
        r[2] += e["args"].get("flops") or 0
        r[3] += e["args"].get("bytes") or 0
    calls = sum(r[1] for (n, c), r in rows.items() if c == "call") or 1.0
    head = f"{'name':<40} {'kind':<8} {'count':>6} {'total ms':>10} {'mean us':>10} {'% calls':>8} " \
           f"{'flops':>12} {'bytes':>12}"
    lines = [head, "-" * len(head)]
    for (name, cat), (n, tot, fl, by) in sorted(rows.items(), key=lambda kv: -kv[1][1]):
        share = f"{100.0 * tot / calls:7.1f}%" if cat in ("call", "step") else ""
        lines.append(f"{name[:40]:<40} {cat:<8} {n:>6} {tot / 1000.0:>10.3f} {tot / n:>10.1f} {share:>8} "
                     f"{fl or '':>12} {by or '':>12}")
    text = "\n".join(lines)
    print(text, file=file or sys.stdout)
    return text


def note_cause(name: str, reason: str, ts: float, dur: float) -> None:
    """Record a trace of `name` and why it happened (called by jit while profiling).

    Example:
        >>> note_cause.__name__
        'note_cause'
    """
    _causes[name] = reason
    _record(f"trace {name}", "trace", ts, dur, {"cause": reason})


def note_compile(name: str, backend: str, ts: float, dur: float, equations: int) -> None:
    """Record a backend compile of `name`'s program (called by jit's executable_for).

    Example:
        >>> note_compile.__name__
        'note_compile'
    """
    _record(f"compile {name}", "compile", ts, dur,
            {"backend": backend, "equations": equations, "cause": _causes.get(name, "")})


def profiled(exe, graph, name: str, backend: str):
    """`exe` wrapped to record each call (and each program step, for native
    executables), built once per program and trace.

    Example:
        >>> profiled.__name__
        'profiled'
    """
    key = (id(graph), backend, name)
    hit = _wrapped.get(key)
    if hit is None or hit.exe is not exe:
        from .steps import Profiled
        hit = _wrapped[key] = Profiled(exe, graph, name, backend)
    return hit


class _TimedBatches:
    """A DataLoader iterator whose `next` calls are `dataloader wait` events."""

    def __init__(self, it):
        self._it = it

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._it)

    def __next__(self):
        t0 = _now_us()
        batch = next(self._it)
        if active:
            _record("dataloader wait", "data", t0, _now_us() - t0, {"loader": type(self._it).__name__})
        return batch

    def __getattr__(self, name):   # the wrapped iterator's own API (e.g. _reset of persistent workers)
        return getattr(self._it, name)


def timed_batches(it):
    """`it` (a DataLoader's batch iterator) recording each wait for a batch (what
    `DataLoader.__iter__` returns while a trace is active).

    Example:
        >>> [b for b in timed_batches(iter([1, 2]))]
        [1, 2]
    """
    return _TimedBatches(it)


__all__ = ["summary", "trace"]
