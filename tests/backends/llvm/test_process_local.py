"""ProcessLocal, the fork/atexit handling both worker pools share: one object per
process, rebuilt after a shutdown and in a forked child (whose copy's threads
do not exist), and the native pool built through it survives a fork."""
import os
import sys

import pytest

from ember.backends.llvm import pool as native_pool, runtime
from ember.backends.llvm.process_local import ProcessLocal


class _Thing:
    built = 0

    def __init__(self):
        self.pid, self._closed = os.getpid(), False
        _Thing.built += 1

    def shutdown(self, timeout=1.0):
        self._closed = True


def test_one_object_until_shutdown():
    holder = ProcessLocal(_Thing)
    before = _Thing.built
    a = holder.get()
    assert holder.get() is a and _Thing.built == before + 1
    a.shutdown()
    b = holder.get()
    assert b is not a and not b._closed and _Thing.built == before + 2


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform != "linux", reason="needs fork")
def test_a_forked_child_builds_its_own():
    holder = ProcessLocal(_Thing)
    parent = holder.get()
    parent_native = native_pool.get_native_pool()
    parent_py = runtime.get_pool()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:   # child: report and leave without running the parent's atexit handlers
        try:
            child = holder.get()
            nat = native_pool.get_native_pool()
            py = runtime.get_pool()
            ok = (child is not parent and child.pid == os.getpid() and nat is not parent_native
                  and nat.pid == os.getpid() and py is not parent_py and py.pid == os.getpid())
            os.write(w, b"1" if ok else b"0")
        finally:
            os._exit(0)
    os.close(w)
    got = os.read(r, 1)
    os.waitpid(pid, 0)
    assert got == b"1"
    assert holder.get() is parent and native_pool.get_native_pool() is parent_native
