"""The transformer layers of ``torch.nn`` (Vaswani et al., 2017): ``TransformerEncoderLayer``,
``TransformerDecoderLayer``, the stacks ``TransformerEncoder`` / ``TransformerDecoder`` and
``Transformer``, with PyTorch's submodule names, arguments and order of operations (post-norm
by default, ``norm_first=True`` for pre-norm), built on ``MultiheadAttention``, ``Linear``,
``LayerNorm`` and ``Dropout``.

The fast paths PyTorch takes in inference (the fused encoder kernel, nested tensors) compute
the same values, so every call takes the path written below; the one visible difference, the
zeros the nested-tensor path leaves at padded positions (``TransformerEncoder``), is
reproduced.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable

from ..autograd.autocast import is_autocast_enabled
from ..autograd.grad_mode import is_grad_enabled
from ..autograd.ops.creation import full
from ..autograd.tensor import Tensor
from . import _attention
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
        src_key_padding_mask, src_mask = _attention._unify_masks(
            src_key_padding_mask, "src_key_padding_mask", src_mask, "src_mask", src.dtype)
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


def _why_not_nested(layer: Module) -> str:
    """Why PyTorch's TransformerEncoder would not use nested tensors with this layer ("" when
    it would): its checks in TransformerEncoder.__init__, in its order and words."""
    name = "encoder_layer"
    if not isinstance(layer, TransformerEncoderLayer):
        return f"{name} was not TransformerEncoderLayer"
    if layer.norm_first:
        return f"{name}.norm_first was True"
    if not layer.self_attn.batch_first:
        return (f"{name}.self_attn.batch_first was not True(use batch_first for better "
                f"inference performance)")
    if not layer.self_attn._qkv_same_embed_dim:
        return f"{name}.self_attn._qkv_same_embed_dim was not True"
    if layer.self_attn.in_proj_bias is None:
        return f"{name}.self_attn was passed bias=False"
    if not layer.activation_relu_or_gelu:
        return f"{name}.activation_relu_or_gelu was not True"
    if layer.norm1.eps != layer.norm2.eps:
        return f"{name}.norm1.eps was not equal to {name}.norm2.eps"
    if layer.self_attn.num_heads % 2 == 1:
        return f"{name}.self_attn.num_heads is odd"
    return ""


def _clones(layer: Module, n: int) -> ModuleList:
    return ModuleList([copy.deepcopy(layer) for _ in range(n)])


class TransformerEncoder(Module):
    """``num_layers`` copies of ``encoder_layer`` (deep copies: separate parameters) applied
    in turn, then ``norm`` if given.

    Args:
        encoder_layer: a ``TransformerEncoderLayer``.
        num_layers: the number of sub-encoder-layers in the encoder.
        norm: the layer normalization component (optional).
        enable_nested_tensor: in inference with a padding mask, PyTorch's fast path (nested
            tensors) where its conditions hold: the padded positions' outputs are zeros.
        mask_check: check that the padding mask is left-aligned before taking that path.
    """

    def __init__(self, encoder_layer: Module, num_layers: int, norm: Module | None = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True):
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        # PyTorch's flags: use_nested_tensor says whether the inference fast path's nested
        # tensors would be used, which shows in the outputs (see forward)
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check
        why_not = _why_not_nested(encoder_layer)
        if enable_nested_tensor and why_not:
            warnings.warn(f"enable_nested_tensor is True, but self.use_nested_tensor is False "
                          f"because {why_not}", stacklevel=2)
            self.use_nested_tensor = False

    def forward(self, src: Tensor, mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                is_causal: bool | None = None) -> Tensor:
        padded = self._nested_padding(src, mask, src_key_padding_mask)
        src_key_padding_mask, mask = _attention._unify_masks(
            src_key_padding_mask, "src_key_padding_mask", mask, "mask", src.dtype)
        out = src
        for layer in self.layers:
            out = layer(out, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                        is_causal=bool(is_causal))
        if padded is not None:
            # PyTorch's inference fast path runs the layers on a nested tensor of the kept
            # positions and pads it back with zeros: the same values, padding zeroed
            out = out.masked_fill(padded, 0.0)
        return out if self.norm is None else self.norm(out)

    def _nested_padding(self, src: Tensor, mask: Tensor | None,
                        src_key_padding_mask: Tensor | None) -> Tensor | None:
        """The (N, S, 1) padded positions when PyTorch would take its nested-tensor fast path
        (its conditions in TransformerEncoder.forward: inference without grad, batched,
        batch-first input with a left-aligned padding mask and no attention mask), else
        None."""
        if not self.use_nested_tensor or src_key_padding_mask is None or mask is not None \
                or src.dim() != 3 or self.layers[0].training:
            return None
        if is_autocast_enabled(src.device.type):
            return None
        if is_grad_enabled():
            layer = self.layers[0]
            attn = layer.self_attn
            args = (src, attn.in_proj_weight, attn.in_proj_bias, attn.out_proj.weight,
                    attn.out_proj.bias, layer.norm1.weight, layer.norm1.bias,
                    layer.norm2.weight, layer.norm2.bias, layer.linear1.weight,
                    layer.linear1.bias, layer.linear2.weight, layer.linear2.bias)
            if any(t is not None and t.requires_grad for t in args):
                return None
        keep = src_key_padding_mask.logical_not()
        if tuple(keep.shape) != tuple(src.shape[:2]):
            return None
        # left-aligned: every sequence's kept positions come first (mask_check's test)
        if self.mask_check and keep.shape[1] > 1 \
                and bool((keep[:, 1:] & keep[:, :-1].logical_not()).any()):
            return None
        return keep.logical_not().unsqueeze(-1)


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
