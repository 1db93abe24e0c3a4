"""Sampling from distributions at the top of ``torch``: ``normal`` (its four overloads),
``poisson``, ``binomial`` and ``randint_like``.

``normal`` draws standard normals on the tensor's device from the generator's stream
(random.py: on CUDA, on the device) and scales them. ``poisson`` and ``binomial`` draw on the
host from the generator's NumPy stream (as ``multinomial`` and ``randperm`` do), so on CUDA
they read their parameters back (a synchronization).

Gradients are PyTorch's (tools/autograd/derivatives.yaml): the samples are not
reparameterized, so ``normal`` and ``poisson`` give their tensor parameters zero gradients
(``NormalBackward1/2/3``, ``PoissonBackward0``; random.py's ``bernoulli`` of a probability
tensor ``BernoulliBackward0``), and ``binomial``'s derivative is not
implemented (its grad_fn raises when reached, as PyTorch's ``NotImplemented``).

``_standard_gamma`` (PyTorch's private sampler behind ``distributions.Gamma``, ``Beta`` and
``Dirichlet``) is reparameterized: Note [implicit gamma gradient].
"""

from __future__ import annotations

import numbers
import operator

import numpy as np

from ...kernels.numpy import random as cpu_random
from ...runtime import dtype as dtypes
from ..checks import scalar_type_name, tensor_arg
from ..dispatch import Primitive, apply, zero_jvp
from ..grad_mode import no_grad
from ..registry import OpInfo
from ..state import state
from ..tensor import Tensor
from .creation import (_finish, _size, as_dtype, empty, empty_like, host_to, randint, randn,
                       resolve_device)
from .elementwise import _result, broadcast_shapes, resize_output, zero_vjp
from .random import numpy_rng

__all__ = ["binomial", "normal", "poisson", "randint_like"]  # (and the private _standard_gamma)


class NormalBackward3(Primitive):
    """A sample drawn from distribution parameters given as tensors: the drawn values (a
    param) pass through, and every tensor parameter gets a zero gradient (the sample is not
    reparameterized, as PyTorch's)."""

    __slots__ = ()
    op_name = "normal"

    @staticmethod
    def forward(ctx, k, *args):
        return args[-1]  # (the inputs, then the values drawn from them)

    vjp = staticmethod(zero_vjp)
    jvp = staticmethod(zero_jvp)


NormalBackward1 = NormalBackward3.variant("NormalBackward1", "normal")  # normal(Tensor, float)
NormalBackward2 = NormalBackward3.variant("NormalBackward2", "normal")  # normal(float, Tensor)
PoissonBackward0 = NormalBackward3.variant("PoissonBackward0", "poisson")
BernoulliBackward0 = NormalBackward3.variant("BernoulliBackward0", "bernoulli")  # (random.py)


def _sampled(node: type, params: tuple, values: Tensor) -> Tensor:
    """``values`` (drawn without history) as the output of ``node`` over tensor ``params``."""
    return apply(node, params, values._data)


def _float_param(t: Tensor, kernel: str) -> None:
    if not (t.dtype.is_floating_point or t.dtype.is_complex):
        raise NotImplementedError(f"\"{kernel}\" not implemented for "
                                  f"'{scalar_type_name(t.dtype)}'")


def _std_number(std) -> float:
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    return float(std)


_NORMAL_OVERLOADS = (
    "normal() received an invalid combination of arguments - got ({}), but expected one of:\n"
    " * (Tensor mean, Tensor std, *, torch.Generator generator = None, Tensor out = None)\n"
    " * (Tensor mean, float std = 1, *, torch.Generator generator = None, Tensor out = None)\n"
    " * (float mean, Tensor std, *, torch.Generator generator = None, Tensor out = None)\n"
    " * (float mean, float std, tuple of ints size, *, torch.Generator generator = None, "
    "Tensor out = None, torch.dtype dtype = None, torch.layout layout = None, torch.device "
    "device = None, bool pin_memory = False, bool requires_grad = False)")


def normal(mean, std=1.0, size=None, *, generator=None, out=None, dtype=None, layout=None,
           device=None, pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """Random numbers drawn from normal distributions with the given means and standard
    deviations. PyTorch's four overloads:

    - ``normal(mean: Tensor, std: Tensor)``: one draw per element of their broadcast shape;
    - ``normal(mean: Tensor, std: float = 1.0)`` and ``normal(mean: float, std: Tensor)``:
      the tensor's shape;
    - ``normal(mean: float, std: float, size)``: a new tensor of ``size`` (``dtype``,
      ``device``, ``requires_grad`` as the factories').

    ``generator`` picks the stream (by default the device's default generator), ``out`` the
    tensor written. Tensor parameters get zero gradients (PyTorch's rule).

    Example:
        >>> tg.normal(tg.zeros(3), tg.ones(3)).shape
        tritongrad.Size([3])
    """
    m_t, s_t = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not m_t and not s_t:
        if size is None or not isinstance(mean, numbers.Real) or not isinstance(std, numbers.Real):
            got = ", ".join(type(a).__name__ for a in (mean, std, size) if a is not None)
            raise TypeError(_NORMAL_OVERLOADS.format(got))
        _std_number(std)
        dt, dev = (dtype, device) if out is None else (out.dtype, out.device)
        if out is not None and out.device.type == "cpu":  # (out.normal_: in out's layout)
            resize_output(out, _size((size,)))
            return out.normal_(float(mean), float(std), generator=generator)
        if resolve_device(dev).type == "cpu":  # (ATen's: normal_(mean, std), fused in-kernel)
            z = empty(size, dtype=dt, device=dev).normal_(float(mean), float(std),
                                                          generator=generator)
        else:
            z = randn(size, dtype=dt, device=dev, generator=generator)
            with no_grad():
                z = z * float(std) + float(mean)
        if out is not None:
            return _result(z, out, "normal")
        if pin_memory:
            from .creation import _pinned
            z = _pinned(z, True)
        return _finish(z, requires_grad)
    if size is not None:
        raise TypeError(_NORMAL_OVERLOADS.format(", ".join(type(a).__name__
                                                           for a in (mean, std, size))))
    params = tuple(t for t in (mean, std) if isinstance(t, Tensor))
    like = params[0]
    for t in params:
        _float_param(t, "normal_kernel_cpu" if like.device.type == "cpu" else
                     "normal_kernel_cuda")
    if m_t and s_t:
        shape, node = broadcast_shapes(tuple(mean.shape), tuple(std.shape)), NormalBackward3
        if std.numel() and not bool((std.detach() >= 0).all().item()):
            raise RuntimeError("normal expects all elements of std >= 0.0")
    elif m_t:
        shape, node = tuple(mean.shape), NormalBackward1
        std = _std_number(std)
    else:
        shape, node = tuple(std.shape), NormalBackward2
        if std.numel() and not bool((std.detach() >= 0).all().item()):
            raise RuntimeError("normal expects all elements of std >= 0.0")
        mean = float(mean)
    dt = dtypes.result_type(*params) if len(params) == 2 else like.dtype
    if not s_t and like.device.type == "cpu":
        # (ATen's normal(Tensor, float): normal_(0, std), the std applied in the kernel, then
        # the mean added)
        z = empty(shape, dtype=dt, device=like.device).normal_(0.0, std, generator=generator)
        with no_grad():
            values = z + mean.detach()
    else:
        z = randn(shape, dtype=dt, device=like.device, generator=generator)
        with no_grad():
            values = z * (std.detach() if s_t else std) + (mean.detach() if m_t else mean)
    values = values.to(dt).contiguous()
    return _result(_sampled(node, params, values), out, "normal")


def poisson(input: Tensor, generator=None) -> Tensor:
    """A tensor of ``input``'s shape and dtype whose elements are drawn from Poisson
    distributions with the rates in ``input`` (non-negative). The rates get a zero gradient.

    Example:
        >>> tg.poisson(tg.zeros(2))
        tensor([0., 0.])
    """
    tensor_arg(input, "poisson")
    _float_param(input, "poisson_cpu" if input.device.type == "cpu" else "poisson_cuda")
    if input.dtype.is_complex:
        raise NotImplementedError(f"\"poisson_cpu\" not implemented for "
                                  f"'{scalar_type_name(input.dtype)}'")
    rates = input.detach().to(dtypes.float64).cpu().numpy()
    if (rates < 0).any() or np.isnan(rates).any():
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    rng = numpy_rng(generator, input.device, "poisson")
    # (np.asarray and np.require: a 0-d rate draws a Python int, and stays 0-d)
    drawn = np.asarray(rng.poisson(rates), dtype=np.float64)
    values = host_to(np.require(drawn, requirements="C"), input.dtype, input.device)
    return _sampled(PoissonBackward0, (input,), values)


def binomial(count: Tensor, prob: Tensor, generator=None) -> Tensor:
    """Draws from binomial distributions with ``count`` trials and success probabilities
    ``prob`` (floating tensors of one dtype, broadcast together). Not differentiable (the
    result's grad_fn raises, as PyTorch's).

    Example:
        >>> tg.binomial(tg.tensor([5.]), tg.tensor([1.]))
        tensor([5.])
    """
    tensor_arg(count, "binomial", "count")
    tensor_arg(prob, "binomial", "prob")
    for name, t in (("count", count), ("prob", prob)):
        if not t.dtype.is_floating_point:
            raise ValueError(f"binomial only supports floating-point dtypes for {name}, got: "
                             f"{scalar_type_name(t.dtype)}")
    if prob.dtype is not count.dtype:
        raise RuntimeError(f"Found dtype {scalar_type_name(prob.dtype)} but expected "
                           f"{scalar_type_name(count.dtype)}")
    if count.dtype in (dtypes.float16, dtypes.bfloat16):
        raise NotImplementedError(f"\"binomial_{count.device.type}\" not implemented for "
                                  f"'{scalar_type_name(count.dtype)}'")
    shape = broadcast_shapes(tuple(count.shape), tuple(prob.shape))
    # (in the parameters' float width: ATen's sampler computes some steps in it)
    wide = dtypes.float32 if count.dtype is dtypes.float32 else dtypes.float64
    n = np.broadcast_to(count.detach().to(wide).cpu().numpy(), shape)
    p = np.broadcast_to(prob.detach().to(wide).cpu().numpy(), shape)
    # (PyTorch's sampler clamps: no trials below 0, probabilities into [0, 1])
    n = np.nan_to_num(np.maximum(n, 0))  # (a fractional count is used as it is, as ATen's)
    p = np.clip(np.nan_to_num(p), 0.0, 1.0)
    drawn = cpu_random.binomial(n, p, numpy_rng(generator, count.device, "binomial"))
    out = host_to(np.require(drawn, requirements="C"), count.dtype, count.device)
    if state.grad_enabled and (count.requires_grad or prob.requires_grad):
        _not_implemented(out, (count, prob), "aten::binomial")
    return out


def _not_implemented(out: Tensor, inputs: tuple, op: str, error: type = RuntimeError,
                     message: str | None = None) -> None:
    """Gives ``out`` PyTorch's ``NotImplemented`` grad_fn over ``inputs``: a backward that
    reaches it raises ``error(message)`` (default: RuntimeError "derivative for <op> is not
    implemented")."""
    from ..storage import NotImplementedBackward
    node = NotImplementedBackward(op)
    node.apply = _raise_not_implemented(error, message or f"derivative for {op} is not "
                                                          f"implemented")
    node.next_functions = tuple(t._edge() for t in inputs)
    node._seq = state.seq
    state.seq += 1
    out._grad_fn, out._output_nr, out._requires_grad = node, 0, True


def _raise_not_implemented(error: type, message: str):
    def apply(*grads):
        raise error(message)
    return apply


def randint_like(input: Tensor, low: int = 0, high: int | None = None, *, dtype=None,
                 layout=None, device=None, requires_grad: bool = False, memory_format=None,
                 generator=None) -> Tensor:
    """Random integers drawn uniformly from [low, high) (``randint_like(input, high)``: from
    [0, high)) in a tensor of ``input``'s shape and, by default, dtype and device.

    Example:
        >>> tg.randint_like(tg.zeros(3), 1).tolist()
        [0.0, 0.0, 0.0]
    """
    tensor_arg(input, "randint_like")
    if high is None:
        low, high = 0, low
    if isinstance(high, Tensor):  # (PyTorch's randint_like.Tensor overload: a 0-d high)
        high = high.item()
    low, high = operator.index(low), operator.index(high)
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= "
                           f"to={high}")
    dt = as_dtype(dtype) or input.dtype
    dev = input.device if device is None else resolve_device(device)
    if dev.type == "cpu":  # (ATen's empty_like(input).random_(low, high): in its layout)
        out = empty_like(input, dtype=dt, device=dev, memory_format=memory_format)
        out.random_(low, high, generator=generator)
    else:
        out = randint(low, high, tuple(input.shape), dtype=dt, device=dev, generator=generator)
    return _finish(out, requires_grad)


# -- reparameterized gamma draws -----------------------------------------------------------------
#
# Note [implicit gamma gradient]: a Gamma(a, 1) draw x has no differentiable transform of a
# parameter-free noise, but it is the quantile of a uniform u held fixed: F(x; a) = u. So (as
# PyTorch's ``_standard_gamma_grad``, after Figurnov et al., "Implicit Reparameterization
# Gradients") dx/da = -(dF/da) / f(x; a), with F the regularized lower incomplete gamma P(a, x)
# and f the density. Both ratios are computed here in float64 without evaluating P itself:
#   x < a + 1:   P/f = (x/a) S,  S = sum_n x^n / ((a+1)...(a+n)),
#                dx/da = -(x/a) (S (ln x - digamma(a+1)) + dS/da)  (sums of positive terms)
#   otherwise:   Q/f = x h,  h = Legendre's continued fraction of Gamma(a, x) e^x x^-a,
#                dx/da = x (h (ln x - digamma(a)) + dh/da)   (dh/da carried through Lentz's
#                recurrence in forward mode)
# The draw happens on the host (as ``poisson``'s), so its derivative is computed there once and
# kept for the backward.

_TINY = np.finfo(np.float64).tiny


def _digamma64(x: np.ndarray) -> np.ndarray:
    """digamma of positive float64 values: the recurrence up to 6, then the asymptotic series."""
    x = np.array(x, dtype=np.float64)
    acc = np.zeros_like(x)
    small = x < 6.0
    while small.any():
        acc[small] -= 1.0 / x[small]
        x[small] += 1.0
        small = x < 6.0
    r = 1.0 / (x * x)
    series = r * (1 / 12 - r * (1 / 120 - r * (1 / 252 - r * (1 / 240 - r * (1 / 132)))))
    return acc + np.log(x) - 0.5 / x - series


def _gamma_lower_grad(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    s, ds = np.ones_like(x), np.zeros_like(x)
    t, harmonic = np.ones_like(x), np.zeros_like(x)
    live = np.arange(x.size)
    for n in range(1, 200000):
        an = a[live] + n
        t[live] *= x[live] / an
        harmonic[live] += 1.0 / an
        s[live] += t[live]
        ds[live] -= t[live] * harmonic[live]
        live = live[t[live] > 1e-17 * s[live]]
        if not live.size:
            break
    return -(x / a) * (s * (np.log(x) - _digamma64(a + 1.0)) + ds)


def _gamma_upper_grad(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    fpmin = 1e-300
    b, db = x + 1.0 - a, -np.ones_like(x)
    c, dc = np.full_like(x, 1.0 / fpmin), np.zeros_like(x)
    d = 1.0 / b
    dd = -db * d * d
    h, dh = d.copy(), dd.copy()
    live = np.arange(x.size)
    for i in range(1, 200000):
        al, ad = a[live], i * np.ones(live.size)
        an = -i * (i - al)
        b[live] += 2.0
        den = an * d[live] + b[live]
        dden = ad * d[live] + an * dd[live] + db[live]
        tiny = np.abs(den) < fpmin
        den[tiny], dden[tiny] = fpmin, 0.0
        cc = b[live] + an / c[live]
        dcc = db[live] + (ad - an * dc[live] / c[live]) / c[live]
        tiny = np.abs(cc) < fpmin
        cc[tiny], dcc[tiny] = fpmin, 0.0
        d[live] = 1.0 / den
        dd[live] = -dden * d[live] * d[live]
        c[live], dc[live] = cc, dcc
        delta = d[live] * cc
        ddelta = dd[live] * cc + d[live] * dcc
        step = dh[live] * (delta - 1.0) + h[live] * ddelta
        dh[live] += step
        h[live] *= delta
        # (the derivative converges more slowly than the fraction: wait for both)
        live = live[(np.abs(delta - 1.0) > 1e-16) | (np.abs(step) > 1e-15 * np.abs(dh[live]))]
        if not live.size:
            break
    return x * (h * (np.log(x) - _digamma64(a)) + dh)


def _standard_gamma_grad(alpha: np.ndarray, x: np.ndarray) -> np.ndarray:
    """d x / d alpha of Gamma(alpha, 1) draws ``x`` (float64 arrays of one shape), with the
    quantile held fixed: Note [implicit gamma gradient]."""
    a = np.ravel(np.asarray(alpha, dtype=np.float64))
    xs = np.maximum(np.ravel(np.asarray(x, dtype=np.float64)), _TINY)
    out = np.full_like(xs, np.nan)
    valid = (a > 0) & np.isfinite(a) & np.isfinite(xs)
    lower = valid & (xs < a + 1.0)
    upper = valid & ~lower
    if lower.any():
        out[lower] = _gamma_lower_grad(a[lower], xs[lower])
    if upper.any():
        out[upper] = _gamma_upper_grad(a[upper], xs[upper])
    return out.reshape(np.shape(x))


class StandardGammaBackward0(Primitive):
    """A Gamma(alpha, 1) draw (a param) whose gradient to ``alpha`` is the implicit one computed
    with it (the second input): Note [implicit gamma gradient]. As PyTorch's, the derivative is
    itself not differentiable (the second input carries no history)."""

    __slots__ = ()
    op_name = "_standard_gamma"
    save_inputs = (1,)

    @staticmethod
    def forward(ctx, k, alpha, dx_dalpha, values):
        return values

    @staticmethod
    def vjp(ctx, k, saved, g):
        return k.mul(g, saved[0]), None


def _standard_gamma(alpha: Tensor, generator=None) -> Tensor:
    """Draws from Gamma(``alpha``, 1) distributions (one per element of ``alpha``, a floating
    tensor of positive concentrations), reparameterized: the result's gradient to ``alpha`` is
    the implicit reparameterization gradient (Note [implicit gamma gradient]). Draws are made on
    the host from the generator's NumPy stream, and clamped below by the dtype's smallest
    normal number, as PyTorch's.

    Example:
        >>> _standard_gamma(tg.ones(2)).shape
        tritongrad.Size([2])
    """
    tensor_arg(alpha, "_standard_gamma")
    _float_param(alpha, "gamma_cpu" if alpha.device.type == "cpu" else "gamma_cuda")
    a = alpha.detach().to(dtypes.float64).cpu().numpy()
    rng = numpy_rng(generator, alpha.device, "_standard_gamma")
    # float32 concentrations draw as ATen's float32 sampler (some steps rounded to float)
    single = np.float32 if alpha.dtype is dtypes.float32 else np.float64
    drawn = np.asarray(rng.standard_gamma(np.where(a > 0, a, 0.0), dtype=single),
                       dtype=np.float64)
    # (no distribution there; PyTorch's sampler gives no number either)
    drawn = np.where(a > 0, drawn, np.nan)
    values = host_to(np.require(drawn, requirements="C"), alpha.dtype, alpha.device)
    values = values.clamp(min=dtypes.finfo(alpha.dtype).tiny)
    if not (state.grad_enabled and alpha.requires_grad):
        return values
    # the derivative at the value the caller sees (rounded to its dtype)
    grad = _standard_gamma_grad(a, values.to(dtypes.float64).cpu().numpy())
    dx_dalpha = host_to(np.require(grad, requirements="C"), alpha.dtype, alpha.device)
    return apply(StandardGammaBackward0, (alpha, dx_dalpha), values._data)


# -- the table ---------------------------------------------------------------------------------

OPS = (
    OpInfo("normal", normal, method=False, dtypes="floats", grad="0",
           node=NormalBackward3),
    OpInfo("poisson", poisson, method=False, dtypes="floats", grad="0",
           node=PoissonBackward0),
    OpInfo("binomial", binomial, method=False, dtypes="floats (one dtype)",
           grad="none"),
    OpInfo("randint_like", randint_like, method=False, dtypes="the input's (dtype= any)",
           grad="none"),
)
