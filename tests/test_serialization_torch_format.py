"""tg.load of checkpoints in PyTorch's zip format (tritongrad/_torch_format.py), without torch:
files are laid out here as torch.save lays them out (a protocol 2 data.pkl pickled against a
stand-in ``torch`` module, raw storages under data/), and the values, dtypes, geometry,
shared storages, Parameters and state dict metadata must come back; globals outside the
weights-only allowlist are refused. The last test saves with real torch where it is installed
(dev machines) and skips elsewhere (CI)."""

import contextlib
import io
import pickle
import sys
import types
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import tritongrad as tg
from tritongrad import nn
from tritongrad.serialization import UnpicklingError, load

# -- writing PyTorch's layout ------------------------------------------------------------------

STORAGE_TYPES = {"float32": "FloatStorage", "float64": "DoubleStorage",
                 "float16": "HalfStorage", "bfloat16": "BFloat16Storage",
                 "int64": "LongStorage", "int32": "IntStorage", "uint8": "ByteStorage",
                 "bool": "BoolStorage", "complex64": "ComplexFloatStorage"}


class Storage:
    """A storage to write: ``data/<key>`` holding ``raw`` (elements of ``dtype``)."""

    def __init__(self, key: str, dtype: str, raw: bytes, numel: int, location: str = "cpu"):
        self.key, self.dtype, self.raw, self.numel, self.location = (key, dtype, raw, numel,
                                                                      location)


class T:
    """A tensor to write: ``_rebuild_tensor_v2(storage, offset, size, stride, ...)``."""

    def __init__(self, storage, offset, size, stride, requires_grad=False):
        self.args = (storage, offset, size, stride, requires_grad)


class P:
    """A Parameter to write: ``_rebuild_parameter(tensor, requires_grad, OrderedDict())``."""

    def __init__(self, tensor: T, requires_grad=True):
        self.tensor, self.requires_grad = tensor, requires_grad


@contextlib.contextmanager
def stand_in_torch():
    """A fake ``torch`` / ``torch._utils`` in sys.modules while pickling (pickle looks globals
    up by module and name), restored afterwards. Yields the fake torch module."""
    names = ("torch", "torch._utils")
    saved = {n: sys.modules.get(n) for n in names}
    torch = types.ModuleType("torch")
    utils = types.ModuleType("torch._utils")
    for fn in ("_rebuild_tensor_v2", "_rebuild_parameter"):
        f = lambda *a: None  # noqa: E731 (never called: only its name is pickled)
        f.__module__, f.__name__, f.__qualname__ = "torch._utils", fn, fn
        setattr(utils, fn, f)
    for cls in STORAGE_TYPES.values():
        setattr(torch, cls, type(cls, (), {"__module__": "torch"}))
    torch.Size = type("Size", (tuple,), {"__module__": "torch",
                                         "__reduce__": lambda s: (torch.Size, (tuple(s),))})
    torch._utils = utils
    sys.modules.update({"torch": torch, "torch._utils": utils})
    try:
        yield torch
    finally:
        for n, m in saved.items():
            if m is None:
                sys.modules.pop(n, None)
            else:
                sys.modules[n] = m


def torch_zip(obj, name: str = "archive", byteorder: str = "little", pkl: bytes | None = None,
              extra: dict | None = None) -> bytes:
    """``obj`` (with T, P and Storage inside) as torch.save writes it: a zip of
    ``<name>/data.pkl`` (protocol 2), ``byteorder``, ``data/<key>`` and ``version``."""
    storages = {}
    with stand_in_torch() as torch:
        utils = torch._utils

        class Pickler(pickle.Pickler):
            def persistent_id(self, o):
                if isinstance(o, Storage):
                    storages[o.key] = o
                    return ("storage", getattr(torch, STORAGE_TYPES[o.dtype]), o.key,
                            o.location, o.numel)
                return None

            def reducer_override(self, o):
                if isinstance(o, T):
                    s, off, size, stride, rg = o.args
                    return (utils._rebuild_tensor_v2, (s, off, torch.Size(size), tuple(stride),
                                                       rg, OrderedDict()))
                if isinstance(o, P):
                    return (utils._rebuild_parameter, (o.tensor, o.requires_grad,
                                                       OrderedDict()))
                return NotImplemented

        buf = io.BytesIO()
        Pickler(buf, protocol=2).dump(obj)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr(f"{name}/data.pkl", buf.getvalue() if pkl is None else pkl)
        zf.writestr(f"{name}/byteorder", byteorder)
        for s in storages.values():
            zf.writestr(f"{name}/data/{s.key}", s.raw)
        for k, v in (extra or {}).items():
            zf.writestr(f"{name}/{k}", v)
        zf.writestr(f"{name}/version", "3\n")
    return out.getvalue()


def storage_of(key: str, values, dtype: str, byteorder: str = "<") -> Storage:
    """A storage of ``values`` (bfloat16: given as float32, stored as their high halves)."""
    if dtype == "bfloat16":
        a = np.asarray(values, np.float32).view(np.uint32) >> 16
        raw = a.astype(byteorder + "u2").tobytes()
    else:
        raw = np.asarray(values, np.dtype(dtype).newbyteorder(byteorder)).tobytes()
    return Storage(key, dtype, raw, len(values))


# -- tests ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype, values", [
    ("float32", [1.5, -2.0, 3.25]), ("float64", [1e-300, 2.0, -3.0]),
    ("float16", [0.5, -1.0, 65504.0]), ("bfloat16", [1.0, -2.5, 2.0 ** 127]),
    ("int64", [2 ** 62, -1, 0]), ("int32", [7, -7, 2 ** 31 - 1]), ("uint8", [0, 255, 3]),
    ("bool", [True, False, True]), ("complex64", [1 + 2j, -3j, 0.5])])
@pytest.mark.parametrize("byteorder", ["little", "big"])
def test_every_dtype_loads_with_its_values(dtype, values, byteorder):
    s = storage_of("0", values, dtype, "<" if byteorder == "little" else ">")
    t = load(torch_zip({"t": T(s, 0, (3,), (1,))}, byteorder=byteorder))["t"]
    assert t.dtype is getattr(tg, dtype) and t.shape == (3,)
    if dtype == "bfloat16":
        assert t.float().tolist() == values
    else:
        np.testing.assert_array_equal(t.numpy(), np.asarray(values, dtype))


def test_views_share_one_storage_with_offsets_and_strides():
    s = storage_of("0", list(range(12)), "float32")
    sd = load(torch_zip({"whole": T(s, 0, (12,), (1,)), "mid": T(s, 2, (2,), (1,)),
                         "mat_t": T(s, 0, (4, 3), (1, 4)), "tail": T(s, 10, (2, 1), (1, 1))}))
    assert sd["mid"].tolist() == [2.0, 3.0] and sd["mid"].storage_offset() == 2
    assert sd["mat_t"].stride() == (1, 4)
    np.testing.assert_array_equal(sd["mat_t"].numpy(),
                                  np.arange(12, dtype=np.float32).reshape(3, 4).T)
    assert sd["tail"].tolist() == [[10.0], [11.0]]
    sd["mid"].fill_(-1)  # one storage, as in PyTorch: every view sees the write
    assert sd["whole"].tolist()[1:5] == [1.0, -1.0, -1.0, 4.0]
    assert sd["mat_t"][2, 0].item() == -1.0
    assert sd["whole"].untyped_storage().data_ptr() == sd["mid"].untyped_storage().data_ptr()


def test_parameters_requires_grad_and_state_dict_metadata():
    sd = OrderedDict()
    sd["0.weight"] = P(T(storage_of("0", [1.0, 2.0, 3.0, 4.0], "float32"), 0, (2, 2), (2, 1)))
    sd["0.bias"] = T(storage_of("1", [0.5, -0.5], "float32"), 0, (2,), (1,), True)
    sd["1.num_batches_tracked"] = T(storage_of("2", [3], "int64"), 0, (), ())
    sd._metadata = OrderedDict([("", {"version": 1}), ("1", {"version": 2})])
    out = load(torch_zip({"model": sd, "epoch": 4, "names": ("a", "b")}))
    got = out["model"]
    assert type(got) is OrderedDict and list(got) == list(sd)
    assert got._metadata == {"": {"version": 1}, "1": {"version": 2}}
    assert isinstance(got["0.weight"], nn.Parameter) and got["0.weight"].requires_grad
    assert not isinstance(got["0.bias"], nn.Parameter) and got["0.bias"].requires_grad
    assert got["1.num_batches_tracked"].shape == () and got["1.num_batches_tracked"].item() == 3
    assert out["epoch"] == 4 and out["names"] == ("a", "b")
    lin = nn.Linear(2, 2)
    lin.load_state_dict({"weight": got["0.weight"], "bias": got["0.bias"]})
    assert lin.weight.tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_any_archive_name_and_extra_records_are_accepted():
    s = storage_of("0", [1.0], "float32")
    data = torch_zip([T(s, 0, (1,), (1,))], name="pretrained",
                     extra={".format_version": "1", ".storage_alignment": "64",
                            ".data/serialization_id": "123"})
    assert load(data)[0].tolist() == [1.0]


def test_map_location_applies_per_storage():
    s = Storage("0", "float32", np.ones(2, np.float32).tobytes(), 2, location="cuda:0")
    data = torch_zip([T(s, 0, (2,), (1,)), T(s, 1, (1,), (1,))])
    a, b = load(data, map_location="cpu")
    assert a.device.type == "cpu" and a.tolist() == [1.0, 1.0]
    seen = []
    a, b = load(data, map_location=lambda t, loc: seen.append(loc) or t)
    assert seen == ["cuda:0"]  # one storage: one call
    a, _ = load(data, map_location={"cuda:0": "cpu"})
    assert a.device.type == "cpu"
    mps = Storage("0", "float32", b"\0" * 4, 1, location="mps")
    with pytest.raises(RuntimeError, match="'mps'.*map_location"):
        load(torch_zip([T(mps, 0, (1,), (1,))]))
    assert load(torch_zip([T(mps, 0, (1,), (1,))]), map_location="cpu")[0].tolist() == [0.0]


def test_disallowed_global_raises_the_weights_only_error():
    evil = b"\x80\x02cos\nsystem\nX\x04\x00\x00\x00trueq\x00\x85q\x01Rq\x02."
    data = torch_zip(None, pkl=evil)
    with pytest.raises(UnpicklingError, match="(?s)Weights only load failed.*GLOBAL os.system "
                                              "was not an allowed global"):
        load(data)
    with pytest.raises(UnpicklingError, match="Weights only"):
        load(torch_zip(None, pkl=b"\x80\x02c__builtin__\neval\nq\x00."))


def test_torch_objects_outside_the_allowlist_are_named_even_when_trusted():
    pkl = b"\x80\x02ctorch.nn.modules.linear\nLinear\nq\x00."
    with pytest.raises(UnpicklingError, match="Weights only"):
        load(torch_zip(None, pkl=pkl))
    with pytest.raises(UnpicklingError, match="GLOBAL torch.nn.modules.linear.Linear, a "
                                              "PyTorch object tritongrad cannot rebuild"):
        load(torch_zip(None, pkl=pkl), weights_only=False)
    # a trusted non-torch global is imported, as a plain unpickler would
    assert load(torch_zip(None, pkl=b"\x80\x02cfractions\nFraction\nK\x03\x85R."),
                weights_only=False) == 3


def test_build_is_refused_on_anything_but_plain_containers():
    # a tensor (from a real rebuild) with its internals overwritten by BUILD
    s = storage_of("0", [1.0], "float32")
    good = torch_zip(T(s, 0, (1,), (1,)))
    pkl = zipfile.ZipFile(io.BytesIO(good)).read("archive/data.pkl")
    evil = pkl[:-1] + b"}X\x05\x00\x00\x00_databb."
    with pytest.raises(UnpicklingError, match="Weights only"):
        load(torch_zip(T(s, 0, (1,), (1,)), pkl=evil))


@pytest.mark.parametrize("args, match", [
    ((0, (13,), (1,)), "reaches past the end of storage 0"),
    ((11, (2,), (1,)), "reaches past the end"),
    ((0, (4, 4), (4, 1)), "reaches past the end"),
    ((13, (0,), (1,)), "reaches past the end"),
    ((-1, (2,), (1,)), "storage offset is -1"),
    ((0, (2,), (-1,)), "stride is -1"),
    ((0, (2, 2), (1,)), "differ in length"),
    # (a float in the pickled torch.Size: refused by Size itself, as by PyTorch's)
    ((0, (2.0,), (1,)), "must be an integer|Size.. takes an iterable of 'int'"),
    # (checks shared with tg.load's own format: serialization.check_view)
    ((0, (1,), (2 ** 62,)), r"stride \[4611686018427387904\] is too large for float32"),
    ((0, (2 ** 61, 0), (1, 1)), "shape .* is too large for float32"),
])
def test_malformed_geometry_is_refused(args, match):
    s = storage_of("0", list(range(12)), "float32")
    with pytest.raises(UnpicklingError, match=match):
        load(torch_zip([T(s, *args)]))


def test_damaged_archives_are_refused():
    s = storage_of("0", [1.0, 2.0], "float32")
    short = Storage("0", "float32", b"\0" * 4, 2)
    with pytest.raises(UnpicklingError, match="has 4 bytes, its tensors' type and size say 8"):
        load(torch_zip([T(short, 0, (2,), (1,))]))
    data = bytearray(torch_zip([T(s, 0, (2,), (1,))]))
    i = data.index(np.float32(2.0).tobytes())
    data[i] ^= 1  # the zip's CRC-32 of the storage no longer matches
    with pytest.raises(UnpicklingError, match="damaged"):
        load(bytes(data))
    with pytest.raises(UnpicklingError, match="PyTorch"):
        load(b"PK\x03\x04" + b"\0" * 40)
    with pytest.raises(UnpicklingError, match="bool but holds bytes other than 0 and 1"):
        load(torch_zip([T(Storage("0", "bool", b"\2", 1), 0, (1,), (1,))]))
    with pytest.raises(UnpicklingError, match="unknown byte order"):
        load(torch_zip([T(s, 0, (2,), (1,))], byteorder="middle"))
    missing = torch_zip([T(s, 0, (2,), (1,))])
    with zipfile.ZipFile(io.BytesIO(missing)) as zf:
        pkl = zf.read("archive/data.pkl")
    with pytest.raises(UnpicklingError, match="lacks storage 0"):
        load(torch_zip(None, pkl=pkl))


def test_legacy_format_is_named_in_the_error():
    legacy = pickle.dumps(0x1950A86A20F9469CFC6C, protocol=2)  # the legacy magic number
    with pytest.raises(UnpicklingError, match="legacy format"):
        load(legacy)


# -- real PyTorch (dev only) ---------------------------------------------------------------------

def _as_numpy(t):
    return t.detach().float().numpy() if t.dtype is tg.bfloat16 else t.detach().numpy()


def test_real_torch_checkpoints_load(tmp_path):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    seq = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    seq(torch.randn(5, 3))  # running stats and num_batches_tracked move
    lstm = torch.nn.LSTM(3, 5, num_layers=2)
    base = torch.arange(12.0)
    ckpt = {"seq": seq.state_dict(), "lstm": lstm.state_dict(),
            "bf16": torch.randn(7).to(torch.bfloat16), "base": base, "view": base[3:9:2],
            "t": torch.randn(3, 4).t(), "param": torch.nn.Parameter(torch.randn(2)),
            "ints": torch.arange(5, dtype=torch.int32), "mask": torch.tensor([True, False]),
            "c": torch.randn(2, dtype=torch.complex64), "step": 10, "dtype": torch.float16,
            "size": torch.Size([2, 3])}
    path = tmp_path / "ckpt.pt"
    torch.save(ckpt, path)
    got = load(path)

    def compare(ours, theirs):
        if isinstance(theirs, torch.Tensor):
            assert ours.shape == tuple(theirs.shape) and ours.stride() == theirs.stride()
            assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
            assert isinstance(ours, nn.Parameter) == isinstance(theirs, torch.nn.Parameter)
            np.testing.assert_array_equal(_as_numpy(ours), theirs.detach().float().numpy()
                                          if theirs.dtype == torch.bfloat16
                                          else theirs.detach().numpy())
        elif isinstance(theirs, dict):
            assert list(ours) == list(theirs)
            for k in theirs:
                compare(ours[k], theirs[k])
    compare(got, ckpt)
    assert got["dtype"] is tg.float16 and tuple(got["size"]) == (2, 3) and got["step"] == 10
    assert got["seq"]._metadata == ckpt["seq"]._metadata
    got["view"].fill_(-1)  # one storage in the file: the view and its base share it again
    assert got["base"].tolist()[3:6] == [-1.0, 4.0, -1.0]
    net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    net.load_state_dict(got["seq"])
    net.eval(), seq.eval()
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    np.testing.assert_allclose(net(tg.tensor(x)).detach().numpy(),
                               seq(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
    ours = nn.LSTM(3, 5, num_layers=2)
    ours.load_state_dict(got["lstm"])
    seq_in = np.random.default_rng(1).standard_normal((4, 1, 3)).astype(np.float32)
    np.testing.assert_allclose(ours(tg.tensor(seq_in))[0].detach().numpy(),
                               lstm(torch.tensor(seq_in))[0].detach().numpy(), rtol=1e-5,
                               atol=1e-6)
