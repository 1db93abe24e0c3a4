"""Fuzzing tg.load (tritongrad/serialization.py) with mutated checkpoints: random byte flips,
truncations, extensions, header fields replaced by random JSON and tensor bytes changed. Every
mutant either loads into objects that save and load again unchanged, or is refused with
UnpicklingError: never another exception, never a hang. Header checksums (and, for tensor
byte changes, the tensor's checksum) are recomputed so that the mutants reach the parser."""

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
    return {
        "w": shared,
        "again": shared,
        "mask": tg.tensor([True, False, True]),
        "half": tg.tensor([1.5, -2.0], dtype=tg.bfloat16),
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


def _file(header, section: bytes) -> bytes:
    """A file with ``header`` (a JSON value) and data section ``section``, its header length,
    checksum and padding consistent."""
    h = json.dumps(header).encode()
    prefix = PREFIX.pack(b"\x89TGSAVE\n", 1, zlib.crc32(h), len(h))
    return prefix + h + b"\0" * (-(len(prefix) + len(h)) % 64) + section


def _same(a, b) -> bool:
    """Deep equality that treats tensors by class, dtype, shape, requires_grad and values,
    and NaN as equal to NaN."""
    if type(a) is not type(b):
        return False
    if isinstance(a, tg.Tensor):
        if (a.dtype, tuple(a.shape), a.requires_grad) != (b.dtype, tuple(b.shape),
                                                           b.requires_grad):
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
    assert _same(load(buf.getvalue()), out)
    return out


def test_base_file_loads_back_equal():
    obj, data, _, _ = _base()
    out = _load_or_refuse(data)
    assert out is not None and _same(out, obj) and out["w"] is out["again"]


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


@settings(FUZZ, max_examples=100)
@given(which=st.integers(0, 100), pos=st.integers(0, 10 ** 6), mask=st.integers(1, 255))
def test_tensor_bytes_changed_with_a_valid_checksum(which, pos, mask):
    _, _, header, section = _base()
    entries = [e for e in header["tensors"] if e["nbytes"]]
    i = header["tensors"].index(entries[which % len(entries)])
    e = header["tensors"][i]
    raw = bytearray(section[e["offset"]:e["offset"] + e["nbytes"]])
    raw[pos % len(raw)] ^= mask
    section = section[:e["offset"]] + bytes(raw) + section[e["offset"] + e["nbytes"]:]
    header = _replaced(header, ("tensors", i, "crc32"), zlib.crc32(raw))
    out = _load_or_refuse(_file(header, section))
    if e["dtype"] == "bool":  # any change of a bool makes a byte other than 0 and 1
        assert (out is None) == (raw[pos % len(raw)] not in (0, 1))
    else:
        assert out is not None
