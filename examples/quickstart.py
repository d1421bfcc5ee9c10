"""A first look at ember: immutable arrays, numpy-style code, transforms, and the IR.

Run:  python examples/quickstart.py
"""
import ember
import ember.numpy as enp


def loss(w, x, y):
    return enp.mean((enp.tanh(x @ w) - y) ** 2)


def main():
    x = enp.linspace(-1.0, 1.0, 12).reshape(4, 3)
    w = enp.asarray([0.5, -0.25, 1.0])
    y = enp.asarray([0.0, 0.5, -0.5, 1.0])
    print("x =", x)
    print("dtype promotion: float32 array * 2.0 ->", (x * 2.0).dtype,
          "| int8 array + 1 ->", (enp.asarray([1, 2], dtype="int8") + 1).dtype)
    print("functional update: x.at[0, 0].set(9.0)[0] =", x.at[0, 0].set(9.0)[0])

    print("loss      =", loss(w, x, y))
    g = ember.grad(loss)(w, x, y)
    print("grad      =", g)
    h = ember.jacfwd(ember.grad(loss))(w, x, y)
    print("hessian   =\n", h)
    per_example = ember.vmap(ember.grad(loss), in_axes=(None, 0, 0))(w, x[:, None, :], y[:, None])
    print("per-example grads shape:", per_example.shape)
    fast = ember.jit(ember.grad(loss))
    print("jit(grad) =", fast(w, x, y))
    print("\nThe primitive IR of the loss:")
    print(ember.make_graph(loss)(w, x, y))


if __name__ == "__main__":
    main()
