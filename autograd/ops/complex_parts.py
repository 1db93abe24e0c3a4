"""Complex numbers: ``conj``, ``real``, ``imag``, ``view_as_real``, ``view_as_complex``,
``angle``, ``sgn``, ``complex`` and ``polar``, the basics (Note [Complex autograd] in
autograd/dispatch.py says how gradients flow through complex tensors).

``conj``, ``real`` and ``imag`` are not holomorphic, so each gives its rule for complex values
(``complex_vjp``) with PyTorch's convention (the gradient of z = x + iy is dL/dx + i dL/dy):
conj's is conj(g), real's is g (as a complex number), imag's is i g. ``view_as_real`` and
``view_as_complex`` are built from them; unlike PyTorch's, all five return new tensors, not
views of their input's memory (writing into ``z.real`` does not change ``z``).
"""

from __future__ import annotations

import math

from ...runtime import dtype as dtypes
from ..checks import tensor_arg
from ..dispatch import Primitive, apply, meta, zeros
from ..registry import OpInfo, with_inplace
from ..tensor import Tensor

__all__ = ["angle", "complex", "conj", "imag", "polar", "real", "sgn", "view_as_complex",
           "view_as_real"]


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


class AngleBackward0(Primitive):
    """The argument of complex ``z`` (atan2 of its parts); of a real ``x``, pi where x < 0,
    NaN where it is NaN, else 0 (as PyTorch)."""

    __slots__ = ()
    op_name, save_inputs = "angle", (0,)

    @staticmethod
    def forward(ctx, k, z):
        if meta(z)[1].is_complex:
            return k.binary("atan2", k.imag(z), k.real(z))
        dev, dt = meta(z)
        pi = k.full(tuple(z.shape), math.pi, dt, dev)
        return k.where(k.ne(z, z), z, k.where(k.lt(z, 0), pi, 0.0))

    @staticmethod
    def vjp(ctx, k, saved, g):
        # (a real input: the angle is piecewise constant)
        return zeros(k, saved[0].shape, saved[0])

    @staticmethod
    def complex_vjp(ctx, k, saved, g):
        # d angle = (x dy - y dx) / |z|^2: the gradient g (-y + i x) / |z|^2 = g i z / |z|^2,
        # and 0 at z = 0, as PyTorch (the angle of 0 is defined as 0, with no direction)
        z = saved[0]
        sq = k.real(k.mul(z, k.conj(z)))
        zero = k.eq(sq, 0)
        den = k.astype(k.where(zero, 1.0, sq), meta(z)[1])
        gz = k.mul(k.mul(_as_complex(k, g, z), z), 1j)
        return k.where(zero, 0j, k.div(gz, den))


def angle(input: Tensor) -> Tensor:
    """The elementwise argument (phase) of ``input``, in radians: of a complex value
    atan2(imag, real); of a real one 0, or pi where it is negative. Integers give the default
    float dtype.

    Example:
        >>> tg.angle(tg.tensor([1j, -1.0 + 0j]))
        tensor([1.5708, 3.1416])
    """
    input = tensor_arg(input, "angle")
    if not (input.is_complex() or input.is_floating_point()):
        input = input.to(dtypes.get_default_dtype())
    return apply(AngleBackward0, (input,))


def sgn(input: Tensor) -> Tensor:
    """``input / input.abs()`` for complex values (0 where the value is 0), ``sign`` for real
    ones."""
    input = tensor_arg(input, "sgn")
    if not input.is_complex():
        return input.sign()
    a = input.abs()
    zero = a == 0
    # (the denominator is 1 where |z| = 0, so no 0/0 reaches the gradient of the masked branch)
    q = input / a.masked_fill(zero, 1.0).to(input.dtype)
    return q.masked_fill(zero, 0)


def complex(real: Tensor, imag: Tensor) -> Tensor:  # noqa: A001 - PyTorch's name
    """The complex tensor ``real + i imag`` (complex64 of float32 parts, complex128 of float64
    ones; the parts broadcast)."""
    real, imag = tensor_arg(real, "complex", "real"), tensor_arg(imag, "complex", "imag")
    if real.dtype is not imag.dtype:
        raise RuntimeError(f"Expected object of scalar type {real.dtype} but got scalar type "
                           f"{imag.dtype} for second argument")
    if real.dtype not in (dtypes.float32, dtypes.float64, dtypes.float16):
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{real.dtype} and {imag.dtype}")
    return real + imag * 1j


def polar(abs: Tensor, angle: Tensor) -> Tensor:  # noqa: A002 - PyTorch's names
    """The complex tensor with modulus ``abs`` and argument ``angle``:
    ``abs * (cos(angle) + i sin(angle))``."""
    abs, angle = tensor_arg(abs, "polar", "abs"), tensor_arg(angle, "polar", "angle")
    return complex(abs * angle.cos(), abs * angle.sin())


# -- lazy conjugation and negation: tritongrad has neither ----------------------------------------

def resolve_conj(input: Tensor) -> Tensor:
    """``input`` with its conjugate bit materialized. tritongrad's ``conj`` computes the
    conjugate at once (no lazy conjugate bit), so this is ``input`` itself."""
    return tensor_arg(input, "resolve_conj")


def resolve_neg(input: Tensor) -> Tensor:
    """``input`` with its negative bit materialized. tritongrad has no lazy negation, so this
    is ``input`` itself."""
    return tensor_arg(input, "resolve_neg")


def is_conj(input: Tensor) -> bool:
    """Whether ``input``'s conjugate bit is set: always False here (``conj`` is eager)."""
    tensor_arg(input, "is_conj")
    return False


def is_neg(input: Tensor) -> bool:
    """Whether ``input``'s negative bit is set: always False here (no lazy negation)."""
    tensor_arg(input, "is_neg")
    return False


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
    OpInfo("angle", angle, node=AngleBackward0, grad="g i z / |z|^2 (0 at 0); real: 0",
           jvp=False),
    OpInfo("sgn", sgn, grad="composite: z / |z|", jvp=False),
    OpInfo("complex", complex, method=False, grad="composite: Re g, Im g", jvp=False),
    OpInfo("polar", polar, method=False, grad="composite", jvp=False),
    OpInfo("resolve_conj", resolve_conj, dtypes="all", grad="g"),
    OpInfo("resolve_neg", resolve_neg, dtypes="all", grad="g"),
    OpInfo("is_conj", is_conj, dtypes="all; Python bool", grad="none"),
    OpInfo("is_neg", is_neg, dtypes="all; Python bool", grad="none"),
)
OPS = with_inplace(OPS, ("sgn",))
