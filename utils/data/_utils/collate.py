"""``torch.utils.data._utils.collate``'s import path: ``default_collate`` and
``default_convert`` (defined in utils/data/_collate.py), and ``collate`` with its type ->
function table, ``default_collate_fn_map``, through which a user's collate function handles
its own types and leaves the rest to the default rules:

    >>> def collate_point(batch, *, collate_fn_map=None):
    ...     return Point(*(sum(c) for c in zip(*batch)))
    >>> collate(batch, collate_fn_map={**default_collate_fn_map, Point: collate_point})
"""

from __future__ import annotations

import collections.abc
import copy
from collections.abc import Callable

from .._collate import _ERR, _is_namedtuple, default_collate, default_convert

__all__ = ["collate", "collate_float_fn", "collate_int_fn", "collate_numpy_array_fn",
           "collate_numpy_scalar_fn", "collate_str_fn", "collate_tensor_fn",
           "default_collate", "default_collate_err_msg_format", "default_collate_fn_map",
           "default_convert"]

default_collate_err_msg_format = _ERR


def collate(batch, *, collate_fn_map: dict[type | tuple, Callable] | None = None):
    r"""Collates ``batch`` as ``default_collate`` does, but with ``collate_fn_map`` (a type,
    or a tuple of types, -> ``fn(batch, *, collate_fn_map)``) deciding the elements' types it
    names: the element's exact type first, then the first entry it is an instance of, as
    PyTorch's. Mappings, namedtuples and sequences are recursed into (a tuple becomes a list);
    any other type the map does not name raises ``TypeError``.

    Args:
        batch: a single batch to be collated.
        collate_fn_map: the table (``default_collate_fn_map`` holds the default rules for
            tensors, NumPy arrays and scalars, floats, ints, strings and bytes).
    """
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type in collate_fn_map:
            if isinstance(elem, collate_type):
                return collate_fn_map[collate_type](batch, collate_fn_map=collate_fn_map)

    def sub(samples):
        return collate(samples, collate_fn_map=collate_fn_map)

    if isinstance(elem, collections.abc.Mapping):
        items = {key: sub([d[key] for d in batch]) for key in elem}
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                clone = copy.copy(elem)  # keeps the type and its extra state
                clone.update(items)
                return clone
            return elem_type(items)
        except TypeError:
            return items
    if _is_namedtuple(elem):
        return elem_type(*(sub(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(e) != size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        columns = [sub(samples) for samples in zip(*batch)]
        if isinstance(elem, tuple):
            return columns
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                clone = copy.copy(elem)
                for i, column in enumerate(columns):
                    clone[i] = column
                return clone
            return elem_type(columns)
        except TypeError:
            return columns
    raise TypeError(_ERR.format(elem_type))


def _leaf(batch, *, collate_fn_map=None):
    # the default rule for one of the table's leaf types (default_collate decides by type)
    return default_collate(batch)


# PyTorch's names for the table's functions (each is default_collate's rule for its types)
collate_tensor_fn = collate_numpy_array_fn = collate_numpy_scalar_fn = _leaf
collate_float_fn = collate_int_fn = collate_str_fn = _leaf


def _table() -> dict:
    import numpy as np

    from ....autograd.tensor import Tensor
    return {Tensor: collate_tensor_fn, np.ndarray: collate_numpy_array_fn,
            (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
            float: collate_float_fn, int: collate_int_fn, str: collate_str_fn,
            bytes: collate_str_fn}


default_collate_fn_map: dict[type | tuple, Callable] = _table()
