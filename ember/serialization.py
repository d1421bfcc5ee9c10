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
bytes are read).  The header is validated before any byte is interpreted -- dtype
names, shapes, integer offsets in range that match dtype x shape and do not
overlap, and the recorded dtypes against the stored ones (a float32 tensor whose
metadata says bfloat16 is rejected, not reinterpreted) -- so a truncated or
malformed file raises `CheckpointError` with the reason.

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


# safetensors dtype names -> numpy dtypes; a name outside this table is rejected,
# never guessed
_ST_DTYPES = {
    "BOOL": np.dtype(np.bool_), "U8": np.dtype(np.uint8), "I8": np.dtype(np.int8),
    "U16": np.dtype(np.uint16), "I16": np.dtype(np.int16), "U32": np.dtype(np.uint32),
    "I32": np.dtype(np.int32), "U64": np.dtype(np.uint64), "I64": np.dtype(np.int64),
    "F16": np.dtype(np.float16), "BF16": np.dtype(ml_dtypes.bfloat16),
    "F32": np.dtype(np.float32), "F64": np.dtype(np.float64),
    "F8_E4M3": np.dtype(ml_dtypes.float8_e4m3fn), "F8_E5M2": np.dtype(ml_dtypes.float8_e5m2),
}


def _is_int(v):
    # JSON true/false decode to bool, a subclass of int; 2.0 is not an offset either
    return isinstance(v, int) and not isinstance(v, bool)


def _read_header(path):
    """The validated header: ({name: (numpy dtype, shape, begin, end)}, metadata, data start).

    Everything the file claims is checked before any byte is interpreted: dtype names,
    shapes, offsets (integers, in range, matching dtype x shape, not overlapping) and
    the metadata's types, so a damaged header is a `CheckpointError`, never garbage."""
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
        header = _json(path, f.read(n), "the header")
    if not isinstance(header, dict):
        raise _fail(path, "the header is not a JSON object")
    meta = header.get("__metadata__", {})
    if meta is None:
        meta = {}
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        raise _fail(path, "__metadata__ must be a JSON object of strings")
    avail = size - 8 - n
    specs = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        bad = f"entry for tensor {name!r}"
        if not isinstance(spec, dict):
            raise _fail(path, f"malformed {bad}: expected an object with dtype, shape and data_offsets")
        dt, shape, offs = spec.get("dtype"), spec.get("shape"), spec.get("data_offsets")
        if not isinstance(dt, str) or dt not in _ST_DTYPES:
            raise _fail(path, f"unknown dtype {dt!r} in {bad} (expected one of {', '.join(_ST_DTYPES)})")
        if not isinstance(shape, list) or not all(_is_int(d) and d >= 0 for d in shape):
            raise _fail(path, f"malformed shape {shape!r} in {bad} (expected a list of non-negative integers)")
        if not (isinstance(offs, list) and len(offs) == 2 and all(_is_int(o) for o in offs)):
            raise _fail(path, f"malformed data_offsets {offs!r} in {bad} (expected [begin, end] integers)")
        begin, end = offs
        if not 0 <= begin <= end:
            raise _fail(path, f"data_offsets {offs} in {bad} are negative or reversed")
        if end > avail:
            raise _fail(path, f"tensor {name!r} needs bytes up to {end} but only {avail} are present "
                              f"(the file is truncated)")
        dtype = _ST_DTYPES[dt]
        nbytes = dtype.itemsize * int(np.prod(shape, dtype=object))
        if end - begin != nbytes:
            raise _fail(path, f"{bad} holds {end - begin} bytes but dtype {dt} and shape "
                              f"{tuple(shape)} need {nbytes}")
        specs[name] = (dtype, tuple(shape), begin, end)
    last_end, last = 0, None
    for name, (_, _, begin, end) in sorted(specs.items(), key=lambda kv: kv[1][2:]):
        if begin == end:
            continue
        if begin < last_end:
            raise _fail(path, f"tensors {last!r} and {name!r} overlap in the file")
        last_end, last = end, name
    return specs, meta, 8 + n


def _json(path, text, what):
    try:
        return json.loads(text.decode("utf-8") if isinstance(text, bytes) else text)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise _fail(path, f"{what} is not valid JSON ({err})") from None
    except RecursionError:
        raise _fail(path, f"{what} is nested too deeply to be a checkpoint") from None


def _restore_dtype(path, name, a, real):
    """The array as the dtype recorded in ember's metadata, after checking that the
    stored tensor is the view `save` writes for it (a lie is an error, not a reinterpretation)."""
    if real == "bfloat16":
        if a.dtype != np.uint16:
            raise _fail(path, f"metadata says {name!r} is bfloat16 (stored as uint16) but the "
                              f"file stores {a.dtype.name}{list(a.shape)}")
        return a.view(ml_dtypes.bfloat16)
    if real == "complex128":
        if a.dtype != np.float64 or a.ndim == 0 or a.shape[-1] != 2:
            raise _fail(path, f"metadata says {name!r} is complex128 (stored as float64 pairs, "
                              f"shape [..., 2]) but the file stores {a.dtype.name}{list(a.shape)}")
        return _contiguous(a).view(np.complex128).reshape(a.shape[:-1])
    raise _fail(path, f"unknown recorded dtype {real!r} for {name!r} (expected bfloat16 or complex128)")


def _decode(root, tensors, path):
    """Rebuild the tree from its structure JSON; iterative, so depth is no limit."""
    def bad(why):
        return _fail(path, f"malformed structure metadata ({why})")

    def build(node):
        # returns (value, children to fill) for one node
        if not isinstance(node, dict) or "t" not in node:
            raise bad(f"a node is {type(node).__name__}, not an object with a type")
        t = node["t"]
        if t in ("dict", "list", "tuple"):
            kids = node.get("c")
            if not isinstance(kids, list):
                raise bad(f"a {t} node has no child list")
            keys = node.get("k") if t == "dict" else range(len(kids))
            if t == "dict":
                if not isinstance(keys, list) or len(keys) != len(kids):
                    raise bad("a dict node's keys do not match its children")
                keys = [_decode_key(k, bad) for k in keys]
            return ({} if t == "dict" else [None] * len(kids)), list(zip(keys, kids))
        if t == "none":
            return None, ()
        if t in ("bool", "int", "float", "str"):
            v = node.get("v")
            try:
                if t == "bool":
                    if not isinstance(v, bool):
                        raise ValueError(f"bool value {v!r}")
                    return v, ()
                return {"int": int, "float": float, "str": str}[t](v), ()
            except (TypeError, ValueError) as err:
                raise bad(f"{t} value {v!r}: {err}") from None
        if t == "tensor":
            n = node.get("n")
            if not isinstance(n, str) or n not in tensors:
                raise bad(f"it refers to tensor {n!r}, which the file does not hold")
            return tensors[n], ()
        raise _fail(path, f"unknown structure node type {t!r}")

    out, kids = build(root)
    stack = [(out, root.get("t"), kids)]
    tuples = []  # (parent container, key, list) to freeze once filled, innermost first
    while stack:
        container, t, kids = stack.pop()
        for key, child in kids:
            value, grand = build(child)
            container[key] = value
            if grand:
                stack.append((value, child["t"], grand))
            if isinstance(child, dict) and child.get("t") == "tuple":
                tuples.append((container, key, value))
    for container, key, value in reversed(tuples):
        container[key] = tuple(value)
    return tuple(out) if root.get("t") == "tuple" else out


def _decode_key(k, bad):
    if not (isinstance(k, list) and len(k) == 2 and k[0] in ("s", "i")):
        raise bad(f"dict key {k!r}")
    try:
        return str(k[1]) if k[0] == "s" else int(k[1])
    except (TypeError, ValueError):
        raise bad(f"dict key {k!r}") from None


def load(path, *, device=None):
    """Read a file written by `save` (the original pytree, arrays as ember Arrays), or
    any safetensors file (a flat dict of its tensors by name).  The arrays go to
    `device` (a Device or a name such as `"cpu"` or `"cuda:0"`: PyTorch's
    `map_location`), by default the default device.  Arrays saved from a GPU were
    copied to the host when saved, so a file never depends on where it was written.

    Example:
        >>> import os, tempfile
        >>> import ember, ember.numpy as enp
        >>> p = os.path.join(tempfile.mkdtemp(), "t.safetensors")
        >>> ember.save(p, (enp.ones(2), None))
        >>> ember.load(p)[1] is None
        True
    """
    from ._host import from_host
    if device is not None:
        from .api_device import _as_device
        device = _as_device(device)
    specs, meta, data_start = _read_header(path)
    dtypes = _json(path, meta[_DTYPES_KEY], "the dtype metadata") if _DTYPES_KEY in meta else {}
    if not isinstance(dtypes, dict):
        raise _fail(path, "the dtype metadata is not a JSON object")
    unknown = sorted(set(dtypes) - set(specs))
    if unknown:
        raise _fail(path, f"the dtype metadata names tensors the file does not hold: {unknown}")
    tensors = {}
    try:
        with open(path, "rb") as f:
            for name, (dtype, shape, begin, end) in sorted(specs.items(), key=lambda kv: kv[1][2]):
                f.seek(data_start + begin)
                raw = f.read(end - begin)
                if len(raw) != end - begin:
                    raise _fail(path, f"tensor {name!r} is truncated")
                # safetensors is little-endian; frombuffer would read native order
                a = np.frombuffer(raw, dtype.newbyteorder("<")).astype(dtype, copy=False).reshape(shape)
                if name in dtypes:
                    a = _restore_dtype(path, name, a, dtypes[name])
                tensors[name] = from_host(a, device=device)
    except OSError as err:
        raise _fail(path, str(err)) from None
    if _STRUCT_KEY not in meta:
        return tensors
    return _decode(_json(path, meta[_STRUCT_KEY], "the structure metadata"), tensors, path)
