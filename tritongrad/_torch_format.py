"""Reading checkpoints written by PyTorch's ``torch.save`` (its zip format, PyTorch >= 1.6),
without torch and without running code from the file.

Such a file is a zip archive (entries stored uncompressed) under one top-level folder
``<name>/``:

    <name>/data.pkl            the saved object, a pickle (protocol 2)
    <name>/data/<key>          each storage's raw bytes, in the order ``byteorder`` says
    <name>/byteorder           b"little" or b"big" (absent in old files: little)
    <name>/version, .format_version, .storage_alignment, .data/serialization_id   (unused)

In ``data.pkl`` a tensor is a call ``torch._utils._rebuild_tensor_v2(storage, storage_offset,
size, stride, requires_grad, backward_hooks)`` (``_rebuild_parameter(tensor, requires_grad,
hooks)`` wraps a Parameter), and a storage is a persistent id ``("storage", torch.FloatStorage,
key, location, numel)``: ``data/<key>`` holds ``numel`` elements of the storage type's dtype
(``torch.UntypedStorage``: ``numel`` bytes, the dtype coming from ``_rebuild_tensor_v3``).
Tensors naming one key are views of one storage, here as in PyTorch.

The pickle is unpickled as PyTorch's default ``weights_only=True`` does: every global it names
must be one of the few that build tensors, storages, dtypes, sizes, devices and plain
containers (``_GLOBALS``) or one the caller allowed (``tg.serialization.add_safe_globals``);
anything else raises PyTorch's "Weights only load failed" error before it is called. BUILD
(setting an object's state) is allowed only on ``OrderedDict`` (a state dict's ``_metadata``)
and allowed classes. With ``weights_only=False`` non-torch globals are imported as a plain
unpickler would (the caller trusts the file), but a torch global outside ``_GLOBALS`` (a
whole ``nn.Module``, an optimizer) still raises: there is no torch here to build it.

Besides plain tensors: a conjugate or negative view (saved as metadata over its storage) loads
as the values it shows, an ``nn.Buffer`` as a tensor, and sparse tensors
(``_rebuild_sparse_tensor``: COO, CSR, CSC, BSR, BSC) with their invariants checked.

The legacy format (``_use_new_zipfile_serialization=False``, PyTorch < 1.6: a stream of
pickles, ``load_legacy``) is read too, under the same rules.
"""

from __future__ import annotations

import _compat_pickle
import codecs
import io
import pickle
import re
import zipfile
from collections import Counter, OrderedDict

from . import serialization as ser
from .autograd.tensor import Size, Tensor
from .runtime import dtype as dtypes
from .runtime.device import device as Device

__all__ = ["load_zip"]

_STORAGE_DTYPES = {
    "FloatStorage": dtypes.float32, "DoubleStorage": dtypes.float64,
    "HalfStorage": dtypes.float16, "BFloat16Storage": dtypes.bfloat16,
    "LongStorage": dtypes.int64, "IntStorage": dtypes.int32, "ShortStorage": dtypes.int16,
    "CharStorage": dtypes.int8, "ByteStorage": dtypes.uint8, "BoolStorage": dtypes.bool,
    "ComplexFloatStorage": dtypes.complex64, "ComplexDoubleStorage": dtypes.complex128,
}
_TORCH_DTYPES = {d.name: d for d in ser._DTYPES.values()}
_LOCATION = re.compile(r"cpu|cuda(?::(?:0|[1-9][0-9]{0,8}))?", re.ASCII)


class _CallerError(Exception):
    """Carries an error that is the caller's or the machine's, not the file's (args[0]), out
    of the unpickler unchanged."""


class _StorageType:
    """What a storage class global (``torch.FloatStorage``) unpickles to: its dtype, or None
    for ``torch.UntypedStorage`` (bytes)."""

    def __init__(self, name: str, dtype):
        self.name, self.dtype = name, dtype


class _Marker:
    """``torch.Tensor`` / ``torch.nn.parameter.Parameter`` named as a ``new_type``."""

    def __init__(self, name: str):
        self.name = name


_TENSOR, _PARAMETER = _Marker("torch.Tensor"), _Marker("torch.nn.parameter.Parameter")


class _Storage:
    """A storage the pickle names: ``data/<key>``, saved on ``location``."""

    def __init__(self, key: str, location: str, dtype, numel: int):
        self.key, self.location, self.dtype, self.numel = key, location, dtype, numel


def _size(value, what: str) -> tuple:
    """A size or stride: a tuple (or torch.Size, unpickled as a tuple) of non-negative ints."""
    if not isinstance(value, (tuple, list)) or len(value) > ser._MAX_NDIM:
        raise ser._Malformed(f"a tensor's {what} must be a tuple of at most {ser._MAX_NDIM} "
                             f"ints, got {type(value).__name__}")
    return tuple(ser._check_int(v, f"a tensor's {what}") for v in value)


def _device(*args):
    """``torch.device(...)``: only strings and ints reach the constructor."""
    if not all(isinstance(a, str) or ser._is_int(a) for a in args):
        raise ser._Malformed("torch.device() called with other arguments than str and int")
    return Device(*args)


def _codecs_encode(text, encoding="utf-8"):
    """``_codecs.encode``: how protocol 2 pickles bytes (``encode(str, "latin1")``)."""
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise ser._Malformed("_codecs.encode is allowed only to make bytes from latin1 text")
    return codecs.encode(text, encoding)


def _set_state(obj, state) -> None:
    """Applies a pickled object state (``__dict__`` entries) by attribute, refusing private
    names, which could replace a tensor's internals."""
    if state is None:
        return
    if isinstance(state, tuple) and len(state) == 2:  # (dict state, slot state)
        for part in state:
            _set_state(obj, part)
        return
    if not isinstance(state, dict) or not all(isinstance(k, str) for k in state):
        raise ser._Malformed(f"a tensor's state must be a dict of names, got "
                             f"{type(state).__name__}")
    for k, v in state.items():
        if k.startswith("_") and not (k == "_is_buffer" and isinstance(v, bool)):
            # (``_is_buffer``: an ``nn.Buffer``'s mark, a bool, which tritongrad's Buffer uses
            # too)
            raise ser._Malformed(f"a tensor's state sets the private attribute {k!r}")
        setattr(obj, k, v)


class _Unpickler(pickle._Unpickler):
    """The pure-Python unpickler (its BUILD can be restricted; data.pkl is small: the bytes
    are in the storages) with PyTorch's weights-only globals."""

    dispatch = dict(pickle._Unpickler.dispatch)

    def __init__(self, stream: io.BytesIO, loader: _Loader):
        super().__init__(stream)
        self.loader = loader
        ld = loader
        self.globals = {
            ("torch._utils", "_rebuild_tensor"): ld.rebuild_tensor,
            ("torch._utils", "_rebuild_tensor_v2"): ld.rebuild_tensor,
            ("torch._utils", "_rebuild_tensor_v3"): ld.rebuild_tensor_v3,
            ("torch._utils", "_rebuild_parameter"): ld.rebuild_parameter,
            ("torch._utils", "_rebuild_parameter_with_state"): ld.rebuild_parameter,
            ("torch._tensor", "_rebuild_from_type_v2"): ld.rebuild_from_type,
            ("torch._utils", "_rebuild_sparse_tensor"): ld.rebuild_sparse,
            ("torch.serialization", "_get_layout"): _layout,
            ("torch", "Tensor"): _TENSOR, ("torch.nn.parameter", "Parameter"): _PARAMETER,
            ("torch", "Size"): Size, ("torch", "device"): _device,
            ("torch", "UntypedStorage"): _StorageType("UntypedStorage", None),
            ("torch.storage", "UntypedStorage"): _StorageType("UntypedStorage", None),
            ("collections", "OrderedDict"): OrderedDict, ("collections", "Counter"): Counter,
            ("_codecs", "encode"): _codecs_encode,
            **ser._SAFE_BUILTINS,
        }
        for name, dtype in _STORAGE_DTYPES.items():
            self.globals["torch", name] = self.globals["torch.cuda", name] = (
                _StorageType(name, dtype))
        for name, dtype in _TORCH_DTYPES.items():
            self.globals["torch", name] = dtype

    def find_class(self, module: str, name: str):
        if self.proto < 3 and self.fix_imports:  # Python 2 names, as pickle's own find_class
            if (module, name) in _compat_pickle.NAME_MAPPING:
                module, name = _compat_pickle.NAME_MAPPING[(module, name)]
            elif module in _compat_pickle.IMPORT_MAPPING:
                module = _compat_pickle.IMPORT_MAPPING[module]
        obj = self.globals.get((module, name)) or ser._safe_globals.get((module, name))
        if obj is not None:
            return obj
        full = f"{module}.{name}"
        if module == "torch" or module.startswith("torch."):
            if not self.loader.weights_only:
                raise ser._Malformed(
                    f"the checkpoint holds GLOBAL {full}, a PyTorch object tritongrad cannot "
                    f"rebuild (there is no torch here): it reads tensors, Parameters, state "
                    f"dicts and plain containers. Save model.state_dict() rather than the "
                    f"module, or convert the object with PyTorch first")
            raise ser._NotAllowed(full)
        if not self.loader.weights_only:
            return super().find_class(module, name)  # trusted by the caller
        raise ser._NotAllowed(full)

    def persistent_load(self, pid):
        return self.loader.storage(pid)

    def load_build(self):
        if self.loader.weights_only:
            ser.check_build(self.stack[-2])
        return super().load_build()

    dispatch[pickle.BUILD[0]] = load_build


class _Loader:
    """Turns the pickle's storages and rebuild calls into tritongrad tensors."""

    def __init__(self, zf: zipfile.ZipFile, prefix: str, byteorder: str, map_location,
                 weights_only: bool):
        self.zf, self.prefix, self.byteorder = zf, prefix, byteorder
        self.map_location, self.weights_only = map_location, weights_only
        self.storages: dict = {}  # key -> _Storage
        self.wholes: dict = {}  # (key, dtype name) -> 1-D tensor of the whole storage

    def storage(self, pid) -> _Storage:
        # (the legacy format adds a sixth item, view metadata, None but in files of PyTorch
        # < 0.4 that saved storage views)
        if not (isinstance(pid, tuple) and len(pid) in (5, 6) and pid[0] == "storage"):
            raise ser._Malformed(f"unknown persistent id {ser._describe(pid)}")
        if len(pid) == 6 and pid[5] is not None:
            raise ser._Malformed("storage views (a legacy checkpoint of PyTorch < 0.4) are not "
                                 "supported")
        _, stype, key, location, numel = pid[:5]
        if not isinstance(stype, _StorageType):
            raise ser._Malformed(f"a storage's type is {type(stype).__name__}, not a "
                                 f"storage class")
        if not isinstance(key, str) or not re.fullmatch(r"[0-9A-Za-z_.-]{1,64}", key):
            raise ser._Malformed(f"invalid storage key {ser._describe(key)}")
        if not isinstance(location, str):
            raise ser._Malformed(f"storage {key}'s location must be a string")
        numel = ser._check_int(numel, f"storage {key}'s size")
        old = self.storages.get(key)
        if old is not None:
            if (old.dtype, old.numel) != (stype.dtype, numel):
                raise ser._Malformed(f"storage {key} is named with two types or sizes")
            return old
        self.storages[key] = _Storage(key, location, stype.dtype, numel)
        return self.storages[key]

    def whole(self, s: _Storage, dtype, nbytes: int) -> Tensor:
        """Storage ``s`` (``nbytes`` bytes, a whole number of ``dtype`` elements) as a 1-D
        tensor of ``dtype``, read once, placed by map_location."""
        if (s.key, dtype.name) in self.wholes:
            return self.wholes[s.key, dtype.name]
        raw = self._read(s, nbytes)
        if dtype is dtypes.bool:
            ser.check_bool_bytes(f"storage {s.key}", raw)
        host = ser.host_array(raw, dtype, (nbytes // dtype.itemsize,), self.byteorder)
        location = s.location
        if self.map_location is None and not _LOCATION.fullmatch(location):
            raise _CallerError(RuntimeError(
                f"load: storage {s.key} was saved on device {location!r}, which tritongrad "
                f"does not have: pass map_location='cpu'"))
        if isinstance(self.map_location, dict) and not _LOCATION.fullmatch(
                str(self.map_location.get(location, location))):
            raise _CallerError(RuntimeError(
                f"load: storage {s.key} was saved on device {location!r}: map it to a "
                f"tritongrad device in map_location"))
        try:
            t = ser.place_storage(host, dtype, location, self.map_location, f"storage {s.key}")
        except Exception as exc:
            raise _CallerError(exc) from exc
        self.wholes[s.key, dtype.name] = t
        return t

    def _read(self, s: _Storage, nbytes: int) -> bytes:
        """Storage ``s``'s ``nbytes`` bytes, from its archive entry."""
        name = f"{self.prefix}data/{s.key}"
        try:
            info = self.zf.getinfo(name)
        except KeyError:
            raise ser._Malformed(f"the archive lacks storage {s.key} ({name})") from None
        if info.file_size != nbytes:
            raise ser._Malformed(f"storage {s.key} has {info.file_size} bytes, its tensors' "
                                 f"type and size say {nbytes}: the file is corrupted")
        return self.zf.read(info)  # (zipfile checks the entry's CRC-32)

    def rebuild_tensor(self, storage, storage_offset, size, stride, requires_grad=False,
                       backward_hooks=None, metadata=None) -> Tensor:
        if not isinstance(storage, _Storage) or storage.dtype is None:
            raise ser._Malformed("_rebuild_tensor_v2 needs a typed storage")
        return self._tensor(storage, storage.dtype, storage_offset, size, stride,
                            requires_grad, backward_hooks, metadata)

    def rebuild_tensor_v3(self, storage, storage_offset, size, stride, requires_grad,
                          backward_hooks, dtype, metadata=None) -> Tensor:
        if not isinstance(storage, _Storage):
            raise ser._Malformed("_rebuild_tensor_v3 needs a storage")
        if not isinstance(dtype, dtypes.dtype):
            raise ser._Malformed(f"_rebuild_tensor_v3's dtype is {type(dtype).__name__}")
        if storage.dtype is not None and storage.dtype is not dtype:
            raise ser._Malformed(f"storage {storage.key} of {storage.dtype.name} viewed as "
                                 f"{dtype.name}")
        return self._tensor(storage, dtype, storage_offset, size, stride, requires_grad,
                            backward_hooks, metadata)

    def _tensor(self, s: _Storage, dtype, offset, size, stride, requires_grad, hooks,
                metadata) -> Tensor:
        offset = ser._check_int(offset, "a tensor's storage offset")
        size, stride = _size(size, "size"), _size(stride, "stride")
        if not isinstance(requires_grad, bool):
            raise ser._Malformed("a tensor's requires_grad must be a bool")
        if requires_grad and not (dtype.is_floating_point or dtype.is_complex):
            raise ser._Malformed(f"a {dtype.name} tensor cannot require grad")
        if hooks:  # (PyTorch drops them too, with a warning: they are not saved)
            raise ser._Malformed("backward hooks in a checkpoint are not supported")
        # torch.save records a conjugate or negative view's bit (``x.conj()``, its ``.imag``)
        # as metadata over the unchanged storage; applied here to a copy
        if metadata is not None and (not isinstance(metadata, dict) or not set(metadata) <= {
                "conj", "neg"} or not all(isinstance(v, bool) for v in metadata.values())):
            raise ser._Malformed(f"tensor metadata {ser._describe(metadata)} is not supported "
                                 f"(only the conj and neg bits)")
        nbytes = s.numel * (1 if s.dtype is None else dtype.itemsize)
        ser.check_view("a tensor", dtype, offset, size, stride, f"storage {s.key}", nbytes)
        t = ser.view(self.whole(s, dtype, nbytes), offset, size, stride)
        if metadata and metadata.get("neg"):
            t = t.neg()
        if metadata and metadata.get("conj"):
            if not dtype.is_complex:
                raise ser._Malformed(f"a {dtype.name} tensor has the conj bit")
            t = t.conj().clone()
        return ser.finish(t, requires_grad, False)

    def rebuild_sparse(self, layout, data):
        """``torch._utils._rebuild_sparse_tensor``: a COO tensor from (indices, values, size[,
        is_coalesced]), a compressed one from (compressed indices, plain indices, values,
        size); built by ``tg.load``'s own rebuild, which checks its invariants, as PyTorch
        checks them after a load."""
        n = len(data) if isinstance(data, tuple) else 0
        coo = layout is dtypes.sparse_coo and n in (3, 4)
        if not (coo or (layout in _COMPRESSED and n == 4)):
            raise ser._Malformed(f"_rebuild_sparse_tensor of {ser._describe(layout)} with "
                                 f"{n} parts is not supported")
        k = 2 if coo else 3  # the index and value tensors come first, then the size
        try:
            return ser._rebuild_sparse(str(layout).rsplit(".", 1)[-1], data[:k],
                                       _size(data[k], "size"), data[3] if coo and n == 4
                                       else None, False)
        except ser._Malformed:
            raise
        except Exception as exc:  # (invalid indices)
            raise ser._Malformed(f"a sparse tensor is invalid: {type(exc).__name__}: "
                                 f"{exc}") from None

    def rebuild_parameter(self, data, requires_grad, backward_hooks, state=None) -> Tensor:
        if not isinstance(data, Tensor) or not isinstance(requires_grad, bool):
            raise ser._Malformed("_rebuild_parameter needs a tensor and a bool")
        if backward_hooks:
            raise ser._Malformed("backward hooks in a checkpoint are not supported")
        p = ser.finish(data.detach(), requires_grad, True)
        _set_state(p, state)
        return p

    def rebuild_from_type(self, func, new_type, args, state) -> Tensor:
        if func not in (self.rebuild_tensor, self.rebuild_tensor_v3, self.rebuild_parameter):
            raise ser._Malformed("_rebuild_from_type_v2 names an unknown rebuild function")
        if new_type not in (_TENSOR, _PARAMETER) or not isinstance(args, tuple):
            raise ser._Malformed(f"_rebuild_from_type_v2 of {ser._describe(new_type)}: only "
                                 f"torch.Tensor and Parameter are supported")
        t = func(*args)
        _set_state(t, state)
        return t


_LAYOUTS = {f"torch.{n}": getattr(dtypes, n) for n in (
    "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc", "strided")}
_COMPRESSED = tuple(_LAYOUTS[f"torch.sparse_{n}"] for n in ("csr", "csc", "bsr", "bsc"))


def _layout(name):
    """``torch.serialization._get_layout``: a layout by its name ("torch.sparse_coo")."""
    if not isinstance(name, str) or name not in _LAYOUTS:
        raise ser._Malformed(f"unknown layout {ser._describe(name)}")
    return _LAYOUTS[name]


def _archive_prefix(zf: zipfile.ZipFile) -> str:
    """The top-level folder every record is under (``<name>/``), as PyTorch finds it: the
    first record's."""
    names = zf.namelist()
    if not names or "/" not in names[0]:
        raise ser._Malformed("not a PyTorch zip checkpoint (no top-level folder)")
    prefix = names[0].split("/", 1)[0] + "/"
    if prefix + "data.pkl" not in names:
        if prefix + "constants.pkl" in names or prefix + "code/" in "".join(names[:50]):
            raise ser._Malformed("this is a TorchScript archive (torch.jit.save), not a "
                                 "torch.save checkpoint: tritongrad cannot load it")
        raise ser._Malformed(f"not a PyTorch zip checkpoint (no {prefix}data.pkl)")
    return prefix


def load_zip(buf: bytes, map_location, weights_only: bool):
    """The object in PyTorch zip checkpoint ``buf``; raises ``_Malformed`` (or
    ``_NotAllowed`` turned into the weights-only error) for a bad or disallowed file."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(buf))
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise ser._Malformed(f"this looks like a PyTorch zip checkpoint but is not a valid "
                             f"zip archive ({exc})") from None
    try:
        with zf:
            prefix = _archive_prefix(zf)
            byteorder = "<"
            if prefix + "byteorder" in zf.namelist():
                mark = zf.read(prefix + "byteorder")
                if mark not in (b"little", b"big"):
                    raise ser._Malformed(f"unknown byte order {mark[:20]!r}")
                byteorder = "<" if mark == b"little" else ">"
            data = zf.read(prefix + "data.pkl")
            loader = _Loader(zf, prefix, byteorder, map_location, weights_only)
            try:
                return _Unpickler(io.BytesIO(data), loader).load()
            except (ser._Malformed, ser._NotAllowed, zipfile.BadZipFile):
                raise
            except _CallerError as exc:  # (map_location's, or no CUDA: not the file's fault)
                raise exc.args[0] from None
            except Exception as exc:  # a damaged pickle: say so, as a load error
                raise ser._Malformed(f"the PyTorch pickle could not be unpickled: "
                                     f"{type(exc).__name__}: {exc}") from exc
    except ser._NotAllowed as exc:
        raise ser.UnpicklingError(ser._weights_only_message(exc.args[0])) from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError, OSError,
            NotImplementedError) as exc:  # a damaged archive (bad CRC, unsupported method)
        raise ser._Malformed(f"the PyTorch zip archive is damaged ({type(exc).__name__}: "
                             f"{exc})") from None


# -- the legacy format ---------------------------------------------------------------------------
#
# ``torch.save(obj, f, _use_new_zipfile_serialization=False)`` (the default before PyTorch 1.6)
# writes pickles one after the other: the magic number, the protocol version (1001), a dict of
# system info (``little_endian``), the object (storages as persistent ids, as in data.pkl but
# with a sixth item, None), the sorted list of storage keys; then, for each key in that order,
# the storage's element count (8 bytes, in the file's byte order) and its elements. A storage's
# bytes lie after the pickle that names its type, so the pickle is read twice: once to learn
# each storage's element size, once to build the tensors.

_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
_LEGACY_PROTOCOL = 1001


class _PlainUnpickler(pickle._Unpickler):
    """For the legacy format's header pickles (ints, a dict, a list of keys): no globals."""

    def find_class(self, module: str, name: str):
        raise ser._Malformed(f"a header pickle names GLOBAL {module}.{name}")

    def persistent_load(self, pid):
        raise ser._Malformed("a header pickle holds a persistent id")


class _ScanLoader(_Loader):
    """The first reading of a legacy pickle: records its storages' types and sizes (``storage``)
    and builds empty placeholder tensors."""

    def _tensor(self, s: _Storage, dtype, *args) -> Tensor:
        from .autograd.ops.creation import zeros
        return zeros(0, dtype=dtype)

    def rebuild_sparse(self, layout, data):
        return None


class _LegacyLoader(_Loader):
    """The second reading: storages' bytes at the offsets the first one found."""

    def __init__(self, buf: bytes, spans: dict, byteorder: str, map_location, weights_only):
        super().__init__(None, "", byteorder, map_location, weights_only)
        self.buf, self.spans = buf, spans

    def _read(self, s: _Storage, nbytes: int) -> bytes:
        start, size = self.spans[s.key]
        if size != nbytes:
            raise ser._Malformed(f"storage {s.key} has {size} bytes, its tensors' type and size "
                                 f"say {nbytes}: the file is corrupted")
        return self.buf[start:start + size]


def _storage_spans(buf: bytes, pos: int, keys, storages: dict, byteorder: str) -> dict:
    """Where each storage's bytes lie: ``key -> (offset, nbytes)``, walking the data section
    from ``pos`` in the order of ``keys``."""
    if not isinstance(keys, list) or set(keys) != set(storages) or len(set(keys)) != len(keys):
        raise ser._Malformed("the storage key list does not match the storages the object "
                             "names")
    spans = {}
    for key in keys:
        s = storages[key]
        if pos + 8 > len(buf):
            raise ser._Malformed(f"the file is truncated (storage {key}'s size is missing)")
        numel = int.from_bytes(buf[pos:pos + 8], "little" if byteorder == "<" else "big")
        if numel != s.numel:
            raise ser._Malformed(f"storage {key} holds {numel} elements, the object says "
                                 f"{s.numel}")
        nbytes = numel * (1 if s.dtype is None else s.dtype.itemsize)
        if pos + 8 + nbytes > len(buf):
            raise ser._Malformed(f"the file is truncated (storage {key}'s bytes)")
        spans[key] = (pos + 8, nbytes)
        pos += 8 + nbytes
    return spans


def load_legacy(buf: bytes, map_location, weights_only: bool):
    """The object in a legacy-format PyTorch checkpoint ``buf`` (under the same rules as
    ``load_zip``); raises ``_Malformed`` naming the format for a bad or unsupported file."""
    f = io.BytesIO(buf)
    try:
        magic = _PlainUnpickler(f).load()
    except Exception:
        magic = None
    if magic != _LEGACY_MAGIC or isinstance(magic, bool):
        raise ser._Malformed("not a tritongrad file or a PyTorch checkpoint: a pickle that "
                             "does not start with PyTorch's magic number (tritongrad "
                             "unpickles no other files)")
    try:
        try:
            version, info = _PlainUnpickler(f).load(), _PlainUnpickler(f).load()
            if version != _LEGACY_PROTOCOL or not isinstance(info, dict):
                raise ser._Malformed(f"unsupported protocol version {ser._describe(version)}")
            byteorder = "<" if info.get("little_endian", True) else ">"
            start = f.tell()
            scan = _ScanLoader(None, "", byteorder, map_location, weights_only)
            _Unpickler(f, scan).load()
            keys = _PlainUnpickler(f).load()
            spans = _storage_spans(buf, f.tell(), keys, scan.storages, byteorder)
            f.seek(start)
            loader = _LegacyLoader(buf, spans, byteorder, map_location, weights_only)
            return _Unpickler(f, loader).load()
        except (ser._Malformed, ser._NotAllowed):
            raise
        except _CallerError as exc:
            raise exc.args[0] from None
        except Exception as exc:  # a damaged or truncated pickle
            raise ser._Malformed(f"the pickle could not be unpickled: {type(exc).__name__}: "
                                 f"{exc}") from exc
    except ser._NotAllowed as exc:
        raise ser.UnpicklingError(ser._weights_only_message(exc.args[0])) from None
    except ser._Malformed as exc:
        raise ser._Malformed(f"a PyTorch checkpoint in the legacy format "
                             f"(_use_new_zipfile_serialization=False, PyTorch < 1.6): "
                             f"{exc}") from None
