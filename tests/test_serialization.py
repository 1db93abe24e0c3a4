"""tg.save / tg.load (tritongrad/serialization.py): round trips of nested objects and every
dtype, map_location, atomic symlink-safe saving, and one clear error type (UnpicklingError)
for every malformed, truncated, oversized or tampered file (tests/test_serialization_fuzz.py
fuzzes the same)."""

import io
import json
import math
import os
import pickle
import stat
import struct
import sys
import zlib
from collections import OrderedDict

import numpy as np
import pytest

import tritongrad as tg
from tritongrad import nn
from tritongrad.serialization import MAGIC, UnpicklingError, load, save


def roundtrip(obj, **kw):
    buf = io.BytesIO()
    save(obj, buf)
    return load(buf.getvalue(), **kw)


def test_state_dict_round_trip_through_a_file(tmp_path):
    tg.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.LayerNorm(8), nn.Linear(8, 2))
    path = tmp_path / "model.tg"
    save(model.state_dict(), path)
    sd = load(path)
    assert isinstance(sd, OrderedDict) and list(sd) == list(model.state_dict())
    other = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.LayerNorm(8), nn.Linear(8, 2))
    other.load_state_dict(sd)
    x = tg.randn(3, 4)
    np.testing.assert_array_equal(model(x).detach().numpy(), other(x).detach().numpy())
    save(model.state_dict(), str(path))  # str paths too; overwriting is atomic
    assert os.listdir(tmp_path) == ["model.tg"]


def test_nested_python_values():
    obj = {"a": [1, 2.5, "x", None, True, False], "t": (1, (2, 3)), 7: {"nested": [[]]},
           (1, "k"): -3, "big": 2 ** 70, "nan": float("nan"), "inf": [float("inf"),
                                                                        float("-inf")],
           "bytes": b"\x00\xff", "dtype": tg.bfloat16, "device": tg.device("cpu"),
           "np": np.int64(4)}
    out = roundtrip(obj)
    assert out["a"] == [1, 2.5, "x", None, True, False] and type(out["a"][4]) is bool
    assert out["t"] == (1, (2, 3)) and out[7] == {"nested": [[]]} and out[(1, "k")] == -3
    assert out["big"] == 2 ** 70 and math.isnan(out["nan"])
    assert out["inf"] == [float("inf"), float("-inf")] and out["bytes"] == b"\x00\xff"
    assert out["dtype"] is tg.bfloat16 and out["device"] == tg.device("cpu")
    assert out["np"] == 4 and type(out["np"]) is int
    assert type(roundtrip({"a": 1})) is dict and type(roundtrip(OrderedDict(a=1))) is OrderedDict


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int32",
                                   "int16", "int8", "uint8", "bool"])
def test_every_dtype_round_trips(dtype):
    dt = getattr(tg, dtype)
    src = np.arange(-6, 6).reshape(3, 4)
    if dtype == "bool":
        src = src % 3 == 0
    elif dtype == "uint8":
        src = src + 6
    t = tg.tensor(src, dtype=dt)
    out = roundtrip({"t": t})["t"]
    assert out.dtype is dt and tuple(out.shape) == (3, 4)
    np.testing.assert_array_equal(out.float().numpy() if dtype == "bfloat16" else out.numpy(),
                                  t.float().numpy() if dtype == "bfloat16" else t.numpy())


def test_special_tensors():
    noncontig = tg.arange(12.0).reshape(3, 4).t()
    out = roundtrip([noncontig, tg.tensor(3.5), tg.zeros(0, 5)])
    np.testing.assert_array_equal(out[0].numpy(), noncontig.numpy())
    assert out[1].shape == () and out[1].item() == 3.5 and tuple(out[2].shape) == (0, 5)
    p = nn.Parameter(tg.ones(2))
    r = tg.ones(2, requires_grad=True)
    a, b, c = roundtrip([p, p, r])
    assert isinstance(a, nn.Parameter) and a.requires_grad and a is b  # shared once
    assert type(c) is tg.Tensor and c.requires_grad and c.is_leaf


def test_map_location(tmp_path):
    t = tg.ones(2)
    buf = io.BytesIO()
    save({"t": t}, buf)
    data = buf.getvalue()
    assert load(data, map_location="cpu")["t"].device == tg.device("cpu")
    assert load(data, map_location=tg.device("cpu"))["t"].device == tg.device("cpu")
    assert load(data, map_location={"cpu": "cpu"})["t"].device == tg.device("cpu")
    seen = []
    out = load(data, map_location=lambda s, loc: seen.append(loc) or s * 2)
    assert seen == ["cpu"] and out["t"].tolist() == [2.0, 2.0]
    header = json.loads(data[24:24 + struct.unpack_from("<Q", data, 16)[0]])
    assert header["storages"][0]["device"] == "cpu" and header["tensors"][0]["dtype"] == "float32"


def test_cuda_tensors_load_to_cpu_with_map_location():
    from tritongrad import cuda
    if not cuda.is_available():
        pytest.skip("no CUDA device (real or emulated)")
    t = tg.arange(4.0, device="cuda")
    out = roundtrip({"t": t}, map_location="cpu")["t"]
    assert out.device == tg.device("cpu") and out.tolist() == [0.0, 1.0, 2.0, 3.0]
    back = roundtrip({"t": t})["t"]
    assert back.device.type == "cuda"


def test_unpicklable_objects_are_refused_on_save():
    with pytest.raises(TypeError, match="cannot save an object of type function: .*pickling "
                                        "it failed"):
        roundtrip([lambda: 1])
    with pytest.raises(ValueError, match="pickle_module"):
        save({}, io.BytesIO(), pickle_module=object())


# -- atomic, symlink-safe saving to paths --------------------------------------------------------

def test_save_replaces_the_file_and_leaves_no_temporary_behind(tmp_path):
    path = tmp_path / "ckpt.tg"
    path.write_bytes(b"old contents")
    save({"a": tg.ones(3)}, path)
    assert sorted(os.listdir(tmp_path)) == ["ckpt.tg"]
    assert load(path)["a"].tolist() == [1.0, 1.0, 1.0]


def test_save_does_not_follow_a_symlink_planted_at_a_predictable_temporary_name(tmp_path):
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    path = tmp_path / "ckpt.tg"
    os.symlink(victim, str(path) + ".tmp")
    save({"a": 1}, path)
    assert victim.read_bytes() == b"precious"
    assert os.path.islink(str(path) + ".tmp") and load(path) == {"a": 1}


def test_save_removes_its_temporary_file_on_error(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.tg"
    path.write_bytes(b"old contents")

    def failing_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match="disk full"):
        save({"a": tg.ones(3)}, path)
    assert sorted(os.listdir(tmp_path)) == ["ckpt.tg"] and path.read_bytes() == b"old contents"


@pytest.mark.skipif(os.name != "posix", reason="POSIX permission bits")
def test_saved_file_has_the_permissions_open_would_give(tmp_path):
    umask = os.umask(0o022)
    try:
        save({"a": 1}, tmp_path / "ckpt.tg")
    finally:
        os.umask(umask)
    assert stat.S_IMODE(os.stat(tmp_path / "ckpt.tg").st_mode) == 0o644


def test_save_to_a_file_object_and_load_from_one():
    buf = io.BytesIO()
    save({"a": tg.arange(3.0)}, buf)
    buf.seek(0)
    assert load(buf)["a"].tolist() == [0.0, 1.0, 2.0]


def test_deepest_saveable_objects_load():
    for empty, wrap in (({}, lambda o: {"k": o}), ((), lambda o: (o,)), ([], lambda o: [o])):
        obj = empty
        for _ in range(256):
            obj = wrap(obj)
        assert roundtrip(obj) == obj
        with pytest.raises(ValueError, match="nested too deeply"):
            save(wrap(obj), io.BytesIO())


# -- malformed and tampered files ----------------------------------------------------------------

def _saved(obj=None) -> bytearray:
    buf = io.BytesIO()
    save({"w": tg.arange(10.0), "n": 3} if obj is None else obj, buf)
    return bytearray(buf.getvalue())


# The crafted files below are version 1 files (earlier releases' format, still read): they
# test the checks both versions share and the version 1 reader's own. Version 2's storages and
# views are crafted in tests/test_serialization_views.py.

def _with_header_bytes(h: bytes, data: bytes = b"") -> bytes:
    """A file with header ``h`` (any bytes) and a valid header checksum."""
    prefix = struct.pack("<8sIIQ", MAGIC, 1, zlib.crc32(h), len(h))
    pad = -(len(prefix) + len(h)) % 64
    return prefix + h + b"\0" * pad + data


def _with_header(header: dict, data: bytes = b"") -> bytes:
    """A file with a header of the required fields, ``header`` overriding them (a field set
    to None is left out), and ``data`` as its data section."""
    header = {"format": "tritongrad", "version": 1, "tensors": [], "data_size": len(data),
              **header}
    header = {k: v for k, v in header.items() if v is not None}
    return _with_header_bytes(json.dumps(header).encode(), data)


def _entry(data: bytes = b"", **fields) -> dict:
    """A tensor entry for ``data`` (float32 by default), with ``fields`` overriding."""
    return {"dtype": "float32", "shape": [len(data) // 4], "device": "cpu", "offset": 0,
            "nbytes": len(data), "crc32": zlib.crc32(data), "requires_grad": False,
            "parameter": False, **fields}


def _one_tensor(data: bytes = b"", **fields) -> bytes:
    return _with_header({"tensors": [_entry(data, **fields)], "object": {"@": "tensor", "i": 0}},
                        data)


def test_load_errors_are_pickle_unpickling_errors_naming_the_file(tmp_path):
    path = tmp_path / "bad.tg"
    path.write_bytes(b"not a checkpoint at all")
    with pytest.raises(pickle.UnpicklingError, match=r"load: .*bad\.tg: not a tritongrad") as e:
        tg.load(path)
    assert isinstance(e.value, RuntimeError) and isinstance(e.value, UnpicklingError)
    with pytest.raises(pickle.UnpicklingError, match="load: <bytes>: "):
        load(b"junk")


def test_io_errors_propagate_unchanged(tmp_path):
    with pytest.raises(FileNotFoundError):
        load(tmp_path / "missing.tg")
    with pytest.raises(IsADirectoryError if os.name == "posix" else OSError):
        load(tmp_path)


def test_tampered_tensor_bytes_are_detected():
    data = _saved()
    data[-8] ^= 0x40  # flip a bit inside the (last) tensor's bytes
    with pytest.raises(UnpicklingError, match="checksum"):
        load(bytes(data))


def test_tampered_header_is_detected():
    data = _saved()
    i = data.index(b'"n"')
    data[i + 1] = ord("m")
    with pytest.raises(UnpicklingError, match="header checksum"):
        load(bytes(data))


@pytest.mark.parametrize("cut", [3, 10, 30, -1, -40])
def test_truncated_files_are_rejected(cut):
    data = bytes(_saved())
    with pytest.raises(UnpicklingError, match="truncated"):
        load(data[:cut])


def test_appended_bytes_are_rejected():
    with pytest.raises(UnpicklingError, match="1 bytes were appended"):
        load(bytes(_saved()) + b"\0")


def test_data_size_zero_followed_by_garbage_is_rejected():
    with pytest.raises(UnpicklingError, match="1048576 bytes were appended"):
        load(_with_header({"object": 1, "data_size": 0}, data=os.urandom(1 << 20)))


def test_foreign_and_empty_files_are_rejected():
    with pytest.raises(UnpicklingError, match="empty"):
        load(b"")
    with pytest.raises(UnpicklingError, match="bad magic"):
        load(b"\x89PNG\r\n\x1a\n" + b"\0" * 40)
    with pytest.raises(UnpicklingError, match="PyTorch"):
        load(b"PK\x03\x04" + b"\0" * 40)
    with pytest.raises(UnpicklingError, match="PyTorch"):
        load(b"\x80\x04\x95" + b"\0" * 40)  # a raw pickle is never unpickled
    data = _saved()
    data[8] = 9
    with pytest.raises(UnpicklingError, match="version 9"):
        load(bytes(data))


def test_oversized_header_length_is_rejected():
    data = _saved()
    data[16:24] = struct.pack("<Q", 1 << 40)
    with pytest.raises(UnpicklingError, match="exceeds the limit"):
        load(bytes(data))
    data[16:24] = struct.pack("<Q", 1 << 20)
    with pytest.raises(UnpicklingError, match="exceeds the file size"):
        load(bytes(data))


@pytest.mark.parametrize("opener, closer", [(b"[", b"]"), (b'{"a":', b"}")])
def test_deeply_nested_json_is_rejected_before_parsing(opener, closer):
    h = (b'{"format":"tritongrad","version":1,"tensors":[],"data_size":0,"object":'
         + opener * 100_000 + b"0" + closer * 100_000 + b"}")
    with pytest.raises(UnpicklingError, match="nested more than 771 levels"):
        load(_with_header_bytes(h))


def test_brackets_inside_strings_do_not_count_as_nesting():
    s = '["]\\"' + "[" * 5000
    assert roundtrip({"s": s, "t": ("{" * 5000,)}) == {"s": s, "t": ("{" * 5000,)}


def test_unterminated_string_with_many_escapes_is_rejected_quickly():
    h = b'{"format":"tritongrad","object":"' + b'\\"' * 200_000
    with pytest.raises(UnpicklingError, match="not valid JSON"):
        load(_with_header_bytes(h))


@pytest.mark.parametrize("field", ["object", "data_size"])
def test_huge_integer_is_rejected(field):
    huge = b"9" * 100_000
    fields = {"object": b"1", "data_size": b"0"}
    fields[field] = huge
    h = (b'{"format":"tritongrad","version":1,"tensors":[],"data_size":' + fields["data_size"]
         + b',"object":' + fields["object"] + b"}")
    with pytest.raises(UnpicklingError, match="integer of 100000 digits"):
        load(_with_header_bytes(h))
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)  # even where Python's own limit is lifted
    try:
        with pytest.raises(UnpicklingError, match="integer of 100000 digits"):
            load(_with_header_bytes(h))
    finally:
        sys.set_int_max_str_digits(old)


def test_integers_up_to_the_limit_load():
    assert roundtrip({"big": 10 ** 4299, "neg": -(10 ** 4299)}) == {"big": 10 ** 4299,
                                                                    "neg": -(10 ** 4299)}


def test_too_many_dimensions_are_rejected():
    data = struct.pack("<f", 1.0)
    with pytest.raises(UnpicklingError, match="tensor 0 has 100 dimensions \\(at most 64\\)"):
        load(_one_tensor(data, shape=[1] * 100))
    out = load(_one_tensor(data, shape=[1] * 64))
    assert out.shape == (1,) * 64 and out.sum().item() == 1.0


def test_shape_whose_byte_size_overflows_is_rejected():
    with pytest.raises(UnpicklingError, match="too large for float32"):
        load(_one_tensor(shape=[2 ** 62, 2 ** 62, 0]))
    with pytest.raises(UnpicklingError, match="too large"):
        load(_one_tensor(shape=[2 ** 61, 0]))  # 2**61 float32s are 2**63 bytes
    assert load(_one_tensor(shape=[2 ** 40, 0])).shape == (2 ** 40, 0)


def test_truncated_tensor_data_is_rejected():
    data = np.arange(16, dtype="<f4").tobytes()
    f = _one_tensor(data)
    with pytest.raises(UnpicklingError, match="truncated"):
        load(f[:-4])
    header = {"tensors": [_entry(data)], "object": {"@": "tensor", "i": 0}}
    with pytest.raises(UnpicklingError, match="beyond the end of the data section"):
        load(_with_header(header, data[:32]))  # data_size matches the file, not the tensor


def test_every_byte_of_the_data_section_is_accounted_for():
    a = np.arange(4, dtype="<f4").tobytes()
    two = {"tensors": [_entry(a), _entry(a, offset=64)],
           "object": [{"@": "tensor", "i": 0}, {"@": "tensor", "i": 1}]}
    ok = load(_with_header(two, a + b"\0" * 48 + a))
    assert [t.tolist() for t in ok] == [[0.0, 1.0, 2.0, 3.0]] * 2
    with pytest.raises(UnpicklingError, match="padding before tensor 1"):
        load(_with_header(two, a + b"\1" * 48 + a))
    with pytest.raises(UnpicklingError, match="overlap"):
        load(_with_header({**two, "tensors": [_entry(a), _entry(a)]}, a))
    with pytest.raises(UnpicklingError, match="16 bytes after the last"):
        load(_with_header({**two, "tensors": [_entry(a)]}, a + b"\0" * 16))
    data = _saved()
    data[data.index(b"}\0") + 1] = 7  # the padding after the header
    with pytest.raises(UnpicklingError, match="padding after the header"):
        load(bytes(data))


def test_bool_tensors_hold_only_zeros_and_ones():
    assert load(_one_tensor(b"\0\1", dtype="bool", shape=[2])).tolist() == [False, True]
    with pytest.raises(UnpicklingError, match="bool but holds bytes other than 0 and 1"):
        load(_one_tensor(b"\0\2", dtype="bool", shape=[2]))


TENSOR = {"@": "tensor", "i": 0}


@pytest.mark.parametrize("header, match", [
    ({"object": 1, "version": None}, "lacks 'version'"),
    ({"object": None}, "lacks 'object'"),
    ({"object": 1, "format": "pytorch"}, "format is 'pytorch'"),
    ({"object": 1, "version": 2}, "version 2 does not match"),
    ({"object": 1, "version": True}, "version True"),
    ({"object": 1, "tensors": {}}, "'tensors' must be a list"),
    ({"object": 1, "data_size": "x"}, "data_size must be an integer"),
    ({"object": 1, "data_size": -1}, "data_size is -1"),
    ({"object": 1, "data_size": 1.0}, "data_size must be an integer"),
    ({"object": {"@": "pickle", "v": "..."}}, "invalid bytes value None"),
    ({"object": {"@": "pickle", "type": "x.Y", "hex": "8004"}}, "'x.Y' could not be unpickled"),
    ({"object": {"@": "pickle", "hex": pickle.dumps(object()).hex()}},
     "(?s)Weights only load failed.*GLOBAL builtins.object was not an allowed global"),
    ({"object": {"@": "pickle", "hex": "8004950000000000000000"}}, "could not be unpickled"),
    ({"object": {"@": ["tensor"]}}, "unknown tag"),
    ({"object": {}}, "unknown tag None"),
    ({"object": TENSOR}, "out of range"),
    ({"object": {"@": "tensor", "i": True}}, "out of range"),
    ({"object": {"@": "dict", "items": [[[1], 2]]}}, "unhashable"),
    ({"object": {"@": "dict", "items": [[1]]}}, "pair"),
    ({"object": {"@": "dict", "items": {}}}, "list of pairs"),
    ({"object": {"@": "dict", "items": [], "ordered": 1}}, "'ordered' must be true or false"),
    ({"object": {"@": "tuple", "items": None}}, "tuple's items"),
    ({"object": {"@": "float", "v": "1e999"}}, "special float"),
    ({"object": {"@": "dtype", "v": ["float32"]}}, "unknown dtype"),
    ({"object": {"@": "dtype", "v": "object"}}, "unknown dtype"),
    ({"object": {"@": "device", "v": "gpu"}}, "not a device"),
    ({"object": {"@": "device", "v": "cuda:01"}}, "not a device"),
    ({"object": {"@": "device", "v": {"type": "cpu"}}}, "not a device"),
    ({"object": {"@": "bytes", "hex": "0 1"}}, "invalid bytes"),
    ({"object": {"@": "bytes", "hex": "abc"}}, "invalid bytes"),
    ({"object": {"@": "bytes", "hex": 12}}, "invalid bytes"),
    ({"tensors": [3], "object": 1}, "tensor 0's entry must be an object"),
    ({"tensors": [{"dtype": "float32"}], "object": 1}, "lacks 'shape', 'device'"),
    ({"tensors": [_entry(dtype="object")], "object": TENSOR}, "unknown dtype 'object'"),
    ({"tensors": [_entry(dtype=None)], "object": TENSOR}, "unknown dtype None"),
    ({"tensors": [_entry(shape=[-1])], "object": TENSOR}, r"shape\[0\] is -1"),
    ({"tensors": [_entry(shape=[1.0])], "object": TENSOR}, "must be an integer"),
    ({"tensors": [_entry(shape="4")], "object": TENSOR}, "invalid shape"),
    ({"tensors": [_entry(shape=[2 ** 64])], "object": TENSOR}, "outside"),
    ({"tensors": [_entry(shape=[4], nbytes=8)], "object": TENSOR}, "does not match its shape"),
    ({"tensors": [_entry(nbytes=-4, shape=[-1])], "object": TENSOR}, "is -1"),
    ({"tensors": [_entry(offset=-64)], "object": TENSOR}, "offset is -64"),
    ({"tensors": [_entry(offset=8)], "object": TENSOR}, "not a multiple of 64"),
    ({"tensors": [_entry(shape=[1000], nbytes=4000)], "object": TENSOR}, "beyond the end"),
    ({"tensors": [_entry(crc32=2 ** 32)], "object": TENSOR}, "crc32 is 4294967296"),
    ({"tensors": [_entry(crc32=1)], "object": TENSOR}, "checksum"),
    ({"tensors": [_entry(device="tpu")], "object": TENSOR}, "device is not a device"),
    ({"tensors": [_entry(device=0)], "object": TENSOR}, "device is not a device"),
    ({"tensors": [_entry(requires_grad=1)], "object": TENSOR}, "must be true or false"),
    ({"tensors": [_entry(parameter=None)], "object": TENSOR}, "must be true or false"),
    ({"tensors": [_entry(dtype="int64", shape=[0], requires_grad=True)], "object": TENSOR},
     "requires grad but has dtype int64"),
])
def test_crafted_headers_are_rejected(header, match):
    with pytest.raises(UnpicklingError, match=match):
        load(_with_header(header))


@pytest.mark.parametrize("literal", [b"NaN", b"Infinity", b"-Infinity", b"1e400"])
def test_non_finite_json_numbers_are_rejected(literal):
    h = b'{"format":"tritongrad","version":1,"tensors":[],"data_size":0,"object":' + literal + b"}"
    with pytest.raises(UnpicklingError, match="not JSON|out-of-range"):
        load(_with_header_bytes(h))


def test_invalid_json_header_is_rejected():
    with pytest.raises(UnpicklingError, match="not valid JSON"):
        load(_with_header_bytes(b"{not json"))
    with pytest.raises(UnpicklingError, match="not valid JSON"):
        load(_with_header_bytes(b'{"a": "\xff"}'))
    with pytest.raises(UnpicklingError, match="must be a JSON object"):
        load(_with_header_bytes(b"[]"))


def test_unreferenced_tensors_are_checked_too():
    with pytest.raises(UnpicklingError, match="checksum"):
        load(_with_header({"tensors": [_entry(b"\0" * 4, crc32=0)], "object": 1}, b"\0" * 4))


def test_map_location_errors_are_the_callers():
    data = bytes(_saved())
    with pytest.raises(RuntimeError, match="device type") as e:
        load(data, map_location="tpu")
    assert not isinstance(e.value, UnpicklingError)
    with pytest.raises(TypeError, match="map_location"):
        load(data, map_location=3.5)


def test_python_pickle_of_tensors_dtypes_and_modules():
    # pickle itself (not tg.save): dtypes and memory formats come back as the singletons, and
    # a module with plain-tensor buffers (BatchNorm's running statistics) round-trips
    for obj in (*[getattr(tg, n) for n in ("bool", "float32", "bfloat16", "int64")],
                tg.channels_last):
        assert pickle.loads(pickle.dumps(obj)) is obj
    x = pickle.loads(pickle.dumps(tg.tensor([[1.5, -2.0]], dtype=tg.float64)))
    assert x.dtype is tg.float64 and x.tolist() == [[1.5, -2.0]]
    bn = nn.BatchNorm1d(3)
    bn(tg.randn(4, 3))
    back = pickle.loads(pickle.dumps(bn))
    np.testing.assert_array_equal(back.running_mean.numpy(), bn.running_mean.numpy())
    assert back.num_batches_tracked.item() == 1


# -- pickled objects (a whole module, a user's class) ----------------------------------------------

class Tagged(nn.Module):
    """A user's module with a non-tensor attribute: saved whole, it is pickled."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 3)
        self.register_buffer("steps", tg.tensor(4))
        self.labels = {"cat", "dog"}

    def forward(self, x):
        return self.fc(x)


def test_whole_module_round_trip_needs_trust_or_an_allowlist():
    m = Tagged()
    data = io.BytesIO()
    save({"model": m, "epoch": 3, "tied": m.fc.weight}, data)
    raw = data.getvalue()
    with pytest.raises(UnpicklingError, match=r"(?s)Weights only load failed.*GLOBAL "
                                              r"(tests\.)?test_serialization\.Tagged was not "
                                              r"an allowed global.*add_safe_globals\(\[Tagged"
                                              r"\]\)"):
        load(raw)
    back = load(raw, weights_only=False)
    assert back["epoch"] == 3 and type(back["model"]) is Tagged
    assert back["model"].labels == {"cat", "dog"}
    assert back["tied"] is back["model"].fc.weight  # one tensor, stored once
    assert isinstance(back["model"].fc.weight, nn.Parameter)
    x = tg.randn(4, 2)
    np.testing.assert_array_equal(back["model"](x).detach().numpy(), m(x).detach().numpy())
    assert back["model"].steps.item() == 4
    with tg.serialization.safe_globals([Tagged, nn.Linear]):
        again = load(raw)
        assert type(again["model"]) is Tagged
    assert Tagged not in tg.serialization.get_safe_globals()
    with pytest.raises(UnpicklingError, match="Weights only load failed"):
        load(raw)
    tg.serialization.add_safe_globals([Tagged, (nn.Linear, "tritongrad.nn.layers.Linear")])
    try:
        assert type(load(raw)["model"]) is Tagged
    finally:
        tg.serialization.clear_safe_globals()


def test_pickled_module_tensors_follow_map_location_and_keep_their_checksums():
    m = Tagged()
    data = io.BytesIO()
    save(m, data)
    back = load(data.getvalue(), weights_only=False, map_location="cuda")
    assert back.fc.weight.device.type == "cuda" and back.steps.device.type == "cuda"
    raw = bytearray(data.getvalue())
    raw[-1] ^= 0xFF  # the last tensor byte: a pickled module's tensors are checked too
    with pytest.raises(UnpicklingError, match="checksum"):
        load(bytes(raw), weights_only=False)


def test_builtin_values_outside_json_load_under_weights_only():
    value = {"s": {1, 2}, "f": frozenset("ab"), "c": 1 + 2j, "r": range(3)}
    assert roundtrip(value) == value
    with pytest.raises(UnpicklingError, match="GLOBAL builtins.object"):
        roundtrip({"x": object()})


def test_a_weights_only_load_runs_no_code_from_the_file(tmp_path):
    marker = tmp_path / "ran"

    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    data = io.BytesIO()
    save({"x": Evil()}, data)
    with pytest.raises(UnpicklingError, match=r"GLOBAL (_?io|builtins)\.open"):
        load(data.getvalue())
    assert not marker.exists()


class UnitTensor(tg.Tensor):
    """A user's Tensor subclass (module-level: pickle finds it by name)."""


def test_a_subclass_instance_loads_as_its_class_with_its_attributes():
    # PyTorch's _rebuild_from_type_v2: the class, the tensor (stored as the file's tensors
    # are: shared storage, views) and the instance's attributes
    s = tg.arange(6.0).reshape(2, 3).as_subclass(UnitTensor)
    s.unit = "m"
    w = tg.ones(2).as_subclass(UnitTensor).requires_grad_()
    p = nn.Parameter(tg.ones(3).as_subclass(UnitTensor))
    buf = io.BytesIO()
    save({"s": s, "views": [s.t(), s], "w": w, "p": p}, buf)
    buf.seek(0)
    r = load(buf, weights_only=False)
    assert type(r["s"]) is UnitTensor and r["s"].unit == "m" and r["views"][1] is r["s"]
    assert type(r["views"][0]) is UnitTensor and r["views"][0].shape == (3, 2)
    r["s"][0, 1] = 100.0  # the view and the tensor share the loaded storage
    assert r["views"][0][1, 0].item() == 100.0
    assert r["w"].requires_grad and r["w"].is_leaf and not r["s"].requires_grad
    assert type(r["p"]) is UnitTensor and isinstance(r["p"], nn.Parameter) and r["p"].requires_grad
    # weights-only: the class must be allowed, as in PyTorch
    buf.seek(0)
    with pytest.raises(UnpicklingError, match="UnitTensor was not an allowed global"):
        load(buf)
    buf.seek(0)
    with tg.serialization.safe_globals([UnitTensor]):
        assert type(load(buf)["s"]) is UnitTensor
