"""``torch.nn.attention`` (``sdpa_kernel``, ``SDPBackend``: which implementation
``scaled_dot_product_attention`` may use; the ``flex_attention`` and ``bias`` submodules) and ``MultiheadAttention`` over
``mha_forward`` (a matmul + softmax composite, nn/_attention.py, which also holds
``F.multi_head_attention_forward``, the same computation in PyTorch's argument layout).
Initialisation is PyTorch's: the input projections xavier_uniform_, their biases and the output
projection's bias zeros, ``bias_k`` / ``bias_v`` xavier_normal_."""

from __future__ import annotations

from ...autograd.ops.creation import empty
from ...autograd.tensor import Tensor
from .. import _attention, init
from .._attention import SDPBackend, sdpa_kernel
from ..layers import NonDynamicallyQuantizableLinear
from ..module import Module
from ..parameter import Parameter

__all__ = ["MultiheadAttention", "SDPBackend", "sdpa_kernel"]


class MultiheadAttention(Module):
    """Allows the model to jointly attend to information from different representation
    subspaces: MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O, head_i =
    Attention(Q W_i^Q, K W_i^K, V W_i^V).

    Args:
        embed_dim: total dimension of the model.
        num_heads: number of parallel attention heads; embed_dim is split across them.
        dropout: dropout probability on the attention weights (in training). Default: 0.0.
        bias: add bias to the input / output projection layers. Default: True.
        add_bias_kv: add bias to the key and value sequences at dim=0. Default: False.
        add_zero_attn: add a new batch of zeros to the key and value sequences at dim=1.
        kdim, vdim: total number of features for keys / values. Default: embed_dim.
        batch_first: inputs and outputs are (batch, seq, feature). Default: False (seq,
            batch, feature).

    Example:
        >>> mha = tg.nn.MultiheadAttention(8, 2, batch_first=True)
        >>> x = tg.randn(3, 5, 8)
        >>> out, weights = mha(x, x, x)
        >>> out.shape, weights.shape
        (tritongrad.Size([3, 5, 8]), tritongrad.Size([3, 5, 5]))
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim=None, vdim=None,
                 batch_first: bool = False, device=None, dtype=None):
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got "
                             f"embed_dim={embed_dim} and num_heads={num_heads} instead")
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads, self.dropout, self.batch_first = num_heads, dropout, batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        kw = {"device": device, "dtype": dtype}
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(empty((3 * embed_dim, embed_dim), **kw))
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = Parameter(empty((embed_dim, embed_dim), **kw))
            self.k_proj_weight = Parameter(empty((embed_dim, self.kdim), **kw))
            self.v_proj_weight = Parameter(empty((embed_dim, self.vdim), **kw))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(empty((3 * embed_dim,), **kw))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **kw)
        if add_bias_kv:
            self.bias_k = Parameter(empty((1, 1, embed_dim), **kw))
            self.bias_v = Parameter(empty((1, 1, embed_dim), **kw))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            for w in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(w)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def merge_masks(self, attn_mask: Tensor | None, key_padding_mask: Tensor | None,
                    query: Tensor) -> tuple:
        """Determines the mask type and combines the masks, as PyTorch's (for its fused
        path): only ``key_padding_mask`` (N, S) gives ``(it, 1)``; an ``attn_mask`` ((L, S)
        or (N * num_heads, L, S)) gives it expanded to (N, num_heads, L, L), plus the
        expanded padding mask when both are given, and type 2; neither gives
        ``(None, None)``. ``query`` is (N, L, E)."""
        mask_type, merged = None, None
        if key_padding_mask is not None:
            mask_type, merged = 1, key_padding_mask
        if attn_mask is not None:
            batch_size, seq_len, _ = query.shape
            mask_type = 2
            if attn_mask.dim() == 3:
                expanded = attn_mask.view(batch_size, -1, seq_len, seq_len)
            else:
                expanded = attn_mask.view(1, 1, seq_len, seq_len).expand(
                    batch_size, self.num_heads, -1, -1)
            merged = expanded
            if key_padding_mask is not None:
                merged = expanded + key_padding_mask.view(batch_size, 1, 1, seq_len).expand(
                    -1, self.num_heads, -1, -1)
        return merged, mask_type

    def forward(self, query: Tensor, key: Tensor, value: Tensor,
                key_padding_mask: Tensor | None = None, need_weights: bool = True,
                attn_mask: Tensor | None = None, average_attn_weights: bool = True,
                is_causal: bool = False):
        """Attention of ``query`` (L, N, E) (or (N, L, E) with ``batch_first``, or unbatched
        (L, E)) over ``key`` / ``value`` (S, N, kdim / vdim).

        Args:
            key_padding_mask: (N, S): True (bool) marks keys to ignore; a float mask is added
                to the attention scores.
            need_weights: also return the attention weights. Default: True.
            attn_mask: (L, S) or (N * num_heads, L, S): True (bool) marks positions that may
                not be attended; a float mask is added.
            average_attn_weights: average the returned weights over the heads (else per head).
            is_causal: a hint that ``attn_mask`` is the causal mask (which must be given).

        Returns:
            ``(attn_output, attn_weights)``: (L, N, E) (batch-first: (N, L, E)), and (N, L, S)
            averaged or (N, num_heads, L, S) per head, or None without ``need_weights``.
        """
        # PyTorch's order: the dims of every input first, then the sizes
        _attention._mha_shape_check(query, key, value, key_padding_mask, attn_mask,
                                    self.num_heads)
        if self._qkv_same_embed_dim:
            wq, wk, wv = self.in_proj_weight.chunk(3)
        else:
            wq, wk, wv = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        if query.shape[-1] != self.embed_dim:
            raise AssertionError("MultiheadAttention: was expecting embedding dimension of "
                                 f"{self.embed_dim}, but got {query.shape[-1]}")
        # PyTorch's checks (AssertionError): one key per value
        if self._qkv_same_embed_dim and key.shape != value.shape:
            raise AssertionError(f"key shape {key.shape} does not match value shape "
                                 f"{value.shape}")
        if not self._qkv_same_embed_dim and key.shape[:-1] != value.shape[:-1]:
            raise AssertionError(f"key's sequence and batch dims {key.shape[:-1]} do not match "
                                 f"value's {value.shape[:-1]}")
        return _attention.mha_forward(
            query, key, value, self.num_heads, wq, wk, wv, self.in_proj_bias, self.bias_k,
            self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight,
            self.out_proj.bias, training=self.training, key_padding_mask=key_padding_mask,
            need_weights=need_weights, attn_mask=attn_mask,
            average_attn_weights=average_attn_weights, is_causal=is_causal,
            batch_first=self.batch_first)
