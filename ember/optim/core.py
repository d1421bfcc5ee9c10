"""The functional optimiser core: gradient transformations, `chain`, `apply_updates`,
and hyperparameters that live in the optimiser state as arrays.

A `GradientTransformation` is a pair of pure functions:

    state = tx.init(params)
    updates, state = tx.update(grads, state, params)
    params = apply_updates(params, updates)        # params + updates

States are pytrees with named fields (NamedTuples and dicts), so they pass
through `ember.jit`, `ember.grad` and `ember.vmap`.  `inject_hyperparams` keeps a
transformation's numeric hyperparameters (learning rate, betas, eps, ...) and a
step count in its state, as arrays: changing the learning rate between steps
changes an input of a jitted step, never its trace, so nothing recompiles.

Example:
    >>> import ember.numpy as enp
    >>> from ember import optim
    >>> tx = optim.sgd(lr=0.5)
    >>> params = {"w": enp.asarray([1.0, 2.0])}
    >>> state = tx.init(params)
    >>> updates, state = tx.update({"w": enp.asarray([1.0, 1.0])}, state, params)
    >>> optim.apply_updates(params, updates)["w"].tolist()
    [0.5, 1.5]
    >>> state = optim.set_hyperparam(state, "lr", 0.01)
    >>> float(optim.get_hyperparam(state, "lr"))
    0.01
"""
from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import optree

from .. import tree
from ..fx.core import get_aval
from . import _ops

__all__ = ["GradientTransformation", "EmptyState", "InjectState", "chain", "apply_updates",
           "inject_hyperparams", "get_hyperparam", "set_hyperparam", "hyperparams",
           "check_same_structure", "validate_hyperparam"]


class GradientTransformation:
    """A pure optimiser building block: `init(params) -> state` and
    `update(grads, state, params=None) -> (updates, state)`.

    Unpacks like a pair: `init, update = tx`.

    Example:
        >>> tx = GradientTransformation(lambda p: EmptyState(), lambda g, s, p=None: (g, s))
        >>> init, update = tx
    """
    __slots__ = ("init", "update", "name")

    def __init__(self, init: Callable, update: Callable, name: str = "transform"):
        self.init = init
        self.update = update
        self.name = name

    def __iter__(self):
        return iter((self.init, self.update))

    def __repr__(self):
        return f"GradientTransformation({self.name})"


class EmptyState(NamedTuple):
    """The state of a stateless transformation."""


# --- pytree helpers ---------------------------------------------------------------

def _keystr(path) -> str:
    return "".join(f"[{k!r}]" for k in path) or "<root>"


def _describe(x) -> str:
    if x is None:
        return "None"
    if tree.structure(x).is_leaf():
        try:
            return f"a leaf ({get_aval(x).str_user()})"
        except TypeError:
            return f"a leaf of type {type(x).__name__}"
    if isinstance(x, dict):
        return f"a {type(x).__name__} with keys {sorted(map(str, x.keys()))}"
    if isinstance(x, (list, tuple)):
        return f"a {type(x).__name__} of length {len(x)}"
    return f"a {type(x).__name__} node"


def _first_difference(a, b, path=()):
    if tree.structure(a) == tree.structure(b):
        return None
    if type(a) is not type(b) or tree.structure(a).is_leaf() or tree.structure(b).is_leaf():
        return path, a, b
    oa = optree.tree_flatten_one_level(a, none_is_leaf=False, namespace=tree.NAMESPACE)
    ob = optree.tree_flatten_one_level(b, none_is_leaf=False, namespace=tree.NAMESPACE)
    ea, eb = list(oa.entries), list(ob.entries)
    if ea != eb:
        missing_b = [k for k in ea if k not in eb]
        missing_a = [k for k in eb if k not in ea]
        if missing_b:
            return path + (missing_b[0],), oa.children[ea.index(missing_b[0])], _MISSING
        if missing_a:
            return path + (missing_a[0],), _MISSING, ob.children[eb.index(missing_a[0])]
        return path, a, b
    for k, ca, cb in zip(ea, oa.children, ob.children):
        r = _first_difference(ca, cb, path + (k,))
        if r is not None:
            return r
    return path, a, b


class _Missing:
    def __repr__(self):
        return "nothing"


_MISSING = _Missing()


def check_same_structure(a, b, a_name: str = "grads", b_name: str = "params") -> None:
    """Raise a ValueError naming the first path where pytrees `a` and `b` differ.

    Example:
        >>> check_same_structure({"w": 1}, {"w": 2})
        >>> check_same_structure({"w": 1}, {"v": 2})
        Traceback (most recent call last):
        ...
        ValueError: grads and params have different pytree structures: at ['w'], grads has a leaf (int32[]) but params has nothing
    """
    r = _first_difference(a, b)
    if r is None:
        return
    path, x, y = r
    dx = "nothing" if x is _MISSING else _describe(x)
    dy = "nothing" if y is _MISSING else _describe(y)
    raise ValueError(f"{a_name} and {b_name} have different pytree structures: at "
                     f"{_keystr(path)}, {a_name} has {dx} but {b_name} has {dy}")


def zeros_like_tree(params, fill=0.0):
    """A pytree of arrays shaped like `params`, filled with `fill`.

    Example:
        >>> import ember.numpy as enp
        >>> zeros_like_tree({"w": enp.asarray([1.0, 2.0])}, 0.5)["w"].tolist()
        [0.5, 0.5]
    """
    if fill == 0.0:
        return tree.map(lambda p: _ops.zeros_like(p), params)
    return tree.map(lambda p: _ops.full_like(p, fill), params)


def leafwise(fn, trees, n_out: int):
    """Apply `fn` per leaf across `trees` (the first defines the structure; a `None`
    entry passes None per leaf) and return `n_out` pytrees of its results.

    Example:
        >>> leafwise(lambda a, b, c: (a + b, c), [{"x": 1}, {"x": 2}, None], 2)
        ({'x': 3}, {'x': None})
    """
    leaves0, td = tree.flatten(trees[0])
    cols = [leaves0]
    for t in trees[1:]:
        cols.append([None] * len(leaves0) if t is None else td.flatten_up_to(t))
    outs = [fn(*args) for args in zip(*cols)]
    return tuple(tree.unflatten(td, [o[i] for o in outs]) for i in range(n_out))


def require_params(params, who: str):
    """Raise a clear error when a rule that reads the parameters gets none.

    Example:
        >>> require_params([1.0], "adam")
        [1.0]
    """
    if params is None:
        raise ValueError(f"{who}.update needs the current parameters (weight decay and "
                         f"the update rule read them): call update(grads, state, params)")
    return params


def apply_updates(params, updates):
    """`params + updates` leaf-wise, keeping each parameter's dtype.

    Example:
        >>> import ember.numpy as enp
        >>> apply_updates([enp.asarray(1.0)], [enp.asarray(0.5)])[0].tolist()
        1.5
    """
    check_same_structure(updates, params, "updates", "params")

    def add(p, u):
        out = p + u
        dt = get_aval(p).dtype
        return out if get_aval(out).dtype == dt else _ops.astype(out, dt)
    return tree.map(add, params, updates)


# --- chain ------------------------------------------------------------------------

def chain(*transforms: GradientTransformation, **named: GradientTransformation) -> GradientTransformation:
    """Run transformations in sequence; the state is a dict keyed by each one's name.

    Positional transformations are keyed by their `name` (with `_1`, `_2`, ... added
    to repeats); keyword ones by the keyword.

    Example:
        >>> from ember.optim import clip_by_global_norm, adam
        >>> tx = chain(clip_by_global_norm(1.0), adam(lr=1e-3))
        >>> sorted(tx.init([]).keys())
        ['adam', 'clip_by_global_norm']
    """
    items: list[tuple[str, GradientTransformation]] = []
    used: set[str] = set()
    for t in transforms:
        _check_tx(t, "chain")
        base = t.name
        name, i = base, 0
        while name in used or name in named:
            i += 1
            name = f"{base}_{i}"
        used.add(name)
        items.append((name, t))
    for k, t in named.items():
        _check_tx(t, "chain")
        used.add(k)
        items.append((k, t))

    def init(params):
        return {n: t.init(params) for n, t in items}

    def update(grads, state, params=None):
        if not isinstance(state, dict) or set(state) != {n for n, _ in items}:
            raise ValueError(f"chain.update got a state that chain.init did not make: expected "
                             f"a dict with keys {[n for n, _ in items]}")
        new_state = {}
        for n, t in items:
            grads, new_state[n] = t.update(grads, state[n], params)
        return grads, new_state

    return GradientTransformation(init, update, "chain")


def _check_tx(t, who):
    if not isinstance(t, GradientTransformation):
        raise TypeError(f"{who} takes GradientTransformations, got {type(t).__name__}")


# --- hyperparameters --------------------------------------------------------------

def _nonneg(label):
    def check(v):
        if not v >= 0.0:
            raise ValueError(f"Invalid {label}: {v} (must be a non-negative number)")
    return check


def _unit_interval(label, closed_right=False):
    def check(v):
        ok = 0.0 <= v <= 1.0 if closed_right else 0.0 <= v < 1.0
        if not ok:
            rng = "[0, 1]" if closed_right else "[0, 1)"
            raise ValueError(f"Invalid {label}: {v} (must be in {rng})")
    return check


def _check_betas(v):
    if not isinstance(v, (tuple, list)) or len(v) != 2:
        raise ValueError(f"Invalid betas: {v!r} (expected a pair (beta1, beta2))")
    for i, b in enumerate(v):
        c = _ops.concrete(b)
        if c is not None and not 0.0 <= c < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {c} (must be in [0, 1))")


_CHECKS: dict[str, Callable] = {
    "lr": _nonneg("learning rate"),
    "eps": _nonneg("epsilon value"),
    "weight_decay": _nonneg("weight_decay value"),
    "momentum": _nonneg("momentum value"),
    "alpha": _nonneg("alpha value"),
    "rho": _unit_interval("rho value", closed_right=True),
    "lr_decay": _nonneg("lr_decay value"),
    "initial_accumulator_value": _nonneg("initial_accumulator_value"),
    "momentum_decay": _nonneg("momentum_decay value"),
    "max_norm": _nonneg("max_norm"),
    "clip_value": _nonneg("clip_value"),
}


def validate_hyperparam(name: str, value) -> None:
    """Raise a ValueError for an invalid concrete hyperparameter value (traced values
    and schedules are checked by nobody: their values are not known here).

    Example:
        >>> validate_hyperparam("lr", -1.0)
        Traceback (most recent call last):
        ...
        ValueError: Invalid learning rate: -1.0 (must be a non-negative number)
    """
    if callable(value):
        return
    if name == "betas":
        _check_betas(value)
        return
    check = _CHECKS.get(name)
    if check is None:
        return
    if isinstance(value, (tuple, list)):
        raise ValueError(f"Invalid {name}: {value!r} (expected a number)")
    c = _ops.concrete(value)
    if c is None:
        if _ops.is_array(value) or _ops.is_number(value):
            return
        raise TypeError(f"hyperparameter {name} must be a number or a scalar array, "
                        f"got {type(value).__name__}")
    check(c)


def _as_hp(name, value):
    """The state form of a hyperparameter: a float64 scalar array (or a tuple of them)."""
    if isinstance(value, (tuple, list)):
        return tuple(_as_hp(f"{name}[{i}]", v) for i, v in enumerate(value))
    if _ops.is_array(value):
        if get_aval(value).shape != ():
            raise ValueError(f"hyperparameter {name} must be a scalar, got shape {get_aval(value).shape}")
        return _ops.astype(value, _ops.float64)
    if isinstance(value, (bool, np.bool_)) or not _ops.is_number(value) and not isinstance(value, np.generic):
        raise TypeError(f"hyperparameter {name} must be a number or a scalar array, "
                        f"got {type(value).__name__}")
    return _ops.asarray(np.float64(value))


def _like(name, value, old):
    """`value` converted to the dtype and shape of the stored hyperparameter `old`."""
    if isinstance(old, tuple):
        if not isinstance(value, (tuple, list)) or len(value) != len(old):
            raise ValueError(f"hyperparameter {name} holds {len(old)} values; got {value!r}")
        return tuple(_like(f"{name}[{i}]", v, o) for i, (v, o) in enumerate(zip(value, old)))
    new = _as_hp(name, value)
    dt = get_aval(old).dtype
    return new if get_aval(new).dtype == dt else _ops.astype(new, dt)


class InjectState(NamedTuple):
    """State of `inject_hyperparams`: the update count, the hyperparameters as arrays,
    and the state of the transformation they configure."""
    count: Any
    hyperparams: dict
    inner_state: Any


def inject_hyperparams(factory: Callable, static_args: tuple = (), name: str | None = None) -> Callable:
    """Wrap `factory(**hyperparams) -> GradientTransformation` so that its numeric
    hyperparameters live in the state as float64 scalar arrays.

    Each `update` rebuilds the transformation from the arrays in the state, so a
    changed value (`set_hyperparam`) reaches the next step without a retrace.  A
    hyperparameter given as a callable is a schedule: it is evaluated at the update
    count on each update.  Names in `static_args`, and arguments whose default is a
    bool, a string or None (flags such as `nesterov`), stay Python values fixed at
    construction.

    Example:
        >>> from ember.optim.transforms import scale
        >>> tx = inject_hyperparams(scale)(step_size=0.5)
        >>> float(get_hyperparam(tx.init([]), "step_size"))
        0.5
    """
    sig = inspect.signature(factory)
    name = name or getattr(factory, "__name__", "transform").lstrip("_")

    def make(*args, **kwargs) -> GradientTransformation:
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{name}: {e}") from None
        bound.apply_defaults()
        static, numeric, schedules = {}, {}, {}
        for k, v in bound.arguments.items():
            default = sig.parameters[k].default
            if k in static_args or default is None or isinstance(default, (bool, str, np.bool_)):
                static[k] = v
            elif callable(v):
                schedules[k] = v
            else:
                validate_hyperparam(k, v)
                numeric[k] = _as_hp(k, v)
        # Building once here surfaces argument errors at construction, not at update.
        factory(**static, **numeric, **{k: _ops.asarray(np.float64(0.0)) for k in schedules})

        def init(params):
            hp = dict(numeric)
            for k, fn in schedules.items():
                hp[k] = _as_hp(k, fn(0))
            inner = factory(**static, **hp)
            return InjectState(_ops.asarray(np.int32(0)), hp, inner.init(params))

        def update(grads, state, params=None):
            if not isinstance(state, InjectState):
                raise TypeError(f"{name}.update got a {type(state).__name__} state; pass the state "
                                f"returned by {name}.init / the previous update")
            if params is not None:
                check_same_structure(grads, params)
            hp = dict(state.hyperparams)
            for k, fn in schedules.items():
                hp[k] = _like(k, fn(state.count), hp[k])
            inner = factory(**static, **hp)
            updates, inner_state = inner.update(grads, state.inner_state, params)
            return updates, InjectState(state.count + 1, hp, inner_state)

        return GradientTransformation(init, update, name)

    make.__name__ = name
    make.__doc__ = factory.__doc__
    make.__wrapped__ = factory
    return make


def _is_inject(x):
    return isinstance(x, InjectState)


def _find(state, name):
    out = []

    def walk(node):
        for leaf in tree.leaves(node, is_leaf=_is_inject):
            if isinstance(leaf, InjectState):
                if name in leaf.hyperparams:
                    out.append(leaf.hyperparams[name])
                walk(leaf.inner_state)
    walk(state)
    return out


def hyperparams(state) -> dict:
    """All injected hyperparameters in `state` (name -> array; the first of repeats).

    Example:
        >>> from ember.optim import adam
        >>> sorted(hyperparams(adam().init([])))
        ['betas', 'eps', 'lr', 'weight_decay']
    """
    out = {}

    def walk(node):
        for leaf in tree.leaves(node, is_leaf=_is_inject):
            if isinstance(leaf, InjectState):
                for k, v in leaf.hyperparams.items():
                    out.setdefault(k, v)
                walk(leaf.inner_state)
    walk(state)
    return out


def get_hyperparam(state, name: str):
    """The value of hyperparameter `name` stored in `state` (the first one found).

    Example:
        >>> from ember.optim import sgd
        >>> float(get_hyperparam(sgd(lr=0.5).init([]), "lr"))
        0.5
    """
    found = _find(state, name)
    if not found:
        raise ValueError(f"no hyperparameter {name!r} in this optimizer state; it has "
                         f"{sorted(hyperparams(state))}")
    return found[0]


def set_hyperparam(state, name: str, value):
    """A new state with every injected hyperparameter `name` set to `value`.

    The value keeps the stored dtype and shape, so a jitted step that takes the
    state does not recompile.  Works on traced values too.

    Example:
        >>> from ember.optim import sgd
        >>> s = set_hyperparam(sgd(lr=0.5).init([]), "lr", 0.25)
        >>> float(get_hyperparam(s, "lr"))
        0.25
    """
    validate_hyperparam(name, value)
    hit = [False]

    def rewrite(node):
        if not isinstance(node, InjectState):
            return node
        hp = node.hyperparams
        if name in hp:
            hit[0] = True
            hp = {**hp, name: _like(name, value, hp[name])}
        return InjectState(node.count, hp, tree.map(rewrite, node.inner_state, is_leaf=_is_inject))

    new = tree.map(rewrite, state, is_leaf=_is_inject)
    if not hit[0]:
        raise ValueError(f"no hyperparameter {name!r} in this optimizer state; it has "
                         f"{sorted(hyperparams(state))}")
    return new
