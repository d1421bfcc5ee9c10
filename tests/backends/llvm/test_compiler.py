"""compile_ir: correctness, the in-process memo and the on-disk object cache."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import textwrap
import uuid

import llvmlite.ir as ir
import numpy as np
import pytest

from ember.backends.llvm import compiler, target
from ember.backends.llvm.compiler import cache_stats, clear_memory_cache, compile_ir

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _const_fn_ir(value: int, name: str = "f", tag: str = "") -> str:
    """IR for `i64 name()` returning value; `tag` makes the text unique."""
    m = ir.Module()
    f = ir.Function(m, ir.FunctionType(ir.IntType(64), []), name=name)
    ir.IRBuilder(f.append_basic_block()).ret(ir.Constant(ir.IntType(64), value))
    return f"; {tag}\n" + str(m)


def _call(addr: int) -> int:
    return ctypes.CFUNCTYPE(ctypes.c_int64)(addr)()


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("EMBER_CACHE", raising=False)
    return tmp_path / "llvm"


def test_target_attributes_are_added_once():
    m = ir.Module()
    for name in ("f", "g"):
        f = ir.Function(m, ir.FunctionType(ir.VoidType(), []), name=name)
        ir.IRBuilder(f.append_basic_block()).ret_void()
    text = target.add_target_attributes(str(m))
    assert text.count("attributes #0 =") == 1
    assert 'define void @"f"() #0' in text and 'define void @"g"() #0' in text
    assert '"target-cpu"="%s"' % target.host_cpu() in text
    if target.host_has_feature("avx512f"):
        assert '"prefer-vector-width"="512"' in text
    assert target.add_target_attributes(text) == text
    # a module that already uses group #0 gets the next number
    hand = ('define void @"h"() #0 {\n  ret void\n}\n'
            'define void @"k"() {\n  ret void\n}\n'
            'attributes #0 = { nounwind }\n')
    out = target.add_target_attributes(hand)
    assert 'define void @"h"() #0 {' in out and 'define void @"k"() #1 {' in out
    assert "attributes #1 = {" in out
    compile_ir(out, ["h", "k"], target_attributes=False)


def test_fingerprint_and_target_machine():
    fp = target.host_fingerprint()
    assert target.host_triple() in fp and target.host_cpu() in fp
    tm1, tm2 = target.host_target_machine(), target.host_target_machine()
    assert tm1 is not tm2


def test_compile_and_call(cache_dir):
    cm = compile_ir(_const_fn_ir(42, tag=uuid.uuid4().hex), ["f"])
    assert _call(cm["f"]) == 42
    assert cm.source == "compiled" and cm.optimized_ir and "ret i64 42" in cm.optimized_ir
    with pytest.raises(KeyError):
        cm.address("missing")


def test_memo_returns_same_module(cache_dir):
    text = _const_fn_ir(7, tag=uuid.uuid4().hex)
    a = compile_ir(text, ["f"])
    before = cache_stats()["memo_hits"]
    b = compile_ir(text, ["f"])
    assert a is b and cache_stats()["memo_hits"] == before + 1


def test_invalid_ir_raises():
    with pytest.raises(RuntimeError):
        compile_ir("define i64 @f() { ret i32 0 }", ["f"])


def test_unresolved_external_raises_instead_of_aborting():
    text = 'declare void @"ember_no_such_symbol_xyz"()\n' \
           'define void @"g"() {\n  call void @"ember_no_such_symbol_xyz"()\n  ret void\n}\n'
    with pytest.raises(RuntimeError, match="cannot be resolved"):
        compile_ir(text, ["g"])


def test_disk_hit_after_memo_cleared(cache_dir):
    text = _const_fn_ir(5, tag=uuid.uuid4().hex)
    compile_ir(text, ["f"])
    files = list(cache_dir.glob("*.obj"))
    assert len(files) == 1 and not list(cache_dir.glob("*.tmp"))
    clear_memory_cache()
    hits = cache_stats()["disk_hits"]
    cm = compile_ir(text, ["f"])
    assert cm.source == "disk" and cache_stats()["disk_hits"] == hits + 1
    assert _call(cm["f"]) == 5


def _entry(cache_dir):
    (path,) = cache_dir.glob("*.obj")
    return path


@pytest.mark.parametrize("damage", ["truncate", "garble_payload", "garble_header", "empty", "foreign"])
def test_corrupt_entry_is_replaced(cache_dir, damage):
    tag = uuid.uuid4().hex
    text = _const_fn_ir(9, tag=tag)
    compile_ir(text, ["f"])
    path = _entry(cache_dir)
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "garble_payload":
        b = bytearray(data)
        b[-40] ^= 0xFF
        path.write_bytes(bytes(b))
    elif damage == "garble_header":
        path.write_bytes(b"NOTEMBER" + data[8:])
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "foreign":
        # a valid entry for different IR stored under this key's name
        clear_memory_cache()
        other = _const_fn_ir(1234, tag=tag + "x")
        compile_ir(other, ["f"])
        other_path = [p for p in cache_dir.glob("*.obj") if p != path][0]
        os.replace(other_path, path)
    clear_memory_cache()
    corrupt = cache_stats()["corrupt"]
    cm = compile_ir(text, ["f"])
    assert cm.source == "compiled"
    assert cache_stats()["corrupt"] == corrupt + 1
    assert _call(cm["f"]) == 9
    # the bad entry was replaced by a good one
    clear_memory_cache()
    assert compile_ir(text, ["f"]).source == "disk"


def test_cache_disabled(cache_dir, monkeypatch):
    monkeypatch.setenv("EMBER_CACHE", "0")
    assert not compiler.cache_enabled()
    cm = compile_ir(_const_fn_ir(3, tag=uuid.uuid4().hex), ["f"])
    assert _call(cm["f"]) == 3
    assert not cache_dir.exists() or not list(cache_dir.iterdir())


def test_unwritable_cache_dir_still_compiles(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("EMBER_CACHE_DIR", str(blocker))
    cm = compile_ir(_const_fn_ir(11, tag=uuid.uuid4().hex), ["f"])
    assert _call(cm["f"]) == 11


_WRITER = textwrap.dedent("""
    import sys
    sys.path.insert(0, {root!r})
    from ember.backends.llvm import compiler
    key, payload = sys.argv[1], sys.argv[2].encode() * 20000
    for _ in range(400):
        compiler._store_entry(key, payload)
""")

_READER = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, {root!r})
    from ember.backends.llvm import compiler
    key, stop = sys.argv[1], sys.argv[2]
    print("ready", flush=True)
    seen = bad = 0
    while not (os.path.exists(stop) and seen):
        try:
            with open(compiler._entry_path(key), "rb") as f:
                data = f.read()
        except OSError:
            continue
        seen += 1
        if compiler._check_entry(data, key) is None:
            bad += 1
    print(seen, bad, flush=True)
""")


def test_concurrent_writers_never_tear(cache_dir, tmp_path):
    """Two processes rewrite one entry with different payloads while a third
    reads it: every read must be a complete, valid entry."""
    key = compiler.cache_key(_const_fn_ir(0, tag=uuid.uuid4().hex))
    env = dict(os.environ)
    stop = tmp_path / "stop"
    reader = subprocess.Popen([sys.executable, "-c", _READER.format(root=ROOT), key, str(stop)],
                              env=env, stdout=subprocess.PIPE, text=True)
    assert reader.stdout.readline().strip() == "ready"
    writers = [subprocess.Popen([sys.executable, "-c", _WRITER.format(root=ROOT), key, tag], env=env)
               for tag in ("aaaa", "bbbb")]
    for w in writers:
        assert w.wait(timeout=120) == 0
    stop.write_text("")
    seen, bad = map(int, reader.communicate(timeout=120)[0].split())
    print(f"reader saw {seen} complete entries while two writers raced")
    assert bad == 0 and seen > 0
    assert not list(cache_dir.glob("*.tmp"))
    with open(compiler._entry_path(key), "rb") as f:
        assert compiler._check_entry(f.read(), key) is not None


_COMPILER_PROC = textwrap.dedent("""
    import sys, ctypes
    sys.path.insert(0, {root!r})
    from ember.backends.llvm import compile_ir
    text = sys.argv[1]
    cm = compile_ir(text, ["f"])
    print(cm.source, ctypes.CFUNCTYPE(ctypes.c_int64)(cm["f"])())
""")


def test_two_processes_compile_same_module(cache_dir):
    text = _const_fn_ir(77, tag=uuid.uuid4().hex)
    procs = [subprocess.Popen([sys.executable, "-c", _COMPILER_PROC.format(root=ROOT), text],
                              stdout=subprocess.PIPE, text=True, env=dict(os.environ))
             for _ in range(2)]
    outs = [p.communicate(timeout=60)[0].split() for p in procs]
    assert all(o[1] == "77" for o in outs)
    # a third process now loads the object from disk
    out = subprocess.run([sys.executable, "-c", _COMPILER_PROC.format(root=ROOT), text],
                         capture_output=True, text=True, env=dict(os.environ), timeout=60).stdout.split()
    assert out == ["disk", "77"]
    assert len(list(cache_dir.glob("*.obj"))) == 1


def test_cache_key_depends_on_everything(monkeypatch):
    base = compiler.cache_key("x")
    assert compiler.cache_key("y") != base
    assert compiler.cache_key("x", opt=2) != base
    monkeypatch.setattr(compiler, "FORMAT_VERSION", compiler.FORMAT_VERSION + 1)
    assert compiler.cache_key("x") != base


def test_vector_kernel_through_compile(cache_dir):
    """A kernel compiled at O3 produces the same numbers as numpy."""
    from ember.backends.llvm import KernelLauncher, loops

    m = ir.Module()
    f64 = ir.DoubleType()
    loops.elementwise_kernel(m, "axpb", 1, f64,
                             lambda b, xs: [b.fadd(b.fmul(xs[0], ir.Constant(f64, 3.0)), ir.Constant(f64, 1.0))])
    cm = compile_ir(str(m), ["axpb"])
    x = np.linspace(-5, 5, 1001)
    y = np.empty_like(x)
    KernelLauncher(cm["axpb"], 2).prepare([x, y])(0, x.size)
    np.testing.assert_array_equal(y, x * 3.0 + 1.0)
