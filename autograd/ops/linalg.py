"""Matrix products: ``mm`` (2-D) and ``bmm`` (3-D, batched) are the primitives; ``matmul`` maps
1-D, folded and batch-broadcast operands onto them (NumPy's rules, as PyTorch)."""

from __future__ import annotations

from numpy import ndarray as _ndarray

from ...runtime import dtype as dtypes
from ..registry import OpInfo, with_jvp
from ..checks import (check_devices_match, expected_scalar_type, kernel_not_implemented,
                      scalar_type_name)
from ..dispatch import SINK, Primitive, apply, bilinear_jvp, opmath, zeros
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
        return _mm_grads(k, a, b, g, need_a and (_column_major(k, a),),
                         need_b and (_column_major(k, b),))


def _mm_grads(k, a, b, g, a_layout, b_layout) -> tuple:
    """The gradients of ``a @ b``: g @ b^T where ``a_layout`` is given, a^T @ g where
    ``b_layout`` is (a falsy one: not needed, None). A layout is ``(column_major,)`` of its
    operand: each gradient is made in its operand's memory layout (as PyTorch's mm backward
    does): for a transposed operand like linear's weight.t(), (g^T a)^T instead of a^T g, so
    that after the transpose's own backward the gradient is row-major again and the leaf can
    adopt it without a copy."""
    ga = gb = None
    if a_layout:
        ga = k.permute(k.matmul(b, k.permute(g, _T)), _T) if a_layout[0] \
            else k.matmul(g, k.permute(b, _T))
    if b_layout:
        gb = k.permute(k.matmul(k.permute(g, _T), a), _T) if b_layout[0] \
            else k.matmul(k.permute(a, _T), g)
    return ga, gb


_T = (1, 0)


def _column_major(k, m) -> bool:
    if type(m) is _ndarray:  # (NumPy's flags say it: F- and not C-contiguous, both dims > 1)
        f = m.flags
        return f.f_contiguous and not f.c_contiguous
    rows, cols = m.shape
    s0, s1 = k.strides(m)
    return s0 == 1 and s1 == rows and rows > 1 and cols > 1


def _no_bool(t: Tensor, cpu_kernel: str, cuda_kernel: str) -> None:
    """PyTorch has no bool matrix products (einsum and matmul of bools included): the error
    of its kernel."""
    if t.dtype is dtypes.bool:
        raise kernel_not_implemented(cpu_kernel if t.device.type == "cpu" else cuda_kernel,
                                     dtypes.bool)


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """The matrix product of two 2-D tensors."""
    if not isinstance(mat2, Tensor) or not isinstance(input, Tensor):
        raise TypeError("mm(): arguments must be Tensors")
    if type(input) is not Tensor and input.layout is not dtypes.strided:  # sparse @ dense
        return input.mm(mat2)
    if type(mat2) is not Tensor and mat2.layout is not dtypes.strided:  # dense @ sparse
        return mat2.__rmatmul__(input)
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
    _no_bool(input, "addmm_impl_cpu_", "addmm_cuda")
    return apply(MmBackward0, (input, mat2))


class AddmmBackward0(Primitive):
    """C = beta * input + alpha * (A @ B), ``input`` broadcast to C's shape (ignored when
    beta is 0, so NaN in it does not propagate): d input = beta dC (summed back to its
    shape), dA = alpha dC @ B^T, dB = alpha A^T @ dC. One node, as PyTorch's addmm (and
    linear with a bias on 2-D input) records: hooks and graphs see it, not an mm and an add.
    A is saved only for B's gradient and B for A's."""

    __slots__ = ("alpha", "beta", "layouts")  # (Note [Node state in slots], node.py)
    op_name = "addmm"
    save_inputs = (1, 2)
    save_when = (2, 1)
    saved_names = ("mat1", "mat2")
    broadcasts = True

    @staticmethod
    def forward(ctx, k, c, a, b, beta, alpha):
        ctx.beta, ctx.alpha = beta, alpha
        if ctx is not SINK:
            # the operands' layouts, for backward: either may be unsaved (PyTorch keeps them
            # apart too: _saved_mat1_sym_strides)
            ctx.layouts = ((_column_major(k, a),), (_column_major(k, b),))
        if alpha == 1 and beta == 1:  # (linear: a bias row added in the product's epilogue)
            return k.addmm(c, a, b)
        # float16/bfloat16: alpha * product + beta * input in float32, rounded once, as
        # PyTorch's GEMM (k.addmm above does the same)
        (a, b, c), back = opmath(k, a, b, c)
        out = k.matmul(a, b)  # (a new array: scaled and added to in place, no more allocated)
        if alpha != 1:
            k.mul(out, alpha, out=out)
        if beta != 0:
            k.add(out, c if beta == 1 else k.mul(c, beta), out=out)
        return back(out)

    @staticmethod
    def vjp(ctx, k, saved, g):
        a, b = saved
        need_c, need_a, need_b = ctx.needs_input_grad
        beta, alpha = ctx.beta, ctx.alpha
        gc = (g if beta == 1 else k.mul(g, beta)) if need_c else None
        la, lb = ctx.layouts
        ga, gb = _mm_grads(k, a, b, g if alpha == 1 else k.mul(g, alpha), need_a and la,
                           need_b and lb)
        return gc, ga, gb

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, beta, alpha):
        # beta tc + alpha (ta @ b + a @ tb)
        (_, a, b), (tc, ta, tb) = primals, tangents
        terms = []
        if ta is not None:
            terms.append(k.matmul(ta, b))
        if tb is not None:
            terms.append(k.matmul(a, tb))
        if alpha != 1:
            terms = [k.mul(t, alpha) for t in terms]
        if tc is not None and beta != 0:
            terms.append(tc if beta == 1 else k.mul(tc, beta))
        if not terms:
            return zeros(k, out.shape, out)
        total = terms[0]
        for t in terms[1:]:
            total = k.add(total, t)
        return total


def scaled_weights(dtype, beta, alpha) -> tuple:
    """``beta`` and ``alpha`` as the addmm family converts them to the result's ``dtype``, as
    PyTorch's: an integer result truncates them (0.5 -> 0; PyTorch gives 18, not 28, for
    ``addmm(3s, 3s, 3s, beta=0.5, alpha=1.5)`` of 2x2 int64 threes), a real one refuses a
    complex weight with an imaginary part."""
    if dtype.is_floating_point:
        for w in (beta, alpha):
            if isinstance(w, complex) and w.imag:
                raise RuntimeError(f"value cannot be converted to type "
                                   f"{'double' if dtype is dtypes.float64 else 'float'} "
                                   f"without overflow")
        return (beta.real if isinstance(beta, complex) else beta,
                alpha.real if isinstance(alpha, complex) else alpha)
    if dtype.is_complex:
        return beta, alpha
    return int(beta.real if isinstance(beta, complex) else beta), \
        int(alpha.real if isinstance(alpha, complex) else alpha)


def addmm_node(input: Tensor, mat1: Tensor, mat2: Tensor, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)`` as one AddmmBackward0 node, the operands
    checked as PyTorch's addmm checks them (``input`` must broadcast to the product's
    shape)."""
    # (the checks read the fields, not the properties: every nn.Linear call passes here)
    if not (isinstance(mat1, Tensor) and isinstance(mat2, Tensor)) or \
            len(mat1._data.shape) != 2 or len(mat2._data.shape) != 2:
        for t, name in ((mat1, "mat1"), (mat2, "mat2")):
            if not isinstance(t, Tensor):
                raise TypeError(f"addmm(): argument '{name}' must be Tensor, not "
                                f"{type(t).__name__}")
            if t.ndim != 2:
                raise RuntimeError(f"{name} must be a matrix, got {t.ndim}-D tensor")
    (n, m), (m2, p) = mat1._data.shape, mat2._data.shape
    if m != m2:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({n}x{m} and {m2}x{p})")
    dt = mat2._dtype
    if input._dtype is not dt or mat1._dtype is not dt:
        for t, name in ((input, "self"), (mat1, "mat1")):  # (PyTorch's order of the checks)
            if t.dtype is not dt:
                raise RuntimeError(f"{name} and mat2 must have the same dtype, but got "
                                   f"{scalar_type_name(t.dtype)} and {scalar_type_name(dt)}")
    dev = mat1._device
    if input._device != dev or mat2._device != dev:
        check_devices_match(input.device, dev, "addmm")
        check_devices_match(dev, mat2.device, "addmm")
    if dt is dtypes.bool:
        _no_bool(mat1, "addmm_impl_cpu_", "addmm_cuda")
    shape = input._data.shape
    if shape != (p,) and shape != (n, p) and (
            len(shape) > 2 or any(s != 1 and s != t for s, t in zip(shape[::-1], (p, n)))):
        input.detach().expand(n, p)  # (raises expand's message: input does not broadcast)
    if not (beta == 1 and alpha == 1):  # (nn.Linear's call: nothing to convert)
        beta, alpha = scaled_weights(mat2._dtype, beta, alpha)
    return apply(AddmmBackward0, (input, mat1, mat2), beta, alpha)


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
    _no_bool(input, "bmm", "bmm_cuda")
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
        if not (isinstance(other, _ndarray) and isinstance(input, Tensor)):
            raise TypeError(f"matmul(): argument 'other' must be Tensor, not "
                            f"{type(other).__name__}")
        from .elementwise import numpy_operand, numpy_result_type  # Note [NumPy array operands]
        other = numpy_operand(other, input, "matmul")
        dt = numpy_result_type(input, other, "matmul")
        input, other = input.to(dt), other.to(dt)
    if not isinstance(input, Tensor):
        raise TypeError(f"matmul(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if type(input) is not Tensor and input.layout is not dtypes.strided:  # sparse @ dense
        return input.matmul(other)
    if type(other) is not Tensor and other.layout is not dtypes.strided:  # dense @ sparse
        return other.__rmatmul__(input)
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
    OpInfo("mm", mm, flops="matmul", grad="g b^T, a^T g", autocast="lower", out="exact"),
    OpInfo("bmm", bmm, flops="matmul", grad="g b^T, a^T g per batch", autocast="lower",
           out="exact"),
    OpInfo("matmul", matmul, flops="matmul", operators=("__matmul__", "__rmatmul__"),
           reflected=lambda self, other: matmul(other, self) if isinstance(other, Tensor)
           else NotImplemented,  # (``ndarray @ t``: Python's TypeError, as PyTorch's)
           grad="g b^T, a^T g, broadcast",
           autocast="lower", out="exact"),
)
OPS = with_jvp(OPS)  # every primitive here has a jvp rule
