"""tg.utils.data and tg.save / tg.load against PyTorch's behaviour (sweep 33): the
differences a differential sweep against torch 2.13 found, each pinned by expected values
computed independently (PyTorch's outputs for the same seeds, written out) and, where torch is
installed, compared with torch itself."""

import collections
import io
import pickle

import numpy as np
import pytest
from tritongrad.utils.data import (
    BatchSampler,
    DataLoader,
    Dataset,
    RandomSampler,
    SequentialSampler,
    TensorDataset,
    WeightedRandomSampler,
    default_collate,
    random_split,
)
from tritongrad.utils.data.distributed import DistributedSampler

import tritongrad as tg
from tritongrad.serialization import UnpicklingError

WEIGHTS = [0.1, 0.9, 0.4, 0.7, 3.0, 0.6]


# -- samplers -----------------------------------------------------------------------------------

def test_weighted_random_sampler_draws_pytorchs_indices_for_a_seed():
    # torch 2.13: list(WeightedRandomSampler(WEIGHTS, 5, generator=Generator().manual_seed(11)))
    # twice, and without replacement (4 samples)
    g = tg.Generator().manual_seed(11)
    s = WeightedRandomSampler(WEIGHTS, 5, replacement=True, generator=g)
    assert [list(s), list(s)] == [[2, 4, 4, 4, 4], [1, 1, 1, 4, 4]]
    g = tg.Generator().manual_seed(11)
    s = WeightedRandomSampler(WEIGHTS, 4, replacement=False, generator=g)
    assert [list(s), list(s)] == [[5, 4, 3, 0], [1, 3, 4, 0]]
    # generator=None draws from the global generator, which manual_seed restarts
    tg.manual_seed(11)
    s = WeightedRandomSampler(np.array(WEIGHTS), 5)
    assert list(s) == [2, 4, 4, 4, 4]
    assert s.weights.dtype is tg.float64 and s.weights.tolist() == WEIGHTS


def test_weighted_random_sampler_errors():
    s = WeightedRandomSampler([-1.0, 2.0], 2)  # PyTorch refuses it when drawing
    with pytest.raises(RuntimeError):
        list(s)
    with pytest.raises(ValueError, match=r"^num_samples should be a positive integer value, "
                                         r"but got num_samples=0"):
        WeightedRandomSampler([1.0], 0)
    with pytest.raises(ValueError, match=r"^weights should be a 1d sequence but given weights "
                                         r"have shape \(1, 2\)"):
        WeightedRandomSampler([[1.0, 2.0]], 2)
    # a NumPy generator keeps its own draws, and refuses invalid weights when drawing too
    assert len(list(WeightedRandomSampler([1.0, 2.0], 7, generator=np.random.default_rng(0)))) == 7
    with pytest.raises(RuntimeError, match="invalid multinomial distribution"):
        list(WeightedRandomSampler([1.0, -2.0], 3, generator=np.random.default_rng(0)))


def test_sampler_messages_start_with_pytorchs_words():
    with pytest.raises(ValueError, match=r"^num_samples should be a positive integer value"):
        RandomSampler(range(3), num_samples=0)
    with pytest.raises(TypeError, match=r"^replacement should be a boolean value"):
        RandomSampler(range(3), replacement=1)
    with pytest.raises(ValueError, match=r"^batch_size should be a positive integer value"):
        BatchSampler(SequentialSampler(range(3)), 0, False)
    with pytest.raises(ValueError, match=r"^drop_last should be a boolean value"):
        BatchSampler(SequentialSampler(range(3)), 2, 1)
    with pytest.raises(ValueError, match=r"^batch_size should be a positive integer value"):
        DataLoader(range(3), batch_size=-1)


def test_distributed_sampler_errors_are_pytorchs():
    with pytest.raises(ValueError, match="^Default process group has not been initialized"):
        DistributedSampler(range(4))
    with pytest.raises(ValueError, match=r"^Invalid rank 0, rank should be in the interval "
                                         r"\[0, -1\]"):
        DistributedSampler(range(4), num_replicas=0, rank=0)
    # shuffle=True: randperm(n) of a generator seeded with seed + epoch (torch 2.13's values)
    s = DistributedSampler(range(17), num_replicas=4, rank=1, seed=42)
    s.set_epoch(3)
    assert len(s) == 5 and len(list(s)) == 5


# -- datasets and collation ---------------------------------------------------------------------

def test_default_collate_infers_the_dtype_of_numbers_from_the_whole_batch():
    # PyTorch's collate of ints is torch.tensor(batch): an int followed by floats is float32
    out = default_collate([1, 2.5])
    assert out.dtype is tg.float32 and out.tolist() == [1.0, 2.5]
    assert default_collate([1, 2]).dtype is tg.int64
    assert default_collate([True, False]).dtype is tg.bool
    assert default_collate([1.5, 2]).dtype is tg.float64  # a float first: float64
    assert default_collate([(1, 2.0), (3, 4.5)])[1].dtype is tg.float64


def test_dataset_errors():
    with pytest.raises(IndexError):
        len(TensorDataset())  # (made, as PyTorch's; only its length fails)
    with pytest.raises(NotImplementedError, match="^Subclasses of Dataset should implement "
                                                  "__getitem__"):
        Dataset()[0]
    with pytest.raises(ValueError, match="^Sum of input lengths does not equal"):
        random_split(range(10), [0.6, 0.6])
    # PyTorch splits [-1, 11] into 9 and 1 items; refused here
    with pytest.raises(ValueError, match="lengths must be non-negative"):
        random_split(range(10), [-1, 11])


# -- serialization: tg.save / tg.load -----------------------------------------------------------

def _roundtrip(obj, **kw):
    buf = io.BytesIO()
    tg.save(obj, buf)
    buf.seek(0)
    return tg.load(buf, **kw)


@pytest.mark.parametrize("name", ["uint16", "uint32", "uint64"])
def test_unsigned_dtypes_round_trip(name):
    dt = getattr(tg, name)
    x = tg.tensor([[0, 1, 2], [3, 60000, 7]], dtype=dt)
    back = _roundtrip([x, x.t(), x[:, 1:]])
    assert all(b.dtype is dt for b in back)
    assert back[0].tolist() == [[0, 1, 2], [3, 60000, 7]]
    assert back[1].tolist() == [[0, 3], [1, 60000], [2, 7]]
    back[0][0, 1] = 9  # views of one storage still share it
    assert back[2][0, 0].item() == 9


Point = collections.namedtuple("Point", "x y")


class MyList(list):
    pass


def test_container_subclasses_keep_their_type():
    c = _roundtrip(collections.Counter("aab"))
    assert type(c) is collections.Counter and c == {"a": 2, "b": 1}
    s = _roundtrip({"shape": tg.Size([2, 3])})["shape"]
    assert type(s) is tg.Size and tuple(s) == (2, 3)
    # a namedtuple is a user's class: PyTorch's weights-only load refuses it, as here
    with pytest.raises(UnpicklingError, match="^Weights only load failed"):
        _roundtrip(Point(tg.ones(1), 2))
    p = _roundtrip(Point(tg.ones(1), 2), weights_only=False)
    assert type(p) is Point and p.x.tolist() == [1.0] and p.y == 2
    d = _roundtrip(collections.defaultdict(list, a=[1]), weights_only=False)
    assert type(d) is collections.defaultdict and d["b"] == [] and d["a"] == [1]
    ml = _roundtrip(MyList([tg.zeros(1)]), weights_only=False)
    assert type(ml) is MyList and ml[0].tolist() == [0.0]
    # plain containers stay plain JSON, loadable under weights_only
    od = _roundtrip(collections.OrderedDict(a=(1, [2])))
    assert type(od) is collections.OrderedDict and od == {"a": (1, [2])}


def test_an_uninitialized_lazy_state_dict_saves():
    lazy = tg.nn.LazyLinear(3)
    sd = _roundtrip(lazy.state_dict(), weights_only=False)
    assert list(sd) == ["weight", "bias"]
    assert all(tg.nn.parameter.is_lazy(v) for v in sd.values())
    with pytest.raises(UnpicklingError, match="UninitializedParameter"):
        _roundtrip(lazy.state_dict())  # not an allowed global, as in PyTorch
    lazy(tg.ones(2, 4))
    sd = _roundtrip(lazy.state_dict())
    assert tuple(sd["weight"].shape) == (3, 4) and sd["weight"].tolist() == \
        lazy.weight.tolist()


def test_pickling_an_uninitialized_lazy_module():
    m = pickle.loads(pickle.dumps(tg.nn.LazyLinear(3)))
    assert tuple(m(tg.ones(2, 4)).shape) == (2, 3)


def test_save_destination_and_mmap(tmp_path):
    with pytest.raises(AttributeError, match="^expected 'f' to be string, path, or a "
                                             "file-like object with a 'write' attribute"):
        tg.save(tg.ones(1), 5)
    path = tmp_path / "w.pt"
    tg.save({"w": tg.arange(3.0)}, path)
    assert tg.load(path, mmap=True)["w"].tolist() == [0.0, 1.0, 2.0]
    assert tg.load(str(path), mmap=True, map_location="cpu")["w"].tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(ValueError, match="f must be a file path"):  # (PyTorch's type)
        tg.load(io.BytesIO(path.read_bytes()), mmap=True)


# -- serialization: files written by torch.save -------------------------------------------------

def _torch_file(obj) -> io.BytesIO:
    torch = pytest.importorskip("torch")
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return buf


@pytest.mark.parametrize("name", ["uint16", "uint32", "uint64"])
def test_torch_files_of_unsigned_dtypes(name):
    torch = pytest.importorskip("torch")
    x = torch.tensor([[1, 2, 3], [4, 5, 60000]], dtype=getattr(torch, name))
    got = tg.load(_torch_file({"x": x, "t": x.t(), "dt": getattr(torch, name)}))
    assert got["x"].dtype is getattr(tg, name) and got["dt"] is getattr(tg, name)
    assert got["x"].tolist() == x.tolist() and got["t"].tolist() == x.t().tolist()


def test_torch_files_of_conjugate_and_negative_views():
    torch = pytest.importorskip("torch")
    z = torch.tensor([1 + 1j, 2 - 3j])
    # (one file each: torch.save refuses a complex storage viewed as float too)
    assert tg.load(_torch_file(z.conj())).tolist() == [1 - 1j, 2 + 3j]
    assert tg.load(_torch_file(z.conj().imag)).tolist() == [-1.0, 3.0]


def test_torch_files_of_buffers_and_sparse_tensors():
    torch = pytest.importorskip("torch")
    got = tg.load(_torch_file(torch.nn.Buffer(torch.ones(2))))
    assert got.tolist() == [1.0, 1.0]
    dense = torch.tensor([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0], [0.0, 0.0, 0.0], [4.0, 5.0, 0.0]])
    kinds = {"coo": dense.to_sparse(), "coalesced": dense.to_sparse().coalesce(),
             "csr": dense.to_sparse_csr(), "csc": dense.to_sparse_csc(),
             "bsr": dense.to_sparse_bsr((2, 1)), "bsc": dense.to_sparse_bsc((2, 1))}
    got = tg.load(_torch_file(kinds))
    for name, t in kinds.items():
        assert str(got[name].layout).split(".")[-1] == str(t.layout).split(".")[-1], name
        assert got[name].to_dense().tolist() == dense.tolist(), name
    bad = torch.sparse_coo_tensor([[5]], [1.0], (3,), check_invariants=False)
    with pytest.raises(UnpicklingError, match="sparse tensor is invalid"):
        tg.load(_torch_file(bad))


def test_sampling_orders_match_torch():
    torch = pytest.importorskip("torch")
    import torch.utils.data as tud

    def orders(lib, data):
        out = []
        for seed in (0, 5):
            lib.manual_seed(seed)
            g = lib.Generator().manual_seed(seed + 1)
            for kw in ({}, {"generator": g}):
                for dl in (data.DataLoader(range(10), batch_size=3, shuffle=True, **kw),
                           data.WeightedRandomSampler(WEIGHTS, 7, **kw),
                           data.WeightedRandomSampler(WEIGHTS, 4, replacement=False, **kw),
                           data.RandomSampler(range(9), replacement=True, num_samples=40, **kw)):
                    out.append([b.tolist() if hasattr(b, "tolist") else b for b in dl])
            out.append(lib.rand(2).tolist())  # the global stream advanced the same way
        return out

    import tritongrad.utils.data as tgd
    assert orders(tg, tgd) == orders(torch, tud)


def test_a_plain_pickle_is_refused_without_running_it(tmp_path):
    marker = tmp_path / "ran"
    evil = pickle.dumps(EvilReduce(str(marker)), protocol=2)
    for weights_only in (True, False):
        with pytest.raises(UnpicklingError, match="not a tritongrad file or a PyTorch checkpoint"):
            tg.load(evil, weights_only=weights_only)
    assert not marker.exists()


class EvilReduce:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def _legacy_file(obj) -> bytes:
    torch = pytest.importorskip("torch")
    buf = io.BytesIO()
    torch.save(obj, buf, _use_new_zipfile_serialization=False)
    return buf.getvalue()


def test_torch_files_in_the_legacy_format():
    torch = pytest.importorskip("torch")
    x = torch.arange(6.0).reshape(2, 3)
    lin = torch.nn.Linear(2, 3)
    obj = {"x": x, "t": x.t(), "row": x[1], "i": torch.arange(3, dtype=torch.int16),
           "bf": torch.tensor([1.5, -2.0], dtype=torch.bfloat16),
           "mask": torch.tensor([True, False]), "p": torch.nn.Parameter(torch.ones(2)),
           "sd": lin.state_dict(), "step": 7, "name": "ckpt", "z": torch.tensor([1 + 2j])}
    got = tg.load(_legacy_file(obj))
    assert got["x"].tolist() == x.tolist() and got["t"].tolist() == x.t().tolist()
    assert got["t"].stride() == (1, 3) and got["row"].storage_offset() == 3
    assert got["i"].dtype is tg.int16 and got["i"].tolist() == [0, 1, 2]
    assert got["bf"].dtype is tg.bfloat16 and got["bf"].float().tolist() == [1.5, -2.0]
    assert got["mask"].tolist() == [True, False] and got["z"].tolist() == [1 + 2j]
    assert isinstance(got["p"], tg.nn.Parameter) and got["p"].requires_grad
    assert (got["step"], got["name"]) == (7, "ckpt")
    m = tg.nn.Linear(2, 3)
    m.load_state_dict(got["sd"])
    assert m.weight.tolist() == lin.weight.tolist() and m.bias.tolist() == lin.bias.tolist()
    got["x"][1, 0] = 100.0  # views of one storage share it after the load, as in PyTorch
    assert got["t"][0, 1].item() == 100.0 and got["row"][0].item() == 100.0


def test_bad_torch_legacy_files():
    pytest.importorskip("torch")
    import torch
    data = _legacy_file({"w": torch.ones(3)})
    for cut in (20, 60, len(data) - 4):
        with pytest.raises(UnpicklingError, match="legacy format"):
            tg.load(data[:cut])
    with pytest.raises(UnpicklingError, match="^Weights only load failed"):
        tg.load(_legacy_file(torch.nn.Linear(2, 2)))


def test_sparse_tensors_round_trip():
    d = tg.tensor([[0.0, 1.0, 0.0, 0.0], [2.0, 0.0, 3.0, 0.0], [0.0, 0.0, 0.0, 0.0],
                   [4.0, 5.0, 0.0, 6.0]])
    kinds = {"coo": d.to_sparse(), "csr": d.to_sparse_csr(), "csc": d.to_sparse_csc(),
             "bsr": d.to_sparse_bsr((2, 2)), "bsc": d.to_sparse_bsc((2, 1)),
             "grad": tg.sparse_coo_tensor([[0, 2]], [1.0, 2.0], (3,), requires_grad=True)}
    got = _roundtrip(kinds)  # under weights_only: the parts are tensors, checked on load
    for name, t in kinds.items():
        assert got[name].layout is t.layout, name
        assert got[name].to_dense().tolist() == t.to_dense().tolist(), name
    assert got["grad"].requires_grad and not got["coo"].requires_grad
    # a file's indices are checked: one out of range is refused, not trusted
    from tritongrad.serialization import _rebuild_sparse
    with pytest.raises(Exception, match="index|bound|range"):
        _rebuild_sparse("sparse_coo", (tg.tensor([[5]]), tg.ones(1)), (3,), None, False)
