"""L-BFGS with torch.optim.LBFGS's algorithm, arguments and defaults: `step(closure)` runs
up to `max_iter` iterations of the two-loop recursion over a `history_size` memory, with a
fixed step or the strong-Wolfe line search (`line_search_fn="strong_wolfe"`).

ember has no `loss.backward()`, so the closure gives the gradient too: either
`closure(params) -> loss` (LBFGS differentiates it with `ember.value_and_grad`) or
`closure() -> (loss, grads)` with grads shaped like `opt.params`. The iteration is host
control flow on the values, as in PyTorch; jit the closure to compile the model.

Example:
    >>> import ember.numpy as enp
    >>> from ember import optim
    >>> opt = optim.LBFGS({"x": enp.asarray([3.0, -2.0])}, line_search_fn="strong_wolfe")
    >>> loss = opt.step(lambda p: ((p["x"] - 1.0) ** 2).sum())
    >>> [round(v, 4) for v in opt.params["x"].tolist()]
    [1.0, 1.0]
"""
from __future__ import annotations

import inspect

import numpy as np

import ember.numpy as _enp

from .. import tree
from ..fx.core import get_aval
from . import _ops
from .shim import Optimizer
from .transforms import identity

__all__ = ["LBFGS"]


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """Minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), clipped to bounds."""
    if bounds is not None:
        lo, hi = bounds
    else:
        lo, hi = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square >= 0:
        d2 = d2_square ** 0.5
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, lo), hi)
    return (lo + hi) / 2.0


def _dot(a, b):
    return float(_ops.sum(a * b))


def _absmax(a):
    return float(_ops.abs(a).max())


def _strong_wolfe(obj, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """PyTorch's (and torch/optim's lswolfe.lua) bracketing + zoom line search."""
    d_norm = _absmax(d)
    f_new, g_new = obj(x, t, d)
    evals = 1
    gtd_new = _dot(g_new, d)
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bf, bg, bgtd = [t_prev, t], [f_prev, f_new], [g_prev, g_new], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bf, bg = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bf, bg, bgtd = [t_prev, t], [f_prev, f_new], [g_prev, g_new], [gtd_prev, gtd_new]
            break
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        tmp = t
        t = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                               bounds=(min_step, max_step))
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new, gtd_new
        f_new, g_new = obj(x, t, d)
        evals += 1
        gtd_new = _dot(g_new, d)
        ls_iter += 1
    if ls_iter == max_ls:
        bracket, bf, bg = [0, t], [f, f_new], [g, g_new]
        bgtd = [gtd, gtd_new]
    insuf_progress = False
    low, high = (0, 1) if bf[0] <= bf[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bf[0], bgtd[0], bracket[1], bf[1], bgtd[1])
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insuf_progress or t >= max(bracket) or t <= min(bracket):
                t = max(bracket) - eps if abs(t - max(bracket)) < abs(t - min(bracket)) \
                    else min(bracket) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new = obj(x, t, d)
        evals += 1
        gtd_new = _dot(g_new, d)
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bf[low]:
            bracket[high], bf[high], bg[high], bgtd[high] = t, f_new, g_new, gtd_new
            low, high = (0, 1) if bf[0] <= bf[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high] - bracket[low]) >= 0:
                bracket[high], bf[high], bg[high], bgtd[high] = \
                    bracket[low], bf[low], bg[low], bgtd[low]
            bracket[low], bf[low], bg[low], bgtd[low] = t, f_new, g_new, gtd_new
    return bf[low], bg[low], bracket[low], evals


_INT_KEYS = ("max_iter", "max_eval", "history_size")


class LBFGS(Optimizer):
    """L-BFGS, `torch.optim.LBFGS`'s arguments, defaults and algorithm (one parameter
    group). `step(closure)` returns the closure's first loss; see the module docstring for
    the two closure forms.

    Example:
        >>> import ember, ember.numpy as enp
        >>> from ember import optim
        >>> opt = optim.LBFGS([enp.asarray([2.0, 2.0])], lr=1.0, max_iter=50)
        >>> def closure():
        ...     return ember.value_and_grad(lambda p: (p[0] ** 4).sum())(opt.params)
        >>> _ = opt.step(closure)
        >>> bool(abs(opt.params[0]).max() < 0.05)
        True
    """

    def __init__(self, params, lr=1.0, max_iter=20, max_eval=None, tolerance_grad=1e-7,
                 tolerance_change=1e-9, history_size=100, line_search_fn=None):
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                                      tolerance_grad=tolerance_grad,
                                      tolerance_change=tolerance_change,
                                      history_size=history_size,
                                      line_search_fn=line_search_fn), jit=False)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self.state = {}
        self._takes_params = False

    def _build(self, group):
        return identity()  # the algorithm lives in step(); the slot only holds the params

    def _validate_value(self, key, value):
        if key == "line_search_fn":
            if value not in (None, "strong_wolfe"):
                raise ValueError(f"LBFGS: line_search_fn must be None or 'strong_wolfe', got "
                                 f"{value!r}")
            return
        if key in _INT_KEYS:
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"LBFGS: {key} must be a positive int, got {value!r}")
            return
        super()._validate_value(key, value)

    def add_param_group(self, param_group):
        """LBFGS has one parameter group, as in PyTorch; a second is an error.

        Example:
            >>> import ember.numpy as enp
            >>> opt = LBFGS([enp.asarray(1.0)])
            >>> len(opt.param_groups)
            1
        """
        if self.param_groups:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        super().add_param_group(param_group)

    # --- flat views ------------------------------------------------------------------

    def _flat(self, ptree):
        return _enp.concatenate([_ops.asarray(v).reshape(-1) for v in tree.leaves(ptree)])

    def _unflat(self, flat, like):
        leaves, td = tree.flatten(like)
        out, i = [], 0
        for v in leaves:
            a = get_aval(v)
            out.append(_ops.astype(flat[i:i + a.size].reshape(a.shape), a.dtype))
            i += a.size
        return tree.unflatten(td, out)

    def _evaluate(self, closure):
        params = self.params
        if self._takes_params:
            import ember
            loss, grads = ember.value_and_grad(closure)(params)
        else:
            out = closure()
            if not (isinstance(out, tuple) and len(out) == 2):
                raise TypeError("LBFGS.step: the closure returned only the loss, but ember has "
                                "no loss.backward(); return (loss, grads), e.g. `return "
                                "ember.value_and_grad(loss_fn)(opt.params)`, or let the "
                                "closure take the parameters, `def closure(params): return "
                                "loss_fn(params)`, and LBFGS differentiates it")
            loss, grads = out
        ps = tree.structure(params)
        try:
            gl = ps.flatten_up_to(grads)
        except (ValueError, TypeError):
            gl = None
        if gl is None or any(tuple(_ops.asarray(g).shape) != tuple(get_aval(p).shape)
                             for g, p in zip(gl, tree.leaves(params))):
            raise TypeError(f"LBFGS.step: the closure's grads must be shaped like opt.params "
                            f"({ps}), got {tree.structure(grads)}")
        return loss, self._flat(gl)

    def _set_flat(self, flat):
        self.params = self._unflat(flat, self.params)

    def step(self, closure):
        """Run up to `max_iter` L-BFGS iterations from the current parameters (written back
        into the module or `opt.params`) and return the closure's first loss.

        Example:
            >>> import ember.numpy as enp
            >>> opt = LBFGS({"w": enp.asarray(4.0)})
            >>> float(opt.step(lambda p: (p["w"] - 1.0) ** 2))
            9.0
        """
        if not callable(closure):
            raise TypeError("LBFGS.step(closure) needs a closure: `def closure(params): return "
                            "loss_fn(params)` (or one returning (loss, grads))")
        try:
            sig = inspect.signature(closure)
            self._takes_params = any(
                p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
                and p.default is p.empty for p in sig.parameters.values())
        except (TypeError, ValueError):
            self._takes_params = False
        group = self.param_groups[0]
        lr, max_iter, max_eval = float(group["lr"]), group["max_iter"], group["max_eval"]
        tol_grad, tol_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]
        state = self.state
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss, flat_grad = self._evaluate(closure)
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        if _absmax(flat_grad) <= tol_grad:
            return orig_loss

        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        H_diag = state.get("H_diag")
        prev_flat_grad, prev_loss = state.get("prev_flat_grad"), state.get("prev_loss")
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro = [], [], []
                H_diag = 1.0
            else:
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = _dot(y, s)
                if ys > 1e-10:
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    H_diag = ys / _dot(y, y)
                num_old = len(old_dirs)
                al = [None] * num_old
                q = -flat_grad
                for i in range(num_old - 1, -1, -1):
                    al[i] = _dot(old_stps[i], q) * ro[i]
                    q = q + old_dirs[i] * -al[i]
                d = r = q * H_diag
                for i in range(num_old):
                    be_i = _dot(old_dirs[i], r) * ro[i]
                    r = r + old_stps[i] * (al[i] - be_i)
                d = r
            prev_flat_grad = flat_grad
            prev_loss = loss
            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / float(_ops.abs(flat_grad).sum())) * lr
            else:
                t = lr
            gtd = _dot(flat_grad, d)
            if gtd > -tol_change:
                break
            ls_func_evals = 0
            if line_search_fn is not None:
                x_init = self._flat(self.params)

                def obj(x, step, direction):
                    self._set_flat(x + direction * step)
                    f, g = self._evaluate(closure)
                    self._set_flat(x)
                    return float(f), g

                loss, flat_grad, t, ls_func_evals = _strong_wolfe(
                    obj, x_init, t, d, loss, flat_grad, gtd, max_ls=max_eval - current_evals)
                self._set_flat(x_init + d * t)
                opt_cond = _absmax(flat_grad) <= tol_grad
            else:
                self._set_flat(self._flat(self.params) + d * t)
                opt_cond = False
                if n_iter != max_iter:
                    f, flat_grad = self._evaluate(closure)
                    loss = float(f)
                    opt_cond = _absmax(flat_grad) <= tol_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals
            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if _absmax(d * t) <= tol_change:
                break
            if abs(loss - prev_loss) < tol_change:
                break
        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=H_diag,
                     prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return orig_loss

    def state_dict(self):
        """PyTorch's layout: the whole algorithm state under the first parameter's index.

        Example:
            >>> import ember.numpy as enp
            >>> opt = LBFGS([enp.asarray(3.0)])
            >>> _ = opt.step(lambda p: p[0] ** 2)
            >>> sorted(opt.state_dict()["state"][0])[:3]
            ['H_diag', 'd', 'func_evals']
        """
        g = {k: v for k, v in self.param_groups[0].items() if k != "params"}
        g["params"] = list(range(len(tree.leaves(self.params))))
        return {"state": {0: dict(self.state)} if self.state else {}, "param_groups": [g]}

    def load_state_dict(self, state_dict):
        """Restore a state from `state_dict()` (ours, or PyTorch's: tensors become arrays).

        Example:
            >>> import ember.numpy as enp
            >>> opt = LBFGS([enp.asarray(3.0)])
            >>> opt.load_state_dict(opt.state_dict())
        """
        groups = state_dict["param_groups"]
        if len(groups) != 1:
            raise ValueError("LBFGS.load_state_dict: expected one parameter group")
        for k, v in groups[0].items():
            if k != "params" and k in self.defaults:
                self.param_groups[0][k] = v

        def conv(v):
            if isinstance(v, list):
                return [conv(e) for e in v]
            if hasattr(v, "detach"):  # a torch tensor
                v = v.detach().cpu().numpy()
            if isinstance(v, np.ndarray):
                return float(v) if v.ndim == 0 else _ops.asarray(v)
            return v

        st = state_dict["state"]
        entry = st.get(0, st.get("0", {})) if st else {}
        self.state = {k: conv(v) for k, v in entry.items() if k != "al"}
