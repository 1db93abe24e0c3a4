"""PyTorch's ``torch.sym_*`` helpers. PyTorch writes them for its symbolic sizes (``SymInt``,
``SymFloat``, ``SymBool``, under ``torch.compile``'s tracing); tritongrad has no symbolic
sizes, so they act on Python numbers and bools as PyTorch's do on concrete ones, with the
same type rules and errors (code written against ``torch.sym_max`` runs unchanged)."""

from __future__ import annotations

import builtins
import math

import numpy as np

__all__ = ["SymBool", "SymFloat", "SymInt", "sym_float", "sym_int", "sym_ite", "sym_max", "sym_min", "sym_not", "sym_sqrt",
           "sym_sum"]

class _SymNode:
    """A symbolic value: made by PyTorch's tracer around a node of its shape environment.
    tritongrad traces no shapes, so none is ever made: the classes exist for the type hints
    and ``isinstance`` checks of code written for PyTorch (``isinstance(n, tg.SymInt)`` is
    False for every Python int, as in eager PyTorch)."""

    def __init__(self, node):
        self.node = node


class SymInt(_SymNode):
    """An int-like symbolic value (see _SymNode)."""


class SymFloat(_SymNode):
    """A float-like symbolic value (see _SymNode)."""


class SymBool(_SymNode):
    """A bool-like symbolic value (see _SymNode)."""


_NUMBERS = (np.integer, np.floating, int, float)  # (PyTorch's order, shown in its error)
_FLOATS = (np.floating, float)


def sym_int(a) -> int:
    """``int(a)``: a float is truncated toward zero."""
    return math.trunc(a) if isinstance(a, float) else builtins.int(a)


def sym_float(a) -> float:
    """``float(a)``."""
    return builtins.float(a)


def _checked(a, b) -> bool:
    """Whether either of ``a``, ``b`` (each an int or float) is a float."""
    for v in (a, b):
        if not isinstance(v, _NUMBERS):
            raise AssertionError(f"expected {_NUMBERS}, got {type(v)}")
    return isinstance(a, _FLOATS) or isinstance(b, _FLOATS)


def sym_max(a, b):
    """``max(a, b)`` of two numbers, a float whenever either is one (``builtins.max`` keeps
    the winner's type)."""
    return builtins.float(builtins.max(a, b)) if _checked(a, b) else builtins.max(a, b)


def sym_min(a, b):
    """``min(a, b)`` of two numbers, a float whenever either is one."""
    return builtins.float(builtins.min(a, b)) if _checked(a, b) else builtins.min(a, b)


def sym_not(a) -> bool:
    """``not a``."""
    return not a


def sym_ite(b, t, f):
    """``t if b else f``; ``b`` must be a bool and ``t``, ``f`` of one type."""
    if not isinstance(b, builtins.bool):
        raise AssertionError(f"expected SymBool or bool, got {type(b)}")
    if type(t) is not type(f):
        raise AssertionError(f"type mismatch: {type(t)} vs {type(f)}")
    return t if b else f


def sym_sum(*args):
    """The sum of ``args`` (``sym_sum([a, b, c])`` or ``sym_sum(a, b, c)``)."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = args[0]
    return builtins.sum(args)


def sym_sqrt(a) -> float:
    """``math.sqrt(a)``."""
    return math.sqrt(a)
