"""Sorting, searching, sets and histograms: parity with PyTorch 2.13 (a differential sweep's
fixes). sort/argsort/msort keep a dense input's layout, topk of a 0-d tensor with k=0,
PyTorch's argument errors, the median of an empty integer tensor, searchsorted's binary
search (NaN values, unsorted boundaries), sorter/out= checks and dtype promotion, unique
along a dim (strides, no view, complex refused), bincount of an empty input and with weights
that require grad, histc's and histogram's errors, and histogram's out=.

Expected values are NumPy / hand-computed; a torch comparison runs where torch is installed."""

import numpy as np
import pytest

import tritongrad as tg

rng = np.random.default_rng(34)
X3 = rng.standard_normal((3, 4, 5))


def t(a, dtype=None):
    r = tg.tensor(np.asarray(a))
    return r if dtype is None else r.to(dtype)


# -- sort keeps a dense input's layout ---------------------------------------------------------

def test_sort_of_a_permuted_input_keeps_its_strides_and_values():
    x = t(X3).permute(2, 0, 1)  # strides (1, 20, 5)
    ref = np.transpose(X3, (2, 0, 1))
    values, indices = tg.sort(x, 1, descending=True)
    assert values.stride() == x.stride() and indices.stride() == x.stride()
    order = np.argsort(-ref, axis=1, kind="stable")
    np.testing.assert_array_equal(indices.numpy(), order)
    np.testing.assert_array_equal(values.numpy(), np.take_along_axis(ref, order, 1))
    assert tg.argsort(x, 2).stride() == x.stride()
    assert tg.msort(x).stride() == x.stride()
    # a non-dense input (a slice): contiguous results, as PyTorch's
    assert tg.sort(t(X3)[:, ::2]).values.is_contiguous()


def test_sort_of_a_permuted_input_gradient():
    a = np.round(X3 * 2)  # ties
    x = tg.tensor(a, requires_grad=True)
    w = np.arange(60.0).reshape(5, 3, 4)
    v = tg.sort(x.permute(2, 0, 1), 1, descending=True, stable=True).values
    (v * tg.tensor(w)).sum().backward()
    p = np.transpose(a, (2, 0, 1))
    n = p.shape[1]
    order = np.flip(n - 1 - np.argsort(np.flip(p, 1), axis=1, kind="stable"), 1)
    expected = np.zeros_like(p)
    np.put_along_axis(expected, order, w, 1)  # g written at the indices
    np.testing.assert_array_equal(x.grad.numpy(), np.transpose(expected, (1, 2, 0)))


# -- topk / kthvalue / median ------------------------------------------------------------------

def test_topk_of_0d_with_k0_returns_the_element():
    r = tg.topk(t(np.float32(2.0)), 0)
    assert r.values.shape == () and r.values.item() == 2.0 and r.indices.item() == 0
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        tg.topk(t(np.float32(2.0)), 2)


def test_k_argument_errors_name_its_position():
    with pytest.raises(TypeError, match=r"topk\(\): argument 'k' \(position 2\) must be int, "
                                        r"not float"):
        tg.topk(t([1.0, 2.0]), 1.5)
    with pytest.raises(TypeError, match=r"kthvalue\(\): argument 'k' \(position 2\)"):
        tg.kthvalue(t([1.0, 2.0]), 1.5)
    with pytest.raises(NotImplementedError, match="\"kthvalue_cpu\" not implemented for 'Bool'"):
        tg.kthvalue(t([True, False]), 1)


@pytest.mark.parametrize("dtype, expected", [
    ("int64", -2 ** 63), ("int32", -2 ** 31), ("int16", 0), ("uint8", 0)])
def test_median_of_empty_integer_tensor(dtype, expected):
    for fn in (tg.median, tg.nanmedian):
        r = fn(t(np.zeros(0, dtype)))
        assert r.dtype is getattr(tg, dtype) and r.shape == () and r.item() == expected
    assert np.isnan(tg.median(t(np.zeros(0, np.float16))).item())


# -- searchsorted / bucketize ------------------------------------------------------------------

def test_searchsorted_nan_values_go_last():
    seq = t(np.array([1.0, 2.0, np.nan], np.float32))
    v = t(np.array([np.nan, 1.5], np.float32))
    np.testing.assert_array_equal(tg.searchsorted(seq, v).numpy(), [3, 1])
    np.testing.assert_array_equal(tg.searchsorted(seq, v, right=True).numpy(), [3, 1])
    np.testing.assert_array_equal(
        tg.bucketize(t(np.array([np.nan, 1.0])), t(np.array([1.0, 2.0]))).numpy(), [2, 0])


def test_searchsorted_unsorted_boundaries_follow_the_binary_search():
    # the bisection's own steps (lo=0, hi=5): for 2.5 it looks at 2 (2.0 < 2.5), then 4
    # (2.0 < 2.5), giving 5; NumPy's search gives 3
    seq = t(np.array([3.0, 1.0, 2.0, 5.0, 2.0]))
    v = t(np.array([[0.0, 2.0, 2.5], [5.0, 6.0, 1.0]]))
    np.testing.assert_array_equal(tg.searchsorted(seq, v).numpy(), [[0, 2, 5], [5, 5, 0]])


def test_searchsorted_promotes_the_dtypes():
    seq = t(np.array([1, 2, 3], np.uint8))
    np.testing.assert_array_equal(tg.searchsorted(seq, t(np.array([-1, 2]))).numpy(), [0, 1])
    assert tg.searchsorted(t(np.array([1, 2, 3])), 2.5).item() == 2
    # float16 boundaries against a float32 value: compared in float32
    seq = t(np.array([1.0, 2.0, 3.0]), tg.float16)
    assert tg.searchsorted(seq, t(np.array([2.0004], np.float32))).item() == 2
    # bool boundaries, float values: fine; both bool: no kernel
    assert tg.searchsorted(t(np.array([False, True])), t(np.array([0.5]))).item() == 1
    with pytest.raises(NotImplementedError, match="\"searchsorted_out_cpu\" not implemented"):
        tg.searchsorted(t(np.array([False, True])), t(np.array([True])))


def test_searchsorted_rows_match_numpy():
    s = np.sort(X3, -1)
    v = rng.standard_normal((3, 4, 7))
    expected = np.stack([np.searchsorted(a, b, side="right")
                         for a, b in zip(s.reshape(12, 5), v.reshape(12, 7))]).reshape(v.shape)
    np.testing.assert_array_equal(tg.searchsorted(t(s), t(v), side="right").numpy(), expected)


def test_searchsorted_sorter_checks():
    seq, v = t(np.array([3.0, 1.0, 2.0])), t(np.array([2.0]))
    assert tg.searchsorted(seq, v, sorter=t(np.array([1, 2, 0]))).item() == 1
    with pytest.raises(RuntimeError, match=r"sorter must be a tensor of long dtype but got "
                                           r"dtype Int"):
        tg.searchsorted(seq, v, sorter=t(np.array([1, 2, 0], np.int32)))
    for bad in ([1, 2, 3], [-1, 0, 1]):
        with pytest.raises(RuntimeError, match="sorter index out of range"):
            tg.searchsorted(seq, v, sorter=t(np.array(bad)))
    with pytest.raises(RuntimeError, match="input value can be a scalar only when boundaries"):
        tg.searchsorted(t(np.ones((2, 2))), 1.0)


def test_searchsorted_out():
    seq, v = t(np.array([1.0, 2.0, 3.0])), t(np.array([[0.5, 2.5], [3.5, 1.0]]))
    out = tg.empty(0, dtype=tg.int64)
    r = tg.searchsorted(seq, v, out=out)
    assert r is out and out.shape == (2, 2)
    np.testing.assert_array_equal(out.numpy(), [[0, 2], [3, 0]])
    out = tg.empty(0, dtype=tg.int32)
    tg.searchsorted(seq, v, out=out, out_int32=True)
    np.testing.assert_array_equal(out.numpy(), [[0, 2], [3, 0]])
    with pytest.raises(RuntimeError, match="output tensor's dtype is wrong, it can only be "
                                           "Int.int32. or Long.int64."):
        tg.searchsorted(seq, v, out=tg.empty(0, dtype=tg.int32))
    out = tg.empty(0, dtype=tg.int64)
    tg.bucketize(v, seq, out=out)
    np.testing.assert_array_equal(out.numpy(), [[0, 2], [3, 0]])


# -- unique / unique_consecutive ---------------------------------------------------------------

def test_unique_along_a_dim_has_pytorchs_strides_and_is_no_view():
    a = np.arange(24).reshape(2, 3, 4) % 3
    u, inv, counts = tg.unique(t(a), dim=2, return_inverse=True, return_counts=True)
    ref, ref_inv, ref_counts = np.unique(a, axis=2, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(u.numpy(), ref)
    np.testing.assert_array_equal(inv.numpy(), ref_inv.reshape(-1))
    np.testing.assert_array_equal(counts.numpy(), ref_counts)
    assert u.stride() == (3, 1, 6) and not u._is_view()  # dim moved first, then back
    x = tg.tensor([[3.0, 1.0, 3.0], [2.0, 1.0, 3.0]], requires_grad=True)
    for r, expected in ((tg.unique(x, dim=1), [[1.0, 3.0, 3.0], [1.0, 2.0, 3.0]]),
                        (tg.unique_consecutive(x, dim=1), [[3.0, 1.0, 3.0], [2.0, 1.0, 3.0]])):
        assert r.stride() == (1, 2) and not r._is_view() and r.requires_grad
        np.testing.assert_array_equal(r.detach().numpy(), expected)
    assert tg.unique(t(a), dim=0).is_contiguous()


def test_unique_of_complex_is_refused():
    z = t(np.array([1j, 1j]))
    with pytest.raises(NotImplementedError, match="\"unique\" not implemented for "
                                                  "'ComplexDouble'"):
        tg.unique_consecutive(z)
    with pytest.raises(NotImplementedError, match="\"unique\" not implemented"):
        tg.unique_consecutive(z, dim=0)
    with pytest.raises(NotImplementedError, match="\"unique_dim\" not implemented"):
        tg.unique(z, dim=0)


# -- bincount ----------------------------------------------------------------------------------

def test_bincount_of_empty_input_is_int64_even_with_weights():
    r = tg.bincount(t(np.zeros(0, np.int64)), t(np.zeros(0, np.float32)), minlength=2)
    assert r.dtype is tg.int64
    np.testing.assert_array_equal(r.numpy(), [0, 0])


def test_bincount_weights_requiring_grad():
    w = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    r = tg.bincount(t(np.array([0, 2, 2])), w)
    np.testing.assert_array_equal(r.detach().numpy(), [1.0, 0.0, 5.0])
    assert r.requires_grad and r.grad_fn is not None
    with pytest.raises(RuntimeError, match="derivative for aten::bincount is not implemented"):
        r.sum().backward()
    with tg.no_grad():
        assert not tg.bincount(t(np.array([0])), w[:1]).requires_grad


# -- histc / histogram -------------------------------------------------------------------------

def test_histc_errors():
    with pytest.raises(RuntimeError, match=r"torch.histc: range of \[1, inf\] is not finite"):
        tg.histc(t(np.array([1.0, np.inf])), 3)
    with pytest.raises(TypeError, match=r"histc\(\): argument 'bins' \(position 2\)"):
        tg.histc(t(np.array([1.0])), 2.5)


def test_histogram_bins_argument():
    x = t(np.array([0.0, 1.0, 2.0]))
    for bad in (2.5, [1, 2], None):
        with pytest.raises(TypeError, match=r"histogram\(\) received an invalid combination "
                                            r"of arguments"):
            tg.histogram(x, bad)
    with pytest.raises(RuntimeError, match=r"torch.histogram\(\): bins must be > 0, but got -1"):
        tg.histogram(x, -1)


def test_histogram_out():
    a = np.array([0.0, 1.0, 1.5, 3.0], np.float32)
    hist, edges = tg.empty(0), tg.empty(0)
    r = tg.histogram(t(a), 3, out=(hist, edges))
    assert type(r).__name__ == "histogram_out" and r.hist is hist and r.bin_edges is edges
    ref_hist, ref_edges = np.histogram(a, 3)
    np.testing.assert_allclose(hist.numpy(), ref_hist)
    np.testing.assert_allclose(edges.numpy(), ref_edges, rtol=1e-6)
    with pytest.warns(UserWarning, match="was resized"):  # (non-empty outs: as PyTorch)
        tg.histogram(t(a), t(np.array([0.0, 2.0, 4.0], np.float32)), out=(hist, edges))
    np.testing.assert_array_equal(hist.numpy(), [3.0, 1.0])
    np.testing.assert_array_equal(edges.numpy(), [0.0, 2.0, 4.0])
    with pytest.raises(RuntimeError, match="input tensor and bin_edges tensor should have the "
                                           "same dtype, but got input float and bin_edges "
                                           "double"):
        tg.histogram(t(a), 3, out=(tg.empty(0), tg.empty(0, dtype=tg.float64)))
    with pytest.raises(RuntimeError, match="input tensor and hist tensor should have the same "
                                           "dtype"):
        tg.histogram(t(a), 3, out=(tg.empty(0, dtype=tg.float64), tg.empty(0)))


def test_histogram_results_pickle():
    import pickle
    r = pickle.loads(pickle.dumps(tg.histogram(t(np.array([1.0, 2.0, 3.0])), 2)))
    assert type(r).__name__ == "histogram"
    np.testing.assert_array_equal(r.hist.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(r.bin_edges.numpy(), [1.0, 2.0, 3.0])


def test_sort_results_pickle():
    import pickle
    r = pickle.loads(pickle.dumps(tg.sort(t(np.array([2.0, 1.0])))))
    np.testing.assert_array_equal(r.values.numpy(), [1.0, 2.0])
    m = pickle.loads(pickle.dumps(tg.aminmax(t(np.array([2.0, 1.0])))))
    assert type(m).__name__ == "aminmax" and (m.min.item(), m.max.item()) == (1.0, 2.0)


# -- against PyTorch -----------------------------------------------------------------------------

def _torch_cases():
    s = np.array([3.0, 1.0, 2.0, 5.0, 2.0, np.nan], np.float32)
    v = np.array([[0.0, 2.0, 2.5], [5.0, np.nan, 1.0]], np.float32)
    u = np.arange(24).reshape(2, 3, 4) % 3
    return [
        lambda L: L.sort(L.tensor(X3).permute(2, 0, 1), 0),
        lambda L: L.searchsorted(L.tensor(s), L.tensor(v)),
        lambda L: L.searchsorted(L.tensor(s), L.tensor(v), side="right"),
        lambda L: L.searchsorted(L.tensor(np.sort(X3, -1)), L.tensor(X3[..., :2])),
        lambda L: L.unique(L.tensor(u), dim=1, return_inverse=True, return_counts=True),
        lambda L: L.unique_consecutive(L.tensor(u), dim=2, return_counts=True),
        lambda L: L.median(L.tensor(np.zeros(0, np.int32))),
        lambda L: L.topk(L.tensor(np.float32(1.0)), 0),
        lambda L: L.bincount(L.tensor(np.zeros(0, np.int64)), L.tensor(np.zeros(0))),
        lambda L: L.histogram(L.tensor(X3.ravel()), 4, out=(L.empty(0, dtype=L.float64),
                                                           L.empty(0, dtype=L.float64))),
    ]


def _flat(r):
    if isinstance(r, tuple):
        return [x for item in r for x in _flat(item)]
    return [(r.numpy(), str(r.dtype).split(".")[-1], r.stride())]


@pytest.mark.parametrize("i", range(len(_torch_cases())))
def test_against_torch(i):
    torch = pytest.importorskip("torch")
    fn = _torch_cases()[i]
    ours, theirs = _flat(fn(tg)), _flat(fn(torch))
    assert len(ours) == len(theirs)
    for (a, da, sa), (b, db, sb) in zip(ours, theirs):
        assert da == db and sa == sb
        np.testing.assert_array_equal(a, b)
