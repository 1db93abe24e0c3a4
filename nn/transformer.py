"""The transformer layers of ``torch.nn`` (Vaswani et al., 2017): ``TransformerEncoderLayer``,
``TransformerDecoderLayer``, the stacks ``TransformerEncoder`` / ``TransformerDecoder`` and
``Transformer``, with PyTorch's submodule names, arguments and order of operations (post-norm
by default, ``norm_first=True`` for pre-norm), built on ``MultiheadAttention``, ``Linear``,
``LayerNorm`` and ``Dropout``.

The fast paths PyTorch takes in inference (nested tensors, the fused encoder kernel) compute
the same values; here every call takes the path written below.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from ..autograd.ops.creation import full
from ..autograd.tensor import Tensor
from . import functional as F
from . import init
from .attention import MultiheadAttention
from .container import ModuleList
from .layers import Dropout, LayerNorm, Linear
from .module import Module

__all__ = ["Transformer", "TransformerDecoder", "TransformerDecoderLayer", "TransformerEncoder",
           "TransformerEncoderLayer"]

_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


def _activation(activation) -> Callable:
    if callable(activation):
        return activation
    if activation in _ACTIVATIONS:
        return _ACTIVATIONS[activation]
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


class _Layer(Module):
    """What the encoder and decoder layers share: the feed-forward block, the norms and
    dropouts after each block, and the self-attention block."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int, dropout: float,
                 activation, layer_norm_eps: float, batch_first: bool, norm_first: bool,
                 bias: bool, blocks: int, device, dtype):
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **kw)
        if blocks == 3:
            self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                                     bias=bias, batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        # PyTorch's registration order (named_modules, repr): all the norms, then the dropouts
        for i in range(1, blocks + 1):
            setattr(self, f"norm{i}", LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        for i in range(1, blocks + 1):
            setattr(self, f"dropout{i}", Dropout(dropout))
        self.activation = _activation(activation)
        if blocks == 2:
            # PyTorch's flag for its fused inference path: 1 relu, 2 gelu, 0 anything else
            from .activation import GELU, ReLU
            act = self.activation
            self.activation_relu_or_gelu = (1 if act is F.relu or isinstance(act, ReLU) else
                                            2 if act is F.gelu or isinstance(act, GELU) else 0)

    def _sa_block(self, x: Tensor, attn_mask, key_padding_mask, is_causal: bool) -> Tensor:
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x: Tensor, dropout: Module) -> Tensor:
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return dropout(x)


class TransformerEncoderLayer(_Layer):
    r"""Self-attention then a feed-forward network, each added to its input and normalized::

        x = norm1(x + dropout1(self_attn(x)));  x = norm2(x + dropout2(ff(x)))   (post-norm)
        x = x + dropout1(self_attn(norm1(x)));  x = x + dropout2(ff(norm2(x)))   (norm_first)

    with ``ff(x) = linear2(dropout(activation(linear1(x))))``.

    Args:
        d_model: the number of expected features in the input.
        nhead: the number of heads in the multiheadattention models.
        dim_feedforward: the dimension of the feedforward network model (default 2048).
        dropout: the dropout value (default 0.1).
        activation: ``"relu"`` (default), ``"gelu"`` or a unary callable.
        layer_norm_eps: the eps value in layer normalization components (default 1e-5).
        batch_first: inputs are (batch, seq, feature) (default: (seq, batch, feature)).
        norm_first: normalize before each block instead of after (default False).
        bias: biases in the linear and layer-norm layers (default True).

    Example:
        >>> layer = tg.nn.TransformerEncoderLayer(d_model=32, nhead=4, batch_first=True)
        >>> layer(tg.randn(2, 10, 32)).shape
        tritongrad.Size([2, 10, 32])
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation=F.relu, layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device=None, dtype=None):
        super().__init__(d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                         batch_first, norm_first, bias, 2, device, dtype)

    def forward(self, src: Tensor, src_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None, is_causal: bool = False) -> Tensor:
        """``src`` through the layer; ``src_mask`` / ``src_key_padding_mask`` /
        ``is_causal`` go to the self-attention (as ``attn_mask``, ``key_padding_mask``,
        ``is_causal``)."""
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x), self.dropout2)
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x, self.dropout2))


class TransformerDecoderLayer(_Layer):
    r"""Self-attention, attention over the encoder's output (``memory``), then a feed-forward
    network, each added to its input and normalized (``norm1``..``norm3``, after each block,
    or before with ``norm_first``). Arguments as ``TransformerEncoderLayer``'s.

    Example:
        >>> layer = tg.nn.TransformerDecoderLayer(d_model=32, nhead=4, batch_first=True)
        >>> layer(tg.randn(2, 5, 32), tg.randn(2, 10, 32)).shape
        tritongrad.Size([2, 5, 32])
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation=F.relu, layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device=None, dtype=None):
        super().__init__(d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                         batch_first, norm_first, bias, 3, device, dtype)

    def _mha_block(self, x: Tensor, mem: Tensor, attn_mask, key_padding_mask,
                   is_causal: bool) -> Tensor:
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask,
                                key_padding_mask=key_padding_mask, need_weights=False,
                                is_causal=is_causal)[0]
        return self.dropout2(x)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False) -> Tensor:
        """``tgt`` through the layer, attending to ``memory``."""
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask,
                                    memory_key_padding_mask, memory_is_causal)
            return x + self._ff_block(self.norm3(x), self.dropout3)
        x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
        x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask,
                                           memory_is_causal))
        return self.norm3(x + self._ff_block(x, self.dropout3))


def _clones(layer: Module, n: int) -> ModuleList:
    return ModuleList([copy.deepcopy(layer) for _ in range(n)])


class TransformerEncoder(Module):
    """``num_layers`` copies of ``encoder_layer`` (deep copies: separate parameters) applied
    in turn, then ``norm`` if given.

    Args:
        encoder_layer: a ``TransformerEncoderLayer``.
        num_layers: the number of sub-encoder-layers in the encoder.
        norm: the layer normalization component (optional).
        enable_nested_tensor, mask_check: accepted for compatibility (no nested tensors).
    """

    def __init__(self, encoder_layer: Module, num_layers: int, norm: Module | None = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True):
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        # PyTorch's flags (no nested-tensor fast path here: use_nested_tensor stays False)
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = False
        self.mask_check = mask_check

    def forward(self, src: Tensor, mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                is_causal: bool | None = None) -> Tensor:
        out = src
        for layer in self.layers:
            out = layer(out, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                        is_causal=bool(is_causal))
        return out if self.norm is None else self.norm(out)


class TransformerDecoder(Module):
    """``num_layers`` copies of ``decoder_layer`` applied in turn (each attending to the same
    ``memory``), then ``norm`` if given."""

    def __init__(self, decoder_layer: Module, num_layers: int, norm: Module | None = None):
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False) -> Tensor:
        out = tgt
        for layer in self.layers:
            out = layer(out, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                        tgt_key_padding_mask=tgt_key_padding_mask,
                        memory_key_padding_mask=memory_key_padding_mask,
                        tgt_is_causal=bool(tgt_is_causal), memory_is_causal=memory_is_causal)
        return out if self.norm is None else self.norm(out)


class Transformer(Module):
    """An encoder-decoder transformer: ``TransformerEncoder`` and ``TransformerDecoder`` stacks
    with a final ``LayerNorm`` each, every weight matrix initialised Xavier-uniform (PyTorch's
    ``_reset_parameters``).

    Args:
        d_model (512), nhead (8), num_encoder_layers (6), num_decoder_layers (6),
        dim_feedforward (2048), dropout (0.1), activation (F.relu): as the layers'.
        custom_encoder, custom_decoder: modules used instead of the built stacks.
        layer_norm_eps, batch_first, norm_first, bias: as the layers'.
    """

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation=F.relu, custom_encoder: Module | None = None,
                 custom_decoder: Module | None = None, layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device=None, dtype=None):
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        layer = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                 batch_first, norm_first, bias)
        self.encoder = custom_encoder if custom_encoder is not None else TransformerEncoder(
            TransformerEncoderLayer(*layer, **kw), num_encoder_layers,
            LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        self.decoder = custom_decoder if custom_decoder is not None else TransformerDecoder(
            TransformerDecoderLayer(*layer, **kw), num_decoder_layers,
            LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Tensor | None = None,
                tgt_mask: Tensor | None = None, memory_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                src_is_causal: bool | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:
        """Encodes ``src`` and decodes ``tgt`` against it (PyTorch's argument checks on the
        batch and feature sizes)."""
        batched = src.dim() == 3
        b = 0 if self.batch_first else 1
        if batched and src.shape[b] != tgt.shape[b]:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
        """A (sz, sz) float mask: -inf above the diagonal (future positions), 0 elsewhere."""
        return full((sz, sz), float("-inf"), device=device, dtype=dtype).triu(diagonal=1)
