"""ASGD, averaged stochastic gradient descent (Polyak & Juditsky, 1992)."""

from __future__ import annotations

import numpy as np

from ..autograd.ops.creation import ones_like, tensor
from ..autograd.ops.elementwise import maximum
from ..autograd.tensor import Tensor
from ..runtime import dtype as dtypes
from .optimizer import (Optimizer, advance_device_step, advance_step, check_hyperparameters,
                        new_step)

__all__ = ["ASGD"]


def _scalar(v: float, device=None):
    """A float32 scalar of the state, as ``new_step``'s counter, on the CPU unless a
    ``device`` is given (PyTorch keeps ``eta`` and ``mu`` as float32 scalars too: each update
    reads them rounded to float32)."""
    return tensor(float(v), dtype=dtypes.float32, device=device)


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
        foreach: accepted for compatibility (updates are per parameter, PyTorch's single-tensor
            path; its foreach path, p - eta * (g + lambd * p), can differ in the last bits).
        maximize: maximize the objective with respect to the params, instead of minimizing.
        differentiable: record the update in the autograd graph, so that gradients flow
            through ``step()`` (as SGD's); the averages ``ax`` then carry it too.
        capturable: keep the step count, eta and mu on the parameters' device, the update
            taken from them there, so that ``step()`` can be captured in a CUDA graph (Note
            [capturable step counts]).

    State per parameter: ``step``, ``eta``, ``mu`` (float32 CPU scalars) and ``ax``. As
    PyTorch's, a loaded state dict casts ``eta`` and ``mu`` to the parameter's dtype and device
    (then read unrounded; each new value is still rounded to float32 first, as PyTorch's).

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
        super().__init__(params, {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0,
                                  "weight_decay": weight_decay, "foreach": foreach,
                                  "maximize": maximize,
                                  "differentiable": bool(differentiable),
                                  "capturable": bool(capturable)})

    def _update(self, p, group) -> None:
        state = self.state[p]
        capturable = group["capturable"]
        if not state:
            device = p.device if capturable else None
            state["step"] = new_step(device)
            state["eta"] = _scalar(group["lr"], device)
            state["mu"] = _scalar(1.0, device)
            state["ax"] = p.detach().new_zeros(tuple(p.shape))
        if capturable:
            return self._capturable_update(p, group, state)
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
        # (PyTorch makes each new value a tensor, torch.as_tensor(number): a float32 rounding
        # even where eta and mu are float64, as a loaded state dict makes them)
        eta = lr / ((1 + lambd * lr * step) ** group["alpha"])
        state["eta"].fill_(eta if isinstance(eta, Tensor) else float(np.float32(eta)))
        state["mu"].fill_(float(np.float32(1 / max(1.0, step - group["t0"]))))

    def _capturable_update(self, p, group, state: dict) -> None:
        """Note [capturable step counts]: the count, eta and mu stay float32 device tensors and
        every value taken from them is a tensor op (PyTorch's capturable form): the average
        always moves by mu (1 before t0), eta and mu recomputed on the device."""
        step = advance_device_step("ASGD", p, state)
        for key in ("eta", "mu"):
            if state[key].device != p.device:  # (a state loaded onto the CPU)
                state[key] = state[key].to(p.device)
        eta, mu, ax = state["eta"], state["mu"], state["ax"]
        g = -p.grad if group["maximize"] else p.grad
        if group["weight_decay"] != 0:
            g = g.add(p, alpha=group["weight_decay"])
        lr, lambd = group["lr"], group["lambd"]
        p.mul_(1 - lambd * eta)
        p.sub_(g.mul(eta))                                  # addcmul_(g, eta, value=-1)
        ax.add_(p.sub(ax).mul(mu))
        eta.copy_(lr / ((1 + lambd * lr * step) ** group["alpha"]))
        mu.copy_(1 / maximum(step - group["t0"], ones_like(step)))
