"""The host CPU as an LLVM target.

Everything the LLVM backend needs to know about the machine it runs on lives
here: one-time initialisation of LLVM's native target, target machines built
from the host CPU name and feature string, a fingerprint of the host for cache
keys, and the function-attribute text that makes the optimiser use the full
vector width of the host.

"Host" means the code-generation target, which two environment variables
(read once, at the first compile) can narrow to test other CPUs' code paths
on this one:

* ``EMBER_CPU`` -- an LLVM CPU name (``haswell``, ``x86-64``, ``skylake-avx512``)
  whose features replace the host's.
* ``EMBER_CPU_FEATURES`` -- a comma list of ``+feature``/``-feature`` edits
  applied on top (``-avx512f``).

Every decision keyed on ``host_cpu``/``host_features``/``host_has_feature``
follows: the packed gemm tile, mathlib's ``ldexp`` path, the preferred vector
width and the disk-cache fingerprint.  Disabling features is always allowed;
a CPU name LLVM does not know, an unknown feature, or a feature this machine
cannot execute raises ``TargetError`` (never code that dies with SIGILL).

Example::

    from ember.backends.llvm import target
    tm = target.host_target_machine()          # a fresh TargetMachine
    key_part = target.host_fingerprint()      # "x86_64-...|znver4|+avx,..."
    ir_text = target.add_target_attributes(ir_text)
    target.describe()                          # 'znver4 (host): avx512f fma, 512-bit vectors'
"""

from __future__ import annotations

import difflib
import functools
import os
import re
import sys
import tempfile
import threading

import llvmlite.binding as llvm

__all__ = [
    "TargetError",
    "describe",
    "vector_bits",
    "initialize",
    "host_cpu",
    "host_features",
    "host_has_feature",
    "host_triple",
    "host_target_machine",
    "host_fingerprint",
    "function_attributes",
    "add_target_attributes",
]

_init_lock = threading.Lock()
_initialized = False


def initialize() -> None:
    """Initialise LLVM's native target and asm printer (idempotent).

    ``llvm.initialize()`` raises in llvmlite >= 0.45, so only the two native
    initialisers are called.

    Example::

        initialize(); initialize()   # second call is a no-op
    """
    global _initialized
    if _initialized:
        return
    with _init_lock:
        if not _initialized:
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            _initialized = True


class TargetError(ValueError):
    """An ``EMBER_CPU``/``EMBER_CPU_FEATURES`` setting that cannot be honoured.

    Example::

        os.environ["EMBER_CPU"] = "pentium9"   # then, at the first compile:
        # TargetError: EMBER_CPU='pentium9' is not a CPU LLVM knows ...
    """


# The features ember's own code branches on, each with a probe: a tiny
# function whose assembly shows whether LLVM enabled the feature for a given
# CPU and feature string.  LLVM exposes no table of the features a CPU name
# implies (nor the closure of a "-avx" edit), so asking its code generator is
# the one reliable way to know.
_PROBES = {
    "avx512f": ("<16 x float>", "fadd", r"%zmm"),
    "avx": ("<8 x float>", "fadd", r"%ymm"),
    "avx2": ("<8 x i32>", "add", r"vpaddd[^\n]*%ymm"),
    "fma": ("double", "fma", r"vfmadd"),
    "sse4.1": ("double", "floor", r"roundsd"),
}


def _probe_ir(name: str) -> str:
    ty, op, _ = _PROBES[name]
    if op in ("fma", "floor"):
        n = 3 if op == "fma" else 1
        params = ", ".join(f"{ty} %a{i}" for i in range(n))
        return (f"declare {ty} @llvm.{op}.f64({', '.join([ty] * n)})\n"
                f"define {ty} @p({params}) {{\n  %r = call {ty} @llvm.{op}.f64({params})\n"
                f"  ret {ty} %r\n}}\n")
    return (f"define void @p({ty}* %x, {ty}* %y) {{\n  %a = load {ty}, {ty}* %x\n"
            f"  %b = load {ty}, {ty}* %y\n  %r = {op} {ty} %a, %b\n"
            f"  store {ty} %r, {ty}* %x\n  ret void\n}}\n")


def _llvm_diagnostics(fn):
    """Run ``fn()``; return (its result, what LLVM printed on stderr).

    LLVM reports an unknown CPU or feature only as a warning on file
    descriptor 2 (and then ignores it), so the descriptor is captured.
    """
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            result = fn()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        tmp.seek(0)
        return result, tmp.read().decode(errors="replace")


def _known_cpu(cpu: str) -> bool:
    # checked before any code generation: LLVM may abort the process when it
    # emits code for a CPU it does not know
    tgt = llvm.Target.from_triple(host_triple())
    _, warnings = _llvm_diagnostics(lambda: tgt.create_target_machine(cpu=cpu, opt=0))
    return "not a recognized processor" not in warnings


def _probe(cpu: str, features: str) -> dict[str, bool]:
    """Which ``_PROBES`` features LLVM enables for ``cpu`` + ``features``."""
    tgt = llvm.Target.from_triple(host_triple())
    found = {}
    for name, (_, _, pattern) in _PROBES.items():
        tm = tgt.create_target_machine(cpu=cpu, features=features, opt=0)
        mod = llvm.parse_assembly(_probe_ir(name))
        found[name] = re.search(pattern, tm.emit_assembly(mod)) is not None
    return found


@functools.lru_cache(maxsize=None)
def _real_host() -> tuple[str, str]:
    initialize()
    try:
        feats = llvm.get_host_cpu_features().flatten()
    except RuntimeError:
        # some platforms cannot report features; the CPU name still implies them
        feats = ""
    return llvm.get_host_cpu_name(), feats


def _flags(features: str) -> dict[str, bool]:
    return {f[1:]: f[0] == "+" for f in features.split(",") if f[:1] in "+-" and len(f) > 1}


def _join(flags: dict[str, bool]) -> str:
    return ",".join(("+" if on else "-") + name for name, on in flags.items())


_EDIT = re.compile(r"^[+-][A-Za-z0-9][A-Za-z0-9._-]*$")


def _parse_edits(text: str, known: dict[str, bool]) -> list[tuple[str, bool]]:
    edits = []
    for item in (t.strip() for t in text.split(",")):
        if not item:
            continue
        if not _EDIT.match(item):
            raise TargetError(
                f"EMBER_CPU_FEATURES={text!r}: {item!r} is not an edit; write +feature or "
                f"-feature, comma separated (e.g. EMBER_CPU_FEATURES=-avx512f,-fma)")
        name, on = item[1:], item[0] == "+"
        if known and name not in known:
            near = difflib.get_close_matches(name, known, n=3)
            hint = f" (did you mean {', '.join(near)}?)" if near else ""
            raise TargetError(f"EMBER_CPU_FEATURES={text!r}: LLVM knows no CPU feature "
                              f"{name!r}{hint}")
        edits.append((name, on))
    return edits


@functools.lru_cache(maxsize=None)
def _resolved() -> tuple[str, str, str]:
    """(cpu, feature string, how it was chosen) after the environment edits."""
    real_cpu, real_feats = _real_host()
    want_cpu = os.environ.get("EMBER_CPU", "").strip()
    want_feats = os.environ.get("EMBER_CPU_FEATURES", "").strip()
    if not want_cpu and not want_feats:
        return real_cpu, real_feats, "host"
    host = _flags(real_feats)
    edits = _parse_edits(want_feats, host)
    lacking = [name for name, on in edits if on and not host.get(name, False)]
    if lacking:
        raise TargetError(
            f"EMBER_CPU_FEATURES={want_feats!r} enables {', '.join(lacking)}, which this CPU "
            f"({real_cpu}) cannot execute: the code would die with an illegal instruction. "
            f"Only features the host has can be enabled; disabling is always allowed "
            f"(e.g. EMBER_CPU_FEATURES=-avx512f)")
    cpu = want_cpu or real_cpu
    if want_cpu:
        if not _known_cpu(cpu):
            raise TargetError(
                f"EMBER_CPU={want_cpu!r} is not a CPU LLVM knows; use an LLVM CPU name such "
                f"as haswell, skylake-avx512, znver3 or x86-64 (this host is {real_cpu})")
        implied = _probe(cpu, "")
        beyond = [f for f, on in implied.items() if on and host and not host.get(f, False)]
        if beyond:
            raise TargetError(
                f"EMBER_CPU={want_cpu!r} implies {', '.join(beyond)}, which this CPU "
                f"({real_cpu}) cannot execute: the code would die with an illegal instruction. "
                f"Choose an older CPU (e.g. EMBER_CPU=haswell) or disable them with "
                f"EMBER_CPU_FEATURES={','.join('-' + f for f in beyond)}")
        # the named CPU's own features, minus everything this host lacks (so no
        # feature outside the probed ones can emit an instruction it cannot run)
        flags = {name: False for name, on in host.items() if not on}
    else:
        flags = dict(host)
    for name, on in edits:
        flags.pop(name, None)      # the edit goes last: LLVM applies toggles in order
        flags[name] = on
    text = _join(flags)
    # LLVM closes the edits under its implications (-avx also disables avx2,
    # fma and avx512f): record the probed outcome so host_has_feature agrees
    found = _probe(cpu, text)
    for name, on in found.items():
        flags.pop(name, None)
        flags[name] = on
    how = ", ".join(f"{k}={v}" for k, v in (("EMBER_CPU", want_cpu),
                                              ("EMBER_CPU_FEATURES", want_feats)) if v)
    return cpu, _join(flags), how


def host_cpu() -> str:
    """LLVM's name for the target CPU, e.g. ``"znver4"`` (``EMBER_CPU`` if set).

    Example::

        host_cpu()   # 'znver4'
    """
    return _resolved()[0]


def host_features() -> str:
    """The target's feature string, e.g. ``"+avx,+avx2,-amx-tile,..."``: the
    host's, or the ``EMBER_CPU``/``EMBER_CPU_FEATURES`` choice.

    For a named CPU the string lists only the features ember consults and
    those the host lacks (LLVM supplies the rest from the CPU name).

    Example::

        "+avx512f" in host_features().split(",")
    """
    return _resolved()[1]


def host_has_feature(name: str) -> bool:
    """True if the target enables ``name`` (e.g. ``"avx512f"``).

    Example::

        host_has_feature("fma")
    """
    return ("+" + name) in host_features().split(",")


def vector_bits() -> int:
    """The width of the target's vector registers that kernels use: 512 with
    AVX-512F (see ``function_attributes``), 256 with AVX, else 128 (SSE2).

    Example::

        vector_bits()   # 256 on an AVX2 machine
    """
    return 512 if host_has_feature("avx512f") else 256 if host_has_feature("avx") else 128


def describe() -> str:
    """One line naming the code-generation target and how it was chosen.

    Example::

        describe()   # 'haswell (EMBER_CPU=haswell; host znver3): avx2 fma, 256-bit vectors'
    """
    cpu, _, how = _resolved()
    real_cpu = _real_host()[0]
    origin = "host" if how == "host" else f"{how}; host {real_cpu}"
    isa = [f for f in ("avx512f", "avx2", "avx", "fma", "sse4.1") if host_has_feature(f)]
    width = vector_bits()
    if "avx512f" in isa or "avx2" in isa:
        isa = [f for f in isa if f not in ("avx", "sse4.1")]
    return f"{cpu} ({origin}): {' '.join(isa) or 'sse2'}, {width}-bit vectors"


@functools.lru_cache(maxsize=None)
def host_triple() -> str:
    """The process triple, e.g. ``"x86_64-unknown-linux-gnu"``.

    Example::

        host_triple().startswith("x86_64")
    """
    initialize()
    return llvm.get_process_triple()


def host_target_machine(opt: int = 3, *, jit: bool = True) -> llvm.TargetMachine:
    """A new TargetMachine for the host CPU with all of its features.

    A fresh object is returned on every call because an MCJIT engine takes
    ownership of the target machine it is given: never share one between two
    engines.

    Example::

        tm = host_target_machine(opt=3)
        print(tm.triple, tm.target_data)
    """
    initialize()
    tgt = llvm.Target.from_triple(host_triple())
    return tgt.create_target_machine(
        cpu=host_cpu(), features=host_features(), opt=opt, reloc="default",
        codemodel="jitdefault", jit=jit,
    )


@functools.lru_cache(maxsize=None)
def host_fingerprint() -> str:
    """A string identifying the code-generation target, for cache keys.

    Object code compiled for one fingerprint must never be loaded on a host
    with another: the features decide which instructions were emitted.

    Example::

        host_fingerprint()   # 'x86_64-unknown-linux-gnu|znver4|+64bit,+adx,...'
    """
    return "|".join((host_triple(), host_cpu(), host_features()))


def function_attributes(prefer_vector_width: int | None = None) -> str:
    """The body of the attribute group added to every defined function.

    ``prefer_vector_width`` defaults to 512 when the host has AVX-512F
    (LLVM otherwise prefers 256-bit vectors even on AVX-512 machines).

    Example::

        function_attributes()  # '"target-cpu"="znver4" "target-features"="..." ...'
    """
    parts = [f'"target-cpu"="{host_cpu()}"']
    feats = host_features()
    if feats:
        parts.append(f'"target-features"="{feats}"')
    if prefer_vector_width is None and host_has_feature("avx512f"):
        prefer_vector_width = 512
    if prefer_vector_width:
        parts.append(f'"prefer-vector-width"="{int(prefer_vector_width)}"')
    return " ".join(parts)


_GROUP_DEF = re.compile(r"^attributes\s+#(\d+)\s*=", re.M)
_GROUP_REF = re.compile(r"#\d+")


def add_target_attributes(ir_text: str, prefer_vector_width: int | None = None) -> str:
    """Attach the host attribute group to every ``define`` in ``ir_text``.

    llvmlite.ir cannot express string function attributes, so they are added
    to the textual IR: a new ``attributes #N = { ... }`` group is appended and
    ``#N`` is referenced from each function definition.  Definitions that
    already reference an attribute group are left untouched, which makes the
    call idempotent.

    Example::

        text = str(module)                     # llvmlite.ir.Module
        text = add_target_attributes(text)     # 'define void @"k"(...) #0\\n{'
    """
    used = [int(m.group(1)) for m in _GROUP_DEF.finditer(ir_text)]
    gid = max(used) + 1 if used else 0
    changed = False
    out = []
    for line in ir_text.split("\n"):
        if line.startswith("define ") and not _GROUP_REF.search(_strip_quoted(line)):
            changed = True
            stripped = line.rstrip()
            if stripped.endswith("{"):
                line = stripped[:-1].rstrip() + f" #{gid} {{"
            else:
                line = stripped + f" #{gid}"
        out.append(line)
    if not changed:
        return ir_text
    text = "\n".join(out)
    if not text.endswith("\n"):
        text += "\n"
    return text + f"attributes #{gid} = {{ {function_attributes(prefer_vector_width)} }}\n"


def _strip_quoted(line: str) -> str:
    # a '#' inside a quoted symbol name is not an attribute reference
    return re.sub(r'"[^"]*"', '""', line)
