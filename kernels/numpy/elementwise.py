"""Elementwise ops over NumPy arrays, with NumPy's broadcasting (the same as PyTorch's).

Inputs arrive with one dtype (the caller promotes); a second operand may be a Python scalar,
which NumPy treats as weakly typed, as PyTorch does. ``unary`` and ``binary`` are the op tables
behind the less common ops (one name each in the contract instead of one function per op).
float16 and bfloat16 math that NumPy would not do in float32 (sigmoid) runs in float32 and
rounds once.
"""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np

from ...runtime.array import contiguous_strides
from . import jit
from .bf16 import BF16Array, round_

_ndarray = np.ndarray
_LOOP_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))  # the compiled loops' dtypes


def _arr(x) -> np.ndarray:
    # ufuncs over 0-d inputs return NumPy scalars; the contract returns arrays.
    return x if isinstance(x, _ndarray) else np.asarray(x)


# Note [Result layouts]
#   PyTorch lays an elementwise result out as its TensorIterator does (autograd/layout.py,
#   ``elementwise_strides``): row-major for row-major operands, else dense in the order of the
#   operands' strides, the first operand that orders two dimensions deciding them. NumPy's
#   order='K' agrees for one operand and for operands laid out alike, but where they differ it
#   falls back to row-major (a channels-last ``x + y`` came out NCHW where PyTorch keeps
#   NHWC), and it may give a size-1 dimension another stride. The two agree where the first
#   operand is row-major and of the result's shape (it decides every pair of dimensions, in
#   row-major order, and NumPy keeps that order where operands conflict), or where all the
#   operands are row-major; ``_numpy_agrees`` asks that (one flag read and a shape compare in
#   the common case, ~0.1 us). Elsewhere the result is given PyTorch's strides: as a view
#   when only size-1 dimensions differ, else copied into PyTorch's layout (one more pass, for
#   operands whose layouts disagree). NumPy's flag passes size-1 dimensions whatever their
#   strides, which PyTorch reads: a first operand with size-1 dimensions strided out of order
#   can make PyTorch order another operand's dimensions otherwise (random layouts with
#   size-1 dimensions, none of the usual ones); left, for the check saved on every op. One
#   operand is left to NumPy: its layout differs from PyTorch's in size-1 dimensions'
#   strides only.
def _numpy_agrees(r: np.ndarray, first: np.ndarray, *rest) -> bool:
    """Whether NumPy's layout of ``r`` is PyTorch's over these operands in memory order (Note
    [Result layouts])."""
    if not first.flags.c_contiguous:
        return False
    return first.shape == r.shape or all(type(x) is not _ndarray and type(x) is not BF16Array
                                         or x.flags.c_contiguous for x in rest)


def _torch_strides(xs, shape) -> tuple:
    """The strides PyTorch gives an elementwise result of ``shape`` over ``xs``."""
    from ...autograd.layout import elementwise_strides  # (kernels sit below autograd)
    want = elementwise_strides(shape, [(x.shape, tuple(s // x.itemsize for s in x.strides))
                                       if isinstance(x, _ndarray) else ((), ()) for x in xs])
    return contiguous_strides(shape) if want is None else want


def _laid_out(r: np.ndarray, *xs, want: tuple | None = None) -> np.ndarray:
    """``r``, the result of an elementwise op over ``xs`` (arrays and numbers, in argument
    order), with the strides PyTorch gives it (``want``, when the caller knows them): Note
    [Result layouts]."""
    from .memory import as_strided
    shape, item = r.shape, r.itemsize
    if want is None:
        want = _torch_strides(xs, shape)
    have = tuple(s // item for s in r.strides)
    if have == want:
        return r
    if all(h == w or n == 1 for h, w, n in zip(have, want, shape)):
        return as_strided(r, shape, want, 0)
    extent = 0 if 0 in shape else 1 + sum((n - 1) * w for n, w in zip(shape, want))
    out = as_strided(np.empty(extent, r.dtype).view(type(r)), shape, want, 0)
    np.copyto(out, r)
    return out


def in_memory_order(*positions: int):
    """A decorator for a kernel that makes new row-major results from same-shape arrays (at
    argument ``positions``; None allowed) with any strides: where PyTorch's result would not
    be row-major (Note [Result layouts]), the kernel runs on the arrays transposed into that
    result's memory order (views: no copy for a dense operand), and its results come back
    transposed, so a channels-last GELU is channels-last, as PyTorch's."""
    def wrap(kernel):
        @functools.wraps(kernel)
        def run(*args, **kwargs):
            xs = [args[i] for i in positions if i < len(args) and args[i] is not None]
            if xs[0].ndim < 2 or all(x.flags.c_contiguous for x in xs):
                return kernel(*args, **kwargs)
            want = _torch_strides(xs, xs[0].shape)
            if want == contiguous_strides(xs[0].shape):
                return kernel(*args, **kwargs)
            perm = sorted(range(len(want)), key=lambda d: -want[d])  # outermost first
            args = [a.transpose(perm) if i in positions and a is not None else a
                    for i, a in enumerate(args)]
            inverse = tuple(np.argsort(perm))
            r = kernel(*args, **kwargs)

            def back(a):
                return _laid_out(a.transpose(inverse), want=want) \
                    if isinstance(a, _ndarray) else a
            return tuple(map(back, r)) if type(r) is tuple else back(r)
        return run
    return wrap


# Note [Silent float errors]
#   PyTorch computes x / 0, log(0), sqrt(-1), exp(1000) as inf / NaN without a word; NumPy
#   warns ("divide by zero encountered in divide"). The ufuncs that make inf or NaN from
#   finite values in ordinary use (division, powers, exp, log, sqrt, log1p, expm1) run with
#   NumPy's floating-point errors ignored, set for their call alone: NumPy keeps that state in
#   a context variable, and setting it directly costs ~0.2 us a call where ``np.errstate``
#   costs ~0.8 us (a NumPy without that variable gets ``np.errstate``). The user's NumPy error
#   settings are untouched outside the call. add / sub / mul (inf - inf, 0 * inf, overflow)
#   and the ops that cannot overflow keep the plain, fastest call: the warnings filter below,
#   scoped to this package's modules, silences what they raise at no cost per call (it names
#   the frame that called the ufunc, so the kernels call ufuncs and their ``reduce`` /
#   ``accumulate`` directly, not NumPy's Python wrappers such as np.sum, np.require; the
#   kernels that must go through np.linalg / np.fft are wrapped with ``_quiet``). A user's
#   own NumPy calls keep their warnings. The filter holds for the process from the import on;
#   pytest restores the filters it found after collecting (which imports the package), and a
#   filter put in front (``-W error``) wins, hence the explicit state for the commonest ops.
#   A filter put in front that turns the warning into an error (``warnings.simplefilter(
#   "error")``, pytest's ``filterwarnings = error``) would still make ``inf * 0`` raise from
#   the plain calls of ``_binary``, ``_unary`` and ``unary``: they catch that RuntimeWarning
#   (free until it is raised: Python 3.11's zero-cost try). NumPy warns after the ufunc has
#   run, so an ``out=`` already holds the result; an out-of-place one is computed again with
#   the errors ignored (its operands are unchanged). Matrix products and reductions that
#   overflow still warn.
warnings.filterwarnings("ignore", r"(invalid value|divide by zero|overflow|underflow) "
                        "encountered", RuntimeWarning, r"tritongrad\.")
try:
    from numpy._core._ufunc_config import _extobj_contextvar as _ERRORS
    with np.errstate(all="ignore"):
        _IGNORE = _ERRORS.get()
except ImportError:  # (a NumPy that keeps its error state elsewhere)
    _ERRORS = None


def _quiet(ufunc):
    """``ufunc`` called with NumPy's floating-point errors ignored (Note [Silent float
    errors]); same arguments and result."""
    if _ERRORS is None:
        def call(*args, **kwargs):
            with np.errstate(all="ignore"):
                return ufunc(*args, **kwargs)
    else:
        def call(*args, **kwargs):
            token = _ERRORS.set(_IGNORE)
            try:
                return ufunc(*args, **kwargs)
            finally:
                _ERRORS.reset(token)
    return functools.wraps(ufunc)(call)


class quiet_float_errors:
    """Context manager: NumPy's floating-point errors ignored in its block, for a caller that
    runs many kernels at once (the backward pass's chain of rules, where ``0 * inf`` and
    ``inf - inf`` are ordinary and PyTorch is silent), at the price of one state change for
    the block instead of one per call (Note [Silent float errors]). The caller's state comes
    back on exit, also on an exception; the object is reusable, not reentrant.

    Example:
        >>> with quiet_float_errors():
        ...     r = np.multiply(np.zeros(1), np.full(1, np.inf))
    """

    __slots__ = ("_token",)

    def __enter__(self):
        if _ERRORS is None:
            self._token = np.errstate(all="ignore")
            self._token.__enter__()
        else:
            self._token = _ERRORS.set(_IGNORE)
        return self

    def __exit__(self, *exc):
        token, self._token = self._token, None
        if _ERRORS is None:
            token.__exit__(*exc)
        else:
            _ERRORS.reset(token)
        return False


def _quietly(ufunc, a):
    """``ufunc(a)`` with NumPy's floating-point errors ignored: ``_quiet(ufunc)(a)`` without
    the wrapper's frame, for the compiled loops that every sigmoid and ReLU forward calls."""
    if _ERRORS is None:
        with np.errstate(all="ignore"):
            return ufunc(a)
    token = _ERRORS.set(_IGNORE)
    try:
        return ufunc(a)
    finally:
        _ERRORS.reset(token)


# Note [Cached scalar operands]
#   NumPy converts a Python float operand on every ufunc call (NEP 50: a weak scalar, cast to
#   the array's dtype), which on a 16x16 array costs as much as the arithmetic (~0.3 us). The
#   same constants come back op after op (``x * 1.01``, a scalar op's backward ``g * s``), so
#   a float operand of a float32 or float64 array is replaced by a cached 0-d array of the
#   array's dtype: the value NumPy would have cast it to, so the result's dtype and bits are
#   the same (tests/kernels/test_numpy_scalar_operands.py compares both). Only values that keep
#   their identity as dict keys are cached: not NaN (never equal to itself, so each NaN
#   object would add an entry) nor zero (0.0 and -0.0 are one key but different operands),
#   nor a finite value that overflows the dtype (NumPy's cast warns there; it still does).
_SCALAR_ARRAYS = {np.dtype(np.float32): {}, np.dtype(np.float64): {}}
_SCALARS_KEPT = 512  # per dtype; a program that makes more distinct constants starts over
_SCALAR_MAX = {dt: float(np.finfo(dt).max) for dt in _SCALAR_ARRAYS}


def _scalar_array(b: float, dt):
    """``b`` as a cached 0-d array of float dtype ``dt`` (a dtype of ``_SCALAR_ARRAYS``), or
    ``b`` itself where it is not cached (Note [Cached scalar operands])."""
    cache = _SCALAR_ARRAYS[dt]
    s = cache.get(b)
    if s is not None:
        return s
    if b != b or b == 0 or (abs(b) > _SCALAR_MAX[dt] and math.isfinite(b)):
        return b
    if len(cache) >= _SCALARS_KEPT:
        cache.clear()
    s = cache[b] = np.array(b, dt)
    s.flags.writeable = False  # (shared by every call: no kernel may write into it)
    return s


_F32_ARRAY_SCALARS = _SCALAR_ARRAYS[np.dtype(np.float32)]
_F64_ARRAY_SCALARS = _SCALAR_ARRAYS[np.dtype(np.float64)]


def _binary(ufunc, quiet: bool = False, opmath_scalar: bool = False):
    """The contract's binary op over ``ufunc`` (``quiet``: Note [Silent float errors]; a
    Python float ``b`` is a cached 0-d array: Note [Cached scalar operands]; with
    ``opmath_scalar`` a float16 array's float ``b`` is used as a float32, as PyTorch's mul and
    div read a number operand in their "opmath" type, float32 for half, where its add and
    sub round it to float16 first)."""
    calm = _quiet(ufunc)
    if quiet:
        ufunc = calm
    f16, f32, f64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)

    def op(a, b, out=None):
        if type(b) is float and type(a) is _ndarray:
            dt = a.dtype
            if dt is f32:  # (the cache's hit inlined: this runs on every scalar op)
                s = _F32_ARRAY_SCALARS.get(b)
                b = s if s is not None else _scalar_array(b, dt)
            elif dt is f64:
                s = _F64_ARRAY_SCALARS.get(b)
                b = s if s is not None else _scalar_array(b, dt)
            elif dt is f16 and opmath_scalar:
                # computed in float32 with the number as a float32, rounded once; NumPy would
                # round the number to float16 first (x / 0.7 was 1.4277 for PyTorch's 1.4287)
                with np.errstate(over="ignore"):
                    r = ufunc(a, np.float32(b), out=out, casting="unsafe") if out is not None \
                        else ufunc(a, np.float32(b)).astype(f16)
                return r if isinstance(r, _ndarray) else np.asarray(r, f16)
        try:
            if out is None:
                r = ufunc(a, b)  # (_arr inlined here and below: these two wrap every ufunc op)
            else:
                ufunc(a, b, out=out, casting="unsafe")
                return out
        except RuntimeWarning:  # a user's filter made NumPy's warning an error (Note [Silent
            if out is not None:  # float errors])
                return out
            r = calm(a, b)
        if isinstance(b, _ndarray) and r.ndim > 1 and not _numpy_agrees(r, a, b):
            return _laid_out(r, a, b)  # Note [Result layouts]
        return r if isinstance(r, _ndarray) else np.asarray(r)
    op.__name__ = ufunc.__name__
    return op


def _unary(ufunc, quiet: bool = False):
    """The contract's unary op over ``ufunc`` (``quiet``: Note [Silent float errors])."""
    calm = _quiet(ufunc)
    if quiet:
        ufunc = calm

    def op(a, out=None):
        try:
            if out is None:
                r = ufunc(a)
                return r if isinstance(r, _ndarray) else np.asarray(r)
            ufunc(a, out=out, casting="unsafe")
            return out
        except RuntimeWarning:  # (as _binary's)
            return _arr(calm(a)) if out is None else out
    op.__name__ = ufunc.__name__
    return op


def _compare(ufunc):
    def op(a, b):
        r = _arr(ufunc(a, b))
        if isinstance(b, _ndarray) and r.ndim > 1 and not _numpy_agrees(r, a, b):
            return _laid_out(r, a, b)  # Note [Result layouts]
        return r
    op.__name__ = ufunc.__name__
    return op


add = _binary(np.add)
sub = _binary(np.subtract)
mul = _binary(np.multiply, opmath_scalar=True)
div = _binary(np.true_divide, quiet=True, opmath_scalar=True)
_power = _binary(np.power, quiet=True)


def pow(a, b, out=None):  # noqa: A001
    # NumPy refuses integers to negative integer powers; PyTorch gives the truncated
    # reciprocal: 1 ** -n = 1, (-1) ** -n = +-1, 0 for every other base
    if type(b) is _ndarray and b.dtype.kind == "i" and a.dtype.kind in "iu":
        neg = b < 0
        if neg.any():
            r = np.power(a, np.where(neg, 0, b))
            inv = np.where(a == 1, 1, np.where(a == -1, np.where(b & 1, -1, 1), 0))
            r = np.where(neg, inv, r).astype(r.dtype, copy=False)
            if out is None:
                return r
            np.copyto(out, r, casting="unsafe")
            return out
    elif type(b) in _SCALAR_EXPONENTS and a.dtype.kind == "c" and b in _COMPLEX_POW:
        r = _arr(_COMPLEX_POW[b](a))
        if out is None:
            return r
        np.copyto(out, r, casting="unsafe")
        return out
    return _power(a, b, out)


# PyTorch computes complex z ** 0.5, ** -0.5 and ** -1 as sqrt, 1 / sqrt and 1 / z (its
# pow_tensor_scalar_kernel); NumPy's general complex power, exp(e log z), makes NaN of every
# infinity there (inf ** -1 came out nan + nanj, not 0)
_SCALAR_EXPONENTS = (int, float, complex)
_quiet_sqrt, _quiet_divide = _quiet(np.sqrt), _quiet(np.true_divide)
_COMPLEX_POW = {0.5: _quiet_sqrt, -0.5: lambda a: _quiet_divide(1, _quiet_sqrt(a)),
                -1: lambda a: _quiet_divide(1, a)}

maximum = _binary(np.maximum)  # both propagate NaN, as torch.maximum does
minimum = _binary(np.minimum)

gt = _compare(np.greater)
ge = _compare(np.greater_equal)
lt = _compare(np.less)
le = _compare(np.less_equal)
eq = _compare(np.equal)
ne = _compare(np.not_equal)

neg = _unary(np.negative)
exp = _unary(np.exp, quiet=True)
log = _unary(np.log, quiet=True)
sqrt = _unary(np.sqrt, quiet=True)


def relu(a, out=None):
    """max(a, 0), NaN kept, as torch.relu: float32/float64 through elementwise_loops' ufunc,
    which also keeps -0.0 as PyTorch does; other dtypes NumPy's maximum (+0.0 there)."""
    if type(a) is _ndarray and a.dtype in _LOOP_FLOATS \
            and (loops := jit.loops("elementwise_loops")) is not None:
        # (NaN lanes of the vectorized compare raise flags)
        if out is None:
            r = _quietly(loops.relu, a)
            return r if isinstance(r, _ndarray) else np.asarray(r)
        _quiet_loop(loops.relu)(a, out=out, casting="unsafe")
        return out
    return maximum(a, 0, out=out)  # (the zero takes a's dtype: a weak scalar)


def where(cond, a, b):
    r = _select(cond, a, b)
    if r is None:
        r = _arr(np.where(cond, a, b))
        if type(a) is BF16Array or type(b) is BF16Array:
            r = round_(r).view(BF16Array)  # a Python-scalar branch may be off the grid
    if r.ndim > 1 and not _numpy_agrees(r, cond, a, b):
        return _laid_out(r, cond, a, b)  # Note [Result layouts]
    return r


_SCALARS = (int, float)


def _select(cond, a, b):
    """where(cond, a, b) through elementwise_loops' compiled selects when the loops run, cond
    is a bool array and the branches are plain float32 or float64 arrays of one dtype, or one
    such array (contiguous, cond's shape) and a Python number its dtype holds exactly (so
    the result type is NumPy's); else None."""
    if type(cond) is not _ndarray or cond.dtype != np.bool_:
        return None
    ta, tb = type(a), type(b)
    if ta is _ndarray and tb is _ndarray:
        if a.dtype is not b.dtype or a.dtype not in _LOOP_FLOATS:
            return None
        loops = jit.loops("elementwise_loops")
        if loops is None:
            return None
        r = loops.select(cond, a, b)
        return r if isinstance(r, _ndarray) else np.asarray(r)
    if ta is _ndarray and tb in _SCALARS:
        arr, s, flip = a, b, False
    elif tb is _ndarray and ta in _SCALARS:
        arr, s, flip = b, a, True
    else:
        return None
    dt = arr.dtype
    if dt not in _LOOP_FLOATS or arr.shape != cond.shape or not arr.flags.c_contiguous \
            or not cond.flags.c_contiguous or dt.type(s) != s:
        return None
    loops = jit.loops("elementwise_loops")
    if loops is None:
        return None
    out = np.empty(arr.shape, dt)
    loops.select_scalar(cond.reshape(-1), arr.reshape(-1), dt.type(s), flip, out.reshape(-1))
    return out


# -- the unary table ---------------------------------------------------------------------------

# Constants as 0-d arrays of each float dtype: NumPy converts a Python float operand on every
# call (NEP 50's weak scalars), which costs more than the arithmetic on small arrays.
_EXP_ARG_MIN = {np.dtype(np.float32): np.array(-88.0, np.float32),
                np.dtype(np.float64): np.array(-709.0)}
_F16, _F32 = np.dtype(np.float16), np.dtype(np.float32)
_ONE = {np.dtype(d): np.array(1, d) for d in (np.float16, np.float32, np.float64)}


@functools.cache
def _quiet_loop(ufunc):
    """A compiled ufunc called quietly (Note [Silent float errors]): vectorized, its exp of
    -x overflows for x below -89 and compares NaN lanes, raising flags NumPy would warn of;
    PyTorch's sigmoid is silent."""
    return _quiet(ufunc)


def _sigmoid(x):
    # 1 / (1 + exp(-x)), with x clipped where exp(-x) would overflow (the result there is below
    # float32's smallest normal anyway); in place, with positional out= (keywords cost more to
    # parse than the arithmetic on small tensors), and without np.errstate, which costs more
    # still. (Complex values are not clipped: their order is not the real line's.)
    if x.dtype.kind == "c":
        return _arr(np.reciprocal(np.exp(-x) + 1))
    if x.dtype is _F32 and type(x) is _ndarray:  # one compiled pass (elementwise_loops)
        loops = jit.loops("elementwise_loops")
        if loops is not None:
            return _arr(_quietly(loops.sigmoid, x))
    t = _arr(np.maximum(x, _EXP_ARG_MIN[x.dtype]))  # NaN stays NaN
    np.negative(t, t)
    np.exp(t, t)
    np.add(t, _ONE[t.dtype], t)
    return np.reciprocal(t, t)


def _sign(a, out=None, casting=None):
    # PyTorch's sign is (0 < x) - (x < 0): 0 for NaN, where NumPy's gives NaN.
    r = _arr(np.sign(a))
    if r.dtype.kind == "f":
        r[np.isnan(r)] = 0
    if out is None:
        return r
    np.copyto(out, r, casting="unsafe")
    return out


def _signbit(a, out=None, casting=None):
    # 1 where the sign bit is set (-0.0 and negative NaN too), else 0, in a's dtype
    r = _arr(np.signbit(a)).astype(a.dtype)
    if type(a) is BF16Array:
        r = r.view(BF16Array)
    if out is None:
        return r
    np.copyto(out, r, casting="unsafe")
    return out


_UNARY = {
    "abs": np.abs, "signbit": _signbit, "sign": _sign, "sin": np.sin, "cos": np.cos,
    "tan": np.tan, "tanh": np.tanh,
    "floor": np.floor, "ceil": np.ceil, "round": np.rint, "trunc": np.trunc,
    "log1p": _quiet(np.log1p), "expm1": _quiet(np.expm1), "bitwise_not": np.invert,
    # NaN outside the domain, +-inf at its edges, without NumPy's warnings (as PyTorch)
    "asin": _quiet(np.arcsin), "acos": _quiet(np.arccos), "atan": np.arctan,
    "sinh": _quiet(np.sinh), "cosh": _quiet(np.cosh), "asinh": np.arcsinh,
    "acosh": _quiet(np.arccosh), "atanh": _quiet(np.arctanh), "log2": _quiet(np.log2),
    "log10": _quiet(np.log10), "exp2": _quiet(np.exp2),
}


def _sigmoid_op(a, out=None, casting=None):
    """The table's sigmoid: a plain float32 array straight to ``_sigmoid`` (its compiled
    pass), half and bfloat16 in float32 (``_in_float32``). (The float32 test first: every
    sigmoid of a float32 model passes here.)"""
    if out is None and type(a) is _ndarray and a.dtype is _F32:
        return _sigmoid(a)
    return _in_float32(_sigmoid, a, out)


_UNARY["sigmoid"] = _sigmoid_op


def unary(op: str, a, out=None):
    fn = _UNARY.get(op)
    if fn is None:
        raise ValueError(f"unary: unknown op {op!r}")
    try:
        if out is None:
            r = fn(a)  # (_arr inlined, as in _binary: every unary op passes here)
            return r if isinstance(r, _ndarray) else np.asarray(r)
        fn(a, out=out, casting="unsafe")
        return out
    except RuntimeWarning:  # (as _binary's: Note [Silent float errors])
        if out is not None:
            return out
        with quiet_float_errors():
            return unary(op, a)


def _in_float32(fn, a, out):
    """``fn`` computed in float32 for half and bfloat16 inputs, rounded once."""
    t = type(a)
    if t is BF16Array:
        r = fn(a.view(_ndarray))
        r = round_(_arr(r)).view(BF16Array)
    elif a.dtype is _F16:
        r = _arr(fn(a.astype(np.float32))).astype(np.float16)
    else:
        r = _arr(fn(a))
    if out is None:
        return r
    np.copyto(out, r, casting="unsafe")
    return out


# -- the binary table --------------------------------------------------------------------------

def _check_int_divisor(op, a, b):
    if a.dtype.kind in "iub" and np.any(np.asarray(b) == 0):
        raise RuntimeError(f"ZeroDivisionError: integer division by zero in {op}")


def _floor_divide(a, b, out=None):
    _check_int_divisor("floor_divide", a, b)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.floor_divide(a, b, **({} if out is None else {"out": out, "casting": "unsafe"}))


def _remainder(a, b, out=None):
    _check_int_divisor("remainder", a, b)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.remainder(a, b, **({} if out is None else {"out": out, "casting": "unsafe"}))


def _fmod(a, b, out=None):
    # C's fmod: the remainder of the quotient truncated toward zero (sign of the dividend),
    # exact for floats
    _check_int_divisor("fmod", a, b)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.fmod(a, b, **({} if out is None else {"out": out, "casting": "unsafe"}))


def _trunc_divide(a, b, out=None):
    _check_int_divisor("div(rounding_mode='trunc')", a, b)
    with np.errstate(divide="ignore", invalid="ignore"):
        if a.dtype.kind in "iu":
            q = np.floor_divide(a, b)
            fix = (np.remainder(a, b) != 0) & ((np.asarray(a) < 0) != (np.asarray(b) < 0))
            r = q + fix.astype(q.dtype)
        else:
            r = np.trunc(np.true_divide(a, b))
    if out is None:
        return r
    np.copyto(out, r, casting="unsafe")
    return out


def _bitwise(ufunc):
    def op(a, b, out=None):
        return ufunc(a, b) if out is None else ufunc(a, b, out=out, casting="unsafe")
    return op


def _times(g, d, out):
    if out is None:
        # d is a scratch array: the product goes in it, unless its dtype is not the result's
        return np.multiply(g, d, d) if d.dtype is g.dtype else np.multiply(g, d)
    return np.multiply(g, d, out=out, casting="unsafe")


_FUSED = frozenset([np.dtype(np.float32), np.dtype(np.float64)])  # the loops' dtypes


def _fused(name: str, numpy_form):
    """The contract's fused derivative ``name(g, y, out=None)``: elementwise_loops' ufunc
    ``name`` when the loops run and both are plain float32 or float64 arrays of one dtype,
    else ``numpy_form`` (the same arithmetic in NumPy ufuncs). (One function with the test
    inline: the backward of every tanh and sigmoid passes here.)"""
    def op(g, y, out=None):
        if type(g) is _ndarray and type(y) is _ndarray and g.dtype is y.dtype \
                and g.dtype in _FUSED:
            loops = jit.loops("elementwise_loops")
            if loops is not None:
                fn = getattr(loops, name)
                if out is None:
                    r = fn(g, y)
                    return r if isinstance(r, _ndarray) else np.asarray(r)
                fn(g, y, out=out, casting="unsafe")
                return out
        return numpy_form(g, y, out)
    op.__name__ = f"_{name}"
    return op


def _tanh_backward_numpy(g, y, out=None):
    d = _arr(np.multiply(y, y))  # an array even for 0-d operands, so it can be written in place
    np.subtract(_ONE.get(y.dtype, 1), d, d)
    return _times(g, d, out)


def _sigmoid_backward_numpy(g, y, out=None):
    d = _arr(np.subtract(_ONE.get(y.dtype, 1), y))
    np.multiply(d, y, d)
    return _times(g, d, out)


_tanh_backward = _fused("tanh_backward", _tanh_backward_numpy)
_sigmoid_backward = _fused("sigmoid_backward", _sigmoid_backward_numpy)


# Note [Selects as bit masks]
#   np.where over an unpredictable mask (ReLU's, dropout's) runs a branch per element: 0.9 ms
#   for 256 x 1024 float32, 16x a multiply. A float is zeroed exactly by AND-ing its bits with
#   0, kept by AND-ing with all ones (-1): the bool mask widened to the float's integer width
#   and negated is that operand, and the select becomes three branch-free passes.
_BITS = {np.dtype(d): np.dtype(f"i{np.dtype(d).itemsize}")
         for d in (np.float16, np.float32, np.float64)}


def _zero_where(drop, g):
    """+0 where the bool array ``drop`` is true, g elsewhere (same shapes), as a new array."""
    ints = _BITS.get(g.dtype)
    if ints is None or g.ndim == 0 or drop.shape != g.shape:
        return _arr(np.where(drop, 0, g))
    m = np.subtract(drop.view(np.int8), 1, dtype=ints)  # 0 where dropped, else -1: all ones
    return np.bitwise_and(g.view(ints), m, out=m).view(g.dtype)


def _relu_backward(g, y, out=None):
    # A select, not g * (y > 0): an inf gradient at y == 0 gives 0 (inf * 0 is NaN), and a
    # NaN output passes the gradient on (PyTorch's threshold_backward zeroes where y <= 0).
    if (out is None and type(g) is _ndarray and type(y) is _ndarray and g.dtype == y.dtype
            and g.dtype in _LOOP_FLOATS and g.shape == y.shape and g.ndim
            and g.flags.c_contiguous and y.flags.c_contiguous
            and (loops := jit.loops("nn_loops")) is not None):
        r = np.empty_like(g)
        loops.relu_backward(g.reshape(-1), y.reshape(-1), r.reshape(-1))
        return r
    r = _zero_where(_arr(np.less_equal(y, 0)), _arr(g))
    if out is None:
        return r
    np.copyto(out, r, casting="unsafe")
    return out


def _atan2(a, b, out=None):
    # (half and single inputs: NumPy's loops compute in float32, bfloat16 goes through binary's
    # float32 path: one rounding each)
    return np.arctan2(a, b) if out is None else np.arctan2(a, b, out=out, casting="unsafe")


# -- the regularized incomplete gamma functions ------------------------------------------------
# P(a, x) = gamma(a, x) / Gamma(a) (igamma) and Q = 1 - P (igammac), as Numerical Recipes'
# gser/gcf: the series sum x^n / (a (a+1) ... (a+n)) where x < a + 1, else Q's continued
# fraction (modified Lentz), each times exp(a log x - x - lgamma(a)); the edge cases are
# PyTorch's (Cephes'). The relative error grows like eps * max(a, x) for large arguments
# (the prefactor's exponent); Cephes' asymptotic expansion for a, x > 20 is not used.
def _lgamma_scalar(v: float) -> float:
    try:
        return math.lgamma(v)
    except ValueError:  # the poles, 0, -1, -2, ...
        return math.inf


_lgamma = np.frompyfunc(_lgamma_scalar, 1, 1)
_GAMMA_EPS = 1e-16
# (near x = a the series needs about sqrt(74 a) terms: 2000 cover a up to about 5e4; the
# Triton kernel runs as many)
_GAMMA_ITERS = 2000


def _lgamma_of(a):
    return np.asarray(_lgamma(a)).astype(a.dtype)  # (frompyfunc gives a 0-d input a float)


def _igamma_prefactor(a, x):
    # x^a e^-x / Gamma(a), in logs
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.exp(a * np.log(x) - x - _lgamma_of(a))


def _igamma_series(a, x, eps):
    ap, term = a.copy(), 1 / a
    total = term.copy()
    active = np.ones(a.shape, bool)
    for _ in range(_GAMMA_ITERS):
        ap[active] += 1
        term[active] *= x[active] / ap[active]
        total[active] += term[active]
        active &= np.abs(term) >= np.abs(total) * eps
        if not active.any():
            break
    return total * _igamma_prefactor(a, x)


def _igammac_fraction(a, x, eps):
    tiny = np.finfo(a.dtype).tiny / eps
    b = x + 1 - a
    c = np.full(a.shape, 1 / tiny, a.dtype)
    d = 1 / b
    h = d.copy()
    active = np.ones(a.shape, bool)
    for i in range(1, _GAMMA_ITERS):
        an = -i * (i - a)
        b = b + 2
        d = an * d + b
        d = np.where(np.abs(d) < tiny, tiny, d)
        c = b + an / c
        c = np.where(np.abs(c) < tiny, tiny, c)
        d = 1 / d
        step = np.where(active, d * c, 1)
        h *= step
        active &= np.abs(step - 1) >= eps
        if not active.any():
            break
    return h * _igamma_prefactor(a, x)


def _igamma_pair(a, x, upper: bool):
    """P(a, x), or Q(a, x) when ``upper``, for float arrays of one dtype (broadcast)."""
    a, x = np.broadcast_arrays(np.asarray(a), np.asarray(x))
    dt = a.dtype
    a, x = a.astype(np.float64), x.astype(np.float64)  # (float64 for every dtype, rounded once)
    eps = _GAMMA_EPS
    out = np.full(a.shape, np.nan)
    regular = (a > 0) & (x > 0) & np.isfinite(a) & np.isfinite(x)
    series = regular & (x < a + 1)
    fraction = regular & ~series
    with np.errstate(all="ignore"):
        if series.any():
            p = _igamma_series(a[series], x[series], eps)
            out[series] = 1 - p if upper else p
        if fraction.any():
            q = _igammac_fraction(a[fraction], x[fraction], eps)
            out[fraction] = q if upper else 1 - q
    lo, hi = (1.0, 0.0) if upper else (0.0, 1.0)
    # the edges (NaN stays NaN: every test below is False for it)
    out[(x == 0) & (a > 0)] = lo
    out[(a == 0) & (x > 0)] = hi
    out[np.isposinf(x) & (a > 0) & np.isfinite(a)] = hi
    out[np.isposinf(a) & (x >= 0) & np.isfinite(x)] = lo
    return out.astype(dt, copy=False)


def _igamma(a, x, out=None):
    r = _igamma_pair(a, x, False)
    return r if out is None else _copy_into(out, r)


def _igammac(a, x, out=None):
    r = _igamma_pair(a, x, True)
    return r if out is None else _copy_into(out, r)


def _igamma_dx(a, x, out=None):
    # dP/dx = x^(a-1) e^-x / Gamma(a), PyTorch's formula (NaN at a = 1, x = 0, as there)
    a, x = np.asarray(a), np.asarray(x)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        a64, x64 = a.astype(np.float64), x.astype(np.float64)
        r = np.exp((a64 - 1) * np.log(x64) - x64 - _lgamma_of(a64))
    r = _arr(r).astype(np.result_type(a, x), copy=False)
    return r if out is None else _copy_into(out, r)


def _copy_into(out, r):
    np.copyto(out, r, casting="unsafe")
    return out


_BINARY = {
    "atan2": _atan2, "igamma": _igamma, "igammac": _igammac, "igamma_dx": _igamma_dx,
    # fused derivative rules (a: the incoming gradient, b: the forward's output)
    "tanh_backward": _tanh_backward, "sigmoid_backward": _sigmoid_backward,
    "relu_backward": _relu_backward,
    "floor_divide": _floor_divide, "remainder": _remainder, "trunc_divide": _trunc_divide,
    "fmod": _fmod,
    "bitwise_and": _bitwise(np.bitwise_and), "bitwise_or": _bitwise(np.bitwise_or),
    "bitwise_xor": _bitwise(np.bitwise_xor),
}


def binary(op: str, a, b, out=None):
    try:
        fn = _BINARY[op]
    except KeyError:
        raise ValueError(f"binary: unknown op {op!r}") from None
    if type(a) is BF16Array or type(b) is BF16Array:
        # float32 math on the plain values, one rounding (not one per intermediate)
        a = a.view(_ndarray) if type(a) is BF16Array else a
        b = b.view(_ndarray) if type(b) is BF16Array else b
        r = round_(_arr(fn(a, b))).view(BF16Array)
        if out is not None:
            np.copyto(out.view(_ndarray), r.view(_ndarray), casting="unsafe")
            return out
    else:
        r = fn(a, b, out)
        if out is not None:
            return out
    if isinstance(b, _ndarray) and r.ndim > 1 and not _numpy_agrees(r, a, b):
        return _laid_out(r, a, b)  # Note [Result layouts]
    return r if isinstance(r, _ndarray) else np.asarray(r)  # (_arr inlined: every tanh and
                                                             # sigmoid backward passes here)
