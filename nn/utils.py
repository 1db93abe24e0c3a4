"""``nn.utils``: gradient clipping and flattening parameters."""

from __future__ import annotations

import math

from ..autograd.grad_mode import no_grad
from ..autograd.tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector"]


def _grads(parameters) -> list:
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """Scales the gradients in place so that their joint ``norm_type``-norm is at most
    ``max_norm`` (by max_norm / (total + 1e-6) when above); returns the total norm before
    clipping, as a tensor. ``foreach`` selects PyTorch's implementation strategy, not the
    result: accepted and ignored, as the result is the same either way."""
    grads = _grads(parameters)
    from ..autograd.ops.creation import tensor
    if not grads:
        return tensor(0.0)
    norm_type = float(norm_type)
    with no_grad():
        if math.isinf(norm_type):
            parts = [g.detach().abs().amax() if hasattr(g, "amax") else
                     tensor(float(abs(g.detach().cpu().numpy()).max()), device=g.device)
                     for g in grads]
            total = parts[0]
            for p in parts[1:]:
                total = total.maximum(p.to(total.device))
        else:
            acc = None
            for g in grads:
                g = g.detach()
                s = ((g * g).sum() if norm_type == 2.0 else
                     (g * g).sqrt().pow(norm_type).sum())
                s = s.to(grads[0].device)
                acc = s if acc is None else acc + s
            total = acc.pow(1.0 / norm_type)
        value = float(total.item())
        if error_if_nonfinite and not math.isfinite(value):
            raise RuntimeError(f"The total norm of order {norm_type} for gradients from "
                               f"`parameters` is non-finite, so it cannot be clipped. To "
                               f"disable this error and scale the gradients by the non-finite "
                               f"norm anyway, set `error_if_nonfinite=False`")
        coef = max_norm / (value + 1e-6)
        if coef < 1.0:
            for g in grads:
                g.mul_(coef)
    return total


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamps every gradient elementwise into [-clip_value, clip_value], in place.
    ``foreach`` (an implementation strategy in PyTorch) does not change the result: ignored."""
    with no_grad():
        for g in _grads(parameters):
            g.copy_(g.maximum(g.new_full((), -clip_value)).minimum(g.new_full((), clip_value)))


def parameters_to_vector(parameters) -> Tensor:
    """The parameters flattened and concatenated into one 1-D tensor (a copy)."""
    from ..autograd.ops import creation
    params = list(parameters)
    import numpy as np
    flat = np.concatenate([p.detach().cpu().numpy().reshape(-1) for p in params]) \
        if params else np.zeros(0)
    return creation.tensor(flat, dtype=params[0].dtype if params else None,
                           device=params[0].device if params else None)
