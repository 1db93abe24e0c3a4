"""State dicts to and from ``.safetensors`` files (Hugging Face's safetensors format).

A safetensors file is a little-endian JSON header (name -> dtype, shape, byte range, plus an
optional ``"__metadata__"`` of strings) followed by the raw tensor bytes. The ``safetensors``
package writes and parses it; its NumPy front end (``safetensors.numpy``) cannot represent
bfloat16, which NumPy lacks, so this module talks to the layer beneath it, the one that front
end itself wraps: ``safetensors.serialize`` / ``serialize_file`` take each tensor's dtype
name, shape and bytes (bfloat16 as its 16-bit patterns, named ``"bfloat16"``, stored as
``BF16``), and ``safetensors.deserialize`` returns each tensor's dtype string, shape and bytes.
Files written here load with ``safetensors.numpy.load_file`` (but for bfloat16) and with
``safetensors.torch.load_file`` (bfloat16 included), and the other way round.

As ``safetensors.torch``, ``save_file`` refuses tensors that share memory (they would load
as separate copies) and sparse tensors; ``save_model`` / ``load_model`` save and load a
module whose weights are tied, storing each shared tensor once. ``load_file`` and ``load``
give the tensors in the order of their bytes in the file (``safetensors.torch.load_file``'s
order). Unlike ``safetensors.torch``, a non-contiguous tensor is saved (as a contiguous copy).

The ``safetensors`` package is optional (``pip install safetensors``, or the ``train`` extra).

Example:
    >>> from tritongrad.utils.safetensors import load_file, save_file
    >>> model = tg.nn.Linear(4, 2)
    >>> save_file(model.state_dict(), "model.safetensors", metadata={"format": "pt"})
    >>> model.load_state_dict(load_file("model.safetensors"))
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

import numpy as np

from ..autograd.tensor import Tensor
from ..runtime import dtype as dtypes

__all__ = ["save_file", "load_file", "save", "load", "load_metadata", "save_model", "load_model"]

# tritongrad dtype <-> the header's dtype string (what safetensors.deserialize reports) and
# the dtype name its serializer takes (NumPy's name, "bfloat16" for BF16).
_FORMAT = {
    dtypes.bool: ("BOOL", "bool"), dtypes.uint8: ("U8", "uint8"), dtypes.int8: ("I8", "int8"),
    dtypes.int16: ("I16", "int16"), dtypes.int32: ("I32", "int32"),
    dtypes.int64: ("I64", "int64"), dtypes.float16: ("F16", "float16"),
    dtypes.bfloat16: ("BF16", "bfloat16"), dtypes.float32: ("F32", "float32"),
    dtypes.float64: ("F64", "float64"),
}
_NUMPY_DTYPE = {"BOOL": np.bool_, "U8": "<u1", "I8": "<i1", "I16": "<i2", "I32": "<i4",
                "I64": "<i8", "F16": "<f2", "BF16": "<u2", "F32": "<f4", "F64": "<f8",
                "U16": "<u2", "U32": "<u4", "U64": "<u8", "C64": "<c8"}
_FORMAT.update({dtypes.uint16: ("U16", "uint16"), dtypes.uint32: ("U32", "uint32"),
                dtypes.uint64: ("U64", "uint64"), dtypes.complex64: ("C64", "complex64")})
# float8 (when ml_dtypes is installed): one byte each, read back as their bit patterns
_FLOAT8_CODES = {"float8_e4m3fn": "F8_E4M3", "float8_e5m2": "F8_E5M2",
                 "float8_e4m3fnuz": "F8_E4M3FNUZ", "float8_e5m2fnuz": "F8_E5M2FNUZ",
                 "float8_e8m0fnu": "F8_E8M0"}
for _dt in dtypes.FLOAT8_TYPES:
    if _dt.np.type is not np.void and _dt.name in _FLOAT8_CODES:
        _FORMAT[_dt] = (_FLOAT8_CODES[_dt.name], _dt.name)
        _NUMPY_DTYPE[_FLOAT8_CODES[_dt.name]] = _dt.np
_FROM_HEADER = {code: dt for dt, (code, _) in _FORMAT.items()}


def _package(fn: str):
    try:
        import safetensors
    except ImportError:
        raise ImportError(f"tritongrad.utils.safetensors.{fn} needs the safetensors package: "
                          f"pip install safetensors (or pip install 'tritongrad[train]')") \
            from None
    return safetensors


def _host_bytes(name: str, t) -> tuple[str, list[int], np.ndarray]:
    """(serializer dtype name, shape, C-contiguous little-endian host array) of ``t``."""
    if not isinstance(t, Tensor):
        raise TypeError(f"save_file: the value of {name!r} must be a Tensor, got "
                        f"{type(t).__name__}")
    fmt = _FORMAT.get(t.dtype)
    if fmt is None:
        raise TypeError(f"save_file: {name!r} has dtype {t.dtype}, which safetensors files "
                        f"do not hold here (supported: "
                        f"{', '.join(str(d) for d in _FORMAT)})")
    if t.layout is not dtypes.strided:
        raise ValueError(f"You are trying to save a sparse tensors: `{[name]}` which this "
                         f"library does not support. You can make it a dense tensor before "
                         f"saving with `.to_dense()` but be aware this might make a much "
                         f"larger file than needed.")
    host = t.detach().cpu()
    if t.dtype is dtypes.bfloat16:
        arr = dtypes.bfloat16_bits(host.to(dtypes.float32).numpy())
    else:
        arr = host.numpy()
    arr = np.ascontiguousarray(arr, dtype=np.dtype(arr.dtype).newbyteorder("<"))
    return fmt[1], list(t.shape), arr


def _specs(fn: str, tensors: Mapping, metadata):
    st = _package(fn)
    if not isinstance(tensors, Mapping):
        raise TypeError(f"{fn}: expected a dict of name -> Tensor, got {type(tensors).__name__}")
    if metadata is not None and not (isinstance(metadata, Mapping) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())):
        raise TypeError(f"{fn}: metadata must be a dict of str -> str, got {metadata!r}")
    _refuse_shared(tensors)
    arrays, specs = [], {}
    for name, t in tensors.items():
        if not isinstance(name, str):
            raise TypeError(f"{fn}: tensor names must be strings, got {name!r}")
        dt, shape, arr = _host_bytes(name, t)
        arrays.append(arr)  # alive until the serializer has read the pointers below
        if hasattr(st, "TensorSpec"):  # safetensors >= 0.7: pointers, no copy
            specs[name] = st.TensorSpec(dtype=dt, shape=shape, data_ptr=arr.ctypes.data,
                                        data_len=arr.nbytes)
        else:                          # older releases: the bytes themselves
            specs[name] = {"dtype": dt, "shape": shape, "data": arr.tobytes()}
    return st, specs, (None if metadata is None else dict(metadata)), arrays


def _shared_groups(tensors: Mapping) -> list[set[str]]:
    """The names of tensors sharing memory, in groups of two or more: on one storage, with
    overlapping element ranges (first to last element), as ``safetensors.torch`` groups them.
    Disjoint views of one storage are not grouped (each is saved as its own bytes)."""
    from ..autograd.storage import _span
    storages: dict = {}
    for name, t in tensors.items():
        if not isinstance(t, Tensor) or t.layout is not dtypes.strided or not t.numel():
            continue  # (errors are raised by the caller, in PyTorch's order)
        ptr, nbytes = _span(t._data)
        if not nbytes:
            continue
        item = t._data.itemsize  # host bytes (a CPU bfloat16 element takes 4)
        start = t.data_ptr()
        end = start + item * (1 + sum((n - 1) * st for n, st in zip(t.shape, t.stride())))
        storages.setdefault((str(t.device), ptr, nbytes), []).append((start, end, name))
    groups = []
    for areas in storages.values():
        areas.sort()
        current, last_stop = {areas[0][2]}, areas[0][1]
        for start, stop, name in areas[1:]:
            if start >= last_stop:
                groups.append(current)
                current = {name}
            else:
                current.add(name)
            last_stop = stop
        groups.append(current)
    return [g for g in groups if len(g) > 1]


def _refuse_shared(tensors: Mapping) -> None:
    """PyTorch's ``safetensors.torch`` refusal of tensors sharing memory: a file cannot keep
    the sharing, so they would load as independent copies."""
    failing = _shared_groups(tensors)
    if failing:
        raise RuntimeError(f"Some tensors share memory, this will lead to duplicate memory on "
                           f"disk and potential differences when loading them again: "
                           f"{failing}. A potential way to correctly save your model is to "
                           f"use `save_model`.")


def _is_complete(t: Tensor) -> bool:
    """Whether ``t`` is all of its storage, from its start."""
    from ..autograd.storage import _span
    ptr, nbytes = _span(t._data)
    return t.data_ptr() == ptr and t.numel() * t._data.itemsize == nbytes


def _duplicate_names(state_dict: Mapping, preferred=()) -> dict[str, list[str]]:
    """kept name -> the other names of its group of tensors sharing memory (tied weights):
    the first name, sorted, of a tensor covering its whole storage, one of ``preferred``
    (the names a file holds) if any, as ``safetensors.torch``'s ``_remove_duplicate_names``."""
    out: dict = {}
    for group in _shared_groups(state_dict):
        complete = {n for n in group if _is_complete(state_dict[n])}
        if not complete:
            raise RuntimeError(f"Error while trying to find names to remove to save state "
                               f"dict, but found no suitable name to keep for saving amongst: "
                               f"{group}. None is covering the entire storage.Refusing to "
                               f"save/load the model since you could be storing much more "
                               f"memory than needed.")
        keep = min(complete.intersection(preferred) or complete)
        out[keep] = sorted(group - {keep})
    return out


def save_model(model, filename: str | os.PathLike, metadata: Mapping[str, str] | None = None,
               force_contiguous: bool = False) -> None:
    """Saves ``model.state_dict()`` to a safetensors file, storing each group of tied
    (memory-sharing) tensors once: the other names are dropped, and recorded in the metadata
    as ``{dropped: kept}`` (unless the caller's metadata has that key), as PyTorch's
    ``safetensors.torch.save_model``. ``force_contiguous`` is accepted for compatibility:
    tensors are always written contiguous here."""
    state_dict = dict(model.state_dict())
    for kept, dropped in _duplicate_names(state_dict).items():
        for name in dropped:
            metadata = {} if metadata is None else dict(metadata)
            metadata.setdefault(name, kept)
            del state_dict[name]
    save_file(state_dict, filename, metadata=metadata)


def load_model(model, filename: str | os.PathLike, strict: bool = True,
               device: str = "cpu") -> tuple[set, list]:
    """Loads a file ``save_model`` wrote (or any safetensors state dict) into ``model``: the
    names dropped for tied tensors are not missing (the module ties them again), as PyTorch's
    ``safetensors.torch.load_model``. Returns ``(missing, unexpected)``; with ``strict``, raises
    ``RuntimeError`` ("Error(s) in loading state_dict for ...") when either is not empty."""
    state_dict = load_file(filename, device=device)
    duplicates = _duplicate_names(model.state_dict(), preferred=set(state_dict))
    missing, unexpected = model.load_state_dict(state_dict, strict=False)
    missing, unexpected = set(missing), list(unexpected)
    for dropped in duplicates.values():
        for name in dropped:
            if name in missing:
                missing.remove(name)
            else:
                unexpected.append(name)
    if strict and (missing or unexpected):
        error = f"Error(s) in loading state_dict for {type(model).__name__}:"
        if missing:
            keys = ", ".join(f'"{k}"' for k in sorted(missing))
            error += f"\n    Missing key(s) in state_dict: {keys}"
        if unexpected:
            keys = ", ".join(f'"{k}"' for k in sorted(unexpected))
            error += f"\n    Unexpected key(s) in state_dict: {keys}"
        raise RuntimeError(error)
    return missing, unexpected


def save_file(tensors: Mapping[str, Tensor], filename: str | os.PathLike,
              metadata: Mapping[str, str] | None = None) -> None:
    """Saves a dictionary of tensors (e.g. a ``state_dict()``) to a safetensors file.

    Tensors of any device and layout are copied to the host as C-contiguous little-endian
    bytes; bfloat16 is written as its bit patterns under the header dtype ``BF16``.

    Args:
        tensors: name -> Tensor.
        filename: the file to write.
        metadata: optional text-only annotations (str -> str) for the header's
            ``"__metadata__"``.

    Raises:
        ImportError: the ``safetensors`` package is not installed.
        TypeError: a value is not a Tensor, a name not a string, metadata not str -> str,
            or a dtype has no safetensors form here (complex).
    """
    st, specs, metadata, _keep = _specs("save_file", tensors, metadata)
    st.serialize_file(specs, os.fspath(filename), metadata=metadata)


def save(tensors: Mapping[str, Tensor], metadata: Mapping[str, str] | None = None) -> bytes:
    """``save_file`` into bytes instead of a file."""
    st, specs, metadata, _keep = _specs("save", tensors, metadata)
    return bytes(st.serialize(specs, metadata=metadata))


def load(data: bytes, device: str = "cpu") -> dict[str, Tensor]:
    """``load_file`` from the bytes of a safetensors file."""
    return _tensors("load", bytes(data), device)


def load_file(filename: str | os.PathLike, device: str = "cpu") -> dict[str, Tensor]:
    """Loads a safetensors file into a dictionary of tensors, in the file's order.

    Args:
        filename: the file to read.
        device: where the tensors go (default ``"cpu"``).

    Returns:
        name -> Tensor, each with the file's dtype and shape (``BF16`` as bfloat16).

    Raises:
        ImportError: the ``safetensors`` package is not installed.
        TypeError: the file holds a dtype tritongrad has no tensors of (e.g. ``U16``,
            ``F8_E4M3``), naming the tensor.
    """
    _package("load_file")
    with open(filename, "rb") as f:
        return _tensors("load_file", f.read(), device)


def load_metadata(filename: str | os.PathLike) -> dict[str, str] | None:
    """The ``"__metadata__"`` of a safetensors file's header (None when it has none)."""
    st = _package("load_metadata")
    with st.safe_open(os.fspath(filename), framework="numpy") as f:
        return f.metadata()


def _in_file_order(data: bytes, entries: list) -> list:
    """``entries`` (``safetensors.deserialize``'s, in an order that changes from one process
    to the next) in the order of their bytes in the file, which is the order PyTorch's
    ``safetensors.torch.load_file`` gives (its ``safe_open``'s ``offset_keys``)."""
    n = int.from_bytes(data[:8], "little")  # (deserialize has checked the header)
    header = json.loads(bytes(data[8:8 + n]))
    return sorted(entries, key=lambda e: (*header[e[0]]["data_offsets"], e[0]))


def _tensors(fn: str, data: bytes, device) -> dict[str, Tensor]:
    from ..autograd.ops.creation import tensor
    st = _package(fn)
    entries = _in_file_order(data, st.deserialize(data))
    out = {}
    for name, entry in entries:
        code = entry["dtype"]
        dt = _FROM_HEADER.get(code)
        if dt is None:
            raise TypeError(f"{fn}: tensor {name!r} has safetensors dtype {code}, which "
                            f"tritongrad has no tensors of")
        arr = np.frombuffer(entry["data"], dtype=_NUMPY_DTYPE[code]).reshape(entry["shape"])
        if dt is dtypes.bfloat16:
            arr = dtypes.bfloat16_values(arr)  # exact: the values are on bfloat16's grid
        out[name] = tensor(arr.copy(), dtype=dt, device=device)
    return out
