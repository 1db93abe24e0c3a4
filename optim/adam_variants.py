"""Adam's relatives: Adamax (Kingma & Ba, 2014, section 7), NAdam (Dozat, 2016) and RAdam
(Liu et al., 2019), each as its ``torch.optim`` class computes it (the single-tensor path)."""

from __future__ import annotations

import numpy as np

from ..autograd.ops.elementwise import maximum, where
from .optimizer import (Optimizer, advance_device_step, advance_step, check_hyperparameters,
                        new_step, zeros_like)

__all__ = ["Adamax", "NAdam", "RAdam"]


def _check_betas(owner: str, betas) -> tuple:
    for i, b in enumerate(betas):
        if not 0.0 <= b < 1.0:
            raise ValueError(f"{owner}: Invalid beta parameter at index {i}: {b}")
    return tuple(betas)


def _moments(owner: str, opt: Optimizer, p, group, *extra: str, ones: tuple = ()):
    """The state of ``p`` (step, exp_avg, exp_avg_sq or what ``extra`` names, created on the
    first step), the advanced step count (a float, or the device count of a capturable group)
    and the gradient with maximize applied. ``ones`` names float32 scalars starting at 1
    (NAdam's ``mu_product``; on the CPU, or with the count on the device), made right after
    ``step``: state_dict() shows the entries in PyTorch's order."""
    state = opt.state[p]
    capturable = group.get("capturable", False)
    if not state:
        state["step"] = new_step(p.device if capturable else None)
        for name in ones:
            state[name] = new_step(p.device if capturable else None).add_(1.0)
        for name in extra:
            state[name] = zeros_like(p)
    # (a capturable group's count is a device tensor: Note [capturable step counts])
    step = advance_device_step(owner, p, state) if capturable else advance_step(state["step"])
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
        SGD's); capturable: keep the step count on the parameters' device and take the bias
        correction from it there, so that ``step()`` can be captured in a CUDA graph (Note
        [capturable step counts]).

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
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps,
                                  "weight_decay": weight_decay, "foreach": foreach,
                                  "maximize": maximize, "differentiable": bool(differentiable),
                                  "capturable": bool(capturable)})

    def _update(self, p, group) -> None:
        state, step, g = _moments("Adamax", self, p, group, "exp_avg", "exp_inf")
        g = _decay(p, g, group, False)
        (beta1, beta2), m, u = group["betas"], state["exp_avg"], state["exp_inf"]
        m.add_(g - m, alpha=1 - beta1)                        # lerp_(g, 1 - beta1)
        u.copy_(maximum(u.mul(beta2), g.abs().add(group["eps"])))
        if group["capturable"]:
            # (Note [capturable step counts]) PyTorch's capturable form, the bias correction
            # a float32 tensor op on the device count: p += m / (u * (beta1^t - 1) / lr)
            neg_bias_correction = (beta1 ** step - 1) / group["lr"]
            p.add_(m.div(u.mul(neg_bias_correction)))
            return
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
        differentiable: record the update in the autograd graph (as SGD's; Note
        [differentiable NAdam]); capturable: keep the step count and the momentum product on
        the parameters' device, the step sizes taken from them there, so that ``step()`` can
        be captured in a CUDA graph (Note [capturable step counts]).

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
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps,
                                  "weight_decay": weight_decay,
                                  "momentum_decay": momentum_decay,
                                  "decoupled_weight_decay": decoupled_weight_decay,
                                  "maximize": maximize, "foreach": foreach,
                                  "capturable": bool(capturable),
                                  "differentiable": bool(differentiable)})

    def _update(self, p, group) -> None:
        state, step, g = _moments("NAdam", self, p, group, "exp_avg", "exp_avg_sq",
                                  ones=("mu_product",))
        g = _decay(p, g, group, group["decoupled_weight_decay"])
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        psi = group["momentum_decay"]
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * psi))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * psi))
        prod = state["mu_product"]
        if group["capturable"] and prod.device != p.device:  # (a state loaded onto the CPU)
            prod = state["mu_product"] = prod.to(p.device)
        prod.mul_(mu)
        m, v = state["exp_avg"], state["exp_avg_sq"]
        m.add_(g - m, alpha=1 - beta1)
        v.mul_(beta2).add_(g.mul(1 - beta2).mul(g))
        denom = v.div(1 - beta2 ** step).sqrt().add(eps)
        if group["capturable"]:
            # (Note [capturable step counts]) the count, mu, mu_next and the momentum product
            # are float32 device tensors: PyTorch's capturable step sizes, tensor ops on them
            size = (1.0 - mu).mul(-lr).div(1.0 - prod)
            size_next = mu_next.mul(-lr).div(1.0 - prod * mu_next)
            p.addcdiv_(g.mul(size), denom)
            p.addcdiv_(m.mul(size_next), denom)
            return
        product = prod.item()
        if group["differentiable"]:
            # Note [differentiable NAdam]: PyTorch's differentiable step keeps the momentum
            # product a float32 tensor, so both step sizes are float32 arithmetic on it (its
            # ``c / t`` being ``reciprocal(t) * c``); the parameter is then updated by
            # addcdiv of the scaled gradient and moment, which autograd records.
            f32 = np.float32
            p_next = f32(f32(product) * f32(mu_next))
            size = f32(f32(1) / (f32(1) - f32(product))) * f32(-lr * (1.0 - mu))
            size_next = f32(f32(1) / (f32(1) - p_next)) * f32(-lr * mu_next)
            p.addcdiv_(g.mul(float(size)), denom)
            p.addcdiv_(m.mul(float(size_next)), denom)
            return
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
        SGD's); capturable: keep the step count on the parameters' device and take the
        rectification from it there, so that ``step()`` can be captured in a CUDA graph (Note
        [capturable step counts]).

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
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps,
                                  "weight_decay": weight_decay, "maximize": maximize,
                                  "foreach": foreach, "capturable": bool(capturable),
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
        if group["capturable"]:
            # (Note [capturable step counts]) both branches computed, the rectified one chosen
            # on the device (PyTorch's capturable form), so no host sync on rho_t
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                    / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            adaptive = (bias_correction2 ** 0.5) / v.sqrt().add(eps)
            update = where(rho_t > 5.0, rect * adaptive, 1.0)
            p.add_(corrected.mul(lr).mul(update), alpha=-1.0)
            return
        if rho_t > 5.0:
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                    / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            adaptive = v.sqrt().add(eps).reciprocal().mul(bias_correction2 ** 0.5)
            p.sub_(corrected.mul(lr).mul(adaptive).mul(rect))
        else:
            p.sub_(corrected.mul(lr))
