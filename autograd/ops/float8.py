"""float8: the CPU arrays' dtype registration and ``torch._scaled_mm``.

The float8 dtypes themselves live in runtime/dtype.py, their conversions in
``runtime.dtype.float8_bits`` (PyTorch's, bit for bit), and docs/runtime.md ("float8") says
what works on them. ``_scaled_mm`` is the one float8 compute primitive of PyTorch's training
recipes: a matrix product of float8 operands with float32 scales, computed by
kernels/numpy/float8.py on the CPU and kernels/triton/scaled_mm.py on CUDA (chosen by
``_IMPLS``, the one place). It has no derivative, as in PyTorch.
"""

from __future__ import annotations

import importlib

import numpy as np

from ...runtime import dtype as dtypes
from .. import tensor as _tensor
from ..checks import kernel_not_implemented, scalar_type_name
from ..observe import observed_op
from ..state import state
from ..tensor import Tensor, make
from .sampling import _not_implemented

__all__ = ["_scaled_mm", "SUPPORTED_OPS", "check_float8_op"]

# A CPU float8 array is an array of ml_dtypes' dtype (make() maps NumPy dtypes to ours here)
_tensor._NP_TO_DTYPE.update({d.np: d for d in dtypes.FLOAT8_TYPES if d.np.type is not np.void})

# Note [float8 ops]: PyTorch 2.13 computes little on float8 tensors. Beyond creation
# (empty, zeros, ones, full, *_like), conversions (to, copy_, clone, type casts), views,
# reshapes, cat/stack, indexing (getitem, setitem, index_put_, index_select, masked_select),
# roll, repeat and expand, its CPU kernels take exactly these ops (found by running each):
# the rest raise NotImplementedError '"<kernel>" not implemented for 'Float8_e4m3fn''
# (add, sub, div, neg, comparisons but eq/ne, sum, max, exp and the other math functions,
# sign, flip, clamp, relu, sort, nonzero, gather, scatter, bmm, argmax, tril, isinf, ...).
# The CPU arrays (ml_dtypes') would compute them all; check_float8_op is the guard the op
# families call so that they raise instead, as PyTorch.
SUPPORTED_OPS = frozenset({
    "mul",  # float8 x float8 only: with a Python scalar "mul_cpu_reduced_float" raises
    "abs", "eq", "ne", "where", "isnan", "any", "all", "bool",
    "matmul", "mm", "addmm", "linear",  # float32 accumulation, one rounding to float8
})


def check_float8_op(op: str, *operands) -> None:
    """Raises PyTorch's NotImplementedError if a float8 tensor among ``operands`` reaches
    ``op`` (a CPU kernel PyTorch 2.13 does not have for float8; Note [float8 ops])."""
    if op in SUPPORTED_OPS:
        return
    for t in operands:
        d = getattr(t, "dtype", None)
        if d in _FLOAT8:
            raise kernel_not_implemented(f"{op}_{t.device.type}", d)


_FLOAT8 = frozenset(dtypes.FLOAT8_TYPES)

# the backend of _scaled_mm per device type (imported on first use: Triton loads for cuda only)
_IMPLS = {"cpu": "tritongrad.kernels.numpy.float8", "cuda": "tritongrad.kernels.triton.scaled_mm"}


def _impl(device):
    return importlib.import_module(_IMPLS[device.type])


def _scaling_error(a: Tensor, b: Tensor, scale_a: Tensor, scale_b: Tensor) -> ValueError:
    def facts(t: Tensor) -> str:
        return (f"dtype {scalar_type_name(t.dtype)}, size {list(t.shape)}, "
                f"stride {list(t.stride())}")
    M, N = a.shape[0], b.shape[1]
    return ValueError(
        "Invalid scaling configuration.\n"
        "- For TensorWise scaling, a and b should be float8, scales should be float and "
        "singletons.\n"
        f"- For RowWise scaling, a and b should be float8, scales should be float, scale_a "
        f"should be ({M}, 1) and scale_b should be (1, {N}), and both should be contiguous.\n"
        f"Got mat_a {facts(a)}; scale_a {facts(scale_a)}; mat_b {facts(b)}; "
        f"scale_b {facts(scale_b)}")


@observed_op("aten::_scaled_mm")
def _scaled_mm(input: Tensor, mat2: Tensor, scale_a: Tensor, scale_b: Tensor,  # noqa: A002
               bias: Tensor | None = None, scale_result: Tensor | None = None,
               out_dtype=None, use_fast_accum: bool = False) -> Tensor:
    r"""Matrix product of float8 matrices with float32 scales, as ``torch._scaled_mm``:

    .. math:: \text{out} = \text{convert}((\text{input} @ \text{mat2}) \cdot \text{scale\_a}
              \cdot \text{scale\_b} + \text{bias})

    computed in float32 (on CUDA on sm_90's float8 tensor cores, float32 accumulation) and
    converted once to ``out_dtype``.

    Args:
        input: (M, K), a float8 dtype (on CUDA ``float8_e4m3fn`` or ``float8_e5m2``; PyTorch's
            CUDA kernel wants it row-major, any strides are taken here).
        mat2: (K, N), a float8 dtype (PyTorch's CUDA kernel wants it column-major, e.g.
            ``w.t()`` of a row-major (N, K) weight; any strides are taken here).
        scale_a, scale_b: float32. Tensorwise: one element each. Rowwise: ``scale_a`` (M, 1)
            and ``scale_b`` (1, N), contiguous: row m of the product times ``scale_a[m]``,
            column n times ``scale_b[0, n]``.
        bias: optional (N,) row added to every row of the scaled product (float32, float16
            or bfloat16).
        scale_result: optional one-element float32 tensor the result is divided by before
            the conversion when ``out_dtype`` is a float8 type (PyTorch's CPU kernel ignores
            it for other output dtypes, and so does this one).
        out_dtype: the result's dtype (default: ``input``'s).
        use_fast_accum: CUDA's fast float8 accumulation; accepted for PyTorch's signature:
            the Triton kernel always adds each tensor-core partial sum into float32 (the
            ``False`` variant; Note [float8 accumulation] in kernels/triton/scaled_mm.py).

    Returns:
        A new (M, N) tensor of ``out_dtype`` on ``input``'s device, with no autograd history
        (``_scaled_mm`` has no derivative: a backward through it raises).

    Raises:
        RuntimeError: the operands are not matrices, their shapes do not multiply, the bias
            is not (N,), or the devices differ.
        ValueError: the scales or dtypes are no valid scaling configuration.
        NotImplementedError: CUDA with float8 formats or output dtypes its tensor cores do
            not take (the fnuz and e8m0 types).

    Example:
        >>> a = tg.tensor([[1.0, 2.0], [3.0, 4.0]]).to(tg.float8_e4m3fn)
        >>> b = tg.tensor([[1.0, 0.0], [0.0, 1.0]]).to(tg.float8_e4m3fn).t()
        >>> one = tg.tensor(1.0)
        >>> tg._scaled_mm(a, b, one, tg.tensor(0.5), out_dtype=tg.float32).tolist()
        [[0.5, 1.0], [1.5, 2.0]]
    """
    for t, name in ((input, "input"), (mat2, "mat2"), (scale_a, "scale_a"),
                    (scale_b, "scale_b")):
        if not isinstance(t, Tensor):
            raise TypeError(f"_scaled_mm(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
    if input.dim() != 2:
        raise RuntimeError("mat1 must be a matrix")
    if mat2.dim() != 2:
        raise RuntimeError("mat2 must be a matrix")
    (M, K), (K2, N) = input.shape, mat2.shape
    if K != K2:
        raise RuntimeError(f"mat_a and mat_b shapes cannot be multiplied ({M}x{K} and "
                           f"{K2}x{N})")
    device = input.device
    for t in (mat2, scale_a, scale_b, bias, scale_result):
        if t is not None and t.device != device:
            raise RuntimeError(f"_scaled_mm: expected all tensors on the same device, got "
                               f"{device} and {t.device}")
    fp8 = dtypes.FLOAT8_TYPES
    tensorwise = scale_a.numel() == 1 and scale_b.numel() == 1
    rowwise = (tuple(scale_a.shape) == (M, 1) and tuple(scale_b.shape) == (1, N)
               and scale_a.is_contiguous() and scale_b.is_contiguous())
    if (input.dtype not in fp8 or mat2.dtype not in fp8 or scale_a.dtype is not dtypes.float32
            or scale_b.dtype is not dtypes.float32 or not (tensorwise or rowwise)):
        raise _scaling_error(input, mat2, scale_a, scale_b)
    if bias is not None:
        if not isinstance(bias, Tensor):
            raise TypeError(f"_scaled_mm(): argument 'bias' must be Tensor, not "
                            f"{type(bias).__name__}")
        if bias.numel() != N or bias.dim() != 1:
            raise RuntimeError(f"Bias must be size {N} but got {bias.numel()}")
        if bias.dtype not in (dtypes.float32, dtypes.float16, dtypes.bfloat16):
            raise RuntimeError(f"_scaled_mm: bias must be float32, float16 or bfloat16, got "
                               f"{bias.dtype}")
    if scale_result is not None and (scale_result.numel() != 1
                                     or scale_result.dtype is not dtypes.float32):
        raise ValueError(f"_scaled_mm: scale_result must be a one-element float32 tensor, got "
                         f"{scale_result.dtype} of size {list(scale_result.shape)}")
    out_dtype = input.dtype if out_dtype is None else out_dtype
    if not isinstance(out_dtype, dtypes.dtype) or out_dtype.is_complex:
        raise TypeError(f"_scaled_mm: out_dtype must be a real dtype, got {out_dtype}")
    if device.type == "cuda":
        from ...kernels.triton.scaled_mm import INPUT_DTYPES, OUTPUT_DTYPES
        for dt, what in ((input.dtype, "input"), (mat2.dtype, "mat2"), (out_dtype, "out_dtype")):
            allowed = OUTPUT_DTYPES if what == "out_dtype" else INPUT_DTYPES
            if dt not in allowed:
                raise NotImplementedError(
                    f"_scaled_mm on cuda: {what} {dt} is not supported (supported: "
                    f"{', '.join(str(d) for d in allowed)})")
    data = lambda t: None if t is None else t.detach().contiguous()._data  # noqa: E731
    out = make(_impl(device).scaled_mm(input._data, mat2._data, data(scale_a), data(scale_b),
                                       None if bias is None else bias._data,
                                       data(scale_result), out_dtype), out_dtype)
    if state.grad_enabled and any(t is not None and t.requires_grad
                                  for t in (input, mat2, scale_a, scale_b, bias)):
        _not_implemented(out, tuple(t for t in (input, mat2, scale_a, scale_b, bias)
                                    if t is not None), "_scaled_mm")
    return out
