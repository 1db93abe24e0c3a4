"""``tg.save`` / ``tg.load``: a safe file format for state dicts and other nested data.

Nothing is pickled, so loading a file never runs code from it. A file is:

    offset 0   magic  b"\\x89TGSAVE\\n"                     (8 bytes)
           8   format version, little-endian uint32       (1)
          12   CRC-32 of the header bytes, uint32
          16   header length in bytes, uint64
          24   header: UTF-8 JSON
               padding with zeros to a multiple of 64
               data: each tensor's raw bytes (C order, little-endian), 64-byte aligned
                     (no padding after the last one)

The header is ``{"format": "tritongrad", "version": 1, "tensors": [...], "data_size": n,
"object": ...}`` (the file is exactly its data section's start plus ``data_size`` bytes long).
Each entry of ``tensors`` records ``dtype`` (a tritongrad dtype name), ``shape``, ``device``
(where it was saved from), ``offset`` and ``nbytes`` (relative to the data section), ``crc32``
of its bytes, ``requires_grad`` and ``parameter`` (an ``nn.Parameter``). ``object`` encodes
the saved object: JSON strings, finite floats, ints, bools and null stand for themselves,
lists for lists; everything else is a tagged dict:

    {"@": "tensor", "i": n}             tensors[n] (a tensor saved twice is stored once)
    {"@": "dict", "items": [[k, v]]}    a dict (an OrderedDict if ``"ordered": true``); keys
                                        may be any encodable hashable value
    {"@": "tuple", "items": [...]}      a tuple
    {"@": "float", "v": "nan"}          nan, inf, -inf
    {"@": "dtype", "v": "float32"}      a tritongrad dtype
    {"@": "device", "v": "cuda:0"}      a tritongrad device
    {"@": "bytes", "hex": "..."}        bytes

``load`` checks the magic, version, header checksum and every field's type and range, that
each tensor's bytes lie inside the file and match their checksum, and raises
``tg.serialization.UnpicklingError`` (a ``RuntimeError``) naming what is wrong otherwise.
"""

from __future__ import annotations

import io
import json
import math
import os
import struct
import zlib
from collections import OrderedDict

import numpy as np

from .autograd.tensor import Tensor
from .runtime import dtype as dtypes
from .runtime.device import device as Device

__all__ = ["UnpicklingError", "load", "save"]

MAGIC = b"\x89TGSAVE\n"
VERSION = 1
_PREFIX = struct.Struct("<8sIIQ")
_ALIGN = 64
_MAX_HEADER = 1 << 30
_MAX_DEPTH = 256

_DTYPES = {d.name: d for d in (dtypes.bool, dtypes.uint8, dtypes.int8, dtypes.int16,
                               dtypes.int32, dtypes.int64, dtypes.float16, dtypes.bfloat16,
                               dtypes.float32, dtypes.float64, dtypes.complex64,
                               dtypes.complex128)}


class UnpicklingError(RuntimeError):
    """A file given to ``tg.load`` is not a valid tritongrad save (malformed, truncated or
    modified)."""


# -- save ----------------------------------------------------------------------------------------

def _host_bytes(t: Tensor) -> bytes:
    """The tensor's elements, C order, little-endian (bfloat16 as its 16-bit patterns)."""
    t = t.detach()
    if t.dtype is dtypes.bfloat16:
        from .kernels.numpy import bf16
        host = t.cpu().to(dtypes.float32).numpy()
        arr = bf16.from_float32(host)
    else:
        arr = np.asarray(t.cpu().numpy())
    arr = np.ascontiguousarray(arr)
    if arr.dtype.byteorder == ">":
        arr = arr.byteswap().view(arr.dtype.newbyteorder("<"))
    return arr.tobytes()


class _Writer:
    def __init__(self):
        self.tensors: list = []
        self.blobs: list = []
        self.ids: dict = {}
        self.size = 0

    def tensor(self, t: Tensor) -> dict:
        key = id(t)
        if key in self.ids:
            return {"@": "tensor", "i": self.ids[key]}
        from .nn.parameter import Parameter
        data = _host_bytes(t)
        offset = self.size
        pad = -len(data) % _ALIGN
        self.blobs.append(data + b"\0" * pad)
        self.size += len(data) + pad
        self.tensors.append({"dtype": t.dtype.name, "shape": list(t.shape),
                             "device": str(t.device), "offset": offset, "nbytes": len(data),
                             "crc32": zlib.crc32(data), "requires_grad": t.requires_grad,
                             "parameter": isinstance(t, Parameter)})
        self.ids[key] = len(self.tensors) - 1
        return {"@": "tensor", "i": self.ids[key]}

    def encode(self, obj, depth: int = 0):
        if depth > _MAX_DEPTH:
            raise ValueError("save: the object is nested too deeply (or is recursive)")
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int):
            return int(obj)
        if isinstance(obj, float):
            return float(obj) if math.isfinite(obj) else {"@": "float", "v": repr(float(obj))}
        if isinstance(obj, Tensor):
            return self.tensor(obj)
        if isinstance(obj, (np.integer, np.floating, np.bool_)):
            return self.encode(obj.item(), depth)
        if isinstance(obj, dict):
            out = {"@": "dict", "items": [[self.encode(k, depth + 1), self.encode(v, depth + 1)]
                                          for k, v in obj.items()]}
            if isinstance(obj, OrderedDict):
                out["ordered"] = True
            return out
        if isinstance(obj, list):
            return [self.encode(v, depth + 1) for v in obj]
        if isinstance(obj, tuple):
            return {"@": "tuple", "items": [self.encode(v, depth + 1) for v in obj]}
        if isinstance(obj, dtypes.dtype):
            return {"@": "dtype", "v": obj.name}
        if isinstance(obj, Device):
            return {"@": "device", "v": str(obj)}
        if isinstance(obj, (bytes, bytearray)):
            return {"@": "bytes", "hex": bytes(obj).hex()}
        raise TypeError(f"save: cannot save an object of type {type(obj).__name__} (supported: "
                        f"dict, list, tuple, str, int, float, bool, None, bytes, Tensor, dtype, "
                        f"device)")


def save(obj, f, pickle_module=None, pickle_protocol=None,
         _use_new_zipfile_serialization=True) -> None:
    """Saves ``obj`` (a state dict, or any nesting of dicts, lists and tuples of tensors,
    strings, numbers, bools, None, bytes, dtypes and devices) to ``f`` (a path or a writable
    binary file object). No pickle: see the module docstring for the format.

    Example:
        >>> model = tg.nn.Linear(3, 2)
        >>> tg.save(model.state_dict(), "/tmp/linear.tg")
        >>> model.load_state_dict(tg.load("/tmp/linear.tg"))
        <All keys matched successfully>
    """
    if pickle_module is not None:
        raise ValueError("save: pickle_module is not supported (tritongrad files never hold "
                         "pickles)")
    w = _Writer()
    header = {"format": "tritongrad", "version": VERSION, "tensors": None,
              "object": w.encode(obj)}
    header["tensors"] = w.tensors
    if w.blobs:  # no padding after the last tensor: the file ends with its last byte
        last = w.tensors[-1]
        w.blobs[-1] = w.blobs[-1][:last["nbytes"]]
        w.size = last["offset"] + last["nbytes"]
    header["data_size"] = w.size
    hbytes = json.dumps(header, separators=(",", ":"), allow_nan=False).encode("utf-8")
    prefix = _PREFIX.pack(MAGIC, VERSION, zlib.crc32(hbytes), len(hbytes))
    pad = -(len(prefix) + len(hbytes)) % _ALIGN
    chunks = [prefix, hbytes, b"\0" * pad, *w.blobs]
    if isinstance(f, (str, os.PathLike)):
        tmp = os.fspath(f) + ".tmp"
        with open(tmp, "wb") as fh:
            fh.writelines(chunks)
        os.replace(tmp, f)  # a crash mid-write never leaves a half-written checkpoint
    else:
        for c in chunks:
            f.write(c)


# -- load ----------------------------------------------------------------------------------------

def _bad(msg: str) -> UnpicklingError:
    return UnpicklingError(f"load: {msg}")


def _read_all(f) -> bytes:
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            return fh.read()
    if isinstance(f, (bytes, bytearray)):
        return bytes(f)
    if isinstance(f, io.IOBase) or hasattr(f, "read"):
        return f.read()
    raise TypeError(f"load: expected a path or a binary file object, got {type(f).__name__}")


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _resolve_location(map_location, saved: str):
    """The device string a tensor saved on ``saved`` goes to, or a callable's result."""
    if map_location is None:
        return saved
    if isinstance(map_location, (str, Device)):
        return str(map_location)
    if isinstance(map_location, dict):
        return str(map_location.get(saved, saved))
    if callable(map_location):
        return map_location
    raise TypeError(f"load: map_location must be None, a string, a device, a dict or a "
                    f"callable, got {type(map_location).__name__}")


class _Reader:
    def __init__(self, buf: bytes, data_start: int, entries, map_location, weights_only):
        self.buf = buf
        self.data_start = data_start
        self.entries = entries
        self.map_location = map_location
        self.cache: dict = {}

    def tensor(self, i) -> Tensor:
        if not _is_int(i) or not 0 <= i < len(self.entries):
            raise _bad(f"tensor reference {i!r} is out of range (the file lists "
                       f"{len(self.entries)} tensors)")
        if i in self.cache:
            return self.cache[i]
        e = self.entries[i]
        if not isinstance(e, dict):
            raise _bad(f"tensor entry {i} is not an object")
        dtype = _DTYPES.get(e.get("dtype"))
        if dtype is None:
            raise _bad(f"tensor {i} has an unknown dtype {e.get('dtype')!r}")
        shape = e.get("shape")
        if not isinstance(shape, list) or not all(_is_int(s) and s >= 0 for s in shape):
            raise _bad(f"tensor {i} has an invalid shape {shape!r}")
        offset, nbytes = e.get("offset"), e.get("nbytes")
        numel = math.prod(shape)
        if not _is_int(offset) or not _is_int(nbytes) or offset < 0 \
                or nbytes != numel * dtype.itemsize:
            raise _bad(f"tensor {i}: offset {offset!r} / size {nbytes!r} do not match its "
                       f"shape {shape} and dtype {dtype.name}")
        start = self.data_start + offset
        if start + nbytes > len(self.buf):
            raise _bad(f"tensor {i}'s bytes [{start}, {start + nbytes}) lie beyond the end of "
                       f"the file ({len(self.buf)} bytes): the file is truncated")
        raw = self.buf[start:start + nbytes]
        if zlib.crc32(raw) != e.get("crc32"):
            raise _bad(f"tensor {i}'s data does not match its checksum: the file is corrupted "
                       f"or was modified")
        saved_dev = e.get("device")
        if not isinstance(saved_dev, str):
            raise _bad(f"tensor {i} has an invalid device {saved_dev!r}")
        t = self._build(raw, dtype, shape, saved_dev)
        if e.get("parameter") is True:
            from .nn.parameter import Parameter
            t = Parameter(t, requires_grad=bool(e.get("requires_grad", True)))
        elif e.get("requires_grad") is True:
            t.requires_grad_(True)
        self.cache[i] = t
        return t

    def _build(self, raw: bytes, dtype, shape, saved_dev: str) -> Tensor:
        from .autograd.ops.creation import tensor as make_tensor
        if dtype is dtypes.bfloat16:
            from .kernels.numpy import bf16
            host = bf16.to_float32(np.frombuffer(raw, dtype="<u2").reshape(shape))
        else:
            host = np.frombuffer(raw, dtype=np.dtype(dtype.np).newbyteorder("<")).reshape(shape)
            host = host.astype(dtype.np)  # native byte order, a writable copy
        loc = _resolve_location(self.map_location, saved_dev)
        if callable(loc):
            t = make_tensor(host, dtype=dtype)
            out = loc(t, saved_dev)
            return t if out is None else out
        try:
            dev = Device(loc)
        except Exception as exc:  # noqa: BLE001
            raise _bad(f"invalid device {loc!r}: {exc}") from None
        if dev.type == "cuda":
            from . import cuda
            if not cuda.is_available():
                raise RuntimeError(
                    "Attempting to deserialize object on a CUDA device but "
                    "tritongrad.cuda.is_available() is False. If you are running on a CPU-only "
                    "machine, please use tritongrad.load with map_location='cpu' to map your "
                    "storages to the CPU.")
        return make_tensor(host, dtype=dtype, device=dev)

    def decode(self, node, depth: int = 0):
        if depth > _MAX_DEPTH:
            raise _bad("the object is nested too deeply")
        if node is None or isinstance(node, (bool, str, int)):
            return node
        if isinstance(node, float):
            return node
        if isinstance(node, list):
            return [self.decode(v, depth + 1) for v in node]
        if not isinstance(node, dict):
            raise _bad(f"unexpected JSON value of type {type(node).__name__}")
        tag = node.get("@")
        if tag == "tensor":
            return self.tensor(node.get("i"))
        if tag == "dict":
            items = node.get("items")
            if not isinstance(items, list):
                raise _bad("a dict's items must be a list of pairs")
            out = OrderedDict() if node.get("ordered") else {}
            for pair in items:
                if not isinstance(pair, list) or len(pair) != 2:
                    raise _bad("a dict item must be a [key, value] pair")
                k = self.decode(pair[0], depth + 1)
                try:
                    hash(k)
                except TypeError:
                    raise _bad(f"unhashable dict key of type {type(k).__name__}") from None
                out[k] = self.decode(pair[1], depth + 1)
            return out
        if tag == "tuple":
            items = node.get("items")
            if not isinstance(items, list):
                raise _bad("a tuple's items must be a list")
            return tuple(self.decode(v, depth + 1) for v in items)
        if tag == "float":
            v = node.get("v")
            if v not in ("nan", "inf", "-inf"):
                raise _bad(f"invalid special float {v!r}")
            return float(v)
        if tag == "dtype":
            d = _DTYPES.get(node.get("v"))
            if d is None:
                raise _bad(f"unknown dtype {node.get('v')!r}")
            return d
        if tag == "device":
            try:
                return Device(node.get("v"))
            except Exception:  # noqa: BLE001
                raise _bad(f"invalid device {node.get('v')!r}") from None
        if tag == "bytes":
            try:
                return bytes.fromhex(node.get("hex"))
            except (TypeError, ValueError):
                raise _bad("invalid bytes value") from None
        raise _bad(f"unknown tag {tag!r}")


def load(f, map_location=None, pickle_module=None, *, weights_only: bool = True, mmap=None,
         **pickle_load_args):
    """Loads an object saved with ``tg.save`` from ``f`` (a path, a binary file object or
    bytes).

    Args:
        f: where to read from.
        map_location: where tensors go: None (the device each was saved from), a device or
            string (all of them there), a dict mapping saved device strings to devices
            (``{"cuda:0": "cpu"}``), or a callable ``fn(cpu_tensor, saved_device_str)``
            returning the tensor to use.
        weights_only: accepted for compatibility; loading is always safe (no code runs).

    Raises:
        UnpicklingError: the file is not a valid tritongrad save (bad magic, unknown version,
            malformed or modified header, truncated or modified tensor data).
    """
    if pickle_module is not None:
        raise ValueError("load: pickle_module is not supported (tritongrad files never hold "
                         "pickles)")
    buf = _read_all(f)
    if len(buf) < _PREFIX.size or buf[:8] != MAGIC:
        if buf[:2] == b"PK" or buf[:1] == b"\x80":
            raise _bad("this looks like a PyTorch (zip/pickle) checkpoint; tritongrad never "
                       "unpickles files: convert it to tensors and tg.save it")
        raise _bad("not a tritongrad file (bad magic number)")
    _, version, crc, hlen = _PREFIX.unpack_from(buf)
    if version != VERSION:
        raise _bad(f"unsupported format version {version} (this tritongrad reads version "
                   f"{VERSION})")
    if hlen > _MAX_HEADER or _PREFIX.size + hlen > len(buf):
        raise _bad(f"header length {hlen} exceeds the file size ({len(buf)} bytes): the file "
                   f"is truncated or corrupted")
    hbytes = buf[_PREFIX.size:_PREFIX.size + hlen]
    if zlib.crc32(hbytes) != crc:
        raise _bad("header checksum mismatch: the file is corrupted or was modified")
    try:
        header = json.loads(hbytes.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _bad(f"the header is not valid JSON ({exc})") from None
    if not isinstance(header, dict) or header.get("format") != "tritongrad" \
            or not isinstance(header.get("tensors"), list) or "object" not in header:
        raise _bad("the header lacks 'format', 'tensors' or 'object'")
    start = _PREFIX.size + hlen
    start += -start % _ALIGN
    size = header.get("data_size")
    if not _is_int(size) or size < 0:
        raise _bad(f"invalid data_size {size!r}")
    if size and start + size != len(buf):
        raise _bad(f"the file has {len(buf)} bytes, its header describes {start + size}: "
                   f"{'it is truncated' if len(buf) < start + size else 'bytes were appended'}")
    reader = _Reader(buf, start, header["tensors"], map_location, weights_only)
    return reader.decode(header["object"])
