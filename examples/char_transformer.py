"""A small decoder-only transformer trained on characters of a bundled text.

The model (`CharTransformer`) is the usual GPT-style stack written with
`ember.nn`: token and position embeddings, `n_layer` pre-LayerNorm blocks of
causal multi-head self-attention (`nn.functional.scaled_dot_product_attention`
with `is_causal=True`) and a GELU MLP, a final LayerNorm and a linear head.

Training: random windows of the text come from a shuffling `DataLoader`; the
step (forward, cross entropy over every position, backward, AdamW with linear
warm-up then cosine decay, the dropout key) is one `nn.TrainStep` compiled with
`ember.jit`.  The text is `examples/data/tiny_corpus.txt` (original prose made
for ember, CC0; see examples/data/README.md), split 90/10 into train and
validation.

For reference the script prints the corpus's unigram entropy -- the loss, in
nats per character, of the best model that knows only letter frequencies -- and
the bigram conditional entropy measured on the training text; the transformer's
validation loss ends far below both.  It then samples from the model at a few
temperatures: one jitted function computes the logits and draws the next
character of every sample with `ember.random.categorical` from explicit keys.

Run:   python examples/char_transformer.py                 # ~2-3 minutes on 2 cores
       python examples/char_transformer.py --steps 300 --d-model 64   # a quick look
"""
from __future__ import annotations

import argparse
import collections
import math
import os
import pathlib
import textwrap
import time

import numpy as np

import ember
import ember.numpy as enp
from ember import amp, nn, optim, random
from ember.data import DataLoader, Dataset

from _common import Progress, add_output_args, pyplot, save_figure

F = nn.functional
CORPUS = pathlib.Path(__file__).resolve().parent / "data" / "tiny_corpus.txt"


# --- data ------------------------------------------------------------------------------

class CharWindows(Dataset):
    """Every window of `block_size + 1` consecutive characters of an encoded text, as
    (input, target) = (chars[i : i+T], chars[i+1 : i+T+1])."""

    def __init__(self, ids: np.ndarray, block_size: int):
        if len(ids) <= block_size:
            raise ValueError(f"the text ({len(ids)} characters) is shorter than one window "
                             f"({block_size + 1})")
        self.ids, self.block_size = ids, block_size

    def __len__(self):
        return len(self.ids) - self.block_size

    def __getitem__(self, i):
        w = self.ids[i:i + self.block_size + 1]
        return w[:-1], w[1:]


def unigram_entropy(text: str) -> float:
    """-sum p(c) log p(c) over the characters of `text`, in nats."""
    counts = np.array(list(collections.Counter(text).values()), dtype=np.float64)
    p = counts / counts.sum()
    return float(-(p * np.log(p)).sum())


def bigram_entropy(text: str) -> float:
    """H(next char | previous char) of `text` by counting pairs, in nats."""
    pairs = collections.Counter(zip(text, text[1:]))
    firsts = collections.Counter(text[:-1])
    n = len(text) - 1
    return float(-sum(c / n * math.log(c / firsts[a]) for (a, _), c in pairs.items()))


# --- the model -------------------------------------------------------------------------

class CausalSelfAttention(nn.Module):
    """Multi-head self-attention in which position t sees positions <= t only."""

    def __init__(self, d_model: int, n_head: int, dropout: float):
        super().__init__()
        if d_model % n_head:
            raise ValueError(f"d_model ({d_model}) must be a multiple of n_head ({n_head})")
        self.n_head = n_head
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):                                   # x: (B, T, C)
        b, t, c = x.shape
        q, k, v = enp.split(self.qkv(x), 3, axis=-1)

        def heads(z):                                       # (B, T, C) -> (B, H, T, C/H)
            return z.reshape(b, t, self.n_head, c // self.n_head).transpose(0, 2, 1, 3)

        y = F.scaled_dot_product_attention(heads(q), heads(k), heads(v), is_causal=True)
        return self.drop(self.proj(y.transpose(0, 2, 1, 3).reshape(b, t, c)))


class Block(nn.Module):
    """x + attn(ln(x)), then x + mlp(ln(x))."""

    def __init__(self, d_model: int, n_head: int, dropout: float):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_head, dropout)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(),
                                 nn.Linear(4 * d_model, d_model), nn.Dropout(dropout))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class CharTransformer(nn.Module):
    """Logits (B, T, vocab) of the next character at every position of (B, T) ids."""

    def __init__(self, vocab_size: int, block_size: int, d_model: int = 128, n_layer: int = 3,
                 n_head: int = 4, dropout: float = 0.1):
        super().__init__()
        self.block_size = block_size
        self.tok_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Embedding(block_size, d_model)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.Sequential(*[Block(d_model, n_head, dropout) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, ids):
        t = ids.shape[1]
        if t > self.block_size:
            raise ValueError(f"sequence of length {t} is longer than block_size={self.block_size}")
        x = self.drop(self.tok_emb(ids) + self.pos_emb(enp.arange(t)))
        return self.head(self.ln_f(self.blocks(x)))


def lm_loss(model, x, y):
    """Mean cross entropy of the next character over every position of the batch."""
    logits = model(x)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


# --- evaluation and sampling -----------------------------------------------------------

def eval_windows(ids: np.ndarray, block_size: int, n: int):
    """`n` evenly spaced, non-overlapping (input, target) windows of a split, as arrays
    (always the same shape, so evaluation compiles once)."""
    starts = np.linspace(0, len(ids) - block_size - 1, n).astype(np.int64)
    x = np.stack([ids[s:s + block_size] for s in starts])
    y = np.stack([ids[s + 1:s + block_size + 1] for s in starts])
    return enp.asarray(x), enp.asarray(y)


def make_sampler(model: CharTransformer):
    """A jitted `(params, window, pos, key, temperature) -> next ids`: the logits at
    position `pos` of each row of `window` (B, block_size), divided by the row's
    temperature, sampled with `random.categorical`.  Rows are right-padded, which
    causal attention makes harmless: position `pos` never sees what lies after it."""

    @ember.jit
    def next_ids(params, window, pos, key, temperature):
        logits, _ = nn.functional_call(model, params, window)
        last = enp.take(logits, pos, axis=1)                 # (B, vocab)
        return random.categorical(key, last / temperature[:, None])

    return next_ids


def sample(model: CharTransformer, prompt_ids: list[int], temperatures, n_chars: int, key):
    """`n_chars` sampled ids after `prompt_ids`, one row per temperature."""
    model.eval()
    next_ids = make_sampler(model)
    params = model.parameters()
    t_max = model.block_size
    rows = len(temperatures)
    temps = enp.asarray(np.asarray(temperatures, np.float32))
    seqs = [list(prompt_ids) for _ in range(rows)]
    for _ in range(n_chars):
        n = len(seqs[0])
        ctx = [s[-t_max:] for s in seqs]
        window = np.zeros((rows, t_max), np.int32)
        window[:, :len(ctx[0])] = ctx
        key, sub = random.split(key)
        new = np.asarray(next_ids(params, enp.asarray(window), enp.asarray(min(n, t_max) - 1), sub, temps))
        for s, c in zip(seqs, new.tolist()):
            s.append(c)
    return [s[len(prompt_ids):] for s in seqs]


# --- main ------------------------------------------------------------------------------

def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default=str(CORPUS), help="a UTF-8 text file")
    ap.add_argument("--steps", type=int, default=1200)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--block-size", type=int, default=64, help="context length")
    ap.add_argument("--d-model", type=int, default=128)
    ap.add_argument("--n-layer", type=int, default=3)
    ap.add_argument("--n-head", type=int, default=4)
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--lr", type=float, default=2e-3, help="peak learning rate")
    ap.add_argument("--warmup", type=int, default=100, help="linear warm-up steps")
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--val-fraction", type=float, default=0.1)
    ap.add_argument("--eval-every", type=int, default=250)
    ap.add_argument("--eval-windows", type=int, default=64, help="windows per split per evaluation")
    ap.add_argument("--sample-chars", type=int, default=300)
    ap.add_argument("--temperatures", type=float, nargs="+", default=[0.5, 0.8, 1.0])
    ap.add_argument("--prompt", default="\n", help="text every sample starts from")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--precision", choices=("fp32", "bf16", "fp16"), default="fp32",
                    help="compute dtype of matmuls and attention (ember.amp; fp16 adds loss scaling)")
    add_output_args(ap, "runs/char_transformer")
    args = ap.parse_args(argv)

    text = pathlib.Path(args.corpus).read_text(encoding="utf-8")
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    ids = np.array([stoi[c] for c in text], dtype=np.int32)
    n_val = int(len(ids) * args.val_fraction)
    train_ids, val_ids = ids[:-n_val], ids[-n_val:]
    h1 = unigram_entropy(text)
    h2 = bigram_entropy(text[:-n_val])
    print(f"corpus: {len(text):,} characters, {len(chars)} distinct; "
          f"{len(train_ids):,} train / {len(val_ids):,} validation")
    print(f"unigram entropy {h1:.3f} nats/char (letter frequencies only); "
          f"bigram conditional entropy of the training text {h2:.3f} nats/char")

    nn.manual_seed(args.seed)
    model = CharTransformer(len(chars), args.block_size, args.d_model, args.n_layer, args.n_head,
                            args.dropout)
    model.set_rng(random.key(args.seed + 1))
    print(f"CharTransformer: {args.n_layer} blocks, d_model {args.d_model}, {args.n_head} heads, "
          f"context {args.block_size}: {model.num_parameters():,} parameters")

    loader = DataLoader(CharWindows(train_ids, args.block_size), batch_size=args.batch_size,
                        shuffle=True, drop_last=True, seed=args.seed)
    opt = optim.AdamW(model, lr=args.lr, betas=(0.9, 0.99), weight_decay=args.weight_decay)
    warmup = max(1, min(args.warmup, args.steps - 1))
    sched = optim.lr_scheduler.SequentialLR(opt, [
        optim.lr_scheduler.LinearLR(opt, start_factor=0.01, total_iters=warmup),
        optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(1, args.steps - warmup), eta_min=args.lr / 20),
    ], milestones=[warmup])
    policy = {"fp32": None, "bf16": amp.Policy(compute_dtype="bfloat16"),
              "fp16": amp.Policy(compute_dtype="float16")}[args.precision]
    step = nn.TrainStep(model, opt, lm_loss, policy=policy,
                        scaler=amp.GradScaler() if args.precision == "fp16" else None)
    forward = nn.compile_forward(model)
    n_eval = max(1, min(args.eval_windows, (len(val_ids) - 1) // args.block_size))
    evals = {"train": eval_windows(train_ids, args.block_size, n_eval),
             "val": eval_windows(val_ids, args.block_size, n_eval)}

    def evaluate() -> dict:
        model.eval()
        out = {}
        for split, (x, y) in evals.items():
            logits = forward(x)
            out[split] = float(F.cross_entropy(logits.reshape(-1, len(chars)), y.reshape(-1)))
        model.train()
        return out

    history = []
    t0 = time.perf_counter()
    done, running = 0, []
    model.train()
    batches = _forever(loader)
    bar = Progress(range(args.steps), desc="train")
    for _ in bar:
        x, y = next(batches)
        running.append(step(x, y))
        sched.step()
        done += 1
        if done % args.eval_every == 0 or done == args.steps:
            ev = evaluate()
            batch_loss = float(np.mean([float(l) for l in running]))
            running = []
            history.append({"step": done, "batch_loss": batch_loss, **ev,
                            "seconds": time.perf_counter() - t0})
            bar.write(f"step {done:5d}  batch loss {batch_loss:.3f}  train {ev['train']:.3f}  "
                      f"val {ev['val']:.3f} nats/char ({ev['val'] / h1:.0%} of unigram)  "
                      f"lr {sched.get_last_lr()[0]:.1e}  [{time.perf_counter() - t0:5.1f}s]")
    bar.close()
    seconds = time.perf_counter() - t0
    final = history[-1]
    print(f"trained {done} steps ({args.precision}) in {seconds:.1f}s, {1e3 * seconds / done:.1f} "
          f"ms/step (the step compiled "
          f"{getattr(step._fn, 'compile_count', '?')} time(s)); validation loss {final['val']:.3f} "
          f"nats/char = {final['val'] / h1:.2f} x unigram entropy, {final['val'] / h2:.2f} x bigram")

    samples = {}
    if args.sample_chars > 0:
        prompt = [stoi[c] for c in args.prompt if c in stoi] or [stoi[chars[0]]]
        rows = sample(model, prompt, args.temperatures, args.sample_chars, random.key(args.seed + 2))
        prompt_text = "".join(chars[i] for i in prompt)
        for t, r in zip(args.temperatures, rows):
            samples[t] = prompt_text + "".join(chars[i] for i in r)
            print(f"\n--- sample at temperature {t} ---\n{samples[t].strip()}")
    figure = None if args.no_plot else plot_training(
        history, samples, h1, h2, os.path.join(args.out_dir, "training.png"))
    return {"unigram_entropy": h1, "bigram_entropy": h2, "train_loss": final["train"],
            "val_loss": final["val"], "history": history, "samples": samples, "seconds": seconds,
            "steps": done, "num_parameters": model.num_parameters(), "precision": args.precision,
            "ms_per_step": 1e3 * seconds / done,
            "compile_count": getattr(step._fn, "compile_count", None), "vocab": chars,
            "figure": figure}


def _forever(loader):
    """Batches from `loader`, epoch after epoch (each epoch reshuffled)."""
    while True:
        yield from loader


def plot_training(history: list[dict], samples: dict, h1: float, h2: float, path: str) -> str | None:
    """The loss curves against the unigram/bigram baselines, and the samples as text."""
    plt = pyplot("training figure")
    if plt is None:
        return None
    fig, (a, b) = plt.subplots(1, 2, figsize=(13, 4.5), gridspec_kw={"width_ratios": [1, 1.3]})
    steps = [h["step"] for h in history]
    for key, style in (("batch_loss", ":"), ("train", "-"), ("val", "-")):
        a.plot(steps, [h[key] for h in history], style, marker="o", ms=3, label=key.replace("_", " "))
    a.axhline(h1, color="gray", ls="--", lw=0.8, label="unigram entropy")
    a.axhline(h2, color="gray", ls="-.", lw=0.8, label="bigram entropy")
    a.set_xlabel("step"); a.set_ylabel("nats / char"); a.set_title("char transformer"); a.legend(fontsize=8)
    b.axis("off")
    text = "\n\n".join(f"T = {t}:\n" + "\n".join(textwrap.wrap(s.strip().replace("\n", " / "), 80)[:6])
                        for t, s in samples.items()) or "(no samples: --sample-chars 0)"
    b.text(0.0, 1.0, text, va="top", ha="left", family="monospace", fontsize=7, transform=b.transAxes)
    b.set_title("samples")
    return save_figure(fig, path)


if __name__ == "__main__":
    main()
