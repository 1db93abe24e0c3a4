"""L-BFGS (Nocedal, 1980; Liu & Nocedal, 1989) with an optional strong-Wolfe line search
(Nocedal & Wright, algorithms 3.5 and 3.6), as ``torch.optim.LBFGS`` computes it.

The parameters are treated as one flat vector; each ``step(closure)`` runs up to ``max_iter``
iterations, each calling the closure (which recomputes the loss and its gradients) once, or a
few times inside the line search. The scalars of the method (directional derivatives, step
lengths) are read once from each dot product, rounded as PyTorch's 0-d tensors round them
(Note [L-BFGS scalars]).
"""

from __future__ import annotations

import numpy as np

from ..autograd.grad_mode import enable_grad, no_grad
from ..autograd.ops.shape import cat
from ..autograd.sparse import is_sparse
from ..autograd.ops.complex_parts import view_as_real
from ..autograd.ops.creation import tensor
from ..autograd.tensor import Tensor
from .optimizer import Optimizer, check_lr

__all__ = ["LBFGS"]


def _scalar_type(flat):
    """Note [L-BFGS scalars]: PyTorch's recursion keeps its scalars (``ys``, ``ro``, ``al``,
    ``H_diag``, the first step length) as 0-d tensors of the parameters' dtype, so in float32
    each is rounded to float32; this returns the NumPy scalar type that rounds the same way
    (float64 for float64 parameters)."""
    kind = flat.dtype.np if flat.dtype.itemsize >= 4 else np.float32  # (half: float32)
    return lambda t: np.dtype(kind).type(t.item())


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None) -> float:
    """The minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), within ``bounds``
    (default: between x1 and x2); the bounds' midpoint when the cubic has no minimum."""
    lo, hi = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square >= 0:
        d2 = np.sqrt(d2_square)  # (in the scalars' precision: float32 in float32)
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, lo), hi)
    return (lo + hi) / 2.0


def _strong_wolfe(obj_func, x, t: float, d, f: float, g, gtd, sc, c1: float = 1e-4,
                  c2: float = 0.9, tolerance_change: float = 1e-9, max_ls: int = 25):
    """A step length along ``d`` meeting the strong Wolfe conditions: bracketing, then
    zooming by cubic interpolation. Returns (loss, flat gradient, t, evaluations). The
    directional derivatives are ``sc`` scalars (Note [L-BFGS scalars]): in float32 the search
    computes in float32, as PyTorch's on its 0-d tensors."""
    d_norm = sc(d.abs().max())
    g = g.clone()
    f_new, g_new = obj_func(x, t, d)
    evals = 1
    gtd_new = sc(g_new.dot(d))
    t_prev, f_prev, g_prev, gtd_prev = 0.0, f, g, gtd
    done = False
    ls_iter = 0
    bracket_gtd = None
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.clone()], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.clone()], [gtd_prev, gtd_new]
            break
        # interpolate within [t + 0.01 (t - t_prev), 10 t]
        tmp = t
        t = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                               bounds=(t + 0.01 * (t - t_prev), t * 10))
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new.clone(), gtd_new
        f_new, g_new = obj_func(x, t, d)
        evals += 1
        gtd_new = sc(g_new.dot(d))
        ls_iter += 1
    if ls_iter == max_ls:
        bracket, bracket_f, bracket_g = [0.0, t], [f, f_new], [g, g_new]
    # zoom until the bracket holds a point meeting the conditions
    insuf_progress = False
    low, high = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1],
                               bracket_f[1], bracket_gtd[1])
        # keep t away from the bracket's ends (insufficient progress otherwise)
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
        f_new, g_new = obj_func(x, t, d)
        evals += 1
        gtd_new = sc(g_new.dot(d))
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low]:
            bracket[high], bracket_f[high] = t, f_new
            bracket_g[high], bracket_gtd[high] = g_new.clone(), gtd_new
            low, high = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high] - bracket[low]) >= 0:
                bracket[high], bracket_f[high] = bracket[low], bracket_f[low]
                bracket_g[high], bracket_gtd[high] = bracket_g[low], bracket_gtd[low]
            bracket[low], bracket_f[low] = t, f_new
            bracket_g[low], bracket_gtd[low] = g_new.clone(), gtd_new
    return bracket_f[low], bracket_g[low], bracket[low], evals


class LBFGS(Optimizer):
    """L-BFGS, as ``torch.optim.LBFGS``: one parameter group; ``step(closure)`` needs a
    closure that zeroes the gradients, computes the loss, calls ``backward`` and returns it.

    Args:
        params: the parameters (one group).
        lr: learning rate (default 1).
        max_iter: maximal number of iterations per optimization step (default 20).
        max_eval: maximal number of function evaluations per optimization step (default
            max_iter * 1.25).
        tolerance_grad: termination tolerance on first order optimality (default 1e-7).
        tolerance_change: termination tolerance on function value/parameter changes
            (default 1e-9).
        history_size: update history size (default 100).
        line_search_fn: None (a fixed step ``lr``) or ``"strong_wolfe"``.

    State (of the first parameter, as PyTorch's): ``func_evals``, ``n_iter``, ``al`` (the
    two-loop recursion's coefficients, once it has run), the direction ``d``, step ``t``,
    histories ``old_dirs``, ``old_stps``, ``ro``, ``H_diag``, ``prev_flat_grad``,
    ``prev_loss``.

    Example:
        >>> opt = tg.optim.LBFGS([w], lr=1, line_search_fn="strong_wolfe")
        >>> def closure():
        ...     opt.zero_grad()
        ...     loss = ((x @ w - y) ** 2).mean()
        ...     loss.backward()
        ...     return loss
        >>> opt.step(closure)
    """

    def __init__(self, params, lr: float = 1, max_iter: int = 20, max_eval: int | None = None,
                 tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9,
                 history_size: int = 100, line_search_fn: str | None = None):
        check_lr(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        super().__init__(params, {"lr": lr, "max_iter": max_iter, "max_eval": max_eval,
                                  "tolerance_grad": tolerance_grad,
                                  "tolerance_change": tolerance_change,
                                  "history_size": history_size,
                                  "line_search_fn": line_search_fn})
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def _state_shape(self, key: str, p) -> tuple | None:
        """The state is of all the parameters as one flat vector (kept on the first
        parameter): ``load_state_dict`` checks the flat vectors' length, not ``p``'s shape."""
        if key in ("d", "prev_flat_grad"):
            return (sum(q.numel() * (2 if q.is_complex() else 1) for q in self._params),)
        return None

    def _gather_flat_grad(self):
        # a sparse gradient (nn.Embedding(sparse=True)'s) in its dense form, and a complex one
        # as its real view (two real entries per element), as PyTorch's
        flat = []
        for p in self._params:
            g = p.grad
            g = p.new_zeros(tuple(p.shape)) if g is None else g.to_dense() if is_sparse(g) else g
            flat.append((view_as_real(g) if g.is_complex() else g).reshape(-1))
        return cat(flat, 0)

    def _add_grad(self, step_size: float, update) -> None:
        offset = 0
        for p in self._params:
            p = view_as_real(p) if p.is_complex() else p  # (shares p's memory)
            n = p.numel()
            p.add_(update[offset:offset + n].view_as(p), alpha=step_size)
            offset += n

    def _directional_evaluate(self, closure, x, t: float, d):
        self._add_grad(t, d)
        with enable_grad():
            loss = closure()
        loss = float(loss)  # (under the step's no_grad, as PyTorch's: no scalar warning)
        flat_grad = self._gather_flat_grad()
        for p, saved in zip(self._params, x):
            p.copy_(saved)
        return loss, flat_grad

    def step(self, closure):
        """Runs up to ``max_iter`` L-BFGS iterations; returns the closure's first loss."""
        with no_grad():
            return self._step(closure)

    def _step(self, closure):
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        history_size, line_search_fn = group["history_size"], group["line_search_fn"]
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        with enable_grad():
            orig_loss = closure()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if float(flat_grad.abs().max()) <= tolerance_grad:
            return orig_loss
        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        h_diag, prev_flat_grad = state.get("H_diag"), state.get("prev_flat_grad")
        sc = _scalar_type(flat_grad)
        if isinstance(h_diag, Tensor):  # (as saved: a 0-d tensor)
            h_diag = sc(h_diag)
        ro = None if ro is None else [sc(v) if isinstance(v, Tensor) else v for v in ro]
        if "al" in state:  # (as saved: 0-d tensors, None in the slots not used yet)
            state["al"] = [sc(v) if isinstance(v, Tensor) else v for v in state["al"]]
        if isinstance(t, Tensor):
            t = sc(t)
        prev_loss = state.get("prev_loss")
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d, old_dirs, old_stps, ro, h_diag = flat_grad.neg(), [], [], [], 1
            else:  # the two-loop recursion over the kept (y, s) pairs
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = sc(y.dot(s))
                if ys > 1e-10:
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    h_diag = ys / sc(y.dot(y))
                # the recursion's coefficients live in the state, as PyTorch's ``al`` (made
                # on the first iteration that runs the recursion, one slot per kept pair)
                al = state.setdefault("al", [None] * history_size)
                q = flat_grad.neg()
                for i in range(len(old_dirs) - 1, -1, -1):
                    al[i] = sc(old_stps[i].dot(q)) * ro[i]
                    q = q - old_dirs[i] * float(al[i])
                r = q * float(h_diag)
                for i in range(len(old_dirs)):
                    be_i = sc(old_dirs[i].dot(r)) * ro[i]
                    r = r + old_stps[i] * float(al[i] - be_i)
                d = r
            prev_flat_grad = flat_grad.clone()
            prev_loss = loss
            # the first step is scaled by the gradient's size; later ones are lr
            # (a float32 scalar in float32, as PyTorch's 0-d tensor: Note [L-BFGS scalars])
            t = min(1.0, 1.0 / sc(flat_grad.abs().sum())) * lr if state["n_iter"] == 1 else lr
            gtd = sc(flat_grad.dot(d))
            if gtd > -tolerance_change:  # not a descent direction
                break
            ls_func_evals = 0
            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":  # (PyTorch checks it here, not at init)
                    raise RuntimeError("only 'strong_wolfe' is supported")
                x_init = [p.clone() for p in self._params]

                def obj_func(x, t, d):
                    return self._directional_evaluate(closure, x, t, d)

                # (the search may spend what is left of max_eval, as PyTorch's)
                loss, flat_grad, t, ls_func_evals = _strong_wolfe(
                    obj_func, x_init, t, d, loss, flat_grad, gtd, sc,
                    max_ls=max_eval - current_evals)
                self._add_grad(t, d)
                opt_cond = float(flat_grad.abs().max()) <= tolerance_grad
            else:
                self._add_grad(t, d)
                opt_cond = False
                if n_iter != max_iter:  # re-evaluate, unless this was the last iteration
                    with enable_grad():
                        loss = float(closure())
                    flat_grad = self._gather_flat_grad()
                    opt_cond = float(flat_grad.abs().max()) <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals
            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if float((d * t).abs().max()) <= tolerance_change:
                break
            if abs(loss - prev_loss) < tolerance_change:
                break
        # the scalars saved as PyTorch saves them: 0-d tensors of the parameters' dtype where
        # its recursion made tensors (a Python number where it kept one: H_diag's first 1, a
        # step t of lr)
        dtype = flat_grad.dtype

        def saved(v):
            return tensor(v, dtype=dtype) if isinstance(v, np.generic) else v
        if "al" in state:
            state["al"] = [saved(v) for v in state["al"]]
        state.update({"d": d, "t": saved(t), "old_dirs": old_dirs, "old_stps": old_stps,
                      "ro": None if ro is None else [saved(v) for v in ro],
                      "H_diag": saved(h_diag),
                      "prev_flat_grad": prev_flat_grad,
                      "prev_loss": prev_loss})
        return orig_loss
