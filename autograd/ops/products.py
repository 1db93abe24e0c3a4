"""Products and grids: ``kron tensordot cross meshgrid cartesian_prod combinations block_diag
cdist``.

Every op here is a composite of views, ``mul``, ``matmul``, ``cat`` and ``index_select``, so
both backends run it and its gradient (to any order) comes through its parts. ``meshgrid``'s
results are expanded views of its inputs, as PyTorch's.
"""

from __future__ import annotations

import itertools
import math
import numbers
import warnings

from ...runtime import dtype as dtypes
from ...runtime.dtype import promote_types
from ..checks import kernel_not_implemented, scalar_type_name, tensor_arg
from ..registry import OpInfo, with_jvp
from ..tensor import Tensor, int_arg, wrap_dim
from .creation import tensor, zeros
from .elementwise import _result, mul, sqrt, sub
from .indexing import index_select
from .linalg import matmul
from .shape import cat, stack


def _tensors_arg(tensors: tuple, op: str) -> list:
    """``op(*tensors)`` or ``op([tensors])`` (PyTorch takes both), as a list of tensors."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    return [tensor_arg(t, op, "tensors") for t in tensors]


def kron(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """The Kronecker product: block ``(i, j, ...)`` of the result is ``input[i, j, ...] *
    other`` (the fewer-dimensional operand gets leading 1s).

    Example:
        >>> tg.kron(tg.eye(2), tg.tensor([[1., 2.], [3., 4.]])).shape
        tritongrad.Size([4, 4])
    """
    a, b = tensor_arg(input, "kron"), tensor_arg(other, "kron", "other")
    n = max(a.ndim, b.ndim)
    sa = (1,) * (n - a.ndim) + tuple(a.shape)
    sb = (1,) * (n - b.ndim) + tuple(b.shape)
    # a's dims and b's interleaved: (a0, 1, a1, 1, ...) * (1, b0, 1, b1, ...)
    prod = mul(a.reshape([d for s in sa for d in (s, 1)]),
               b.reshape([d for s in sb for d in (1, s)]))
    r = prod.reshape([x * y for x, y in zip(sa, sb)])
    return _result(r, out, "kron")


def _tensordot_dims(dims, a: Tensor, b: Tensor) -> tuple:
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, numbers.Integral) and not isinstance(dims, bool):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(a.ndim, b.ndim):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got "
                               f"dims={dims}")
        return list(range(a.ndim - dims, a.ndim)), list(range(dims))
    da, db = dims
    da = [da] if isinstance(da, numbers.Integral) else list(da)
    db = [db] if isinstance(db, numbers.Integral) else list(db)
    if len(da) != len(db):
        raise RuntimeError("both dimension lists should have same length")
    return ([wrap_dim(d, a.ndim, "tensordot") for d in da],
            [wrap_dim(d, b.ndim, "tensordot") for d in db])


def tensordot(a: Tensor, b: Tensor, dims=2, out=None) -> Tensor:
    """Contracts ``a``'s dims ``dims[0]`` with ``b``'s ``dims[1]`` (an int ``n``: ``a``'s last
    ``n`` with ``b``'s first ``n``); the result has ``a``'s other dims, then ``b``'s.

    Example:
        >>> tg.tensordot(tg.ones(3, 4, 5), tg.ones(4, 5, 2), dims=2).shape
        tritongrad.Size([3, 2])
    """
    a, b = tensor_arg(a, "tensordot", "a"), tensor_arg(b, "tensordot", "b")
    da, db = _tensordot_dims(dims, a, b)
    for i, j in zip(da, db):
        if a.shape[i] != b.shape[j]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size "
                               f"{a.shape[i]} in dim {i} and second has size {b.shape[j]} "
                               f"in dim {j}")
    free_a = [d for d in range(a.ndim) if d not in da]
    free_b = [d for d in range(b.ndim) if d not in db]
    k = math.prod(a.shape[d] for d in da)
    left = a.permute(free_a + da).reshape(-1, k)
    right = b.permute(db + free_b).reshape(k, -1)
    r = matmul(left, right).reshape([a.shape[d] for d in free_a] + [b.shape[d] for d in free_b])
    return _result(r, out, "tensordot")


def cross(input: Tensor, other: Tensor, dim=None, *, out=None) -> Tensor:
    """The cross product of 3-vectors along ``dim`` (broadcasting). Without ``dim``, the first
    dim of size 3, with PyTorch's deprecation warning (``linalg.cross`` defaults to -1).

    Example:
        >>> tg.cross(tg.tensor([1., 0., 0.]), tg.tensor([0., 1., 0.]), dim=0)
        tensor([0., 0., 1.])
    """
    a, b = tensor_arg(input, "cross"), tensor_arg(other, "cross", "other")
    if a.dtype is dtypes.bool:
        raise kernel_not_implemented("cross", dtypes.bool)
    if a.ndim != b.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    shape = tuple(max(x, y) for x, y in zip(a.shape, b.shape))
    if dim is None:
        d = next((i for i, n in enumerate(shape) if n == 3), None)
        if d is None:
            raise RuntimeError("no dimension of size 3 in input")
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\n"
                      "Please either pass the dim explicitly or simply use torch.linalg.cross."
                      "\nThe default value of dim will change to agree with that of "
                      "linalg.cross in a future release.", UserWarning, stacklevel=2)
    else:
        d = wrap_dim(int_arg(dim, "cross", "dim"), a.ndim, "cross")
        if a.shape[d] != 3 or b.shape[d] != 3:
            raise RuntimeError(f"linalg.cross: inputs dimension {d} must have length 3. Got "
                               f"{a.shape[d]} and {b.shape[d]}")
    for i, (x, y) in enumerate(zip(a.shape, b.shape)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b "
                               f"({y}) at non-singleton dimension {i}")
    a, b = a.expand(shape), b.expand(shape)
    ax, ay, az = a.unbind(d)
    bx, by, bz = b.unbind(d)
    r = stack([sub(mul(ay, bz), mul(az, by)), sub(mul(az, bx), mul(ax, bz)),
               sub(mul(ax, by), mul(ay, bx))], d)
    return _result(r, out, "cross")


# -- grids ------------------------------------------------------------------------------------------

def meshgrid(*tensors, indexing: str | None = None) -> tuple:
    """Coordinate grids of 1-d (or 0-d) tensors: result ``i`` is ``tensors[i]`` expanded along
    its own axis of the grid. ``indexing="ij"`` (the default) gives the grid the shape
    ``(len(t0), len(t1), ...)``; ``"xy"`` swaps the first two axes (NumPy's default).

    Example:
        >>> x, y = tg.meshgrid(tg.tensor([1, 2]), tg.tensor([3, 4, 5]), indexing="ij")
        >>> x.shape
        tritongrad.Size([2, 3])
    """
    ts = _tensors_arg(tensors, "meshgrid")
    if not ts:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the "
                      "indexing argument.", UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but '
                           f'received: {indexing}')
    for t in ts[1:]:
        if t.dtype is not ts[0].dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
        if t.device != ts[0].device:
            raise RuntimeError("meshgrid expects all tensors to have the same device")
    for t in ts:
        if t.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list "
                               f"but got: {t}")
    ts = [t.reshape(-1) for t in ts]
    swap = indexing == "xy" and len(ts) >= 2
    if swap:  # the grid of (t1, t0, ...), with the first two results swapped back
        ts[0], ts[1] = ts[1], ts[0]
    shape = [t.shape[0] for t in ts]
    out = []
    for i, t in enumerate(ts):
        view = [1] * len(ts)
        view[i] = shape[i]
        out.append(t.reshape(view).expand(shape))
    if swap:
        out[0], out[1] = out[1], out[0]
    return tuple(out)


def cartesian_prod(*tensors: Tensor) -> Tensor:
    """The Cartesian product of 1-d tensors as rows: shape ``(prod(len), len(tensors))`` (one
    tensor: itself), as ``itertools.product``.

    Example:
        >>> tg.cartesian_prod(tg.tensor([1, 2]), tg.tensor([3, 4]))
        tensor([[1, 3],
                [1, 4],
                [2, 3],
                [2, 4]])
    """
    ts = _tensors_arg(tensors, "cartesian_prod")
    for t in ts:
        if t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(ts) == 1:
        return ts[0]
    return stack([g.reshape(-1) for g in meshgrid(ts, indexing="ij")], 1)


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """The length-``r`` combinations of a 1-d tensor's elements as rows, in
    ``itertools.combinations`` order (``with_replacement``: ``combinations_with_replacement``).

    Example:
        >>> tg.combinations(tg.tensor([1, 2, 3]))
        tensor([[1, 2],
                [1, 3],
                [2, 3]])
    """
    x = tensor_arg(input, "combinations")
    if x.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(x.shape)}")
    r = int_arg(r, "combinations", "r")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return zeros(0, dtype=x.dtype, device=x.device)
    pick = itertools.combinations_with_replacement if with_replacement \
        else itertools.combinations
    rows = list(pick(range(x.shape[0]), r))
    if not rows:
        return zeros(0, r, dtype=x.dtype, device=x.device)
    idx = tensor([i for row in rows for i in row], device=x.device)
    return index_select(x, 0, idx).reshape(len(rows), r)


def block_diag(*tensors: Tensor) -> Tensor:
    """The block-diagonal matrix of the given tensors (0-d: 1 x 1 blocks, 1-d: one row), in
    their promoted dtype; zeros elsewhere.

    Example:
        >>> tg.block_diag(tg.ones(2, 2), tg.tensor(5.))
        tensor([[1., 1., 0.],
                [1., 1., 0.],
                [0., 0., 5.]])
    """
    ts = _tensors_arg(tensors, "block_diag")
    if not ts:
        return zeros(1, 0)
    blocks = []
    for i, t in enumerate(ts):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer "
                               f"dimensions. Input {i} has {t.ndim} dimensions")
        blocks.append(t.reshape(1, 1) if t.ndim == 0 else t.reshape(1, -1) if t.ndim == 1
                      else t)
    dt = blocks[0].dtype
    for t in blocks[1:]:
        dt = promote_types(dt, t.dtype)
    dev = blocks[0].device
    width = sum(t.shape[1] for t in blocks)
    rows, left = [], 0
    for t in blocks:
        h, w = t.shape
        row = [zeros(h, left, dtype=dt, device=dev), t.to(dt),
               zeros(h, width - left - w, dtype=dt, device=dev)]
        rows.append(cat(row, 1))
        left += w
    return cat(rows, 0)


# -- distances --------------------------------------------------------------------------------------

def cdist(x1: Tensor, x2: Tensor, p: float = 2.0,
          compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """The ``p``-norm distances between the rows of ``x1`` (``..., P, M``) and those of ``x2``
    (``..., R, M``), shape ``(..., P, R)``, batch dims broadcasting. Computed from the
    differences (no ``|a|^2 - 2 a.b + |b|^2`` shortcut: exact, and differentiable at 0 as
    PyTorch's, with a zero gradient there).

    Example:
        >>> tg.cdist(tg.tensor([[0., 0.]]), tg.tensor([[3., 4.], [0., 1.]]))
        tensor([[5., 1.]])
    """
    a, b = tensor_arg(x1, "cdist", "x1"), tensor_arg(x2, "cdist", "x2")
    if a.ndim < 2 or b.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X{1 if a.ndim < 2 else 2}"
                           f" got: {min(a.ndim, b.ndim)}D")
    if a.shape[-1] != b.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{a.shape[-1]} X2: {b.shape[-1]}")
    for t in (a, b):
        if not t.dtype.is_floating_point:
            raise RuntimeError(f"cdist only supports floating-point dtypes, X"
                               f"{1 if t is a else 2} got: {scalar_type_name(t.dtype)}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    d = (a.unsqueeze(-2) - b.unsqueeze(-3)).abs()  # (..., P, R, M)
    if p == 0:  # (the count of differing coordinates: a zero gradient, as PyTorch's)
        from .linalg_ext import vector_norm
        return vector_norm(d, 0, -1)
    if math.isinf(p):
        return d.amax(-1)
    if p == 1:
        return d.sum(-1)
    if p == 2:
        # sqrt's gradient at 0 is infinite: where the distance is 0, PyTorch's is 0
        s = d.mul(d).sum(-1)
        zero = s == 0
        safe = sqrt(s.masked_fill(zero, 1.0))
        return safe.masked_fill(zero, 0.0)
    s = d.pow(p).sum(-1)
    zero = s == 0
    return s.masked_fill(zero, 1.0).pow(1.0 / p).masked_fill(zero, 0.0)


# -- the table ---------------------------------------------------------------------------------

OPS = (
    OpInfo("kron", kron, dtypes="promoted", grad="through its parts (mul)"),
    OpInfo("tensordot", tensordot, method=False, dtypes="one dtype",
           grad="through its parts (matmul)", flops=None, autocast="lower"),
    OpInfo("cross", cross, dtypes="promoted", grad="g x b, a x g (through its parts)"),
    OpInfo("meshgrid", meshgrid, method=False, dtypes="one dtype", grad="expanded views"),
    OpInfo("cartesian_prod", cartesian_prod, method=False, dtypes="one dtype",
           grad="through its parts"),
    OpInfo("combinations", combinations, method=False, dtypes="all",
           grad="index_select's"),
    OpInfo("block_diag", block_diag, method=False, dtypes="promoted",
           grad="the blocks of g"),
    OpInfo("cdist", cdist, method=False, dtypes="floats",
           grad="through its parts; 0 at zero distance"),
)
OPS = with_jvp(OPS)  # forward AD goes through the parts (each has a jvp rule)
