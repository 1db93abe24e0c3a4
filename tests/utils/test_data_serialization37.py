"""tg.utils.data and tg.utils.safetensors against PyTorch's behaviour (sweep 37): each
difference the second differential sweep against torch 2.13 found, pinned by expected values
written out (PyTorch's outputs for the same seeds) or computed independently, and compared
with torch itself where it is installed."""

import collections
import warnings

import numpy as np
import pytest
from tritongrad.utils.data import (
    ConcatDataset,
    DataLoader,
    IterableDataset,
    Subset,
    TensorDataset,
    default_collate,
    default_convert,
    random_split,
)

import tritongrad as tg

# -- random_split --------------------------------------------------------------------------------


def test_random_split_reads_lengths_summing_to_one_as_fractions_as_pytorch():
    # torch 2.13: random_split(range(10), [1], generator=Generator().manual_seed(5)), and
    # [1, 0.0] of 3 items (the empty split warns)
    g = tg.Generator().manual_seed(5)
    assert [list(p) for p in random_split(range(10), [1], generator=g)] == [
        [1, 4, 9, 6, 3, 5, 0, 2, 8, 7]]
    with pytest.warns(UserWarning, match=r"^Length of split at index 1 is 0\. This might"):
        parts = random_split(range(3), [1, 0.0], generator=tg.Generator().manual_seed(5))
    assert [list(p) for p in parts] == [[2, 1, 0], []]
    with pytest.warns(UserWarning, match="index 0 is 0"):
        parts = random_split(range(7), [0, 1], generator=tg.Generator().manual_seed(5))
    assert [list(p) for p in parts] == [[], [1, 0, 4, 2, 6, 5, 3]]
    # plain lengths are still lengths, and other sums still raise PyTorch's error
    assert [len(p) for p in random_split(range(1), [1])] == [1]
    with pytest.raises(ValueError, match="^Sum of input lengths does not equal"):
        random_split(range(10), [1, 1])


# -- datasets ------------------------------------------------------------------------------------


def test_tensor_dataset_of_a_0d_tensor_raises_pytorchs_index_error():
    with pytest.raises(IndexError, match="^Dimension specified as 0 but tensor has no dim"):
        TensorDataset(tg.tensor(1.0))
    with pytest.raises(IndexError, match="^Dimension specified as 0"):
        TensorDataset(tg.zeros(2), tg.tensor(1.0))


def test_concat_dataset_keeps_the_deprecated_cummulative_sizes():
    ds = ConcatDataset([range(3), [7, 8]])
    with pytest.warns(FutureWarning, match="^`cummulative_sizes` attribute is renamed to "
                                           "`cumulative_sizes`$"):
        assert ds.cummulative_sizes == [3, 5]
    assert ds[3] == 7 and ds[-1] == 8


# -- collate / convert ---------------------------------------------------------------------------


def test_default_convert_converts_numpys_own_types_only():
    masked = np.ma.masked_array([1, 2], mask=[False, True])
    assert default_convert(masked) is masked  # PyTorch checks the type's module: numpy.ma's
    out = default_convert([np.float32(1.5), np.arange(2, dtype=np.int16), np.array("s")])
    assert out[0].dtype is tg.float32 and out[0].item() == 1.5
    assert out[1].dtype is tg.int16 and out[1].tolist() == [0, 1]
    assert out[2] == np.array("s")  # strings stay arrays
    # default_collate still stacks any ndarray (PyTorch's isinstance dispatch)
    assert default_collate([masked.data, masked.data]).tolist() == [[1, 2], [1, 2]]


# -- IterableDataset length warning --------------------------------------------------------------


class _Lying(IterableDataset):
    """Yields ``n`` samples but reports ``claimed`` as its length."""

    def __init__(self, n, claimed):
        self.n, self.claimed = n, claimed

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.claimed


def _messages(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = fn()
    return out, [str(x.message) for x in w]


def test_iterable_dataset_yielding_more_than_its_len_warns_after_len_was_asked():
    dl = DataLoader(_Lying(5, 3), batch_size=None)
    out, msgs = _messages(lambda: [int(x) for x in dl])  # len() not asked: no warning
    assert out == [0, 1, 2, 3, 4] and msgs == []
    assert len(dl) == 3
    out, msgs = _messages(lambda: [int(x) for x in dl])
    assert out == [0, 1, 2, 3, 4] and len(msgs) == 2  # the 4th and 5th samples
    assert msgs[0].startswith("Length of IterableDataset <") and msgs[0].endswith(
        "was reported to be 3(when accessing len(dataloader)), but 4 samples have been "
        "fetched. ")
    assert "but 5 samples" in msgs[1]
    # PyTorch compares the number of batches with the dataset's length: 3 batches of 2 from
    # a dataset of "3" samples do not warn
    dl = DataLoader(_Lying(5, 3), batch_size=2)
    assert len(dl) == 2
    out, msgs = _messages(lambda: [b.tolist() for b in dl])
    assert out == [[0, 1], [2, 3], [4]] and msgs == []


def test_iterable_length_warning_names_the_workers_with_workers():
    dl = DataLoader(_Lying(2, 1), batch_size=None, num_workers=1)
    assert len(dl) == 1
    out, msgs = _messages(lambda: [int(x) for x in dl])
    # (Python 3.12 also warns that forking a multi-threaded process may deadlock: not ours)
    msgs = [m for m in msgs if m.startswith("Length of IterableDataset")]
    assert out == [0, 1] and len(msgs) == 1
    assert "For multiprocessing data-loading, this could be caused by" in msgs[0]


# -- the TensorDataset batch path ----------------------------------------------------------------


def _reference(ds, index_batches):
    """Batches as PyTorch's loader builds them: sample by sample, then default_collate."""
    return [default_collate([ds[i] for i in b]) for b in index_batches]


def _same(batches, expected):
    assert len(batches) == len(expected)
    for got, want in zip(batches, expected):
        assert type(got) is list and len(got) == len(want)
        for g, w in zip(got, want):
            assert g.dtype is w.dtype and g.shape == w.shape and g.is_contiguous()
            assert g.tolist() == w.tolist()


def test_tensor_dataset_batches_equal_the_sample_by_sample_batches():
    x = tg.arange(24.0).reshape(4, 6).t()  # rows of a transposed tensor: strided samples
    ds = TensorDataset(x, tg.tensor([True, False, True, True, False, True]),
                       tg.arange(6).to(tg.bfloat16))
    _same(list(DataLoader(ds, batch_size=4)), _reference(ds, [[0, 1, 2, 3], [4, 5]]))
    # indices a sampler may give: negative ints, NumPy ints, 0-d tensors (sample by sample)
    for sampler in ([-1, -2, 3], [np.int64(2), 1], [tg.tensor(1), tg.tensor(2)]):
        _same(list(DataLoader(ds, batch_size=2, sampler=sampler)),
              _reference(ds, [sampler[i:i + 2] for i in range(0, len(sampler), 2)]))
    sub = Subset(ds, [5, 0, 3])
    _same(list(DataLoader(sub, batch_size=2)), _reference(sub, [[0, 1], [2]]))
    sub = Subset(ds, tg.tensor([4, 1]))  # tensor indices: sample by sample
    _same(list(DataLoader(sub, batch_size=2)), _reference(sub, [[0, 1]]))
    with pytest.raises(IndexError):
        list(DataLoader(ds, batch_size=2, sampler=[1, 6]))
    with pytest.raises(IndexError):
        list(DataLoader(Subset(ds, [0, 1]), batch_size=2, sampler=[0, 2]))
    with pytest.raises(IndexError):  # an empty batch: default_collate([]), as PyTorch
        list(DataLoader(ds, batch_sampler=[[]]))


def test_tensor_dataset_batches_do_not_index_sample_by_sample(monkeypatch):
    calls = []
    original = TensorDataset.__getitem__
    monkeypatch.setattr(TensorDataset, "__getitem__",
                        lambda self, i: calls.append(i) or original(self, i))
    ds = TensorDataset(tg.arange(10.0).reshape(5, 2), tg.arange(5))
    assert [b[1].tolist() for b in DataLoader(ds, batch_size=2)] == [[0, 1], [2, 3], [4]]
    assert calls == []
    # a user's collate_fn, or tensors requiring grad (PyTorch's graph records a stack), are
    # fetched sample by sample
    assert len(list(DataLoader(ds, batch_size=2, collate_fn=list))) == 3 and len(calls) == 5
    w = TensorDataset(tg.ones(4, 2, requires_grad=True))
    batch = next(iter(DataLoader(w, batch_size=2)))[0]
    assert batch.requires_grad and type(batch.grad_fn).__name__ == "StackBackward0"


def test_shuffled_tensor_dataset_orders_are_pytorchs():
    # torch 2.13: DataLoader(TensorDataset(arange(20.).reshape(10, 2), arange(10)),
    # batch_size=4, shuffle=True, generator=Generator().manual_seed(3)); and a random_split
    # part (seed 1) shuffled with seed 2
    ds = TensorDataset(tg.arange(20.0).reshape(10, 2), tg.arange(10))
    dl = DataLoader(ds, batch_size=4, shuffle=True, generator=tg.Generator().manual_seed(3))
    batches = list(dl)
    assert [b[1].tolist() for b in batches] == [[7, 4, 2, 9], [1, 5, 0, 8], [6, 3]]
    assert batches[0][0].tolist() == [[14.0, 15.0], [8.0, 9.0], [4.0, 5.0], [18.0, 19.0]]
    tr, _ = random_split(ds, [0.7, 0.3], generator=tg.Generator().manual_seed(1))
    dl = DataLoader(tr, batch_size=3, shuffle=True, generator=tg.Generator().manual_seed(2))
    assert [b[1].tolist() for b in dl] == [[0, 6, 8], [9, 5, 2], [1]]


def test_tensor_dataset_batches_match_torch():
    torch = pytest.importorskip("torch")
    TD = torch.utils.data
    src = np.random.default_rng(0).standard_normal((11, 3)).astype(np.float32)
    for kw in (dict(batch_size=4), dict(batch_size=3, drop_last=True),
               dict(batch_size=5, shuffle=True, seed=4)):
        kw = dict(kw)
        seed = kw.pop("seed", None)
        mine = DataLoader(TensorDataset(tg.tensor(src), tg.arange(11)),
                          generator=None if seed is None else tg.Generator().manual_seed(seed),
                          **kw)
        theirs = TD.DataLoader(TD.TensorDataset(torch.tensor(src), torch.arange(11)),
                               generator=None if seed is None
                               else torch.Generator().manual_seed(seed), **kw)
        for a, b in zip(mine, theirs, strict=True):
            np.testing.assert_array_equal(a[0].numpy(), b[0].numpy())
            assert a[1].tolist() == b[1].tolist()


# -- safetensors ---------------------------------------------------------------------------------

st = pytest.importorskip("tritongrad.utils.safetensors")


def _has_safetensors():
    try:
        import safetensors  # noqa: F401
    except ImportError:
        return False
    return True


needs_st = pytest.mark.skipif(not _has_safetensors(), reason="safetensors is not installed")


@needs_st
def test_safetensors_loads_in_file_order(tmp_path):
    # the file lays tensors out by alignment, then name; PyTorch's load_file gives that order
    # (safetensors.deserialize's own order changes from one process to the next)
    tensors = {"b": tg.ones(1), "a": tg.zeros(1), "c": tg.ones(2, dtype=tg.float64),
               "d": tg.ones(1, dtype=tg.uint8)}
    st.save_file(tensors, tmp_path / "o.st")
    assert list(st.load_file(tmp_path / "o.st")) == ["c", "a", "b", "d"]
    assert list(st.load(st.save(tensors))) == ["c", "a", "b", "d"]


@needs_st
def test_safetensors_refuses_tensors_sharing_memory():
    x = tg.arange(6.0)
    for tensors in ({"a": x, "b": x}, {"a": x, "b": x[2:]}, {"a": x[:4], "b": x[3:]}):
        with pytest.raises(RuntimeError, match="^Some tensors share memory, this will lead"):
            st.save(tensors)
    # disjoint parts of one storage are saved, each its own bytes
    out = st.load(st.save({"a": x[:3], "b": x[3:]}))
    assert out["a"].tolist() == [0, 1, 2] and out["b"].tolist() == [3, 4, 5]
    # a strided view spans its first to its last element, as in PyTorch's check
    with pytest.raises(RuntimeError, match="share memory"):
        st.save({"a": x.reshape(2, 3)[:, 0], "b": x[1:2]})


@needs_st
def test_safetensors_refuses_sparse_tensors_with_pytorchs_error():
    with pytest.raises(ValueError, match=r"^You are trying to save a sparse tensors: `\['s'\]`"):
        st.save({"s": tg.eye(2).to_sparse()})


@needs_st
@pytest.mark.parametrize("dtype", ["uint32", "uint64", "float8_e4m3fn", "float8_e5m2"])
def test_safetensors_round_trips_more_dtypes(dtype):
    dt = getattr(tg, dtype)
    if dt.np.type is np.void:
        pytest.skip("float8 needs ml_dtypes")
    if dtype.startswith("uint"):
        values = [0, 1, 2 ** 31 + 5] if dtype == "uint32" else [0, 2 ** 40, 2 ** 63 + 1]
        x = tg.tensor(np.array(values, dtype=dtype), dtype=dt)
        expected = values
    else:
        x = tg.tensor([0.5, -1.75, 3.0]).to(dt)
        expected = [0.5, -1.75, 3.0]  # exactly representable in both float8 formats
    out = st.load(st.save({"x": x}))["x"]
    assert out.dtype is dt
    assert (out.tolist() if dtype.startswith("uint") else out.float().tolist()) == expected


@needs_st
def test_safetensors_files_interoperate_with_torch_for_the_new_dtypes(tmp_path):
    torch = pytest.importorskip("torch")
    stt = pytest.importorskip("safetensors.torch")
    ours = {"u32": tg.tensor(np.array([1, 2 ** 32 - 1], np.uint32), dtype=tg.uint32),
            "u64": tg.tensor(np.array([3, 2 ** 64 - 1], np.uint64), dtype=tg.uint64)}
    if tg.float8_e4m3fn.np.type is not np.void:
        ours["f8"] = tg.tensor([0.5, -2.0]).to(tg.float8_e4m3fn)
    st.save_file(ours, tmp_path / "ours.st")
    theirs = stt.load_file(str(tmp_path / "ours.st"))
    assert list(theirs) == list(st.load_file(tmp_path / "ours.st"))
    assert theirs["u32"].dtype == torch.uint32 and theirs["u64"].dtype == torch.uint64
    assert theirs["u32"].to(torch.int64).tolist() == [1, 2 ** 32 - 1]
    assert theirs["u64"].view(torch.int64).tolist() == [3, -1]  # (2**64 - 1's bits)
    if "f8" in ours:
        assert theirs["f8"].float().tolist() == [0.5, -2.0]
    stt.save_file({"u32": torch.tensor([7, 8], dtype=torch.uint32),
                   "f8": torch.tensor([1.5, -0.25]).to(torch.float8_e5m2)},
                  str(tmp_path / "theirs.st"))
    if tg.float8_e5m2.np.type is np.void:
        return
    back = st.load_file(tmp_path / "theirs.st")
    assert back["u32"].dtype is tg.uint32 and back["u32"].tolist() == [7, 8]
    assert back["f8"].dtype is tg.float8_e5m2 and back["f8"].float().tolist() == [1.5, -0.25]


@needs_st
def test_safetensors_sharing_rule_matches_torch():
    torch = pytest.importorskip("torch")
    stt = pytest.importorskip("safetensors.torch")
    x = torch.arange(4.0)
    with pytest.raises(RuntimeError, match="Some tensors share memory"):
        stt.save({"a": x, "b": x[1:]})
    # (what the tests above expect of tritongrad)
    assert sorted(stt.load(stt.save({"a": x[:2], "b": x[2:]}))) == ["a", "b"]


def _tied(seed):
    tg.manual_seed(seed)
    m = tg.nn.Sequential(tg.nn.Embedding(5, 3), tg.nn.Linear(3, 5, bias=False))
    m[1].weight = m[0].weight
    return m


@needs_st
def test_safetensors_save_model_stores_tied_weights_once(tmp_path):
    from safetensors import safe_open
    m = _tied(0)
    with pytest.raises(RuntimeError, match="use `save_model`"):
        st.save_file(m.state_dict(), tmp_path / "m.st")
    st.save_model(m, tmp_path / "m.st", metadata={"format": "pt"})
    with safe_open(str(tmp_path / "m.st"), framework="np") as f:
        assert list(f.keys()) == ["0.weight"]
        assert f.metadata() == {"format": "pt", "1.weight": "0.weight"}
    fresh = _tied(1)
    assert st.load_model(fresh, tmp_path / "m.st") == (set(), [])
    assert fresh[1].weight is fresh[0].weight
    assert fresh[0].weight.tolist() == m[0].weight.tolist()
    with pytest.raises(RuntimeError, match=r"^Error\(s\) in loading state_dict for Linear:\n"
                                           r"    Missing key\(s\) in state_dict: \"bias\", "
                                           r"\"weight\"\n    Unexpected key\(s\) in "
                                           r"state_dict: \"0.weight\""):
        st.load_model(tg.nn.Linear(2, 2), tmp_path / "m.st")
    missing, unexpected = st.load_model(tg.nn.Linear(2, 2), tmp_path / "m.st", strict=False)
    assert missing == {"weight", "bias"} and unexpected == ["0.weight"]


@needs_st
def test_safetensors_save_model_files_load_in_torch_and_back(tmp_path):
    torch = pytest.importorskip("torch")
    stt = pytest.importorskip("safetensors.torch")
    m = _tied(0)
    st.save_model(m, tmp_path / "ours.st")
    theirs = torch.nn.Sequential(torch.nn.Embedding(5, 3), torch.nn.Linear(3, 5, bias=False))
    theirs[1].weight = theirs[0].weight
    assert stt.load_model(theirs, str(tmp_path / "ours.st")) == (set(), [])
    np.testing.assert_array_equal(theirs[1].weight.detach().numpy(), m[0].weight.detach().numpy())
    with torch.no_grad():
        theirs[0].weight.mul_(2)
    stt.save_model(theirs, str(tmp_path / "theirs.st"))
    fresh = _tied(2)
    assert st.load_model(fresh, tmp_path / "theirs.st") == (set(), [])
    assert fresh[1].weight.tolist() == (m[0].weight * 2).tolist()


# -- _utils.collate.collate with a type table ----------------------------------------------------


class _Box:
    def __init__(self, v):
        self.v = v


def _collate_box(batch, *, collate_fn_map=None):
    return ("box", sum(b.v for b in batch))


def test_collate_with_a_custom_type_table():
    from tritongrad.utils.data._utils.collate import collate, default_collate_fn_map
    point = collections.namedtuple("point", "a b")
    table = {**default_collate_fn_map, _Box: _collate_box}
    batch = [{"box": _Box(1), "x": [tg.ones(2), 3], "p": point(np.float32(1), "s")},
             {"box": _Box(2), "x": [tg.zeros(2), 4], "p": point(np.float32(2), "t")}]
    out = collate(batch, collate_fn_map=table)
    assert out["box"] == ("box", 3)
    assert out["x"][0].tolist() == [[1.0, 1.0], [0.0, 0.0]] and out["x"][1].tolist() == [3, 4]
    assert type(out["p"]) is point and out["p"].a.dtype is tg.float32 and out["p"].b == ("s", "t")
    # bool is an int: the int rule, whose tensor() infers bool; bytes stay as they are
    assert collate([True, False], collate_fn_map=table).dtype is tg.bool
    assert collate([b"a", b"b"], collate_fn_map=table) == [b"a", b"b"]
    with pytest.raises(TypeError, match="^default_collate: batch must contain tensors"):
        collate([_Box(1)], collate_fn_map=default_collate_fn_map)
    with pytest.raises(TypeError, match="^default_collate: batch must contain"):
        collate([1, 2])  # no table: only containers are known
    with pytest.raises(RuntimeError, match="^each element in list of batch should be of equal"):
        collate([[1, 2], [3]], collate_fn_map=table)


def test_collate_matches_torch():
    torch = pytest.importorskip("torch")
    from torch.utils.data._utils import collate as theirs

    from tritongrad.utils.data._utils import collate as ours
    batch = [{"a": (np.arange(2), 1.5), "b": [7, "x"]}, {"a": (np.arange(2) + 2, 2.5),
                                                         "b": [8, "y"]}]
    mine = ours.collate(batch, collate_fn_map=ours.default_collate_fn_map)
    ref = theirs.collate(batch, collate_fn_map=theirs.default_collate_fn_map)
    assert mine["a"][0].tolist() == ref["a"][0].tolist()
    assert str(mine["a"][1].dtype).split(".")[-1] == str(ref["a"][1].dtype).split(".")[-1]
    assert mine["b"][0].tolist() == ref["b"][0].tolist() and mine["b"][1] == ref["b"][1]
    assert sorted(k.__name__ if isinstance(k, type) else str(len(k)) for k in
                  ours.default_collate_fn_map) == sorted(
        "Tensor" if k is torch.Tensor else k.__name__ if isinstance(k, type) else str(len(k))
        for k in theirs.default_collate_fn_map)
