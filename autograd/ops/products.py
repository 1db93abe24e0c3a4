"""Products and grids: ``kron tensordot cross meshgrid cartesian_prod combinations block_diag
cdist``, and the grouped matrix product of Mixture-of-Experts layers (``_grouped_mm``,
``F.grouped_mm``).

Every op here but ``cdist`` is a composite of views, ``mul``, ``matmul``, ``cat`` and
``index_select``, so both backends run it and its gradient (to any order) comes through its
parts. ``meshgrid``'s results are expanded views of its inputs, as PyTorch's. ``cdist`` is
one node saving its inputs and result, as PyTorch's (composed, it saved the ``P x R x M``
differences: 86 times PyTorch's bytes at 256 x 256 x 64); its forward and rules are written
over the kernel contract, so both backends run them and a recorded rule differentiates again.
"""

from __future__ import annotations

import itertools
import math
import numbers
import warnings

from ...runtime import dtype as dtypes
from ...runtime.dtype import promote_types
from ..checks import expected_scalar_type, kernel_not_implemented, scalar_type_name, tensor_arg
from ..dispatch import Primitive, apply, as_shape, meta, opmath
from ..dispatch import zeros as zeros_of  # (a rule's zeros, any k)
from ..registry import OpInfo, with_jvp
from ..tensor import Tensor, int_arg, wrap_dim
from .creation import tensor, zeros
from .elementwise import _result, mul, sub
from .indexing import index_select
from .linalg import matmul
from .shape import cat, stack


def _tensors_arg(tensors: tuple, op: str, one_list: bool = True) -> list:
    """``op(*tensors)`` or, where ``one_list`` (meshgrid's), ``op([tensors])``, as a list of
    tensors."""
    if one_list and len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):  # (the varargs are argument 0, as PyTorch counts)
            raise TypeError(f"{op}(): expected Tensor as element {i} in argument 0, but got "
                            f"{type(t).__name__}")
    return list(tensors)


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
    """(a's contracted dims, b's), checked as PyTorch's ``tensordot`` checks them."""
    if isinstance(dims, Tensor):  # (PyTorch's: one element is a count, else two rows of dims)
        dims = dims.tolist() if dims.numel() > 1 else int(dims.item())
    if isinstance(dims, numbers.Integral):  # (bool too, as PyTorch's)
        dims = int(dims)
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(a.ndim, b.ndim):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got "
                               f"dims={dims}")
        return list(range(a.ndim - dims, a.ndim)), list(range(dims))
    if not isinstance(dims, (list, tuple)):
        raise RuntimeError(f"tensordot expects dims to be int or tuple[list[int], list[int]] or "
                           f"list[list[int]] containing two lists, but got dims={dims}")
    da, db = dims
    for d, name in ((da, "dims_self"), (db, "dims_other")):
        if not isinstance(d, (list, tuple)):  # ((1, 0) is no pair of lists: PyTorch refuses)
            raise TypeError(f"tensordot(): argument '{name}' must be tuple of ints, not "
                            f"{type(d).__name__}")
    if len(da) != len(db):
        raise RuntimeError("both dimension lists should have same length")
    return ([wrap_dim(d, a.ndim, "tensordot") for d in da],
            [wrap_dim(d, b.ndim, "tensordot") for d in db])


def tensordot(a: Tensor, b: Tensor, dims=2, out: Tensor | None = None) -> Tensor:
    """Contracts ``a``'s dims ``dims[0]`` with ``b``'s ``dims[1]`` (an int ``n``: ``a``'s last
    ``n`` with ``b``'s first ``n``); the result has ``a``'s other dims, then ``b``'s. Both
    must have one dtype (no promotion, as PyTorch's), and so must ``out``.

    Example:
        >>> tg.tensordot(tg.ones(3, 4, 5), tg.ones(4, 5, 2), dims=2).shape
        tritongrad.Size([3, 2])
    """
    a, b = tensor_arg(a, "tensordot", "a"), tensor_arg(b, "tensordot", "b")
    da, db = _tensordot_dims(dims, a, b)
    if a.dtype is not b.dtype:
        raise RuntimeError("both inputs should have same dtype")
    for i, j in zip(da, db):
        if a.shape[i] != b.shape[j]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size "
                               f"{a.shape[i]} in dim {i} and second has size {b.shape[j]} "
                               f"in dim {j}")
    free_a = [d for d in range(a.ndim) if d not in da]
    free_b = [d for d in range(b.ndim) if d not in db]
    shape_a, shape_b = [a.shape[d] for d in free_a], [b.shape[d] for d in free_b]
    k = math.prod(a.shape[d] for d in da)
    # (sizes spelled out, no -1: with a size 0 among them, -1 would be ambiguous)
    left = a.permute(free_a + da).reshape(math.prod(shape_a), k)
    right = b.permute(db + free_b).reshape(k, math.prod(shape_b))
    r = matmul(left, right).reshape(shape_a + shape_b)
    if isinstance(out, Tensor) and out.dtype is not r.dtype:
        raise RuntimeError(f"tensordot: Expected the output tensor to have dtype "
                           f"{scalar_type_name(r.dtype)}, but got an output tensor with dtype "
                           f"{scalar_type_name(out.dtype)}")
    return _result(r, out, "tensordot")


def cross(input: Tensor, other: Tensor, dim: int | None = None, *,
          out: Tensor | None = None) -> Tensor:
    """The cross product of 3-vectors along ``dim`` (other dims broadcast; both of one dtype,
    and ``out`` too). Without ``dim``, the first dim of size 3, with PyTorch's deprecation
    warning (``linalg.cross`` defaults to -1).

    Example:
        >>> tg.cross(tg.tensor([1., 0., 0.]), tg.tensor([0., 1., 0.]), dim=0)
        tensor([0., 0., 1.])
    """
    a, b = tensor_arg(input, "cross"), tensor_arg(other, "cross", "other")
    if a.dtype is dtypes.bool:
        raise kernel_not_implemented("cross", dtypes.bool)
    if a.dtype is not b.dtype:  # (no promotion, as PyTorch's)
        raise expected_scalar_type(a.dtype, b.dtype)
    if a.ndim != b.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    for i, (x, y) in enumerate(zip(a.shape, b.shape)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b "
                               f"({y}) at non-singleton dimension {i}")
    shape = tuple(y if x == 1 else x for x, y in zip(a.shape, b.shape))
    if dim is None:
        d = next((i for i, n in enumerate(shape) if n == 3), None)
        if d is None:
            raise RuntimeError("no dimension of size 3 in input")
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\n"
                      "Please either pass the dim explicitly or simply use torch.linalg.cross."
                      "\nThe default value of dim will change to agree with that of "
                      "linalg.cross in a future release.", UserWarning, stacklevel=2)
    else:
        dim = int_arg(dim, "cross", "dim")
        if a.ndim == 0:
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        d = wrap_dim(dim, a.ndim, "cross")
    if a.shape[d] != 3 or b.shape[d] != 3:  # (this dim does not broadcast)
        raise RuntimeError(f"linalg.cross: inputs dimension {d if dim is None else dim} must "
                           f"have length 3. Got {a.shape[d]} and {b.shape[d]}")
    a, b = a.expand(shape), b.expand(shape)
    ax, ay, az = a.unbind(d)
    bx, by, bz = b.unbind(d)
    r = stack([sub(mul(ay, bz), mul(az, by)), sub(mul(az, bx), mul(ax, bz)),
               sub(mul(ax, by), mul(ay, bx))], d)
    if out is None:
        return r
    from .decompositions import _exact  # (out's dtype must be the result's, as PyTorch's)

    return _exact(r, out, "cross", "linalg_cross")


# -- grids -----------------------------------------------------------------------------------------

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
    ts = _tensors_arg(tensors, "cartesian_prod", False)
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
    ts = _tensors_arg(tensors, "block_diag", False)
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


# -- distances -------------------------------------------------------------------------------------

_CDIST_MODES = {"use_mm_for_euclid_dist_if_necessary": 0, "use_mm_for_euclid_dist": 1,
                "donot_use_mm_for_euclid_dist": 2}


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0,
          compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """The ``p``-norm distances between the rows of ``x1`` (``..., P, M``) and those of ``x2``
    (``..., R, M``), shape ``(..., P, R)``, batch dims broadcasting.

    ``compute_mode`` is PyTorch's: for ``p = 2``, ``"use_mm_for_euclid_dist"`` computes
    ``sqrt(max(|a|^2 - 2 a.b + |b|^2, 0))`` with one matrix product (fast, no ``P x R x M``
    intermediate, but inexact for near points: a point's distance to itself may come out a
    little above 0), ``"donot_use_mm_for_euclid_dist"`` from the differences (exact), and the
    default ``"use_mm_for_euclid_dist_if_necessary"`` the product when ``P > 25`` or
    ``R > 25``. One node saving ``x1``, ``x2`` and the result, as PyTorch's
    (``EuclideanDistBackward0`` for the matrix product, else ``CdistBackward0``); the
    gradient is 0 where a distance is 0.

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
    if compute_mode not in _CDIST_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    _batch_shape(tuple(a.shape[:-2]), tuple(b.shape[:-2]))  # (its error, before any work)
    if a.dtype is not b.dtype:  # (no promotion, as PyTorch's)
        raise expected_scalar_type(a.dtype, b.dtype)
    p = float(p)
    mode = _CDIST_MODES[compute_mode]
    rows1, rows2 = a.shape[-2], b.shape[-2]
    mm = (p == 2 and (mode == 1 or (mode == 0 and (rows1 > 25 or rows2 > 25)))
          and a.numel() > 0 and b.numel() > 0)
    return apply(EuclideanDistBackward0 if mm else CdistBackward0, (a, b), p, mm)


def _batch_shape(s1: tuple, s2: tuple) -> tuple:
    """The broadcast of two batch shapes, or cdist's error."""
    n = max(len(s1), len(s2))
    s1, s2 = (1,) * (n - len(s1)) + s1, (1,) * (n - len(s2)) + s2
    out = []
    for i, (u, v) in enumerate(zip(s1, s2)):
        if u != v and u != 1 and v != 1:  # (PyTorch's words, i counted in the batch dims)
            raise RuntimeError(f"The size of tensor a ({u}) must match the size of tensor b "
                               f"({v}) at non-singleton dimension {i} (the batch dims of X1 "
                               f"{list(s1)} and X2 {list(s2)})")
        out.append(v if u == 1 else u)
    return tuple(out)


def _batched(k, a, b) -> tuple:
    """``a`` (..., P, M) and ``b`` (..., R, M) expanded to their common batch dims."""
    batch = _batch_shape(tuple(a.shape[:-2]), tuple(b.shape[:-2]))
    return (k.expand(a, batch + tuple(a.shape[-2:])), k.expand(b, batch + tuple(b.shape[-2:])))


def _differences(k, a, b):
    """``a[..., p, :] - b[..., r, :]``: shape (..., P, R, M)."""
    lead = (slice(None),) * (len(a.shape) - 1)
    return k.sub(k.getitem(a, lead + (None,)), k.getitem(b, lead[:-1] + (None,)))


def _bmm(k, a, b, transpose_b: bool = False):
    """``a @ b`` (``b^T`` when ``transpose_b``) over equal batch dims."""
    if len(a.shape) == 2:
        return k.matmul(a, k.permute(b, (1, 0)) if transpose_b else b)
    batch = tuple(a.shape[:-2])
    n = math.prod(batch)
    a3 = as_shape(k, a, (n,) + tuple(a.shape[-2:]))
    b3 = as_shape(k, b, (n,) + tuple(b.shape[-2:]))
    r = k.bmm(a3, k.permute(b3, (0, 2, 1)) if transpose_b else b3)
    return as_shape(k, r, batch + tuple(r.shape[-2:]))


def _last(a) -> tuple:
    return (len(a.shape) - 1,)


def _unsqueezed(k, y):
    """``y[..., None]``."""
    return k.getitem(y, (slice(None),) * len(y.shape) + (None,))


def _cdist_weights(k, a, b, y, p: float):
    """dy_pr / da_pm, shape (..., P, R, M) (dy_pr / db_rm is its negative): PyTorch's
    _cdist_backward terms. p = 1: sign(d); p = inf: sign(d) where |d| is the distance;
    else sign(d) |d|^(p-1) / y^(p-1); 0 where y is 0 (and, for p < 1, where d is 0).
    Masked operands go through ``where`` before the arithmetic, so a recorded rule meets no
    inf or NaN in a branch it discards."""
    d = _differences(k, a, b)
    s = k.unary("sign", d)
    if p == 1:
        return s
    yy = _unsqueezed(k, y)
    ad = k.unary("abs", d)
    if math.isinf(p):
        return k.where(k.eq(ad, yy), s, 0.0)
    zero = k.eq(yy, 0)
    ys = k.where(zero, 1.0, yy)
    if p == 2:
        w = k.div(d, ys)
    else:
        if p < 1:
            ad = k.where(k.eq(ad, 0), 1.0, ad)
        w = k.mul(s, k.pow(k.div(ad, ys), p - 1))
    return k.where(zero, 0.0, w)


class CdistBackward0(Primitive):
    """y = cdist(x1, x2, p) from the differences, saving x1, x2 and y (PyTorch's):
    dx1_pm = sum_r g_pr w_prm, dx2_rm = -sum_p g_pr w_prm, w = dy_pr / dx1_pm
    (``_cdist_weights``); jvp: dy_pr = sum_m w_prm (t1_pm - t2_rm). p = 0 counts the
    differing coordinates: a zero gradient. float16/bfloat16 compute in float32, rounded
    once; the batch dims broadcast (the engine sums each gradient back)."""

    __slots__ = ()
    op_name = "cdist"
    save_inputs = (0, 1)
    save_output = True
    broadcasts = True

    @staticmethod
    def forward(ctx, k, x1, x2, p, mm):
        ctx.p = p
        (x1, x2), back = opmath(k, x1, x2)
        a, b = _batched(k, x1, x2)
        if mm:
            return back(_euclidean(k, a, b))
        d = k.unary("abs", _differences(k, a, b))
        last = _last(d)
        if d.shape[-1] == 0:  # (no coordinates: every distance is 0)
            return back(k.sum(d, last, False))
        if p == 0:
            return back(k.sum(k.astype(k.ne(d, 0), meta(d)[1]), last, False))
        if math.isinf(p):
            return back(k.reduce("amax", d, last, False))
        if p == 1:
            return back(k.sum(d, last, False))
        if p == 2:
            return back(k.sqrt(k.sum(k.mul(d, d), last, False)))
        return back(k.pow(k.sum(k.pow(d, p), last, False), 1.0 / p))

    @staticmethod
    def vjp(ctx, k, saved, g):
        x1, x2, y = saved
        need1, need2 = ctx.needs_input_grad
        (x1, x2, y, g), back = opmath(k, x1, x2, y, g)
        a, b = _batched(k, x1, x2)
        if ctx.p == 0:
            return (back(zeros_of(k, a.shape, a)) if need1 else None,
                    back(zeros_of(k, b.shape, b)) if need2 else None)
        gw = k.mul(_unsqueezed(k, g), _cdist_weights(k, a, b, y, ctx.p))
        n = len(gw.shape)
        ga = back(k.sum(gw, (n - 2,), False)) if need1 else None
        gb = back(k.neg(k.sum(gw, (n - 3,), False))) if need2 else None
        return ga, gb

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, p, mm):
        (x1, x2), (t1, t2) = primals, tangents
        t1 = zeros_of(k, x1.shape, x1) if t1 is None else t1
        t2 = zeros_of(k, x2.shape, x2) if t2 is None else t2
        (x1, x2, t1, t2, y), back = opmath(k, x1, x2, t1, t2, out)
        if p == 0:
            return back(zeros_of(k, y.shape, y))
        a, b = _batched(k, x1, x2)
        ta, tb = _batched(k, t1, t2)
        w = _cdist_weights(k, a, b, y, p)
        return back(k.sum(k.mul(w, _differences(k, ta, tb)), _last(w), False))


def _euclidean(k, a, b):
    """sqrt(max(|a_p|^2 - 2 a_p.b_r + |b_r|^2, 0)) as one product of (-2a, |a|^2, 1) and
    (b, 1, |b|^2) (PyTorch's _euclidean_dist, its numerics)."""
    last = _last(a)
    an = k.sum(k.mul(a, a), last, True)
    bn = k.sum(k.mul(b, b), last, True)
    dev, dt = meta(a)
    a_ = k.cat([k.mul(a, -2.0), an, k.full(tuple(an.shape), 1, dt, dev)], last[0])
    b_ = k.cat([b, k.full(tuple(bn.shape), 1, dt, dev), bn], last[0])
    return k.sqrt(k.maximum(_bmm(k, a_, b_, transpose_b=True), 0.0))


def _euclid_ratio(k, g, y):
    """g / y, 0 where y is 0 (the subgradient 0 at a zero distance)."""
    zero = k.eq(y, 0)
    return k.where(zero, 0.0, k.div(g, k.where(zero, 1.0, y)))


class EuclideanDistBackward0(CdistBackward0):
    """y = cdist(x1, x2, 2) by one matrix product (``_euclidean``), saving x1, x2 and y
    (PyTorch's _euclidean_dist): with r = g / y (0 where y is 0),
    dx1 = x1 sum_r(r) - r @ x2,  dx2 = x2 sum_p(r) - r^T @ x1; jvp:
    dy = (x1.t1 - t1.x2 - x1.t2 + x2.t2) / y (0 where y is 0)."""

    __slots__ = ()
    op_name = "_euclidean_dist"

    @staticmethod
    def vjp(ctx, k, saved, g):
        x1, x2, y = saved
        need1, need2 = ctx.needs_input_grad
        (x1, x2, y, g), back = opmath(k, x1, x2, y, g)
        a, b = _batched(k, x1, x2)
        r = _euclid_ratio(k, g, y)
        n = len(r.shape)
        ga = gb = None
        if need1:
            ga = back(k.sub(k.mul(a, k.sum(r, (n - 1,), True)), _bmm(k, r, b)))
        if need2:
            rt = k.permute(r, tuple(range(n - 2)) + (n - 1, n - 2))
            gb = back(k.sub(k.mul(b, k.sum(rt, (n - 1,), True)), _bmm(k, rt, a)))
        return ga, gb

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, p, mm):
        (x1, x2), (t1, t2) = primals, tangents
        (x1, x2, y), back = opmath(k, x1, x2, out)
        a, b = _batched(k, x1, x2)
        num = None
        if t1 is not None:
            (t1,), _ = opmath(k, t1)
            ta = _batched(k, t1, x2)[0]
            num = k.sub(k.sum(k.mul(a, ta), _last(a), True), _bmm(k, ta, b, transpose_b=True))
        if t2 is not None:
            (t2,), _ = opmath(k, t2)
            tb = _batched(k, x1, t2)[1]
            rows = k.sum(k.mul(b, tb), _last(b), True)
            n = len(rows.shape)
            term = k.sub(k.permute(rows, tuple(range(n - 2)) + (n - 1, n - 2)),
                         _bmm(k, a, tb, transpose_b=True))
            num = term if num is None else k.add(num, term)
        return back(_euclid_ratio(k, num, y))


# -- the table ---------------------------------------------------------------------------------

# -- grouped_mm ----------------------------------------------------------------------------------

# Note [Grouped matrix products]
#   ``_grouped_mm(a, b, offs=)`` is one GEMM per group (a MoE layer's experts): 2-D ``a`` (the
#   tokens, sorted by expert) times 3-D ``b`` (one matrix per expert) with ``offs[i]`` the end
#   of expert i's rows; 3-D times 3-D a plain batched product; 3-D times 2-D with the columns
#   of ``b`` grouped; 2-D times 2-D with the contraction grouped (the weight gradient: one
#   ``(M, N)`` result per group). It is composed of ``split``/``unbind``, ``matmul`` and
#   ``cat``/``stack``, so both backends run it and its gradient comes through the parts
#   (perf/bench_grouped_mm.py: 0.9-1.1x torch's CPU kernel, forward and backward). The offsets are read on the host (to slice), and checked, where
#   PyTorch's kernel takes them as they are: decreasing or out-of-range offsets are an error
#   here, not undefined results. Rows (columns) past ``offs[-1]`` are zero; PyTorch leaves
#   them unset. PyTorch's CPU kernel also asks 16-byte-aligned strides and refuses float64;
#   this one takes any layout and floating dtype.

def _grouped_mm(mat_a: Tensor, mat_b: Tensor, offs: Tensor | None = None,
                bias: Tensor | None = None, out_dtype=None) -> Tensor:
    """The grouped matrix product of Note [Grouped matrix products]: ``mat_a`` and ``mat_b``
    2-D or 3-D, ``offs`` the int32 ends of the groups of a 2-D operand's grouped dimension,
    ``out_dtype`` the result's dtype (accumulated in float32 for low-precision inputs)."""
    tensor_arg(mat_a, "_grouped_mm", "mat_a")
    tensor_arg(mat_b, "_grouped_mm", "mat_b")
    if mat_a.dim() not in (2, 3):
        raise RuntimeError("mat_a has to be 2 or 3d")
    if mat_b.dim() not in (2, 3):
        raise RuntimeError("mat_b has to be 2 or 3d")
    both_3d = mat_a.dim() == 3 and mat_b.dim() == 3
    if (offs is None) != both_3d:
        raise RuntimeError("Have to provide offsets if there is a 2d matrix, or no offset if "
                           "both matrices are 3d")
    if bias is not None:
        raise RuntimeError("Bias not supported yet")
    for name, m in (("mat_a", mat_a), ("mat_b", mat_b)):
        if not m.dtype.is_floating_point:
            raise RuntimeError(f"Expected {name} to be a floating matrix, got "
                               f"{scalar_type_name(m.dtype)}")
    if mat_a.dtype is not mat_b.dtype:
        raise RuntimeError(f"Expected mat_a and mat_b to have the same dtype, got "
                           f"{scalar_type_name(mat_a.dtype)} and {scalar_type_name(mat_b.dtype)}")
    if mat_a.shape[-1] != mat_b.shape[-2]:
        raise RuntimeError("contraction dimension of mat_a and mat_b must match")
    dtype = mat_a.dtype if out_dtype is None else out_dtype
    if dtype is not mat_a.dtype and dtype is not dtypes.float32:
        raise RuntimeError(f"Expected out_dtype to be None or float32, got {dtype}")
    a, b = (mat_a.to(dtypes.float32), mat_b.to(dtypes.float32)) \
        if dtype is not mat_a.dtype else (mat_a, mat_b)
    if both_3d:
        if a.shape[0] != b.shape[0]:
            raise RuntimeError("matrix batch sizes have to match")
        return matmul(a, b)
    ends = _group_ends(offs, mat_a, mat_b)
    # Each operand is cut once (split, unbind: one node each, whose backward joins the
    # pieces' gradients), not sliced per group: a slice's backward writes a whole zero
    # gradient of its input, G of them in all.
    sizes = [e - s for s, e in zip([0, *ends[:-1]], ends)]
    if mat_a.dim() == 2 and mat_b.dim() == 3:  # rows of a grouped: one expert each
        if len(sizes) != b.shape[0]:
            raise RuntimeError("matrix batch sizes have to match")
        *rows, rest = a.split([*sizes, a.shape[0] - ends[-1]], 0)
        parts = [matmul(x, w) for x, w in zip(rows, b.unbind(0))]
        return cat(parts + [zeros(rest.shape[0], b.shape[-1], dtype=a.dtype, device=a.device)])
    if mat_a.dim() == 3:  # columns of b grouped
        if len(sizes) != a.shape[0]:
            raise RuntimeError("matrix batch sizes have to match")
        *cols, rest = b.split([*sizes, b.shape[1] - ends[-1]], 1)
        parts = [matmul(x, w) for x, w in zip(a.unbind(0), cols)]
        return cat(parts + [zeros(a.shape[1], rest.shape[1], dtype=a.dtype, device=a.device)],
                   1)
    pieces = [*sizes, a.shape[1] - ends[-1]]  # the contraction grouped
    return stack([matmul(x, w) for x, w in zip(a.split(pieces, 1)[:-1], b.split(pieces, 0))])


def _group_ends(offs, mat_a: Tensor, mat_b: Tensor) -> list[int]:
    """``offs`` as Python ints, checked: 1-D int32, non-decreasing, within the grouped
    dimension (a 2-D ``mat_a``'s rows, else ``mat_b``'s columns; both 2-D: the contraction)."""
    tensor_arg(offs, "_grouped_mm", "offs")
    if offs.dtype is not dtypes.int32:
        raise RuntimeError("Offsets have to be int32")
    if offs.dim() != 1:
        raise RuntimeError("offs has to be 1D")
    if offs.numel() == 0:
        raise RuntimeError("_grouped_mm: offs must name at least one group")
    ends = [int(v) for v in offs.tolist()]
    if mat_a.dim() == 2 and mat_b.dim() == 2:
        length, what = mat_a.shape[1], "the contraction dimension"
    elif mat_a.dim() == 2:
        length, what = mat_a.shape[0], "mat_a's rows"
    else:
        length, what = mat_b.shape[1], "mat_b's columns"
    if any(e < s for s, e in zip([0, *ends], ends)) or ends[-1] > length:
        raise RuntimeError(f"_grouped_mm: offs must be non-decreasing offsets within {what} "
                           f"({length}), got {ends}")
    return ends


OPS = (
    OpInfo("_grouped_mm", _grouped_mm, method=False, dtypes="floats (one dtype)",
           grad="through its parts (matmul of the groups' slices)"),
    OpInfo("kron", kron, dtypes="promoted", grad="through its parts (mul)"),
    OpInfo("tensordot", tensordot, method=False, dtypes="one dtype",
           grad="through its parts (matmul)", flops=None, autocast="lower"),
    OpInfo("cross", cross, dtypes="one dtype", grad="g x b, a x g (through its parts)"),
    OpInfo("meshgrid", meshgrid, method=False, dtypes="one dtype", grad="expanded views"),
    OpInfo("cartesian_prod", cartesian_prod, method=False, dtypes="one dtype",
           grad="through its parts"),
    OpInfo("combinations", combinations, method=False, dtypes="all",
           grad="index_select's"),
    OpInfo("block_diag", block_diag, method=False, dtypes="promoted",
           grad="the blocks of g"),
    OpInfo("cdist", cdist, method=False, dtypes="floats",
           grad="sum_r g w, -sum_p g w (w = dy/dx1, PyTorch's); 0 at zero distance",
           autocast="float32"),
)
OPS = with_jvp(OPS)  # forward AD goes through the parts (each has a jvp rule)
