"""Adafactor (Shazeer & Stern, 2018): Adam-like steps from a factored second moment."""

from __future__ import annotations

import math

from ..autograd.tensor import Tensor
from ..runtime.dtype import finfo
from .optimizer import Optimizer, advance_step, check_lr, new_step

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    r"""Adafactor, as ``torch.optim.Adafactor``. For each parameter p with gradient g, at step
    t = 1, 2, ...::

        g = -g                                              if maximize
        beta2 = 1 - t ** beta2_decay
        rho = min(lr, 1 / sqrt(t))
        a = max(eps2, RMS(p)) * rho                         (RMS(p) before this step)
        p = p * (1 - lr * weight_decay)
        matrices (dim > 1), over the last two dims:
            R = beta2 R + (1 - beta2) mean(g^2, dim=-1)     (row means, (.., m, 1))
            C = beta2 C + (1 - beta2) mean(g^2, dim=-2)     (column means, (.., 1, n))
            V = R C / max(mean(R, dim=-2), eps1)
        vectors and scalars:
            V = beta2 V + (1 - beta2) g^2
        U = g / max(sqrt(V), eps1)
        p = p - a * U / max(1, RMS(U) / d)

    The factored moment keeps m + n numbers per (m, n) matrix instead of m n.

    Args:
        params: parameters or parameter groups.
        lr: learning rate, the largest relative step (default 1e-2).
        beta2_decay: the decay rate of beta2, <= 0 (default -0.8).
        eps: (eps1, eps2): eps1 bounds the denominator below (None: the parameter dtype's
            machine epsilon), eps2 the relative step's scale (default (None, 1e-3)).
        d: clipping threshold of the update's RMS, >= 1 (default 1.0).
        weight_decay: decoupled weight decay coefficient (default 0).
        foreach: accepted for compatibility (updates are per parameter; the result is the
            same).
        maximize: maximize the objective with respect to the params, instead of minimizing.

    State per parameter: ``step``, and ``row_var`` and ``col_var`` (matrices) or
    ``variance`` (vectors and scalars).

    Example:
        >>> model = tg.nn.Linear(3, 2)
        >>> opt = tg.optim.Adafactor(model.parameters())
        >>> model(tg.randn(4, 3)).pow(2).mean().backward()
        >>> opt.step(); opt.zero_grad()
    """

    def _state_shape(self, key: str, p: Tensor) -> tuple | None:
        # the factored second moments: a mean over the last dim, and one over the one before
        shape = tuple(p.shape)
        if key == "row_var":
            return shape[:-1] + (1,)
        if key == "col_var":
            return shape[:-2] + (1, shape[-1])
        return super()._state_shape(key, p)

    # PyTorch's message for a sparse gradient (Note [Sparse gradients in dense optimizers])
    _sparse_grad_error = "Adafactor does not support sparse gradients"

    def __init__(self, params, lr: float = 1e-2, beta2_decay: float = -0.8,
                 eps=(None, 1e-3), d: float = 1.0, weight_decay: float = 0.0, *, foreach=None,
                 maximize: bool = False):
        check_lr(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        super().__init__(params, {"lr": lr, "beta2_decay": beta2_decay, "eps": tuple(eps),
                                  "d": d, "weight_decay": weight_decay, "foreach": foreach,
                                  "maximize": maximize})

    def _update(self, p, group) -> None:
        if p.is_complex():
            raise RuntimeError("Adafactor does not support complex parameters")
        g = -p.grad if group["maximize"] else p.grad
        state = self.state[p]
        if not state:
            state["step"] = new_step()
            if g.ndim > 1:
                state["row_var"] = g.new_zeros(tuple(g.shape[:-1]) + (1,))
                state["col_var"] = g.new_zeros(tuple(g.shape[:-2]) + (1, g.shape[-1]))
            else:
                state["variance"] = g.new_zeros(tuple(g.shape))
        t = advance_step(state["step"])
        lr, (eps1, eps2) = group["lr"], group["eps"]
        if eps1 is None:
            eps1 = finfo(p.dtype).eps
        one_minus_beta2 = t ** group["beta2_decay"]
        rho = min(lr, 1 / math.sqrt(t))
        alpha = max(eps2, float(p.norm(2).item()) / math.sqrt(max(p.numel(), 1))) * rho
        if group["weight_decay"] != 0:
            p.mul_(1 - lr * group["weight_decay"])
        g2 = g * g
        if g.ndim > 1:
            row, col = state["row_var"], state["col_var"]
            row.lerp_(g2.mean(-1, keepdim=True), one_minus_beta2)
            col.lerp_(g2.mean(-2, keepdim=True), one_minus_beta2)
            var = row.matmul(col).div(row.mean(-2, keepdim=True).clamp(min=eps1))
        else:
            state["variance"].lerp_(g2, one_minus_beta2)
            var = state["variance"]
        update = var.clamp(min=eps1 * eps1).rsqrt().mul(g)
        denom = max(1.0, float(update.norm(2).item()) /
                    (math.sqrt(max(update.numel(), 1)) * group["d"]))
        p.sub_(update.mul(alpha / denom))
