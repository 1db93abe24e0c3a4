"""The ops' array-level implementations, one backend per device type.

``backend(device)`` is the one place a device picks its implementation: ``kernels.numpy`` for
``cpu`` (NumPy arrays), ``kernels.triton`` for ``cuda`` (``runtime.DeviceArray``; Triton kernels
launched on tritongrad's current stream), ``kernels.meta`` for ``meta`` (arrays with a shape and
no values: Note [The meta device]). Op code above this layer never branches on the device. The
NumPy and Triton backends export every name in ``CONTRACT`` with the same signature and semantics;
``tests/kernels/test_contract.py`` holds them to it, and the Triton kernels run in CI through
Triton's interpreter against the NumPy results.

The contract (``a``, ``b``: backend arrays of one dtype, already promoted by the caller; ``s``: a
Python scalar; ``op``: a string naming one entry of that function's table; results are new
contiguous arrays unless ``out=`` is given or the name ends in ``_`` (in place, returns None),
but for the elementwise family and the activations, whose results PyTorch lays out as its
TensorIterator does: row-major for row-major operands, else dense in the order of the
operands' strides (``autograd.layout.elementwise_strides``; Note [Result layouts] in
kernels/numpy/elementwise.py);
float16/bfloat16 math computes in float32 and rounds once; float results that are inf or NaN
(x / 0, log(0), sqrt(-1)) come without warnings, as PyTorch's; integer index arrays are int64
and already checked and wrapped into range by the caller):

creation      empty(shape, dtype, device), full(shape, value, dtype, device),
              arange(start, step, n, dtype, device)   [start + step * i, i < n; int64 math for
                                                       int start/step, else float64, then cast]
movement      astype(a, dtype), contiguous(a), copy_(dst, src)  [src broadcast and cast to dst]
              cat(arrays, dim)  [a list of one dtype and ndim, equal sizes but along dim
                                 (non-negative), joined along it: a new array]
views         view(a, shape) -> array | None, permute(a, dims), expand(a, shape),
              getitem(a, index), as_strided(a, shape, strides, offset),
              strides(a), storage_offset(a)   [element units, as PyTorch; getitem's index is a
                                               normalised tuple: ints in range, slices with
                                               positive steps, None; never a scalar result]
elementwise   add sub mul div pow maximum minimum (a, a|s, out=None): broadcasting; integer
                  pow with a negative exponent is the truncated reciprocal (1, +-1 or 0)
              gt ge lt le eq ne (a, a|s) -> bool array
              neg exp log relu sqrt (a, out=None)
              where(cond, a|s, a|s)
              unary(op, a, out=None), same dtype:  abs sign [0 for NaN, as PyTorch] sin cos
                  tanh sigmoid floor ceil round [half to even] trunc log1p expm1 bitwise_not
                  [bool: logical not] signbit [1 where the sign bit is set (-0.0, negative
                  NaN too), else 0; same dtype]
              binary(op, a, a|s, out=None), broadcasting, same dtype:  floor_divide [rounds
                  toward -inf] trunc_divide [toward 0] remainder [sign of the divisor, Python's
                  %] (integer division by zero raises RuntimeError where it can be detected)
                  bitwise_and bitwise_or bitwise_xor [ints and bool]; atan2 igamma igammac
                  igamma_dx [floats: atan2(a, b); P(a, x), Q(a, x); dP/dx]; fused derivative rules
                  (a: incoming gradient, b: forward output) tanh_backward [a*(1-b*b)]
                  sigmoid_backward [a*b*(1-b)] relu_backward [0 where b <= 0 else a]
reductions    sum(a, dims, keepdim)   [dims: sorted tuple of non-negative ints]
              reduce(op, a, dims, keepdim): prod amax amin [NaN propagates] all any [-> bool];
                  reduced dims are non-empty for amax/amin (the caller checks)
              argreduce(op, a, dim, keepdim) -> int64: argmax argmin [first index among ties;
                  a NaN counts as the extreme, the first NaN wins]
              cumsum(a, dim, reverse=False)   [reverse: sums from the end of dim]
              softmax(a, dim, log=False)      [numerically stable (max subtracted) softmax or
                                               log_softmax along dim; all -inf rows give NaN]
linear alg.   matmul(a, b)            [2-D]
              addmm(c, a, b)          [a @ b + c, c broadcast to the product; 2-D]
              bmm(a, b)               [(B, n, m) @ (B, m, p); any strides, 0 batch strides too]
              (factorizations and solvers -- inv, det, slogdet, solve, cholesky, qr, eigh, svd,
              solve_triangular, matrix_exp, lu_factor, geqrf -- are not per-backend: they are host
              kernels, kernels/numpy/decompositions.py, which autograd/ops/decompositions.py
              runs on a host copy of a CUDA array, synchronizing with the current stream; the
              FFTs of kernels/numpy/fft.py are host kernels too, run so by autograd/ops/fft.py)
indexing      nonzero(a) -> int64 (count, a.ndim), row-major order
              index(a, indices): a[indices] with NumPy's advanced-indexing rules; indices is a
                  tuple over a's leading dims of int64 arrays (broadcast together) or None (the
                  whole dim); the indexed dims' result goes where the first index array is if
                  the arrays are adjacent, else first
              index_put_(a, indices, values, accumulate): a[indices] = values (broadcast), or
                  += with duplicate indices all summed when accumulate
              gather(a, dim, index): out[..i..] = a[..index[..i..]..] along dim; index has a's
                  ndim and is no larger than a in the other dims
              scatter_(a, dim, index, src|s, accumulate): a[..index[..i..]..] = src[..i..]
                  along dim (src no smaller than index), or += with duplicates summed
              scatter_reduce_(a, dim, index, src, reduce, include_self): as scatter_, each
                  place folding every value aimed at it with reduce (sum prod mean amax amin;
                  NaN propagates; mean of integers rounds toward -inf); a place's own value
                  joins the fold only when include_self; places no index aims at are kept
              index_guard(a, size, lower, ignore_index, extremes) -> int64 array: the
                  user's index array a (int64) made safe for a dim of size > 0: negatives
                  wrapped when lower < 0, then clamped into [0, size); entries equal to
                  ignore_index (an int or None) kept; extremes, None or two int64 entries of
                  a device buffer, gets min/max of the entries other than ignore_index
                  folded in (Note [index check modes] in autograd/checks.py)
sorting       sort(a, dim, descending) -> (values, int64 indices): stable (ties keep their
                  order in both directions), NaN the largest value
nn (fused)    gelu(x, approximate), gelu_backward(g, x, approximate)   [approximate 'none'|'tanh']
              gelu(x, approximate, with_grad=True) -> (y, derivative | None)  [GELU'(x) from
                  the forward's passes where recomputing it in the backward costs more than
                  keeping it (the CPU's many NumPy passes); None where it does not (the GPU's
                  one fused pass)]; gelu_backward(g, x, approximate, derivative) -> g * it
              activation(op, x, *params), activation_backward(op, g, x, *params)   [one
                  pass each way; op: silu mish softplus [params: beta, threshold]
                  log_sigmoid hardswish hardsigmoid hardtanh [params: min_val, max_val];
                  PyTorch's formulas and special values (kernels/triton/activations.py);
                  g broadcast to x's shape; floats only]
              glu(x, dim) -> a * sigmoid(b)   [a, b: x's halves along dim (non-negative,
                  its size even)]; glu_backward(g, x, dim) -> dx (both halves' gradients)
              layer_norm(x, weight, bias, eps) -> (y, mean, rstd)
                  [x 2-D (M, N), rows normalised; weight/bias (N,) or None; mean/rstd (M,)
                  float32 for half/float32 inputs]
              layer_norm_backward(g, x, weight, mean, rstd) -> (dx, dweight|None, dbias|None)
              batch_norm(x, weight, bias, eps) -> (y, mean, var)
                  [x (N, C, *), each channel normalised over every other dim with its
                  biased variance; weight/bias (C,) or None; mean/var (C,) float32 for
                  half/float32 inputs]
              batch_norm_backward(g, x, weight, mean, var, eps)
                  -> (dx, dweight|None, dbias|None)
              cross_entropy(logits, target, ignore_index, label_smoothing) -> (loss, lse)
                  [logits (N, C), target (N,) int64; loss (N,) per row, 0 on ignored rows]
              cross_entropy_backward(g, logits, target, lse, ignore_index, label_smoothing)
                  -> dlogits   [g (N,): the gradient of each row's loss]
              mean_over_targets(loss, target, ignore_index) -> (mean, count)
                  [loss (N,), target (N,) int64: the mean of loss over the rows whose target
                  is not ignore_index (0 / 0 = NaN without any) and their count, both 0-d
                  in loss's dtype: the 'mean' reduction of cross-entropy]
              embedding(weight, indices) -> weight[indices]
              embedding_backward(g, indices, num_weights, padding_idx) -> dweight
              conv2d(x, weight, bias, stride, padding, dilation, groups) -> y
                  [x (N, C, H, W), weight (O, C/groups, KH, KW), bias (O,) or None, one
                  dtype; stride, dilation (sh, sw); padding (ph, pw), each an int (both
                  sides) or a (low, high) pair; y (N, O, OH, OW); zero padding]
              conv2d_backward(g, x, weight, stride, padding, dilation, groups, needs)
                  -> (dx, dweight, dbias)   [needs: three bools; None where not needed]
              attention(q, k, v, scale, causal) -> (out, lse)   [q (B, H, L, D), k and v
                  (B, H, S, D), one dtype; softmax(q k^T * scale) v, causal: query i sees
                  keys j <= i; lse (B, H, L) float32 (float64 for float64); S == 0 gives
                  zeros and lse -inf; the Triton backend takes D <= 128]
              attention_backward(g, q, k, v, out, lse, scale, causal) -> (dq, dk, dv)
recurrent     lstm_cell(x, rec, b, c) -> (h, c', saved)   [one LSTM step's pointwise part:
                  gates x + (rec + b) in the order input, forget, cell, output; x and rec
                  (N, 4H), any strides (rec: h_prev W_hh^T, the caller's GEMM); b (4H,) or
                  None; c, h, c' (N, H); c' = f c + i g, h = o tanh(c'); saved: the
                  activations the backward reads, a backend-defined tuple of arrays]
              lstm_cell_backward(dh, dc, saved, c) -> (dgates, dc_prev)
                  [dh, dc: the gradients of h and c' or None (zeros); c: the step's input
                  cell; dgates (N, 4H): the pre-activations' gradient (of x, rec and b)]
              gru_cell(x, rec, b, h) -> (h', saved)   [x, rec (N, 3H): the input and
                  recurrent terms of reset, update, new; b (3H,) or None, added to rec; n =
                  tanh(x_n + r (rec + b)_n), h' = (1 - z) n + z h]
              gru_cell_backward(dh, saved, h) -> (dx, drec, dh_direct)   [dx, drec (N, 3H):
                  the gradients of x and of rec + b; dh_direct = dh z, h's other than
                  through rec]
optimizers    sgd_step(param, grad, momentum_buffer, lr, momentum, dampening, weight_decay,
                  nesterov, maximize, first_step)
              adam_step(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step, lr, beta1,
                  beta2, eps, weight_decay, amsgrad, maximize, decoupled)
                  [one fused update per parameter, in place, returning None; buffers are None
                  where unused; formulas in kernels/numpy/optim.py]
complex       conj(a) -> new array, a's dtype   [the complex conjugate; a copy for real a]
              real(a), imag(a) -> new real arrays [of complex64 -> float32, complex128 ->
                                                   float64; imag of a real array is zeros]
                  (both backends; the Triton one stores complex as interleaved float pairs)
random        rand(shape, dtype, device, gen)          [uniform in [0, 1), float dtype]
              randn(shape, dtype, device, gen)         [standard normal, float dtype]
              randint(low, high, shape, dtype, device, gen)   [uniform in [low, high)]
              dropout_mask(shape, p, dtype, device, gen) -> bool   [kept with probability 1-p]
                  gen is the stream: on the CPU a CPUStream (PyTorch's mt19937 stream and its
                  transforms, kernels/numpy/random.py, whose uniform/normal/integers also
                  take bounds, mean and std); on CUDA a Philox position (seed, offset, epoch):
                  a pure function of it, nothing drawn on the host, epoch None for an eager
                  draw or an int64[1] device array a graph-captured draw reads and bumps
                  (Note [philox positions] in kernels/triton/random.py). The caller advances
                  the offset by one per call. The two devices' numbers differ, as PyTorch's.

The host boundary (module-level here, not per backend): a CPU tensor holds the CPU backend's
array, a NumPy array except for bfloat16, which NumPy lacks and the CPU backend stores as a
float32-backed ``HostBFloat16`` array on the bfloat16 grid (kernels/numpy/bf16.py). The layers
above meet that representation only through these names, never through a backend module:

host          HostBFloat16                 the type of a CPU bfloat16 array
              host_array(values, dtype)    a CPU array of ``dtype`` from NumPy ``values``
                                           (bfloat16: rounded to nearest even)
              host_values(a)               a CPU array's values as a plain NumPy array (a view;
                                           bfloat16: its float32 values)
              data_ptr(a)                  the address of any backend array's first element
              (bit patterns, the device and file form of bfloat16: runtime.dtype.bfloat16_bits
              and bfloat16_values)
"""

from __future__ import annotations

import importlib

import numpy as np

from ..runtime import dtype as _dtypes
from .numpy import bf16 as _bf16

__all__ = ["backend", "CONTRACT", "HostBFloat16", "host_array", "host_values", "data_ptr"]

CONTRACT = (
    "empty", "full", "astype", "contiguous", "copy_", "cat",
    "view", "permute", "expand", "getitem", "as_strided", "strides", "storage_offset",
    "add", "sub", "mul", "div", "pow", "maximum", "minimum",
    "gt", "ge", "lt", "le", "eq", "ne",
    "neg", "exp", "log", "relu", "sqrt", "where",
    "sum", "matmul", "addmm",
    # the Tensors op set
    "arange", "unary", "binary", "reduce", "argreduce", "cumsum", "softmax", "bmm",
    "nonzero", "index", "index_put_", "gather", "scatter_", "scatter_reduce_", "sort",
    "index_guard",
    # fused nn ops and optimizer updates
    "gelu", "gelu_backward", "activation", "activation_backward", "glu", "glu_backward",
    "layer_norm", "layer_norm_backward", "batch_norm",
    "batch_norm_backward", "cross_entropy",
    "cross_entropy_backward", "mean_over_targets", "embedding", "embedding_backward",
    "sgd_step", "adam_step",
    "conv2d", "conv2d_backward",
    "attention", "attention_backward",
    # recurrent cells
    "lstm_cell", "lstm_cell_backward", "gru_cell", "gru_cell_backward",
    # random numbers
    "rand", "randn", "randint", "dropout_mask",
    # complex numbers
    "conj", "real", "imag", "view_as_real", "view_as_complex",
)

_MODULES = {"cpu": "tritongrad.kernels.numpy", "cuda": "tritongrad.kernels.triton",
            "meta": "tritongrad.kernels.meta"}  # (Note [The meta device] in meta.py)
_loaded: dict = {}


def backend(device):
    """The kernel module for ``device`` (imported on first use: Triton only loads for cuda)."""
    try:
        return _loaded[device.type]
    except KeyError:
        mod = _loaded[device.type] = importlib.import_module(_MODULES[device.type])
        return mod


_multi: dict = {}


def multi_tensor(device):
    """The multi-tensor ("foreach") kernels beside ``device``'s backend, or None: the Triton
    backend's ``foreach`` module (a few launches for a whole list of arrays: gradient
    clipping, Adam); the NumPy backend has none (its per-array calls launch nothing)."""
    k = backend(device)
    mod = _multi.get(k, False)
    if mod is False:
        name = k.__name__ + ".foreach"
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name != name:
                raise
            mod = None
        _multi[k] = mod
    return mod


HostBFloat16 = _bf16.BF16Array


def host_array(values, dtype) -> np.ndarray:
    """A C-contiguous CPU array of ``dtype`` holding NumPy ``values`` (0-d stays 0-d; a new
    array for bfloat16, else ``values`` itself when it already is one)."""
    if dtype is _dtypes.bfloat16:
        return _bf16.rounded(values)
    if type(values) is HostBFloat16:
        values = values.view(np.ndarray)
    # np.asarray, not np.require: the same array, and a float overflowing its dtype (1e38 in
    # float16) becomes inf without NumPy's warning leaking (Note [Floating-point warnings])
    return np.asarray(values, dtype=dtype.np, order="C")


def host_values(a) -> np.ndarray:
    """The values of CPU array ``a`` as a plain NumPy array (bfloat16 as float32, no copy)."""
    return _bf16.to_float32(a) if type(a) is HostBFloat16 else a


def data_ptr(a) -> int:
    """The address of backend array ``a``'s first element (host memory for a NumPy array,
    device memory for a DeviceArray)."""
    if isinstance(a, np.ndarray):
        return a.__array_interface__["data"][0]
    return a.data_ptr()
