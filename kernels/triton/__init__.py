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
- indexing.py: gather/scatter kernels under index, index_put_, gather, scatter_; nonzero;
  scatter_reduce_ (a pull kernel: each place folds the values aimed at it);
- sorting.py: sort along one dim (a stable rank sort);
- nn.py: fused GELU, layer norm, cross-entropy (forward and backward), embedding;
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
minimum neg relu abs sign bitwise ops, integer divisions), reductions and indexing. Anything
else raises TypeError naming the op and the dtype. The module never imports torch.
"""

# compat first: it decides whether kernels are interpreted before anything imports Triton
from . import compat  # noqa: F401
from .attention import attention, attention_backward
from .complex import conj, imag, real
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
from .indexing import gather, index, index_put_, nonzero, scatter_, scatter_reduce_
from .matmul import bmm, matmul
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
)
from .optim import adam_step, sgd_step
from .random import dropout_mask, rand, randint, randn
from .reduction import argreduce, reduce, sum
from .rowwise import cumsum, softmax
from .sorting import sort

__all__ = [
    "adam_step",
    "add",
    "arange",
    "argreduce",
    "as_strided",
    "astype",
    "attention",
    "attention_backward",
    "binary",
    "bmm",
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
    "gt",
    "imag",
    "index",
    "index_put_",
    "layer_norm",
    "layer_norm_backward",
    "le",
    "log",
    "lt",
    "matmul",
    "maximum",
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
    "where",
]
