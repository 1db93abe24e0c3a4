"""Sparse COO tensors (PyTorch's ``layout=torch.sparse_coo``) and their autograd.

A ``SparseTensor`` is three things: ``indices``, an int64 tensor (sparse_dim, nnz) of the
specified elements' coordinates; ``values``, a tensor (nnz, *dense_dims) of their values; and
the ``size``. Coordinates may repeat (the tensor is then *uncoalesced*: its value there is the
sum), as in PyTorch; ``coalesce()`` sorts them and sums duplicates.

Autograd runs through four primitives, each a ``Function`` with its rule here:

- ``_FromParts``: (indices, values) -> sparse; the gradient of ``values`` is the incoming
  gradient (dense or sparse) read at ``indices``.
- ``_ToDense``: sparse -> dense; the gradient is sparse with the input's pattern (PyTorch's
  masked rule: only the specified elements are variables).
- ``_Values``: sparse -> its values; the gradient is sparse with the input's indices.
- ``_Coalesce``: the same tensor with unique, sorted coordinates; the gradient passes through.

A sparse gradient stands for its dense form (repeated coordinates add up), so the rules make
sparse gradients only over coordinates that are unique (``_parts``), or, as the embedding's,
whose repeats are meant to add.

Everything else (sums, products with scalars, ``to_sparse``, ...; and ``sparse.mm``,
``sparse.sum``, ``sparse.softmax`` in sparse_ops.py) is written with these and the ordinary
dense ops, so it is differentiated for free and runs on whatever device the dense ops run on
(the CPU, and CUDA through the same dense kernels). The
index bookkeeping (sorting, deduplicating coordinates) is done on the host with NumPy: indices
are never differentiated.

A sparse tensor has no dense ``_data``: a dense op handed one fails with a message naming the
layout (``_NoDense``), rather than computing on something wrong. ``SparseBase`` holds what this
tensor shares with the compressed layouts (sparse_compressed.py): a shape without strides, and
the conversions made through ``to``.
"""

from __future__ import annotations

import numpy as np

from ..runtime import dtype as dtypes
from .function import Function
from .node import AccumulateGrad
from .overrides import _disabled_torch_function_impl
from .tensor import Size, Tensor

__all__ = ["SparseBase", "SparseTensor", "sparse_coo_tensor", "to_sparse", "sparse_mask",
           "accumulate", "add_into_", "deliver_sparse", "is_sparse", "takes_sparse",
           "check_sparse_tensor_invariants"]


class _NoDense:
    """The ``_data`` of a sparse tensor of layout ``layout`` (a name: ``"coo"``, ``"csr"``,
    ...): reading a dense array from it raises."""

    __slots__ = ("_layout",)

    def __init__(self, layout: str):
        self._layout = layout

    def _refuse(self, *_args, **_kwargs):
        raise NotImplementedError(
            f"this operation does not support sparse {self._layout.upper()} tensors (layout "
            f"tritongrad.sparse_{self._layout}): convert with .to_dense() first, or use the ops "
            f"of tritongrad.sparse (docs/sparse.md)")

    def __getattr__(self, name):
        if name.startswith("__"):  # (introspection, hasattr(): nothing to read from)
            raise AttributeError(name)
        self._refuse()

    __array__ = __len__ = __getitem__ = __iter__ = _refuse


_NO_DENSE = _NoDense("coo")


def is_sparse(t) -> bool:
    """Whether ``t`` is a sparse COO tensor (cheap: a type test)."""
    return type(t) is SparseTensor


def _new(indices: Tensor, values: Tensor, size, coalesced: bool) -> "SparseTensor":
    """A sparse tensor over ``indices`` and ``values`` (both taken without history)."""
    t = object.__new__(SparseTensor)
    t._data = _NO_DENSE
    t._device, t._dtype = values._device, values._dtype
    t._requires_grad, t._fn, t._base, t._vc = False, None, None, [0]
    t._idx = indices.detach()
    t._vals = values.detach()
    t._size = Size(size)
    t._coalesced = coalesced
    return t


def _host_indices(t: "SparseTensor") -> np.ndarray:
    return np.asarray(t._idx.detach().cpu().numpy(), dtype=np.int64)


def _linear(idx: np.ndarray, size) -> np.ndarray:
    """Row-major linear positions of coordinates ``idx`` (sparse_dim, nnz) in ``size``."""
    if idx.shape[0] == 0:
        return np.zeros(idx.shape[1], np.int64)
    return np.ravel_multi_index(tuple(idx), tuple(size)) if idx.shape[1] else \
        np.zeros(0, np.int64)


def _index_tensor(a: np.ndarray, like: Tensor) -> Tensor:
    from .ops.creation import tensor
    return tensor(np.ascontiguousarray(a, dtype=np.int64), device=like.device)


# -- the four primitives ----------------------------------------------------------------------

class _FromParts(Function):
    """sparse_coo_tensor's node (PyTorch's SparseCooTensorWithDimsAndTensorsBackward0)."""

    @staticmethod
    def forward(ctx, indices, values, size, coalesced):
        ctx.indices = indices.detach()
        return _new(indices, values, size, coalesced)

    @staticmethod
    def backward(ctx, g):
        return None, _read_at(g, ctx.indices), None, None


class _ToDense(Function):
    """to_dense's node: the gradient is the incoming one read at the input's indices."""

    @staticmethod
    def forward(ctx, s):
        # The gradient's pattern is the input's coordinates, each once: a sparse gradient
        # stands for its dense form, in which a repeated entry would count twice.
        unique = s._coalesced or s._unique()
        ctx.indices = s._idx if unique else _Coalesce.forward(None, s)._idx
        ctx.size, ctx.coalesced = s._size, s._coalesced or not unique
        return _densify(s._idx, s._vals, s._size)

    @staticmethod
    def backward(ctx, g):
        return deliver_sparse(ctx, 0, ctx.indices, _read_at(g, ctx.indices), ctx.size,
                              ctx.coalesced)


class _ToDenseUnmasked(Function):
    """A COO tensor's dense form whose gradient is not masked: every element is a variable.
    ``to_dense(masked_grad=False)`` hands a leaf the gradient as a sparse tensor (its nonzero
    elements, PyTorch's layout there); ``dense + sparse`` hands it on dense, as PyTorch's
    AddBackward0. A node of the tensor (``_FromParts``) reads it at its indices either way."""

    @staticmethod
    def forward(ctx, s, sparse_grad):
        ctx.sparse_grad, ctx.sd = sparse_grad, s.sparse_dim()
        return _densify(s._idx, s._vals, s._size)

    @staticmethod
    def backward(ctx, g):
        if ctx.sparse_grad and takes_sparse(ctx, 0) and not is_sparse(g):
            return to_sparse(g, ctx.sd), None
        return g, None


class _SumAll(Function):
    """``Tensor.sum()`` of a COO tensor: the values' sum; the gradient of the input is dense
    (the incoming scalar everywhere), as PyTorch's SumBackward0 (``torch.sparse.sum``'s is
    masked: sparse_ops.py)."""

    @staticmethod
    def forward(ctx, s, dtype):
        ctx.size, ctx.dtype = s._size, s._dtype
        vals = s._vals if dtype is None else s._vals.to(dtype)
        return vals.sum()

    @staticmethod
    def backward(ctx, g):
        return g.to(ctx.dtype).expand(*ctx.size).contiguous(), None


class _Coalesce(Function):
    """coalesce's node: the same tensor, so the gradient passes through unchanged."""

    @staticmethod
    def forward(ctx, s):
        idx = _host_indices(s)
        sd = idx.shape[0]
        uniq, inverse = np.unique(_linear(idx, s._size[:sd]), return_inverse=True)
        coords = np.stack(np.unravel_index(uniq, tuple(s._size[:sd]))) if sd else \
            np.zeros((0, len(uniq)), np.int64)
        from .ops.creation import zeros
        vals = s._vals
        summed = zeros((len(uniq), *vals.shape[1:]), dtype=vals.dtype, device=vals.device)
        summed = summed.index_add(0, _index_tensor(inverse.reshape(-1), vals), vals)
        return _new(_index_tensor(coords.reshape(sd, len(uniq)), vals), summed, s._size, True)

    @staticmethod
    def backward(ctx, g):
        return g


class _Values(Function):
    """values()'s node: a gradient of the values is a sparse gradient on the same indices."""

    @staticmethod
    def forward(ctx, s):
        ctx.indices, ctx.size, ctx.coalesced = s._idx, s._size, s._coalesced
        return s._vals.detach()

    @staticmethod
    def backward(ctx, g):
        return deliver_sparse(ctx, 0, ctx.indices, g, ctx.size, ctx.coalesced)


class _RepeatedValues(Function):
    """The values of a tensor whose coordinates repeat, for the ops that move or scale each
    entry (``clone``, ``t``, ``* 2`` ...) and keep the repeats, as PyTorch's. Every gradient
    of such an op's result reads one element per coordinate, so the repeats' gradients are
    equal; the tensor's gradient holds it once per coordinate (summed, the repeats would count
    it several times)."""

    @staticmethod
    def forward(ctx, s):
        idx = _host_indices(s)
        _, first = np.unique(_linear(idx, s._size[:idx.shape[0]]), return_index=True)
        ctx.first = _index_tensor(first, s._vals)  # (sorted by coordinate: coalesced)
        ctx.indices = _index_tensor(idx[:, first], s._vals)
        ctx.size = s._size
        return s._vals.detach()

    @staticmethod
    def backward(ctx, g):
        return deliver_sparse(ctx, 0, ctx.indices, g.index_select(0, ctx.first), ctx.size, True)


def deliver_sparse(ctx, slot: int, indices: Tensor, values: Tensor, size,
                   coalesced: bool = False) -> Tensor:
    """A sparse gradient (indices, values) for input ``slot`` of the node ``ctx``: sparse
    when the node receiving it takes sparse gradients (a leaf's accumulation, or a sparse
    node here), else its dense equivalent (the dense ops' rules read dense arrays)."""
    if takes_sparse(ctx, slot):
        return _FromParts.apply(indices, values, size, coalesced)
    return _densify(indices, values, size)


def takes_sparse(ctx, slot: int) -> bool:
    """Whether input ``slot`` of the node ``ctx`` takes a sparse gradient: a leaf's
    accumulation, or a node of a sparse tensor's rule (``SPARSE_NODES``)."""
    node = ctx._next[slot] if slot < len(ctx._next) else None
    return node is None or type(node) is AccumulateGrad or getattr(
        node, "_forward_cls", None) in SPARSE_NODES


# the nodes whose rules take sparse gradients (the compressed layouts' module adds its own)
SPARSE_NODES = {_FromParts, _ToDense, _Values, _Coalesce, _ToDenseUnmasked, _RepeatedValues}

# the nodes print under PyTorch's names
for _cls, _name in ((_FromParts, "SparseCooTensorWithDimsAndTensorsBackward0"),
                    (_ToDense, "ToDenseBackward0"), (_Values, "ValuesBackward0"),
                    (_ToDenseUnmasked, "ToDenseBackward0"), (_SumAll, "SumBackward0"),
                    (_Coalesce, "CoalesceBackward0")):
    _cls._backward_cls.__name__ = _cls._backward_cls.__qualname__ = _name


def _densify(indices: Tensor, values: Tensor, size) -> Tensor:
    """The dense tensor of (indices, values), duplicates summed (differentiable in values)."""
    from .ops.creation import zeros
    out = zeros(tuple(size), dtype=values.dtype, device=values.device)
    if indices.shape[1] == 0:
        return out
    if indices.shape[0] == 0:  # no sparse dims (a 0-d tensor's): every value lands on all of it
        return out + values.sum(0)
    return out.index_put(tuple(indices.unbind(0)), values, accumulate=True)


def _read_at(g: Tensor, indices: Tensor) -> Tensor:
    """``g``'s elements at the coordinates ``indices`` (sparse_dim, nnz): a (nnz, *dense)
    tensor; ``g`` dense or sparse (an element it does not specify reads as zero)."""
    if not is_sparse(g):
        if indices.shape[1] == 0:
            return g.reshape(-1, *g.shape[indices.shape[0]:])[:0]
        if indices.shape[0] == 0:  # no sparse dims: every coordinate is all of g
            return g.unsqueeze(0).expand(indices.shape[1], *g.shape)
        return g[tuple(indices.unbind(0))]
    g = g.coalesce()
    want = _linear(np.asarray(indices.cpu().numpy(), np.int64), g._size[:indices.shape[0]])
    have = _linear(_host_indices(g), g._size[:indices.shape[0]])
    pos = np.searchsorted(have, want)
    found = pos < len(have)
    found[found] = have[pos[found]] == want[found]
    vals = g.values()
    if not found.all():  # (an appended zero row stands for the coordinates g lacks)
        vals = _cat0(vals)
        pos = np.where(found, pos, len(have))
    return vals.index_select(0, _index_tensor(pos, vals))


def _cat0(vals: Tensor) -> Tensor:
    from .ops.creation import zeros
    from .ops import cat
    return cat([vals, zeros((1, *vals.shape[1:]), dtype=vals.dtype, device=vals.device)], 0)


# -- the tensor ---------------------------------------------------------------------------------

class SparseBase(Tensor):
    """What the sparse layouts share (COO here, the compressed ones in sparse_compressed.py):
    a shape without dense data or strides, and the conversions that go through ``to``.
    Subclasses hold ``_size`` and ``_vals`` and define ``layout`` and ``to``."""

    __torch_function__ = _disabled_torch_function_impl
    _densify: type  # the layout's Function from sparse to dense, masked in its gradient

    def to_dense(self, dtype=None, *, masked_grad=None) -> Tensor:
        """The dense (strided) tensor (a COO tensor's duplicate coordinates summed); its
        gradient is masked to the specified elements (``masked_grad`` None or True; PyTorch's
        unmasked rule, ``masked_grad=False``, is not implemented). ``dtype`` is refused, as
        PyTorch's."""
        if dtype is not None:  # (PyTorch's sparse_to_dense, sparse_csr_to_dense, refuse it)
            raise RuntimeError(f"dtype argument is not supported by "
                               f"{'sparse' if self._kind() == 'COO' else 'sparse_csr'}_to_dense")
        if masked_grad is False and is_sparse(self):
            return _ToDenseUnmasked.apply(self, True)
        if masked_grad is False:
            raise NotImplementedError("to_dense: masked_grad=False (an unmasked gradient) is "
                                      "not implemented; the gradient is masked to the "
                                      "specified elements")
        return type(self)._densify.apply(self)

    def _kind(self) -> str:
        return str(self.layout).rsplit("_", 1)[-1].upper()

    @property
    def shape(self) -> Size:
        return self._size

    def size(self, dim: int | None = None):
        if dim is None:
            return self._size
        from .tensor import wrap_dim
        return self._size[wrap_dim(dim, len(self._size), "size")]

    def dim(self) -> int:
        return len(self._size)

    @property
    def ndim(self) -> int:
        return len(self._size)

    def numel(self) -> int:
        return self._size.numel()

    def __len__(self) -> int:
        if not self._size:
            raise TypeError("len() of a 0-d tensor")
        return self._size[0]

    nelement = numel

    def is_contiguous(self, memory_format=None) -> bool:
        raise RuntimeError(f"is_contiguous: sparse {self._kind()} tensors have no strides; this "
                           f"operation does not support them (see docs/sparse.md for what does)")

    def stride(self, dim: int | None = None):
        raise RuntimeError(f"stride: sparse {self._kind()} tensors have no strides; this "
                           f"operation does not support them (see docs/sparse.md for what does)")

    def cpu(self) -> "SparseBase":
        return self.to("cpu")

    def cuda(self, device=None, non_blocking: bool = False) -> "SparseBase":
        return self.to("cuda" if device is None else device)

    def double(self) -> "SparseBase":
        return self.to(dtypes.float64)

    def float(self) -> "SparseBase":
        return self.to(dtypes.float32)

    def type_as(self, other: Tensor) -> "SparseBase":
        return self.to(other.dtype)

    def data_ptr(self) -> int:
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage (a "
                           f"sparse {self._kind()} tensor: use .values().data_ptr())")

    def numpy(self, *, force: bool = False):
        raise TypeError(f"can't convert {layout_name(self)} layout tensor to numpy. Use "
                        f"Tensor.to_dense() first.")

    def tolist(self):
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage (a "
                           f"sparse {self._kind()} tensor: use .to_dense().tolist())")


def _cast_method(name: str, dt):
    def cast(self, memory_format=None) -> SparseBase:
        return self.to(dt)
    cast.__name__ = cast.__qualname__ = name
    cast.__doc__ = f"This tensor with its values cast to ``{dt}`` (the layout kept)."
    return cast


for _name, _dt in (("half", dtypes.float16), ("bfloat16", dtypes.bfloat16),
                   ("int", dtypes.int32), ("long", dtypes.int64), ("short", dtypes.int16),
                   ("char", dtypes.int8), ("byte", dtypes.uint8), ("bool", dtypes.bool),
                   ("cfloat", dtypes.complex64), ("cdouble", dtypes.complex128)):
    setattr(SparseBase, _name, _cast_method(_name, _dt))


class SparseTensor(SparseBase):
    """A sparse COO tensor; made by ``tritongrad.sparse_coo_tensor`` or ``Tensor.to_sparse``.

    Example:
        >>> s = tg.sparse_coo_tensor([[0, 1], [2, 0]], [3., 4.], (2, 3))
        >>> s.to_dense().tolist()
        [[0.0, 0.0, 3.0], [4.0, 0.0, 0.0]]
    """

    # Fields (in the instance __dict__): _idx, _vals, _size, _coalesced. The dense Tensor's
    # slots hold the device, the dtype and the autograd state; _data is _NO_DENSE.
    is_sparse = property(lambda self: True)

    @property
    def layout(self):
        return dtypes.sparse_coo

    # -- parts --------------------------------------------------------------------------------
    def sparse_dim(self) -> int:
        """How many leading dimensions are sparse (the rows of ``indices``)."""
        return self._idx.shape[0]

    def dense_dim(self) -> int:
        """How many trailing dimensions each value carries."""
        return self._vals.ndim - 1

    def _nnz(self) -> int:
        """The number of specified elements (duplicates counted)."""
        return self._idx.shape[1]

    def is_coalesced(self) -> bool:
        """Whether the indices are sorted and unique (``coalesce()`` makes them so)."""
        return self._coalesced

    def _check_coalesced(self, name: str) -> None:
        if not self._coalesced:
            raise RuntimeError(f"Cannot get {name} on an uncoalesced tensor, please call "
                               f".coalesce() first")

    def indices(self) -> Tensor:
        """The (sparse_dim, nnz) int64 coordinates of a coalesced tensor."""
        self._check_coalesced("indices")
        return self._idx

    def values(self) -> Tensor:
        """The (nnz, *dense_dims) values of a coalesced tensor (differentiable)."""
        self._check_coalesced("values")
        return _Values.apply(self)

    def _not_compressed(self, name: str, kind: str):
        raise RuntimeError(f"{name} expected sparse {kind} compressed tensor layout but got "
                           f"Sparse")

    crow_indices = lambda self: self._not_compressed("crow_indices", "row")  # noqa: E731
    col_indices = lambda self: self._not_compressed("col_indices", "row")  # noqa: E731
    ccol_indices = lambda self: self._not_compressed("ccol_indices", "column")  # noqa: E731
    row_indices = lambda self: self._not_compressed("row_indices", "column")  # noqa: E731

    def _indices(self) -> Tensor:
        """The coordinates, coalesced or not (PyTorch's ``_indices()``)."""
        return self._idx

    def _values(self) -> Tensor:
        """The values, coalesced or not, without autograd (PyTorch's ``_values()``)."""
        return self._vals.detach()

    # -- conversions --------------------------------------------------------------------------
    _densify = _ToDense  # (SparseBase.to_dense; duplicate coordinates are summed)

    def coalesce(self) -> "SparseTensor":
        """This tensor with its coordinates sorted and unique, duplicates' values summed."""
        return self if self._coalesced else _Coalesce.apply(self)

    def _parts(self) -> tuple:
        """(indices, values with autograd, coalesced) for ops written over the values: this
        tensor's own when its coordinates are unique, else its coalesced form's. (With a
        repeated coordinate the values' gradients could differ between the repeats, which no
        gradient of the tensor can say: PyTorch's ``values()`` refuses such tensors.)"""
        if not self._coalesced and not self._unique():
            return self.coalesce()._parts()
        return self._idx, _Values.apply(self), self._coalesced

    def _entry_parts(self) -> tuple:
        """(indices, values with autograd, coalesced) for the ops that move or scale each
        entry on its own: this tensor's own, repeated coordinates kept (PyTorch's)."""
        if self._coalesced or self._unique():
            return self._idx, _Values.apply(self), self._coalesced
        return self._idx, _RepeatedValues.apply(self), False

    def _unique(self) -> bool:
        u = self.__dict__.get("_unique_idx")
        if u is None:
            lin = _linear(_host_indices(self), self._size[:self.sparse_dim()])
            u = self._unique_idx = len(np.unique(lin)) == len(lin)
        return u

    def to_sparse(self, sparse_dim: int | None = None, **kwargs) -> "SparseTensor":
        if kwargs.get("layout") not in (None, dtypes.sparse_coo):
            from .sparse_compressed_ops import check_to_sparse, coo_to_compressed
            if sparse_dim is not None:
                raise TypeError("to_sparse() with a layout takes no sparse_dim")
            check_to_sparse(self, kwargs["layout"], kwargs.get("blocksize"))
            return coo_to_compressed(self, kwargs["layout"], kwargs.get("blocksize"),
                                     kwargs.get("dense_dim"))
        if kwargs.get("blocksize") is not None:
            raise RuntimeError("to_sparse: conversion from Sparse to Sparse with blocksize "
                               "argument given is not supported")
        if sparse_dim is not None and sparse_dim != self.sparse_dim():
            raise RuntimeError(f"to_sparse: conversion from Sparse to Sparse with sparse_dim "
                               f"argument !=self.sparse_dim() is not supported")
        return self

    def detach(self) -> "SparseTensor":
        out = _new(self._idx, self._vals, self._size, self._coalesced)
        return out

    def clone(self, *, memory_format=None) -> "SparseTensor":
        idx, vals, co = self._entry_parts()
        return _FromParts.apply(idx.clone(), vals.clone(), self._size, co)

    def to(self, *args, **kwargs) -> "SparseTensor":
        """A copy with the values moved or cast (``to(dtype)``, ``to(device)``, ...)."""
        idx, vals, co = self._entry_parts()
        vals = vals.to(*args, **kwargs)
        if vals.device == self.device and vals.dtype is self.dtype and \
                not kwargs.get("copy", False):
            return self
        return _FromParts.apply(idx.to(vals.device), vals, self._size, co)

    # -- arithmetic ---------------------------------------------------------------------------
    def _scaled(self, f) -> "SparseTensor":
        idx, vals, co = self._entry_parts()
        return _FromParts.apply(idx, vals * f, self._size, co)

    def __mul__(self, other):
        """``self * other``: by a scalar, a dense tensor (read at the specified elements) or a
        sparse tensor (the elements both specify); sparse (sparse_ops.mul)."""
        if not isinstance(other, (int, float, bool, Tensor)):
            return NotImplemented
        from .sparse_ops import mul
        return mul(self, other)

    __rmul__ = mul = __mul__

    def __truediv__(self, other):
        """``self / other`` for a scalar or 0-d dense ``other`` (PyTorch's only sparse case)."""
        if not isinstance(other, (int, float, Tensor)):
            return NotImplemented
        from .sparse_ops import div
        return div(self, other)

    def div(self, other, *, rounding_mode: str | None = None) -> "SparseTensor":
        """``self / other`` (``rounding_mode``: ``"trunc"``, ``"floor"``) for a scalar or 0-d
        dense ``other``."""
        from .sparse_ops import div
        return div(self, other, rounding_mode=rounding_mode)

    def __floordiv__(self, other):
        if not isinstance(other, (int, float, Tensor)):
            return NotImplemented
        from .sparse_ops import floor_divide
        return floor_divide(self, other)

    floor_divide = __floordiv__

    def __neg__(self) -> "SparseTensor":
        if self.dtype is dtypes.bool:
            raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. "
                               "If you are trying to invert a mask, use the `~` or "
                               "`logical_not()` operator instead.")
        return self._scaled(-1)

    neg = __neg__

    def add(self, other, *, alpha=1):
        """sparse + sparse is sparse (coalesced when both are); sparse + dense is dense."""
        if not isinstance(other, Tensor):
            return _refuse("add", self, other)
        if alpha != 1:
            other = other * alpha
        if is_sparse(other):
            _check_same_size("add", self, other)
            return _add_sparse(self, other)
        if isinstance(other, SparseBase):
            return _refuse("add", self, other)
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) "
                           "instead.")

    def _radd(self, other, alpha=1):
        """``other + alpha * self`` for a dense ``other``: dense, as PyTorch's add(dense,
        sparse), whose gradient for ``self`` is dense (not masked); of one size only."""
        from .sparse_ops import _densified
        d = _densified("add", other, self)
        return (d if alpha == 1 else d * alpha) + other

    def __add__(self, other):
        if isinstance(other, (int, float, complex)) and not isinstance(other, bool):
            raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) "
                               "instead.")  # (a number is a dense 0-d operand: PyTorch's)
        return self.add(other) if isinstance(other, Tensor) else NotImplemented

    def __radd__(self, other):
        # dense + sparse comes here first (a subclass's reflected operator wins)
        if not isinstance(other, Tensor):
            return self.__add__(other)
        return self.add(other) if isinstance(other, SparseBase) else self._radd(other)

    def __sub__(self, other):
        return self.add(-other) if isinstance(other, Tensor) else NotImplemented

    sub = __sub__

    def __rsub__(self, other):
        if not isinstance(other, Tensor):
            return NotImplemented
        return (-self).add(other) if isinstance(other, SparseBase) else self._radd(other, -1)

    def _set(self, idx: Tensor, vals: Tensor, coalesced: bool) -> "SparseTensor":
        """In-place ops' one exit: new parts (rebound, never written: they may be shared with
        the tensor this one was made from), the version bumped."""
        self._idx, self._vals, self._coalesced = idx, vals, coalesced
        self.__dict__.pop("_unique_idx", None)
        self._vc[0] += 1
        return self

    def add_(self, other, *, alpha=1) -> "SparseTensor":
        """In place: ``self += alpha * other`` for a sparse ``other``: merged (coalesced) when
        both are coalesced, else concatenated (uncoalesced), as PyTorch's."""
        if not is_sparse(other):
            raise RuntimeError("add_: a sparse tensor can only be added to in place by a "
                               "sparse tensor; use self.to_dense().add_(other)")
        _check_same_size("add_", self, other)
        from .ops import cat
        vals = other._vals if alpha == 1 else other._vals * alpha
        idx = cat([self._idx, other._idx.to(self.device)], 1)
        vals = cat([self._vals, vals.to(self._dtype)], 0)
        if self._coalesced and other._coalesced and self._nnz() and other._nnz():
            merged = _Coalesce.forward(None, _new(idx, vals, self._size, False))
            return self._set(merged._idx, merged._vals, True)
        return self._set(idx, vals, self._coalesced and other._nnz() == 0)

    def _check_resize(self, op: str, size, sparse_dim: int, dense_dim: int) -> tuple:
        size = tuple(int(n) for n in size)
        if len(size) != sparse_dim + dense_dim:
            raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: "
                               f"len(size) = {len(size)}, sparse_dim = {sparse_dim}, "
                               f"dense_dim = {dense_dim}")
        if self.requires_grad:
            raise RuntimeError(f"{op}: a tensor that requires grad cannot be resized in place "
                               f"(a leaf Variable that requires grad is being used in an "
                               f"in-place operation)")
        return size

    def sparse_resize_(self, size, sparse_dim: int, dense_dim: int) -> "SparseTensor":
        """Resizes this tensor in place to ``size`` with ``sparse_dim`` sparse and
        ``dense_dim`` dense dims (PyTorch's ``sparse_resize_``). With specified elements the
        numbers of sparse and dense dims must stay and no size may shrink (a dense dim that
        grows is padded with zeros); an empty tensor takes any size.

        Example:
            >>> s = tg.sparse_coo_tensor([[0], [1]], [1.], (2, 2))
            >>> s.sparse_resize_((3, 4), 2, 0).shape
            tritongrad.Size([3, 4])
        """
        size = self._check_resize("sparse_resize_", size, sparse_dim, dense_dim)
        sd, dd = self.sparse_dim(), self.dense_dim()
        if self._nnz() == 0:
            return self._resized(size, sparse_dim)
        if sparse_dim != sd:
            raise RuntimeError(f"changing the number of sparse dimensions (from {sd} to "
                               f"{sparse_dim}) on a non-empty sparse tensor is not supported.")
        if dense_dim != dd:
            raise RuntimeError(f"changing the number of dense dimensions (from {dd} to "
                               f"{dense_dim}) on a non-empty sparse tensor is not supported.")
        old = tuple(self._size)
        for what, a, b in (("sparse", old[:sd], size[:sd]), ("dense", old[sd:], size[sd:])):
            if any(n < m for m, n in zip(a, b)):
                raise RuntimeError(f"shrinking the size of {what} dimensions (from {list(a)} "
                                   f"to {list(b)}) on a non-empty sparse tensor is not "
                                   f"supported.")
        vals = self._vals
        if size[sd:] != old[sd:]:  # (grown dense dims: zeros where PyTorch leaves memory)
            from .ops.creation import zeros
            grown = zeros((vals.shape[0], *size[sd:]), dtype=vals.dtype, device=vals.device)
            grown[(slice(None),) + tuple(slice(0, m) for m in old[sd:])] = vals
            vals = grown
        self._size = Size(size)
        return self._set(self._idx, vals, self._coalesced)

    def sparse_resize_and_clear_(self, size, sparse_dim: int, dense_dim: int) -> "SparseTensor":
        """Empties this tensor (nnz 0) and resizes it to ``size`` with ``sparse_dim`` sparse and
        ``dense_dim`` dense dims, in place (PyTorch's ``sparse_resize_and_clear_``)."""
        size = self._check_resize("sparse_resize_and_clear_", size, sparse_dim, dense_dim)
        return self._resized(size, sparse_dim)

    def _resized(self, size: tuple, sparse_dim: int) -> "SparseTensor":
        """Empty, of ``size`` with ``sparse_dim`` sparse dims (in place)."""
        from .ops.creation import zeros
        idx = zeros((sparse_dim, 0), dtype=dtypes.int64, device=self.device)
        vals = zeros((0, *size[sparse_dim:]), dtype=self.dtype, device=self.device)
        self._size = Size(size)
        return self._set(idx, vals, True)

    def new_zeros(self, *size, dtype=None, device=None, requires_grad: bool = False,
                  layout=None, pin_memory: bool = False) -> Tensor:
        """An empty sparse COO tensor of ``size`` (every dim sparse, nnz 0), this tensor's dtype
        and device unless given, as PyTorch's ``new_zeros`` of a sparse tensor."""
        if len(size) == 1 and not isinstance(size[0], int):
            size = tuple(size[0])
        from .ops.creation import zeros
        dtype = self.dtype if dtype is None else dtype
        device = self.device if device is None else device
        if layout is dtypes.strided:
            return zeros(size, dtype=dtype, device=device, requires_grad=requires_grad)
        if layout not in (None, dtypes.sparse_coo):
            raise RuntimeError(f"new_zeros: layout {layout} is not supported for a sparse COO "
                               f"tensor; convert the result with to_sparse(layout=...)")
        out = _new(zeros((len(size), 0), dtype=dtypes.int64, device=device),
                   zeros((0,), dtype=dtype, device=device), size, True)
        return out.requires_grad_() if requires_grad else out

    new_empty = new_zeros  # (PyTorch's new_empty of a sparse tensor is empty: nnz 0)

    def _coalesced_(self, coalesced: bool) -> "SparseTensor":
        """Declares the indices coalesced (or not), unchecked, in place (PyTorch's)."""
        self._coalesced = bool(coalesced)
        return self

    def mul_(self, other) -> "SparseTensor":
        return self._set(self._idx, self._vals * other, self._coalesced)

    def zero_(self) -> "SparseTensor":
        """Empties the tensor (nnz becomes 0), as PyTorch's zero_ on a sparse tensor."""
        return self._set(self._idx[:, :0], self._vals[:0], True)

    def copy_(self, src, non_blocking: bool = False) -> "SparseTensor":
        """In place: ``src``'s indices and values (a sparse ``src``), or empty for ``src`` 0
        (what ``zero_grad(set_to_none=False)`` writes)."""
        if is_sparse(src):
            _check_same_size("copy_", self, src)
            return self._set(src._idx.clone(), src._vals.to(self._dtype).clone(),
                             src._coalesced)
        if not isinstance(src, Tensor) and src == 0:
            return self.zero_()
        return _refuse("copy_", self, src)

    def sum(self, dim=None, keepdim: bool = False, dtype=None):
        """The sum of all elements (dense 0-d) or over ``dim``: sparse while sparse dims remain
        (``keepdim``: the summed dims kept with size 1, a kept dim after a sparse one sparse),
        dense otherwise, as PyTorch's."""
        from .sparse_ops import _dim
        from .sparse_ops import sum as sparse_sum
        if keepdim:
            if dim is None:
                raise TypeError("sum() received an invalid combination of arguments - got "
                                "(keepdim=bool, ): keepdim needs dim")
            out = self.sum(dim, dtype=dtype)
            for d in sorted({_dim(d, self.ndim) for d in ((dim,) if isinstance(dim, int)
                                                           else dim)}):
                out = out.unsqueeze(d)
            return out
        if dim is None or (not isinstance(dim, int) and len(set(dim)) == self.ndim):
            # (a dense 0-d result: PyTorch's SumBackward gives self a dense gradient)
            return _SumAll.apply(self, dtype)
        return sparse_sum(self, dim, dtype=dtype)

    def norm(self, p="fro", dim=None, keepdim: bool = False, dtype=None) -> Tensor:
        """The ``p``-norm of all elements (a dense 0-d tensor; the unspecified ones are 0):
        of the coalesced values, as PyTorch's ``norm`` of a sparse tensor (full reductions
        only)."""
        if dim is not None and sorted(
                (dim,) if isinstance(dim, int) else [d % self.ndim for d in dim]) != list(
                range(self.ndim)):
            raise RuntimeError("norm_sparse currently only supports full reductions, so 'dim' "
                               "must either be empty or contain all dimensions of the input")
        vals = self.coalesce()._parts()[1]
        vals = vals if dtype is None else vals.to(dtype)
        return vals.norm(2 if p == "fro" else p)

    def any(self, dim=None, keepdim: bool = False) -> Tensor:
        """Whether any element is nonzero (a dense 0-d bool tensor; ``dim`` not supported)."""
        if dim is not None:
            return _refuse("any(dim)", self, None)
        return self.coalesce()._vals.detach().any()

    def float_power(self, exponent) -> "SparseTensor":
        """``pow`` in float64 (complex128 for complex values), on the specified elements."""
        dt = dtypes.complex128 if self.dtype.is_complex else dtypes.float64
        return self.to(dt).pow(exponent)

    def mm(self, mat2: Tensor) -> Tensor:
        """``torch.mm(self, mat2)``: dense; the gradient of ``self`` dense (sparse_ops.py)."""
        from .sparse_ops import mm_dense_grad
        return mm_dense_grad(self, mat2)

    def matmul(self, other: Tensor) -> Tensor:
        """``self @ other`` for a dense matrix or vector ``other`` (dense)."""
        from .sparse_ops import matmul
        return matmul(self, other)

    __matmul__ = matmul

    def __rmatmul__(self, other: Tensor) -> Tensor:
        """``dense @ self`` (dense)."""
        from .sparse_ops import rmatmul
        return rmatmul(self, other)

    def smm(self, mat: Tensor) -> "SparseTensor":
        """``tritongrad.smm(self, mat)``: this sparse matrix times a dense one, sparse."""
        from .sparse_products import smm
        return smm(self, mat)

    def sspaddmm(self, mat1, mat2: Tensor, *, beta=1, alpha=1) -> "SparseTensor":
        """``tritongrad.sspaddmm(self, mat1, mat2, beta=beta, alpha=alpha)``."""
        from .sparse_products import sspaddmm
        return sspaddmm(self, mat1, mat2, beta=beta, alpha=alpha)

    def t(self) -> "SparseTensor":
        """The transpose of a 2-D sparse matrix (uncoalesced: the order changes); a 0-d or
        1-D tensor is its own transpose."""
        if self.ndim < 2 and self.dense_dim() == 0:
            return self
        if self.ndim != 2 or self.sparse_dim() != 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, "
                               f"but got {self.sparse_dim()} sparse and {self.dense_dim()} "
                               f"dense dimensions")
        idx, vals, _ = self._entry_parts()
        return _FromParts.apply(idx.flip(0), vals, (self._size[1], self._size[0]), False)

    @property
    def T(self) -> "SparseTensor":  # noqa: N802 - PyTorch's name
        """``t()`` of a matrix; the dims reversed for more (``permute``), as PyTorch's."""
        if self.ndim <= 2:
            return self.t()
        return self.permute(*range(self.ndim - 1, -1, -1))

    @property
    def mT(self) -> "SparseTensor":  # noqa: N802 - PyTorch's name
        """The last two dims swapped."""
        if self.ndim < 2:
            raise RuntimeError(f"tensor.mT is only supported on matrices or batches of "
                               f"matrices. Got {self.ndim}-D tensor.")
        return self.transpose(-2, -1)

    def __getitem__(self, key):
        """``s[i]`` / ``s[i, j, ...]`` with integers: ``select`` of the leading dims (PyTorch's
        sparse indexing beyond that, slices and tensors, is not supported here)."""
        keys = key if isinstance(key, tuple) else (key,)
        if not keys or not all(isinstance(k, int) and not isinstance(k, bool) for k in keys):
            raise NotImplementedError(f"indexing a sparse COO tensor with {key!r}: only integer "
                                      f"indices are supported (they select leading dims); use "
                                      f"index_select, narrow_copy or to_dense()")
        if len(keys) > self.ndim:
            raise IndexError(f"too many indices for tensor of dimension {self.ndim}")
        out = self
        for d, k in enumerate(keys):
            if not -self.shape[d] <= k < self.shape[d]:
                raise IndexError(f"index {k} is out of bounds for dimension {d} with size "
                                 f"{self.shape[d]}")
            out = out.select(0, k)
        return out

    def reshape(self, *shape) -> Tensor:
        """Not supported for sparse tensors (PyTorch's RuntimeError)."""
        raise RuntimeError("reshape is not implemented for sparse tensors (convert with "
                           "to_dense() first)")

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        """Not supported for sparse tensors (it is a reshape: PyTorch's RuntimeError)."""
        return self.reshape(-1)

    def view(self, *shape) -> Tensor:
        """Not supported for sparse tensors (PyTorch's NotImplementedError)."""
        raise NotImplementedError("Could not run 'aten::view' with arguments from the "
                                  f"'Sparse{self.device.type.upper()}' backend (a sparse COO "
                                  f"tensor has no strided data to view)")

    def contiguous(self, memory_format=None) -> Tensor:
        """Not supported for sparse tensors (PyTorch's RuntimeError)."""
        raise RuntimeError("unsupported memory format option Contiguous (a sparse COO tensor "
                           "has no strides)")

    def t_(self) -> "SparseTensor":
        """``t()`` in place."""
        return self._become("t_", self.t())

    def transpose_(self, dim0: int, dim1: int) -> "SparseTensor":
        """``transpose(dim0, dim1)`` in place."""
        return self._become("transpose_", self.transpose(dim0, dim1))

    def _become(self, op: str, out: "SparseTensor") -> "SparseTensor":
        """In place: this tensor takes ``out``'s parts and size (an unrecorded change)."""
        if self.requires_grad:
            raise RuntimeError(f"a leaf Variable that requires grad is being used in an "
                               f"in-place operation ({op} of a sparse tensor that requires "
                               f"grad; use {op[:-1]}())")
        if out is not self:
            self._size = out._size
            self._set(out._idx, out._vals, out._coalesced)
        return self

    def __repr__(self, *, tensor_contents: str | None = None) -> str:
        from .printing import sparse_repr
        return sparse_repr(self, tensor_contents)

    __str__ = __repr__

    def __reduce_ex__(self, protocol: int):
        # (requires_grad is not kept: PyTorch's COO rebuild drops it)
        return (_rebuild_sparse, (self._idx.detach(), self._vals.detach(),
                                  tuple(self._size), self._coalesced, False))

    def __deepcopy__(self, memo: dict) -> "SparseTensor":
        if id(self) not in memo:
            out = _new(self._idx.clone(), self._vals.clone(), self._size,
                       self._coalesced)
            out._requires_grad = self._requires_grad
            memo[id(self)] = out
        return memo[id(self)]


def _rebuild_sparse(indices, values, size, coalesced, requires_grad):
    t = _new(indices, values, size, coalesced)
    t._requires_grad = requires_grad
    return t


def _refuse(op: str, a, b):
    kinds = ", ".join("sparse" if is_sparse(x) else type(x).__name__ if not isinstance(x, Tensor)
                      else "dense" for x in (a, b) if x is not None)
    raise NotImplementedError(f"{op}: not supported for these operands ({kinds}) with a sparse "
                              f"COO tensor; see docs/sparse.md for the sparse ops")


def _keys(t: SparseTensor) -> tuple:
    """(the linear keys of ``t``'s coordinates, whether they are in order)."""
    key = _linear(_host_indices(t), t._size[:t.sparse_dim()])
    return key, t._coalesced or bool((key[1:] >= key[:-1]).all())


def _merge_unordered(ka: np.ndarray, kb: np.ndarray) -> tuple:
    """``_merge`` of key sequences not in order: PyTorch's two-pointer walk itself (at each
    step the smaller head is taken, equal heads together), on the host."""
    a, b = ka.tolist(), kb.tolist()
    keys, pa, pb = [], [], []
    i = j = 0
    while i < len(a) and j < len(b):
        if a[i] <= b[j]:
            pa.append(len(keys))
            if a[i] == b[j]:
                pb.append(len(keys))
                j += 1
            keys.append(a[i])
            i += 1
        else:
            pb.append(len(keys))
            keys.append(b[j])
            j += 1
    pa.extend(range(len(keys), len(keys) + len(a) - i))
    keys.extend(a[i:])
    pb.extend(range(len(keys), len(keys) + len(b) - j))
    keys.extend(b[j:])
    return (np.asarray(keys, np.int64), np.asarray(pa, np.int64), np.asarray(pb, np.int64))


def _merge(ka: np.ndarray, kb: np.ndarray) -> tuple:
    """PyTorch's two-pointer merge of two sorted key sequences: (the merged keys, where each
    entry of a and of b lands). The k-th entry of a coordinate in a meets its k-th in b (their
    values add up); the others stay on their own."""
    ranks = [np.arange(len(k)) - np.searchsorted(k, k, "left") for k in (ka, kb)]
    keys, rank = np.concatenate([ka, kb]), np.concatenate(ranks)
    order = np.lexsort((rank, keys))
    ks, rs = keys[order], rank[order]
    new = np.ones(len(ks), bool)
    new[1:] = (ks[1:] != ks[:-1]) | (rs[1:] != rs[:-1])
    pos = np.empty(len(keys), np.int64)
    pos[order] = np.cumsum(new) - 1
    return ks[new], pos[:len(ka)], pos[len(ka):]


def _add_sparse(a: SparseTensor, b: SparseTensor) -> SparseTensor:
    """``a + b`` of two COO tensors, as PyTorch's: the entries merged by its two-pointer walk
    over the coordinates (coalesced when both operands are)."""
    from ..runtime.dtype import result_type
    (_, v1, _), (_, v2, _) = a._entry_parts(), b._entry_parts()
    dt = result_type(a, b)
    v1, v2 = v1.to(dt), v2.to(dt)
    (ka, in_order_a), (kb, in_order_b) = _keys(a), _keys(b)
    keys, pa, pb = (_merge if in_order_a and in_order_b else _merge_unordered)(ka, kb)
    sd = a.sparse_dim()
    coords = np.stack(np.unravel_index(keys, tuple(a._size[:sd]))) if sd else \
        np.zeros((0, len(keys)), np.int64)
    from .ops.creation import zeros
    vals = zeros((len(keys), *v1.shape[1:]), dtype=dt, device=v1.device)
    vals = vals.index_add(0, _index_tensor(pa, v1), v1).index_add(
        0, _index_tensor(pb, v1), v2.to(v1.device))
    return _FromParts.apply(_index_tensor(coords.reshape(sd, -1), v1), vals, a._size,
                            a._coalesced and b._coalesced)


def _check_same_size(op: str, a, b) -> None:
    if tuple(a.shape) != tuple(b.shape):
        raise RuntimeError(f"{op}: sparse tensors must have the same size, got "
                           f"{list(a.shape)} and {list(b.shape)}")
    if a.dense_dim() != b.dense_dim():
        raise RuntimeError(f"{op}: sparse tensors must have the same dense_dim, got "
                           f"{a.dense_dim()} and {b.dense_dim()}")


# -- the invariants setting ------------------------------------------------------------------

class check_sparse_tensor_invariants:  # noqa: N801 - PyTorch's name
    """Whether the sparse tensor factories check their indices (``torch.sparse``'s context
    manager and decorator): ``sparse_coo_tensor`` and the compressed ones (``sparse_csr_tensor``
    ...) check when their ``check_invariants`` is None and this is enabled.

    Unlike PyTorch's, it is enabled by default: the checks are cheap host work, and an
    unchecked index out of range would read or write out of bounds in the device kernels.

    Args:
        enable: the setting inside the ``with`` block or decorated function.

    Example:
        >>> with tg.sparse.check_sparse_tensor_invariants(False):
        ...     s = tg.sparse_coo_tensor([[5]], [1.], (2,))  # not checked
    """

    _enabled = True

    @staticmethod
    def is_enabled() -> bool:
        """Whether the factories check their indices by default."""
        return check_sparse_tensor_invariants._enabled

    @staticmethod
    def enable() -> None:
        """Checks by default from now on."""
        check_sparse_tensor_invariants._enabled = True

    @staticmethod
    def disable() -> None:
        """Stops checking by default (a factory's ``check_invariants=True`` still checks)."""
        check_sparse_tensor_invariants._enabled = False

    def __init__(self, enable: bool = True):
        self.state = bool(enable)
        self.saved_state = None

    def __enter__(self):
        if self.saved_state is not None:
            raise RuntimeError("This context manager instance is already activated. Use a "
                               "different context manager instance for context nesting.")
        self.saved_state = check_sparse_tensor_invariants._enabled
        check_sparse_tensor_invariants._enabled = self.state
        return self

    def __exit__(self, *exc):
        check_sparse_tensor_invariants._enabled = self.saved_state
        self.saved_state = None

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with check_sparse_tensor_invariants(self.state):
                return fn(*args, **kwargs)
        return wrapped


# -- construction -------------------------------------------------------------------------------

def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None,
                      requires_grad: bool = False, check_invariants=None,
                      is_coalesced: bool | None = None) -> SparseTensor:
    """A sparse COO tensor with ``values`` at the coordinates ``indices``.

    Args:
        indices: (sparse_dim, nnz) integer coordinates (a tensor or nested lists).
        values: (nnz, *dense_dims) values (a tensor, whose history the result keeps, or
            lists / numbers).
        size: the full shape; inferred (each sparse dim 1 + its largest index) if None.
        dtype, device: of the values (default: the values').
        requires_grad: make the result a leaf that requires grad.
        check_invariants: False skips the checks of the coordinates against ``size``
            (made when ``size`` is given); None: ``check_sparse_tensor_invariants``'s
            setting (on by default, unlike PyTorch's).
        is_coalesced: declare the indices sorted and unique (not checked, as PyTorch).

    Example:
        >>> s = tg.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [3., 4., 5.], (2, 3))
        >>> s._nnz(), s.sparse_dim(), s.dense_dim()
        (3, 2, 0)
    """
    from .ops.creation import tensor
    if not isinstance(values, Tensor):
        values = tensor(values, dtype=dtype, device=device)
    elif dtype is not None or device is not None:
        values = values.to(device=device if device is not None else values.device,
                           dtype=dtype if dtype is not None else values.dtype)
    if not isinstance(indices, Tensor):
        indices = tensor(indices, dtype=dtypes.int64, device=values.device)
    if indices.dtype.is_floating_point or indices.dtype.is_complex or \
            indices.dtype is dtypes.bool:
        raise RuntimeError(f"sparse_coo_tensor: indices must be an int64 tensor, got "
                           f"{indices.dtype}")
    indices = indices.to(device=values.device, dtype=dtypes.int64)
    if indices.ndim != 2:
        raise RuntimeError(f"sparse_coo_tensor: indices must be sparse_dim x nnz, but got: "
                           f"{list(indices.shape)}")
    if values.ndim == 0:
        raise RuntimeError("sparse_coo_tensor: values must have at least one dimension "
                           "(nnz, *dense_dims)")
    sd, nnz = indices.shape
    if values.shape[0] != nnz:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from "
                           f"indices: {nnz}, nnz from values: {values.shape[0]}")
    if check_invariants is None:
        check_invariants = check_sparse_tensor_invariants.is_enabled()
    if check_invariants is False and size is not None:  # (trusted: the optimizers' rows)
        return _leaf(_FromParts.apply(indices, values, tuple(size), bool(is_coalesced)),
                     requires_grad)
    host = np.asarray(indices.cpu().numpy(), np.int64)
    if host.size and host.min() < 0:  # (none with no sparse dims)
        d = int(np.nonzero((host < 0).any(1))[0][0])
        raise RuntimeError(f"found negative index {int(host[d].min())} for dim {d} "
                           f"(sparse_coo_tensor: indices must be nonnegative)")
    if size is None:
        size = tuple(int(m) + 1 if nnz else 0 for m in (host.max(1) if nnz else [0] * sd)) \
            + tuple(values.shape[1:])
    else:
        size = tuple(int(s) for s in (size if not isinstance(size, int) else (size,)))
        if len(size) != sd + values.ndim - 1:
            raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: "
                               f"len(size) = {len(size)}, sparse_dim = {sd}, dense_dim = "
                               f"{values.ndim - 1}")
        if tuple(values.shape[1:]) != size[sd:]:
            raise RuntimeError(f"values has incorrect size, expected {[nnz, *size[sd:]]}, got "
                               f"{list(values.shape)}")
        if nnz:
            for d in range(sd):
                if host[d].max() >= size[d]:
                    raise RuntimeError(f"size is inconsistent with indices: for dim {d}, "
                                       f"size is {size[d]} but found index "
                                       f"{int(host[d].max())}")
    coalesced = bool(is_coalesced) if is_coalesced is not None else nnz <= 1
    return _leaf(_FromParts.apply(indices, values, size, coalesced), requires_grad)


def _leaf(out: SparseTensor, requires_grad: bool) -> SparseTensor:
    """``sparse_coo_tensor``'s result, made a leaf that requires grad if asked."""
    if requires_grad:
        if not (out.dtype.is_floating_point or out.dtype.is_complex):
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        if out._fn is not None:
            raise RuntimeError("sparse_coo_tensor: requires_grad=True needs values that do "
                               "not require grad (the result is a leaf)")
        out.requires_grad_()
    return out


def to_sparse(self: Tensor, sparse_dim: int | None = None, *, layout=None, blocksize=None,
              dense_dim=None) -> SparseTensor:
    """This dense tensor as a sparse COO tensor: the nonzero entries of its first
    ``sparse_dim`` dims (all by default) become the specified elements (differentiable)."""
    if is_sparse(self):
        return self.to_sparse(sparse_dim, layout=layout, blocksize=blocksize,
                              dense_dim=dense_dim)
    if layout not in (None, dtypes.sparse_coo):
        if sparse_dim is not None:
            raise TypeError("to_sparse() with a layout takes no sparse_dim")
        from .sparse_compressed_ops import check_to_sparse, dense_to_compressed
        check_to_sparse(self, layout, blocksize)
        return dense_to_compressed(self, layout, blocksize, dense_dim, "to_sparse")
    if blocksize is not None:
        raise RuntimeError("dense_to_sparse: conversion from Strided to Sparse with blocksize "
                           "argument given is not supported")
    if dense_dim is not None:  # (the trailing dense_dim dims dense: PyTorch's)
        if sparse_dim is not None and sparse_dim + dense_dim != self.ndim:
            raise RuntimeError(f"to_sparse: sparse_dim ({sparse_dim}) + dense_dim "
                               f"({dense_dim}) must be the number of dims ({self.ndim})")
        if not 0 <= dense_dim <= self.ndim:
            raise RuntimeError(f"dense_to_sparse: dense_dim argument must be in [0,"
                               f"{self.ndim}] range, but {dense_dim} is given")
        sparse_dim = self.ndim - dense_dim
    sd = self.ndim if sparse_dim is None else int(sparse_dim)
    if not 0 <= sd <= self.ndim:
        raise RuntimeError(f"dense_to_sparse: sparse_dim argument must be in [0,{self.ndim}] "
                           f"range, but {sd} is given")
    if sd == 0 and self.ndim:
        raise RuntimeError("dense_to_sparse: sparse_dim argument must be in >0 when "
                           "self.dim()>0")
    a = np.asarray(self.detach().cpu().numpy())
    mask = a.reshape(a.shape[:sd] + (-1,)).any(-1) if sd < a.ndim else a != 0
    coords = np.stack(np.nonzero(mask)) if sd else np.zeros((0, int(mask)), np.int64)
    idx = _index_tensor(coords.reshape(sd, -1) if sd else coords, self)  # ((0, -1): ambiguous)
    vals = self[tuple(idx.unbind(0))] if sd else self.unsqueeze(0)[:coords.shape[1]]
    return _FromParts.apply(idx, vals, tuple(self.shape), True)


def sparse_mask(self: Tensor, mask: SparseBase) -> SparseBase:
    """This tensor's elements at ``mask``'s specified elements, as a sparse tensor with
    ``mask``'s indices and layout (PyTorch's ``Tensor.sparse_mask``: COO, CSR, CSC, BSR, BSC
    masks; ``mask``'s values are ignored). Differentiable in ``self``.

    Example:
        >>> m = tg.sparse_coo_tensor([[0, 1], [1, 0]], [9., 9.], (2, 2))
        >>> tg.tensor([[1., 2.], [3., 4.]]).sparse_mask(m).to_dense().tolist()
        [[0.0, 2.0], [3.0, 0.0]]
    """
    if not isinstance(mask, SparseBase):
        raise NotImplementedError(f"sparse_mask: expected mask to be a sparse tensor, got a "
                                  f"{'dense' if isinstance(mask, Tensor) else type(mask).__name__}"
                                  f" one")
    if tuple(self.shape) != tuple(mask.shape):
        raise RuntimeError(f"sparse_mask(): operands have incompatible sizes; self has size "
                           f"{list(self.shape)} but mask has size {list(mask.shape)}")
    if not is_sparse(mask):  # (compressed: the values read at the mask's pattern)
        from .sparse_compressed import _FromValues, _read
        return _FromValues.apply(_read(self, mask._pat), mask._pat)
    # (a mask whose coordinates are unique keeps its order and flag, as PyTorch's; repeated
    # ones are read once each: PyTorch reads each repeat, counting the element twice)
    m = mask if mask._coalesced or mask._unique() else mask.coalesce()
    return _FromParts.apply(m._idx, _read_at(self, m._idx), m._size, m._coalesced)


def _dense_to_dense(self: Tensor, dtype=None, *, masked_grad=None) -> Tensor:
    """``to_dense()`` of a dense tensor: itself (cast to ``dtype`` if given)."""
    return self if dtype is None else self.to(dtype)


# -- gradient accumulation into .grad (engine.accumulate_grad's sparse layouts) -----------------

def accumulate(var: Tensor, g: Tensor, create_graph: bool) -> None:
    """Adds ``g`` into ``var.grad`` when either is sparse, as PyTorch's AccumulateGrad:

    - no ``.grad``: a sparse ``g`` is stored as it is (uncoalesced stays uncoalesced);
    - sparse ``.grad``, sparse ``g``: stays sparse (indices and values concatenated; in place
      unless ``create_graph``);
    - dense ``.grad``, sparse ``g``: ``g`` is added into it (in place unless ``create_graph``);
    - sparse ``.grad``, dense ``g``: ``.grad`` becomes the dense ``g + .grad``;
    - ``var`` sparse, both dense (``torch.mm``'s gradient): ``.grad`` becomes ``g + .grad``.

    The caller holds the engine's accumulation lock.
    """
    from .state import state
    old = var._grad
    if _compressed(g) or _compressed(old):
        # (compressed layouts: sparse_compressed.py's ``add``; no in-place merge of patterns)
        if old is None:
            var._grad = g if create_graph else g.detach()
            return
        prev = state.grad_enabled
        state.grad_enabled = create_graph
        try:
            if not create_graph and type(old) is Tensor:
                old.add_(g.to_dense())
            else:
                var._grad = old + g
        finally:
            state.grad_enabled = prev
        return
    if old is None:
        # (a dense gradient of a sparse leaf is copied: the engine's stealing rules are for
        # dense leaves)
        var._grad = g if create_graph else g.detach() if is_sparse(g) else g.detach().clone()
        return
    if create_graph:
        # (dense + sparse: PyTorch refuses sparse + dense)
        var._grad = g + old if is_sparse(old) and not is_sparse(g) else old + g
        return
    prev = state.grad_enabled
    state.grad_enabled = False
    try:
        if is_sparse(old) and is_sparse(g):
            old.add_(g)
        elif is_sparse(g):
            add_into_(old, g)
        else:
            var._grad = g + old.to_dense()
    finally:
        state.grad_enabled = prev


def _compressed(t) -> bool:
    """Whether ``t`` is a sparse tensor of a compressed layout (CSR, CSC, BSR, BSC)."""
    return isinstance(t, SparseBase) and type(t) is not SparseTensor


def add_into_(dense: Tensor, s: SparseTensor, alpha=1) -> Tensor:
    """``dense += alpha * s`` in place for a sparse ``s`` (duplicates add up); unrecorded
    use only (the optimizers' sparse updates, gradient accumulation)."""
    if s._nnz():
        vals = s._vals if alpha == 1 else s._vals * alpha
        dense.index_put_(tuple(s._idx.unbind(0)), vals.to(dense.dtype), accumulate=True)
    return dense


# -- the sparse-only methods of a dense tensor ---------------------------------------------------

_LAYOUT_NAMES = {"coo": "Sparse", "csr": "SparseCsr", "csc": "SparseCsc", "bsr": "SparseBsr",
                 "bsc": "SparseBsc"}

# (method, the layouts it expects, in PyTorch's words)
_LAYOUT_METHODS = (("indices", "sparse coordinate"), ("coalesce", "sparse coordinate"),
                   ("is_coalesced", "sparse coordinate"), ("values", "sparse"),
                   ("crow_indices", "sparse row compressed"),
                   ("col_indices", "sparse row compressed"),
                   ("ccol_indices", "sparse column compressed"),
                   ("row_indices", "sparse column compressed"))
# (methods a dense tensor has no kernel for: PyTorch's NotImplementedError)
_KERNEL_METHODS = ("_indices", "_values", "_nnz", "sparse_resize_", "sparse_resize_and_clear_")


def layout_name(t: Tensor) -> str:
    """``t``'s layout as PyTorch's messages name it (``Strided``, ``Sparse``, ``SparseCsr``)."""
    if not isinstance(t, SparseBase):
        return "Strided"
    return _LAYOUT_NAMES[str(t.layout).rsplit("_", 1)[-1]]


def _wrong_layout(name: str, expected: str):
    def method(self, *args, **kwargs):
        raise RuntimeError(f"{name} expected {expected} tensor layout but got "
                           f"{layout_name(self)}")
    method.__name__ = method.__qualname__ = name
    method.__doc__ = (f"Sparse tensors only ({expected} layout): a dense tensor raises "
                      f"PyTorch's RuntimeError.")
    return method


def _no_kernel(name: str):
    def method(self, *args, **kwargs):
        kind = layout_name(self)
        backend = ("" if kind == "Strided" else kind) + (
            "CUDA" if self.device.type == "cuda" else "CPU")
        raise NotImplementedError(f"Could not run 'aten::{name}' with arguments from the "
                                  f"'{backend}' backend: {name}() is an operation of sparse COO "
                                  f"tensors, and this tensor's layout is {self.layout}")
    method.__name__ = method.__qualname__ = name
    method.__doc__ = "Sparse COO tensors only: a dense tensor raises NotImplementedError."
    return method


def _dense_sparse_dim(self: Tensor) -> int:
    """A dense tensor's number of sparse dims: 0 (PyTorch's)."""
    return 0


def _dense_dense_dim(self: Tensor) -> int:
    """A dense tensor's number of dense dims: all of them (PyTorch's)."""
    return self.ndim


def _bind() -> None:
    """Binds the dense Tensor's sparse entry points (PyTorch's names): the conversions, and the
    sparse-only methods, which raise PyTorch's errors on a dense tensor (an AttributeError
    would tell the user the method does not exist)."""
    Tensor.to_sparse = to_sparse
    Tensor.to_sparse_coo = to_sparse
    Tensor.sparse_mask = sparse_mask
    Tensor.to_dense = _dense_to_dense
    for name, expected in _LAYOUT_METHODS:
        if name not in vars(Tensor):
            setattr(Tensor, name, _wrong_layout(name, expected))
    for name in _KERNEL_METHODS:
        if name not in vars(Tensor):
            setattr(Tensor, name, _no_kernel(name))
    Tensor.sparse_dim = _dense_sparse_dim
    Tensor.dense_dim = _dense_dense_dim


_bind()

from . import sparse_ops  # noqa: E402,F401 - binds the elementwise and shape methods
