"""Complex numbers: ``conj``, ``real``, ``imag``, ``view_as_real``, ``view_as_complex``,
the basics (Note [Complex autograd] in autograd/dispatch.py says how gradients flow
through complex tensors).

``conj``, ``real`` and ``imag`` are not holomorphic, so each gives its rule for complex values
(``complex_vjp``) with PyTorch's convention (the gradient of z = x + iy is dL/dx + i dL/dy):
conj's is conj(g), real's is g (as a complex number), imag's is i g. ``view_as_real`` and
``view_as_complex`` are built from them; unlike PyTorch's, all five return new tensors, not
views of their input's memory (writing into ``z.real`` does not change ``z``).
"""

from __future__ import annotations

from ...runtime import dtype as dtypes
from ..checks import tensor_arg
from ..dispatch import Primitive, apply, meta
from ..registry import OpInfo
from ..tensor import Tensor

__all__ = ["conj", "imag", "real", "view_as_complex", "view_as_real"]


def _as_complex(k, g, like):
    """Real gradient ``g`` as a complex array of ``like``'s (complex) dtype."""
    return k.astype(g, meta(like)[1])


class ConjBackward0(Primitive):
    __slots__ = ()
    op_name = "conj"

    @staticmethod
    def forward(ctx, k, z):
        return k.conj(z)

    @staticmethod
    def vjp(ctx, k, saved, g):
        return k.conj(g)

    complex_vjp = vjp


class RealBackward0(Primitive):
    """The real part (``imaginary``: the imaginary part) of ``z``."""

    __slots__ = ()
    op_name, imaginary, save_inputs = "real", False, (0,)

    @staticmethod
    def forward(ctx, k, z, imaginary):
        return (k.imag if imaginary else k.real)(z)

    @staticmethod
    def vjp(ctx, k, saved, g):
        # (a real input: real is the identity, imag is 0 whatever the input is)
        return None if ctx.imaginary else g

    @staticmethod
    def complex_vjp(ctx, k, saved, g):
        gz = _as_complex(k, g, saved[0])
        return k.mul(gz, 1j) if ctx.imaginary else gz


ImagBackward0 = RealBackward0.variant("ImagBackward0", "imag", imaginary=True)


def conj(input: Tensor) -> Tensor:
    """The complex conjugate, elementwise (a copy of a real tensor).

    Example:
        >>> tg.tensor([1 + 2j]).conj()
        tensor([1.-2.j])
    """
    return apply(ConjBackward0, (tensor_arg(input, "conj"),))


def real(input: Tensor) -> Tensor:
    """The real part (``Tensor.real``): float32 of complex64, float64 of complex128."""
    return apply(RealBackward0, (tensor_arg(input, "real"),), False)


def imag(input: Tensor) -> Tensor:
    """The imaginary part (``Tensor.imag``); PyTorch refuses real tensors, and so does this."""
    input = tensor_arg(input, "imag")
    if not input.is_complex():
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return apply(ImagBackward0, (input,), True)


def view_as_real(input: Tensor) -> Tensor:
    """The complex ``input`` as a real tensor with a last dimension of 2 (real, imaginary)."""
    input = tensor_arg(input, "view_as_real")
    if not input.is_complex():
        raise RuntimeError("view_as_real is only supported for complex tensors")
    from .shape import stack
    return stack([real(input), imag(input)], -1)


def view_as_complex(input: Tensor) -> Tensor:
    """The real ``input`` whose last dimension (of size 2) holds real and imaginary parts, as
    a complex tensor (complex64 of float32, complex128 of float64)."""
    input = tensor_arg(input, "view_as_complex")
    if input.dtype not in (dtypes.float32, dtypes.float64):
        raise RuntimeError(f"view_as_complex is only supported for float and double tensors, "
                           f"but got a tensor of scalar type: {input.dtype}")
    if input.ndim == 0 or input.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    return input[..., 0] + input[..., 1] * 1j


# -- the table ---------------------------------------------------------------------------------

OPS = (
    OpInfo("conj", conj, aliases=("conj_physical",), node=ConjBackward0,
           grad="conj(g)", jvp=False),
    OpInfo("real", real, method=False, node=RealBackward0, grad="g", jvp=False),
    OpInfo("imag", imag, method=False, node=ImagBackward0, grad="i g", jvp=False),
    OpInfo("view_as_real", view_as_real, method=False, grad="complex(g[..., 0], g[..., 1])",
           jvp=False),
    OpInfo("view_as_complex", view_as_complex, method=False, grad="view_as_real(g)",
           jvp=False),
)
