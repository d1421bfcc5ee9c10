"""Pure `step -> value` schedules: hand-computed tables on Python ints, the same values on
ember integer arrays eagerly and under jit (one compilation for all steps)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember.optim import schedules as S

C4 = (1 + math.cos(math.pi / 4)) / 2          # 0.8535533905932737
TABLES = [
    ("constant", S.constant(0.3), [0.3, 0.3, 0.3]),
    ("linear", S.linear(1.0, 0.2, transition_steps=4),
     [1.0, 0.8, 0.6, 0.4, 0.2, 0.2]),
    ("linear_begin", S.linear(0.0, 1.0, transition_steps=2, transition_begin=3),
     [0.0, 0.0, 0.0, 0.0, 0.5, 1.0, 1.0]),
    ("polynomial", S.polynomial(1.0, 0.1, power=2, transition_steps=4, transition_begin=1),
     [1.0, 1.0, 0.60625, 0.325, 0.15625, 0.1, 0.1]),
    ("cosine_decay", S.cosine_decay(2.0, decay_steps=4, alpha=0.1),
     [2.0, 2.0 * (0.9 * C4 + 0.1), 1.1, 2.0 * (0.9 * (1 - C4) + 0.1), 0.2, 0.2, 0.2]),
    ("cosine_decay_exponent", S.cosine_decay(1.0, decay_steps=2, exponent=2.0),
     [1.0, 0.25, 0.0, 0.0]),
    ("warmup_cosine", S.warmup_cosine(0.1, 1.0, warmup_steps=2, decay_steps=6, end_value=0.2),
     [0.1, 0.55, 1.0, 0.8 * C4 + 0.2, 0.6, 0.8 * (1 - C4) + 0.2, 0.2, 0.2]),
    ("warmup_cosine_no_warmup", S.warmup_cosine(0.0, 1.0, warmup_steps=0, decay_steps=2),
     [1.0, 0.5, 0.0, 0.0]),
    ("exponential", S.exponential_decay(1.0, 2, 0.5, transition_begin=1, end_value=0.3),
     [1.0, 1.0, math.sqrt(0.5), 0.5, math.sqrt(0.125), 0.3, 0.3]),
    ("exponential_staircase", S.exponential_decay(2.0, 2, 0.1, staircase=True),
     [2.0, 2.0, 0.2, 0.2, 0.02]),
    ("exponential_growth_capped", S.exponential_decay(1.0, 1, 2.0, end_value=5.0),
     [1.0, 2.0, 4.0, 5.0, 5.0]),
    ("piecewise_constant", S.piecewise_constant(1.0, {3: 0.5, 6: 0.2}),
     [1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.1, 0.1]),
    # OneCycleLR(max_lr=1, total_steps=10): initial 0.04, phases end at steps 2 and 9
    ("one_cycle_cos", S.one_cycle(10, 1.0),
     [0.04, 0.52, 1.0] + [4e-6 + (1 - 4e-6) / 2 * (math.cos(math.pi * (s - 2) / 7) + 1)
                          for s in range(3, 10)]),
    ("one_cycle_linear_three_phase",
     S.one_cycle(12, 1.0, pct_start=0.25, anneal_strategy="linear", three_phase=True),
     [0.04, 0.52, 1.0, 0.52, 0.04] + [(4e-6 - 0.04) * (s - 4) / 7 + 0.04 for s in range(5, 12)]),
]


@pytest.mark.parametrize("name,fn,table", TABLES, ids=[t[0] for t in TABLES])
def test_python_steps_match_hand_tables(name, fn, table):
    got = [fn(t) for t in range(len(table))]
    assert all(isinstance(v, float) for v in got)
    np.testing.assert_allclose(got, table, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name,fn,table", TABLES, ids=[t[0] for t in TABLES])
def test_array_steps_eager_and_jitted(name, fn, table):
    jf = ember.jit(fn)
    for t in range(len(table)):
        step = enp.asarray(np.int32(t))
        eager = fn(step)
        assert eager.dtype == np.float64 and eager.shape == ()
        np.testing.assert_allclose(float(eager), table[t], rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(float(jf(step)), table[t], rtol=1e-12, atol=1e-15)
    assert jf._cache_size() == 1


def test_anneal_phases_generic():
    f = S.anneal_phases([(2.0, 0.0, 1.0), (4.0, 1.0, 0.0)], "linear")
    assert [f(t) for t in range(6)] == [0.0, 0.5, 1.0, 0.5, 0.0, -0.5]


@pytest.mark.parametrize("make,msg", [
    (lambda: S.linear(1.0, 0.0, transition_steps=0), "transition_steps must be a positive"),
    (lambda: S.cosine_decay(1.0, decay_steps=-1), "decay_steps must be a positive"),
    (lambda: S.warmup_cosine(0.0, 1.0, warmup_steps=5, decay_steps=5), "must exceed warmup_steps"),
    (lambda: S.exponential_decay(1.0, 0, 0.5), "transition_steps must be a positive"),
    (lambda: S.constant(float("nan")), "value must be a number"),
    (lambda: S.one_cycle(0, 1.0), "Expected positive integer total_steps"),
    (lambda: S.one_cycle(10, 1.0, pct_start=1.5), "pct_start"),
    (lambda: S.one_cycle(10, 1.0, anneal_strategy="cosine"), "anneal_strategy"),
])
def test_bad_schedule_arguments(make, msg):
    with pytest.raises(ValueError, match=msg):
        make()


def test_schedule_rejects_a_non_step():
    with pytest.raises(TypeError, match="int step"):
        S.constant(1.0)("3")
