"""``torch.sparse``: products and reductions of sparse tensors (COO: autograd/sparse_ops.py;
CSR, CSC, BSR, BSC: autograd/sparse_compressed_ops.py; the tensors and their autograd:
autograd/sparse.py, autograd/sparse_compressed.py; docs/sparse.md describes them).

Example:
    >>> s = tg.sparse_coo_tensor([[0, 1], [1, 0]], [2., 3.], (2, 2))
    >>> tg.sparse.sum(s).item()
    5.0
"""

from .autograd.sparse import SparseTensor, check_sparse_tensor_invariants
from .autograd.sparse_compressed import SparseCompressedTensor
from .autograd.sparse_compressed_ops import sampled_addmm, spdiags
from .autograd.sparse_ops import (addmm, log_softmax, mm, softmax,
                                   sum)  # noqa: A004 - PyTorch's name

__all__ = ["SparseCompressedTensor", "SparseTensor", "addmm", "check_sparse_tensor_invariants",
           "log_softmax", "mm", "sampled_addmm", "softmax", "spdiags", "sum"]
