"""Learning-rate schedules as pure `step -> value` functions.

Each schedule takes a step that is a Python int (and returns a Python float,
computed with PyTorch's own expression order) or an ember integer array,
possibly traced under `jit` (and returns a float64 array, branch-free via
`where`).  Pass one as a hyperparameter, e.g. `optim.adam(lr=warmup_cosine(...))`,
and it is evaluated at the update count inside the state.

Example:
    >>> from ember.optim import schedules
    >>> f = schedules.linear(1.0, 0.0, transition_steps=4)
    >>> [f(t) for t in range(6)]
    [1.0, 0.75, 0.5, 0.25, 0.0, 0.0]
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from . import _ops

__all__ = ["constant", "linear", "polynomial", "cosine_decay", "warmup_cosine",
           "exponential_decay", "piecewise_constant", "one_cycle", "anneal_phases",
           "one_cycle_phases"]


class _PyMath:
    """Python-float arithmetic for concrete integer steps."""
    f = staticmethod(float)
    const = staticmethod(float)
    cos = staticmethod(math.cos)
    floor = staticmethod(math.floor)
    minimum = staticmethod(min)
    maximum = staticmethod(max)

    @staticmethod
    def where(c, a, b):
        return a if c else b

    @staticmethod
    def le(a, b):
        return a <= b

    @staticmethod
    def ge(a, b):
        return a >= b

    @staticmethod
    def pow(a, b):
        return a ** b


class _ArrMath:
    """The same operations on ember arrays (float64), so they trace under `jit`."""
    f = staticmethod(_ops.f64)
    const = staticmethod(_ops.f64)
    cos = staticmethod(_ops.cos)
    floor = staticmethod(_ops.floor)
    minimum = staticmethod(_ops.minimum)
    maximum = staticmethod(_ops.maximum)
    where = staticmethod(_ops.where)

    @staticmethod
    def le(a, b):
        return _ops.logical_not(_ops.greater(a, b))

    @staticmethod
    def ge(a, b):
        return _ops.greater_equal(a, b)

    @staticmethod
    def pow(a, b):
        return _ops.pow(a, b)


def _math_for(step):
    if isinstance(step, numbers.Real) and not isinstance(step, (bool, np.bool_)):
        return _PyMath
    if _ops.is_array(step):
        return _ArrMath
    raise TypeError(f"a schedule takes an int step or an ember integer array, got "
                    f"{type(step).__name__}")


def _positive(name, v):
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not v > 0:
        raise ValueError(f"{name} must be a positive number, got {v!r}")


def _nonneg(name, v):
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not v >= 0:
        raise ValueError(f"{name} must be a non-negative number, got {v!r}")


def _number(name, v):
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or math.isnan(v):
        raise ValueError(f"{name} must be a number, got {v!r}")


def constant(value):
    """`value` at every step.

    Example:
        >>> constant(0.1)(7)
        0.1
    """
    _number("value", value)

    def schedule(step):
        m = _math_for(step)
        return float(value) if m is _PyMath else _ops.f64(value)
    return schedule


def polynomial(init_value, end_value, power, transition_steps, transition_begin=0):
    """Polynomial decay from `init_value` to `end_value` over `transition_steps` steps
    starting at `transition_begin`:
    `(init - end) * (1 - t / T) ** power + end`, t clipped to [0, T].

    Example:
        >>> f = polynomial(1.0, 0.0, power=2, transition_steps=2)
        >>> [f(t) for t in range(3)]
        [1.0, 0.25, 0.0]
    """
    for n, v in (("init_value", init_value), ("end_value", end_value), ("power", power)):
        _number(n, v)
    _positive("transition_steps", transition_steps)
    _nonneg("transition_begin", transition_begin)

    def schedule(step):
        m = _math_for(step)
        t = m.minimum(m.maximum(m.f(step) - transition_begin, 0.0), float(transition_steps))
        frac = 1.0 - t / transition_steps
        return (init_value - end_value) * m.pow(frac, float(power)) + end_value
    return schedule


def linear(init_value, end_value, transition_steps, transition_begin=0):
    """Linear interpolation from `init_value` to `end_value` over `transition_steps`
    steps starting at `transition_begin` (constant before and after).

    Example:
        >>> f = linear(0.0, 1.0, transition_steps=2, transition_begin=1)
        >>> [f(t) for t in range(5)]
        [0.0, 0.0, 0.5, 1.0, 1.0]
    """
    for n, v in (("init_value", init_value), ("end_value", end_value)):
        _number(n, v)
    _positive("transition_steps", transition_steps)
    _nonneg("transition_begin", transition_begin)

    def schedule(step):
        m = _math_for(step)
        t = m.minimum(m.maximum(m.f(step) - transition_begin, 0.0), float(transition_steps))
        return init_value + (end_value - init_value) * (t / transition_steps)
    return schedule


def cosine_decay(init_value, decay_steps, alpha=0.0, exponent=1.0):
    """Cosine decay from `init_value` to `alpha * init_value` over `decay_steps`, then flat:
    `init * ((1 - alpha) * (0.5 (1 + cos(pi t / T))) ** exponent + alpha)`.

    Example:
        >>> f = cosine_decay(1.0, decay_steps=2)
        >>> [round(f(t), 6) for t in range(4)]
        [1.0, 0.5, 0.0, 0.0]
    """
    _number("init_value", init_value)
    _positive("decay_steps", decay_steps)
    _number("alpha", alpha)
    _number("exponent", exponent)

    def schedule(step):
        m = _math_for(step)
        t = m.minimum(m.maximum(m.f(step), 0.0), float(decay_steps))
        cosine = 0.5 * (1.0 + m.cos(math.pi * t / decay_steps))
        return init_value * ((1.0 - alpha) * m.pow(cosine, float(exponent)) + alpha)
    return schedule


def warmup_cosine(init_value, peak_value, warmup_steps, decay_steps, end_value=0.0, exponent=1.0):
    """Linear warmup from `init_value` to `peak_value` over `warmup_steps`, then cosine
    decay to `end_value` until step `decay_steps` (which counts the warmup), then flat.

    Example:
        >>> f = warmup_cosine(0.0, 1.0, warmup_steps=2, decay_steps=4)
        >>> [round(f(t), 6) for t in range(6)]
        [0.0, 0.5, 1.0, 0.5, 0.0, 0.0]
    """
    for n, v in (("init_value", init_value), ("peak_value", peak_value),
                 ("end_value", end_value), ("exponent", exponent)):
        _number(n, v)
    _nonneg("warmup_steps", warmup_steps)
    _positive("decay_steps", decay_steps)
    if not decay_steps > warmup_steps:
        raise ValueError(f"warmup_cosine: decay_steps ({decay_steps}) counts the warmup and "
                         f"must exceed warmup_steps ({warmup_steps})")
    span = float(decay_steps - warmup_steps)

    def schedule(step):
        m = _math_for(step)
        s = m.f(step)
        t = m.minimum(m.maximum(s - warmup_steps, 0.0), span)
        cosine = 0.5 * (1.0 + m.cos(math.pi * t / span))
        decay = (peak_value - end_value) * m.pow(cosine, float(exponent)) + end_value
        if warmup_steps == 0:
            return decay
        warm = init_value + (peak_value - init_value) * (m.maximum(s, 0.0) / warmup_steps)
        return m.where(m.ge(s, float(warmup_steps)), decay, warm)
    return schedule


def exponential_decay(init_value, transition_steps, decay_rate, transition_begin=0,
                      staircase=False, end_value=None):
    """`init * decay_rate ** (t / transition_steps)` with t = steps since
    `transition_begin` (floored to whole transitions with `staircase`), bounded by
    `end_value` when given.

    Example:
        >>> f = exponential_decay(1.0, transition_steps=2, decay_rate=0.5, staircase=True)
        >>> [f(t) for t in range(5)]
        [1.0, 1.0, 0.5, 0.5, 0.25]
    """
    _number("init_value", init_value)
    _positive("transition_steps", transition_steps)
    _number("decay_rate", decay_rate)
    _nonneg("transition_begin", transition_begin)
    if end_value is not None:
        _number("end_value", end_value)

    def schedule(step):
        m = _math_for(step)
        p = m.maximum(m.f(step) - transition_begin, 0.0) / transition_steps
        if staircase:
            p = m.floor(p) if m is _ArrMath else float(math.floor(p))
        v = init_value * m.pow(float(decay_rate), p)
        if end_value is not None:
            v = m.maximum(v, end_value) if decay_rate < 1 else m.minimum(v, end_value)
        return v
    return schedule


def piecewise_constant(init_value, boundaries_and_scales: dict):
    """`init_value` multiplied by `scale` at every `boundary` the step has reached
    (`step >= boundary`), for the `{boundary: scale}` pairs in order.

    Example:
        >>> f = piecewise_constant(1.0, {2: 0.5, 4: 0.1})
        >>> [round(f(t), 6) for t in range(6)]
        [1.0, 1.0, 0.5, 0.5, 0.05, 0.05]
    """
    _number("init_value", init_value)
    if not isinstance(boundaries_and_scales, dict):
        raise TypeError("piecewise_constant needs a dict {boundary_step: scale}")
    pairs = sorted(boundaries_and_scales.items())
    for b, s in pairs:
        _nonneg("boundary", b)
        _number("scale", s)

    def schedule(step):
        m = _math_for(step)
        s = m.f(step)
        v = float(init_value) if m is _PyMath else _ops.f64(init_value)
        for b, sc in pairs:
            v = v * m.where(m.ge(s, float(b)), m.const(sc), 1.0)
        return v
    return schedule


def _anneal_cos(start, end, pct, m):
    return end + (start - end) / 2.0 * (m.cos(math.pi * pct) + 1)


def _anneal_linear(start, end, pct, m):
    return (end - start) * pct + start


def anneal_phases(phases, anneal_strategy="cos"):
    """A schedule made of consecutive annealing phases, PyTorch `OneCycleLR` style.

    `phases` is a list of `(end_step, start_value, end_value)`; phase i runs from the
    previous phase's end step (0 for the first) to its own, and the last phase
    extends past its end.  Within a phase the value goes from start to end with
    `anneal_strategy` "cos" (half cosine) or "linear".

    Example:
        >>> f = anneal_phases([(2.0, 0.0, 1.0), (4.0, 1.0, 0.0)], "linear")
        >>> [f(t) for t in range(5)]
        [0.0, 0.5, 1.0, 0.5, 0.0]
    """
    if anneal_strategy not in ("cos", "linear"):
        raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got "
                         f"{anneal_strategy!r}")
    fn = _anneal_cos if anneal_strategy == "cos" else _anneal_linear
    phases = [(float(e), float(a), float(b)) for e, a, b in phases]
    if not phases:
        raise ValueError("anneal_phases needs at least one phase")

    def value(i, s, m):
        start_step = 0.0 if i == 0 else phases[i - 1][0]
        end_step, a, b = phases[i]
        span = end_step - start_step
        # a zero-length phase sits at its end value (PyTorch would divide by zero)
        pct = (s - start_step) / span if span != 0 else m.const(1.0)
        return fn(a, b, pct, m)

    def schedule(step):
        m = _math_for(step)
        s = m.f(step)
        if m is _PyMath:
            for i, (end_step, _, _) in enumerate(phases):
                if s <= end_step or i == len(phases) - 1:
                    return value(i, s, m)
        out = value(len(phases) - 1, s, m)
        for i in range(len(phases) - 2, -1, -1):
            out = m.where(m.le(s, phases[i][0]), value(i, s, m), out)
        return out
    return schedule


def one_cycle(total_steps, max_value, pct_start=0.3, anneal_strategy="cos", div_factor=25.0,
              final_div_factor=1e4, three_phase=False):
    """The 1cycle policy of PyTorch's `OneCycleLR`: from `max_value / div_factor` up to
    `max_value` over `pct_start` of `total_steps`, then down to
    `max_value / div_factor / final_div_factor` (with `three_phase`, first back to
    the initial value, then down).

    Example:
        >>> f = one_cycle(10, 1.0, pct_start=0.5, anneal_strategy="linear", div_factor=10,
        ...               final_div_factor=1)
        >>> [round(f(t), 6) for t in (0, 4, 9)]
        [0.1, 1.0, 0.1]
    """
    if isinstance(total_steps, bool) or not isinstance(total_steps, (int, np.integer)) \
            or total_steps <= 0:
        raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
    if not isinstance(pct_start, numbers.Real) or not 0 <= pct_start <= 1:
        raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
    _positive("max_value", max_value)
    _positive("div_factor", div_factor)
    _positive("final_div_factor", final_div_factor)
    initial = max_value / div_factor
    final = initial / final_div_factor
    return anneal_phases(one_cycle_phases(total_steps, pct_start, three_phase,
                                          initial, max_value, final), anneal_strategy)


def one_cycle_phases(total_steps, pct_start, three_phase, start, peak, end):
    """The (end_step, start, end) phases of PyTorch's OneCycleLR for values
    start -> peak -> end (three-phase: start -> peak -> start -> end).  For momentum,
    PyTorch cycles max -> base -> max (-> max), i.e. start=max, peak=base, end=max.

    Example:
        >>> one_cycle_phases(10, 0.3, False, 0.04, 1.0, 4e-6)
        [(2.0, 0.04, 1.0), (9, 1.0, 4e-06)]
    """
    if three_phase:
        return [(float(pct_start * total_steps) - 1, start, peak),
                (float(2 * pct_start * total_steps) - 2, peak, start),
                (total_steps - 1, start, end)]
    return [(float(pct_start * total_steps) - 1, start, peak),
            (total_steps - 1, peak, end)]
