"""Training helpers that keep the stateful shim honest: `value_and_grad(model,
loss_fn)` for eager loops, and `TrainStep` (`compile_step`), which turns
(parameters, buffers, optimiser state, RNG key, batch) into their new values as one
pure function, compiles it with `ember.jit`, and writes the results back into the
model and the optimiser.  Nothing is captured implicitly: every piece of state is
an explicit input and output of the compiled step.

Frozen parameters (`model.freeze(...)`) are held constant: their gradient is zero
and the step never changes them.  Dropout keys come from the model's key
(`model.set_rng(key)`; seeded from the global key on first use), split once per step.

Example:
    >>> import ember.numpy as enp
    >>> from ember import nn, optim
    >>> model = nn.Linear(2, 1)
    >>> opt = optim.SGD(model, lr=0.1)
    >>> step = nn.TrainStep(model, opt, lambda m, x, y: ((m(x) - y) ** 2).mean())
    >>> x, y = enp.ones((4, 2)), enp.zeros((4, 1))
    >>> l0 = step(x, y); l1 = step(x, y)
    >>> bool(l1 < l0)
    True
"""
from __future__ import annotations

from collections import OrderedDict

from ..fx.core import Tracer, get_aval
from .. import dtypes as _dt
from .module import Module, _global_next_key, _in_transform, _swapped, flatten_names, unflatten_names
from .. import numpy as enp
from ..fx.spelling import user_str

__all__ = ["value_and_grad", "TrainStep", "compile_step", "compile_forward", "CompiledForward"]


def _split_params(model):
    # a tied parameter is listed once: one gradient, the sum over its slots' uses
    trainable, frozen = OrderedDict(), OrderedDict()
    for name, v in model.named_parameters():
        m, leaf = model._slot(name)
        (frozen if leaf in m._frozen else trainable)[name] = v
    return trainable, frozen


def _loss_value_and_grads(model, loss_fn, has_aux, trainable, frozen, buffers, key, args, kwargs):
    """The pure core: (loss, aux, new_buffers, grads) with grads keyed by dotted
    name for every parameter (zeros for the frozen ones)."""
    import ember
    e = enp
    names = list(trainable) + list(frozen)

    def inner(tr):
        flat = OrderedDict()
        flat.update(tr)
        flat.update(frozen)
        flat.update(buffers)
        with _swapped(model, flat, rng=key):
            out = loss_fn(model, *args, **kwargs)
            new_buffers = OrderedDict(model.named_buffers())
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise TypeError("loss_fn with has_aux=True must return (loss, aux)")
            loss, aux = out
        else:
            loss, aux = out, None
        a = get_aval(loss)
        if a.shape != () or not _dt.is_float(a.dtype):
            raise TypeError(f"loss_fn must return a scalar floating-point loss, got {user_str(a)}")
        return loss, (aux, new_buffers)

    (loss, (aux, new_buffers)), g = ember.value_and_grad(inner, has_aux=True)(dict(trainable))
    grads = OrderedDict()
    for n in names:
        grads[n] = g[n] if n in g else e.zeros_like(frozen[n])
    return loss, aux, new_buffers, grads


def _order_like(model, flat):
    """Re-key a flat dict into the model's parameter order, nested."""
    order = [n for n, _ in model.named_parameters()]
    return unflatten_names(OrderedDict((n, flat[n]) for n in order))


def value_and_grad(model: Module, loss_fn, has_aux: bool = False):
    """A function `(*args, **kwargs) -> (loss, grads)` (or `((loss, aux), grads)`)
    computing `loss_fn(model, *args, **kwargs)` and its gradient with respect to the
    model's parameters, as a nested dict shaped like `model.parameters()` (frozen
    parameters get zeros).  Buffers updated by the forward pass (BatchNorm) are
    written back; dropout draws from the model's key.  Eager use; inside your own
    transforms use `nn.functional_call`.

    Example:
        >>> import ember.numpy as enp
        >>> from ember import nn
        >>> m = nn.Linear(3, 1)
        >>> vg = nn.value_and_grad(m, lambda m, x: m(x).sum())
        >>> loss, grads = vg(enp.ones((2, 3)))
        >>> grads["weight"].tolist()
        [[2.0, 2.0, 2.0]]
    """
    if not isinstance(model, Module):
        raise TypeError(f"nn.value_and_grad needs an nn.Module, got {type(model).__name__}")

    def run(*args, **kwargs):
        if _in_transform():
            raise RuntimeError("nn.value_and_grad writes buffers and keys back into the model, so it "
                               "runs eagerly; under ember.jit/vmap/grad use nn.functional_call, or "
                               "nn.TrainStep for a compiled training step")
        trainable, frozen = _split_params(model)
        buffers = OrderedDict(model.named_buffers())
        key = model._next_step_key()
        loss, aux, new_buffers, grads = _loss_value_and_grads(model, loss_fn, has_aux, trainable, frozen,
                                                              buffers, key, args, kwargs)
        model.load_buffers(new_buffers)
        g = _order_like(model, grads)
        return ((loss, aux) if has_aux else loss), g

    return run


def _group_prefixes(model, optimizer):
    """For each optimiser parameter group, the dotted path of its module in `model`."""
    slots = getattr(optimizer, "_slots", None)
    if slots is None or not callable(getattr(optimizer, "update_fn", None)):
        raise TypeError("TrainStep needs an ember.optim optimizer (with update_fn / functional_state)")
    paths = {id(m): p for p, m in model.named_modules()}
    prefixes = []
    for s in slots:
        m = s.get("module")
        if m is None or id(m) not in paths:
            raise ValueError("TrainStep: every parameter group of the optimizer must be the model or one "
                             "of its submodules (build it as optim.SGD(model, ...) or with groups "
                             "[{'params': model.encoder}, ...])")
        prefixes.append(paths[id(m)])
    return prefixes


def _join(prefix, name):
    return f"{prefix}.{name}" if prefix else name


class TrainStep:
    """A compiled training step.  `step(*batch)` runs
    `loss_fn(model, *batch)`, differentiates it with respect to the trainable
    parameters, applies the optimiser, and writes parameters, buffers, optimiser
    state and the advanced RNG key back; it returns the loss (and aux with
    `has_aux`).

    The compiled function is pure and explicit:
    `(params, buffers, opt_state, key, batch) -> (params, buffers, opt_state, key, loss, aux)`;
    training/eval modes and the set of frozen parameters are static (changing them
    recompiles).  `jit=False` runs the same function eagerly.

    `distributed=True` trains data-parallel across the processes of
    `ember.distributed` (launched with `mpiexec -n N`): each rank passes its own
    shard of the batch, the first call broadcasts rank 0's parameters, and inside
    the compiled step the gradients are averaged over `axis_name` by a bucketed
    all-reduce (`ember.distributed.all_reduce_gradients`) before the optimiser
    runs, so every rank applies the same update; the returned loss is the mean
    over ranks. Buffers (e.g. BatchNorm statistics) stay per rank. `bucket_bytes`
    (default 25 MiB, DDP's) sizes the buckets, filled last parameter first; each
    bucket's all-reduce starts as soon as the backward pass has produced it and is
    waited for just before the optimiser (see `all_reduce_gradients`).

    `policy=ember.amp.Policy(compute_dtype="bfloat16")` runs the loss under that
    policy's autocast (matmuls, convolutions and attention in bfloat16; softmax,
    normalisation and losses in float32) while the parameters stay float32 master
    weights and their gradients come back float32. `scaler=ember.amp.GradScaler()`
    adds dynamic loss scaling (for float16) inside the compiled step: the loss is
    scaled before differentiation, the gradients unscaled, a step with non-finite
    gradients is skipped (parameters and optimiser state unchanged) and the scale
    halves, and it doubles after `growth_interval` good steps; the scale is an
    input of the step, so changing it never recompiles.

    Example:
        >>> import ember.numpy as enp
        >>> from ember import nn, optim
        >>> model = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Dropout(0.1), nn.Linear(8, 1))
        >>> step = nn.TrainStep(model, optim.Adam(model, lr=1e-2),
        ...                     lambda m, x, y: nn.functional.mse_loss(m(x), y))
        >>> float(step(enp.ones((4, 2)), enp.zeros((4, 1)))) >= 0
        True
    """

    def __init__(self, model: Module, optimizer, loss_fn, has_aux: bool = False, jit: bool = True,
                 distributed: bool = False, axis_name="batch", policy=None, scaler=None,
                 bucket_bytes: int | None = None):
        import ember
        if not isinstance(model, Module):
            raise TypeError(f"TrainStep needs an nn.Module, got {type(model).__name__}")
        self.model, self.optimizer, self.loss_fn, self.has_aux = model, optimizer, loss_fn, has_aux
        self._prefixes = _group_prefixes(model, optimizer)
        self._group_names = [list(flatten_names(s["read"]() if s.get("read") else s["module"].parameters()))
                             for s in optimizer._slots]
        self._grouped = bool(getattr(optimizer, "_grouped", False))
        self.distributed, self.axis_name = bool(distributed), axis_name
        from ..distributed._gradients import DEFAULT_BUCKET_BYTES, check_bucket_bytes
        if bucket_bytes is None:
            bucket_bytes = DEFAULT_BUCKET_BYTES
        check_bucket_bytes(bucket_bytes, "TrainStep")
        self.bucket_bytes = int(bucket_bytes)
        self.policy, self.scaler = policy, scaler
        self._synced = False
        self._fn = ember.jit(self._pure, static_argnums=(0,)) if jit else self._pure

    def _signature(self):
        model = self.model
        modes = tuple((p, m.training) for p, m in model.named_modules())
        frozen = tuple(sorted(n for n, f in flatten_names(model.frozen_mask()).items() if f))
        # each tied slot's name -> the parameter's first name (the key of its value and
        # gradient), for groups that reach a tied parameter through another slot
        ties = tuple(sorted((n, g[0]) for n, g in model._tie_groups("param").items() if g[0] != n))
        return modes, frozen, ties

    def _to_opt(self, flat, alias):
        # each group shaped like what its optimiser slot reads (a trainable_parameters()
        # view holds fewer names than the submodule)
        trees = []
        for p, names in zip(self._prefixes, self._group_names):
            trees.append(unflatten_names(OrderedDict(
                (k, flat[alias.get(_join(p, k), _join(p, k))]) for k in names)))
        return trees if self._grouped else trees[0]

    def _scaled_loss_fn(self, loss_scale):
        """loss_fn with the policy's output cast and the loss scale applied; it
        returns (differentiated loss, (loss as reported, user aux))."""
        def fn(m, *args, **kwargs):
            out = self.loss_fn(m, *args, **kwargs)
            loss, aux = out if self.has_aux else (out, None)
            if self.policy is not None:
                loss = self.policy.cast_to_output(loss)
            scaled = loss_scale.scale(loss) if loss_scale is not None else loss
            return scaled, (loss, aux)
        return fn

    def _pure(self, sig, params, buffers, opt_state, key, loss_scale, args, kwargs):
        import contextlib
        from .. import random
        _, frozen_names, ties = sig
        frozen_set, alias = set(frozen_names), dict(ties)
        trainable = OrderedDict((k, v) for k, v in params.items() if k not in frozen_set)
        frozen = OrderedDict((k, v) for k, v in params.items() if k in frozen_set)
        key, sub = random.split(key)
        with self.policy.autocast() if self.policy is not None else contextlib.nullcontext():
            if self.policy is None and loss_scale is None:
                loss, aux, new_buffers, grads = _loss_value_and_grads(
                    self.model, self.loss_fn, self.has_aux, trainable, frozen, buffers, sub, args, kwargs)
            else:
                _, (loss, aux), new_buffers, grads = _loss_value_and_grads(
                    self.model, self._scaled_loss_fn(loss_scale), True, trainable, frozen, buffers,
                    sub, args, kwargs)
        if self.distributed:
            from ..distributed import all_reduce_gradients
            from ..fx.prims.collective import pmean
            grads = all_reduce_gradients(grads, self.axis_name, bucket_bytes=self.bucket_bytes)
            loss = pmean(loss, self.axis_name)
        if loss_scale is not None:
            from ..amp import all_finite
            grads = OrderedDict((k, g.astype(params[k].dtype))
                                for k, g in loss_scale.unscale(dict(grads)).items())
            finite = all_finite(grads)
            loss_scale = loss_scale.adjust(finite)
        new_opt_params, new_state = self.optimizer.update_fn(self._to_opt(params, alias),
                                                             self._to_opt(grads, alias), opt_state)
        trees = new_opt_params if self._grouped else [new_opt_params]
        new_params = OrderedDict(params)
        for p, t in zip(self._prefixes, trees):
            for k, v in flatten_names(t).items():
                name = alias.get(_join(p, k), _join(p, k))
                if name not in frozen_set:
                    new_params[name] = v
        if loss_scale is not None:   # an overflowed step is skipped
            from ..amp import select_tree
            new_params = select_tree(finite, new_params, OrderedDict(params))
            new_state = select_tree(finite, new_state, opt_state)
        return new_params, new_buffers, new_state, key, loss_scale, loss, aux

    def __call__(self, *args, **kwargs):
        if _in_transform():
            raise RuntimeError("TrainStep writes its results back into the model, so call it eagerly "
                               "(it compiles itself with ember.jit)")
        model = self.model
        if model.get_rng() is None:
            model.set_rng(_global_next_key())
        if self.distributed and not self._synced:
            from ..distributed import broadcast
            model.load_parameters(broadcast(OrderedDict(model.named_parameters())), include_frozen=True)
            self._synced = True
        params = OrderedDict(model.named_parameters())
        buffers = OrderedDict(model.named_buffers())
        state = self.optimizer.functional_state()
        scaling = self.scaler is not None and self.scaler.enabled
        loss_scale = self.scaler.state if scaling else None
        call = (self._fn, self._signature(), params, buffers, state, model.get_rng(), loss_scale, args,
                kwargs)
        if self.distributed:
            from ..distributed import process_axis
            with process_axis(self.axis_name):
                new_params, new_buffers, new_state, key, loss_scale, loss, aux = call[0](*call[1:])
        else:
            new_params, new_buffers, new_state, key, loss_scale, loss, aux = call[0](*call[1:])
        if scaling:
            self.scaler.state = loss_scale
        for v in list(new_params.values()) + list(new_buffers.values()):
            if isinstance(v, Tracer):
                raise RuntimeError("TrainStep produced traced state; do not call it under a transform")
        model.load_parameters(new_params, include_frozen=True)
        model.load_buffers(new_buffers)
        self.optimizer.apply_functional_state(new_state)
        object.__setattr__(model, "_rng_key", key)
        return (loss, aux) if self.has_aux else loss


def compile_step(model: Module, optimizer, loss_fn, has_aux: bool = False, jit: bool = True) -> TrainStep:
    """`TrainStep(model, optimizer, loss_fn)` under a function name.

    Example:
        >>> from ember import nn, optim
        >>> m = nn.Linear(1, 1)
        >>> type(nn.compile_step(m, optim.SGD(m, lr=0.1), lambda m, x: m(x).sum())).__name__
        'TrainStep'
    """
    return TrainStep(model, optimizer, loss_fn, has_aux, jit)


def compile_forward(model: Module, backend=None):
    """A compiled `model(*args)`: parameters and buffers are explicit inputs of the
    jitted function (so updating the model never serves stale values, and new values
    of the same shapes never recompile); buffers the pass updates (BatchNorm in
    training mode) are written back; dropout in training mode draws from the model's
    key.  `ember.jit(model)` returns the same.

    Example:
        >>> import ember.numpy as enp
        >>> from ember import nn
        >>> m = nn.Linear(2, 3).eval()
        >>> f = nn.compile_forward(m)
        >>> f(enp.ones((1, 2))).shape
        (1, 3)
    """
    return CompiledForward(model, backend)


class CompiledForward:
    """What `nn.compile_forward(model)` and `ember.jit(model)` return: call it like the
    model.  `compile_count` counts traces (a changed parameter value is an input, not a
    recompile).

    Example:
        >>> import ember, ember.numpy as enp
        >>> from ember import nn
        >>> m = nn.Linear(2, 1)
        >>> f = ember.jit(m)
        >>> _ = f(enp.ones((1, 2))); m.bias = m.bias + 1.0
        >>> bool(f(enp.ones((1, 2))) == m(enp.ones((1, 2)))), f.compile_count
        (True, 1)
    """

    def __init__(self, model, backend=None):
        import ember
        from .module import functional_call
        if not isinstance(model, Module):
            raise TypeError(f"compile_forward needs an nn.Module, got {type(model).__name__}")
        self.model = model

        def pure(modes, params, buffers, key, args, kwargs):
            return functional_call(model, (params, buffers), *args, rng=key, **kwargs)

        pure.__qualname__ = f"{type(model).__name__}.forward"
        self._fn = ember.jit(pure, static_argnums=(0,), backend=backend)

    @property
    def compile_count(self) -> int:
        return self._fn.compile_count

    def __call__(self, *args, **kwargs):
        model = self.model
        modes = tuple((p, m.training) for p, m in model.named_modules())
        key = model._next_step_key()
        out, new_buffers = self._fn(modes, dict(model.parameters()), model.buffers(), key, args, kwargs)
        model.load_buffers(new_buffers)
        return out
