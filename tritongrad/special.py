"""``tritongrad.special``: PyTorch's ``torch.special`` functions.

The gamma family, the error function and its inverse, the normal distribution's functions
and the modified Bessel functions are differentiable compositions of the tensor ops
(autograd/ops/special.py: formulas and accuracy); so are the Airy and Bessel functions, erfcx,
zeta and the orthogonal polynomials (autograd/ops/special_functions.py); the rest are the
package's ops under torch.special's names.

Example:
    >>> tg.special.ndtr(tg.tensor([0.]))
    tensor([0.5000])
"""

from .autograd.ops import expm1, log1p, round, xlogy
from .autograd.ops import log_softmax as _log_softmax
from .autograd.ops import logsumexp as _logsumexp
from .autograd.ops import softmax as _softmax
from .autograd.ops import igamma as gammainc
from .autograd.ops import igammac as gammaincc
from .autograd.ops import sigmoid as expit
from .autograd.ops.special import (digamma, entr, erf, erfc, erfinv, exp2, i0, i0e, i1, i1e,
                                   log_ndtr, logit, ndtr, ndtri, polygamma, sinc, xlog1py)
from .autograd.ops.special_functions import (
    airy_ai, bessel_j0, bessel_j1, bessel_y0, bessel_y1, chebyshev_polynomial_t,
    chebyshev_polynomial_u, chebyshev_polynomial_v, chebyshev_polynomial_w, erfcx,
    hermite_polynomial_h, hermite_polynomial_he, laguerre_polynomial_l, legendre_polynomial_p,
    modified_bessel_i0, modified_bessel_i1, modified_bessel_k0, modified_bessel_k1,
    scaled_modified_bessel_k0, scaled_modified_bessel_k1, shifted_chebyshev_polynomial_t,
    shifted_chebyshev_polynomial_u, shifted_chebyshev_polynomial_v, shifted_chebyshev_polynomial_w,
    spherical_bessel_j0, zeta)
from .autograd.ops.elementwise import _result
from .autograd.ops.special import lgamma as gammaln
from .autograd.tensor import Tensor
from .autograd.ops.special import mvlgamma as multigammaln

psi = digamma


def softmax(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """``exp(x) / sum(exp(x), dim)``, computed stably; ``dtype`` casts the input first.
    Unlike ``torch.nn.functional.softmax``, ``dim`` is required (PyTorch's signature)."""
    return _softmax(input, dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """``x - logsumexp(x, dim)``, computed stably; ``dtype`` casts the input first; ``dim`` is
    required (PyTorch's signature)."""
    return _log_softmax(input, dim, dtype=dtype)


def logsumexp(input: Tensor, dim, keepdim: bool = False, *, out: Tensor | None = None) -> Tensor:
    """``log(sum(exp(input), dim))``, computed stably; integers promote to the default dtype.

    Example:
        >>> tg.special.logsumexp(tg.tensor([0., 0.]), 0)
        tensor(0.6931)
    """
    return _result(_logsumexp(input, dim, keepdim), out, "logsumexp")

__all__ = ["airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t",
           "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w", "digamma",
           "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc",
           "gammaincc", "gammaln", "hermite_polynomial_h", "hermite_polynomial_he", "i0", "i0e",
           "i1", "i1e", "laguerre_polynomial_l", "legendre_polynomial_p", "log1p", "log_ndtr",
           "log_softmax", "logit", "logsumexp", "modified_bessel_i0", "modified_bessel_i1",
           "modified_bessel_k0", "modified_bessel_k1", "multigammaln", "ndtr", "ndtri", "polygamma",
           "psi", "round", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
           "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
           "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "sinc", "softmax",
           "spherical_bessel_j0", "xlog1py", "xlogy", "zeta"]

# PyTorch's errors name these functions special_<name> ("special_expit(): argument 'input'
# (position 1) must be Tensor, not list"): each is guarded under that name (registry.guarded)
from .autograd.registry import guarded as _guarded  # noqa: E402

globals().update({_n: _guarded(globals()[_n], "special_" + _n, rename=True, module=__name__,
                           attr=_n) for _n in __all__})
