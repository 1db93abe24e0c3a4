"""tg.save / tg.load (tritongrad/serialization.py, format version 2) preserve views as
PyTorch's do: tensors sharing a storage are saved with it once and load sharing one storage
again, with their offsets and strides; distinct storages never alias after a load. Also:
version 1 files (earlier releases) still load, crafted version 2 geometry is refused with
UnpicklingError, and (dev only, where torch is installed) the sharing after a round trip
matches PyTorch's on the same tensors."""

import io
import json
import struct
import zlib

import numpy as np
import pytest

import tritongrad as tg
from tritongrad import nn
from tritongrad.serialization import MAGIC, UnpicklingError, load, save


def roundtrip(obj, **kw):
    buf = io.BytesIO()
    save(obj, buf)
    return load(buf.getvalue(), **kw)


def saved(obj) -> bytes:
    buf = io.BytesIO()
    save(obj, buf)
    return buf.getvalue()


def header_of(data: bytes) -> dict:
    return json.loads(data[24:24 + struct.unpack_from("<Q", data, 16)[0]])


def storage_key(t) -> tuple:
    return str(t.device), t.untyped_storage().data_ptr()


def sharing(tensors: dict) -> list:
    """The keys of ``tensors`` grouped by the storage they view (sorted groups)."""
    groups: dict = {}
    for k, t in tensors.items():
        groups.setdefault(storage_key(t), []).append(k)
    return sorted(sorted(g) for g in groups.values())


def values(t) -> np.ndarray:
    t = t.detach().cpu()
    return t.float().numpy() if t.dtype is tg.bfloat16 else t.numpy()


def assert_same_geometry(out: dict, src: dict) -> None:
    """Every tensor of ``out`` has its ``src`` twin's values, dtype, shape, strides and storage
    offset, and ``out``'s tensors share storages exactly as ``src``'s do."""
    assert list(out) == list(src)
    for k, t in src.items():
        o = out[k]
        assert (o.dtype, o.shape, o.stride(), o.storage_offset()) == (
            t.dtype, t.shape, t.stride(), t.storage_offset()), k
        np.testing.assert_array_equal(values(o), values(t))
        assert o.untyped_storage().nbytes() == t.untyped_storage().nbytes(), k
    assert sharing(out) == sharing(src)


# -- views round-trip ---------------------------------------------------------------------------

def test_a_slice_and_its_base_share_after_a_load():
    a = tg.arange(6.0)
    d = roundtrip({"a": a, "b": a[2:]})
    d["a"][3] = 100.0
    assert d["b"].tolist() == [2.0, 100.0, 4.0, 5.0]  # PyTorch's result
    d["b"][0] = -1.0
    assert d["a"].tolist() == [0.0, 1.0, -1.0, 100.0, 4.0, 5.0]
    assert d["b"].storage_offset() == 2 and d["b"]._base is None and d["b"].is_leaf


def _views():
    """name -> tensors (some views of others); the geometry of each is PyTorch's."""
    m = tg.arange(12.0).reshape(3, 4)
    r = tg.arange(10.0)
    col = tg.tensor([1.0, 2.0]).unsqueeze(1)
    ints = tg.arange(6, dtype=tg.int64).reshape(2, 3)
    half = tg.arange(8.0).to(tg.bfloat16)
    mask = tg.tensor([True, False, True, True])
    z = tg.tensor([1 + 2j, 3 - 4j, -5j], dtype=tg.complex64)
    return {
        "transpose": {"m": m, "t": m.t()},
        "transpose alone": {"t": m.t()},
        "step slice": {"s": r[1::3]},
        "block": {"m": m, "b": m[1:, ::2]},
        "expand": {"e": col.expand(2, 3)},
        "element": {"m": m, "x": m[1, 2]},
        "odd size-1 stride": {"r": r, "w": r.as_strided((2, 1), (1, 7), 0)},
        "overlapping windows": {"r": r, "w": r.as_strided((4, 3), (2, 1), 1)},
        "empty view": {"r": r, "e": r[3:3]},
        "ints": {"i": ints, "t": ints.t()},
        "bfloat16": {"h": half, "v": half[1::2]},
        "bool": {"m": mask, "v": mask[1:]},
        "complex": {"z": z, "v": z[1:]},
        "two storages": {"m": m, "r": r, "t": m.t(), "s": r[::2]},
    }


@pytest.mark.parametrize("name", list(_views()))
def test_views_round_trip_with_their_geometry_and_sharing(name):
    src = _views()[name]
    assert_same_geometry(roundtrip(src), src)


def test_channels_last_tensors_keep_their_layout():
    x = tg.arange(120.0).reshape(2, 3, 4, 5).contiguous(memory_format=tg.channels_last)
    y = roundtrip({"x": x})["x"]
    assert y.stride() == (60, 1, 15, 3) and y.is_contiguous(memory_format=tg.channels_last)
    np.testing.assert_array_equal(y.numpy(), np.arange(120.0).reshape(2, 3, 4, 5))


def test_each_storage_is_saved_once_and_whole():
    m = tg.arange(12.0).reshape(3, 4)
    h = header_of(saved({"m": m, "t": m.t(), "row": m[1], "again": m}))
    assert h["storages"] == [{"offset": 0, "nbytes": 48, "crc32": zlib.crc32(
        np.arange(12, dtype="<f4").tobytes()), "device": "cpu"}]
    assert [(e["storage"], e["storage_offset"], e["shape"], e["stride"]) for e in h["tensors"]
            ] == [(0, 0, [3, 4], [4, 1]), (0, 0, [4, 3], [1, 4]), (0, 4, [4], [1])]
    assert h["object"]["items"][3][1] == {"@": "tensor", "i": 0}  # "again" is "m"


def test_a_small_view_saves_all_of_its_storage_and_clone_saves_only_it():
    big = tg.randn(10_000)
    data = saved({"v": big[5:7]})
    assert len(data) > 40_000
    v = load(data)["v"]
    assert v.untyped_storage().nbytes() == 40_000 and v.storage_offset() == 5
    np.testing.assert_array_equal(v.numpy(), big[5:7].numpy())
    assert len(saved({"v": big[5:7].clone()})) < 1000


def test_cuda_views_round_trip_on_the_device_and_to_the_cpu():
    from tritongrad import cuda
    if not cuda.is_available():
        pytest.skip("no CUDA device (real or emulated)")
    m = tg.arange(12.0, device="cuda").reshape(3, 4)
    src = {"m": m, "t": m.t(), "s": m[1:, ::2], "other": tg.ones(3, device="cuda")}
    data = saved(src)
    assert {s["device"] for s in header_of(data)["storages"]} == {"cuda:0"}
    on_device = load(data)
    assert all(t.device.type == "cuda" for t in on_device.values())
    assert_same_geometry(on_device, src)
    on_cpu = load(data, map_location="cpu")
    assert all(t.device.type == "cpu" for t in on_cpu.values())
    assert_same_geometry(on_cpu, src)
    assert sharing(on_cpu) == [["m", "s", "t"], ["other"]]
    on_cpu["m"][1, 2] = -7.0
    assert on_cpu["t"][2, 1].item() == -7.0 and on_cpu["s"][0, 1].item() == -7.0


# -- sharing and identity -----------------------------------------------------------------------

def test_tied_parameters_load_as_one_object_and_tied_state_dict_entries_share():
    emb = nn.Embedding(5, 3)
    head = nn.Linear(3, 5, bias=False)
    head.weight = emb.weight
    p = emb.weight
    a, b = roundtrip([p, p])
    assert a is b and isinstance(a, nn.Parameter) and a.requires_grad
    sd = {**{f"emb.{k}": v for k, v in emb.state_dict().items()},
          **{f"head.{k}": v for k, v in head.state_dict().items()}}
    assert sd["emb.weight"] is not sd["head.weight"]  # (detached twice)
    out = roundtrip(sd)
    assert out["emb.weight"] is not out["head.weight"]
    assert sharing(out) == [["emb.weight", "head.weight"]]
    out["emb.weight"][0, 0] = 42.0
    assert out["head.weight"][0, 0].item() == 42.0


def test_distinct_storages_never_alias_after_a_load():
    x = tg.arange(4.0)
    src = {"x": x, "clone": x.clone(), "same values": tg.arange(4.0), "zeros": tg.zeros(0),
           "more zeros": tg.zeros(0), "scalar": tg.tensor(1.0), "scalar 2": tg.tensor(1.0)}
    out = roundtrip(src)
    # (empty storages hold nothing to share: NumPy may give two the same address)
    assert sharing({k: v for k, v in out.items() if v.numel()}) == [
        [k] for k in sorted(src) if src[k].numel()]
    out["x"][0] = 9.0
    assert out["clone"][0].item() == 0.0 and out["same values"][0].item() == 0.0
    assert len(header_of(saved(src))["storages"]) == len(src)


def test_detached_aliases_share_and_keep_requires_grad_and_parameters():
    p = nn.Parameter(tg.randn(4, 3))
    src = {"p": p, "row": p[1], "alias": p.detach(), "frozen": nn.Parameter(
        tg.randn(2), requires_grad=False)}
    out = roundtrip(src)
    assert isinstance(out["p"], nn.Parameter) and out["p"].requires_grad
    assert type(out["row"]) is tg.Tensor and out["row"].requires_grad and out["row"].is_leaf
    assert not out["alias"].requires_grad and type(out["alias"]) is tg.Tensor
    assert isinstance(out["frozen"], nn.Parameter) and not out["frozen"].requires_grad
    assert sharing(out) == [["alias", "p", "row"], ["frozen"]]
    with tg.no_grad():
        out["alias"][1, 0] = 5.0
    assert out["row"][0].item() == 5.0 and out["p"][1, 0].item() == 5.0


def test_a_write_through_one_loaded_tensor_invalidates_what_autograd_saved_of_another():
    # (stricter than PyTorch, whose set_-rebuilt tensors keep separate version counters and
    # would compute this gradient from the changed values without a word)
    p = nn.Parameter(tg.randn(3, 4))
    out = roundtrip({"p": p, "t": p.t()})
    y = out["t"] * out["t"]
    with tg.no_grad():
        out["p"].mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_views_inside_a_pickled_object_share_too():
    m = nn.Linear(3, 2)
    m.register_buffer("view", m.weight.detach()[1])
    back = roundtrip({"model": m}, weights_only=False)["model"]
    with tg.no_grad():
        back.weight[1, 2] = 11.0
    assert back.view[2].item() == 11.0


def test_an_empty_view_past_the_end_is_saved_at_the_end():
    e = tg.arange(6.0).as_strided((0,), (1,), 100)
    h = header_of(saved({"e": e}))
    assert h["tensors"][0]["storage_offset"] == 6
    out = roundtrip({"e": e})["e"]
    assert out.shape == (0,) and out.storage_offset() == 6


# -- map_location -------------------------------------------------------------------------------

def test_a_map_location_callable_gets_each_storage_once():
    m = tg.arange(6.0).reshape(2, 3)
    seen = []

    def fn(s, loc):
        seen.append((tuple(s.shape), s.dtype, loc))
        return s * 10

    out = load(saved({"m": m, "t": m.t(), "b": tg.ones(2, dtype=tg.int32)}), map_location=fn)
    assert seen == [((6,), tg.float32, "cpu"), ((2,), tg.int32, "cpu")]
    assert out["t"].tolist() == [[0.0, 30.0], [10.0, 40.0], [20.0, 50.0]]
    assert sharing(out) == [["b"], ["m", "t"]]
    # a view (an offset into a bigger storage) is copied before views are built over it
    out = load(saved({"m": m, "t": m.t()}),
               map_location=lambda s, loc: tg.cat([tg.full((3,), -1.0), s])[3:])
    assert out["t"].tolist() == m.t().tolist() and sharing(out) == [["m", "t"]]
    with pytest.raises(TypeError, match="map_location returned list for storage 0"):
        load(saved({"m": m, "t": m.t()}), map_location=lambda s, loc: [1])


# -- version 1 files (earlier releases) ---------------------------------------------------------

def v1_file(tensors: list, obj) -> bytes:
    """A version 1 file as earlier releases wrote it: ``tensors`` are (dtype name, shape,
    little-endian bytes, requires_grad, parameter); each its own bytes, 64-byte aligned."""
    entries, section = [], b""
    for dtype, shape, raw, rg, param in tensors:
        section += b"\0" * (-len(section) % 64)
        entries.append({"dtype": dtype, "shape": shape, "device": "cpu",
                        "offset": len(section), "nbytes": len(raw), "crc32": zlib.crc32(raw),
                        "requires_grad": rg, "parameter": param})
        section += raw
    h = json.dumps({"format": "tritongrad", "version": 1, "tensors": entries,
                    "object": obj, "data_size": len(section)}).encode()
    prefix = struct.pack("<8sIIQ", MAGIC, 1, zlib.crc32(h), len(h))
    return prefix + h + b"\0" * (-(len(prefix) + len(h)) % 64) + section


def test_version_1_files_still_load():
    w = np.arange(6, dtype="<f4").reshape(2, 3)
    bf = (np.array([1.0, -2.5], "<f4").view("<u4") >> 16).astype("<u2")
    data = v1_file([("float32", [2, 3], w.tobytes(), True, True),
                    ("float32", [3, 2], np.ascontiguousarray(w.T).tobytes(), False, False),
                    ("bfloat16", [2], bf.tobytes(), False, False),
                    ("bool", [2], b"\1\0", False, False)],
                   {"@": "dict", "ordered": True, "items": [
                       ["w", {"@": "tensor", "i": 0}], ["t", {"@": "tensor", "i": 1}],
                       ["again", {"@": "tensor", "i": 0}], ["h", {"@": "tensor", "i": 2}],
                       ["m", {"@": "tensor", "i": 3}], ["n", 3]]})
    out = load(data)
    assert list(out) == ["w", "t", "again", "h", "m", "n"] and out["n"] == 3
    assert isinstance(out["w"], nn.Parameter) and out["w"].requires_grad
    assert out["again"] is out["w"]
    np.testing.assert_array_equal(out["w"].detach().numpy(), w)
    np.testing.assert_array_equal(out["t"].numpy(), w.T)
    assert out["t"].stride() == (2, 1)  # version 1 stored elements only, C order
    assert out["h"].dtype is tg.bfloat16 and out["h"].float().tolist() == [1.0, -2.5]
    assert out["m"].tolist() == [True, False]
    assert sharing({k: v for k, v in out.items() if k != "n"}) == [
        ["again", "w"], ["h"], ["m"], ["t"]]
    seen = []
    load(data, map_location=lambda s, loc: seen.append(tuple(s.shape)))
    assert seen == [(2, 3), (3, 2), (2,), (2,)]  # per tensor, shaped, as before


def test_version_1_files_are_checked_as_before():
    raw = np.arange(4, dtype="<f4").tobytes()
    data = bytearray(v1_file([("float32", [4], raw, False, False)], {"@": "tensor", "i": 0}))
    data[-1] ^= 1
    with pytest.raises(UnpicklingError, match="tensor 0's data does not match its checksum"):
        load(bytes(data))
    with pytest.raises(UnpicklingError, match="tensor 0's size 16 does not match"):
        load(v1_file([("float32", [5], raw, False, False)], 1))


# -- crafted version 2 files are refused -------------------------------------------------------

def v2_file(storages: list, tensors: list, obj=None, header: dict | None = None) -> bytes:
    """A version 2 file of ``storages`` (raw bytes each, laid out as save lays them out) and
    ``tensors`` (entries; missing fields default to a float32 vector of storage 0), with a
    valid header checksum; ``header`` overrides top-level fields."""
    stored, section = [], b""
    for raw in storages:
        section += b"\0" * (-len(section) % 64)
        stored.append({"offset": len(section), "nbytes": len(raw), "crc32": zlib.crc32(raw),
                       "device": "cpu"})
        section += raw
    full = []
    for e in tensors:
        base = {"storage": 0, "storage_offset": 0, "shape": [4], "stride": [1],
                "dtype": "float32", "requires_grad": False, "parameter": False}
        full.append({k: v for k, v in {**base, **e}.items() if v is not None}
                    if isinstance(e, dict) else e)
    h = {"format": "tritongrad", "version": 2, "storages": stored, "tensors": full,
         "data_size": len(section),
         "object": [{"@": "tensor", "i": i} for i in range(len(full))] if obj is None else obj,
         **(header or {})}
    hb = json.dumps({k: v for k, v in h.items() if v is not None}).encode()
    prefix = struct.pack("<8sIIQ", MAGIC, 2, zlib.crc32(hb), len(hb))
    return prefix + hb + b"\0" * (-(len(prefix) + len(hb)) % 64) + section


F16 = np.arange(4, dtype="<f4").tobytes()  # a storage of 4 float32s, 16 bytes


def test_the_crafting_helper_makes_loadable_files():
    out = load(v2_file([F16], [{}, {"storage_offset": 1, "shape": [2], "stride": [2]}]))
    assert out[0].tolist() == [0.0, 1.0, 2.0, 3.0] and out[1].tolist() == [1.0, 3.0]
    out[0][3] = 7.0
    assert out[1].tolist() == [1.0, 7.0]


def _cases_with_ids(cases: list) -> list:
    """Cases named by what they expect (their bytes make unreadable test ids)."""
    return [pytest.param(*c, id=c[-1] or "control") for c in cases]


@pytest.mark.parametrize("storages, tensors, match", _cases_with_ids([
    ([F16], [{"storage": 1}], "tensor 0's storage 1 is out of range"),
    ([F16], [{"storage": -1}], "storage -1 is out of range"),
    ([F16], [{"storage": True}], "storage True is out of range"),
    ([F16], [{"storage": "0"}], "storage '0' is out of range"),
    ([F16], [{"storage": None}], "tensor 0's entry lacks 'storage'"),
    ([F16], [{"stride": None}], "lacks 'stride'"),
    ([F16], [{"stride": [-1]}], r"tensor 0's stride\[0\] is -1"),
    ([F16], [{"stride": [1.0]}], r"stride\[0\] must be an integer"),
    ([F16], [{"stride": [1, 1]}], "stride must be a list of 1 integers"),
    ([F16], [{"stride": "1"}], "stride must be a list"),
    ([F16], [{"storage_offset": -1}], "storage_offset is -1"),
    ([F16], [{"storage_offset": 1}], r"tensor 0 of size \[4\], stride \[1\] at offset 1 reaches "
                                     r"past the end of storage 0 \(4 elements\)"),
    ([F16], [{"shape": [5]}], "reaches past the end"),
    ([F16], [{"shape": [2, 2], "stride": [3, 1]}], "reaches past the end"),
    ([F16], [{"shape": [0], "storage_offset": 5}], "reaches past the end"),
    ([F16], [{"shape": [2], "stride": [2 ** 62]}], "stride .* is too large for float32"),
    ([F16], [{"shape": [1], "stride": [2 ** 61]}], "too large for float32"),
    ([F16], [{"shape": [1], "stride": [2 ** 64]}], "outside"),
    ([F16], [{"shape": [2 ** 61, 0], "stride": [1, 1]}], "shape .* is too large"),
    ([F16], [{"shape": [1] * 65, "stride": [1] * 65}], "65 dimensions"),
    ([F16], [{"dtype": "float64", "shape": [3]}], "reaches past the end"),
    ([F16[:6]], [{"dtype": "float32", "shape": [1]}], "storage 0 has 6 bytes, not a whole "
                                                      "number of float32 elements"),
    ([F16[:12]], [{"dtype": "float64", "shape": [0]}], "not a whole number of float64"),
    ([F16], [{"dtype": "int32", "requires_grad": True}], "requires grad but has dtype int32"),
    ([F16], [{"dtype": "bool", "shape": [16]}], "storage 0 is bool but holds bytes other"),
    ([b"\0\1\0\1"], [{"dtype": "bool", "shape": [4]}, {"dtype": "uint8", "shape": [1]}],
     None),
    ([F16], [{"dtype": "object"}], "unknown dtype"),
    ([F16], [{"parameter": 0}], "parameter must be true or false"),
    ([F16], [3], "tensor 0's entry must be an object"),
]))
def test_crafted_tensor_entries_are_refused(storages, tensors, match):
    data = v2_file(storages, tensors)
    if match is None:  # (the control: the same bytes viewed fine)
        assert load(data)[0].tolist() == [False, True, False, True]
        return
    with pytest.raises(UnpicklingError, match=match):
        load(data)


def _with_storages(stored: list, section: bytes, tensors=None) -> bytes:
    """A file with storage entries ``stored`` as given (not laid out) over ``section``."""
    tensors = [] if tensors is None else tensors
    h = json.dumps({"format": "tritongrad", "version": 2, "storages": stored,
                    "tensors": tensors, "data_size": len(section), "object": 1}).encode()
    prefix = struct.pack("<8sIIQ", MAGIC, 2, zlib.crc32(h), len(h))
    return prefix + h + b"\0" * (-(len(prefix) + len(h)) % 64) + section


def _s(raw: bytes, offset: int = 0, **kw) -> dict:
    return {"offset": offset, "nbytes": len(raw), "crc32": zlib.crc32(raw), "device": "cpu",
            **kw}


@pytest.mark.parametrize("stored, section, match", _cases_with_ids([
    ([_s(F16, crc32=1)], F16, "storage 0's data does not match its checksum"),
    ([_s(F16, crc32=-1)], F16, "crc32 is -1"),
    ([_s(F16, offset=8)], b"\0" * 8 + F16, "not a multiple of 64"),
    ([_s(F16, device="tpu")], F16, "storage 0's device is not a device"),
    ([_s(F16, nbytes=17)], F16 + b"\0", "checksum"),
    ([_s(F16, nbytes=32)], F16, "beyond the end of the data section"),
    ([_s(F16), _s(F16)], F16, "storage 1's bytes overlap another storage's"),
    ([_s(F16), _s(F16, offset=64)], F16 + b"\1" * 48 + F16, "padding before storage 1"),
    ([_s(F16)], F16 + b"\0" * 4, "4 bytes after the last storage's"),
    ([{"offset": 0}], b"", "storage 0's entry lacks 'nbytes', 'crc32', 'device'"),
    ([[0, 16]], F16, "storage 0's entry must be an object"),
]))
def test_crafted_storage_entries_are_refused(stored, section, match):
    with pytest.raises(UnpicklingError, match=match):
        load(_with_storages(stored, section))


def test_crafted_headers_are_refused():
    with pytest.raises(UnpicklingError, match="lacks 'storages'"):
        load(v2_file([], [], header={"storages": None}))
    with pytest.raises(UnpicklingError, match="'storages' must be a list"):
        load(v2_file([], [], obj=1, header={"storages": {}}))
    with pytest.raises(UnpicklingError, match="version 1 does not match the file's version 2"):
        load(v2_file([], [], obj=1, header={"version": 1}))
    with pytest.raises(UnpicklingError, match="unsupported format version 3"):
        data = bytearray(v2_file([], [], obj=1))
        data[8] = 3
        load(bytes(data))


def test_unreferenced_storages_and_tensors_are_checked_too():
    with pytest.raises(UnpicklingError, match="checksum"):
        load(_with_storages([_s(F16, crc32=0)], F16))
    with pytest.raises(UnpicklingError, match="reaches past the end"):
        load(v2_file([F16], [{"shape": [9]}], obj=1))


def test_unusual_but_valid_geometry_loads():
    # a huge stride on a size-1 dimension, as PyTorch allows: kept as it is
    out = load(v2_file([F16], [{"shape": [2, 1], "stride": [1, 2 ** 40]}]))[0]
    assert out.stride() == (1, 2 ** 40) and out.tolist() == [[0.0], [1.0]]
    # an empty tensor at the very end of its storage, and one over an empty storage
    out = load(v2_file([F16, b""], [{"shape": [0], "storage_offset": 4},
                                    {"storage": 1, "shape": [0, 3], "stride": [3, 1]}]))
    assert out[0].storage_offset() == 4 and out[1].shape == (0, 3)
    # overlapping elements (a stride of 0)
    out = load(v2_file([F16], [{"shape": [3], "stride": [0], "storage_offset": 2}]))[0]
    assert out.tolist() == [2.0, 2.0, 2.0]


def test_a_storage_viewed_as_two_dtypes_loads_a_copy_per_dtype():
    # save never writes this (tritongrad cannot view memory as two dtypes); a file may
    data = v2_file([F16], [{}, {"dtype": "int32"}, {"dtype": "int32", "shape": [2],
                                                    "storage_offset": 2}])
    f, i, j = load(data)
    expected = np.arange(4, dtype="<f4").view("<i4")
    assert i.tolist() == expected.tolist() and j.tolist() == expected[2:].tolist()
    j[0] = 0
    assert i[2].item() == 0 and f[2].item() == 2.0  # the int32 views share; f does not
    i[3] = 5
    assert j[1].item() == 5 and f[3].item() == 3.0


# -- dev only: the same sharing as PyTorch ---------------------------------------------------

def _cases(lib):
    """The same tensors, built with ``lib`` (torch or tritongrad)."""
    m = lib.arange(12.0).reshape(3, 4)
    r = lib.arange(10.0)
    p = lib.nn.Parameter(lib.arange(6.0).reshape(2, 3))
    other = lib.arange(12.0).reshape(3, 4)
    return {"m": m, "t": m.t(), "row": m[1], "block": m[1:, ::2], "x": m[2, 3],
            "r": r, "step": r[1::3], "win": r.as_strided((4, 3), (2, 1), 1),
            "e": lib.ones(2, 1).expand(2, 5), "empty": r[4:4],
            "p": p, "p again": p, "p row": p[1], "p alias": p.detach(),
            "other": other, "clone": m.clone(), "ints": lib.arange(5).reshape(5, 1).t()}


def test_sharing_after_a_load_matches_pytorch():
    torch = pytest.importorskip("torch")
    theirs_src = _cases(torch)
    buf = io.BytesIO()
    torch.save(theirs_src, buf)
    buf.seek(0)
    theirs = torch.load(buf)
    ours = roundtrip(_cases(tg))

    def groups(d):
        out: dict = {}
        for k, t in d.items():
            if t.numel():  # (PyTorch may give an empty tensor's storage any address)
                out.setdefault((str(t.device), t.untyped_storage().data_ptr()), []).append(k)
        return sorted(sorted(g) for g in out.values())

    assert groups(ours) == groups(theirs)
    assert (ours["p"] is ours["p again"]) and (theirs["p"] is theirs["p again"])
    for k in theirs:
        assert ours[k].shape == tuple(theirs[k].shape), k
        assert ours[k].stride() == theirs[k].stride(), k
        if theirs[k].numel():  # (tritongrad's r[4:4] is at offset 0, PyTorch's at 4)
            assert ours[k].storage_offset() == theirs[k].storage_offset(), k
        assert ours[k].untyped_storage().nbytes() == theirs[k].untyped_storage().nbytes(), k
        assert isinstance(ours[k], nn.Parameter) == isinstance(theirs[k], torch.nn.Parameter)
        assert ours[k].requires_grad == theirs[k].requires_grad, k
        np.testing.assert_array_equal(ours[k].detach().numpy(), theirs[k].detach().numpy())
