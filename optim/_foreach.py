"""PyTorch's ``torch._foreach_*`` list ops: one elementwise op applied to each tensor of a list.

PyTorch's optimizers, and the model-averaging / EMA code users write next to them (a mean
teacher's ``torch._foreach_lerp_(teacher, student, 1 - decay)``), call these directly. As
PyTorch's own fallback path ("slow path") does, each is a loop over the tensors' ordinary
ops, so autograd records the out-of-place forms and the in-place forms bump versions as the
per-tensor ops do. The out-of-place forms return a tuple of tensors; the in-place forms (named
with a trailing ``_``) update ``self`` and return it (PyTorch returns the list it was given).

The second operand of the binary ops is a number, a list of numbers (one per tensor), a list of
tensors (one per tensor) or a single tensor (used with every tensor of the list).
"""

from __future__ import annotations

import numbers

__all__: list[str] = []  # filled below: every _foreach_* name defined here

_UNARY = ("abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1",
          "floor", "frac", "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal",
          "round", "rsqrt", "sigmoid", "sign", "sin", "sinh", "sqrt", "tan", "tanh", "trunc")
# binary ops, with the Tensor method each calls per tensor; add / sub take ``alpha``
_BINARY = {"add": "add", "sub": "sub", "mul": "mul", "div": "div",
           "maximum": "maximum", "minimum": "minimum", "clamp_min": "clamp_min",
           "clamp_max": "clamp_max"}
_CLAMPS = {"maximum": "clamp_min", "minimum": "clamp_max"}  # the same, with a number


def _check_list(tensors, position: int = 0) -> list:
    from ..autograd.tensor import Tensor
    tensors = list(tensors)
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument {position}, but got "
                            f"{type(t).__name__}")
    return tensors


def _operands(self: list, other, position: int = 1) -> list:
    """``other`` spread over ``self``: one operand per tensor, in PyTorch's words where the
    lengths differ."""
    from ..autograd.tensor import Tensor
    if not self:
        raise RuntimeError("Tensor list must have at least one tensor.")
    if isinstance(other, (numbers.Number, Tensor)):
        return [other] * len(self)
    other = list(other)
    if other and all(isinstance(o, Tensor) for o in other):
        if len(other) != len(self):
            raise RuntimeError(f"Tensor lists must have the same number of tensors, got "
                               f"{len(self)} and {len(other)}")
        return other
    if len(other) != len(self):
        raise RuntimeError("Tensor list must have same number of elements as scalar list.")
    return other


def _unary(name: str):
    def out_of_place(self):
        return tuple(getattr(t, name)() for t in _check_list(self))

    def in_place(self):
        tensors = _check_list(self)
        for t in tensors:
            getattr(t, name + "_")()
        return self
    return out_of_place, in_place


def _binary(name: str, method: str, has_alpha: bool):
    def per_tensor(t, o, alpha, suffix: str):
        if method in _CLAMPS and isinstance(o, numbers.Number):  # (Tensor.maximum: no numbers)
            return getattr(t, _CLAMPS[method] + suffix)(o)
        if has_alpha and alpha != 1:
            return getattr(t, method + suffix)(o, alpha=alpha)
        return getattr(t, method + suffix)(o)

    def out_of_place(self, other, *, alpha=1):
        tensors = _check_list(self)
        return tuple(per_tensor(t, o, alpha, "") for t, o in zip(tensors,
                                                                 _operands(tensors, other)))

    def in_place(self, other, *, alpha=1):
        tensors = _check_list(self)
        for t, o in zip(tensors, _operands(tensors, other)):
            per_tensor(t, o, alpha, "_")
        return self
    if not has_alpha:  # (PyTorch's signatures: only add / sub take alpha)
        plain, plain_ = out_of_place, in_place

        def out_of_place(self, other):
            return plain(self, other)

        def in_place(self, other):
            return plain_(self, other)
    return out_of_place, in_place


def _define(name: str, fn, doc: str) -> None:
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    globals()[name] = fn
    __all__.append(name)


for _name in _UNARY:
    _f, _f_ = _unary(_name)
    _define(f"_foreach_{_name}", _f, f"Applies ``torch.{_name}`` to each Tensor of the input "
                                     f"list.")
    _define(f"_foreach_{_name}_", _f_, f"Applies ``torch.{_name}`` to each Tensor of the input "
                                       f"list, in place.")
for _name, _method in _BINARY.items():
    _f, _f_ = _binary(_name, _method, _name in ("add", "sub"))
    _define(f"_foreach_{_name}", _f, f"``torch.{_name}`` of each Tensor of the list with its "
                                     f"operand (a number, a list, or a Tensor).")
    _define(f"_foreach_{_name}_", _f_, f"``torch.{_name}`` of each Tensor of the list with its "
                                       f"operand, in place.")


_tensor_pow, _tensor_pow_ = _binary("pow", "pow", False)


def _foreach_pow(self, exponent):
    """``torch.pow`` per tensor, with ``exponent`` a number, a list or a Tensor; ``self`` may
    also be a number raised to each Tensor of the list ``exponent``."""
    if isinstance(self, numbers.Number):
        return tuple(self ** t for t in _check_list(exponent, 1))
    return _tensor_pow(self, exponent)


def _ternary(method: str, scalar_kw: str):
    def apply(self, t1, t2, scalars, suffix: str):
        tensors = _check_list(self)
        ones = _operands(tensors, t1)
        twos = _operands(tensors, t2)
        values = _scalars(tensors, scalars)
        return [getattr(t, method + suffix)(a, b, **{scalar_kw: v})
                for t, a, b, v in zip(tensors, ones, twos, values)]

    def out_of_place(self, tensor1, tensor2, scalars=1):
        return tuple(apply(self, tensor1, tensor2, scalars, ""))

    def in_place(self, tensor1, tensor2, scalars=1):
        apply(self, tensor1, tensor2, scalars, "_")
        return self
    return out_of_place, in_place


def _scalars(tensors: list, scalars) -> list:
    """A per-tensor list of numbers from a number, a list of numbers or a 1-D tensor."""
    from ..autograd.tensor import Tensor
    if isinstance(scalars, Tensor):
        scalars = scalars.tolist() if scalars.ndim else [scalars.item()] * len(tensors)
    if isinstance(scalars, numbers.Number):
        return [scalars] * len(tensors)
    scalars = list(scalars)
    if len(scalars) != len(tensors):
        raise RuntimeError("Tensor list must have same number of elements as scalar list.")
    return scalars


for _name in ("addcmul", "addcdiv"):
    _f, _f_ = _ternary(_name, "value")
    _define(f"_foreach_{_name}", _f, f"``torch.{_name}`` per tensor: ``self + value * t1 "
                                     f"{'*' if _name == 'addcmul' else '/'} t2``.")
    _define(f"_foreach_{_name}_", _f_, f"``torch.{_name}`` per tensor, in place.")


def _foreach_lerp(self, tensors1, weight):
    """``torch.lerp`` per tensor: ``self + weight * (end - self)``, ``weight`` a number, a list
    of numbers or a list of tensors."""
    tensors = _check_list(self)
    return tuple(t.lerp(e, w) for t, e, w in zip(tensors, _operands(tensors, tensors1),
                                                 _operands(tensors, weight)))


def _foreach_lerp_(self, tensors1, weight):
    """``torch.lerp`` per tensor, in place."""
    tensors = _check_list(self)
    for t, e, w in zip(tensors, _operands(tensors, tensors1), _operands(tensors, weight)):
        t.lerp_(e, w)
    return self


def _foreach_zero_(self):
    """Fills each Tensor of the list with zeros."""
    for t in _check_list(self):
        t.zero_()
    return self


def _foreach_copy_(self, src, non_blocking: bool = False):
    """Copies each Tensor of ``src`` into the Tensor of ``self`` at the same position."""
    tensors = _check_list(self)
    for t, s in zip(tensors, _operands(tensors, _check_list(src, 1))):
        t.copy_(s)
    return self


def _foreach_norm(self, ord=2, dtype=None):
    """``torch.linalg.vector_norm`` of each Tensor of the list, a tuple of 0-d tensors."""
    from ..autograd.ops.linalg_ext import vector_norm
    return tuple(vector_norm(t, ord, dtype=dtype) for t in _check_list(self))


def _foreach_max(self):
    """The largest value of each Tensor of the list, a tuple of 0-d tensors."""
    return tuple(t.max() for t in _check_list(self))


def _foreach_powsum(self, exponent=2, dtype=None):
    """``sum(|t| ** exponent)`` per tensor (the norm's inner sum), a tuple of 0-d tensors."""
    return tuple(t.abs().pow(exponent).sum(dtype=dtype) for t in _check_list(self))


_define("_foreach_pow_", _tensor_pow_, "``torch.pow`` per tensor, in place.")
__all__ += ["_foreach_copy_", "_foreach_lerp", "_foreach_lerp_", "_foreach_max",
            "_foreach_norm", "_foreach_pow", "_foreach_powsum", "_foreach_zero_"]
__all__.sort()  # (built name by name above)
