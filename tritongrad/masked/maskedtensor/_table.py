"""MaskedTensor's handlers, by op (Note [MaskedTensor layout]).

``handle`` finds the handler of a call that ``__torch_function__`` hands over by the public
name of ``func`` (``tritongrad.add``, ``Tensor.add``, ``Tensor.__add__``, ...) in ``_TABLE``,
which the op lists of ``unary.py``, ``binary.py``, ``reductions.py`` and ``passthrough.py``
fill; a call without a handler is refused with PyTorch's warning and dispatch's TypeError.
"""

from __future__ import annotations

import types as _types
import warnings

import tritongrad as tg
from tritongrad.autograd.tensor import Tensor

from . import binary, passthrough, reductions, unary

_PROPERTIES = ("T", "mT", "H", "mH", "real", "imag")


def _key(func) -> str | None:
    """``func``'s public name: ``Tensor.<method>``, ``Tensor.<property>`` or
    ``<module>.<function>``."""
    if isinstance(func, _types.MethodWrapperType) and func.__name__ == "__get__":
        for name in _PROPERTIES:  # a property's getter (``Tensor.T.__get__``)
            if func == getattr(Tensor, name).__get__:
                return f"Tensor.{name}"
        return None
    qual = getattr(func, "__qualname__", None)
    if qual is None:
        return None
    if qual.startswith("Tensor."):
        return qual
    return f"{getattr(func, '__module__', '')}.{qual}"


def _build() -> dict:
    """``public name -> handler(func, args, kwargs)`` for every op of the four families that
    tritongrad has (as a function of ``tritongrad``/``nn.functional`` or a Tensor method)."""
    table: dict = {}
    for family in (unary, binary, reductions, passthrough):
        for key, handler in family.handlers():
            owner, _, name = key.rpartition(".")
            where = {"Tensor": Tensor, "tritongrad": tg,
                     "tritongrad.nn.functional": tg.nn.functional}[owner]
            if hasattr(where, name) or owner == "Tensor" and name in _PROPERTIES:
                table[key] = handler
    return table


_TABLE: dict | None = None


def handle(cls: type, func, types: tuple, args: tuple, kwargs: dict):
    """MaskedTensor's ``__torch_function__``."""
    global _TABLE
    if _TABLE is None:
        _TABLE = _build()
    key = _key(func)
    handler = _TABLE.get(key)
    if handler is not None:
        return handler(func, args, kwargs)
    if not all(issubclass(cls, t) for t in types):
        return NotImplemented
    name = key or getattr(func, "__name__", repr(func))
    warnings.warn(
        f"{name} is not implemented for MaskedTensor.\nIf you would like this operator to be "
        "supported, please file an issue for a feature request with a minimal reproducible "
        "code snippet.\nIn the case that the semantics for the operator are not trivial, it "
        "would be appreciated to also include a proposal for the semantics.", UserWarning,
        stacklevel=3)
    return NotImplemented


def supported() -> list:
    """The public names of the ops MaskedTensor handles (for docs and tests)."""
    global _TABLE
    if _TABLE is None:
        _TABLE = _build()
    return sorted(_TABLE)


__all__ = ["handle", "supported"]
