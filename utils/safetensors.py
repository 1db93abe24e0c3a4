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

The ``safetensors`` package is optional (``pip install safetensors``, or the ``train`` extra).

Example:
    >>> from tritongrad.utils.safetensors import load_file, save_file
    >>> model = tg.nn.Linear(4, 2)
    >>> save_file(model.state_dict(), "model.safetensors", metadata={"format": "pt"})
    >>> model.load_state_dict(load_file("model.safetensors"))
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import numpy as np

from ..autograd.tensor import Tensor
from ..runtime import dtype as dtypes

__all__ = ["save_file", "load_file", "save", "load", "load_metadata"]

# tritongrad dtype <-> the header's dtype string (what safetensors.deserialize reports) and
# the dtype name its serializer takes (NumPy's name, "bfloat16" for BF16).
_FORMAT = {
    dtypes.bool: ("BOOL", "bool"), dtypes.uint8: ("U8", "uint8"), dtypes.int8: ("I8", "int8"),
    dtypes.int16: ("I16", "int16"), dtypes.int32: ("I32", "int32"),
    dtypes.int64: ("I64", "int64"), dtypes.float16: ("F16", "float16"),
    dtypes.bfloat16: ("BF16", "bfloat16"), dtypes.float32: ("F32", "float32"),
    dtypes.float64: ("F64", "float64"),
}
_FROM_HEADER = {code: dt for dt, (code, _) in _FORMAT.items()}
_NUMPY_DTYPE = {"BOOL": np.bool_, "U8": "<u1", "I8": "<i1", "I16": "<i2", "I32": "<i4",
                "I64": "<i8", "F16": "<f2", "BF16": "<u2", "F32": "<f4", "F64": "<f8"}


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
    st = _package("load")
    return _tensors("load", st.deserialize(bytes(data)), device)


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
    st = _package("load_file")
    with open(filename, "rb") as f:
        return _tensors("load_file", st.deserialize(f.read()), device)


def load_metadata(filename: str | os.PathLike) -> dict[str, str] | None:
    """The ``"__metadata__"`` of a safetensors file's header (None when it has none)."""
    st = _package("load_metadata")
    with st.safe_open(os.fspath(filename), framework="numpy") as f:
        return f.metadata()


def _tensors(fn: str, entries, device) -> dict[str, Tensor]:
    from ..autograd.ops.creation import tensor
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
