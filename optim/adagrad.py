"""Adagrad (Duchi, Hazan & Singer, 2011)."""

from __future__ import annotations

from ..autograd.sparse import is_sparse
from ..runtime.dtype import bfloat16, float16
from .optimizer import (Optimizer, advance_step, check_fused_options, check_hyperparameters,
                        new_step)

__all__ = ["Adagrad"]


def _check_fused(p) -> None:
    """PyTorch's checks of ``fused=True`` (its fused Adagrad kernel runs on the CPU only)."""
    if p.device.type != "cpu" or not p.is_floating_point():
        raise RuntimeError("`fused=True` requires all the params to be floating point Tensors "
                           f"of supported devices: ['cpu'] but {p.dtype} and {p.device.type}")
    if is_sparse(p.grad) or p.is_complex():
        raise RuntimeError("`fused` does not support sparse grad or complex param")


class Adagrad(Optimizer):
    r"""Adagrad, as ``torch.optim.Adagrad``.

    For each parameter p with gradient g, at step t = 1, 2, ... (the sum s starts at
    ``initial_accumulator_value``)::

        g = -g                                  if maximize
        g = g + weight_decay * p                if weight_decay != 0
        clr = lr / (1 + (t - 1) * lr_decay)
        s = s + g * g
        p = p - clr * g / (sqrt(s) + eps)

    Args:
        params: parameters or parameter groups.
        lr: learning rate (default 1e-2).
        lr_decay: learning rate decay (default 0).
        weight_decay: weight decay (L2 penalty) (default 0).
        initial_accumulator_value: initial value of the sum of squares of gradients
            (default 0).
        eps: term added to the denominator to improve numerical stability (default 1e-10).
        foreach: accepted for compatibility (updates are per parameter; the result is the
            same).
        maximize: maximize the objective with respect to the params, instead of minimizing.
        differentiable: record the update in the autograd graph, so that gradients flow
            through ``step()`` (as SGD's).
        fused: True updates each parameter in one pass in float32 (float16 and bfloat16
            parameters read and written once, rounded once, as PyTorch's fused CPU kernel);
            CPU floating-point parameters with dense gradients only, as PyTorch's.

    State per parameter, created with the optimizer (as PyTorch's): ``step`` (a float32 CPU
    scalar) and ``sum``.

    Example:
        >>> model = tg.nn.Linear(3, 1)
        >>> opt = tg.optim.Adagrad(model.parameters(), lr=0.1, lr_decay=1e-3)
        >>> model(tg.randn(4, 3)).pow(2).mean().backward()
        >>> opt.step(); opt.zero_grad()
    """

    _complex_as_real = True  # (Note [Complex parameters])

    def __init__(self, params, lr: float = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, foreach=None, *,
                 maximize: bool = False, differentiable: bool = False, fused=None):
        check_hyperparameters("Adagrad", lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                              initial_accumulator_value=initial_accumulator_value, eps=eps)
        check_fused_options(fused, foreach, differentiable)
        super().__init__(params, {"lr": lr, "lr_decay": lr_decay, "eps": eps,
                                  "weight_decay": weight_decay,
                                  "initial_accumulator_value": initial_accumulator_value,
                                  "foreach": foreach, "maximize": maximize,
                                  "differentiable": bool(differentiable), "fused": fused})

    def add_param_group(self, param_group: dict) -> None:
        # The state is created with the group (also the constructor's), as PyTorch's.
        super().add_param_group(param_group)
        for p in self.param_groups[-1]["params"]:
            self._init_state(p, self.param_groups[-1])

    def share_memory(self) -> None:
        """Calls ``share_memory_()`` on the state ``sum`` tensors (for Hogwild-style training
        with ``tritongrad.multiprocessing``)."""
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["sum"].share_memory_()

    def _init_state(self, p, group) -> None:
        from ..autograd.ops.creation import full_like
        state = self.state[p]
        if not state:
            state["step"] = new_step()
            value = group["initial_accumulator_value"]
            # (a complex parameter's sum starts at value in both parts, as PyTorch's: each part
            # is a real parameter of its own, Note [Complex parameters])
            state["sum"] = full_like(p, complex(value, value) if p.is_complex() else value)

    def _update(self, p, group) -> None:
        if group["fused"]:
            _check_fused(p)
        state = self.state[p]
        self._init_state(p, group)  # (a state dict loaded without this parameter's entry)
        step_t, s = state["step"], state["sum"]
        step = advance_step(step_t)
        if is_sparse(p.grad):
            return self._update_sparse(p, group, step, s)
        # fused=True: a half-precision p and s read once into float32 and written once, as
        # PyTorch's fused kernel computes; otherwise in p's dtype, in place
        opmath = group["fused"] and p.dtype in (float16, bfloat16)
        g = p.grad.float() if opmath else p.grad
        g = -g if group["maximize"] else g
        pw = p.float() if opmath else p
        if group["weight_decay"] != 0:
            g = g.add(pw, alpha=group["weight_decay"])
        clr = group["lr"] / (1 + (step - 1) * group["lr_decay"])
        acc = s.float() if opmath else s
        acc.add_(g.mul(g))                                # addcmul_(g, g, value=1)
        update = g.div(acc.sqrt().add(group["eps"])).mul(clr)
        if opmath:
            s.copy_(acc)
            p.copy_(pw.sub(update))
        else:
            p.sub_(update)                                # addcdiv_(g, std, value=-clr)

    def _update_sparse(self, p, group, step: float, s) -> None:
        """The update for a sparse gradient: the same rule on the gradient's rows only (its
        duplicates summed first), as PyTorch's; weight decay is refused, as PyTorch's."""
        if group["weight_decay"] != 0:
            raise RuntimeError("weight_decay option is not compatible with sparse gradients")
        g = p.grad.coalesce()  # (unique rows: each is read and written once below)
        rows, vals = tuple(g._indices().unbind(0)), g._values()
        if group["maximize"]:
            vals = -vals
        clr = group["lr"] / (1 + (step - 1) * group["lr_decay"])
        s.index_put_(rows, vals * vals, accumulate=True)
        std = s[rows].sqrt().add(group["eps"])
        p.index_put_(rows, vals / std * -clr, accumulate=True)
