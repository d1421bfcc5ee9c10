"""Products: matmul, matvec, vecmat, vecdot, tensordot, dot, inner, outer, vdot, kron and einsum,
lowered to `dot_general` plus transposes, reshapes and `reduce_sum`.

Example:
    >>> import ember.numpy as enp
    >>> enp.einsum("ij,jk->ik", enp.ones((2, 3)), enp.ones((3, 4))).shape
    (2, 4)
"""
from __future__ import annotations

import operator
import string

import numpy as np

from .. import dtypes as _dt
from .. import lax
from ..fx.core import get_aval, shape_error
from ._core import broadcast_shapes, broadcast_to, ensure_array, promote_dtypes
from ._elementwise import multiply
from ._manipulation import diagonal
from ._util import canonicalize_axis, no_numpy_feature

__all__ = ["matmul", "matvec", "vecmat", "vecdot", "tensordot", "outer", "inner", "dot", "vdot", "kron", "einsum"]


def _promoted(op, *xs):
    return promote_dtypes(op, *[ensure_array(x) if isinstance(x, (list, tuple)) else x
                                for x in xs])


def _dg(a, b, contract, batch, preferred=None):
    return lax.dot_general(a, b, (contract, batch), preferred_element_type=preferred)


def matmul(x1, x2, /, *, out=None, preferred_element_type=None):
    """Matrix product with numpy/array-API rules: 1-D operands are promoted to matrices
    and removed again, leading (batch) dimensions broadcast.

    Example:
        >>> import ember.numpy as enp
        >>> enp.matmul(enp.ones((5, 2, 3)), enp.ones((3, 4))).shape
        (5, 2, 4)
    """
    no_numpy_feature("matmul", out=out)
    a, b = _promoted("matmul", x1, x2)
    sa, sb = get_aval(a).shape, get_aval(b).shape
    if not sa or not sb:
        raise ValueError(f"matmul: operands must be at least 1-D, got shapes {sa} and {sb}; use "
                         f"multiply for scalars")
    orig = (sa, sb)
    va, vb = len(sa) == 1, len(sb) == 1
    if va:
        a = lax.reshape(a, (1,) + sa)
    if vb:
        b = lax.reshape(b, sb + (1,))
    sa, sb = get_aval(a).shape, get_aval(b).shape
    if sa[-1] != sb[-2]:
        raise shape_error("matmul", f"shapes {orig[0]} and {orig[1]} are not aligned: {sa[-1]} "
                          f"(last dimension of x1) != {sb[-2]} (contracted dimension of x2)")
    ba, bb = sa[:-2], sb[:-2]
    na, nb = len(sa), len(sb)
    if not bb:
        # (..., m, k) @ (k, n): one contraction, no batch dims
        y = _dg(a, b, ((na - 1,), (0,)), ((), ()), preferred_element_type)
    elif not ba:
        # (m, k) @ (..., k, n): contract, then move m behind the batch dims
        y = _dg(a, b, ((1,), (nb - 2,)), ((), ()), preferred_element_type)
        # y: (m, batch..., n) -> (batch..., m, n)
        nbatch = len(bb)
        perm = tuple(range(1, 1 + nbatch)) + (0, nbatch + 1)
        y = lax.transpose(y, perm)
    else:
        B = broadcast_shapes(ba, bb, op="matmul")
        a = broadcast_to(a, B + sa[-2:])
        b = broadcast_to(b, B + sb[-2:])
        nbatch = len(B)
        bd = tuple(range(nbatch))
        y = _dg(a, b, ((nbatch + 1,), (nbatch,)), (bd, bd), preferred_element_type)
    ys = get_aval(y).shape
    if va and vb:
        y = lax.reshape(y, ys[:-2])
    elif va:
        y = lax.reshape(y, ys[:-2] + ys[-1:])
    elif vb:
        y = lax.reshape(y, ys[:-1])
    return ensure_array(y)


def matvec(x1, x2, /):
    """Matrix-vector products `x1 @ x2` over the last two axes of `x1` and the last of `x2`,
    broadcasting the leading (batch) axes (numpy 2.2's matvec; no conjugation).

    Example:
        >>> import ember.numpy as enp
        >>> enp.matvec(enp.asarray([[1.0, 2.0], [3.0, 4.0]]), enp.asarray([1.0, 1.0])).tolist()
        [3.0, 7.0]
    """
    a, b = ensure_array(x1), ensure_array(x2)
    sa, sb = get_aval(a).shape, get_aval(b).shape
    if len(sa) < 2 or len(sb) < 1:
        raise ValueError(f"matvec: x1 must be at least 2-D and x2 at least 1-D, got "
                         f"{get_aval(a).str_user()} and {get_aval(b).str_user()}")
    if sa[-1] != sb[-1]:
        raise shape_error("matvec", f"the contracted axis has different sizes: "
                          f"{get_aval(a).str_user()} and {get_aval(b).str_user()}")
    return matmul(a, lax.expand_dims(b, (len(sb),)))[..., 0]


def vecmat(x1, x2, /):
    """Vector-matrix products `conj(x1) @ x2` over the last axis of `x1` and the last two of
    `x2`, broadcasting the leading (batch) axes (numpy 2.2's vecmat, which conjugates x1).

    Example:
        >>> import ember.numpy as enp
        >>> enp.vecmat(enp.asarray([1.0, 1.0]), enp.asarray([[1.0, 2.0], [3.0, 4.0]])).tolist()
        [4.0, 6.0]
    """
    a, b = ensure_array(x1), ensure_array(x2)
    sa, sb = get_aval(a).shape, get_aval(b).shape
    if len(sa) < 1 or len(sb) < 2:
        raise ValueError(f"vecmat: x1 must be at least 1-D and x2 at least 2-D, got "
                         f"{get_aval(a).str_user()} and {get_aval(b).str_user()}")
    if sa[-1] != sb[-2]:
        raise shape_error("vecmat", f"the contracted axis has different sizes: "
                          f"{get_aval(a).str_user()} and {get_aval(b).str_user()}")
    if _dt.kind(get_aval(a).dtype) == "c":
        a = lax.conj(a)
    return matmul(lax.expand_dims(a, (len(sa) - 1,)), b)[..., 0, :]


def vecdot(x1, x2, /, *, axis=-1):
    """Dot product of vectors along `axis` (conjugating x1), broadcasting the rest.

    Example:
        >>> import ember.numpy as enp
        >>> enp.vecdot(enp.ones((2, 3)), enp.ones(3)).tolist()
        [3.0, 3.0]
    """
    a, b = _promoted("vecdot", x1, x2)
    sa, sb = get_aval(a).shape, get_aval(b).shape
    if not sa or not sb:
        raise ValueError(f"vecdot: operands must be at least 1-D, got shapes {sa} and {sb}")
    shape = broadcast_shapes(sa, sb, op="vecdot")
    ax = canonicalize_axis(axis, shape, "vecdot")
    k = ax - len(shape)  # the axis counted from the end
    if -k <= len(sa) and -k <= len(sb) and sa[k] != sb[k]:
        raise shape_error("vecdot", f"the contracted axis {axis} has different sizes: shapes "
                          f"{sa} and {sb}")
    a = broadcast_to(a, shape)
    b = broadcast_to(b, shape)
    if _dt.kind(get_aval(a).dtype) == "c":
        a = lax.conj(a)
    rest = tuple(i for i in range(len(shape)) if i != ax)
    return ensure_array(_dg(a, b, ((ax,), (ax,)), (rest, rest)))


def tensordot(a, b, /, axes=2):
    """Sum products over the given axes (an int N: the last N of `a` with the first N of
    `b`; or a pair of axis sequences).

    Example:
        >>> import ember.numpy as enp
        >>> enp.tensordot(enp.ones((2, 3)), enp.ones((3, 4)), axes=1).shape
        (2, 4)
    """
    a, b = _promoted("tensordot", a, b)
    sa, sb = get_aval(a).shape, get_aval(b).shape
    if isinstance(axes, (int, np.integer)):
        n = operator.index(axes)
        if n < 0 or n > len(sa) or n > len(sb):
            raise ValueError(f"tensordot: axes={n} is invalid for shapes {sa} and {sb}")
        ca = tuple(range(len(sa) - n, len(sa)))
        cb = tuple(range(n))
    else:
        try:
            xa, xb = axes
        except (TypeError, ValueError):
            raise ValueError(f"tensordot: axes must be an int or a pair of sequences, got {axes!r}") \
                from None
        xa = (xa,) if isinstance(xa, (int, np.integer)) else tuple(xa)
        xb = (xb,) if isinstance(xb, (int, np.integer)) else tuple(xb)
        if len(xa) != len(xb):
            raise ValueError("tensordot: the axes sequences must have the same length")
        ca = tuple(canonicalize_axis(i, sa, "tensordot") for i in xa)
        cb = tuple(canonicalize_axis(i, sb, "tensordot") for i in xb)
    for i, j in zip(ca, cb):
        if sa[i] != sb[j]:
            raise shape_error("tensordot", f"shape mismatch for sum: axis {i} of {sa} has size "
                              f"{sa[i]}, axis {j} of {sb} has size {sb[j]}")
    return ensure_array(_dg(a, b, (ca, cb), ((), ())))


def outer(a, b, out=None):
    """Outer product of two (flattened) vectors.

    Example:
        >>> import ember.numpy as enp
        >>> enp.outer(enp.asarray([1, 2]), enp.asarray([3, 4])).tolist()
        [[3, 4], [6, 8]]
    """
    no_numpy_feature("outer", out=out)
    a, b = _promoted("outer", a, b)
    a = lax.reshape(a, (get_aval(a).size,))
    b = lax.reshape(b, (get_aval(b).size,))
    m, n = get_aval(a).shape[0], get_aval(b).shape[0]
    return ensure_array(lax.mul(lax.broadcast_in_dim(a, (m, n), (0,)),
                                lax.broadcast_in_dim(b, (m, n), (1,))))


def inner(a, b, /):
    """Inner product over the last axes (scalars multiply).

    Example:
        >>> import ember.numpy as enp
        >>> int(enp.inner(enp.asarray([1, 2]), enp.asarray([3, 4])))
        11
    """
    a, b = _promoted("inner", a, b)
    sa, sb = get_aval(a).shape, get_aval(b).shape
    if not sa or not sb:
        return multiply(a, b)
    if sa[-1] != sb[-1]:
        raise shape_error("inner", f"last dimensions differ: shapes {sa} and {sb}")
    return ensure_array(_dg(a, b, ((len(sa) - 1,), (len(sb) - 1,)), ((), ())))


def dot(a, b, out=None, *, preferred_element_type=None):
    """numpy's dot: inner product of vectors, matrix product of matrices, and for N-D the
    sum over the last axis of `a` and the second-to-last of `b`.

    Example:
        >>> import ember.numpy as enp
        >>> enp.dot(enp.ones((2, 3)), enp.ones(3)).tolist()
        [3.0, 3.0]
    """
    no_numpy_feature("dot", out=out)
    a, b = _promoted("dot", a, b)
    sa, sb = get_aval(a).shape, get_aval(b).shape
    if not sa or not sb:
        return multiply(a, b)
    cb = 0 if len(sb) == 1 else len(sb) - 2
    if sa[-1] != sb[cb]:
        raise shape_error("dot", f"shapes {sa} and {sb} not aligned: {sa[-1]} (dim "
                          f"{len(sa) - 1}) != {sb[cb]} (dim {cb})")
    return ensure_array(_dg(a, b, ((len(sa) - 1,), (cb,)), ((), ()), preferred_element_type))


def vdot(a, b, /):
    """Dot product of the flattened inputs, conjugating the first.

    Example:
        >>> import ember.numpy as enp
        >>> complex(enp.vdot(enp.asarray([1j]), enp.asarray([1j])))
        (1+0j)
    """
    a, b = _promoted("vdot", a, b)
    a = lax.reshape(a, (get_aval(a).size,))
    b = lax.reshape(b, (get_aval(b).size,))
    if get_aval(a).shape != get_aval(b).shape:
        raise shape_error("vdot", f"vectors have different lengths: {get_aval(a).shape} and "
                          f"{get_aval(b).shape}")
    if _dt.kind(get_aval(a).dtype) == "c":
        a = lax.conj(a)
    return ensure_array(_dg(a, b, ((0,), (0,)), ((), ())))


def kron(a, b):
    """Kronecker product.

    Example:
        >>> import ember.numpy as enp
        >>> enp.kron(enp.asarray([1, 2]), enp.asarray([1, 10])).tolist()
        [1, 10, 2, 20]
    """
    a, b = _promoted("kron", a, b)
    sa, sb = get_aval(a).shape, get_aval(b).shape
    nd = max(len(sa), len(sb))
    sa = (1,) * (nd - len(sa)) + sa
    sb = (1,) * (nd - len(sb)) + sb
    a = lax.reshape(a, sa)
    b = lax.reshape(b, sb)
    big = tuple(v for pair in zip(sa, sb) for v in pair)
    ab = lax.broadcast_in_dim(a, big, tuple(range(0, 2 * nd, 2)))
    bb = lax.broadcast_in_dim(b, big, tuple(range(1, 2 * nd, 2)))
    return ensure_array(lax.reshape(lax.mul(ab, bb), tuple(x * y for x, y in zip(sa, sb))))


# --- einsum ---------------------------------------------------------------------------

_LETTERS = set(string.ascii_letters)


def _parse_einsum(subscripts, ndims):
    s = subscripts.replace(" ", "")
    if "->" in s:
        lhs, out = s.split("->")
        explicit = True
    else:
        lhs, out, explicit = s, None, False
    ins = lhs.split(",")
    if len(ins) != len(ndims):
        raise ValueError(f"einsum: {len(ins)} input subscripts for {len(ndims)} operands")
    # ellipsis labels: fresh characters outside the ASCII letters, aligned from the right
    n_ell = 0
    parsed = []
    for spec, nd in zip(ins, ndims):
        if spec.count("...") > 1 or (spec.replace("...", "").count(".") != 0):
            raise ValueError(f"einsum: invalid subscripts {spec!r}")
        chars = spec.replace("...", "")
        for c in chars:
            if c not in _LETTERS:
                raise ValueError(f"einsum: invalid subscript character {c!r}")
        if "..." in spec:
            k = nd - len(chars)
            if k < 0:
                raise ValueError(f"einsum: subscripts {spec!r} have more labels than operand dims {nd}")
            n_ell = max(n_ell, k)
            pre, post = spec.split("...")
            parsed.append((list(pre), k, list(post)))
        else:
            if len(chars) != nd:
                raise ValueError(f"einsum: subscripts {spec!r} name {len(chars)} dimensions but "
                                 f"the operand has {nd}")
            parsed.append((list(chars), None, []))
    ell = [chr(0x100 + i) for i in range(n_ell)]
    labels = []
    for pre, k, post in parsed:
        if k is None:
            labels.append(pre)
        else:
            labels.append(pre + ell[n_ell - k:] + post)
    if explicit:
        if out.count("...") > 1:
            raise ValueError("einsum: at most one ellipsis in the output")
        if "..." in out:
            pre, post = out.split("...")
            out_labels = list(pre) + ell + list(post)
        else:
            out_labels = list(out)
        for c in out_labels:
            if c not in _LETTERS and c not in ell:
                raise ValueError(f"einsum: invalid output subscript {c!r}")
        if len(set(out_labels)) != len(out_labels):
            raise ValueError(f"einsum: output subscript {out!r} repeats a label")
        allin = set(c for ls in labels for c in ls)
        for c in out_labels:
            if c not in allin:
                raise ValueError(f"einsum: output label {c!r} does not appear in the inputs")
    else:
        counts = {}
        for ls in labels:
            for c in ls:
                counts[c] = counts.get(c, 0) + 1
        out_labels = ell + sorted(c for c, n in counts.items() if n == 1 and c not in ell)
    return labels, out_labels


def _diagonalize(x, labels):
    """Collapse repeated labels within one operand by taking diagonals."""
    labels = list(labels)
    while True:
        seen = {}
        dup = None
        for i, c in enumerate(labels):
            if c in seen:
                dup = (seen[c], i, c)
                break
            seen[c] = i
        if dup is None:
            return x, labels
        i, j, c = dup
        x = diagonal(x, 0, i, j)
        labels = [l for k, l in enumerate(labels) if k not in (i, j)] + [c]


def einsum(subscripts, /, *operands, out=None, optimize="greedy", precision=None,
           preferred_element_type=None):
    """Einstein summation over labelled axes (ellipsis supported), contracted pairwise
    from left to right with dot_general.

    Example:
        >>> import ember.numpy as enp
        >>> float(enp.einsum("ii", enp.eye(3)))
        3.0
    """
    no_numpy_feature("einsum", out=out)
    if not isinstance(subscripts, str):
        raise TypeError("einsum: pass the subscripts as a string (the interleaved "
                        "operand/sublist form is not supported)")
    if not operands:
        raise ValueError("einsum needs at least one operand")
    ops = _promoted("einsum", *operands) if len(operands) > 1 else [ensure_array(operands[0])]
    labels, out_labels = _parse_einsum(subscripts, [get_aval(o).ndim for o in ops])
    # sizes, with size-1 broadcasting
    sizes = {}
    for o, ls in zip(ops, labels):
        for c, n in zip(ls, get_aval(o).shape):
            if c in sizes and sizes[c] != n and n != 1 and sizes[c] != 1:
                raise shape_error("einsum", f"size of label {c!r} differs: {sizes[c]} and {n} "
                                  f"(operand shapes {[get_aval(p).shape for p in ops]})")
            sizes[c] = max(sizes.get(c, n), n) if n != 0 and sizes.get(c, n) != 0 else 0
    new_ops = []
    for o, ls in zip(ops, labels):
        shp = get_aval(o).shape
        target = tuple(sizes[c] for c in ls)
        if shp != target:
            o = broadcast_to(o, target)
        o, ls = _diagonalize(o, ls)
        new_ops.append([o, ls])
    out_set = set(out_labels)

    def needed_elsewhere(k, c):
        return c in out_set or any(c in new_ops[j][1] for j in range(len(new_ops)) if j != k)

    # sum out labels private to one operand
    for k, (o, ls) in enumerate(new_ops):
        private = [i for i, c in enumerate(ls) if not needed_elsewhere(k, c)]
        if private:
            new_ops[k] = [lax.reduce_sum(o, tuple(private)) if get_aval(o).dtype != _dt.bool_
                          else lax.reduce_or(o, tuple(private)),
                          [c for i, c in enumerate(ls) if i not in private]]
    acc, acc_l = new_ops[0]
    rest = new_ops[1:]
    for idx, (o, ls) in enumerate(rest):
        later = set(c for _, l2 in rest[idx + 1:] for c in l2) | out_set
        common = [c for c in acc_l if c in ls]
        batch = [c for c in common if c in later]
        contract = [c for c in common if c not in later]
        lb = tuple(acc_l.index(c) for c in batch)
        rb = tuple(ls.index(c) for c in batch)
        lc = tuple(acc_l.index(c) for c in contract)
        rc = tuple(ls.index(c) for c in contract)
        acc = _dg(acc, o, (lc, rc), (lb, rb), preferred_element_type)
        acc_l = batch + [c for c in acc_l if c not in common] + [c for c in ls if c not in common]
        # drop labels that nothing later needs
        gone = [i for i, c in enumerate(acc_l) if c not in later]
        if gone:
            acc = lax.reduce_sum(acc, tuple(gone))
            acc_l = [c for i, c in enumerate(acc_l) if i not in gone]
    extra = [i for i, c in enumerate(acc_l) if c not in out_set]
    if extra:
        acc = lax.reduce_sum(acc, tuple(extra)) if get_aval(acc).dtype != _dt.bool_ else \
            lax.reduce_or(acc, tuple(extra))
        acc_l = [c for i, c in enumerate(acc_l) if i not in extra]
    perm = tuple(acc_l.index(c) for c in out_labels)
    acc = lax.transpose(acc, perm)
    if preferred_element_type is not None and get_aval(acc).dtype != _dt.canonicalize(
            preferred_element_type):
        acc = lax.convert_element_type(acc, _dt.canonicalize(preferred_element_type))
    return ensure_array(acc)
