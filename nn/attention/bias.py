"""``torch.nn.attention.bias``: causal masks for ``scaled_dot_product_attention`` when the query
and key lengths differ.

``causal_upper_left(L, S)`` lets query i attend keys 0..i (the diagonal starts at the upper
left corner); ``causal_lower_right(L, S)`` lets it attend keys 0..i + S - L (the diagonal ends
at the lower right corner: the last query sees every key, as when decoding with a cache).
Each is a ``CausalBias``, a bool tensor of the mask (shape (L, S), so any other op sees the
mask) that ``scaled_dot_product_attention`` recognises through ``__torch_function__``: an
upper-left mask, or a square one, runs the call with ``is_causal=True`` (the fused attention
where it applies); a lower-right one with the materialised mask. PyTorch's CausalBias is an
empty tensor subclass whose other ops are undefined.
"""

from __future__ import annotations

import warnings
from enum import IntEnum

from ...autograd.ops import creation
from ...autograd.tensor import Tensor
from ...runtime import dtype as dtypes
from .. import functional as F

__all__ = ["CausalBias", "CausalVariant", "causal_lower_right", "causal_upper_left"]


class CausalVariant(IntEnum):
    """Where a causal mask's diagonal is anchored when the query and key lengths differ."""
    UPPER_LEFT = 1
    LOWER_RIGHT = 2


class CausalBias(Tensor):
    """A causal attention mask of ``variant`` for ``seq_len_q`` queries and ``seq_len_kv``
    keys, for ``scaled_dot_product_attention(..., attn_mask=...)``."""

    def __new__(cls, variant: CausalVariant, seq_len_q: int, seq_len_kv: int):
        offset = 0 if variant == CausalVariant.UPPER_LEFT else seq_len_kv - seq_len_q
        mask = creation.ones(seq_len_q, seq_len_kv, dtype=dtypes.bool).tril(offset)
        return Tensor._make_subclass(cls, mask)

    def __init__(self, variant: CausalVariant, seq_len_q: int, seq_len_kv: int):
        if not isinstance(variant, CausalVariant):
            raise TypeError(f"CausalBias: variant must be a CausalVariant, got {variant!r}")
        self.variant = variant
        self.seq_len_q = seq_len_q
        self.seq_len_kv = seq_len_kv
        if seq_len_q > seq_len_kv and variant == CausalVariant.LOWER_RIGHT:
            warnings.warn("Lower right causal bias will produce NaNs in the output when "
                          "seq_len_q > seq_len_kv!", stacklevel=3)

    def _materialize(self, device=None) -> Tensor:
        """The mask as a plain bool tensor (on ``device``)."""
        mask = self.as_subclass(Tensor)
        return mask if device is None else mask.to(device)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is F.scaled_dot_product_attention:
            return cls._dispatch(*args, **kwargs)
        return super().__torch_function__(func, types, args, kwargs)

    @staticmethod
    def _dispatch(query: Tensor, key: Tensor, value: Tensor, attn_mask: CausalBias,
                  dropout_p: float = 0.0, is_causal: bool = False, scale=None,
                  enable_gqa: bool = False) -> Tensor:
        if is_causal:
            raise ValueError("CausalBias should not be used with causal=True")
        square = attn_mask.seq_len_q == attn_mask.seq_len_kv
        if square or attn_mask.variant == CausalVariant.UPPER_LEFT:
            return F.scaled_dot_product_attention(query, key, value, None, dropout_p, True,
                                                  scale=scale, enable_gqa=enable_gqa)
        return F.scaled_dot_product_attention(query, key, value,
                                              attn_mask._materialize(query.device), dropout_p,
                                              False, scale=scale, enable_gqa=enable_gqa)


def causal_upper_left(*size) -> CausalBias:
    """A causal mask whose diagonal starts at the upper left corner: query i attends keys
    0..i. ``size``: (seq_len_q, seq_len_kv)."""
    if len(size) != 2:
        raise AssertionError("causal_upper_left only supports 2D tensors")
    return CausalBias(CausalVariant.UPPER_LEFT, *size)


def causal_lower_right(*size) -> CausalBias:
    """A causal mask whose diagonal ends at the lower right corner: query i attends keys
    0..i + seq_len_kv - seq_len_q. ``size``: (seq_len_q, seq_len_kv)."""
    if len(size) != 2:
        raise AssertionError("causal_lower_right only supports 2D tensors")
    return CausalBias(CausalVariant.LOWER_RIGHT, *size)
