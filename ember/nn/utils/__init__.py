"""Gradient and parameter utilities on pytrees: `clip_grad_norm`, `clip_grad_value`,
`parameters_to_vector` / `vector_to_parameters`, and `stack_module_state` for
ensembles under `ember.vmap`.

They are pure: the clipping functions return new gradients instead of modifying
them in place (PyTorch's `clip_grad_norm_` is kept as an alias that returns the
same pair).

Example:
    >>> import ember.numpy as enp
    >>> from ember.nn import utils
    >>> g, norm = utils.clip_grad_norm({"w": enp.asarray([3.0, 4.0])}, max_norm=1.0)
    >>> round(norm.item(), 3), [round(v, 3) for v in g["w"].tolist()]
    (5.0, [0.6, 0.8])
"""
from __future__ import annotations

import numpy as np

from ... import numpy as enp
from ... import tree
from ...fx.core import Tracer

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value", "clip_grad_value_",
           "get_total_norm", "parameters_to_vector", "vector_to_parameters", "stack_module_state"]


def _reject_parameters(grads, fn):
    """PyTorch's `clip_grad_norm_(model.parameters(), ...)` clips the `.grad` stored on
    each parameter; ember parameters carry no gradient, so clipping them would return
    clipped *weights* that nothing reads.  Refuse instead of silently doing nothing."""
    from ..module import Module, NamedParameters, ParameterView
    if isinstance(grads, (Module, ParameterView, NamedParameters)):
        what = "a Module" if isinstance(grads, Module) else "the parameters of a module"
        raise TypeError(
            f"nn.utils.{fn}: got {what}, but ember keeps no gradients on parameters (PyTorch "
            f"clips each parameter's .grad). Pass the gradient pytree and use the result: "
            f"loss, grads = nn.value_and_grad(model, loss_fn)(x); "
            f"grads{', norm' if 'norm' in fn else ''} = nn.utils.{fn}(grads, ...); "
            f"optimizer.step(grads)")


def get_total_norm(tensors, norm_type: float = 2.0):
    """The `norm_type`-norm of all leaves of a pytree taken together.

    Example:
        >>> import ember.numpy as enp
        >>> get_total_norm([enp.asarray([3.0]), enp.asarray([4.0])]).item()
        5.0
    """
    e = enp
    leaves = [e.asarray(x) for x in tree.leaves(tensors)]
    if not leaves:
        return e.asarray(0.0)
    norm_type = float(norm_type)
    if norm_type == float("inf"):
        return e.max(e.stack([e.max(e.abs(x)) for x in leaves]))
    if norm_type == 2.0:
        return e.sqrt(sum(e.sum(e.square(x.astype(e.float32) if x.dtype.itemsize < 4 else x))
                          for x in leaves))
    return sum(e.sum(e.abs(x) ** norm_type) for x in leaves) ** (1.0 / norm_type)


def clip_grad_norm(grads, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False):
    """Scale a gradient pytree so its total `norm_type`-norm is at most `max_norm`;
    returns `(clipped_grads, total_norm)` (the norm before clipping).  With
    `error_if_nonfinite`, a NaN/inf norm raises (only when the norm is concrete).

    Nothing is modified in place, also under the PyTorch name `clip_grad_norm_`:
    pass the gradients (not `model.parameters()`, which raises a TypeError, since
    ember parameters hold no `.grad`) and step the optimiser with the result.

    Example:
        >>> import ember.numpy as enp
        >>> g, n = clip_grad_norm([enp.asarray([0.3, 0.4])], 1.0)
        >>> [round(v, 3) for v in g[0].tolist()]
        [0.3, 0.4]
    """
    _reject_parameters(grads, "clip_grad_norm_")
    e = enp
    total = get_total_norm(grads, norm_type)
    if error_if_nonfinite and not isinstance(total, Tracer) and not np.isfinite(np.asarray(total)):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients is non-finite, so it "
                           f"cannot be clipped. To disable this error, set error_if_nonfinite=False")
    coef = e.minimum(max_norm / (total + 1e-6), 1.0)
    clipped = tree.map(lambda g: (e.asarray(g) * coef).astype(e.asarray(g).dtype), grads)
    return clipped, total


clip_grad_norm_ = clip_grad_norm


def clip_grad_value(grads, clip_value: float):
    """Clamp every gradient entry to [-clip_value, clip_value]; returns the new
    gradient pytree (`model.parameters()` raises a TypeError, as for `clip_grad_norm`).

    Example:
        >>> import ember.numpy as enp
        >>> clip_grad_value({"w": enp.asarray([-3.0, 0.5])}, 1.0)["w"].tolist()
        [-1.0, 0.5]
    """
    _reject_parameters(grads, "clip_grad_value_")
    e = enp
    c = float(clip_value)
    return tree.map(lambda g: e.clip(e.asarray(g), -c, c), grads)


clip_grad_value_ = clip_grad_value


def _ordered(parameters):
    """(leaves, rebuild) in PyTorch's order: a module's registration order, a dict's
    insertion order (nested dicts depth first), other pytrees in leaf order.  Plain
    pytree flattening would sort dict keys, so `weight` and `bias` would swap."""
    from ..module import Module
    if isinstance(parameters, Module):
        parameters = parameters.parameters()
    if isinstance(parameters, dict):
        from .._names import flatten_names, unflatten_names
        flat = flatten_names(parameters)
        if all(not isinstance(v, (list, tuple)) for v in flat.values()):
            names = list(flat)
            return list(flat.values()), lambda vals: unflatten_names(dict(zip(names, vals)))
    if not isinstance(parameters, (dict, list, tuple)) and hasattr(parameters, "__iter__"):
        parameters = list(parameters)  # a generator of arrays, as torch accepts
    leaves, treedef = tree.flatten(parameters)
    return leaves, lambda vals: tree.unflatten(treedef, vals)


def parameters_to_vector(parameters):
    """All parameters (a module, `model.parameters()`, a dict, a list or another
    pytree) flattened and concatenated into one vector, in registration order as
    PyTorch's `parameters_to_vector(model.parameters())` (a dict's insertion order).

    Example:
        >>> import ember.numpy as enp
        >>> from ember import nn
        >>> m = nn.Linear(2, 1)
        >>> v = parameters_to_vector(m.parameters())
        >>> v.shape, v[-1].item() == m.bias.item()
        ((3,), True)
    """
    e = enp
    leaves, _ = _ordered(parameters)
    leaves = [e.reshape(e.asarray(x), (-1,)) for x in leaves]
    if not leaves:
        return e.zeros((0,))
    return e.concat(leaves, axis=0)


def vector_to_parameters(vec, parameters):
    """Split a vector (in `parameters_to_vector`'s order) back into a pytree shaped
    like `parameters` and return it.  Given a module or `model.parameters()`, the
    values are also written into the module (frozen parameters included), as
    PyTorch's in-place `vector_to_parameters(vec, model.parameters())` does; a plain
    pytree is left alone (arrays are immutable), only the result holds the values.

    Example:
        >>> import ember.numpy as enp
        >>> from ember import nn
        >>> p = {"a": enp.ones((2, 2)), "b": enp.zeros(1)}
        >>> vector_to_parameters(enp.arange(5.0), p)["b"].tolist()
        [4.0]
        >>> m = nn.Linear(2, 1)
        >>> _ = vector_to_parameters(enp.asarray([1.0, 2.0, 3.0]), m.parameters())
        >>> m.weight.tolist(), m.bias.tolist()
        ([[1.0, 2.0]], [3.0])
    """
    from ..module import Module
    e = enp
    module = parameters if isinstance(parameters, Module) else None
    source = getattr(parameters, "module_source", None)
    if module is None and callable(source):
        module = source()[0]
    leaves, rebuild = _ordered(parameters)
    vec = e.asarray(vec)
    total = sum(int(np.prod(x.shape)) for x in leaves)
    if vec.ndim != 1 or vec.shape[0] != total:
        raise ValueError(f"vector_to_parameters: expected a vector of {total} entries, got shape "
                         f"{vec.shape}")
    out, off = [], 0
    for x in leaves:
        n = int(np.prod(x.shape))
        out.append(e.reshape(vec[off:off + n], x.shape).astype(x.dtype))
        off += n
    result = rebuild(out)
    if module is not None:
        module.load_parameters(result, include_frozen=True)
    return result


def stack_module_state(models):
    """Stack the parameters and buffers of same-shaped modules along a new leading
    axis: `(params, buffers)` for `ember.vmap` over `nn.functional_call` (ensembles).

    Example:
        >>> from ember import nn
        >>> params, buffers = stack_module_state([nn.Linear(2, 3) for _ in range(4)])
        >>> params["weight"].shape
        (4, 3, 2)
    """
    e = enp
    models = list(models)
    if not models:
        raise ValueError("stack_module_state: expected at least one module")
    ps = [m.parameters() for m in models]
    bs = [m.buffers() for m in models]
    params = tree.map(lambda *xs: e.stack(xs), *ps)
    buffers = tree.map(lambda *xs: e.stack(xs), *bs)
    return params, buffers


# PyTorch's submodules, reachable as attributes (`nn.utils.rnn.pack_padded_sequence`)
from . import rnn, parametrize, parametrizations  # noqa: E402,F401
