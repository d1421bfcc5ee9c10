"""Symbolic dimensions: the IR text traced at a base size, with each number that moves with a named size recorded as an affine function of it.

`export` traces the function at the base sizes (every name = 2), then once per
name with that name at 3: the texts must be the same token for token except
for numbers (shapes, params such as reshape sizes or iota lengths, literals such
as a mean's divisor); each number that differs is a *slot* `c + sum(a[n] * n)`.
A last trace at other sizes (5, 7, ...) must equal the template instantiated
there, or the function is refused (its graph is not affine in the sizes).
`instantiate` writes the numbers for concrete sizes back into the text, which
`ember.fx.parse` then reads and checks equation by equation.
"""
from __future__ import annotations

from ..fx.parse import _number, _tokenize

BASE = 2


def _numeric(tok):
    return tok.kind == "num" and not tok.text.startswith("nan0x") and not tok.text.endswith("j")


def template(base_text: str, varied: dict) -> list:
    """Slots of `base_text` (traced with every size at BASE) given, per name, the
    text traced with that name at BASE + 1.  Raises ValueError naming the first
    structural difference."""
    base = _tokenize(base_text)
    per_name = {n: _tokenize(t) for n, t in varied.items()}
    slots = {}
    for name, toks in per_name.items():
        if len(toks) != len(base):
            raise ValueError(f"the graph changes structure when {name} changes (from {BASE} to "
                             f"{BASE + 1}): {len(base)} vs {len(toks)} tokens")
        for i, (a, b) in enumerate(zip(base, toks)):
            if a.text == b.text:
                continue
            if not (_numeric(a) and _numeric(b)):
                raise ValueError(f"the graph changes structure when {name} changes (from {BASE} to "
                                 f"{BASE + 1}): {a.text!r} becomes {b.text!r}")
            va, vb = _number(a.text), _number(b.text)
            slot = slots.setdefault(i, {"token": i, "base": va, "coeffs": {}})
            slot["coeffs"][name] = vb - va
    out = []
    for i in sorted(slots):
        s = slots[i]
        c = s["base"] - sum(a * BASE for a in s["coeffs"].values())
        out.append({"token": i, "const": c, "coeffs": s["coeffs"]})
    return out


def instantiate(base_text: str, slots: list, sizes: dict) -> str:
    """The text with every slot's number computed for `sizes` (name -> int)."""
    toks = _tokenize(base_text)
    pieces, last = [], 0
    for s in slots:
        t = toks[s["token"]]
        v = s["const"] + sum(a * sizes[n] for n, a in s["coeffs"].items())
        text = str(v) if isinstance(v, int) else repr(float(v))
        pieces += [base_text[last:t.pos], text]
        last = t.pos + len(t.text)
    pieces.append(base_text[last:])
    return "".join(pieces)


def dim_expr(const, coeffs: dict):
    """A symbolic dimension for users: an int, a name, or a string like `2*b+1`."""
    terms = [(n if a == 1 else f"{a}*{n}") for n, a in coeffs.items() if a]
    if not terms:
        return int(const)
    if const == 0 and len(terms) == 1 and terms[0] in coeffs:
        return terms[0]
    return "+".join(terms) + (f"{int(const):+d}" if const else "")
