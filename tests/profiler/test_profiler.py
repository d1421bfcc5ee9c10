"""ember.profiler.trace: Chrome trace of jitted calls, program steps and compiles; summary."""
import io
import json

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember.backends.kernels.cost import step_name
from ember.profiler.steps import Profiled
from ember.transforms.jit import executable_for


def model(x, w):
    return enp.tanh(x @ w).sum() + enp.sort(x[0]).sum()


def _events(d):
    data = json.loads((d / "trace.json").read_text())
    for e in data["traceEvents"]:
        assert {"name", "ph", "ts", "dur", "pid", "tid", "args"} <= set(e) and e["ph"] == "X"
    return data["traceEvents"]


def test_trace_records_calls_steps_and_compiles(tmp_path):
    f = ember.jit(model)
    x, w = enp.ones((16, 8)), enp.ones((8, 4))
    with ember.profiler.trace(tmp_path):
        for _ in range(3):
            f(x, w)
        f(enp.ones((4, 8)), w)   # a new shape: traced and compiled again
    ev = _events(tmp_path)
    calls = [e for e in ev if e["cat"] == "call"]
    assert [e["name"] for e in calls] == ["jit model"] * 4
    traces = [e for e in ev if e["cat"] == "trace"]
    assert [e["args"]["cause"] for e in traces][0] == "first call"
    assert "argument leaf 0: f32[16,8] -> f32[4,8]" in traces[1]["args"]["cause"]
    compiles = [e for e in ev if e["cat"] == "compile"]
    assert [e["name"] for e in compiles] == ["compile model"] * 2
    assert compiles[1]["args"]["cause"] == traces[1]["args"]["cause"]
    # every step of the program, in order, once per call, inside its call
    low = f.lower(x, w)
    want = [step_name(s) for s in low.kernels().steps]
    assert "library sort" in want
    costs = {c["name"]: c for c in low.cost_analysis()["kernels"]}
    steps = [e for e in ev if e["cat"] == "step"]
    first = [e for e in steps if calls[0]["ts"] <= e["ts"] <= calls[0]["ts"] + calls[0]["dur"]]
    assert [e["name"] for e in first] == want
    assert sum(e["dur"] for e in first) <= calls[0]["dur"]
    for e in first:
        assert e["args"]["flops"] == costs[e["name"]]["flops"]
        assert e["args"]["bytes"] == costs[e["name"]]["bytes"]
        assert e["args"]["program"] == "model"


def test_summary_is_sorted_by_total_time(tmp_path):
    f = ember.jit(lambda v: enp.exp(v).sum())
    with ember.profiler.trace(tmp_path):
        for _ in range(5):
            f(enp.ones(1000))
    out = io.StringIO()
    text = ember.profiler.summary(file=out)
    assert out.getvalue().strip() == text.strip()
    rows = text.splitlines()[2:]
    totals = [float(r[58:68]) for r in rows]
    assert totals == sorted(totals, reverse=True)
    assert any(r.startswith("jit <lambda>") and " 5 " in r for r in rows)


def test_nothing_recorded_or_wrapped_when_off(tmp_path):
    f = ember.jit(lambda v: v * 2.0)
    x = enp.ones(3)
    with ember.profiler.trace(tmp_path) as events:
        f(x)
    n = len(events)
    for _ in range(3):
        f(x)
    assert len(events) == n
    g = f.lower(x).closed
    assert not isinstance(executable_for(g, "cpu"), Profiled)
    # jit's fastest path holds the plain executable again
    assert all(not isinstance(hit[0], Profiled) for hit in f._fast.values())


def test_traces_do_not_nest(tmp_path):
    with ember.profiler.trace(tmp_path / "a"):
        with pytest.raises(RuntimeError, match="already active"):
            with ember.profiler.trace(tmp_path / "b"):
                pass


def test_reference_backend_and_debug_nans_together(tmp_path):
    ember.config.update("debug_nans", True)
    try:
        with ember.profiler.trace(tmp_path):
            r = ember.jit(lambda v: v + 1.0, backend="reference")(enp.ones(2))
            n = ember.jit(lambda v: v - 1.0)(enp.ones(2))
    finally:
        ember.config.update("debug_nans", False)
    np.testing.assert_array_equal(np.asarray(r), [2.0, 2.0])
    np.testing.assert_array_equal(np.asarray(n), [0.0, 0.0])
    ev = _events(tmp_path)
    assert [e["args"]["backend"] for e in ev if e["cat"] == "call"] == ["reference", "cpu"]


def test_dataloader_waits(tmp_path):
    from ember.data import DataLoader, TensorDataset
    data = TensorDataset(np.arange(20, dtype=np.float32).reshape(10, 2))
    loader = DataLoader(data, batch_size=4)
    before = [np.asarray(b[0]).tolist() for b in loader]
    with ember.profiler.trace(tmp_path):
        inside = [np.asarray(b[0]).tolist() for b in loader]
        assert len(iter(loader)) == 3
    assert inside == before
    waits = [e for e in _events(tmp_path) if e["cat"] == "data"]
    assert [e["name"] for e in waits] == ["dataloader wait"] * 3
    assert all(e["dur"] >= 0 for e in waits)
