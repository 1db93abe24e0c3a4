"""``default_collate`` and ``default_convert``: how a ``DataLoader`` turns a list of samples
into a batch (PyTorch's rules, type by type)."""

from __future__ import annotations

import collections.abc
import copy
import numbers

import numpy as np

__all__ = ["default_collate", "default_convert"]

_ERR = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
        "found {}")


def _tg():
    import tritongrad
    return tritongrad


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def _numeric_array(a: np.ndarray) -> bool:
    # Strings, bytes and objects cannot become tensors; PyTorch refuses them the same way.
    return a.dtype.kind not in "SaUO"


def _rebuild_mapping(elem, items: dict):
    """``items`` in ``elem``'s mapping type when that type can be built from a dict (else a
    plain dict), as PyTorch."""
    try:
        if isinstance(elem, collections.abc.MutableMapping):
            out = copy.copy(elem)  # keeps the type and its extra state (a defaultdict's factory)
            out.update(items)
            return out
        return type(elem)(items)
    except TypeError:
        return items


def default_collate(batch):
    r"""Takes in a batch of data and puts the elements within the batch into a tensor with an
    additional outer dimension - batch size. The exact output type can be a Tensor, a
    Sequence of Tensors, a Collection of Tensors, or left unchanged, depending on the input
    type. This is used as the default function for collation when ``batch_size`` or
    ``batch_sampler`` is defined in ``DataLoader``.

    Here is the general input type (based on the type of the element within the batch) to
    output type mapping:

    * Tensor -> Tensor (with an added outer dimension batch size)
    * NumPy Arrays -> Tensor
    * float -> float64 Tensor
    * int -> int64 Tensor (bool -> bool Tensor; an int followed by floats: the default
      float dtype, as ``tensor(batch)`` infers)
    * str -> str (unchanged)
    * bytes -> bytes (unchanged)
    * Mapping[K, V_i] -> Mapping[K, default_collate([V_1, V_2, ...])]
    * NamedTuple[V1_i, V2_i, ...] -> NamedTuple[default_collate([V1_1, V1_2, ...]), ...]
    * Sequence[V1_i, V2_i, ...] -> Sequence[default_collate([V1_1, V1_2, ...]), ...]
      (a tuple becomes a list, as in PyTorch)

    Args:
        batch: a single batch to be collated.

    Raises:
        RuntimeError: the sequences in the batch have different lengths.
        TypeError: an element of a type above cannot be collated (e.g. an object array).

    Example:
        >>> default_collate([0, 1, 2, 3])
        tensor([0, 1, 2, 3])
        >>> default_collate([(1, "a"), (2, "b")])
        [tensor([1, 2]), ('a', 'b')]
        >>> default_collate([{"x": 1.0}, {"x": 2.0}])
        {'x': tensor([1., 2.], dtype=tritongrad.float64)}
    """
    tg = _tg()
    elem = batch[0]
    if isinstance(elem, tg.Tensor):
        return tg.stack(list(batch), 0)
    if isinstance(elem, (np.ndarray, np.generic)) and not isinstance(elem, (np.str_, np.bytes_)):
        if not _numeric_array(np.asarray(elem)):
            raise TypeError(_ERR.format(np.asarray(elem).dtype))
        if isinstance(elem, np.ndarray) and elem.ndim > 0:
            return tg.stack([tg.as_tensor(b) for b in batch], 0)
        return tg.as_tensor(np.stack([np.asarray(b) for b in batch]))  # NumPy scalars
    if isinstance(elem, float):
        return tg.tensor(list(batch), dtype=tg.float64)
    if isinstance(elem, numbers.Integral):
        # the dtype inferred from all the values, as PyTorch's ``torch.tensor(batch)``: bools
        # give bool, ints int64, an int first with floats after it the default float dtype
        return tg.tensor(list(batch))
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        return _rebuild_mapping(elem, {k: default_collate([d[k] for d in batch]) for k in elem})
    if _is_namedtuple(elem):
        return type(elem)(*(default_collate(s) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(e) != size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        # (each column is a tuple, as in PyTorch: a column of strings stays one)
        columns = [default_collate(s) for s in zip(*batch)]
        if isinstance(elem, tuple):
            return columns
        try:
            return type(elem)(columns)
        except TypeError:
            return columns
    raise TypeError(_ERR.format(type(elem)))


def default_convert(data):
    r"""Converts each NumPy array element into a Tensor; leaves everything else (numbers,
    strings) alone, recursing into mappings, namedtuples and sequences. This is the collate
    function of a ``DataLoader`` with ``batch_size=None`` (no automatic batching).

    Example:
        >>> default_convert(np.array([0, 1]))
        tensor([0, 1])
        >>> default_convert((1, np.zeros(2)))
        [1, tensor([0., 0.], dtype=tritongrad.float64)]
    """
    tg = _tg()
    if isinstance(data, tg.Tensor):
        return data
    if isinstance(data, (np.ndarray, np.generic)) and not isinstance(data, (np.str_, np.bytes_)):
        # NumPy's own types only (ndarray, memmap, scalars), as PyTorch's check of the type's
        # module: a subclass from elsewhere (numpy.ma's masked arrays) is left alone
        if type(data).__module__ != "numpy" or not _numeric_array(np.asarray(data)):
            return data
        return tg.as_tensor(np.asarray(data))
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_mapping(data, {k: default_convert(v) for k, v in data.items()})
    if _is_namedtuple(data):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]  # a list, as PyTorch's
    if isinstance(data, collections.abc.Sequence):
        try:
            return type(data)([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data
