"""tg.save / tg.load (tritongrad/serialization.py): round trips of nested objects and every
dtype, map_location, and clear errors for malformed, truncated and tampered files."""

import io
import json
import math
import struct
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
    assert not (tmp_path / "model.tg.tmp").exists()


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
    assert header["tensors"][0]["device"] == "cpu" and header["tensors"][0]["dtype"] == "float32"


def test_cuda_tensors_load_to_cpu_with_map_location():
    from tritongrad import cuda
    if not cuda.is_available():
        pytest.skip("no CUDA device (real or emulated)")
    t = tg.arange(4.0, device="cuda")
    out = roundtrip({"t": t}, map_location="cpu")["t"]
    assert out.device == tg.device("cpu") and out.tolist() == [0.0, 1.0, 2.0, 3.0]
    back = roundtrip({"t": t})["t"]
    assert back.device.type == "cuda"


def test_unsupported_objects_are_refused_on_save():
    with pytest.raises(TypeError, match="cannot save an object of type object"):
        roundtrip({"x": object()})
    with pytest.raises(TypeError, match="function"):
        roundtrip([lambda: 1])
    with pytest.raises(ValueError, match="pickle_module"):
        save({}, io.BytesIO(), pickle_module=object())


# -- malformed and tampered files ----------------------------------------------------------------

def _saved(obj=None) -> bytearray:
    buf = io.BytesIO()
    save({"w": tg.arange(10.0), "n": 3} if obj is None else obj, buf)
    return bytearray(buf.getvalue())


def _with_header(header: dict, data: bytes = b"") -> bytes:
    header = {"data_size": len(data), **header}
    h = json.dumps(header).encode()
    prefix = struct.pack("<8sIIQ", MAGIC, 1, zlib.crc32(h), len(h))
    pad = -(len(prefix) + len(h)) % 64
    return prefix + h + b"\0" * pad + data


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


@pytest.mark.parametrize("cut", [10, 30, -1])
def test_truncated_files_are_rejected(cut):
    data = bytes(_saved())
    with pytest.raises(UnpicklingError, match="truncated|magic"):
        load(data[:cut])


def test_appended_bytes_are_rejected():
    with pytest.raises(UnpicklingError, match="appended"):
        load(bytes(_saved()) + b"\0")


def test_foreign_and_empty_files_are_rejected(tmp_path):
    with pytest.raises(UnpicklingError, match="bad magic"):
        load(b"")
    with pytest.raises(UnpicklingError, match="PyTorch"):
        load(b"PK\x03\x04" + b"\0" * 40)
    with pytest.raises(UnpicklingError, match="PyTorch"):
        load(b"\x80\x04\x95" + b"\0" * 40)  # a raw pickle is never unpickled
    data = _saved()
    data[8] = 9
    with pytest.raises(UnpicklingError, match="version 9"):
        load(bytes(data))


@pytest.mark.parametrize("header, match", [
    ({"format": "tritongrad"}, "lacks"),
    ({"format": "tritongrad", "tensors": [], "object": 1, "data_size": "x"}, "data_size"),
    ({"format": "tritongrad", "tensors": [], "object": {"@": "pickle", "v": "..."}},
     "unknown tag"),
    ({"format": "tritongrad", "tensors": [], "object": {"@": "tensor", "i": 0}},
     "out of range"),
    ({"format": "tritongrad", "tensors": [{"dtype": "object", "shape": [1], "offset": 0,
                                           "nbytes": 8, "device": "cpu", "crc32": 0}],
      "object": {"@": "tensor", "i": 0}}, "unknown dtype"),
    ({"format": "tritongrad", "tensors": [{"dtype": "float32", "shape": [-1], "offset": 0,
                                           "nbytes": 4, "device": "cpu", "crc32": 0}],
      "object": {"@": "tensor", "i": 0}}, "invalid shape"),
    ({"format": "tritongrad", "tensors": [{"dtype": "float32", "shape": [4], "offset": 0,
                                           "nbytes": 8, "device": "cpu", "crc32": 0}],
      "object": {"@": "tensor", "i": 0}}, "do not match"),
    ({"format": "tritongrad", "tensors": [{"dtype": "float32", "shape": [1000], "offset": 0,
                                           "nbytes": 4000, "device": "cpu", "crc32": 0}],
      "object": {"@": "tensor", "i": 0}}, "beyond the end"),
    ({"format": "tritongrad", "tensors": [], "object": {"@": "dict", "items": [[[1], 2]]}},
     "unhashable"),
    ({"format": "tritongrad", "tensors": [], "object": {"@": "float", "v": "1e999"}},
     "special float"),
])
def test_crafted_headers_are_rejected(header, match):
    with pytest.raises(UnpicklingError, match=match):
        load(_with_header(header))


def test_invalid_json_header_is_rejected():
    h = b"{not json"
    data = struct.pack("<8sIIQ", MAGIC, 1, zlib.crc32(h), len(h)) + h
    with pytest.raises(UnpicklingError, match="not valid JSON"):
        load(data)
