"""Matrix products: ``mm`` (2-D) and ``bmm`` (3-D, batched) are the primitives; ``matmul`` maps
1-D, folded and batch-broadcast operands onto them (NumPy's rules, as PyTorch)."""

from __future__ import annotations

from ..registry import OpInfo, with_jvp
from ..checks import check_devices_match, expected_scalar_type
from ..dispatch import Primitive, apply, bilinear_jvp
from ..tensor import Tensor



class MmBackward0(Primitive):
    """C = A @ B: dA = dC @ B^T, dB = A^T @ dC."""

    __slots__ = ()
    op_name = "mm"
    save_inputs = (0, 1)
    jvp = staticmethod(bilinear_jvp)  # dC = dA @ B + A @ dB

    @staticmethod
    def forward(ctx, k, a, b):
        return k.matmul(a, b)

    @staticmethod
    def vjp(ctx, k, saved, g):
        a, b = saved
        need_a, need_b = ctx.needs_input_grad
        # Each gradient is made in its operand's memory layout (as PyTorch's mm backward
        # does): for a transposed operand like linear's weight.t(), (g^T a)^T instead of a^T g,
        # so that after the transpose's own backward the gradient is row-major again and the
        # leaf can adopt it without a copy.
        ga = gb = None
        if need_a:
            ga = k.permute(k.matmul(b, k.permute(g, _T)), _T) if _column_major(k, a) \
                else k.matmul(g, k.permute(b, _T))
        if need_b:
            gb = k.permute(k.matmul(k.permute(g, _T), a), _T) if _column_major(k, b) \
                else k.matmul(k.permute(a, _T), g)
        return ga, gb


_T = (1, 0)


def _column_major(k, m) -> bool:
    rows, cols = m.shape
    s0, s1 = k.strides(m)
    return s0 == 1 and s1 == rows and rows > 1 and cols > 1


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
    check_devices_match(input.device, mat2.device, "mm")
    return apply(MmBackward0, (input, mat2))


class BmmBackward0(Primitive):
    """C[b] = A[b] @ B[b]: dA = dC @ B^T, dB = A^T @ dC (batch by batch)."""

    __slots__ = ()
    op_name = "bmm"
    save_inputs = (0, 1)
    jvp = staticmethod(bilinear_jvp)

    @staticmethod
    def forward(ctx, k, a, b):
        return k.bmm(a, b)

    @staticmethod
    def vjp(ctx, k, saved, g):
        a, b = saved
        need_a, need_b = ctx.needs_input_grad
        t = (0, 2, 1)
        return (k.bmm(g, k.permute(b, t)) if need_a else None), \
            (k.bmm(k.permute(a, t), g) if need_b else None)


def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """The batched matrix product of (B, n, m) and (B, m, p) tensors: (B, n, p)."""
    if not isinstance(mat2, Tensor) or not isinstance(input, Tensor):
        raise TypeError("bmm(): arguments must be Tensors")
    if input.ndim != 3 or mat2.ndim != 3:
        raise RuntimeError(f"bmm: expected 3-D tensors, got {input.ndim}-D and {mat2.ndim}-D "
                           f"(shapes {list(input.shape)} and {list(mat2.shape)})")
    (b1, _, m), (b2, m2, p) = input.shape, mat2.shape
    if b1 != b2 or m != m2:
        raise RuntimeError(f"bmm: shapes {tuple(input.shape)} and {tuple(mat2.shape)} cannot be "
                           f"multiplied (expected batch2 of size [{b1}, {m}, *], got "
                           f"[{b2}, {m2}, {p}])")
    if input.dtype is not mat2.dtype:
        raise expected_scalar_type(input.dtype, mat2.dtype)
    check_devices_match(input.device, mat2.device, "bmm")
    return apply(BmmBackward0, (input, mat2))


def _mismatch(a: Tensor, b: Tensor, m: int, m2: int) -> RuntimeError:
    return RuntimeError(f"matmul: shapes {tuple(a.shape)} and {tuple(b.shape)} cannot be "
                        f"multiplied ({m} != {m2})")


def matmul(input: Tensor, other: Tensor) -> Tensor:
    """The matrix product with NumPy's rules: 1-D operands get a dimension added (and removed
    from the result), batched inputs against a 2-D matrix fold into one mm, and batch
    dimensions broadcast (one bmm over the broadcast batch).

    Example:
        >>> (tg.ones(5, 1, 2, 3) @ tg.ones(4, 3, 6)).shape
        tritongrad.Size([5, 4, 2, 6])
    """
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
    if input.shape[-1] != other.shape[-2]:
        raise _mismatch(input, other, input.shape[-1], other.shape[-2])
    if b == 2:
        lead = tuple(input.shape[:-1])
        return mm(input.reshape(-1, input.shape[-1]), other).reshape(lead + (other.shape[-1],))
    return _batched(input, other)


def _batched(input: Tensor, other: Tensor) -> Tensor:
    """(..., n, m) @ (..., m, p) with broadcast batch dims, as one bmm; a 1-D input is a
    (1, m) matrix whose row dimension is dropped from the result."""
    vec = input.ndim == 1
    if vec:
        input = input.unsqueeze(0)
    (n, m), (m2, p) = input.shape[-2:], other.shape[-2:]
    if m != m2:
        raise _mismatch(input, other, m, m2)
    from .elementwise import broadcast_shapes
    try:
        batch = broadcast_shapes(tuple(input.shape[:-2]), tuple(other.shape[:-2]))
    except RuntimeError:
        raise RuntimeError(f"matmul: batch dimensions of shapes {tuple(input.shape)} and "
                           f"{tuple(other.shape)} do not broadcast") from None
    if len(batch) == 1 and input.ndim == 3 and other.ndim == 3 and \
            input.shape[0] == other.shape[0]:
        out = bmm(input, other)  # already (B, n, m) @ (B, m, p)
    else:
        nb = 1
        for s in batch:
            nb *= s
        a = _as_batch(input, batch + (n, m), (nb, n, m))
        b = _as_batch(other, batch + (m, p), (nb, m, p))
        out = bmm(a, b).reshape(batch + (n, p))
    return out.squeeze(-2) if vec else out


def _as_batch(x: Tensor, full: tuple, flat: tuple) -> Tensor:
    if tuple(x.shape) != full:
        x = x.expand(full)
    return x if tuple(x.shape) == flat else x.reshape(flat)


# -- the table ---------------------------------------------------------------------------------

OPS = (
    OpInfo("mm", mm, flops="matmul", grad="g b^T, a^T g", autocast="lower"),
    OpInfo("bmm", bmm, flops="matmul", grad="g b^T, a^T g per batch", autocast="lower"),
    OpInfo("matmul", matmul, flops="matmul", operators=("__matmul__", "__rmatmul__"),
           reflected=lambda self, other: matmul(other, self), grad="g b^T, a^T g, broadcast",
           autocast="lower"),
)
OPS = with_jvp(OPS)  # every primitive here has a jvp rule
