"""State dicts to and from safetensors files: every dtype round-trips bit for bit (bfloat16
as BF16 bit patterns), files interoperate with the safetensors package's own NumPy API, the
header is what the format specifies, and errors name the problem."""

import json
import struct
import sys

import numpy as np
import pytest

import tritongrad as tg
from tritongrad import nn

safetensors = pytest.importorskip("safetensors")
st_numpy = pytest.importorskip("safetensors.numpy")
from tritongrad.utils.safetensors import load, load_file, load_metadata, save, save_file


def header(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8:8 + n]), raw[8 + n:]


def sample():
    return {
        "f32": tg.tensor([[1.5, -2.0, 3.25]], dtype=tg.float32),
        "f64": tg.tensor([1e-300, np.pi], dtype=tg.float64),
        "f16": tg.tensor([0.5, 65504.0], dtype=tg.float16),
        "bf16": tg.tensor([1.0, -3.140625, 1e38, 0.0078125], dtype=tg.bfloat16),
        "i64": tg.tensor([-(2 ** 62), 7]),
        "i32": tg.tensor([1, -2], dtype=tg.int32),
        "i16": tg.tensor([300], dtype=tg.int16),
        "i8": tg.tensor([-5], dtype=tg.int8),
        "u8": tg.tensor([255], dtype=tg.uint8),
        "bool": tg.tensor([True, False, True]),
        "scalar": tg.tensor(2.5),
        "empty": tg.zeros(0, 3),
    }


def test_every_dtype_round_trips_exactly(tmp_path):
    sd = sample()
    save_file(sd, tmp_path / "a.safetensors")
    back = load_file(tmp_path / "a.safetensors")
    assert set(back) == set(sd)
    for k, t in sd.items():
        assert back[k].dtype == t.dtype and back[k].shape == t.shape, k
        a = t.float().numpy() if t.dtype == tg.bfloat16 else t.numpy()
        b = back[k].float().numpy() if t.dtype == tg.bfloat16 else back[k].numpy()
        np.testing.assert_array_equal(a, b, err_msg=k)


def test_bfloat16_is_stored_as_BF16_bit_patterns(tmp_path):
    save_file({"w": tg.tensor([1.0, -2.0, 0.5], dtype=tg.bfloat16)}, tmp_path / "b.st")
    head, data = header(tmp_path / "b.st")
    assert head["w"] == {"dtype": "BF16", "shape": [3], "data_offsets": [0, 6]}
    # bfloat16 is the upper half of float32: 1.0 = 0x3F80, -2.0 = 0xC000, 0.5 = 0x3F00
    assert np.frombuffer(data[:6], "<u2").tolist() == [0x3F80, 0xC000, 0x3F00]


def test_files_interoperate_with_safetensors_numpy(tmp_path):
    sd = {k: v for k, v in sample().items() if k != "bf16"}
    save_file(sd, tmp_path / "ours.st")
    theirs = st_numpy.load_file(str(tmp_path / "ours.st"))
    for k, t in sd.items():
        np.testing.assert_array_equal(theirs[k], t.numpy(), err_msg=k)
        assert theirs[k].dtype == t.numpy().dtype
    arrays = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.array([1, 2], ">i4")}
    st_numpy.save_file(arrays, str(tmp_path / "theirs.st"))
    back = load_file(tmp_path / "theirs.st")
    assert back["a"].tolist() == arrays["a"].tolist() and back["b"].tolist() == [1, 2]
    assert back["b"].dtype == tg.int32


def test_metadata_bytes_and_non_contiguous_tensors(tmp_path):
    t = tg.arange(12.0).reshape(3, 4).t()  # a transposed view
    save_file({"t": t}, tmp_path / "m.st", metadata={"format": "pt", "step": "3"})
    assert load_metadata(tmp_path / "m.st") == {"format": "pt", "step": "3"}
    assert load_file(tmp_path / "m.st")["t"].tolist() == t.tolist()
    blob = save({"t": t})
    assert load(blob)["t"].tolist() == t.tolist()


def test_a_model_round_trips_through_a_file(tmp_path):
    tg.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 2))
    save_file(model.state_dict(), tmp_path / "model.safetensors")
    fresh = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 2))
    fresh.load_state_dict(load_file(tmp_path / "model.safetensors"))
    x = tg.randn(3, 4)
    assert fresh(x).tolist() == model(x).tolist()


def test_load_to_a_device(tmp_path, device):
    save_file({"w": tg.tensor([1.0, 2.0], dtype=tg.bfloat16)}, tmp_path / "d.st")
    w = load_file(tmp_path / "d.st", device=device)["w"]
    assert w.device.type == device and w.dtype == tg.bfloat16
    assert w.float().cpu().tolist() == [1.0, 2.0]


def test_errors_name_the_problem(tmp_path):
    with pytest.raises(TypeError, match="the value of 'x' must be a Tensor, got list"):
        save_file({"x": [1, 2]}, tmp_path / "e.st")
    with pytest.raises(TypeError, match="'z' has dtype tritongrad.complex128"):
        save_file({"z": tg.zeros(2, dtype=tg.complex128)}, tmp_path / "e.st")
    with pytest.raises(TypeError, match="metadata must be a dict of str -> str"):
        save_file({}, tmp_path / "e.st", metadata={"step": 3})
    st_numpy.save_file({"u": np.array([1], np.uint16)}, str(tmp_path / "u16.st"))
    assert load_file(tmp_path / "u16.st")["u"].dtype is tg.uint16  # (as safetensors.torch)
    header = b'{"f":{"dtype":"F4","shape":[2],"data_offsets":[0,1]}}'
    (tmp_path / "f4.st").write_bytes(len(header).to_bytes(8, "little") + header + b"\x00")
    with pytest.raises(TypeError, match="tensor 'f' has safetensors dtype F4"):
        load_file(tmp_path / "f4.st")


def test_a_missing_package_is_named(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "safetensors", None)
    with pytest.raises(ImportError, match="needs the safetensors package: pip install"):
        save_file({"a": tg.zeros(1)}, tmp_path / "x.st")
