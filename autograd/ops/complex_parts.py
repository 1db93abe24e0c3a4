"""Complex numbers: ``conj``, ``real``, ``imag``, ``view_as_real``, ``view_as_complex``,
``angle``, ``sgn``, ``complex`` and ``polar``, the basics (Note [Complex autograd] in
autograd/dispatch.py says how gradients flow through complex tensors).

``conj`` is not holomorphic, so it gives its rule for complex values (``complex_vjp``) with
PyTorch's convention (the gradient of z = x + iy is dL/dx + i dL/dy): conj(g). ``view_as_real``
and ``view_as_complex`` are views, as PyTorch's: the same memory read as the other kind, so
writes through either reach the other; ``real`` and ``imag`` are ``view_as_real(z)[..., 0]``
and ``[..., 1]`` (PyTorch's SelectBackward0 nodes over ViewAsRealBackward0). In-place writes
through these views rewrite history as for any view (ops/views.py, Note [Views across
dtypes]).
"""

from __future__ import annotations

import math

from ...runtime import dtype as dtypes
from ..checks import kernel_not_implemented, scalar_type_name, tensor_arg
from ..dispatch import Primitive, apply, meta, zeros
from ..registry import OpInfo, with_inplace
from ..tensor import Tensor
from .elementwise import _result, check_out_dtype

__all__ = ["angle", "complex", "conj", "conj_physical", "imag", "polar",
           "real", "sgn", "view_as_complex", "view_as_real"]


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

    @staticmethod
    def complex_jvp(ctx, k, primals, tangents, out):
        return k.conj(tangents[0])


class ViewAsRealBackward0(Primitive):
    """Complex ``z`` as a real view with a last dimension of 2 (real, imaginary): the same
    memory, the offset and strides doubled; its gradient, the contiguous real gradient seen as
    complex (already dL/dx + i dL/dy: Note [Complex autograd]). ``ViewAsComplexBackward0`` is
    the same with the two views swapped."""

    __slots__ = ()
    op_name, inverse = "view_as_real", "view_as_complex"

    @staticmethod
    def forward(ctx, k, z):
        return k.view_as_real(z)

    @staticmethod
    def vjp(ctx, k, saved, g):
        return getattr(k, ctx.inverse)(k.contiguous(g))

    complex_vjp = vjp

    @staticmethod
    def complex_jvp(ctx, k, primals, tangents, out):  # (the same view of the tangent)
        return getattr(k, ctx.op_name)(k.contiguous(tangents[0]))


ViewAsComplexBackward0 = ViewAsRealBackward0.variant(
    "ViewAsComplexBackward0", "view_as_complex", inverse="view_as_real",
    forward=staticmethod(lambda ctx, k, x: k.view_as_complex(x)))


def _views():
    # (views imports traced, which imports this module: so views is reached at call time)
    from . import views
    return views


def conj(input: Tensor) -> Tensor:
    """The complex conjugate, elementwise; a real tensor is its own conjugate: ``input``
    itself, as PyTorch returns it (so ``x.mH`` of a real ``x`` is a view).

    Example:
        >>> tg.tensor([1 + 2j]).conj()
        tensor([1.-2.j])
    """
    input = tensor_arg(input, "conj")
    if not input._dtype.is_complex:
        return input
    return apply(ConjBackward0, (input,))


# (conj is eager here, so conj_physical is the same computation, under PyTorch's node name)
ConjPhysicalBackward0 = ConjBackward0.variant("ConjPhysicalBackward0", "conj_physical")


def conj_physical(input: Tensor, *, out=None) -> Tensor:
    """The complex conjugate, computed (never a lazy view; tritongrad's ``conj`` is not one
    either); a real tensor is returned itself, as PyTorch does.

    Example:
        >>> tg.conj_physical(tg.tensor([1 + 2j]))
        tensor([1.-2.j])
    """
    input = tensor_arg(input, "conj_physical")
    if out is not None:
        check_out_dtype(out, input._dtype)
        return _result(apply(ConjPhysicalBackward0, (input,)) if input._dtype.is_complex
                       else input, out, "conj_physical")
    if not input._dtype.is_complex:
        return input
    return apply(ConjPhysicalBackward0, (input,))


def real(input: Tensor) -> Tensor:
    """The real part (``Tensor.real``) of a complex tensor, a view of its memory (float32 of
    complex64, float64 of complex128): as PyTorch's, ``view_as_real(input)[..., 0]``, so
    writes into it change ``input``. A real tensor's real part is the tensor itself."""
    input = tensor_arg(input, "real")
    if not input._dtype.is_complex:
        return input
    from .shape import select
    return select(view_as_real(input), -1, 0)


def imag(input: Tensor) -> Tensor:
    """The imaginary part (``Tensor.imag``), a view of ``input``'s memory
    (``view_as_real(input)[..., 1]``); PyTorch refuses real tensors, and so does this."""
    input = tensor_arg(input, "imag")
    if not input.is_complex():
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    from .shape import select
    return select(view_as_real(input), -1, 1)


def set_real(self: Tensor, value) -> None:
    """``self.real = value``: ``value`` (a tensor or a number, broadcast) copied into the real
    part, in place, as PyTorch's setter (``self.real.copy_(value)``)."""
    _set_part(real(self), value)


def set_imag(self: Tensor, value) -> None:
    """``self.imag = value``: ``value`` copied into the imaginary part, in place; a real
    ``self`` is refused, as by ``imag``."""
    _set_part(imag(self), value)


def _set_part(part: Tensor, value) -> None:
    if not isinstance(value, Tensor):
        from .creation import full
        value = full((), value, dtype=part.dtype, device=part.device)
    part.copy_(value)


def view_as_real(input: Tensor) -> Tensor:
    """A view of complex ``input`` as a real tensor with a last dimension of 2 (real,
    imaginary): float32 of complex64, float64 of complex128, the same memory."""
    input = tensor_arg(input, "view_as_real")
    if not input.is_complex():
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return _views()._view_apply(ViewAsRealBackward0, input)


def view_as_complex(input: Tensor) -> Tensor:
    """A view of real ``input`` as a complex tensor, its last dimension (of size 2, stride 1)
    holding real and imaginary parts: complex64 of float32, complex128 of float64, the same
    memory. The other strides and the storage offset must be even (PyTorch's rules)."""
    input = tensor_arg(input, "view_as_complex")
    dt = input._dtype
    if dt not in (dtypes.float32, dtypes.float64, dtypes.float16):
        raise RuntimeError(f"view_as_complex is only supported for half, float and double "
                           f"tensors, but got a tensor of scalar type: "
                           f"{dtypes.CPP_NAMES[dt.name]}")
    if dt is dtypes.float16:
        raise NotImplementedError("view_as_complex: float16 tensors would view as complex32 "
                                  "(chalf), which tritongrad does not have; use float32")
    if input.ndim == 0:
        raise RuntimeError("Input tensor must have one or more dimensions")
    if input.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    strides = input.stride()
    if strides[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(st % 2 for st in strides[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if input.storage_offset() % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    return _views()._view_apply(ViewAsComplexBackward0, input)


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

    @staticmethod
    def complex_jvp(ctx, k, primals, tangents, out):
        # d angle = Im(conj(z) dz) / |z|^2, 0 at z = 0 (the gradient's direction, as above)
        z, t = primals[0], tangents[0]
        if not meta(z)[1].is_complex:
            return zeros(k, tuple(out.shape), out)
        sq = k.real(k.mul(z, k.conj(z)))
        zero = k.eq(sq, 0)
        return k.where(zero, 0.0, k.div(k.imag(k.mul(k.conj(z), t)), k.where(zero, 1.0, sq)))

    jvp = complex_jvp  # (a real input: the zero tangent above)


def angle(input: Tensor, *, out=None) -> Tensor:
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
    return _result(apply(AngleBackward0, (input,)), out, "angle")


def sgn(input: Tensor, *, out=None) -> Tensor:
    """``input / input.abs()`` for complex values (0 where the value is 0), ``sign`` for real
    ones."""
    input = tensor_arg(input, "sgn")
    if out is not None:
        check_out_dtype(out, input._dtype)
        return _result(sgn(input), out, "sgn")
    if not input.is_complex():
        return input.sign()
    a = input.abs()
    zero = a == 0
    # (the denominator is 1 where |z| = 0, so no 0/0 reaches the gradient of the masked branch)
    q = input / a.masked_fill(zero, 1.0).to(input.dtype)
    return q.masked_fill(zero, 0)


def _check_parts(op: str, a: Tensor, b: Tensor) -> None:
    """``complex``'s and ``polar``'s dtype rules: both parts of one floating dtype (PyTorch
    checks that each is floating before that they agree: complex(float64, complex128) names
    both dtypes)."""
    floats = (dtypes.float32, dtypes.float64, dtypes.float16)
    if a.dtype not in floats or b.dtype not in floats:
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{scalar_type_name(a.dtype)} and {scalar_type_name(b.dtype)}")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"Expected object of scalar type {scalar_type_name(a.dtype)} but got "
                           f"scalar type {scalar_type_name(b.dtype)} for second argument")
    if op == "polar" and a.dtype is dtypes.float16:  # (complex32 has no polar kernel)
        raise kernel_not_implemented(f"polar_{a.device.type}", a.dtype)


def _parts_out(result: Tensor, out, op: str) -> Tensor:
    """``result`` of ``complex``/``polar``, or written into ``out=``, which must have its
    dtype (PyTorch's check, before the out= rules of ``_result``)."""
    if out is not None and isinstance(out, Tensor) and out.dtype is not result.dtype:
        raise RuntimeError(f"Expected object of scalar type {scalar_type_name(result.dtype)} "
                           f"but got scalar type {scalar_type_name(out.dtype)} for argument "
                           f"'out'")
    return _result(result, out, op)


def complex(real: Tensor, imag: Tensor, *, out=None) -> Tensor:  # noqa: A001 - PyTorch's
    """The complex tensor ``real + i imag`` (complex64 of float32 parts, complex128 of float64
    ones; the parts broadcast), or written into ``out``, of that dtype.

    Example:
        >>> tg.complex(tg.tensor([1.0]), tg.tensor([2.0]))
        tensor([1.+2.j])
    """
    real, imag = tensor_arg(real, "complex", "real"), tensor_arg(imag, "complex", "imag")
    _check_parts("complex", real, imag)
    return _parts_out(_complex(real, imag), out, "complex")


def _complex(real: Tensor, imag: Tensor) -> Tensor:
    if real.dtype is dtypes.float16:  # (no complex32 here: as real + i imag, complex64)
        return real + imag * 1j
    # the parts placed side by side, not real + imag * 1j: inf * 1j is nan + inf j, so
    # complex(1, inf) came out nan + inf j (and complex(inf, nan) nan + nan j)
    from .shape import stack
    from .statistics import broadcast_tensors
    real, imag = broadcast_tensors(real, imag)
    return view_as_complex(stack((real, imag), -1))


def polar(abs: Tensor, angle: Tensor, *, out=None) -> Tensor:  # noqa: A002 - PyTorch's names
    """The complex tensor with modulus ``abs`` and argument ``angle``:
    ``abs * (cos(angle) + i sin(angle))``; both float32 or both float64 (``out``: of the
    result's complex dtype)."""
    abs, angle = tensor_arg(abs, "polar", "abs"), tensor_arg(angle, "polar", "angle")
    _check_parts("polar", abs, angle)
    return _parts_out(_complex(abs * angle.cos(), abs * angle.sin()), out, "polar")


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
    OpInfo("conj", conj, node=ConjBackward0, grad="conj(g)", jvp=False),
    # (its own row for its in-place form: PyTorch has conj_physical_, not conj_)
    OpInfo("conj_physical", conj_physical, node=ConjPhysicalBackward0, grad="conj(g)",
           jvp=False),
    # (no forward-mode AD of complex tensors: Note [Complex autograd])
    OpInfo("real", real, method=False, grad="composite: view_as_real(z)[..., 0]", jvp=False),
    OpInfo("imag", imag, method=False, grad="composite: view_as_real(z)[..., 1]", jvp=False),
    OpInfo("view_as_real", view_as_real, method=False, node=ViewAsRealBackward0,
           grad="view_as_complex(g)", jvp=False),
    OpInfo("view_as_complex", view_as_complex, method=False, node=ViewAsComplexBackward0,
           grad="view_as_real(g)", jvp=False, autocast="float32 on cpu"),
    OpInfo("angle", angle, node=AngleBackward0, grad="g i z / |z|^2 (0 at 0); real: 0",
           jvp=False),
    OpInfo("sgn", sgn, grad="composite: z / |z|", jvp=False),
    OpInfo("complex", complex, method=False, grad="composite: Re g, Im g", jvp=False),
    OpInfo("polar", polar, method=False, grad="composite", jvp=False,
           autocast="float32 on cpu"),
    OpInfo("resolve_conj", resolve_conj, dtypes="all", grad="g"),
    OpInfo("resolve_neg", resolve_neg, dtypes="all", grad="g"),
    OpInfo("is_conj", is_conj, dtypes="all; Python bool", grad="none"),
    OpInfo("is_neg", is_neg, dtypes="all; Python bool", grad="none"),
)
OPS = with_inplace(OPS, ("sgn", "conj_physical"))
