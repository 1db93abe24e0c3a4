"""Scaled dot-product attention and multi-head attention, composed from matmul and softmax.

``_attend`` is the one place the attention itself is computed (scores, mask, softmax,
dropout, weighted sum): ``scaled_dot_product_attention`` and ``multi_head_attention_forward``
both call it. ``scaled_dot_product_attention`` without a mask or dropout (``is_causal`` and
``scale`` allowed; grouped-query heads repeated first) instead runs the fused attention op
(``autograd.ops.nn.attention``: flash attention on CUDA, a blocked online softmax over BLAS
on the CPU), which never holds the L x S score matrix and gives the same results; shapes it
does not take (broadcast batch dims, a value head size unlike the query's, heads over 128)
stay on the composite path. ``sdpa_kernel`` and ``torch.backends.cuda.enable_*_sdp`` choose
among them as PyTorch's backends: ``FLASH_ATTENTION``/``EFFICIENT_ATTENTION`` the fused op,
``MATH`` the composite; with none that can run, "No available kernel".

Masks: ``scaled_dot_product_attention`` reads a bool ``attn_mask`` as *keep where True*;
``MultiheadAttention`` reads its bool masks as *ignore where True* (both as PyTorch). Each is
turned into an additive float bias (0 or -inf) before ``_attend``. A query row whose every key
is masked gets output 0 from ``scaled_dot_product_attention`` (PyTorch's ``_safe_softmax``) and
NaN from ``multi_head_attention_forward`` with ``need_weights`` (its plain softmax), as PyTorch.

``multi_head_attention_forward`` has PyTorch's signature (sequence-first, packed or separate
projection weights, ``static_k``/``static_v``); ``mha_forward`` is the same computation over
the three projection weights, batch-first or not, which ``nn.MultiheadAttention`` calls.
"""

from __future__ import annotations

import contextlib
import enum
import math
import warnings

from ..autograd import checks
from ..autograd.ops.creation import ones, zeros
from ..autograd.ops.nn import ATTENTION_MAX_HEAD_DIM, attention
from ..autograd.ops.nn import fused_attention as _fused
from ..autograd.tensor import Tensor

__all__ = ["SDPBackend", "mha_forward", "multi_head_attention_forward",
           "scaled_dot_product_attention", "sdpa_kernel"]


# -- which implementations scaled_dot_product_attention may choose --------------------------------

class SDPBackend(enum.IntEnum):
    """An enum-like class that contains the different backends for scaled dot product
    attention. Here ``FLASH_ATTENTION`` and ``EFFICIENT_ATTENTION`` are both the fused
    attention op (flash attention on CUDA, the blocked online softmax on the CPU), ``MATH`` the
    composite of matmul and softmax; tritongrad has no cuDNN attention."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


# What torch.backends.cuda's enable_*_sdp set and sdpa_kernel narrows (PyTorch's global flags,
# read by the CPU's selection too).
_enabled = {SDPBackend.MATH: True, SDPBackend.FLASH_ATTENTION: True,
            SDPBackend.EFFICIENT_ATTENTION: True, SDPBackend.CUDNN_ATTENTION: True,
            SDPBackend.OVERRIDEABLE: True}


def set_backend_enabled(backend: SDPBackend, enabled: bool) -> None:
    _enabled[SDPBackend(backend)] = bool(enabled)


def backend_enabled(backend: SDPBackend) -> bool:
    return _enabled[SDPBackend(backend)]


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority: bool = False):
    """Context manager to select which backend to use for scaled dot product attention.

    .. warning:: This function is beta and subject to change.

    Args:
        backends (Union[List[SDPBackend], SDPBackend]): A backend or list of backends for
            scaled dot product attention.
        set_priority (bool=False): accepted; tritongrad tries the fused op first, then the
            composite, whatever the order.

    Example::

        from tritongrad.nn.attention import SDPBackend, sdpa_kernel
        # Only enable flash attention backend
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            scaled_dot_product_attention(...)

    This context manager can be used to select which backend to use for scaled dot product
    attention. Upon exiting the context manager, the previous state of the flags will be
    restored, enabling all backends.
    """
    if isinstance(backends, SDPBackend):
        backends = [backends]
    backends = list(backends)
    if not all(isinstance(b, SDPBackend) for b in backends):
        raise AssertionError("Backend must be an instance of SDPBackend")
    saved = dict(_enabled)
    for b in _enabled:
        _enabled[b] = b in backends
    try:
        yield {}
    finally:
        _enabled.update(saved)


def _attend(q: Tensor, k: Tensor, v: Tensor, bias: Tensor | None, dropout_p: float,
            scale: float, need_weights: bool = False, safe: bool = False):
    """softmax(q k^T * scale + bias) (dropped out with ``dropout_p``) @ v, over the last two
    dims, batch dims broadcast; returns (output, attention weights or None). ``safe``: a row
    whose scores are all -inf (every key masked) gets weights 0, not NaN (PyTorch's
    ``_safe_softmax`` in SDPA's math path), with a zero gradient."""
    from . import functional as F  # functional imports this module
    scores = q.matmul(k.transpose(-2, -1)) * scale
    if bias is not None:
        scores = scores + bias
    if safe and bias is not None:
        # the blocked rows' scores are replaced before the softmax, not only its output: a
        # NaN softmax would send NaN into q and k's gradients through its backward
        blocked = (scores == -math.inf).all(-1, keepdim=True)
        weights = scores.masked_fill(blocked, 0.0).softmax(-1).masked_fill(blocked, 0.0)
    else:
        weights = scores.softmax(-1)
    if dropout_p > 0.0:
        weights = F.dropout(weights, dropout_p)
    return weights.matmul(v), (weights if need_weights else None)


def _bias_from_mask(mask: Tensor, dtype, keep_where_true: bool) -> Tensor:
    """An additive bias: a float mask as it is, a bool mask as 0 (attend) or -inf (not)."""
    if mask.dtype.name == "bool":
        blocked = mask.logical_not() if keep_where_true else mask
        return zeros(tuple(mask.shape), dtype=dtype, device=mask.device).masked_fill(
            blocked, -math.inf)
    return mask.to(dtype)


def _repeat_heads(x: Tensor, r: int) -> Tensor:
    """(..., Hk, S, E) -> (..., Hk * r, S, E), each head repeated r times in place
    (``repeat_interleave(r, dim=-3)``)."""
    if r == 1:
        return x
    shape = tuple(x.shape)
    x = x.unsqueeze(-3).expand(shape[:-2] + (r,) + shape[-2:])
    return x.reshape(shape[:-3] + (shape[-3] * r,) + shape[-2:])


def _fusable(query: Tensor, key: Tensor, value: Tensor) -> bool:
    """Whether the fused kernel (``autograd.ops.nn.attention``) computes this attention: one
    floating dtype, one device, equal leading dims (no broadcasting), value's head size that of
    query and key, at most ATTENTION_MAX_HEAD_DIM, and no empty sequence."""
    shape = tuple(query.shape)
    return (query.dtype.is_floating_point and key.dtype is query.dtype
            and value.dtype is query.dtype and key.device == query.device
            and value.device == query.device
            and tuple(key.shape) == tuple(value.shape) and key.ndim == query.ndim
            and tuple(key.shape[:-2]) == shape[:-2] and key.shape[-1] == shape[-1]
            and 0 < shape[-1] <= ATTENTION_MAX_HEAD_DIM and shape[-2] > 0 and key.shape[-2] > 0
            and query.numel() > 0)


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Tensor | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """Computes scaled dot product attention on query, key and value tensors, using an
    optional attention mask if passed, and applying dropout if a probability greater than 0.0
    is specified.

    Args:
        query: (N, ..., Hq, L, E).
        key: (N, ..., H, S, E).
        value: (N, ..., H, S, Ev).
        attn_mask: broadcastable to (N, ..., L, S). A boolean mask: True indicates the element
            should take part in attention. A float mask: added to the attention scores.
        dropout_p: dropout probability; applied whenever greater than 0.0 (use 0.0 in eval).
        is_causal: apply a causal mask aligned to the upper left (query i attends to keys
            0..i); with ``attn_mask`` too, both apply where PyTorch's CPU flash kernel would
            run (4-D inputs it takes), else an error as PyTorch's.
        scale: scaling factor applied prior to softmax; default 1/sqrt(E).
        enable_gqa: grouped-query attention: Hq may be a multiple of H, each key/value head
            then serves Hq / H query heads.

    Returns:
        attention output of shape (N, ..., Hq, L, Ev).

    Example:
        >>> q = k = v = tg.randn(2, 4, 5, 8)
        >>> tg.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True).shape
        tritongrad.Size([2, 4, 5, 8])
    """
    if attn_mask is None and dropout_p == 0.0 and not enable_gqa and \
            isinstance(query, Tensor) and isinstance(key, Tensor) and isinstance(value, Tensor):
        # (self-attention's call, 4-D query, key and value of one shape, dtype and device,
        # for the fused kernel: every check below passes; taken in a few field reads)
        shape, dt, dev = query._data.shape, query._dtype, query._device
        if (len(shape) == 4 and key._data.shape == shape == value._data.shape
                and dt.is_floating_point and key._dtype is dt and value._dtype is dt
                and key._device is dev and value._device is dev
                and 0 < shape[3] <= ATTENTION_MAX_HEAD_DIM and 0 not in shape
                and (_enabled[SDPBackend.FLASH_ATTENTION]
                     or _enabled[SDPBackend.EFFICIENT_ATTENTION])):
            return _fused(query, key, value,
                          1.0 / math.sqrt(shape[3]) if scale is None else scale, is_causal)
    for name, t in (("query", query), ("key", key), ("value", value)):
        checks.tensor_arg(t, "scaled_dot_product_attention", name)
    if key.dtype is not query.dtype or value.dtype is not query.dtype:  # (PyTorch's words)
        raise RuntimeError(f"scaled_dot_product_attention: Expected query, key, and value to "
                           f"have the same dtype, but got query.dtype: {query.dtype} key.dtype: "
                           f"{key.dtype} and value.dtype: {value.dtype} instead.")
    if not query.dtype.is_floating_point:
        raise RuntimeError(f"scaled_dot_product_attention: expected a floating point query, "
                           f"key and value, got {query.dtype}")
    if query.ndim < 2 or key.ndim < 2 or value.ndim < 2:  # (PyTorch's words)
        raise RuntimeError(f"Expected query, key, and value to all be at least 2 dimensional, "
                           f"but got query.dim: {query.ndim} key.dim: {key.ndim} and value.dim: "
                           f"{value.ndim} instead. (scaled_dot_product_attention)")
    if query.shape[-1] != key.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise RuntimeError(f"scaled_dot_product_attention: query {list(query.shape)} and key "
                           f"{list(key.shape)} must share the embedding size (last dim), and "
                           f"key and value {list(value.shape)} the sequence length (dim -2)")
    # PyTorch's rule: bool, float32 ("float") or the query's dtype; a float64 mask on float32
    # queries is refused, not cast
    if attn_mask is not None and not (attn_mask.dtype.name in ("bool", "float32")
                                      or attn_mask.dtype is query.dtype):
        raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query "
                           f"dtype, but got attn_mask.dtype: {attn_mask.dtype} and "
                           f"query.dtype: {query.dtype} instead.")
    if not 0.0 <= dropout_p <= 1.0:
        raise RuntimeError(f"scaled_dot_product_attention: dropout probability has to be "
                           f"between 0 and 1, but got {dropout_p}")
    if enable_gqa and query.ndim >= 3 and key.ndim >= 3:
        hq, hk, hv = query.shape[-3], key.shape[-3], value.shape[-3]
        if hq % hk or hq % hv:  # (PyTorch's words)
            raise RuntimeError(f"Number of heads in key and value must divide the number of "
                               f"heads in query: {hq} query heads, {hk} key heads and {hv} "
                               f"value heads (scaled_dot_product_attention, enable_gqa)")
        key, value = _repeat_heads(key, hq // hk), _repeat_heads(value, hq // hv)
    length, source = query.shape[-2], key.shape[-2]
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    fused_on = _enabled[SDPBackend.FLASH_ATTENTION] or _enabled[SDPBackend.EFFICIENT_ATTENTION]
    if is_causal and attn_mask is not None:
        # PyTorch's CPU flash kernel takes both (the mask, also causal: upper left) where it
        # runs, 4-D inputs of its shapes; its math kernel refuses the pair
        if not (fused_on and query.ndim == 4 and _fusable(query, key, value)):
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not "
                               "be set when is_causal=True")
    fusable = attn_mask is None and dropout_p == 0.0 and _fusable(query, key, value)
    if fused_on and fusable:
        return attention(query, key, value, scale, is_causal)
    if not _enabled[SDPBackend.MATH]:
        why = ("the flash and memory-efficient kernels are disabled" if not fused_on else
               "the fused kernel takes no attn_mask, no dropout and no broadcast batch dims, "
               f"value's head size equal to query's and at most {ATTENTION_MAX_HEAD_DIM}")
        warnings.warn(f"scaled_dot_product_attention: {why}; the math kernel is disabled",
                      UserWarning, stacklevel=3)  # (the user's call, past autocast's wrapper)
        raise RuntimeError("No available kernel. Aborting execution.")
    bias = None
    if attn_mask is not None:
        bias = _bias_from_mask(attn_mask, query.dtype, keep_where_true=True)
    if is_causal:
        keep = ones((length, source), dtype=query.dtype, device=query.device).tril().bool()
        causal = _bias_from_mask(keep, query.dtype, keep_where_true=True)
        bias = causal if bias is None else bias + causal
    out, _ = _attend(query, key, value, bias, dropout_p, scale, safe=attn_mask is not None)
    return out


def _unify_masks(mask: Tensor | None, mask_name: str, other: Tensor | None, other_name: str,
                 dtype) -> tuple[Tensor | None, Tensor | None]:
    """PyTorch's deprecation warning when a padding mask and an attention mask of different
    dtypes (bool with float) are given together; both then come back as additive float masks
    of ``dtype``, as PyTorch converts them, so the attention below does not warn again.
    Masks of other dtypes are left to the callers' checks (AssertionError)."""
    if mask is None or other is None or mask.dtype == other.dtype:
        return mask, other
    if not all(m.dtype.name == "bool" or m.dtype.is_floating_point for m in (mask, other)):
        return mask, other
    warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use same "
                  "type for both instead.", UserWarning, stacklevel=3)
    return (_bias_from_mask(mask, dtype, keep_where_true=False),
            _bias_from_mask(other, dtype, keep_where_true=False))


def _check_mha_mask(mask: Tensor, name: str, shapes: tuple) -> None:
    if tuple(mask.shape) not in shapes:
        raise RuntimeError(f"The shape of the {name} is {tuple(mask.shape)}, but should be "
                           + " or ".join(str(s) for s in shapes) + ".")
    if not (mask.dtype.name == "bool" or mask.dtype.is_floating_point):
        raise AssertionError(f"only bool and floating types of {name} are supported")


def multi_head_attention_forward(query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int,
                       num_heads: int, in_proj_weight: Tensor | None,
                       in_proj_bias: Tensor | None, bias_k: Tensor | None,
                       bias_v: Tensor | None, add_zero_attn: bool, dropout_p: float,
                       out_proj_weight: Tensor, out_proj_bias: Tensor | None,
                       training: bool = True, key_padding_mask: Tensor | None = None,
                       need_weights: bool = True, attn_mask: Tensor | None = None,
                       use_separate_proj_weight: bool = False,
                       q_proj_weight: Tensor | None = None, k_proj_weight: Tensor | None = None,
                       v_proj_weight: Tensor | None = None, static_k: Tensor | None = None,
                       static_v: Tensor | None = None, average_attn_weights: bool = True,
                       is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
    """Forward method for MultiHeadAttention (PyTorch's functional form).

    Args:
        query, key, value: (L, N, E) / (S, N, E_k) / (S, N, E_v), or unbatched (L, E) ...
        embed_dim_to_check: the model's total dimension; ``query``'s last dim must equal it.
        num_heads: parallel attention heads.
        in_proj_weight, in_proj_bias: the packed (3E, E) input projection and its (3E,) bias.
        bias_k, bias_v: (1, 1, E) biases appended to the keys and values at dim 0.
        add_zero_attn: append a batch of zeros to the keys and values at dim 1.
        dropout_p: probability of an element to be zeroed (while ``training``).
        out_proj_weight, out_proj_bias: the output projection.
        key_padding_mask: (N, S); True (or -inf) marks keys to ignore.
        need_weights: also return the attention weights.
        attn_mask: (L, S) or (N * num_heads, L, S); True (or -inf) blocks attention.
        use_separate_proj_weight: project with ``q/k/v_proj_weight`` instead of the packed
            ``in_proj_weight`` (for keys and values of other sizes than E).
        static_k, static_v: (N * num_heads, S, E / num_heads) keys / values used as they are,
            instead of projected.
        average_attn_weights: average the returned weights over the heads.
        is_causal: a hint that ``attn_mask`` is the causal mask (which must be given).

    Returns:
        ``(attn_output, attn_weights)``: (L, N, E) ((L, E) unbatched), and (N, L, S) averaged
        or (N, num_heads, L, S), or None without ``need_weights``.
    """
    _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if query.shape[-1] != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {query.shape[-1]}")
    if use_separate_proj_weight:
        for name, w in (("q", q_proj_weight), ("k", k_proj_weight), ("v", v_proj_weight)):
            if w is None:
                raise AssertionError(f"use_separate_proj_weight is True but {name}_proj_weight "
                                     f"is None")
        wq, wk, wv = q_proj_weight, k_proj_weight, v_proj_weight
    else:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        if tuple(key.shape) != tuple(value.shape):
            raise AssertionError(f"key shape {tuple(key.shape)} does not match value shape "
                                 f"{tuple(value.shape)}")
        wq, wk, wv = in_proj_weight.chunk(3)
    if bias_k is not None and static_k is not None:
        raise AssertionError("bias cannot be added to static key.")
    if bias_v is not None and static_v is not None:
        raise AssertionError("bias cannot be added to static value.")
    return mha_forward(query, key, value, num_heads, wq, wk, wv, in_proj_bias, bias_k, bias_v,
                       add_zero_attn, dropout_p, out_proj_weight, out_proj_bias, training,
                       key_padding_mask, need_weights, attn_mask, average_attn_weights,
                       is_causal, static_k=static_k, static_v=static_v)


def mha_forward(query: Tensor, key: Tensor, value: Tensor, num_heads: int,
                q_weight: Tensor, k_weight: Tensor, v_weight: Tensor,
                in_bias: Tensor | None, bias_k: Tensor | None,
                bias_v: Tensor | None, add_zero_attn: bool, dropout_p: float,
                out_proj_weight: Tensor, out_proj_bias: Tensor | None,
                training: bool = True, key_padding_mask: Tensor | None = None,
                need_weights: bool = True, attn_mask: Tensor | None = None,
                average_attn_weights: bool = True, is_causal: bool = False,
                batch_first: bool = False, static_k: Tensor | None = None,
                static_v: Tensor | None = None):
    """The forward of ``nn.MultiheadAttention`` on batch-first or sequence-first inputs; see
    there. ``key_padding_mask`` / bool ``attn_mask``: True marks what may not be attended.
    ``static_k``/``static_v``: (N * num_heads, S, head_dim) keys/values replacing the
    projected ones (``multi_head_attention_forward``'s)."""
    from . import functional as F
    _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    key_padding_mask, attn_mask = _unify_masks(key_padding_mask, "key_padding_mask", attn_mask,
                                               "attn_mask", query.dtype)
    unbatched = query.ndim == 2
    fused = batch_first and _takes_torch_fast_path(
        query, key, value, training, num_heads, bias_k, bias_v, add_zero_attn,
        (q_weight, k_weight, v_weight, in_bias, out_proj_weight, out_proj_bias))
    if unbatched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    elif batch_first:  # computed batch-first below; sequence-first is the transposed view
        query, key, value = (t.transpose(0, 1) for t in (query, key, value))
    if key.shape[:2] != value.shape[:2]:
        raise AssertionError(f"key shape {tuple(key.shape)} does not match value shape "
                             f"{tuple(value.shape)}")
    query, key, value = (t.transpose(0, 1) for t in (query, key, value))  # (N, L, E)
    n, length, embed = query.shape
    head = embed // num_heads
    if head * num_heads != embed:
        raise AssertionError(f"embed_dim {embed} not divisible by num_heads {num_heads}")
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # the hint stands for the mask: the fused kernel's causal form
    else:
        is_causal = False  # (the mask is applied as given, merged with key_padding_mask)
    bq = bk = bv = None
    if in_bias is not None:
        bq, bk, bv = in_bias.chunk(3)
    q = F.linear(query, q_weight, bq)
    k = F.linear(key, k_weight, bk)
    v = F.linear(value, v_weight, bv)
    source = k.shape[1]
    if attn_mask is not None:
        if attn_mask.ndim == 2:
            _check_mha_mask(attn_mask, "2D attn_mask", ((length, source),))
            attn_mask = attn_mask.reshape(1, 1, length, source)
        elif attn_mask.ndim == 3:
            _check_mha_mask(attn_mask, "3D attn_mask", ((n * num_heads, length, source),))
            attn_mask = attn_mask.reshape(n, num_heads, length, source)
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.ndim} is not supported")
        attn_mask = _bias_from_mask(attn_mask, q.dtype, keep_where_true=False)
    if key_padding_mask is not None:
        for dim, size in enumerate((n, source)):  # (PyTorch asserts, in these words)
            if key_padding_mask.ndim == 2 and key_padding_mask.shape[dim] != size:
                raise AssertionError(f"Expected key_padded_mask.shape[{dim}] to be {size}, but "
                                     f"got {key_padding_mask.shape[dim]} "
                                     f"(multi_head_attention_forward)")
        _check_mha_mask(key_padding_mask, "key_padding_mask", ((n, source),))
        key_padding_mask = _bias_from_mask(key_padding_mask, q.dtype,
                                           keep_where_true=False).reshape(n, 1, 1, source)

    def extend(extra_k, extra_v):
        """Appends one key/value position and lets every query attend to it."""
        nonlocal k, v, attn_mask, key_padding_mask
        k = F.pad(k, (0, 0, 0, 1)) if extra_k is None else _cat_seq(k, extra_k)
        v = F.pad(v, (0, 0, 0, 1)) if extra_v is None else _cat_seq(v, extra_v)
        if attn_mask is not None:
            attn_mask = F.pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = F.pad(key_padding_mask, (0, 1))

    if bias_k is not None and bias_v is not None:
        extend(bias_k.reshape(1, 1, embed).expand(n, 1, embed),
               bias_v.reshape(1, 1, embed).expand(n, 1, embed))
    elif bias_k is not None or bias_v is not None:
        raise AssertionError("bias_k and bias_v must both be set or both be None")
    k = _static(k, static_k, "static_k", n, num_heads, head)
    v = _static(v, static_v, "static_v", n, num_heads, head)
    if add_zero_attn:
        extend(None, None)
    # (N, S, E) -> (N, H, S, D)
    q, k, v = (t.reshape(n, t.shape[1], num_heads, head).transpose(1, 2) for t in (q, k, v))
    bias = attn_mask
    if key_padding_mask is not None:
        bias = key_padding_mask if bias is None else bias + key_padding_mask
    if need_weights:
        out, weights = _attend(q, k, v, bias, dropout_p if training else 0.0,
                               1.0 / math.sqrt(head), True)
    else:  # as PyTorch's: through SDPA, so the fused kernel where it applies
        out, weights = scaled_dot_product_attention(q, k, v, bias, dropout_p if training
                                                    else 0.0, is_causal), None
    # PyTorch projects the heads' output sequence-first, (L, N, E), contiguous: a batch-first
    # output is that buffer's transposed view (so ``.view`` works on a sequence-first output,
    # and a dropout after it draws its mask in PyTorch's order); its fused batch-first fast
    # path returns (N, L, E) contiguous instead
    if fused:
        out = F.linear(out.transpose(1, 2).reshape(n, length, embed), out_proj_weight,
                       out_proj_bias)
    else:
        out = F.linear(out.permute(2, 0, 1, 3).reshape(length, n, embed), out_proj_weight,
                       out_proj_bias)
        out = out.squeeze(1) if unbatched else out.transpose(0, 1) if batch_first else out
    if weights is not None:
        if average_attn_weights:
            weights = weights.mean(dim=1)
        if unbatched:
            weights = weights.squeeze(0)
    return out, weights


def _takes_torch_fast_path(query: Tensor, key: Tensor, value: Tensor, training: bool,
                           num_heads: int, bias_k, bias_v, add_zero_attn: bool,
                           params: tuple) -> bool:
    """Whether PyTorch's batch-first ``MultiheadAttention`` would run its fused native kernel
    (``torch._native_multi_head_attention``, whose output is (N, L, E) contiguous): batched
    self-attention (``query is key is value``) in eval, an even head count, no bias_k / bias_v
    / zero attention, the input projection with a bias and in the input's dtype, autocast
    off, and no autograd to record (PyTorch's ``why_not_fast_path`` checks)."""
    from ..autograd.autocast import is_autocast_enabled
    from ..autograd.grad_mode import is_grad_enabled
    in_bias = params[3]
    if (training or query.ndim != 3 or query is not key or key is not value
            or num_heads % 2 or bias_k is not None or bias_v is not None or add_zero_attn
            or in_bias is None or in_bias.dtype is not query.dtype
            or params[0].dtype is not query.dtype or is_autocast_enabled()):
        return False
    tensors = (query,) + tuple(t for t in params if t is not None)
    return not (is_grad_enabled() and any(t.requires_grad for t in tensors))


def _mha_shape_check(query: Tensor, key: Tensor, value: Tensor,
                     key_padding_mask: Tensor | None, attn_mask: Tensor | None,
                     num_heads: int) -> None:
    """PyTorch's checks of the inputs' dims (F._mha_shape_check), in its words:
    AssertionError unless all are batched (3-D query, key, value; 2-D key_padding_mask) or
    all unbatched (2-D; 1-D key_padding_mask), attn_mask 2-D or 3-D."""
    kind = {3: "batched (3-D)", 2: "unbatched (2-D)"}.get(query.ndim)
    if kind is None:
        raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received "
                             f"{query.ndim}-D query tensor")
    dims = query.ndim
    if key.ndim != dims or value.ndim != dims:
        raise AssertionError(f"For {kind} `query`, expected `key` and `value` to be {dims}-D but "
                             f"found {key.ndim}-D and {value.ndim}-D tensors respectively")
    if key_padding_mask is not None and key_padding_mask.ndim != dims - 1:
        raise AssertionError(f"For {kind} `query`, expected `key_padding_mask` to be `None` or "
                             f"{dims - 1}-D but found {key_padding_mask.ndim}-D tensor instead")
    if attn_mask is not None:
        if attn_mask.ndim not in (2, 3):
            raise AssertionError(f"For {kind} `query`, expected `attn_mask` to be `None`, 2-D or "
                                 f"3-D but found {attn_mask.ndim}-D tensor instead")
        if dims == 2 and attn_mask.ndim == 3:
            expected = (num_heads, query.shape[0], key.shape[0])
            if tuple(attn_mask.shape) != expected:
                raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got "
                                     f"{attn_mask.shape}")


def _static(x: Tensor, static: Tensor | None, name: str, n: int, heads: int,
            head: int) -> Tensor:
    """``x`` (N, S, E), or the (N * heads, S', head) ``static`` in its place as (N, S', E)."""
    if static is None:
        return x
    if static.shape[0] != n * heads:
        raise AssertionError(f"expecting {name}.size(0) of {n * heads}, but got "
                             f"{static.shape[0]}")
    if static.shape[2] != head:
        raise AssertionError(f"expecting {name}.size(2) of {head}, but got {static.shape[2]}")
    s = static.shape[1]
    return static.reshape(n, heads, s, head).transpose(1, 2).reshape(n, s, heads * head)


def _cat_seq(x: Tensor, extra: Tensor) -> Tensor:
    from ..autograd.ops.shape import cat
    return cat([x, extra.to(x.dtype)], 1)
