"""Transforms that act on whole matrices or on pieces of a tensor: ``LowerCholeskyTransform``,
``PositiveDefiniteTransform``, ``CorrCholeskyTransform`` (the matrix transforms),
``ReshapeTransform``, ``CatTransform``, ``StackTransform`` and
``CumulativeDistributionTransform``. They are exported by ``distributions.transforms`` with
the elementwise ones."""

from __future__ import annotations

import math

from tritongrad.nn.functional import pad, softplus

import tritongrad as torch
from tritongrad import Size, Tensor

from . import constraints
from .transforms import Transform
from .utils import _sum_rightmost

__all__ = ["CatTransform", "CorrCholeskyTransform", "CumulativeDistributionTransform",
           "LowerCholeskyTransform", "PositiveDefiniteTransform", "ReshapeTransform",
           "StackTransform"]


class _Singleton(Transform):
    """A parameterless transform: all its instances are equal."""

    def __eq__(self, other) -> bool:
        return type(other) is type(self)

    __hash__ = object.__hash__


def _with_diagonal(x: Tensor, fn) -> Tensor:
    """``x``'s strictly lower triangle plus ``fn`` of its diagonal on the diagonal."""
    return x.tril(-1) + torch.diag_embed(fn(x.diagonal(dim1=-2, dim2=-1)))


class LowerCholeskyTransform(_Singleton):
    """Transform from unconstrained matrices to lower-triangular matrices with nonnegative
    diagonal entries: the strictly lower triangle is kept and the diagonal exponentiated.
    Useful for parameterizing positive definite matrices in terms of their Cholesky
    factorization. (Not bijective: the upper triangle is dropped.)"""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def _call(self, x):
        return _with_diagonal(x, torch.exp)

    def _inverse(self, y):
        return _with_diagonal(y, torch.log)


class PositiveDefiniteTransform(_Singleton):
    """Transform from unconstrained matrices to positive-definite matrices: ``L @ L.mT`` of
    ``LowerCholeskyTransform()(x)``. (Not bijective: the upper triangle is dropped.)"""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def _call(self, x):
        L = _with_diagonal(x, torch.exp)
        return L @ L.mT

    def _inverse(self, y):
        return _with_diagonal(torch.linalg.cholesky(y), torch.log)


def _tril_flat_index(n: int, device) -> Tensor:
    """For each entry of the strictly lower triangle of an ``n x n`` matrix in row-major order
    (``torch.tril_indices(n, n, -1)``), its position in the flattened matrix."""
    rows, cols = torch.tril_indices(n, n, -1, device=device)
    return rows * n + cols


def _vec_to_strict_tril(vec: Tensor, n: int) -> Tensor:
    """An ``n x n`` matrix with ``vec`` (its last dimension, of ``n (n - 1) / 2``) filling the
    strictly lower triangle in row-major order and zeros elsewhere (differentiable: a gather
    from ``vec`` padded with one zero)."""
    gather = torch.full((n * n,), vec.shape[-1], dtype=torch.int64, device=vec.device)
    gather[_tril_flat_index(n, vec.device)] = torch.arange(vec.shape[-1], device=vec.device)
    padded = pad(vec, [0, 1])
    return padded[..., gather].reshape(tuple(vec.shape[:-1]) + (n, n))


def _strict_tril_to_vec(mat: Tensor) -> Tensor:
    n = mat.shape[-1]
    flat = mat.reshape(tuple(mat.shape[:-2]) + (n * n,))
    return flat[..., _tril_flat_index(n, mat.device)]


def _remaining_norms(y: Tensor) -> Tensor:
    """``1 - sum_{k<j} y_ik^2`` for each entry ``(i, j)``: how much of row i's unit norm is
    left before column j."""
    return 1 - pad(y.pow(2).cumsum(-1)[..., :-1], [1, 0])


class CorrCholeskyTransform(Transform):
    r"""Transforms an unconstrained real vector :math:`x` with length :math:`D (D - 1) / 2`
    into the Cholesky factor of a D-dimension correlation matrix: a lower triangular matrix
    with positive diagonals and unit Euclidean norm for each row.

    1. ``z = tanh(x)`` fills the strictly lower triangle of a matrix in row-major order;
       each is a partial correlation in (-1, 1).
    2. Each row is built by stick breaking: :math:`y_{ij} = z_{ij} \sqrt{r_{ij}}` with
       :math:`r_{ij} = 1 - \sum_{k<j} y_{ik}^2 = \prod_{k<j} (1 - z_{ik}^2)`, and the diagonal
       :math:`y_{ii} = \sqrt{r_{ii}}` takes the rest of the unit norm.

    The Jacobian is triangular, so
    :math:`\log|J| = \sum \log(1 - z_{ij}^2) + \frac12 \sum_{j<i} \log r_{ij}`.
    """

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def __eq__(self, other) -> bool:
        return isinstance(other, CorrCholeskyTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        eps = torch.finfo(x.dtype).eps
        z = torch.clamp(torch.tanh(x), min=-1 + eps, max=1 - eps)
        n = self.forward_shape(x.shape)[-1]
        Z = _vec_to_strict_tril(z, n)
        r = pad((1 - Z.pow(2)).cumprod(-1)[..., :-1], [1, 0], value=1.0)
        eye = torch.eye(n, dtype=x.dtype, device=x.device)
        return (Z + eye) * r.sqrt()

    def _inverse(self, y):
        # (on the strictly lower triangle only: above the diagonal nothing of the norm is left)
        z = _strict_tril_to_vec(y) / _strict_tril_to_vec(_remaining_norms(y)).sqrt()
        eps = torch.finfo(y.dtype).eps
        return torch.atanh(torch.clamp(z, min=-1 + eps, max=1 - eps))

    def log_abs_det_jacobian(self, x, y):
        # log(1 - tanh(x)^2) = 2 (log 2 - x - softplus(-2x)), stable for large |x|
        tanh_terms = (2.0 * (math.log(2.0) - x - softplus(-2.0 * x))).sum(-1)
        stick_terms = 0.5 * _strict_tril_to_vec(_remaining_norms(y)).log().sum(-1)
        return tanh_terms + stick_terms

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        N = shape[-1]
        D = round((0.25 + 2 * N) ** 0.5 + 0.5)
        if D * (D - 1) // 2 != N:
            raise ValueError(f"Input is not a flattened lower-diagonal number: the last "
                             f"dimension {N} is not D (D - 1) / 2 for an integer D")
        return tuple(shape[:-1]) + (D, D)

    def inverse_shape(self, shape):
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError(f"Input is not square: {tuple(shape[-2:])}")
        D = shape[-1]
        return tuple(shape[:-2]) + (D * (D - 1) // 2,)


class ReshapeTransform(Transform):
    """Unit Jacobian transform to reshape the rightmost part of a tensor.

    Note that ``in_shape`` and ``out_shape`` must have the same number of elements, just as
    for ``Tensor.reshape``.

    Args:
        in_shape (Size): the input event shape.
        out_shape (Size): the output event shape.
        cache_size (int): size of cache (0 or 1).
    """

    bijective = True

    def __init__(self, in_shape, out_shape, cache_size: int = 0):
        self.in_shape = Size(in_shape)
        self.out_shape = Size(out_shape)
        if self.in_shape.numel() != self.out_shape.numel():
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    @constraints.dependent_property
    def domain(self):
        return constraints.independent(constraints.real, len(self.in_shape))

    @constraints.dependent_property
    def codomain(self):
        return constraints.independent(constraints.real, len(self.out_shape))

    def with_cache(self, cache_size: int = 1):
        if self._cache_size == cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x):
        batch_shape = tuple(x.shape[:x.dim() - len(self.in_shape)])
        return x.reshape(batch_shape + tuple(self.out_shape))

    def _inverse(self, y):
        batch_shape = tuple(y.shape[:y.dim() - len(self.out_shape)])
        return y.reshape(batch_shape + tuple(self.in_shape))

    def log_abs_det_jacobian(self, x, y):
        batch_shape = tuple(x.shape[:x.dim() - len(self.in_shape)])
        return torch.zeros(batch_shape, dtype=x.dtype, device=x.device)

    @staticmethod
    def _swap(shape, old: Size, new: Size) -> tuple:
        if len(shape) < len(old):
            raise ValueError("Too few dimensions on input")
        cut = len(shape) - len(old)
        if tuple(shape[cut:]) != tuple(old):
            raise ValueError(f"Shape mismatch: expected {shape[cut:]} but got {old}")
        return tuple(shape[:cut]) + tuple(new)

    def forward_shape(self, shape):
        return self._swap(shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape):
        return self._swap(shape, self.out_shape, self.in_shape)


class _PiecewiseTransform(Transform):
    """A transform applying ``transforms[i]`` to the i-th piece of its input along ``dim``
    (``CatTransform``: slices of given lengths; ``StackTransform``: single indices)."""

    def __init__(self, tseq, dim: int, cache_size: int):
        if not all(isinstance(t, Transform) for t in tseq):
            raise TypeError("Expected a sequence of Transforms")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.dim = dim

    @property
    def bijective(self) -> bool:
        return all(t.bijective for t in self.transforms)

    @property
    def event_dim(self) -> int:
        return max(t.event_dim for t in self.transforms)

    def _check_dim(self, x: Tensor) -> None:
        if not -x.dim() <= self.dim < x.dim():
            raise ValueError(f"{type(self).__name__}: dim {self.dim} is out of range for an "
                             f"input of {x.dim()} dimensions")

    def _apply(self, x: Tensor, fns) -> Tensor:
        self._check_dim(x)
        return self._join([fn(piece) for fn, piece in zip(fns, self._split(x))])

    def _call(self, x):
        return self._apply(x, self.transforms)

    def _inverse(self, y):
        return self._apply(y, [t.inv for t in self.transforms])

    def log_abs_det_jacobian(self, x, y):
        self._check_dim(x)
        event_dim = self.event_dim
        ladjs = [_sum_rightmost(t.log_abs_det_jacobian(xi, yi), event_dim - t.event_dim)
                 for t, xi, yi in zip(self.transforms, self._split(x), self._split(y))]
        return self._join_ladj(ladjs, x.dim(), event_dim)


class CatTransform(_PiecewiseTransform):
    """Transform functor that applies a sequence of transforms ``tseq`` component-wise to each
    submatrix at ``dim``, of length ``lengths[dim]``, in a way compatible with ``torch.cat``.

    Example::

        x0 = torch.cat([torch.range(1, 10), torch.range(1, 10)], dim=0)
        x = torch.cat([x0, x0], dim=0)
        t0 = CatTransform([ExpTransform(), identity_transform], dim=0, lengths=[10, 10])
        t = CatTransform([t0, t0], dim=0, lengths=[20, 20])
        y = t(x)
    """

    def __init__(self, tseq, dim: int = 0, lengths=None, cache_size: int = 0):
        super().__init__(tseq, dim, cache_size)
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise ValueError(f"CatTransform: {len(self.lengths)} lengths for "
                             f"{len(self.transforms)} transforms")

    @property
    def length(self) -> int:
        return sum(self.lengths)

    def with_cache(self, cache_size: int = 1):
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _split(self, x: Tensor) -> list:
        if x.size(self.dim) != self.length:
            raise ValueError(f"CatTransform: the input has size {x.size(self.dim)} at dim "
                             f"{self.dim}, but the lengths sum to {self.length}")
        pieces, start = [], 0
        for length in self.lengths:
            pieces.append(x.narrow(self.dim, start, length))
            start += length
        return pieces

    def _join(self, pieces: list) -> Tensor:
        return torch.cat(pieces, dim=self.dim)

    def _join_ladj(self, ladjs: list, ndim: int, event_dim: int) -> Tensor:
        dim = self.dim - ndim if self.dim >= 0 else self.dim
        if dim >= -event_dim:  # the pieces are parts of one event: their terms add up
            return sum(ladjs[1:], ladjs[0])
        return torch.cat(ladjs, dim=dim + event_dim)

    @constraints.dependent_property
    def domain(self):
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @constraints.dependent_property
    def codomain(self):
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(_PiecewiseTransform):
    """Transform functor that applies a sequence of transforms ``tseq`` component-wise to each
    submatrix at ``dim`` in a way compatible with ``torch.stack``.

    Example::

        x = torch.stack([torch.range(1, 10), torch.range(1, 10)], dim=1)
        t = StackTransform([ExpTransform(), identity_transform], dim=1)
        y = t(x)
    """

    def __init__(self, tseq, dim: int = 0, cache_size: int = 0):
        super().__init__(tseq, dim, cache_size)

    def with_cache(self, cache_size: int = 1):
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _split(self, x: Tensor) -> list:
        if x.size(self.dim) != len(self.transforms):
            raise ValueError(f"StackTransform: the input has size {x.size(self.dim)} at dim "
                             f"{self.dim}, but there are {len(self.transforms)} transforms")
        return [x.select(self.dim, i) for i in range(x.size(self.dim))]

    def _join(self, pieces: list) -> Tensor:
        return torch.stack(pieces, dim=self.dim)

    def _join_ladj(self, ladjs: list, ndim: int, event_dim: int) -> Tensor:
        dim = self.dim - ndim if self.dim >= 0 else self.dim
        if dim >= -event_dim:
            return sum(ladjs[1:], ladjs[0])
        return torch.stack(ladjs, dim=dim + event_dim)

    @constraints.dependent_property
    def domain(self):
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @constraints.dependent_property
    def codomain(self):
        return constraints.stack([t.codomain for t in self.transforms], self.dim)


class CumulativeDistributionTransform(Transform):
    """Transform via the cumulative distribution function of a probability distribution.

    Args:
        distribution (Distribution): Distribution whose cumulative distribution function to
            use for the transformation.

    Example::

        # Construct a Gaussian copula from a multivariate normal.
        base_dist = MultivariateNormal(
            loc=torch.zeros(2),
            scale_tril=LKJCholesky(2).sample(),
        )
        transform = CumulativeDistributionTransform(Normal(0, 1))
        copula = TransformedDistribution(base_dist, [transform])
    """

    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution, cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        return self.distribution.support

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)

    def with_cache(self, cache_size: int = 1):
        if self._cache_size == cache_size:
            return self
        return type(self)(self.distribution, cache_size=cache_size)
