"""The host CPU as an LLVM target.

Everything the LLVM backend needs to know about the machine it runs on lives
here: one-time initialisation of LLVM's native target, target machines built
from the host CPU name and feature string, a fingerprint of the host for cache
keys, and the function-attribute text that makes the optimiser use the full
vector width of the host.

Example::

    from ember.backends.llvm import target
    tm = target.host_target_machine()          # a fresh TargetMachine
    key_part = target.host_fingerprint()      # "x86_64-...|znver4|+avx,..."
    ir_text = target.add_target_attributes(ir_text)
"""

from __future__ import annotations

import functools
import re
import threading

import llvmlite.binding as llvm

__all__ = [
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


@functools.lru_cache(maxsize=None)
def host_cpu() -> str:
    """LLVM's name for the host CPU, e.g. ``"znver4"``.

    Example::

        host_cpu()   # 'znver4'
    """
    initialize()
    return llvm.get_host_cpu_name()


@functools.lru_cache(maxsize=None)
def host_features() -> str:
    """The host CPU's feature string, e.g. ``"+avx,+avx2,-amx-tile,..."``.

    Example::

        "+avx512f" in host_features().split(",")
    """
    initialize()
    try:
        return llvm.get_host_cpu_features().flatten()
    except RuntimeError:
        # some platforms cannot report features; the CPU name still implies them
        return ""


def host_has_feature(name: str) -> bool:
    """True if the host feature string enables ``name`` (e.g. ``"avx512f"``).

    Example::

        host_has_feature("fma")
    """
    return ("+" + name) in host_features().split(",")


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
