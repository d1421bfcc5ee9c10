"""Checkpoints: `save`/`load` pytrees and state dicts as safetensors files.

Every array leaf becomes one tensor named by its path in the tree, joined with
"." (so a module's `state_dict()` keeps PyTorch's names and the file loads in
any safetensors reader).  The tree's structure -- nested dicts (string or int
keys), lists, tuples, None, and Python bool/int/float/str leaves such as
hyperparameters -- is recorded as JSON in the file's metadata under
"ember.structure"; `load` rebuilds it.  A file without that entry (e.g. written by
PyTorch) loads as a flat dict of its tensors.

dtypes are kept, bfloat16 included (stored as safetensors "BF16").  Where the
installed safetensors cannot encode a dtype (bfloat16 in old versions, complex128),
the tensor is stored through a same-width view (uint16 for bfloat16, float64 pairs
for complex128) and its real dtype is recorded in the metadata under
"ember.dtypes"; `load` restores it.

Loading never executes code from the file (no pickle: only JSON and raw tensor
bytes are read), and a truncated or malformed file raises `CheckpointError` with
the reason.

Example:
    >>> import os, tempfile
    >>> import ember, ember.numpy as enp
    >>> p = os.path.join(tempfile.mkdtemp(), "ckpt.safetensors")
    >>> ember.save(p, {"w": enp.ones((2, 2)), "step": 3, "groups": [{"lr": 0.1}]})
    >>> out = ember.load(p)
    >>> out["step"], out["groups"], out["w"].shape
    (3, [{'lr': 0.1}], (2, 2))
"""
from __future__ import annotations

import json
import os

import ml_dtypes
import numpy as np

__all__ = ["save", "load", "CheckpointError"]

_STRUCT_KEY = "ember.structure"
_DTYPES_KEY = "ember.dtypes"
_FORMAT = "ember-1"


class CheckpointError(ValueError):
    """A checkpoint file that cannot be read: truncated, malformed or not safetensors."""


def _to_numpy(x, name):
    from .fx.core import Tracer
    if isinstance(x, Tracer):
        raise TypeError(f"save: {name!r} is a traced value; save concrete arrays (outside jit/grad/vmap)")
    if hasattr(x, "detach") and hasattr(x, "cpu"):  # a torch tensor, read through numpy
        x = x.detach().cpu()
        if str(x.dtype) == "torch.bfloat16":
            return x.view(dtype=_torch_int16()).numpy().view(ml_dtypes.bfloat16)
        return x.numpy()
    return _contiguous(np.asarray(x))


def _contiguous(a):
    # np.ascontiguousarray would turn a 0-d array into a 1-d one
    return a if a.flags.c_contiguous else a.copy(order="C")


def _torch_int16():
    import torch
    return torch.int16


def _is_array_leaf(x):
    from .array import Array
    from .fx.core import Tracer
    if isinstance(x, (Array, Tracer, np.ndarray, np.generic)):
        return True
    return hasattr(x, "__array__") and hasattr(x, "shape") and not isinstance(x, (str, bytes))


def _encode(node, path, tensors):
    if isinstance(node, dict):
        keys, children = [], []
        for k, v in node.items():
            if isinstance(k, bool) or not isinstance(k, (str, int)):
                raise TypeError(f"save: dict keys must be str or int, got {k!r} at {'.'.join(path) or '<root>'}")
            keys.append(["s", k] if isinstance(k, str) else ["i", int(k)])
            children.append(_encode(v, path + [str(k)], tensors))
        return {"t": "dict", "k": keys, "c": children}
    if isinstance(node, (list, tuple)):
        kind = "list" if isinstance(node, list) else "tuple"
        return {"t": kind, "c": [_encode(v, path + [str(i)], tensors) for i, v in enumerate(node)]}
    if node is None:
        return {"t": "none"}
    if isinstance(node, bool):
        return {"t": "bool", "v": node}
    if isinstance(node, int) and not isinstance(node, bool):
        return {"t": "int", "v": str(node)}
    if isinstance(node, float):
        return {"t": "float", "v": repr(node)}
    if isinstance(node, str):
        return {"t": "str", "v": node}
    if _is_array_leaf(node):
        name = ".".join(path) if path else "tensor"
        if name in tensors:
            raise ValueError(f"save: two leaves would share the tensor name {name!r} (a key containing "
                             f"'.' collides with a nested entry); rename one")
        tensors[name] = _to_numpy(node, name)
        return {"t": "tensor", "n": name}
    raise TypeError(f"save: cannot store a {type(node).__name__} at {'.'.join(path) or '<root>'}; "
                    f"checkpoints hold arrays, dicts, lists, tuples, None, bool, int, float and str")


def _views(tensors, force_view=False):
    """Tensors the library can store as they are, plus {name: real dtype} for those
    stored through a view."""
    out, dtypes = {}, {}
    for name, a in tensors.items():
        if a.dtype == np.complex128:
            out[name] = _contiguous(a).view(np.float64).reshape(a.shape + (2,))
            dtypes[name] = "complex128"
        elif a.dtype == ml_dtypes.bfloat16 and force_view:
            out[name] = _contiguous(a).view(np.uint16)
            dtypes[name] = "bfloat16"
        else:
            out[name] = _contiguous(a)
    return out, dtypes


def _write(path, tensors, metadata, force_view=False):
    from safetensors.numpy import save_file
    stored, dtypes = _views(tensors, force_view)
    meta = dict(metadata)
    if dtypes:
        meta[_DTYPES_KEY] = json.dumps(dtypes)
    save_file(stored, os.fspath(path), metadata=meta)


def save(path, tree) -> None:
    """Write a pytree of arrays (or a module's `state_dict()`, or a module itself) to
    a safetensors file; see the module docstring for the naming and metadata.

    Example:
        >>> import os, tempfile
        >>> import ember, ember.numpy as enp
        >>> ember.save(os.path.join(tempfile.mkdtemp(), "w.safetensors"), {"w": enp.zeros(3)})
    """
    if callable(getattr(tree, "state_dict", None)) and callable(getattr(tree, "load_state_dict", None)) \
            and not isinstance(tree, dict):
        tree = dict(tree.state_dict())
    tensors: dict = {}
    struct = _encode(tree, [], tensors)
    meta = {"format": _FORMAT, _STRUCT_KEY: json.dumps(struct, separators=(",", ":"))}
    try:
        _write(path, tensors, meta)
    except (TypeError, ValueError) as err:
        if not any(a.dtype == ml_dtypes.bfloat16 for a in tensors.values()):
            raise
        # an older safetensors without ml_dtypes bfloat16 support
        _write(path, tensors, meta, force_view=True)
        del err


def _fail(path, why):
    return CheckpointError(f"{os.fspath(path)}: cannot read checkpoint: {why}")


def _check_header(path):
    try:
        size = os.path.getsize(path)
    except OSError as err:
        raise _fail(path, str(err)) from None
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise _fail(path, f"the file is {size} bytes, too short for a safetensors header "
                              f"(truncated or not a safetensors file)")
        n = int.from_bytes(head, "little")
        if n <= 0 or 8 + n > size:
            raise _fail(path, f"the header claims {n} bytes but the file has {size - 8} after the "
                              f"length field (truncated or not a safetensors file)")
        try:
            header = json.loads(f.read(n).decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise _fail(path, f"the header is not valid JSON ({err})") from None
    if not isinstance(header, dict):
        raise _fail(path, "the header is not a JSON object")
    end = 0
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        try:
            end = max(end, int(spec["data_offsets"][1]))
        except (TypeError, KeyError, IndexError, ValueError):
            raise _fail(path, f"malformed entry for tensor {name!r}") from None
    if 8 + n + end > size:
        raise _fail(path, f"tensor data needs {end} bytes but only {size - 8 - n} are present "
                          f"(the file is truncated)")
    return header


def _decode(node, tensors, path):
    if not isinstance(node, dict) or "t" not in node:
        raise _fail(path, "malformed structure metadata")
    t = node["t"]
    try:
        if t == "dict":
            out = {}
            for (kt, kv), c in zip(node["k"], node["c"]):
                key = str(kv) if kt == "s" else int(kv)
                out[key] = _decode(c, tensors, path)
            return out
        if t in ("list", "tuple"):
            items = [_decode(c, tensors, path) for c in node["c"]]
            return items if t == "list" else tuple(items)
        if t == "none":
            return None
        if t == "bool":
            return bool(node["v"])
        if t == "int":
            return int(node["v"])
        if t == "float":
            return float(node["v"])
        if t == "str":
            return str(node["v"])
        if t == "tensor":
            return tensors[node["n"]]
    except (KeyError, TypeError, ValueError) as err:
        raise _fail(path, f"malformed structure metadata ({err!r})") from None
    raise _fail(path, f"unknown structure node type {t!r}")


def load(path):
    """Read a file written by `save` (the original pytree, arrays as ember Arrays), or
    any safetensors file (a flat dict of its tensors by name).

    Example:
        >>> import os, tempfile
        >>> import ember, ember.numpy as enp
        >>> p = os.path.join(tempfile.mkdtemp(), "t.safetensors")
        >>> ember.save(p, (enp.ones(2), None))
        >>> ember.load(p)[1] is None
        True
    """
    import ember.numpy as enp
    from safetensors import SafetensorError, safe_open
    header = _check_header(path)
    meta = header.get("__metadata__") or {}
    try:
        dtypes = json.loads(meta[_DTYPES_KEY]) if _DTYPES_KEY in meta else {}
    except json.JSONDecodeError as err:
        raise _fail(path, f"malformed dtype metadata ({err})") from None
    order = sorted((k for k in header if k != "__metadata__"),
                   key=lambda k: header[k]["data_offsets"][0])
    tensors = {}
    try:
        with safe_open(os.fspath(path), framework="numpy") as f:
            for name in order:
                a = np.array(f.get_tensor(name))
                real = dtypes.get(name)
                if real == "bfloat16":
                    a = a.view(ml_dtypes.bfloat16)
                elif real == "complex128":
                    a = _contiguous(a).view(np.complex128).reshape(a.shape[:-1])
                elif real is not None:
                    raise _fail(path, f"unknown recorded dtype {real!r} for {name!r}")
                tensors[name] = enp.asarray(a)
    except (SafetensorError, OSError, ValueError) as err:
        if isinstance(err, CheckpointError):
            raise
        raise _fail(path, str(err)) from None
    if _STRUCT_KEY not in meta:
        return tensors
    try:
        struct = json.loads(meta[_STRUCT_KEY])
    except json.JSONDecodeError as err:
        raise _fail(path, f"malformed structure metadata ({err})") from None
    return _decode(struct, tensors, path)
