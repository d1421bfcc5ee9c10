"""Hand-written float64 numpy versions of PyTorch's single-tensor optimiser loops (and of
Lion and LAMB from their papers), the ground truth for the ember optimiser tests."""
from __future__ import annotations

import math

import numpy as np


class Reference:
    """One optimiser over a list of numpy arrays, with per-parameter state dicts."""

    def __init__(self, **hp):
        self.hp = hp
        self.state = None

    def step(self, params, grads):
        if self.state is None:
            self.state = [self.init(p) for p in params]
        return [self.update(p.copy(), g, s) for p, g, s in zip(params, grads, self.state)]


class SGD(Reference):
    def init(self, p):
        return {"buf": None}

    def update(self, p, g, s):
        h = self.hp
        lr, mom = h.get("lr", 1e-3), h.get("momentum", 0.0)
        damp, wd = h.get("dampening", 0.0), h.get("weight_decay", 0.0)
        g = -g if h.get("maximize") else g
        if wd != 0:
            g = g + wd * p
        if mom != 0:
            if s["buf"] is None:
                s["buf"] = g.copy()
            else:
                s["buf"] = mom * s["buf"] + (1 - damp) * g
            g = g + mom * s["buf"] if h.get("nesterov") else s["buf"]
        return p - lr * g


class Adam(Reference):
    decoupled = False

    def init(self, p):
        return {"t": 0, "m": np.zeros_like(p), "v": np.zeros_like(p), "vmax": np.zeros_like(p)}

    def update(self, p, g, s):
        h = self.hp
        lr, (b1, b2), eps = h.get("lr", 1e-3), h.get("betas", (0.9, 0.999)), h.get("eps", 1e-8)
        wd = h.get("weight_decay", 1e-2 if self.decoupled else 0.0)
        g = -g if h.get("maximize") else g
        s["t"] += 1
        t = s["t"]
        if self.decoupled:
            p = p * (1 - lr * wd)
        elif wd != 0:
            g = g + wd * p
        s["m"] = b1 * s["m"] + (1 - b1) * g
        s["v"] = b2 * s["v"] + (1 - b2) * g * g
        bc1, bc2 = 1 - b1 ** t, 1 - b2 ** t
        if h.get("amsgrad"):
            s["vmax"] = np.maximum(s["vmax"], s["v"])
            denom = np.sqrt(s["vmax"]) / math.sqrt(bc2) + eps
        else:
            denom = np.sqrt(s["v"]) / math.sqrt(bc2) + eps
        return p - (lr / bc1) * s["m"] / denom


class AdamW(Adam):
    decoupled = True


class Adamax(Reference):
    def init(self, p):
        return {"t": 0, "m": np.zeros_like(p), "u": np.zeros_like(p)}

    def update(self, p, g, s):
        h = self.hp
        lr, (b1, b2), eps = h.get("lr", 2e-3), h.get("betas", (0.9, 0.999)), h.get("eps", 1e-8)
        wd = h.get("weight_decay", 0.0)
        g = -g if h.get("maximize") else g
        s["t"] += 1
        if wd != 0:
            g = g + wd * p
        s["m"] = b1 * s["m"] + (1 - b1) * g
        s["u"] = np.maximum(b2 * s["u"], np.abs(g) + eps)
        return p - lr / (1 - b1 ** s["t"]) * s["m"] / s["u"]


class NAdam(Reference):
    def init(self, p):
        return {"t": 0, "mu_product": 1.0, "m": np.zeros_like(p), "v": np.zeros_like(p)}

    def update(self, p, g, s):
        h = self.hp
        lr, (b1, b2), eps = h.get("lr", 2e-3), h.get("betas", (0.9, 0.999)), h.get("eps", 1e-8)
        wd, psi = h.get("weight_decay", 0.0), h.get("momentum_decay", 4e-3)
        g = -g if h.get("maximize") else g
        s["t"] += 1
        t = s["t"]
        if wd != 0:
            if h.get("decoupled_weight_decay"):
                p = p * (1 - lr * wd)
            else:
                g = g + wd * p
        mu = b1 * (1 - 0.5 * 0.96 ** (t * psi))
        mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * psi))
        s["mu_product"] *= mu
        s["m"] = b1 * s["m"] + (1 - b1) * g
        s["v"] = b2 * s["v"] + (1 - b2) * g * g
        denom = np.sqrt(s["v"] / (1 - b2 ** t)) + eps
        p = p - lr * (1 - mu) / (1 - s["mu_product"]) * g / denom
        return p - lr * mu_next / (1 - s["mu_product"] * mu_next) * s["m"] / denom


class RAdam(Reference):
    def init(self, p):
        return {"t": 0, "m": np.zeros_like(p), "v": np.zeros_like(p)}

    def update(self, p, g, s):
        h = self.hp
        lr, (b1, b2), eps = h.get("lr", 1e-3), h.get("betas", (0.9, 0.999)), h.get("eps", 1e-8)
        wd = h.get("weight_decay", 0.0)
        g = -g if h.get("maximize") else g
        s["t"] += 1
        t = s["t"]
        if wd != 0:
            if h.get("decoupled_weight_decay"):
                p = p * (1 - lr * wd)
            else:
                g = g + wd * p
        s["m"] = b1 * s["m"] + (1 - b1) * g
        s["v"] = b2 * s["v"] + (1 - b2) * g * g
        bc1, bc2 = 1 - b1 ** t, 1 - b2 ** t
        m_hat = s["m"] / bc1
        rho_inf = 2 / (1 - b2) - 1
        rho_t = rho_inf - 2 * t * b2 ** t / bc2
        if rho_t > 5:
            rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf
                             / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            adaptive = math.sqrt(bc2) / (np.sqrt(s["v"]) + eps)
            return p - m_hat * lr * adaptive * rect
        return p - m_hat * lr


class RMSprop(Reference):
    def init(self, p):
        return {"sq": np.zeros_like(p), "buf": np.zeros_like(p), "gavg": np.zeros_like(p)}

    def update(self, p, g, s):
        h = self.hp
        lr, alpha, eps = h.get("lr", 1e-2), h.get("alpha", 0.99), h.get("eps", 1e-8)
        wd, mom = h.get("weight_decay", 0.0), h.get("momentum", 0.0)
        g = -g if h.get("maximize") else g
        if wd != 0:
            g = g + wd * p
        s["sq"] = alpha * s["sq"] + (1 - alpha) * g * g
        if h.get("centered"):
            s["gavg"] = alpha * s["gavg"] + (1 - alpha) * g
            avg = np.sqrt(s["sq"] - s["gavg"] ** 2) + eps
        else:
            avg = np.sqrt(s["sq"]) + eps
        if mom > 0:
            s["buf"] = mom * s["buf"] + g / avg
            return p - lr * s["buf"]
        return p - lr * g / avg


class Adagrad(Reference):
    def init(self, p):
        return {"t": 0, "sum": np.full_like(p, self.hp.get("initial_accumulator_value", 0.0))}

    def update(self, p, g, s):
        h = self.hp
        lr, decay, eps = h.get("lr", 1e-2), h.get("lr_decay", 0.0), h.get("eps", 1e-10)
        wd = h.get("weight_decay", 0.0)
        g = -g if h.get("maximize") else g
        s["t"] += 1
        if wd != 0:
            g = g + wd * p
        clr = lr / (1 + (s["t"] - 1) * decay)
        s["sum"] = s["sum"] + g * g
        return p - clr * g / (np.sqrt(s["sum"]) + eps)


class Adadelta(Reference):
    def init(self, p):
        return {"sq": np.zeros_like(p), "acc": np.zeros_like(p)}

    def update(self, p, g, s):
        h = self.hp
        lr, rho, eps = h.get("lr", 1.0), h.get("rho", 0.9), h.get("eps", 1e-6)
        wd = h.get("weight_decay", 0.0)
        g = -g if h.get("maximize") else g
        if wd != 0:
            g = g + wd * p
        s["sq"] = rho * s["sq"] + (1 - rho) * g * g
        delta = np.sqrt(s["acc"] + eps) / np.sqrt(s["sq"] + eps) * g
        s["acc"] = rho * s["acc"] + (1 - rho) * delta * delta
        return p - lr * delta


class Lion(Reference):
    def init(self, p):
        return {"m": np.zeros_like(p)}

    def update(self, p, g, s):
        h = self.hp
        lr, (b1, b2), wd = h.get("lr", 1e-4), h.get("betas", (0.9, 0.99)), h.get("weight_decay", 0.0)
        g = -g if h.get("maximize") else g
        p = p * (1 - lr * wd)
        p = p - lr * np.sign(b1 * s["m"] + (1 - b1) * g)
        s["m"] = b2 * s["m"] + (1 - b2) * g
        return p


class LAMB(Reference):
    def init(self, p):
        return {"t": 0, "m": np.zeros_like(p), "v": np.zeros_like(p)}

    def update(self, p, g, s):
        h = self.hp
        lr, (b1, b2), eps = h.get("lr", 1e-3), h.get("betas", (0.9, 0.999)), h.get("eps", 1e-6)
        wd = h.get("weight_decay", 0.0)
        g = -g if h.get("maximize") else g
        s["t"] += 1
        t = s["t"]
        s["m"] = b1 * s["m"] + (1 - b1) * g
        s["v"] = b2 * s["v"] + (1 - b2) * g * g
        r = (s["m"] / (1 - b1 ** t)) / (np.sqrt(s["v"] / (1 - b2 ** t)) + eps) + wd * p
        wn, rn = np.linalg.norm(p), np.linalg.norm(r)
        trust = wn / rn if wn > 0 and rn > 0 else 1.0
        return p - lr * trust * r


REFERENCES = {"sgd": SGD, "adam": Adam, "adamw": AdamW, "adamax": Adamax, "nadam": NAdam,
              "radam": RAdam, "rmsprop": RMSprop, "adagrad": Adagrad, "adadelta": Adadelta,
              "lion": Lion, "lamb": LAMB}


# --- problems -----------------------------------------------------------------------

def quadratic_problem():
    """A fixed convex quadratic over a dict of two parameters; returns (params, grad_fn)."""
    rng = np.random.default_rng(0)
    q = rng.normal(size=(5, 5))
    a = q @ q.T / 5 + np.eye(5)
    b = rng.normal(size=5)
    c = rng.normal(size=(2, 3))
    params = {"x": rng.normal(size=5), "y": rng.normal(size=(2, 3))}

    def grad_fn(p):
        return {"x": a @ p["x"] - b, "y": 2.0 * (p["y"] - c) * np.array([1.0, 3.0])[:, None]}
    return params, grad_fn


def mlp_problem():
    """A 4-8-1 tanh MLP with an MSE loss on fixed data; returns (params, grad_fn, data)."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(16, 4))
    y = np.sin(x.sum(axis=1, keepdims=True))
    # keys inserted in sorted order, so a torch parameter list in pytree-leaf order is
    # also in registration order (what optimiser state_dicts number by)
    w1, w2 = rng.normal(size=(4, 8)) * 0.5, rng.normal(size=(8, 1)) * 0.5
    params = {"l1": {"b": np.zeros(8), "w": w1}, "l2": {"b": np.zeros(1), "w": w2}}

    def grad_fn(p):
        h_pre = x @ p["l1"]["w"] + p["l1"]["b"]
        h = np.tanh(h_pre)
        out = h @ p["l2"]["w"] + p["l2"]["b"]
        d_out = 2.0 * (out - y) / out.size
        d_h = d_out @ p["l2"]["w"].T * (1 - h * h)
        return {"l1": {"w": x.T @ d_h, "b": d_h.sum(axis=0)},
                "l2": {"w": h.T @ d_out, "b": d_out.sum(axis=0)}}
    return params, grad_fn, (x, y)
