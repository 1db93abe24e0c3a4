"""``torch.sparse``'s products and reductions of sparse COO tensors (autograd/sparse.py holds
the tensor and its primitives): ``mm``, ``addmm``, ``sum``, ``softmax``, ``log_softmax``, and
``torch.mm(sparse, dense)``. Each is written over the values with dense ops (gather, multiply,
``index_add``, ``index_reduce``), so its gradients come by composition; only
``torch.mm``'s node has its own rule (its gradient for the sparse operand is dense, as
PyTorch's). Also here: ``gather(..., sparse_grad=True)``, a dense op whose node gives its input
a sparse gradient; sparse @ sparse; and the sparse tensors' elementwise methods (``abs``,
``sin``, ``pow``, ... of the values: ``UNARY``), ``*`` and ``/`` with dense and sparse
operands, ``d @ s``, and the shape methods ``transpose``, ``index_select``, ``narrow_copy``,
``unsqueeze``, bound to the tensor classes by ``_bind`` (imported by sparse.py). And the
public functions of sparse inputs that are not methods: ``cat``, ``stack``, ``hstack``,
``vstack`` of COO tensors and the ``*_like`` factories (``SPARSE_FUNCTIONS``, found by
``sparse_function``, through which the dense functions route a sparse argument).
"""

from __future__ import annotations

import builtins

import numpy as np

from .function import Function
from .sparse import (SparseBase, SparseTensor, _FromParts, _host_indices, _index_tensor, _linear,
                     deliver_sparse, is_sparse, layout_name)
from .tensor import Tensor

_builtin_sum = builtins.sum  # (``sum`` here is torch.sparse.sum)

__all__ = ["addmm", "cat", "div", "floor_divide", "gather_sparse_grad", "hstack", "index_select",
           "log_softmax", "map_values", "matmul", "mm", "mm_dense_grad", "mul", "narrow_copy",
           "permute", "pow", "rmatmul", "dense_sparse", "scalar_name", "select", "softmax", "sparse_function",
           "sparse_sparse_mm", "stack", "sum", "transpose", "unsqueeze", "vstack"]


def _check_mm(op: str, s, d) -> None:
    if not is_sparse(s) or s.ndim != 2 or s.sparse_dim() != 2:
        raise RuntimeError(f"{op}: expected mat1 to be a 2-D sparse COO matrix with 2 sparse "
                           f"dims, got {'a sparse' if is_sparse(s) else 'a dense'} tensor of "
                           f"shape {list(s.shape)}")
    if isinstance(d, Tensor) and not isinstance(d, SparseBase) and d.ndim < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-max(d.ndim, 1)}, {max(d.ndim, 1) - 1}], but got 1)")  # (PyTorch's)
    if not isinstance(d, Tensor) or isinstance(d, SparseBase) or d.ndim != 2:
        raise RuntimeError(f"{op}: expected mat2 to be a 2-D dense tensor")
    if s.shape[1] != d.shape[0]:
        raise RuntimeError(f"{op}: mat1 and mat2 shapes cannot be multiplied "
                           f"({s.shape[0]}x{s.shape[1]} and {d.shape[0]}x{d.shape[1]})")
    if s.dtype is not d.dtype:
        raise RuntimeError(f"expected scalar type {scalar_name(s.dtype)} but found "
                           f"{scalar_name(d.dtype)} ({op}: mat1 and mat2 must have the same "
                           f"dtype)")


def scalar_name(dt) -> str:
    """``dt`` as PyTorch's messages name it (``Float``, ``Long``, ...)."""
    from ..runtime import dtype as dtypes
    return {dtypes.float32: "Float", dtypes.float64: "Double", dtypes.float16: "Half",
            dtypes.bfloat16: "BFloat16", dtypes.int64: "Long", dtypes.int32: "Int",
            dtypes.int16: "Short", dtypes.int8: "Char", dtypes.uint8: "Byte",
            dtypes.bool: "Bool", dtypes.complex64: "ComplexFloat",
            dtypes.complex128: "ComplexDouble"}.get(dt, str(dt))


def _dim(dim: int, ndim: int) -> int:
    """``dim`` wrapped, or PyTorch's IndexError (torch.sparse's functions name no op)."""
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim + n if dim < 0 else dim


def _spmm(vals: Tensor, rows: Tensor, cols: Tensor, n: int, d: Tensor) -> Tensor:
    """sum_k vals[k] * d[cols[k]] into row rows[k] of an (n, p) result: the product written
    with gather, multiply and index_add, so both operands are differentiated for free."""
    from .ops.creation import zeros
    out = zeros((n, d.shape[1]), dtype=d.dtype, device=d.device)
    return out.index_add(0, rows, vals.unsqueeze(1) * d.index_select(0, cols))


def mm(mat1: SparseTensor, mat2: Tensor, reduce: str | None = None) -> Tensor:
    """``mat1 @ mat2`` for a sparse (n, m) ``mat1`` (COO, or a compressed layout:
    sparse_compressed_ops.py) and a dense (m, p) ``mat2``; the gradient of ``mat1`` is sparse
    with ``mat1``'s pattern (``torch.sparse.mm``'s rule). Two sparse operands of one layout
    give a sparse product (COO or CSR), two dense ones ``torch.mm``'s.

    Args:
        mat1: the sparse matrix.
        mat2: the dense (or sparse) matrix.
        reduce: for a CSR ``mat1``, how each row's products are combined: ``"sum"`` (the
            product), ``"mean"`` (over the row's specified elements), ``"amax"``, ``"amin"``
            (rows without any: 0), as PyTorch's.

    Example:
        >>> s = tg.sparse_coo_tensor([[0, 1], [1, 0]], [2., 3.], (2, 2))
        >>> tg.sparse.mm(s, tg.eye(2)).tolist()
        [[0.0, 2.0], [3.0, 0.0]]
    """
    if reduce is not None:
        from .sparse_compressed_ops import mm_reduce
        return mm_reduce(mat1, mat2, reduce)
    if not isinstance(mat1, SparseBase) and isinstance(mat1, Tensor) and isinstance(
            mat2, Tensor) and not isinstance(mat2, SparseBase):
        return mat1.mm(mat2)  # (PyTorch's sparse.mm of dense operands is torch.mm)
    if type(mat1) is not SparseTensor and isinstance(mat1, SparseBase):  # CSR, CSC, BSR, BSC
        if isinstance(mat2, SparseBase):
            return _compressed_sparse_mm(mat1, mat2)
        from .sparse_compressed_ops import mm as compressed_mm
        return compressed_mm(mat1, mat2)
    if is_sparse(mat2):
        return sparse_sparse_mm("sparse.mm", mat1, mat2)
    _check_mm("sparse.mm", mat1, mat2)
    idx, vals, _ = mat1._parts()
    rows, cols = idx.unbind(0)
    return _spmm(vals, rows, cols, mat1.shape[0], mat2)


def _compressed_sparse_mm(a: SparseBase, b: SparseBase) -> SparseBase:
    """``sparse.mm`` of two CSR matrices (PyTorch's only compressed sparse @ sparse): CSR,
    computed as the COO product, differentiable in both through the conversions."""
    from ..runtime import dtype as dtypes
    if a.layout is not dtypes.sparse_csr or b.layout is not dtypes.sparse_csr:
        raise RuntimeError(f"sparse.mm: of two sparse compressed matrices only CSR @ CSR is "
                           f"supported, got {a.layout} and {b.layout}")
    return sparse_sparse_mm("sparse.mm", a.to_sparse_coo(), b.to_sparse_coo()).to_sparse_csr()


class _MmDenseGrad(Function):
    """``torch.mm(sparse, dense)``: as PyTorch's, its gradient for the sparse operand is the
    dense ``dC @ mat2^T`` (not masked to the pattern, unlike ``sparse.mm``)."""

    @staticmethod
    def forward(ctx, s, d):
        ctx.s, ctx.d = s.detach(), d.detach()
        rows, cols = s._idx.unbind(0)
        return _spmm(s._vals, rows, cols, s.shape[0], d)

    @staticmethod
    def backward(ctx, g):
        gs = g.mm(ctx.d.t()) if ctx.needs_input_grad[0] else None
        gd = mm(ctx.s.t(), g) if ctx.needs_input_grad[1] else None
        return gs, gd


_MmDenseGrad._backward_cls.__name__ = _MmDenseGrad._backward_cls.__qualname__ = "MmBackward0"


def _check_product(op: str, a, b) -> None:
    """The shape and dtype checks of the matrix product ``a @ b`` (2-D operands)."""
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(f"{op}: mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x"
                           f"{a.shape[1]} and {b.shape[0]}x{b.shape[1]})")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"{op}: expected mat1 and mat2 to have the same dtype, but got: "
                           f"{a.dtype} != {b.dtype}")


def sparse_sparse_mm(op: str, a: SparseTensor, b: SparseTensor) -> SparseTensor:
    """``a @ b`` of two 2-D COO matrices: sparse and coalesced, holding the elements some
    product ``a[i, k] * b[k, j]`` reaches; differentiable in both values (each gradient
    masked to its operand's pattern, as ``torch.sparse.mm``'s)."""
    for name, t in (("mat1", a), ("mat2", b)):
        if t.ndim != 2 or t.sparse_dim() != 2:
            raise RuntimeError(f"{op}: expected {name} to be a 2-D sparse COO matrix with 2 "
                               f"sparse dims, got shape {list(t.shape)} with sparse_dim "
                               f"{t.sparse_dim()}")
    _check_product(op, a, b)
    a, b = a.coalesce(), b.coalesce()
    (ia, va, _), (_, vb, _) = a._parts(), b._parts()
    ha, hb = _host_indices(a), _host_indices(b)
    # every pair (entry k of a, entry l of b) with a's column == b's row (b's rows are sorted)
    lo = np.searchsorted(hb[0], ha[1], "left")
    hi = np.searchsorted(hb[0], ha[1], "right")
    pa = np.repeat(np.arange(ha.shape[1]), hi - lo)
    pb = np.concatenate([np.arange(x, y) for x, y in zip(lo, hi)] or [np.zeros(0, np.int64)])
    coords = np.stack([ha[0][pa], hb[1][pb]]).reshape(2, -1)
    ta, tb = _index_tensor(pa, va), _index_tensor(pb.astype(np.int64), vb)
    out = _FromParts.apply(_index_tensor(coords, va),
                           va.index_select(0, ta) * vb.index_select(0, tb),
                           (a.shape[0], b.shape[1]), False)
    return out.coalesce()


def mm_dense_grad(s: SparseTensor, d: Tensor) -> Tensor:
    if is_sparse(d):  # (sparse @ sparse is sparse)
        return sparse_sparse_mm("mm", s, d)
    _check_mm("mm", s, d)
    return _MmDenseGrad.apply(s, d)


class _GatherSparseGrad(Function):
    """``gather(x, dim, index, sparse_grad=True)``: the dense gather's values, and for ``x`` a
    sparse gradient as PyTorch's ``_gather_sparse_backward`` builds it: one entry per element
    of ``index``, in its order, at that element's coordinates with ``dim``'s replaced by the
    index there (uncoalesced: repeated indices add up), holding the incoming gradient's
    element."""

    @staticmethod
    def forward(ctx, x, dim, index):
        from .dispatch import apply
        from .ops.indexing import GatherBackward0
        ctx.dim, ctx.index, ctx.size = dim, index, tuple(x.shape)
        return apply(GatherBackward0, (x,), dim, index._data)

    @staticmethod
    def backward(ctx, g):
        coords = _gather_coords(ctx.index, ctx.dim, len(ctx.size))
        return deliver_sparse(ctx, 0, coords, g.reshape(-1), ctx.size), None, None

    @staticmethod
    def jvp(ctx, tx, _dim, _index):
        from .dispatch import apply
        from .ops.indexing import GatherBackward0
        return apply(GatherBackward0, (tx,), ctx.dim, ctx.index._data)


_GatherSparseGrad._backward_cls.__name__ = _GatherSparseGrad._backward_cls.__qualname__ = \
    "GatherBackward0"


def _gather_coords(index: Tensor, dim: int, ndim: int) -> Tensor:
    """The (ndim, index.numel()) coordinates of the elements ``gather`` reads: for each
    element of ``index`` (row-major), its own coordinates with dimension ``dim``'s replaced by
    its value. (A 0-d or 1-d ``x`` may meet an index of the other rank: the index values alone
    are then the coordinates, and a 0-d ``x`` has none.)"""
    from .ops.creation import arange
    from .ops.shape import stack
    flat = index.reshape(-1)
    if ndim <= 1:
        return flat.reshape(1, -1)[:ndim]  # ((0, n) for a 0-d x)
    shape = tuple(index.shape)
    rows = []
    for j in range(ndim):
        if j == dim:
            rows.append(flat)
            continue
        along = arange(shape[j], device=index.device).reshape(
            *(-1 if i == j else 1 for i in range(ndim)))
        rows.append(along.expand(*shape).reshape(-1))
    return stack(rows)


def gather_sparse_grad(x: Tensor, dim: int, index: Tensor) -> Tensor:
    """``gather(x, dim, index, sparse_grad=True)`` after gather's checks (``dim`` wrapped,
    ``index`` the checked int64 index): the same values, ``x``'s gradient sparse."""
    return _GatherSparseGrad.apply(x, dim, index)


def addmm(mat: Tensor, mat1: SparseTensor, mat2: Tensor, *, beta=1.0, alpha=1.0) -> Tensor:
    """``beta * mat + alpha * (mat1 @ mat2)`` with a sparse ``mat1`` (COO or compressed;
    ``torch.sparse.addmm``)."""
    if isinstance(mat, SparseBase):
        raise RuntimeError(f"addmm_sparse_dense: expected strided result tensor, got tensor "
                           f"with layout {layout_name(mat)}")
    prod = mm(mat1, mat2)
    return (mat * beta if beta != 1 else mat) + (prod * alpha if alpha != 1 else prod)


def sum(input: SparseTensor, dim=None, dtype=None) -> Tensor:  # noqa: A001 - PyTorch's name
    """The sum of all elements (a dense 0-d tensor) or over ``dim`` (``torch.sparse.sum``): a
    sparse tensor while sparse dims remain, dense when all sparse dims are summed."""
    if not is_sparse(input):  # (PyTorch's messages: its sum coalesces, or reads _indices())
        if dim is None:
            raise RuntimeError(f"coalesce expected sparse coordinate tensor layout but got "
                               f"{layout_name(input)} (sparse.sum takes a sparse COO tensor)")
        raise NotImplementedError(f"Could not run 'aten::_indices' with arguments from the "
                                  f"'{layout_name(input).replace('Strided', '')}CPU' backend "
                                  f"(sparse.sum takes a sparse COO tensor)")
    idx, vals, _ = input._parts()
    if dtype is not None:
        vals = vals.to(dtype)
    if dim is None:
        return vals.sum()
    wrapped = [_dim(d, input.ndim) for d in ((dim,) if isinstance(dim, int) else dim)]
    for i, d in enumerate(wrapped):
        if d in wrapped[:i]:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    dims = sorted(wrapped)
    sd = input.sparse_dim()
    dense_dims = [d - sd + 1 for d in dims if d >= sd]
    if dense_dims:
        vals = vals.sum(dense_dims)
    keep = [d for d in range(sd) if d not in dims]
    dense_size = [input.shape[d] for d in range(sd, input.ndim) if d not in dims]
    if not keep:
        return vals.sum(0)
    idx = idx.index_select(0, _index_tensor(np.array(keep), idx)) \
        if len(keep) < sd else idx
    out = _FromParts.apply(idx, vals, tuple(input.shape[d] for d in keep) + tuple(dense_size),
                           False)
    return out.coalesce()


def softmax(input: SparseTensor, dim: int, *, dtype=None) -> SparseTensor:
    """Softmax along ``dim`` over the specified elements only (the unspecified ones count as
    -inf, as ``torch.sparse.softmax``): a sparse tensor with ``input``'s coalesced pattern.

    Example:
        >>> s = tg.sparse_coo_tensor([[0, 0, 1], [0, 2, 1]], [1., 1., 5.], (2, 3))
        >>> tg.sparse.softmax(s, 1).to_dense().tolist()
        [[0.5, 0.0, 0.5], [0.0, 1.0, 0.0]]
    """
    return _softmax(input, dim, dtype, log=False)


def log_softmax(input: SparseTensor, dim: int, *, dtype=None) -> SparseTensor:
    """``log(softmax(input, dim))`` over the specified elements (``torch.sparse.log_softmax``)."""
    return _softmax(input, dim, dtype, log=True)


def _softmax(input, dim: int, dtype, log: bool) -> SparseTensor:
    op = "log_softmax" if log else "softmax"
    if not is_sparse(input):  # (PyTorch's has no kernel for other layouts: NotImplementedError)
        kind = layout_name(input) if isinstance(input, Tensor) else type(input).__name__
        backend = ("" if kind == "Strided" else kind) + "CPU"
        raise NotImplementedError(f"Could not run 'aten::_sparse_{op}' with arguments from the "
                                  f"'{backend}' backend (sparse.{op} takes a sparse COO tensor)")
    dim = _dim(dim, input.ndim)
    if not (input.dtype if dtype is None else dtype).is_floating_point:
        raise NotImplementedError(f"\"{op}\" not implemented for "
                                  f"'{scalar_name(input.dtype if dtype is None else dtype)}'")
    c = input.coalesce()
    idx, vals, _ = c._parts()
    if dtype is not None:
        vals = vals.to(dtype)
    sd = c.sparse_dim()
    if dim >= sd:  # a dense dim: each value row on its own
        out = vals.log_softmax(dim - sd + 1) if log else vals.softmax(dim - sd + 1)
        return _FromParts.apply(idx, out, c._size, True)
    # a sparse dim: the entries that differ only in ``dim`` form one group
    others = [d for d in range(sd) if d != dim]
    host = _host_indices(c)
    key = _linear(host[others], [c._size[d] for d in others])
    _, group = np.unique(key, return_inverse=True)
    group = group.reshape(-1)
    g = _index_tensor(group, vals)
    n = int(group.max()) + 1 if len(group) else 0
    from .ops.creation import full, zeros
    shape = (n, *vals.shape[1:])
    unrecorded = vals.detach()
    top = full(shape, -np.inf, dtype=vals.dtype, device=vals.device).index_reduce(
        0, g, unrecorded, "amax") if n else unrecorded[:0]
    shifted = vals - top.index_select(0, g)  # (the maximum, a constant, keeps exp in range)
    e = shifted.exp()
    total = zeros(shape, dtype=vals.dtype, device=vals.device).index_add(0, g, e)
    out = shifted - total.log().index_select(0, g) if log else e / total.index_select(0, g)
    return _FromParts.apply(idx, out, c._size, True)


# -- zero-preserving elementwise ops and the shape ops, computed on the values -----------------
# A function with f(0) == 0 maps a sparse tensor to one of the same pattern: f of the values.
# The ones PyTorch's sparse COO kernels have (its list; ``exp``, ``log`` and the like, with
# f(0) != 0, it refuses). A COO tensor is coalesced first, as PyTorch's: f of a sum of
# duplicates is not the sum of f of them. CSR and CSC have them too, but for ``nan_to_num``
# and ``square``.
UNARY = ("abs", "sqrt", "sin", "sinh", "tan", "tanh", "asin", "asinh", "atan", "atanh", "ceil",
         "floor", "round", "trunc", "sign", "sgn", "expm1", "log1p", "relu", "deg2rad",
         "rad2deg", "erf", "erfinv", "frac", "signbit", "isnan", "isinf", "isposinf",
         "isneginf", "nan_to_num", "square", "positive", "conj_physical")
_COO_ONLY = ("nan_to_num", "square")


def map_values(s: SparseBase, f) -> SparseBase:
    """``f`` of the specified values of ``s``, on its (coalesced) pattern (differentiable)."""
    if not is_sparse(s):
        return s._map(f)
    c = s.coalesce()
    idx, vals, _ = c._parts()
    return _FromParts.apply(idx, f(vals), c._size, True)


def _unary_method(name: str):
    def method(self, *args, **kwargs):
        if name in _COO_ONLY and not is_sparse(self):
            raise NotImplementedError(f"{name}: not supported for sparse {self._kind()} "
                                      f"tensors (as PyTorch); use .to_dense() first")
        return map_values(self, lambda v: getattr(v, name)(*args, **kwargs))
    method.__name__ = method.__qualname__ = name
    method.__doc__ = (f"``{name}`` of the specified elements (f(0) == 0, so the pattern is "
                      f"kept; a COO tensor is coalesced first).")
    return method


def _unary_inplace(name: str):
    def method(self, *args, **kwargs):
        if self.requires_grad:  # (no in-place history for sparse tensors)
            raise RuntimeError(f"{name}_: a sparse tensor that requires grad cannot be "
                               f"changed in place; use {name}()")
        from .state import state
        prev, state.grad_enabled = state.grad_enabled, False
        try:
            out = getattr(self, name)(*args, **kwargs)
        finally:
            state.grad_enabled = prev
        if is_sparse(self):
            return self._set(out._idx, out._vals.to(self.dtype), True)
        self._vals = out._vals.to(self.dtype)
        self._vc[0] += 1
        return self
    method.__name__ = method.__qualname__ = name + "_"
    method.__doc__ = f"In place: ``{name}`` of the specified elements."
    return method


def pow(input: SparseBase, exponent) -> SparseBase:  # noqa: A001 - PyTorch's name
    """``input ** exponent`` for a scalar ``exponent`` other than 0 (which would make every
    unspecified element 1), on the specified elements."""
    if isinstance(exponent, Tensor) and exponent.ndim == 0 and not isinstance(exponent,
                                                                              SparseBase):
        exponent = exponent.item()
    if isinstance(exponent, Tensor) or not isinstance(exponent, (int, float)):
        raise RuntimeError("pow: the exponent of a sparse tensor must be a scalar")
    if exponent == 0:
        raise RuntimeError("pow: cannot raise to zeroth power on sparse tensor; it would make "
                           "the result tensor dense")
    return map_values(input, lambda v: v ** exponent)


def _intersect(a_lin: np.ndarray, b_lin: np.ndarray) -> tuple:
    """Positions in sorted unique ``a_lin`` and ``b_lin`` of the keys both hold."""
    _, ia, ib = np.intersect1d(a_lin, b_lin, assume_unique=True, return_indices=True)
    return ia, ib


def mul(input: SparseTensor, other) -> SparseTensor:
    """``input * other`` for a sparse COO ``input``: by a scalar, a dense tensor (read at the
    specified elements; it must broadcast to ``input``'s shape) or a sparse tensor of the same
    shape (the elements both specify; coalesced: PyTorch's, for two coalesced operands)."""
    if not isinstance(other, Tensor) or (not is_sparse(other) and other.ndim == 0):
        return input._scaled(other)
    if isinstance(other, SparseBase) and not is_sparse(other):
        raise RuntimeError(f"mul: expected both operands sparse COO, got sparse_coo and "
                           f"{other.layout}")
    if not is_sparse(other):  # (linear in input: its order and coalesced flag kept)
        idx, vals, co = input._entry_parts()
        if tuple(other.shape) != tuple(input.shape):
            try:
                other = other.expand(*input.shape)
            except RuntimeError:
                raise RuntimeError(f"mul: the dense operand of shape {list(other.shape)} does "
                                   f"not broadcast to the sparse operand's "
                                   f"{list(input.shape)}") from None
        from ..runtime.dtype import result_type
        dt = result_type(input, other)  # (PyTorch's promotion: sparse f32 * dense f64 is f64)
        at = _ReadAt.apply(other, idx)
        return _FromParts.apply(idx, vals.to(dt) * at.to(dt), input._size, co)
    from .sparse import _check_same_size
    _check_same_size("mul", input, other)
    c = input.coalesce()
    idx, vals, _ = c._parts()
    o = other.coalesce()
    oidx, ovals, _ = o._parts()
    sd = c.sparse_dim()
    ia, ib = _intersect(_linear(_host_indices(c), c._size[:sd]),
                        _linear(_host_indices(o), o._size[:sd]))
    ia, ib = _index_tensor(ia, vals), _index_tensor(ib, vals)
    return _FromParts.apply(idx.index_select(1, ia),
                            vals.index_select(0, ia) * ovals.index_select(0, ib), c._size, True)


class _ReadAt(Function):
    """A dense tensor's elements at the coordinates ``indices`` (unique, in any order); its
    gradient is sparse over them (PyTorch's for the dense operand of ``sparse * dense``)."""

    @staticmethod
    def forward(ctx, x, indices):
        from .sparse import _read_at
        ctx.indices, ctx.size = indices, tuple(x.shape)
        return _read_at(x.detach(), indices)

    @staticmethod
    def backward(ctx, g):
        return deliver_sparse(ctx, 0, ctx.indices, g, ctx.size), None


_ReadAt._backward_cls.__name__ = _ReadAt._backward_cls.__qualname__ = "MulBackward0"


def _check_divisor(other) -> None:
    if isinstance(other, Tensor) and (isinstance(other, SparseBase) or other.ndim != 0):
        raise RuntimeError(f"Sparse division requires a scalar or zero-dim dense tensor divisor "
                           f"(got shape {list(other.shape)} for divisor)")


def div(input: SparseBase, other, *, rounding_mode: str | None = None) -> SparseBase:
    """``input / other`` for a scalar or 0-d dense ``other`` (PyTorch's only sparse case);
    ``rounding_mode`` ``"trunc"`` or ``"floor"`` as the dense ``div``'s."""
    _check_divisor(other)
    if rounding_mode is None:
        f = lambda v: v / other  # noqa: E731
    else:
        f = lambda v: v.div(other, rounding_mode=rounding_mode)  # noqa: E731
    if not is_sparse(input) or rounding_mode is not None:
        # (rounding is not linear: of the coalesced values, as PyTorch's)
        return map_values(input, f)
    idx, vals, co = input._entry_parts()  # (each entry divided: repeats kept, as PyTorch's)
    return _FromParts.apply(idx, f(vals), input._size, co)


def floor_divide(input: SparseBase, other) -> SparseBase:
    """``input // other``: ``div(input, other, rounding_mode="floor")``."""
    return div(input, other, rounding_mode="floor")


def _wrap(dim: int, ndim: int, op: str) -> int:
    from .tensor import wrap_dim
    return wrap_dim(dim, ndim, op)


def transpose(input: SparseTensor, dim0: int, dim1: int) -> SparseTensor:
    """Swaps two sparse dims (their rows of the indices; uncoalesced) or two dense dims."""
    d0, d1 = _wrap(dim0, input.ndim, "transpose"), _wrap(dim1, input.ndim, "transpose")
    sd = input.sparse_dim()
    idx, vals, co = input._entry_parts()
    size = list(input.shape)
    size[d0], size[d1] = size[d1], size[d0]
    if d0 == d1:
        return input
    if d0 < sd and d1 < sd:
        order = list(range(sd))
        order[d0], order[d1] = d1, d0
        return _FromParts.apply(idx.index_select(0, _index_tensor(np.array(order), idx)), vals,
                                tuple(size), False)
    if d0 >= sd and d1 >= sd:
        return _FromParts.apply(idx, vals.transpose(d0 - sd + 1, d1 - sd + 1), tuple(size), co)
    raise RuntimeError(f"sparse transpose: transposed dimensions must be sparse Got sparse_dim: "
                       f"{sd}, d0: {dim0}, d1: {dim1}")


def permute(input: SparseTensor, *dims) -> SparseTensor:
    """The dims reordered: the sparse dims among themselves (rows of the indices; the result
    uncoalesced) and the dense ones among themselves, as PyTorch's."""
    if len(dims) == 1 and not isinstance(dims[0], int):
        dims = tuple(dims[0])
    n, sd = input.ndim, input.sparse_dim()
    if len(dims) != n:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does "
                           f"not match the length of the desired ordering of dimensions i.e. "
                           f"input.dim() = {n} is not equal to len(dims) = {len(dims)}")
    order = [_wrap(d, n, "permute") for d in dims]
    if len(set(order)) != n:
        raise RuntimeError("permute(sparse_coo): duplicate dims are not allowed.")
    if any(d >= sd for d in order[:sd]):
        raise RuntimeError("permute(sparse_coo): transpositions between sparse and dense "
                           "dimensions are not allowed.Only transpositions within sparse and "
                           "dense dimensions are supported.")
    idx, vals, co = input._entry_parts()
    size = tuple(input.shape[d] for d in order)
    if order[sd:] != list(range(sd, n)):
        vals = vals.permute(0, *(d - sd + 1 for d in order[sd:]))
    if order[:sd] == list(range(sd)):
        return _FromParts.apply(idx, vals, size, co)
    return _FromParts.apply(idx.index_select(0, _index_tensor(np.array(order[:sd]), idx)), vals,
                            size, False)


def _select_entries(input: SparseTensor, dim: int, pick: np.ndarray, new_coord: np.ndarray,
                    size: tuple, coalesced: bool) -> SparseTensor:
    """The entries ``pick`` of ``input`` (repeated coordinates kept), their coordinate in
    sparse dim ``dim`` replaced by ``new_coord``."""
    idx, vals, _ = input._entry_parts()
    host = _host_indices(input)
    coords = host[:, pick].copy()
    coords[dim] = new_coord
    sel = _index_tensor(pick, vals)
    return _FromParts.apply(_index_tensor(coords.reshape(host.shape[0], -1), vals),
                            vals.index_select(0, sel), size, coalesced)


def index_select(input: SparseTensor, dim: int, index: Tensor) -> SparseTensor:
    """The slices ``index`` of dim ``dim`` (sparse: the entries there, renumbered, in the
    order of ``index``, uncoalesced; dense: of every value)."""
    dim = _wrap(dim, input.ndim, "index_select")
    if not isinstance(index, Tensor) or index.ndim > 1 or index.dtype.is_floating_point:
        raise IndexError("index_select() argument index must be 1-D strided (non-sparse) "
                         "long-tensor.")
    sd = input.sparse_dim()
    size = list(input.shape)
    size[dim] = index.numel()
    if dim >= sd:
        idx, vals, co = input._entry_parts()
        return _FromParts.apply(idx, vals.index_select(dim - sd + 1, index), tuple(size), co)
    want = np.asarray(index.reshape(-1).cpu().numpy(), np.int64)
    n = input.shape[dim]
    if want.size and (want.min() < -n or want.max() >= n):
        raise IndexError(f"index_select(): index out of range in self (size {n} at dim {dim})")
    want = np.where(want < 0, want + n, want)
    have = _host_indices(input)[dim]  # (repeated coordinates kept, as PyTorch's)
    # every (output position j, entry k) with index[j] == coordinate of entry k, j-major
    order = np.argsort(have, kind="stable")
    lo = np.searchsorted(have[order], want, "left")
    hi = np.searchsorted(have[order], want, "right")
    pick = np.concatenate([order[a:b] for a, b in zip(lo, hi)] or [np.zeros(0, np.int64)])
    newc = np.repeat(np.arange(len(want)), hi - lo)
    # (coalesced with fewer than two entries, as PyTorch's says)
    return _select_entries(input, dim, pick.astype(np.int64), newc, tuple(size), len(pick) < 2)


def narrow_copy(input: SparseTensor, dim: int, start: int, length: int) -> SparseTensor:
    """The entries with ``start <= coordinate < start + length`` in dim ``dim``, shifted."""
    dim = _wrap(dim, input.ndim, "narrow_copy")
    n = input.shape[dim]
    start = start + n if start < 0 else start
    if not (0 <= start <= n and 0 <= length <= n - start):
        raise IndexError(f"narrow_copy(): start ({start}) + length ({length}) exceeds dimension "
                         f"size ({n}).")
    sd = input.sparse_dim()
    size = list(input.shape)
    size[dim] = length
    if dim >= sd:
        idx, vals, co = input._entry_parts()
        return _FromParts.apply(idx, vals.narrow(dim - sd + 1, start, length), tuple(size), co)
    have = _host_indices(input)[dim]  # (repeated coordinates kept, as PyTorch's)
    pick = np.nonzero((have >= start) & (have < start + length))[0]
    return _select_entries(input, dim, pick, have[pick] - start, tuple(size),
                           input._coalesced)


def select(input: SparseTensor, dim: int, index: int) -> Tensor:
    """The slice ``index`` of dim ``dim``, without that dim: sparse while sparse dims remain
    (the entries there), else (selecting the only sparse dim) the dense sum of its values."""
    dim = _wrap(dim, input.ndim, "select")
    n = input.shape[dim]
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(input.shape)} at dimension {dim}")
    index = index + n if index < 0 else index
    sd = input.sparse_dim()
    size = tuple(input.shape[:dim]) + tuple(input.shape[dim + 1:])
    idx, vals, co = input._parts()
    if dim >= sd:
        return _FromParts.apply(idx, vals.select(dim - sd + 1, index), size, co)
    host = np.asarray(idx.cpu().numpy(), np.int64)
    pick = _index_tensor(np.nonzero(host[dim] == index)[0], vals)
    if sd == 1:
        return vals.index_select(0, pick).sum(0)
    keep = _index_tensor(np.array([d for d in range(sd) if d != dim]), idx)
    return _FromParts.apply(idx.index_select(1, pick).index_select(0, keep),
                            vals.index_select(0, pick), size,
                            pick.shape[0] < 2)  # (as PyTorch says)


def unsqueeze(input: SparseTensor, dim: int) -> SparseTensor:
    """A dim of size 1 inserted at ``dim``: sparse (a row of zeros in the indices) when
    ``dim <= sparse_dim()``, else dense."""
    dim = _wrap(dim, input.ndim + 1, "unsqueeze")
    sd = input.sparse_dim()
    idx, vals, co = input._entry_parts()
    size = tuple(input.shape[:dim]) + (1,) + tuple(input.shape[dim:])
    if dim > sd:
        return _FromParts.apply(idx, vals.unsqueeze(dim - sd + 1), size, co)
    from .ops import cat
    from .ops.creation import zeros
    z = zeros((1, idx.shape[1]), dtype=idx.dtype, device=idx.device)
    return _FromParts.apply(cat([idx[:dim], z, idx[dim:]], 0), vals, size, False)


# -- joining and the *_like factories ----------------------------------------------------------

def _sparse_list(tensors, op: str) -> list:
    """``tensors`` of a sparse ``cat``/``stack``: COO tensors only (PyTorch's messages), of one
    dtype (promoted) and device."""
    from ..runtime.dtype import result_type
    from .checks import check_devices_match
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op}(): argument 'tensors' must be a sequence of Tensors, not "
                        f"{type(tensors).__name__}")
    ts = list(tensors)
    if not ts:
        raise ValueError(f"torch.{op}(): expected a non-empty list of Tensors")
    for i, t in enumerate(ts):
        if isinstance(t, SparseBase) and not is_sparse(t):
            raise RuntimeError(f"{op}: sparse {t._kind()} tensors (layout {t.layout}) cannot "
                               f"be concatenated (nor can PyTorch's); convert them with "
                               f"to_sparse_coo() or to_dense() first")
        if not is_sparse(t):
            raise RuntimeError(f"Concatenating sparse tensors, but a dense tensor was found at "
                               f"position {i}.")
    for t in ts[1:]:
        check_devices_match(ts[0].device, t.device, op)
    dt = result_type(*ts) if len(ts) > 1 else ts[0].dtype
    return [t if t.dtype is dt else t.to(dt) for t in ts]


def cat(tensors, dim: int = 0, *, out=None) -> SparseTensor:
    """``torch.cat`` of sparse COO tensors (PyTorch's): along a sparse dim the indices are
    shifted and joined, along a dense dim each tensor's values are padded with zeros to the
    joined size; the result is uncoalesced, differentiable in every input's values.

    Example:
        >>> a = tg.sparse_coo_tensor([[0], [1]], [1.], (2, 2))
        >>> tg.cat([a, a], 1).to_dense().tolist()
        [[0.0, 1.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0]]
    """
    from .ops import cat as dense_cat
    from .ops.creation import zeros
    if out is not None:
        raise RuntimeError("cat: out= is not supported for sparse tensors")
    ts = _sparse_list(tensors, "cat")
    first = ts[0]
    d = _wrap(dim, first.ndim, "cat")
    sd, dd = first.sparse_dim(), first.dense_dim()
    for i, t in enumerate(ts[1:], 1):
        if t.ndim != first.ndim or any(a != b for j, (a, b) in enumerate(
                zip(t.shape, first.shape)) if j != d):
            raise RuntimeError(f"All tensors must have the same shape: {list(first.shape)} "
                               f"(except in the concatenating dimension), but found shape: "
                               f"{list(t.shape)} at position {i}.")
        if t.sparse_dim() != sd or t.dense_dim() != dd:
            raise RuntimeError(f"All tensors must have the same sparse_dim and dense_dim: "
                               f"{sd} and {dd}, but tensor at position {i} has "
                               f"{t.sparse_dim()}, {t.dense_dim()}.")
    total = _builtin_sum(t.shape[d] for t in ts)
    size = tuple(first.shape[:d]) + (total,) + tuple(first.shape[d + 1:])
    parts = [t._parts()[:2] for t in ts]
    if d < sd:
        idxs, start = [], 0
        for (idx, _), t in zip(parts, ts):
            shift = zeros((sd, 1), dtype=idx.dtype, device=idx.device)
            shift[d] = start
            idxs.append(idx + shift)
            start += t.shape[d]
        vals = [v for _, v in parts]
    else:
        idxs, vals, start = [idx for idx, _ in parts], [], 0
        vd = d - sd + 1  # (the values' dim: they lead with nnz)
        for (_, v), t in zip(parts, ts):
            n = t.shape[d]
            pieces = [zeros(tuple(v.shape[:vd]) + (m,) + tuple(v.shape[vd + 1:]),
                            dtype=v.dtype, device=v.device) for m in (start, total - start - n)]
            vals.append(dense_cat([pieces[0], v, pieces[1]], vd))
            start += n
    return _FromParts.apply(dense_cat(idxs, 1), dense_cat(vals, 0), size, False)


def stack(tensors, dim: int = 0, *, out=None) -> SparseTensor:
    """``torch.stack`` of sparse COO tensors of one shape: each unsqueezed at ``dim`` (a new
    sparse dim when ``dim <= sparse_dim()``, else a dense one), then joined by ``cat``."""
    if out is not None:
        raise RuntimeError("stack: out= is not supported for sparse tensors")
    ts = _sparse_list(tensors, "stack")
    for i, t in enumerate(ts[1:], 1):
        if tuple(t.shape) != tuple(ts[0].shape):
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{list(ts[0].shape)} at entry 0 and {list(t.shape)} at entry "
                               f"{i}")
    d = _wrap(dim, ts[0].ndim + 1, "stack")
    return cat([unsqueeze(t, d) for t in ts], d)


def hstack(tensors, *, out=None) -> SparseTensor:
    """``torch.hstack`` of sparse COO tensors: ``cat`` along dim 1 (dim 0 for 1-D ones)."""
    ts = _sparse_list(tensors, "hstack")
    return cat(ts, 0 if ts[0].ndim == 1 else 1, out=out)


def vstack(tensors, *, out=None) -> SparseTensor:
    """``torch.vstack`` of sparse COO tensors: ``cat`` along dim 0 of them made at least 2-D."""
    ts = _sparse_list(tensors, "vstack")
    return cat([unsqueeze(t, 0) if t.ndim == 1 else t for t in ts], 0, out=out)


def _like(name: str, fill):
    """``torch.<name>`` (a ``*_like`` factory) of a sparse tensor: its layout unless ``layout``
    says otherwise. ``fill(values, dtype, device)`` gives the values on the input's pattern
    (COO: None, refused as PyTorch's: it has no fill kernel for COO); ``zeros_like`` and
    ``empty_like`` give no specified elements (nnz 0), as PyTorch's."""

    def like(input: SparseBase, *args, dtype=None, layout=None, device=None,
             requires_grad: bool = False, memory_format=None, pin_memory: bool = False,
             **options):  # (options: rand_like's generator, checked by the dense function)
        from .ops import creation
        from ..runtime import dtype as dtypes
        dtype = input.dtype if dtype is None else dtype
        device = input.device if device is None else device
        if layout is dtypes.strided:  # (a dense result of the same shape)
            return getattr(creation, name)(
                input.to_dense().detach(), *args, dtype=dtype, device=device,
                requires_grad=requires_grad, **options)
        if layout not in (None, input.layout):
            raise RuntimeError(f"{name}: a {input.layout} input with layout={layout} is not "
                               f"supported; convert the result with to_sparse(layout=...)")
        out = _like_sparse(name, fill, input, args, dtype, device, options)
        return out.requires_grad_() if requires_grad else out

    like.__name__ = like.__qualname__ = name
    like.__doc__ = (f"``torch.{name}`` of a sparse tensor: a sparse tensor of the same size, "
                    f"layout, dtype and device (as PyTorch's).")
    return like


def _like_sparse(name: str, fill, input: SparseBase, args, dtype, device,
                 options: dict) -> SparseBase:
    from .ops.creation import zeros
    from .sparse import _new as new_coo
    from .sparse_compressed import _Pattern, _new as new_compressed
    vals = input._vals.detach()
    if is_sparse(input):
        if name in ("zeros_like", "empty_like"):
            idx = input._idx[:, :0].to(device)
            return new_coo(idx, zeros((0, *vals.shape[1:]), dtype=dtype, device=device),
                           input.shape, True)
        raise NotImplementedError(f"{name}: not supported for sparse COO tensors (PyTorch has "
                                  f"no fill kernel for them either); use zeros_like, or "
                                  f"{name} of the values: torch.sparse_coo_tensor("
                                  f"s.indices(), torch.{name}(s.values()), s.shape)")
    pat = input._pat.to(device)
    if name == "zeros_like":  # (no specified elements: every compressed index 0)
        pat = _Pattern(zeros(tuple(pat.cidx.shape), dtype=pat.cidx.dtype, device=device),
                       pat.pidx[..., :0], pat.size, pat.layout, pat.blocksize)
        return new_compressed(pat, zeros(pat.values_shape, dtype=dtype, device=device))
    return new_compressed(pat, fill(vals.to(device), *args, dtype=dtype, **options))


def _like_functions() -> dict:
    from .ops import creation
    return {name: _like(name, getattr(creation, name))
            for name in ("zeros_like", "empty_like", "ones_like", "full_like", "rand_like",
                         "randn_like")}


def sparse_function(name: str, args: tuple):
    """The sparse version of ``tritongrad.<name>`` for ``args`` (a sparse first argument, or a
    list whose first element is sparse: ``cat``, ``stack``), or None: the hook by which the
    public functions route sparse inputs (registry's ``_sparse_method``)."""
    first = args[0] if args else None
    if isinstance(first, (list, tuple)) and first:
        first = next((t for t in first if isinstance(t, SparseBase)), None)
    if not isinstance(first, SparseBase):
        return dense_sparse(name, args)
    return SPARSE_FUNCTIONS.get(name)


def matmul(input: SparseTensor, other: Tensor) -> Tensor:
    """``input @ other`` for a 2-D sparse COO ``input`` and a dense matrix or vector."""
    if isinstance(other, Tensor) and not isinstance(other, SparseBase) and other.ndim == 1:
        return mm_dense_grad(input, other.unsqueeze(1)).squeeze(1)
    return mm_dense_grad(input, other)


def rmatmul(input: SparseTensor, other: Tensor) -> Tensor:
    """``other @ input`` for a dense matrix (or vector) ``other``: ``(input^T @ other^T)^T``;
    the gradient of ``input`` dense, as ``torch.mm(dense, sparse)``'s."""
    if not isinstance(other, Tensor) or isinstance(other, SparseBase):
        return NotImplemented
    if other.ndim not in (1, 2):
        raise RuntimeError(f"matmul: expected a 2-D or 1-D dense operand, got shape "
                           f"{list(other.shape)}")
    d = other.reshape(1, -1) if other.ndim == 1 else other
    if input.ndim != 2 or input.sparse_dim() != 2:
        raise RuntimeError(f"matmul: expected a 2-D sparse COO matrix with 2 sparse dims, got "
                           f"shape {list(input.shape)}")
    _check_product("matmul", d, input)
    out = _DenseMm.apply(d, input)
    return out.reshape(-1) if other.ndim == 1 else out


class _DenseMm(Function):
    """``dense @ sparse`` (PyTorch's ``torch.mm(dense, sparse)``): ``(s^T @ d^T)^T``; the
    gradient of the sparse operand is the dense ``d^T @ dC``, as PyTorch's."""

    @staticmethod
    def forward(ctx, d, s):
        ctx.s, ctx.d = s.detach(), d.detach()
        rows, cols = s._idx.unbind(0)
        return _spmm(s._vals, cols, rows, s.shape[1], d.t()).t()

    @staticmethod
    def backward(ctx, g):
        gd = mm(ctx.s, g.t()).t() if ctx.needs_input_grad[0] else None
        gs = ctx.d.t().mm(g) if ctx.needs_input_grad[1] else None
        return gd, gs


_DenseMm._backward_cls.__name__ = _DenseMm._backward_cls.__qualname__ = "MmBackward0"


def _bind() -> None:
    """The sparse tensors' methods of this section (PyTorch's names)."""
    from .sparse_compressed import SparseCompressedTensor
    for name in UNARY:
        m = _unary_method(name)
        setattr(SparseTensor, name, m)
        setattr(SparseCompressedTensor, name, m)
        if name not in ("signbit", "isnan", "isinf", "isposinf", "isneginf", "positive"):
            setattr(SparseTensor, name + "_", _unary_inplace(name))
            setattr(SparseCompressedTensor, name + "_", _unary_inplace(name))
    SparseTensor.pow = SparseTensor.__pow__ = SparseCompressedTensor.pow = \
        SparseCompressedTensor.__pow__ = pow
    SparseTensor.transpose = transpose
    SparseTensor.permute = permute
    SparseTensor.index_select = index_select
    SparseTensor.narrow_copy = narrow_copy
    SparseTensor.unsqueeze = unsqueeze
    SparseTensor.select = select
    SparseTensor.neg_ = _unary_inplace("neg")
    SparseCompressedTensor.neg_ = _unary_inplace("neg")


# -- a dense first operand and a sparse second one ----------------------------------------------
# Note [Dense first, sparse second]: ``d + s`` reaches the sparse class's reflected operator
# first (a subclass's wins), but ``torch.add(d, s)`` and ``d.add_(s)`` name the dense op, whose
# kernels cannot read a sparse operand. PyTorch dispatches them on the layouts: add/sub give a
# dense result (the sparse operand's gradient dense, not masked), of the same size only;
# mul gives a sparse one (``s * d``); division by a sparse tensor is refused. The dense op's
# ``failed`` path (registry) and the in-place methods find these through ``dense_sparse``.

def _densified(op: str, input: Tensor, other: SparseBase) -> Tensor:
    """``other`` as a dense tensor for ``op(input, other)``: of ``input``'s size (dense-sparse
    addition does not broadcast, as PyTorch's)."""
    if tuple(input.shape) != tuple(other.shape):
        raise RuntimeError(f"{op}: expected 'self' and 'other' to have same size, but self has "
                           f"size {list(input.shape)} while other has size "
                           f"{list(other.shape)} (FYI: dense-sparse addition does not "
                           f"currently support broadcasting)")
    if is_sparse(other):
        from .sparse import _ToDenseUnmasked
        return _ToDenseUnmasked.apply(other, False)
    return other.to_dense()


def _dense_sparse_add(name: str):
    def op(input: Tensor, other: SparseBase, *args, **kwargs) -> Tensor:
        from . import ops
        return getattr(ops, name)(input, _densified(name, input, other), *args, **kwargs)
    op.__name__ = op.__qualname__ = f"{name}_dense_sparse"
    op.__doc__ = f"``{name}(dense, sparse)``: dense (Note [Dense first, sparse second])."
    return op


def _dense_sparse_add_(name: str):
    def op(input: Tensor, other: SparseBase, *args, **kwargs) -> Tensor:
        return getattr(Tensor, name)(input, _densified(name, input, other), *args, **kwargs)
    op.__name__ = op.__qualname__ = f"{name}_dense_sparse"
    op.__doc__ = (f"``dense.{name}(sparse)``: in place, as with the sparse operand densified "
                  f"(Note [Dense first, sparse second]).")
    return op


def _dense_sparse_mul(input: Tensor, other: SparseTensor, *, out=None) -> SparseTensor:
    """``mul(dense, sparse)``: sparse, ``other * input`` (Note [Dense first, sparse second])."""
    if out is not None:
        raise RuntimeError("mul(dense, sparse): the product is a sparse tensor; out= takes a "
                           "dense one: compute it without out=")
    return mul(other, input)


def _dense_sparse_div(input: Tensor, other: SparseBase, *args, **kwargs):
    """``div(dense, sparse)``: refused, as PyTorch's (a sparse divisor is mostly zeros)."""
    _check_divisor(other)


_DENSE_SPARSE = {"add": _dense_sparse_add("add"), "sub": _dense_sparse_add("sub"),
                 "subtract": _dense_sparse_add("subtract"),
                 "add_": _dense_sparse_add_("add_"), "sub_": _dense_sparse_add_("sub_"),
                 "subtract_": _dense_sparse_add_("subtract_"),
                 "mul_": _dense_sparse_add_("mul_"), "multiply_": _dense_sparse_add_("mul_"),
                 "mul": _dense_sparse_mul, "multiply": _dense_sparse_mul,
                 **dict.fromkeys(("div", "divide", "true_divide", "div_", "divide_",
                                  "true_divide_"), _dense_sparse_div)}


def dense_sparse(name: str, args: tuple):
    """The version of op ``name`` for a dense first and a sparse second argument in ``args``,
    or None (Note [Dense first, sparse second])."""
    if len(args) < 2 or not isinstance(args[1], SparseBase) or isinstance(args[0], SparseBase) \
            or not isinstance(args[0], Tensor):
        return None
    if name in ("mul", "multiply") and not is_sparse(args[1]):
        return None  # (a compressed operand: its own refusal)
    return _DENSE_SPARSE.get(name)


SPARSE_FUNCTIONS = {"cat": cat, "concat": cat, "concatenate": cat, "stack": stack,
                    "hstack": hstack, "vstack": vstack, "row_stack": vstack,
                    **_like_functions()}

_bind()
