"""Masked reductions and normalizations (PyTorch's ``torch.masked._ops``), strided tensors.

Each op takes ``(input, dim, *, keepdim, dtype, mask)``: ``mask`` is a boolean tensor
broadcastable to ``input`` (of no more dimensions) whose ``False`` elements are left out. The
ops are compositions: the masked-out elements are replaced by ``where`` with the reduction's
identity (0 for ``sum``, 1 for ``prod``, -inf for ``amax``, ...), then the ordinary reduction
runs. So autograd, the CPU backend and CUDA come from the ops composed, and the gradient of a
masked-out element is zero (``where``'s derivative), as in PyTorch.

A slice with every element masked out gives the identity where the reduction has one (``sum``
0, ``amax`` -inf, ``norm`` 0) and ``nan`` where it has none (``mean``, ``median``, ``var``,
``std``; the normalizations: a softmax over nothing). An input that is a
:class:`~tritongrad.masked.MaskedTensor` brings its own mask (and-ed with ``mask`` when both
are given).
"""

from __future__ import annotations

import math

import tritongrad as tg

__all__ = ["amax", "amin", "argmax", "argmin", "cumprod", "cumsum", "log_softmax", "logaddexp",
           "logsumexp", "mean", "median", "norm", "normalize", "prod", "softmax", "softmin",
           "std", "sum", "var"]

# integer inputs that sum and prod promote to int64 (as torch.sum does)
_PROMOTED = ("uint8", "bool", "int8", "int16", "int32")


# -- helpers: dims, identities, masks --------------------------------------------------------

def _canonical_dim(dim, ndim: int) -> tuple:
    """``dim`` as a sorted tuple of non-negative dims (``None`` and ``()``: all of them)."""
    if dim is None or dim == ():
        return tuple(range(ndim))
    ndim = max(ndim, 1)
    dims: list = []
    for d in ((dim,) if isinstance(dim, int) else dim):
        if d >= ndim or d < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[{-ndim}, {ndim - 1}], but got {d})")
        if d % ndim in dims:
            raise RuntimeError(f"dim={d} appears multiple times in the list of dims")
        dims.append(d % ndim)
    return tuple(sorted(dims))


def _reduction_identity(op_name: str, input, *args):
    """The identity of reduction ``op_name`` on ``input``'s dtype as a 0-d tensor on its
    device (``op(identity, v) == v`` for every ``v``), or None where it has none."""
    dtype = input.dtype

    def full(value, dt=dtype):
        return input.new_full((), value, dtype=dt)  # (filled on the device: no host copy)

    floating = dtype.is_floating_point
    integral = not floating and not dtype.is_complex and dtype is not tg.bool
    if op_name in ("sum", "cumsum"):
        return full(0)
    if op_name in ("prod", "cumprod"):
        return full(1)
    if op_name in ("amax", "argmax", "logaddexp", "logsumexp"):
        if floating:
            return full(-math.inf)
        if integral:
            return full(tg.iinfo(dtype).min)
    elif op_name in ("amin", "argmin"):
        if floating:
            return full(math.inf)
        if integral:
            return full(tg.iinfo(dtype).max)
    elif op_name in ("mean", "var", "std"):
        return None  # the mean of nothing is undefined: fully masked-out slices give nan
    elif op_name == "norm":
        ord = args[0] if args else 2
        if ord == -math.inf:
            if not floating:
                raise TypeError(f"masked norm: ord=-inf needs a floating point input, got "
                                f"{dtype}")
            return full(math.inf)
        return full(0)
    elif op_name == "median":
        # nanmedian skips nan: nan is the identity of the median computed by it
        return full(math.nan, dtype if floating else tg.get_default_dtype())
    raise NotImplementedError(f"identity of {op_name} on {dtype} input")


def _check_tensor(name: str, input) -> None:
    if not isinstance(input, tg.Tensor):
        raise TypeError(f"masked {name}(): input must be a Tensor, got {type(input).__name__}")
    if input.layout is not tg.strided:
        raise ValueError(f"masked {name} expects strided tensor (got {input.layout} tensor)")


def _input_mask(input, *, mask):
    """``mask`` as the canonical input mask: a bool tensor of ``input``'s shape (broadcast),
    on ``input``'s device."""
    if not isinstance(mask, tg.Tensor):
        raise TypeError(f"mask must be a Tensor or None, got {type(mask).__name__}")
    if tuple(mask.shape) != tuple(input.shape):
        if mask.ndim > input.ndim:
            raise IndexError("_input_mask expected broadcastable mask (got mask dimensionality "
                             "higher than of the input)")
        mask = tg.broadcast_to(mask, tuple(input.shape))
    if mask.device != input.device:
        mask = mask.to(input.device)
    return mask.to(dtype=tg.bool)


def _unwrap(input, mask):
    """``(data, mask)``: a MaskedTensor's data (keeping its history) and its mask, and-ed
    with ``mask`` when both are given; a Tensor and ``mask`` as they are."""
    from .maskedtensor.core import MaskedTensor
    if isinstance(input, MaskedTensor):
        own = input.get_mask()
        data = input.get_data()
        mask = own if mask is None else own & _input_mask(data, mask=mask)
        return data, mask
    return input, mask


def _combine_input_and_mask(op_name: str, input, mask, *args):
    """``input`` with its masked-out elements replaced by ``op_name``'s identity."""
    if mask is None:
        return input
    return tg.where(_input_mask(input, mask=mask), input, _reduction_identity(op_name, input,
                                                                              *args))


def _any(mask, dims: tuple, keepdim: bool):
    """``mask.any`` over several dims (the output mask of a reduction)."""
    for d in reversed(dims):
        mask = mask.any(dim=d, keepdim=keepdim)
    return mask


def _output_mask(input, dim=None, keepdim: bool = False, *, mask):
    """The mask of a masked reduction's result: which outputs have a masked-in element."""
    inmask = _input_mask(input, mask=mask)
    return _any(inmask, _canonical_dim(dim, input.ndim), bool(keepdim))


def _sum_dtype(input, dtype):
    if dtype is not None:
        return dtype
    return tg.int64 if str(input.dtype).rsplit(".", 1)[-1] in _PROMOTED else input.dtype


def _count(input, mask, dim, keepdim: bool):
    """How many elements of each slice are masked in (all of them without a mask), int64."""
    if mask is None:
        ones = tg.ones(tuple(input.shape), dtype=tg.int64, device=input.device)
        return ones.sum(dim=_canonical_dim(dim, input.ndim), keepdim=keepdim)
    return mask.sum(dim=_canonical_dim(dim, input.ndim), keepdim=keepdim)


# -- reductions ------------------------------------------------------------------------------

_REDUCTION_DOC = """{name}(input, {dim}, *, keepdim=False, dtype=None, mask=None) -> Tensor

Returns {what} of all the elements in the :attr:`input` tensor along the given dimension(s)
:attr:`dim` while the :attr:`input` elements are masked out according to the boolean tensor
:attr:`mask`. {identity}

The shapes of a mask tensor and the tensor to be masked don't need to match, but they must
be broadcastable and the dimensionality of the mask tensor must not be greater than of the
tensor to be masked.

Args:
    input (Tensor): the input tensor
    {dimarg}

Keyword args:
    keepdim (bool, optional): whether the output tensor has :attr:`dim` retained or not.
      Default: False.
    dtype (dtype, optional): the desired data type of returned tensor. {dtypedoc}
    mask (Tensor, optional): the boolean tensor containing the binary mask of validity of
      input tensor elements. Default: None that is equivalent to
      ``tritongrad.ones(input.shape, dtype=tritongrad.bool)``.

Example::

    >>> import tritongrad.masked
    >>> input = tritongrad.tensor([[-3., -2., -1.], [0., 1., 2.]])
    >>> mask = tritongrad.tensor([[True, False, True], [False, False, False]])
    >>> tritongrad.masked.{name}(input, {exdim}mask=mask)
    {result}
"""

# the examples' outputs (input and mask as in the docstrings' example)
_EXAMPLES = {
    "sum": "tensor([-4.,  0.])", "prod": "tensor([3., 1.])", "amax": "tensor([-1., -inf])",
    "amin": "tensor([-3., inf])", "argmax": "tensor([2., 0.])", "argmin": "tensor([0., 0.])",
    "mean": "tensor([-2., nan])", "median": "tensor([-3., nan])",
    "logsumexp": "tensor([-0.8731,    -inf])", "var": "tensor([2., nan])",
    "std": "tensor([1.4142,    nan])", "norm": "tensor([3.1623, 0.0000])",
    "cumsum": "tensor([[-3., -3., -4.],\n            [ 0.,  0.,  0.]])",
    "cumprod": "tensor([[-3., -3.,  3.],\n            [ 1.,  1.,  1.]])",
    "softmax": "tensor([[0.1192, 0.0000, 0.8808],\n            [   nan,    nan,    nan]])",
    "log_softmax": "tensor([[-2.1269,    -inf, -0.1269],\n            [    nan,     nan,     "
                   "nan]])",
    "softmin": "tensor([[0.8808, 0.0000, 0.1192],\n            [   nan,    nan,    nan]])",
    "normalize": "tensor([[-0.9487,  0.0000, -0.3162],\n            [ 0.0000,  0.0000,  "
                 "0.0000]])",
}


def _doc(name: str, what: str, identity: str, dim: str = "dim=None", exdim: str = "1, ",
         dtypedoc: str = "If specified, the input tensor is casted to :attr:`dtype` before "
                         "the operation is performed. Default: None.") -> str:
    dimarg = ("dim (int or tuple of ints, optional): the dimension or dimensions to reduce. "
              "Default: None that is equivalent to ``tuple(range(input.ndim))``."
              if dim == "dim=None" else "dim (int): the dimension along which " + name +
              " is computed.")
    return _REDUCTION_DOC.format(name=name, what=what, identity=identity, dim=dim,
                                 dimarg=dimarg, exdim=exdim, dtypedoc=dtypedoc,
                                 result=_EXAMPLES[name])


def sum(input, dim=None, *, keepdim: bool = False, dtype=None, mask=None):
    _check_tensor("sum", input)
    input, mask = _unwrap(input, mask)
    dtype = _sum_dtype(input, dtype)
    dims = _canonical_dim(dim, input.ndim)
    mask_input = _combine_input_and_mask("sum", input, mask)
    out = tg.sum(mask_input, dims, bool(keepdim), dtype=dtype)
    # (tg.sum gives int64 for an integer input whatever the dtype asked: cast back)
    return out if out.dtype is dtype else out.to(dtype)


def prod(input, dim=None, *, keepdim: bool = False, dtype=None, mask=None):
    _check_tensor("prod", input)
    input, mask = _unwrap(input, mask)
    dtype = _sum_dtype(input, dtype)
    dims = _canonical_dim(dim, input.ndim)
    result = _combine_input_and_mask("prod", input, mask).to(dtype=dtype)
    for d in reversed(dims):  # (prod takes one dim at a time)
        result = result.prod(dim=d, keepdim=bool(keepdim))
    return result


def cumsum(input, dim: int, *, dtype=None, mask=None):
    _check_tensor("cumsum", input)
    input, mask = _unwrap(input, mask)
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    return tg.cumsum(_combine_input_and_mask("sum", input, mask), d, dtype=dtype)


def cumprod(input, dim: int, *, dtype=None, mask=None):
    _check_tensor("cumprod", input)
    input, mask = _unwrap(input, mask)
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    return tg.cumprod(_combine_input_and_mask("prod", input, mask), d, dtype=dtype)


def _extremum(name: str, input, dim, keepdim, dtype, mask):
    _check_tensor(name, input)
    input, mask = _unwrap(input, mask)
    dtype = input.dtype if dtype is None else dtype
    mask_input = _combine_input_and_mask(name, input, mask)
    dims = _canonical_dim(dim, mask_input.ndim)
    return getattr(tg, name)(mask_input, dims, bool(keepdim)).to(dtype=dtype)


def amax(input, dim=None, *, keepdim: bool = False, dtype=None, mask=None):
    return _extremum("amax", input, dim, keepdim, dtype, mask)


def amin(input, dim=None, *, keepdim: bool = False, dtype=None, mask=None):
    return _extremum("amin", input, dim, keepdim, dtype, mask)


def _arg_extremum(name: str, input, dim, keepdim, dtype, mask):
    _check_tensor(name, input)
    input, mask = _unwrap(input, mask)
    dtype = input.dtype if dtype is None else dtype
    mask_input = _combine_input_and_mask(name, input, mask)
    return getattr(tg, name)(mask_input, dim, bool(keepdim)).to(dtype=dtype)


def argmax(input, dim: int | None = None, *, keepdim: bool = False, dtype=None, mask=None):
    return _arg_extremum("argmax", input, dim, keepdim, dtype, mask)


def argmin(input, dim: int | None = None, *, keepdim: bool = False, dtype=None, mask=None):
    return _arg_extremum("argmin", input, dim, keepdim, dtype, mask)


def mean(input, dim=None, *, keepdim: bool = False, dtype=None, mask=None):
    _check_tensor("mean", input)
    input, mask = _unwrap(input, mask)
    source = "Optional"
    if dtype is None:
        dtype, source = input.dtype, "Input"
    if not (dtype.is_floating_point or dtype.is_complex):
        raise ValueError(f"mean(): Could not infer output dtype. {source} dtype must be either "
                         f"a floating point or complex dtype. Got: {dtype}")
    inmask = None if mask is None else _input_mask(input, mask=mask)
    count = _count(input, inmask, dim, bool(keepdim))
    total = sum(input, dim, keepdim=keepdim, dtype=dtype, mask=inmask)
    return total / count


def median(input, dim: int = -1, *, keepdim: bool = False, dtype=None, mask=None):
    _check_tensor("median", input)
    input, mask = _unwrap(input, mask)
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    is_float = input.dtype.is_floating_point
    if not is_float:
        input = input.to(dtype=tg.get_default_dtype())
    mask_input = _combine_input_and_mask("median", input, mask)
    output = tg.nanmedian(mask_input, d, bool(keepdim)).values
    if not is_float and bool(tg.isnan(output).any()):
        raise ValueError("masked median expects no fully masked out rows if dtype is not "
                         "floating point")
    return output.to(dtype=dtype)


def logsumexp(input, dim=None, *, keepdim: bool = False, dtype=None, mask=None):
    _check_tensor("logsumexp", input)
    input, mask = _unwrap(input, mask)
    dtype = input.dtype if dtype is None else dtype
    dims = _canonical_dim(dim, input.ndim)
    mask_input = _combine_input_and_mask("logsumexp", input, mask)
    return tg.logsumexp(mask_input, dims, keepdim=bool(keepdim)).to(dtype=dtype)


def logaddexp(input, other, *, dtype=None, input_mask=None, other_mask=None):
    """logaddexp(input, other, *, dtype=None, input_mask=None, other_mask=None) -> Tensor

    Returns logaddexp of all the elements in the :attr:`input` and the :attr:`other` tensor.
    The :attr:`input` elements are masked out according to the boolean tensor
    :attr:`input_mask` and the :attr:`other` elements according to :attr:`other_mask` (a
    masked-out element counts as -inf).

    Args:
        input (Tensor): the input tensor
        other (Tensor): the second input tensor

    Keyword args:
        dtype (dtype, optional): the desired data type of returned tensor: the output is
          casted to :attr:`dtype` after the operation. Default: None.
        input_mask (Tensor, optional): the boolean mask of validity of :attr:`input`
          elements. Default: None, all valid.
        other_mask (Tensor, optional): the boolean mask of validity of :attr:`other`
          elements. Default: None, all valid.

    Example::

        >>> import tritongrad.masked
        >>> input = tritongrad.tensor([-100.0, -200, -300])
        >>> other = tritongrad.tensor([-1.0, -2, -3])
        >>> mask = tritongrad.tensor([True, False, True])
        >>> tritongrad.masked.logaddexp(input, other, input_mask=mask, other_mask=mask)
        tensor([-1., -inf, -3.])
    """
    _check_tensor("logaddexp", input)
    _check_tensor("logaddexp", other)
    input, input_mask = _unwrap(input, input_mask)
    other, other_mask = _unwrap(other, other_mask)
    dtype = input.dtype if dtype is None else dtype
    mask_input = _combine_input_and_mask("logaddexp", input, input_mask)
    mask_other = _combine_input_and_mask("logaddexp", other, other_mask)
    return tg.logaddexp(mask_input, mask_other).to(dtype=dtype)


def norm(input, ord: float | None = 2.0, dim=None, *, keepdim: bool = False, dtype=None,
         mask=None):
    _check_tensor("norm", input)
    input, mask = _unwrap(input, mask)
    ord = 2.0 if ord is None else ord
    dtype = input.dtype if dtype is None else dtype
    mask_input = _combine_input_and_mask("norm", input, mask, ord)
    dims = _canonical_dim(dim, input.ndim)
    return tg.linalg.vector_norm(mask_input, ord, dims, bool(keepdim), dtype=dtype)


def _std_var(name: str, input, dim, unbiased, correction_opt, keepdim, dtype, mask,
             take_sqrt: bool):
    _check_tensor(name, input)
    input, mask = _unwrap(input, mask)
    if unbiased is not None and correction_opt is not None:
        raise ValueError(f"masked {name}: only one of unbiased and correction may be given")
    correction = 1.0
    if unbiased is not None:
        correction = 1.0 if unbiased else 0.0
    if correction_opt is not None:
        correction = float(correction_opt)
    if dtype is None:
        dtype = input.dtype
        if not (dtype.is_floating_point or dtype.is_complex):
            dtype = tg.float32
    compute_dtype = dtype if dtype.is_floating_point or dtype.is_complex else tg.float32
    inmask = None if mask is None else _input_mask(input, mask=mask)
    count = _count(input, inmask, dim, True)
    sample_mean = sum(input, dim, keepdim=True, dtype=dtype, mask=inmask) / count
    x = input - sample_mean
    if inmask is not None:
        # The deviations of masked-out elements are left out before they are squared, so that
        # a fully masked-out slice (mean nan) gives them a zero gradient, not nan.
        x = tg.where(inmask, x, tg.zeros((), dtype=x.dtype, device=x.device))
    total = sum(x * x.conj(), dim, keepdim=keepdim, dtype=compute_dtype, mask=inmask)
    if not keepdim:
        count = count.reshape(tuple(total.shape))
    if correction != 0:
        real = compute_dtype
        if compute_dtype.is_complex:
            real = tg.float64 if compute_dtype is tg.complex128 else tg.float32
        count = tg.clamp_min(count.to(real) - correction, 0)
    output = (total / count).to(dtype=dtype)
    return tg.sqrt(output) if take_sqrt else output


def var(input, dim=None, unbiased: bool | None = None, *, correction: float | None = None,
        keepdim: bool = False, dtype=None, mask=None):
    return _std_var("var", input, dim, unbiased, correction, keepdim, dtype, mask, False)


def std(input, dim=None, unbiased: bool | None = None, *, correction: float | None = None,
        keepdim: bool = False, dtype=None, mask=None):
    return _std_var("std", input, dim, unbiased, correction, keepdim, dtype, mask, True)


# -- normalizations --------------------------------------------------------------------------

def _softmax_like(name: str, fill: str, input, dim: int, dtype, mask):
    _check_tensor(name, input)
    input, mask = _unwrap(input, mask)
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    mask_input = _combine_input_and_mask(fill, input, mask)
    return getattr(tg.nn.functional, name)(mask_input, d, dtype=dtype)


def softmax(input, dim: int, *, dtype=None, mask=None):
    return _softmax_like("softmax", "amax", input, dim, dtype, mask)


def log_softmax(input, dim: int, *, dtype=None, mask=None):
    return _softmax_like("log_softmax", "amax", input, dim, dtype, mask)


def softmin(input, dim: int, *, dtype=None, mask=None):
    return _softmax_like("softmin", "amin", input, dim, dtype, mask)


def normalize(input, ord: float, dim: int, *, eps: float = 1e-12, dtype=None, mask=None):
    _check_tensor("normalize", input)
    input, mask = _unwrap(input, mask)
    dtype = input.dtype if dtype is None else dtype
    mask_input = _combine_input_and_mask("sum", input, mask)
    nrm = norm(input, ord, dim, keepdim=True, dtype=dtype, mask=mask)
    denom = tg.maximum(nrm, nrm.new_full((), eps))
    return mask_input / denom


_NORMALIZATION_DOC = """{name}(input, {sig}*, {eps}dtype=None, mask=None) -> Tensor

Returns {what} of all the slices in the :attr:`input` tensor along :attr:`dim` while the
:attr:`input` elements are masked out according to the boolean tensor :attr:`mask`.
{how}

Args:
    input (Tensor): the input tensor
    {ordarg}dim (int): the dimension along which {name} is computed.

Keyword args:
    {epsarg}dtype (dtype, optional): the desired data type of returned tensor. If specified,
      the input tensor is casted to :attr:`dtype` before the operation is performed.
      Default: None.
    mask (Tensor, optional): the boolean tensor containing the binary mask of validity of
      input tensor elements. Default: None, all valid.

Example::

    >>> import tritongrad.masked
    >>> input = tritongrad.tensor([[-3., -2., -1.], [0., 1., 2.]])
    >>> mask = tritongrad.tensor([[True, False, True], [False, False, False]])
    >>> tritongrad.masked.{name}(input, {exargs}mask=mask)
    {result}
"""

_ORD = "ord (int, float): the order of vector norm. Default: 2.\n    "
_EPS = "eps (float, optional): small value to avoid division by zero. Default: 1e-12.\n    "
_NORMALIZATIONS = {
    "softmax": ("softmax", "The masked-out elements are given -inf: their softmax is 0, and "
                "a fully masked-out slice is nan."),
    "log_softmax": ("log_softmax", "The masked-out elements are given -inf: their "
                    "log_softmax is -inf, and a fully masked-out slice is nan."),
    "softmin": ("softmin", "The masked-out elements are given +inf: their softmin is 0, and "
                "a fully masked-out slice is nan."),
    "normalize": ("normalize", "The masked-out elements are 0 in the output, and the norm "
                  "is the masked norm of the slice (a fully masked-out slice is 0)."),
}
for _name, (_what, _how) in _NORMALIZATIONS.items():
    _nz = _name == "normalize"
    globals()[_name].__doc__ = _NORMALIZATION_DOC.format(
        name=_name, what=_what, how=_how, sig="ord, dim, " if _nz else "dim, ",
        eps="eps=1e-12, " if _nz else "", ordarg=_ORD if _nz else "",
        epsarg=_EPS if _nz else "", exargs="2.0, 1, " if _nz else "1, ",
        result=_EXAMPLES[_name])

_NO_IDENTITY = ("By definition, the identity value of {0} is undefined: the elements of the "
                "output tensor that correspond to fully masked-out elements have ``nan`` "
                "values.")
_REDUCTIONS = {
    "sum": ("sum", "The identity value of sum operation, which is used to start the "
            "reduction, is ``0``."),
    "prod": ("product", "The identity value of prod operation, which is used to start the "
             "reduction, is ``1``."),
    "amax": ("maximum", "The identity value of amax operation, which is used to start the "
             "reduction, is ``-inf`` (the dtype's minimum for integers)."),
    "amin": ("minimum", "The identity value of amin operation, which is used to start the "
             "reduction, is ``inf`` (the dtype's maximum for integers)."),
    "argmax": ("argmax", "Masked-out elements are given ``-inf`` (the dtype's minimum for "
               "integers)."),
    "argmin": ("argmin", "Masked-out elements are given ``inf`` (the dtype's maximum for "
               "integers)."),
    "mean": ("mean", _NO_IDENTITY.format("the mean")),
    "median": ("median", _NO_IDENTITY.format("the median")),
    "logsumexp": ("logsumexp", "The identity value of logsumexp operation is ``-inf``."),
    "norm": ("norm", "The identity value of norm operation is ``0``, except for "
             "``ord=-inf`` it is ``inf``."),
    "var": ("variance", _NO_IDENTITY.format("the sample variance")),
    "std": ("standard deviation", _NO_IDENTITY.format("the sample standard deviation")),
    "cumsum": ("cumulative sum", "Masked-out elements are given ``0``."),
    "cumprod": ("cumulative product", "Masked-out elements are given ``1``."),
}
for _name, (_what, _identity) in _REDUCTIONS.items():
    _one = _name in ("cumsum", "cumprod", "median", "argmax", "argmin")
    _dim = {"median": "dim=-1", "argmax": "dim=None", "argmin": "dim=None"}.get(
        _name, "dim" if _one else "dim=None")
    if _name == "norm":
        _dim = "ord=2.0, dim=None"
    elif _name in ("var", "std"):
        _dim = "dim=None, unbiased=None, *, correction=None"
    _ex = {"norm": "2.0, 1, "}.get(_name, "1, ")
    globals()[_name].__doc__ = _doc(
        _name, f"the {_what}", _identity, dim=_dim, exdim=_ex,
        dtypedoc="Default: None (the input's dtype; int64 for bool and integer inputs of "
                 "sum and prod)." if _name in ("sum", "prod") else
        "If specified, the output is returned in :attr:`dtype`. Default: None.")
del _name, _what, _identity, _how, _one, _dim, _ex, _nz
