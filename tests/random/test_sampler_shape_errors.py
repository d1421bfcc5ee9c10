"""Every sampler with parameters checks `shape` against them the same way (JAX's
rule: `shape` must be the broadcast of itself and the parameter shapes) and names
itself, the shapes and a fix in the error; a valid broadcast shape still works."""
import numpy as np
import pytest

from ember import random

P = np.full(4, 0.5)
SAMPLERS = {
    "bernoulli": dict(p=P), "beta": dict(a=P, b=P), "binomial": dict(n=P * 4, p=P),
    "chisquare": dict(df=P + 1), "dirichlet": dict(alpha=np.ones((4, 3))),
    "f": dict(dfnum=P + 1, dfden=P + 1), "gamma": dict(a=P), "generalized_normal": dict(p=P + 1),
    "geometric": dict(p=P), "loggamma": dict(a=P), "lognormal": dict(sigma=P),
    "multivariate_normal": dict(mean=np.zeros((4, 2)), cov=np.eye(2)), "pareto": dict(b=P),
    "poisson": dict(lam=P), "randint": dict(minval=np.zeros(4, np.int32), maxval=np.full(4, 5, np.int32)),
    "rayleigh": dict(scale=P), "t": dict(df=P + 1), "triangular": dict(left=P - 1, mode=P, right=P + 1),
    "truncated_normal": dict(lower=P - 1, upper=P + 1), "wald": dict(mean=P),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_shape_that_is_not_a_broadcast_of_the_parameters_names_the_sampler(name):
    f = getattr(random, name)
    with pytest.raises(ValueError, match=rf"random\.{name}: shape \(3,\) is not a broadcast of the "
                                         r"parameter shapes \(.*\(4,\).*\); pass shape=None"):
        f(random.key(0), shape=(3,), **SAMPLERS[name])
    with pytest.raises(ValueError, match=rf"random\.{name}: negative dimension"):
        f(random.key(0), shape=(2, -1), **SAMPLERS[name])


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_broadcast_shapes_and_the_default_still_sample(name):
    f = getattr(random, name)
    event = {"dirichlet": (3,), "multivariate_normal": (2,)}.get(name, ())
    assert f(random.key(0), shape=(2, 4), **SAMPLERS[name]).shape == (2, 4) + event
    assert f(random.key(0), shape=None, **SAMPLERS[name]).shape == (4,) + event
