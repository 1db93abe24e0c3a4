"""Matrix products: ``mm`` is the primitive; ``matmul`` maps 1-D and batched operands onto it."""

from __future__ import annotations

from ..dispatch import Primitive, apply
from ..tensor import Tensor

__all__ = ["mm", "matmul"]


class MmBackward0(Primitive):
    """C = A @ B: dA = dC @ B^T, dB = A^T @ dC."""

    __slots__ = ()
    op_name = "mm"
    save_inputs = (0, 1)

    @staticmethod
    def forward(ctx, k, a, b):
        return k.matmul(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        return (g.mm(b.t()) if need_a else None), (a.t().mm(g) if need_b else None)


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """The matrix product of two 2-D tensors."""
    if not isinstance(mat2, Tensor) or not isinstance(input, Tensor):
        raise TypeError("mm(): arguments must be Tensors")
    if input.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(f"mm: expected 2-D tensors, got {input.ndim}-D and {mat2.ndim}-D "
                           f"(shapes {list(input.shape)} and {list(mat2.shape)})")
    (n, m), (m2, p) = input.shape, mat2.shape
    if m != m2:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({n}x{m} and {m2}x{p})")
    if input.dtype is not mat2.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{input.dtype} != {mat2.dtype}")
    if input.device is not mat2.device:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least "
                           f"two devices, {input.device} and {mat2.device}! (in mm)")
    return apply(MmBackward0, (input, mat2))


def matmul(input: Tensor, other: Tensor) -> Tensor:
    """The matrix product with NumPy's rules for 1-D operands; batched inputs against a 2-D
    matrix are folded into one mm. (Batch-broadcast bmm comes with the full op set.)"""
    if not isinstance(other, Tensor):
        raise TypeError(f"matmul(): argument 'other' must be Tensor, not {type(other).__name__}")
    a, b = input.ndim, other.ndim
    if a == 0 or b == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{a}D and {b}D")
    if a == 1 and b == 1:
        if input.shape[0] != other.shape[0]:
            raise RuntimeError(f"inconsistent tensor size, expected tensor [{input.shape[0]}] "
                               f"and src [{other.shape[0]}] to have the same number of elements")
        return mm(input.unsqueeze(0), other.unsqueeze(1)).reshape(())
    if a == 1:
        return mm(input.unsqueeze(0), other).squeeze(0) if b == 2 else _batched(input, other)
    if b == 1:
        return mm(input, other.unsqueeze(1)).squeeze(1) if a == 2 else \
            matmul(input, other.unsqueeze(1)).squeeze(-1)
    if a == 2 and b == 2:
        return mm(input, other)
    if b == 2:
        lead = tuple(input.shape[:-1])
        return mm(input.reshape(-1, input.shape[-1]), other).reshape(lead + (other.shape[-1],))
    return _batched(input, other)


def _batched(input, other):
    raise NotImplementedError(f"matmul: batched operands {list(input.shape)} @ "
                              f"{list(other.shape)} need bmm, which is not implemented yet")
