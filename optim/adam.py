"""Adam and AdamW."""

from __future__ import annotations

import numpy as np

from ..autograd.ops.elementwise import maximum
from ..autograd.tensor import Tensor
from ..kernels import multi_tensor
from .optimizer import (Optimizer, advance_step, bump_versions, check_fused_options, check_lr,
                        fused_kernel, new_step, zeros_like)

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    r"""Adam (Kingma & Ba, 2014), as ``torch.optim.Adam``; AdamW with decoupled weight decay.

    For each parameter p with gradient g, at step t = 1, 2, ... (m, v, v_max start at 0)::

        g = -g                                  if maximize
        p = p * (1 - lr * weight_decay)         if decoupled_weight_decay (AdamW)
        g = g + weight_decay * p                elif weight_decay != 0 (Adam's L2 penalty)
        m = m + (1 - beta1) * (g - m)           (= beta1 m + (1 - beta1) g)
        v = beta2 * v + (1 - beta2) * g * g
        v_max = max(v_max, v)                   if amsgrad (then used in place of v)
        denom = sqrt(v) / sqrt(1 - beta2^t) + eps
        p = p - lr / (1 - beta1^t) * m / denom

    Args:
        params: parameters or parameter groups.
        lr: learning rate (default 1e-3).
        betas: (beta1, beta2), the decay rates of the moment estimates (default (0.9, 0.999));
            both numbers or both 0-d Tensors (Note [Adam's tensor betas]).
        eps: added to the denominator (default 1e-8).
        weight_decay: L2 penalty (Adam) or decoupled decay rate (AdamW) (default 0).
        amsgrad: use the maximum of past second moments (Reddi et al., 2018).
        maximize: maximize the objective instead of minimizing.
        decoupled_weight_decay: AdamW's decay (``AdamW`` sets it).
        foreach: None (default) or True updates the parameters of a group together where
            the backend has multi-tensor kernels (the Triton backend: one launch for all the
            group's parameters of one dtype, step count and device; not with amsgrad), False
            one parameter at a time; the results are the same to the last bit.
        capturable: keep the step count on the parameters' device, so that ``step()`` can be
            captured in a CUDA graph (Note [capturable Adam]); not with ``fused=True``.
        differentiable: record the update in the autograd graph (through a gradient computed
            with ``create_graph=True``, to non-leaf parameters), as PyTorch's.
        fused: None (default) uses the backend's fused ``adam_step`` kernel (one launch per
            parameter) when it has one; True requires it; False uses Tensor ops (and no
            multi-tensor kernel).

    Example:
        >>> model = tg.nn.Linear(3, 1)
        >>> opt = tg.optim.Adam(model.parameters(), lr=1e-2)
        >>> model(tg.randn(4, 3)).pow(2).mean().backward()
        >>> opt.step(); opt.zero_grad()
    """

    _complex_as_real = True  # (Note [Complex parameters])

    # PyTorch's message for a sparse gradient, AdamW's too (Note [Sparse gradients in
    # dense optimizers])
    _sparse_grad_error = ("Adam does not support sparse gradients, please consider "
                          "SparseAdam instead")

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *, foreach=None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False,
                 fused=None, decoupled_weight_decay: bool = False):
        # (PyTorch's foreach path reads a Tensor lr only in its capturable form, and refuses it
        # otherwise, before any other check)
        if isinstance(lr, Tensor) and foreach and not capturable:
            raise ValueError("lr as a Tensor is not supported for capturable=False and "
                             "foreach=True")
        check_lr(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if isinstance(betas[0], Tensor) != isinstance(betas[1], Tensor):
            raise ValueError("betas must be either both floats or both Tensors")
        check_fused_options(fused, foreach, differentiable)
        if capturable and fused:
            raise NotImplementedError("Adam: fused=True with capturable=True is not supported "
                                      "(the fused kernels take the step count from the host)")
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps,
                                  "weight_decay": weight_decay, "amsgrad": amsgrad,
                                  "maximize": maximize, "foreach": foreach,
                                  "capturable": bool(capturable),
                                  "differentiable": bool(differentiable), "fused": fused,
                                  "decoupled_weight_decay": decoupled_weight_decay})

    def _multi_tensor_ok(self, group: dict) -> bool:
        return (group["foreach"] is not False and group["fused"] is not False
                and not group["amsgrad"] and not group["differentiable"]
                and not _tensor_betas(*group["betas"])  # (Note [Adam's tensor betas])
                # (the capturable kernels take lr as a number)
                and not (group["capturable"] and isinstance(group["lr"], Tensor)))

    def _multi_tensor_update(self, params: list, group) -> list:
        """Updates the parameters the backend's multi-tensor ``adam_step`` takes, a launch per
        (device, dtype, step count), or with ``capturable`` its ``adam_step_capturable``, two
        launches per (device, dtype) whatever the counts (their adds, then the updates: Note
        [capturable Adam]); returns the others (each to ``_update``). The kernels check the
        arrays (dtypes, layouts, devices) and refuse, launching nothing, a batch they cannot
        take."""
        capturable = group["capturable"]
        batches: dict = {}
        rest = []
        seen = set()
        for p in params:  # (per parameter per step: kept to a few operations)
            if p.dtype.is_complex or id(p) in seen:  # (as real views; listed twice: in turn)
                rest.append(p)
                continue
            count = self._state(p, False, capturable)["step"]
            if capturable:  # (a CPU parameter: _update raises; a loaded count: it moves it)
                if p.device.type == "cpu" or count.device != p.device:
                    rest.append(p)
                    continue
                key = (p.device, p.dtype)
            else:
                if type(count._data) is not np.ndarray:  # (a counter loaded onto a device)
                    rest.append(p)
                    continue
                key = (p.device, p.dtype, float(count._data))
            seen.add(id(p))
            batches.setdefault(key, []).append(p)
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        wd, maximize = group["weight_decay"], group["maximize"]
        name = "adam_step_capturable" if capturable else "adam_step"
        for key, batch in batches.items():
            multi = getattr(multi_tensor(key[0]), name, None)
            states = [self.state[p] for p in batch]
            if capturable:  # (the counts, advanced by the kernel)
                step = ([s["step"]._data for s in states], lr)
            else:  # advance_step's new count
                step = (float(np.float32(key[2]) + np.float32(1)), _kernel_lr(lr))
            try:
                if multi is not None:
                    multi([p._data for p in batch], [p.grad._data for p in batch],
                          [s["exp_avg"]._data for s in states],
                          [s["exp_avg_sq"]._data for s in states], *step, beta1, beta2, eps,
                          wd, maximize, group["decoupled_weight_decay"])
            except TypeError:  # arrays the kernel does not take (dtypes, layouts, devices)
                multi = None
            if multi is None:  # one at a time
                rest += batch
                continue
            for p, s in zip(batch, states):
                if not capturable:
                    advance_step(s["step"])
                bump_versions(p, s["exp_avg"], s["exp_avg_sq"], s["step"] if capturable else None)
        return rest

    def _state(self, p, amsgrad: bool, capturable: bool = False) -> dict:
        """The state of ``p``, made on its first update (the step counter, zero moments); a
        capturable group's counter lives on ``p``'s device (Note [capturable Adam])."""
        state = self.state[p]
        if not state:
            state["step"] = new_step(p.device if capturable else None)
            state["exp_avg"] = zeros_like(p)
            state["exp_avg_sq"] = zeros_like(p)
            if amsgrad:
                state["max_exp_avg_sq"] = zeros_like(p)
        return state

    def _update(self, p, group) -> None:
        grad = p.grad
        amsgrad, capturable = group["amsgrad"], group["capturable"]
        state = self._state(p, amsgrad, capturable)
        step_t, m, v = state["step"], state["exp_avg"], state["exp_avg_sq"]
        vmax = state.get("max_exp_avg_sq") if amsgrad else None
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        wd, maximize = group["weight_decay"], group["maximize"]
        decoupled = group["decoupled_weight_decay"]
        if capturable:  # Note [capturable Adam]
            step = _device_step(p, state)
            fused = None if (_tensor_betas(beta1, beta2) or group["differentiable"]
                             or isinstance(lr, Tensor)) else \
                fused_kernel(group["fused"], "adam_step_capturable", p, grad, m, v, vmax)
            if fused is not None:
                fused(p._data, grad._data, m._data, v._data,
                      None if vmax is None else vmax._data, step._data, lr, beta1, beta2, eps,
                      wd, amsgrad, maximize, decoupled)
                bump_versions(p, m, v, vmax)
                return
        else:
            step = advance_step(step_t)
            fused = None if _tensor_betas(beta1, beta2) or group["differentiable"] else \
                fused_kernel(group["fused"], "adam_step", p, grad, m, v, vmax)
        if fused is not None:
            fused(p._data, grad._data, m._data, v._data, None if vmax is None else vmax._data,
                  step, _kernel_lr(lr), beta1, beta2, eps, wd, amsgrad, maximize, decoupled)
            bump_versions(p, m, v, vmax)
            return
        g = -grad if maximize else grad
        if wd != 0:
            if decoupled:
                p.mul_(1 - lr * wd)
            else:
                g = g.add(p, alpha=wd)
        if group["differentiable"] and not capturable and not _tensor_betas(beta1, beta2):
            _differentiable_update(p, g, m, v, vmax, lr, beta1, beta2, eps, step)
            return
        if not capturable and _tensor_betas(beta1, beta2):
            weight1, beta2, weight2, step_size, bias_correction2_sqrt = \
                _tensor_beta_scalars(p, lr, beta1, beta2, step)
        else:
            weight1, weight2 = 1 - beta1, 1 - beta2
            step_size = lr / (1 - beta1 ** step)
            bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
        m.add_(g - m, alpha=weight1)                 # lerp_(g, 1 - beta1)
        v.mul_(beta2).add_(g.mul(weight2).mul(g))    # addcmul_(g, g, value=1 - beta2)
        if amsgrad:
            vmax.copy_(maximum(vmax, v))
            denom = vmax.sqrt().div(bias_correction2_sqrt).add(eps)
        else:
            denom = v.sqrt().div(bias_correction2_sqrt).add(eps)
        p.sub_(m.mul(step_size).div(denom))          # addcdiv_(m, denom, -step_size)


def _differentiable_update(p, g, m, v, vmax, lr, beta1, beta2, eps, step: float) -> None:
    """Note [differentiable Adam]: PyTorch's differentiable step keeps the step count a
    float32 tensor and takes the bias corrections and step size from it as tensor ops, so
    they are float32 values (a float64 parameter moves by a float32-rounded step size); the
    update is written out of place where a saved value would be overwritten (the amsgrad
    maximum). Its scalars are rounded as PyTorch's, so the values and the gradients through
    the step agree with PyTorch's to the last digits."""
    f32 = np.float32
    s = f32(step)
    bias_correction1 = f32(1) - f32(beta1) ** s
    # (PyTorch takes a number over a tensor, ``lr / bias_correction1``, as the reciprocal
    # times the number: two float32 roundings; a Tensor lr divides)
    step_size_neg = -(f32(lr.item()) / bias_correction1 if isinstance(lr, Tensor)
                      else f32(1) / bias_correction1 * f32(lr))
    bias_correction2_sqrt = np.sqrt(f32(1) - f32(beta2) ** s)
    m.add_(g - m, alpha=1 - beta1)               # lerp_(g, 1 - beta1)
    v.mul_(beta2).add_(g.mul(1 - beta2).mul(g))  # addcmul_(g, g, value=1 - beta2)
    if vmax is not None:
        vmax.copy_(maximum(vmax.clone(), v))     # (a clone: maximum saves its operands)
        v = vmax
    denom = v.sqrt().div(float(bias_correction2_sqrt * step_size_neg)).add(
        float(f32(1) / step_size_neg * f32(eps)))  # (eps / step_size_neg, as above)
    p.add_(m.div(denom))                         # addcdiv_(m, denom)


def _kernel_lr(lr):
    """A Tensor ``lr`` as the fused kernels take it: a NumPy scalar of its dtype, so that the
    step size computed from it rounds as PyTorch's tensor arithmetic on a float32 ``lr``
    (``lr / bias_correction1`` in float32), and the half-precision NumPy form does not mix a
    Tensor into its array arithmetic (a TypeError there)."""
    return np.dtype(lr.dtype.np).type(lr.item()) if isinstance(lr, Tensor) else lr


def _tensor_betas(beta1, beta2) -> bool:
    return isinstance(beta1, Tensor) or isinstance(beta2, Tensor)


def _tensor_beta_scalars(p, lr, beta1, beta2, step: float) -> tuple:
    """Note [Adam's tensor betas]: with ``betas`` given as 0-d tensors, PyTorch computes the
    step's scalars as tensor ops in the betas' dtype (float32 for ``torch.tensor(0.9)``): the
    bias corrections and the step size are rounded to it, ``1 - beta1`` (the moment's weight)
    is taken in the parameter's dtype. Returns (1 - beta1, beta2, 1 - beta2, step size,
    sqrt of the second bias correction), each rounded as PyTorch rounds it."""
    def kind(beta):
        return beta.dtype.np if isinstance(beta, Tensor) else np.float64

    def value(beta):
        return float(beta.item()) if isinstance(beta, Tensor) else beta

    k1, k2, b1, b2 = np.dtype(kind(beta1)).type, np.dtype(kind(beta2)).type, \
        value(beta1), value(beta2)
    pk = np.dtype(p.dtype.np).type
    weight1 = float(pk(1) - pk(b1))
    weight2 = float(k2(1) - k2(b2))
    bias_correction1 = k1(1) - k1(b1) ** k1(step)
    # (a number over a tensor is the tensor's reciprocal times the number; a tensor lr divides)
    step_size = float(k1(value(lr)) / bias_correction1 if isinstance(lr, Tensor)
                      else k1(1) / bias_correction1 * k1(lr))
    bias_correction2_sqrt = float(np.sqrt(k2(1) - k2(b2) ** k2(step)))
    return weight1, b2, weight2, step_size, bias_correction2_sqrt


def _device_step(p, state: dict):
    """Note [capturable Adam]: with ``capturable=True`` the step count is a float32 tensor on
    the parameter's device, advanced there, and the bias corrections are tensor ops on it
    (``1 - beta1 ** step``), so a step() queues device work only and a CUDA graph of it replays
    correctly: each replay advances the count. The update is the backend's
    ``adam_step_capturable`` where it has one (the Triton backend: one kernel that computes the
    bias corrections from the count in float32, then ``adam_step``'s formulas; ~25 tensor ops
    a parameter before, 1378 graph nodes for the GPT benchmark's 53 parameters, which made its
    whole-step graph slower than eager AdamW on the H200), else ``_update``'s own formula with
    the count a tensor. A group's parameters of one device and dtype take the multi-tensor
    form where the backend has it (``Adam._multi_tensor_update``: foreach.py's
    ``adam_step_capturable``, the counts' adds in one launch and every update in another, the
    same bits): the GPT benchmark's optimizer then takes 2 kernel nodes instead of 106, and its
    whole-step graph 197 nodes (counted on the emulated device). As PyTorch, parameters must
    be on a device that can capture (not the CPU)."""
    if p.device.type == "cpu":
        raise RuntimeError("If capturable=True, params and state_steps must be on supported "
                           "devices: ['cuda'].")
    step = state["step"]
    if step.device != p.device:  # (a state loaded onto the CPU)
        step = state["step"] = step.to(p.device)
    step.add_(1)
    return step


class AdamW(Adam):
    r"""Adam with decoupled weight decay (Loshchilov & Hutter, 2019), as ``torch.optim.AdamW``:
    each step first shrinks the parameter, p = p * (1 - lr * weight_decay), then applies the
    Adam update (see ``Adam``) without an L2 term. Default weight_decay is 1e-2.
    """

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
                 foreach=None, capturable: bool = False, differentiable: bool = False,
                 fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)
