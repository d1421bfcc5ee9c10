"""`ember.lax`: thin wrappers that bind one primitive each, JAX-lax style.

No promotion and no implicit broadcasting beyond rank-0 operands: that is
`ember.numpy`'s job.  Use this layer to write new composites.

Example:
    >>> import ember.numpy as enp
    >>> from ember import lax
    >>> lax.add(enp.ones(2), enp.ones(2)).tolist()
    [2.0, 2.0]
"""
from .fx.prims.elementwise import (  # noqa: F401
    abs, acos, acosh, add, asin, asinh, atan, atan2, atanh, bitwise_and, bitwise_not, bitwise_or,
    bitwise_xor, cbrt, ceil, clamp, clz, complex, conj, cos, cosh, digamma, div, eq, erf, erf_inv,
    erfc, exp, exp2, expm1, floor, ge, gt, imag, integer_pow, is_finite, le, lgamma, log, log1p,
    logistic, lt, max, min, mul, ne, neg, nextafter, polygamma, population_count, pow, real, rem,
    round, RoundingMethod, rsqrt, select_n, shift_left, shift_right_arithmetic, shift_right_logical, sign, sin,
    sinh, sqrt, square, sub, tan, tanh)
from .fx.prims.convert import bitcast_convert_type, convert_element_type, reduce_precision  # noqa: F401
from .fx.prims.shape import (  # noqa: F401
    broadcast_in_dim, reshape, transpose, squeeze, expand_dims, rev, pad, concatenate, slice,
    dynamic_slice, dynamic_update_slice, iota, slice_in_dim, index_in_dim, dynamic_slice_in_dim,
    dynamic_index_in_dim, dynamic_update_slice_in_dim, dynamic_update_index_in_dim)
from .fx.prims.indexing import (  # noqa: F401
    GatherDimensionNumbers, ScatterDimensionNumbers, gather, scatter, scatter_add, scatter_mul,
    scatter_min, scatter_max)
from .fx.prims.reduce import (  # noqa: F401
    argmax, argmax_p, argmin, argmin_p, reduce_and, reduce_and_p, reduce_max, reduce_max_p,
    reduce_min, reduce_min_p, reduce_or, reduce_or_p, reduce_prod, reduce_prod_p, reduce_sum,
    reduce_sum_p, reduce_xor, reduce_xor_p)
from .fx.prims.cumulative import (  # noqa: F401
    cumlogsumexp, cumlogsumexp_p, cummax, cummax_p, cummin, cummin_p, cumprod, cumprod_p, cumsum,
    cumsum_p)
from .fx.prims.sort import sort, sort_key_val, sort_p, top_k, top_k_p  # noqa: F401
from .fx.prims.contraction import batch_matmul, dot, dot_general, dot_general_p  # noqa: F401
from .fx.prims.conv import (ConvDimensionNumbers, conv_dimension_numbers,  # noqa: F401
                            conv_general_dilated, conv_general_dilated_p, conv_transpose)
from .fx.prims.window import (padtype_to_pads, reduce_window_max, reduce_window_max_p,  # noqa: F401
                              reduce_window_min, reduce_window_min_p, reduce_window_sum,
                              reduce_window_sum_p, select_and_gather_add,
                              select_and_gather_add_p, select_and_scatter_add,
                              select_and_scatter_add_p)
from .transforms.control_flow import (cond, switch, scan, while_loop, fori_loop, map,  # noqa: F401,E402
                                     associative_scan)
from .fx.prims.fft import FftType, fft, fft_p  # noqa: F401,E402
from .fx.prims.collective import (all_gather, all_to_all, axis_index, axis_size,  # noqa: F401,E402
                                  pmax, pmean, pmin, ppermute, psum)
from . import lax_linalg as linalg  # noqa: F401,E402
from .transforms.implicit import custom_linear_solve, custom_root  # noqa: F401,E402
from .lax_composites import (approx_max_k, approx_min_k, bessel_i0e, bessel_i1e,  # noqa: F401,E402
                             betainc, broadcast, broadcast_to_rank, broadcasted_iota, collapse, conv,
                             conv_with_general_padding, empty, full, full_like, igamma, igammac,
                             optimization_barrier, reciprocal, scatter_sub, select, split, stack,
                             stop_gradient, tile, unstack, zeta)
from .lax_reduce import reduce, reduce_window  # noqa: F401,E402

__all__ = sorted(n for n in dir() if not n.startswith("_"))
