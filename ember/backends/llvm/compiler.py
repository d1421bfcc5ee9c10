"""Compile LLVM IR text to native functions, with an in-process memo and an
on-disk cache of object code.

``compile_ir`` is the one entry point: IR text in, function addresses out.  A
cold compile (parse, verify, O3 with the new pass manager, MCJIT code
generation) costs tens of milliseconds; loading cached object code into a
fresh engine costs about one millisecond, so object code is cached on disk
keyed by everything that can change it.

Cache layout: one file per module, ``<dir>/<key>.obj``.  The key is the
SHA-256 of the IR text, the host fingerprint, the llvmlite, LLVM and ember
versions, the optimisation level and a format version.  Each file starts with
a header (magic, format version, key, payload length, SHA-256 of payload);
entries that fail any check are deleted and recompiled, never trusted.  Files
are written to a temporary name in the same directory and moved into place
with ``os.replace``, so readers see either nothing or a complete entry.

Every symbol the object code needs from outside (declared externals, and the
runtime helpers code generation calls where the target lacks an instruction,
such as ``__extendhfsf2`` without F16C, or ``__truncdfhf2`` for a float64 ->
float16 conversion, which no x86 instruction does) is resolved before the code can run;
one that nothing provides is a ``RuntimeError``, never a call to address 0.

Environment:
    ``EMBER_CACHE=0``      disable the disk cache (the in-process memo stays).
    ``EMBER_CACHE_DIR``    cache directory (default ``~/.cache/ember``; object
                           files go in its ``llvm`` subdirectory).

Example::

    from ember.backends.llvm import compile_ir
    cm = compile_ir(ir_text, ["kernel"])
    addr = cm["kernel"]          # integer function address
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import hashlib
import os
import re
import struct
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from typing import Callable

import llvmlite
import llvmlite.binding as llvm

from . import target

__all__ = [
    "CompiledModule",
    "compile_ir",
    "compile_lazy",
    "inspect_ir",
    "cache_key",
    "cache_dir",
    "cache_enabled",
    "cache_stats",
    "clear_memory_cache",
    "register_symbol",
    "register_symbol_provider",
    "FORMAT_VERSION",
]

FORMAT_VERSION = 2
_MAGIC = b"EMBEROBJ"
# magic, format version, key digest, payload length, payload digest
_HEADER = struct.Struct("<8sI32sQ32s")


@dataclass
class CompiledModule:
    """Native code for one IR module, kept alive as long as this object is.

    ``addresses`` maps each requested function name to its address; other
    functions of the module can be looked up with ``address(name)``.
    ``source`` says where the code came from: ``"compiled"`` or ``"disk"``.
    ``optimized_ir`` is the optimised IR text when the module was compiled in
    this process (``None`` for disk hits).

    Example::

        cm = compile_ir(text, ["f"])
        cm["f"] == cm.addresses["f"] == cm.address("f")
    """

    key: str
    addresses: dict[str, int]
    source: str
    engine: object = field(repr=False)
    optimized_ir: str | None = field(default=None, repr=False)

    def address(self, name: str) -> int:
        """Address of function ``name`` in this module (KeyError if absent).

        Example::

            KernelLauncher(cm.address("k"), 2)
        """
        addr = self.addresses.get(name)
        if addr is None:
            addr = self.engine.get_function_address(name)
            if not addr:
                raise KeyError(f"function {name!r} not found in compiled module")
            self.addresses[name] = addr
        return addr

    def __getitem__(self, name: str) -> int:
        return self.address(name)


# ---------------------------------------------------------------------------
# configuration


def cache_enabled() -> bool:
    """False when the environment sets ``EMBER_CACHE=0`` (or off/false/no).

    Example::

        os.environ["EMBER_CACHE"] = "0"; cache_enabled()   # False
    """
    from ... import config
    return config.cache_enabled()


def cache_dir() -> str:
    """Directory holding cached object files (read from the environment on
    every call so tests and users can redirect it).

    Example::

        os.environ["EMBER_CACHE_DIR"] = "/tmp/ec"; cache_dir()  # '/tmp/ec/llvm'
    """
    base = os.environ.get("EMBER_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "ember")
    return os.path.join(base, "llvm")


def _ember_version() -> str:
    # read lazily: importing ember from here at import time would be circular
    mod = sys.modules.get("ember")
    return str(getattr(mod, "__version__", "unknown"))


def cache_key(ir_text: str, opt: int = 3) -> str:
    """Hex SHA-256 naming the object code for ``ir_text`` on this host.

    Example::

        cache_key("define void @f() { ret void }")  # 'a3f0...'
    """
    h = hashlib.sha256()
    for part in (
        f"ember-llvm-object/{FORMAT_VERSION}",
        target.host_fingerprint(),
        f"llvmlite {llvmlite.__version__}",
        "llvm " + ".".join(map(str, llvm.llvm_version_info)),
        f"ember {_ember_version()}",
        f"opt {opt}",
    ):
        h.update(part.encode())
        h.update(b"\0")
    h.update(ir_text.encode())
    return h.hexdigest()


# ---------------------------------------------------------------------------
# external symbols

_symbol_providers: list[Callable[[str], int | None]] = []
_DECLARE = re.compile(r'^declare\b[^@]*@("(?:[^"\\]|\\.)*"|[-\w.$]+)\s*\(', re.M)


def register_symbol(name: str, address: int) -> None:
    """Make ``name`` resolve to ``address`` in all JIT-compiled code.

    Generated code that calls a host function (e.g. BLAS) declares it by
    name; the address is bound at load time, so the object code stays free of
    absolute addresses and can be cached across processes.

    Example::

        register_symbol("ember_sgemm", sgemm_address)
    """
    llvm.add_symbol(name, int(address))


def register_symbol_provider(provider: Callable[[str], int | None]) -> None:
    """Register ``provider(name) -> address or None``, consulted for declared
    functions that are not yet resolvable when a module is loaded.

    Example::

        register_symbol_provider(lambda name: table.get(name))
    """
    _symbol_providers.append(provider)


def _resolve_externals(ir_text: str) -> None:
    # MCJIT aborts the whole process on an unresolved symbol; check first and
    # raise a Python error instead.
    names = []
    for m in _DECLARE.finditer(ir_text):
        name = m.group(1)
        if name.startswith('"'):
            name = name[1:-1]
        if not name.startswith("llvm."):
            names.append(name)
    _resolve_names(names)


def _resolve_names(names) -> None:
    for name in names:
        if llvm.address_of_symbol(name):
            continue
        for provider in _symbol_providers:
            addr = provider(name)
            if addr:
                llvm.add_symbol(name, int(addr))
                break
        else:
            raise RuntimeError(
                f"external function {name!r} cannot be resolved for the target "
                f"{target.describe()}; register it with register_symbol() (a helper that "
                f"LLVM's code generation calls may also come from a library loaded with "
                f"llvmlite.binding.load_library_permanently)")


def _undefined_symbols(obj: bytes) -> list[str]:
    """The names an ELF64 little-endian relocatable object needs from outside:
    declared externals and the runtime helpers code generation called (half
    precision conversions without F16C, libm for intrinsics without an
    instruction).  Empty for other object formats, which are not checked."""
    if obj[:6] != b"\x7fELF\x02\x01":
        return []
    shoff, = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    names = []
    for i in range(shnum):
        sh_type, = struct.unpack_from("<I", obj, shoff + i * shentsize + 4)
        if sh_type != 2:                                   # SHT_SYMTAB
            continue
        off, size, link = struct.unpack_from("<QQI", obj, shoff + i * shentsize + 0x18)
        str_off, = struct.unpack_from("<Q", obj, shoff + link * shentsize + 0x18)
        for st in range(off, off + size, 24):
            st_name, _, _, st_shndx = struct.unpack_from("<IBBH", obj, st)
            if st_shndx == 0 and st_name:                  # SHN_UNDEF
                end = obj.index(b"\0", str_off + st_name)
                names.append(obj[str_off + st_name:end].decode())
    return names


def _unresolved(obj: bytes) -> list[str]:
    return [n for n in _undefined_symbols(obj) if not llvm.address_of_symbol(n)]


@functools.lru_cache(maxsize=None)
def _compiler_runtime():
    # GCC's runtime library holds the helpers LLVM calls where the target has
    # no instruction (e.g. __extendhfsf2 without F16C: EMBER_CPU=x86-64)
    name = ctypes.util.find_library("gcc_s")
    return ctypes.CDLL(name) if name else None


def _compiler_runtime_symbol(name: str) -> int | None:
    lib = _compiler_runtime() if name.startswith("__") else None
    try:
        return ctypes.cast(getattr(lib, name), ctypes.c_void_p).value if lib else None
    except AttributeError:
        return None


_symbol_providers.append(_compiler_runtime_symbol)


# ---------------------------------------------------------------------------
# statistics and the in-process memo

_lock = threading.RLock()
_memo: dict[str, CompiledModule] = {}
# (input text, opt, target_attributes) -> module: skips attribute insertion
# and hashing on repeated calls with the same text (~1 us instead of ~70 us)
_text_memo: dict[tuple, CompiledModule] = {}
_stats = {"memo_hits": 0, "disk_hits": 0, "compiles": 0, "corrupt": 0, "stores": 0}


def cache_stats() -> dict[str, int]:
    """Counters: memo_hits, disk_hits, compiles, corrupt (entries rejected),
    stores (entries written).

    Example::

        before = cache_stats()["compiles"]
    """
    return dict(_stats)


def clear_memory_cache() -> None:
    """Forget the in-process memo (compiled code stays valid while referenced).

    Example::

        clear_memory_cache(); compile_ir(text, ["k"]).source   # 'disk'
    """
    with _lock:
        _memo.clear()
        _text_memo.clear()


# ---------------------------------------------------------------------------
# disk cache


def _entry_path(key: str) -> str:
    return os.path.join(cache_dir(), key + ".obj")


def _load_entry(key: str) -> bytes | None:
    path = _entry_path(key)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    payload = _check_entry(data, key)
    if payload is None:
        _stats["corrupt"] += 1
        try:
            os.unlink(path)
        except OSError:
            pass
    return payload


def _check_entry(data: bytes, key: str) -> bytes | None:
    if len(data) < _HEADER.size:
        return None
    magic, version, kdig, length, pdig = _HEADER.unpack_from(data)
    payload = data[_HEADER.size:]
    if (magic != _MAGIC or version != FORMAT_VERSION or kdig != bytes.fromhex(key)
            or length != len(payload) or hashlib.sha256(payload).digest() != pdig):
        return None
    return payload


def _store_entry(key: str, payload: bytes) -> None:
    directory = cache_dir()
    try:
        os.makedirs(directory, exist_ok=True)
        header = _HEADER.pack(_MAGIC, FORMAT_VERSION, bytes.fromhex(key), len(payload),
                              hashlib.sha256(payload).digest())
        fd, tmp = tempfile.mkstemp(prefix=key[:16] + ".", suffix=".tmp", dir=directory)
    except OSError:
        return  # unwritable cache: run uncached rather than fail
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(header)
            f.write(payload)
        os.replace(tmp, _entry_path(key))
        _stats["stores"] += 1
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


# ---------------------------------------------------------------------------
# compilation


def _optimize(module: llvm.ModuleRef, tm: llvm.TargetMachine, opt: int) -> None:
    # No loop unrolling: the vectoriser's interleaving already unrolls the loops
    # that matter; the unroller on top (full unrolling of short constant loops,
    # runtime unrolling of long ones) doubled compile time and code size and made
    # no measured kernel faster (softmax, sums, elementwise chains, the MLP step).
    pto = llvm.create_pipeline_tuning_options(speed_level=opt)
    pto.loop_vectorization = opt >= 2
    pto.slp_vectorization = opt >= 2
    pto.loop_interleaving = opt >= 2
    pto.loop_unrolling = False
    pb = llvm.create_pass_builder(tm, pto)
    pm = pb.getModulePassManager()
    pm.run(module, pb)


def _parse(ir_text: str, tm: llvm.TargetMachine) -> llvm.ModuleRef:
    mod = llvm.parse_assembly(ir_text)
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    mod.verify()
    return mod


def _engine_from_module(mod: llvm.ModuleRef, opt: int):
    """MCJIT engine for an optimised module; returns (engine, object bytes)."""
    objects: list[bytes] = []
    engine = llvm.create_mcjit_compiler(mod, target.host_target_machine(opt))
    # the object cache hook hands us the object code MCJIT just produced, so
    # storing it on disk needs no second code-generation pass
    engine.set_object_cache(lambda _m, buf: objects.append(bytes(buf)), lambda _m: None)
    engine.finalize_object()
    obj = objects[0] if objects else None
    if obj is not None and _unresolved(obj):
        # code generation called a helper nothing had bound yet (MCJIT then
        # relocates the call to address 0): bind it, and relink the object
        engine = _engine_from_object(obj, opt)
    return engine, obj


def _engine_from_object(obj: bytes, opt: int):
    _resolve_names(_unresolved(obj))
    tm = target.host_target_machine(opt)
    empty = llvm.parse_assembly("")
    empty.triple = tm.triple
    empty.data_layout = str(tm.target_data)
    engine = llvm.create_mcjit_compiler(empty, tm)
    engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
    engine.finalize_object()
    return engine


def _addresses(engine, names) -> dict[str, int]:
    out = {}
    for n in names:
        addr = engine.get_function_address(n)
        if not addr:
            raise KeyError(f"function {n!r} not found in compiled module")
        out[n] = addr
    return out


def compile_ir(ir_text: str, names: list[str] | tuple[str, ...] = (), *, opt: int = 3,
               target_attributes: bool = True) -> CompiledModule:
    """Compile ``ir_text`` for the host and return the addresses of ``names``.

    The text is given the host attribute group (``add_target_attributes``)
    unless ``target_attributes=False``, parsed, verified, optimised with the
    new pass manager at ``opt`` (loop and SLP vectorisation on for opt >= 2)
    and code-generated by MCJIT.  Results are memoised per process and cached
    on disk (see the module docstring).  Raises ``RuntimeError`` for IR that
    does not parse or verify, ``KeyError`` for a name that is not defined.

    Example::

        import llvmlite.ir as ir
        m = ir.Module(); f = ir.Function(m, ir.FunctionType(ir.IntType(64), []), "one")
        ir.IRBuilder(f.append_basic_block()).ret(ir.Constant(ir.IntType(64), 1))
        cm = compile_ir(str(m), ["one"])
        import ctypes; ctypes.CFUNCTYPE(ctypes.c_int64)(cm["one"])()   # 1
    """
    cm = _text_memo.get((ir_text, opt, target_attributes))
    if cm is not None:
        _stats["memo_hits"] += 1
        for n in names:
            cm.address(n)
        return cm
    target.initialize()
    text = target.add_target_attributes(ir_text) if target_attributes else ir_text
    cm = _compile_keyed(cache_key(text, opt), lambda: text, names, opt, None)
    _text_memo[(ir_text, opt, target_attributes)] = cm
    return cm


def compile_lazy(source: str, render: Callable[[], str], names, *, opt: int = 3,
                 externals=()) -> CompiledModule:
    """Like ``compile_ir``, but keyed by ``source``, a text that determines the IR
    completely (e.g. a fingerprint of a scheduled program and of the code
    generator), so that a memo or disk-cache hit never builds the IR.  ``render()``
    returns the IR text on a miss.  ``externals`` names the host symbols the code
    may call (resolved before cached code is loaded).

    Example::

        cm = compile_lazy("my-kernels v1", lambda: ir_text, ["k"])
    """
    target.initialize()
    key = cache_key("ember-lazy-source\0" + source, opt)
    cm = _memo.get(key)
    if cm is not None:
        _stats["memo_hits"] += 1
        for n in names:
            cm.address(n)
        return cm
    return _compile_keyed(key, lambda: target.add_target_attributes(render()), names, opt, externals)


def _compile_keyed(key, get_text, names, opt, externals) -> CompiledModule:
    """The memo, then the disk cache, then a compile of ``get_text()``, for ``key``."""
    cm = _memo.get(key)
    if cm is not None:
        _stats["memo_hits"] += 1
        for n in names:
            cm.address(n)
        return cm
    with _lock:
        cm = _memo.get(key)
        if cm is not None:
            _stats["memo_hits"] += 1
            for n in names:
                cm.address(n)
            return cm
        text = None
        if externals is None:
            text = get_text()
            _resolve_externals(text)
        else:
            _resolve_names(externals)
        use_disk = cache_enabled()
        if use_disk:
            obj = _load_entry(key)
            if obj is not None:
                try:
                    engine = _engine_from_object(obj, opt)
                    cm = CompiledModule(key, _addresses(engine, names), "disk", engine)
                    _stats["disk_hits"] += 1
                except Exception:
                    # a payload that passed the checksum but will not load
                    # (e.g. written by a buggy version): drop it and rebuild
                    _stats["corrupt"] += 1
                    try:
                        os.unlink(_entry_path(key))
                    except OSError:
                        pass
                    cm = None
        if cm is None:
            if text is None:
                text = get_text()
                _resolve_externals(text)
            tm = target.host_target_machine(opt)
            mod = _parse(text, tm)
            _optimize(mod, tm, opt)
            optimized = str(mod)
            engine, obj = _engine_from_module(mod, opt)
            cm = CompiledModule(key, _addresses(engine, names), "compiled", engine, optimized)
            _stats["compiles"] += 1
            if use_disk and obj is not None:
                _store_entry(key, obj)
        _memo[key] = cm
        return cm


def inspect_ir(ir_text: str, *, opt: int = 3, target_attributes: bool = True) -> tuple[str, str]:
    """Optimise ``ir_text`` as ``compile_ir`` would and return
    ``(optimized_ir, assembly)`` for inspection; nothing is cached or run.

    Example::

        opt_ir, asm = inspect_ir(text)
        assert "<16 x float>" in opt_ir or "zmm" in asm
    """
    target.initialize()
    text = target.add_target_attributes(ir_text) if target_attributes else ir_text
    with _lock:
        tm = target.host_target_machine(opt, jit=False)
        mod = _parse(text, tm)
        _optimize(mod, tm, opt)
        return str(mod), tm.emit_assembly(mod)
