"""``tritongrad.testing``: PyTorch's ``torch.testing``: ``assert_close`` (with its default
tolerances per dtype and its mismatch messages) and ``make_tensor``.

Values are compared on the CPU after the attribute checks (shape, device, dtype, stride), so
a comparison of CUDA tensors reads them back once.
"""

from __future__ import annotations

import cmath
import collections.abc
import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from .autograd.ops import creation
from .autograd.tensor import Tensor
from .runtime import dtype as dtypes
from .runtime.device import device as Device

__all__ = ["assert_close", "make_tensor"]

# {dtype: (rtol, atol)}, as PyTorch's table; other dtypes (integers, bool) compare exactly
_DTYPE_PRECISIONS = {
    dtypes.float16: (0.001, 1e-5),
    dtypes.bfloat16: (0.016, 1e-5),
    dtypes.float32: (1.3e-6, 1e-5),
    dtypes.float64: (1e-7, 1e-7),
    dtypes.complex64: (1.3e-6, 1e-5),
    dtypes.complex128: (1e-7, 1e-7),
}
# the dtype a Python number is compared as (for its default tolerances)
_NUMBER_DTYPES = {int: dtypes.int64, float: dtypes.float64, complex: dtypes.complex128}


class _Mismatch(Exception):
    """A failed comparison: the exception type and message to raise, and where in nested
    inputs (``id``, the keys and indices leading to the pair) it failed."""

    def __init__(self, type: type, msg: str, id: tuple = ()) -> None:
        super().__init__(msg)
        self.type, self.msg, self.id = type, msg, id

    def to_error(self, msg: str | Callable[[str], str] | None) -> Exception:
        if not isinstance(msg, str):
            generated = self.msg
            if self.id:
                generated += ("\n\nThe failure occurred for item "
                              + "".join(str([item]) for item in self.id))
            msg = msg(generated) if callable(msg) else generated
        return self.type(msg)


def _tolerances(dts, rtol, atol, id) -> tuple:
    if (rtol is None) ^ (atol is None):
        # one tolerance alone would silently keep the other at its default
        raise _Mismatch(ValueError, f"Both 'rtol' and 'atol' must be either specified or "
                                    f"omitted, but got no {'rtol' if rtol is None else 'atol'}.",
                        id)
    if rtol is not None:
        return rtol, atol
    rtols, atols = zip(*(_DTYPE_PRECISIONS.get(dt, (0.0, 0.0)) for dt in dts))
    return max(rtols), max(atols)


def _mismatch_msg(identifier: str, extra: str | None, abs_diff, abs_idx, atol, rel_diff,
                  rel_idx, rtol) -> str:
    equality = rtol == 0 and atol == 0

    def diff_line(kind: str, diff, idx, tol) -> str:
        line = (f"{kind.title()} difference: {diff}" if idx is None else
                f"Greatest {kind} difference: {diff} at index {idx}")
        return line + ("" if equality else f" (up to {tol} allowed)") + "\n"

    msg = f"{identifier} are not {'equal' if equality else 'close'}!\n\n"
    if extra:
        msg += f"{extra.strip()}\n"
    msg += diff_line("absolute", abs_diff, abs_idx, atol)
    msg += diff_line("relative", rel_diff, rel_idx, rtol)
    return msg.strip()


def _scalar_mismatch_msg(actual, expected, rtol: float, atol: float) -> str:
    abs_diff = abs(actual - expected)
    rel_diff = math.inf if expected == 0 else abs_diff / abs(expected)
    return _mismatch_msg("Scalars", f"Expected {expected} but got {actual}.", abs_diff, None,
                         atol, rel_diff, None, rtol)


def _tensor_mismatch_msg(actual: Tensor, expected: Tensor, matches: np.ndarray, rtol: float,
                         atol: float) -> str:
    total = matches.size
    mismatches = total - int(matches.sum())
    extra = f"Mismatched elements: {mismatches} / {total} ({mismatches / total:.1%})"
    if not (actual.dtype.is_floating_point or actual.dtype.is_complex):
        # integers and bools: differences in int64 (no overflow, no unsigned wrap-around)
        actual, expected = actual.to(dtypes.int64), expected.to(dtypes.int64)
    a, e = actual.reshape(-1), expected.reshape(-1)
    hits = creation.tensor(matches.reshape(-1))
    # the differences in the compared dtype, as PyTorch reports them; matching elements count 0
    abs_diff = (a - e).abs().masked_fill(hits, 0)
    rel_diff = (abs_diff / e.abs()).masked_fill(hits, 0)
    shape = tuple(matches.shape)

    def greatest(diff: Tensor) -> tuple:
        values = diff.to(dtypes.float64).numpy()
        flat = int(np.argmax(np.where(np.isnan(values), np.inf, values)))  # NaN is greatest
        return diff[flat].item(), tuple(int(i) for i in np.unravel_index(flat, shape))

    (abs_value, abs_idx), (rel_value, rel_idx) = greatest(abs_diff), greatest(rel_diff)
    return _mismatch_msg("Tensor-likes", extra, abs_value, abs_idx, atol, rel_value, rel_idx,
                         rtol)


def _compare_tensors(actual: Tensor, expected: Tensor, id: tuple, *, rtol, atol, equal_nan,
                     check_device, check_dtype, check_layout, check_stride) -> None:
    def attribute_mismatch(name: str, a, e):
        raise _Mismatch(AssertionError,
                        f"The values for attribute '{name}' do not match: {a} != {e}.", id)

    rtol, atol = _tolerances((actual.dtype, expected.dtype), rtol, atol, id)
    if actual.shape != expected.shape:
        attribute_mismatch("shape", actual.shape, expected.shape)
    if check_layout and actual.layout != expected.layout:
        attribute_mismatch("layout", actual.layout, expected.layout)
    if check_stride and actual.stride() != expected.stride():
        attribute_mismatch("stride()", actual.stride(), expected.stride())
    if check_device and actual.device != expected.device:
        attribute_mismatch("device", actual.device, expected.device)
    if check_dtype and actual.dtype != expected.dtype:
        attribute_mismatch("dtype", actual.dtype, expected.dtype)

    actual, expected = actual.detach().cpu(), expected.detach().cpu()
    if actual.dtype != expected.dtype:
        common = dtypes.promote_types(actual.dtype, expected.dtype)
        actual, expected = actual.to(common), expected.to(common)
    matches = _isclose(actual, expected, rtol, atol, equal_nan)
    if matches.all():
        return
    if actual.ndim == 0:
        msg = _scalar_mismatch_msg(actual.item(), expected.item(), rtol, atol)
    else:
        msg = _tensor_mismatch_msg(actual, expected, matches, rtol, atol)
    raise _Mismatch(AssertionError, msg, id)


def _isclose(actual: Tensor, expected: Tensor, rtol: float, atol: float,
             equal_nan: bool) -> np.ndarray:
    """|actual - expected| <= atol + rtol * |expected| elementwise, in float64 (complex128)
    on the host; equal values (infinities too) always match, NaNs only with ``equal_nan``."""
    if actual.dtype.is_complex:
        a, e = actual.to(dtypes.complex128).numpy(), expected.to(dtypes.complex128).numpy()
    elif actual.dtype.is_floating_point:
        a, e = actual.to(dtypes.float64).numpy(), expected.to(dtypes.float64).numpy()
    else:  # exact, without float64's rounding of large int64 values
        a, e = actual.to(dtypes.int64).numpy(), expected.to(dtypes.int64).numpy()
        if rtol == 0 and atol == 0:
            return np.asarray(a == e)
        a, e = a.astype(np.float64), e.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(a - e)
        close = (a == e) | (np.isfinite(diff) & (diff <= atol + rtol * np.abs(e)))
    if equal_nan:
        close |= np.isnan(a) & np.isnan(e)
    return np.asarray(close)


def _compare_numbers(actual, expected, id: tuple, *, rtol, atol, equal_nan, check_dtype,
                     **_) -> None:
    actual, expected = (x.item() if isinstance(x, np.number) else x for x in (actual, expected))
    if check_dtype and type(actual) is not type(expected):
        raise _Mismatch(AssertionError, f"The (d)types do not match: {type(actual)} != "
                                        f"{type(expected)}.", id)
    rtol, atol = _tolerances([_NUMBER_DTYPES[type(x)] for x in (actual, expected)], rtol, atol,
                             id)
    if actual == expected:
        return
    if equal_nan and cmath.isnan(actual) and cmath.isnan(expected):
        return
    abs_diff = abs(actual - expected)
    if cmath.isfinite(abs_diff) and abs_diff <= atol + rtol * abs(expected):
        return
    raise _Mismatch(AssertionError, _scalar_mismatch_msg(actual, expected, rtol, atol), id)


def _as_tensor(x) -> Tensor:
    return x if isinstance(x, Tensor) else creation.as_tensor(x)


def _compare(actual, expected, id: tuple, options: dict) -> None:
    """Recurses through sequences and mappings, then compares the pair by its kind: None,
    booleans, numbers, tensor-likes (a Tensor, or two NumPy arrays)."""
    seq = collections.abc.Sequence
    if (isinstance(actual, seq) and isinstance(expected, seq)
            and not isinstance(actual, str) and not isinstance(expected, str)):
        if len(actual) != len(expected):
            raise _Mismatch(AssertionError, f"The length of the sequences mismatch: "
                                            f"{len(actual)} != {len(expected)}", id)
        for i, (a, e) in enumerate(zip(actual, expected)):
            _compare(a, e, (*id, i), options)
        return
    mapping = collections.abc.Mapping
    if isinstance(actual, mapping) and isinstance(expected, mapping):
        a_keys, e_keys = set(actual.keys()), set(expected.keys())
        if a_keys != e_keys:
            raise _Mismatch(AssertionError,
                            f"The keys of the mappings do not match:\n"
                            f"Missing keys in the actual mapping: {sorted(e_keys - a_keys)}\n"
                            f"Additional keys in the actual mapping: "
                            f"{sorted(a_keys - e_keys)}", id)
        try:
            keys = sorted(a_keys)
        except TypeError:
            keys = list(a_keys)
        for key in keys:
            _compare(actual[key], expected[key], (*id, key), options)
        return
    if actual is None or expected is None:
        if not (actual is None and expected is None):
            raise _Mismatch(AssertionError, f"None mismatch: {actual} is not {expected}", id)
        return
    booleans = (bool, np.bool_)
    if isinstance(actual, booleans) and isinstance(expected, booleans):
        if bool(actual) is not bool(expected):
            raise _Mismatch(AssertionError,
                            f"Booleans mismatch: {bool(actual)} is not {bool(expected)}", id)
        return
    number_types = (int, float, complex, np.number)
    if isinstance(actual, number_types) and isinstance(expected, number_types):
        _compare_numbers(actual, expected, id, **options)
        return
    # tensor-likes: of directly related types (of one type without allow_subclasses)
    related = isinstance(actual, type(expected)) or isinstance(expected, type(actual))
    if related and (options["allow_subclasses"] or type(actual) is type(expected)):
        try:
            a, e = _as_tensor(actual), _as_tensor(expected)
        except (TypeError, ValueError, RuntimeError):
            pass
        else:
            _compare_tensors(a, e, id, **{k: v for k, v in options.items()
                                         if k != "allow_subclasses"})
            return
    raise _Mismatch(TypeError, f"No comparison pair was able to handle inputs of type "
                               f"{type(actual)} and {type(expected)}.", id)


def assert_close(actual: Any, expected: Any, *, allow_subclasses: bool = True,
                 rtol: float | None = None, atol: float | None = None, equal_nan: bool = False,
                 check_device: bool = True, check_dtype: bool = True,
                 check_layout: bool = True, check_stride: bool = False,
                 msg: str | Callable[[str], str] | None = None) -> None:
    r"""Asserts that ``actual`` and ``expected`` are close.

    Real-valued, finite inputs are close if
    ``|actual - expected| <= atol + rtol * |expected|`` elementwise; non-finite values are
    close only when they are equal (NaN only with ``equal_nan=True``). ``actual`` and
    ``expected`` may be tensors, NumPy arrays, Python or NumPy scalars, or sequences and
    mappings of them (compared element by element).

    Default tolerances (``rtol``, ``atol``) by dtype, the loosest of the two inputs':
    float16 (1e-3, 1e-5), bfloat16 (1.6e-2, 1e-5), float32 (1.3e-6, 1e-5), float64 (1e-7,
    1e-7), complex64 (1.3e-6, 1e-5), complex128 (1e-7, 1e-7); anything else (0, 0). A Python
    ``int`` compares as int64, ``float`` as float64, ``complex`` as complex128.

    Args:
        actual: actual input.
        expected: expected input.
        allow_subclasses: if True (default), inputs of directly related types are allowed.
        rtol, atol: relative and absolute tolerance; both or neither must be given.
        equal_nan: if True, two NaN values are considered equal.
        check_device: if True (default), tensors must be on the same device; otherwise both
            are compared on the CPU.
        check_dtype: if True (default), tensors must have the same dtype; otherwise both are
            promoted to a common dtype (``promote_types``) before the comparison.
        check_layout: if True (default), tensors must have the same layout.
        check_stride: if True, tensors must have the same strides.
        msg: an error message to use instead of the generated one, or a callable that is
            given the generated message and returns the one to raise.

    Raises:
        ValueError: if only one of ``rtol`` and ``atol`` is given.
        AssertionError: if the inputs' shapes, devices, dtypes, layouts or strides differ
            (as checked), if sequences differ in length or mappings in keys, or if the values
            are not close: the message gives the number of mismatched elements and the
            greatest absolute and relative differences with their indices.
        TypeError: if the inputs cannot be compared with each other.

    Example::

        >>> expected = tg.tensor([1e0, 1e-1, 1e-2])
        >>> tg.testing.assert_close(expected + 1e-8, expected)
        >>> tg.testing.assert_close(tg.tensor([1.0, 2.5]), tg.tensor([1.0, 2.0]))
        Traceback (most recent call last):
        ...
        AssertionError: Tensor-likes are not close!
        <BLANKLINE>
        Mismatched elements: 1 / 2 (50.0%)
        Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)
        Greatest relative difference: 0.25 at index (1,) (up to 1.3e-06 allowed)
    """
    __tracebackhide__ = True  # (hidden from pytest's traceback, as PyTorch's)
    options = {"allow_subclasses": allow_subclasses, "rtol": rtol, "atol": atol,
               "equal_nan": equal_nan, "check_device": check_device, "check_dtype": check_dtype,
               "check_layout": check_layout, "check_stride": check_stride}
    try:
        _compare(actual, expected, (), options)
    except _Mismatch as mismatch:
        raise mismatch.to_error(msg) from None


# -- make_tensor -------------------------------------------------------------------------------

def _low_high(dtype, low, high, lowest: float, highest: float, default_low: float,
              default_high: float, integral: bool) -> tuple:
    """``low`` and ``high`` (or the defaults) checked and clamped to what ``dtype`` holds;
    ceiled for integral dtypes (``high`` is exclusive)."""
    low = default_low if low is None else low
    high = default_high if high is None else high
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low == high and not integral:
        warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or "
                      "complex types is deprecated since 2.1 and will be removed in 2.3. Use "
                      "`torch.full(...)` instead.", FutureWarning, stacklevel=3)
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest or low >= highest:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, "
                         f"{high}), but {dtype} only supports [{lowest}, {highest})")
    low, high = min(max(low, lowest), highest), min(max(high, lowest), highest)
    return (math.ceil(low), math.ceil(high)) if integral else (low, high)


def make_tensor(*shape, dtype: dtypes.dtype, device: str | Device,
                low: float | None = None, high: float | None = None,
                requires_grad: bool = False, noncontiguous: bool = False,
                exclude_zero: bool = False, memory_format=None) -> Tensor:
    """Creates a tensor with the given ``shape``, ``device`` and ``dtype``, filled with values
    drawn uniformly from ``[low, high)``.

    ``low`` and ``high`` outside the dtype's finite range are clamped to it. When None, they
    default by dtype: bool [0, 2), unsigned integers [0, 10), signed integers [-9, 10),
    floating and complex types [-9, 9).

    Args:
        shape: an int or a sequence of ints (or several ints) defining the shape.
        dtype: the dtype of the returned tensor.
        device: the device of the returned tensor.
        low: the lower limit (inclusive) of the range.
        high: the upper limit (exclusive) of the range.
        requires_grad: whether autograd records operations on the returned tensor
            (floating and complex dtypes only).
        noncontiguous: if True, the returned tensor is non-contiguous (ignored for fewer
            than two elements). Mutually exclusive with ``memory_format``.
        exclude_zero: if True, zeros are replaced with the dtype's smallest positive value:
            1 for bool and integers, ``finfo(dtype).tiny`` for floating types (both parts of
            complex ones).
        memory_format: the memory format of the returned tensor.

    Raises:
        ValueError: if ``requires_grad=True`` with an integral or bool dtype, if
            ``low >= high``, if ``low`` or ``high`` is NaN, or if both ``noncontiguous`` and
            ``memory_format`` are given.
        TypeError: if ``dtype`` isn't supported.

    Example::

        >>> t = tg.testing.make_tensor((3,), device="cpu", dtype=tg.float32, low=-1, high=1)
        >>> bool(((t >= -1) & (t < 1)).all())
        True
    """
    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = shape[0]
    shape = tuple(shape)
    if noncontiguous and memory_format is not None:
        raise ValueError(f"The parameters `noncontiguous` and `memory_format` are mutually "
                         f"exclusive, but got noncontiguous={noncontiguous} and "
                         f"memory_format={memory_format}")
    integral = not (dtype.is_floating_point or dtype.is_complex)
    if requires_grad and integral:
        raise ValueError(f"`requires_grad=True` is not supported for boolean and integral "
                         f"dtypes, but got dtype={dtype}")
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:  # twice the last size, then every other element from the second
        shape = (*shape[:-1], 2 * shape[-1])

    if dtype is dtypes.bool:
        low, high = _low_high(dtype, low, high, 0, 2, 0, 2, True)
        result = creation.randint(low, high, shape, dtype=dtype, device=device)
    elif integral:
        info = dtypes.iinfo(dtype)
        # randint's bounds are int64: the greatest int64 itself cannot be drawn
        highest = info.max + (0 if dtype is dtypes.int64 else 1)
        low, high = _low_high(dtype, low, high, info.min, highest, -9, 10, True)
        result = creation.randint(low, high, shape, dtype=dtype, device=device)
    elif dtype in _DTYPE_PRECISIONS:
        info = dtypes.finfo(dtype)
        low, high = _low_high(dtype, low, high, info.min, info.max, -9, 9, False)
        parts = 2 if dtype.is_complex else 1
        values = creation.rand((*shape, parts), dtype=dtypes.float64)
        if high - low == math.inf:  # a range wider than float64's: halved, then doubled
            values = (values * (high / 2 - low / 2) + low / 2) * 2
        else:
            values = values * (high - low) + low
        values = values.numpy()
        if dtype.is_complex:
            values = values[..., 0] + 1j * values[..., 1]
        else:
            values = values[..., 0]
        result = creation.tensor(values, dtype=dtype, device=device)
    else:
        raise TypeError(f"The requested dtype '{dtype}' is not supported by "
                        f"torch.testing.make_tensor(). To request support, file an issue at: "
                        f"https://github.com/pytorch/pytorch/issues")

    if noncontiguous:  # (an offset of 1 also catches offset mistakes)
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        tiny = 1 if integral else dtypes.finfo(dtype).tiny
        if dtype.is_complex:
            tiny = complex(tiny, tiny)
        result[result == 0] = tiny
    if not integral:
        result.requires_grad_(requires_grad)
    return result
