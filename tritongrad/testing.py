"""``tritongrad.testing``: PyTorch's ``torch.testing``: ``assert_close`` (with its default
tolerances per dtype and its mismatch messages), the deprecated ``assert_allclose``, and
``make_tensor`` (for a seed, PyTorch's values on the CPU).

Values are compared on the CPU after the attribute checks (shape, layout, stride, device,
dtype), so a comparison of CUDA tensors reads them back once; closeness is PyTorch's
``isclose``, in the compared dtype.
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
from .autograd.ops.complex_parts import view_as_real
from .autograd.ops.composite import isclose
from .autograd.tensor import Tensor
from .runtime import dtype as dtypes
from .runtime.device import device as Device

__all__ = ["assert_allclose", "assert_close", "make_tensor"]

# {dtype: (rtol, atol)}, as PyTorch's table; other dtypes (integers, bool) compare exactly
_DTYPE_PRECISIONS = {
    dtypes.float16: (0.001, 1e-5),
    dtypes.bfloat16: (0.016, 1e-5),
    dtypes.float32: (1.3e-6, 1e-5),
    dtypes.float64: (1e-7, 1e-7),
    dtypes.complex64: (1.3e-6, 1e-5),
    dtypes.complex128: (1e-7, 1e-7),
}
_INT64_MAX = 2 ** 63 - 1
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


def _scalar_mismatch_msg(actual, expected, rtol: float, atol: float,
                         identifier: str = "Scalars") -> str:
    abs_diff = abs(actual - expected)
    rel_diff = math.inf if expected == 0 else abs_diff / abs(expected)
    return _mismatch_msg(identifier, f"Expected {expected} but got {actual}.", abs_diff, None,
                         atol, rel_diff, None, rtol)


def _is_float8(dt) -> bool:
    return dt.is_floating_point and dt.itemsize == 1


def _modulus(z: np.ndarray) -> np.ndarray:
    """|z| as PyTorch's CPU ``abs`` gives it (SLEEF's hypot, correctly rounded but in rare
    cases): the parts squared and summed in a wider type (float64 for complex64, long double
    for complex128), the root rounded once into the parts' dtype; NumPy's own hypot can be a
    unit in the last place off (|2+3j| = sqrt(13))."""
    wide = np.float64 if z.dtype == np.complex64 else np.longdouble
    re, im = z.real.astype(wide), z.imag.astype(wide)
    modulus = np.sqrt(re * re + im * im)
    modulus[np.isinf(re) | np.isinf(im)] = np.inf  # (hypot(inf, NaN) is inf)
    return modulus.astype(z.real.dtype)


def _tensor_mismatch_msg(actual: Tensor, expected: Tensor, matches: np.ndarray, rtol: float,
                         atol: float, identifier: str) -> str:
    total = matches.size
    mismatches = total - int(matches.sum())
    extra = f"Mismatched elements: {mismatches} / {total} ({mismatches / total:.1%})"
    shape = tuple(matches.shape)
    if _is_float8(actual.dtype):  # compared bitwise: no differences, the first mismatch
        first = tuple(int(i) for i in np.argwhere(~matches)[0])
        return (f"{identifier} are not 'equal'!\n\n{extra}\n"
                f"The first mismatched element is at index {first}.")
    if not (actual.dtype.is_floating_point or actual.dtype.is_complex):
        # integers and bools: differences in int64 (no overflow, no unsigned wrap-around)
        actual, expected = actual.to(dtypes.int64), expected.to(dtypes.int64)
    a, e = actual.reshape(-1), expected.reshape(-1)
    hits = creation.tensor(matches.reshape(-1))
    # the differences in the compared dtype, as PyTorch reports them; matching elements count 0
    if e.dtype.is_complex:
        a_np, e_np = a.numpy(), e.numpy()
        with np.errstate(all="ignore"):
            abs_diff, e_abs = (creation.tensor(_modulus(z)) for z in (a_np - e_np, e_np))
    else:
        abs_diff, e_abs = (a - e).abs(), e.abs()
    abs_diff = abs_diff.masked_fill(hits, 0)
    rel_diff = (abs_diff / e_abs).masked_fill(hits, 0)

    def greatest(diff: Tensor) -> tuple:
        # PyTorch's max over the flat differences: the first NaN, else the first greatest
        values = diff.to(dtypes.float64).numpy()
        nans = np.flatnonzero(np.isnan(values))
        flat = int(nans[0]) if nans.size else int(np.argmax(values))
        return diff[flat].item(), tuple(int(i) for i in np.unravel_index(flat, shape))

    (abs_value, abs_idx), (rel_value, rel_idx) = greatest(abs_diff), greatest(rel_diff)
    return _mismatch_msg(identifier, extra, abs_value, abs_idx, atol, rel_value, rel_idx, rtol)


def _type_repr(x) -> str:
    # the tensor type as ``tritongrad.Tensor``, where PyTorch writes ``torch.Tensor``
    return "<class 'tritongrad.Tensor'>" if type(x) is Tensor else str(type(x))


def _values_close(actual: Tensor, expected: Tensor, id: tuple, rtol: float, atol: float,
                  equal_nan: bool, identifier: str = "Tensor-likes") -> None:
    """PyTorch's ``isclose`` in the tensors' dtype (its rounding of ``atol + rtol |expected|``
    included), then the mismatch message."""
    if _is_float8(actual.dtype) and (rtol != 0 or atol != 0):
        raise _Mismatch(AssertionError, f"Rtol={rtol} and atol={atol} are not supported for "
                                        f"bitwise comparison of low dimensional floats. Please "
                                        f"use rtol=0.0 and atol=0.0.", id)
    with np.errstate(all="ignore"):  # (inf - inf on the host: a NaN, which fails, no warning)
        close = isclose(actual, expected, rtol, atol, equal_nan)
        if equal_nan and actual.dtype.is_complex:  # (a NaN in either part)
            close = close | (actual.isnan() & expected.isnan())
        matches = np.asarray(close.numpy())
    if matches.all():
        return
    if actual.ndim == 0:
        msg = _scalar_mismatch_msg(actual.item(), expected.item(), rtol, atol,
                                   "Scalars" if identifier == "Tensor-likes" else identifier)
    else:
        msg = _tensor_mismatch_msg(actual, expected, matches, rtol, atol, identifier)
    raise _Mismatch(AssertionError, msg, id)


# the sparse compressed layouts: (name, compressed indices, plain indices), as PyTorch's
_COMPRESSED = {dtypes.sparse_csr: ("CSR", "crow_indices", "col_indices"),
               dtypes.sparse_csc: ("CSC", "ccol_indices", "row_indices"),
               dtypes.sparse_bsr: ("BSR", "crow_indices", "col_indices"),
               dtypes.sparse_bsc: ("BSC", "ccol_indices", "row_indices")}


def _compare_sparse(actual: Tensor, expected: Tensor, id: tuple, rtol: float, atol: float,
                    equal_nan: bool) -> None:
    """Sparse tensors of one layout: their numbers of specified elements and indices equal,
    their values close (as stored: uncoalesced COO tensors are not coalesced first)."""
    def fail(msg: str):
        raise _Mismatch(AssertionError, msg, id)

    if actual.layout is dtypes.sparse_coo:
        if actual.sparse_dim() != expected.sparse_dim():
            fail(f"The number of sparse dimensions in sparse COO tensors does not match: "
                 f"{actual.sparse_dim()} != {expected.sparse_dim()}")
        if actual._nnz() != expected._nnz():
            fail(f"The number of specified values in sparse COO tensors does not match: "
                 f"{actual._nnz()} != {expected._nnz()}")
        _values_close(actual._indices(), expected._indices(), id, 0, 0, False,
                      "Sparse COO indices")
        _values_close(actual._values(), expected._values(), id, rtol, atol, equal_nan,
                      "Sparse COO values")
        return
    name, compressed, plain = _COMPRESSED[actual.layout]
    if actual._nnz() != expected._nnz():
        fail(f"The number of specified values in sparse {name} tensors does not match: "
             f"{actual._nnz()} != {expected._nnz()}")
    for method in (compressed, plain):
        a, e = getattr(actual, method)(), getattr(expected, method)()
        common = dtypes.promote_types(a.dtype, e.dtype)
        _values_close(a.to(common), e.to(common), id, 0, 0, False, f"Sparse {name} {method}")
    _values_close(actual.values(), expected.values(), id, rtol, atol, equal_nan,
                  f"Sparse {name} values")


# unsigned dtypes PyTorch does not promote: compared as int64 when the dtypes differ
_WIDE_UNSIGNED = (dtypes.uint16, dtypes.uint32, dtypes.uint64)


def _compare_tensors(actual: Tensor, expected: Tensor, id: tuple, *, rtol, atol, equal_nan,
                     check_device, check_dtype, check_layout, check_stride) -> None:
    def attribute_mismatch(name: str, a, e):
        raise _Mismatch(AssertionError,
                        f"The values for attribute '{name}' do not match: {a} != {e}.", id)

    if actual.shape != expected.shape:
        attribute_mismatch("shape", actual.shape, expected.shape)
    if actual.layout != expected.layout:
        if check_layout:
            attribute_mismatch("layout", actual.layout, expected.layout)
    elif (actual.layout is dtypes.strided and check_stride
          and actual.stride() != expected.stride()):
        attribute_mismatch("stride()", actual.stride(), expected.stride())
    if check_device and actual.device != expected.device:
        attribute_mismatch("device", actual.device, expected.device)
    if check_dtype and actual.dtype != expected.dtype:
        attribute_mismatch("dtype", actual.dtype, expected.dtype)
    if "meta" in (actual.device.type, expected.device.type):
        return

    actual, expected = actual.detach().cpu(), expected.detach().cpu()
    if actual.dtype != expected.dtype:
        a_dt, e_dt = (dtypes.int64 if dt in _WIDE_UNSIGNED else dt
                      for dt in (actual.dtype, expected.dtype))
        common = dtypes.promote_types(a_dt, e_dt)
        actual, expected = actual.to(common), expected.to(common)
    if actual.layout != expected.layout:  # (check_layout=False: both dense)
        actual, expected = (t if t.layout is dtypes.strided else t.to_dense()
                            for t in (actual, expected))
    if actual.layout is dtypes.strided:
        _values_close(actual, expected, id, rtol, atol, equal_nan)
    else:
        _compare_sparse(actual, expected, id, rtol, atol, equal_nan)


def _compare_numbers(actual, expected, id: tuple, *, rtol, atol, equal_nan,
                     check_dtype) -> None:
    if check_dtype and type(actual) is not type(expected):
        raise _Mismatch(AssertionError, f"The (d)types do not match: {type(actual)} != "
                                        f"{type(expected)}.", id)
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


def _originate(actual, expected, id: tuple, options: dict, pairs: list) -> None:
    """Recurses through sequences and mappings and appends to ``pairs`` a comparison for each
    pair of leaves, by its kind: None, booleans, numbers, tensor-likes (tensors, or two NumPy
    arrays). As PyTorch's, every pair is formed (and its tolerances found) before any is
    compared: an input that cannot be compared fails before a value that differs."""
    seq = collections.abc.Sequence
    if (isinstance(actual, seq) and isinstance(expected, seq)
            and not isinstance(actual, str) and not isinstance(expected, str)):
        if len(actual) != len(expected):
            raise _Mismatch(AssertionError, f"The length of the sequences mismatch: "
                                            f"{len(actual)} != {len(expected)}", id)
        for i in range(len(actual)):
            _originate(actual[i], expected[i], (*id, i), options, pairs)
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
            _originate(actual[key], expected[key], (*id, key), options, pairs)
        return
    rtol, atol, equal_nan = options["rtol"], options["atol"], options["equal_nan"]
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
        a, e = (x.item() if isinstance(x, np.number) else x for x in (actual, expected))
        # (a bool against a number: an int, where PyTorch fails with an internal error)
        dts = [_NUMBER_DTYPES[int if type(x) is bool else type(x)] for x in (a, e)]
        tols = _tolerances(dts, rtol, atol, id)
        pairs.append(lambda: _compare_numbers(a, e, id, rtol=tols[0], atol=tols[1],
                                              equal_nan=equal_nan,
                                              check_dtype=options["check_dtype"]))
        return
    # tensor-likes: of directly related types (of one type without allow_subclasses)
    related = isinstance(actual, type(expected)) or isinstance(expected, type(actual))
    if related and (options["allow_subclasses"] or type(actual) is type(expected)):
        try:
            a, e = _as_tensor(actual), _as_tensor(expected)
        except Exception:  # (what as_tensor cannot take: no comparison pair)
            pass
        else:
            tols = _tolerances((a.dtype, e.dtype), rtol, atol, id)
            pairs.append(lambda: _compare_tensors(
                a, e, id, rtol=tols[0], atol=tols[1], equal_nan=equal_nan,
                **{k: options[k] for k in ("check_device", "check_dtype", "check_layout",
                                           "check_stride")}))
            return
    raise _Mismatch(TypeError, f"No comparison pair was able to handle inputs of type "
                               f"{_type_repr(actual)} and {_type_repr(expected)}.", id)


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
    mappings of them (compared element by element). Sparse tensors of one layout compare
    their indices exactly and their values closely; float8 tensors compare bitwise.

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
            given the generated message and returns the one to raise. (Not used, as in
            PyTorch, for inputs that cannot be compared: sequences of different lengths,
            mappings with different keys, unrelated types, a lone ``rtol`` or ``atol``; these
            are found in all the inputs before any values are compared.)

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
    pairs: list[Callable[[], None]] = []
    try:
        _originate(actual, expected, (), options, pairs)
    except _Mismatch as mismatch:  # (inputs that cannot be compared: ``msg`` is not used)
        raise mismatch.to_error(None) from None
    for compare in pairs:
        try:
            compare()
        except _Mismatch as mismatch:
            raise mismatch.to_error(msg) from None


# the default tolerances of the deprecated ``assert_allclose`` (others compare exactly)
_ALLCLOSE_PRECISIONS = {dtypes.float16: (1e-3, 1e-3), dtypes.float32: (1e-4, 1e-5),
                        dtypes.float64: (1e-5, 1e-8)}


def assert_allclose(actual: Any, expected: Any, rtol: float | None = None,
                    atol: float | None = None, equal_nan: bool = True, msg: str = "") -> None:
    """Deprecated (as in PyTorch since 1.12): :func:`assert_close` with looser default
    tolerances (float16 (1e-3, 1e-3), float32 (1e-4, 1e-5), float64 (1e-5, 1e-8)),
    ``equal_nan=True`` and ``check_dtype=False``; inputs that are not tensors are made tensors
    (``expected`` in ``actual``'s dtype)."""
    __tracebackhide__ = True
    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be "
                  "removed in a future release. Please use `torch.testing.assert_close()` "
                  "instead. You can find detailed upgrade instructions in "
                  "https://github.com/pytorch/pytorch/issues/61844.", FutureWarning,
                  stacklevel=2)
    if not isinstance(actual, Tensor):
        actual = creation.tensor(actual)
    if not isinstance(expected, Tensor):
        expected = creation.tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        rtols, atols = zip(*(_ALLCLOSE_PRECISIONS.get(t.dtype, (0.0, 0.0))
                             for t in (actual, expected)))
        rtol, atol = max(rtols), max(atols)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan,
                 check_device=True, check_dtype=False, check_stride=False, msg=msg or None)


# -- make_tensor -------------------------------------------------------------------------------

def _low_high(dtype, low, high, lowest: float, highest: float, default_low: float,
              default_high: float, integral: bool) -> tuple:
    """``low`` and ``high`` (or the defaults) checked and clamped to what ``dtype`` holds;
    ceiled for integral dtypes (``high`` is exclusive)."""
    low = default_low if low is None else low
    high = default_high if high is None else high
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low == high and not integral and not _is_float8(dtype):
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
    drawn uniformly from ``[low, high)`` as PyTorch draws them (for a seed, its values on the
    CPU); float8 dtypes are drawn in float32 and converted.

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
            1 for bool and integers, ``finfo(dtype).tiny`` for floating types (``tiny + 0j``
            for complex ones, as PyTorch's).
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
        # randint's bounds are int64: the greatest int64 itself cannot be drawn (nor, for
        # uint64, anything greater: where PyTorch overflows, the range is clamped to int64's)
        highest = min(info.max + 1, _INT64_MAX)
        low, high = _low_high(dtype, low, high, info.min, highest, -9, 10, True)
        result = creation.randint(low, high, shape, dtype=dtype, device=device)
    elif dtype in _DTYPE_PRECISIONS or _is_float8(dtype):
        info = dtypes.finfo(dtype)
        low, high = _low_high(dtype, low, high, info.min, info.max, -9, 9, False)
        # PyTorch's draws (so a seed gives its numbers on the CPU): the tensor's own
        # ``uniform_`` in its dtype (complex: both parts alike), float8 through float32
        result = creation.empty(shape, dtype=dtypes.float32 if _is_float8(dtype) else dtype,
                                device=device)
        drawn = view_as_real(result) if dtype.is_complex else result
        if high - low >= dtypes.finfo(drawn.dtype).max:  # (a range the dtype cannot hold)
            drawn.uniform_(low / 2, high / 2).mul_(2)
        else:
            drawn.uniform_(low, high)
        if _is_float8(dtype):  # (reshaped: a 0-d tensor's conversion gives shape (1,))
            result = result.to(dtype).reshape(shape)
    else:
        raise TypeError(f"The requested dtype '{dtype}' is not supported by "
                        f"torch.testing.make_tensor(). To request support, file an issue at: "
                        f"https://github.com/pytorch/pytorch/issues")

    if noncontiguous:  # (an offset of 1 also catches offset mistakes)
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:  # (complex: tiny + 0j, as PyTorch's assignment of the real tiny)
        result[result == 0] = 1 if integral else dtypes.finfo(dtype).tiny
    if not (integral or _is_float8(dtype)):
        result.requires_grad = requires_grad  # (PyTorch's: the setter's check of the type)
    return result
