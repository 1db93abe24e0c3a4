"""Helpers shared by the distributions: broadcasting parameters, probabilities and logits,
cached properties, and summing over event dimensions (PyTorch's ``distributions.utils``)."""

from __future__ import annotations

import numbers

import tritongrad as torch
from tritongrad import Size, Tensor

__all__ = ["broadcast_all", "clamp_probs", "lazy_property", "logits_to_probs",
           "probs_to_logits", "tril_matrix_to_vec", "vec_to_tril_matrix"]


def broadcast_all(*values) -> tuple:
    """Broadcasts ``values`` (Tensors or numbers) to one shape. Numbers become tensors of the
    first tensor's dtype and device (of the default dtype when there is no tensor).

    Raises:
        ValueError: if a value is neither a number nor a Tensor.
    """
    if not all(isinstance(v, (Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of Number, "
                         "torch.Tensor or objects implementing __torch_function__.")
    if not all(isinstance(v, Tensor) for v in values):
        options = {"dtype": torch.get_default_dtype()}
        for v in values:
            if isinstance(v, Tensor):
                options = {"dtype": v.dtype, "device": v.device}
                break
        values = [v if isinstance(v, Tensor) else torch.tensor(v, **options) for v in values]
    return torch.broadcast_tensors(*values)


def _standard_normal(shape, dtype, device) -> Tensor:
    return torch.randn(torch.Size(shape), dtype=dtype, device=device)


def _sum_rightmost(value, dim: int):
    """Sums out the ``dim`` right-most dimensions of ``value``."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:-dim]) + (-1,)).sum(-1)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """Probabilities from logits: the sigmoid for binary (Bernoulli) logits, the softmax over
    the last dimension for categorical ones."""
    if is_binary:
        return torch.sigmoid(logits)
    return torch.softmax(logits, dim=-1)


def clamp_probs(probs: Tensor) -> Tensor:
    """Clamps probabilities into the open interval ``(eps, 1 - eps)`` of their dtype, so that
    their logarithms and logits stay finite."""
    eps = torch.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """Logits from probabilities: ``log p - log(1 - p)`` for binary ones, ``log p`` for
    categorical ones (clamped first, as PyTorch's)."""
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return torch.log(ps_clamped) - torch.log1p(-ps_clamped)
    return torch.log(ps_clamped)


class lazy_property:
    """A property computed on first access and then stored on the instance (parameters given
    one way, such as ``probs`` from ``logits``); computed with grad enabled, so that the cached
    value keeps its history."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with torch.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    """What ``lazy_property`` is on the class: both, so that tools looking for properties
    (``constraints.dependent_property``, docs) find one."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)


def _one_of(probs, logits) -> None:
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


class _LocScale:
    """The ``__init__`` of a distribution given by ``loc`` and ``scale``: both broadcast
    together; the batch is their shape, none when both are numbers."""

    def __init__(self, loc, scale, validate_args: bool | None = None):
        self.loc, self.scale = broadcast_all(loc, scale)
        numbers_only = isinstance(loc, numbers.Number) and isinstance(scale, numbers.Number)
        super().__init__(Size() if numbers_only else self.loc.size(),
                         validate_args=validate_args)


class _OverCategorical:
    """A distribution built over a ``Categorical`` (``_categorical``): its parameters are
    that one's."""

    @property
    def _param(self) -> Tensor:
        return self._categorical._param

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    @property
    def param_shape(self) -> Size:
        return self._categorical.param_shape


class _ProbsLogits:
    """The ``probs``/``logits`` pair of a distribution given one of them: the other is derived
    on first use (``_binary``: Bernoulli-style logits, else categorical ones over the last
    dimension). ``_param`` is whichever was given."""

    _binary = True

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=self._binary)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits, is_binary=self._binary)

    @property
    def param_shape(self):
        return self._param.size()

    def _expanded(self, cls, batch_shape, _instance, params):
        given = "probs" if self._param is self.__dict__.get("probs") else "logits"
        new = super()._expanded(cls, batch_shape, _instance, params)
        new._param = new.__dict__[given]
        return new

    def _set_binary_param(self, probs, logits, *others) -> tuple:
        """Broadcasts the given parameter with ``others`` (numbers or tensors), stores it and
        returns ``(is_scalar, broadcast others)``."""
        _one_of(probs, logits)
        given = probs if probs is not None else logits
        is_scalar = isinstance(given, numbers.Number) and all(
            isinstance(o, numbers.Number) for o in others)
        values = broadcast_all(given, *others)
        if probs is not None:
            self.probs = self._param = values[0]
        else:
            self.logits = self._param = values[0]
        return is_scalar, values[1:]


def _nan_unless(defined: Tensor, value: Tensor) -> Tensor:
    """``value`` where ``defined``, NaN elsewhere (moments that do not exist, such as a mean
    for too few degrees of freedom)."""
    return torch.where(defined, value, torch.full_like(value, float("nan")))


def _tril_flat_positions(n: int, diag: int, device) -> Tensor:
    """The positions, in a flattened ``n x n`` matrix, of the entries on and below diagonal
    ``diag``, in row order."""
    rows, cols = torch.tril_indices(n, n, diag, device=device)
    return rows * n + cols


def tril_matrix_to_vec(mat: Tensor, diag: int = 0) -> Tensor:
    r"""Convert a ``D x D`` matrix or a batch of matrices into a (batched) vector which
    comprises of lower triangular elements from the matrix in row order.

    Args:
        mat (Tensor): a matrix or batch of matrices, of shape ``(*, D, D)``.
        diag (int): the diagonal to keep entries on and below (0: the main diagonal, negative:
            below it, positive: above it).

    Raises:
        ValueError: if ``diag`` is outside ``[-D, D - 1]``.

    Example:
        >>> tril_matrix_to_vec(torch.tensor([[1., 2.], [3., 4.]]))
        tensor([1., 3., 4.])
    """
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    flat = mat.reshape(tuple(mat.shape[:-2]) + (n * n,))
    return flat[..., _tril_flat_positions(n, diag, mat.device)]


def vec_to_tril_matrix(vec: Tensor, diag: int = 0) -> Tensor:
    r"""Convert a vector or a batch of vectors into a batched ``D x D`` lower triangular matrix
    containing elements from the vector in row order (the inverse of
    :func:`tril_matrix_to_vec`; the other entries are zero).

    Raises:
        ValueError: if the last dimension of ``vec`` is no triangle's size.

    Example:
        >>> vec_to_tril_matrix(torch.tensor([1., 3., 4.]))
        tensor([[1., 0.],
                [3., 4.]])
    """
    # the positive root of D^2 + (1 + 2 diag) D - |diag| (diag + 1) - 2 len(vec) = 0
    m = vec.shape[-1]
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * m + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    if round(n) - n > torch.finfo(vec.dtype).eps:
        raise ValueError(f"The size of last dimension is {m} which cannot be expressed as the "
                         "lower triangular part of a square D x D matrix.")
    n = round(n)
    # a differentiable gather from vec padded with one zero: every entry off the triangle
    # reads the pad
    index = torch.full((n * n,), m, dtype=torch.int64, device=vec.device)
    index[_tril_flat_positions(n, diag, vec.device)] = torch.arange(m, device=vec.device)
    padded = torch.cat([vec, vec.new_zeros(tuple(vec.shape[:-1]) + (1,))], dim=-1)
    return padded[..., index].reshape(tuple(vec.shape[:-1]) + (n, n))

