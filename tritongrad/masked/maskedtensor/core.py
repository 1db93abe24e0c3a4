"""``MaskedTensor``: a Tensor of data with a boolean mask of which elements are specified.

Note [MaskedTensor layout]
  A MaskedTensor is a Tensor subclass whose own storage holds the data (all of it, masked-out
  elements included) and whose ``_masked_mask`` attribute holds a bool tensor of the same
  shape. Ops reach it through ``__torch_function__`` (autograd/overrides.py): the handlers in
  ``_table.py`` run the op on the data with subclass dispatch off (so autograd records it as
  on any tensor) and wrap the result with the mask that PyTorch gives it; an op that has no
  handler is refused. ``get_data()`` is an alias of the data that keeps the history, so
  gradients flow from a MaskedTensor result to its inputs; a leaf's ``.grad`` is read as a
  MaskedTensor with the leaf's mask.

Note [MaskedTensor and the dispatch check]
  Importing this module defines the class without installing the ``__torch_function__``
  check (Note [Overrides installed on first use]): ``__torch_function__`` is attached after
  the class is made, so that ``tritongrad.masked``'s reductions cost plain programs nothing;
  the first MaskedTensor made installs it (``_make_subclass`` and ``as_subclass`` call
  ``note_instance``).
"""

from __future__ import annotations

import warnings

import tritongrad as tg
from tritongrad.autograd import overrides as _overrides
from tritongrad.autograd.tensor import Tensor

__all__ = ["MaskedTensor", "is_masked_tensor"]

# dtypes PyTorch's MaskedTensor accepts
_SUPPORTED = ("float16", "float32", "float64", "bool", "int8", "int16", "int32", "int64")
_PROTOTYPE_WARNING = (
    "The PyTorch API of MaskedTensors is in prototype stage and will change in the near "
    "future. Please open a Github issue for features requests and see our documentation on "
    "the torch.masked module for further information about the project.")


def is_masked_tensor(obj, /) -> bool:
    """Returns True if the input is a MaskedTensor, else False.

    Example::

        >>> from tritongrad.masked import is_masked_tensor, masked_tensor
        >>> data = tritongrad.arange(6).reshape(2, 3)
        >>> mask = tritongrad.tensor([[True, False, False], [True, True, False]])
        >>> is_masked_tensor(masked_tensor(data, mask))
        True
    """
    return isinstance(obj, MaskedTensor)


def _dtype_name(dtype) -> str:
    return str(dtype).rsplit(".", 1)[-1]


def _validate(data, mask) -> None:
    """PyTorch's checks on a MaskedTensor's members, with its messages."""
    if is_masked_tensor(data) or not isinstance(data, Tensor):
        raise TypeError("data must be a Tensor")
    if is_masked_tensor(mask) or not isinstance(mask, Tensor):
        raise TypeError("mask must be a Tensor")
    if data.layout is not mask.layout:
        raise TypeError("data and mask must have the same layout.")
    if type(data) is not type(mask):
        raise TypeError(f"data and mask must have the same type. Got {type(data)} and "
                        f"{type(mask)}")
    if data.layout is not tg.strided:
        raise TypeError(f"data layout of {data.layout} is not supported.")
    if mask.dtype is not tg.bool:
        raise TypeError("mask must have dtype bool.")
    if _dtype_name(data.dtype) not in _SUPPORTED:
        raise TypeError(f"{data.dtype} is not supported in MaskedTensor.")
    if data.dim() != mask.dim():
        raise ValueError("data.dim() must equal mask.dim()")
    if tuple(data.shape) != tuple(mask.shape):
        raise ValueError("data.size() must equal mask.size()")
    if data.device != mask.device:
        raise ValueError(f"data and mask must be on the same device, got {data.device} and "
                         f"{mask.device}")


def _format_1d(data, mask, formatter: str) -> str:
    values = data.tolist()
    shown = mask.tolist()
    texts = [formatter.format(v) if isinstance(v, float) else str(v) for v in values]
    # masked-out entries are right-aligned to 8 characters (a formatted float's width)
    width = max((len(t) if m else 8 for t, m in zip(texts, shown)), default=0)
    return "[" + ", ".join(t if m else "--".rjust(width) for t, m in zip(texts, shown)) + "]"


def _masked_tensor_str(data, mask, formatter: str) -> str:
    if data.dim() == 1:
        return _format_1d(data, mask, formatter)
    rows = [_masked_tensor_str(d, m, formatter) for d, m in zip(data, mask)]
    rows = ["\n".join("  " + line for line in r.split("\n")) for r in rows]
    return "[\n" + ",\n".join(rows) + "\n]"


class MaskedTensor(Tensor):
    """A tensor with a mask (PyTorch's prototype ``torch.masked.MaskedTensor``).

    ``MaskedTensor(data, mask, requires_grad=False)`` copies ``data`` (a strided tensor of
    float16/32/64, bool or int8/16/32/64) and ``mask`` (a bool tensor of the same shape):
    elements where ``mask`` is False are "masked out", unspecified. Elementwise unary ops keep
    the mask; binary ops need both operands to have equal masks (or one to be a plain tensor
    or a number); reductions (``sum mean amin amax argmin argmax prod all norm var std``, as
    functions and methods) leave out the masked-out elements and give a MaskedTensor whose
    mask says which outputs had any element; views and shape ops apply to data and mask
    alike. Autograd runs through all of them; a leaf's ``.grad`` is a MaskedTensor.

    Prefer :func:`tritongrad.masked.masked_tensor` (a leaf) and
    :func:`tritongrad.masked.as_masked_tensor` (keeps ``data``'s history).

    Example::

        >>> from tritongrad.masked import masked_tensor
        >>> data = tritongrad.tensor([1., 2., 3.])
        >>> mt = masked_tensor(data, tritongrad.tensor([True, False, True]))
        >>> mt.sum()
        MaskedTensor(  4.0000, True)
    """

    # (replaced below the class: Note [MaskedTensor and the dispatch check])
    __torch_function__ = _overrides._disabled_torch_function_impl

    def __new__(cls, data, mask, requires_grad: bool = False):
        _validate(data, mask)
        warnings.warn(_PROTOTYPE_WARNING, UserWarning, stacklevel=2)
        if data.requires_grad:
            warnings.warn("It is not recommended to create a MaskedTensor with a tensor that "
                          "requires_grad. To avoid this, you can use data.detach().clone()",
                          UserWarning, stacklevel=2)
        with tg.no_grad():
            out = Tensor._make_subclass(cls, data.detach().clone(), bool(requires_grad))
            out._masked_mask = mask.detach().clone()
        return out

    @classmethod
    def _wrap(cls, data, mask) -> "MaskedTensor":
        """``data`` (its storage and history, as ``as_subclass``) with ``mask``: the
        differentiable constructor that ops use (no copy, no warning)."""
        out = data.as_subclass(cls)
        out._masked_mask = mask
        return out

    @staticmethod
    def _from_values(data, mask) -> "MaskedTensor":
        """The differentiable constructor (:func:`as_masked_tensor`): a copy of ``data`` that
        keeps its history."""
        _validate(data, mask)
        warnings.warn(_PROTOTYPE_WARNING, UserWarning, stacklevel=3)
        with tg.DisableTorchFunctionSubclass():
            copy = data.clone()
        return MaskedTensor._wrap(copy, mask.detach().clone())

    # -- members -----------------------------------------------------------------------------
    def get_data(self) -> Tensor:
        """The data, masked-out elements included, as a plain Tensor: an alias that keeps
        this MaskedTensor's history (a gradient into it reaches this tensor)."""
        return Tensor.as_subclass(self, Tensor)

    def get_mask(self) -> Tensor:
        """The bool mask: True where an element is specified."""
        return self._masked_mask

    def to_tensor(self, value) -> Tensor:
        """A plain Tensor of the data with the masked-out elements set to ``value``
        (differentiable: masked-out elements get no gradient)."""
        return self.get_data().masked_fill(~self.get_mask(), value)

    def to_dense(self) -> "MaskedTensor":
        """This MaskedTensor: its data is strided already (PyTorch's returns a MaskedTensor
        too, not a plain Tensor)."""
        return self

    def is_sparse_coo(self) -> bool:
        return self.layout is getattr(tg, "sparse_coo", None)

    def is_sparse_csr(self) -> bool:
        return self.layout is getattr(tg, "sparse_csr", None)

    @property
    def is_sparse(self) -> bool:
        """Whether the data is sparse (COO or CSR): never here (strided data only)."""
        return self.is_sparse_coo() or self.is_sparse_csr()

    @property
    def grad(self):
        """The accumulated gradient as a MaskedTensor with this tensor's mask (None until a
        backward computes one)."""
        g = Tensor.grad.fget(self)
        if g is None or is_masked_tensor(g):
            return g
        cached = self.__dict__.get("_masked_grad")
        if cached is not None and cached[0] is g:
            return cached[1]
        out = MaskedTensor._wrap(g.detach(), self._masked_mask)
        self.__dict__["_masked_grad"] = (g, out)  # (the same object on each read)
        return out

    @grad.setter
    def grad(self, value) -> None:
        if is_masked_tensor(value):
            value = value.get_data().detach()
        Tensor.grad.fset(self, value)

    @grad.deleter
    def grad(self) -> None:
        Tensor.grad.fset(self, None)

    # -- printing ----------------------------------------------------------------------------
    def __repr__(self) -> str:
        formatter = "{0:8.4f}"
        with tg.DisableTorchFunctionSubclass():
            data, mask = self.get_data().detach().cpu(), self.get_mask().cpu()
        if data.dim() == 0:
            value = data.item()
            text = formatter.format(value) if isinstance(value, float) else str(value)
            if not mask.item():
                text = "--"
            return f"MaskedTensor({text}, {mask.item()})"
        s = _masked_tensor_str(data, mask, formatter)
        s = "\n".join("  " + line for line in s.split("\n"))
        return "MaskedTensor(\n" + s + "\n)"

    __str__ = __repr__

    def _user_attributes(self) -> dict:
        # pickle and deepcopy keep the mask but not a cached .grad view
        return {k: v for k, v in super()._user_attributes().items() if k != "_masked_grad"}


def _masked_torch_function(cls, func, types, args=(), kwargs=None):
    """MaskedTensor's ``__torch_function__``: the op's handler (``_table.py``), or refused."""
    from ._table import handle
    return handle(cls, func, types, args, kwargs or {})


# Note [MaskedTensor and the dispatch check]: the class was defined without an override of its
# own (so defining it at import installed no check); it overrides from here on, the check
# installed by its first instance.
MaskedTensor.__torch_function__ = classmethod(_masked_torch_function)
_overrides.override_from_first_instance(MaskedTensor)


def elementwise_handlers(names, no_inplace, apply):
    """The (public name, handler) pairs of elementwise ops ``names``: each op's function and
    method run ``apply(func, args, kwargs, False)``, its in-place method (unless in
    ``no_inplace``) ``apply(..., True)``; returns them and the two handlers (for operators)."""
    def out_of_place(func, args, kwargs):
        return apply(func, args, kwargs, False)

    def in_place(func, args, kwargs):
        return apply(func, args, kwargs, True)

    pairs = []
    for name in names:
        pairs += [(f"tritongrad.{name}", out_of_place), (f"Tensor.{name}", out_of_place)]
        if name not in no_inplace:
            pairs.append((f"Tensor.{name}_", in_place))
    return pairs, out_of_place, in_place
