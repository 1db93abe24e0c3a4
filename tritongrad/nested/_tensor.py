"""``NestedTensor``: a batch of tensors that differ in one dimension, in the jagged layout.

Note [Jagged layout]
  A nested tensor of shape ``(B, j1, D)`` holds its B components packed one after another in
  a regular tensor, ``values()``, of shape ``(sum of lengths, D)``, and the start of each
  component in ``offsets()`` (B + 1 integers: component i is ``values[offsets[i] :
  offsets[i + 1]]``). The ragged dimension is dimension ``_ragged_idx`` of the nested tensor
  (1 unless transposed) and dimension ``_ragged_idx - 1`` of ``values``: the other dimensions
  of ``values`` are the nested tensor's, less the batch. A nested tensor with ``lengths()``
  (from ``narrow`` or ``nested_tensor_from_jagged(..., lengths=...)``) may have holes: its
  component i is ``lengths[i]`` rows from ``offsets[i]``, and it is not contiguous.

  The NestedTensor is a Tensor subclass whose own storage is ``values()``'s: it is an alias of
  the values tensor made by ``as_subclass``, so autograd records it as any view, and an op on
  it (``__torch_function__``, ``_ops.py``) runs on ``values()`` and wraps the result with the
  same offsets. The offsets and lengths live in a ``_Ragged`` shared by every nested tensor
  of that structure, which names the ragged size with a symbol (``j1``, as PyTorch's nested
  ints): two nested tensors can be combined elementwise when they share it.

Note [Nested leaves]
  The autograd engine accumulates a leaf's gradient with the leaf's own (dense) shape, which a
  nested tensor does not have. So a nested tensor made with ``requires_grad=True`` is an alias
  of a plain leaf, ``_leaf``, that the engine sees; the nested tensor reports itself as the
  leaf (``is_leaf`` True, ``grad_fn`` None) and its ``.grad`` is the plain leaf's gradient as a
  nested tensor of the same structure, as in PyTorch.

Note [Nested views]
  For autograd, a nested tensor is a view of its values (an ``AliasBackward0`` where it
  records). The view machinery (regenerating a view's history after a write through another
  alias) reads a view's dense shape and strides, so ``_view_grad_fn`` runs it on this tensor
  seen as the plain tensor of its values.
"""

from __future__ import annotations

import weakref

import tritongrad as tg
from tritongrad.autograd import overrides as _overrides
from tritongrad.autograd.ops.views import as_subclass
from tritongrad.autograd.tensor import _FIELDS, Size, Tensor, wrap_dim
from tritongrad.runtime import dtype as _dtypes

__all__ = ["NestedInt", "NestedTensor", "jagged"]

jagged = _dtypes.jagged  # (PyTorch's ``torch.jagged``)


def is_jagged(layout) -> bool:
    return layout is jagged


class NestedInt:
    """The size of a ragged dimension in a nested tensor's shape (PyTorch's nested int,
    printed ``j1``): equal only to itself, so shapes with different ragged structures differ."""

    __slots__ = ("_n",)
    symbolic_size = True  # (a Size may hold it: PyTorch's SymInt)

    def __init__(self, n: int):
        self._n = n

    def __repr__(self) -> str:
        return f"j{self._n}"

    __str__ = __repr__

    def __eq__(self, other) -> bool:
        return isinstance(other, NestedInt) and other._n == self._n

    def __ne__(self, other) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(("NestedInt", self._n))


class _Ragged:
    """The ragged structure shared by nested tensors: offsets, lengths (or None), the symbol of
    the ragged size, and host copies read once (Note [Jagged layout])."""

    _count = 0
    # id(lengths, else offsets) -> weakref to the _Ragged holding it (which keeps the tensor
    # alive, so the id is not reused while the entry is valid)
    _by_tensor: dict = {}

    __slots__ = ("offsets", "lengths", "symbol", "_host", "min_seqlen", "max_seqlen",
                 "__weakref__")

    def __init__(self, offsets: Tensor, lengths: Tensor | None, symbol: NestedInt | None = None,
                 min_seqlen: int | None = None, max_seqlen: int | None = None):
        self.offsets, self.lengths = offsets, lengths
        if symbol is None:
            _Ragged._count += 1
            symbol = NestedInt(_Ragged._count)
        self.symbol = symbol
        self._host = None
        self.min_seqlen, self.max_seqlen = min_seqlen, max_seqlen

    @classmethod
    def of(cls, offsets: Tensor, lengths: Tensor | None, **seqlens) -> "_Ragged":
        """The structure of ``offsets`` and ``lengths``: the same one (and symbol) for the same
        tensors, as PyTorch's nested ints are tied to the metadata tensor."""
        key = lengths if lengths is not None else offsets
        kid = id(key)
        ref = cls._by_tensor.get(kid)
        found = ref() if ref is not None else None
        if found is not None and found.offsets is offsets and found.lengths is lengths:
            return found
        out = cls(offsets, lengths, **seqlens)

        def forget(dead, registry=cls._by_tensor):
            if registry.get(kid) is dead:
                del registry[kid]
        cls._by_tensor[kid] = weakref.ref(out, forget)
        return out

    def batch(self) -> int:
        return self.offsets.shape[0] - 1

    def host(self) -> tuple:
        """``(starts, lengths)`` as lists of Python ints (one device-to-host copy, cached)."""
        if self._host is None:
            offs = [int(v) for v in self.offsets.tolist()]
            starts = offs[:-1]
            if self.lengths is None:
                lens = [b - a for a, b in zip(offs[:-1], offs[1:])]
            else:
                lens = [int(v) for v in self.lengths.tolist()]
            if any(n < 0 for n in lens):
                raise ValueError(f"nested tensor: offsets must be non-decreasing, got {offs}")
            self._host = (starts, lens)
        return self._host

    def moved(self, device) -> "_Ragged":
        """The same structure (and symbol) with its metadata on ``device``."""
        if self.offsets.device == device:
            return self
        out = _Ragged(self.offsets.to(device),
                      None if self.lengths is None else self.lengths.to(device), self.symbol,
                      self.min_seqlen, self.max_seqlen)
        out._host = self._host
        return out


def _same_structure(a: "NestedTensor", b: "NestedTensor") -> bool:
    """Whether ``a`` and ``b`` have the same components' shapes: the same ragged symbol, or
    equal offsets and lengths (read on the host)."""
    if a._ragged_idx != b._ragged_idx or a._data.shape != b._data.shape:
        return False
    return a._ragged.symbol == b._ragged.symbol or a._ragged.host() == b._ragged.host()


def _make(values: Tensor, ragged: _Ragged, ragged_idx: int) -> "NestedTensor":
    """A nested tensor over ``values`` (an alias keeping its history), of structure
    ``ragged`` with the ragged dimension at ``ragged_idx`` (Note [Jagged layout])."""
    if values.device != ragged.offsets.device:
        ragged = ragged.moved(values.device)
    out = as_subclass(values, NestedTensor)
    out.__dict__["_ragged"] = ragged
    out.__dict__["_ragged_idx"] = ragged_idx
    return out


def _make_leaf(values: Tensor, ragged: _Ragged, ragged_idx: int,
               requires_grad: bool) -> "NestedTensor":
    """A nested leaf (Note [Nested leaves]) over a detached ``values``."""
    leaf = values.detach()
    if not requires_grad:
        return _make(leaf, ragged, ragged_idx)
    leaf.requires_grad_(True)
    with tg.enable_grad():
        out = _make(leaf, ragged, ragged_idx)
    out.__dict__["_leaf"] = leaf
    return out


def like(nt: "NestedTensor", values: Tensor, ragged_idx: int | None = None) -> "NestedTensor":
    """``values`` as a nested tensor of ``nt``'s structure."""
    return _make(values, nt._ragged, nt._ragged_idx if ragged_idx is None else ragged_idx)


class NestedTensor(Tensor):
    """A nested tensor in the jagged layout (PyTorch's ``torch.nested`` with
    ``layout=torch.jagged``): B tensors of the same number of dimensions that differ in one,
    the ragged dimension, held packed in one tensor (Note [Jagged layout]).

    Make one with :func:`tritongrad.nested.nested_tensor` (a leaf),
    :func:`~tritongrad.nested.as_nested_tensor` (keeps the components' history),
    :func:`~tritongrad.nested.nested_tensor_from_jagged` (a view of a packed tensor) or
    :func:`~tritongrad.nested.narrow`. Its shape prints as ``Size([B, j1, D])``, ``j1`` the
    symbol of the ragged size; pointwise ops, ``linear``, ``matmul``, softmax, layer norm,
    reductions and ``scaled_dot_product_attention`` run on the packed values
    (docs/nested.md lists the ops); other ops are refused.

    Example::

        >>> import tritongrad.nested
        >>> nt = tritongrad.nested.nested_tensor(
        ...     [tritongrad.ones(2, 3), tritongrad.ones(1, 3)], layout=tritongrad.nested.jagged)
        >>> nt.shape  # doctest: +ELLIPSIS
        tritongrad.Size([2, j..., 3])
        >>> (nt * 2).sum(dim=1)
        tensor([[4., 4., 4.],
                [2., 2., 2.]])
    """

    # (replaced below the class, as MaskedTensor's: the first instance installs the check)
    __torch_function__ = _overrides._disabled_torch_function_impl

    def __new__(cls, *args, **kwargs):
        raise TypeError("NestedTensor cannot be constructed directly: use "
                        "tritongrad.nested.nested_tensor, as_nested_tensor, "
                        "nested_tensor_from_jagged or narrow")

    # -- the jagged structure ----------------------------------------------------------------
    def values(self) -> Tensor:
        """The packed components, a regular tensor that shares this tensor's storage and
        autograd history (a gradient into it reaches this tensor)."""
        return as_subclass(self, Tensor)

    def offsets(self) -> Tensor:
        """Where each component starts in ``values()`` along the packed dimension, and where
        the last ends: B + 1 integers."""
        return self._ragged.offsets

    def lengths(self) -> Tensor | None:
        """The components' lengths when the tensor has holes (``narrow``,
        ``nested_tensor_from_jagged(..., lengths=...)``), else None."""
        return self._ragged.lengths

    @property
    def _max_seqlen(self) -> int:
        r = self._ragged
        return r.max_seqlen if r.max_seqlen is not None else max(r.host()[1], default=0)

    @property
    def _min_seqlen(self) -> int:
        r = self._ragged
        return r.min_seqlen if r.min_seqlen is not None else min(r.host()[1], default=0)

    def _components(self) -> list:
        """The components as views of ``values()`` (differentiable)."""
        starts, lens = self._ragged.host()
        v = self.values()
        d = self._ragged_idx - 1
        return [v.narrow(d, s, n) for s, n in zip(starts, lens)]

    def to_padded_tensor(self, padding: float, output_size=None) -> Tensor:
        """A dense tensor of the components padded with ``padding`` to the longest (or to
        ``output_size``): :func:`tritongrad.nested.to_padded_tensor`."""
        from . import to_padded_tensor
        return to_padded_tensor(self, padding, output_size)

    # -- what it is --------------------------------------------------------------------------
    @property
    def is_nested(self) -> bool:
        return True

    @property
    def layout(self):
        """``tritongrad.nested.jagged``."""
        return jagged

    @property
    def shape(self) -> Size:
        """``Size([B, ..., j, ...])``, ``j`` the symbol of the ragged size (a NestedInt)."""
        dims = list(self._data.shape)
        dims[self._ragged_idx - 1] = self._ragged.symbol
        return Size([self._ragged.batch(), *dims])

    def size(self, dim: int | None = None):
        """The shape, or the size of dimension ``dim`` (the ragged one's is a NestedInt)."""
        shape = self.shape
        return shape if dim is None else shape[wrap_dim(dim, len(shape), "size")]

    def dim(self) -> int:
        return self._data.ndim + 1

    @property
    def ndim(self) -> int:
        return self._data.ndim + 1

    def numel(self) -> int:
        """The number of elements in all components."""
        per_row = 1
        for i, n in enumerate(self._data.shape):
            if i != self._ragged_idx - 1:
                per_row *= n
        return per_row * sum(self._ragged.host()[1])

    def __len__(self) -> int:
        return self._ragged.batch()

    def is_contiguous(self, memory_format=None) -> bool:
        """Whether the components are packed with no holes in a contiguous ``values()``."""
        with tg.DisableTorchFunctionSubclass():
            return self._ragged.lengths is None and self.values().is_contiguous()

    # -- autograd (Note [Nested leaves]) -----------------------------------------------------
    @property
    def is_leaf(self) -> bool:
        return "_leaf" in self.__dict__ or Tensor.is_leaf.fget(self)

    @property
    def grad_fn(self):
        return None if "_leaf" in self.__dict__ else Tensor.grad_fn.fget(self)

    @property
    def grad(self):
        """The accumulated gradient as a nested tensor of this one's structure (None until a
        backward computes one)."""
        leaf = self.__dict__.get("_leaf")
        g = leaf.grad if leaf is not None else Tensor.grad.fget(self)
        if g is None or isinstance(g, NestedTensor):
            return g
        cached = self.__dict__.get("_nested_grad")
        if cached is not None and cached[0] is g:
            return cached[1]
        out = self._like(g)
        self.__dict__["_nested_grad"] = (g, out)  # (the same object on each read)
        return out

    @grad.setter
    def grad(self, value) -> None:
        if isinstance(value, NestedTensor):
            with tg.DisableTorchFunctionSubclass():
                value = value.values().detach()
        leaf = self.__dict__.get("_leaf")
        if leaf is not None:
            leaf.grad = value
        else:
            Tensor.grad.fset(self, value)

    @grad.deleter
    def grad(self) -> None:
        self.grad = None

    def _like(self, values: Tensor) -> "NestedTensor":
        """``values`` (packed as this tensor's) as a nested tensor of this one's structure."""
        return like(self, values)

    def _new_leaf(self, requires_grad: bool) -> "NestedTensor":
        """A nested leaf of this structure over this tensor's values, detached."""
        return _make_leaf(self.values(), self._ragged, self._ragged_idx, requires_grad)

    def _view_grad_fn(self):
        # Note [Nested views]: a write through another alias of the values (an in-place op
        # on a detached nested tensor, under no_grad) makes this alias's history stale; the
        # view machinery regenerates it from the dense geometry, so it reads this tensor as
        # the plain values tensor it is for autograd while it does
        cls = self.__class__
        self.__class__ = Tensor
        try:
            return Tensor._view_grad_fn(self)
        finally:
            self.__class__ = cls

    def requires_grad_(self, requires_grad: bool = True) -> "NestedTensor":
        """Makes this nested tensor a leaf that requires grad (or one that does not), in place;
        refused for a non-leaf, as for any tensor."""
        leaf = self.__dict__.get("_leaf")
        if leaf is None and self.requires_grad:
            if requires_grad:
                return self
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use a "
                "computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach().")
        if bool(requires_grad) == (leaf is not None):
            return self
        if requires_grad and not (self.dtype.is_floating_point or self.dtype.is_complex):
            raise RuntimeError(f"Only Tensors of floating point and complex dtype can require "
                               f"gradients (got {self.dtype})")
        with tg.DisableTorchFunctionSubclass():
            new = self._new_leaf(requires_grad)
        for f in _FIELDS:  # this object becomes the new alias (its identity is kept)
            setattr(self, f, getattr(new, f))
        self.__dict__.pop("_leaf", None)
        self.__dict__.pop("_nested_grad", None)
        self.__dict__.update(new.__dict__)
        return self

    def backward(self, gradient=None, retain_graph=None, create_graph: bool = False,
                 inputs=None) -> None:
        """Computes the gradient of this nested tensor with respect to the graph's leaves,
        ``gradient`` (a nested tensor of the same structure) being its own gradient."""
        if gradient is None:
            raise RuntimeError("grad can be implicitly created only for scalar outputs")
        if isinstance(gradient, NestedTensor):
            if not _same_structure(gradient, self):
                raise RuntimeError(f"backward: the gradient's shape {tuple(gradient.shape)} "
                                   f"does not match the output's {tuple(self.shape)}")
            gradient = gradient.values()
        tg.autograd.backward([self.values()], [gradient], retain_graph=retain_graph,
                             create_graph=create_graph, inputs=inputs)

    # -- printing ----------------------------------------------------------------------------
    def __repr__(self) -> str:
        with tg.DisableTorchFunctionSubclass():
            size = "(" + ", ".join(str(d) for d in self.shape) + ")"
            grad = f", requires_grad={self.requires_grad}" if self.requires_grad else ""
            fn = self.grad_fn
            if fn is not None:
                grad = f", grad_fn={fn}"
            return (f"NestedTensor(size={size}, offsets={self._ragged.offsets!r}{grad}, "
                    f"contiguous={self.is_contiguous()})")

    __str__ = __repr__

    def _user_attributes(self) -> dict:
        return {k: v for k, v in super()._user_attributes().items() if k != "_nested_grad"}

    # -- copies --------------------------------------------------------------------------------
    def __reduce_ex__(self, proto):
        # (the values, offsets and lengths, rebuilt into a leaf with a fresh ragged symbol)
        r = self._ragged
        with tg.DisableTorchFunctionSubclass():
            values = self.values().detach()
        return _rebuild, (values, r.offsets, r.lengths, self._ragged_idx,
                          self.requires_grad and self.is_leaf)

    def __deepcopy__(self, memo):
        if not self.is_leaf:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) "
                               "support the deepcopy protocol at the moment.  If you were "
                               "attempting to deepcopy a module, this may be because of a "
                               "torch.nn.utils.weight_norm usage, see "
                               "https://github.com/pytorch/pytorch/pull/103001")
        if id(self) in memo:
            return memo[id(self)]
        r = self._ragged
        with tg.DisableTorchFunctionSubclass():
            values = self.values().detach().clone()
        lengths = None if r.lengths is None else r.lengths.clone()
        out = _rebuild(values, r.offsets.clone(), lengths, self._ragged_idx, self.requires_grad)
        memo[id(self)] = out
        return out


def _rebuild(values: Tensor, offsets: Tensor, lengths, ragged_idx: int,
             requires_grad: bool) -> NestedTensor:
    """A pickled or deep-copied nested tensor, rebuilt."""
    return _make_leaf(values, _Ragged.of(offsets, lengths), ragged_idx, requires_grad)


def _nested_torch_function(cls, func, types, args=(), kwargs=None):
    """NestedTensor's ``__torch_function__``: the op's handler (``_ops.py``), or refused."""
    from ._ops import handle
    return handle(cls, func, types, args, kwargs or {})


NestedTensor.__torch_function__ = classmethod(_nested_torch_function)
_overrides.override_from_first_instance(NestedTensor)
