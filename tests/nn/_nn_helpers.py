"""Shared helpers for the ember.nn tests: numpy references and torch bridging."""
import numpy as np

import ember.numpy as enp
from ember import random


def np_(x):
    return np.asarray(x)


def rnd(shape, seed=0, dtype=np.float32, scale=1.0):
    return enp.asarray((np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype))


def to_torch(x):
    import torch
    a = np.array(np.asarray(x))
    return torch.from_numpy(a)


def copy_to_torch(ember_module, torch_module):
    """Load an ember module's state_dict into a torch module (names must match)."""
    import torch
    sd = {k: torch.from_numpy(np.array(np.asarray(v))) for k, v in ember_module.state_dict().items()}
    tsd = torch_module.state_dict()
    for k in sd:
        if k in tsd:
            sd[k] = sd[k].to(tsd[k].dtype)
    missing, unexpected = torch_module.load_state_dict(sd, strict=True)
    assert not missing and not unexpected


def conv_nd_ref(x, w, b, stride, pad, dil, groups):
    """Direct cross-correlation in float64, NC... / OI... layouts, explicit zero padding."""
    x = np.asarray(x, np.float64)
    w = np.asarray(w, np.float64)
    nsp = x.ndim - 2
    x = np.pad(x, [(0, 0), (0, 0)] + [tuple(p) for p in pad])
    N, C = x.shape[:2]
    O = w.shape[0]
    k = w.shape[2:]
    outs = [(x.shape[2 + i] - dil[i] * (k[i] - 1) - 1) // stride[i] + 1 for i in range(nsp)]
    y = np.zeros((N, O) + tuple(outs))
    cg, og = C // groups, O // groups
    for o in range(O):
        g = o // og
        for idx in np.ndindex(*outs):
            for kk in np.ndindex(*k):
                pos = tuple(idx[i] * stride[i] + kk[i] * dil[i] for i in range(nsp))
                sl = (slice(None), slice(g * cg, (g + 1) * cg)) + pos
                y[(slice(None), o) + idx] += x[sl] @ w[(o, slice(None)) + kk]
    if b is not None:
        y += np.asarray(b, np.float64).reshape((1, -1) + (1,) * nsp)
    return y


def key(i=0):
    return random.key(i)


def value_shapes(graph):
    """Shapes of every value a graph computes, nested bodies (scan, cond, checkpoint)
    included; an explicit stack, not recursion."""
    from ember.fx.ir import subgraphs
    stack, out = [graph], set()
    while stack:
        g = stack.pop()
        g = getattr(g, "graph", g)
        for eq in g.equations:
            out.update(tuple(o.aval.shape) for o in eq.outputs)
            stack.extend(subgraphs(eq.params))
    return out
