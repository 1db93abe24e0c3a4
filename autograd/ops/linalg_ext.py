"""Norms and products composed of the matrix primitives: ``norm``, ``outer``/``ger``,
``addmm``, ``addmv``, ``baddbmm``, and the functions of ``tritongrad.linalg``
(``vector_norm``, ``matrix_norm``, ``norm``, ``vecdot``).

A vector norm is one ``LinalgVectorNormBackward0`` node, as in PyTorch: its forward reduces
the contract's ``abs``/``pow``/``sum``/``amax``, its rule is PyTorch's
``linalg_vector_norm_backward``, whose one singular point is the gradient at zero
(``x / ||x||`` is 0/0): PyTorch takes the subgradient 0, and so does :func:`_norm_grad`. The
matrix norms reduce ``abs``/``sum``/``amax`` and vector norms; the products call
``bmm``/``matmul`` and scale and add, except ``addmm``, one ``AddmmBackward0`` node
(linalg.py) as in PyTorch. Nothing here has a kernel of its own.

``nuc`` and the spectral norms (``ord=2``, ``-2`` of a matrix) reduce ``linalg.svdvals``
(decompositions.py, a host kernel). The norms of empty matrices are 0 where PyTorch's are
(``_amax0``); ``out=`` follows PyTorch's dtype rules for each function.
"""

from __future__ import annotations

import math
import numbers

from ...runtime import dtype as dtypes
from ..autocast import autocast_op
from ..checks import scalar_type_name, tensor_arg
from ..dispatch import Primitive, apply, check_inplace, meta, zeros
from ..observe import observed_op
from ..registry import OpInfo
from ..tensor import Tensor, wrap_dim
from .composite import write_result
from .creation import as_dtype, ones
from .elementwise import _result, add, mul, ne, where
from .linalg import AddmmBackward0, addmm_node, bmm, matmul, scaled_weights
from .pointwise import abs
from .reduction import _expand_back, _ties_backward, amax, amin, reduce_dims, sum

# -- vector and matrix norms ----------------------------------------------------------------------


def _norm_dtype(x: Tensor, dtype, op: str):
    """The dtype a norm of ``x`` computes in: ``dtype`` where given (floating or complex, never
    narrowing ``x``'s), else ``x``'s own, which must be floating or complex."""
    tensor_arg(x, op, "A" if "matrix" in op else "x")
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. "
                           f"Got {scalar_type_name(x.dtype)}")
    if dtype is None:
        return x.dtype
    dt = as_dtype(dtype)
    if not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError(f"{op}: dtype should be floating point or complex, but got "
                           f"{scalar_type_name(dt)}")
    if dt.is_complex != x.dtype.is_complex:
        raise RuntimeError(f"{op}: dtype should be {'complex' if x.dtype.is_complex else 'real'}"
                           f" for {'complex' if x.dtype.is_complex else 'real'} inputs, but got "
                           f"{scalar_type_name(dt)}")
    if dt.itemsize < x.dtype.itemsize:
        raise RuntimeError(f"{op}: the dtype of the input ({scalar_type_name(x.dtype)}) should "
                           f"be convertible without narrowing to the specified dtype "
                           f"({scalar_type_name(dt)})")
    return dt


def _float_input(x: Tensor, dtype, op: str) -> Tensor:
    """``x`` checked to be floating (or complex) and cast to ``dtype`` where given."""
    dt = _norm_dtype(x, dtype, op)
    return x if x.dtype is dt else x.to(dt)


def _is_half(dt) -> bool:
    return dt.is_floating_point and dt.itemsize == 2


def _norm(k, x, p, dims, keepdim):
    """``sum(|x|^p)^(1/p)`` over ``dims`` (max, min of ``|x|`` for p = +-inf) on arrays."""
    if p == math.inf or p == -math.inf:
        return k.reduce("amax" if p > 0 else "amin", k.unary("abs", x), dims, keepdim)
    dt = meta(x)[1]
    if _is_half(dt):
        # float16/bfloat16: powers and sums in float32 (PyTorch's opmath type), rounded once at
        # the end; in half, |x|^2 overflows from |x| = 256 and p = 0.5 drifts (19 for 18.98)
        return k.astype(_norm(k, k.astype(x, dtypes.float32), p, dims, keepdim), dt)
    if p == 0:  # the count of nonzero elements
        return k.sum(k.astype(k.ne(x, 0), dt.to_real()), dims, keepdim)
    if p == 1:
        return k.sum(k.unary("abs", x), dims, keepdim)
    if p == 2:  # (|x|^2 of a complex x is x conj(x), real)
        sq = k.real(k.mul(x, k.conj(x))) if dt.is_complex else k.mul(x, x)
        return k.sqrt(k.sum(sq, dims, keepdim))
    return k.pow(k.sum(k.pow(k.unary("abs", x), p), dims, keepdim), 1.0 / p)


def _sgn(k, x, a):
    """sign(x), or x / |x| (0 at 0) for complex x; ``a`` is |x|."""
    if not meta(x)[1].is_complex:
        return k.unary("sign", x)
    zero = k.eq(a, 0)
    return k.where(zero, 0, k.div(x, k.astype(k.where(zero, 1, a), meta(x)[1])))


def _times(k, x, s):
    """x * s for a real ``s`` (cast to complex ``x``'s dtype first)."""
    dt = meta(x)[1]
    return k.mul(x, k.astype(s, dt) if dt.is_complex else s)


def _norm_grad(ctx, k, x, y, g):
    """PyTorch's ``linalg_vector_norm_backward``: the gradient of the norm ``y`` of ``x``.
    Where the norm is 0 it is 0 (the subgradient PyTorch takes); the masked operands are made
    safe (1 for 0) before dividing, so that second derivatives stay finite there."""
    p, dims, keepdim, shape = ctx.ord, ctx.dims, ctx.keepdim, tuple(x.shape)
    a = k.unary("abs", x)
    if p == math.inf or p == -math.inf:  # shared evenly among the tied extremes
        return _times(k, _sgn(k, x, a), _ties_backward(k, g, a, y, dims, keepdim))
    ge = _expand_back(k, g, shape, dims, keepdim)
    if p == 1:
        return _times(k, _sgn(k, x, a), ge)
    ye = _expand_back(k, y, shape, dims, keepdim)
    if p < 1:  # |x|^(p - 1) g y^(1 - p), 0 where x is 0
        zero = k.eq(a, 0)
        scaled = k.where(zero, 0, k.pow(k.where(zero, 1, a), p - 1))
        return _times(k, _sgn(k, x, a), k.mul(scaled, k.mul(ge, k.pow(ye, 1 - p))))
    zero = k.eq(ye, 0)
    safe = k.where(zero, 1, ye)
    scale = k.where(zero, 0, k.div(ge, safe if p == 2 else k.pow(safe, p - 1)))
    if p == 2:
        return _times(k, x, scale)
    if p < 2:
        return _times(k, _sgn(k, x, a), k.mul(k.pow(a, p - 1), scale))
    return _times(k, x, k.mul(k.pow(a, p - 2), scale))


class LinalgVectorNormBackward0(Primitive):
    """The vector ``ord``-norm over ``dims`` (``ord`` 0: the count of nonzeros, which has no
    gradient), of ``x`` cast to ``dtype`` where given."""

    __slots__ = ()
    op_name = "linalg_vector_norm"
    save_inputs = (0,)
    save_output = True

    @staticmethod
    def forward(ctx, k, x, ord, dims, keepdim, dtype):
        ctx.ord, ctx.dims, ctx.keepdim, ctx.dtype = ord, dims, keepdim, dtype
        return _norm(k, x if dtype is None else k.astype(x, dtype), ord, dims, keepdim)

    @staticmethod
    def vjp(ctx, k, saved, g):
        if ctx.ord == 0:  # a count: no gradient (None, as PyTorch's: .grad stays None)
            return None
        x, y = saved
        dt = meta(x)[1]
        work = ctx.dtype or dt  # the forward's dtype (float32 for half, as the forward's math)
        if _is_half(work) and ctx.ord not in (math.inf, -math.inf):
            work = dtypes.float32
        if work is dt:
            return _norm_grad(ctx, k, x, y, g)
        real = work.to_real()  # (the norm and its gradient are real)
        return k.astype(_norm_grad(ctx, k, k.astype(x, work), k.astype(y, real),
                                   k.astype(g, real)), dt)

    complex_vjp = vjp  # (written with sgn(x) = x / |x|: PyTorch's rule for complex x too)

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, *params):
        # the rule is linear in g: its value at g = 1 is the norm's derivative per element
        # (for complex x, dL/dRe x + i dL/dIm x: Note [Complex autograd]), so the tangent is
        # sum(w t), or sum(Re(conj(w) t)) for complex x
        x, = primals
        if ctx.ord == 0:
            return zeros(k, tuple(out.shape), out)
        dev, dt = meta(out)
        ones = k.full(tuple(out.shape), 1, dt, dev)
        w = LinalgVectorNormBackward0.vjp(ctx, k, (x, out), ones)
        t = tangents[0]
        prod = (k.real(k.mul(k.conj(w), t)) if meta(w)[1].is_complex else k.mul(w, t))
        return k.sum(prod, ctx.dims, ctx.keepdim)

    complex_jvp = jvp


def _c10(dt) -> str:
    from .decompositions import _c10 as name
    return name(dt)


def _out(r: Tensor, out, op: str, kernel: str, cast: bool = False) -> Tensor:
    """``_result`` with PyTorch's name of the node in the out= autograd refusal; ``out`` must
    have the result's dtype unless ``cast``."""
    if out is None:  # (before the import: addmm, dot and mv pass here on every call)
        return r
    from .decompositions import _exact
    return _exact(r, out, op, kernel, cast)


def _norm_out_dtype(r: Tensor, out, op: str) -> None:
    if isinstance(out, Tensor) and out.dtype is not r.dtype:
        raise RuntimeError(f"{op} expected out tensor dtype {scalar_type_name(r.dtype)} but "
                           f"got: {scalar_type_name(out.dtype)}")


def _amax0(x: Tensor, dim, keepdim: bool = False) -> Tensor:
    """``amax`` of values that are never negative (absolute values, sums of them, singular
    values): 0 over an empty dim, as PyTorch's norms give, where ``amax`` has no identity."""
    if x.shape[dim] == 0:
        return sum(x, dim, keepdim)
    return amax(x, dim, keepdim)


def vector_norm(x: Tensor, ord=2, dim=None, keepdim: bool = False, *, dtype=None,
                out=None) -> Tensor:
    """Computes a vector norm of ``x`` over ``dim`` (all elements by default):
    ``sum(|x|^ord)^(1/ord)``; ``ord=inf`` is ``max(|x|)``, ``-inf`` is ``min(|x|)`` and ``0``
    the number of non-zero elements. ``dtype`` casts ``x`` first (never narrowing). One
    ``LinalgVectorNormBackward0`` node, whose gradient is 0 where the norm is 0.

    Example:
        >>> tg.linalg.vector_norm(tg.tensor([3., -4.]))
        tensor(5.)
    """
    if isinstance(ord, bool) or not isinstance(ord, numbers.Real):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' (position 2) must be Number, "
                        f"not {type(ord).__name__}")
    op = "linalg.vector_norm"
    dt = _norm_dtype(x, dtype, op)
    dims = reduce_dims(x, dim, op)
    empty = any(x.shape[d] == 0 for d in dims) or (not dims and x.numel() == 0)
    if empty and (ord < 0 or ord == math.inf):  # max and min have no identity
        raise RuntimeError(f"{op} cannot compute the {ord:g} norm on an empty tensor "
                           f"because the operation does not have an identity")
    keepdim = bool(keepdim)
    # (the cast to ``dtype`` is the node's, as PyTorch's: no ToCopyBackward0 before it)
    r = apply(LinalgVectorNormBackward0, (x,), ord, dims, keepdim,
              None if dt is x.dtype else dt)
    if out is not None and out.dtype is not r.dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {_c10(r.dtype)}, but got "
                           f"{_c10(out.dtype)} instead")
    return _out(r, out, op, "linalg_vector_norm")


def _matrix_dims(A: Tensor, dim, op: str) -> tuple:
    try:
        dims = tuple(dim)
    except TypeError:
        dims = (dim,)
    if len(dims) != 2:
        raise RuntimeError(f"{op}: dim must be a 2-tuple. Got {' '.join(map(str, dims))}")
    d0, d1 = (wrap_dim(d, A.ndim, op) for d in dims)
    if d0 == d1:
        raise RuntimeError(f"{op}: dims must be different. Got ({d0}, {d1})")
    return d0, d1


def matrix_norm(input: Tensor, ord="fro", dim=(-2, -1), keepdim: bool = False, *,
                dtype=None, out=None) -> Tensor:
    """The matrix norm of the matrices in the dims ``dim`` of ``A``: ``"fro"`` (Frobenius),
    ``1``/``-1`` (largest/smallest column sum of ``|A|``) or ``inf``/``-inf`` (largest/
    smallest row sum), ``"nuc"`` (the sum of the singular values) or ``2``/``-2`` (the
    largest/smallest singular value; these three through ``svdvals``, a host kernel).

    Example:
        >>> tg.linalg.matrix_norm(tg.tensor([[1., -2.], [3., 4.]]), 1)
        tensor(6.)
    """
    A = input
    op = "linalg.matrix_norm"
    if out is not None:
        r = matrix_norm(A, ord, dim, keepdim, dtype=dtype)
        _norm_out_dtype(r, out, op)
        from .decompositions import _composite_out  # (PyTorch's: out.copy_(r), recorded)
        return _composite_out(r, out, op) if r.requires_grad else \
            _out(r, out, op, "linalg_vector_norm")
    tensor_arg(A, op, "input")
    if A.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    half = _is_half(A.dtype)
    A = _float_input(A, dtype, op)
    d0, d1 = _matrix_dims(A, dim, op)
    if half and (ord in ("nuc", 2, -2) and not isinstance(ord, bool)):  # (svdvals' dtypes)
        raise RuntimeError(f"{op}: Low precision dtypes not supported. Got "
                           f"{scalar_type_name(input.dtype)}")
    if isinstance(ord, str):
        if ord == "fro":
            return vector_norm(A, 2, (d0, d1), keepdim)
        if ord == "nuc":
            return _singular_value_norm(A, sum, d0, d1, keepdim)
    elif ord in (2, -2) and not isinstance(ord, bool):
        return _singular_value_norm(A, amax if ord > 0 else amin, d0, d1, keepdim)
    if isinstance(ord, bool) or ord not in (1, -1, math.inf, -math.inf):
        raise RuntimeError(f"{op}: Order {ord} not supported.")
    # ord 1 sums each column (over the row dim d0) and takes the extreme over the columns;
    # ord inf sums each row
    summed, across = (d0, d1) if ord in (1, -1) else (d1, d0)
    extreme = _amax0 if ord > 0 else amin
    r = extreme(sum(abs(A), summed, True), across, True)
    return r if keepdim else r.squeeze((d0, d1))


def _singular_value_norm(A: Tensor, reduce, d0: int, d1: int, keepdim: bool) -> Tensor:
    """``reduce`` (sum, amax or amin) over the singular values of the matrices in dims d0, d1
    of ``A``."""
    from .decompositions import svdvals
    r = (_amax0 if reduce is amax else reduce)(svdvals(A.movedim((d0, d1), (-2, -1))), -1)
    if keepdim:
        for d in sorted((d0, d1)):
            r = r.unsqueeze(d)
    return r


def linalg_norm(input: Tensor, ord=None, dim=None, keepdim: bool = False, *, dtype=None,
                out=None) -> Tensor:
    """``tritongrad.linalg.norm``: a vector norm when ``dim`` is an int or a 1-tuple (or
    ``A`` is 1-D), a matrix norm when ``dim`` is a 2-tuple (or ``A`` is 2-D); with neither
    ``ord`` nor ``dim``, the 2-norm of all elements.

    Example:
        >>> tg.linalg.norm(tg.tensor([[1., 2.], [2., 4.]]))
        tensor(5.)
    """
    A = input
    op = "linalg.norm"
    if out is not None:
        r = linalg_norm(A, ord, dim, keepdim, dtype=dtype)
        _norm_out_dtype(r, out, op)
        from .decompositions import _composite_out  # (PyTorch's: out.copy_(r), recorded)
        return _composite_out(r, out, op) if r.requires_grad else \
            _out(r, out, op, "linalg_vector_norm")
    tensor_arg(A, op, "input")
    dims = None
    if dim is not None:
        dims = (dim,) if isinstance(dim, numbers.Integral) else tuple(dim)
        if len(dims) not in (1, 2):
            raise RuntimeError(f"{op}: If dim is specified, it must be of length 1 or 2. Got "
                               f"{list(dims)}")
    elif ord is not None and A.ndim not in (1, 2):
        raise RuntimeError(f"{op}: If dim is not specified but ord is, the input must be 1D or "
                           f"2D. Got {A.ndim}D.")
    # PyTorch's dispatch: a string ord is always a matrix norm (over dims 0, 1 without dim:
    # a 1-D input is refused by matrix_norm), a number one when dim has 2 entries (or the
    # input 2, without dim), else the vector norm (ord None over 2 dims included)
    if isinstance(ord, str):
        return matrix_norm(A, ord, (0, 1) if dims is None else dims, keepdim, dtype=dtype)
    if ord is not None and (len(dims) == 2 if dims is not None else A.ndim == 2):
        return matrix_norm(A, ord, (-2, -1) if dims is None else dims, keepdim, dtype=dtype)
    return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)


def norm(input: Tensor, p="fro", dim=None, keepdim: bool = False, dtype=None) -> Tensor:
    """The norm of ``input`` (PyTorch's older interface; new code uses
    ``tritongrad.linalg``): ``p="fro"`` over at most two dims is the 2-norm of those elements,
    another string is a matrix norm over ``dim`` (a 2-tuple), a number ``p`` is the vector
    p-norm over ``dim`` (all elements by default).

    Example:
        >>> tg.tensor([[3., 0.], [0., 4.]]).norm()
        tensor(5.)
    """
    tensor_arg(input, "norm")
    dims = (dim,) if isinstance(dim, numbers.Integral) else dim
    if isinstance(p, str):
        if p == "fro" and (dims is None or len(dims) <= 2):
            return vector_norm(input, 2, dims, keepdim, dtype=dtype)
        return matrix_norm(input, p, tuple(range(input.ndim)) if dims is None else dims,
                           keepdim, dtype=dtype)
    return vector_norm(input, 2 if p is None else p, dims, keepdim, dtype=dtype)


@autocast_op("lower")
def vecdot(x: Tensor, y: Tensor, *, dim: int = -1, out=None) -> Tensor:
    """The dot products of the vectors along ``dim`` of ``x`` and ``y`` (broadcasting the
    other dims). Both must have the same dtype.

    Example:
        >>> tg.linalg.vecdot(tg.tensor([[1., 2.], [3., 4.]]), tg.tensor([1., 1.]))
        tensor([3., 7.])
    """
    op = "linalg.vecdot"
    tensor_arg(x, op, "x")
    tensor_arg(y, op, "y")
    if not (x.dtype.is_floating_point or x.dtype.is_complex):  # (then y's: the same dtype)
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. "
                           f"Got {scalar_type_name(x.dtype)}")
    if x.dtype is not y.dtype:
        raise RuntimeError(f"{op}: Expected x and y to have the same dtype, but found x of type "
                           f"{scalar_type_name(x.dtype)} and y of type "
                           f"{scalar_type_name(y.dtype)} instead")
    if out is not None and out.dtype is not x.dtype:
        raise RuntimeError(f"{op}: Expected out of dtype{scalar_type_name(x.dtype)} but found "
                           f"{scalar_type_name(out.dtype)}")
    # (x's conjugate: PyTorch's vecdot is sum(conj(x) y), the inner product of C^n)
    return _out(sum(mul(x.conj() if x.dtype.is_complex else x, y), dim), out, op, "sum")


# -- products -------------------------------------------------------------------------------------

def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """The outer product of two 1-D tensors: ``out[i, j] = input[i] * vec2[j]`` (dtypes
    promote).

    Example:
        >>> tg.outer(tg.tensor([1., 2.]), tg.tensor([1., 10., 100.])).tolist()
        [[1.0, 10.0, 100.0], [2.0, 20.0, 200.0]]
    """
    for t, name in ((input, "self"), (vec2, "vec2")):
        tensor_arg(t, "outer", name)
        if t.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {t.ndim}-D")
    return mul(input.unsqueeze(1), vec2)


def _same_dtype(a: Tensor, b: Tensor, op: str) -> None:
    if a.dtype is not b.dtype:
        raise RuntimeError(f"{op}: expected both operands to have the same dtype, but found "
                           f"{scalar_type_name(a.dtype)} and {scalar_type_name(b.dtype)}")


def dot(input: Tensor, tensor: Tensor, *, out=None) -> Tensor:
    """The dot product of two 1-D tensors of the same length and dtype (a 0-d tensor); no
    complex conjugation (``vdot`` conjugates the first).

    Example:
        >>> tg.dot(tg.tensor([2., 3.]), tg.tensor([2., 1.])).item()
        7.0
    """
    tensor_arg(input, "dot")
    tensor_arg(tensor, "dot", "tensor")
    if input.ndim != 1 or tensor.ndim != 1:
        raise RuntimeError(f"dot: 1D tensors expected, but got {input.ndim}D and "
                           f"{tensor.ndim}D tensors")
    if input.shape[0] != tensor.shape[0]:
        raise RuntimeError(f"dot: inconsistent tensor size, expected tensor [{input.shape[0]}] "
                           f"and src [{tensor.shape[0]}] to have the same number of elements, "
                           f"but got {input.shape[0]} and {tensor.shape[0]} elements "
                           f"respectively")
    _same_dtype(input, tensor, "dot")
    return _out(matmul(input, tensor), out, "dot", "dot")


def vdot(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """``dot(conj(input), other)``: the dot product of complex vectors; ``dot`` for real."""
    tensor_arg(input, "vdot")
    return _out(dot(input.conj() if input.dtype.is_complex else input, other), out, "vdot",
                "vdot")


def mv(input: Tensor, vec: Tensor, *, out=None) -> Tensor:
    """The product of the matrix ``input`` (n, m) and the vector ``vec`` (m,): shape (n,)."""
    tensor_arg(input, "mv")
    tensor_arg(vec, "mv", "vec")
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"mv: vector + matrix @ vector expected, got {input.ndim}, "
                           f"{vec.ndim}")
    if input.shape[1] != vec.shape[0]:
        raise RuntimeError(f"mv: size mismatch, got input ({input.shape[0]}), mat "
                           f"({input.shape[0]}x{input.shape[1]}), vec ({vec.shape[0]})")
    _same_dtype(input, vec, "mv")
    return _out(matmul(input, vec), out, "mv", "mv")


def inner(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """The dot product over the last dimension of both (a scalar times a tensor when one is
    0-d): shape input.shape[:-1] + other.shape[:-1]."""
    tensor_arg(input, "inner")
    tensor_arg(other, "inner", "other")
    if input.ndim == 0 or other.ndim == 0:
        return _out(input * other, out, "inner", "inner")
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but "
                           f"got shapes {list(input.shape)} and {list(other.shape)}")
    from .products import tensordot

    return _out(tensordot(input, other, ([input.ndim - 1], [other.ndim - 1])), out, "inner",
                "inner")


def matrix_power(input: Tensor, n: int, *, out=None) -> Tensor:
    """The square matrix (or batch) raised to the integer power ``n``: repeated squaring;
    ``n = 0`` the identity (still a function of ``input``: its gradient is 0, as PyTorch's),
    ``n < 0`` the inverse's power."""
    if out is not None:
        r = matrix_power(input, n)
        from .decompositions import _safe_cast
        _safe_cast(r, out, "matrix_power")  # (then out's dtype must be r's)
        return _out(r, out, "linalg.matrix_power", "matmul")
    tensor_arg(input, "matrix_power")
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise TypeError(f"linalg_matrix_power(): argument 'n' (position 2) must be int, not "
                        f"{type(n).__name__}")
    if input.ndim < 2:
        raise RuntimeError("linalg.matrix_power: The input tensor A must have at least 2 "
                           "dimensions.")
    if input.shape[-1] != input.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but "
                           f"they are {input.shape[-2] if input.ndim >= 2 else 0} by "
                           f"{input.shape[-1] if input.ndim else 0} matrices")
    n = int(n)
    if n == 0:
        from .creation import eye

        ident = eye(input.shape[-1], dtype=input.dtype, device=input.device).expand(
            tuple(input.shape))
        # (still a node of the graph, as PyTorch's, with a zero gradient: where's)
        from .elementwise import where
        return where(ident.ne(0) | ident.eq(0), ident, input)
    base = input
    if n < 0:
        from .decompositions import inverse

        base, n = inverse(input), -n
    result = None
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    # (the power 1 is a new tensor, as PyTorch's: a CloneBackward0, not the input itself)
    return result.clone() if result is input else result


def _scaled_sum(input: Tensor, product: Tensor, beta, alpha, op: str) -> Tensor:
    """``beta * input + alpha * product``, ``input`` broadcast to the product's shape. With
    ``beta = 0`` the input's values are ignored (NaN and inf in it do not propagate), as
    PyTorch specifies; an input that requires grad stays in the graph, its gradient zero (a
    ``where`` picking the product everywhere), as PyTorch's node gives it."""
    tensor_arg(input, op)
    if input.dtype is not product.dtype:
        raise RuntimeError(f"{op}: self and the product must have the same dtype, but got "
                           f"{scalar_type_name(input.dtype)} and "
                           f"{scalar_type_name(product.dtype)}")
    beta, alpha = scaled_weights(product.dtype, beta, alpha)
    shaped = input.expand(product.shape)
    if alpha != 1:
        product = mul(product, alpha)
    if beta == 0:
        if not shaped.requires_grad:
            return product
        return where(ones((), dtype=dtypes.bool, device=product.device), product, shaped)
    return add(shaped if beta == 1 else mul(shaped, beta), product)


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1, out=None) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)``: ``mat1`` (n, m), ``mat2`` (m, p), ``input``
    broadcastable to (n, p) (ignored when ``beta = 0``).

    Example:
        >>> tg.addmm(tg.ones(2, 2), tg.eye(2), tg.eye(2), beta=2).tolist()
        [[3.0, 2.0], [2.0, 3.0]]
    """
    tensor_arg(input, "addmm")
    if type(mat1) is not Tensor and mat1.layout is not dtypes.strided:  # sparse mat1
        prod = mat1.mm(mat2)
        prod = prod if alpha == 1 else prod * alpha
        return _result(prod if beta == 0 else prod + (input if beta == 1 else input * beta),
                       out, "addmm")
    return _out(addmm_node(input, mat1, mat2, beta, alpha), out, "addmm", "addmm")


def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta=1, alpha=1, out=None) -> Tensor:
    """``beta * input + alpha * (mat @ vec)``: ``mat`` (n, m), ``vec`` (m,), ``input``
    broadcastable to (n,) (ignored when ``beta = 0``)."""
    for t, name in ((mat, "mat"), (vec, "vec")):
        tensor_arg(t, "addmv", name)
    if mat.ndim != 2 or vec.ndim != 1 or mat.shape[1] != vec.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({'x'.join(map(str, input.shape))}), "
                           f"mat ({'x'.join(map(str, mat.shape))}), vec "
                           f"({'x'.join(map(str, vec.shape))})")
    r = _scaled_sum(input, matmul(mat, vec), beta, alpha, "addmv")
    return _out(r, out, "addmv", "addmv")


@observed_op("aten::baddbmm", seq_from_counter=True)  # (one op for profiles and flop counts)
def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1,
            out=None) -> Tensor:
    """``beta * input + alpha * bmm(batch1, batch2)``: ``batch1`` (b, n, m), ``batch2``
    (b, m, p), ``input`` broadcastable to (b, n, p) (ignored when ``beta = 0``)."""
    for t, name in ((batch1, "batch1"), (batch2, "batch2")):
        tensor_arg(t, "baddbmm", name)
        if t.ndim != 3:
            raise RuntimeError(f"{name} must be a 3D tensor")
    (b, _, m), (b2, m2, _) = batch1.shape, batch2.shape
    if (b2, m2) != (b, m):
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{b}, {m}] but got: [{b2}, {m2}].")
    r = _scaled_sum(input, bmm(batch1, batch2), beta, alpha, "baddbmm")
    return _out(r, out, "baddbmm", "baddbmm")


def _inplace_product(fn, op: str, self: Tensor, a: Tensor, b: Tensor, beta, alpha) -> Tensor:
    tensor_arg(self, op)  # (tg.addmv_ is this too, unguarded)
    # (autograd's errors, a leaf or a view of one that requires grad, before the kernel's)
    check_inplace(self, any(getattr(t, "requires_grad", False) for t in (self, a, b)))
    return write_result(self, fn(self, a, b, beta=beta, alpha=alpha), op)


def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta=1, alpha=1, out=None) -> Tensor:
    """``beta * input + alpha * outer(vec1, vec2)``."""
    product = outer(vec1, vec2)
    if not (product.dtype.is_floating_point or product.dtype.is_complex):
        for v, name in ((beta, "beta"), (alpha, "alpha")):
            if isinstance(v, float) or isinstance(v, complex):
                raise RuntimeError(f"For integral input tensors, argument {name} must not be a "
                                   f"floating point number.")
    dt = dtypes.promote_types(input.dtype, product.dtype)  # (all three, as PyTorch's)
    r = _scaled_sum(input.to(dt), product.to(dt), beta, alpha, "addr")
    return _out(r, out, "addr", "addr", cast=True)


def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1,
           out=None) -> Tensor:
    """``beta * input + alpha * sum_b batch1[b] @ batch2[b]``: a batch of products reduced."""
    tensor_arg(batch1, "addbmm", "batch1")
    tensor_arg(batch2, "addbmm", "batch2")
    if batch1.ndim != 3 or batch2.ndim != 3:
        raise RuntimeError(f"addbmm: batch1 and batch2 must be 3-D tensors, got "
                           f"{batch1.ndim}-D and {batch2.ndim}-D")
    r = _scaled_sum(input, bmm(batch1, batch2).sum(0), beta, alpha, "addbmm")
    return _out(r, out, "addbmm", "addbmm")


# The in-place forms, one each: their operands keep PyTorch's keyword names (mat1=, vec=, ...).
def addmm_(self: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """In-place :func:`addmm`."""
    return _inplace_product(addmm, "addmm_", self, mat1, mat2, beta, alpha)


def addr_(self: Tensor, vec1: Tensor, vec2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """In-place :func:`addr`."""
    return _inplace_product(addr, "addr_", self, vec1, vec2, beta, alpha)


def addbmm_(self: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """In-place :func:`addbmm`."""
    return _inplace_product(addbmm, "addbmm_", self, batch1, batch2, beta, alpha)


def addmv_(self: Tensor, mat: Tensor, vec: Tensor, *, beta=1, alpha=1) -> Tensor:
    """In-place :func:`addmv`."""
    return _inplace_product(addmv, "addmv_", self, mat, vec, beta, alpha)


def baddbmm_(self: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """In-place :func:`baddbmm`."""
    return _inplace_product(baddbmm, "baddbmm_", self, batch1, batch2, beta, alpha)


# -- the table ---------------------------------------------------------------------------------

# (no FLOP rule: the profiler's matmul rule reads the first two operands, which for these are
# the added input and mat1; the mm/bmm addmv and baddbmm call are counted, addmm's product not)
OPS = (
    OpInfo("norm", norm, dtypes="floats (dtype= casts)", grad="g x |x|^(p-2) / y^(p-1); 0 at 0",
           autocast="float32 on cuda", node=LinalgVectorNormBackward0, out="exact"),
    OpInfo("outer", outer, aliases=("ger",), dtypes="promoted", grad="g vec2, g^T input",
           out="cast"),
    OpInfo("inner", inner, dtypes="one dtype", grad="through tensordot", autocast="lower"),
    OpInfo("matrix_power", matrix_power, dtypes="floats (integers for n >= 0)",
           grad="through its products (and inverse)"),
    OpInfo("addr", addr, inplace=addr_, dtypes="promoted", grad="beta g, alpha g v2, "
           "alpha g^T v1", autocast="lower on cuda"),
    OpInfo("addbmm", addbmm, inplace=addbmm_, dtypes="one dtype",
           grad="beta g, alpha g b^T, alpha a^T g per batch", autocast="lower"),
    OpInfo("dot", dot, dtypes="one dtype", grad="g b, g a", flops="matmul"),
    OpInfo("vdot", vdot, dtypes="one dtype", grad="g conj(b), conj(g) a"),
    OpInfo("mv", mv, dtypes="one dtype", grad="g v^T, A^T g", flops="matmul",
           autocast="lower on cuda"),
    OpInfo("addmm", addmm, inplace=addmm_, dtypes="one dtype", grad="beta g, alpha g b^T, "
           "alpha a^T g", node=AddmmBackward0, flops="addmm", autocast="lower"),
    OpInfo("addmv", addmv, inplace=addmv_, dtypes="one dtype", grad="beta g, alpha g v^T, "
           "alpha A^T g", autocast="lower on cuda"),
    OpInfo("baddbmm", baddbmm, inplace=baddbmm_, dtypes="one dtype",
           grad="beta g, alpha g b^T, alpha a^T g per batch", flops="addmm", autocast="lower"),
)
