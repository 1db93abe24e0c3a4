"""``nn.utils.get_total_norm`` and ``nn.utils.clip_grads_with_norm_``: the two halves of
``clip_grad_norm_`` (PyTorch 2.6), for when the norm is needed between them (to reduce it
across ranks, or to log it)."""

from __future__ import annotations

from collections.abc import Iterable

from ...autograd.grad_mode import no_grad
from ...autograd.ops import creation
from ...autograd.ops.linalg_ext import vector_norm
from ...autograd.ops.shape import stack
from ...autograd.tensor import Tensor

__all__ = ["clip_grads_with_norm_", "get_total_norm"]


def get_total_norm(tensors: Tensor | Iterable[Tensor], norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """The norm of the norms of an iterable of tensors: the norm of their concatenation.

    Args:
        tensors: a tensor or an iterable of tensors (usually gradients).
        norm_type: the type of the p-norm (``inf`` for the infinity norm). Default: 2.
        error_if_nonfinite: if True, an error is raised when the total norm is NaN or
            infinite (which reads the norm back from a device). Default: False.
        foreach: accepted for PyTorch's signature; the result does not depend on it.

    Returns:
        The total norm, a 0-dim tensor on the first tensor's device.

    Example::

        >>> float(tg.nn.utils.get_total_norm([tg.tensor([3.0]), tg.tensor([4.0])]))
        5.0
    """
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return creation.tensor(0.0)
    device = tensors[0].device
    with no_grad():
        norms = [vector_norm(t.detach(), norm_type).to(device) for t in tensors]
        total = vector_norm(stack(norms), norm_type)
    if error_if_nonfinite:
        from . import _check_finite
        _check_finite(float(total.item()), norm_type)
    return total


def clip_grads_with_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float,
                          total_norm: Tensor, foreach: bool | None = None) -> None:
    """Scales the gradients of ``parameters`` in place by
    ``min(max_norm / (total_norm + 1e-6), 1)``, ``total_norm`` the norm of the gradients
    (from ``get_total_norm``): their norm is then at most ``max_norm``. Nothing is read back
    from a device.

    Args:
        parameters: a tensor or an iterable of tensors whose gradients are scaled.
        max_norm: the greatest norm of the gradients.
        total_norm: the total norm of the gradients, used for the scaling.
        foreach: accepted for PyTorch's signature; the result does not depend on it.
    """
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return
    coef = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
    with no_grad():
        for g in grads:
            g.mul_(coef.to(g.device, g.dtype))
