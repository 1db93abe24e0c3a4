"""Padding layers: ``ZeroPad{1,2,3}d``, ``ConstantPad{1,2,3}d``, ``ReflectionPad{1,2,3}d``,
``ReplicationPad{1,2,3}d`` and ``CircularPad{1,2,3}d``, each ``F.pad`` (nn/_padding.py) with
its mode. ``padding`` is an int (every side) or one (left, right) pair per padded dimension,
last dimension first, as ``F.pad`` takes it."""

from __future__ import annotations

from ..autograd.tensor import Tensor
from . import functional as F
from .module import Module

__all__ = [f"{kind}Pad{nd}d" for kind in ("Zero", "Constant", "Reflection", "Replication",
                                          "Circular") for nd in (1, 2, 3)]


class _Pad(Module):
    mode = "constant"
    nd = 0

    def __init__(self, padding):  # (PyTorch's signature: only ConstantPad takes a value)
        super().__init__()
        self._set(padding, 0.0)

    def _set(self, padding, value: float) -> None:
        n = 2 * self.nd
        padding = (padding,) * n if isinstance(padding, int) else tuple(padding)
        if len(padding) != n:
            raise ValueError(f"{type(self).__name__}: padding must be an int or {n} values, "
                             f"got {padding}")
        self.padding, self.value = padding, value

    def forward(self, input: Tensor) -> Tensor:
        if self.mode == "constant":
            return F.pad(input, self.padding, "constant", self.value)
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPad(_Pad):
    def __init__(self, padding, value: float):
        Module.__init__(self)
        self._set(padding, value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


def _doc(what: str, nd: int) -> str:
    return f"Pads the last {nd} dimension{'s' * (nd > 1)} of the input {what}."


ZeroPad1d, ZeroPad2d, ZeroPad3d = (
    type(f"ZeroPad{nd}d", (_Pad,), {"nd": nd, "__doc__": _doc("with zeros", nd)})
    for nd in (1, 2, 3))
ConstantPad1d, ConstantPad2d, ConstantPad3d = (
    type(f"ConstantPad{nd}d", (_ConstantPad,), {"nd": nd,
                                               "__doc__": _doc("with ``value``", nd)})
    for nd in (1, 2, 3))
ReflectionPad1d, ReflectionPad2d, ReflectionPad3d = (
    type(f"ReflectionPad{nd}d", (_Pad,), {"nd": nd, "mode": "reflect", "__doc__": _doc(
        "with its reflection (the edge not repeated)", nd)}) for nd in (1, 2, 3))
ReplicationPad1d, ReplicationPad2d, ReplicationPad3d = (
    type(f"ReplicationPad{nd}d", (_Pad,), {"nd": nd, "mode": "replicate", "__doc__": _doc(
        "by repeating its edge", nd)}) for nd in (1, 2, 3))
CircularPad1d, CircularPad2d, CircularPad3d = (
    type(f"CircularPad{nd}d", (_Pad,), {"nd": nd, "mode": "circular", "__doc__": _doc(
        "circularly (wrapping around)", nd)}) for nd in (1, 2, 3))
for _cls in (ZeroPad1d, ZeroPad2d, ZeroPad3d, ConstantPad1d, ConstantPad2d, ConstantPad3d,
             ReflectionPad1d, ReflectionPad2d, ReflectionPad3d, ReplicationPad1d,
             ReplicationPad2d, ReplicationPad3d, CircularPad1d, CircularPad2d, CircularPad3d):
    _cls.__module__ = __name__
