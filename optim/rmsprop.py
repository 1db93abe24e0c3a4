"""RMSprop (Hinton's lecture notes; centered version of Graves, 2013)."""

from __future__ import annotations

from .optimizer import (Optimizer, advance_device_step, advance_step, check_hyperparameters,
                        new_step, zeros_like)

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    r"""RMSprop, as ``torch.optim.RMSprop``.

    For each parameter p with gradient g, at step t (v, g_avg and b start at 0)::

        g = -g                                  if maximize
        g = g + weight_decay * p                if weight_decay != 0
        v = alpha * v + (1 - alpha) * g * g
        g_avg = g_avg + (1 - alpha) * (g - g_avg)          if centered
        denom = sqrt(v - g_avg * g_avg) + eps   if centered   else   sqrt(v) + eps
        b = momentum * b + g / denom;  p = p - lr * b      if momentum > 0
        p = p - lr * g / denom                  otherwise

    The effective learning rate is ``lr / denom``; the centered version normalises the
    gradient by an estimate of its variance.

    Args:
        params: parameters or parameter groups.
        lr: learning rate (default 1e-2).
        alpha: smoothing constant (default 0.99).
        eps: term added to the denominator to improve numerical stability (default 1e-8).
        weight_decay: weight decay (L2 penalty) (default 0).
        momentum: momentum factor (default 0).
        centered: if True, compute the centered RMSProp, the gradient is normalized by an
            estimation of its variance.
        differentiable: record the update in the autograd graph, so that gradients flow
            through ``step()`` (as SGD's); capturable: keep the step count on the parameters'
            device, so that ``step()`` can be captured in a CUDA graph (Note [capturable
            step counts]).
        foreach: accepted for compatibility (updates are per parameter; the result is the
            same).
        maximize: maximize the objective with respect to the params, instead of minimizing.

    State per parameter: ``step`` (a float32 CPU scalar), ``square_avg``, and
    ``momentum_buffer`` (momentum > 0) and ``grad_avg`` (centered), as PyTorch's.

    Example:
        >>> model = tg.nn.Linear(3, 1)
        >>> opt = tg.optim.RMSprop(model.parameters(), lr=1e-2, momentum=0.9, centered=True)
        >>> model(tg.randn(4, 3)).pow(2).mean().backward()
        >>> opt.step(); opt.zero_grad()
    """

    _complex_as_real = True  # (Note [Complex parameters])

    # PyTorch's message for a sparse gradient (Note [Sparse gradients in dense optimizers])
    _sparse_grad_error = "RMSprop does not support sparse gradients"

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False,
                 capturable: bool = False, foreach=None, maximize: bool = False,
                 differentiable: bool = False):
        check_hyperparameters("RMSprop", lr=lr, eps=eps, momentum=momentum,
                              weight_decay=weight_decay, alpha=alpha)
        # (the keys in PyTorch's order, which state_dict() shows)
        super().__init__(params, {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps,
                                  "centered": centered, "weight_decay": weight_decay,
                                  "capturable": bool(capturable), "foreach": foreach,
                                  "maximize": maximize,
                                  "differentiable": bool(differentiable)})

    def _update(self, p, group) -> None:
        lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
        wd, momentum, centered = group["weight_decay"], group["momentum"], group["centered"]
        state = self.state[p]
        if not state:
            # (Note [capturable step counts])
            state["step"] = new_step(p.device if group["capturable"] else None)
            state["square_avg"] = zeros_like(p)
            if momentum > 0:
                state["momentum_buffer"] = zeros_like(p)
            if centered:
                state["grad_avg"] = zeros_like(p)
        if group["capturable"]:
            advance_device_step("RMSprop", p, state)
        else:
            advance_step(state["step"])
        g = -p.grad if group["maximize"] else p.grad
        if wd != 0:
            g = g.add(p, alpha=wd)
        v = state["square_avg"]
        v.mul_(alpha).add_(g.mul(1 - alpha).mul(g))          # addcmul_(g, g, value=1 - alpha)
        if centered:
            g_avg = state["grad_avg"]
            g_avg.add_(g - g_avg, alpha=1 - alpha)           # lerp_(g, 1 - alpha)
            denom = v.sub(g_avg.mul(g_avg)).sqrt().add(eps)  # addcmul(g_avg, g_avg, value=-1)
        else:
            denom = v.sqrt().add(eps)
        if momentum > 0:
            buf = state["momentum_buffer"]
            buf.mul_(momentum).add_(g.div(denom))            # addcdiv_(g, denom)
            p.add_(buf, alpha=-lr)
        else:
            p.sub_(g.div(denom).mul(lr))                     # addcdiv_(g, denom, value=-lr)
