"""``torch.sparse``: products and reductions of sparse COO tensors (autograd/sparse_ops.py;
the tensor and its autograd: autograd/sparse.py; docs/sparse.md describes both).

Example:
    >>> s = tg.sparse_coo_tensor([[0, 1], [1, 0]], [2., 3.], (2, 2))
    >>> tg.sparse.sum(s).item()
    5.0
"""

from .autograd.sparse import SparseTensor
from .autograd.sparse_ops import (addmm, log_softmax, mm, softmax,
                                   sum)  # noqa: A004 - PyTorch's name

__all__ = ["SparseTensor", "addmm", "log_softmax", "mm", "softmax", "sum"]
