"""``torch.types``: the type aliases used in type hints (``Number`` for ``custom_op``)."""

import os
from typing import IO, Union

from ._symbolic import SymBool, SymFloat, SymInt
from .autograd.storage import UntypedStorage as Storage
from .autograd.tensor import Size, Tensor
from .runtime.device import device as Device
from .runtime.dtype import dtype as _dtype  # noqa: F401

Number = Union[int, float, bool]
_int, _float, _bool = int, float, bool
IntLikeType = Union[int, SymInt]
FloatLikeType = Union[float, SymFloat]
BoolLikeType = Union[bool, SymBool]
PySymType = Union[SymInt, SymFloat, SymBool]
py_sym_types = (SymInt, SymFloat, SymBool)
FileLike = Union[str, "os.PathLike[str]", IO[bytes]]

__all__ = ["BoolLikeType", "Device", "FileLike", "FloatLikeType", "IntLikeType", "Number",
           "PySymType", "Size", "Storage", "SymBool", "SymFloat", "SymInt", "Tensor",
           "py_sym_types"]
