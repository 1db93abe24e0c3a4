"""Nested tensors (PyTorch's ``torch.nested``): batches of tensors of different shapes.

Two layouts, as PyTorch's:

* ``layout=tritongrad.strided`` (the default, as PyTorch's): components of the same number of
  dimensions that may differ in any of them, held in one flat buffer (Note [Strided layout]
  in _strided.py), a ``StridedNestedTensor``.
* ``layout=tritongrad.nested.jagged`` (PyTorch's ``torch.jagged``): components that differ in
  the size of one dimension, the ragged one (variable-length sequences), packed in one
  regular tensor, ``values()``, with ``offsets()`` saying where each starts (Note [Jagged
  layout] in _tensor.py), a ``NestedTensor``.

Either way ops run on the packed data or per component with ordinary ops, so autograd, the
CPU backend and CUDA come from those. See docs/nested.md for the supported ops and what
differs from PyTorch.
"""

from __future__ import annotations

from collections.abc import Sequence

import tritongrad as tg
from tritongrad.autograd.tensor import Tensor

from ._strided import StridedNestedTensor, wrap, wrap_leaf
from ._tensor import NestedInt, NestedTensor, _make, _make_leaf, _Ragged, is_jagged, jagged

__all__ = ["NestedInt", "NestedTensor", "StridedNestedTensor", "as_nested_tensor", "jagged",
           "masked_select", "narrow", "nested_tensor", "nested_tensor_from_jagged",
           "to_padded_tensor"]


def _is_strided(layout) -> bool:
    """Whether ``layout`` asks for the strided layout (None: PyTorch's default, strided);
    refuses a layout that is neither."""
    if layout is None or layout is tg.strided:
        return True
    if not is_jagged(layout):
        raise RuntimeError(f"Specified layout is unsupported for nested tensors: {layout}")
    return False


def _components_of(op: str, tensor_list) -> list:
    """The items of ``tensor_list`` as regular tensors, with PyTorch's checks for the strided
    layout (the jagged one checks more in ``_pack``)."""
    if not isinstance(tensor_list, (list, tuple)):
        # PyTorch's first words
        raise TypeError(f"Only lists (List[Tensor] and List[List...[Scalar]]) are accepted in "
                        f"{op}(): expected a list of tensors, got {type(tensor_list).__name__}")
    tensors = [t if isinstance(t, Tensor) else tg.as_tensor(t) for t in tensor_list]
    if any(isinstance(t, NestedTensor) for t in tensors):
        raise RuntimeError(f"{op}(): the components must be regular tensors, not nested ones")
    return tensors


def _pack_strided(tensors: list, dtype, device) -> tuple:
    """The components converted and flattened one after another (differentiable), and their
    sizes: Note [Strided layout]'s buffer and structure."""
    for i, t in enumerate(tensors[1:], start=1):
        if t.dim() != tensors[0].dim():
            raise RuntimeError(f"All Tensors given to nested_tensor must have the same "
                               f"dimension. Found dimension {t.dim()} for Tensor at index {i} "
                               f"and dimension {tensors[0].dim()} for Tensor at index 0.")
    if not tensors:
        dt = dtype if dtype is not None else tg.get_default_dtype()
        return tg.empty(0, dtype=dt, device=device), ()
    dtype = dtype if dtype is not None else tensors[0].dtype
    device = device if device is not None else tensors[0].device
    parts = [t.to(device=device, dtype=dtype).reshape(-1) for t in tensors]
    return tg.cat(parts), tuple(tuple(t.shape) for t in tensors)


def _offsets_of(lengths: list, device) -> Tensor:
    offs = [0]
    for n in lengths:
        offs.append(offs[-1] + n)
    return tg.tensor(offs, dtype=tg.int64, device=device)


def _pack(op: str, tensors: list, dtype, device):
    """The components converted and concatenated along their ragged dim (differentiable);
    returns (values, offsets, ragged_idx)."""
    if len(tensors) == 0:
        raise RuntimeError("Cannot construct a nested tensor from an empty tensor list")
    if any(t.dim() == 0 for t in tensors):
        raise RuntimeError("Cannot construct a nested tensor from a list of zero-dim tensors")
    nd = tensors[0].dim()
    if any(t.dim() != nd for t in tensors):
        raise RuntimeError("When constructing a nested tensor, all tensors in list must have "
                           "the same dim")
    # (PyTorch's jagged layout refuses mixed dtypes even when dtype= is given)
    if any(t.dtype != tensors[0].dtype for t in tensors):
        raise RuntimeError("When constructing a nested tensor, all tensors in list must have "
                           "the same dtype")
    differ = [d for d in range(nd) if len({t.shape[d] for t in tensors}) > 1]
    if len(differ) > 1:
        shapes = ", ".join(str(tuple(t.shape)) for t in tensors)
        raise RuntimeError(f"{op}: the jagged layout supports components that differ in one "
                           f"dimension only, got shapes {shapes}")
    ragged = differ[0] if differ else 0
    dtype = dtype if dtype is not None else tensors[0].dtype
    device = device if device is not None else tensors[0].device
    parts = [t.to(device=device, dtype=dtype) for t in tensors]
    values = tg.cat(parts, ragged)
    offsets = _offsets_of([t.shape[ragged] for t in tensors], values.device)
    return values, offsets, ragged + 1


def nested_tensor(tensor_list, *, dtype=None, layout=None, device=None,
                  requires_grad: bool = False, pin_memory: bool = False) -> NestedTensor:
    """Constructs a nested tensor with no autograd history (a leaf tensor) from
    :attr:`tensor_list`, a list of tensors (copied).

    Args:
        tensor_list (List[array_like]): a list of tensors, or anything that can be passed to
            ``tritongrad.tensor``, where each element of the list has the same
            dimensionality (for the jagged layout they may differ in one dimension only).

    Keyword arguments:
        dtype (dtype, optional): the desired type of the returned nested tensor. Default: if
            None, the dtype of the leftmost tensor in the list.
        layout (layout, optional): the desired layout for the nested tensor:
            ``tritongrad.strided`` (the default) or ``tritongrad.nested.jagged``.
        device (device, optional): the desired device. Default: the leftmost tensor's.
        requires_grad (bool, optional): whether autograd should record operations on the
            returned nested tensor. Default: ``False``.
        pin_memory (bool, optional): allocate the values in pinned memory (CPU only).

    Example::

        >>> import tritongrad.nested
        >>> a = tritongrad.arange(3, dtype=tritongrad.float)
        >>> b = tritongrad.arange(5, dtype=tritongrad.float)
        >>> nt = tritongrad.nested.nested_tensor([a, b], layout=tritongrad.nested.jagged,
        ...                                      requires_grad=True)
        >>> nt.is_leaf
        True
        >>> st = tritongrad.nested.nested_tensor([tritongrad.ones(2, 3), tritongrad.ones(4, 5)])
        >>> st.layout, st.size(0)
        (tritongrad.strided, 2)
    """
    strided = _is_strided(layout)
    if not strided and isinstance(tensor_list, Tensor) and not isinstance(tensor_list,
                                                                          NestedTensor):
        tensor_list = tensor_list.unbind(0)  # its rows, as PyTorch's jagged layout takes it
    tensors = _components_of("nested_tensor", tensor_list)
    if strided:
        with tg.no_grad():
            buffer, sizes = _pack_strided([t.detach() for t in tensors], dtype, device)
            if pin_memory:
                buffer = buffer.pin_memory()
        return wrap_leaf(buffer, sizes, bool(requires_grad))
    with tg.no_grad():
        values, offsets, ragged_idx = _pack("nested_tensor", [t.detach() for t in tensors],
                                            dtype, device)
        if pin_memory:
            values = values.pin_memory()
    return _make_leaf(values, _Ragged.of(offsets, None), ragged_idx, bool(requires_grad))


def as_nested_tensor(ts, dtype=None, device=None, layout=None) -> NestedTensor:
    """Constructs a nested tensor preserving autograd history from a tensor or a list / tuple
    of tensors.

    A nested tensor passed in is returned as it is, or converted to ``device`` / ``dtype``. A
    regular tensor of shape ``(B, N, ...)`` is treated as a batch of B components of shape
    ``(N, ...)`` (a view where it is contiguous and no conversion is asked for). A list of
    tensors is copied into the nested tensor; gradients flow back to each of them.

    Args:
        ts (Tensor or List[Tensor] or Tuple[Tensor]): a tensor to treat as a nested tensor,
            or a list / tuple of tensors with the same ndim.
        dtype (dtype, optional): the desired type. Default: the leftmost tensor's.
        device (device, optional): the desired device. Default: the leftmost tensor's.
        layout (layout, optional): ``tritongrad.strided`` (the default) or
            ``tritongrad.nested.jagged``.

    Example::

        >>> import tritongrad.nested
        >>> a = tritongrad.arange(3, dtype=tritongrad.float, requires_grad=True)
        >>> b = tritongrad.arange(5, dtype=tritongrad.float, requires_grad=True)
        >>> nt = tritongrad.nested.as_nested_tensor([a, b], layout=tritongrad.nested.jagged)
        >>> nt.is_leaf
        False
        >>> nt.sum().backward()
        >>> a.grad
        tensor([1., 1., 1.])
    """
    is_list = isinstance(ts, (list, tuple)) and all(isinstance(t, Tensor) for t in ts)
    if not isinstance(ts, Tensor) and not is_list:
        raise TypeError("as_nested_tensor(): Expected first argument to be a tensor or a list "
                        "/ tuple of tensors ")
    if isinstance(ts, NestedTensor):
        if layout is not None and layout is not ts.layout:
            raise RuntimeError("as_nested_tensor(): Converting between nested tensor layouts "
                               "is not supported")
        return ts.to(device=device, dtype=dtype) if dtype is not None or device is not None \
            else ts
    strided = _is_strided(layout)
    if strided:
        if isinstance(ts, Tensor):
            if ts.dim() < 2:
                raise RuntimeError("as_nested_tensor(): Expected tensor argument to have "
                                   "dim() > 1")
            buffer = ts.reshape(-1)
            if dtype is not None or device is not None:
                buffer = buffer.to(device=device, dtype=dtype)
            return wrap(buffer, (tuple(ts.shape[1:]),) * ts.shape[0])
        buffer, sizes = _pack_strided(_components_of("as_nested_tensor", ts), dtype, device)
        return wrap(buffer, sizes)
    if isinstance(ts, Tensor):
        if ts.dim() < 2:
            raise RuntimeError("as_nested_tensor(): Expected tensor argument to have dim() > 1")
        b, n = ts.shape[0], ts.shape[1]
        values = ts.reshape(b * n, *ts.shape[2:])
        if dtype is not None or device is not None:
            values = values.to(device=device, dtype=dtype)
        return _make(values, _Ragged.of(_offsets_of([n] * b, values.device), None), 1)
    if any(isinstance(t, NestedTensor) for t in ts):
        raise RuntimeError("as_nested_tensor(): the components must be regular tensors")
    values, offsets, ragged_idx = _pack("as_nested_tensor", list(ts), dtype, device)
    return _make(values, _Ragged.of(offsets, None), ragged_idx)


def nested_tensor_from_jagged(values: Tensor, offsets: Tensor | None = None,
                              lengths: Tensor | None = None, jagged_dim: int | None = None,
                              min_seqlen: int | None = None,
                              max_seqlen: int | None = None) -> NestedTensor:
    """Constructs a jagged layout nested tensor from the given jagged components: a view of
    ``values`` that keeps its history.

    * offsets: indices within the packed dimension splitting it into batch elements, shape
      B + 1: ``[0, 2, 3, 6]`` splits a packed dimension of size 6 into lengths ``[2, 1, 3]``.
    * lengths: the lengths of the batch elements, shape B.

    Given both, the tensor has "holes": element i is ``lengths[i]`` rows from ``offsets[i]``.

    Args:
        values (Tensor): the buffer of shape ``(sum_B(*), D_1, ..., D_N)``, the jagged
            dimension packed into one.
        offsets (Tensor, optional): offsets into the jagged dimension, shape B + 1.
        lengths (Tensor, optional): lengths of the batch elements, shape B.
        jagged_dim (int, optional): which dimension of the result is jagged (that dimension
            minus one of ``values`` is the packed one); >= 1. Default: 1.
        min_seqlen (int, optional): the minimum length, cached instead of computed.
        max_seqlen (int, optional): the maximum length, cached instead of computed.

    Example::

        >>> import tritongrad.nested
        >>> values = tritongrad.randn(12, 5)
        >>> offsets = tritongrad.tensor([0, 3, 5, 6, 10, 12])
        >>> nt = tritongrad.nested.nested_tensor_from_jagged(values, offsets)
        >>> nt.shape[0], nt.dim()
        (5, 3)
    """
    if isinstance(values, NestedTensor) or not isinstance(values, Tensor):
        raise TypeError(f"nested_tensor_from_jagged(): values must be a regular Tensor, got "
                        f"{type(values).__name__}")
    if offsets is None:
        if lengths is None:
            raise RuntimeError("nested_tensor_from_jagged(): At least one of offsets or lengths "
                               "is required.")
        _check_index_tensor("lengths", lengths)
        offsets = tg.cat([tg.zeros(1, dtype=lengths.dtype, device=lengths.device),
                          lengths.cumsum(0).to(lengths.dtype)])
        lengths = None
    _check_index_tensor("offsets", offsets)
    if lengths is not None:
        _check_index_tensor("lengths", lengths)
        if lengths.shape[0] != offsets.shape[0] - 1:
            raise RuntimeError(f"nested_tensor_from_jagged(): lengths must have B = "
                               f"{offsets.shape[0] - 1} elements (offsets has B + 1), got "
                               f"{lengths.shape[0]}")
    if jagged_dim is None:
        jagged_dim = 1
    elif jagged_dim < 1:
        raise ValueError(f"Expected jagged_dim >=1, but got {jagged_dim}.")
    if jagged_dim > values.dim():
        raise ValueError(f"nested_tensor_from_jagged(): jagged_dim={jagged_dim} needs values "
                         f"with at least {jagged_dim} dims, got shape {tuple(values.shape)}")
    ragged = _Ragged.of(offsets, lengths, min_seqlen=min_seqlen, max_seqlen=max_seqlen)
    return _make(values, ragged, jagged_dim)


def _check_index_tensor(name: str, t) -> None:
    if not isinstance(t, Tensor) or t.dim() != 1 or t.dtype not in (tg.int32, tg.int64):
        raise RuntimeError(f"nested_tensor_from_jagged(): {name} must be a 1-D int32 or int64 "
                           f"tensor, got {_describe(t)}")


def _describe(t) -> str:
    if isinstance(t, Tensor):
        return f"a {t.dtype} tensor of shape {tuple(t.shape)}"
    return type(t).__name__


def narrow(tensor: Tensor, dim: int, start: int | Tensor, length: int | Tensor,
           layout=tg.strided) -> NestedTensor:
    """Constructs a nested tensor, a view of :attr:`tensor` (a strided tensor of shape
    ``(B, T, ...)``) that shows in row b of dimension 1 only the elements in
    ``[start[b], start[b] + length[b])``. ``start`` and ``length`` are integers or tensors of
    shape ``(B,)``. The result is non-contiguous (it has ``lengths()``), as PyTorch's jagged
    ``narrow``: the kind of nested tensor a key/value cache makes.

    With ``layout=tritongrad.strided`` (the default), as PyTorch's: ``tensor`` seen as a
    strided nested tensor of its B rows, narrowed along the batch dimension (``dim=0``, with
    integer ``start`` and ``length``), a view of ``tensor``.

    Args:
        tensor (Tensor): a strided tensor, the underlying data of the nested tensor (copied
            when it is not contiguous).
        dim (int): the dimension narrowed: 1 for the jagged layout, 0 for the strided one.
        start (int or Tensor): the starting element of each row.
        length (int or Tensor): the number of elements taken in each row.

    Keyword arguments:
        layout (layout): ``tritongrad.strided`` (the default) or
            ``tritongrad.nested.jagged``.

    Example::

        >>> import tritongrad.nested
        >>> x = tritongrad.randn(2, 5, 3)
        >>> nt = tritongrad.nested.narrow(x, 1, tritongrad.tensor([0, 1]),
        ...                               tritongrad.tensor([3, 2]),
        ...                               layout=tritongrad.nested.jagged)
        >>> [c.shape for c in nt.unbind()]
        [tritongrad.Size([3, 3]), tritongrad.Size([2, 3])]
    """
    for name, v in (("start", start), ("length", length)):
        if not isinstance(v, (int, Tensor)) or isinstance(v, bool):
            raise RuntimeError(f"{name} must be an integer or a tensor")
    if _is_strided(layout):
        return _narrow_strided(tensor, dim, start, length)
    if dim != 1:
        raise RuntimeError("jagged layout only supports dim=1")
    if not isinstance(tensor, Tensor) or isinstance(tensor, NestedTensor) or tensor.dim() < 2:
        raise RuntimeError(f"narrow(): expected a strided tensor of at least 2 dims, got "
                           f"{_describe(tensor)}")
    b, t = tensor.shape[0], tensor.shape[1]
    dev = tensor.device

    def per_row(v) -> Tensor:
        v = tg.tensor([v], dtype=tg.int64, device=dev) if isinstance(v, int) else v.to(
            device=dev, dtype=tg.int64)
        return v.reshape(-1).expand(b).contiguous()
    start_t, length_t = per_row(start), per_row(length)
    starts, lens = start_t.tolist(), length_t.tolist()
    for s, n in zip(starts, lens):
        if s < 0 or n < 0 or s + n > t:
            raise RuntimeError(f"narrow(): start {s} and length {n} exceed dimension 1 of size "
                               f"{t}")
    offsets = start_t + tg.arange(b, dtype=tg.int64, device=dev) * t
    last = offsets[-1:] + length_t[-1:]
    offsets = tg.cat([offsets, last])
    values = tensor.reshape(b * t, *tensor.shape[2:])
    return _make(values, _Ragged.of(offsets, length_t), 1)


def _narrow_strided(tensor: Tensor, dim: int, start, length) -> StridedNestedTensor:
    """PyTorch's strided ``narrow``: the tensor as a nested tensor of its rows, narrowed
    along the batch dimension (the only one a strided nested tensor narrows)."""
    if isinstance(start, Tensor) or isinstance(length, Tensor):
        raise RuntimeError("start and length must be integers for the strided layout NT impl")
    if dim != 0:
        raise RuntimeError(f"narrow(): only dim=0 supported for nested tensors, but got: {dim}")
    if not isinstance(tensor, Tensor) or isinstance(tensor, NestedTensor) or tensor.dim() < 2:
        raise RuntimeError(f"narrow(): expected a strided tensor of at least 2 dims, got "
                           f"{_describe(tensor)}")
    b = tensor.shape[0]
    if start < 0 or length < 0 or start + length > b:
        raise RuntimeError(f"narrow(): start {start} and length {length} exceed dimension 0 "
                           f"of size {b}")
    rows = tensor.narrow(0, start, length)
    return wrap(rows.reshape(-1), (tuple(tensor.shape[1:]),) * length)


def _pad(t: Tensor, dim: int, size: int, padding: float) -> Tensor:
    """``t`` padded with ``padding`` at the end of ``dim`` to ``size`` (differentiable)."""
    missing = size - t.shape[dim]
    if missing == 0:
        return t
    shape = list(t.shape)
    shape[dim] = missing
    return tg.cat([t, tg.full(shape, padding, dtype=t.dtype, device=t.device)], dim)


def _to_padded_strided(input: StridedNestedTensor, padding: float, output_size) -> Tensor:
    nd = input.dim()
    comps = input._components()
    widths = [max((c.shape[d] for c in comps), default=0) for d in range(nd - 1)]
    if output_size is not None:
        output_size = tuple(output_size)
        if len(output_size) != nd:
            raise RuntimeError("Length of output_size does not match NestedTensor dims. "
                               "Broadcasting is not supported.")
        if output_size[0] < len(comps) or any(n < w for n, w in zip(output_size[1:], widths)):
            raise RuntimeError("Value in output_size is less than NestedTensor padded size. "
                               "Truncation is not supported.")
        widths = list(output_size[1:])
    padded = []
    for c in comps:
        for d, w in enumerate(widths):
            c = _pad(c, d, w, padding)
        padded.append(c)
    if not padded:
        v = input.values()
        return tg.full((0, *widths), padding, dtype=v.dtype, device=v.device)
    out = tg.stack(padded)
    if output_size is not None:
        out = _pad(out, 0, output_size[0], padding)
    return out


def to_padded_tensor(input: NestedTensor, padding: float,
                     output_size: Sequence[int] | None = None) -> Tensor:
    """Returns a new (non-nested) tensor by padding the :attr:`input` nested tensor. The
    leading entries are filled with the nested data, while the trailing entries are padded.
    Differentiable with respect to the nested tensor.

    Args:
        input (NestedTensor): the nested tensor to pad.
        padding (float): the padding value for the trailing entries.
        output_size (Tuple[int], optional): the size of the output tensor; by default the
            batch size and, in each other dim, the largest component's size. Truncation is not
            supported.

    Example::

        >>> import tritongrad.nested
        >>> nt = tritongrad.nested.nested_tensor([tritongrad.ones(2, 3), tritongrad.ones(1, 3)],
        ...                                      layout=tritongrad.nested.jagged)
        >>> tritongrad.nested.to_padded_tensor(nt, 0.0).shape
        tritongrad.Size([2, 2, 3])
        >>> st = tritongrad.nested.nested_tensor([tritongrad.ones(2, 3), tritongrad.ones(4, 1)])
        >>> tritongrad.nested.to_padded_tensor(st, -1.0, output_size=(2, 4, 5)).shape
        tritongrad.Size([2, 4, 5])
    """
    if not isinstance(input, NestedTensor):
        raise RuntimeError(f"to_padded_tensor(): expected a nested tensor, got "
                           f"{_describe(input)}")
    if isinstance(input, StridedNestedTensor):
        with tg.DisableTorchFunctionSubclass():
            return _to_padded_strided(input, padding, output_size)
    with tg.DisableTorchFunctionSubclass():
        comps = input._components()
        d = input._ragged_idx - 1
        width = max((c.shape[d] for c in comps), default=0)

        out = tg.stack([_pad(c, d, width, padding) for c in comps])
        if output_size is not None:
            output_size = tuple(output_size)
            if len(output_size) != out.dim():
                raise RuntimeError(f"to_padded_tensor(): output_size {list(output_size)} must "
                                   f"have {out.dim()} entries")
            for i, n in enumerate(output_size):
                if n < out.shape[i]:
                    raise RuntimeError("Value in output_size is less than NestedTensor padded "
                                       "size. Truncation is not supported.")
                out = _pad(out, i, n, padding)
    return out


def masked_select(tensor: Tensor, mask: Tensor) -> NestedTensor:
    """Constructs a nested tensor given a strided tensor input and a strided mask: the values
    are the elements where ``mask`` is True, row by row of the last dimension, so the result
    has one component per row (``prod(tensor.shape[:-1])`` of them), unlike
    :func:`tritongrad.masked_select`, whose output is flattened. Differentiable with respect
    to ``tensor``.

    Example::

        >>> import tritongrad.nested
        >>> tensor = tritongrad.randn(3, 3)
        >>> mask = tritongrad.tensor([[False, False, True], [True, False, True],
        ...                           [False, False, True]])
        >>> nt = tritongrad.nested.masked_select(tensor, mask)
        >>> nt.offsets().diff()
        tensor([1, 2, 1])
    """
    for name, t in (("tensor", tensor), ("mask", mask)):
        if not isinstance(t, Tensor) or isinstance(t, NestedTensor):
            raise RuntimeError(f"tritongrad.nested.masked_select requires a strided {name}, "
                               f"given {_describe(t)}")
    values = tensor.masked_select(mask)
    lengths = mask.expand(tuple(tensor.shape)).sum(dim=tensor.dim() - 1).reshape(-1)
    offsets = tg.cat([tg.zeros(1, dtype=tg.int64, device=lengths.device),
                      lengths.cumsum(0).to(tg.int64)])
    return _make(values, _Ragged.of(offsets, None), 1)
