"""Small helpers shared by the transforms: argument conversion and checks."""
from __future__ import annotations

import functools
import inspect

import numpy as np
import optree

from .. import dtypes as _dt
from .._host import from_host
from ..array import Array
from ..fx.core import AbstractArray, Tracer, get_aval, user_source, weak_const
from ..fx.ir import constant_key
from ..fx.prims.convert import convert_element_type
from ..tree import tree_flatten, tree_unflatten


class PrimalTracer(Tracer):
    """A forward-mode tracer (jvp, jet, the forward Laplacian) carrying a `primal`
    plus its transform's coefficients: its abstract value and concrete value are the
    primal's."""
    __slots__ = ()

    @property
    def aval(self):
        return get_aval(self.primal)

    def concrete_value(self):
        p = self.primal
        return p.concrete_value() if isinstance(p, Tracer) else p


def as_ember(x, dtype=None):
    """Arrays and tracers pass through; numpy and Python values become Arrays."""
    if isinstance(x, (Array, Tracer)):
        if dtype is not None and x.dtype != dtype:
            return convert_element_type(x, dtype)
        return x
    if isinstance(x, np.ndarray) and x.dtype == _dt.float0:
        return x
    try:
        return from_host(x, None if dtype is None else _dt.canonicalize(dtype))
    except TypeError:
        raise TypeError(f"{type(x).__name__} is not a valid argument to a transformed function: "
                        f"only arrays, numpy arrays, Python scalars and pytrees of them are; "
                        f"mark it with static_argnums if it is configuration"
                        + (f"\n  at {user_source()}" if user_source() else "")) from None


_SCALAR_TYPES = (bool, int, float, complex)


def as_ember_weak(x):
    """`as_ember`, except that a Python scalar becomes a *weakly typed* rank-0 Array
    (as JAX keeps it): a Python-float loop carry or cond operand then promotes like
    the Python float it is (`fori_loop(0, n, f, 0.0) + float16_array` is float16).

    Example:
        >>> as_ember_weak(1.0).weak_type, as_ember(1.0).weak_type
        (True, False)
    """
    if type(x) in _SCALAR_TYPES:
        a = get_aval(x)
        y = as_ember(x, a.dtype)
        # the same buffer under the weak aval: a concrete value, so a staged program
        # holds a literal, not a conversion equation
        return weak_const(y._value) if a.weak_type else y
    return as_ember(x)


def is_value(x) -> bool:
    """Whether `x` can be a traced function's input or output leaf as it is
    (an ember Array or tracer, a numpy array or scalar, a Python number)."""
    if type(x) in _SCALAR_TYPES or isinstance(x, (Array, Tracer, np.generic)):
        return True
    return isinstance(x, np.ndarray) and x.dtype != object


_VALUES = "arrays, numpy arrays, Python scalars and pytrees of them"


def as_ember_args(api: str, fun, leaves, treedef, argnums=None, with_kwargs: bool = False,
                  root: str | None = None, convert=None) -> list:
    """`as_ember` of each argument leaf; a leaf that is not an array-like value is
    a TypeError naming it as the user wrote it (`params['w']`, from `fun`'s
    signature, or from `root` for a named value such as `init`).  `convert`
    replaces `as_ember` (e.g. `get_aval`, to keep Python scalars weakly typed).

    Example:
        >>> from ember.tree import flatten
        >>> leaves, td = flatten((1.0, {"w": 2.0}))
        >>> [float(v) for v in as_ember_args("jit", lambda x, p: x, leaves, td)]
        [1.0, 2.0]
    """
    out = []
    for i, x in enumerate(leaves):
        try:
            out.append((convert or as_ember)(x))
        except TypeError:
            names = (leaf_names(treedef, root) if root is not None
                     else argument_names(fun, treedef, argnums, with_kwargs))
            static = ("; mark it static with static_argnums / static_argnames if it is "
                      "configuration" if api.startswith("jit") else "")
            raise TypeError(f"{api}: argument `{names[i]}` of {fun_location(fun)} is "
                            f"{describe_value(x)}, which is not a valid ember value (only "
                            f"{_VALUES} are){static}{at_user()}") from None
    return out


def flatten_outputs(api: str, fun, out, root: str = "output"):
    """`tree_flatten(out)` of what a user's function returned; a leaf that is not
    an array-like value is a TypeError naming that output (`output['b']`) and the
    function, at the transform's boundary rather than deep inside it.

    Example:
        >>> flatten_outputs("jit", len, {"a": 1.0})[0]
        [1.0]
    """
    leaves, tree = tree_flatten(out)
    for i, x in enumerate(leaves):
        if not is_value(x):
            raise bad_output_error(api, fun, leaf_names(tree, root)[i], x)
    return leaves, tree


def bad_output_error(api: str, fun, name: str, x) -> TypeError:
    """The error for a returned leaf `x` (named `name`) that is not an array-like value."""
    return TypeError(f"{api}: {'the ' if name == 'output' else ''}{name} of {fun_location(fun)} "
                     f"is {describe_value(x)}, which is not a valid ember value: a "
                     f"transformed function must return {_VALUES}{at_user()}")


def static_key(value):
    """A cache key for a static (Python) argument: equal only when the types and
    values are equal, element by element inside tuples and frozensets.

    Python's `==` says `2 == 2.0 == True` and `-0.0 == 0.0`, but a function
    traced with one of them may compute something different with another (the
    dtype of `x * s`, `math.copysign(1, s)`), so a cache keyed by value alone
    would hand back the wrong program.  Floats are keyed by their bits (which
    also makes a NaN static hit the cache), numpy scalars by type and bits, both
    through `fx.ir.constant_key`, the one identity of a constant.

    Example:
        >>> static_key(2) == static_key(2.0), static_key((1, 0.0)) == static_key((1, -0.0))
        (False, False)
        >>> static_key((1, "a")) == static_key((1, "a"))
        True
    """
    out: list = []
    todo = [(value, False)]
    while todo:  # post-order, iteratively: statics may be deeply nested tuples
        x, children_done = todo.pop()
        if children_done:
            n = len(x)
            kids = tuple(out[len(out) - n:]) if n else ()
            del out[len(out) - n:]
            out.append((type(x), frozenset(kids) if isinstance(x, frozenset) else kids))
        elif isinstance(x, (tuple, frozenset)):
            todo.append((x, True))
            todo.extend((c, False) for c in reversed(list(x)))
        elif isinstance(x, (float, complex, np.generic)):
            out.append((type(x), constant_key(x, np.asarray(x).dtype)))
        else:
            out.append((type(x), x))
    return out[0]


def leaf_names(treedef, root: str) -> list[str]:
    """How the user would write each leaf of `treedef`, starting from `root`.

    Example:
        >>> from ember.tree import flatten
        >>> leaf_names(flatten({"w": [1, 2], "b": 3})[1], "params")
        ["params['b']", "params['w'][0]", "params['w'][1]"]
    """
    return [a.codify(root) for a in treedef.accessors()]


def _positional_names(fun):
    """(names of fun's positional parameters, name of its *args or None)."""
    try:
        ps = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        return [], None
    pos = [p.name for p in ps if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    var = next((p.name for p in ps if p.kind == p.VAR_POSITIONAL), None)
    return pos, var


def argument_names(fun, treedef, argnums=None, with_kwargs: bool = False) -> list[str]:
    """The user's name for each leaf of a function's flattened arguments, e.g.
    `params['w']`, from the function's signature and the pytree path.

    `treedef` flattens the tuple of positional arguments (entry i is argument
    `argnums[i]` when given), or `(args, kwargs)` when `with_kwargs`.

    Example:
        >>> from ember.tree import flatten
        >>> argument_names(lambda x, params: x, flatten((1, {"w": 2}))[1])
        ['x', "params['w']"]
    """
    pos, var = _positional_names(fun)
    out = []
    for acc in treedef.accessors():
        entries = tuple(acc)
        if with_kwargs:
            top, entries = entries[0].entry, entries[1:]
            if top == 1:  # the kwargs dict: its key is the parameter's name
                out.append(optree.PyTreeAccessor(entries[1:]).codify(str(entries[0].entry)))
                continue
        i, entries = entries[0].entry, entries[1:]
        n = argnums[i] if argnums is not None else i
        if n < len(pos):
            base = pos[n]
        elif var is not None:
            base = f"{var}[{n - len(pos)}]"
        else:
            base = f"argument {n}"
        out.append(optree.PyTreeAccessor(entries).codify(base))
    return out


def at_user() -> str:
    """'\n  at file:line (function)' of the user's code, or '': every user error ends with it.

    Example:
        >>> isinstance(at_user(), str)
        True
    """
    src = user_source()
    return f"\n  at {src}" if src else ""


def check_diff_input(api: str, aval: AbstractArray, name: str, allow_int: bool = False):
    """Differentiating with respect to an integer/bool input needs `allow_int`
    (its derivative is a float0 zero): the one check of every derivative entry point.

    Example:
        >>> check_diff_input("grad", AbstractArray((), "float32"), "x")
    """
    if _dt.is_inexact(aval.dtype) or (allow_int and aval.dtype != _dt.float0):
        return
    hint = ("pass allow_int=True (they get float0 zero gradients) or use argnums to skip them"
            if api in ("grad", "value_and_grad") else "use argnums to skip them")
    raise TypeError(f"{api} requires real- or complex-valued inputs (input dtype that is a "
                    f"sub-dtype of floating), but got {aval.dtype.name} for {name}. If you want "
                    f"to use integer-valued inputs, {hint}.{at_user()}")


def check_diff_output(api: str, aval: AbstractArray, name: str):
    """Reverse mode seeds a cotangent for every output: an integer/bool output has
    none (its derivative is float0, not zero), so grad/jacrev/hessian refuse it,
    as JAX does, instead of returning zeros.  `vjp` and `jvp` stay the escape hatch.

    Example:
        >>> check_diff_output("grad", AbstractArray((), "float32"), "the output")
    """
    if _dt.is_inexact(aval.dtype):
        return
    raise TypeError(f"{api} requires real-valued outputs (output dtype that is a sub-dtype of "
                    f"inexact), but got {aval.dtype.name} for {name}. Integer and boolean "
                    f"values have no derivative: differentiate a floating-point computation, "
                    f"or use ember.vjp directly (integer outputs take float0 cotangents).{at_user()}")


def check_holomorphic(api: str, aval: AbstractArray, name: str, holomorphic: bool, where: str):
    """The complex-dtype contract of jacfwd (inputs), jacrev and grad (outputs), as JAX's:
    with holomorphic=False those must be real, since a complex one would silently give
    only the derivative along the real axis (jacfwd) or drop the imaginary part of the
    cotangent (jacrev); with holomorphic=True inputs and outputs must all be complex.

    Example:
        >>> check_holomorphic("jacrev", AbstractArray((), "float32"), "the output", False, "output")
    """
    cplx = np.dtype(aval.dtype).kind == "c"
    if holomorphic and not cplx:
        raise TypeError(f"{api} with holomorphic=True requires {where}s with complex dtype, but got "
                        f"{np.dtype(aval.dtype).name} for {name}.{at_user()}")
    if not holomorphic and cplx:
        other = "jvp" if where == "input" else "vjp"
        raise TypeError(f"{api} requires real-valued {where}s (an {where} dtype that is a sub-dtype of "
                        f"floating), but got {np.dtype(aval.dtype).name} for {name}. For holomorphic "
                        f"differentiation, pass holomorphic=True. For differentiation of "
                        f"non-holomorphic functions involving complex {where}s, use ember.{other} "
                        f"directly.{at_user()}")


def float0_zeros(aval: AbstractArray):
    return np.zeros(aval.shape, dtype=_dt.float0)


def check_same_structure(what, t1, t2, n1, n2):
    if t1 != t2:
        raise TypeError(f"{what}: {n1} and {n2} must have the same pytree structure, got\n"
                        f"  {n1}: {t1}\n  {n2}: {t2}")


def normalize_argnums(argnums, nargs, what="argnums"):
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)
    out = []
    for a in nums:
        if not isinstance(a, int):
            raise TypeError(f"{what} must be an int or a tuple of ints, got {argnums!r}{at_user()}")
        if not -nargs <= a < nargs:
            raise ValueError(f"{what}={a} is out of range for a function called with {nargs} "
                             f"positional arguments (negative ones count from the end){at_user()}")
        out.append(a % nargs)
    return single, tuple(out)


def aux_pair(api: str, fun, out):
    """`out` as (output, aux), or a TypeError naming `fun` when has_aux=True was
    given for a function that does not return a pair.

    Example:
        >>> aux_pair("grad", len, (1.0, {"loss": 2}))
        (1.0, {'loss': 2})
    """
    if isinstance(out, tuple) and len(out) == 2:
        return out
    raise TypeError(f"{api}(..., has_aux=True): {fun_location(fun)} must return a pair "
                    f"(output, aux), but returned {describe_value(out)}{at_user()}")


def flat_with_aux(fun, in_tree, has_aux: bool, api: str = "", user_fun=None):
    """Wrap `fun(*pytrees)` as `flat(*leaves) -> out_leaves + aux_leaves`.

    Auxiliary outputs travel through the transform as outputs so that they come
    out as primal values (never as a transform's tracers); `store` receives
    `out_tree`, `n_out` and `aux_tree` when the function runs.
    """
    store = {}

    def flat(*xs):
        out = fun(*tree_unflatten(in_tree, list(xs)))
        aux_leaves = []
        if has_aux:
            out, aux = aux_pair(api, user_fun or fun, out)
            all_aux, store["aux_tree"] = tree_flatten(aux)
            # only array-like aux leaves travel through the transform; others (strings,
            # objects) are kept aside and put back by split_aux
            is_arr = [_array_like(a) for a in all_aux]
            store["aux_static"] = [None if m else a for a, m in zip(all_aux, is_arr)]
            aux_leaves = [a for a, m in zip(all_aux, is_arr) if m]
        leaves, store["out_tree"] = flatten_outputs(api or "transform", user_fun or fun, out)
        store["n_out"] = len(leaves)
        return list(leaves) + list(aux_leaves)

    return flat, store


def _array_like(x) -> bool:
    return isinstance(x, (Array, Tracer, np.ndarray, np.generic, bool, int, float, complex))


def split_aux(store, values):
    """(output leaves, aux pytree or None) from the flat results of `flat_with_aux`."""
    n = store["n_out"]
    if "aux_tree" not in store:
        return list(values[:n]), None
    it = iter(values[n:])
    leaves = [next(it) if s is None else s for s in store["aux_static"]]
    return list(values[:n]), tree_unflatten(store["aux_tree"], leaves)


def fun_location(fun) -> str:
    """`name (file:line)` of a user's function, for errors about what it returned.

    Example:
        >>> fun_location(len)
        'len'
    """
    f = fun
    for _ in range(100):  # bounded: a __wrapped__ chain may be cyclic
        if not (isinstance(f, functools.partial) or hasattr(f, "__wrapped__")):
            break
        # a wrapper (autograd.Function's bwd, functools.wraps) names what the user wrote
        f = f.func if isinstance(f, functools.partial) else f.__wrapped__
    name = getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or type(f).__name__
    name = name.rsplit("<locals>.", 1)[-1]  # the file:line says where; keep the name short
    if name.endswith("<lambda>"):
        name = "lambda"
    code = getattr(f, "__code__", None)
    if code is None:
        code = getattr(getattr(f, "__call__", None), "__code__", None)
    return f"{name} ({code.co_filename}:{code.co_firstlineno})" if code is not None else name


def describe_value(x) -> str:
    """'an array float32[3]', 'a tuple of length 2', 'a str': what a user's function returned.

    Example:
        >>> describe_value((1, 2)), describe_value("a")
        ('a tuple of length 2', 'a str')
    """
    a = getattr(x, "aval", None)
    if isinstance(a, AbstractArray):
        return f"an array {a.str_user()}"
    if isinstance(x, (tuple, list)):
        return f"a {type(x).__name__} of length {len(x)}"
    t = type(x).__name__
    return f"{'an' if t[:1].lower() in 'aeiou' else 'a'} {t}"


def first_type_mismatch(a_tree, a_avals, b_tree, b_avals, root: str):
    """(path, aval_a, aval_b) of the first leaf whose shape or dtype differs, or
    None; with different structures, (None, a_tree, b_tree).

    Example:
        >>> from ember.tree import flatten
        >>> t = flatten((1, 2))[1]
        >>> f, i = AbstractArray((), "float32"), AbstractArray((), "int32")
        >>> first_type_mismatch(t, [f, f], t, [f, i], "carry")
        ('carry[1]', AbstractArray((), float32), AbstractArray((), int32))
    """
    if a_tree != b_tree:
        return None, a_tree, b_tree
    for name, x, y in zip(leaf_names(a_tree, root), a_avals, b_avals):
        if x.shape != y.shape or x.dtype != y.dtype:
            return name, x, y
    return None


def mismatch_message(what: str, names: tuple[str, str], mismatch) -> str:
    """'... but carry[1] is float32[] in init and int32[] in the body's carry' (the
    user-facing spelling of a `first_type_mismatch`)."""
    path, a, b = mismatch
    if path is None:
        return (f"{what}, but the structures differ:\n  {names[0]}: {a}\n  {names[1]}: {b}")
    return (f"{what}, but {path} is {a.str_user()} in {names[0]} and {b.str_user()} in "
            f"{names[1]}")
