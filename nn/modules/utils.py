"""``torch.nn.modules.utils``: the argument normalizers ``_single``, ``_pair``, ``_triple``,
``_quadruple`` and their factory ``_ntuple`` (user layers import them from here)."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import repeat

__all__: list[str] = []


def _ntuple(n: int, name: str = "parse"):
    """A function turning a scalar into an ``n``-tuple of it; an iterable becomes a tuple
    unchanged (its length is not checked, as in PyTorch).

    Example:
        >>> from tritongrad.nn.modules.utils import _pair
        >>> _pair(3), _pair((1, 2))
        ((3, 3), (1, 2))
    """
    def parse(x):
        if isinstance(x, Iterable):
            return tuple(x)
        return tuple(repeat(x, n))
    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")
