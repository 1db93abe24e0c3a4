"""``torch``'s function forms of tensor queries and of ``detach``: ``is_complex``,
``is_floating_point``, ``detach``, ``detach_``, and the object queries ``typename`` and
``is_storage`` (``is_signed``, ``is_nonzero``, ``is_same_size``: tensor_info.py)."""

from __future__ import annotations

from ..registry import OpInfo
from ..tensor import Tensor

__all__ = ["detach", "detach_", "is_complex", "is_floating_point", "is_storage", "typename"]


def _tensor(x, op: str, name: str = "input", pos: int = 1) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be Tensor, not "
                        f"{type(x).__name__}")
    return x


def is_complex(input: Tensor) -> bool:
    """True if the data type of ``input`` is a complex data type."""
    return _tensor(input, "is_complex").dtype.is_complex


def is_floating_point(input: Tensor) -> bool:
    """True if the data type of ``input`` is a floating point data type."""
    return _tensor(input, "is_floating_point").dtype.is_floating_point


def detach(input: Tensor) -> Tensor:
    """``input.detach()``: a new tensor sharing ``input``'s memory, out of the graph."""
    return _tensor(input, "detach").detach()


def detach_(input: Tensor) -> Tensor:
    """``input.detach_()``: detaches ``input`` from the graph that created it, in place."""
    return _tensor(input, "detach_").detach_()


def typename(obj) -> str:
    """A string naming the type of ``obj``: a tensor's legacy type name
    (``'tritongrad.FloatTensor'``), else ``module.QualifiedName`` (no module for builtins).

    Example:
        >>> tg.typename(tg.ones(2))
        'tritongrad.FloatTensor'
    """
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


def is_storage(obj) -> bool:
    """True if ``obj`` is a storage (``Tensor.untyped_storage()``, ``Tensor.storage()``)."""
    from ..storage import UntypedStorage
    return isinstance(obj, UntypedStorage)


# -- the table ---------------------------------------------------------------------------------

_QUERY = {"dtypes": "all", "grad": "none"}
OPS = (
    OpInfo("is_complex", is_complex, method=False, **_QUERY),
    OpInfo("is_floating_point", is_floating_point, method=False, **_QUERY),
    OpInfo("detach", detach, method=False, **_QUERY),
    OpInfo("detach_", detach_, method=False, **_QUERY),
    OpInfo("typename", typename, method=False, dtypes="any object", grad="none"),
    OpInfo("is_storage", is_storage, method=False, dtypes="any object", grad="none"),
)
