"""Pinning a batch: what ``DataLoader(pin_memory=True)`` does to each batch it yields."""

from __future__ import annotations

import collections.abc

from ._collate import _is_namedtuple, _rebuild_mapping, _tg


def pin_memory(data):
    """``data`` with every tensor in it copied to pinned memory (``Tensor.pin_memory()``),
    recursing into mappings, namedtuples and sequences as PyTorch's loader does (a tuple comes
    back as a list); an object with a ``pin_memory()`` method is asked for its pinned self;
    anything else is returned as it is."""
    if isinstance(data, _tg().Tensor):
        return data.pin_memory()
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_mapping(data, {k: pin_memory(v) for k, v in data.items()})
    if _is_namedtuple(data):
        return type(data)(*(pin_memory(d) for d in data))
    if isinstance(data, tuple):
        return [pin_memory(d) for d in data]
    if isinstance(data, collections.abc.Sequence):
        try:
            return type(data)([pin_memory(d) for d in data])
        except TypeError:
            return [pin_memory(d) for d in data]
    if hasattr(data, "pin_memory"):
        return data.pin_memory()
    return data
