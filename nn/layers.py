"""Layers with parameters or state: Linear, Embedding, LayerNorm, Dropout, Identity, Flatten,
Unflatten.

Default initialisations are PyTorch's: Linear's weight kaiming_uniform_(a=sqrt(5)) (that is
U(-1/sqrt(in), 1/sqrt(in))) and its bias U(-1/sqrt(in), 1/sqrt(in)); Embedding N(0, 1) with
the padding row zeroed; LayerNorm ones and zeros.
"""

from __future__ import annotations

import math

from ..autograd.ops.creation import empty
from ..autograd.tensor import Tensor, wrap_dim
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter, affine_parameters, normalized_shape_parameters

__all__ = ["AlphaDropout", "Bilinear", "CosineSimilarity", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "Embedding",
           "EmbeddingBag", "Flatten", "Fold", "Identity", "LayerNorm", "Linear",
           "NonDynamicallyQuantizableLinear", "PairwiseDistance", "PixelShuffle",
           "PixelUnshuffle", "Unflatten", "Unfold"]


class Identity(Module):
    """Returns its input (a placeholder; arguments are accepted and ignored)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:
        return input


class Linear(Module):
    """y = x @ weight^T + bias.

    Args:
        in_features: size of each input sample's last dimension.
        out_features: size of each output sample's last dimension.
        bias: learn an additive bias (default True).
        device, dtype: where and how the parameters are created.

    Shapes: input (*, in_features) -> output (*, out_features). ``weight`` is
    (out_features, in_features).

    Example:
        >>> m = tg.nn.Linear(20, 30)
        >>> m(tg.randn(128, 20)).shape
        tritongrad.Size([128, 30])
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None,
                 dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        affine_parameters(self, (out_features, in_features), ("weight",), True, device, dtype)
        affine_parameters(self, (out_features,), ("bias",), bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        init.fan_in_uniform_(self.bias, self.in_features)

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class NonDynamicallyQuantizableLinear(Linear):
    """A ``Linear`` under another name: PyTorch uses it for ``MultiheadAttention.out_proj``
    (to keep its quantization tools off it), so reprs name it; it behaves as Linear."""


class Embedding(Module):
    """A lookup table: row i of ``weight`` (num_embeddings, embedding_dim) for index i.

    Args:
        num_embeddings: table size.
        embedding_dim: size of each row.
        padding_idx: a row that gets no gradient (initialised to zeros).
        max_norm: rows looked up whose ``norm_type``-norm is above this are renormalised to it,
            in place, on each forward.
        norm_type: the p of that p-norm (default 2).
        scale_grad_by_freq: divide each row's gradient by its frequency in the mini-batch.
        sparse: the weight's gradient is a sparse COO tensor (one row per looked-up
            index; docs/sparse.md): use with ``optim.SGD``, ``Adagrad`` or ``SparseAdam``.
        _weight: an initial table instead of N(0, 1).
        _freeze: do not train the table.

    Example:
        >>> emb = tg.nn.Embedding(10, 3)
        >>> emb(tg.tensor([[1, 2], [4, 5]])).shape
        tritongrad.Size([2, 2, 3])
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx=None,
                 max_norm=None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                 sparse: bool = False, _weight=None, _freeze: bool = False, device=None,
                 dtype=None):
        super().__init__()
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError("Embedding: Padding_idx must be within num_embeddings")
            padding_idx %= num_embeddings
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_idx
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if _weight is None:
            self.weight = Parameter(empty((num_embeddings, embedding_dim), device=device,
                                          dtype=dtype), requires_grad=not _freeze)
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise AssertionError("Shape of weight does not match num_embeddings and "
                                     "embedding_dim")  # (PyTorch asserts)
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            from ..autograd.grad_mode import no_grad
            with no_grad():
                self.weight[self.padding_idx].copy_(0.0)

    def forward(self, input: Tensor) -> Tensor:
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq:
            s += ", scale_grad_by_freq=True"
        if self.sparse:
            s += ", sparse=True"
        return s

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True, padding_idx=None,
                        max_norm=None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        sparse: bool = False) -> Embedding:
        """An Embedding holding ``embeddings`` (2-D, used as the weight itself, not a copy);
        ``freeze`` (default True) stops it being trained."""
        if embeddings.ndim != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx=padding_idx, max_norm=max_norm, norm_type=norm_type,
                   scale_grad_by_freq=scale_grad_by_freq, sparse=sparse, _weight=embeddings,
                   _freeze=freeze)


class LayerNorm(Module):
    """y = (x - E[x]) / sqrt(Var[x] + eps) * weight + bias over the trailing
    ``normalized_shape`` dims (biased variance), as one fused kernel each way.

    Example:
        >>> ln = tg.nn.LayerNorm(8)
        >>> ln(tg.randn(2, 5, 8)).shape
        tritongrad.Size([2, 5, 8])
    """

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device=None, dtype=None):
        super().__init__()
        normalized_shape_parameters(self, normalized_shape, eps, elementwise_affine, bias,
                                    device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class Dropout(Module):
    """Zeroes elements with probability ``p`` in training (scaling the rest by 1/(1-p));
    the identity in eval mode."""

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class AlphaDropout(Dropout):
    """Dropout that keeps SELU activations' mean and variance (``F.alpha_dropout``)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.alpha_dropout(input, self.p, self.training, self.inplace)


class Dropout1d(Dropout):
    """Zeroes whole channels of (N, C, L) or (C, L) input with probability ``p`` in training
    (scaling the others by 1/(1-p)); the identity in eval mode."""

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(Dropout):
    """Zeroes whole channels of (N, C, H, W) or (C, H, W) input with probability ``p`` in
    training."""

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(Dropout):
    """Zeroes whole channels of (N, C, D, H, W) or (C, D, H, W) input with probability ``p``
    in training."""

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout3d(input, self.p, self.training, self.inplace)


class ChannelShuffle(Module):
    """Divides the channels of a (N, C, *) tensor into ``groups`` groups and interleaves them
    (``F.channel_shuffle``), as in ShuffleNet.

    Example:
        >>> tg.nn.ChannelShuffle(2)(tg.arange(4.0).reshape(1, 4, 1)).flatten()
        tensor([0., 2., 1., 3.])
    """

    def __init__(self, groups: int):
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"


class PixelShuffle(Module):
    """Rearranges (*, C r^2, H, W) into (*, C, H r, W r), r = ``upscale_factor``."""

    def __init__(self, upscale_factor: int):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """Rearranges (*, C, H r, W r) into (*, C r^2, H, W), r = ``downscale_factor``."""

    def __init__(self, downscale_factor: int):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"


class Flatten(Module):
    """Flattens dims ``start_dim`` .. ``end_dim`` into one."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input: Tensor) -> Tensor:
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Unflattens dim ``dim`` of the input into ``unflattened_size`` (a tuple of ints, one of
    which may be -1), the inverse of ``Flatten``.

    Example:
        >>> tg.nn.Unflatten(1, (2, 5, 5))(tg.randn(2, 50)).shape
        tritongrad.Size([2, 2, 5, 5])
    """

    def __init__(self, dim: int, unflattened_size):
        super().__init__()
        if not isinstance(dim, int):
            raise TypeError(f"invalid argument: dim must be an int, got {type(dim).__name__}")
        if not isinstance(unflattened_size, (tuple, list)) or not all(
                isinstance(n, int) for n in unflattened_size):
            raise TypeError("unflattened_size must be tuple of ints, but found element of "
                            f"type {type(unflattened_size).__name__} instead")
        # kept as given (list or tuple): PyTorch's repr shows it that way
        self.dim, self.unflattened_size = dim, unflattened_size

    def forward(self, input: Tensor) -> Tensor:
        dim = wrap_dim(self.dim, input.ndim, "unflatten")
        shape = tuple(input.shape)
        sizes = self.unflattened_size
        known = math.prod(s for s in sizes if s != -1)
        if (known != shape[dim] if -1 not in sizes else known == 0 or shape[dim] % known):
            raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to "
                               f"the size of dim {dim} ({shape[dim]}) in the input tensor")
        return input.reshape(shape[:dim] + tuple(sizes) + shape[dim + 1:])

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class CosineSimilarity(Module):
    """The cosine similarity of two inputs along ``dim`` (``F.cosine_similarity``)."""

    def __init__(self, dim: int = 1, eps: float = 1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """The p-norm distance of two inputs along their last dimension
    (``F.pairwise_distance``)."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class Bilinear(Module):
    """y = x1^T A x2 + b: weight (out_features, in1_features, in2_features), initialised
    U(-1/sqrt(in1_features), 1/sqrt(in1_features)) as the bias, as PyTorch's."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int,
                 bias: bool = True, device=None, dtype=None):
        super().__init__()
        self.in1_features, self.in2_features = in1_features, in2_features
        self.out_features = out_features
        self.weight = Parameter(empty((out_features, in1_features, in2_features), device=device,
                                      dtype=dtype))
        self.bias = Parameter(empty((out_features,), device=device, dtype=dtype)) if bias \
            else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class EmbeddingBag(Embedding):
    """Sums, averages or takes the maximum of bags of embeddings (``F.embedding_bag``);
    ``forward(input, offsets=None, per_sample_weights=None)``."""

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm=None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                 sparse: bool = False, _weight=None, include_last_offset: bool = False,
                 padding_idx=None, device=None, dtype=None):
        super().__init__(num_embeddings, embedding_dim, padding_idx, max_norm, norm_type,
                         scale_grad_by_freq, sparse, _weight, device=device, dtype=dtype)
        self.mode, self.include_last_offset = mode, include_last_offset

    def forward(self, input: Tensor, offsets: Tensor | None = None,
                per_sample_weights: Tensor | None = None) -> Tensor:
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                               self.scale_grad_by_freq, self.mode, self.sparse,
                               per_sample_weights, self.include_last_offset, self.padding_idx)

    def extra_repr(self) -> str:
        # (PyTorch's order, which differs from Embedding's, and no ``sparse``)
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm!r}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type!r}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq!r}"
        s += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx!r}"
        return s

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True, max_norm=None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        mode: str = "mean", sparse: bool = False,
                        include_last_offset: bool = False, padding_idx=None) -> EmbeddingBag:
        """An EmbeddingBag holding ``embeddings`` (2-D, used as the weight itself);
        ``freeze`` (default True) stops it being trained."""
        if embeddings.ndim != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        m = cls(rows, cols, max_norm, norm_type, scale_grad_by_freq, mode, sparse, embeddings,
                include_last_offset, padding_idx)
        m.weight.requires_grad = not freeze
        return m


class Fold(Module):
    """Combines sliding local blocks into a tensor (``F.fold``, col2im)."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input: Tensor) -> Tensor:
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}")


class Unfold(Module):
    """Extracts sliding local blocks from a batched input (``F.unfold``, im2col)."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, input: Tensor) -> Tensor:
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")
