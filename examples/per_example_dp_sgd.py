"""Differentially private SGD (Abadi et al., 2016) on the bundled 8x8 digits.

DP-SGD bounds how much any one training example can move the model:

1. batches are Poisson-sampled: every example joins each batch independently
   with probability q = expected_batch / N;
2. each example's gradient is computed separately -- `ember.vmap(ember.grad(loss))`
   over the batch, one compiled program -- and clipped to L2 norm <= C;
3. Gaussian noise N(0, (sigma C)^2) is added to the sum of clipped gradients,
   which is divided by the expected batch size and handed to SGD.

The privacy loss of the whole run is tracked with the Renyi-DP bound of the
Poisson-subsampled Gaussian mechanism at integer orders (Mironov, Talwar &
Zhang, 2019) and reported as (epsilon, delta).

Poisson batches have random sizes; the collate function pads each batch to a
multiple of 32 with a mask, so the jitted step compiles once per padded size
(a handful) rather than once per batch.  The noise comes from a seeded
`numpy.random.Generator` and enters the jitted step as an input, which keeps
the step a pure function.

Run:   python examples/per_example_dp_sgd.py           # ~20 s on 2 cores
       python examples/per_example_dp_sgd.py --noise-multiplier 0 --clip-norm 1e9
                                                       # the same training without privacy
"""
from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np

import ember
import ember.numpy as enp
from ember import optim
from ember.data import DataLoader, Sampler, load_digits

from _common import Progress, add_output_args, pyplot, save_figure

PAD_MULTIPLE = 32


# --- data ------------------------------------------------------------------------------

class PoissonBatchSampler(Sampler):
    """Batches in which each index appears independently with probability `rate`
    (possibly empty, of random size); `num_batches` of them per epoch."""

    def __init__(self, n: int, rate: float, num_batches: int, seed: int):
        self.n, self.rate, self.num_batches = n, rate, num_batches
        self.rng = np.random.default_rng(seed)

    def __iter__(self):
        for _ in range(self.num_batches):
            yield np.flatnonzero(self.rng.uniform(size=self.n) < self.rate).tolist()

    def __len__(self):
        return self.num_batches


def pad_collate(samples):
    """(x, y, mask) padded to a multiple of PAD_MULTIPLE; handles empty batches."""
    n = len(samples)
    size = max(PAD_MULTIPLE, PAD_MULTIPLE * math.ceil(n / PAD_MULTIPLE))
    x = np.zeros((size, 64), np.float32)
    y = np.zeros(size, np.int32)
    mask = np.zeros(size, np.float32)
    if n:
        x[:n] = np.stack([s[0] for s in samples])
        y[:n] = [int(s[1]) for s in samples]
        mask[:n] = 1.0
    return x, y, mask


# --- the model -------------------------------------------------------------------------

def init_mlp(rng: np.random.Generator, sizes) -> list:
    return [{"w": enp.asarray(rng.normal(0.0, math.sqrt(1.0 / a), (a, b)), dtype="float32"),
             "b": enp.zeros(b, dtype="float32")}
            for a, b in zip(sizes[:-1], sizes[1:])]


def logits_fn(params, x):
    h = x
    for layer in params[:-1]:
        h = enp.tanh(h @ layer["w"] + layer["b"])
    return h @ params[-1]["w"] + params[-1]["b"]


def example_loss(params, x, y):
    """Cross-entropy of ONE example (x: (64,), y: scalar label)."""
    z = logits_fn(params, x)
    z = z - enp.max(z)
    return enp.log(enp.sum(enp.exp(z))) - z[y]


def private_gradient(params, x, y, mask, noise, clip_norm, noise_multiplier, expected_batch):
    """Clipped, noised and averaged gradient of a padded batch."""
    per_example = ember.vmap(ember.grad(example_loss), in_axes=(None, 0, 0))(params, x, y)
    leaves = ember.tree.leaves(per_example)
    sq_norms = sum(enp.sum(g.reshape(g.shape[0], -1) ** 2, axis=1) for g in leaves)
    norms = enp.sqrt(sq_norms)
    # factor <= 1 that brings each norm to <= C; padded rows get weight 0
    factor = mask * enp.minimum(1.0, clip_norm / enp.maximum(norms, 1e-12))

    def reduce(g, n):
        w = factor.reshape((-1,) + (1,) * (g.ndim - 1))
        return (enp.sum(g * w, axis=0) + noise_multiplier * clip_norm * n) / expected_batch
    return ember.tree.map(reduce, per_example, noise), enp.sum(norms * mask) / enp.maximum(enp.sum(mask), 1.0)


# --- privacy accounting ----------------------------------------------------------------

def rdp_subsampled_gaussian(q: float, sigma: float, order: int) -> float:
    """Renyi-DP of one step of the Poisson-subsampled Gaussian mechanism at an integer
    order alpha >= 2: log(sum_k C(a,k) (1-q)^(a-k) q^k exp((k^2-k)/(2 sigma^2))) / (a-1)."""
    if q == 0.0:
        return 0.0
    if q == 1.0:
        return order / (2.0 * sigma ** 2)
    k = np.arange(order + 1, dtype=np.float64)
    log_binom = (math.lgamma(order + 1) - np.array([math.lgamma(i + 1) for i in k])
                 - np.array([math.lgamma(order - i + 1) for i in k]))
    terms = log_binom + (order - k) * math.log1p(-q) + k * math.log(q) + (k * k - k) / (2 * sigma ** 2)
    m = terms.max()
    return float((m + math.log(np.exp(terms - m).sum())) / (order - 1))


def epsilon(q: float, sigma: float, steps: int, delta: float) -> tuple[float, int]:
    """(epsilon, best order) after `steps` compositions, via eps = RDP + log(1/delta)/(a-1)."""
    if sigma <= 0:
        return math.inf, 0
    best = (math.inf, 0)
    for a in list(range(2, 64)) + [80, 96, 128, 192, 256]:
        eps = steps * rdp_subsampled_gaussian(q, sigma, a) + math.log(1.0 / delta) / (a - 1)
        best = min(best, (eps, a))
    return best


# --- main ------------------------------------------------------------------------------

def accuracy(params, loader) -> float:
    correct = total = 0
    predict = ember.jit(lambda p, x: enp.argmax(logits_fn(p, x), axis=1))
    for x, y in loader:
        correct += int(enp.sum(predict(params, x) == y))
        total += int(y.shape[0])
    return correct / total


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--epochs", type=int, default=20, help="passes (N / expected batch steps each)")
    ap.add_argument("--expected-batch", type=int, default=128, help="q * N")
    ap.add_argument("--clip-norm", type=float, default=1.0, help="per-example L2 bound C")
    ap.add_argument("--noise-multiplier", type=float, default=2.0, help="sigma")
    ap.add_argument("--lr", type=float, default=0.5, help="initial learning rate (cosine decay)")
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--seed", type=int, default=0)
    add_output_args(ap, "runs/per_example_dp_sgd")
    args = ap.parse_args(argv)

    rng = np.random.default_rng(args.seed)
    train = load_digits("train", flatten=True)
    test = load_digits("test", flatten=True)
    n = len(train)
    q = args.expected_batch / n
    steps_per_epoch = max(1, round(n / args.expected_batch))
    total_steps = args.epochs * steps_per_epoch

    params = init_mlp(rng, [64, args.hidden, 10])
    tx = optim.sgd(lr=optim.cosine_decay(args.lr, total_steps, alpha=0.1), momentum=args.momentum)
    opt_state = tx.init(params)

    @ember.jit
    def train_step(params, opt_state, x, y, mask, noise):
        grads, mean_norm = private_gradient(params, x, y, mask, noise, args.clip_norm,
                                            args.noise_multiplier, args.expected_batch)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optim.apply_updates(params, updates), opt_state, mean_norm

    # sanity check: the vmapped per-example gradients equal one grad call per example
    x4, y4 = enp.asarray(train.arrays[0][:4]), enp.asarray(train.arrays[1][:4].astype(np.int32))
    batched = ember.vmap(ember.grad(example_loss), in_axes=(None, 0, 0))(params, x4, y4)
    looped = [ember.grad(example_loss)(params, x4[i], y4[i]) for i in range(4)]
    diff = max(float(enp.max(enp.abs(b[i] - ember.tree.leaves(looped[i])[j])))
               for j, b in enumerate(ember.tree.leaves(batched)) for i in range(4))
    print(f"per-example gradients: vmap(grad) vs a loop of grad, max |diff| = {diff:.2e}")

    eps, order = epsilon(q, args.noise_multiplier, total_steps, args.delta)
    print(f"DP-SGD on digits: N={n}, q={q:.4f} (expected batch {args.expected_batch}), "
          f"C={args.clip_norm}, sigma={args.noise_multiplier}, {total_steps} steps")
    print(f"privacy budget for the full run: epsilon = {eps:.2f} at delta = {args.delta:g} "
          f"(RDP order {order})")

    sampler = PoissonBatchSampler(n, q, steps_per_epoch, seed=args.seed + 1)
    loader = DataLoader(train, batch_sampler=sampler, collate_fn=pad_collate)
    test_loader = DataLoader(test, batch_size=512)
    t0 = time.perf_counter()
    history = []
    bar = Progress(range(args.epochs), desc="epochs")
    for epoch in bar:
        norms = []
        for x, y, mask in loader:
            noise = ember.tree.map(lambda p: enp.asarray(rng.standard_normal(p.shape), dtype="float32"),
                                   params)
            params, opt_state, mean_norm = train_step(params, opt_state, enp.asarray(x),
                                                      enp.asarray(y), enp.asarray(mask), noise)
            norms.append(float(mean_norm))
        if epoch % 4 == 3 or epoch == args.epochs - 1:
            acc = accuracy(params, test_loader)
            spent, _ = epsilon(q, args.noise_multiplier, (epoch + 1) * steps_per_epoch, args.delta)
            msg = (f"epoch {epoch + 1:3d}  test acc {acc:.3f}  mean per-example grad norm "
                   f"{np.mean(norms):.2f}  epsilon so far {spent:.2f}  [{time.perf_counter() - t0:5.1f}s]")
            history.append((epoch + 1, acc, spent))
            bar.write(msg)
    bar.close()
    seconds = time.perf_counter() - t0
    final = accuracy(params, test_loader)
    print(f"final test accuracy {final:.3f} with (epsilon={eps:.2f}, delta={args.delta:g}); "
          f"clip norm C={args.clip_norm}, noise multiplier sigma={args.noise_multiplier}")
    print(f"training took {seconds:.1f}s; the step compiled {train_step.compile_count} time(s) "
          f"(one per padded batch size)")
    figure = None if args.no_plot else plot_privacy(
        history, args, os.path.join(args.out_dir, "accuracy_vs_epsilon.png"))
    return {"test_accuracy": final, "epsilon": eps, "delta": args.delta, "history": history,
            "per_example_check": diff, "seconds": seconds, "figure": figure}


def plot_privacy(history, args, path: str) -> str | None:
    """Test accuracy against the privacy budget spent so far (and against epochs)."""
    plt = pyplot("accuracy/epsilon figure")
    if plt is None:
        return None
    epochs, accs, spent = zip(*history)
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.8))
    a.plot(spent, accs, "o-")
    a.set_xlabel(f"epsilon spent (delta = {args.delta:g})"); a.set_ylabel("test accuracy")
    a.set_title(f"DP-SGD, sigma = {args.noise_multiplier}, C = {args.clip_norm}")
    b.plot(epochs, accs, "o-")
    b.set_xlabel("epoch"); b.set_ylabel("test accuracy")
    return save_figure(fig, path)


if __name__ == "__main__":
    main()
