"""``nn.utils.rnn``: batches of variable-length sequences, as PyTorch's ``torch.nn.utils.rnn``:
``PackedSequence``, ``pack_padded_sequence``, ``pad_packed_sequence``, ``pad_sequence``,
``unpad_sequence``, ``pack_sequence``, ``unpack_sequence`` and ``invert_permutation``.

A packed sequence holds the sequences' elements time step by time step: step ``t`` holds the
element ``t`` of every sequence longer than ``t``, longest sequence first, and
``batch_sizes[t]`` says how many there are. Packing and padding only move rows, so each is one
``index_select`` of rows with an index built on the host from the lengths (plus, for padding,
one row of ``padding_value`` that the padded places read): the gradient of every function here
is ``index_select``'s rule, a scatter-add back onto the rows, on both backends, and none needs
an op of its own. The lengths and ``batch_sizes`` are int64 CPU tensors, as in PyTorch.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple, Self

import numpy as np

from ...autograd.ops.creation import arange, full, zeros_like
from ...autograd.ops.creation import tensor as _tensor
from ...autograd.ops.shape import cat
from ...autograd.tensor import Tensor
from ...runtime import dtype as dtypes

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pack_sequence",
           "pad_packed_sequence", "pad_sequence", "unpack_sequence", "unpad_sequence"]


class PackedSequence_(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(PackedSequence_):
    r"""Holds the data and list of :attr:`batch_sizes` of a packed sequence.

    All RNN modules accept packed sequences as inputs.

    Note:
        Instances of this class should never be created manually. They are meant to be
        instantiated by functions like :func:`pack_padded_sequence`.

        Batch sizes represent the number elements at each sequence step in the batch, not the
        varying sequence lengths passed to :func:`pack_padded_sequence`. For instance, given
        data ``abc`` and ``x`` the :class:`PackedSequence` would contain data ``axbc`` with
        ``batch_sizes=[2,1,1]``.

    Attributes:
        data (Tensor): Tensor containing packed sequence
        batch_sizes (Tensor): Tensor of integers holding information about the batch size at
            each sequence step
        sorted_indices (Tensor, optional): Tensor of integers holding how this
            :class:`PackedSequence` is constructed from sequences.
        unsorted_indices (Tensor, optional): Tensor of integers holding how this to recover
            the original sequences with correct order.

    ``data`` can be on any device and of any dtype; ``sorted_indices`` and
    ``unsorted_indices`` are int64 tensors on ``data``'s device; ``batch_sizes`` is always an
    int64 CPU tensor (the conversions below move ``data`` and the indices, never it).
    """

    def __new__(cls, data, batch_sizes: Tensor | None = None,
                sorted_indices: Tensor | None = None,
                unsorted_indices: Tensor | None = None) -> Self:
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:  # PackedSequence((data, batch_sizes), sorted_indices)
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise AssertionError("Expected data to be a list or tuple of length 2")
            data, batch_sizes = data
        elif batch_sizes.device.type != "cpu":
            raise ValueError(
                "batch_sizes should always be on CPU. Instances of PackedSequence should never "
                "be created manually. They should be instantiated by functions like "
                "pack_sequence and pack_padded_sequences in nn.utils.rnn. "
                "https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def _with_data(self, data: Tensor) -> PackedSequence:
        """``self`` when ``data`` is its data, else a PackedSequence of ``data`` whose indices
        follow it to its device (``batch_sizes`` stays on the CPU)."""
        if data is self.data:
            return self

        def move(t):
            return None if t is None else t.to(data.device)

        return type(self)(data, self.batch_sizes, move(self.sorted_indices),
                          move(self.unsorted_indices))

    def to(self, *args, **kwargs) -> PackedSequence:
        """Performs dtype and/or device conversion on ``self.data``, with ``Tensor.to``'s
        arguments. Returns ``self`` if ``self.data`` already has the dtype and device asked
        for, else a copy with the desired configuration."""
        return self._with_data(self.data.to(*args, **kwargs))

    def cuda(self, *args, **kwargs) -> PackedSequence:
        return self._with_data(self.data.cuda(*args, **kwargs))

    def cpu(self) -> PackedSequence:
        return self._with_data(self.data.cpu())

    def double(self) -> PackedSequence:
        return self.to(dtype=dtypes.float64)

    def float(self) -> PackedSequence:
        return self.to(dtype=dtypes.float32)

    def half(self) -> PackedSequence:
        return self.to(dtype=dtypes.float16)

    def long(self) -> PackedSequence:
        return self.to(dtype=dtypes.int64)

    def int(self) -> PackedSequence:
        return self.to(dtype=dtypes.int32)

    def short(self) -> PackedSequence:
        return self.to(dtype=dtypes.int16)

    def char(self) -> PackedSequence:
        return self.to(dtype=dtypes.int8)

    def byte(self) -> PackedSequence:
        return self.to(dtype=dtypes.uint8)

    @property
    def is_cuda(self) -> bool:
        """Whether ``self.data`` is stored on a GPU."""
        return self.data.is_cuda

    def pin_memory(self) -> PackedSequence:
        """The sequence with its data and indices in pinned memory (``Tensor.pin_memory``);
        ``batch_sizes`` stays as it is, as in PyTorch."""
        def pin(t):
            return None if t is None else t.pin_memory()

        return type(self)(pin(self.data), self.batch_sizes, pin(self.sorted_indices),
                          pin(self.unsorted_indices))

    def is_pinned(self) -> bool:
        """Whether ``self.data`` is in pinned memory."""
        return self.data.is_pinned()


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """Returns the inverse of ``permutation`` (a 1-D tensor of indices; None gives None): how
    a :class:`PackedSequence` converts between sorted and unsorted indices."""
    if permutation is None:
        return None
    return zeros_like(permutation).scatter(
        0, permutation, arange(permutation.numel(), dtype=permutation.dtype,
                               device=permutation.device))


# -- the row indices (host NumPy) and the one gather -------------------------------------------

def _host_lengths(lengths) -> np.ndarray:
    """``lengths`` (a 1-D CPU tensor or a sequence of numbers) as int64 on the host."""
    if isinstance(lengths, Tensor):
        if lengths.ndim != 1 or lengths.device.type != "cpu":
            raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got "
                               f"{lengths.ndim}D {lengths.device} Long tensor")
        return np.asarray(lengths.tolist()).astype(np.int64)
    host = np.asarray(lengths)
    if host.ndim != 1:
        raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got "
                           f"{host.ndim}D cpu Long tensor")
    return host.astype(np.int64)


def _gather_rows(rows: Tensor, index: np.ndarray, fill) -> Tensor:
    """``rows[index]`` over rows' first dim, shaped ``index.shape + rows.shape[1:]``; an index
    equal to ``len(rows)`` reads a row of ``fill``. One ``index_select``: its gradient is a
    scatter-add back onto ``rows``."""
    rest = tuple(rows.shape[1:])
    if (index >= rows.shape[0]).any():
        rows = cat([rows, full((1,) + rest, fill, dtype=rows.dtype, device=rows.device)])
    picked = rows.index_select(0, _tensor(index.reshape(-1), dtype=dtypes.int64,
                                          device=rows.device))
    return picked.reshape(tuple(index.shape) + rest)


# -- packing and padding -----------------------------------------------------------------------

def pack_padded_sequence(input: Tensor, lengths, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    r"""Packs a Tensor containing padded sequences of variable length.

    :attr:`input` can be of size ``T x B x *`` (if :attr:`batch_first` is ``False``) or
    ``B x T x *`` (if :attr:`batch_first` is ``True``) where ``T`` is the length of the
    longest sequence, ``B`` is the batch size, and ``*`` is any number of dimensions
    (including 0).

    For unsorted sequences, use ``enforce_sorted = False``. If :attr:`enforce_sorted` is
    ``True``, the sequences should be sorted by length in a decreasing order, i.e.
    ``input[:,0]`` should be the longest sequence, and ``input[:,B-1]`` the shortest one.

    It is an inverse operation to :func:`pad_packed_sequence`.

    Args:
        input (Tensor): padded batch of variable length sequences.
        lengths (Tensor or list(int)): list of sequence lengths of each batch element (must
            be on the CPU if provided as a tensor).
        batch_first (bool, optional): if ``True``, the input is expected in ``B x T x *``
            format, ``T x B x *`` otherwise. Default: ``False``.
        enforce_sorted (bool, optional): if ``True``, the input is expected to contain
            sequences sorted by length in a decreasing order. If ``False``, the input will get
            sorted unconditionally. Default: ``True``.

    Returns:
        a :class:`PackedSequence` object
    """
    lengths = _host_lengths(lengths)
    if input.ndim < 2:
        raise IndexError(f"pack_padded_sequence: expected the input to have at least 2 "
                         f"dimensions ({'B x T' if batch_first else 'T x B'} x *), got "
                         f"{input.ndim}")
    if input.numel() == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    batch, steps = (input.shape[0], input.shape[1]) if batch_first else \
        (input.shape[1], input.shape[0])
    if lengths.shape[0] != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{lengths.shape[0]} (batch_size={batch})")
    # order[j]: the batch index of the j-th longest sequence (a stable sort, as PyTorch's)
    order = np.arange(batch) if enforce_sorted else np.argsort(-lengths, kind="stable")
    lengths = lengths[order]
    if lengths[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    if (lengths[1:] > lengths[:-1]).any():
        raise RuntimeError("`lengths` array must be sorted in decreasing order when "
                           "`enforce_sorted` is True. You can pass `enforce_sorted=False` to "
                           "pack_padded_sequence and/or pack_sequence to sidestep this "
                           "requirement if you do not need ONNX exportability.")
    if lengths[0] > steps:  # (PyTorch would read past the input's end)
        raise RuntimeError(f"pack_padded_sequence: a length of {lengths[0]} exceeds the "
                           f"input's {steps} time steps")
    # (t, j) for the j-th longest sequence at each step t it reaches, in packed order
    t, j = np.nonzero(lengths[None, :] > np.arange(lengths[0])[:, None])
    rows = order[j] * steps + t if batch_first else t * batch + order[j]
    data = _gather_rows(input.reshape((batch * steps,) + tuple(input.shape[2:])), rows, 0)
    batch_sizes = np.bincount(t, minlength=int(lengths[0]))
    sorted_indices = None if enforce_sorted else _tensor(order, dtype=dtypes.int64,
                                                         device=input.device)
    return PackedSequence(data, _tensor(batch_sizes, dtype=dtypes.int64), sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple[Tensor, Tensor]:
    r"""Pad a packed batch of variable length sequences.

    It is an inverse operation to :func:`pack_padded_sequence`.

    The returned Tensor's data will be of size ``T x B x *`` (if :attr:`batch_first` is
    ``False``) or ``B x T x *`` (if :attr:`batch_first` is ``True``), where ``T`` is the
    length of the longest sequence and ``B`` is the batch size.

    Args:
        sequence (PackedSequence): batch to pad
        batch_first (bool, optional): if ``True``, the output will be in ``B x T x *``
            format, ``T x B x *`` otherwise.
        padding_value (float, optional): values for padded elements.
        total_length (int, optional): if not ``None``, the output will be padded to have
            length :attr:`total_length`. This method will throw :class:`ValueError` if
            :attr:`total_length` is less than the max sequence length in :attr:`sequence`.

    Returns:
        Tuple of Tensor containing the padded sequence, and a Tensor containing the list of
        lengths of each sequence in the batch. Batch elements will be re-ordered as they were
        ordered originally when the batch was passed to ``pack_padded_sequence`` or
        ``pack_sequence``.
    """
    data, batch_sizes, _, unsorted_indices = sequence
    sizes = np.asarray(batch_sizes.tolist(), dtype=np.int64).reshape(-1)
    steps = len(sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError(f"Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {steps}")
        steps = total_length
    batch = int(sizes[0]) if len(sizes) else 0
    live = np.arange(batch)[None, :] < sizes[:, None]  # (step, sorted sequence) holds data
    if int(sizes.sum()) != data.shape[0]:
        raise RuntimeError(f"pad_packed_sequence: the packed data has {data.shape[0]} rows "
                           f"but its batch_sizes sum to {int(sizes.sum())}")
    index = np.full((steps, batch), data.shape[0], dtype=np.int64)  # the padding row
    index[:len(sizes)][live] = np.arange(data.shape[0])
    lengths = live.sum(0)
    padded = _gather_rows(data, index, padding_value)  # (T, B, *), contiguous
    # (PyTorch pads sequence-first and returns the batch-first result as a transposed view:
    # its layout decides what .view accepts and the order a dropout after it draws in)
    if batch_first:
        padded = padded.transpose(0, 1)
    if unsorted_indices is not None:  # back to the batch order the sequences came in, by
        # index_select as PyTorch's (its result is then contiguous either way)
        padded = padded.index_select(1 - batch_first, unsorted_indices)
        lengths = lengths[np.asarray(unsorted_indices.tolist(), dtype=np.int64)]
    return padded, _tensor(lengths, dtype=dtypes.int64)


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    r"""Pad a list of variable length Tensors with :attr:`padding_value`.

    ``pad_sequence`` stacks a list of Tensors along a new dimension, and pads them to equal
    length. :attr:`sequences` can be list of sequences with size ``L x *``, where `L` is
    length of the sequence and ``*`` is any number of dimensions (including ``0``). If
    :attr:`batch_first` is ``False``, the output is of size ``T x B x *``, and ``B x T x *``
    otherwise, where ``B`` is the batch size (the number of elements in :attr:`sequences`),
    ``T`` is the length of the longest sequence. The output has the first sequence's dtype.

    Args:
        sequences (list[Tensor]): list of variable length sequences.
        batch_first (bool, optional): if ``True``, the output will be in ``B x T x *``
            format, ``T x B x *`` otherwise.
        padding_value (float, optional): value for padded elements. Default: ``0``.
        padding_side (str, optional): the side to pad the sequences on. Default:
            ``'right'``.

    Returns:
        Tensor of size ``T x B x *`` if :attr:`batch_first` is ``False``.
        Tensor of size ``B x T x *`` otherwise
    """
    if not isinstance(sequences, Iterable):
        raise RuntimeError(  # noqa: TRY004 (PyTorch's error type)
            f"pad_sequence: Expected iterable for input sequences, but got arg of type: "
            f"{type(sequences)}")
    sequences = tuple(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got "
                           f"{padding_side}.")
    first = sequences[0]
    trailing = tuple(first.shape[1:])
    for s in sequences:
        if s.ndim == 0:
            raise RuntimeError("pad_sequence: expected every sequence to be of size L x *, got "
                               "a 0-d tensor")
        if s.ndim != first.ndim:
            raise RuntimeError(f"pad_sequence: expected every sequence to have "
                               f"{first.ndim} dimensions as the first one, got one of "
                               f"{s.ndim}")
        for d, (a, b) in enumerate(zip(trailing, s.shape[1:])):
            if a != b:
                raise RuntimeError(f"The size of tensor a ({a}) must match the size of tensor "
                                   f"b ({b}) at non-singleton dimension {d + 1}")
    lengths = np.array([s.shape[0] for s in sequences], dtype=np.int64)
    steps, total = int(lengths.max()), int(lengths.sum())
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])  # each sequence's first row
    t = np.arange(steps)[:, None]
    if padding_side == "left":  # sequence b occupies the last lengths[b] steps
        t = t - (steps - lengths)[None, :]
    index = np.where((t >= 0) & (t < lengths[None, :]), starts[None, :] + t, total)
    data = cat([s.to(first.dtype) for s in sequences])
    return _gather_rows(data, index.T if batch_first else index, padding_value)


def unpad_sequence(padded_sequences: Tensor, lengths, batch_first: bool = False) -> list:
    r"""Unpad padded Tensor into a list of variable length Tensors (the inverse of
    :func:`pad_sequence` with right padding).

    Unlike PyTorch's, the input is not transposed in place when ``batch_first`` is
    ``False``.

    Args:
        padded_sequences (Tensor): padded sequences.
        lengths (Tensor): length of original (unpadded) sequences.
        batch_first (bool, optional): whether batch dimension first or not. Default:
            ``False``.

    Returns:
        a list of :class:`Tensor` objects
    """
    padded = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    lengths = lengths.tolist() if isinstance(lengths, Tensor) else list(lengths)
    if len(lengths) != padded.shape[0]:
        raise ValueError(f"unpad_sequence: got {len(lengths)} lengths for a batch of "
                         f"{padded.shape[0]} sequences")
    return [padded[i][:int(n)] for i, n in enumerate(lengths)]


def pack_sequence(sequences: list, enforce_sorted: bool = True) -> PackedSequence:
    r"""Packs a list of variable length Tensors: ``pad_sequence`` then
    ``pack_padded_sequence``.

    ``sequences`` should be a list of Tensors of size ``L x *``, where `L` is the length of a
    sequence and `*` is any number of trailing dimensions, including ``0``. If
    ``enforce_sorted`` is ``True``, the sequences should be sorted in the order of decreasing
    length.

    Args:
        sequences (list[Tensor]): A list of sequences of decreasing length.
        enforce_sorted (bool, optional): if ``True``, checks that the input contains
            sequences sorted by length in a decreasing order. If ``False``, this condition is
            not checked. Default: ``True``.

    Returns:
        a :class:`PackedSequence` object
    """
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list:
    r"""Unpack PackedSequence into a list of variable length Tensors (in the order the
    sequences were packed in).

    Args:
        packed_sequences (PackedSequence): A PackedSequence object.

    Returns:
        a list of :class:`Tensor` objects
    """
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
