"""``torch.nn.modules.sparse``'s import path: the embeddings.

A re-export: the classes are defined elsewhere in nn/ (this keeps PyTorch import paths
working).
"""

from ..layers import Embedding, EmbeddingBag

__all__ = ["Embedding", "EmbeddingBag"]
