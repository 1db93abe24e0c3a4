"""The CPU backend: the kernel contract (see ``tritongrad.kernels``) over NumPy arrays.

It is both the CPU fallback and the reference the Triton kernels are tested against. bfloat16
arrays are ``bf16.BF16Array`` (float32 storage on the bfloat16 grid).
"""

from .attention import attention, attention_backward
from .complex import conj, imag, real, view_as_complex, view_as_real
from .conv import conv2d, conv2d_backward
# beyond the contract (not in __all__): the convolution's kept columns, which
# autograd/ops/conv.py looks for on a backend (Note [Kept columns] in conv.py)
from .conv import conv2d_backward_columns, conv2d_columns  # noqa: F401
from .elementwise import (add, binary, div, eq, exp, ge, gt, le, log, lt, maximum, minimum, mul,
                          ne, neg, pow, relu, sqrt, sub, unary, where)
from .indexing import (gather, index, index_guard, index_put_, nonzero, scatter_,
                       scatter_reduce_)
from .linalg import addmm, bmm, matmul
from .memory import (arange, as_strided, astype, cat, contiguous, copy_, empty, expand, full,
                     getitem, permute, storage_offset, strides, view)
from .nn import (activation, activation_backward, batch_norm, batch_norm_backward,
                 cross_entropy, cross_entropy_backward, embedding, embedding_backward, gelu,
                 gelu_backward, glu, glu_backward, layer_norm, layer_norm_backward,
                 mean_over_targets)
from .optim import adam_step, sgd_step
from .random import dropout_mask, rand, randint, randn
from .recurrent import gru_cell, gru_cell_backward, lstm_cell, lstm_cell_backward
from .reduction import argreduce, cumsum, reduce, softmax, sum
from .sorting import sort

__all__ = [
    "empty", "full", "arange", "astype", "contiguous", "copy_", "cat",
    "view", "permute", "expand", "getitem", "as_strided", "strides", "storage_offset",
    "add", "sub", "mul", "div", "pow", "maximum", "minimum",
    "gt", "ge", "lt", "le", "eq", "ne",
    "neg", "exp", "log", "relu", "sqrt", "where", "unary", "binary",
    "sum", "reduce", "argreduce", "cumsum", "softmax",
    "matmul", "addmm", "bmm",
    "nonzero", "index", "index_put_", "gather", "scatter_", "scatter_reduce_", "sort",
    "index_guard",
    "gelu", "gelu_backward", "activation", "activation_backward", "glu", "glu_backward",
    "layer_norm", "layer_norm_backward", "batch_norm",
    "batch_norm_backward", "cross_entropy",
    "cross_entropy_backward", "mean_over_targets", "embedding", "embedding_backward",
    "sgd_step", "adam_step",
    "rand", "randn", "randint", "dropout_mask",
    "conv2d", "conv2d_backward",
    "attention", "attention_backward",
    "conj", "real", "imag", "view_as_real", "view_as_complex",
    "lstm_cell", "lstm_cell_backward", "gru_cell", "gru_cell_backward",
]
