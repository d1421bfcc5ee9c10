"""The top-level jax names ember answers to: device and process queries,
block_until_ready, disable_jit, make_jaxpr and jacobian."""
import numpy as np

import ember
import ember.numpy as enp


def test_device_and_process_queries():
    assert ember.device_count() == len(ember.devices()) >= 1
    assert ember.local_devices() == ember.devices()
    assert ember.local_device_count() == ember.device_count()
    assert ember.default_backend() in ("cpu", "gpu")
    assert ember.device_count("reference") == 1
    assert (ember.process_index(), ember.process_count()) == (0, 1)


def test_block_until_ready_returns_its_pytree():
    tree = {"a": enp.ones(3), "b": [np.zeros(2), 1.0]}
    assert ember.block_until_ready(tree) is tree


def test_disable_jit_runs_the_python_function_each_call():
    traces = []

    @ember.jit
    def f(x):
        traces.append(type(x).__name__)
        return x * 2

    f(np.float32(1.0))
    f(np.float32(2.0))
    assert len(traces) == 1          # traced once, then the compiled program
    with ember.disable_jit():
        assert float(f(np.float32(3.0))) == 6.0
        assert float(f(np.float32(4.0))) == 8.0
        with ember.disable_jit(False):
            f(np.float32(5.0))   # jit again inside: the cached program, no new trace
    assert traces[1:] == ["float32", "float32"]
    f(np.float32(6.0))
    assert len(traces) == 3
    # grad of a jitted function under disable_jit is the same derivative
    g = ember.jit(lambda x: enp.sin(x) * x)
    with ember.disable_jit():
        d = ember.grad(g)(1.0)
    np.testing.assert_allclose(d, ember.grad(g)(1.0), rtol=1e-6)


def test_make_jaxpr_and_jacobian_are_the_ember_functions():
    g = ember.make_jaxpr(lambda x, y: x * y + 1.0)(np.float32(2.0), np.float32(3.0))
    assert [e.prim.name for e in g.equations] == ["mul", "add"]
    x = enp.asarray([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(ember.jacobian(lambda v: v ** 2)(x), np.diag([2.0, 4.0, 6.0]))


def test_tree_util_names():
    from ember import tree_util as tu
    t = {"a": [1, 2], "b": (3, None)}
    assert tu.tree_leaves(t) == [1, 2, 3]
    assert tu.tree_map(lambda v: v + 1, t) == {"a": [2, 3], "b": (4, None)}
    leaves, td = tu.tree_flatten(t)
    assert tu.tree_unflatten(td, leaves) == t and not tu.treedef_is_leaf(td)
    assert tu.tree_reduce(lambda a, b: a + b, t) == 6 and tu.tree_all(t)
    p = tu.Partial(lambda x, y, *, z: x * y + z, 2.0, z=1.0)
    assert tu.tree_leaves(p) == [2.0, 1.0]
    q = tu.Partial(p, 3.0)
    assert q.args == (2.0, 3.0) and q() == 7.0
    g = ember.grad(lambda f, x: f(x))(tu.Partial(lambda a, x: a * x * x, 3.0), 2.0)
    assert float(g.args[0]) == 4.0     # d/da of a x^2 at x = 2
