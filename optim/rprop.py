"""Rprop, resilient backpropagation (Riedmiller & Braun, 1993)."""

from __future__ import annotations

from ..autograd.ops.creation import full_like
from .optimizer import (Optimizer, advance_device_step, advance_step, check_lr, new_step,
                        zeros_like)

__all__ = ["Rprop"]


class Rprop(Optimizer):
    r"""Rprop, as ``torch.optim.Rprop``: each element keeps its own step size, grown by
    ``etaplus`` while its gradient keeps its sign and shrunk by ``etaminus`` when it flips
    (the update is then skipped and that gradient forgotten)::

        s = g * g_prev
        eta = etaplus where s > 0, etaminus where s < 0, 1 where s = 0
        step = clamp(step * eta, min_step, max_step)
        g = 0 where s < 0
        p = p - sign(g) * step;  g_prev = g

    Args:
        params: parameters or parameter groups.
        lr: the initial step size (default 1e-2).
        etas: (etaminus, etaplus), the shrink and growth factors (default (0.5, 1.2)).
        step_sizes: (min, max) step sizes (default (1e-6, 50)).
        maximize: maximize the objective instead of minimizing.
        differentiable: record the update in the autograd graph, so that gradients flow
            through ``step()`` (as SGD's; the signs pass none).
        foreach: accepted for compatibility; capturable: keep the step count on the
            parameters' device, so that ``step()`` can be captured in a CUDA graph (Note
            [capturable step counts]).

    State per parameter: ``step``, ``prev`` (the last gradient used), ``step_size``.
    """

    _complex_as_real = True  # (Note [Complex parameters])

    # PyTorch's message for a sparse gradient (Note [Sparse gradients in dense optimizers])
    _sparse_grad_error = "Rprop does not support sparse gradients"

    def __init__(self, params, lr: float = 1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable: bool = False, foreach=None, maximize: bool = False,
                 differentiable: bool = False):
        check_lr(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        super().__init__(params, {"lr": lr, "etas": tuple(etas), "step_sizes": tuple(step_sizes),
                                  "foreach": foreach, "maximize": maximize,
                                  "differentiable": bool(differentiable),
                                  "capturable": bool(capturable)})

    def _update(self, p, group) -> None:
        state = self.state[p]
        if not state:
            # (Note [capturable step counts])
            state["step"] = new_step(p.device if group["capturable"] else None)
            state["prev"] = zeros_like(p)
            state["step_size"] = full_like(p, group["lr"])
        if group["capturable"]:
            advance_device_step("Rprop", p, state)
        else:
            advance_step(state["step"])
        (etaminus, etaplus), (lo, hi) = group["etas"], group["step_sizes"]
        g = -p.grad if group["maximize"] else p.grad
        prev, step_size = state["prev"], state["step_size"]
        s = g * prev
        eta = (s > 0).to(p.dtype) * (etaplus - 1) + (s < 0).to(p.dtype) * (etaminus - 1) + 1
        step_size.copy_((step_size * eta).clamp(lo, hi))
        g = g.where(s >= 0, 0.0)
        p.sub_(g.sign() * step_size)
        prev.copy_(g)
