"""`ember.scipy.stats`: scipy.stats distributions as modules of functions, in
jax.scipy.stats's call shape (`norm.logpdf(x, loc=0, scale=1)`), composed from
ember.scipy.special so grad, jvp, vmap and jit apply to every one.

Example:
    >>> from ember.scipy import stats
    >>> round(float(stats.norm.cdf(1.0)), 6)
    0.841345
"""
from . import (bernoulli, beta, binom, cauchy, dirichlet, expon, gamma, laplace,  # noqa: F401
               logistic, multivariate_normal, norm, poisson, t, uniform)

__all__ = ["bernoulli", "beta", "binom", "cauchy", "dirichlet", "expon", "gamma", "laplace",
           "logistic", "multivariate_normal", "norm", "poisson", "t", "uniform"]
