"""Discrete Fourier transforms (``torch.fft``), with derivatives; the public namespace is
tritongrad/fft.py.

As in PyTorch (aten/src/ATen/native/SpectralOps.cpp), every transform is built from three
primitives, each linear in its input:

    _fft_c2c(x, dims, mode, forward)     complex -> complex, either direction
    _fft_r2c(x, dims, mode, onesided)    real -> complex, forward; ``onesided`` keeps the
                                         n // 2 + 1 non-redundant bins of the last dim
    _fft_c2r(x, dims, mode, n)           onesided hermitian complex -> real (n points), inverse

``mode`` is the scaling, PyTorch's ``fft_norm_mode`` (kernels/numpy/fft.py): ``norm`` names
it per direction (``"backward"``: the inverse scales by 1/n, ``"forward"``: the forward
does, ``"ortho"``: both by 1/sqrt(n)). The rest is composition: ``n``/``s`` trim the input
(``narrow``) or pad it with zeros (``cat``), an inverse transform of a real input is the
conjugate of its forward one, ``hfft`` is ``irfft`` of the conjugate with the forward's
scaling. Real input to a complex transform keeps its precision (float32 -> complex64),
integers and bools take the default dtype first; half and bfloat16 are refused (PyTorch's
CPU refuses them too; under autocast they run in float32, PyTorch's policy for the FFTs).

Forwards run numpy.fft (kernels/numpy/fft.py) on the CPU's arrays; there are no Triton FFT
kernels, so a CUDA tensor takes the host round trip of the factorizations (decompositions.py:
``_host`` copies to the host on the current stream and waits for it, the result is copied
back up), and every transform synchronizes the host with the current stream on CUDA.

Derivative rules are PyTorch's (FunctionsManual.cpp), in the gradient convention of Note
[Complex autograd] (J^H g): c2c's is c2c the other way with the same scaling (the unscaled
DFT's adjoint is the unscaled inverse); r2c's is the real part of the inverse c2c of the
gradient zero-padded back to the full last dim (onesided); c2r's is the onesided r2c of the
gradient with the bins whose mirror images were dropped (1 .. n - (n // 2 + 1)) doubled.
Each rule calls the primitives, so the backward records under ``create_graph`` (second
derivatives). Forward mode: each transform is linear, so a tangent's is the same transform of
the input's tangent.
"""

from __future__ import annotations

import numpy as np

from ...kernels.numpy import fft as _np_fft
from ...runtime import dtype as dtypes
from ..autocast import autocast_op
from ..checks import scalar_type_name, tensor_arg, unsupported
from ..dispatch import Primitive, apply, linear_jvp
from ..tensor import Tensor, int_arg, wrap_dim
from .combinations import roll
from .complex_parts import conj, real
from .creation import _finish, as_dtype, host_to, resolve_device, tensor
from .decompositions import _host, _tensor_rule
from .elementwise import _result
from .shape import cat, narrow
from .views import int_tuple, is_size

__all__ = ["fft", "fft2", "fftfreq", "fftn", "fftshift", "hfft", "hfft2", "hfftn", "ifft",
           "ifft2", "ifftn", "ifftshift", "ihfft", "ihfft2", "ihfftn", "irfft", "irfft2",
           "irfftn", "rfft", "rfft2", "rfftfreq", "rfftn"]

# -- the primitives --------------------------------------------------------------------------------


class FftC2CBackward0(Primitive):
    """y = DFT of complex x over ``dims`` (``forward``: e^-i, else e^+i), scaled by ``mode``:
    dx = the same transform the other way, same scaling."""

    __slots__ = ()
    op_name = "_fft_c2c"

    @staticmethod
    def forward(ctx, k, x, dims, mode, forward):
        ctx.dims, ctx.mode, ctx.forward = dims, mode, forward
        return _host(_np_fft.c2c, (x,), dims, mode, forward)

    vjp = complex_vjp = _tensor_rule(
        lambda ctx, saved, g: _c2c(g, ctx.dims, ctx.mode, not ctx.forward))
    jvp = complex_jvp = linear_jvp()  # (a linear map: the same transform of the tangent)


class FftR2CBackward0(Primitive):
    """y = forward DFT of real x over ``dims`` (``onesided``: the last dim's n // 2 + 1 bins):
    dx = Re(inverse c2c of g, zero-padded back to n bins)."""

    __slots__ = ()
    op_name = "_fft_r2c"

    @staticmethod
    def forward(ctx, k, x, dims, mode, onesided):
        ctx.dims, ctx.mode, ctx.onesided, ctx.n = dims, mode, onesided, x.shape[dims[-1]]
        return _host(_np_fft.r2c, (x,), dims, mode, onesided)

    @staticmethod
    def _rule(ctx, saved, g):
        if ctx.onesided:
            g = _resize(g, ctx.dims[-1:], (ctx.n,))
        return real(_c2c(g, ctx.dims, ctx.mode, False))

    vjp = complex_vjp = _tensor_rule(_rule.__func__)
    jvp = complex_jvp = linear_jvp()


class FftC2RBackward0(Primitive):
    """y = real inverse DFT (``n`` points along the last of ``dims``) of the onesided hermitian
    x: dx = onesided r2c of g, the bins 1 .. n - (n // 2 + 1) doubled (each stands for itself
    and its dropped mirror image)."""

    __slots__ = ()
    op_name = "_fft_c2r"

    @staticmethod
    def forward(ctx, k, x, dims, mode, n):
        ctx.dims, ctx.mode = dims, mode
        return _host(_np_fft.c2r, (x,), dims, mode, n)

    @staticmethod
    def _rule(ctx, saved, g):
        gx = _r2c(g, ctx.dims, ctx.mode, True)
        d = ctx.dims[-1]
        doubled = g.shape[d] - gx.shape[d]
        if doubled <= 0:
            return gx
        w = np.ones(gx.shape[d])
        w[1:1 + doubled] = 2
        w = w.reshape((-1,) + (1,) * (gx.ndim - 1 - d))
        return gx * tensor(w, dtype=g.dtype, device=g.device)

    vjp = complex_vjp = _tensor_rule(_rule.__func__)
    jvp = complex_jvp = linear_jvp()


def _c2c(x: Tensor, dims: tuple, mode: int, forward: bool) -> Tensor:
    return apply(FftC2CBackward0, (x,), dims, mode, forward)


def _r2c(x: Tensor, dims: tuple, mode: int, onesided: bool) -> Tensor:
    return apply(FftR2CBackward0, (x,), dims, mode, onesided)


def _c2r(x: Tensor, dims: tuple, mode: int, n: int) -> Tensor:
    return apply(FftC2RBackward0, (x,), dims, mode, n)


# -- arguments -------------------------------------------------------------------------------------

def _mode(norm: str | None, forward: bool) -> int:
    """The scaling of a transform in direction ``forward`` under ``norm``."""
    if norm is None or norm == "backward":
        return _np_fft.NONE if forward else _np_fft.BY_N
    if norm == "forward":
        return _np_fft.BY_N if forward else _np_fft.NONE
    if norm == "ortho":
        return _np_fft.BY_ROOT_N
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


def _input(x, fname: str, *, real_only: bool = False, to_complex: bool = False) -> Tensor:
    """``x`` checked and promoted as PyTorch's FFTs promote: integers and bools to the default
    dtype, then (``to_complex``) to the complex dtype of that precision; half precision and
    (``real_only``) complex inputs are refused."""
    tensor_arg(x, f"fft_{fname}")
    dt = x.dtype
    if real_only and dt.is_complex:
        found = scalar_type_name(dt)
        if fname == "ihfftn":  # (PyTorch's words, then which function refused it)
            raise RuntimeError(f"Only supports floating-point dtypes, but found: {found} "
                               f"(ihfftn expects a real input tensor)")
        kind = "real-valued" if fname == "rfftn" else "real"  # (PyTorch's words differ)
        raise RuntimeError(f"{fname} expects a {kind} input tensor, but got {found}")
    if dt in (dtypes.float16, dtypes.bfloat16):
        raise RuntimeError(f"Unsupported dtype {scalar_type_name(dt)}")
    if not (dt.is_floating_point or dt.is_complex):
        x = x.to(dtypes.get_default_dtype())
    if to_complex and not x.dtype.is_complex:
        x = x.to(dtypes.complex64 if x.dtype is dtypes.float32 else dtypes.complex128)
    return x


def _points(n: int) -> int:
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return n


def _has_dims(x: Tensor, dim) -> None:
    if x.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")


def _one_dim(x: Tensor, n, dim, fname: str) -> tuple[int | None, tuple]:
    """(n or None, (dim,)) of a one-dimensional transform, checked."""
    _has_dims(x, dim)
    d = wrap_dim(dim, x.ndim, f"fft_{fname}")
    return (None if n is None else _points(int_arg(n, f"fft_{fname}", "n", 2))), (d,)


def _s_arg(s, fname: str) -> tuple | None:
    return None if s is None else (s,) if is_size(s) else int_tuple(s, f"fft_{fname}", "s")


def _n_dims(x: Tensor, s: tuple | None, dim, fname: str) -> tuple[list, tuple]:
    """(sizes, dims) of an n-dimensional transform from ``s`` (``_s_arg``) and ``dim``
    (PyTorch's canonicalize_fft_shape_and_dim_args): ``dim`` defaults to the last ``len(s)``
    dims, or all; an ``s`` entry of -1 (or no ``s``) keeps the input's size."""
    op = f"fft_{fname}"
    dims = None
    if dim is not None:
        dim = (dim,) if is_size(dim) else int_tuple(dim, op, "dim")
        if dim:
            _has_dims(x, dim[0])
        dims = tuple(wrap_dim(d, x.ndim, op) for d in dim)
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
    if s is None:
        dims = tuple(range(x.ndim)) if dims is None else dims
        return [_points(x.shape[d]) for d in dims], dims
    if dims is None:
        if len(s) > x.ndim:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has "
                               f"{x.ndim} dimensions.")
        dims = tuple(range(x.ndim - len(s), x.ndim))
    elif len(s) != len(dims):
        raise RuntimeError("When given, dim and shape arguments must have the same length")
    return [_points(x.shape[d] if n == -1 else n) for n, d in zip(s, dims)], dims


def _real_dims(x: Tensor, s, dim, fname: str) -> tuple[list, tuple]:
    """``_n_dims`` of a transform with a onesided (halved) dim: the last of ``dim``."""
    sizes, dims = _n_dims(x, _s_arg(s, fname), dim, fname)
    if not dims:
        raise RuntimeError(f"{fname} must transform at least one axis")
    return sizes, dims


def _c2r_dims(x: Tensor, s, dim, fname: str) -> tuple[list, tuple, int]:
    """(sizes, dims, n) of an n-dimensional c2r transform: the output has ``n`` points along
    the last of ``dim`` (``s[-1]``, by default 2 (m - 1) for the input's m bins there), the
    input is resized to its ``n // 2 + 1`` bins there."""
    s = _s_arg(s, fname)
    sizes, dims = _real_dims(x, s, dim, fname)
    n = _last_size(x, dims[-1], None if s is None else s[-1])
    return sizes[:-1] + [n // 2 + 1], dims, n


def _resize(x: Tensor, dims: tuple, sizes) -> Tensor:
    """``x`` trimmed (a view) or zero-padded at the end of each of ``dims`` to ``sizes``."""
    for d, n in zip(dims, sizes):
        have = x.shape[d]
        if have > n:
            x = narrow(x, d, 0, n)
        elif have < n:
            pad = list(x.shape)
            pad[d] = n - have
            x = cat([x, x.new_zeros(tuple(pad))], d)
    return x


def _out(t: Tensor, out, fname: str) -> Tensor:
    """``t`` or, given ``out=``, written into it; PyTorch wants a complex ``out`` for complex
    results and a real floating one for real results."""
    if out is not None and isinstance(out, Tensor):
        want_complex = t.dtype.is_complex
        if want_complex != out.dtype.is_complex or not (out.dtype.is_complex or
                                                        out.dtype.is_floating_point):
            kind = "complex" if want_complex else "floating point"
            name = "fftn" if fname == "ifftn" else fname  # (PyTorch's n-D c2c says fftn)
            raise RuntimeError(f"{name} expects a {kind} output tensor, but got "
                               f"{scalar_type_name(out.dtype)}")
    return _result(t, out, f"fft_{fname}")


def _last_size(x: Tensor, d: int, n) -> int:
    """The output length of a c2r transform along ``d``: ``n``, else 2 (m - 1) for m bins."""
    return _points(2 * (x.shape[d] - 1) if n is None or n == -1 else n)


# -- the transforms, as PyTorch composes them ------------------------------------------------------

def _c2c_op(x, dims, sizes, norm, forward, fname, out):
    x = _resize(x, dims, sizes)
    return _out(_c2c(x, dims, _mode(norm, forward), forward), out, fname)


def _r2c_op(x, dims, sizes, norm, forward, onesided, fname, out):
    """The forward real transform; the inverse one (ifft, ihfft of a real signal) is its
    conjugate, scaled as the inverse."""
    y = _r2c(_resize(x, dims, sizes), dims, _mode(norm, forward), onesided)
    return _out(y if forward else conj(y), out, fname)


def _c2r_op(x, dims, sizes, n, norm, forward, fname, out):
    """The real inverse transform of the onesided ``x`` (resized to ``sizes``), ``n`` points
    along the last of ``dims``; the forward one (hfft) is that of the conjugate, scaled as
    the forward, after (hfftn) the forward c2c over the other dims."""
    x = _resize(x, dims, sizes)
    if forward:
        if len(dims) > 1:
            x = _c2c(x, dims[:-1], _mode(norm, True), True)
            dims = dims[-1:]
        x = conj(x)
    return _out(_c2r(x, dims, _mode(norm, forward), n), out, fname)


def _one_dim_op(input, n, dim, norm, out, fname: str, forward: bool, kind: str):
    """A one-dimensional transform: ``kind`` "c" (fft, ifft: c2c, or r2c of real input),
    "r2c" (rfft, ihfft) or "c2r" (irfft, hfft)."""
    if type(dim) is not int:  # (argument types first, as PyTorch's binding checks them)
        int_arg(dim, f"fft_{fname}", "dim")
    if n is not None and type(n) is not int:
        int_arg(n, f"fft_{fname}", "n", 2)
    x = _input(input, fname, real_only=kind == "r2c", to_complex=kind == "c2r")
    n, dims = _one_dim(x, n, dim, fname)
    if kind == "c2r":
        n = _last_size(x, dims[0], n)
        return _c2r_op(x, dims, [n // 2 + 1], n, norm, forward, fname, out)
    sizes = [_points(x.shape[dims[0]]) if n is None else n]
    if x.dtype.is_complex:
        return _c2c_op(x, dims, sizes, norm, forward, fname, out)
    return _r2c_op(x, dims, sizes, norm, forward, kind == "r2c", fname, out)


@autocast_op("float32")
def fft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *,
        out=None) -> Tensor:
    """Computes the one dimensional discrete Fourier transform of ``input``.

    ``n``: signal length (the input is zero-padded or trimmed to it along ``dim``); ``norm``:
    ``"backward"`` (default, no normalization), ``"forward"`` (by ``1/n``) or ``"ortho"``
    (by ``1/sqrt(n)``). Real input gives the complex dtype of its precision.

    Example:
        >>> tg.fft.fft(tg.arange(4))
        tensor([ 6.+0.j, -2.+2.j, -2.+0.j, -2.-2.j])
    """
    return _one_dim_op(input, n, dim, norm, out, "fft", True, "c")


@autocast_op("float32")
def ifft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *,
         out=None) -> Tensor:
    """Computes the one dimensional inverse discrete Fourier transform of ``input``
    (``norm="backward"``, the default, normalizes by ``1/n``)."""
    return _one_dim_op(input, n, dim, norm, out, "ifft", False, "c")


@autocast_op("float32")
def rfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *,
         out=None) -> Tensor:
    """Computes the one dimensional Fourier transform of real-valued ``input``: only the
    ``n // 2 + 1`` non-negative frequencies (the rest are their conjugates)."""
    return _one_dim_op(input, n, dim, norm, out, "rfft", True, "r2c")


@autocast_op("float32")
def irfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *,
          out=None) -> Tensor:
    """Computes the inverse of :func:`rfft`: the real signal of ``n`` points (default
    ``2 (m - 1)`` for ``m`` input bins) whose one-sided Fourier transform is ``input``; the
    imaginary parts of the zero-frequency (and, for even ``n``, Nyquist) bins are ignored."""
    return _one_dim_op(input, n, dim, norm, out, "irfft", False, "c2r")


@autocast_op("float32")
def hfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *,
         out=None) -> Tensor:
    """Computes the one dimensional discrete Fourier transform of a Hermitian symmetric
    ``input`` signal given by its first half: a real result of ``n`` points (default
    ``2 (m - 1)``); ``norm="backward"`` does not normalize."""
    return _one_dim_op(input, n, dim, norm, out, "hfft", True, "c2r")


@autocast_op("float32")
def ihfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *,
          out=None) -> Tensor:
    """Computes the inverse of :func:`hfft`: the ``n // 2 + 1`` non-negative frequencies of
    the inverse transform of real ``input`` (``norm="backward"`` normalizes by ``1/n``)."""
    return _one_dim_op(input, n, dim, norm, out, "ihfft", False, "r2c")


def _c2c_n(input, s, dim, norm, out, fname, forward):
    x = _input(input, fname, to_complex=True)
    sizes, dims = _n_dims(x, _s_arg(s, fname), dim, fname)
    return _c2c_op(x, dims, sizes, norm, forward, fname, out)


def _c2r_n(input, s, dim, norm, out, fname, forward):
    x = _input(input, fname, to_complex=True)
    sizes, dims, n = _c2r_dims(x, s, dim, fname)
    return _c2r_op(x, dims, sizes, n, norm, forward, fname, out)


@autocast_op("float32")
def fftn(input: Tensor, s=None, dim=None, norm: str | None = None, *, out=None) -> Tensor:
    """Computes the N dimensional discrete Fourier transform of ``input`` over ``dim`` (default:
    the last ``len(s)`` dims, or all), each zero-padded or trimmed to its size in ``s``."""
    return _c2c_n(input, s, dim, norm, out, "fftn", True)


@autocast_op("float32")
def ifftn(input: Tensor, s=None, dim=None, norm: str | None = None, *, out=None) -> Tensor:
    """Computes the N dimensional inverse discrete Fourier transform of ``input``."""
    return _c2c_n(input, s, dim, norm, out, "ifftn", False)


@autocast_op("float32")
def rfftn(input: Tensor, s=None, dim=None, norm: str | None = None, *, out=None) -> Tensor:
    """Computes the N dimensional discrete Fourier transform of real ``input``: the last of
    ``dim`` keeps its ``s[-1] // 2 + 1`` non-negative frequencies."""
    x = _input(input, "rfftn", real_only=True)
    sizes, dims = _real_dims(x, s, dim, "rfftn")
    return _r2c_op(x, dims, sizes, norm, True, True, "rfftn", out)


@autocast_op("float32")
def irfftn(input: Tensor, s=None, dim=None, norm: str | None = None, *, out=None) -> Tensor:
    """Computes the inverse of :func:`rfftn`: a real signal of sizes ``s`` (the last, by
    default, ``2 (m - 1)`` for ``m`` input bins)."""
    return _c2r_n(input, s, dim, norm, out, "irfftn", False)


def hfftn(input: Tensor, s=None, dim=None, norm: str | None = None, *, out=None) -> Tensor:
    """Computes the N dimensional discrete Fourier transform of a Hermitian symmetric
    ``input`` given by its half along the last of ``dim``: a real result."""
    return _c2r_n(input, s, dim, norm, out, "hfftn", True)


def ihfftn(input: Tensor, s=None, dim=None, norm: str | None = None, *, out=None) -> Tensor:
    """Computes the N dimensional inverse discrete Fourier transform of real ``input``: the
    last of ``dim`` keeps its ``s[-1] // 2 + 1`` non-negative frequencies."""
    # (PyTorch checks the shape arguments and norm before the dtype)
    sizes, dims = _real_dims(tensor_arg(input, "fft_ihfftn"), s, dim, "ihfftn")
    mode = _mode(norm, False)
    x = _input(input, "ihfftn", real_only=True)
    y = conj(_r2c(_resize(x, dims, sizes), dims[-1:], mode, True))
    return _out(_c2c(y, dims[:-1], mode, False) if len(dims) > 1 else y, out, "ihfftn")


def _two_dims(fn, name: str):
    def two(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None, *,
            out=None) -> Tensor:
        return fn(input, s, dim, norm, out=out)
    two.__name__ = two.__qualname__ = name
    two.__doc__ = f"Computes :func:`{fn.__name__}` over two dims (by default the last two)."
    return two


fft2 = _two_dims(fftn, "fft2")
ifft2 = _two_dims(ifftn, "ifft2")
rfft2 = _two_dims(rfftn, "rfft2")
irfft2 = _two_dims(irfftn, "irfft2")
hfft2 = _two_dims(hfftn, "hfft2")
ihfft2 = _two_dims(ihfftn, "ihfft2")


# -- frequencies and shifts ------------------------------------------------------------------------

def _fftfreq_values(n: int, d: float) -> np.ndarray:
    # PyTorch's: [0, 1, ..., -(n // 2), ..., -1] times 1 / (n d), in doubles (d = 0 gives
    # [nan, inf, -inf, ...] where NumPy's fftfreq raises ZeroDivisionError)
    k = np.concatenate([np.arange((n - 1) // 2 + 1), np.arange(-(n // 2), 0)]).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return k * (np.float64(1.0) / np.float64(n * d)) if n else np.zeros(0)


def _rfftfreq_values(n: int, d: float) -> np.ndarray:
    # PyTorch's arange(n // 2 + 1) / (n d): n = 0 gives [nan] (0 / 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.arange(n // 2 + 1, dtype=np.float64) / (n * d)


def _freq(fn, name: str):
    def freq(n: int, d: float = 1.0, *, out=None, dtype=None, layout=None, device=None,
             requires_grad: bool = False) -> Tensor:
        n = int_arg(n, f"fft_{name}", "n", 1)
        if n < 0:  # (PyTorch's rfftfreq returns [-0.] for n = -1: refused here)
            raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
        if layout is not None:
            raise unsupported(f"fft.{name}", "layout", layout, "None (strided)")
        dt = as_dtype(dtype) or dtypes.get_default_dtype()
        if not (dt.is_floating_point or dt.is_complex):
            raise RuntimeError(f"{name} requires a floating point or complex dtype")
        values = fn(n, float(d))
        t = _finish(host_to(values, dt, resolve_device(device)), requires_grad)
        return t if out is None else _result(t, out, f"fft_{name}")
    freq.__name__ = freq.__qualname__ = name
    return freq


fftfreq = _freq(_fftfreq_values, "fftfreq")
fftfreq.__doc__ = """The sample frequencies of a signal of size ``n`` sampled at spacing ``d``:
``[0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (d n)``, the order :func:`fft` returns them in.

    Example:
        >>> tg.fft.fftfreq(5)
        tensor([ 0.0000,  0.2000,  0.4000, -0.4000, -0.2000])
"""
rfftfreq = _freq(_rfftfreq_values, "rfftfreq")
rfftfreq.__doc__ = """The sample frequencies of :func:`rfft` of a signal of size ``n`` sampled at
spacing ``d``: ``[0, 1, ..., n // 2] / (d n)``."""


def _shift(input: Tensor, dim, name: str, inverse: bool) -> Tensor:
    tensor_arg(input, f"fft_{name}")
    dims = tuple(range(input.ndim)) if dim is None else \
        ((dim,) if is_size(dim) else int_tuple(dim, f"fft_{name}", "dim"))
    if input.ndim == 0 and dims:  # (wrap_dim would take 0 and -1 for a 0-d tensor's)
        raise IndexError(f"Dimension specified as {dims[0]} but tensor has no dimensions")
    shifts = [(input.shape[wrap_dim(d, input.ndim, f"fft_{name}")] + inverse) // 2
              for d in dims]
    return roll(input, shifts, dims)


def fftshift(input: Tensor, dim=None) -> Tensor:
    """Reorders n-dimensional FFT data, as given by :func:`fftn`, to have negative frequency
    terms first (a roll by ``n // 2`` along each of ``dim``, by default all).

    Example:
        >>> tg.fft.fftshift(tg.fft.fftfreq(4))
        tensor([-0.5000, -0.2500,  0.0000,  0.2500])
    """
    return _shift(input, dim, "fftshift", False)


def ifftshift(input: Tensor, dim=None) -> Tensor:
    """The inverse of :func:`fftshift` (a roll by ``-(n // 2)``, i.e. ``(n + 1) // 2``)."""
    return _shift(input, dim, "ifftshift", True)
