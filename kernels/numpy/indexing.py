"""Indexing by integer arrays over NumPy arrays: advanced indexing, its in-place inverse, and
the gather/scatter pair along one dim.

Callers check bounds and wrap negative indices first (index arrays are int64, in range), so
these are plain NumPy.
"""

from __future__ import annotations

import numpy as np

from .bf16 import BF16Array, round_, rounded

_ndarray = np.ndarray
_FULL = slice(None)


def _key(indices) -> tuple:
    return tuple(_FULL if i is None else i for i in indices)


def _plain(a):
    return a.view(_ndarray) if type(a) is BF16Array else a


def nonzero(a: np.ndarray) -> np.ndarray:
    return np.argwhere(_plain(a))


def index(a: np.ndarray, indices: tuple) -> np.ndarray:
    out = _plain(a)[_key(indices)]
    if type(out) is not _ndarray:  # 0-d index arrays for every dim pick a NumPy scalar
        out = np.asarray(out)
    elif not out.flags.c_contiguous:
        # NumPy lays a result out with the indexed dims first and transposes it when they
        # are not the leading ones (x[:, idx]); PyTorch's result is contiguous, and users see
        # that through is_contiguous()/strides()
        out = np.ascontiguousarray(out)
    return out.view(BF16Array) if type(a) is BF16Array else out


def _values_for(a, values):
    if type(a) is BF16Array and type(values) is not BF16Array:
        return rounded(values)
    return values


def index_put_(a: np.ndarray, indices: tuple, values, accumulate: bool) -> None:
    key = _key(indices)
    values = _values_for(a, values)
    if accumulate:
        _add_at(a, key, values)  # duplicates accumulate (a[key] += values would not)
    else:
        _plain(a)[key] = _plain(values)


def _add_at(a: np.ndarray, key: tuple, values) -> None:
    """``np.add.at(a, key, values)``, through one flat index where that is cheaper: NumPy's
    ``ufunc.at`` has a fast loop for a single 1-D index into a 1-D array (~1 ns an element)
    and a general one for index tuples (~13 ns: 0.83 ms against 0.08 ms for the 131k updates
    of a pooling layer's backward). The flat positions are a[key] of an arange over a (a's
    own advanced-indexing rules give their shape and order), worth it unless a is much larger
    than the update."""
    plain = _plain(a)
    n = np.size(values) if np.ndim(values) else 0
    if plain.flags.c_contiguous and 0 < plain.size <= 16 * max(n, 1) and n:
        flat = np.arange(plain.size).reshape(plain.shape)[key]
        vals = np.broadcast_to(_plain(values), flat.shape)
        if flat.size == vals.size:
            np.add.at(plain.reshape(-1), flat.reshape(-1), vals.reshape(-1))
            if type(a) is BF16Array:
                round_(plain)
            return
    np.add.at(a, key, values)


def _one_d(x):
    """A 0-d array as a 1-element 1-d view; anything else as it is. gather/scatter read a 0-d
    input or index as 1-d (PyTorch allows a 0-d one beside a 1-d other)."""
    return x.reshape(1) if isinstance(x, _ndarray) and x.ndim == 0 else x


def index_guard(a: np.ndarray, size: int, lower: int, ignore_index, extremes) -> np.ndarray:
    """``a`` (int64) made safe to index a dim of ``size``: negatives wrapped when ``lower`` is
    negative, then clamped into [0, size); entries equal to ``ignore_index`` kept. With
    ``extremes`` (two int64 entries) the smallest and largest entry other than ignore_index are
    folded into extremes[0] (min) and extremes[1] (max)."""
    keep = None if ignore_index is None else a != ignore_index
    if extremes is not None:
        counted = a if keep is None else a[keep]
        if counted.size:
            extremes[0] = min(int(extremes[0]), int(counted.min()))
            extremes[1] = max(int(extremes[1]), int(counted.max()))
    safe = np.where(a < 0, a + size, a) if lower < 0 else a
    safe = np.clip(safe, 0, size - 1)
    if keep is not None:
        safe = np.where(keep, safe, a)
    return np.ascontiguousarray(safe, dtype=np.int64)


def gather(a: np.ndarray, dim: int, index: np.ndarray) -> np.ndarray:
    src, idx = _one_d(_plain(a)), _one_d(index)
    window = tuple(_FULL if d == dim else slice(0, n) for d, n in enumerate(idx.shape))
    out = np.take_along_axis(src[window], idx, axis=dim).reshape(index.shape)
    return out.view(BF16Array) if type(a) is BF16Array else out


def _scatter_key(dim, index) -> tuple:
    grids = list(np.indices(index.shape, sparse=True))
    grids[dim] = index
    return tuple(grids)


def scatter_(a: np.ndarray, dim: int, index: np.ndarray, src, accumulate: bool) -> None:
    a, index, src = _one_d(a), _one_d(index), _one_d(src)  # (a's 0-d view writes a)
    key = _scatter_key(dim, index)
    if isinstance(src, np.ndarray):
        src = src[tuple(slice(0, n) for n in index.shape)]
    src = _values_for(a, src)
    if accumulate:
        _add_at(a, key, src)
    else:
        _plain(a)[key] = _plain(src)


# -- scatter_reduce_ ---------------------------------------------------------------------------

# The ufunc that folds a value into a place, and the value a place starts from when its own
# value is left out (include_self=False).
_FOLD = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum,
         "amin": np.minimum}


def _identity(reduce: str, dtype: np.dtype):
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dtype.kind == "f":
        return -np.inf if reduce == "amax" else np.inf
    info = np.iinfo(dtype)
    return info.min if reduce == "amax" else info.max


def scatter_reduce_(a: np.ndarray, dim: int, index: np.ndarray, src: np.ndarray, reduce: str,
                    include_self: bool) -> None:
    a, index, src = _one_d(a), _one_d(index), _one_d(src)
    if index.size == 0:
        return
    key = _scatter_key(dim, index)
    vals = _plain(src)[tuple(slice(0, n) for n in index.shape)]
    out = _plain(a)
    # half and bfloat16 fold in float32 and round once at the end, as the contract says;
    # integers and bool in int64 (the Triton kernel's accumulator), cast back once
    if out.dtype.kind == "f":
        wide = np.float32 if out.dtype.itemsize < 4 else out.dtype
    elif out.dtype.kind == "c":
        wide = out.dtype
    else:
        wide = np.int64
    work = out.astype(wide)
    if not include_self:
        work[key] = _identity(reduce, work.dtype)
    with np.errstate(invalid="ignore"):  # a NaN folded in propagates, as the contract says
        _FOLD[reduce].at(work, key, vals)
    if reduce == "mean":
        count = np.full(work.shape, 1 if include_self else 0, np.int64)
        np.add.at(count, key, 1)
        hit = count > 0
        if work.dtype.kind in "fc":
            work[hit] /= count[hit]
        else:  # integers: floor division, as PyTorch
            work[hit] //= count[hit]
    if type(a) is BF16Array:
        np.copyto(out, rounded(work.astype(np.float32)).view(_ndarray))
    else:
        np.copyto(out, work, casting="unsafe")
