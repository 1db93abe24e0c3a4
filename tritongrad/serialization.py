"""``tg.save`` / ``tg.load``: a safe file format for state dicts and other nested data.

State dicts and nestings of plain values are JSON with the tensors' bytes beside it, so loading
them never runs code from the file. Other objects (a whole ``nn.Module``, a user's class) are
pickled, their tensors still stored as tensors; ``load`` unpickles them only where PyTorch's
``torch.load`` would: with ``weights_only=False`` (the caller trusts the file), or, under the
default ``weights_only=True``, when every global the pickle names is allowed
(``add_safe_globals``, a few builtins) and it sets state (BUILD) only on those classes and
plain containers (``check_build``); otherwise it raises PyTorch's "Weights only load
failed" error. (``load`` also reads PyTorch's checkpoints, its zip format and its legacy one,
under the same rules: see ``_torch_format``.) A file is:

    offset 0   magic  b"\\x89TGSAVE\\n"                     (8 bytes)
           8   format version, little-endian uint32       (2)
          12   CRC-32 of the header bytes, uint32
          16   header length in bytes, uint64
          24   header: UTF-8 JSON
               padding with zeros to a multiple of 64
               data: each storage's raw bytes (little-endian), 64-byte aligned, zeros between
                     them (no padding after the last one)

As in PyTorch ("saving and loading tensors preserves views"), tensors are saved with the memory
they view, their storage: each storage once, however many tensors view it, and all of it,
however little of it they view (``.clone()`` a small view of a big tensor to save only its
elements). Loaded tensors that viewed one storage view one storage again, with their offsets
and strides: a write through one shows in the others. A tensor saved twice (tied parameters)
loads as one object; distinct tensors share memory after a load only if they did before.

The header is ``{"format": "tritongrad", "version": 2, "storages": [...], "tensors": [...],
"data_size": n, "object": ...}`` (the file is exactly its data section's start plus
``data_size`` bytes long). Each entry of ``storages`` records ``offset`` and ``nbytes`` (its
bytes, relative to the data section; storages tile it in order of first use), their ``crc32``
and ``device`` (where it was saved from; a storage's bytes are independent of the dtypes that
view it: bfloat16 elements are their 16-bit patterns). Each entry of ``tensors`` records
``storage`` (an index into ``storages``), ``storage_offset``, ``shape`` and ``stride`` (in
elements of the tensor's ``dtype``, a tritongrad dtype name), ``requires_grad`` and
``parameter`` (an ``nn.Parameter``). ``object`` encodes the saved object: JSON strings, finite
floats, ints, bools and null stand for themselves, lists for lists; everything else is a
tagged dict:

    {"@": "tensor", "i": n}             tensors[n] (a tensor saved twice is stored once)
    {"@": "dict", "items": [[k, v]]}    a dict (an OrderedDict if ``"ordered": true``); keys
                                        may be any encodable hashable value; an OrderedDict's
                                        ``_metadata`` (a state dict's module versions, which
                                        ``_load_from_state_dict`` reads) is ``"metadata"``
    {"@": "tuple", "items": [...]}      a tuple
    {"@": "float", "v": "nan"}          nan, inf, -inf
    {"@": "dtype", "v": "float32"}      a tritongrad dtype
    {"@": "device", "v": "cuda:0"}      a tritongrad device
    {"@": "bytes", "hex": "..."}        bytes
    {"@": "pickle", "type": "m.Cls",    any other object: a pickle (protocol 4) whose tensors
     "hex": "..."}                      are persistent ids, indices into ``tensors``; ``type``
                                        names the object's class for the error message.
                                        Subclasses of dict, list and tuple (a namedtuple,
                                        ``Counter``, ``Size``) are pickled, to keep their
                                        type; so are sparse tensors (``_rebuild_sparse`` of
                                        their index and value tensors) and uninitialized
                                        parameters; an instance of a user's Tensor
                                        subclass is ``_rebuild_subclass`` of its class, a
                                        plain tensor and its attributes, with ``"ref": k``
                                        (saved once: every reference to it loads as one
                                        object); a plain tensor given attributes
                                        (``x.note = 1``) is ``_set_attributes`` of the
                                        tensor and its attributes

Limits, which ``save`` never exceeds and ``load`` enforces: a header of at most 1 GiB, objects
nested at most 256 deep (so JSON nested at most 771 deep), integers of at most 4300 digits
(Python's default ``sys.get_int_max_str_digits()``), tensors of at most 64 dimensions (NumPy's
limit) whose byte size, and each stride's, fits in a signed 64-bit integer. A tensor's
elements lie inside its storage: ``storage_offset`` is at most the storage's length in
elements (``save`` writes an empty tensor's offset as at most that) and, unless the tensor is
empty, ``storage_offset + sum((shape[d] - 1) * stride[d])`` is less than it; a storage's
``nbytes`` is a whole number of elements of every dtype viewing it.

``load`` checks the magic, version, header checksum, those limits, every field's type and
range, that the storages' bytes tile the data section exactly (no overlaps, zero padding, no
missing or extra bytes) and match their checksums, that a storage viewed as bool holds only
bytes 0 and 1, and raises ``tg.serialization.UnpicklingError`` (a ``pickle.UnpicklingError``,
as PyTorch's weights-only loader raises, and a ``RuntimeError``) naming the file and what is
wrong otherwise. It checks every storage and tensor entry, referenced or not, before it builds
any tensor.

Tensors of different dtypes over one memory (``x`` and ``x.view(torch.int32)``) are saved as
one storage per dtype, and tensors of different dtypes over one storage in a file load over one
copy of its bytes per dtype: their values are right but they no longer share memory.

Version 1 (earlier releases) is read too. Its header has no ``storages``; each entry of its
``tensors`` holds one tensor's own elements (C order): ``dtype``, ``shape``, ``device``,
``offset`` and ``nbytes`` (relative to the data section, 64-byte aligned, tiling it as
version 2's storages do), ``crc32``, ``requires_grad`` and ``parameter``. Its tensors share no
memory.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import pickle
import re
import secrets
import struct
import zlib
from collections import Counter, OrderedDict
from typing import NamedTuple

import numpy as np

from .autograd.checks import unsupported
from .autograd.storage import _span, storage_numel
from .autograd.tensor import Size, Tensor, _rebuild_subclass, make, user_subclass
from .runtime import dtype as dtypes
from .runtime.array import contiguous_strides
from .runtime.device import device as Device

__all__ = ["UnpicklingError", "add_safe_globals", "clear_safe_globals", "get_safe_globals", "load",
           "safe_globals", "save"]

MAGIC = b"\x89TGSAVE\n"
VERSION = 2  # what save writes; load reads _VERSIONS
_VERSIONS = (1, 2)
_PREFIX = struct.Struct("<8sIIQ")
_ALIGN = 64
_NO_PICKLE = ("tritongrad pickles only the objects its plain format cannot hold, always with "
              "Python's pickle at protocol 4: there is nothing to configure")
_MAX_HEADER = 1 << 30
_MAX_DEPTH = 256
# The deepest JSON a save can write: the header object, 3 levels per object level (a dict is
# {"items": [[k, v]]}) and 2 for the innermost value (an empty dict's {"items": []}).
_MAX_JSON_DEPTH = 1 + 3 * _MAX_DEPTH + 2
# Python refuses longer int literals by default; bounding them here also keeps a process that
# lifted that limit from spending quadratic time converting a crafted one.
_MAX_INT_DIGITS = 4300
_MAX_NDIM = 64
_MAX_SIZE = (1 << 63) - 1  # byte sizes and offsets: NumPy indexes with signed 64-bit integers

_DTYPES = {d.name: d for d in (dtypes.bool, dtypes.uint8, dtypes.int8, dtypes.int16,
                               dtypes.int32, dtypes.int64, dtypes.uint16, dtypes.uint32,
                               dtypes.uint64, dtypes.float16, dtypes.bfloat16,
                               dtypes.float32, dtypes.float64, dtypes.complex64,
                               dtypes.complex128)}
# float8 elements are their one-byte bit patterns, in our files and in torch's (which name the
# dtype in _rebuild_tensor_v3 over an UntypedStorage); known when ml_dtypes is installed
_DTYPES.update({d.name: d for d in dtypes.FLOAT8_TYPES if d.np.type is not np.void})


# The containers the JSON object encodes as themselves; their subclasses are pickled.
_JSON_CONTAINERS = frozenset((dict, OrderedDict, list, tuple))


class UnpicklingError(pickle.UnpicklingError, RuntimeError):
    """A file given to ``tg.load`` is not a valid tritongrad save (malformed, truncated or
    modified)."""


# -- save ----------------------------------------------------------------------------------------

def _host_bytes(t: Tensor) -> bytes:
    """The tensor's elements, C order, little-endian (bfloat16 as its 16-bit patterns).

    Always a copy, even where the tensor's memory is laid out so already: the checksum must
    match the bytes written, also when another thread writes to the tensor meanwhile."""
    t = t.detach()
    if t.dtype is dtypes.bfloat16:
        arr = dtypes.bfloat16_bits(t.cpu().to(dtypes.float32).numpy())
    else:
        arr = np.asarray(t.cpu().numpy())
    arr = np.ascontiguousarray(arr)
    if arr.dtype.byteorder == ">":
        arr = arr.byteswap().view(arr.dtype.newbyteorder("<"))
    return arr.tobytes()


class _Writer:
    def __init__(self):
        self.storages: list = []  # the header's entries
        self.tensors: list = []
        self.blobs: list = []  # each storage's bytes
        self.size = 0  # of the data section so far (its last storage's bytes not padded)
        self.ids: dict = {}  # id(tensor) -> index in tensors
        self.storage_ids: dict = {}  # (device, dtype, address, bytes) -> index in storages
        # Every tensor saved, kept alive until the save ends: a tensor a pickle's reduce made
        # could otherwise be freed mid-save and its id or memory reused by another, which the
        # two dicts above would then take for the first.
        self.keep: list = []
        self.subclasses: dict = {}  # id(tensor) -> its node (Writer.subclass)
        from .nn.parameter import Parameter, is_lazy  # (once per save: an import costs ~1 us)
        self.parameter, self.is_lazy = Parameter, is_lazy

    def plain(self, t: Tensor) -> bool:
        """Whether ``t`` is stored as a view of a storage: a strided tensor with its values
        (not a sparse tensor or an uninitialized parameter)."""
        return t.layout is dtypes.strided and not self.is_lazy(t) and not user_subclass(t)

    def storage(self, t: Tensor, offset: int) -> tuple[int, int]:
        """The index of ``t``'s storage (``t`` viewing it from element ``offset``), stored
        once, and its length in elements."""
        ptr, host_nbytes = _span(t._data)
        numel = host_nbytes // t._data.itemsize  # (a CPU bfloat16 element is 4 host bytes)
        # An empty storage has no bytes to share: keyed by the tensor, it is never merged with
        # another (some allocators give every empty allocation one address). The dtype is in
        # the key so that a storage's tensors always share its dtype (a ``view(dtype)`` of
        # another saved tensor gets a storage of its own: the loader rebuilds views per dtype).
        key = (str(t.device), t.dtype, ptr, host_nbytes) if numel else ("empty", id(t))
        index = self.storage_ids.get(key)
        if index is not None:
            return index, numel
        if not offset and t.numel() == numel and t.is_contiguous():
            data = _host_bytes(t)  # the tensor is its whole storage (most tensors)
        else:  # a 1-D view of all the storage, from its start
            data = _host_bytes(t.detach().as_strided((numel,), (1,), 0))
        self.size += -self.size % _ALIGN
        self.storages.append({"offset": self.size, "nbytes": len(data),
                              "crc32": zlib.crc32(data), "device": str(t.device)})
        self.blobs.append(data)
        self.size += len(data)
        self.storage_ids[key] = index = len(self.storages) - 1
        return index, numel

    def tensor(self, t: Tensor) -> dict:
        key = id(t)
        if key in self.ids:
            return {"@": "tensor", "i": self.ids[key]}
        self.keep.append(t)
        offset = t.storage_offset()
        index, numel = self.storage(t, offset)
        if not t.numel():  # (an empty view's offset may lie past the end: nothing is read)
            offset = min(offset, numel)
        self.tensors.append({"storage": index, "storage_offset": offset,
                             "shape": list(t.shape), "stride": list(t.stride()),
                             "dtype": t.dtype.name, "requires_grad": t.requires_grad,
                             "parameter": isinstance(t, self.parameter)})
        self.ids[key] = len(self.tensors) - 1
        return {"@": "tensor", "i": self.ids[key]}

    def encode(self, obj, depth: int = 0):
        if depth > _MAX_DEPTH:
            raise ValueError("save: the object is nested too deeply (or is recursive)")
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int):
            # str() only for the rare ints near the limit (4300 digits need > 14000 bits)
            if obj.bit_length() > 14000 and len(str(abs(obj))) > _MAX_INT_DIGITS:
                raise ValueError(f"save: ints of more than {_MAX_INT_DIGITS} digits cannot be "
                                 f"saved")
            return int(obj)
        if isinstance(obj, float):
            return float(obj) if math.isfinite(obj) else {"@": "float", "v": repr(float(obj))}
        if isinstance(obj, Tensor):
            # (an uninitialized parameter has no bytes, a sparse tensor is its parts: both
            # are pickled)
            if self.plain(obj):
                attributes = obj._user_attributes()
                if attributes:  # (``x.note = ...``: kept, as PyTorch's tensors keep theirs)
                    node = self.pickled(_Attributed(obj, attributes))
                    return {**node, "type": f"{type(obj).__module__}.{type(obj).__qualname__}"}
                return self.tensor(obj)
            return self.subclass(obj) if user_subclass(obj) else self.pickled(obj)
        if isinstance(obj, (np.integer, np.floating, np.bool_)):
            return self.encode(obj.item(), depth)
        cls = type(obj)
        if cls not in _JSON_CONTAINERS and isinstance(obj, (dict, list, tuple)):
            # a subclass (a namedtuple, Counter, defaultdict, Size, a user's dict) is pickled,
            # so that it loads as its own type, as in PyTorch
            return self.pickled(obj)
        if isinstance(obj, dict):
            out = {"@": "dict", "items": [[self.encode(k, depth + 1), self.encode(v, depth + 1)]
                                          for k, v in obj.items()]}
            if isinstance(obj, OrderedDict):
                out["ordered"] = True
                meta = getattr(obj, "_metadata", None)  # a state dict's module versions
                if isinstance(meta, dict):
                    out["metadata"] = self.encode(meta, depth + 1)
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
        return self.pickled(obj)

    def subclass(self, t: Tensor) -> dict:
        """An instance of a user's Tensor subclass, pickled once however often it is saved:
        its ``"ref"`` makes every reference load as one object, as in PyTorch."""
        node = self.subclasses.get(id(t))
        if node is None:
            node = {**self.pickled(t), "ref": len(self.subclasses)}
            self.subclasses[id(t)] = node
            self.keep.append(t)
        return node

    def pickled(self, obj) -> dict:
        """``obj`` as a pickle whose tensors are stored as the file's other tensors are."""
        buf = io.BytesIO()
        pickler = _Pickler(buf, protocol=4)
        # a tensor (Parameters too) becomes its index in ``tensors``: stored once, with its
        # dtype, device and checksum, and restored through map_location like any other
        # (an uninitialized parameter has no bytes: it pickles itself; a sparse tensor is
        # pickled as its parts, which are tensors)
        pickler.persistent_id = lambda o: (self.tensor(o)["i"] if isinstance(o, Tensor)
                                           and self.plain(o) else None)
        try:
            pickler.dump(obj)
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            raise TypeError(f"save: cannot save an object of type {type(obj).__name__}: it is "
                            f"not a dict, list, tuple, str, int, float, bool, None, bytes, "
                            f"Tensor, dtype or device, and pickling it failed: {exc}") from exc
        cls = type(obj)
        return {"@": "pickle", "type": f"{cls.__module__}.{cls.__qualname__}",
                "hex": buf.getvalue().hex()}


class _Pickler(pickle.Pickler):
    """Pickles sparse tensors as ``_rebuild_sparse`` of their parts, and instances of a
    user's Tensor subclass as ``_rebuild_subclass`` of their class, a plain tensor (stored
    as the file's tensors are) and their attributes, as PyTorch's ``_rebuild_from_type_v2``."""

    def reducer_override(self, obj):
        if isinstance(obj, Tensor) and obj.layout is dtypes.strided and user_subclass(obj):
            plain = make(obj._data, obj._dtype)  # (its memory, its requires_grad)
            if obj.requires_grad:
                plain.requires_grad_()
            return _rebuild_subclass, (type(obj), plain, obj._user_attributes())
        return _reduce_sparse(obj)


def _reduce_sparse(obj):
    """How ``save`` pickles a sparse tensor: ``_rebuild_sparse`` of its parts (else pickle's
    own rules: ``NotImplemented``)."""
    layout = getattr(obj, "layout", None) if isinstance(obj, Tensor) else None
    if layout is None or layout is dtypes.strided:
        return NotImplemented
    name = str(layout).rsplit(".", 1)[-1]
    if layout is dtypes.sparse_coo:
        parts = (obj._indices().detach(), obj._values().detach())
        return _rebuild_sparse, (name, parts, tuple(obj.shape), obj.is_coalesced(),
                                 obj.requires_grad)
    if layout in (dtypes.sparse_csr, dtypes.sparse_bsr):
        parts = (obj.crow_indices(), obj.col_indices(), obj.values().detach())
    else:
        parts = (obj.ccol_indices(), obj.row_indices(), obj.values().detach())
    return _rebuild_sparse, (name, parts, tuple(obj.shape), None, obj.requires_grad)


class _Attributed:
    """A plain tensor given attributes, pickled as ``_set_attributes`` of the tensor (a
    persistent id, stored as the file's other tensors) and its attributes."""

    def __init__(self, t: Tensor, attributes: dict):
        self.t, self.attributes = t, attributes

    def __reduce__(self):
        return _set_attributes, (self.t, self.attributes)


def _set_attributes(t: Tensor, attributes: dict) -> Tensor:
    t.__dict__.update(attributes)
    return t


def _rebuild_sparse(layout: str, parts: tuple, size: tuple, coalesced, requires_grad: bool):
    """A sparse tensor ``save`` pickled (``_reduce_sparse``), its invariants checked: a file's
    indices are not trusted (an invalid one raises, which ``load`` reports as a bad file)."""
    from .autograd.sparse import sparse_coo_tensor
    from .autograd.sparse_compressed import sparse_compressed_tensor
    if layout not in _SPARSE_LAYOUTS or not isinstance(parts, tuple) or not all(
            isinstance(p, Tensor) for p in parts) or len(parts) != (
            2 if layout == "sparse_coo" else 3) or not isinstance(requires_grad, bool) or (
            coalesced is not None and not isinstance(coalesced, bool)):
        raise _Malformed(f"invalid sparse tensor of layout {_describe(layout)}")
    if layout == "sparse_coo":
        return sparse_coo_tensor(*parts, size, check_invariants=True, is_coalesced=coalesced,
                                 requires_grad=requires_grad)
    return sparse_compressed_tensor(*parts, size, layout=getattr(dtypes, layout),
                                    check_invariants=True, requires_grad=requires_grad)


_SPARSE_LAYOUTS = ("sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc")


def _create_temp(path: str) -> tuple[int, str]:
    """Creates a new file next to ``path`` under an unpredictable name and opens it.

    O_EXCL makes the creation fail rather than follow a symlink or reuse a file planted there.
    (``tempfile.mkstemp`` would do the same but with mode 0o600; this keeps the permissions an
    ordinary ``open(path, "wb")`` gives, 0o666 less the umask.)
    """
    flags = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
             | getattr(os, "O_CLOEXEC", 0))
    for _ in range(100):
        tmp = f"{path}.{secrets.token_hex(8)}.tmp"
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"save: could not create a temporary file next to {path!r}")


def _fsync_dir(directory: str) -> None:
    """Makes a rename in ``directory`` durable, where the platform allows it (not Windows)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _write_atomically(path, chunks) -> None:
    """Writes ``chunks`` to a temporary file, syncs it and renames it onto ``path``: a crash
    mid-write never leaves a half-written checkpoint, and an existing ``path`` is replaced,
    never written through."""
    path = os.fsdecode(path)
    fd, tmp = _create_temp(path)
    try:
        with open(fd, "wb") as fh:
            fh.writelines(chunks)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(os.path.dirname(os.path.abspath(path)))


def save(obj, f, pickle_module=None, pickle_protocol=None,
         _use_new_zipfile_serialization=True) -> None:
    """Saves ``obj`` (a state dict, any nesting of dicts, lists and tuples of tensors,
    strings, numbers, bools, None, bytes, dtypes and devices, or, pickled, any other picklable
    object such as a whole module) to ``f`` (a path or a writable binary file object). See the
    module docstring for the format; tensors are always stored as raw bytes, never pickled.

    A path is written atomically: to a new temporary file in the same directory, synced, then
    renamed over ``f``. The pickle arguments have little to act on: ``pickle_module`` raises;
    ``pickle_protocol`` (2 to pickle's highest) and ``_use_new_zipfile_serialization=False``
    (PyTorch's legacy format) are accepted, so that PyTorch code passing them runs, and the
    file is tritongrad's format all the same (its pickled objects at protocol 4).

    Example:
        >>> model = tg.nn.Linear(3, 2)
        >>> tg.save(model.state_dict(), "/tmp/linear.tg")
        >>> model.load_state_dict(tg.load("/tmp/linear.tg"))
        <All keys matched successfully>
    """
    if pickle_module is not None:
        raise ValueError("save: pickle_module is not supported (tritongrad pickles only the "
                         "objects its plain format cannot hold, with Python's pickle)")
    top = pickle.HIGHEST_PROTOCOL
    if pickle_protocol is not None and (type(pickle_protocol) is not int
                                        or not 2 <= pickle_protocol <= top):
        raise ValueError(f"save: pickle_protocol must be an int from 2 to {top}, got "
                         f"{pickle_protocol!r}")
    _check_destination(f)
    w = _Writer()
    header = {"format": "tritongrad", "version": VERSION, "storages": None, "tensors": None,
              "object": w.encode(obj)}
    header["storages"], header["tensors"], header["data_size"] = w.storages, w.tensors, w.size
    hbytes = json.dumps(header, separators=(",", ":"), allow_nan=False).encode("utf-8")
    if len(hbytes) > _MAX_HEADER:
        raise ValueError(f"save: the header would take {len(hbytes)} bytes, more than the "
                         f"{_MAX_HEADER} a file may have (save large bytes as tensors)")
    prefix = _PREFIX.pack(MAGIC, VERSION, zlib.crc32(hbytes), len(hbytes))
    chunks = [prefix, hbytes, b"\0" * (-(len(prefix) + len(hbytes)) % _ALIGN)]
    end = 0
    for entry, blob in zip(w.storages, w.blobs):  # zeros up to each storage's offset
        chunks += [b"\0" * (entry["offset"] - end), blob]
        end = entry["offset"] + entry["nbytes"]
    if isinstance(f, (str, os.PathLike)):
        _write_atomically(f, chunks)
    else:
        for c in chunks:
            f.write(c)


def _check_destination(f) -> None:
    """PyTorch's error for a ``save`` destination that is neither a path nor writable, raised
    before any work."""
    if not isinstance(f, (str, os.PathLike)) and not callable(getattr(f, "write", None)):
        raise AttributeError(f"expected 'f' to be string, path, or a file-like object with a "
                             f"'write' attribute, got {type(f).__name__}")


# -- load: validation ----------------------------------------------------------------------------
#
# Each helper checks one concern and raises _Malformed saying what is wrong; ``load`` turns that
# into an UnpicklingError naming the file. Everything from the file is untrusted, so every value
# is checked for its type and range before it is used, and nothing is handed to a parser or to
# NumPy that could fail (or take unbounded time or memory) in some other way.

class _Malformed(Exception):
    """A problem with the file's contents (never an I/O error or a caller's mistake)."""


class _Entry(NamedTuple):
    """A validated entry of a version 1 header's ``tensors`` list."""
    dtype: dtypes.dtype
    shape: tuple
    device: str
    offset: int
    nbytes: int
    crc32: int
    requires_grad: bool
    parameter: bool


class _StorageEntry(NamedTuple):
    """A validated entry of a version 2 header's ``storages`` list."""
    offset: int
    nbytes: int
    crc32: int
    device: str


class _TensorEntry(NamedTuple):
    """A validated entry of a version 2 header's ``tensors`` list."""
    storage: int
    storage_offset: int
    shape: tuple
    stride: tuple
    dtype: dtypes.dtype
    requires_grad: bool
    parameter: bool


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _check_int(value, what: str, hi: int = _MAX_SIZE) -> int:
    """``value`` as a JSON integer in [0, hi]."""
    if not _is_int(value):
        raise _Malformed(f"{what} must be an integer, got {_describe(value)}")
    if not 0 <= value <= hi:
        raise _Malformed(f"{what} is {_describe(value)}, outside [0, {hi}]")
    return value


def _check_bool(value, what: str) -> bool:
    if not isinstance(value, bool):
        raise _Malformed(f"{what} must be true or false, got {_describe(value)}")
    return value


def _describe(value) -> str:
    """A short description of an untrusted JSON value for a message: bounded in length and
    cost however large or deeply nested the value is."""
    if isinstance(value, list):
        return f"a list of {len(value)} items"
    if isinstance(value, dict):
        return f"an object of {len(value)} fields"
    text = repr(value[:50] if isinstance(value, str) else value)
    return text if len(text) <= 60 else f"{text[:50]}..."


def _check_prefix(buf: bytes) -> tuple[int, int]:
    """Checks the magic, version, header length and header checksum; returns the version and
    the length."""
    if len(buf) < _PREFIX.size or buf[:8] != MAGIC:
        if not buf:
            raise _Malformed("not a tritongrad file (it is empty)")
        if MAGIC.startswith(buf[:8]):
            raise _Malformed(f"the file is truncated ({len(buf)} bytes, shorter than the "
                             f"{_PREFIX.size}-byte prefix)")
        raise _Malformed("not a tritongrad file (bad magic number)")
    _, version, crc, hlen = _PREFIX.unpack_from(buf)
    if version not in _VERSIONS:
        raise _Malformed(f"unsupported format version {version} (this tritongrad reads "
                         f"versions {_VERSIONS[0]} to {_VERSIONS[-1]})")
    if hlen > _MAX_HEADER:
        raise _Malformed(f"header length {hlen} exceeds the limit of {_MAX_HEADER} bytes")
    if _PREFIX.size + hlen > len(buf):
        raise _Malformed(f"header length {hlen} exceeds the file size ({len(buf)} bytes): the "
                         f"file is truncated or corrupted")
    if zlib.crc32(buf[_PREFIX.size:_PREFIX.size + hlen]) != crc:
        raise _Malformed("header checksum mismatch: the file is corrupted or was modified")
    return version, hlen


# A JSON string, or an unterminated one running to the end: the optional closing quote makes
# every attempt match at once, so the scan is linear whatever the text.
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_SCAN_CHUNK = 1 << 22


def _check_json_depth(text: bytes) -> None:
    """Refuses JSON nested deeper than a save writes, before ``json.loads`` (which recurses
    once per level) could exhaust the stack."""
    brackets = _JSON_STRING.sub(b"", text).translate(None, _NOT_BRACKET)
    depth = 0
    for i in range(0, len(brackets), _SCAN_CHUNK):  # chunks bound the scan's memory
        chunk = np.frombuffer(brackets, np.uint8, min(_SCAN_CHUNK, len(brackets) - i), i)
        opens = (chunk == ord("[")) | (chunk == ord("{"))
        levels = depth + np.cumsum(np.where(opens, 1, -1), dtype=np.int64)
        if int(levels.max()) > _MAX_JSON_DEPTH:
            raise _Malformed(f"the header is nested more than {_MAX_JSON_DEPTH} levels deep")
        depth = int(levels[-1])


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > _MAX_INT_DIGITS:
        raise _Malformed(f"the header holds an integer of {len(text.lstrip('-'))} digits "
                         f"(at most {_MAX_INT_DIGITS})")
    return int(text)


def _refuse_constant(name: str):
    raise _Malformed(f"the header holds {name}, which is not JSON (a save writes non-finite "
                     f"floats as tagged values)")


def _parse_header(hbytes: bytes) -> dict:
    """The header's JSON, checked for depth and integer sizes before and while parsing."""
    _check_json_depth(hbytes)
    try:
        text = hbytes.decode("utf-8")
        return json.loads(text, parse_int=_parse_int, parse_constant=_refuse_constant)
    except (UnicodeDecodeError, ValueError) as exc:  # json.JSONDecodeError is a ValueError
        raise _Malformed(f"the header is not valid JSON ({exc})") from None
    except RecursionError:  # within the depth limit, but the caller's stack was already deep
        raise _Malformed("the header is nested too deeply to parse here") from None


def _check_header_fields(header, version: int) -> int:
    """The top-level fields of a file of ``version``; returns the data section's size."""
    if not isinstance(header, dict):
        raise _Malformed(f"the header must be a JSON object, got {type(header).__name__}")
    lists = ("tensors",) if version == 1 else ("storages", "tensors")
    missing = [k for k in ("format", "version", *lists, "data_size", "object")
               if k not in header]
    if missing:
        raise _Malformed(f"the header lacks {', '.join(map(repr, missing))}")
    if header["format"] != "tritongrad":
        raise _Malformed(f"the header's format is {_describe(header['format'])}, not "
                         f"'tritongrad'")
    if not _is_int(header["version"]) or header["version"] != version:
        raise _Malformed(f"the header's version {_describe(header['version'])} does not match "
                         f"the file's version {version}")
    for name in lists:
        if not isinstance(header[name], list):
            raise _Malformed(f"the header's {name!r} must be a list, got "
                             f"{type(header[name]).__name__}")
    return _check_int(header["data_size"], "data_size")


def _check_file_size(buf: bytes, hlen: int, data_size: int) -> int:
    """Checks that the file is exactly as long as its header says and that the padding after
    the header is zeros; returns the data section's offset."""
    header_end = _PREFIX.size + hlen
    data_start = header_end + -header_end % _ALIGN
    expected = data_start + data_size
    if len(buf) < expected:
        raise _Malformed(f"the file has {len(buf)} bytes, its header describes {expected}: it "
                         f"is truncated")
    if len(buf) > expected:
        raise _Malformed(f"the file has {len(buf)} bytes, its header describes {expected}: "
                         f"{len(buf) - expected} bytes were appended")
    if buf.count(0, header_end, data_start) != data_start - header_end:
        raise _Malformed("the padding after the header is not zeros")
    return data_start


# Canonical device strings only, as a save writes them (str(device)).
_DEVICE_STRING = re.compile(r"cpu|cuda(?::(?:0|[1-9][0-9]{0,8}))?", re.ASCII)


def _check_device(value, what: str) -> str:
    if not isinstance(value, str) or not _DEVICE_STRING.fullmatch(value):
        raise _Malformed(f"{what} is not a device: {_describe(value)}")
    return value


def _check_dtype(value, what: str) -> dtypes.dtype:
    if not isinstance(value, str) or value not in _DTYPES:
        raise _Malformed(f"{what} has an unknown dtype {_describe(value)}")
    return _DTYPES[value]


def _check_shape(value, dtype: dtypes.dtype, what: str) -> tuple[tuple, int]:
    """A shape NumPy can build: at most 64 dimensions, none negative, and a byte size (not
    counting zero dimensions, as NumPy does) that fits in a signed 64-bit integer. Returns
    the shape and its byte size."""
    if not isinstance(value, list):
        raise _Malformed(f"{what} has an invalid shape {_describe(value)}")
    if len(value) > _MAX_NDIM:
        raise _Malformed(f"{what} has {len(value)} dimensions (at most {_MAX_NDIM})")
    shape = tuple(_check_int(s, f"{what}'s shape[{d}]") for d, s in enumerate(value))
    if math.prod(s for s in shape if s) * dtype.itemsize > _MAX_SIZE:
        raise _Malformed(f"{what}'s shape {list(shape)} is too large for {dtype.name} "
                         f"(more than {_MAX_SIZE} bytes)")
    return shape, math.prod(shape) * dtype.itemsize


def _check_fields(what: str, e, fields: tuple) -> None:
    if not isinstance(e, dict):
        raise _Malformed(f"{what}'s entry must be an object, got {type(e).__name__}")
    missing = [k for k in fields if k not in e]
    if missing:
        raise _Malformed(f"{what}'s entry lacks {', '.join(map(repr, missing))}")


def _check_requires_grad(value, dtype: dtypes.dtype, what: str) -> bool:
    requires_grad = _check_bool(value, f"{what}'s requires_grad")
    if requires_grad and not (dtype.is_floating_point or dtype.is_complex):
        raise _Malformed(f"{what} requires grad but has dtype {dtype.name} (only floating "
                         f"point and complex tensors can)")
    return requires_grad


def _check_offset(value, what: str) -> int:
    """A byte offset into the data section: 64-byte aligned."""
    offset = _check_int(value, f"{what}'s offset")
    if offset % _ALIGN:
        raise _Malformed(f"{what}'s offset {offset} is not a multiple of {_ALIGN}")
    return offset


def check_view(what: str, dtype: dtypes.dtype, offset: int, shape: tuple, stride: tuple,
               storage: str, storage_nbytes: int) -> None:
    """Refuses (``_Malformed``) a tensor of ``dtype`` viewing ``storage`` (its name in
    messages) of ``storage_nbytes`` bytes at element ``offset`` with ``shape`` and ``stride``
    (tuples of non-negative ints, at most 64) unless NumPy and the device arrays can build it
    and it reads only the storage's bytes: the storage is a whole number of elements, the
    offset at most its length, each stride's and the shape's byte size (zero dimensions
    aside, as NumPy counts) within a signed 64-bit integer, and the last element inside it.
    (Both loaders build views so: ``tg.load``'s format and PyTorch's.)"""
    item = dtype.itemsize
    if len(shape) != len(stride):
        raise _Malformed(f"{what}'s size {list(shape)} and stride {list(stride)} differ in "
                         f"length")
    if storage_nbytes % item:
        raise _Malformed(f"{storage} has {storage_nbytes} bytes, not a whole number of "
                         f"{dtype.name} elements")
    if math.prod(n for n in shape if n) * item > _MAX_SIZE:
        raise _Malformed(f"{what}'s shape {list(shape)} is too large for {dtype.name} (more "
                         f"than {_MAX_SIZE} bytes)")
    if any(st * item > _MAX_SIZE for st in stride):
        raise _Malformed(f"{what}'s stride {list(stride)} is too large for {dtype.name} "
                         f"(more than {_MAX_SIZE} bytes)")
    numel = storage_nbytes // item
    last = offset + sum((n - 1) * st for n, st in zip(shape, stride))
    if offset > numel or (0 not in shape and last >= numel):
        raise _Malformed(f"{what} of size {list(shape)}, stride {list(stride)} at offset "
                         f"{offset} reaches past the end of {storage} ({numel} elements)")


def _check_entry(i: int, e) -> _Entry:
    """One entry of a version 1 file's ``tensors``: every field present, of its type and in
    range."""
    what = f"tensor {i}"
    _check_fields(what, e, _Entry._fields)
    dtype = _check_dtype(e["dtype"], what)
    shape, nbytes = _check_shape(e["shape"], dtype, what)
    if _check_int(e["nbytes"], f"{what}'s nbytes") != nbytes:
        raise _Malformed(f"{what}'s size {e['nbytes']} does not match its shape {list(shape)} "
                         f"and dtype {dtype.name} ({nbytes} bytes)")
    return _Entry(dtype, shape, _check_device(e["device"], f"{what}'s device"),
                  _check_offset(e["offset"], what), nbytes,
                  _check_int(e["crc32"], f"{what}'s crc32", 0xFFFFFFFF),
                  _check_requires_grad(e["requires_grad"], dtype, what),
                  _check_bool(e["parameter"], f"{what}'s parameter"))


def _check_storage(i: int, e) -> _StorageEntry:
    """One entry of a version 2 file's ``storages``."""
    what = f"storage {i}"
    _check_fields(what, e, _StorageEntry._fields)
    return _StorageEntry(_check_offset(e["offset"], what),
                         _check_int(e["nbytes"], f"{what}'s nbytes"),
                         _check_int(e["crc32"], f"{what}'s crc32", 0xFFFFFFFF),
                         _check_device(e["device"], f"{what}'s device"))


def _check_tensor(i: int, e, storages: list) -> _TensorEntry:
    """One entry of a version 2 file's ``tensors``, its view inside its storage."""
    what = f"tensor {i}"
    _check_fields(what, e, _TensorEntry._fields)
    dtype = _check_dtype(e["dtype"], what)
    shape, _ = _check_shape(e["shape"], dtype, what)
    if not isinstance(e["stride"], list) or len(e["stride"]) != len(shape):
        raise _Malformed(f"{what}'s stride must be a list of {len(shape)} integers (one per "
                         f"dimension), got {_describe(e['stride'])}")
    stride = tuple(_check_int(s, f"{what}'s stride[{d}]") for d, s in enumerate(e["stride"]))
    index = e["storage"]
    if not _is_int(index) or not 0 <= index < len(storages):
        raise _Malformed(f"{what}'s storage {_describe(index)} is out of range (the file "
                         f"lists {len(storages)} storages)")
    offset = _check_int(e["storage_offset"], f"{what}'s storage_offset")
    check_view(what, dtype, offset, shape, stride, f"storage {index}", storages[index].nbytes)
    return _TensorEntry(index, offset, shape, stride, dtype,
                        _check_requires_grad(e["requires_grad"], dtype, what),
                        _check_bool(e["parameter"], f"{what}'s parameter"))


def _check_data_layout(kind: str, entries: list, buf: bytes, data_start: int,
                       data_size: int) -> None:
    """Checks that the entries' bytes (of tensors in version 1, of storages in version 2, as
    ``kind`` says) tile the data section as a save lays them out: in bounds, no two
    overlapping, only zeros between them and nothing after the last one."""
    end = 0
    for i in sorted(range(len(entries)), key=lambda i: (entries[i].offset, entries[i].nbytes)):
        e = entries[i]
        if e.offset + e.nbytes > data_size:
            raise _Malformed(f"{kind} {i}'s bytes [{e.offset}, {e.offset + e.nbytes}) lie "
                             f"beyond the end of the data section ({data_size} bytes): the "
                             f"file is truncated or its header was modified")
        if e.offset < end:
            raise _Malformed(f"{kind} {i}'s bytes overlap another {kind}'s")
        if buf.count(0, data_start + end, data_start + e.offset) != e.offset - end:
            raise _Malformed(f"the padding before {kind} {i}'s bytes is not zeros")
        end = e.offset + e.nbytes
    if end != data_size:
        raise _Malformed(f"the data section has {data_size - end} bytes after the last "
                         f"{kind}'s")


def _check_crc(what: str, e, raw: memoryview) -> None:
    if zlib.crc32(raw) != e.crc32:
        raise _Malformed(f"{what}'s data does not match its checksum: the file is corrupted or "
                         f"was modified")


def check_bool_bytes(what: str, raw) -> None:
    """Refuses ``raw`` as bool elements unless every byte is 0 or 1: NumPy would take any
    byte as a bool, and values other than 0 and 1 misbehave in its ops."""
    if len(raw) and np.frombuffer(raw, np.uint8).max() > 1:
        raise _Malformed(f"{what} is bool but holds bytes other than 0 and 1")


def _entry_bytes(buf: bytes, data_start: int, e) -> memoryview:
    """A (tensor's or storage's) entry's bytes, without copying them."""
    start = data_start + e.offset
    return memoryview(buf)[start:start + e.nbytes]


def _check_entries(tensors: list, buf: bytes, data_start: int, data_size: int) -> list:
    """A version 1 file's tensors."""
    entries = [_check_entry(i, e) for i, e in enumerate(tensors)]
    _check_data_layout("tensor", entries, buf, data_start, data_size)
    for i, e in enumerate(entries):
        raw = _entry_bytes(buf, data_start, e)
        _check_crc(f"tensor {i}", e, raw)
        if e.dtype is dtypes.bool:
            check_bool_bytes(f"tensor {i}", raw)
    return entries


def _check_storages_and_tensors(storages: list, tensors: list, buf: bytes, data_start: int,
                                data_size: int) -> tuple[list, list]:
    """A version 2 file's storages and tensors, every one (referenced or not) checked."""
    stored = [_check_storage(i, e) for i, e in enumerate(storages)]
    _check_data_layout("storage", stored, buf, data_start, data_size)
    for i, e in enumerate(stored):
        _check_crc(f"storage {i}", e, _entry_bytes(buf, data_start, e))
    entries = [_check_tensor(i, e, stored) for i, e in enumerate(tensors)]
    for i in sorted({e.storage for e in entries if e.dtype is dtypes.bool}):
        check_bool_bytes(f"storage {i}", _entry_bytes(buf, data_start, stored[i]))
    return stored, entries


# -- load ----------------------------------------------------------------------------------------

def _source_name(f) -> str:
    """What to call ``f`` in messages."""
    if isinstance(f, (bytes, bytearray, memoryview)):
        return "<bytes>"
    if isinstance(f, (str, os.PathLike)):
        return os.fsdecode(f)
    name = getattr(f, "name", None)
    return name if isinstance(name, str) else f"<{type(f).__name__}>"


def _read_all(f) -> bytes:
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            return fh.read()
    if isinstance(f, (bytes, bytearray, memoryview)):
        return bytes(f)
    if isinstance(f, io.IOBase) or hasattr(f, "read"):
        data = f.read()
        if not isinstance(data, (bytes, bytearray)):
            raise TypeError(f"load: expected a binary file object, its read() returned "
                            f"{type(data).__name__}")
        return bytes(data)
    raise TypeError(f"load: expected a path or a binary file object, got {type(f).__name__}")


def _check_map_location(map_location):
    """Validates the caller's ``map_location`` up front (its errors are the caller's, not the
    file's), turning a string into a device."""
    if map_location is None or callable(map_location) or isinstance(map_location, dict):
        return map_location
    if isinstance(map_location, (str, Device)):
        return Device(map_location)
    raise TypeError(f"load: map_location must be None, a string, a device, a dict or a "
                    f"callable, got {type(map_location).__name__}")


def host_array(raw, dtype: dtypes.dtype, shape: tuple, byteorder: str = "<") -> np.ndarray:
    """A writable host array of ``raw`` bytes (``byteorder`` ``"<"`` or ``">"``) holding
    ``dtype`` elements in C order, in the layout tritongrad keeps them (bfloat16 as float32)."""
    if dtype is dtypes.bfloat16:
        return dtypes.bfloat16_values(np.frombuffer(raw, dtype=byteorder + "u2").reshape(shape))
    host = np.frombuffer(raw, dtype=dtype.np.newbyteorder(byteorder)).reshape(shape)
    return host.astype(dtype.np)  # native byte order, a writable copy


def place(host: np.ndarray, dtype: dtypes.dtype, saved_device: str, map_location) -> Tensor:
    """A tensor of ``host``'s values on the device ``map_location`` (checked by
    ``_check_map_location``) chooses for something saved from ``saved_device``."""
    from .autograd.ops.creation import tensor as make_tensor
    loc = map_location
    if isinstance(loc, dict):
        loc = Device(loc.get(saved_device, saved_device))
    if callable(loc):
        t = make_tensor(host, dtype=dtype)
        out = loc(t, saved_device)
        return t if out is None else out
    dev = Device(saved_device) if loc is None else loc
    if dev.type == "cuda":
        from . import cuda
        if not cuda.is_available():
            raise RuntimeError(
                "Attempting to deserialize object on a CUDA device but "
                "tritongrad.cuda.is_available() is False. If you are running on a "
                "CPU-only machine, please use tritongrad.load with map_location='cpu' "
                "to map your storages to the CPU.")
    return make_tensor(host, dtype=dtype, device=dev)


def finish(t: Tensor, requires_grad: bool, parameter: bool) -> Tensor:
    """``t`` as the saved tensor was: an ``nn.Parameter`` (sharing ``t``'s memory) or a
    tensor requiring grad or not."""
    if parameter:
        from .nn.parameter import Parameter
        return Parameter(t, requires_grad=requires_grad)
    if requires_grad:
        t.requires_grad_(True)
    return t


def place_storage(host: np.ndarray, dtype: dtypes.dtype, saved_device: str, map_location,
                  what: str) -> Tensor:
    """``place`` for all of a storage (``host``: its elements, 1-D; ``what`` names it), for
    ``view`` to build its tensors over: checks what a ``map_location`` callable returned, and
    copies it if it is not all of its own storage from the start (views are built at offsets
    into that storage)."""
    t = place(host, dtype, saved_device, map_location)
    if not callable(map_location):  # (place made a new tensor, all of its storage)
        return t
    if not isinstance(t, Tensor) or t.dtype is not dtype or t.numel() != host.size:
        raise TypeError(f"load: map_location returned {type(t).__name__} for {what}, not a "
                        f"{dtype.name} tensor of {host.size} elements")
    if t.storage_offset() or not t.is_contiguous() or storage_numel(t) != t.numel():
        t = t.clone()
    return t


def view(whole: Tensor, offset: int, shape: tuple, stride: tuple) -> Tensor:
    """A new leaf tensor viewing ``whole``'s memory (``place_storage``'s result) at element
    ``offset`` with ``shape`` and ``stride``, as PyTorch's ``_rebuild_tensor``: tensors built
    over one storage share its memory. The caller has checked the geometry (``check_view``).

    (The tensors share ``whole``'s version counter too, which PyTorch's, rebuilt by ``set_``,
    do not: an in-place write through one invalidates the others where autograd saved them,
    as it should, since it changed their values. ``set_`` would take 3-10x as long.)"""
    if not offset and stride == contiguous_strides(shape) and math.prod(shape) == whole.numel():
        return whole.view(shape).detach()  # (the usual case, a tensor that is its storage)
    return whole.as_strided(shape, stride, offset).detach()


class _Reader:
    """Decodes the header's ``object``, building each referenced tensor once (``_build``,
    which each version's reader defines)."""

    def __init__(self, buf: bytes, data_start: int, entries: list, map_location,
                 weights_only: bool = True):
        self.buf = buf
        self.data_start = data_start
        self.entries = entries
        self.map_location = map_location
        self.weights_only = weights_only
        self.cache: dict = {}
        self.refs: dict = {}  # a pickle node's "ref" -> what it loaded as

    def tensor(self, i) -> Tensor:
        if not _is_int(i) or not 0 <= i < len(self.entries):
            raise _Malformed(f"tensor reference {_describe(i)} is out of range (the file lists "
                             f"{len(self.entries)} tensors)")
        if i not in self.cache:
            self.cache[i] = self._build(self.entries[i])
        return self.cache[i]

    def _build(self, e) -> Tensor:
        raise NotImplementedError

    def decode(self, node, depth: int = 0):
        if depth > _MAX_DEPTH:
            raise _Malformed(f"the object is nested more than {_MAX_DEPTH} levels deep")
        if node is None or isinstance(node, (bool, str, int)):
            return node
        if isinstance(node, float):
            if not math.isfinite(node):  # 1e999 parses as inf; a save tags non-finite floats
                raise _Malformed(f"the header holds an out-of-range number ({node})")
            return node
        if isinstance(node, list):
            return [self.decode(v, depth + 1) for v in node]
        tag = node.get("@")  # json.loads yields only None, bool, str, int, float, list, dict
        if tag == "tensor":
            return self.tensor(node.get("i"))
        if tag == "dict":
            return self._dict(node, depth)
        if tag == "tuple":
            items = node.get("items")
            if not isinstance(items, list):
                raise _Malformed("a tuple's items must be a list")
            return tuple(self.decode(v, depth + 1) for v in items)
        if tag == "float":
            v = node.get("v")
            if v not in ("nan", "inf", "-inf"):
                raise _Malformed(f"invalid special float {_describe(v)}")
            return float(v)
        if tag == "dtype":
            return _check_dtype(node.get("v"), "a dtype value")
        if tag == "device":
            return Device(_check_device(node.get("v"), "a device value"))
        if tag == "bytes":
            return self._bytes(node.get("hex"))
        if tag == "pickle":
            ref = node.get("ref")
            if ref is None:
                return self._unpickle(node)
            if not _is_int(ref):
                raise _Malformed(f"a pickle's ref must be an int, not {_describe(ref)}")
            if ref not in self.refs:
                self.refs[ref] = self._unpickle(node)
            return self.refs[ref]
        raise _Malformed(f"unknown tag {_describe(tag)}")

    def _unpickle(self, node: dict):
        data = self._bytes(node.get("hex"))
        unpickler = (pickle.Unpickler if not self.weights_only else _WeightsOnlyUnpickler)(
            io.BytesIO(data))
        unpickler.persistent_load = self.tensor
        try:
            return unpickler.load()
        except _Malformed:
            raise
        except _NotAllowed as exc:
            raise UnpicklingError(_weights_only_message(exc.args[0])) from None
        except Exception as exc:  # (a damaged pickle: say so, as a load error)
            raise _Malformed(f"the pickled {_describe(node.get('type'))} could not be "
                             f"unpickled: {type(exc).__name__}: {exc}") from exc

    def _dict(self, node: dict, depth: int) -> dict:
        items, ordered = node.get("items"), node.get("ordered", False)
        if not isinstance(items, list):
            raise _Malformed("a dict's items must be a list of pairs")
        out = OrderedDict() if _check_bool(ordered, "a dict's 'ordered'") else {}
        for pair in items:
            if not isinstance(pair, list) or len(pair) != 2:
                raise _Malformed("a dict item must be a [key, value] pair")
            k = self.decode(pair[0], depth + 1)
            try:
                hash(k)
            except TypeError:
                raise _Malformed(f"unhashable dict key of type {type(k).__name__}") from None
            out[k] = self.decode(pair[1], depth + 1)
        if "metadata" in node:
            meta = self.decode(node["metadata"], depth + 1)
            if not isinstance(out, OrderedDict) or not isinstance(meta, dict):
                raise _Malformed("a dict's 'metadata' must be a dict, on an ordered dict")
            out._metadata = meta
        return out

    @staticmethod
    def _bytes(text) -> bytes:
        # bytes.fromhex also skips whitespace; a save writes plain lowercase hex digits
        if not isinstance(text, str) or len(text) % 2 or not re.fullmatch(
                r"[0-9a-f]*", text, re.ASCII):
            raise _Malformed(f"invalid bytes value {_describe(text)}")
        return bytes.fromhex(text)


class _ReaderV1(_Reader):
    """A version 1 file: each tensor its own elements, on its own."""

    def _build(self, e: _Entry) -> Tensor:
        raw = _entry_bytes(self.buf, self.data_start, e)
        t = place(host_array(raw, e.dtype, e.shape), e.dtype, e.device, self.map_location)
        return finish(t, e.requires_grad, e.parameter)


class _ReaderV2(_Reader):
    """A version 2 file: tensors are views of storages, each placed once (per dtype)."""

    def __init__(self, buf: bytes, data_start: int, storages: list, entries: list,
                 map_location, weights_only: bool = True):
        super().__init__(buf, data_start, entries, map_location, weights_only)
        self.storages = storages
        self.viewers = Counter(e.storage for e in entries)  # storage index -> its tensors
        self.wholes: dict = {}  # (storage index, dtype) -> place_storage's tensor

    def _build(self, e: _TensorEntry) -> Tensor:
        s = self.storages[e.storage]
        raw = _entry_bytes(self.buf, self.data_start, s)
        if (self.viewers[e.storage] == 1 and not callable(self.map_location)
                and not e.storage_offset and e.stride == contiguous_strides(e.shape)
                and math.prod(e.shape) * e.dtype.itemsize == s.nbytes):
            # The tensor is all of its storage, which no other tensor views (most tensors):
            # placed as it is, not as a view of a 1-D tensor of the storage, which costs a
            # third of a small tensor's load. (A callable map_location gets storages, 1-D.)
            t = place(host_array(raw, e.dtype, e.shape), e.dtype, s.device, self.map_location)
            return finish(t, e.requires_grad, e.parameter)
        key = (e.storage, e.dtype)
        whole = self.wholes.get(key)
        if whole is None:
            host = host_array(raw, e.dtype, (s.nbytes // e.dtype.itemsize,))
            whole = self.wholes[key] = place_storage(host, e.dtype, s.device, self.map_location,
                                                     f"storage {e.storage}")
        return finish(view(whole, e.storage_offset, e.shape, e.stride), e.requires_grad,
                      e.parameter)


def _load_bytes(buf: bytes, map_location, weights_only: bool = True):
    version, hlen = _check_prefix(buf)
    header = _parse_header(buf[_PREFIX.size:_PREFIX.size + hlen])
    data_size = _check_header_fields(header, version)
    data_start = _check_file_size(buf, hlen, data_size)
    if version == 1:
        entries = _check_entries(header["tensors"], buf, data_start, data_size)
        reader = _ReaderV1(buf, data_start, entries, map_location, weights_only)
    else:
        storages, entries = _check_storages_and_tensors(header["storages"], header["tensors"],
                                                        buf, data_start, data_size)
        reader = _ReaderV2(buf, data_start, storages, entries, map_location, weights_only)
    return reader.decode(header["object"])


# -- pickled objects under weights_only=True ------------------------------------------------------
#
# As PyTorch's weights-only unpickler: a pickle may name (and so construct or call) only the
# globals allowed here, never an arbitrary one. Tensors never appear as globals: they are the
# file's own tensors, passed as persistent ids.

_SAFE_BUILTINS = {("collections", "OrderedDict"): OrderedDict, ("builtins", "set"): set,
                  ("collections", "Counter"): Counter,
                  (Size.__module__, Size.__qualname__): Size,
                  (__name__, "_rebuild_sparse"): _rebuild_sparse,
                  (__name__, "_set_attributes"): _set_attributes,
                  # (its class must be allowed too: ``add_safe_globals``, as PyTorch's)
                  (_rebuild_subclass.__module__, "_rebuild_subclass"): _rebuild_subclass,
                  ("builtins", "frozenset"): frozenset, ("builtins", "complex"): complex,
                  ("builtins", "slice"): slice, ("builtins", "range"): range,
                  ("builtins", "bytearray"): bytearray}
_safe_globals: dict = {}  # (module, qualname) -> the object add_safe_globals allowed


class _NotAllowed(Exception):
    """A weights-only load met a global that is not allowed (args[0]: its dotted name)."""


def check_build(inst) -> None:
    """PyTorch's weights-only rule for BUILD, which sets an object's state: only on a plain
    container or an instance of a class ``add_safe_globals`` allowed, so that a file cannot
    set a tensor's (or any other object's) internals."""
    allowed = (OrderedDict, Counter, *(g for g in _safe_globals.values() if isinstance(g, type)))
    if type(inst) not in allowed:
        raise _NotAllowed(f"BUILD on {type(inst).__module__}.{type(inst).__qualname__}")


class _WeightsOnlyUnpickler(pickle._Unpickler):
    """The pure-Python unpickler (its BUILD can be restricted; the pickles are small: the
    tensors are persistent ids) with the safe globals only."""

    dispatch = dict(pickle._Unpickler.dispatch)

    def find_class(self, module: str, name: str):
        obj = _SAFE_BUILTINS.get((module, name)) or _safe_globals.get((module, name))
        if obj is None:
            raise _NotAllowed(f"{module}.{name}")
        return obj

    def load_build(self):
        check_build(self.stack[-2])
        return super().load_build()

    dispatch[pickle.BUILD[0]] = load_build


def _weights_only_message(name: str) -> str:
    return ("Weights only load failed. This file can still be loaded, to do so you have two "
            "options, do those steps only if you trust the source of the checkpoint. \n\t(1) "
            "Re-running `tritongrad.load` with `weights_only` set to `False` will likely "
            "succeed, but it can result in arbitrary code execution. Do it only if you got "
            "the file from a trusted source.\n\t(2) Alternatively, to load with "
            "`weights_only=True` please check the recommended steps in the following error "
            f"message.\n\tWeightsUnpickler error: Unsupported global: GLOBAL {name} was not "
            "an allowed global by default. Please use "
            f"`tritongrad.serialization.add_safe_globals([{name.rsplit('.', 1)[-1]}])` or the "
            f"`tritongrad.serialization.safe_globals([{name.rsplit('.', 1)[-1]}])` context "
            "manager to allowlist this global if you trust this class/function.")


def _global_key(obj) -> tuple[str, str]:
    if isinstance(obj, tuple):  # PyTorch's (object, "module.name") form
        obj, full = obj
        module, _, name = full.rpartition(".")
        return module, name
    return obj.__module__, obj.__qualname__


def add_safe_globals(safe_globals: list) -> None:
    """Marks these globals (classes or functions, or ``(obj, "module.name")`` pairs) as safe
    for ``load(weights_only=True)`` to construct or call when a pickled object in the file
    names them."""
    for g in safe_globals:
        _safe_globals[_global_key(g)] = g[0] if isinstance(g, tuple) else g


def get_safe_globals() -> list:
    """The globals ``add_safe_globals`` allowed."""
    return list(_safe_globals.values())


def clear_safe_globals() -> None:
    """Forgets every global ``add_safe_globals`` allowed."""
    _safe_globals.clear()


@contextlib.contextmanager
def safe_globals(globals_list: list):
    """Allows these globals for ``load(weights_only=True)`` inside the ``with`` block only."""
    saved = dict(_safe_globals)
    add_safe_globals(globals_list)
    try:
        yield
    finally:
        _safe_globals.clear()
        _safe_globals.update(saved)


def load(f, map_location=None, pickle_module=None, *, weights_only: bool = True, mmap=None,
         **pickle_load_args):
    """Loads an object saved with ``tg.save``, or by PyTorch's ``torch.save`` (its zip format
    or its legacy one; see ``tritongrad/_torch_format.py``), from ``f`` (a path, a binary file
    object or bytes).

    Args:
        f: where to read from.
        map_location: where tensors go: None (the device each was saved from), a device or
            string (all of them there), a dict mapping saved device strings to devices
            (``{"cuda:0": "cpu"}``), or a callable ``fn(cpu_tensor, saved_device_str)``
            returning the tensor to use (or None: the CPU tensor), called once per storage
            with all its elements as a 1-D tensor, of the dtype of the tensors viewing it
            (in a version 1 file: once per tensor, shaped as the tensor).
        weights_only: True (the default): pickled objects in the file (``tg.save`` of a
            whole module, a user's class) are unpickled only if every global they name is
            allowed (``add_safe_globals``, ``safe_globals``; ``OrderedDict``, ``set`` and a few
            other builtins), else "Weights only load failed" is raised, as PyTorch's; state
            dicts and plain values never run code. False: unpickle whatever the file holds
            (only for files from a trusted source).
        mmap: None, False, or True with ``f`` a path: accepted so that PyTorch code runs,
            but the file is read into memory, not mapped (the tensors are the same).
        pickle_load_args: none are accepted (pickles are always protocol 4, Python 3).

    Raises:
        UnpicklingError: the file is not a valid tritongrad save (bad magic, unknown version,
            a malformed, oversized or modified header, truncated, extra or modified data);
            the message names the file and the problem. Errors reading the file
            (``FileNotFoundError``, ...) propagate unchanged.
    """
    if pickle_module is not None:
        raise ValueError("load: pickle_module is not supported (tritongrad pickles only the "
                         "objects its plain format cannot hold, with Python's pickle)")
    if weights_only is None:  # PyTorch's "unset": its default, True
        weights_only = True
    if not isinstance(weights_only, bool):
        raise TypeError(f"load: weights_only must be a bool, got {type(weights_only).__name__}")
    if mmap and not isinstance(f, (str, os.PathLike)):
        raise ValueError("f must be a file path in order to use the mmap argument")
    if pickle_load_args:
        name, value = next(iter(sorted(pickle_load_args.items())))
        raise unsupported("load", name, value, _NO_PICKLE)
    map_location = _check_map_location(map_location)
    name = _source_name(f)
    buf = _read_all(f)
    try:
        if buf[:4] == b"PK\x03\x04":  # a zip archive: PyTorch's torch.save format
            from ._torch_format import load_zip
            return load_zip(buf, map_location, weights_only)
        if buf[:1] == b"\x80":  # a pickle: PyTorch's legacy format
            from ._torch_format import load_legacy
            return load_legacy(buf, map_location, weights_only)
        return _load_bytes(buf, map_location, weights_only)
    except _Malformed as exc:
        raise UnpicklingError(f"load: {name}: {exc}") from None
