"""The optimisers, as pure gradient transformations with PyTorch's exact update formulas.

Each factory takes `torch.optim`'s argument names and defaults and returns a
`GradientTransformation` whose state holds the step count, the per-parameter
buffers under PyTorch's names (`exp_avg`, `exp_avg_sq`, `momentum_buffer`, ...)
and every numeric hyperparameter as a float64 array (`set_hyperparam`).  The
updates include the learning rate and the sign: `apply_updates(params, updates)`
is the PyTorch step.  Scalar factors (bias corrections, step sizes) are computed
in float64 like PyTorch's Python floats and cast to each parameter's dtype.

Example:
    >>> import ember.numpy as enp
    >>> from ember import optim
    >>> tx = optim.adam(lr=0.1)
    >>> p = {"w": enp.asarray([1.0])}
    >>> u, s = tx.update({"w": enp.asarray([0.5])}, tx.init(p), p)
    >>> [round(v, 6) for v in optim.apply_updates(p, u)["w"].tolist()]
    [0.9]
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..fx.core import get_aval
from . import _ops
from .core import GradientTransformation, inject_hyperparams, leafwise, require_params

__all__ = ["sgd", "adam", "adamw", "nadam", "radam", "adamax", "rmsprop", "adagrad",
           "adadelta", "lion", "lamb", "SGDState", "AdamState", "AdamaxState", "NAdamState",
           "RAdamState", "RMSpropState", "AdagradState", "AdadeltaState", "LionState",
           "LambState", "asgd", "rprop", "ASGDState", "RpropState"]


def _zeros(params):
    from .. import tree
    return tree.map(_ops.zeros_like, params)


def _int0():
    return _ops.asarray(np.int32(0))


def _caster(p):
    dt = get_aval(p).dtype
    return lambda x: _ops.cast(x, dt)


def _lerp(a, b, w):
    # torch.lerp(a, b, w) for the weights optimisers use (w = 1 - beta < 0.5 mostly)
    return a + w * (b - a)


def _grad_in(g, maximize):
    return -g if maximize else g


def _check_static(flag, name):
    if not isinstance(flag, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {type(flag).__name__}")


# --- SGD ----------------------------------------------------------------------------

class SGDState(NamedTuple):
    """SGD state: PyTorch's `momentum_buffer` per parameter, and whether it holds a value
    yet (PyTorch starts the buffer from the first gradient, without dampening)."""
    momentum_buffer: Any
    momentum_started: Any


def _sgd(lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, maximize=False):
    """Stochastic gradient descent with PyTorch's momentum, dampening, Nesterov and
    coupled (L2) weight decay:

        g = grad + weight_decay * p
        buf = g (first step)  |  momentum * buf + (1 - dampening) * g
        g = g + momentum * buf (nesterov)  |  buf
        p = p - lr * g

    Example:
        >>> import ember.numpy as enp
        >>> tx = sgd(lr=0.5, momentum=0.9)
        >>> p = [enp.asarray(1.0)]
        >>> tx.update([enp.asarray(1.0)], tx.init(p), p)[0][0].tolist()
        -0.5
    """
    _check_static(nesterov, "nesterov")
    m_c, d_c = _ops.concrete(momentum), _ops.concrete(dampening)
    if nesterov and ((m_c is not None and m_c <= 0) or (d_c is not None and d_c != 0)):
        raise ValueError("Nesterov momentum requires a momentum and zero dampening")

    def init(params):
        return SGDState(_zeros(params), _ops.asarray(np.bool_(False)))

    def update(grads, state, params=None):
        require_params(params, "sgd")
        started = state.momentum_started
        use_m = _ops.not_equal(momentum, 0.0)
        damp = 1.0 - dampening

        def leaf(g, p, buf):
            c = _caster(p)
            g = _grad_in(g, maximize) + c(weight_decay) * p
            new = _ops.where(started, c(momentum) * buf + c(damp) * g, g)
            eff = g + c(momentum) * new if nesterov else new
            eff = _ops.where(use_m, eff, g)
            return c(-lr) * eff, _ops.where(use_m, new, buf)

        updates, buf = leafwise(leaf, [grads, params, state.momentum_buffer], 2)
        return updates, SGDState(buf, _ops.logical_or(started, use_m))

    return GradientTransformation(init, update, "sgd")


sgd = inject_hyperparams(_sgd, name="sgd")


# --- Adam / AdamW ---------------------------------------------------------------------

class AdamState(NamedTuple):
    """Adam/AdamW state: the step count and PyTorch's per-parameter buffers
    (`max_exp_avg_sq` only with amsgrad, else None)."""
    step: Any
    exp_avg: Any
    exp_avg_sq: Any
    max_exp_avg_sq: Any


def _adam_family(name, lr, betas, eps, weight_decay, amsgrad, maximize, decoupled):
    _check_static(amsgrad, "amsgrad")
    b1, b2 = betas

    def init(params):
        z = _zeros(params)
        return AdamState(_int0(), z, _zeros(params), _zeros(params) if amsgrad else None)

    def update(grads, state, params=None):
        require_params(params, name)
        step = state.step + 1
        t = _ops.f64(step)
        bc1 = 1.0 - _ops.pow(b1, t)
        bc2_sqrt = _ops.sqrt(1.0 - _ops.pow(b2, t))
        step_size = lr / bc1

        def leaf(g, p, m, v, vmax):
            c = _caster(p)
            g = _grad_in(g, maximize)
            if not decoupled:
                g = g + c(weight_decay) * p
            m = _lerp(m, g, c(1.0 - b1))
            v = v * c(b2) + c(1.0 - b2) * (g * g)
            if amsgrad:
                vmax = _ops.maximum(vmax, v)
                denom = _ops.sqrt(vmax) / c(bc2_sqrt) + c(eps)
            else:
                denom = _ops.sqrt(v) / c(bc2_sqrt) + c(eps)
            u = c(-step_size) * (m / denom)
            if decoupled:
                u = u - c(lr * weight_decay) * p
            return u, m, v, vmax

        updates, m, v, vmax = leafwise(
            leaf, [grads, params, state.exp_avg, state.exp_avg_sq, state.max_exp_avg_sq], 4)
        return updates, AdamState(step, m, v, vmax if amsgrad else None)

    return GradientTransformation(init, update, name)


def _adam(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False, maximize=False,
          decoupled_weight_decay=False):
    """Adam (Kingma & Ba) with PyTorch's formula, coupled L2 weight decay and amsgrad:

        g = grad + weight_decay * p
        m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g^2
        denom = sqrt(v or max_v) / sqrt(1 - beta2^t) + eps
        p = p - lr / (1 - beta1^t) * m / denom

    With `decoupled_weight_decay=True` it is AdamW, as in PyTorch.

    Example:
        >>> sorted(adam(lr=1e-3).init([]).inner_state._fields)
        ['exp_avg', 'exp_avg_sq', 'max_exp_avg_sq', 'step']
    """
    _check_static(decoupled_weight_decay, "decoupled_weight_decay")
    return _adam_family("adam", lr, betas, eps, weight_decay, amsgrad, maximize,
                        decoupled=decoupled_weight_decay)


def _adamw(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False,
           maximize=False):
    """AdamW (Loshchilov & Hutter) with PyTorch's formula: Adam without L2 in the
    gradient, and the weights shrunk by `p *= 1 - lr * weight_decay` each step.

    Example:
        >>> float(adamw().init([]).hyperparams["weight_decay"])
        0.01
    """
    return _adam_family("adamw", lr, betas, eps, weight_decay, amsgrad, maximize, decoupled=True)


adam = inject_hyperparams(_adam, name="adam")
adamw = inject_hyperparams(_adamw, name="adamw")


# --- Adamax ---------------------------------------------------------------------------

class AdamaxState(NamedTuple):
    """Adamax state: step count, `exp_avg` and the infinity-norm `exp_inf`."""
    step: Any
    exp_avg: Any
    exp_inf: Any


def _adamax(lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, maximize=False):
    """Adamax (the infinity-norm Adam variant) with PyTorch's formula:

        exp_inf = max(beta2 * exp_inf, |g| + eps)
        p = p - lr / (1 - beta1^t) * exp_avg / exp_inf

    Example:
        >>> adamax().init([]).inner_state._fields
        ('step', 'exp_avg', 'exp_inf')
    """
    b1, b2 = betas

    def init(params):
        return AdamaxState(_int0(), _zeros(params), _zeros(params))

    def update(grads, state, params=None):
        require_params(params, "adamax")
        step = state.step + 1
        clr = lr / (1.0 - _ops.pow(b1, _ops.f64(step)))

        def leaf(g, p, m, u_inf):
            c = _caster(p)
            g = _grad_in(g, maximize) + c(weight_decay) * p
            m = _lerp(m, g, c(1.0 - b1))
            u_inf = _ops.maximum(u_inf * c(b2), _ops.abs(g) + c(eps))
            return c(-clr) * (m / u_inf), m, u_inf

        updates, m, u_inf = leafwise(leaf, [grads, params, state.exp_avg, state.exp_inf], 3)
        return updates, AdamaxState(step, m, u_inf)

    return GradientTransformation(init, update, "adamax")


adamax = inject_hyperparams(_adamax, name="adamax")


# --- NAdam ----------------------------------------------------------------------------

class NAdamState(NamedTuple):
    """NAdam state: step count, the running product of momentum coefficients
    `mu_product` (a float64 scalar), `exp_avg`, `exp_avg_sq`."""
    step: Any
    mu_product: Any
    exp_avg: Any
    exp_avg_sq: Any


def _nadam(lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, momentum_decay=4e-3,
           decoupled_weight_decay=False, maximize=False):
    """NAdam (Dozat) with PyTorch's momentum schedule
    `mu_t = beta1 * (1 - 0.5 * 0.96^(t * momentum_decay))`:

        p = p - lr (1 - mu_t) / (1 - prod mu) * g / denom
              - lr mu_{t+1} / (1 - prod mu * mu_{t+1}) * m / denom
        denom = sqrt(v / (1 - beta2^t)) + eps

    Example:
        >>> float(nadam().init([]).inner_state.mu_product)
        1.0
    """
    b1, b2 = betas

    def init(params):
        return NAdamState(_int0(), _ops.asarray(np.float64(1.0)), _zeros(params), _zeros(params))

    def update(grads, state, params=None):
        require_params(params, "nadam")
        step = state.step + 1
        t = _ops.f64(step)
        bc2 = 1.0 - _ops.pow(b2, t)
        mu = b1 * (1.0 - 0.5 * _ops.pow(0.96, t * momentum_decay))
        mu_next = b1 * (1.0 - 0.5 * _ops.pow(0.96, (t + 1.0) * momentum_decay))
        mu_product = state.mu_product * mu
        coef_g = -lr * (1.0 - mu) / (1.0 - mu_product)
        coef_m = -lr * mu_next / (1.0 - mu_product * mu_next)

        def leaf(g, p, m, v):
            c = _caster(p)
            g = _grad_in(g, maximize)
            if not decoupled_weight_decay:
                g = g + c(weight_decay) * p
            m = _lerp(m, g, c(1.0 - b1))
            v = v * c(b2) + c(1.0 - b2) * (g * g)
            denom = _ops.sqrt(v / c(bc2)) + c(eps)
            u = c(coef_g) * (g / denom) + c(coef_m) * (m / denom)
            if decoupled_weight_decay:
                u = u - c(lr * weight_decay) * p
            return u, m, v

        updates, m, v = leafwise(leaf, [grads, params, state.exp_avg, state.exp_avg_sq], 3)
        return updates, NAdamState(step, mu_product, m, v)

    return GradientTransformation(init, update, "nadam")


nadam = inject_hyperparams(_nadam, name="nadam")


# --- RAdam ----------------------------------------------------------------------------

class RAdamState(NamedTuple):
    """RAdam state: step count, `exp_avg`, `exp_avg_sq`."""
    step: Any
    exp_avg: Any
    exp_avg_sq: Any


def _radam(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
           decoupled_weight_decay=False, maximize=False):
    """RAdam (Liu et al.) with PyTorch's formula: while the SMA length
    `rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t)` is at most 5 the step is plain
    momentum SGD with bias correction; after that it is Adam scaled by the variance
    rectification term.  The branch is a `where` on the step count.

    Example:
        >>> radam().init([]).inner_state._fields
        ('step', 'exp_avg', 'exp_avg_sq')
    """
    b1, b2 = betas

    def init(params):
        return RAdamState(_int0(), _zeros(params), _zeros(params))

    def update(grads, state, params=None):
        require_params(params, "radam")
        step = state.step + 1
        t = _ops.f64(step)
        bc1 = 1.0 - _ops.pow(b1, t)
        bc2 = 1.0 - _ops.pow(b2, t)
        rho_inf = 2.0 / (1.0 - b2) - 1.0
        rho_t = rho_inf - 2.0 * t * _ops.pow(b2, t) / bc2
        use_rect = _ops.greater(rho_t, 5.0)
        arg = ((rho_t - 4.0) * (rho_t - 2.0) * rho_inf) / ((rho_inf - 4.0) * (rho_inf - 2.0) * rho_t)
        # the square root only sees the selected value, so no NaN reaches a gradient
        rect = _ops.sqrt(_ops.where(use_rect, arg, 1.0))
        bc2_sqrt = _ops.sqrt(bc2)

        def leaf(g, p, m, v):
            c = _caster(p)
            g = _grad_in(g, maximize)
            if not decoupled_weight_decay:
                g = g + c(weight_decay) * p
            m = _lerp(m, g, c(1.0 - b1))
            v = v * c(b2) + c(1.0 - b2) * (g * g)
            corrected = m / c(bc1)
            adaptive = c(bc2_sqrt) / (_ops.sqrt(v) + c(eps))
            rectified = corrected * c(lr) * adaptive * c(rect)
            u = -_ops.where(use_rect, rectified, corrected * c(lr))
            if decoupled_weight_decay:
                u = u - c(lr * weight_decay) * p
            return u, m, v

        updates, m, v = leafwise(leaf, [grads, params, state.exp_avg, state.exp_avg_sq], 3)
        return updates, RAdamState(step, m, v)

    return GradientTransformation(init, update, "radam")


radam = inject_hyperparams(_radam, name="radam")


# --- RMSprop --------------------------------------------------------------------------

class RMSpropState(NamedTuple):
    """RMSprop state: step count, `square_avg`, `momentum_buffer`, and `grad_avg`
    (centered only, else None)."""
    step: Any
    square_avg: Any
    momentum_buffer: Any
    grad_avg: Any


def _rmsprop(lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False,
             maximize=False):
    """RMSprop with PyTorch's formula (eps outside the square root, optional centering
    by the running mean gradient, and a momentum buffer of `g / avg`).

    Example:
        >>> rmsprop(centered=True).init([]).inner_state._fields
        ('step', 'square_avg', 'momentum_buffer', 'grad_avg')
    """
    _check_static(centered, "centered")

    def init(params):
        return RMSpropState(_int0(), _zeros(params), _zeros(params),
                            _zeros(params) if centered else None)

    def update(grads, state, params=None):
        require_params(params, "rmsprop")
        use_m = _ops.greater(momentum, 0.0)

        def leaf(g, p, sq, buf, gavg):
            c = _caster(p)
            g = _grad_in(g, maximize) + c(weight_decay) * p
            sq = sq * c(alpha) + c(1.0 - alpha) * (g * g)
            if centered:
                gavg = _lerp(gavg, g, c(1.0 - alpha))
                avg = _ops.sqrt(sq - gavg * gavg)
            else:
                avg = _ops.sqrt(sq)
            avg = avg + c(eps)
            new_buf = buf * c(momentum) + g / avg
            u = _ops.where(use_m, c(-lr) * new_buf, c(-lr) * (g / avg))
            return u, sq, _ops.where(use_m, new_buf, buf), gavg

        updates, sq, buf, gavg = leafwise(
            leaf, [grads, params, state.square_avg, state.momentum_buffer, state.grad_avg], 4)
        return updates, RMSpropState(state.step + 1, sq, buf, gavg if centered else None)

    return GradientTransformation(init, update, "rmsprop")


rmsprop = inject_hyperparams(_rmsprop, name="rmsprop")


# --- Adagrad --------------------------------------------------------------------------

class AdagradState(NamedTuple):
    """Adagrad state: step count and the running `sum` of squared gradients."""
    step: Any
    sum: Any


def _adagrad(lr=1e-2, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0, eps=1e-10,
             maximize=False):
    """Adagrad with PyTorch's formula: `clr = lr / (1 + (t - 1) lr_decay)`,
    `sum += g^2`, `p -= clr * g / (sqrt(sum) + eps)`; `sum` starts at
    `initial_accumulator_value` (fixed at init).

    Example:
        >>> import ember.numpy as enp
        >>> tx = adagrad(initial_accumulator_value=0.5)
        >>> tx.init([enp.asarray(1.0)]).inner_state.sum[0].tolist()
        0.5
    """
    def init(params):
        from .core import zeros_like_tree
        return AdagradState(_int0(), zeros_like_tree(params, float(initial_accumulator_value)))

    def update(grads, state, params=None):
        require_params(params, "adagrad")
        step = state.step + 1
        clr = lr / (1.0 + (_ops.f64(step) - 1.0) * lr_decay)

        def leaf(g, p, s):
            c = _caster(p)
            g = _grad_in(g, maximize) + c(weight_decay) * p
            s = s + g * g
            return c(-clr) * (g / (_ops.sqrt(s) + c(eps))), s

        updates, s = leafwise(leaf, [grads, params, state.sum], 2)
        return updates, AdagradState(step, s)

    return GradientTransformation(init, update, "adagrad")


adagrad = inject_hyperparams(_adagrad, static_args=("initial_accumulator_value",), name="adagrad")


# --- Adadelta -------------------------------------------------------------------------

class AdadeltaState(NamedTuple):
    """Adadelta state: step count, `square_avg`, `acc_delta`."""
    step: Any
    square_avg: Any
    acc_delta: Any


def _adadelta(lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0, maximize=False):
    """Adadelta (Zeiler) with PyTorch's formula, including its `lr` factor:

        sq = rho sq + (1 - rho) g^2
        delta = sqrt(acc + eps) / sqrt(sq + eps) * g
        acc = rho acc + (1 - rho) delta^2;  p -= lr * delta

    Example:
        >>> adadelta().init([]).inner_state._fields
        ('step', 'square_avg', 'acc_delta')
    """
    def init(params):
        return AdadeltaState(_int0(), _zeros(params), _zeros(params))

    def update(grads, state, params=None):
        require_params(params, "adadelta")

        def leaf(g, p, sq, acc):
            c = _caster(p)
            g = _grad_in(g, maximize) + c(weight_decay) * p
            sq = sq * c(rho) + c(1.0 - rho) * (g * g)
            std = _ops.sqrt(sq + c(eps))
            delta = _ops.sqrt(acc + c(eps)) / std * g
            acc = acc * c(rho) + c(1.0 - rho) * (delta * delta)
            return c(-lr) * delta, sq, acc

        updates, sq, acc = leafwise(leaf, [grads, params, state.square_avg, state.acc_delta], 3)
        return updates, AdadeltaState(state.step + 1, sq, acc)

    return GradientTransformation(init, update, "adadelta")


adadelta = inject_hyperparams(_adadelta, name="adadelta")


# --- Lion -----------------------------------------------------------------------------

class LionState(NamedTuple):
    """Lion state: step count and `exp_avg`."""
    step: Any
    exp_avg: Any


def _lion(lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0, maximize=False):
    """Lion (Chen et al., "Symbolic Discovery of Optimization Algorithms"):

        p = p (1 - lr wd) - lr * sign(beta1 m + (1 - beta1) g)
        m = beta2 m + (1 - beta2) g

    Example:
        >>> lion().init([]).inner_state._fields
        ('step', 'exp_avg')
    """
    b1, b2 = betas

    def init(params):
        return LionState(_int0(), _zeros(params))

    def update(grads, state, params=None):
        require_params(params, "lion")

        def leaf(g, p, m):
            c = _caster(p)
            g = _grad_in(g, maximize)
            direction = _ops.sign(m * c(b1) + g * c(1.0 - b1))
            u = c(-lr) * direction - c(lr * weight_decay) * p
            m = m * c(b2) + g * c(1.0 - b2)
            return u, m

        updates, m = leafwise(leaf, [grads, params, state.exp_avg], 2)
        return updates, LionState(state.step + 1, m)

    return GradientTransformation(init, update, "lion")


lion = inject_hyperparams(_lion, name="lion")


# --- LAMB -----------------------------------------------------------------------------

class LambState(NamedTuple):
    """LAMB state: step count, `exp_avg`, `exp_avg_sq`."""
    step: Any
    exp_avg: Any
    exp_avg_sq: Any


def _lamb(lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0, maximize=False):
    """LAMB (You et al., "Large Batch Optimization for Deep Learning"), per parameter
    tensor:

        r = m_hat / (sqrt(v_hat) + eps) + weight_decay * p
        trust = ||p|| / ||r||  (1 when either norm is 0)
        p = p - lr * trust * r

    with Adam's bias-corrected moments m_hat, v_hat.

    Example:
        >>> lamb().init([]).inner_state._fields
        ('step', 'exp_avg', 'exp_avg_sq')
    """
    b1, b2 = betas

    def init(params):
        return LambState(_int0(), _zeros(params), _zeros(params))

    def update(grads, state, params=None):
        require_params(params, "lamb")
        step = state.step + 1
        t = _ops.f64(step)
        bc1 = 1.0 - _ops.pow(b1, t)
        bc2 = 1.0 - _ops.pow(b2, t)

        def leaf(g, p, m, v):
            c = _caster(p)
            g = _grad_in(g, maximize)
            m = _lerp(m, g, c(1.0 - b1))
            v = v * c(b2) + c(1.0 - b2) * (g * g)
            r = (m / c(bc1)) / (_ops.sqrt(v / c(bc2)) + c(eps)) + c(weight_decay) * p
            w_norm = _ops.sqrt(_ops.sum(p * p))
            r_norm = _ops.sqrt(_ops.sum(r * r))
            ok = _ops.logical_and(_ops.greater(w_norm, 0.0), _ops.greater(r_norm, 0.0))
            trust = _ops.where(ok, w_norm / _ops.where(ok, r_norm, 1.0), 1.0)
            return c(-lr) * trust * r, m, v

        updates, m, v = leafwise(leaf, [grads, params, state.exp_avg, state.exp_avg_sq], 3)
        return updates, LambState(step, m, v)

    return GradientTransformation(init, update, "lamb")


lamb = inject_hyperparams(_lamb, name="lamb")


# --- ASGD -----------------------------------------------------------------------------

class ASGDState(NamedTuple):
    """ASGD state: step count, the step size `eta` and averaging weight `mu` (float64
    scalars the group shares; PyTorch keeps equal copies per parameter) and the
    running average `ax` of the parameters."""
    step: Any
    eta: Any
    mu: Any
    ax: Any


def _asgd(lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0.0, maximize=False):
    """Averaged SGD (Polyak and Juditsky) with PyTorch's formula:

        p = p (1 - lambd eta) - eta g;  ax = ax + mu (p - ax)
        eta = lr / (1 + lambd lr t)^alpha;  mu = 1 / max(1, t - t0)

    `ax` is the averaged iterate (read it from the state); the parameters follow `p`.

    Example:
        >>> asgd().init([]).inner_state._fields
        ('step', 'eta', 'mu', 'ax')
    """
    def init(params):
        return ASGDState(_int0(), _ops.asarray(np.float64(1.0)) * lr, _ops.asarray(np.float64(1.0)),
                         _zeros(params))

    def update(grads, state, params=None):
        require_params(params, "asgd")
        step = state.step + 1
        t = _ops.f64(step)
        eta, mu = state.eta, state.mu

        def leaf(g, p, ax):
            c = _caster(p)
            g = _grad_in(g, maximize) + c(weight_decay) * p
            new_p = p * c(1.0 - lambd * eta) - c(eta) * g
            # PyTorch copies p into ax while mu is exactly 1, and blends afterwards
            ax = _ops.where(_ops.equal(mu, 1.0), new_p, ax + (new_p - ax) * c(mu))
            return new_p - p, ax

        updates, ax = leafwise(leaf, [grads, params, state.ax], 2)
        new_eta = lr / _ops.pow(1.0 + lambd * lr * t, alpha)
        new_mu = 1.0 / _ops.maximum(t - t0, 1.0)
        return updates, ASGDState(step, new_eta, new_mu, ax)

    return GradientTransformation(init, update, "asgd")


asgd = inject_hyperparams(_asgd, name="asgd")


# --- Rprop ----------------------------------------------------------------------------

class RpropState(NamedTuple):
    """Rprop state: step count, the previous (masked) gradient `prev` and the
    per-entry `step_size`."""
    step: Any
    prev: Any
    step_size: Any


def _rprop(lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50.0), maximize=False):
    """Resilient backpropagation with PyTorch's formula: each entry's step size grows by
    `etas[1]` while its gradient keeps its sign and shrinks by `etas[0]` when it flips
    (clamped to `step_sizes`); a flipped entry does not move that step and its sign is
    forgotten.  `p = p - sign(g) * step_size`.

    Example:
        >>> rprop().init([]).inner_state._fields
        ('step', 'prev', 'step_size')
    """
    eta_minus, eta_plus = etas
    lo, hi = step_sizes

    def init(params):
        from .. import tree
        return RpropState(_int0(), _zeros(params),
                          tree.map(lambda p: _ops.full_like(p, 1.0) * _caster(p)(lr), params))

    def update(grads, state, params=None):
        require_params(params, "rprop")

        def leaf(g, p, prev, size):
            c = _caster(p)
            g = _grad_in(g, maximize)
            prod = g * prev
            factor = _ops.where(_ops.greater(prod, 0.0), c(eta_plus),
                                _ops.where(_ops.less(prod, 0.0), c(eta_minus), c(1.0)))
            size = _ops.minimum(_ops.maximum(size * factor, c(lo)), c(hi))
            g = _ops.where(_ops.less(prod, 0.0), _ops.zeros_like(g), g)
            return -_ops.sign(g) * size, g, size

        updates, prev, size = leafwise(leaf, [grads, params, state.prev, state.step_size], 3)
        return updates, RpropState(state.step + 1, prev, size)

    return GradientTransformation(init, update, "rprop")


rprop = inject_hyperparams(_rprop, name="rprop")
