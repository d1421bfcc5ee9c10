"""jit traces and compiles with the cyclic GC paused (transforms/gc_pause.py): the
collector is back on afterwards, also when tracing raises, and stays off when the
user had turned it off."""
import gc
import threading

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember.transforms.gc_pause import collector_paused


def test_paused_during_trace_and_on_after():
    seen = []

    def f(x):
        seen.append(gc.isenabled())
        return enp.sin(x) * 2.0
    assert gc.isenabled()
    np.testing.assert_allclose(np.asarray(ember.jit(f)(np.ones(8))), np.sin(np.ones(8)) * 2.0)
    assert seen == [False] and gc.isenabled()


def test_on_again_after_a_failing_trace():
    def f(x):
        raise ValueError("boom")
    with pytest.raises(ValueError, match="boom"):
        ember.jit(f)(np.ones(3))
    assert gc.isenabled()


def test_user_setting_kept():
    gc.disable()
    try:
        ember.jit(lambda x: x + 1.0)(np.ones(3, np.float32))
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_nested_and_concurrent_pauses():
    inside = threading.Event()
    release = threading.Event()

    def other():
        with collector_paused():
            inside.set()
            release.wait(5)
    t = threading.Thread(target=other)
    t.start()
    inside.wait(5)
    with collector_paused():
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert not gc.isenabled()          # the other thread's pause is still on
    release.set()
    t.join()
    assert gc.isenabled()
