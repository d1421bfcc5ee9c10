"""The convolution primitive `conv_general_dilated` (XLA ConvGeneralDilated) and the
`conv_transpose` wrapper built on it.

Layouts are described by `ConvDimensionNumbers(lhs_spec, rhs_spec, out_spec)`:
lhs_spec = (batch dim, feature dim, spatial dims...), rhs_spec = (out-feature
dim, in-feature dim, spatial dims...), out_spec = (batch, feature, spatial...).
The lhs is dilated by `lhs_dilation`, padded by `(low, high)` pairs (negative
pads crop), and correlated with the kernel dilated by `rhs_dilation` at
`window_strides`.  `feature_group_count` splits the lhs features (and the
output features) into groups; `batch_group_count` splits the lhs batch (and
the output features) into groups.  At most one of the two exceeds 1.

Example:
    >>> import numpy as np
    >>> from ember.fx.prims.conv import conv_general_dilated
    >>> x = np.ones((1, 2, 5, 5), np.float32); w = np.ones((3, 2, 3, 3), np.float32)
    >>> conv_general_dilated(x, w, (1, 1), "SAME").shape
    (1, 3, 5, 5)
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ... import dtypes as _dt
from ..core import AbstractArray, Primitive, get_aval, is_undefined, shape_error
from .contraction import _compute_dtype
from .rules import defbilinear, moveaxis
from .window import dilate_pad_np, padtype_to_pads, window_view_np
from ..spelling import user_str


class ConvDimensionNumbers(NamedTuple):
    """Dimension positions of each operand: lhs (N, C, spatial...), rhs (O, I,
    spatial...), out (N, C, spatial...).

    Example:
        >>> conv_dimension_numbers((1, 8, 8, 3), (3, 3, 3, 16), ("NHWC", "HWIO", "NHWC"))
        ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2))
    """
    lhs_spec: tuple
    rhs_spec: tuple
    out_spec: tuple

    def __str__(self):
        # Compact form for the IR printer: (lhs_spec, rhs_spec, out_spec).
        return str(tuple(self))


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers) -> ConvDimensionNumbers:
    """Normalise None (NCHW/OIHW/NCHW-like), a ConvDimensionNumbers, or a JAX-style
    triple of layout strings such as ("NHWC", "HWIO", "NHWC").  Spatial dims are
    matched by letter, in the order the kernel's layout string lists them."""
    nd = len(lhs_shape)
    if len(rhs_shape) != nd:
        raise shape_error("conv_general_dilated", f"lhs {tuple(lhs_shape)} and rhs "
                          f"{tuple(rhs_shape)} must have the same rank")
    if dimension_numbers is None:
        s = tuple(range(nd))
        return ConvDimensionNumbers(s, s, s)
    if isinstance(dimension_numbers, ConvDimensionNumbers) or (
            len(dimension_numbers) == 3 and not any(isinstance(x, str) for x in dimension_numbers)):
        specs = tuple(tuple(int(d) for d in s) for s in dimension_numbers)
        for s in specs:
            if sorted(s) != list(range(nd)):
                raise TypeError(f"conv dimension_numbers {dimension_numbers} must be "
                                f"permutations of range({nd})")
        return ConvDimensionNumbers(*specs)
    try:
        lhs_s, rhs_s, out_s = dimension_numbers
    except (TypeError, ValueError):
        raise TypeError(f"conv dimension_numbers must be None, a ConvDimensionNumbers or three "
                        f"layout strings, got {dimension_numbers!r}") from None
    if not all(isinstance(s, str) and len(s) == nd for s in (lhs_s, rhs_s, out_s)):
        raise TypeError(f"conv layout strings {dimension_numbers!r} must each have {nd} letters")
    spatial = [c for c in rhs_s if c not in "OI"]
    ok = (sorted(lhs_s) == sorted(out_s) == sorted(["N", "C"] + spatial)
          and sorted(rhs_s) == sorted(["O", "I"] + spatial) and len(set(rhs_s)) == nd)
    if not ok:
        raise TypeError(f"conv layout strings {dimension_numbers!r} are inconsistent: lhs/out "
                        f"need N, C and the kernel's spatial letters, the kernel O and I")
    return ConvDimensionNumbers(
        (lhs_s.index("N"), lhs_s.index("C")) + tuple(lhs_s.index(c) for c in spatial),
        (rhs_s.index("O"), rhs_s.index("I")) + tuple(rhs_s.index(c) for c in spatial),
        (out_s.index("N"), out_s.index("C")) + tuple(out_s.index(c) for c in spatial))


# --- abstract evaluation ------------------------------------------------------------------

def _conv_abstract(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                   dimension_numbers, feature_group_count, batch_group_count,
                   preferred_element_type=None):
    name = "conv_general_dilated"
    ls, rs, os_ = dimension_numbers
    nd = lhs.ndim
    if nd < 2 or rhs.ndim != nd or not len(ls) == len(rs) == len(os_) == nd:
        raise shape_error(name, f"lhs {user_str(lhs)} and rhs {user_str(rhs)} need equal rank >= 2 matching "
                          f"dimension_numbers {dimension_numbers}")
    nsp = nd - 2
    for what, v in (("window_strides", window_strides), ("padding", padding),
                    ("lhs_dilation", lhs_dilation), ("rhs_dilation", rhs_dilation)):
        if len(v) != nsp:
            raise shape_error(name, f"{what} {v} needs one entry per spatial dim ({nsp})")
    for what, v in (("window_strides", window_strides), ("lhs_dilation", lhs_dilation),
                    ("rhs_dilation", rhs_dilation)):
        if any(e < 1 for e in v):
            raise shape_error(name, f"{what} {v} must be positive")
    fg, bg = feature_group_count, batch_group_count
    if fg < 1 or bg < 1 or (fg > 1 and bg > 1):
        raise shape_error(name, f"feature_group_count {fg} and batch_group_count {bg} must be "
                          f">= 1 and not both > 1")
    n, c = lhs.shape[ls[0]], lhs.shape[ls[1]]
    o, i = rhs.shape[rs[0]], rhs.shape[rs[1]]
    if c != i * fg:
        raise shape_error(name, f"lhs features ({c}) must equal rhs in-features ({i}) times "
                          f"feature_group_count ({fg}); lhs {user_str(lhs)}, rhs {user_str(rhs)}")
    if o % (fg * bg):
        raise shape_error(name, f"rhs out-features ({o}) must be divisible by the group count "
                          f"{fg * bg}; rhs {user_str(rhs)}")
    if n % bg:
        raise shape_error(name, f"lhs batch ({n}) must be divisible by batch_group_count {bg}")
    ksp = tuple(rhs.shape[d] for d in rs[2:])
    if any(k < 1 for k in ksp):
        raise shape_error(name, f"kernel spatial dims {ksp} must be positive; rhs {user_str(rhs)}")
    if preferred_element_type is None:
        if lhs.dtype != rhs.dtype:
            raise TypeError(f"{name}: operands must have the same dtype, got {user_str(lhs)} and {user_str(rhs)} "
                            f"(promote first, or pass preferred_element_type)")
        dt, weak = lhs.dtype, lhs.weak_type and rhs.weak_type
    else:
        dt, weak = preferred_element_type, False
    if dt == _dt.float0 or lhs.dtype == _dt.float0 or rhs.dtype == _dt.float0:
        raise TypeError(f"{name} does not accept float0 operands")
    sp = []
    for j in range(nsp):
        x = lhs.shape[ls[2 + j]]
        d = (x - 1) * lhs_dilation[j] + 1 if x else 0
        p = d + padding[j][0] + padding[j][1]
        eff = (ksp[j] - 1) * rhs_dilation[j] + 1
        sp.append(0 if p < eff else (p - eff) // window_strides[j] + 1)
    shape = [0] * nd
    shape[os_[0]] = n // bg
    shape[os_[1]] = o
    for j in range(nsp):
        shape[os_[2 + j]] = sp[j]
    return AbstractArray(tuple(shape), dt, weak)


# --- numpy implementation -------------------------------------------------------------------

def _inverse(perm):
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return tuple(inv)


def _conv_impl(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
               dimension_numbers, feature_group_count, batch_group_count,
               preferred_element_type=None):
    lhs, rhs = np.asarray(lhs), np.asarray(rhs)
    ls, rs, os_ = dimension_numbers
    out_dtype = preferred_element_type if preferred_element_type is not None else lhs.dtype
    cd = _compute_dtype(lhs.dtype, rhs.dtype, preferred_element_type)
    x = np.transpose(lhs, ls).astype(cd, copy=False)        # (N, C, spatial...)
    w = np.transpose(rhs, rs).astype(cd, copy=False)        # (O, I, kernel...)
    nsp = x.ndim - 2
    fg, bg = feature_group_count, batch_group_count
    g = fg * bg
    n, c = x.shape[:2]
    o, i = w.shape[:2]
    ks = w.shape[2:]
    sp = tuple(0 if p < e else (p - e) // s + 1 for p, e, s in zip(
        [((xs - 1) * ld + 1 if xs else 0) + lo + hi
         for xs, ld, (lo, hi) in zip(x.shape[2:], lhs_dilation, padding)],
        [(k - 1) * r + 1 for k, r in zip(ks, rhs_dilation)], window_strides))
    nb = n // bg
    if 0 in sp or nb == 0 or o == 0 or i == 0:
        out = np.zeros((nb, o) + sp, cd)
    else:
        xp = dilate_pad_np(x, (1, 1) + tuple(lhs_dilation), ((0, 0), (0, 0)) + tuple(padding),
                           np.zeros((), cd)[()])
        v = window_view_np(xp, tuple(range(2, 2 + nsp)), ks, window_strides, rhs_dilation)
        # v: (N, C, out spatial..., kernel...).  im2col: per group, a matrix with one
        # row per (in-feature, kernel offset) and one column per (image, output
        # position), or its transpose, whichever puts the output features where
        # the output layout wants them, so the result needs no transposing copy.
        v = v.reshape((bg, nb, fg, i) + sp + ks)
        spa = tuple(range(4, 4 + nsp))
        ksa = tuple(range(4 + nsp, 4 + 2 * nsp))
        kk = i * int(np.prod(ks))
        pp = int(np.prod(sp))
        wm = w.reshape(g, o // g, kk)
        if nsp == 0 or os_[1] < min(os_[2:]):
            cols = np.ascontiguousarray(np.transpose(v, (0, 2, 1, 3) + ksa + spa))
            cols = cols.reshape(g, nb, kk, pp)
            if g == 1:
                res = np.matmul(wm[0], cols[0])[None]             # (1, N/B, O, P)
            else:
                res = np.matmul(wm[:, None], cols)                # (G, N/B, O/G, P)
            out = np.transpose(res, (1, 0, 2, 3)).reshape((nb, o) + sp)
        else:
            cols = np.ascontiguousarray(np.transpose(v, (0, 2, 1) + spa + (3,) + ksa))
            cols = cols.reshape(g, nb * pp, kk)
            if g == 1:
                res = np.matmul(cols[0], wm[0].T)[None]           # (1, N/B*P, O)
            else:
                res = np.matmul(cols, np.transpose(wm, (0, 2, 1)))  # (G, N/B*P, O/G)
            # (G, N/B, spatial..., O/G) -> (N/B, G, O/G, spatial...); a view when G == 1
            res = res.reshape((g, nb) + sp + (o // g,))
            out = np.transpose(res, (1, 0, 2 + nsp) + tuple(range(2, 2 + nsp)))
            out = out[:, 0] if g == 1 else out.reshape((nb, o) + sp)
    out = np.transpose(out, _inverse(os_))
    return np.ascontiguousarray(out).astype(out_dtype, copy=False)


conv_general_dilated_p = Primitive("conv_general_dilated")
conv_general_dilated_p.kind = "contraction"
conv_general_dilated_p.abstract_eval = _conv_abstract
conv_general_dilated_p.impl = _conv_impl


def _ints(v, n, what, default):
    if v is None:
        return (default,) * n
    if isinstance(v, (int, np.integer)):
        return (int(v),) * n
    v = tuple(int(e) for e in v)
    if len(v) != n:
        raise TypeError(f"conv: {what} {v} needs one entry per spatial dim ({n})")
    return v


def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None, rhs_dilation=None,
                         dimension_numbers=None, feature_group_count=1, batch_group_count=1,
                         preferred_element_type=None, *, precision=None):
    """General dilated convolution (cross-correlation), XLA semantics.

    `padding` is "SAME", "SAME_LOWER", "VALID" or (low, high) pairs per spatial
    dim; `dimension_numbers` is None (NC... / OI... / NC...), a
    ConvDimensionNumbers, or layout strings like ("NHWC", "HWIO", "NHWC").
    Operand dtypes must match unless `preferred_element_type` is given;
    `precision` is accepted for JAX compatibility and ignored.

    Example:
        >>> import numpy as np
        >>> x = np.ones((2, 9, 9, 4), np.float32); w = np.ones((3, 3, 4, 8), np.float32)
        >>> conv_general_dilated(x, w, (2, 2), "VALID",
        ...                      dimension_numbers=("NHWC", "HWIO", "NHWC")).shape
        (2, 4, 4, 8)
    """
    la, ra = get_aval(lhs), get_aval(rhs)
    dn = conv_dimension_numbers(la.shape, ra.shape, dimension_numbers)
    nsp = la.ndim - 2
    strides = _ints(window_strides, nsp, "window_strides", 1)
    ld = _ints(lhs_dilation, nsp, "lhs_dilation", 1)
    rd = _ints(rhs_dilation, nsp, "rhs_dilation", 1)
    if isinstance(padding, str):
        in_sp = tuple((la.shape[d] - 1) * s + 1 if la.shape[d] else 0
                      for d, s in zip(dn.lhs_spec[2:], ld))
        k_eff = tuple((ra.shape[d] - 1) * r + 1 for d, r in zip(dn.rhs_spec[2:], rd))
        pads = padtype_to_pads(in_sp, k_eff, strides, padding)
    else:
        pads = padtype_to_pads((0,) * nsp, (1,) * nsp, strides, padding)
    pet = None if preferred_element_type is None else _dt.canonicalize(preferred_element_type)
    return conv_general_dilated_p.bind(
        lhs, rhs, window_strides=strides, padding=pads, lhs_dilation=ld, rhs_dilation=rd,
        dimension_numbers=dn, feature_group_count=int(feature_group_count),
        batch_group_count=int(batch_group_count), preferred_element_type=pet)


def _conv_transpose_pads(k, s, padding):
    """(low, high) for a transposed conv of dilated kernel extent k and stride s:
    "SAME" gives `in * s` outputs, "VALID" gives `(in - 1) * s + max(k, s)`."""
    if padding == "SAME":
        total = k + s - 2
        lo = k - 1 if s > k - 1 else -(-total // 2)
    else:
        total = k + s - 2 + max(k - s, 0)
        lo = k - 1
    return (lo, total - lo)


def conv_transpose(lhs, rhs, strides, padding, rhs_dilation=None, dimension_numbers=None,
                   transpose_kernel=False, preferred_element_type=None, *, precision=None):
    """Transposed ("fractionally strided") convolution: the lhs is dilated by
    `strides` and convolved at stride 1.  `dimension_numbers` defaults to
    ("NHWC", "HWIO", "NHWC")-style layouts, as in JAX.

    `padding` is "SAME" (output = input * strides), "VALID" (output = (input-1)
    * strides + max(kernel, strides)) or explicit (low, high) pairs applied to
    the dilated input.  With `transpose_kernel=True` the kernel is flipped
    spatially and its O/I dims swapped, so that this is exactly the gradient of
    a `conv_general_dilated` with that kernel (PyTorch's ConvTranspose: pairs
    `(d*(k-1) - p, d*(k-1) - p + output_padding)`).

    Example:
        >>> import numpy as np
        >>> x = np.ones((1, 4, 4, 2), np.float32); w = np.ones((3, 3, 2, 5), np.float32)
        >>> conv_transpose(x, w, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")).shape
        (1, 8, 8, 5)
    """
    la, ra = get_aval(lhs), get_aval(rhs)
    nsp = la.ndim - 2
    if dimension_numbers is None:
        # As in JAX, the default is the TensorFlow layout: N, spatial..., C and
        # spatial..., I, O.
        nd = nsp + 2
        lhs_spec = (0, nd - 1) + tuple(range(1, nd - 1))
        dimension_numbers = ConvDimensionNumbers(lhs_spec, (nd - 1, nd - 2) + tuple(range(nsp)),
                                                 lhs_spec)
    dn = conv_dimension_numbers(la.shape, ra.shape, dimension_numbers)
    strides = _ints(strides, nsp, "strides", 1)
    rd = _ints(rhs_dilation, nsp, "rhs_dilation", 1)
    ksp = tuple(ra.shape[d] for d in dn.rhs_spec[2:])
    k_eff = tuple((k - 1) * r + 1 for k, r in zip(ksp, rd))
    if isinstance(padding, str):
        mode = padding.upper()
        if mode not in ("SAME", "VALID"):
            raise ValueError(f"conv_transpose padding must be 'SAME', 'VALID' or pairs, "
                             f"got {padding!r}")
        pads = tuple(_conv_transpose_pads(k, s, mode) for k, s in zip(k_eff, strides))
    else:
        pads = padtype_to_pads((0,) * nsp, (1,) * nsp, strides, padding)
    if transpose_kernel:
        from .shape import rev
        rhs = rev(rhs, tuple(dn.rhs_spec[2:]))
        rs = dn.rhs_spec
        dn = ConvDimensionNumbers(dn.lhs_spec, (rs[1], rs[0]) + tuple(rs[2:]), dn.out_spec)
    return conv_general_dilated(lhs, rhs, (1,) * nsp, pads, lhs_dilation=strides,
                                rhs_dilation=rd, dimension_numbers=dn,
                                preferred_element_type=preferred_element_type)


# --- transpose -------------------------------------------------------------------------------
# One spatial dim, operand x of length n dilated to D = (n-1)*b + 1, padded by
# (lo, hi), kernel w of length K dilated by r, stride s, O outputs:
#     y[o] = sum_k w[k] * xpad[o*s + k*r]
# d/dx:  gx[i] = sum_k w[K-1-k] * ctpad[i*b + k*r] with ct dilated by s and padded by
#        ((K-1)*r - lo, D - 1 + lo - (O-1)*s): a conv of ct with the flipped kernel,
#        lhs_dilation s, stride b.
# d/dw:  gw[k] = sum_o ct[o] * xpad[k*r + o*s]: a conv of x with ct as the kernel,
#        kernel dilation s, stride r, padding (lo, (K-1)*r + (O-1)*s + 1 - D - lo).
# Features: grouping by F (feature groups) turns into F groups of the transposed
# kernel for d/dx and into batch groups for d/dw (and batch groups B the other way).

def _pet(target_dtype, *operands):
    """preferred_element_type for a transposed conv/dot: only when dtypes differ."""
    if all(get_aval(x).dtype == target_dtype for x in operands):
        return None
    return target_dtype


def _conv_transpose_lhs(ct, lhs_aval, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                        dimension_numbers, feature_group_count, batch_group_count,
                        preferred_element_type=None):
    from .rules import zeros
    from .shape import reshape, rev, transpose
    ls, rs, os_ = dimension_numbers
    ca, ra = get_aval(ct), get_aval(rhs)
    if ca.size == 0 or lhs_aval.size == 0 or ra.size == 0:
        return zeros(lhs_aval)
    nd = lhs_aval.ndim
    nsp = nd - 2
    fg, bg = feature_group_count, batch_group_count
    g = fg * bg
    w = transpose(rhs, rs)                                   # (O, I, K...)
    o, i = ra.shape[rs[0]], ra.shape[rs[1]]
    ks = tuple(ra.shape[d] for d in rs[2:])
    if g > 1:
        w = reshape(w, (g, o // g, i) + ks)
        w = transpose(w, (0, 2, 1) + tuple(range(3, 3 + nsp)))
        w = reshape(w, (g * i, o // g) + ks)                 # (G*I, O/G, K...)
    else:
        w = transpose(w, (1, 0) + tuple(range(2, 2 + nsp)))  # (I, O, K...)
    w = rev(w, tuple(range(2, 2 + nsp)))
    pads = []
    for j in range(nsp):
        n = lhs_aval.shape[ls[2 + j]]
        d = (n - 1) * lhs_dilation[j] + 1
        lo = padding[j][0]
        osz = ca.shape[os_[2 + j]]
        pads.append(((ks[j] - 1) * rhs_dilation[j] - lo,
                     d - 1 + lo - (osz - 1) * window_strides[j]))
    canon = tuple(range(nd))
    out_spec = ls if bg == 1 else canon
    out = conv_general_dilated_p.bind(
        ct, w, window_strides=tuple(lhs_dilation), padding=tuple(pads),
        lhs_dilation=tuple(window_strides), rhs_dilation=tuple(rhs_dilation),
        dimension_numbers=ConvDimensionNumbers(tuple(os_), canon, tuple(out_spec)),
        feature_group_count=g, batch_group_count=1,
        preferred_element_type=_pet(lhs_aval.dtype, ct, w))
    if bg > 1:
        # out: (N/B, B*I, spatial...) -> (N, I, spatial...): the group index moves
        # from the feature dim to the major part of the batch dim.
        nb = ca.shape[os_[0]]
        sp = get_aval(out).shape[2:]
        out = reshape(out, (nb, bg, i) + sp)
        out = transpose(out, (1, 0, 2) + tuple(range(3, 3 + nsp)))
        out = reshape(out, (nb * bg, i) + sp)
        out = transpose(out, _inverse(ls))
    return out


def _conv_transpose_rhs(ct, lhs, rhs_aval, *, window_strides, padding, lhs_dilation, rhs_dilation,
                        dimension_numbers, feature_group_count, batch_group_count,
                        preferred_element_type=None):
    from .rules import zeros
    ls, rs, os_ = dimension_numbers
    ca, la = get_aval(ct), get_aval(lhs)
    if ca.size == 0 or la.size == 0 or rhs_aval.size == 0:
        return zeros(rhs_aval)
    nsp = la.ndim - 2
    pads = []
    for j in range(nsp):
        n = la.shape[ls[2 + j]]
        d = (n - 1) * lhs_dilation[j] + 1
        lo = padding[j][0]
        k = rhs_aval.shape[rs[2 + j]]
        osz = ca.shape[os_[2 + j]]
        pads.append((lo, (k - 1) * rhs_dilation[j] + (osz - 1) * window_strides[j] + 1 - d - lo))
    swap = lambda s: (s[1], s[0]) + tuple(s[2:])  # noqa: E731
    return conv_general_dilated_p.bind(
        lhs, ct, window_strides=tuple(rhs_dilation), padding=tuple(pads),
        lhs_dilation=tuple(lhs_dilation), rhs_dilation=tuple(window_strides),
        dimension_numbers=ConvDimensionNumbers(swap(ls), swap(os_), swap(rs)),
        feature_group_count=batch_group_count, batch_group_count=feature_group_count,
        preferred_element_type=_pet(rhs_aval.dtype, lhs, ct))


def _conv_transpose_rule(ct, lhs, rhs, **params):
    if is_undefined(lhs) and is_undefined(rhs):
        raise TypeError("conv_general_dilated is not linear when both operands are linear inputs")
    if is_undefined(lhs):
        return [_conv_transpose_lhs(ct, lhs.aval, rhs, **params), None]
    return [None, _conv_transpose_rhs(ct, lhs, rhs.aval, **params)]


# --- batch -----------------------------------------------------------------------------------------

def _merge_into(x, vdim, u, groups=1):
    """Fold the vmapped axis `vdim` (size V) into axis `u` (numbered as if the
    vmapped axis were absent).  Axis u, seen as (groups, M/groups), becomes
    (groups, V, M/groups) flattened: V sits inside each group, major within it."""
    from .shape import reshape, transpose
    x = moveaxis(x, vdim, u)
    s = get_aval(x).shape
    v, m = s[u], s[u + 1]
    if groups > 1:
        x = reshape(x, s[:u] + (v, groups, m // groups) + s[u + 2:])
        perm = list(range(len(s) + 1))
        perm[u], perm[u + 1] = u + 1, u
        x = transpose(x, tuple(perm))
    return reshape(x, s[:u] + (v * m,) + s[u + 2:])


def _split_out(x, u, v, groups=1):
    """Inverse of `_merge_into` on an output: axis u laid out as (groups, V, M')
    becomes a new axis V at position u followed by the merged (groups*M') axis."""
    from .shape import reshape, transpose
    s = get_aval(x).shape
    m = s[u] // (v * groups)
    if groups > 1:
        x = reshape(x, s[:u] + (groups, v, m) + s[u + 1:])
        perm = list(range(len(s) + 2))
        perm[u], perm[u + 1] = u + 1, u
        x = transpose(x, tuple(perm))
        return reshape(x, s[:u] + (v, groups * m) + s[u + 1:])
    return reshape(x, s[:u] + (v, m) + s[u + 1:])


def _conv_batch(axis_size, args, dims, **params):
    lhs, rhs = args
    ld, rd = dims
    ls, rs, os_ = params["dimension_numbers"]
    fg, bg = params["feature_group_count"], params["batch_group_count"]
    v = axis_size
    if ld is not None and rd is not None:
        if bg > 1:
            # Each (v, group) pair becomes a batch group of its own.
            lhs = _merge_into(lhs, ld, ls[0])
            rhs = _merge_into(rhs, rd, rs[0])
            out = conv_general_dilated_p.bind(lhs, rhs, **dict(params, batch_group_count=v * bg))
        else:
            # Each (v, group) pair becomes a feature group of its own.
            lhs = _merge_into(lhs, ld, ls[1])
            rhs = _merge_into(rhs, rd, rs[0])
            out = conv_general_dilated_p.bind(lhs, rhs, **dict(params, feature_group_count=v * fg))
        return _split_out(out, os_[1], v), os_[1]
    if ld is not None:
        lhs = _merge_into(lhs, ld, ls[0], groups=bg)
        out = conv_general_dilated_p.bind(lhs, rhs, **params)
        return _split_out(out, os_[0], v), os_[0]
    g = fg * bg
    rhs = _merge_into(rhs, rd, rs[0], groups=g)
    out = conv_general_dilated_p.bind(lhs, rhs, **params)
    return _split_out(out, os_[1], v, groups=g), os_[1]


defbilinear(conv_general_dilated_p)
conv_general_dilated_p.transpose = _conv_transpose_rule
conv_general_dilated_p.batch = _conv_batch
