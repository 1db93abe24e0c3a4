"""Adam's relatives: Adamax (Kingma & Ba, 2014, section 7), NAdam (Dozat, 2016) and RAdam
(Liu et al., 2019), each as its ``torch.optim`` class computes it (the single-tensor path)."""

from __future__ import annotations

from ..autograd.ops.elementwise import maximum
from .optimizer import (Optimizer, advance_step, check_hyperparameters, new_step,
                        zeros_like)

__all__ = ["Adamax", "NAdam", "RAdam"]


def _check_betas(owner: str, betas) -> tuple:
    for i, b in enumerate(betas):
        if not 0.0 <= b < 1.0:
            raise ValueError(f"{owner}: Invalid beta parameter at index {i}: {b}")
    return tuple(betas)


def _unsupported(owner: str, **flags) -> None:
    on = [name for name, v in flags.items() if v]
    if on:
        verb = "is" if len(on) == 1 else "are"
        raise NotImplementedError(f"{owner}: {' and '.join(on)} {verb} not supported (only False)")


def _moments(owner: str, opt: Optimizer, p, group, *extra: str, ones: tuple = ()):
    """The state of ``p`` (step, exp_avg, exp_avg_sq or what ``extra`` names, created on the
    first step), the advanced step count and the gradient with maximize applied. ``ones``
    names float32 CPU scalars starting at 1 (NAdam's ``mu_product``), made right after
    ``step``: state_dict() shows the entries in PyTorch's order."""
    state = opt.state[p]
    if not state:
        state["step"] = new_step()
        for name in ones:
            state[name] = new_step().add_(1.0)
        for name in extra:
            state[name] = zeros_like(p)
    step = advance_step(state["step"])
    return state, step, (-p.grad if group["maximize"] else p.grad)


def _decay(p, g, group, decoupled: bool):
    """Weight decay: the parameter shrunk (decoupled) or the L2 term added to the gradient."""
    wd = group["weight_decay"]
    if wd == 0:
        return g
    if decoupled:
        p.mul_(1 - group["lr"] * wd)
        return g
    return g.add(p, alpha=wd)


class Adamax(Optimizer):
    r"""Adamax, Adam with the infinity norm, as ``torch.optim.Adamax``.

    For each parameter p with gradient g, at step t = 1, 2, ... (m and u start at 0)::

        g = -g                                  if maximize
        g = g + weight_decay * p                if weight_decay != 0
        m = beta1 m + (1 - beta1) g
        u = max(beta2 u, |g| + eps)
        p = p - lr / (1 - beta1^t) * m / u

    Args:
        params: parameters or parameter groups.
        lr: learning rate (default 2e-3).
        betas: (beta1, beta2) (default (0.9, 0.999)).
        eps: added to |g| (default 1e-8).
        weight_decay: L2 penalty (default 0).
        foreach: accepted for compatibility; maximize: maximize instead of minimize;
        differentiable: record the update in the autograd graph (as
        SGD's); capturable: only False is supported.

    State per parameter: ``step``, ``exp_avg``, ``exp_inf``.
    """

    _complex_as_real = True  # (Note [Complex parameters])

    # PyTorch's message for a sparse gradient (Note [Sparse gradients in dense optimizers])
    _sparse_grad_error = "Adamax does not support sparse gradients"

    def __init__(self, params, lr: float = 2e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach=None, *, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False):
        check_hyperparameters("Adamax", lr=lr, eps=eps, weight_decay=weight_decay)
        betas = _check_betas("Adamax", betas)
        _unsupported("Adamax", capturable=capturable)
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps,
                                  "weight_decay": weight_decay, "foreach": foreach,
                                  "maximize": maximize, "differentiable": bool(differentiable),
                                  "capturable": False})

    def _update(self, p, group) -> None:
        state, step, g = _moments("Adamax", self, p, group, "exp_avg", "exp_inf")
        g = _decay(p, g, group, False)
        (beta1, beta2), m, u = group["betas"], state["exp_avg"], state["exp_inf"]
        m.add_(g - m, alpha=1 - beta1)                        # lerp_(g, 1 - beta1)
        u.copy_(maximum(u.mul(beta2), g.abs().add(group["eps"])))
        p.sub_(m.div(u).mul(group["lr"] / (1 - beta1 ** step)))


class NAdam(Optimizer):
    r"""NAdam, Adam with Nesterov momentum, as ``torch.optim.NAdam``.

    For each parameter p with gradient g, at step t = 1, 2, ... (m, v start at 0; the
    momentum product P at 1, kept in float32 as PyTorch keeps it)::

        g = -g                                  if maximize
        p = p (1 - lr weight_decay)             if decoupled_weight_decay
        g = g + weight_decay * p                elif weight_decay != 0
        mu_t = beta1 (1 - 0.96^(t psi) / 2),  mu_{t+1} likewise,  psi = momentum_decay
        P = P mu_t
        m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2
        denom = sqrt(v / (1 - beta2^t)) + eps
        p = p - lr (1 - mu_t) / (1 - P) g / denom - lr mu_{t+1} / (1 - P mu_{t+1}) m / denom

    Args:
        params: parameters or parameter groups.
        lr: learning rate (default 2e-3).
        betas: (beta1, beta2) (default (0.9, 0.999)).
        eps: added to the denominator (default 1e-8).
        weight_decay: weight decay (default 0).
        momentum_decay: psi (default 4e-3).
        decoupled_weight_decay: NAdamW's decay instead of the L2 term.
        foreach: accepted for compatibility; maximize: maximize instead of minimize;
        differentiable, capturable: only False is supported.

    State per parameter: ``step``, ``mu_product``, ``exp_avg``, ``exp_avg_sq``.
    """

    _unshaped_state = frozenset({"step", "mu_product"})  # (scalars; mu_product loads, as
    #                                                      PyTorch's, in the parameter's dtype)

    _complex_as_real = True  # (Note [Complex parameters])

    # PyTorch's message for a sparse gradient (Note [Sparse gradients in dense optimizers])
    _sparse_grad_error = "NAdam does not support sparse gradients"

    def __init__(self, params, lr: float = 2e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach=None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False):
        check_hyperparameters("NAdam", lr=lr, eps=eps, weight_decay=weight_decay,
                              momentum_decay=momentum_decay)
        betas = _check_betas("NAdam", betas)
        _unsupported("NAdam", differentiable=differentiable, capturable=capturable)
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps,
                                  "weight_decay": weight_decay,
                                  "momentum_decay": momentum_decay,
                                  "decoupled_weight_decay": decoupled_weight_decay,
                                  "maximize": maximize, "foreach": foreach,
                                  "capturable": False, "differentiable": False})

    def _update(self, p, group) -> None:
        state, step, g = _moments("NAdam", self, p, group, "exp_avg", "exp_avg_sq",
                                  ones=("mu_product",))
        g = _decay(p, g, group, group["decoupled_weight_decay"])
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        psi = group["momentum_decay"]
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * psi))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * psi))
        prod = state["mu_product"]
        prod.mul_(mu)
        product = prod.item()
        m, v = state["exp_avg"], state["exp_avg_sq"]
        m.add_(g - m, alpha=1 - beta1)
        v.mul_(beta2).add_(g.mul(1 - beta2).mul(g))
        denom = v.div(1 - beta2 ** step).sqrt().add(eps)
        p.sub_(g.div(denom).mul(lr * (1.0 - mu) / (1.0 - product)))
        p.sub_(m.div(denom).mul(lr * mu_next / (1.0 - product * mu_next)))


class RAdam(Optimizer):
    r"""RAdam, Adam with the variance of its adaptive rate rectified, as ``torch.optim.RAdam``.

    For each parameter p with gradient g, at step t = 1, 2, ... (m, v start at 0)::

        g = -g                                  if maximize
        p = p (1 - lr weight_decay)             if decoupled_weight_decay
        g = g + weight_decay * p                elif weight_decay != 0
        m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2
        rho_inf = 2 / (1 - beta2) - 1;  rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t)
        if rho_t > 5:
            r = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))
            p = p - lr m / (1 - beta1^t) * r sqrt(1 - beta2^t) / (sqrt(v) + eps)
        else:
            p = p - lr m / (1 - beta1^t)

    Args:
        params: parameters or parameter groups.
        lr: learning rate (default 1e-3).
        betas: (beta1, beta2) (default (0.9, 0.999)).
        eps: added to the denominator (default 1e-8).
        weight_decay: weight decay (default 0).
        decoupled_weight_decay: RAdamW's decay instead of the L2 term.
        foreach: accepted for compatibility; maximize: maximize instead of minimize;
        differentiable: record the update in the autograd graph (as
        SGD's); capturable: only False is supported.

    State per parameter: ``step``, ``exp_avg``, ``exp_avg_sq``.
    """

    _complex_as_real = True  # (Note [Complex parameters])

    # PyTorch's message for a sparse gradient (Note [Sparse gradients in dense optimizers])
    _sparse_grad_error = "RAdam does not support sparse gradients"

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach=None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False):
        check_hyperparameters("RAdam", lr=lr, eps=eps, weight_decay=weight_decay)
        betas = _check_betas("RAdam", betas)
        _unsupported("RAdam", capturable=capturable)
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps,
                                  "weight_decay": weight_decay, "maximize": maximize,
                                  "foreach": foreach, "capturable": False,
                                  "decoupled_weight_decay": decoupled_weight_decay,
                                  "differentiable": bool(differentiable)})

    def _update(self, p, group) -> None:
        state, step, g = _moments("RAdam", self, p, group, "exp_avg", "exp_avg_sq")
        g = _decay(p, g, group, group["decoupled_weight_decay"])
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        m, v = state["exp_avg"], state["exp_avg_sq"]
        m.add_(g - m, alpha=1 - beta1)
        v.mul_(beta2).add_(g.mul(1 - beta2).mul(g))
        bias_correction1, bias_correction2 = 1 - beta1 ** step, 1 - beta2 ** step
        corrected = m.div(bias_correction1)
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
        if rho_t > 5.0:
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                    / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            adaptive = v.sqrt().add(eps).reciprocal().mul(bias_correction2 ** 0.5)
            p.sub_(corrected.mul(lr).mul(adaptive).mul(rect))
        else:
            p.sub_(corrected.mul(lr))
