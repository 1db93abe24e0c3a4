"""``torch.nn.attention.flex_attention``: scaled dot-product attention with the caller's score
and mask functions.

Note [flex_attention, eagerly]
  ``flex_attention(q, k, v, score_mod, block_mask)`` is softmax(score_mod(q k^T * scale)) v
  over the positions ``block_mask.mask_mod`` allows. PyTorch compiles it into one fused kernel
  under ``torch.compile`` and otherwise runs its "math" form, which this is: the whole score
  matrix made in float32 (float64 for float64 inputs), ``score_mod`` and ``mask_mod`` applied
  to every position at once, then a safe softmax (a row with nothing allowed gives zeros and a
  log-sum-exp of -inf, not NaN) and the product with v in the inputs' dtype. PyTorch's math
  form calls the functions under vmap on one position at a time; here they are called once,
  with the index arguments as broadcasting tensors of shapes (B, 1, 1, 1), (1, H, 1, 1),
  (1, 1, Q, 1), (1, 1, 1, KV): the same values for any function vmap accepts (arithmetic,
  comparisons, ``torch.where``, indexing a captured tensor with the indices). The gradients,
  to q, k, v and any tensor a ``score_mod`` captures, follow from the ops. As in PyTorch's math
  form, only ``mask_mod`` decides what is masked: a ``BlockMask``'s block lists (which the
  fused kernel uses to skip blocks) describe it and are not consulted.

  There is no fused kernel yet: the memory is PyTorch's eager memory, B * H * Q * KV scores.
  PyTorch warns that its eager call is unfused; this one does not (``tg.compile`` would not
  change it).
"""

from __future__ import annotations

import inspect
import itertools
import math
import operator
import warnings
from collections.abc import Callable
from typing import NamedTuple

from ...autograd.ops import creation
from ...autograd.tensor import Tensor
from ...runtime import dtype as dtypes
from ...runtime.device import device as Device

__all__ = ["AuxOutput", "AuxRequest", "BlockMask", "and_masks", "create_block_mask",
           "create_mask", "flex_attention", "noop_mask", "or_masks"]

_DEFAULT_SPARSE_BLOCK_SIZE = 128


class AuxRequest(NamedTuple):
    """Which auxiliary outputs ``flex_attention(..., return_aux=)`` gives: the log-sum-exp of
    each query's scores (natural log) and the largest score of each query."""
    lse: bool = False
    max_scores: bool = False


class AuxOutput(NamedTuple):
    """The auxiliary outputs asked for by an ``AuxRequest`` (None where not asked)."""
    lse: Tensor | None = None
    max_scores: Tensor | None = None


def noop_mask(batch: Tensor, head: Tensor, token_q: Tensor, token_kv: Tensor) -> Tensor:
    """A mask_mod allowing every position."""
    return creation.ones((), dtype=dtypes.bool, device=batch.device)


def _no_score_mod(score, batch, head, token_q, token_kv):
    return score


def _combined(mask_mods: tuple, name: str, start: bool, join) -> Callable:
    """A mask_mod folding ``mask_mods``' masks with ``join`` from ``start``."""
    if not all(callable(m) for m in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def combined(b, h, q_idx, kv_idx):
        result = creation.full((), start, dtype=dtypes.bool, device=b.device)
        for mod in mask_mods:
            result = join(result, mod(b, h, q_idx, kv_idx))
        return result
    combined.__name__ = name
    return combined


def and_masks(*mask_mods: Callable) -> Callable:
    """A mask_mod allowing a position where every one of ``mask_mods`` does."""
    return _combined(mask_mods, "and_mask", True, operator.and_)


def or_masks(*mask_mods: Callable) -> Callable:
    """A mask_mod allowing a position where any one of ``mask_mods`` does."""
    return _combined(mask_mods, "or_mask", False, operator.or_)


def _positions(B: int, H: int, Q: int, KV: int, device) -> tuple:
    """The index arguments of a score_mod or mask_mod, as broadcasting int64 tensors (Note
    [flex_attention, eagerly])."""
    shapes = ((B, 1, 1, 1), (1, H, 1, 1), (1, 1, Q, 1), (1, 1, 1, KV))
    return tuple(creation.arange(n, device=device).view(s) for n, s in zip((B, H, Q, KV), shapes))


def _is_score_mod(fn: Callable) -> bool:
    """Whether ``fn`` takes a score first (5 positional parameters) or is a mask_mod (4), as
    PyTorch tells them apart."""
    params = [p for p in inspect.signature(fn).parameters.values()
              if p.default is inspect.Parameter.empty
              and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(params) not in (4, 5):
        raise AssertionError(f"mod_fn must take 4 (mask_mod) or 5 (score_mod) positional "
                             f"arguments, got {len(params)}")
    return len(params) == 5


def create_mask(mod_fn: Callable, B: int | None, H: int | None, Q_LEN: int, KV_LEN: int,
                device="cuda") -> Tensor:
    """The dense boolean mask (B, H, Q_LEN, KV_LEN) of a mask_mod, or of a score_mod (where
    its score of zeros is not -inf). ``B``/``H`` None: 1 (the mask broadcasts)."""
    B, H, device = B or 1, H or 1, Device(device)
    b, h, m, n = _positions(B, H, Q_LEN, KV_LEN, device)
    if _is_score_mod(mod_fn):
        scores = mod_fn(creation.zeros(B, H, Q_LEN, KV_LEN, device=device), b, h, m, n)
        return ~scores.isneginf()
    return mod_fn(b, h, m, n).expand(B, H, Q_LEN, KV_LEN).to(dtypes.bool).contiguous()


def _block_size(BLOCK_SIZE) -> tuple[int, int]:
    return (BLOCK_SIZE, BLOCK_SIZE) if isinstance(BLOCK_SIZE, int) else tuple(BLOCK_SIZE)


def _ordered(dense: Tensor) -> tuple[Tensor, Tensor]:
    """(number of set blocks per row, the block indices with the set ones first, each in
    order): the block lists of a (B, H, rows, cols) 0/1 block matrix."""
    dense = dense.to(dtypes.int32)
    return (dense.sum(-1).to(dtypes.int32),
            dense.argsort(dim=-1, descending=True, stable=True).to(dtypes.int32))


def _dense(num: Tensor, indices: Tensor, cols: int) -> Tensor:
    """The (B, H, rows, cols) int32 0/1 block matrix of block lists."""
    listed = creation.arange(indices.shape[-1], device=num.device) < num.unsqueeze(-1)
    out = creation.zeros(*indices.shape[:-1], cols + 1, dtype=dtypes.int32, device=num.device)
    # (an index past the listed ones goes to the spare last column, dropped after)
    where = indices.long().masked_fill(~listed, cols)
    return out.scatter(-1, where, 1)[..., :cols]


class BlockMask:
    """Which (query block, key block) tiles of the score matrix attention computes, and the
    ``mask_mod`` deciding within them: ``kv_num_blocks``/``kv_indices`` list each query
    block's partially allowed key blocks, ``full_kv_*`` its fully allowed ones, ``q_*`` the
    same transposed; ``BLOCK_SIZE`` is (query, key) tokens per block; ``seq_lengths`` is
    (Q_LEN, KV_LEN). Made by ``create_block_mask`` or ``BlockMask.from_kv_blocks``."""

    def __init__(self, seq_lengths, kv_num_blocks, kv_indices, full_kv_num_blocks,
                 full_kv_indices, q_num_blocks, q_indices, full_q_num_blocks, full_q_indices,
                 BLOCK_SIZE, mask_mod):
        if kv_indices.dim() < 2:
            raise RuntimeError("BlockMask must have at least 2 dimensions")
        self.seq_lengths = tuple(seq_lengths)
        self.kv_num_blocks, self.kv_indices = kv_num_blocks, kv_indices
        self.full_kv_num_blocks, self.full_kv_indices = full_kv_num_blocks, full_kv_indices
        self.q_num_blocks, self.q_indices = q_num_blocks, q_indices
        self.full_q_num_blocks, self.full_q_indices = full_q_num_blocks, full_q_indices
        self.BLOCK_SIZE = _block_size(BLOCK_SIZE)
        self.mask_mod = mask_mod if mask_mod is not None else noop_mask

    @classmethod
    def from_kv_blocks(cls, kv_num_blocks: Tensor, kv_indices: Tensor,
                       full_kv_num_blocks: Tensor | None = None,
                       full_kv_indices: Tensor | None = None,
                       BLOCK_SIZE=_DEFAULT_SPARSE_BLOCK_SIZE, mask_mod: Callable | None = None,
                       seq_lengths: tuple | None = None,
                       compute_q_blocks: bool = True) -> BlockMask:
        """A BlockMask from its key-block lists; the query-block lists are derived (with
        ``compute_q_blocks``); ``seq_lengths`` defaults to the blocks' extent."""
        if kv_indices.dim() < 2:
            raise RuntimeError("BlockMask must have at least 2 dimensions")
        if (full_kv_num_blocks is None) != (full_kv_indices is None):
            raise RuntimeError("full_kv_num_blocks and full_kv_indices must be both provided "
                               "or omitted")
        size = _block_size(BLOCK_SIZE)
        q_blocks = q_full = (None, None)
        cols = kv_indices.shape[-1]
        if compute_q_blocks:
            q_blocks = _ordered(_dense(kv_num_blocks, kv_indices, cols).transpose(-2, -1))
            if full_kv_num_blocks is not None:
                q_full = _ordered(_dense(full_kv_num_blocks, full_kv_indices,
                                         cols).transpose(-2, -1))
        if seq_lengths is None:
            seq_lengths = (kv_indices.shape[-2] * size[0], cols * size[1])
        return cls(seq_lengths, kv_num_blocks, kv_indices, full_kv_num_blocks, full_kv_indices,
                   *q_blocks, *q_full, size, mask_mod)

    def as_tuple(self, flatten: bool = True) -> tuple:
        """The fields in PyTorch's order (the sequence lengths, the block lists, the block
        size, then ``mask_mod``)."""
        block = self.BLOCK_SIZE if flatten else (self.BLOCK_SIZE,)
        return (*self.seq_lengths, self.kv_num_blocks, self.kv_indices, self.full_kv_num_blocks,
                self.full_kv_indices, self.q_num_blocks, self.q_indices, self.full_q_num_blocks,
                self.full_q_indices, *block, self.mask_mod)

    @property
    def shape(self) -> tuple:
        """(B, H, Q_LEN, KV_LEN)."""
        return (*self.kv_indices.shape[:-2], *self.seq_lengths)

    def numel(self) -> int:
        return math.prod(self.shape)

    def to_dense(self) -> Tensor:
        """The block matrix (B, H, query blocks, key blocks): 1 where a tile is computed."""
        cols = self.kv_indices.shape[-1]
        dense = _dense(self.kv_num_blocks, self.kv_indices, cols)
        if self.full_kv_num_blocks is not None:
            dense = dense | _dense(self.full_kv_num_blocks, self.full_kv_indices, cols)
        return dense

    def sparsity(self) -> float:
        """The percentage of the score matrix's tiles that are skipped (negative where the
        blocks overhang short sequences, as PyTorch's)."""
        computed = int(self.kv_num_blocks.sum().item())
        if self.full_kv_num_blocks is not None:
            computed += int(self.full_kv_num_blocks.sum().item())
        return 100 * (1 - computed * self.BLOCK_SIZE[0] * self.BLOCK_SIZE[1] / self.numel())

    def to_string(self, grid_size=(20, 20), limit: int = 4) -> str:
        """Each (batch, head)'s tiles drawn with "██" (computed), "░░" (a cell of a
        shrunken grid partly computed) and "  " (skipped)."""
        dense = self.to_dense()
        *lead, rows, cols = dense.shape
        if grid_size == -1:
            grid = (rows, cols)
        else:
            grid = (grid_size, grid_size) if isinstance(grid_size, int) else grid_size
        row_step, col_step = max(1, -(-rows // grid[0])), max(1, -(-cols // grid[1]))
        parts = []
        for i, index in enumerate(itertools.product(*[range(n) for n in lead])):
            if i == limit:
                parts += ["...", "To print out more, set BlockMask.to_string(limit=N)",
                          ("You can also index (BlockMask[batch, head]) to choose a "
                           "specific batch or head")]
                break
            cells = dense[index].float()
            lines = [f"{index}"]
            for r in range(0, rows, row_step):
                line = ""
                for c in range(0, cols, col_step):
                    share = cells[r:r + row_step, c:c + col_step].mean().item()
                    line += ("█" if share == 1 else " " if share == 0 else "░") * 2
                lines.append(line)
            parts.append("\n".join(lines) + "\n")
        return "\n".join(parts)

    def __str__(self) -> str:
        return (f"BlockMask(shape={self.shape}, sparsity={self.sparsity():.2f}%, \n"
                f"{self.to_string().strip()}\n)")

    __repr__ = __str__

    def to(self, device) -> BlockMask:
        """The BlockMask with its block lists on ``device``."""
        moved = [None if t is None else t.to(device) for t in (
            self.kv_num_blocks, self.kv_indices, self.full_kv_num_blocks, self.full_kv_indices,
            self.q_num_blocks, self.q_indices, self.full_q_num_blocks, self.full_q_indices)]
        return BlockMask(self.seq_lengths, *moved, self.BLOCK_SIZE, self.mask_mod)


def create_block_mask(mask_mod: Callable, B: int | None, H: int | None, Q_LEN: int,
                      KV_LEN: int, device="cuda", BLOCK_SIZE=_DEFAULT_SPARSE_BLOCK_SIZE,
                      _compile: bool = False) -> BlockMask:
    """The BlockMask of ``mask_mod`` over (B, H, Q_LEN, KV_LEN) (``B``/``H`` None: 1, the
    mask broadcasts over batches/heads): tiles of ``BLOCK_SIZE`` tokens (an int, or (query,
    key)) where ``mask_mod`` allows every position are full, where it allows some partial,
    where none skipped; positions past the sequences count as masked."""
    if _is_score_mod(mask_mod):
        raise RuntimeError("create_block_mask requires a mask_mod function (4 arguments), "
                           "not a score_mod")
    qb, kb = _block_size(BLOCK_SIZE)
    mask = create_mask(mask_mod, B, H, Q_LEN, KV_LEN, device)
    pad_q, pad_kv = -Q_LEN % qb, -KV_LEN % kb
    if pad_q or pad_kv:
        from ..functional import pad
        mask = pad(mask, (0, pad_kv, 0, pad_q))
    b, h, q, kv = mask.shape
    counts = mask.view(b, h, q // qb, qb, kv // kb, kb).sum((3, 5))
    full = counts == qb * kb
    partial = (counts > 0) & ~full
    kv_blocks, full_blocks = _ordered(partial), _ordered(full)
    q_blocks, q_full = _ordered(partial.transpose(-2, -1)), _ordered(full.transpose(-2, -1))
    return BlockMask((Q_LEN, KV_LEN), *kv_blocks, *full_blocks, *q_blocks, *q_full, (qb, kb),
                     mask_mod)


_warned_lse: list = []


def flex_attention(query: Tensor, key: Tensor, value: Tensor,
                   score_mod: Callable | None = None, block_mask: BlockMask | None = None,
                   scale: float | None = None, enable_gqa: bool = False,
                   return_lse: bool = False, kernel_options: dict | None = None, *,
                   return_aux: AuxRequest | None = None):
    """Attention softmax(score_mod(query key^T * scale)) value over the positions
    ``block_mask`` allows (Note [flex_attention, eagerly]).

    Args:
        query: (B, Hq, L, E); key: (B or 1, Hkv, S, E); value: (B or 1, Hkv, S, Ev).
        score_mod: ``score_mod(score, b, h, q_idx, kv_idx) -> score`` for each position.
        block_mask: from ``create_block_mask``; its ``mask_mod(b, h, q_idx, kv_idx)``
            decides which positions attend. None: all.
        scale: default 1 / sqrt(E).
        enable_gqa: grouped-query attention (Hq a multiple of Hkv).
        return_lse: also return the log-sum-exp (deprecated, as in PyTorch).
        return_aux: an ``AuxRequest``; then ``(output, AuxOutput)``.

    Returns:
        The output (B, Hq, L, Ev); with ``return_lse``, ``(output, lse)``; with
        ``return_aux``, ``(output, AuxOutput)``.
    """
    _check_inputs(query, key, value, enable_gqa)
    B, Hq, L, E = query.shape
    S = key.shape[-2]
    if block_mask is None:
        block_mask_fn = noop_mask
    else:
        _check_block_mask(block_mask, query, key)
        block_mask_fn = block_mask.mask_mod
    if return_lse and return_aux is not None:
        raise ValueError("Cannot specify both return_lse and return_aux. return_lse is "
                         "deprecated, please use return_aux=AuxRequest(lse=True) instead.")
    if return_lse and not _warned_lse:
        _warned_lse.append(True)
        warnings.warn("return_lse is deprecated and will be removed in v2.10. Please use "
                      "return_aux=AuxRequest(lse=True) instead.", FutureWarning, stacklevel=2)
    if scale is None:
        scale = 1.0 / math.sqrt(E)
    groups = Hq // key.shape[1]
    if groups > 1:
        key, value = key.repeat_interleave(groups, 1), value.repeat_interleave(groups, 1)
    key = key.expand(B, *key.shape[1:])
    value = value.expand(B, *value.shape[1:])
    work = dtypes.float64 if query.dtype is dtypes.float64 else dtypes.float32
    scores = (query.to(work) @ key.to(work).transpose(-2, -1)) * scale
    b, h, m, n = _positions(B, Hq, L, S, query.device)
    scores = (score_mod or _no_score_mod)(scores, b, h, m, n).to(work)
    scores = scores.masked_fill(~block_mask_fn(b, h, m, n), float("-inf")).expand(B, Hq, L, S)
    # the safe softmax: a row with no allowed position gives zeros and a -inf log-sum-exp
    empty = (scores == float("-inf")).all(-1, keepdim=True)
    lse = scores.logsumexp(-1, keepdim=True)
    probs = (scores - lse.masked_fill(empty, 0.0)).exp().masked_fill(empty, 0.0)
    out = probs.to(query.dtype) @ value.to(query.dtype)
    lse = lse.masked_fill(empty, float("-inf")).squeeze(-1)
    if return_aux is not None:
        return out, AuxOutput(lse=lse if return_aux.lse else None,
                              max_scores=scores.amax(-1) if return_aux.max_scores else None)
    return (out, lse) if return_lse else out


def _check_inputs(query, key, value, enable_gqa: bool) -> None:
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise TypeError(f"flex_attention(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
        if t.dim() != 4:
            raise ValueError(f"NYI: {name} must be 4D, got {t.dim()}D (flex_attention takes "
                             f"(batch, heads, sequence, embedding) tensors)")
    if not (query.dtype is key.dtype is value.dtype):
        raise ValueError(f"Expected query, key, and value to have the same dtype, but got "
                         f"query.dtype: {query.dtype}, key.dtype: {key.dtype}, and "
                         f"value.dtype: {value.dtype} instead.")
    if not (query.device == key.device == value.device):
        raise ValueError(f"Expected query, key, and value to have the same device type, but "
                         f"got query.device: {query.device}, key.device: {key.device}, and "
                         f"value.device: {value.device} instead.")
    if query.size(-1) != key.size(-1):
        raise ValueError(f"Expect query and key/value to have the same embedding dimension "
                         f"but got E={query.size(-1)} and E={key.size(-1)}.")
    if key.size(1) != value.size(1) or key.size(-2) != value.size(-2):
        raise ValueError(f"Expect key and value to have the same number of heads and sequence "
                         f"length but got key {tuple(key.shape)} and value "
                         f"{tuple(value.shape)}.")
    hq, hkv = query.size(1), key.size(1)
    if enable_gqa:
        if hq % hkv:
            raise ValueError(f"Expect number of query heads to be a multiple of kv heads for "
                             f"GQA but got Hq={hq} and Hkv={hkv}.")
    elif hq != hkv:
        raise ValueError(f"Expect query and key/value to have the same number of heads but got "
                         f"Hq={hq} and Hkv={hkv}. Try setting enable_gqa=True for GQA.")
    bq, bkv = query.size(0), key.size(0)
    if not (bq == bkv or bkv == 1):
        raise RuntimeError(f"Bq and Bkv must broadcast. Got Bq={bq} and Bkv={bkv}")


def _check_block_mask(block_mask: BlockMask, query: Tensor, key: Tensor) -> None:
    q_len, kv_len = block_mask.seq_lengths
    if query.size(-2) > q_len or key.size(-2) > kv_len:
        raise ValueError(f"block_mask was created for block_mask.shape={block_mask.shape} but "
                         f"got q_len={query.size(-2)} and kv_len={key.size(-2)}. As the block "
                         f"mask was created for a smaller length than you're using it for, you "
                         f"likely need to create a new block mask.")
    if query.size(-2) < q_len or key.size(-2) < kv_len:
        raise ValueError(f"block_mask was created for block_mask.shape={block_mask.shape} but "
                         f"got q_len={query.size(-2)} and kv_len={key.size(-2)}. As the block "
                         f"mask was created for a larger length than you're using it for, you "
                         f"can either 1. create a new block mask with the correct length, or "
                         f"2. 'adjust' the existing block mask to the correct length by calling "
                         f"block_mask._adjust(q_len, kv_len). This essentially 'crops' the "
                         f"block mask to the upper left corner, which does not work for all "
                         f"mask_mods!")
    if query.device != block_mask.kv_num_blocks.device:
        raise RuntimeError(f"Expect q/k/v and block_mask to be on the same device but got "
                           f"{query.device} and {block_mask.kv_num_blocks.device}.")
