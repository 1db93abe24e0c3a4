"""``tritongrad.nn.functional``: the stateless forms of the layers and losses.

GELU, layer norm, cross-entropy and embedding run as fused primitives (autograd/ops/nn.py:
one kernel each way); the rest are compositions of Tensor ops, differentiable to any order.
"""

from __future__ import annotations

import functools
import math
import warnings

from ..autograd import checks
from ..autograd import grad_mode as _grad_mode
from ..autograd.autocast import autocast_op as _autocast
from ..autograd.autocast import suspended as _suspended
from ..autograd.observe import observed_op as _observed_op
from ..autograd.dispatch import Primitive as _Primitive
from ..autograd.dispatch import apply as _apply
from ..autograd.dispatch import apply_inplace as _apply_inplace
from ..autograd.dispatch import elementwise_jvp as _elementwise_jvp
from ..autograd.ops import activations as _act
from ..autograd.ops import nn as _nn
from ..autograd.ops.composite import conj_rule as _conj_rule
from ..autograd.ops.composite import float_arg as _float_arg
from ..autograd.ops.composite import OPS as _COMPOSITE_ROWS
from ..autograd.ops.composite import hardshrink  # (a Tensor method too: an op row)
from ..autograd.ops.elementwise import broadcast_shapes as _broadcast_shapes
from ..autograd.ops.linalg import addmm_node as _addmm_node
from ..autograd.ops.views import ViewBackward0 as _ViewBackward0
from ..autograd.ops.views import _view_apply
from ..autograd.ops.pointwise import sigmoid as _sigmoid
from ..autograd.ops.pointwise import tanh as _tanh
from ..autograd.ops.softmax import implicit_dim
from ..autograd.ops.softmax import log_softmax as _log_softmax
from ..autograd.ops.softmax import softmax as _softmax
from ..autograd.ops.softmax import softmin as _softmin
from ..autograd.tensor import Tensor, wrap_dim
from ..runtime.dtype import result_type as _result_type

__all__ = ["adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
           "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d", "affine_grid",
           "alpha_dropout", "avg_pool1d", "avg_pool2d", "avg_pool3d", "batch_norm", "bilinear", "binary_cross_entropy", "binary_cross_entropy_with_logits",
           "celu", "conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d",
           "conv_transpose2d",
           "conv_transpose3d", "cosine_embedding_loss", "cosine_similarity", "cross_entropy", "ctc_loss", "dropout", "dropout1d",
           "dropout2d", "dropout3d", "elu", "embedding", "embedding_bag", "fold",
           "gaussian_nll_loss", "gelu", "glu", "grid_sample", "group_norm", "gumbel_softmax",
           "hardshrink", "hardsigmoid", "hardswish", "hardtanh", "hinge_embedding_loss",
           "huber_loss", "instance_norm", "interpolate", "kl_div", "l1_loss", "layer_norm",
           "leaky_relu", "linear", "local_response_norm", "log_softmax", "logsigmoid",
           "margin_ranking_loss", "max_pool1d", "max_pool2d", "max_pool3d", "mish", "mse_loss",
           "multi_head_attention_forward", "multi_margin_loss", "multilabel_margin_loss",
           "multilabel_soft_margin_loss",
           "nll_loss", "normalize", "one_hot", "pad", "pairwise_distance", "pixel_shuffle",
           "pixel_unshuffle", "poisson_nll_loss", "prelu", "relu", "relu6", "rms_norm",
           "scaled_dot_product_attention", "selu", "sigmoid", "silu", "smooth_l1_loss",
           "soft_margin_loss", "softmax", "softmin", "softplus", "softshrink", "softsign", "tanh",
           "tanhshrink", "threshold", "threshold_", "triplet_margin_loss",
           "triplet_margin_with_distance_loss", "unfold"]

_REDUCTIONS = ("none", "mean", "sum")

# (an op row, a Tensor method too: the row's function, with its autocast policy, so that
# F.prelu is tg.prelu)
prelu = next(row.impl for row in _COMPOSITE_ROWS if row.name == "prelu")


def _floating_only(input: Tensor, kernel: str) -> None:
    """PyTorch's NotImplementedError for an integer or bool ``input`` to an op whose kernel
    (``kernel``, suffixed with the device type as PyTorch's names are) is defined on
    floating (and complex) dtypes only: ``"silu_cpu" not implemented for 'Long'``."""
    dt = input.dtype
    if not (dt.is_floating_point or dt.is_complex):
        raise checks.kernel_not_implemented(f"{kernel}_{input.device.type}", dt)


def _cast_error(op: str, result: str, dt) -> RuntimeError:
    """PyTorch's refusal to write a ``result``-typed (float) result into an integer or bool
    operand (its composites compute in place into the operand's dtype), naming ``op``."""
    return RuntimeError(f"{op}: result type {result} can't be cast to the desired output "
                        f"type {checks.scalar_type_name(dt)}")


def _reduction(size_average, reduce, reduction: str) -> str:
    if size_average is not None or reduce is not None:  # PyTorch's legacy arguments
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "none" if not reduce else "mean" if size_average else "sum"
        warnings.warn("size_average and reduce args will be deprecated, please use "
                      f"reduction='{reduction}' instead.", stacklevel=3)
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


# -- activations ---------------------------------------------------------------------------------

def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """max(x, 0), elementwise."""
    checks.tensor_arg(input, "relu_" if inplace else "relu")
    return input.relu_() if inplace else input.relu()


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """GELU(x) = x * Phi(x), Phi the standard normal CDF; ``approximate='tanh'`` uses
    0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). One fused kernel each way."""
    return _nn.gelu(input, approximate)


def tanh(input: Tensor) -> Tensor:
    return _tanh(input)


def sigmoid(input: Tensor) -> Tensor:
    return _sigmoid(input)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """x * sigmoid(x) (also called swish); ``inplace=True`` writes it into ``input`` and
    returns ``input``."""
    if inplace:
        return _inplace_node(input, _act.SiluBackward0, "silu", complex_ok=True)
    return _act.silu(input)


def _inplace_node(input: Tensor, node: type, op: str, *params, complex_ok: bool = False):
    """``op``'s activation primitive ``node`` run in place on ``input`` (floating point, or
    complex with ``complex_ok``), recorded as that node, as PyTorch records its in-place
    activations (the leaf and view errors, a view's CopySlices, are apply_inplace's)."""
    _act._checked(input, f"{op}_", op, complex_ok)
    return _apply_inplace(node, input, (), *params)


def _inplace(input: Tensor, fn, *args) -> Tensor:
    """``fn(input, *args)`` written into ``input``, which is returned. Computed from a copy
    when recorded: the ops save their operand, which the write would otherwise modify before
    backward reads it; the write is recorded (copy_), so the gradient flows through ``fn`` as
    in PyTorch."""
    checks.tensor_arg(input, f"{fn.__name__}_")
    return input.copy_(fn(input.clone() if input.requires_grad else input, *args))


def threshold(input: Tensor, threshold: float, value: float,  # noqa: A002
              inplace: bool = False) -> Tensor:
    """``input`` where it is greater than ``threshold``, else ``value``; the gradient passes
    where ``input > threshold`` (its backward, ``ThresholdBackwardBackward0``, is itself
    differentiable)."""
    return _nn.threshold(input, threshold, value, inplace)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:  # noqa: A002
    """In-place ``threshold``."""
    return _nn.threshold(input, threshold, value, True)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """LeakyReLU(x) = max(0, x) + negative_slope * min(0, x), elementwise (the gradient at 0
    is ``negative_slope``, as PyTorch's): one ``LeakyReluBackward0`` node (in place
    ``LeakyReluBackward1``)."""
    return _act.leaky_relu(input, negative_slope, inplace)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """ELU(x) = x if x > 0 else alpha * (exp(x) - 1), elementwise."""
    return _act.elu(input, alpha, inplace=inplace)


@_autocast("float32 on cuda")
def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """Softplus(x) = 1/beta * log(1 + exp(beta * x)), reverting to the linear function x
    where beta * x > threshold (for numerical stability)."""
    return _act.softplus(input, beta, threshold)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """Mish(x) = x * tanh(softplus(x)), elementwise."""
    if inplace:
        return _inplace_node(input, _act.MishBackward0, "mish")
    return _act.mish(input)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    """HardTanh(x) = min(max(x, min_val), max_val); the gradient is 1 strictly inside
    (min_val, max_val) and 0 elsewhere, as PyTorch's."""
    if min_val > max_val:
        raise ValueError("hardtanh: min_val cannot be greater than max_val")
    return _act.hardtanh(input, min_val, max_val, inplace)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """ReLU6(x) = min(max(0, x), 6)."""
    checks.tensor_arg(input, "relu6")
    return hardtanh(input, 0.0, 6.0, inplace)


@_autocast("float32 on cuda")
def log_softmax(input: Tensor, dim=None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """log(softmax(x)) along ``dim``, computed stably."""
    return _log_softmax(input, implicit_dim(input, dim, "log_softmax"), dtype)


@_autocast("float32 on cuda")
def softmax(input: Tensor, dim=None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """exp(x) / sum(exp(x)) along ``dim``, computed stably."""
    return _softmax(input, implicit_dim(input, dim, "softmax"), dtype)


# SELU's constants (Klambauer et al. 2017), as PyTorch's
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """SELU(x) = scale * (max(0, x) + min(0, alpha * (exp(x) - 1))), with PyTorch's alpha and
    scale."""
    return _act.elu(input, _SELU_ALPHA, _SELU_SCALE, 1.0, inplace, "selu")


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """CELU(x) = max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    checks.tensor_arg(input, "celu_" if inplace else "celu")
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return _act.elu(input, alpha, 1.0, 1.0 / alpha, inplace, "celu")


def softsign(input: Tensor) -> Tensor:
    """Softsign(x) = x / (1 + |x|)."""
    checks.tensor_arg(input, "softsign")
    return input / (input.abs() + 1)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """Hardswish(x) = 0 for x <= -3, x for x >= 3, x (x + 3) / 6 between (at -3 and 3 the
    gradient is the outer piece's, 0 and 1, as PyTorch's)."""
    if inplace:
        return _inplace_node(input, _act.HardswishBackward0, "hardswish")
    return _act.hardswish(input)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """Hardsigmoid(x) = 0 for x <= -3, 1 for x >= 3, x / 6 + 1/2 between; the gradient is
    1/6 strictly inside (-3, 3), 0 elsewhere."""
    if inplace:
        return _inplace_node(input, _act.HardsigmoidBackward0, "hardsigmoid")
    return _act.hardsigmoid(input)


def logsigmoid(input: Tensor) -> Tensor:
    """log(sigmoid(x)) = -softplus(-x), computed without overflow."""
    return _act.logsigmoid(input)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """The gated linear unit: ``a * sigmoid(b)``, ``a`` and ``b`` the two halves of ``input``
    along ``dim`` (one ``GluBackward0`` node saving ``input``)."""
    return _act.glu(input, dim)


def tanhshrink(input: Tensor) -> Tensor:
    """Tanhshrink(x) = x - tanh(x)."""
    checks.tensor_arg(input, "tanhshrink")
    return input - _tanh(input)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x - lambd where x > lambd, x + lambd where x < -lambd, 0 between (one
    ``SoftshrinkBackward0`` node)."""
    return _act.softshrink(input, lambd)


def softmin(input: Tensor, dim=None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """softmax(-x) along ``dim``."""
    return _softmin(input, dim, dtype)


# -- distances -----------------------------------------------------------------------------------

def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """The cosine of the angle between ``x1`` and ``x2`` along ``dim`` (broadcast together):
    ``sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps))``, each norm clamped to ``eps``."""
    from ..autograd.ops.statistics import broadcast_tensors
    from ..runtime.dtype import result_type
    checks.tensor_arg(x1, "cosine_similarity", "x1")
    checks.tensor_arg(x2, "cosine_similarity", "x2")
    common = result_type(x1, x2)
    if not common.is_floating_point:  # (integer operands are cast to a floating common dtype)
        raise RuntimeError(f"cosine_similarity: expected common dtype to be floating point, yet "
                           f"common dtype is {checks.scalar_type_name(common)}")
    x1, x2 = broadcast_tensors(x1.to(common), x2.to(common))
    n1 = x1.norm(dim=dim, keepdim=True).clamp(min=eps)
    n2 = x2.norm(dim=dim, keepdim=True).clamp(min=eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """The p-norm of ``x1 - x2 + eps`` along the last dimension (broadcast together)."""
    checks.tensor_arg(x1, "pairwise_distance", "x1")
    checks.tensor_arg(x2, "pairwise_distance", "x2")
    dim = -1 if max(x1.ndim, x2.ndim) > 0 else None
    return (x1 - x2 + eps).norm(p, dim=dim, keepdim=keepdim)


# -- layers --------------------------------------------------------------------------------------

def _c_type_name(dt) -> str:
    """The C++ type PyTorch's dtype errors print ("double", "float", "long int", ...)."""
    return {"float64": "double", "float32": "float", "float16": "c10::Half",
            "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int",
            "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
            "bool": "bool"}.get(dt.name, dt.name)


@_observed_op("aten::linear", seq_from_counter=True)  # (outside autocast: as PyTorch's event)
@_autocast("lower")
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """x @ weight^T + bias, for x of shape (*, in_features). With a bias and 2-D input it is
    one ``addmm`` (an ``AddmmBackward0`` node, as PyTorch records), with a contiguous input of
    more dims that addmm between two views, else a matmul and an add."""
    if not (isinstance(input, Tensor) and isinstance(weight, Tensor)):
        checks.tensor_arg(input, "linear", "input")
        checks.tensor_arg(weight, "linear", "weight")
    if (bias is not None and input._dtype is weight._dtype and isinstance(bias, Tensor)
            and len(weight._data.shape) == 2):
        # (PyTorch's addmm cases, checked as addmm's: 2-D input, or a contiguous one of more
        # dims read as rows (_flatten_nd); the checks below would raise for no other input)
        shape = input._data.shape
        if len(shape) == 2 and shape[1] == weight._data.shape[1]:
            return _addmm_node(bias, input, weight.t())
        if len(shape) > 2 and shape[-1] == weight._data.shape[1] and input.is_contiguous() \
                and (len(shape) == 3 or len(bias._data.shape) == 1):
            return _flatten_nd(input, weight, bias)
    if input.ndim == 0 or weight.ndim == 0:  # (shape and dtype tests: no data read)
        raise RuntimeError(f"both arguments to linear need to be at least 1D, but they are "
                           f"{input.ndim}D and {weight.ndim}D")
    if weight.ndim > 2:
        raise RuntimeError(f"linear: expected a 1-D or 2-D weight, got weight of size "
                           f"{list(weight.shape)}")
    if input.dtype is not weight.dtype:  # (PyTorch's words: addmm's with a bias, else mm's)
        if bias is not None:  # (addmm(bias, input, weight.t()) checks self against mat2 first)
            bias_first = isinstance(bias, Tensor) and bias.dtype is not weight.dtype
            name, dt = ("self", bias.dtype) if bias_first else ("mat1", input.dtype)
            raise RuntimeError(f"linear: {name} and mat2 must have the same dtype, but got "
                               f"{checks.scalar_type_name(dt)} and "
                               f"{checks.scalar_type_name(weight.dtype)}")
        raise RuntimeError(f"linear: expected m1 and m2 to have the same dtype, but got: "
                           f"{_c_type_name(input.dtype)} != {_c_type_name(weight.dtype)}")
    if bias is not None and weight.ndim == 1 and input.ndim == 2:
        raise RuntimeError("mat2 must be a matrix, got 1-D tensor")  # (PyTorch's addmm path)
    if weight.ndim == 2 and input.ndim and input.shape[-1] != weight.shape[1]:
        raise RuntimeError(f"linear: mat1 and mat2 shapes cannot be multiplied "
                           f"({math.prod(input.shape[:-1])}x{input.shape[-1]} and "
                           f"{weight.shape[1]}x{weight.shape[0]})")
    # (a bias with a 2-D weight took addmm above, where PyTorch's linear does)
    out = input.matmul(weight.t())
    return out + bias if bias is not None else out


def _flatten_nd(input: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    """PyTorch's _flatten_nd_linear: a contiguous (*, in) input viewed as rows (their count
    multiplied out, not -1, which a dimension of size 0 makes ambiguous), one addmm, the
    result viewed back: ViewBackward0, AddmmBackward0, ViewBackward0 as PyTorch records."""
    shape = input._data.shape
    rows = _view_apply(_ViewBackward0, input, (math.prod(shape[:-1]), shape[-1]))
    out = _addmm_node(bias, rows, weight.t())
    return _view_apply(_ViewBackward0, out, shape[:-1] + (weight._data.shape[0],))


@_autocast("float32 on cuda")
def layer_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalises over the trailing ``normalized_shape`` dims, then scales and shifts. One
    fused kernel each way."""
    return _nn.layer_norm(input, normalized_shape, weight, bias, eps)


def embedding(input: Tensor, weight: Tensor, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of ``weight`` picked by the integer tensor ``input``. With ``max_norm``, each
    picked row whose ``norm_type``-norm is above it is renormalised to ``max_norm`` in place
    first (``weight`` is modified); ``scale_grad_by_freq`` scales each row's gradient by the
    inverse of its frequency in ``input``."""
    checks.tensor_arg(input, "embedding", "indices")  # (two type tests: a list of indices was
    checks.tensor_arg(weight, "embedding", "weight")  # a dtype error, a list of rows worse)
    if sparse:  # (the weight's gradient is a sparse COO tensor: nn/_sparse_embedding.py)
        return _embedding_sparse(input, weight, padding_idx, max_norm, norm_type,
                                 scale_grad_by_freq)
    return _nn.embedding(input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq)


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None,
                  max_norm=None, norm_type: float = 2, scale_grad_by_freq: bool = False,
                  mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    """Sums, averages or takes the maximum of bags of embeddings, without the intermediate
    (N, D) rows: ``input`` 2-D (B, N) is B bags of N indices; 1-D it is cut into bags at
    ``offsets`` (the start of each bag; ``include_last_offset``: the last entry ends the last
    bag). ``max_norm`` first renormalises the used rows of ``weight`` in place (as
    ``embedding``); ``per_sample_weights`` (``mode='sum'`` only) scale each row;
    ``padding_idx`` rows are left out (and not counted by the mean). Empty bags give zeros.
    The top-level ``embedding_bag`` (nn/_embedding_bag.py) does the work."""
    from ._embedding_bag import MODES
    from ._embedding_bag import embedding_bag as _bags
    checks.tensor_arg(input, "embedding_bag", "input")
    checks.tensor_arg(weight, "embedding_bag", "weight")
    if weight.dtype.name == "int64" and input.is_floating_point():
        warnings.warn("Argument order of nn.functional.embedding_bag was changed. Usage "
                      "`embedding_bag(weight, input, ...)` is deprecated, and should now be "
                      "`embedding_bag(input, weight, ...)`.", stacklevel=2)
        weight, input = input, weight
    if per_sample_weights is not None and input.shape != per_sample_weights.shape:
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) "
                         f"is not None, then it must have the same shape as the input "
                         f"({input.shape})")
    if weight.ndim != 2:
        raise ValueError("embedding_bag: weight has to be a 2D Tensor, but got Tensor of "
                         f"dimension {weight.ndim}")
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("embedding_bag: if input is 2D, then offsets has to be None, as "
                             "input is treated is a mini-batch of fixed length sequences. "
                             f"However, found offsets of type {type(offsets)}")
        from ..autograd.ops.creation import arange
        offsets = arange(input.shape[0], dtype=input.dtype, device=input.device) * \
            input.shape[1]
        include_last_offset = False
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("embedding_bag: offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError("embedding_bag: offsets has to be a 1D Tensor")
    else:
        raise ValueError("embedding_bag: input has to be 1D or 2D Tensor, but got Tensor of "
                         f"dimension {input.ndim}")
    if mode not in MODES:
        raise ValueError("embedding_bag: mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("embedding_bag: max mode does not support scaling the gradient by the "
                         "frequency")
    if mode == "max" and sparse:
        raise ValueError("embedding_bag: max mode does not support sparse weights")
    if max_norm is not None:
        from ..autograd.grad_mode import no_grad
        with no_grad():
            _nn.embedding_renorm_(weight, input, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. "
                                  f"per_sample_weights is only supported for mode='sum' (got "
                                  f"mode='{mode}'). Please open a feature request on GitHub.")
    if sparse:
        from ._sparse_embedding import embedding_bag_sparse
        return embedding_bag_sparse(weight, input, offsets, MODES.index(mode),
                                    per_sample_weights, include_last_offset, padding_idx)
    return _bags(weight, input, offsets, scale_grad_by_freq, MODES.index(mode),
                 per_sample_weights, include_last_offset, padding_idx)[0]


def _embedding_sparse(input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq):
    """``embedding(..., sparse=True)``: the dense op's checks and ``max_norm`` renorm, then
    the lookup whose weight gradient is sparse (nn/_sparse_embedding.py)."""
    from ._sparse_embedding import embedding_sparse
    if not isinstance(input, Tensor) or input.dtype.is_floating_point:
        return _nn.embedding(input, weight)  # (raises the dense op's dtype error)
    if weight.ndim != 2:
        raise RuntimeError(f"embedding: 'weight' must be 2-D, got shape {list(weight.shape)}")
    checks.check_same_device(weight, input, "index", "embedding")
    n = weight.shape[0]
    if padding_idx is not None:
        if not -n <= padding_idx < n:
            raise AssertionError("embedding: Padding_idx must be within num_embeddings")
        padding_idx %= n
    input = checks.guard_index(input.long(), n, checks.index_out_of_range)
    if max_norm is not None:
        from ..autograd.grad_mode import no_grad
        with no_grad():
            _nn.embedding_renorm_(weight, input, max_norm, norm_type)
    return embedding_sparse(input, weight, padding_idx, scale_grad_by_freq)


def dropout(input: Tensor, p: float = 0.5, training: bool = True,
            inplace: bool = False) -> Tensor:
    """Zeroes each element with probability ``p`` and scales the rest by 1 / (1 - p) (in
    training; the identity otherwise)."""
    _check_p(p)
    checks.tensor_arg(input, "dropout")
    return _dropout_impl(input, p, training, inplace, "dropout")


def _check_float_result(input: Tensor, op: str) -> None:
    """A dropout's scaled result is a float: PyTorch refuses to write it into an integer or
    bool ``input``."""
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise _cast_error(op, "Float", input.dtype)


def _check_p(p: float) -> None:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


# SELU's negative saturation magnitude, scale * alpha: alpha dropout's value for a dropped unit
_ALPHA_DROPOUT = 1.7580993408473766


def _keep_mask(input: Tensor, p: float, shape: tuple) -> Tensor:
    """1 (kept, probability 1 - p) or 0 per element of ``shape``, in the input's dtype."""
    dev = input.device
    if dev.type == "cpu":
        # ATen's noise: Bernoulli(1 - p) drawn in the input's dtype (and, for elementwise
        # dropout, its layout: empty_like), so a seed gives PyTorch's numbers in every float
        # dtype (a float32 keep mask cast and two products differed in float16 and bfloat16)
        from ..autograd.ops.creation import empty_like
        noise = empty_like(input) if shape == tuple(input.shape) else input.new_empty(shape)
        return noise.bernoulli_(1.0 - p)
    # on CUDA the keep mask is drawn on the device (the default CUDA generator's Philox); its
    # uniforms are the default dtype's, as rand's
    from ..autograd.ops.creation import _stream
    from ..autograd.tensor import make
    from ..runtime.dtype import get_default_dtype
    keep = make(input._k.dropout_mask(shape, float(p), get_default_dtype(), dev,
                                      _stream(None, dev, "dropout")))
    return keep.to(input.dtype)


def _dropout_impl(input: Tensor, p: float, training: bool, inplace: bool, op: str,
                  feature: bool = False, alpha: bool = False) -> Tensor:
    """ATen's ``_dropout_impl``, which dropout, alpha dropout and their feature (per channel)
    forms share, in its order: the input itself when not training, for p = 0 or an empty
    input; ``input * 0`` (any dtype) for p = 1; else the keep mask (one draw per element, or
    per (dim 0, dim 1) index with ``feature``), scaled by 1 / (1 - p), or for ``alpha`` the
    affine correction ``a x keep + b`` that keeps SELU's zero mean and unit variance, dropped
    units at SELU's saturation. ``inplace`` multiplies (and adds) in place, so the nodes and
    the leaf's error are PyTorch's."""
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if p == 1.0:  # (a 0-d zero of the input's dtype: an integer or bool input keeps it)
        zero = input.new_zeros(())
        return input.mul_(zero) if inplace else input * zero
    shape = tuple(input.shape)
    if feature:
        if input.ndim < 2:
            raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
        shape = shape[:2] + (1,) * (input.ndim - 2)
    _check_float_result(input, op)  # (ATen's: from scaling the noise in place, after its draw)
    noise = _keep_mask(input, p, shape)
    if not alpha:
        noise = noise.div_(1.0 - p)
        return input.mul_(noise) if inplace else input * noise
    a = 1.0 / math.sqrt((_ALPHA_DROPOUT * _ALPHA_DROPOUT * p + 1) * (1 - p))
    b = (noise - 1) * (_ALPHA_DROPOUT * a) + _ALPHA_DROPOUT * a * p
    noise = noise.mul_(a)
    return (input.mul_(noise) if inplace else input * noise).add_(b)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                  inplace: bool = False) -> Tensor:
    """Dropout for SELU networks: dropped elements are set to SELU's negative saturation
    value, and the result is affinely corrected to keep the input's mean and variance
    (Klambauer et al., 2017): a (x keep + alpha' (1 - keep)) + b."""
    _check_p(p)
    checks.tensor_arg(input, "alpha_dropout")
    return _dropout_impl(input, p, training, inplace, "alpha_dropout", alpha=True)


def _feature_dropout(input: Tensor, p: float, training: bool, inplace: bool,
                     op: str = "feature_dropout") -> Tensor:
    """Zeroes whole channels: one keep draw per (dim 0, dim 1) index, broadcast over the
    trailing dims (ATen's ``feature_dropout``)."""
    _check_p(p)
    return _dropout_impl(input, p, training, inplace, op, feature=True)


def _unbatched_feature_dropout(input: Tensor, p: float, training: bool, inplace: bool,
                               op: str) -> Tensor:
    """``_feature_dropout`` of ``input`` as a batch of one, as PyTorch's Python wrappers do
    it: unsqueezed and squeezed back (in place with ``inplace``), so the result is a view.
    Unlike PyTorch's, nothing to drop (evaluation, p = 0, no elements) returns ``input``
    itself, as dropout and the batched forms do (PyTorch returns a view of it then too)."""
    if not training or p == 0.0 or input.numel() == 0:
        return input
    x = input.unsqueeze_(0) if inplace else input.unsqueeze(0)
    y = _dropout_impl(x, p, training, inplace, op, feature=True)
    return y.squeeze_(0) if inplace else y.squeeze(0)


def _unexpected_rank(op: str, want: str, spatial: str, ndim: int) -> None:
    warnings.warn(f"{op}: Received a {ndim}-D input to {op}, which is deprecated and will "
                  f"result in an error in a future release. To retain the behavior and silence "
                  f"this warning, please use dropout instead. Note that {op} exists to provide "
                  f"channel-wise dropout on inputs with {spatial} spatial dimensions, a channel "
                  f"dimension, and an optional batch dimension (i.e. {want} inputs).",
                  stacklevel=3)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Randomly zeroes whole channels of (N, C, L) or (C, L) input with probability ``p``,
    scaling the others by 1 / (1 - p)."""
    _check_p(p)
    checks.tensor_arg(input, "dropout1d")
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D "
                           f"input. Note that dropout1d exists to provide channel-wise dropout "
                           f"on inputs with 1 spatial dimension, a channel dimension, and an "
                           f"optional batch dimension (i.e. 2D or 3D inputs).")
    if input.ndim == 2:
        return _unbatched_feature_dropout(input, p, training, inplace, "dropout1d")
    return _dropout_impl(input, p, training, inplace, "dropout1d", feature=True)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Randomly zeroes whole channels of (N, C, H, W) input with probability ``p``, scaling
    the others by 1 / (1 - p). As PyTorch, a 3-D input is taken as (N, C, L) (channel-wise 1-D
    dropout, with a warning), and other ranks warn and draw per (dim 0, dim 1) index."""
    _check_p(p)
    checks.tensor_arg(input, "dropout2d")
    if input.ndim not in (3, 4):
        _unexpected_rank("dropout2d", "3D or 4D", "2", input.ndim)
    if input.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that "
                      "channel-wise 1D dropout behavior is desired - input is interpreted as "
                      "shape (N, C, L), where C is the channel dim. This behavior will change "
                      "in a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout "
                      "behavior, please switch to using dropout1d instead.", stacklevel=2)
    return _dropout_impl(input, p, training, inplace, "dropout2d", feature=True)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Randomly zeroes whole channels of (N, C, D, H, W) or (C, D, H, W) input (other ranks
    warn, and all but 5-D ones are taken as unbatched, as PyTorch)."""
    _check_p(p)
    checks.tensor_arg(input, "dropout3d")
    if input.ndim not in (4, 5):
        _unexpected_rank("dropout3d", "4D or 5D", "3", input.ndim)
    if input.ndim != 5:
        return _unbatched_feature_dropout(input, p, training, inplace, "dropout3d")
    return _dropout_impl(input, p, training, inplace, "dropout3d", feature=True)


def _pixel_factor(input: Tensor, factor, op: str, name: str) -> int:
    checks.tensor_arg(input, op)
    r = int(factor)
    if input.ndim < 3:
        raise RuntimeError(f"{op} expects input to have at least 3 dimensions, but got input "
                           f"with {input.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"{op} expects a positive {name}, but got {r}")
    return r


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """Rearranges (*, C r^2, H, W) into (*, C, H r, W r) (Shi et al., 2016)."""
    r = _pixel_factor(input, upscale_factor, "pixel_shuffle", "upscale_factor")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)={c} "
                           f"is not divisible by {r * r}")
    n = len(lead)
    x = input.reshape(tuple(lead) + (c // (r * r), r, r, h, w))
    x = x.permute(tuple(range(n)) + (n, n + 3, n + 1, n + 4, n + 2))
    return _channels_last_like(x.reshape(tuple(lead) + (c // (r * r), h * r, w * r)), input,
                               rank=4)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """Rearranges (*, C, H r, W r) into (*, C r^2, H, W): the inverse of ``pixel_shuffle``."""
    r = _pixel_factor(input, downscale_factor, "pixel_unshuffle", "downscale_factor")
    *lead, c, h, w = input.shape
    if h % r or w % r:
        raise RuntimeError(f"pixel_unshuffle expects height and width to be divisible by "
                           f"downscale_factor, but got height={h}, width={w} and "
                           f"downscale_factor={r}")
    n = len(lead)
    x = input.reshape(tuple(lead) + (c, h // r, r, w // r, r))
    x = x.permute(tuple(range(n)) + (n, n + 2, n + 4, n + 1, n + 3))
    return _channels_last_like(x.reshape(tuple(lead) + (c * r * r, h // r, w // r)), input,
                               rank=4)


def _check_bilinear_shapes(input1: Tensor, input2: Tensor, weight: Tensor,
                           bias: Tensor | None) -> None:
    """PyTorch's checks in its order and words (aten's bilinear): the inputs' ranks, their batch
    dims one at a time, each input's features against ``weight``, then the bias."""
    if input1.ndim != input2.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.ndim} and "
                           f"{input2.ndim}")
    for i in range(input1.ndim - 1):
        if input1.shape[i] != input2.shape[i]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {i}: "
                               f"got {input1.shape[i]} and {input2.shape[i]}")
    for which, x, dim in (("input1", input1, 1), ("input2", input2, 2)):
        if weight.ndim <= dim:  # PyTorch reads weight.size(dim) unchecked
            n = max(weight.ndim, 1)
            raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, "
                             f"{n - 1}], but got {dim})")
        if x.shape[-1] != weight.shape[dim]:
            raise RuntimeError(f"bilinear(): {which} size does not match weight size: got "
                               f"{x.shape[-1]} but expected {weight.shape[dim]}")
    if bias is not None and bias.ndim >= 1 and bias.shape[0] != weight.shape[0]:
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got "
                           f"{bias.shape[0]} but expected {weight.shape[0]}")
    if weight.ndim != 3:  # (PyTorch's _trilinear, on a weight with extra dims)
        raise RuntimeError("number of dimensions must match")


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y = x1^T A x2 + b per output feature: ``weight`` (out, in1, in2), inputs (*, in1) and
    (*, in2) with the same leading dims."""
    for name, t in (("input1", input1), ("input2", input2), ("weight", weight)):
        checks.tensor_arg(t, "bilinear", name)
    if bias is not None:
        checks.tensor_arg(bias, "bilinear", "bias")
    _check_bilinear_shapes(input1, input2, weight, bias)
    from ..autograd.ops.sampling_nodes import TrilinearBackward0

    # one node saving the inputs and the weight (PyTorch's _trilinear), then the bias's add;
    # PyTorch's _trilinear is not autocast: its contraction runs in the inputs' dtype
    with _suspended():
        y = _apply(TrilinearBackward0, (input1, weight, input2))
    return y if bias is None else y + bias


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0) -> Tensor:
    """Divides each element by (k + alpha * mean of the squares of the ``size`` channels
    around it) ** beta; the channel window is zero-padded (size // 2 before, (size - 1) // 2
    after) and always divided by ``size``, as PyTorch's."""
    checks.tensor_arg(input, "local_response_norm")
    if input.ndim < 3:
        raise ValueError("local_response_norm: Expected 3D or higher dimensionality input (got "
                         f"{input.ndim} dimensions)")
    if size < 1:
        raise RuntimeError(f"local_response_norm: size should be greater than zero, but got {size}")
    if input.numel() == 0:
        return input
    c = input.shape[1]
    sq = pad(input * input, [0, 0] * (input.ndim - 2) + [size // 2, (size - 1) // 2])
    window = sq.narrow(1, 0, c)
    for j in range(1, size):
        window = window + sq.narrow(1, j, c)
    return input / (window * (alpha / size) + k) ** beta


def gumbel_softmax(logits: Tensor, tau: float = 1.0, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:
    """Samples from the Gumbel-softmax distribution (Jang et al., 2016): softmax((logits + g)
    / tau) with g ~ Gumbel(0, 1); ``hard`` returns one-hot samples whose gradient is the soft
    sample's (the straight-through estimator)."""
    gumbels = -logits.new_empty(tuple(logits.shape)).exponential_().log()
    y_soft = _softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    index = y_soft.argmax(dim, keepdim=True)
    y_hard = y_soft.new_zeros(tuple(y_soft.shape)).scatter(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot encoding: shape tensor.shape + (num_classes,). ``tensor`` holds int64
    class indices in [0, num_classes) (``num_classes=-1``: one more than the largest).

    The class values are checked on both devices, with PyTorch's CPU errors (its CUDA kernel
    leaves them to a device assert): a value out of range would give an all-zero row."""
    from ..autograd.ops.creation import arange, empty
    if not isinstance(tensor, Tensor) or tensor.dtype.name != "int64":
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    num_classes = int(num_classes)
    if tensor.numel() == 0:
        if num_classes <= 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        return empty(tuple(tensor.shape) + (num_classes,), dtype=tensor.dtype,
                     device=tensor.device)
    lo, hi = checks.index_extremes(tensor)  # one read back from the device
    if lo < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        num_classes = hi + 1
    elif num_classes <= hi:
        raise RuntimeError("Class values must be smaller than num_classes.")
    classes = arange(num_classes, device=tensor.device)
    # (contiguous, as PyTorch's, whose result is a new zeros tensor, whatever the layout of
    # ``tensor``)
    return (tensor.unsqueeze(-1) == classes).long().contiguous()


# -- losses --------------------------------------------------------------------------------------

def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


class MseLossBackward0(_Primitive):
    """(input - target)^2, per element or reduced (``reduction``: "none", "mean", "sum"),
    as one node (PyTorch's ``mse_loss``): the gradients are +-2 (input - target) g, over the
    number of elements for "mean". Inputs of different shapes broadcast, and dispatch sums
    their gradients back."""

    __slots__ = ()
    op_name = "mse_loss"
    save_inputs = (0, 1)
    broadcasts = True

    @staticmethod
    def forward(ctx, k, x, t, reduction):
        ctx.reduction = reduction
        d = k.sub(x, t)
        return _reduce_elements(ctx, k, k.mul(d, d), reduction)

    @staticmethod
    def vjp(ctx, k, saved, g):
        x, t = saved
        d = k.sub(x, t)
        if ctx.reduction == "none":
            gx = k.mul(k.mul(d, 2.0), g)
        else:  # (g is 0-d: scaled first, one full-size product)
            count = _element_count(d.shape) if ctx.reduction == "mean" else 1
            gx = k.mul(d, k.mul(g, 2.0 / count))
        need_x, need_t = ctx.needs_input_grad
        return gx if need_x else None, k.neg(gx) if need_t else None

    complex_vjp = _conj_rule(vjp)

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, reduction):
        (x, t), (tx, tt) = primals, tangents
        dt = tx if tt is None else k.neg(tt) if tx is None else k.sub(tx, tt)
        return _reduce_elements(ctx, k, k.mul(k.mul(k.sub(x, t), dt), 2.0), reduction)


def _element_count(shape) -> int | float:
    """The divisor of a "mean" over ``shape``: its element count (NaN for none, as mean's)."""
    return math.prod(shape) or math.nan


def _reduce_elements(ctx, k, a, reduction: str):
    """``a`` summed or averaged over all its elements, or as it is for "none"."""
    if reduction == "none":
        return a
    s = k.sum(a, tuple(range(len(a.shape))), False)
    return s if reduction == "sum" else k.div(s, _element_count(a.shape))


@_autocast("float32")
def mse_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
             reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """Measures the element-wise mean squared error: (input - target)^2, averaged
    (``'mean'``), summed (``'sum'``) or per element (``'none'``). One ``MseLossBackward0``
    node, with gradients to ``input`` and ``target``. ``weight`` (the input's size) multiplies
    each element's loss; ``'mean'`` is then the weighted sum over ``weight.sum()``, as
    PyTorch's.

    Example:
        >>> F.mse_loss(tg.tensor([1., 2.]), tg.tensor([2., 4.]))
        tensor(2.5000)
    """
    _loss_operands("mse_loss", input, target)
    reduction = _reduction(size_average, reduce, reduction)
    _check_same_size(input, target)
    operands = _elementwise_loss_operands(input, target, "mse_loss", "mse")
    if weight is None:
        return _apply(MseLossBackward0, operands, reduction)
    return _sample_weighted(_apply(MseLossBackward0, operands, "none"), input, weight,
                            reduction, "mse_loss")


def _sample_weighted(loss: Tensor, input: Tensor, weight: Tensor, reduction: str, op: str,
                     mean_over_weight: bool = True) -> Tensor:
    """``loss * weight`` reduced as PyTorch's weighted l1/mse/huber losses: ``weight`` must
    have the input's size; ``'mean'`` divides by ``weight.sum()`` (l1, mse) or by the element
    count (huber, ``mean_over_weight=False``)."""
    checks.tensor_arg(weight, op, "weight")
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    loss = loss * weight
    if reduction == "mean" and mean_over_weight:
        return loss.sum() / weight.sum()
    return _reduce(loss, reduction)


def _class_last(input: Tensor, target: Tensor, op: str):
    """(N, C, d1, ...) inputs and (N, d1, ...) targets as (N*d1*..., C) and (N*d1*...,)."""
    if input.ndim == 1:  # unbatched (C,) with a 0-d target
        return input.unsqueeze(0), target.reshape(1), ()
    if input.ndim == 2:
        return input, target, None
    c = input.shape[1]
    perm = (0,) + tuple(range(2, input.ndim)) + (1,)
    return input.permute(*perm).reshape(-1, c), target.reshape(-1), tuple(target.shape)


def _check_loss_devices(input: Tensor, target: Tensor, weight, op: str) -> None:
    checks.check_same_device(input, target, "target", op)
    if weight is not None:
        checks.check_same_device(input, checks.tensor_arg(weight, op, "weight"), "weight", op)


def _check_targets(input: Tensor, target: Tensor, weight, op: str) -> None:
    """PyTorch's checks of class-index ``target`` (and class ``weight``) against a (C,),
    (N, C) or (N, C, d1, ...) ``input``, with its error types: shapes only, no data read."""
    if input.ndim == 0:
        raise ValueError(f"{op}: Expected 1 or more dimensions (got 0)")
    if not input.dtype.is_floating_point:
        # (nll_loss's named as PyTorch's CPU kernels; cross_entropy's by the op, which
        # PyTorch's, its log_softmax's, would not name)
        kernel = op if op != "nll_loss" else \
            "nll_loss2d_forward_out_frame" if input.ndim > 2 else "nll_loss_out_frame"
        raise checks.kernel_not_implemented(kernel, input.dtype)
    if weight is not None:
        c = input.shape[1 if input.ndim > 1 else 0]
        if weight.ndim != 1 or weight.shape[0] != c:  # (PyTorch's words)
            raise RuntimeError(f"{op}: weight tensor should be defined either for all {c} classes "
                               "or no classes but got weight tensor of shape: "
                               f"{list(weight.shape)}")
        if weight.dtype is not input.dtype:
            raise RuntimeError(f"{op}: expected scalar type "
                               f"{checks.scalar_type_name(input.dtype)} but found "
                               f"{checks.scalar_type_name(weight.dtype)} (weight)")
    if input.ndim == 1:
        if target.ndim > 1:
            raise RuntimeError(f"{op}: 0D or 1D target tensor expected, multi-target not supported")
        if target.ndim == 1 and target.shape[0] != 1:
            raise ValueError(f"{op}: For 1D input, 1D target must have size 1, but got target "
                             f"size: {target.shape[0]}")
        return
    batch = target.shape[0] if target.ndim else 0  # (PyTorch's count for a 0-d target)
    if batch != input.shape[0]:
        raise ValueError(f"{op}: Expected input batch_size ({input.shape[0]}) to match target "
                         f"batch_size ({batch}).")
    expect = (input.shape[0],) + tuple(input.shape[2:])
    if tuple(target.shape) != expect:
        if input.ndim == 2:
            raise RuntimeError(f"{op}: 0D or 1D target tensor expected, multi-target not supported")
        raise RuntimeError(f"{op}: Expected target size {list(expect)}, got {list(target.shape)}")


def _weighted_cross_entropy(input, target, weight, ignore_index, reduction, label_smoothing):
    # PyTorch's composition: (1 - eps) * nll_loss + eps / C * the weighted sum of -log p over
    # the classes, the latter zero on ignored rows and, for 'mean', divided by the summed
    # weights of the rows' targets (as nll_loss's mean is)
    cdim = 1 if input.ndim > 1 else 0
    logp = log_softmax(input, cdim)
    nll = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if not label_smoothing:
        return nll
    c = input.shape[cdim]
    shape = [1] * input.ndim
    shape[cdim] = c
    ignored = target == ignore_index
    smooth = -(logp * weight.reshape(shape)).sum(cdim).masked_fill(ignored, 0.0)
    if reduction == "mean":
        target_weights = weight[target.masked_fill(ignored, 0)].masked_fill(ignored, 0.0)
        smooth = smooth.sum() / target_weights.sum().detach()  # a constant, as in nll_loss
    elif reduction == "sum":
        smooth = smooth.sum()
    return nll * (1 - label_smoothing) + smooth * (label_smoothing / c)


@_autocast("float32")
def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
             ignore_index: int = -100, reduce=None, reduction: str = "mean") -> Tensor:
    """The negative log-likelihood of class indices ``target`` under log-probabilities
    ``input`` (N, C[, d1, ...]): -w[t] * input[t]; ``'mean'`` divides by sum of w[t] over the
    rows not ignored."""
    _loss_operands("nll_loss", input, target)
    reduction = _reduction(size_average, reduce, reduction)
    _check_loss_devices(input, target, weight, "nll_loss")
    # PyTorch's kernel has no derivative for the class weights (it is not the row weights'
    # sum, which is held constant for 'mean'): it refuses, under its kernel's name, before
    # its checks of the arguments
    _not_differentiable("nll_loss_forward", weight=weight)
    _check_targets(input, target, weight, "nll_loss")
    target = _nn.check_class_indices(target, byte_ok=input.ndim <= 2)
    x, t, spatial = _class_last(input, target, "nll_loss")
    checks.check_index_range(t, x.shape[1],
                             checks.first_bad_target(t, x.shape[1], int(ignore_index)),
                             ignore_index=int(ignore_index))
    # one node saving the target and the weight (Note in autograd/ops/nn.py's NllLossBackward0)
    loss = _nn.nll_loss_rows(x, t, weight, ignore_index, reduction, bool(spatial))
    if reduction == "none":
        return loss.reshape(spatial) if spatial is not None else loss
    return loss


@_autocast("float32")
def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                  size_average=None, ignore_index: int = -100, reduce=None,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """Cross-entropy between logits ``input`` (N, C[, d1, ...]) and class indices ``target``
    (N[, d1, ...]) or class probabilities (same shape as ``input``).

    With class indices and no ``weight``, one fused kernel each way computes, per row,
    (1 - eps) (lse - x[t]) + eps (lse - mean(x)) (eps = ``label_smoothing``; 0 on rows whose
    target is ``ignore_index``); ``'mean'`` divides the sum by the number of rows not ignored.
    With class weights ``w``: (1 - eps) nll_loss + eps / C * sum_c w[c] (lse - x[c]), whose
    ``'mean'`` divides by the summed weights of the rows' targets, as PyTorch's does.
    """
    _loss_operands("cross_entropy", input, target)
    reduction = _reduction(size_average, reduce, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError("cross_entropy: label_smoothing must be between 0.0 and 1.0. Got: "
                           f"{label_smoothing}")
    _check_loss_devices(input, target, weight, "cross_entropy")
    # PyTorch tells class probabilities from class indices by the target's shape, not its
    # dtype: a float target of the indices' shape is refused (nll_loss reads it as Long)
    if tuple(target.shape) == tuple(input.shape):  # class probabilities
        if not target.dtype.is_floating_point:
            raise RuntimeError(f"Expected floating point type for target with class "
                               f"probabilities, got {checks.scalar_type_name(target.dtype)}")
        if ignore_index >= 0:  # (PyTorch's test: its default, -100, and negatives pass)
            raise RuntimeError("cross_entropy: ignore_index is not supported for floating point "
                               "target")
        cdim = 1 if input.ndim > 1 else 0
        c = input.shape[cdim]
        if label_smoothing:
            target = target * (1 - label_smoothing) + label_smoothing / c
        logp = log_softmax(input, cdim)
        if weight is not None:
            shape = [1] * input.ndim
            shape[cdim] = c
            logp = logp * weight.reshape(shape)
        loss = -(logp * target).sum(cdim)
        if reduction == "mean":
            n = input.numel() // c if input.ndim > 1 else 1
            return loss.sum() / n
        return _reduce(loss, reduction)
    _check_targets(input, target, weight, "cross_entropy")
    target = _nn.check_class_indices(target, byte_ok=input.ndim <= 2)
    if weight is not None:
        return _weighted_cross_entropy(input, target, weight, ignore_index, reduction,
                                       label_smoothing)
    x, t, spatial = _class_last(input, target, "cross_entropy")
    loss = _nn.cross_entropy_rows(x, t, ignore_index, label_smoothing, reduction)
    if reduction == "none" and spatial is not None:
        return loss.reshape(spatial)
    return loss


def _loss_operands(op: str, input, target) -> None:
    """PyTorch's TypeError unless a loss's ``input`` and ``target`` are tensors (rather than
    an AttributeError from inside the formula)."""
    checks.tensor_arg(input, op, "input")
    checks.tensor_arg(target, op, "target")


def _check_same_size(input: Tensor, target: Tensor) -> None:
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({_size(target)}) that is different to the "
                      f"input size ({_size(input)}). This will likely lead to incorrect "
                      f"results due to broadcasting. Please ensure they have the same size.",
                      stacklevel=3)


def _log_or(k, a, at_zero: float):
    """log(a) for a >= 0, ``at_zero`` where a is 0 (no log(0) is evaluated: its -inf would
    warn, and turn a selected-away branch's zero gradient into NaN when recorded)."""
    pos = k.gt(a, 0.0)
    return k.where(pos, k.log(k.where(pos, a, 1.0)), at_zero)


def _bce_logs(k, x):
    """(log(x), log(1 - x)), each clamped to >= -100 as PyTorch's kernel does."""
    return (k.maximum(_log_or(k, x, -100.0), -100.0),
            k.maximum(_log_or(k, k.add(k.neg(x), 1.0), -100.0), -100.0))


def _loss_jvp(ctx, k, primals, tangents, out, *params):
    """The jvp of an elementwise loss then its reduction: the vjp's per-element terms with the
    tangents in place of the gradient (scaled for "mean" by the vjp), summed unless "none"."""
    total = _elementwise_jvp(ctx, k, primals, tangents, out)
    if ctx.reduction == "none" or total is None:
        return total
    return k.sum(total, tuple(range(len(total.shape))), False)


def _scaled(k, g, reduction: str, shape):
    """The output gradient (or tangent) ``g`` as each element's factor: "mean" divides by
    the element count."""
    return k.div(g, _element_count(shape)) if reduction == "mean" else g


class BinaryCrossEntropyBackward0(_Primitive):
    """-w (t log(x) + (1 - t) log(1 - x)), each log clamped to >= -100, per element or
    reduced, as one node saving its inputs (PyTorch's ``binary_cross_entropy``). Inputs
    (x, t) or (x, t, weight); the weight broadcasts to x and gets no gradient. PyTorch's
    gradients: dx = g w (x - t) / max(x (1 - x), 1e-12), dt = -g w logit(x) (unclamped)."""

    __slots__ = ()
    op_name = "binary_cross_entropy"
    save_inputs = (0, 1)
    jvp = staticmethod(_loss_jvp)

    @staticmethod
    def forward(ctx, k, x, t, *rest):
        reduction = ctx.reduction = rest[-1]
        log_x, log_1mx = _bce_logs(k, x)
        loss = k.sub(k.mul(t, k.sub(log_1mx, log_x)), log_1mx)
        if len(rest) == 2:
            loss = k.mul(loss, rest[0])
        return _reduce_elements(ctx, k, loss, reduction)

    @staticmethod
    def _derivatives(ctx, k, saved, g):
        """(dloss/dx, dloss/dt) per element times ``g`` (None where not needed)."""
        x, t, *w = saved
        g = _scaled(k, g, ctx.reduction, x.shape)
        if w:
            g = k.mul(g, w[0])
        need = ctx.needs_input_grad
        dx = dt = None
        if need[0]:
            v = k.mul(k.add(k.neg(x), 1.0), x)
            denom = k.where(k.gt(v, 1e-12), v, 1e-12)  # max(v, 1e-12) (traced has no maximum)
            dx = k.mul(g, k.div(k.sub(x, t), denom))
        if need[1]:  # -logit(x) = log(1 - x) - log(x), infinite at 0 and 1 as PyTorch's
            logit = k.sub(_log_or(k, x, -math.inf), _log_or(k, k.add(k.neg(x), 1.0), -math.inf))
            dt = k.mul(g, k.neg(logit))
        return dx, dt

    @staticmethod
    def vjp(ctx, k, saved, g):
        dx, dt = BinaryCrossEntropyBackward0._derivatives(ctx, k, saved, g)
        return (dx, dt) if len(saved) == 2 else (dx, dt, None)


class BinaryCrossEntropyWithLogitsBackward0(_Primitive):
    """-w (p t log(sigmoid(x)) + (1 - t) log(1 - sigmoid(x))) in the stable form
    (1 - t) x + (1 + (p - 1) t) softplus(-x), per element or reduced, as one node saving its
    inputs (PyTorch's ``binary_cross_entropy_with_logits``). Inputs (x, t, weight,
    pos_weight), the two weights optional (``ctx.weights``: which are given); they broadcast
    and get no gradient. dx = g w ((p t + 1 - t) sigmoid(x) - p t), dt = g w (p softplus(-x)
    - softplus(x))."""

    __slots__ = ()
    op_name = "binary_cross_entropy_with_logits"
    save_inputs = (0, 1)
    jvp = staticmethod(_loss_jvp)

    @staticmethod
    def forward(ctx, k, x, t, *rest):
        *weights, (has_w, has_p), reduction = rest
        ctx.reduction, ctx.weights = reduction, (has_w, has_p)
        w = weights[0] if has_w else None
        p = weights[-1] if has_p else None
        sp = _act.softplus_of_neg(k, x)
        if p is not None:  # 1 + (p - 1) t
            sp = k.mul(sp, k.add(k.mul(k.sub(p, 1.0), t), 1.0))
        loss = k.add(k.mul(_act.one_minus(k, t), x), sp)
        if w is not None:
            loss = k.mul(loss, w)
        return _reduce_elements(ctx, k, loss, reduction)

    @staticmethod
    def vjp(ctx, k, saved, g):
        x, t, *weights = saved
        has_w, has_p = ctx.weights
        w = weights[0] if has_w else None
        p = weights[-1] if has_p else None
        g = _scaled(k, g, ctx.reduction, x.shape)
        if w is not None:
            g = k.mul(g, w)
        need = ctx.needs_input_grad
        dx = dt = None
        if need[0]:
            s = _act.sigmoid_of(k, x)
            if p is None:
                dx = k.mul(g, k.sub(s, t))
            else:
                pt = k.mul(p, t)
                dx = k.mul(g, k.sub(k.mul(k.add(_act.one_minus(k, t), pt), s), pt))
        if need[1]:
            sp_neg = _act.softplus_of_neg(k, x)
            sp_pos = k.add(sp_neg, x)  # softplus(x) = softplus(-x) + x
            dt = k.mul(g, k.sub(sp_neg if p is None else k.mul(p, sp_neg), sp_pos))
        return (dx, dt) + (None,) * len(weights)


def _saving_all(op: type, n: int) -> type:
    """``op`` saving all of its ``n`` inputs (the losses' optional weights)."""
    if n == len(op.save_inputs):
        return op
    return op.variant(op.__name__, op.op_name, save_inputs=tuple(range(n)))


_WEIGHTED = {n: _saving_all(BinaryCrossEntropyWithLogitsBackward0, n) for n in (2, 3, 4)}
_WEIGHTED_BCE = _saving_all(BinaryCrossEntropyBackward0, 3)


def _check_weight_shape(input: Tensor, weight: Tensor) -> None:
    """PyTorch's errors for a BCE weight that does not broadcast to the input's shape (its
    size error), or that would broadcast the loss beyond it."""
    shape = tuple(_broadcast_shapes(input.shape, weight.shape))
    if shape != tuple(input.shape):
        raise RuntimeError(f"output with shape {list(input.shape)} doesn't match the "
                           f"broadcast shape {list(shape)}")


def _not_differentiable(op: str, **tensors) -> None:
    """PyTorch's refusal of an argument its op has no derivative for, when it requires grad
    and gradients are being recorded."""
    for name, t in tensors.items():
        if t is not None and t.requires_grad and _grad_mode.is_grad_enabled():
            raise RuntimeError(f"The function '{op}' is not differentiable with respect to "
                               f"argument '{name}'. This input cannot have requires_grad True.")


@_autocast("float32 on cpu, banned on cuda")
def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """Measure Binary Cross Entropy between the target and input probabilities:
    -w * (t * log(x) + (1 - t) * log(1 - x)), each log clamped to >= -100 (as PyTorch, so a
    probability of exactly 0 or 1 gives a finite loss). ``weight`` is broadcast to the input.
    One ``BinaryCrossEntropyBackward0`` node with PyTorch's gradients (the input's divides
    by max(x (1 - x), 1e-12), the target's is -logit(x)); ``weight`` has none."""
    _loss_operands("binary_cross_entropy", input, target)
    reduction = _reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({_size(target)}) that is different to the "
                         f"input size ({_size(input)}) is deprecated. Please ensure they have "
                         f"the same size.")
    _check_loss_devices(input, target, weight, "binary_cross_entropy")
    if target.dtype is not input.dtype:  # (PyTorch's kernel reads both as one dtype)
        raise RuntimeError(f"binary_cross_entropy: Found dtype "
                           f"{checks.scalar_type_name(target.dtype)} but expected "
                           f"{checks.scalar_type_name(input.dtype)}")
    # (as PyTorch's test of each, 0 <= x <= 1, a NaN is out of range too; a target outside
    # would give a loss of no meaning, silently)
    for name, t in (("input", input), ("target", target)):
        if t.numel() and not bool(((t >= 0).logical_and(t <= 1)).all().item()):
            raise RuntimeError(f"all elements of {name} should be between 0 and 1")
    _not_differentiable("binary_cross_entropy", weight=weight)
    if weight is None:
        return _apply(BinaryCrossEntropyBackward0, (input, target), reduction)
    _check_weight_shape(input, weight)
    return _apply(_WEIGHTED_BCE, (input, target, weight.to(input.dtype)), reduction)


def _size(t: Tensor) -> str:
    return f"tritongrad.Size({list(t.shape)})"


@_autocast("float32")
def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,
                                     weight: Tensor | None = None, size_average=None,
                                     reduce=None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """Binary Cross Entropy between target and input logits, in the numerically stable form
    (1 - t) x + (1 + (p - 1) t) softplus(-x), which is
    -w [p t log sigmoid(x) + (1 - t) log(1 - sigmoid(x))] without overflow.

    Args:
        weight: a manual rescaling weight, broadcast to the input.
        pos_weight: a weight of positive examples, broadcast along the last (class) dim.
    """
    _loss_operands("binary_cross_entropy_with_logits", input, target)
    reduction = _reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({_size(target)}) must be the same as input size "
                         f"({_size(input)})")
    _check_loss_devices(input, target, weight, "binary_cross_entropy_with_logits")
    _floating_only(input, "log_sigmoid")
    if not (target.dtype.is_floating_point or target.dtype.is_complex):
        raise _cast_error("binary_cross_entropy_with_logits", "Float", target.dtype)
    if pos_weight is not None:
        checks.check_same_device(input, pos_weight, "pos_weight",
                                 "binary_cross_entropy_with_logits")
    _not_differentiable("binary_cross_entropy_with_logits", weight=weight, pos_weight=pos_weight)
    weights = tuple(w for w in (weight, pos_weight) if w is not None)
    for w in weights:
        _check_weight_shape(input, w)
    return _apply(_WEIGHTED[2 + len(weights)], (input, target) + weights,
                  (weight is not None, pos_weight is not None), reduction)


@_autocast("float32")
def l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
            reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """Mean absolute error |input - target| (the gradient at 0 is 0). ``weight`` (the input's
    size) multiplies each element's loss; ``'mean'`` is then the weighted sum over
    ``weight.sum()``, as PyTorch's."""
    _loss_operands("l1_loss", input, target)
    reduction = _reduction(size_average, reduce, reduction)
    _check_same_size(input, target)
    if weight is None:
        return _reduce((input - target).abs(), reduction)
    return _sample_weighted((input - target).abs(), input, weight, reduction, "l1_loss")


class SmoothL1LossBackward0(_Primitive):
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (d = input - target), per element
    or reduced, as one node saving its two inputs (PyTorch's ``smooth_l1_loss``; beta > 0).
    Its rule is PyTorch's smooth_l1_loss_backward: d / beta inside, sign(d) outside (a NaN
    d gives NaN), over the element count for "mean". Inputs of different shapes broadcast,
    and dispatch sums their gradients back. ``HuberLossBackward0`` is the same with the
    scales of Huber (``delta``)."""

    __slots__ = ()
    op_name = "smooth_l1_loss"
    save_inputs = (0, 1)
    broadcasts = True
    jvp = staticmethod(_loss_jvp)

    @staticmethod
    def scales(cut: float) -> tuple:
        """(quadratic, linear) scales: 0.5 q d^2 inside |d| < cut, l (|d| - 0.5 cut) outside."""
        return 1.0 / cut, 1.0

    @classmethod
    def forward(cls, ctx, k, x, t, cut, reduction):
        ctx.params, ctx.reduction = (cut,), reduction
        quad, lin = cls.scales(cut)
        d = k.unary("abs", k.sub(x, t))
        # (PyTorch's test, z < cut: a NaN takes the linear branch, NaN either way)
        loss = k.where(k.lt(d, cut), k.mul(k.mul(d, d), 0.5 * quad),
                       k.mul(k.sub(d, 0.5 * cut), lin))
        return _reduce_elements(ctx, k, loss, reduction)

    @classmethod
    def vjp(cls, ctx, k, saved, g):
        x, t = saved
        cut, = ctx.params
        quad, lin = cls.scales(cut)
        d = k.sub(x, t)
        g = _scaled(k, g, ctx.reduction, d.shape)
        # PyTorch's kernel: -lin below -cut, lin above cut, quad d between (and for a NaN);
        # at |d| = cut both give +-lin, taken from the linear side so that a second
        # derivative there is 0, as PyTorch's double backward ((|d| < cut) / cut) has it
        inner = k.where(k.ge(d, cut), lin, k.mul(d, quad))
        gx = k.mul(g, k.where(k.le(d, -cut), -lin, inner))
        need_x, need_t = ctx.needs_input_grad
        return gx if need_x else None, k.neg(gx) if need_t else None


class HuberLossBackward0(SmoothL1LossBackward0):
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta): PyTorch's ``huber_loss``,
    whose rule is d inside and delta sign(d) outside."""

    __slots__ = ()
    op_name = "huber_loss"

    @staticmethod
    def scales(cut: float) -> tuple:
        return 1.0, cut


def _elementwise_loss_operands(input: Tensor, target: Tensor, op: str,
                               kernel: str | None = None) -> tuple:
    """``input`` and ``target`` on one device in their common dtype, broadcastable (PyTorch's
    size error otherwise, before any cast); ``kernel`` names the kernel whose refusal of a
    dtype that is not floating comes first (integers, bools, complex numbers)."""
    target = checks.operand_on_device(input, target, op)  # (a CPU 0-d joins either)
    if input._device is not target._device:
        input = input.to(target._device)
    dt = _result_type(input, target)
    if kernel is not None and not dt.is_floating_point:
        raise checks.kernel_not_implemented(f"{kernel}_{input.device.type}", dt)
    _broadcast_shapes(input.shape, target.shape)
    return tuple(a if a.dtype is dt else a.to(dt) for a in (input, target))


@_autocast("float32")
def smooth_l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """0.5 (x - y)^2 / beta where |x - y| < beta, else |x - y| - 0.5 beta (beta = 0: L1).
    One ``SmoothL1LossBackward0`` node saving ``input`` and ``target``, as PyTorch's."""
    _loss_operands("smooth_l1_loss", input, target)
    reduction = _reduction(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    _check_same_size(input, target)
    if not _result_type(input, target).is_floating_point:
        raise checks.kernel_not_implemented(f"smooth_l1_{input.device.type}",
                                            _result_type(input, target))
    if beta == 0.0:  # (l1_loss, without its size warning a second time)
        return _reduce((input - target).abs(), reduction)
    operands = _elementwise_loss_operands(input, target, "smooth_l1_loss")
    return _apply(SmoothL1LossBackward0, operands, float(beta), reduction)


@_autocast("float32")
def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    """0.5 (x - y)^2 where |x - y| < delta, else delta (|x - y| - 0.5 delta); ``weight`` (the
    input's size) multiplies each element's loss before the reduction (``'mean'``: over the
    element count). One ``HuberLossBackward0`` node
    saving ``input`` and ``target`` (then a product and the reduction, with ``weight``)."""
    _loss_operands("huber_loss", input, target)
    reduction = _reduction(None, None, reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    _check_same_size(input, target)
    if not _result_type(input, target).is_floating_point:
        raise checks.kernel_not_implemented(f"huber_{input.device.type}",
                                            _result_type(input, target))
    if not input.dtype.is_floating_point:  # (PyTorch computes into the input's dtype)
        raise _cast_error("huber_loss", "Float", input.dtype)
    operands = _elementwise_loss_operands(input, target, "huber_loss")
    if weight is None:
        return _apply(HuberLossBackward0, operands, float(delta), reduction)
    loss = _apply(HuberLossBackward0, operands, float(delta), "none")
    return _sample_weighted(loss, input, weight, reduction, "huber_loss", mean_over_weight=False)


@_autocast("float32")
def kl_div(input: Tensor, target: Tensor, size_average=None, reduce=None,
           reduction: str = "mean", log_target: bool = False) -> Tensor:
    """The Kullback-Leibler divergence loss, for log-probabilities ``input``:
    target * (log(target) - input) (0 where target is 0), or with ``log_target``
    exp(target) * (target - input). ``reduction='batchmean'`` divides the sum by the batch
    size (the KL divergence's definition); ``'mean'`` divides by the number of elements."""
    _loss_operands("kl_div", input, target)
    batchmean = reduction == "batchmean"
    if size_average is not None or reduce is not None:
        # (as PyTorch's: these override the reduction, and 'batchmean' still divides then)
        reduction = _reduction(size_average, reduce, reduction)
    elif batchmean:
        reduction = "sum"
    else:
        reduction = _reduction(None, None, reduction)
        if reduction == "mean":
            warnings.warn("reduction: 'mean' divides the total loss by both the batch size and "
                          "the support size.'batchmean' divides only by the batch size, and "
                          "aligns with the KL div math definition.'mean' will be changed to "
                          "behave the same as 'batchmean' in the next major release.",
                          stacklevel=2)
    if not (input.dtype.is_floating_point or input.dtype.is_complex) or \
            not (target.dtype.is_floating_point or target.dtype.is_complex):
        raise RuntimeError("kl_div: Integral inputs not supported.")
    if log_target:
        loss = target.exp() * (target - input)
    else:
        # xlogy(t, t): 0 at t = 0, where log(t) (and its gradient) must not be evaluated
        nonzero = target != 0
        safe = target.where(nonzero, 1.0)
        loss = (target * safe.log()).where(nonzero, 0.0) - target * input
    loss = _reduce(loss, reduction)
    return loss / input.shape[0] if batchmean and input.ndim else loss


@_autocast("float32")
def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,
                     size_average=None, eps: float = 1e-8, reduce=None,
                     reduction: str = "mean") -> Tensor:
    """The negative log-likelihood of ``target`` under a Poisson distribution of rate
    exp(input) (``log_input``) or input: exp(x) - y x, or x - y log(x + eps); ``full`` adds
    Stirling's approximation of log(y!), y log y - y + log(2 pi y) / 2, where y > 1."""
    _loss_operands("poisson_nll_loss", input, target)
    reduction = _reduction(size_average, reduce, reduction)
    loss = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        big = target > 1
        y = target.where(big, 2.0)  # (the other lanes' values are discarded)
        stirling = y * y.log() - y + 0.5 * (2 * math.pi * y).log()
        loss = loss + stirling.where(big, 0.0)
    return _reduce(loss, reduction)


# (no autocast policy: PyTorch's is a composite, its parts' policies apply: on the CPU it
# runs in the input's dtype)
def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor | float, full: bool = False,
                      eps: float = 1e-6, reduction: str = "mean") -> Tensor:
    """The negative log-likelihood of ``target`` under Gaussians of mean ``input`` and
    variance ``var``: (log(max(var, eps)) + (input - target)^2 / max(var, eps)) / 2
    (+ log(2 pi) / 2 with ``full``). ``var`` has the input's shape, or one fewer dimension
    or a last dimension of 1 (one variance per sample), or is a number; the clamp to ``eps``
    passes gradients through unchanged, as PyTorch's (it is done without recording)."""
    _loss_operands("gaussian_nll_loss", input, target)
    # PyTorch's order: the sign of var, its size, then the reduction
    if not isinstance(var, Tensor):
        if var < 0:
            raise ValueError("gaussian_nll_loss: var has negative entry/entries")
        var = input.new_full(input.shape, float(var))
    elif bool((var < 0).any()):
        raise ValueError("gaussian_nll_loss: var has negative entry/entries")
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):  # one variance per sample
            var = var.unsqueeze(-1)
        # else it must differ from the input's size in one dimension only, where it is 1
        elif not (var.ndim == input.ndim and sum(
                v for i, v in zip(input.shape, var.shape) if i != v) == 1):
            raise ValueError("gaussian_nll_loss: var is of incorrect size")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not valid")
    var = var.clone()
    from ..autograd.grad_mode import no_grad

    with no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


@_autocast("float32 on cuda")
def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,
              out=None) -> Tensor:
    """Performs Lp normalization of inputs over specified dimension: v / max(||v||_p, eps)."""
    checks.tensor_arg(input, "normalize")
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError(f"normalize: linalg.vector_norm: Expected a floating point or "
                           f"complex tensor as input. Got {checks.scalar_type_name(input.dtype)}")
    dim = wrap_dim(dim, input.ndim, "normalize")
    p = 2.0 if p is None else float(p)  # (None: PyTorch's norm takes it as the 2-norm)
    if math.isinf(p):
        denom = input.abs().amax(dim=dim, keepdim=True).clamp(min=eps)
    elif p <= 0:  # the "0-norm" counts the nonzeros; a negative p has no clamp on ||v||^p
        denom = input.norm(p, dim=dim, keepdim=True).clamp(min=eps)
    else:
        # the clamp applied to ||v||^p, not to ||v||: then a zero vector gets a finite (1/eps)
        # gradient, as PyTorch's, instead of 0 * (0 / 0) = NaN through the root
        powered = input * input if p == 2.0 and not input.is_complex() else input.abs().pow(p)
        denom = powered.sum(dim, keepdim=True).clamp(min=eps ** p).pow(1.0 / p)
    if out is None:
        return input / denom
    from .. import div  # (PyTorch's: torch.div(input, denom, out=out))
    return div(input, denom, out=out)


# -- composites in their own modules (convolution, pooling, normalisation, attention) ---------

from ._attention import multi_head_attention_forward, scaled_dot_product_attention
from ._convolution import (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d,
                           adaptive_max_pool1d, adaptive_max_pool2d, adaptive_max_pool3d,
                           avg_pool1d, avg_pool2d, avg_pool3d, conv1d, conv2d, conv3d,
                           conv_tbc, conv_transpose1d, conv_transpose2d, conv_transpose3d,
                           fold, max_pool1d, max_pool2d, max_pool3d, unfold)
from ._normalization import batch_norm, group_norm, instance_norm, rms_norm
from ._padding import _channels_last_like, pad
from ._sampling import affine_grid, grid_sample, interpolate
from ._margin_losses import (cosine_embedding_loss, hinge_embedding_loss, margin_ranking_loss,
                             multi_margin_loss, multilabel_margin_loss,
                             multilabel_soft_margin_loss, soft_margin_loss,
                             triplet_margin_loss, triplet_margin_with_distance_loss)
from ._ctc_loss import ctc_loss
from . import _inplace_activations, _shuffle_distance
from ._inplace_activations import (celu_, elu_, hardtanh_, leaky_relu_, relu_, rrelu, rrelu_,
                                   selu_)
from ._shuffle_distance import channel_shuffle, native_channel_shuffle, pdist

__all__ += _inplace_activations.__all__ + _shuffle_distance.__all__

# autocast's entries for the composites defined in the modules above (their autocast column is
# here, as the op tables' is in their rows: autograd/autocast.py)
(conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d,
 scaled_dot_product_attention) = map(
    _autocast("lower"), (conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d,
                         conv_transpose3d, scaled_dot_product_attention))
# PyTorch's CPU list runs the 3-D pools in float32 (on CUDA they keep their input's dtype)
max_pool3d, avg_pool3d, adaptive_avg_pool3d, adaptive_max_pool3d = map(
    _autocast("float32 on cpu"), (max_pool3d, avg_pool3d, adaptive_avg_pool3d,
                                  adaptive_max_pool3d))
group_norm = _autocast("float32 on cuda")(group_norm)
# (grid_sample, the unpools, the fractional and margin losses: at their definitions, as the
# nn modules take those functions from their own modules)


def _pad_with_policy(pad_fn):
    """F.pad, whose reflect (1-D, 2-D) and replicate (1-D to 3-D) paddings run in float32
    under CPU autocast: PyTorch's reflection_pad1d/2d and replication_pad1d/2d/3d kernels are
    on its CPU float32 list (reflection_pad3d, circular and constant are not)."""
    float32 = _autocast("float32 on cpu")(pad_fn)

    @functools.wraps(pad_fn)
    def pad(input: Tensor, pad, mode: str = "constant", value: float | None = None) -> Tensor:
        if value is not None and type(value) is not float:  # (a string would reach NumPy)
            value = _float_arg(value, "pad", "value", 4)
        if mode == "replicate" or (mode == "reflect" and not (hasattr(pad, "__len__")
                                                              and len(pad) >= 6)):
            return float32(input, pad, mode, value)
        return pad_fn(input, pad, mode, value)
    pad.__module__ = __name__  # (pickled by reference: found here, not as pad_fn)
    return pad


pad = _pad_with_policy(pad)
multilabel_margin_loss = _autocast("float32")(multilabel_margin_loss)
ctc_loss = _autocast("float32 on cpu")(ctc_loss)  # (PyTorch's CUDA list has no ctc_loss)

# -- unpooling, LP and fractional pools, the pools with indices, feature alpha dropout
# (nn/_unpool.py, nn/_fractional_pool.py, nn/_feature_alpha_dropout.py) -------------------------

from . import _fractional_pool, _unpool
from ._feature_alpha_dropout import feature_alpha_dropout
from ._fractional_pool import (fractional_max_pool2d, fractional_max_pool2d_with_indices,
                               fractional_max_pool3d, fractional_max_pool3d_with_indices)
from ._unpool import lp_pool1d, lp_pool2d, lp_pool3d, max_unpool1d, max_unpool2d, max_unpool3d

(max_pool1d_with_indices, max_pool2d_with_indices, max_pool3d_with_indices,
 adaptive_max_pool1d_with_indices, adaptive_max_pool2d_with_indices,
 adaptive_max_pool3d_with_indices) = map(_unpool.with_indices, (
     max_pool1d, max_pool2d, max_pool3d, adaptive_max_pool1d, adaptive_max_pool2d,
     adaptive_max_pool3d))


def upsample(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",
             align_corners: bool | None = None) -> Tensor:
    """Deprecated: ``interpolate(input, size, scale_factor, mode, align_corners)``."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """Deprecated: ``interpolate(input, size, scale_factor, mode='nearest')``."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """Deprecated: ``interpolate(input, size, scale_factor, mode='bilinear',
    align_corners=True)``."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


__all__ += _unpool.__all__ + _fractional_pool.__all__ + [
    "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d_with_indices", "feature_alpha_dropout", "max_pool1d_with_indices",
    "max_pool2d_with_indices", "max_pool3d_with_indices", "upsample", "upsample_bilinear",
    "upsample_nearest"]

from ._linear_cross_entropy import linear_cross_entropy  # noqa: E402 (uses linear, cross_entropy)

__all__ += ["linear_cross_entropy"]

def grouped_mm(mat_a: Tensor, mat_b: Tensor, *, offs: Tensor | None = None,
               bias: Tensor | None = None, out_dtype=None) -> Tensor:
    """Computes a grouped matrix multiply that shares weight shapes across experts but allows
    jagged token counts per expert, as Mixture-of-Experts layers need (``tg._grouped_mm``,
    Note [Grouped matrix products] in autograd/ops/products.py): ``mat_a`` and ``mat_b`` 2-D
    or 3-D, ``offs`` the int32 ends of the groups of a 2-D operand's grouped dimension,
    ``out_dtype`` the result's dtype."""
    from ..autograd.ops.products import _grouped_mm
    return _grouped_mm(mat_a, mat_b, offs=offs, bias=bias, out_dtype=out_dtype)


__all__ += ["grouped_mm"]


# The functions above that reach into their arguments before checking them (the margin losses,
# gumbel_softmax, one_hot, the *_with_indices pools) get the op tables' argument errors
# (autograd/registry.py's ``guarded``: PyTorch's TypeError naming the function, the argument
# and the type, in place of an AttributeError from inside). Only these: a guard is a frame per
# call, and the functions every model calls (linear, embedding, attention, activations) are
# not given one.
from ..autograd.registry import guarded as _guarded  # noqa: E402

_ARGUMENT_CHECKED = ("hinge_embedding_loss", "margin_ranking_loss", "soft_margin_loss",
                     "multilabel_soft_margin_loss", "triplet_margin_loss",
                     "triplet_margin_with_distance_loss", "binary_cross_entropy_with_logits",
                     "linear_cross_entropy", "gumbel_softmax", "one_hot",
                     "max_pool1d_with_indices", "max_pool2d_with_indices",
                     "max_pool3d_with_indices", "adaptive_max_pool1d_with_indices",
                     "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d_with_indices",
                     "rrelu_")
globals().update({_n: _guarded(globals()[_n], _n, module=__name__) for _n in _ARGUMENT_CHECKED})
