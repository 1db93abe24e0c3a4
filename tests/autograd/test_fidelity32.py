"""Differences from PyTorch 2.13 closed in session 32 (tensor ops): cummax/cummin as one node
each, nansum as one node (so nanmean's gradient is NaN over an all-NaN slice), the (values,
indices) out= forms of median/nanmedian/mode and logcumsumexp's out=, split_with_sizes and
broadcast_tensors as PyTorch returns them, ml_dtypes bfloat16 arrays into tensors, and the
rand/randn and special-node refactors.

Each behaviour is checked against float64 NumPy references or finite differences (no torch),
and again against torch where it is installed (``pytest.importorskip``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tritongrad as tg

NAN = float("nan")


def _torch():
    return pytest.importorskip("torch")


# -- cummax / cummin ----------------------------------------------------------------------------

def _running_ref(a: np.ndarray, dim: int, better):
    """(values, indices) of the running extreme along ``dim``: the later element wins when
    ``better(later, earlier)`` holds (ties: >= / <=) or it is NaN, unless the earlier is NaN."""
    a = np.moveaxis(np.asarray(a), dim, -1)
    vals = np.empty_like(a)
    idx = np.empty(a.shape, np.int64)
    for pos in np.ndindex(a.shape[:-1]):
        best, at = None, 0
        for i, v in enumerate(a[pos]):
            if best is None:
                best, at = v, i
            else:
                nan_b, nan_v = best != best, v != v
                if nan_v or (not nan_b and better(v, best)):
                    best, at = v, i
            vals[pos + (i,)], idx[pos + (i,)] = best, at
    return np.moveaxis(vals, -1, dim), np.moveaxis(idx, -1, dim)


_CASES = [
    np.array([1., 3., 3., NAN, 2., NAN, 5.]),
    np.array([[2., 1., 2., 0.5, 2.], [-1., -1., NAN, 4., 4.], [0., -0., 0., 1., -3.]]),
]


@pytest.mark.parametrize("name, better", [("cummax", np.greater_equal),
                                          ("cummin", np.less_equal)])
@pytest.mark.parametrize("case", range(len(_CASES)))
def test_cummax_cummin_values_indices_ties_and_nan(name, better, case):
    a = _CASES[case]
    for dim in range(-a.ndim, a.ndim):
        r = getattr(tg, name)(tg.tensor(a, dtype=tg.float64), dim)
        want_v, want_i = _running_ref(a, dim, better)
        np.testing.assert_array_equal(r.indices.numpy(), want_i)
        np.testing.assert_array_equal(r.values.numpy(), want_v)  # (NaN == NaN here)
        # the value is the input's element at the index (-0.0 after 0.0 at a tie: -0.0)
        np.testing.assert_array_equal(np.signbit(r.values.numpy()),
                                      np.signbit(np.take_along_axis(a, want_i, dim)))
        assert type(r).__name__ == name and r.indices.dtype is tg.int64


@pytest.mark.parametrize("dtype", [tg.int64, tg.int32, tg.bool, tg.float16, tg.bfloat16])
def test_cummax_other_dtypes(dtype):
    a = np.array([[3, 1, 3, 0, 5, 5], [0, 1, 1, 0, 0, 1]])
    x = tg.tensor(a).to(dtype)
    ref = a.astype(bool) if dtype is tg.bool else a
    for name, better in (("cummax", np.greater_equal), ("cummin", np.less_equal)):
        r = getattr(tg, name)(x, 1)
        want_v, want_i = _running_ref(ref, 1, better)
        assert r.values.dtype is dtype
        np.testing.assert_array_equal(r.indices.numpy(), want_i)
        np.testing.assert_array_equal(r.values.float().numpy(), want_v.astype(np.float32))


def test_cummax_non_contiguous_and_method_keywords():
    a = np.random.default_rng(0).integers(0, 4, (5, 6)).astype(np.float64)
    x = tg.tensor(a).t()  # (a transposed view)
    r = x.cummax(dim=0)
    want_v, want_i = _running_ref(a.T, 0, np.greater_equal)
    np.testing.assert_array_equal(r.indices.numpy(), want_i)
    np.testing.assert_array_equal(r.values.numpy(), want_v)
    r = tg.cummin(input=x, dim=-1)
    np.testing.assert_array_equal(r.indices.numpy(), _running_ref(a.T, 1, np.less_equal)[1])


@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_cummax_is_one_node_saving_input_and_indices(name):
    x = tg.tensor([[1., 3., 2.], [2., 2., 5.]], requires_grad=True)
    r = getattr(tg, name)(x, 1)
    node = r.values.grad_fn
    assert type(node).__name__ == ("CummaxBackward0" if name == "cummax" else "CumminBackward0")
    assert node.next_functions[0][0] is not None and len(node.next_functions) == 1
    assert node._saved_self is x
    assert tg.equal(node._saved_indices, r.indices)
    assert r.indices.grad_fn is None and not r.indices.requires_grad


@pytest.mark.parametrize("name, better", [("cummax", np.greater_equal),
                                          ("cummin", np.less_equal)])
def test_cummax_gradient_adds_at_the_indices(name, better):
    a = np.array([[1., 3., 3., NAN, 2., NAN, 0.], [4., 1., 4., 4., 2., 7., 7.]])
    x = tg.tensor(a, dtype=tg.float64, requires_grad=True)
    g = np.arange(14, dtype=np.float64).reshape(2, 7) + 1
    r = getattr(tg, name)(x, 1)
    r.values.backward(tg.tensor(g))
    want = np.zeros_like(a)
    _, idx = _running_ref(a, 1, better)
    for row in range(2):
        np.add.at(want[row], idx[row], g[row])
    np.testing.assert_array_equal(x.grad.numpy(), want)


@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_cummax_gradient_finite_differences_first_and_second_order(name):
    rng = np.random.default_rng(1)
    x = tg.tensor(rng.permutation(12).reshape(3, 4) * 0.7 + 0.1, dtype=tg.float64,
                  requires_grad=True)  # (distinct values: the indices stay put under eps)
    fn = getattr(tg, name)
    for dim in (0, 1):
        assert tg.autograd.gradcheck(lambda t: fn(t, dim).values, (x,))
        assert tg.autograd.gradgradcheck(lambda t: fn(t, dim).values * t, (x,))


def test_cummax_saved_indices_modified_in_place_is_refused():
    x = tg.tensor([1., 3., 2.], requires_grad=True)
    values, indices = tg.cummax(x, 0)
    indices.zero_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        values.sum().backward()


def test_cummax_forward_ad_takes_the_tangent_at_the_indices():
    import tritongrad.autograd.forward_ad as fwad
    with fwad.dual_level():
        d = fwad.make_dual(tg.tensor([1., 3., 2., 3.]), tg.tensor([10., 20., 30., 40.]))
        t = fwad.unpack_dual(tg.cummax(d, 0).values).tangent
        s = fwad.unpack_dual(tg.cummin(d, 0).values).tangent
    assert t.tolist() == [10., 20., 20., 40.]
    assert s.tolist() == [10., 10., 10., 10.]


def test_cummax_zero_dim_and_empty():
    x = tg.tensor(2.5, requires_grad=True)
    for dim in (0, -1):
        r = tg.cummax(x, dim)
        assert r.values.shape == () and r.indices.shape == () and r.indices.item() == 0
        assert r.values.item() == 2.5 and type(r.values.grad_fn).__name__ == "CummaxBackward0"
    tg.cummin(x, 0).values.backward()
    assert x.grad.item() == 1.0
    with pytest.raises(IndexError, match=r"cummax\(\): Expected reduction dim -1 or 0 for "
                                         r"scalar but got 1"):
        tg.cummax(x, 1)
    e = tg.ones(0, 3, requires_grad=True)
    for dim in (0, 1):
        r = tg.cummax(e, dim)
        assert r.values.shape == (0, 3) and r.indices.shape == (0, 3)
        r.values.sum().backward()
        assert e.grad.shape == (0, 3)


def test_cummax_argument_errors():
    x = tg.ones(2, 3)
    with pytest.raises(IndexError, match="out of range"):
        tg.cummax(x, 2)
    with pytest.raises(TypeError, match="dim"):
        tg.cummax(x, 0.5)
    with pytest.raises(RuntimeError):  # (complex has no order; PyTorch: NotImplementedError)
        tg.cummax(tg.ones(2, dtype=tg.complex64), 0)


@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_cummax_out_pair(name):
    x = tg.tensor([[1., 3.], [2., 0.]])
    v, i = tg.empty(0), tg.empty(0, dtype=tg.int64)
    r = getattr(tg, name)(x, 1, out=(v, i))
    assert r.values is v and r.indices is i and type(r).__name__ == name + "_out"
    want = getattr(tg, name)(x, 1)
    assert tg.equal(v, want.values) and tg.equal(i, want.indices)
    v, i = tg.empty(5), tg.empty(5, dtype=tg.int64)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        getattr(tg, name)(x, 1, out=[v, i])
    assert sum("was resized" in str(w.message) for w in caught) == 2 and v.shape == (2, 2)
    with pytest.raises(RuntimeError, match="expected scalar_type Float but found Double"):
        getattr(tg, name)(x, 1, out=(tg.empty(0, dtype=tg.float64), i))
    with pytest.raises(RuntimeError, match="expected scalar_type Long but found Int"):
        getattr(tg, name)(x, 1, out=(v, tg.empty(0, dtype=tg.int32)))
    with pytest.raises(TypeError, match="argument 'out' must be tuple of Tensors, not Tensor"):
        getattr(tg, name)(x, 1, out=v)
    with pytest.raises(TypeError, match="expected tuple of 2 elements but got 3"):
        getattr(tg, name)(x, 1, out=(v, i, v))
    with pytest.raises(RuntimeError, match=f"{name}\\(\\): functions with out=... arguments "
                                           f"don't support automatic differentiation"):
        getattr(tg, name)(x.clone().requires_grad_(), 1, out=(v, i))


def test_cummax_matches_torch():
    torch = _torch()
    rng = np.random.default_rng(2)
    a = rng.integers(0, 4, (4, 9)).astype(np.float64)
    a[rng.random(a.shape) < 0.15] = np.nan
    g = rng.standard_normal(a.shape)
    for name in ("cummax", "cummin"):
        for dim in (0, 1, -1):
            x, tx = tg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
            r, tr = getattr(tg, name)(x, dim), getattr(torch, name)(tx, dim)
            np.testing.assert_array_equal(r.indices.numpy(), tr.indices.numpy())
            np.testing.assert_array_equal(r.values.detach().numpy(), tr.values.detach().numpy())
            r.values.backward(tg.tensor(g))
            tr.values.backward(torch.tensor(g))
            np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-15, atol=0)
            assert type(r.values.grad_fn).__name__ == tr.values.grad_fn.name()
    b = np.array([True, False, True, True])
    for name in ("cummax", "cummin"):
        assert (getattr(tg, name)(tg.tensor(b), 0).indices.tolist()
                == getattr(torch, name)(torch.tensor(b), 0).indices.tolist())


# -- nansum / nanmean ----------------------------------------------------------------------------

def test_nansum_is_one_node_with_gradient_zero_at_nan():
    a = np.array([[NAN, 1., 2.], [3., NAN, NAN]])
    x = tg.tensor(a, dtype=tg.float64, requires_grad=True)
    y = tg.nansum(x, 1)
    assert type(y.grad_fn).__name__ == "NansumBackward0" and y.grad_fn._saved_self is x
    np.testing.assert_array_equal(y.detach().numpy(), np.nansum(a, 1))
    y.backward(tg.tensor([2., 5.], dtype=tg.float64))
    np.testing.assert_array_equal(x.grad.numpy(), np.where(np.isnan(a), 0., [[2.], [5.]]))
    x = tg.tensor([[0.5, -1.], [2., 3.]], dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradcheck(lambda t: tg.nansum(t, 0, keepdim=True), (x,))
    assert tg.autograd.gradgradcheck(lambda t: tg.nansum(t * t), (x,))
    assert tg.nansum(tg.tensor([1, 2])).dtype is tg.int64
    assert tg.nansum(tg.tensor([1, 2]), dtype=tg.float32).dtype is tg.float32


def test_nanmean_gradient_nan_over_an_all_nan_slice():
    a = np.array([[NAN, NAN], [1., NAN], [2., 4.]])
    x = tg.tensor(a, dtype=tg.float64, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no NumPy warning from inf * 0 either)
        y = tg.nanmean(x, 1)
        y.sum().backward()
    np.testing.assert_array_equal(y.detach().numpy()[1:], [1., 3.])
    assert np.isnan(y.detach().numpy()[0])
    got = x.grad.numpy()
    assert np.isnan(got[0]).all()  # 0 / 0: PyTorch's NaN
    np.testing.assert_array_equal(got[1:], [[1., 0.], [0.5, 0.5]])
    # finite differences agree where the function is finite, and give NaN where it is not
    eps = 1e-6
    for pos in np.ndindex(a.shape):
        if np.isnan(a[pos]):
            continue
        up, down = a.copy(), a.copy()
        up[pos] += eps
        down[pos] -= eps
        fd = (np.nanmean(up[1:], 1).sum() - np.nanmean(down[1:], 1).sum()) / (2 * eps)
        assert abs(fd - got[pos]) < 1e-8
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (NumPy's mean of an empty slice)
        up = a.copy()
        up[0, 0] += eps
        assert np.isnan(np.nanmean(up[:1], 1).sum() - np.nanmean(a[:1], 1).sum())


def test_nanmean_gradient_matches_torch():
    torch = _torch()
    a = np.array([[NAN, NAN, NAN], [1., NAN, 5.], [2., 4., 8.]])
    for dim in (0, 1, None):
        x, tx = tg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        (tg.nanmean(x) if dim is None else tg.nanmean(x, dim)).sum().backward()
        (torch.nanmean(tx) if dim is None else torch.nanmean(tx, dim)).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())
        tn = torch.nansum(torch.tensor(a, requires_grad=True), 0)
        assert type(tg.nansum(tg.tensor(a, requires_grad=True), 0).grad_fn).__name__ \
            == tn.grad_fn.name()


# -- median / nanmedian / mode / logcumsumexp out= -----------------------------------------------

_PAIR_ERRORS = {
    "median": ("Expected tensor for 'values' to have the same type as tensor for argument #2 "
               "'self'; but type tritongrad.DoubleTensor does not equal "
               "tritongrad.FloatTensor (while checking arguments for median)",
               "Expected tensor for argument #1 'indices' to have scalar type Long; but got "
               "tritongrad.IntTensor instead (while checking arguments for median)"),
    "mode": ("expected scalar type 'Float' but got 'Double' for values output",
             "expected scalar type 'Long' but got 'Int' for indices output"),
}
_PAIR_ERRORS["nanmedian"] = _PAIR_ERRORS["median"]


@pytest.mark.parametrize("name", ["median", "nanmedian", "mode"])
def test_values_indices_out_forms(name):
    a = np.array([[3., 1., 2., 1.], [1., NAN, 5., 5.]], np.float32)
    x = tg.tensor(a)
    fn = getattr(tg, name)
    for keepdim in (False, True):
        want = fn(x, 1, keepdim)
        v, i = tg.empty(0), tg.empty(0, dtype=tg.int64)
        r = fn(x, 1, keepdim, out=(v, i))
        assert r.values is v and r.indices is i and type(r).__name__ == name + "_out"
        assert tg.equal(i, want.indices) and v.shape == want.values.shape
        np.testing.assert_array_equal(v.numpy(), want.values.numpy())
    if name != "mode":  # (the values against NumPy's lower median: nanmedian skips NaN)
        vals = fn(x, 1).values.numpy()
        row1 = np.sort(a[1][~np.isnan(a[1])]) if name == "nanmedian" else None
        assert vals[0] == 1.0 and (np.isnan(vals[1]) if name == "median" else
                                   vals[1] == row1[(len(row1) - 1) // 2])
    v, i = tg.empty(3), tg.empty(3, dtype=tg.int64)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn(x, 1, out=(v, i))
    assert sum("was resized" in str(w.message) for w in caught) == 2 and v.shape == (2,)
    values_error, indices_error = _PAIR_ERRORS[name]
    with pytest.raises(RuntimeError, match=values_error.replace("(", r"\(").replace(
            ")", r"\)")):
        fn(x, 1, out=(tg.empty(2, dtype=tg.float64), i))
    with pytest.raises(RuntimeError, match=indices_error.replace("(", r"\(").replace(
            ")", r"\)")):
        fn(x, 1, out=(v, tg.empty(2, dtype=tg.int32)))
    with pytest.raises(TypeError, match="must be tuple of Tensors, not Tensor"):
        fn(x, 1, out=v)
    with pytest.raises(TypeError, match="expected tuple of 2 elements but got 1"):
        fn(x, 1, out=(v,))
    with pytest.raises(TypeError, match="expected Tensor as element 0 in argument 3"):
        fn(x, 1, out=(1, 2))
    with pytest.raises(RuntimeError, match=f"{name}\\(\\): functions with out="):
        fn(x.clone().requires_grad_(), 1, out=(v, i))


def test_median_out_needs_a_dim_and_error_names():
    x = tg.ones(2, 3)
    for name in ("median", "nanmedian"):
        with pytest.raises(TypeError, match='missing 1 required positional arguments: "dim"'):
            getattr(tg, name)(x, out=tg.empty(()))
        with pytest.raises(NotImplementedError, match='"median_out" not implemented for '
                                                      "'Bool'"):
            getattr(tg, name)(tg.tensor([True]), 0)
        with pytest.raises(NotImplementedError, match='"median_cpu" not implemented'):
            getattr(tg, name)(tg.tensor([True]))
        with pytest.raises(IndexError, match=r"median\(\): Expected reduction dim 0 to have "
                                             r"non-zero size"):
            getattr(tg, name)(tg.ones(0, 2), 0)


def test_logcumsumexp_out():
    a = np.array([[0.5, -1., 3.], [2., 2., -40.]])
    x = tg.tensor(a, dtype=tg.float32)
    out = tg.empty(0)
    assert tg.logcumsumexp(x, 1, out=out) is out
    np.testing.assert_allclose(out.numpy(), np.logaddexp.accumulate(a, 1), rtol=1e-6)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tg.logcumsumexp(x, 1, out=tg.empty(4))
    assert sum("was resized" in str(w.message) for w in caught) == 1
    for dt, name in ((tg.float64, "Double"), (tg.int64, "Long"), (tg.complex64, "ComplexFloat")):
        with pytest.raises(RuntimeError, match=f"expected scalar_type Float but found {name}"):
            tg.logcumsumexp(x, 1, out=tg.empty(2, 3, dtype=dt))
    with pytest.raises(RuntimeError, match=r"logcumsumexp\(\): functions with out="):
        tg.logcumsumexp(x.clone().requires_grad_(), 1, out=tg.empty(2, 3))
    assert tg.logcumsumexp(tg.tensor(2.), 0, out=tg.empty(0)).shape == ()


def test_out_forms_match_torch():
    torch = _torch()
    a = np.array([[3., 1., 2., 1.], [1., NAN, 5., 5.]], np.float32)
    for name in ("median", "nanmedian", "mode", "cummax", "cummin"):
        r = getattr(tg, name)(tg.tensor(a), 1, out=(tg.empty(0), tg.empty(0, dtype=tg.int64)))
        t = getattr(torch, name)(torch.tensor(a), 1, out=(torch.empty(0),
                                                          torch.empty(0, dtype=torch.long)))
        np.testing.assert_array_equal(r.values.numpy(), t.values.numpy())
        np.testing.assert_array_equal(r.indices.numpy(), t.indices.numpy())
        assert type(r).__name__ == type(t).__name__
        for vd, idd in ((torch.float64, torch.long), (torch.float32, torch.int32)):
            with pytest.raises(RuntimeError) as te:
                getattr(torch, name)(torch.tensor(a), 1, out=(torch.empty(2, dtype=vd),
                                                              torch.empty(2, dtype=idd)))
            gv = getattr(tg, vd.__repr__().split(".")[1])
            gi = getattr(tg, idd.__repr__().split(".")[1])
            with pytest.raises(RuntimeError) as ge:
                getattr(tg, name)(tg.tensor(a), 1, out=(tg.empty(2, dtype=gv),
                                                        tg.empty(2, dtype=gi)))
            assert str(ge.value).replace("tritongrad.", "torch.") == str(te.value)


# -- split_with_sizes / broadcast_tensors -------------------------------------------------------

def test_split_with_sizes_keywords_and_errors():
    x = tg.arange(6.)
    for parts in (tg.split_with_sizes(x, split_sizes=[2, 4]),
                  tg.split_with_sizes(input=x, split_sizes=(2, 4), dim=0),
                  x.split_with_sizes(split_sizes=[2, 4], dim=0), x.split(split_size=[2, 4]),
                  tg.unsafe_split_with_sizes(input=x, split_sizes=[2, 4], dim=0)):
        assert [p.tolist() for p in parts] == [[0., 1.], [2., 3., 4., 5.]]
    assert [p.tolist() for p in x.split(split_size=4, dim=0)] == [[0., 1., 2., 3.], [4., 5.]]
    assert len(tg.unsafe_split(input=x, split_size=2, dim=0)) == 3
    with pytest.raises(RuntimeError, match=r"split_with_sizes expects split_sizes have only "
                                           r"non-negative entries, but got split_sizes=\[2, -1, "
                                           r"5\]"):
        tg.split_with_sizes(x, [2, -1, 5])
    with pytest.raises(RuntimeError, match="to sum exactly to 6"):
        tg.split_with_sizes(x, [2, 3])
    with pytest.raises(TypeError, match=r"split_with_sizes\(\): argument 'split_sizes' "
                                        r"\(position 2\) must be tuple of ints, not int"):
        tg.split_with_sizes(x, 2)
    y = x.clone().requires_grad_()
    parts = tg.split_with_sizes(y, [2, 4])
    assert [type(p.grad_fn).__name__ for p in parts] == ["SplitWithSizesBackward0"] * 2
    assert all(p._base is y for p in parts)
    (parts[0].sum() * 2 + parts[1].sum() * 3).backward()
    assert y.grad.tolist() == [2., 2., 3., 3., 3., 3.]


def test_split_with_sizes_matches_torch():
    torch = _torch()
    for args, kwargs in ((([2, 4],), {}), ((), {"split_sizes": [1, 5], "dim": 0})):
        got = tg.split_with_sizes(tg.arange(6.), *args, **kwargs)
        want = torch.split_with_sizes(torch.arange(6.), *args, **kwargs)
        assert [p.tolist() for p in got] == [p.tolist() for p in want]
    for bad in ([2, -1, 5], 2):
        with pytest.raises((RuntimeError, TypeError)) as te:
            torch.split_with_sizes(torch.arange(6.), bad)
        with pytest.raises(te.type) as ge:
            tg.split_with_sizes(tg.arange(6.), bad)
        assert str(ge.value) == str(te.value)


def test_broadcast_tensors_returns_same_shaped_inputs_themselves():
    a = tg.ones(3, 1, requires_grad=True)
    b = tg.ones(1, 4, requires_grad=True)
    c = tg.ones(3, 4, requires_grad=True)
    r = tg.broadcast_tensors(a, b, c)
    assert type(r) is tuple and [t.shape for t in r] == [(3, 4)] * 3
    assert r[2] is c and r[0] is not a and r[0]._base is a and r[1]._base is b
    assert [t.stride() for t in r] == [(1, 0), (0, 1), (4, 1)]
    assert r[0].data_ptr() == a.data_ptr()
    assert [type(t.grad_fn).__name__ for t in r[:2]] == ["ExpandBackward0"] * 2
    (r[0] * 1 + r[1] * 2 + r[2] * 3).sum().backward()
    assert a.grad.flatten().tolist() == [4.] * 3 and b.grad.flatten().tolist() == [6.] * 4
    assert c.grad.flatten().tolist() == [3.] * 12
    d = tg.ones(2)
    assert tg.broadcast_tensors(d)[0] is d and tg.broadcast_tensors() == ()
    with pytest.raises(TypeError, match="expected Tensor as element 1 in argument 0, but got "
                                        "float"):
        tg.broadcast_tensors(d, 3.0)


def test_broadcast_tensors_matches_torch():
    torch = _torch()
    ta, tb = torch.ones(3, 1), torch.ones(3, 4)
    ga, gb = tg.ones(3, 1), tg.ones(3, 4)
    tr, gr = torch.broadcast_tensors(ta, tb), tg.broadcast_tensors(ga, gb)
    assert [t is s for t, s in zip(tr, (ta, tb))] == [t is s for t, s in zip(gr, (ga, gb))]
    assert [t._base is s for t, s in zip(tr, (ta, tb))] == \
        [t._base is s for t, s in zip(gr, (ga, gb))]


# -- ml_dtypes bfloat16 arrays -----------------------------------------------------------------

def test_bfloat16_numpy_arrays_become_bfloat16_tensors():
    ml = pytest.importorskip("ml_dtypes")
    a = np.array([[1.5, -2.], [0.25, 3.0078125]], dtype=ml.bfloat16)
    want = a.astype(np.float64)  # (3.0078125 rounds to 3.0 in bfloat16)
    for t in (tg.tensor(a), tg.as_tensor(a), tg.asarray(a)):
        assert t.dtype is tg.bfloat16
        np.testing.assert_array_equal(t.double().numpy(), want)
    t = tg.tensor(a[:, ::-1])  # (a negative-stride view converts too)
    np.testing.assert_array_equal(t.double().numpy(), want[:, ::-1])
    assert tg.tensor(a, dtype=tg.float64).dtype is tg.float64
    np.testing.assert_array_equal(tg.tensor(a, dtype=tg.float64).numpy(), want)
    s = tg.tensor(a[0, 1])  # (a NumPy scalar of that type)
    assert s.dtype is tg.bfloat16 and s.shape == () and s.item() == -2.0
    assert tg.tensor(a, requires_grad=True).requires_grad
    a[0, 0] = 7.0  # (a copy, never shared: CPU bfloat16 tensors keep float32 storage)
    assert tg.as_tensor(np.array([1.0], ml.bfloat16)).tolist() == [1.0]
    with pytest.raises(TypeError, match="bfloat16 array cannot share memory"):
        tg.from_numpy(a)
    f8 = np.array([1.5, -2.], dtype=ml.float8_e4m3fn)  # (float8 arrays: their own dtype)
    assert tg.tensor(f8).dtype is tg.float8_e4m3fn


# -- numpy() / __array__ of a tensor that requires grad ------------------------------------------

def test_array_protocol_refuses_a_tensor_that_requires_grad():
    t = tg.ones(2, requires_grad=True)
    msg = ("Can't call numpy\\(\\) on Tensor that requires grad. Use tensor.detach\\(\\)"
           ".numpy\\(\\) instead.")
    for convert in (lambda: t.numpy(), lambda: np.asarray(t), lambda: np.array(t),
                    lambda: np.asarray(t, dtype=np.float64), lambda: t.__array__()):
        with pytest.raises(RuntimeError, match=msg):
            convert()
    assert np.asarray(t.detach()).tolist() == [1., 1.]
    assert t.numpy(force=True).tolist() == [1., 1.]
    with tg.no_grad():  # (grad mode off: allowed, as PyTorch's)
        assert np.asarray(t).tolist() == [1., 1.]


# -- det and the other linalg top-level keywords -------------------------------------------------

def test_linalg_top_level_keywords():
    a = tg.tensor([[2., 1.], [1., 3.]], dtype=tg.float64)
    assert abs(tg.det(input=a).item() - 5.0) < 1e-12
    sign, logabs = tg.slogdet(input=a)
    assert sign.item() == 1.0 and abs(logabs.item() - np.log(5.0)) < 1e-12
    lu, piv = tg.linalg.lu_factor(a)
    b = tg.tensor([[1.], [2.]], dtype=tg.float64)
    np.testing.assert_allclose(tg.lu_solve(input=b, LU_data=lu, LU_pivots=piv).numpy(),
                               np.linalg.solve(a.numpy(), b.numpy()), rtol=1e-12)
    qr, tau = tg.geqrf(a)
    np.testing.assert_allclose(tg.orgqr(input=qr, input2=tau).numpy(),
                               qr.orgqr(input2=tau).numpy())
    assert abs(tg.linalg.det(A=a).item() - 5.0) < 1e-12  # (linalg's keeps A)


# -- refactors: rand/randn and the special-function nodes ---------------------------------------

def test_rand_randn_one_helper_keeps_their_behaviour():
    for fn, like in ((tg.rand, tg.rand_like), (tg.randn, tg.randn_like)):
        tg.manual_seed(3)
        a = fn(4, 5, dtype=tg.float64)
        tg.manual_seed(3)
        b = fn((4, 5), dtype=tg.float64)
        assert tg.equal(a, b) and fn.__name__ in ("rand", "randn")
        out = tg.empty(0)
        assert fn(3, out=out) is out and out.shape == (3,)
        r = like(tg.ones(2, 3, dtype=tg.float64), requires_grad=True)
        assert r.dtype is tg.float64 and r.shape == (2, 3) and r.requires_grad
        assert fn(2, dtype=tg.complex64).dtype is tg.complex64
    u = tg.rand(20000, dtype=tg.float64).numpy()
    n = tg.randn(20000, dtype=tg.float64).numpy()
    assert 0 <= u.min() and u.max() < 1 and abs(u.mean() - 0.5) < 0.02
    assert abs(n.mean()) < 0.05 and abs(n.std() - 1) < 0.05
    with pytest.raises(NotImplementedError, match="check_uniform_bounds"):
        tg.rand(2, dtype=tg.int64)
    with pytest.raises(NotImplementedError, match="normal_kernel_cpu"):
        tg.randn(2, dtype=tg.int64)


def test_special_nodes_live_in_their_own_module():
    from tritongrad.autograd.ops import special, special_nodes
    x = tg.tensor([0.3, 0.6], dtype=tg.float64, requires_grad=True)
    for fn, node in ((tg.erf, "ErfBackward0"), (tg.lgamma, "LgammaBackward0"),
                     (tg.special.i1e, "I1eBackward0"), (tg.special.ndtri, "NdtriBackward0"),
                     (tg.sinc, "SincBackward0"), (lambda t: tg.hypot(t, t * 2),
                                                  "HypotBackward0")):
        y = fn(x)
        assert type(y.grad_fn) is getattr(special_nodes, node)
        assert tg.autograd.gradcheck(fn, (x,))
    assert not any(name.endswith("Backward0") for name in vars(special))
    assert len(open(special.__file__).read().splitlines()) < 700


# -- keyword names found by the sweep -------------------------------------------------------------

def test_sweep_keyword_names():
    x = tg.ones(1, 2, 3, 4)
    assert x.cpu() is x and x.cpu(memory_format=tg.preserve_format) is x
    cl = x.cpu(memory_format=tg.channels_last)
    assert cl.is_contiguous(memory_format=tg.channels_last) and not cl.is_contiguous()
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last"):
        tg.ones(2).cpu(memory_format=tg.channels_last)
    y = tg.zeros(3)
    assert y.copy_(other=tg.arange(3.), non_blocking=False) is y and y.tolist() == [0., 1., 2.]
    with pytest.raises(TypeError, match=r"copy_\(\): argument 'other' \(position 1\) must be "
                                        r"Tensor, not str"):
        y.copy_("a")
    f = y.new_full((2,), 5., layout=tg.strided, pin_memory=False, dtype=tg.float64)
    assert f.tolist() == [5., 5.] and f.dtype is tg.float64
    with pytest.raises(TypeError):  # (dtype is keyword-only, as PyTorch's)
        y.new_full((2,), 5., tg.float64)


def test_sweep_keyword_names_match_torch():
    torch = _torch()
    for lib in (torch, tg):
        y = lib.zeros(3)
        y.copy_(other=lib.ones(3))
        assert y.tolist() == [1.] * 3
        assert lib.ones(1, 2, 3, 4).cpu(memory_format=lib.channels_last).stride() == \
            (24, 1, 8, 2)
        assert y.new_full((2,), 1., layout=lib.strided, pin_memory=False).tolist() == [1., 1.]


def test_nansum_integer_dtype_keeps_sums_rules():
    x = tg.tensor([[1.5, NAN], [2.5, 3.]], requires_grad=True)
    with pytest.raises(RuntimeError, match="Autograd not support dtype: Long"):
        tg.nansum(x, 1, dtype=tg.int64)
    with tg.no_grad():
        assert tg.nansum(x, 1, dtype=tg.int64).tolist() == [1, 5]
    assert tg.nansum(x, 1, dtype=tg.float64).dtype is tg.float64


def test_new_nodes_on_each_device(device):
    """cummax/cummin and nansum on the CPU and on CUDA (emulated without a GPU): the same
    values, indices and gradients as the float64 NumPy references."""
    a = np.array([[1., 3., 3., NAN, 2.], [4., 1., 4., 0., 7.]])
    g = np.arange(10, dtype=np.float64).reshape(2, 5) + 1
    for name, better in (("cummax", np.greater_equal), ("cummin", np.less_equal)):
        x = tg.tensor(a, dtype=tg.float64, device=device, requires_grad=True)
        r = getattr(tg, name)(x, 1)
        want_v, want_i = _running_ref(a, 1, better)
        np.testing.assert_array_equal(r.indices.cpu().numpy(), want_i)
        np.testing.assert_array_equal(r.values.detach().cpu().numpy(), want_v)
        r.values.backward(tg.tensor(g, device=device))
        want = np.zeros_like(a)
        for row in range(2):
            np.add.at(want[row], want_i[row], g[row])
        np.testing.assert_array_equal(x.grad.cpu().numpy(), want)
        b = getattr(tg, name)(tg.tensor([True, False, True], device=device), 0)
        assert b.indices.cpu().tolist() == _running_ref(np.array([1, 0, 1]), 0, better)[1].tolist()
    x = tg.tensor(a, dtype=tg.float64, device=device, requires_grad=True)
    tg.nanmean(x, 1).sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), np.where(np.isnan(a), 0., [[0.25], [0.2]]))


def test_sweep_out_forms():
    v = tg.tensor([3., 1., 2., 0.])
    for name, args, fn_ref in (("sort", (), lambda a: (np.sort(a), np.argsort(a, kind="stable"))),
                               ("topk", (2,), lambda a: (np.sort(a)[::-1][:2],
                                                        np.argsort(-a, kind="stable")[:2])),
                               ("kthvalue", (2,), lambda a: (np.sort(a)[1],
                                                            np.argsort(a, kind="stable")[1]))):
        vals, idx = tg.empty(0), tg.empty(0, dtype=tg.int64)
        r = getattr(tg, name)(v, *args, out=(vals, idx))
        assert r.values is vals and r.indices is idx and type(r).__name__ == name + "_out"
        want_v, want_i = fn_ref(v.numpy())
        np.testing.assert_array_equal(vals.numpy(), want_v)
        np.testing.assert_array_equal(idx.numpy(), want_i)
        with pytest.raises(RuntimeError):
            getattr(tg, name)(v, *args, out=(tg.empty(0, dtype=tg.float64), idx))
    with pytest.raises(RuntimeError, match="output indices must be of scalar type Long"):
        tg.kthvalue(v, 2, out=(tg.empty(0), tg.empty(0, dtype=tg.int32)))
    o = tg.empty(0, dtype=tg.float64)
    assert tg.logspace(0, 2, 3, out=o) is o and o.tolist() == [1., 10., 100.]
    with pytest.raises(RuntimeError, match="dtype Float does not match dtype of out parameter "
                                           r"\(Double\)"):
        tg.logspace(0, 1, 3, dtype=tg.float32, out=o)
    r = tg.empty(0)
    assert tg.randint(0, 3, (5,), out=r) is r and r.dtype is tg.float32 and r.shape == (5,)
    assert set(r.tolist()) <= {0., 1., 2.}
    assert tg.randint(0, 3, (2,), layout=tg.strided, pin_memory=False).dtype is tg.int64
    f = tg.empty(0)
    assert tg.frac(tg.tensor([1.25, -2.5]), out=f) is f and f.tolist() == [0.25, -0.5]
    with pytest.raises(RuntimeError):
        tg.frac(tg.tensor([1.25]), out=tg.empty(0, dtype=tg.float64))
