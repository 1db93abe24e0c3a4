"""Adadelta (Zeiler, 2012)."""

from __future__ import annotations

from .optimizer import (Optimizer, advance_device_step, advance_step, check_hyperparameters,
                        new_step, zeros_like)

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    r"""Adadelta, as ``torch.optim.Adadelta``.

    For each parameter p with gradient g (v and u start at 0)::

        g = -g                                  if maximize
        g = g + weight_decay * p                if weight_decay != 0
        v = rho v + (1 - rho) g^2
        delta = sqrt(u + eps) / sqrt(v + eps) * g
        u = rho u + (1 - rho) delta^2
        p = p - lr delta

    Args:
        params: parameters or parameter groups.
        lr: coefficient that scales delta before it is applied (default 1.0).
        rho: coefficient of the running averages (default 0.9).
        eps: added to both under the roots (default 1e-6).
        weight_decay: L2 penalty (default 0).
        foreach: accepted for compatibility; maximize: maximize instead of minimize;
        differentiable: record the update in the autograd graph, so that gradients flow
            through ``step()`` (as SGD's); capturable: keep the step count on the parameters'
            device, so that ``step()`` can be captured in a CUDA graph (Note [capturable
            step counts]).

    State per parameter: ``step``, ``square_avg``, ``acc_delta``.
    """

    _complex_as_real = True  # (Note [Complex parameters])

    # PyTorch's message for a sparse gradient (Note [Sparse gradients in dense optimizers])
    _sparse_grad_error = "Adadelta does not support sparse gradients"

    def __init__(self, params, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0, foreach=None, *, capturable: bool = False,
                 maximize: bool = False, differentiable: bool = False):
        check_hyperparameters("Adadelta", lr=lr, eps=eps, weight_decay=weight_decay)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Adadelta: Invalid rho value: {rho}")
        # (the keys in PyTorch's order, which state_dict() shows)
        super().__init__(params, {"lr": lr, "rho": rho, "eps": eps,
                                  "weight_decay": weight_decay, "maximize": maximize,
                                  "capturable": bool(capturable), "foreach": foreach,
                                  "differentiable": bool(differentiable)})

    def _update(self, p, group) -> None:
        state = self.state[p]
        if not state:
            # (Note [capturable step counts])
            state["step"] = new_step(p.device if group["capturable"] else None)
            state["square_avg"] = zeros_like(p)
            state["acc_delta"] = zeros_like(p)
        if group["capturable"]:
            advance_device_step("Adadelta", p, state)
        else:
            advance_step(state["step"])
        lr, rho, eps = group["lr"], group["rho"], group["eps"]
        g = -p.grad if group["maximize"] else p.grad
        if group["weight_decay"] != 0:
            g = g.add(p, alpha=group["weight_decay"])
        v, u = state["square_avg"], state["acc_delta"]
        v.mul_(rho).add_(g.mul(1 - rho).mul(g))             # addcmul_(g, g, value=1 - rho)
        delta = u.add(eps).sqrt().div(v.add(eps).sqrt()).mul(g)
        u.mul_(rho).add_(delta.mul(1 - rho).mul(delta))
        p.add_(delta, alpha=-lr)
