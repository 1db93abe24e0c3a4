"""``nn.utils.parametrizations``: PyTorch's parametrizations ``orthogonal``,
``weight_norm`` and ``spectral_norm``, registered with ``nn.utils.parametrize``."""

from __future__ import annotations

import functools

from enum import Enum, auto

from ...autograd.grad_mode import no_grad
from ...autograd.ops import creation
from ...autograd.ops.composite import allclose
from ...autograd.ops.decompositions import qr, solve
from ...autograd.ops.householder import geqrf, householder_product
from ...autograd.ops.linalg_ext import mv, vdot, vector_norm
from ...autograd.ops.shape import cat
from ...autograd.tensor import Tensor
from ...runtime import dtype as dtypes
from .. import functional as F
from ..conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..module import Module
from . import parametrize

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


# -- orthogonal --------------------------------------------------------------------------------

def _is_orthogonal(q: Tensor) -> bool:
    n, k = q.shape[-2], q.shape[-1]
    eye = creation.eye(k, dtype=q.dtype, device=q.device)
    return allclose(q.mH @ q, eye, atol=10.0 * n * dtypes.finfo(q.dtype).eps)


def _make_orthogonal(a: Tensor) -> Tensor:
    """The Q of the tall ``a = QR`` with R's diagonal made non-negative."""
    q, r = qr(a)
    return q * r.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    """Maps a tall matrix X (a wide one is transposed) to an orthogonal one: through the
    matrix exponential or the Cayley map of the skew-symmetric matrix made from X's lower
    triangle, or as the product of the Householder reflectors in X's strictly lower
    triangle. With the trivialization, the result is ``base @ Q``, ``base`` set by
    ``right_inverse`` (and the stored value then -I)."""

    def __init__(self, weight: Tensor, orthogonal_map: _OrthMaps, *,
                 use_trivialization: bool = True) -> None:
        super().__init__()
        if weight.is_complex() and orthogonal_map == _OrthMaps.householder:
            raise ValueError("The householder parametrization does not support complex "
                             "tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:  # padded to n x n with zero columns
                pad = creation.zeros(n, n - k, dtype=X.dtype, device=X.device)
                X = cat([X, pad.expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mH
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = A.matrix_exp()
            else:  # (I - A/2)^-1 (I + A/2)
                eye = creation.eye(n, dtype=A.dtype, device=A.device)
                Q = solve(eye - 0.5 * A, eye + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = householder_product(A, tau)
            # X's diagonal holds the signs of Q's columns (set by right_inverse)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if "base" in self._buffers:
            Q = self.base @ Q
        return Q.mT if transposed else Q

    def right_inverse(self, Q: Tensor) -> Tensor:
        with no_grad():
            if Q.shape != self.shape:
                raise ValueError(f"Expected a matrix or batch of matrices of shape "
                                 f"{self.shape}. Got a tensor of shape {Q.shape}.")
            q_init = Q
            n, k = Q.shape[-2], Q.shape[-1]
            transpose = n < k
            if transpose:
                Q = Q.mT
                n, k = k, n
            if "base" not in self._buffers:
                if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                    raise NotImplementedError("It is not possible to assign to the matrix "
                                              "exponential or the Cayley parametrizations "
                                              "when use_trivialization=False.")
                # Q's reflectors, with the signs of R's diagonal on the diagonal (-1 where a
                # reflector is trivial, tau = 0)
                A, tau = geqrf(Q)
                diag = A.diagonal(dim1=-2, dim2=-1)
                signs = diag.sign()
                diag.copy_(signs.where(tau != 0.0, -signs))
                return A.mT if transpose else A
            # Q, completed to a square orthogonal matrix, becomes the base; the stored -I
            # goes to the identity under each map
            if n == k:
                Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
            else:
                N = creation.randn(*Q.shape[:-2], n, n - k, dtype=Q.dtype, device=Q.device)
                Q = _make_orthogonal(cat([Q, N], dim=-1))
            self.base = Q
            neg_eye = creation.zeros_like(q_init)
            neg_eye.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_eye


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Applies an orthogonal or unitary parametrization to a matrix or a batch of matrices:
    ``module.name`` is then orthogonal (Q^T Q = I for a tall matrix, Q Q^T = I for a wide
    one).

    Args:
        module: module on which to register the parametrization.
        name: name of the tensor to make orthogonal. Default: ``"weight"``.
        orthogonal_map: ``"matrix_exp"``, ``"cayley"`` or ``"householder"``; by default
            ``"matrix_exp"`` for square (or complex) matrices, ``"householder"`` otherwise.
        use_trivialization: whether to use the dynamic trivialization framework (the
            current value is kept as ``parametrizations.<name>[0].base``). Default: True.

    Returns:
        The module, with the parametrization registered.

    Example::

        >>> m = orthogonal(tg.nn.Linear(20, 40))
        >>> Q = m.weight
        >>> bool(tg.dist(Q.T @ Q, tg.eye(20)) < 1e-4)
        True
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(  # noqa: TRY004 (PyTorch's type)
            f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:  # (1-D: the sphere; more surprising than useful)
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of "
                         f"{weight.ndim} dimensions.")
    if orthogonal_map is None:
        square = weight.shape[-2] == weight.shape[-1]
        orthogonal_map = "matrix_exp" if square or weight.is_complex() else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError(f'orthogonal_map has to be one of "matrix_exp", "cayley", '
                         f'"householder". Got: {orthogonal_map}')
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


# -- weight_norm -------------------------------------------------------------------------------

def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:
    """The ``pow``-norm of ``v`` over every dimension but ``dim``, kept as size-1 dimensions
    (``dim=-1``: the norm of the whole tensor, a 0-dim tensor), as PyTorch's
    ``torch.norm_except_dim``: a 1-D ``v`` gives ``|v|`` elementwise for ``dim=0``; another
    negative ``dim`` counts from the end (``-2`` of a matrix is its dim 0), and one out of
    range is an IndexError."""
    if not isinstance(v, Tensor):
        raise TypeError(f"norm_except_dim(): argument 'v' (position 1) must be Tensor, not "
                        f"{type(v).__name__}")
    if dim == -1:
        return vector_norm(v, pow)
    if dim == 0:  # (rows: a 1-D v has one element per row, so its norm is |v|)
        return vector_norm(v.reshape(v.shape[0], -1), pow, 1).reshape(
            (v.shape[0],) + (1,) * (v.ndim - 1))
    if dim == v.ndim - 1:
        return vector_norm(v.reshape(-1, v.shape[-1]), pow, 0).reshape(
            (1,) * (v.ndim - 1) + (v.shape[-1],))
    if not -v.ndim <= dim < v.ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-v.ndim}, {v.ndim - 1}], but got {dim})")
    return norm_except_dim(v.transpose(0, dim), pow, 0).transpose(0, dim)


def _weight_norm(v: Tensor, g: Tensor, dim: int) -> Tensor:
    """w = g * v / ||v|| (the norm over every dimension but ``dim``)."""
    return v * (g / norm_except_dim(v, 2, dim))


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor) -> tuple:
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Applies weight normalization to a parameter in the given module:
    ``w = g * v / ||v||``, which decouples the magnitude ``g`` of a weight tensor from its
    direction ``v`` (Salimans & Kingma, 2016). ``g`` and ``v`` are
    ``parametrizations.<name>.original0`` and ``original1``.

    Args:
        module: containing module.
        name: name of the weight parameter. Default: ``"weight"``.
        dim: the dimension over which the norm is not taken (a norm per output channel
            for 0, the default); None computes one norm over the whole tensor.

    Returns:
        The original module with the weight norm parametrization.

    Example::

        >>> m = weight_norm(tg.nn.Linear(20, 40), name="weight")
        >>> m.parametrizations.weight.original0.shape
        tritongrad.Size([40, 1])
    """
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    # a checkpoint of the older hook-based nn.utils.weight_norm (``<name>_g``, ``<name>_v``)
    # loads into this one, as PyTorch's
    module._register_load_state_dict_pre_hook(functools.partial(_weight_norm_compat_hook,
                                                                name=name))
    return module


def _weight_norm_compat_hook(state_dict, prefix, local_metadata, strict, missing_keys,
                             unexpected_keys, error_msgs, name: str = "weight") -> None:
    g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
    if g_key in state_dict and v_key in state_dict:
        state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
        state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)


# -- spectral_norm -----------------------------------------------------------------------------

class _SpectralNorm(Module):
    """W / sigma(W), sigma the largest singular value of W seen as a matrix (its ``dim``
    first), estimated by power iteration on the buffers ``_u`` and ``_v`` (one step of
    ``n_power_iterations`` per forward in training mode)."""

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            with no_grad():
                u = creation.empty(h, dtype=weight.dtype, device=weight.device).normal_(0, 1)
                v = creation.empty(w, dtype=weight.dtype, device=weight.device).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)  # a good estimate from the start

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:  # (dim first)
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        # u and v are updated in place: the buffers are the power method's state
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(mv(weight_mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(mv(weight_mat.mH, self._u), dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        # clones: the next power iteration writes the buffers that backward reads
        u, v = self._u.clone(), self._v.clone()
        sigma = vdot(u, mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value  # (the value is assumed to satisfy the constraint already)


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Applies spectral normalization to a parameter in the given module:
    ``W_SN = W / sigma(W)``, sigma the spectral norm (largest singular value) of W, which
    stabilises the training of GAN discriminators (Miyato et al., 2018). sigma is
    estimated by one step of the power method per forward in training mode; a weight of
    more than two dimensions is seen as a matrix of its ``dim`` by the rest.

    Args:
        module: containing module.
        name: name of the weight parameter. Default: ``"weight"``.
        n_power_iterations: number of power iterations per forward. Default: 1.
        eps: epsilon for numerical stability in calculating norms. Default: 1e-12.
        dim: the dimension of the output channels: 0, except for the ConvTranspose modules
            (1).

    Returns:
        The original module with the spectral norm parametrization.

    Example::

        >>> m = spectral_norm(tg.nn.Linear(20, 40))
        >>> m.parametrizations.weight.original.shape
        tritongrad.Size([40, 20])
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(  # noqa: TRY004 (PyTorch's type)
            f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        transposed = (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)
        dim = 1 if isinstance(module, transposed) else 0
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
