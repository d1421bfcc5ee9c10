"""Train an MLP or a small CNN on the bundled 8x8 digits with `ember.nn`.

A PyTorch-shaped training script:

- the models are `nn.Module`s: an `nn.Sequential` MLP, or a `DigitsCNN` subclass
  with two `Conv2d` layers, max pooling and dropout; both start with a
  `Standardize` layer whose per-pixel statistics are *buffers*, so they travel
  with the checkpoint;
- `optim.AdamW` with a `OneCycleLR` schedule stepped once per batch; cross
  entropy with label smoothing (so the printed train loss levels off near 0.5
  while the plain test cross entropy keeps falling);
- batches come from a shuffling `DataLoader`;
- the training step is `nn.TrainStep`: parameters, buffers, optimiser state and
  the dropout key go in and come out of ONE function compiled with `ember.jit`
  (changing the learning rate every step does not recompile it);
- after training the model is saved with `ember.save` (model and optimiser
  state dicts, the epoch and the config in one safetensors file), loaded into a
  freshly built model, and its test accuracy is checked to be identical;
- everything lands in one folder (`--out-dir`, default `runs/digits_<model>`):
  the checkpoint, the loss/accuracy curves and the test set's confusion matrix
  as PNGs (matplotlib comes with `pip install -e ".[examples]"`).

Run:   python examples/train_digits.py               # MLP, ~98% test accuracy, a few seconds
       python examples/train_digits.py --model cnn   # CNN, ~99%, under a minute on 2 cores
       python examples/train_digits.py --precision bf16   # matmuls in bfloat16 (ember.amp)
       mpiexec -n 2 python examples/train_digits.py --distributed   # data parallel over MPI
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

import ember
import ember.numpy as enp
from ember import amp, nn, optim
from ember.data import DataLoader, DistributedSampler, load_digits

from _common import Progress, pyplot, save_figure

DEFAULT_EPOCHS = {"mlp": 30, "cnn": 12}
DEFAULT_DROPOUT = {"mlp": 0.2, "cnn": 0.25}


# --- models ----------------------------------------------------------------------------

class Standardize(nn.Module):
    """(x - mean) / std with per-pixel statistics held as buffers (saved in the
    checkpoint, never trained)."""

    def __init__(self, shape=(8, 8)):
        super().__init__()
        self.register_buffer("mean", enp.zeros(shape))
        self.register_buffer("std", enp.ones(shape))

    def fit(self, images: np.ndarray) -> "Standardize":
        # the +0.1 keeps pixels that are almost always blank from being blown up
        self.load_buffers({"mean": enp.asarray(images.mean(0)), "std": enp.asarray(images.std(0) + 0.1)})
        return self

    def forward(self, x):
        return (x - self.mean) / self.std


class DigitsCNN(nn.Module):
    """conv(1->32) -> conv(32->64) -> 2x2 max pool -> dense(128) -> 10 logits."""

    def __init__(self, dropout: float = 0.25):
        super().__init__()
        self.standardize = Standardize()
        self.conv1 = nn.Conv2d(1, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.drop = nn.Dropout(dropout)
        self.fc1 = nn.Linear(64 * 4 * 4, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):                      # x: (N, 8, 8)
        h = self.standardize(x)[:, None]       # (N, 1, 8, 8): one input channel
        h = nn.functional.relu(self.conv1(h))
        h = self.pool(nn.functional.relu(self.conv2(h)))
        h = self.drop(h.reshape(h.shape[0], -1))
        h = self.drop(nn.functional.relu(self.fc1(h)))
        return self.fc2(h)


def build_model(kind: str, hidden: int = 256, dropout: float | None = None) -> nn.Module:
    """A fresh, randomly initialised model (initialisation draws from `nn.manual_seed`)."""
    if kind in DEFAULT_DROPOUT and dropout is None:
        dropout = DEFAULT_DROPOUT[kind]
    if kind == "mlp":
        return nn.Sequential(
            Standardize(), nn.Flatten(),
            nn.Linear(64, hidden), nn.GELU(), nn.Dropout(dropout),
            nn.Linear(hidden, hidden), nn.GELU(), nn.Dropout(dropout),
            nn.Linear(hidden, 10))
    if kind == "cnn":
        return DigitsCNN(dropout)
    raise ValueError(f"unknown model {kind!r} (expected 'mlp' or 'cnn')")


def standardizer(model: nn.Module) -> Standardize:
    return next(m for m in model.modules() if isinstance(m, Standardize))


# --- evaluation ------------------------------------------------------------------------

def evaluate(model: nn.Module, forward, x, y) -> tuple[float, float, np.ndarray]:
    """(mean cross entropy, accuracy, logits) of the model in eval mode on one batch;
    `forward` is `nn.compile_forward(model)`, built once so it compiles once."""
    model.eval()
    logits = forward(x)
    loss = float(nn.functional.cross_entropy(logits, y))
    acc = float(enp.mean(enp.argmax(logits, axis=1) == y))
    return loss, acc, np.asarray(logits)


def plot_history(history: list[dict], path: str) -> bool:
    """Loss and accuracy curves as a PNG, if matplotlib is installed."""
    plt = pyplot("loss/accuracy plot")
    if plt is None:
        return False
    epochs = [h["epoch"] for h in history]
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.5))
    a.plot(epochs, [h["train_loss"] for h in history], label="train")
    a.plot(epochs, [h["test_loss"] for h in history], label="test")
    a.set_xlabel("epoch"); a.set_ylabel("cross entropy"); a.set_yscale("log"); a.legend()
    b.plot(epochs, [h["test_accuracy"] for h in history])
    b.set_xlabel("epoch"); b.set_ylabel("test accuracy")
    save_figure(fig, path)
    return True


def confusion_matrix(labels: np.ndarray, predicted: np.ndarray, classes: int = 10) -> np.ndarray:
    """counts[i, j] = test images of digit i predicted as j."""
    counts = np.zeros((classes, classes), dtype=np.int64)
    np.add.at(counts, (labels, predicted), 1)
    return counts


def plot_confusion(counts: np.ndarray, path: str) -> bool:
    """The confusion matrix as an annotated heat map (PNG), if matplotlib is installed."""
    plt = pyplot("confusion matrix")
    if plt is None:
        return False
    fig, ax = plt.subplots(figsize=(5.2, 4.6))
    im = ax.imshow(counts, cmap="Blues")
    fig.colorbar(im, ax=ax)
    for (i, j), c in np.ndenumerate(counts):
        if c:
            ax.text(j, i, str(c), ha="center", va="center", fontsize=7,
                    color="white" if c > counts.max() / 2 else "black")
    ax.set_xticks(range(counts.shape[1])); ax.set_yticks(range(counts.shape[0]))
    ax.set_xlabel("predicted digit"); ax.set_ylabel("true digit")
    ax.set_title(f"test set: {np.trace(counts)} / {counts.sum()} correct")
    save_figure(fig, path)
    return True


# --- main ------------------------------------------------------------------------------

def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", choices=("mlp", "cnn"), default="mlp")
    ap.add_argument("--epochs", type=int, default=None,
                    help=f"default: {DEFAULT_EPOCHS['mlp']} (mlp), {DEFAULT_EPOCHS['cnn']} (cnn)")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=3e-3, help="peak learning rate of the one-cycle schedule")
    ap.add_argument("--weight-decay", type=float, default=1e-2)
    ap.add_argument("--hidden", type=int, default=256, help="MLP width")
    ap.add_argument("--dropout", type=float, default=None,
                    help=f"default: {DEFAULT_DROPOUT['mlp']} (mlp), {DEFAULT_DROPOUT['cnn']} (cnn)")
    ap.add_argument("--label-smoothing", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out-dir", default=None,
                    help="folder for the checkpoint and figures (default: runs/digits_<model>, "
                         "or the checkpoint's folder when --checkpoint is given)")
    ap.add_argument("--checkpoint", default=None,
                    help="where to save the trained model (default: <out-dir>/model.safetensors)")
    ap.add_argument("--plot", default=None,
                    help="PNG of the training curves (default: <out-dir>/curves.png; needs matplotlib)")
    ap.add_argument("--no-plot", action="store_true")
    ap.add_argument("--precision", choices=("fp32", "bf16", "fp16"), default="fp32",
                    help="compute dtype of matmuls/convolutions (ember.amp; fp16 adds loss scaling)")
    ap.add_argument("--distributed", action="store_true",
                    help="data parallel across the ranks of `mpiexec -n N` (ember.distributed)")
    args = ap.parse_args(argv)
    epochs = DEFAULT_EPOCHS[args.model] if args.epochs is None else args.epochs
    dropout = DEFAULT_DROPOUT[args.model] if args.dropout is None else args.dropout
    out_dir = args.out_dir or (os.path.dirname(os.path.abspath(args.checkpoint)) if args.checkpoint
                               else os.path.join("runs", f"digits_{args.model}"))

    train = load_digits("train")               # (8, 8) float32 images in [0, 1], int64 labels
    test = load_digits("test")
    x_test, y_test = enp.asarray(test.arrays[0]), enp.asarray(test.arrays[1])

    rank, world = 0, 1
    if args.distributed:
        rank, world = ember.distributed.init().rank, ember.distributed.world_size()
    lead = rank == 0                           # rank 0 prints, checkpoints and plots
    say = print if lead else (lambda *a, **k: None)

    nn.manual_seed(args.seed)                  # parameter initialisation
    model = build_model(args.model, args.hidden, dropout)
    standardizer(model).fit(train.arrays[0])
    model.set_rng(ember.random.key(args.seed + 1 + rank))   # dropout keys, one stream per rank
    say(model)
    say(f"{model.num_parameters():,} parameters; {len(train)} training / {len(test)} test images; "
        f"the train loss is label-smoothed ({args.label_smoothing}), the test loss is not")
    policy = {"fp32": None, "bf16": amp.Policy(compute_dtype="bfloat16"),
              "fp16": amp.Policy(compute_dtype="float16")}[args.precision]
    scaler = amp.GradScaler() if args.precision == "fp16" else None

    if args.distributed:                       # each rank reads its share; the batch is split
        sampler = DistributedSampler(train, shuffle=True, seed=args.seed, drop_last=True)
        loader = DataLoader(train, batch_size=args.batch_size // world, sampler=sampler, drop_last=True)
        say(f"data parallel over {world} ranks: {args.batch_size // world} examples per rank per step")
    else:
        sampler = None
        loader = DataLoader(train, batch_size=args.batch_size, shuffle=True, drop_last=True, seed=args.seed)
    opt = optim.AdamW(model, lr=args.lr, weight_decay=args.weight_decay)
    sched = optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=epochs * len(loader))

    def loss_fn(m, x, y):
        return nn.functional.cross_entropy(m(x), y, label_smoothing=args.label_smoothing)

    step = nn.TrainStep(model, opt, loss_fn,   # compiled with ember.jit on first call
                        policy=policy, scaler=scaler, distributed=args.distributed)
    forward = nn.compile_forward(model)         # compiled evaluation (params are inputs)

    history = []
    t0 = time.perf_counter()
    for epoch in range(1, epochs + 1):
        model.train()
        losses = []
        if sampler is not None:
            sampler.set_epoch(epoch)
        batches = Progress(loader if lead else iter(loader), desc=f"epoch {epoch}", leave=False)
        for x, y in batches:
            losses.append(step(x, y))
            sched.step()
        batches.close()
        train_loss = float(np.mean([float(l) for l in losses]))
        test_loss, test_acc, _ = evaluate(model, forward, x_test, y_test)
        history.append({"epoch": epoch, "train_loss": train_loss, "test_loss": test_loss,
                        "test_accuracy": test_acc, "seconds": time.perf_counter() - t0})
        msg = (f"epoch {epoch:3d}  train loss {train_loss:.4f}  test loss {test_loss:.4f}  "
               f"test acc {test_acc:.4f}  lr {sched.get_last_lr()[0]:.2e}  "
               f"[{time.perf_counter() - t0:5.1f}s]")
        if lead:
            batches.write(msg)
    seconds = time.perf_counter() - t0
    compiles = getattr(step._fn, "compile_count", None)
    test_loss, test_acc, logits = evaluate(model, forward, x_test, y_test)
    n_steps = epochs * len(loader)
    say(f"trained {args.model} ({args.precision}) for {epochs} epochs in {seconds:.1f}s "
        f"({n_steps} steps, {1e3 * seconds / n_steps:.2f} ms/step; the step compiled {compiles} "
        f"time(s)): test accuracy {test_acc:.4f}")
    if not lead:
        ember.distributed.barrier()            # rank 0 checkpoints; the others are done
        return {"model": args.model, "epochs": epochs, "test_accuracy": test_acc, "rank": rank,
                "history": history, "seconds": seconds, "precision": args.precision}

    # --- checkpoint round trip: save, build a fresh model, load, re-evaluate ----------
    path = args.checkpoint or os.path.join(out_dir, "model.safetensors")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    ember.save(path, {"model": model.state_dict(), "optimizer": opt.state_dict(),
                      "epoch": epochs, "config": {"model": args.model, "hidden": args.hidden,
                                                 "dropout": dropout}})
    size = os.path.getsize(path)
    ckpt = ember.load(path)
    nn.manual_seed(args.seed + 1000)           # different initial weights: the load must matter
    fresh = build_model(ckpt["config"]["model"], ckpt["config"]["hidden"], ckpt["config"]["dropout"])
    fresh.load_state_dict(ckpt["model"])
    fresh_opt = optim.AdamW(fresh, lr=args.lr, weight_decay=args.weight_decay)
    fresh_opt.load_state_dict(ckpt["optimizer"])   # resuming would continue from here
    assert float(fresh_opt.state_dict()["state"][0]["step"]) == epochs * len(loader)
    _, reloaded_acc, reloaded_logits = evaluate(fresh, nn.compile_forward(fresh), x_test, y_test)
    logit_diff = float(np.max(np.abs(reloaded_logits - logits)))
    print(f"saved {path}, {size / 1024:.0f} KiB; reloaded into a fresh model: test accuracy "
          f"{reloaded_acc:.4f}, max |logit difference| {logit_diff:.1e}")
    assert reloaded_acc == test_acc, (reloaded_acc, test_acc)
    if args.distributed:
        ember.distributed.barrier()

    confusion = confusion_matrix(np.asarray(y_test), np.argmax(logits, axis=1))
    plotted = False
    if not args.no_plot:
        plotted = plot_history(history, args.plot or os.path.join(out_dir, "curves.png"))
        plot_confusion(confusion, os.path.join(out_dir, "confusion.png"))
    return {"model": args.model, "epochs": epochs, "test_accuracy": test_acc, "test_loss": test_loss,
            "reloaded_accuracy": reloaded_acc, "reload_max_logit_diff": logit_diff,
            "precision": args.precision, "ms_per_step": 1e3 * seconds / n_steps, "rank": rank,
            "history": history, "seconds": seconds, "compile_count": compiles,
            "num_parameters": model.num_parameters(), "plotted": plotted,
            "checkpoint": path, "out_dir": out_dir, "confusion": confusion}


if __name__ == "__main__":
    main()
