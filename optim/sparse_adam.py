"""SparseAdam: Adam's moments and update on the rows a sparse gradient touches."""

from __future__ import annotations

import math

from ..autograd.sparse import is_sparse
from .optimizer import Optimizer, check_lr, zeros_like

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    r"""Adam for sparse gradients (``nn.Embedding(sparse=True)``), as
    ``torch.optim.SparseAdam``: only the moments and parameter entries at the gradient's
    (coalesced) indices change; the rest of the state is left as it is (a "lazy" Adam).

    For the entries i that a step's gradient g specifies (m, v start at 0; t counts the
    parameter's steps)::

        g = -g                                    if maximize
        m[i] = beta1 * m[i] + (1 - beta1) * g[i]
        v[i] = beta2 * v[i] + (1 - beta2) * g[i]^2
        p[i] = p[i] - lr * sqrt(1 - beta2^t) / (1 - beta1^t) * m[i] / (sqrt(v[i]) + eps)

    Args:
        params: parameters or parameter groups (dense tensors; their gradients must be
            sparse).
        lr: learning rate (default 1e-3).
        betas: coefficients of the running averages of the gradient and its square
            (default (0.9, 0.999)).
        eps: term added to the denominator (default 1e-8).
        maximize: maximize the objective instead of minimizing.

    State per parameter: ``step`` (an int), ``exp_avg`` and ``exp_avg_sq`` (dense, the
    parameter's shape).

    Example:
        >>> emb = tg.nn.Embedding(10, 3, sparse=True)
        >>> opt = tg.optim.SparseAdam(emb.parameters(), lr=0.1)
        >>> emb(tg.tensor([1, 4])).sum().backward()
        >>> opt.step(); opt.zero_grad()
    """

    def __init__(self, params, lr: float = 1e-3, betas: tuple = (0.9, 0.999),
                 eps: float = 1e-8, maximize: bool = False):
        check_lr(lr)
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        for i, b in enumerate(betas):
            if not 0.0 <= b < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {b}")
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps,
                                  "maximize": maximize})
        # PyTorch's checks, each naming every offending [group, position]
        at = [[i, j] for i, group in enumerate(self.param_groups)
              for j, p in enumerate(group["params"])]
        flat = [p for group in self.param_groups for p in group["params"]]
        sparse = [ij for ij, p in zip(at, flat) if is_sparse(p)]
        if sparse:
            raise ValueError(f"Sparse params at indices {sparse}: SparseAdam requires dense "
                             f"parameter tensors")
        complex_ = [ij for ij, p in zip(at, flat) if p.is_complex()]
        if complex_:
            raise ValueError(f"Complex params at indices {complex_}: SparseAdam does not "
                             f"support complex parameters")

    def _update(self, p, group) -> None:
        grad = p.grad
        if not is_sparse(grad):
            raise RuntimeError("SparseAdam does not support dense gradients, please consider "
                               "Adam instead")
        state = self.state[p]
        if not state:
            state["step"] = 0
            state["exp_avg"] = zeros_like(p)
            state["exp_avg_sq"] = zeros_like(p)
        state["step"] += 1
        t = state["step"]
        (beta1, beta2), eps, lr = group["betas"], group["eps"], group["lr"]
        g = grad.coalesce()  # (unique rows: each is read once and written once)
        rows, vals = tuple(g._indices().unbind(0)), g._values()
        if group["maximize"]:
            vals = -vals
        m = state["exp_avg"][rows] * beta1 + vals * (1 - beta1)
        v = state["exp_avg_sq"][rows] * beta2 + vals * vals * (1 - beta2)
        state["exp_avg"].index_put_(rows, m)
        state["exp_avg_sq"].index_put_(rows, v)
        step_size = lr * math.sqrt(1 - beta2 ** t) / (1 - beta1 ** t)
        p.index_put_(rows, m / (v.sqrt() + eps) * -step_size, accumulate=True)
