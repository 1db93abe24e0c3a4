"""``torch.types``: the type aliases used in type hints (``Number`` for ``custom_op``)."""

from typing import Union

from .runtime.device import device as Device  # noqa: F401
from .runtime.dtype import dtype as _dtype  # noqa: F401

Number = Union[int, float, bool]
_int, _float, _bool = int, float, bool

__all__ = ["Device", "Number"]
