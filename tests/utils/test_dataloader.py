"""tritongrad.utils.data: datasets, splits, samplers, default_collate and DataLoader, against
PyTorch's documented behaviour (orders, lengths, batch structure, errors)."""

import collections
import warnings

import numpy as np
import pytest
from tritongrad.utils.data import (
    BatchSampler,
    ChainDataset,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    Sampler,
    SequentialSampler,
    StackDataset,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    default_collate,
    default_convert,
    random_split,
)

import tritongrad as tg


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return i * i


class Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))


class SizedStream(Stream):
    def __len__(self):
        return self.n


# -- datasets ---------------------------------------------------------------------------------------

def test_tensor_dataset_indexes_along_the_first_dimension():
    x = tg.arange(12.0).reshape(4, 3)
    y = tg.tensor([10, 11, 12, 13])
    ds = TensorDataset(x, y)
    assert len(ds) == 4
    xi, yi = ds[2]
    assert xi.tolist() == [6.0, 7.0, 8.0] and yi.item() == 12
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(x, tg.zeros(3))


def test_concat_dataset_and_plus():
    ds = Squares(3) + Squares(2)
    assert isinstance(ds, ConcatDataset) and ds.cumulative_sizes == [3, 5]
    assert [ds[i] for i in range(5)] == [0, 1, 4, 0, 1]
    assert ds[-1] == 1 and ds[-5] == 0
    with pytest.raises(ValueError, match="absolute value of index"):
        ds[-6]
    with pytest.raises(AssertionError, match="does not support IterableDataset"):
        ConcatDataset([Squares(1), Stream(2)])
    assert list(Stream(2) + Stream(3)) == [0, 1, 0, 1, 2]
    assert isinstance(Stream(1) + Stream(1), ChainDataset)


def test_stack_dataset_tuples_dicts_and_batched_fetch():
    ds = StackDataset(Squares(4), [10, 11, 12, 13])
    assert len(ds) == 4 and ds[2] == (4, 12)
    named = StackDataset(sq=Squares(4), tag=Subset(Squares(9), [8, 7, 6, 5]))
    assert named[1] == {"sq": 1, "tag": 49}
    # each dataset's own __getitems__ is used for a batch (Subset's here)
    assert named.__getitems__([3, 0]) == [{"sq": 9, "tag": 25}, {"sq": 0, "tag": 64}]
    batches = list(DataLoader(StackDataset(x=tg.arange(6.0).reshape(3, 2), y=tg.tensor([7, 8, 9])),
                              batch_size=2))
    np.testing.assert_array_equal(batches[0]["x"].numpy(), [[0.0, 1.0], [2.0, 3.0]])
    np.testing.assert_array_equal(batches[1]["y"].numpy(), [9])
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset(Squares(3), Squares(4))
    with pytest.raises(ValueError, match="but both types are given"):
        StackDataset(Squares(3), y=Squares(3))
    with pytest.raises(ValueError, match="At least one dataset should be passed"):
        StackDataset()


def test_subset_and_its_batched_fetch():
    sub = Subset(Squares(10), [7, 2, 5])
    assert len(sub) == 3 and [sub[i] for i in range(3)] == [49, 4, 25]
    assert sub.__getitems__([2, 0]) == [25, 49]


def test_random_split_by_lengths_is_a_seeded_partition():
    tg.manual_seed(3)
    a, b, c = random_split(range(20), [5, 7, 8])
    assert [len(a), len(b), len(c)] == [5, 7, 8]
    items = [a[i] for i in range(5)] + [b[i] for i in range(7)] + [c[i] for i in range(8)]
    assert sorted(items) == list(range(20)) and items != list(range(20))
    tg.manual_seed(3)
    a2, _, _ = random_split(range(20), [5, 7, 8])
    assert a2.indices == a.indices
    with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
        random_split(range(20), [5, 5])


def test_random_split_by_fractions_distributes_the_remainder_round_robin():
    # 11 * (.3, .3, .4) -> floor 3, 3, 4 = 10; the one left goes to the first split
    parts = random_split(range(11), [0.3, 0.3, 0.4], generator=np.random.default_rng(0))
    assert [len(p) for p in parts] == [4, 3, 4]
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        random_split(range(3), [0.9, 0.1])


def test_random_split_with_a_generator_object():
    class Gen:  # what torch.Generator offers: initial_seed()
        def __init__(self, s):
            self.s = s

        def initial_seed(self):
            return self.s

    a = random_split(range(10), [4, 6], generator=Gen(1))[0].indices
    b = random_split(range(10), [4, 6], generator=Gen(1))[0].indices
    assert a == b
    with pytest.raises(TypeError, match="random_split: generator must be"):
        random_split(range(10), [4, 6], generator=42)


# -- samplers -------------------------------------------------------------------------------------

def test_sampler_base_and_subclass():
    class EveryOther(Sampler):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return iter(range(0, self.n, 2))

    assert list(EveryOther(5)) == [0, 2, 4]
    with pytest.raises(NotImplementedError):
        iter(Sampler(None))
    with pytest.raises(TypeError):
        len(EveryOther(5))  # no __len__, as PyTorch's base


def test_random_sampler_permutes_and_reshuffles_each_epoch():
    tg.manual_seed(0)
    s = RandomSampler(range(10))
    first, second = list(s), list(s)
    assert sorted(first) == sorted(second) == list(range(10))
    assert first != second and len(s) == 10
    tg.manual_seed(0)
    assert list(RandomSampler(range(10))) == first  # tg.manual_seed fixes the order


def test_random_sampler_num_samples_and_replacement():
    s = RandomSampler(range(4), num_samples=10, generator=np.random.default_rng(1))
    got = list(s)
    assert len(got) == len(s) == 10
    # whole permutations first: each index twice in the first 8
    assert sorted(got[:8]) == [0, 0, 1, 1, 2, 2, 3, 3] and len(set(got[8:])) == 2
    r = list(RandomSampler(range(3), replacement=True, num_samples=200,
                           generator=np.random.default_rng(2)))
    assert len(r) == 200 and set(r) == {0, 1, 2}
    with pytest.raises(ValueError, match="num_samples should be a positive integer value"):
        RandomSampler(range(3), num_samples=0)
    with pytest.raises(TypeError, match="replacement should be a boolean"):
        RandomSampler(range(3), replacement=1)


def test_a_generator_object_advances_across_epochs_and_restarts_on_a_new_seed():
    class Gen:
        def __init__(self):
            self.seed = 0

        def manual_seed(self, s):
            self.seed = s
            return self

        def initial_seed(self):
            return self.seed

    g = Gen().manual_seed(7)
    s = RandomSampler(range(8), generator=g)
    e1, e2 = list(s), list(s)
    assert e1 != e2
    g.manual_seed(8)
    e3 = list(s)
    assert e3 not in (e1, e2)
    g.manual_seed(7)  # a seed other than the last one restarts that seed's sequence
    assert list(s) == e1


def test_subset_random_sampler():
    s = SubsetRandomSampler([10, 20, 30, 40], generator=np.random.default_rng(0))
    got = list(s)
    assert sorted(got) == [10, 20, 30, 40] and len(s) == 4


def test_weighted_random_sampler_follows_the_weights():
    w = [0.0, 1.0, 3.0]
    draws = list(WeightedRandomSampler(w, 4000, generator=np.random.default_rng(0)))
    counts = np.bincount(draws, minlength=3)
    assert counts[0] == 0 and abs(counts[2] / counts[1] - 3.0) < 0.35
    no_rep = list(WeightedRandomSampler(tg.tensor([1.0, 1.0, 5.0, 0.0]), 3, replacement=False))
    assert sorted(no_rep) == [0, 1, 2]
    # more samples than non-zero weights: PyTorch draws the zero-weight indices last
    assert sorted(WeightedRandomSampler([1.0, 0.0], 2, replacement=False)) == [0, 1]
    assert list(WeightedRandomSampler([1.0, 0.0], 2, replacement=False,
                                      generator=np.random.default_rng(0))) == [0, 1]
    with pytest.raises(RuntimeError, match="^cannot sample n_sample > prob_dist"):
        list(WeightedRandomSampler([1.0, 2.0], 3, replacement=False,
                                   generator=np.random.default_rng(0)))
    with pytest.raises(ValueError, match="weights should be a 1d sequence"):
        WeightedRandomSampler([[1.0, 2.0]], 2)
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        WeightedRandomSampler([1.0], 0)


def test_batch_sampler_docs_examples():
    assert list(BatchSampler(SequentialSampler(range(10)), 3, False)) == \
        [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    assert list(BatchSampler(SequentialSampler(range(10)), 3, True)) == \
        [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert len(BatchSampler(range(10), 3, False)) == 4
    assert len(BatchSampler(range(10), 3, True)) == 3
    with pytest.raises(ValueError, match="batch_size should be a positive integer value"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean value"):
        BatchSampler(range(3), 1, 0)


# -- collation --------------------------------------------------------------------------------------

Point = collections.namedtuple("Point", "x y")
Named = collections.namedtuple("Named", "x label")


def test_default_collate_types():
    t = default_collate([tg.tensor([1.0, 2.0]), tg.tensor([3.0, 4.0])])
    assert t.shape == (2, 2) and t.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    ints = default_collate([1, 2, 3])
    assert ints.dtype == tg.int64 and ints.tolist() == [1, 2, 3]
    floats = default_collate([1.5, 2.0])
    assert floats.dtype == tg.float64
    assert default_collate([True, False]).dtype == tg.bool
    assert default_collate(["a", "b"]) == ["a", "b"]
    arr = default_collate([np.zeros((2, 3), np.float32), np.ones((2, 3), np.float32)])
    assert arr.shape == (2, 2, 3) and arr.dtype == tg.float32
    scalars = default_collate([np.int32(4), np.int32(5)])
    assert scalars.dtype == tg.int32 and scalars.tolist() == [4, 5]


def test_default_collate_structures():
    d = default_collate([{"x": 1.0, "y": [1, 2]}, {"x": 2.0, "y": [3, 4]}])
    assert d["x"].tolist() == [1.0, 2.0]
    assert [c.tolist() for c in d["y"]] == [[1, 3], [2, 4]]
    p = default_collate([Point(1, 2.0), Point(3, 4.0)])
    assert isinstance(p, Point) and p.x.tolist() == [1, 3] and p.y.dtype == tg.float64
    pairs = default_collate([(tg.tensor(1), "a"), (tg.tensor(2), "b")])
    assert isinstance(pairs, list)  # tuples become lists, as in PyTorch
    # a column of strings is the tuple zip gives, as in PyTorch (e.g. a batch's file names)
    assert pairs[0].tolist() == [1, 2] and pairs[1] == ("a", "b")
    named = default_collate([Named(1, "a"), Named(2, "b")])
    assert named.label == ("a", "b") and named.x.tolist() == [1, 2]
    assert default_collate([{"s": "a"}, {"s": "b"}])["s"] == ["a", "b"]  # a mapping's: a list
    od = default_collate([collections.OrderedDict(a=1), collections.OrderedDict(a=2)])
    assert isinstance(od, collections.OrderedDict)
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="default_collate: batch must contain"):
        default_collate([object(), object()])


def test_default_convert():
    assert default_convert(np.array([1, 2])).tolist() == [1, 2]
    out = default_convert((1, np.zeros(2)))
    assert out[0] == 1 and isinstance(out[1], tg.Tensor)
    assert default_convert("s") == "s"
    assert default_convert({"a": np.ones(1)})["a"].tolist() == [1.0]


# -- DataLoader -------------------------------------------------------------------------------------

def test_loader_batches_a_tensor_dataset_in_order():
    x = tg.arange(10.0).reshape(5, 2)
    y = tg.arange(5)
    batches = list(DataLoader(TensorDataset(x, y), batch_size=2))
    assert len(batches) == 3 == len(DataLoader(TensorDataset(x, y), batch_size=2))
    assert [b[1].tolist() for b in batches] == [[0, 1], [2, 3], [4]]
    assert batches[0][0].shape == (2, 2)
    dropped = DataLoader(TensorDataset(x, y), batch_size=2, drop_last=True)
    assert len(dropped) == 2 and [b[1].tolist() for b in dropped] == [[0, 1], [2, 3]]


def test_loader_shuffle_is_seeded_and_covers_everything():
    ds = TensorDataset(tg.arange(12))
    tg.manual_seed(5)
    order = [v for (b,) in DataLoader(ds, batch_size=5, shuffle=True) for v in b.tolist()]
    assert sorted(order) == list(range(12)) and order != list(range(12))
    tg.manual_seed(5)
    again = [v for (b,) in DataLoader(ds, batch_size=5, shuffle=True) for v in b.tolist()]
    assert again == order
    g = np.random.default_rng(9)
    loader = DataLoader(ds, batch_size=12, shuffle=True, generator=g)
    assert isinstance(loader.sampler, RandomSampler) and loader.sampler.generator is g


def test_loader_with_samplers_batch_samplers_and_collate_fn():
    ds = Squares(6)
    got = list(DataLoader(ds, batch_size=2, sampler=[5, 4, 3, 2, 1, 0]))
    assert [b.tolist() for b in got] == [[25, 16], [9, 4], [1, 0]]
    bs = BatchSampler(SequentialSampler(ds), 4, drop_last=False)
    loader = DataLoader(ds, batch_sampler=bs, collate_fn=lambda b: sum(b))
    assert list(loader) == [0 + 1 + 4 + 9, 16 + 25] and len(loader) == 2
    unbatched = DataLoader(ds, batch_size=None)
    assert list(unbatched) == [0, 1, 4, 9, 16, 25] and len(unbatched) == 6


def test_loader_uses_a_dataset_s_batched_fetch():
    class Batched(Squares):
        calls = 0

        def __getitems__(self, idx):
            Batched.calls += 1
            return [i * i for i in idx]

    assert [b.tolist() for b in DataLoader(Batched(5), batch_size=3)] == [[0, 1, 4], [9, 16]]
    assert Batched.calls == 2


def test_loader_over_an_iterable_dataset():
    assert [b.tolist() for b in DataLoader(Stream(7), batch_size=3)] == \
        [[0, 1, 2], [3, 4, 5], [6]]
    assert [b.tolist() for b in DataLoader(Stream(7), batch_size=3, drop_last=True)] == \
        [[0, 1, 2], [3, 4, 5]]
    assert list(DataLoader(Stream(3), batch_size=None)) == [0, 1, 2]
    assert len(DataLoader(SizedStream(7), batch_size=3)) == 3
    assert len(DataLoader(SizedStream(7), batch_size=3, drop_last=True)) == 2
    with pytest.raises(TypeError):
        len(DataLoader(Stream(7), batch_size=3))
    with pytest.raises(ValueError, match="expected unspecified shuffle option"):
        DataLoader(Stream(3), shuffle=True)
    with pytest.raises(ValueError, match="expected unspecified sampler option"):
        DataLoader(Stream(3), sampler=[0])


def test_loader_argument_checks():
    ds = Squares(4)
    with pytest.raises(ValueError, match="sampler option is mutually exclusive with shuffle"):
        DataLoader(ds, sampler=[0, 1], shuffle=True)
    with pytest.raises(ValueError, match="batch_sampler option is mutually exclusive"):
        DataLoader(ds, batch_sampler=[[0, 1]], batch_size=2)
    with pytest.raises(ValueError, match="mutually exclusive with drop_last"):
        DataLoader(ds, batch_size=None, drop_last=True)
    with pytest.raises(ValueError, match="num_workers option should be non-negative"):
        DataLoader(ds, num_workers=-1)
    # (the worker options' checks: tests/utils/test_dataloader_workers.py)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DataLoader(ds, batch_size=2, shuffle=False, num_workers=0)


def test_a_training_loop_reaches_every_sample_each_epoch():
    tg.manual_seed(0)
    x = tg.randn(37, 3)
    y = (x.sum(1) > 0).long()
    train, val = random_split(TensorDataset(x, y), [0.8, 0.2])
    loader = DataLoader(train, batch_size=8, shuffle=True, drop_last=False)
    for _ in range(2):
        seen = 0
        for xb, yb in loader:
            assert xb.shape[1:] == (3,) and xb.shape[0] == yb.shape[0] <= 8
            seen += xb.shape[0]
        assert seen == len(train) == 30
    assert len(val) == 7


def test_a_tg_generator_is_drawn_from_and_restarts_on_manual_seed():
    # its own stream: epochs differ, and manual_seed with the same seed restarts it (which an
    # object seen only through initial_seed() could not do)
    g = tg.Generator().manual_seed(3)
    s = RandomSampler(range(8), generator=g)
    first, second = list(s), list(s)
    assert sorted(first) == list(range(8)) and first != second
    g.manual_seed(3)
    assert list(s) == first
    g.manual_seed(3)
    assert random_split(range(8), [3, 5], generator=g)[0].indices == \
        random_split(range(8), [3, 5], generator=tg.Generator().manual_seed(3))[0].indices
