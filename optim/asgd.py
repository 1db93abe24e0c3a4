"""ASGD, averaged stochastic gradient descent (Polyak & Juditsky, 1992)."""

from __future__ import annotations

from ..autograd.ops.creation import tensor
from ..runtime import dtype as dtypes
from .optimizer import Optimizer, advance_step, check_hyperparameters, new_step

__all__ = ["ASGD"]


def _scalar(v: float):
    """A float32 CPU scalar of the state, as ``new_step``'s counter (PyTorch keeps ``eta`` and
    ``mu`` as float32 scalars too: each update reads them rounded to float32)."""
    return tensor(float(v), dtype=dtypes.float32)


class ASGD(Optimizer):
    r"""Averaged SGD, as ``torch.optim.ASGD``. For each parameter p with gradient g, at step
    t = 1, 2, ... (eta starts at ``lr``, mu at 1, the average ax at 0)::

        g = -g                                    if maximize
        g = g + weight_decay * p                  if weight_decay != 0
        p = p * (1 - lambd * eta)
        p = p - eta * g
        ax = ax + (p - ax) * mu   if mu != 1, else ax = p
        eta = lr / (1 + lambd * lr * t) ** alpha
        mu = 1 / max(1, t - t0)

    ``ax`` is the running average of the iterates once t passes ``t0`` (before, it follows
    the parameter); swap it in for evaluation.

    Args:
        params: parameters or parameter groups.
        lr: learning rate (default 1e-2).
        lambd: decay term (default 1e-4).
        alpha: power for the eta update (default 0.75).
        t0: point at which to start averaging (default 1e6).
        weight_decay: weight decay (L2 penalty) (default 0).
        foreach: accepted for compatibility (updates are per parameter; the result is the
            same).
        maximize: maximize the objective with respect to the params, instead of minimizing.
        differentiable, capturable: only False is supported.

    State per parameter: ``step``, ``eta``, ``mu`` (float32 CPU scalars) and ``ax``. As
    PyTorch's, a loaded state dict casts ``eta`` and ``mu`` to the parameter's dtype and device
    (then read unrounded).

    Example:
        >>> model = tg.nn.Linear(3, 1)
        >>> opt = tg.optim.ASGD(model.parameters(), lr=0.1, t0=10)
        >>> model(tg.randn(4, 3)).pow(2).mean().backward()
        >>> opt.step(); opt.zero_grad()
    """

    _unshaped_state = frozenset({"step", "eta", "mu"})

    # PyTorch's message for a sparse gradient (Note [Sparse gradients in dense optimizers])
    _sparse_grad_error = "ASGD does not support sparse gradients"

    def __init__(self, params, lr: float = 1e-2, lambd: float = 1e-4, alpha: float = 0.75,
                 t0: float = 1e6, weight_decay: float = 0, foreach=None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False):
        check_hyperparameters("ASGD", lr=lr, weight_decay=weight_decay)
        if differentiable or capturable:
            raise NotImplementedError("ASGD: differentiable and capturable are not supported "
                                      "(only False)")
        super().__init__(params, {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0,
                                  "weight_decay": weight_decay, "foreach": foreach,
                                  "maximize": maximize, "differentiable": False,
                                  "capturable": False})

    def _update(self, p, group) -> None:
        state = self.state[p]
        if not state:
            state["step"] = new_step()
            state["eta"] = _scalar(group["lr"])
            state["mu"] = _scalar(1.0)
            state["ax"] = p.detach().new_zeros(tuple(p.shape))
        step = advance_step(state["step"])
        g = -p.grad if group["maximize"] else p.grad
        if group["weight_decay"] != 0:
            g = g.add(p, alpha=group["weight_decay"])
        eta, mu = float(state["eta"].item()), float(state["mu"].item())
        p.mul_(1 - group["lambd"] * eta)
        p.sub_(g.mul(eta))
        ax = state["ax"]
        if mu != 1:
            ax.add_(p.sub(ax).mul(mu))
        else:
            ax.copy_(p)
        lr, lambd = group["lr"], group["lambd"]
        state["eta"].fill_(lr / ((1 + lambd * lr * step) ** group["alpha"]))
        state["mu"].fill_(1 / max(1.0, step - group["t0"]))
