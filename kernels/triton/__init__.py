"""The GPU backend: the kernel contract (see ``tritongrad.kernels``) as Triton kernels over
``runtime.DeviceArray``, launched on tritongrad's current stream.

A few generic kernels carry every op (one file per family: kernels with their formulas, then
plans and launchers):

- elementwise.py: a flat and a strided kernel under add ... where, unary(), binary(), and the
  copy/arange ops behind copy_/astype/contiguous/full/arange (memory.py), the op a constexpr:
  its formula from the table OPS; broadcasting through zero strides, collapsed dimensions,
  Python scalars passed by value. elementwise_ops.py: the contract's launchers (dtype rules,
  scalars, out=);
- reduction.py: one strided fold-one-dim kernel (sum prod amax amin all any) and its
  (value, index) twin (argmax argmin), planned into one or more passes;
- rowwise.py: cumsum and softmax/log_softmax along one dim;
- matmul.py: a tiled tl.dot kernel over arbitrary strides, batched (bmm); float32 in IEEE
  precision;
- concat.py: cat, up to four inputs joined per launch;
- indexing.py: gather/scatter kernels under index, index_put_, gather, scatter_; nonzero;
  scatter_reduce_ (a pull kernel: each place folds the values aimed at it); index_guard (the
  CUDA index checks' wrap, clamp and extremes in one kernel);
- sorting.py: sort along one dim (a stable rank sort);
- nn.py: fused GELU, layer norm, cross-entropy (forward and backward), embedding;
- activations.py: SiLU, Mish, Softplus, LogSigmoid, Hardswish, Hardsigmoid, Hardtanh and GLU,
  forward and backward, one kernel each way;
- conv.py: 2-D convolution as implicit GEMM (forward, input and weight gradients);
- attention.py: fused (flash) scaled dot-product attention, forward and backward;
- optim.py: fused SGD and Adam/AdamW updates, one launch per parameter;
- random.py: rand, randn, randint and dropout masks from one Philox kernel (a seed and a
  counter, nothing drawn on the host);
- _launch.py: shape collapsing, the shared block sizes and num_warps rule, plan caches, dtype
  tables, the driver binding, the kernels' numeric constants; compat.py: where the supported
  Triton releases differ (Note [interpreter fidelity]).

Dtypes: float16, bfloat16, float32, float64 for all math; bool, uint8, int8, int16, int32,
int64 for copies, casts, full, arange, comparisons, where, the integer ops (add sub mul maximum
minimum neg relu abs sign bitwise ops, integer divisions), reductions and indexing; complex64
and complex128 (complex.py: pairs of float lanes, Note [complex lanes]) for creation, copies
and casts, views, add sub mul div pow neg exp log sqrt where, the comparisons (gt ge lt le in
NumPy's lexicographic order), unary abs (real result) sign (z / |z|) sin cos tan tanh sigmoid
expm1 log1p angle conj, the tanh/sigmoid derivative rules, sum prod all any, cumsum, matmul
and bmm, index index_put_ gather scatter_ nonzero. Anything else raises TypeError naming the op
and the dtype. The module never imports torch.
"""

# compat first: it decides whether kernels are interpreted before anything imports Triton
from . import compat  # noqa: F401
from . import complex as _complex
from . import indexing as _indexing
from . import reduction as _reduction
from . import rowwise as _rowwise
from ._launch import ComplexOperand as _ComplexOperand
from .activations import activation, activation_backward, glu, glu_backward
from .attention import attention, attention_backward
from .complex import conj, imag, real, view_as_complex, view_as_real
from .conv import conv2d, conv2d_backward
from .elementwise_ops import (
    add,
    binary,
    div,
    eq,
    exp,
    ge,
    gt,
    le,
    log,
    lt,
    maximum,
    minimum,
    mul,
    ne,
    neg,
    pow,
    relu,
    sqrt,
    sub,
    unary,
    where,
)
from .concat import cat
from .indexing import index_guard, scatter_reduce_
from .matmul import addmm, bmm, matmul
from .memory import (
    arange,
    as_strided,
    astype,
    contiguous,
    copy_,
    empty,
    expand,
    full,
    getitem,
    permute,
    storage_offset,
    strides,
    view,
)
from .nn import (
    cross_entropy,
    cross_entropy_backward,
    embedding,
    embedding_backward,
    gelu,
    gelu_backward,
    layer_norm,
    layer_norm_backward,
    mean_over_targets,
)
from .normalization import batch_norm, batch_norm_backward
from .optim import adam_step, sgd_step
# (beyond the contract: only a backend whose arrays a CUDA graph can capture has it)
from .optim import adam_step_capturable  # noqa: F401
from .random import dropout_mask, rand, randint, randn
from .recurrent import gru_cell, gru_cell_backward, lstm_cell, lstm_cell_backward
from .reduction import argreduce
from .rowwise import softmax
from .sorting import sort

# -- complex routing (Note [complex lanes] in complex.py) ----------------------------------
# The reductions and cumsum refuse complex dtypes with ComplexOperand, caught here; the
# indexing launchers check no dtype (they take any element type), so they test it.


def sum(a, dims, keepdim):
    """reduction.sum; complex arrays sum their real views' lanes."""
    try:
        return _reduction.sum(a, dims, keepdim)
    except _ComplexOperand:
        return _complex.sum(a, dims, keepdim)


def reduce(op, a, dims, keepdim):
    """reduction.reduce; complex prod (a tree of complex products), all and any (of a != 0)."""
    try:
        return _reduction.reduce(op, a, dims, keepdim)
    except _ComplexOperand:
        if op == "prod":
            return _complex.prod(a, dims, keepdim)
        if op in ("all", "any"):
            return _complex.any_nonzero(op, a, dims, keepdim, _reduction.reduce)
        raise


def cumsum(a, dim, reverse=False):
    """rowwise.cumsum; complex arrays cumsum their real views' lanes."""
    try:
        return _rowwise.cumsum(a, dim, reverse)
    except _ComplexOperand:
        return _complex.cumsum(a, dim, reverse, _rowwise.cumsum)


def index(a, indices):
    """indexing.index (complex: on the real view)."""
    if a.dtype.is_complex:
        return _complex.index(a, indices, _indexing.index)
    return _indexing.index(a, indices)


def index_put_(a, indices, values, accumulate):
    """indexing.index_put_ (complex: on the real views)."""
    if a.dtype.is_complex:
        return _complex.index_put_(a, indices, values, accumulate, _indexing.index_put_)
    return _indexing.index_put_(a, indices, values, accumulate)


def gather(a, dim, index):
    """indexing.gather (complex: on the real view, index repeated along the lanes)."""
    if a.dtype.is_complex:
        return _complex.gather(a, dim, index, _indexing.gather)
    return _indexing.gather(a, dim, index)


def scatter_(a, dim, index, src, accumulate):
    """indexing.scatter_ (complex: on the real views, index repeated along the lanes)."""
    if a.dtype.is_complex:
        return _complex.scatter_(a, dim, index, src, accumulate, _indexing.scatter_)
    return _indexing.scatter_(a, dim, index, src, accumulate)


def nonzero(a):
    """indexing.nonzero (complex: of a != 0)."""
    if a.dtype.is_complex:
        a = ne(a, 0)
    return _indexing.nonzero(a)


__all__ = [
    "activation",
    "activation_backward",
    "adam_step",
    "add",
    "addmm",
    "arange",
    "argreduce",
    "as_strided",
    "astype",
    "attention",
    "attention_backward",
    "batch_norm",
    "batch_norm_backward",
    "binary",
    "bmm",
    "cat",
    "conj",
    "contiguous",
    "conv2d",
    "conv2d_backward",
    "copy_",
    "cross_entropy",
    "cross_entropy_backward",
    "cumsum",
    "div",
    "dropout_mask",
    "embedding",
    "embedding_backward",
    "empty",
    "eq",
    "exp",
    "expand",
    "full",
    "gather",
    "ge",
    "gelu",
    "gelu_backward",
    "getitem",
    "glu",
    "glu_backward",
    "gru_cell",
    "gru_cell_backward",
    "gt",
    "imag",
    "index",
    "index_guard",
    "index_put_",
    "layer_norm",
    "layer_norm_backward",
    "le",
    "log",
    "lstm_cell",
    "lstm_cell_backward",
    "lt",
    "matmul",
    "maximum",
    "mean_over_targets",
    "minimum",
    "mul",
    "ne",
    "neg",
    "nonzero",
    "permute",
    "pow",
    "rand",
    "randint",
    "randn",
    "real",
    "reduce",
    "relu",
    "scatter_",
    "scatter_reduce_",
    "sgd_step",
    "softmax",
    "sort",
    "sqrt",
    "storage_offset",
    "strides",
    "sub",
    "sum",
    "unary",
    "view",
    "view_as_complex",
    "view_as_real",
    "where",
]
