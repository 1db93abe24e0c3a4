"""tritongrad.utils against torch.utils (torch 2.13): the cases of session 40's differential
sweep, with torch's values and messages recorded so the file checks something without torch,
and compared with torch live where it is installed.

Random orders are those of a ``tg.Generator`` (or the global generator) for a seed, which
draw as PyTorch's CPU generator does; messages are PyTorch's words, matched whole.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import re
import warnings

import numpy as np
import pytest
from tritongrad.utils import _pytree as pytree
from tritongrad.utils import checkpoint, dlpack
from tritongrad.utils.data import (
    BatchSampler,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    Sampler,
    StackDataset,
    TensorDataset,
    WeightedRandomSampler,
)

import tritongrad as tg


def _torch():
    return pytest.importorskip("torch")


def _whole(msg: str) -> str:
    return "^" + re.escape(msg) + "$"


# -- random orders for a seed ------------------------------------------------------------------

def _lists(batches) -> list:
    return [b.tolist() for b in batches]


def _orders(T) -> dict:
    """The index orders of every random utility, for fixed seeds, under library ``T``."""
    d = T.utils.data
    out = {}
    g = T.Generator().manual_seed(0)
    s = d.RandomSampler(range(10), generator=g)
    out["random"] = [list(s), list(s)]  # the generator advances across epochs
    g = T.Generator().manual_seed(7)
    out["replacement"] = list(d.RandomSampler(range(10), replacement=True, num_samples=40,
                                              generator=g))
    g = T.Generator().manual_seed(7)
    out["num_samples"] = list(d.RandomSampler(range(5), num_samples=12, generator=g))
    T.manual_seed(11)
    s = d.RandomSampler(range(10))
    out["global"] = [list(s), list(s), T.randint(0, 1000, (2,)).tolist()]
    g = T.Generator().manual_seed(0)
    s = d.SubsetRandomSampler([5, 6, 7, 8, 9], generator=g)
    out["subset"] = [list(s), list(s)]
    g = T.Generator().manual_seed(42)
    out["split"] = [list(p) for p in d.random_split(range(11), [0.3, 0.3, 0.4], generator=g)]
    T.manual_seed(123)
    dl = d.DataLoader(list(range(10)), batch_size=3, shuffle=True)
    out["loader"] = [_lists(dl), _lists(dl), T.randint(0, 1000, (2,)).tolist()]
    T.manual_seed(123)
    list(d.DataLoader(list(range(4)), batch_size=2))  # each iterator draws a base_seed
    out["loader_draws_a_seed"] = T.randint(0, 1000, (2,)).tolist()
    g = T.Generator().manual_seed(5)
    dl = d.DataLoader(list(range(8)), batch_size=8, shuffle=True, generator=g)
    out["shared_generator"] = [_lists(dl), T.randint(0, 100, (3,), generator=g).tolist()]
    T.manual_seed(0)
    out["zero_weight"] = list(d.WeightedRandomSampler([1.0, 0.0, 2.0], 3, replacement=False))
    g = T.Generator().manual_seed(9)
    s = d.WeightedRandomSampler([1.0, 1.0, 5.0, 0.1], 6, generator=g)
    out["weighted_loader"] = _lists(d.DataLoader(list(range(4)), sampler=s, batch_size=3))
    return out


TORCH_ORDERS = {  # torch 2.13, CPU
    "random": [[4, 1, 7, 5, 3, 9, 0, 8, 6, 2], [4, 0, 8, 5, 9, 1, 6, 3, 7, 2]],
    "replacement": [5, 2, 1, 6, 3, 7, 7, 9, 8, 1, 8, 1, 8, 7, 2, 0, 6, 2, 3, 8, 6, 0, 5, 1, 8,
                    8, 3, 7, 0, 8, 1, 0, 6, 3, 5, 6, 6, 7, 5, 0],
    "num_samples": [0, 1, 3, 2, 4, 3, 4, 1, 2, 0, 3, 2],
    "global": [[1, 8, 6, 5, 7, 4, 9, 2, 3, 0], [4, 3, 2, 6, 7, 9, 8, 5, 1, 0], [433, 247]],
    "subset": [[9, 5, 6, 8, 7], [8, 9, 5, 6, 7]],
    "split": [[6, 8, 9, 2], [1, 10, 0], [7, 3, 5, 4]],
    "loader": [[[8, 2, 6], [7, 0, 3], [9, 1, 5], [4]], [[5, 9, 2], [7, 8, 6], [4, 0, 1], [3]],
               [699, 754]],
    "loader_draws_a_seed": [102, 610],
    "shared_generator": [[[7, 4, 1, 3, 2, 0, 6, 5]], [23, 0, 27]],
    "zero_weight": [2, 0, 1],
    "weighted_loader": [[1, 2, 2], [0, 0, 2]],
}


def test_random_orders_are_pytorchs_for_a_seed():
    assert _orders(tg) == TORCH_ORDERS


def test_random_orders_against_torch():
    torch = _torch()
    assert _orders(torch) == _orders(tg)


def test_weighted_sampler_without_replacement_draws_zero_weights_last():
    # PyTorch does not refuse more samples than non-zero weights (its multinomial draws the
    # zero-weight indices after the others); a NumPy generator follows the same rule
    s = WeightedRandomSampler([1.0, 0.0, 2.0], 3, replacement=False,
                              generator=np.random.default_rng(0))
    got = list(s)
    assert sorted(got) == [0, 1, 2] and got[-1] == 1
    with pytest.raises(RuntimeError, match=_whole("cannot sample n_sample > prob_dist.size(-1) "
                                                  "samples without replacement")):
        list(WeightedRandomSampler([1.0, 2.0], 3, replacement=False,
                                   generator=np.random.default_rng(0)))


# -- messages ----------------------------------------------------------------------------------

class _NoIter(IterableDataset):
    pass


ERRORS = [  # (call, exception type, torch 2.13's message)
    (lambda: RandomSampler(range(3), replacement=1), TypeError,
     "replacement should be a boolean value, but got replacement=1"),
    (lambda: RandomSampler(range(3), replacement="yes"), TypeError,  # (str(), not repr())
     "replacement should be a boolean value, but got replacement=yes"),
    (lambda: RandomSampler(range(3), num_samples=0), ValueError,
     "num_samples should be a positive integer value, but got num_samples=0"),
    (lambda: RandomSampler([]), ValueError,
     "num_samples should be a positive integer value, but got num_samples=0"),
    (lambda: WeightedRandomSampler([1.0], 1, replacement=0), ValueError,
     "replacement should be a boolean value, but got replacement=0"),
    (lambda: WeightedRandomSampler([[1.0, 2.0]], 1), ValueError,
     "weights should be a 1d sequence but given weights have shape (1, 2)"),
    (lambda: BatchSampler(range(3), True, False), ValueError,
     "batch_size should be a positive integer value, but got batch_size=True"),
    (lambda: BatchSampler(range(3), 2, 0), ValueError,
     "drop_last should be a boolean value, but got drop_last=0"),
    (lambda: DataLoader(list(range(3)), batch_size=0), ValueError,
     "batch_size should be a positive integer value, but got batch_size=0"),
    (lambda: TensorDataset(tg.zeros(3), tg.zeros(4)), AssertionError,
     "Size mismatch between tensors"),
    (lambda: TensorDataset(tg.tensor(1.0)), IndexError,
     "Dimension specified as 0 but tensor has no dimensions"),
    (lambda: StackDataset([1], [1, 2]), ValueError, "Size mismatch between datasets"),
    (lambda: StackDataset(a=[1], b=[1, 2]), ValueError, "Size mismatch between datasets"),
    (lambda: StackDataset([1], y=[1]), ValueError,  # (PyTorch's missing space kept)
     ("Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like "
      "input/output, but both types are given.")),
    (lambda: Dataset()[0], NotImplementedError,
     "Subclasses of Dataset should implement __getitem__."),
    (lambda: iter(Sampler()), NotImplementedError, ""),
    (lambda: IterableDataset(), TypeError,
     "Can't instantiate abstract class IterableDataset with abstract method __iter__"),
    (lambda: _NoIter(), TypeError,
     "Can't instantiate abstract class _NoIter with abstract method __iter__"),
    (lambda: dlpack.to_dlpack(np.zeros(2)), TypeError,
     "_to_dlpack(): argument 'data' (position 1) must be Tensor, not numpy.ndarray"),
    (lambda: dlpack.to_dlpack([1]), TypeError,
     "_to_dlpack(): argument 'data' (position 1) must be Tensor, not list"),
]


@pytest.mark.parametrize("call, kind, message", ERRORS)
def test_errors_in_pytorchs_words(call, kind, message):
    with pytest.raises(kind) as info:
        call()
    # (the message of an abstract class's TypeError varies with the Python version's plural)
    assert str(info.value) == message or (kind is TypeError and "abstract" in message
                                          and str(info.value).startswith(message[:40]))


def test_concat_dataset_deprecated_name_warns_as_pytorch():
    ds = ConcatDataset([range(3), [7, 8]])
    with pytest.warns(FutureWarning, match=_whole("`cummulative_sizes` attribute is renamed "
                                                  "to `cumulative_sizes`")):
        assert ds.cummulative_sizes == [3, 5]


def test_iterable_dataset_is_an_abstract_iterable():
    class Stream(IterableDataset):
        def __iter__(self):
            return iter(range(3))
    assert isinstance(Stream(), collections.abc.Iterable)
    assert not isinstance(Dataset(), collections.abc.Iterable)
    # PyTorch's loader over it: a placeholder sampler, and a BatchSampler over it
    dl = DataLoader(Stream(), batch_size=2)
    assert type(dl.sampler).__name__ == "_InfiniteConstantSampler"
    assert isinstance(dl.batch_sampler, BatchSampler) and dl.batch_sampler.batch_size == 2
    assert _lists(dl) == [[0, 1], [2]]
    dl = DataLoader(Stream(), batch_size=None)
    assert dl.batch_sampler is None and [int(x) for x in dl] == [0, 1, 2]


SAMPLER_CALLS = [  # the same calls, written for either library's utils.data
    lambda d: d.RandomSampler(range(3), replacement=1),
    lambda d: d.RandomSampler(range(3), num_samples=0),
    lambda d: d.WeightedRandomSampler([1.0], 1, replacement=0),
    lambda d: d.WeightedRandomSampler([[1.0, 2.0]], 1),
    lambda d: d.BatchSampler(range(3), True, False),
    lambda d: d.BatchSampler(range(3), 2, 0),
    lambda d: d.DataLoader(list(range(3)), batch_size=0),
    lambda d: d.TensorDataset(_lib(d).zeros(3), _lib(d).zeros(4)),
    lambda d: d.StackDataset([1], y=[1]),
    lambda d: d.Dataset()[0],
    lambda d: d.IterableDataset(),
]


def _lib(d):
    return tg if d.__name__.startswith("tritongrad") else _torch()


def _failure(call, d) -> tuple:
    try:
        call(d)
    except Exception as e:  # noqa: BLE001 - the type and words are what is compared
        return type(e).__name__, str(e)
    return None, None


def test_messages_against_torch():
    torch = _torch()
    for call in SAMPLER_CALLS:
        assert _failure(call, tg.utils.data) == _failure(call, torch.utils.data)


# -- checkpoint --------------------------------------------------------------------------------

def test_default_device_type_is_the_accelerators_or_cpu():
    # PyTorch: the current accelerator's type when one is available, else "cpu" (not "cuda")
    saved = checkpoint.DefaultDeviceType._default_device_type
    checkpoint.DefaultDeviceType._default_device_type = None
    try:
        expected = "cuda" if tg.cuda.is_available() else "cpu"
        assert checkpoint.DefaultDeviceType.get_device_type() == expected
        checkpoint.DefaultDeviceType.set_device_type("cuda")
        assert checkpoint.DefaultDeviceType.get_device_type() == "cuda"
    finally:
        checkpoint.DefaultDeviceType._default_device_type = saved


def test_checkpoint_gradients_match_float64_reference():
    # both variants and checkpoint_sequential: the gradients of the plain computation
    w = np.linspace(-1, 1, 12).reshape(4, 3)
    x0 = np.linspace(0.1, 0.9, 8).reshape(2, 4)
    ref_dx = (1 - np.tanh(x0 @ w) ** 2) @ w.T  # d/dx sum(tanh(x @ w))
    wt = tg.tensor(w)
    for variant in (True, False):
        x = tg.tensor(x0, requires_grad=True)
        out = checkpoint.checkpoint(lambda t: (t @ wt).tanh(), x, use_reentrant=variant)
        out.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), ref_dx, rtol=1e-12)
        x = tg.tensor(x0, requires_grad=True)
        out = checkpoint.checkpoint_sequential([lambda t: t @ wt, lambda t: t.tanh()], 2, x,
                                               use_reentrant=variant)
        out.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), ref_dx, rtol=1e-12)


def test_reentrant_checkpoint_without_grad_inputs_warns_as_pytorch():
    lin = tg.nn.Linear(3, 2)
    with pytest.warns(UserWarning, match=_whole("None of the inputs have requires_grad=True. "
                                                "Gradients will be None")):
        out = checkpoint.checkpoint(lin, tg.ones(1, 3), use_reentrant=True)
    assert not out.requires_grad


TORCH_DETERMINISM_ERROR = (  # torch 2.13, up to its paragraph on torch.compile
    "torch.utils.checkpoint: Recomputed values for the following tensors have different "
    "metadata than during the forward pass.\ntensor at position 0:\nsaved metadata: "
    "{'shape': torch.Size([2]), 'dtype': torch.float32, 'device': device(type='cpu')}\n"
    "recomputed metadata: {'shape': torch.Size([1]), 'dtype': torch.float32, "
    "'device': device(type='cpu')}\n.\n\nTip: To see a more detailed error message, either "
    "pass `debug=True` to\n`torch.utils.checkpoint.checkpoint(...)` or wrap the code block\n"
    "with `with torch.utils.checkpoint.set_checkpoint_debug_enabled(True):` to\n"
    "enable checkpoint\u2011debug mode globally.\n")


def test_determinism_check_error_in_pytorchs_words():
    calls = []

    def shrinking(t):  # the recomputation saves a tensor of another shape
        calls.append(1)
        return t[: 2 if len(calls) == 1 else 1].exp()
    out = checkpoint.checkpoint(shrinking, tg.ones(3, requires_grad=True), use_reentrant=False)
    with pytest.raises(checkpoint.CheckpointError) as info:
        out.sum().backward()
    assert str(info.value).replace("tritongrad", "torch") == TORCH_DETERMINISM_ERROR


# -- pytree ------------------------------------------------------------------------------------

def test_register_dataclass_as_pytorch():
    @dataclasses.dataclass
    class Point:
        x: int
        y: int | None = None

    pytree.register_dataclass(Point)
    try:
        leaves, spec = pytree.tree_flatten(Point(1))
        assert leaves == [1] and pytree.tree_unflatten([7], spec) == Point(7)  # None: no leaf
        paths = [pytree.keystr(k) for k, _ in pytree.tree_flatten_with_path(Point(1, 2))[0]]
        assert paths == [".x", ".y"]
        assert pytree.tree_map(lambda v: v * 2, Point(3, 4)) == Point(6, 8)
    finally:
        pytree._deregister_pytree_node(Point)
    with pytest.raises(ValueError, match="^field_names must be specified"):
        pytree.register_dataclass(type("NotDC", (), {}))

    @dataclasses.dataclass
    class Pair:
        x: int
        y: int
    with pytest.raises(ValueError, match="^field_names does not include all dataclass fields"):
        pytree.register_dataclass(Pair, field_names=["x", "z"])


def test_register_constant_as_pytorch():
    @dataclasses.dataclass(frozen=True)
    class Config:
        norm: str

    pytree.register_constant(Config)
    try:
        leaves, spec = pytree.tree_flatten([Config("l2"), 1])
        assert leaves == [1] and pytree.tree_unflatten([5], spec) == [Config("l2"), 5]
    finally:
        pytree._deregister_pytree_node(Config)
    with pytest.raises(TypeError, match=re.escape("expects `cls` to have a non-default "
                                                  "`__eq__`")):
        pytree.register_constant(type("NoEq", (), {}))
    assert pytree.FlattenFunc is pytree.FlattenFn and "register_dataclass" in pytree.__all__


# -- flop counter ------------------------------------------------------------------------------

def _flop_cases(T) -> dict:
    T.manual_seed(0)
    lin, conv = T.nn.Linear(16, 32), T.nn.Conv2d(3, 8, 3, stride=2)
    convt = T.nn.ConvTranspose2d(4, 6, 3, stride=2)
    x1 = T.ones(8, 16, requires_grad=True)
    x2 = T.ones(2, 3, 10, 10, requires_grad=True)
    x3 = T.ones(1, 4, 5, 5, requires_grad=True)
    a, b = T.ones(4, 5, 7, requires_grad=True), T.ones(4, 7, 3, requires_grad=True)
    c, d = T.ones(3, 4, 5, requires_grad=True), T.ones(5, 6, requires_grad=True)
    fcm = __import__(T.__name__ + ".utils.flop_counter", fromlist=["FlopCounterMode"])

    def flops(fn):
        with fcm.FlopCounterMode(display=False) as fc:
            fn()
        return fc.get_total_flops()
    return {
        "linear": flops(lambda: lin(x1).sum().backward()),
        "conv2d": flops(lambda: conv(x2).sum().backward()),
        "conv_transpose2d": flops(lambda: convt(x3).sum().backward()),
        "bmm": flops(lambda: T.bmm(a, b).sum().backward()),
        "matmul": flops(lambda: (c @ d).sum().backward()),
        "addmm": flops(lambda: T.addmm(T.ones(3), T.ones(2, 4), T.ones(4, 3))),
        "baddbmm": flops(lambda: T.baddbmm(T.ones(2, 3, 3), T.ones(2, 3, 4), T.ones(2, 4, 3))),
    }


TORCH_FLOPS = {"linear": 24576, "conv2d": 41472, "conv_transpose2d": 32400, "bmm": 2520,
               "matmul": 2160, "addmm": 48, "baddbmm": 144}


def test_flop_totals_are_pytorchs():
    assert _flop_cases(tg) == TORCH_FLOPS


def test_flop_totals_against_torch():
    torch = _torch()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert _flop_cases(torch) == _flop_cases(tg)


# -- small public names ------------------------------------------------------------------------

TORCH_DL_DEVICE_TYPES = [  # torch 2.13: list(torch.utils.dlpack.DLDeviceType)
    ("kDLCPU", 1), ("kDLCUDA", 2), ("kDLCUDAHost", 3), ("kDLOpenCL", 4), ("kDLVulkan", 7),
    ("kDLMetal", 8), ("kDLVPI", 9), ("kDLROCM", 10), ("kDLROCMHost", 11), ("kDLExtDev", 12),
    ("kDLCUDAManaged", 13), ("kDLOneAPI", 14), ("kDLWebGPU", 15), ("kDLHexagon", 16),
    ("kDLMAIA", 17)]


def test_small_public_names_as_pytorch():
    assert [(m.name, m.value) for m in dlpack.DLDeviceType] == TORCH_DL_DEVICE_TYPES
    assert tg.arange(3).__dlpack_device__()[0] == dlpack.DLDeviceType.kDLCPU
    assert pytree.PyTreeSpec is pytree.TreeSpec


def test_small_public_names_against_torch():
    torch = _torch()
    assert [(m.name, m.value) for m in torch.utils.dlpack.DLDeviceType] == TORCH_DL_DEVICE_TYPES
