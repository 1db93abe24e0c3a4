"""embedding_bag in full (nn/_embedding_bag.py): the top-level ``tg.embedding_bag`` and its four
outputs (output, offset2bag, bag_size, max_indices) in every mode, ``per_sample_weights``,
``padding_idx``, ``include_last_offset`` and ``max_norm`` through ``F.embedding_bag``, the
top-level ``embedding_renorm_``, and PyTorch's argument errors. Values against a NumPy float64
reference written here from PyTorch's documented definitions; gradients (the weight's and
per_sample_weights') against finite differences."""

import math

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import host
from tritongrad import nn

F = nn.functional
rng = np.random.default_rng(12)
W = rng.standard_normal((10, 3))
W[5] = W[3]  # two rows with equal values: max mode's first maximum in the bag wins
IDX = np.array([5, 3, 3, 5, 4, 7, 2, 9, 4, 4, 1])
OFFSETS = np.array([0, 4, 4, 7, 9])  # bags [5 3 3 5], [], [4 7 2], [9 4], [4 1]
MODES = ("sum", "mean", "max")


def reference(idx, offsets, mode, psw=None, pad=None, last=False):
    """(output, offset2bag, bag_size, max_indices) from the definitions: a bag is the indices
    from its offset to the next one (``last``: the final offset ends the last bag), padding
    indices are left out, the maximum's index is the first row reaching it."""
    starts = list(offsets[:-1] if last else offsets)
    ends = starts[1:] + [offsets[-1] if last else len(idx)]
    bags = len(starts)
    out, size = np.zeros((bags, W.shape[1])), np.zeros(bags, np.int64)
    arg = np.zeros((bags, W.shape[1]), np.int64)
    for b, (lo, hi) in enumerate(zip(starts, ends)):
        pos = [p for p in range(lo, hi) if idx[p] != pad]
        size[b] = len(pos)
        if not pos:
            continue
        rows = W[idx[pos]] * (1.0 if psw is None else psw[pos, None])
        out[b] = {"sum": rows.sum(0), "mean": rows.mean(0), "max": rows.max(0)}[mode]
        arg[b] = idx[pos][rows.argmax(0)]  # (argmax: the first of equal maxima)
    offset2bag = np.array([sum(s <= i for s in starts) - 1 for i in range(len(idx))])
    if mode == "sum":
        size = np.zeros(bags, np.int64)
    return out, offset2bag, size, arg if mode == "max" else size


def _t(a, device, dtype=None):
    return tg.tensor(a, device=device, dtype=dtype)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("padding_idx", [None, 4, -1])
def test_four_outputs_match_the_definitions(device, mode, padding_idx):
    pad = None if padding_idx is None else padding_idx % 10
    psw = rng.random(len(IDX)) if mode == "sum" else None
    got = tg.embedding_bag(_t(W, device), _t(IDX, device), _t(OFFSETS, device), False,
                           MODES.index(mode), False, None if psw is None else _t(psw, device),
                           False, padding_idx)
    for i, (g, want) in enumerate(zip(got, reference(IDX, OFFSETS, mode, psw, pad))):
        if i == 0:
            np.testing.assert_allclose(host(g), want, rtol=1e-12, atol=1e-15)
        else:
            assert g.dtype is tg.int64 and g.device.type == device
            np.testing.assert_array_equal(host(g), want, err_msg=f"output {i}")


@pytest.mark.parametrize("mode", MODES)
def test_include_last_offset_and_int32_indices(mode):
    offsets = np.append(OFFSETS, len(IDX))  # CSR: the last entry ends the last bag
    got = tg.embedding_bag(_t(W, "cpu"), _t(IDX, "cpu", tg.int32), _t(offsets, "cpu", tg.int32),
                           False, MODES.index(mode), False, None, True, None)
    want = reference(IDX, offsets, mode, last=True)
    np.testing.assert_allclose(host(got[0]), want[0], rtol=1e-12)
    for g, w in zip(got[1:], want[1:]):  # int32 auxiliary outputs when both index tensors are
        assert g.dtype is tg.int32
        np.testing.assert_array_equal(host(g), w)
    # an int64 offsets tensor makes them int64; F's 1-D input with the same CSR offsets agrees
    assert tg.embedding_bag(_t(W, "cpu"), _t(IDX, "cpu", tg.int32), _t(offsets, "cpu"), False,
                            0)[1].dtype is tg.int64
    np.testing.assert_allclose(host(F.embedding_bag(_t(IDX, "cpu"), _t(W, "cpu"),
                                                    _t(offsets, "cpu"), mode=mode,
                                                    include_last_offset=True)), want[0],
                               rtol=1e-12)


def test_empty_inputs_and_bags():
    w = _t(W, "cpu")
    out, o2b, size, arg = tg.embedding_bag(w, _t(np.zeros(0, np.int64), "cpu"),
                                           _t([0, 0], "cpu"), False, 2)
    np.testing.assert_array_equal(host(out), np.zeros((2, 3)))
    assert o2b.shape == (0,) and host(size).tolist() == [0, 0] and arg.shape == (2, 3)
    out = tg.embedding_bag(w, _t(IDX, "cpu"), _t(np.zeros(0, np.int64), "cpu"), False, 1)
    assert [tuple(t.shape) for t in out] == [(0, 3), (len(IDX),), (0,), (0,)]


@pytest.mark.parametrize("mode", MODES)
def test_gradients_against_finite_differences(device, mode):
    # (random rows: no ties, at which max mode's gradient jumps from one row to the other)
    inputs = [_t(rng.standard_normal((6, 3)), device, tg.float64).requires_grad_()]
    idx, offsets = _t([5, 3, 3, 1, 0, 2, 2], device), _t([0, 3, 3, 5], device)
    if mode == "sum":
        inputs.append(_t(rng.random(7), device, tg.float64).requires_grad_())

    def fn(weight, psw=None):
        return F.embedding_bag(idx, weight, offsets, mode=mode, per_sample_weights=psw,
                               padding_idx=2)
    assert tg.autograd.gradcheck(fn, inputs, fast_mode=device == "cuda")


def test_max_sends_the_gradient_to_the_first_maximum(device):
    w = _t(W, device).requires_grad_()
    out, _, _, arg = tg.embedding_bag(w, _t([5, 3, 3], device), _t([0], device), False, 2)
    out.sum().backward()
    assert host(arg).tolist() == [[5, 5, 5]]  # rows 3 and 5 are equal: 5 comes first
    grad = host(w.grad)
    np.testing.assert_array_equal(grad[5], np.ones(3))
    np.testing.assert_array_equal(np.delete(grad, 5, 0), np.zeros((9, 3)))


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_scale_grad_by_freq_divides_by_each_rows_count(mode):
    w = _t(W, "cpu").requires_grad_()
    idx = np.array([1, 1, 2, 1, 3])
    F.embedding_bag(_t(idx, "cpu"), w, _t([0, 2], "cpu"), mode=mode,
                    scale_grad_by_freq=True).sum().backward()
    per = np.array([1 / 2, 1 / 2, 1 / 3, 1 / 3, 1 / 3]) if mode == "mean" else np.ones(5)
    want = np.zeros(10)
    for i, p in zip(idx, per):
        want[i] += p / np.count_nonzero(idx == i)
    np.testing.assert_allclose(host(w.grad), np.repeat(want[:, None], 3, 1), rtol=1e-6)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf])
def test_max_norm_renormalises_the_used_rows_in_place(device, norm_type):
    table = W * 3
    w = _t(table, device)
    out = F.embedding_bag(_t(IDX, device), w, _t(OFFSETS, device), max_norm=1.5,
                          norm_type=norm_type, mode="sum", padding_idx=4)
    want = table.copy()
    for i in np.unique(IDX):  # every used row, the padding row included (as PyTorch's)
        n = np.linalg.norm(table[i], norm_type)
        if n > 1.5:
            want[i] = table[i] * 1.5 / (n + 1e-7)
    np.testing.assert_allclose(host(w), want, rtol=1e-12)  # rows 0, 6, 8 unused: unchanged
    assert w._version == 1
    ends = list(OFFSETS[1:]) + [len(IDX)]
    bags = [want[[i for i in IDX[a:b] if i != 4]].sum(0) for a, b in zip(OFFSETS, ends)]
    np.testing.assert_allclose(host(out), bags, rtol=1e-12, atol=1e-15)


def test_per_sample_weights_2d_input_and_module(device):
    i2, p2 = rng.integers(0, 10, (3, 4)), rng.random((3, 4))
    y = F.embedding_bag(_t(i2, device), _t(W, device), mode="sum",
                        per_sample_weights=_t(p2, device))
    np.testing.assert_allclose(host(y), (W[i2] * p2[..., None]).sum(1), rtol=1e-12)
    m = nn.EmbeddingBag(10, 3, mode="sum", padding_idx=0).double()
    x, p = _t(IDX, "cpu"), _t(rng.random(len(IDX)), "cpu", tg.float64).requires_grad_()
    y = m(x, _t(OFFSETS, "cpu"), per_sample_weights=p)
    y.sum().backward()
    # d(sum of bag sums)/d(weight of position i) = sum of row idx[i] (zero for padding row 0)
    np.testing.assert_allclose(host(p.grad), host(m.weight.sum(1))[IDX], rtol=1e-12)


def test_embedding_renorm_top_level(device):
    table = W * 3
    w = _t(table, device)
    assert tg.embedding_renorm_(w, _t([[0, 1], [1, 7]], device), 1.0, 2.0) is w
    want = table.copy()
    for i in (0, 1, 7):
        want[i] = table[i] / (np.linalg.norm(table[i]) + 1e-7)
    np.testing.assert_allclose(host(w), want, rtol=1e-12)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used"):
        tg.embedding_renorm_(_t(W, device).requires_grad_(), _t([0], device), 1.0, 2.0)
    with pytest.raises(RuntimeError, match="Expected 2-dimensional tensor, but got "
                                           "1-dimensional tensor for argument #1 'self'"):
        tg.embedding_renorm_(_t(W[0], device), _t([0], device), 1.0, 2.0)
    with pytest.raises(RuntimeError, match="argument #2 'indices' to have one of the following "
                                           "scalar types: Long, Int"):
        tg.embedding_renorm_(w, _t([0.0], device), 1.0, 2.0)
    with pytest.raises(RuntimeError, match="norm\\(\\): input dtype should be either floating "
                                           "point or complex. Got Long instead."):
        tg.embedding_renorm_(_t([[1, 2]], device), _t([0], device), 1.0, 2.0)
    if device == "cpu":  # (CUDA's index checks may be deferred)
        with pytest.raises(IndexError, match="index 10 out of range for tensor of size "
                                             "\\[10, 3\\] at dimension 0"):
            tg.embedding_renorm_(w, _t([10], device), 1.0, 2.0)


def _bag(**kw):
    args = {"weight": _t(W, "cpu"), "indices": _t(IDX, "cpu"), "offsets": _t(OFFSETS, "cpu"),
            "scale_grad_by_freq": False, "mode": 0, "sparse": False,
            "per_sample_weights": None, "include_last_offset": False, "padding_idx": None}
    args.update(kw)
    return tg.embedding_bag(*args.values())


@pytest.mark.parametrize("kw, error, message", [
    ({"mode": 3}, RuntimeError, "`mode` must be sum, mean, or max."),
    ({"mode": 1, "per_sample_weights": _t(np.ones(11), "cpu")}, RuntimeError,
     "embedding_bag: per_sample_weights only supported with mode='sum'"),
    ({"per_sample_weights": _t(np.ones(11), "cpu", tg.float32)}, RuntimeError,
     "to have the same type as tensor for argument #1 'per_sample_weights'"),
    ({"per_sample_weights": _t(np.ones(5), "cpu")}, RuntimeError,
     "one weight per index \\(11\\)"),
    ({"padding_idx": 10}, RuntimeError,
     "padding_idx must be within the number of embeddings, -10 through 9, but got 10"),
    ({"padding_idx": -11}, RuntimeError, "but got -11"),
    ({"indices": _t(IDX * 1.0, "cpu")}, RuntimeError,
     "argument #1 'indices' to have one of the following scalar types: Long, Int"),
    ({"offsets": _t([1, 4], "cpu")}, RuntimeError,
     ("offsets\\[0\\] has to be 0, i.e., the first sequence in the mini-batch has to start "
      "from position 0. However, got 1")),
    ({"offsets": _t([0, 12], "cpu")}, RuntimeError,
     "offsets\\[-1\\] can not be greater than input's length 11 but got offsets\\[-1\\] of 12"),
    ({"offsets": _t(np.zeros(0, np.int64), "cpu"), "include_last_offset": True}, RuntimeError,
     "include_last_offset: number of offset should be at least 1"),
    ({"offsets": _t([[0, 2]], "cpu")}, RuntimeError,
     "offsets has to be a 1D Tensor, but got Tensor of dimension 2"),
    ({"weight": _t(W[0], "cpu")}, RuntimeError,
     "weight has to be a 2D Tensor, but got Tensor of dimension 1"),
    ({"indices": _t([1, 12], "cpu"), "offsets": _t([0], "cpu")}, RuntimeError,
     "embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be 12"),
])
def test_top_level_errors(kw, error, message):
    with pytest.raises(error, match=message):
        _bag(**kw)


def test_functional_errors():
    x, w, off = _t(IDX, "cpu"), _t(W, "cpu"), _t(OFFSETS, "cpu")
    psw = _t(np.ones(len(IDX)), "cpu")
    with pytest.raises(NotImplementedError, match="per_sample_weights was not None. "
                       "per_sample_weights is only supported for mode='sum' \\(got "
                       "mode='max'\\). Please open a feature request on GitHub."):
        F.embedding_bag(x, w, off, mode="max", per_sample_weights=psw)
    with pytest.raises(ValueError, match="If per_sample_weights \\(tritongrad.Size\\(\\[3\\]\\)\\) "
                       "is not None, then it must have the same shape as the input"):
        F.embedding_bag(x, w, off, mode="sum", per_sample_weights=psw[:3])
    with pytest.raises(ValueError, match="max mode does not support scaling the gradient"):
        F.embedding_bag(x, w, off, mode="max", scale_grad_by_freq=True)
    with pytest.raises(ValueError, match="max mode does not support sparse weights"):
        F.embedding_bag(x, w, off, mode="max", sparse=True)
    with pytest.raises(ValueError, match="mode has to be one of sum, mean or max"):
        F.embedding_bag(x, w, off, mode="min")
    with pytest.raises(ValueError, match="weight has to be a 2D Tensor"):
        F.embedding_bag(x, w[0], off)
    with pytest.raises(ValueError, match="if input is 2D, then offsets has to be None"):
        F.embedding_bag(x.reshape(1, -1), w, off)
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
        F.embedding_bag(x, w)
    with pytest.raises(RuntimeError, match="padding_idx must be within the number of "
                                           "embeddings, -10 through 9, but got 10"):
        F.embedding_bag(x, w, off, padding_idx=10)
    with pytest.warns(UserWarning, match="Argument order of nn.functional.embedding_bag"):
        y = F.embedding_bag(w, x, off)  # the deprecated (weight, input) order is swapped back
    np.testing.assert_allclose(host(y), reference(IDX, OFFSETS, "mean")[0], rtol=1e-12)
