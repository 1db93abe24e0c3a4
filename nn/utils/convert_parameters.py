"""``nn.utils.convert_parameters`` (PyTorch's module of the same name):
``parameters_to_vector`` and ``vector_to_parameters``; ``nn.utils`` re-exports them."""

from __future__ import annotations

from ...autograd.tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _check_same_device(params: list, op: str) -> None:
    devices = {p.device for p in params}
    if len(devices) > 1:
        raise TypeError(f"{op}: found two parameters on different devices, this is currently "
                        f"not supported ({sorted(str(d) for d in devices)})")


def parameters_to_vector(parameters) -> Tensor:
    """Flatten an iterable of parameters into a single vector (recorded: gradients flow back
    to the parameters, as PyTorch's ``cat`` of their views)."""
    from ...autograd.ops.shape import cat
    params = list(parameters)
    if isinstance(parameters, Tensor):
        params = [parameters]
    if not params:  # (PyTorch's cat of an empty list: a ValueError)
        raise ValueError("parameters_to_vector: expected a non-empty iterable of tensors "
                         "(cat of an empty list)")
    _check_same_device(params, "parameters_to_vector")
    return cat([p.reshape(-1) for p in params])


def vector_to_parameters(vec: Tensor, parameters) -> None:
    """Copy slices of a vector into an iterable of parameters: each parameter's ``data``
    becomes the next ``numel()`` elements of ``vec``, viewed in its shape (sharing ``vec``'s
    storage, as PyTorch's). Elements past the parameters' total are left unused, as in
    PyTorch; a vector too short, or not 1-D, is a RuntimeError."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    _check_same_device(params + [vec], "vector_to_parameters")
    total = sum(p.numel() for p in params)
    if vec.ndim != 1 or vec.numel() < total:
        raise RuntimeError(f"vector_to_parameters: expected a 1-D vector of {total} elements "
                           f"(the parameters' total) or more, got one of size "
                           f"{list(vec.shape)}")
    pointer = 0
    for p in params:
        n = p.numel()
        p.data = vec.detach()[pointer:pointer + n].view(tuple(p.shape))
        pointer += n
