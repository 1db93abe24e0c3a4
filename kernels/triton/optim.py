"""Fused optimizer updates: one launch per parameter instead of ~10, everything in place.

Same formulas and operation order as kernels/numpy/optim.py (PyTorch's single-tensor
implementations), each step rounded to the compute type (float32 for float16/bfloat16/float32
parameters, float64 for float64), so float32 results agree with the NumPy backend to the last
bit (tested under the interpreter; on GPUs the kernels are compiled without multiply-add
contraction, ``_launch.EXACT``, for the same reason). Scalars
that PyTorch computes in Python (lr / bias_correction1, ...) are computed here in Python too and
passed as float64 bit patterns, then converted to the compute type as NumPy converts a weak
Python float.

    SGD:  g = -grad if maximize else grad;  g = g + weight_decay * param
          buf = g (first step) | buf * momentum + (1 - dampening) * g
          g = g + momentum * buf (nesterov) | buf;        param = param - lr * g
    Adam: g = -grad if maximize else grad
          AdamW: param = param * (1 - lr * weight_decay);  Adam: g = g + weight_decay * param
          m = m + (1 - beta1) * (g - m);   v = v * beta2 + ((1 - beta2) * g) * g
          vmax = max(vmax, v) (amsgrad);   denom = sqrt(v | vmax) / sqrt(1 - beta2^step) + eps
          param = param - ((lr / (1 - beta1^step)) * m) / denom

The Adam formulas are one ``@jit`` function, ``_adam_formulas``, which foreach.py's multi-tensor
kernels (every parameter of a group in one launch, Note [chunk tables] there) call too, so the
paths give the same bits.

The arrays of one update must have one shape; when they are all contiguous (the usual case for
parameters and their state) the kernel walks them flat, otherwise they are updated through
contiguous copies that are written back.

Launches are plan launches (Note [plan launches] in launcher.py): a plan per (element count,
dtype, the update's flags) binds the grid and the kernel's trailing arguments, and the kernels
take the arrays and the float64 bits of the step's scalars first. The scalars are the same for
every parameter of a step, so their bits are kept for the last (hyper-parameters, step) seen.
"""

from __future__ import annotations

import struct

import triton.language as tl
from triton.language.extra import libdevice

from ...runtime import dtype as D
from . import _launch as L
from ._launch import block_range
from .launcher import Launch, jit
from .memory import astype, copy_

__all__ = ["adam_step", "adam_step_capturable", "sgd_step"]

BLOCK = 1024
_CT = {D.float16: tl.float32, D.bfloat16: tl.float32, D.float32: tl.float32,
       D.float64: tl.float64}


@jit
def _f(bits, CT: tl.constexpr):
    return bits.to(tl.int64).to(tl.float64, bitcast=True).to(CT)


@jit
def _sqrt(x, F64: tl.constexpr):
    if F64:
        r = tl.sqrt(x)
    else:
        r = tl.sqrt_rn(x)
    return r


@jit
def _div(x, y, F64: tl.constexpr):
    if F64:
        r = x / y
    else:
        r = tl.math.div_rn(x, y)
    return r


@jit
def _sgd_update(p_ptr, g_ptr, buf_ptr, offs, mask, lr, momentum, damp, wd,
                MAXIMIZE: tl.constexpr, WD: tl.constexpr, MOMENTUM: tl.constexpr,
                FIRST: tl.constexpr, NESTEROV: tl.constexpr, CT: tl.constexpr):
    """The SGD update (module docstring) of the elements ``offs`` (where ``mask``) of a
    parameter, its gradient and, with MOMENTUM, its buffer (read after the FIRST step; written),
    computed in CT, the scalars values of it too (damp is 1 - dampening). Shared by the
    per-parameter and the multi-tensor kernels (foreach.py), so they agree to the last bit."""
    p = tl.load(p_ptr + offs, mask=mask, other=0).to(CT)
    g = tl.load(g_ptr + offs, mask=mask, other=0).to(CT)
    if MAXIMIZE:
        g = -g
    if WD:
        g = g + wd * p
    if MOMENTUM:
        if FIRST:
            buf = g
        else:
            buf = tl.load(buf_ptr + offs, mask=mask, other=0).to(CT)
            buf = buf * momentum + damp * g
        tl.store(buf_ptr + offs, buf, mask=mask)
        if NESTEROV:
            g = g + momentum * buf
        else:
            g = buf
    tl.store(p_ptr + offs, p - lr * g, mask=mask)


@jit(do_not_specialize=["lr_b", "momentum_b", "damp_b", "wd_b"])
def _sgd_kernel(
    p_ptr,    # *T: the parameter (n contiguous elements), updated
    g_ptr,    # *G: its gradient (n contiguous elements)
    buf_ptr,  # *B: the momentum buffer (n contiguous elements), updated, or None
    lr_b: tl.int64, momentum_b: tl.int64, damp_b: tl.int64, wd_b: tl.int64,  # float64 bits
    n,  # the rest: the plan's
    MAXIMIZE: tl.constexpr, WD: tl.constexpr, MOMENTUM: tl.constexpr, FIRST: tl.constexpr,
    NESTEROV: tl.constexpr, CT: tl.constexpr, BLOCK: tl.constexpr, INT64: tl.constexpr,
):
    offs, mask = block_range(n, BLOCK, INT64)
    _sgd_update(p_ptr, g_ptr, buf_ptr, offs, mask, _f(lr_b, CT), _f(momentum_b, CT),
                _f(damp_b, CT), _f(wd_b, CT), MAXIMIZE, WD, MOMENTUM, FIRST, NESTEROV, CT)


@jit
def _adam_formulas(p, g, m, v, vmax, decay, wd, one_m_b1, b2, one_m_b2, bc2_sqrt, eps,
                   step_size, MAXIMIZE: tl.constexpr, WD: tl.constexpr,
                   DECOUPLED: tl.constexpr, AMSGRAD: tl.constexpr, F64: tl.constexpr):
    """The Adam/AdamW formulas (module docstring) on loaded values in the compute type, the
    scalars values of it too: the new p, m, v and vmax (vmax as given unless AMSGRAD). Shared
    by the per-parameter and the multi-tensor kernels (foreach.py), so they agree to the last
    bit."""
    if MAXIMIZE:
        g = -g
    if WD:
        if DECOUPLED:
            p = p * decay
        else:
            g = g + wd * p
    m = m + one_m_b1 * (g - m)
    v = v * b2
    v = v + (one_m_b2 * g) * g
    if AMSGRAD:
        vmax = tl.maximum(vmax, v, propagate_nan=tl.PropagateNan.ALL)
        denom = _div(_sqrt(vmax, F64), bc2_sqrt, F64) + eps
    else:
        denom = _div(_sqrt(v, F64), bc2_sqrt, F64) + eps
    p = p - _div(step_size * m, denom, F64)
    return p, m, v, vmax


@jit(do_not_specialize=["decay_b", "wd_b", "one_m_b1_b", "b2_b", "one_m_b2_b",
                                "bc2_sqrt_b", "eps_b", "step_size_b"])
def _adam_kernel(
    p_ptr,     # *T: the parameter (n contiguous elements), updated
    g_ptr,     # *G: its gradient
    m_ptr,     # *S: exp_avg, updated
    v_ptr,     # *S: exp_avg_sq, updated
    vmax_ptr,  # *S: max_exp_avg_sq, updated when AMSGRAD, else None
    decay_b: tl.int64, wd_b: tl.int64, one_m_b1_b: tl.int64, b2_b: tl.int64,
    one_m_b2_b: tl.int64, bc2_sqrt_b: tl.int64, eps_b: tl.int64, step_size_b: tl.int64,
    n,  # the rest: the plan's
    MAXIMIZE: tl.constexpr, WD: tl.constexpr, DECOUPLED: tl.constexpr, AMSGRAD: tl.constexpr,
    CT: tl.constexpr, F64: tl.constexpr, BLOCK: tl.constexpr, INT64: tl.constexpr,
):
    _adam_in_place(p_ptr, g_ptr, m_ptr, v_ptr, vmax_ptr, n, _f(decay_b, CT), _f(wd_b, CT),
                   _f(one_m_b1_b, CT), _f(b2_b, CT), _f(one_m_b2_b, CT), _f(bc2_sqrt_b, CT),
                   _f(eps_b, CT), _f(step_size_b, CT), MAXIMIZE, WD, DECOUPLED, AMSGRAD, CT,
                   F64, BLOCK, INT64)


@jit
def _adam_in_place(p_ptr, g_ptr, m_ptr, v_ptr, vmax_ptr, n, decay, wd, one_m_b1, b2, one_m_b2,
                   bc2_sqrt, eps, step_size, MAXIMIZE: tl.constexpr, WD: tl.constexpr,
                   DECOUPLED: tl.constexpr, AMSGRAD: tl.constexpr, CT: tl.constexpr,
                   F64: tl.constexpr, BLOCK: tl.constexpr, INT64: tl.constexpr):
    """This program's block of one parameter's update (``_adam_formulas``), loaded and stored."""
    offs, mask = block_range(n, BLOCK, INT64)
    p = tl.load(p_ptr + offs, mask=mask, other=0).to(CT)
    g = tl.load(g_ptr + offs, mask=mask, other=0).to(CT)
    m = tl.load(m_ptr + offs, mask=mask, other=0).to(CT)
    v = tl.load(v_ptr + offs, mask=mask, other=0).to(CT)
    if AMSGRAD:
        vmax = tl.load(vmax_ptr + offs, mask=mask, other=0).to(CT)
    else:
        vmax = v
    p, m, v, vmax = _adam_formulas(p, g, m, v, vmax, decay, wd, one_m_b1, b2, one_m_b2,
                                   bc2_sqrt, eps, step_size, MAXIMIZE, WD, DECOUPLED, AMSGRAD,
                                   F64)
    tl.store(m_ptr + offs, m, mask=mask)
    tl.store(v_ptr + offs, v, mask=mask)
    if AMSGRAD:
        tl.store(vmax_ptr + offs, vmax, mask=mask)
    tl.store(p_ptr + offs, p, mask=mask)


@jit
def _device_bias_corrections(step_ptr, lr_b, beta1_b, b2_b):
    """(step size, sqrt of the second bias correction) from the float32 count at ``step_ptr``,
    in float32 as the tensor ops on a float32 count compute them: lr / (1 - beta1^step),
    (1 - beta2^step) ** 0.5 (Note [capturable Adam]; shared with foreach.py's kernel)."""
    s = tl.load(step_ptr).to(tl.float32)
    bc1 = 1.0 - libdevice.pow(_f(beta1_b, tl.float32), s)
    step_size = tl.math.div_rn(_f(lr_b, tl.float32), bc1)
    return step_size, libdevice.pow(1.0 - libdevice.pow(_f(b2_b, tl.float32), s), 0.5)


@jit(do_not_specialize=["decay_b", "wd_b", "one_m_b1_b", "b2_b", "one_m_b2_b", "eps_b",
                        "lr_b", "beta1_b"])
def _adam_capturable_kernel(
    p_ptr, g_ptr, m_ptr, v_ptr, vmax_ptr,  # as _adam_kernel's
    step_ptr,  # *f32: the step count, already advanced (one element)
    decay_b: tl.int64, wd_b: tl.int64, one_m_b1_b: tl.int64, b2_b: tl.int64,
    one_m_b2_b: tl.int64, eps_b: tl.int64, lr_b: tl.int64, beta1_b: tl.int64,
    n,  # the rest: the plan's
    MAXIMIZE: tl.constexpr, WD: tl.constexpr, DECOUPLED: tl.constexpr, AMSGRAD: tl.constexpr,
    CT: tl.constexpr, F64: tl.constexpr, BLOCK: tl.constexpr, INT64: tl.constexpr,
):
    # Note [capturable Adam]: the bias corrections from the count on the device, then the
    # update of _adam_kernel
    step_size, bc2_sqrt = _device_bias_corrections(step_ptr, lr_b, beta1_b, b2_b)
    _adam_in_place(p_ptr, g_ptr, m_ptr, v_ptr, vmax_ptr, n, _f(decay_b, CT), _f(wd_b, CT),
                   _f(one_m_b1_b, CT), _f(b2_b, CT), _f(one_m_b2_b, CT), bc2_sqrt.to(CT),
                   _f(eps_b, CT), step_size.to(CT), MAXIMIZE, WD, DECOUPLED, AMSGRAD, CT, F64,
                   BLOCK, INT64)


def _flat(op, param, *arrays):
    """The arrays as contiguous ones (copies where needed) and the copies to write back."""
    if param.dtype not in _CT:
        raise L.unsupported(op, param.dtype, "floating point parameters only")
    out, back = [], []
    for a in (param,) + arrays:
        if a is None:
            out.append(None)
            continue
        if a.shape != param.shape:
            raise ValueError(f"{op}: shapes differ: {a.shape} vs the parameter's {param.shape}")
        if a.is_contiguous():
            out.append(a)
        else:
            c = astype(a, a.dtype)
            out.append(c)
            back.append((a, c))
    return out, back


_PLANS = L.plan_cache()
_SCALARS: dict = {}  # the last step's scalar bits per optimizer (one entry each)


def _plan(kernel, n: int, flags: tuple):
    """The ``Launch`` of ``kernel`` over ``n`` contiguous elements with ``flags``, its
    constexprs before BLOCK (Note [plan launches])."""
    key = (kernel, n, flags)
    launch = _PLANS.get(key)
    if launch is None:
        launch = _PLANS[key] = Launch(kernel, (L.cdiv(n, BLOCK),),
                                      (n, *flags, BLOCK, n >= L._INT32_SAFE), **L.EXACT)
    return launch


def _scalars(op: str, sources: tuple, make) -> tuple:
    """The float64 bits of the scalars ``make()`` computes from ``sources``, kept while the
    sources' float64 bytes repeat (bytes, so -0.0 and NaNs are told apart as the bits are)."""
    key = struct.pack(f"<{len(sources)}d", *sources)
    last = _SCALARS.get(op)
    if last is None or last[0] != key:
        values = make()
        last = _SCALARS[op] = (key, struct.unpack(f"<{len(values)}q",
                                                  struct.pack(f"<{len(values)}d", *values)))
    return last[1]


def sgd_scalars(lr, momentum, dampening, weight_decay) -> tuple:
    """The float64 bits of the SGD kernels' four scalars (lr_b ... wd_b), kept while a step's
    hyper-parameters repeat."""
    return _scalars("sgd", (lr, momentum, dampening, weight_decay),
                    lambda: (lr, momentum, 1 - dampening, weight_decay))


def adam_scalars(step, lr, beta1, beta2, eps, weight_decay) -> tuple:
    """The float64 bits of the Adam kernels' eight scalars (decay_b ... step_size_b), computed
    in Python as PyTorch computes them, kept while a step's hyper-parameters repeat."""
    return _scalars("adam", (step, lr, beta1, beta2, eps, weight_decay), lambda: (
        1 - lr * weight_decay, weight_decay, 1 - beta1, beta2, 1 - beta2,
        (1 - beta2 ** step) ** 0.5, eps, lr / (1 - beta1 ** step)))


def adam_capturable_scalars(lr, beta1, beta2, eps, weight_decay) -> tuple:
    """The float64 bits of the capturable Adam kernels' eight scalars (decay_b ... beta1_b):
    ``adam_scalars``' without those computed from the count, which the kernels read."""
    return _scalars("adam_capturable", (lr, beta1, beta2, eps, weight_decay), lambda: (
        1 - lr * weight_decay, weight_decay, 1 - beta1, beta2, 1 - beta2, eps, lr, beta1))


def sgd_step(param, grad, momentum_buffer, lr, momentum, dampening, weight_decay, nesterov,
             maximize, first_step):
    """One SGD update of ``param`` (and ``momentum_buffer``, an array or None) in place."""
    (p, g, buf), back = _flat("sgd_step", param, grad, momentum_buffer if momentum else None)
    n = p.numel
    if n:
        bits = sgd_scalars(lr, momentum, dampening, weight_decay)
        L.ensure_driver()
        _plan(_sgd_kernel, n, (bool(maximize), bool(weight_decay), bool(momentum),
                               bool(first_step), bool(nesterov), _CT[param.dtype]))(
            p, g, buf, *bits)
    for a, c in back:
        copy_(a, c)


def adam_step(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step, lr, beta1, beta2, eps,
              weight_decay, amsgrad, maximize, decoupled):
    """One Adam/AdamW update of ``param``, ``exp_avg``, ``exp_avg_sq`` (and ``max_exp_avg_sq``
    when ``amsgrad``) in place; ``step`` counts from 1."""
    (p, g, m, v, vmax), back = _flat("adam_step", param, grad, exp_avg, exp_avg_sq,
                                     max_exp_avg_sq if amsgrad else None)
    n = p.numel
    if n:
        bits = adam_scalars(step, lr, beta1, beta2, eps, weight_decay)
        L.ensure_driver()
        _plan(_adam_kernel, n, (bool(maximize), bool(weight_decay), bool(decoupled),
                                bool(amsgrad), _CT[param.dtype], param.dtype is D.float64))(
            p, g, m, v, vmax, *bits)
    for a, c in back:
        copy_(a, c)


def adam_step_capturable(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step, lr, beta1,
                         beta2, eps, weight_decay, amsgrad, maximize, decoupled):
    """``adam_step`` with the count read on the device: ``step`` is the parameter's float32
    one-element counter, already advanced, and the bias corrections are computed from it in
    the kernel, so that a CUDA graph of the update replays each step with its own count (Note
    [capturable Adam] in optim/adam.py). One launch per parameter instead of ~25 tensor ops."""
    if step.dtype is not D.float32 or step.numel != 1:
        raise TypeError(f"adam_step_capturable: the step count must be one float32 element, "
                        f"got {step.dtype} of shape {step.shape}")
    (p, g, m, v, vmax), back = _flat("adam_step_capturable", param, grad, exp_avg, exp_avg_sq,
                                     max_exp_avg_sq if amsgrad else None)
    n = p.numel
    if n:
        bits = adam_capturable_scalars(lr, beta1, beta2, eps, weight_decay)
        L.ensure_driver()
        _plan(_adam_capturable_kernel, n, (bool(maximize), bool(weight_decay), bool(decoupled),
                                           bool(amsgrad), _CT[param.dtype],
                                           param.dtype is D.float64))(
            p, g, m, v, vmax, step, *bits)
    for a, c in back:
        copy_(a, c)
