"""Fuzzing tg.load (tritongrad/serialization.py) with mutated checkpoints: random byte flips,
truncations, extensions, header fields replaced by random JSON and storage bytes changed. Every
mutant either loads into objects that save and load again unchanged (values, geometry and
which tensors share memory), or is refused with UnpicklingError: never another exception,
never a hang. Header checksums (and, for storage byte changes, the storage's checksum) are
recomputed so that the mutants reach the parser. The base file is a version 2 save holding
views (slices, a transpose, an expand, tensors sharing a storage); its header fields are also
fuzzed in a version 1 file (what earlier releases wrote, still read)."""

import functools
import io
import json
import math
import struct
import time
import zlib
from collections import OrderedDict

import numpy as np
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context

import tritongrad as tg
from tritongrad import nn
from tritongrad.serialization import UnpicklingError, load, save

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PREFIX = struct.Struct("<8sIIQ")


def _base_object():
    shared = tg.arange(6.0).reshape(2, 3)
    half = tg.tensor([1.5, -2.0, 0.25], dtype=tg.bfloat16)
    mask = tg.tensor([True, False, True])
    return {
        "w": shared,
        "again": shared,
        "t": shared.t(),  # views of w's storage: saved with it, sharing it after a load
        "row": shared[1],
        "cols": shared[:, ::2],
        "steps": tg.arange(10, dtype=tg.int64)[1::3],
        "expanded": tg.tensor([1.0, 2.0]).unsqueeze(1).expand(2, 3),
        "mask": mask,
        "mask tail": mask[1:],
        "half": half,
        "half view": half[1:],
        "ints": tg.arange(4, dtype=tg.int32),
        "empty": tg.zeros(0, 3),
        "scalar": tg.tensor(7.0),
        "param": nn.Parameter(tg.ones(2)),
        "meta": ("x", 1, 2.5, None, True, b"\x00\x01", float("nan"), tg.float16,
                 tg.device("cpu")),
        "nested": OrderedDict([("k", [1, [2, 3]]), (4, {"deep": ()})]),
    }


@functools.cache
def _base():
    """The base object, its file, the file's header (parsed) and its data section."""
    obj = _base_object()
    buf = io.BytesIO()
    save(obj, buf)
    data = buf.getvalue()
    hlen = PREFIX.unpack_from(data)[3]
    header = json.loads(data[PREFIX.size:PREFIX.size + hlen])
    start = PREFIX.size + hlen + -(PREFIX.size + hlen) % 64
    return obj, data, header, data[start:]


def _with_crc(data: bytes) -> bytes:
    """``data`` with its header checksum recomputed, where its header length is in range."""
    if len(data) < PREFIX.size:
        return data
    hlen = PREFIX.unpack_from(data)[3]
    if PREFIX.size + hlen > len(data):
        return data
    crc = zlib.crc32(data[PREFIX.size:PREFIX.size + hlen])
    return data[:12] + struct.pack("<I", crc) + data[16:]


def _file(header, section: bytes, version: int = 2) -> bytes:
    """A file of format ``version`` with ``header`` (a JSON value) and data section
    ``section``, its header length, checksum and padding consistent."""
    h = json.dumps(header).encode()
    prefix = PREFIX.pack(b"\x89TGSAVE\n", version, zlib.crc32(h), len(h))
    return prefix + h + b"\0" * (-(len(prefix) + len(h)) % 64) + section


def _same(a, b) -> bool:
    """Deep equality that treats tensors by class, dtype, shape, requires_grad and values,
    and NaN as equal to NaN."""
    if type(a) is not type(b):
        return False
    if isinstance(a, tg.Tensor):
        if (a.dtype, tuple(a.shape), a.requires_grad, a.stride(), a.storage_offset()) != (
                b.dtype, tuple(b.shape), b.requires_grad, b.stride(), b.storage_offset()):
            return False
        if a.dtype is tg.bfloat16:
            a, b = a.float(), b.float()
        return np.array_equal(a.detach().numpy(), b.detach().numpy(),
                              equal_nan=a.dtype.is_floating_point or a.dtype.is_complex)
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict):
        return len(a) == len(b) and all(_same(ka, kb) and _same(a[ka], b[kb])
                                        for ka, kb in zip(a, b))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def _tensors(obj) -> list:
    """The tensors in ``obj`` (dicts, lists and tuples of them), in order."""
    if isinstance(obj, tg.Tensor):
        return [obj]
    if isinstance(obj, dict):
        return [t for k, v in obj.items() for t in _tensors(k) + _tensors(v)]
    if isinstance(obj, (list, tuple)):
        return [t for v in obj for t in _tensors(v)]
    return []


def _sharing(obj) -> list:
    """Which of ``obj``'s tensors (by position) are one object, and which share memory:
    for each, the position of the first that is the same object and of the first viewing
    the same storage (empty ones aside: NumPy may give two empty arrays one address)."""
    ts = _tensors(obj)
    first_obj: dict = {}
    first_storage: dict = {}
    out = []
    for i, t in enumerate(ts):
        key = (str(t.device), t.untyped_storage().data_ptr()) if t.untyped_storage().nbytes(
            ) else ("empty", i)
        out.append((first_obj.setdefault(id(t), i), first_storage.setdefault(key, i)))
    return out


def _event(what: str) -> None:
    """Tallies outcomes for ``pytest --hypothesis-show-statistics``."""
    if currently_in_test_context():
        event(what)


def _load_or_refuse(data: bytes):
    """Loads ``data``; returns the object, or None where it was refused with
    UnpicklingError (any other exception fails the test). A loaded object must survive
    another save and load unchanged."""
    t0 = time.perf_counter()
    try:
        out = load(data, map_location="cpu")
    except UnpicklingError as exc:
        _event(f"refused: {str(exc).split(': ', 2)[-1][:40]}")
        return None
    finally:
        assert time.perf_counter() - t0 < 10, "load took more than 10 s on a tiny file"
    _event("loaded")
    buf = io.BytesIO()
    save(out, buf)
    again = load(buf.getvalue())
    assert _same(again, out) and _sharing(again) == _sharing(out)
    return out


def test_base_file_loads_back_equal():
    obj, data, header, _ = _base()
    assert header["version"] == 2 and len(header["storages"]) < len(header["tensors"])
    out = _load_or_refuse(data)
    assert out is not None and _same(out, obj) and out["w"] is out["again"]
    assert _sharing(out) == _sharing(obj)
    out["w"][1, 0] = -1.0  # the views share w's storage again
    assert out["t"][0, 1].item() == -1.0 and out["row"][0].item() == -1.0


def _header_bounds() -> tuple[int, int]:
    _, data, _, _ = _base()
    return PREFIX.size, PREFIX.size + PREFIX.unpack_from(data)[3]


@FUZZ
@given(flips=st.lists(st.tuples(st.integers(0, 10 ** 6), st.integers(1, 255)), min_size=1,
                      max_size=8),
       fix_crc=st.sampled_from([True, True, True, False]))
def test_byte_flips(flips, fix_crc):
    obj, base, _, _ = _base()
    data = bytearray(base)
    for pos, mask in flips:
        data[pos % len(data)] ^= mask
    crc_field = range(12, 16) if fix_crc else range(0)  # rewritten by _with_crc
    changed = [i for i in range(len(data)) if data[i] != base[i] and i not in crc_field]
    data = _with_crc(bytes(data)) if fix_crc else bytes(data)
    out = _load_or_refuse(data)
    lo, hi = _header_bounds()
    if not changed:
        assert out is not None and _same(out, obj)
    elif any(not lo <= i < hi for i in changed):
        # outside the header's JSON every byte is checked: the prefix, the padding and the
        # tensors' bytes (against their checksums)
        assert out is None


@settings(FUZZ, max_examples=100)
@given(cut=st.integers(0, 10 ** 6), extra=st.binary(min_size=1, max_size=100),
       extend=st.booleans())
def test_truncations_and_extensions(cut, extra, extend):
    _, base, _, _ = _base()
    data = base + extra if extend else base[:cut % len(base)]
    assert _load_or_refuse(data) is None


@settings(FUZZ, max_examples=100)
@given(pos=st.integers(0, 10 ** 6), extra=st.binary(min_size=1, max_size=100))
def test_insertions_with_a_valid_header_checksum(pos, extra):
    _, base, _, _ = _base()
    pos %= len(base)
    data = _with_crc(base[:pos] + extra + base[pos:])
    _load_or_refuse(data)


_SCALARS = (st.none() | st.booleans() | st.integers(-(2 ** 70), 2 ** 70)
            | st.sampled_from([0, 1, -1, 3, 63, 64, 2 ** 31, 2 ** 62, 2 ** 63, 2 ** 64])
            | st.floats() | st.text(max_size=8)
            | st.sampled_from(["float32", "bool", "bfloat16", "int32", "cpu", "cuda", "cuda:0",
                               "tensor", "dict", "tuple", "float", "dtype", "device", "bytes",
                               "nan", "-inf", "00ff", "0 1", "tritongrad", "@", "items"]))
_KEYS = st.text(max_size=4) | st.sampled_from(["@", "i", "items", "v", "hex", "ordered"])
JSON = st.recursive(_SCALARS, lambda c: st.lists(c, max_size=4)
                    | st.dictionaries(_KEYS, c, max_size=4), max_leaves=12)


def _paths(node, path=()):
    """Every path to a value inside a JSON value."""
    yield path
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, path + (i,))


@functools.cache
def _header_paths() -> list:
    return list(_paths(_base()[2]))


def _replaced(node, path, value, delete=False):
    """A copy of ``node`` with the value at ``path`` replaced (or its dict key removed)."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    out = dict(node) if isinstance(node, dict) else list(node)
    if delete and not rest:
        del out[head]
    else:
        out[head] = _replaced(node[head], rest, value, delete)
    return out


@FUZZ
@given(data=st.data(), value=JSON, delete=st.booleans())
def test_header_fields_replaced_with_random_json(data, value, delete):
    _, _, header, section = _base()
    path = data.draw(st.sampled_from(_header_paths()[1:] if delete else _header_paths()))
    _load_or_refuse(_file(_replaced(header, path, value, delete), section))


# Values that a geometry field may take to reach past a storage, overflow or go negative
_GEOMETRY = st.sampled_from([0, 1, 2, 3, 5, 6, 9, 10, 11, 12, 63, 64, 2 ** 31, 2 ** 60, 2 ** 61,
                             2 ** 62, 2 ** 63 - 1, 2 ** 63, 2 ** 64, -1, -(2 ** 63)])


@functools.cache
def _geometry_paths() -> list:
    """The paths of every tensor's storage index, storage offset, size and stride in the base
    header (storages' offsets and sizes meet the byte flips and random JSON)."""
    return [p for p in _header_paths() if len(p) >= 3 and p[0] == "tensors"
            and p[2] in ("storage", "storage_offset", "shape", "stride")
            and not isinstance(_value_at(_base()[2], p), list)]


def _value_at(node, path):
    for k in path:
        node = node[k]
    return node


@FUZZ
@given(data=st.data(), values=st.lists(_GEOMETRY, min_size=1, max_size=3))
def test_geometry_fields_replaced_with_edge_values(data, values):
    _, _, header, section = _base()
    for v in values:
        header = _replaced(header, data.draw(st.sampled_from(_geometry_paths())), v)
    _load_or_refuse(_file(header, section))


@settings(FUZZ, max_examples=100)
@given(which=st.integers(0, 100), pos=st.integers(0, 10 ** 6), mask=st.integers(1, 255))
def test_storage_bytes_changed_with_a_valid_checksum(which, pos, mask):
    _, _, header, section = _base()
    entries = [e for e in header["storages"] if e["nbytes"]]
    i = header["storages"].index(entries[which % len(entries)])
    e = header["storages"][i]
    raw = bytearray(section[e["offset"]:e["offset"] + e["nbytes"]])
    raw[pos % len(raw)] ^= mask
    section = section[:e["offset"]] + bytes(raw) + section[e["offset"] + e["nbytes"]:]
    header = _replaced(header, ("storages", i, "crc32"), zlib.crc32(raw))
    out = _load_or_refuse(_file(header, section))
    if any(t["storage"] == i and t["dtype"] == "bool" for t in header["tensors"]):
        # any change of a bool makes a byte other than 0 and 1
        assert (out is None) == (raw[pos % len(raw)] not in (0, 1))
    else:
        assert out is not None


# -- version 1 files -------------------------------------------------------------------------

_NP = {"float32": "<f4", "float64": "<f8", "float16": "<f2", "bfloat16": "<u2", "int64": "<i8",
       "int32": "<i4", "int16": "<i2", "int8": "i1", "uint8": "u1", "bool": "u1"}


@functools.cache
def _v1_base():
    """The base file as version 1 would hold it (each tensor its own elements, C order,
    computed here from the version 2 file with NumPy), its header and data section."""
    _, _, header, section = _base()
    entries, out = [], b""
    for e in header["tensors"]:
        s = header["storages"][e["storage"]]
        dt = np.dtype(_NP[e["dtype"]])
        flat = np.frombuffer(section, dt, s["nbytes"] // dt.itemsize, s["offset"])
        elems = np.lib.stride_tricks.as_strided(flat[e["storage_offset"]:], e["shape"],
                                                [st * dt.itemsize for st in e["stride"]])
        raw = np.ascontiguousarray(elems).tobytes()
        out += b"\0" * (-len(out) % 64)
        entries.append({"dtype": e["dtype"], "shape": e["shape"], "device": s["device"],
                        "offset": len(out), "nbytes": len(raw), "crc32": zlib.crc32(raw),
                        "requires_grad": e["requires_grad"], "parameter": e["parameter"]})
        out += raw
    v1 = {"format": "tritongrad", "version": 1, "tensors": entries, "data_size": len(out),
          "object": header["object"]}
    return v1, out


def test_v1_base_file_loads_back_equal_without_sharing():
    obj, _, _, _ = _base()
    header, section = _v1_base()
    out = _load_or_refuse(_file(header, section, version=1))
    assert out is not None and out["w"] is out["again"]
    for k, v in obj.items():
        if isinstance(v, tg.Tensor):
            assert out[k].shape == v.shape and out[k].dtype is v.dtype
            np.testing.assert_array_equal(
                (out[k].float() if v.dtype is tg.bfloat16 else out[k]).detach().numpy(),
                (v.float() if v.dtype is tg.bfloat16 else v).detach().numpy())
    assert out["t"].untyped_storage().data_ptr() != out["w"].untyped_storage().data_ptr()


@settings(FUZZ, max_examples=100)
@given(data=st.data(), value=JSON, delete=st.booleans())
def test_v1_header_fields_replaced_with_random_json(data, value, delete):
    header, section = _v1_base()
    paths = list(_paths(header))
    path = data.draw(st.sampled_from(paths[1:] if delete else paths))
    _load_or_refuse(_file(_replaced(header, path, value, delete), section, version=1))
