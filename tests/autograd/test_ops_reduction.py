"""Reductions (autograd/ops/reduction.py, softmax.py): max/min (full and along a dim),
amax/amin, argmax/argmin, var/std, prod, logsumexp, cumsum, softmax/log_softmax. Values
against NumPy float64, gradients against central differences, ties and NaN as PyTorch."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tritongrad as tg
from tests.helpers import assert_grads_match, t64, host, second_order

rng = np.random.default_rng(2)


DIMS = [(None, False), (0, False), (1, True), ((0, 2), False), (-1, True), ((), False)]


# -- max / min -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["max", "min"])
def test_full_max_min(name, device):
    x = t64((3, 4, 5), device)
    out = getattr(x, name)()
    assert out.shape == ()
    np.testing.assert_allclose(host(out), getattr(np, name)(host(x)))
    assert_grads_match(lambda v: getattr(v, name)(), [x])
    y = getattr(x.detach().requires_grad_(True), name)()
    assert y.grad_fn.name() == f"{name.capitalize()}Backward1"


@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("dim,keepdim", [(0, False), (1, True), (-1, False), (2, True)])
def test_max_min_with_dim(name, dim, keepdim, device):
    x = t64((3, 4, 5), device)
    r = getattr(tg, name)(x, dim, keepdim=keepdim)
    values, indices = r
    assert r.values is values and r.indices is indices
    ref_fn = np.argmax if name == "max" else np.argmin
    ref_i = ref_fn(host(x), axis=dim)
    ref_v = getattr(np, name)(host(x), axis=dim)
    if keepdim:
        ref_i, ref_v = np.expand_dims(ref_i, dim), np.expand_dims(ref_v, dim)
    assert indices.dtype is tg.int64 and not indices.requires_grad
    np.testing.assert_array_equal(host(indices), ref_i)
    np.testing.assert_allclose(host(values), ref_v)
    assert_grads_match(lambda v: getattr(v, name)(dim, keepdim)[0], [x])
    values = getattr(x.detach().requires_grad_(True), name)(dim, keepdim).values
    assert values.grad_fn.name() == f"{name.capitalize()}Backward0"
    assert "return_types." + name in repr(r)


def test_max_dim_ties_pick_first_and_get_all_gradient(device):
    x = tg.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]], dtype=tg.float64, device=device,
                  requires_grad=True)
    v, i = x.max(1)
    assert i.tolist() == [1, 0]
    v.sum().backward()
    np.testing.assert_array_equal(host(x.grad), [[0, 1, 0], [1, 0, 0]])


def test_full_max_and_amax_split_ties_evenly(device):
    x = tg.tensor([[1.0, 3.0, 3.0], [3.0, 2.0, 0.0]], dtype=tg.float64, device=device,
                  requires_grad=True)
    x.max().backward()
    np.testing.assert_allclose(host(x.grad), [[0, 1 / 3, 1 / 3], [1 / 3, 0, 0]])
    x.grad = None
    tg.amax(x, 1).sum().backward()
    np.testing.assert_allclose(host(x.grad), [[0, 0.5, 0.5], [1, 0, 0]])
    x.grad = None
    tg.amin(x, 0).sum().backward()
    np.testing.assert_allclose(host(x.grad), [[1, 0, 0], [0, 1, 1]])


def test_max_nan_propagates(device):
    x = tg.tensor([[1.0, float("nan"), 5.0, float("nan")]], device=device)
    assert np.isnan(host(x.max()))
    v, i = x.max(1)
    assert np.isnan(host(v)[0]) and i.tolist() == [1]  # the first NaN
    assert x.argmax().item() == 1 and x.argmin().item() == 1
    assert np.isnan(host(tg.amax(x, 1))[0])
    y = tg.tensor([1.0, float("nan")], dtype=tg.float64, device=device, requires_grad=True)
    y.max().backward()
    np.testing.assert_array_equal(host(y.grad), [0.0, 1.0])


@pytest.mark.parametrize("name", ["amax", "amin"])
@pytest.mark.parametrize("dim,keepdim", DIMS)
def test_amax_amin(name, dim, keepdim, device):
    x = t64((2, 3, 4), device)
    out = getattr(tg, name)(x) if dim is None else getattr(x, name)(dim, keepdim)
    axis = None if dim is None or dim == () else dim
    ref = getattr(np, name)(host(x), axis=axis, keepdims=keepdim and axis is not None)
    np.testing.assert_allclose(host(out), ref)
    assert_grads_match(lambda v: getattr(tg, name)(v, () if dim is None else dim, keepdim), [x])


def test_max_binary_form_and_dtypes(device):
    a, b = t64((3,), device), t64((3,), device)
    np.testing.assert_array_equal(host(tg.max(a, b)), np.maximum(host(a), host(b)))
    np.testing.assert_array_equal(host(tg.min(a, b)), np.minimum(host(a), host(b)))
    i = tg.tensor([[3, -1, 7], [2, 9, 0]], device=device)
    assert i.max().item() == 9 and i.max(1).indices.tolist() == [2, 1]
    assert tg.amin(i, 0).tolist() == [2, -1, 0]
    h = tg.tensor([1.5, -2.0, 8.0], dtype=tg.float16, device=device)
    assert h.max().dtype is tg.float16 and h.max().item() == 8.0


def test_max_min_zero_dim_and_size_one(device):
    s = tg.tensor(2.5, dtype=tg.float64, device=device, requires_grad=True)
    v, i = s.max(0)
    assert v.shape == () and i.shape == () and i.item() == 0
    v.backward()
    assert s.grad.item() == 1.0
    x = t64((1, 7), device)
    assert x.max(0).values.shape == (7,)
    assert x.argmax(0).tolist() == [0] * 7


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_argmin(name, device):
    x = t64((3, 4, 5), device)
    fn = getattr(np, name)
    assert getattr(x, name)().item() == fn(host(x))
    np.testing.assert_array_equal(host(getattr(x, name)(1)), fn(host(x), axis=1))
    np.testing.assert_array_equal(host(getattr(tg, name)(x, -1, keepdim=True)),
                                  np.expand_dims(fn(host(x), axis=-1), -1))
    assert getattr(x, name)(keepdim=True).shape == (1, 1, 1)
    ties = tg.tensor([0.0, 5.0, 5.0, -5.0, -5.0], device=device)
    assert getattr(ties, name)().item() == (1 if name == "argmax" else 3)
    y = x.detach().requires_grad_(True)
    assert not getattr(y, name)(0).requires_grad


def test_reduction_errors(device):
    e = tg.ones(0, 3, device=device)
    with pytest.raises(RuntimeError, match="Expected reduction dim to be specified"):
        e.max()
    with pytest.raises(IndexError, match="Expected reduction dim 0 to have non-zero size"):
        e.max(0)
    with pytest.raises(IndexError, match="Expected reduction dim 0 to have non-zero size"):
        e.amax(0)
    assert e.amax(1).shape == (0,)
    with pytest.raises(IndexError, match="Expected reduction dim to be specified"):
        e.argmax()
    with pytest.raises(IndexError, match="dimension out of range"):
        tg.ones(2, 3, device=device).max(2)
    with pytest.raises(IndexError, match="dimension out of range"):
        tg.ones(2, 3, device=device).argmin(-3)
    with pytest.raises(RuntimeError, match="appears multiple times"):
        tg.ones(2, 3, device=device).amax((0, 0))


# -- var / std -------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["var", "std"])
@pytest.mark.parametrize("dim,keepdim", DIMS)
@pytest.mark.parametrize("correction", [None, 0, 2])
def test_var_std(name, dim, keepdim, correction, device):
    x = t64((3, 4, 5), device)
    kw = {} if correction is None else {"correction": correction}
    fn = (lambda v: getattr(v, name)(**kw)) if dim is None else \
        (lambda v: getattr(v, name)(dim, keepdim=keepdim, **kw))
    axis = None if dim is None or dim == () else dim
    ddof = 1 if correction is None else correction
    ref = getattr(np, name)(host(x), axis=axis, ddof=ddof, keepdims=keepdim and axis is not None)
    np.testing.assert_allclose(host(fn(x)), ref, rtol=1e-12)
    assert_grads_match(fn, [x])


def test_var_unbiased_flag_and_positional(device):
    x = t64((4, 6), device)
    a = host(x)
    np.testing.assert_allclose(host(x.var(unbiased=False)), a.var(), rtol=1e-12)
    np.testing.assert_allclose(host(tg.var(x, False)), a.var(), rtol=1e-12)
    np.testing.assert_allclose(host(x.std(1, True)), a.std(1, ddof=1), rtol=1e-12)
    np.testing.assert_allclose(host(x.std(0, unbiased=False, keepdim=True)),
                               a.std(0, keepdims=True), rtol=1e-12)
    with pytest.raises(TypeError, match="both unbiased and correction"):
        x.var(unbiased=True, correction=0)
    with pytest.raises(RuntimeError, match="floating point"):
        tg.tensor([1, 2, 3], device=device).var()


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy warns, PyTorch does not
def test_var_degenerate(device):
    one = tg.tensor([3.0], device=device)
    assert np.isnan(host(one.var()))  # n - correction = 0: 0 / 0
    assert host(one.var(correction=0)) == 0.0
    f16 = tg.tensor(rng.standard_normal(64), dtype=tg.float16, device=device)
    np.testing.assert_allclose(host(f16.std()).astype(np.float64),
                               host(f16).astype(np.float64).std(ddof=1), rtol=3e-3)


def test_std_gradient_is_zero_where_std_is_zero(device):
    # PyTorch masks it: a constant slice would otherwise send 0 / 0 into every parameter
    x = tg.tensor([[2.0, 2.0, 2.0], [1.0, 3.0, 5.0]], dtype=tg.float64, device=device,
                  requires_grad=True)
    x.std(1).sum().backward()
    g = host(x.grad)
    np.testing.assert_array_equal(g[0], [0.0, 0.0, 0.0])
    np.testing.assert_allclose(g[1], [-0.5, 0.0, 0.5])
    y = tg.tensor([[1.0], [2.0]], dtype=tg.float64, device=device, requires_grad=True)
    y.std(1, correction=0).sum().backward()
    np.testing.assert_array_equal(host(y.grad), [[0.0], [0.0]])


def test_var_std_second_order(device):
    x = t64((2, 5), device)
    second_order(lambda v: v.var(1), x)
    second_order(lambda v: v.std(), x)


# -- prod ----------------------------------------------------------------------------------------

def test_prod_values_and_grads(device):
    x = t64((3, 4), device, 0.5, 1.5)
    np.testing.assert_allclose(host(x.prod()), np.prod(host(x)), rtol=1e-12)
    np.testing.assert_allclose(host(x.prod(1, keepdim=True)), np.prod(host(x), 1, keepdims=True))
    assert_grads_match(lambda v: v.prod(), [x])
    assert_grads_match(lambda v: v.prod(0), [x])
    second_order(lambda v: v.prod(1), x)


@pytest.mark.parametrize("a,expected", [
    ([2.0, 0.0, 3.0, 4.0], [0.0, 24.0, 0.0, 0.0]),     # one zero: only it gets the product
    ([2.0, 0.0, 3.0, 0.0], [0.0, 0.0, 0.0, 0.0]),      # two zeros: nobody does
    ([2.0, 5.0, 3.0, 4.0], [60.0, 24.0, 40.0, 30.0]),
])
def test_prod_gradient_with_zeros(a, expected, device):
    x = tg.tensor(a, dtype=tg.float64, device=device, requires_grad=True)
    x.prod().backward()
    np.testing.assert_allclose(host(x.grad), expected)
    assert np.all(np.isfinite(host(x.grad)))
    y = tg.tensor([a, a], dtype=tg.float64, device=device, requires_grad=True)
    y.prod(1).sum().backward()
    np.testing.assert_allclose(host(y.grad), [expected, expected])


def test_prod_dtypes(device):
    i = tg.tensor([[2, 3], [4, 5]], dtype=tg.int32, device=device)
    assert i.prod().dtype is tg.int64 and i.prod().item() == 120
    assert tg.tensor([True, True], device=device).prod().item() == 1
    assert tg.ones(0, device=device).prod().item() == 1.0
    h = tg.tensor([1.5, 2.0, 3.0], dtype=tg.float16, device=device)
    assert h.prod().dtype is tg.float16 and h.prod().item() == 9.0


# -- logsumexp -------------------------------------------------------------------------------------

@pytest.mark.parametrize("dim,keepdim", [(0, False), (1, True), ((0, 2), False), (-1, False)])
def test_logsumexp(dim, keepdim, device):
    x = t64((2, 3, 4), device)
    ref = np.log(np.sum(np.exp(host(x)), axis=dim, keepdims=keepdim))
    np.testing.assert_allclose(host(tg.logsumexp(x, dim, keepdim)), ref, rtol=1e-12)
    assert_grads_match(lambda v: v.logsumexp(dim, keepdim), [x])
    second_order(lambda v: v.logsumexp(dim, keepdim), x)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy warns, PyTorch does not
def test_logsumexp_stable_and_infinite(device):
    x = tg.tensor([[1000.0, 1000.0], [-1000.0, -1000.0]], device=device)
    np.testing.assert_allclose(host(x.logsumexp(1)), [1000 + np.log(2), -1000 + np.log(2)],
                               rtol=1e-6)
    inf = tg.tensor([[float("-inf"), float("-inf")], [float("inf"), 1.0]], device=device)
    out = host(inf.logsumexp(1))
    assert out[0] == -np.inf and out[1] == np.inf
    assert tg.ones(3, 0, device=device).logsumexp(1).tolist() == [float("-inf")] * 3
    assert tg.tensor([1, 2], device=device).logsumexp(0).dtype is tg.float32
    assert tg.tensor(0.5, device=device).logsumexp(0).shape == ()


# -- cumsum ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cumsum(dim, device):
    x = t64((3, 4, 2), device)
    np.testing.assert_allclose(host(x.cumsum(dim)), np.cumsum(host(x), axis=dim), rtol=1e-12)
    assert_grads_match(lambda v: v.cumsum(dim), [x])
    second_order(lambda v: v.cumsum(dim) ** 2, x)


def test_cumsum_dtypes_and_shapes(device):
    i = tg.tensor([1, 2, 3], dtype=tg.int32, device=device)
    assert i.cumsum(0).dtype is tg.int64 and i.cumsum(0).tolist() == [1, 3, 6]
    b = tg.tensor([True, True, False], device=device)
    assert b.cumsum(0).tolist() == [1, 2, 2] and b.cumsum(0).dtype is tg.int64
    assert i.cumsum(0, dtype=tg.float64).dtype is tg.float64
    h = tg.tensor([0.5] * 10, dtype=tg.float16, device=device)
    assert h.cumsum(0).dtype is tg.float16 and h.cumsum(0)[-1].item() == 5.0
    assert tg.tensor(3.0, device=device).cumsum(0).tolist() == 3.0
    assert tg.ones(0, 2, device=device).cumsum(0).shape == (0, 2)
    nc = t64((4, 6), device).t()
    np.testing.assert_allclose(host(nc.cumsum(1)), np.cumsum(host(nc), 1))


# -- softmax / log_softmax ------------------------------------------------------------------------

def _softmax(a, axis):
    e = np.exp(a - a.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape,dim", [((5,), 0), ((3, 4), 1), ((3, 4), 0), ((2, 3, 4), -2),
                                       ((1, 7), -1)])
def test_softmax_family(name, shape, dim, device):
    x = t64(shape, device, -3, 3)
    ref = _softmax(host(x), dim)
    if name == "log_softmax":
        ref = np.log(ref)
    fn = getattr(tg, name)
    np.testing.assert_allclose(host(fn(x, dim)), ref, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(host(getattr(x, name)(dim)), ref, rtol=1e-12, atol=1e-15)
    w = rng.uniform(-1, 1, shape)  # a non-uniform upstream gradient (sum alone gives zeros)
    assert_grads_match(lambda v: fn(v, dim), [x], grad_output=w)
    second_order(lambda v: fn(v, dim) * tg.tensor(w, dtype=tg.float64, device=v.device), x)


def test_softmax_stability_and_dtype(device):
    x = tg.tensor([[1000.0, 0.0, -1000.0], [1e4, 1e4, 1e4]], device=device)
    y = host(tg.softmax(x, 1))
    np.testing.assert_allclose(y, [[1, 0, 0], [1 / 3, 1 / 3, 1 / 3]], atol=1e-7)
    ls = host(tg.log_softmax(x, 1))
    assert np.all(np.isfinite(ls[1])) and ls[0, 0] == 0.0 and ls[0, 2] == -2000.0
    h = tg.tensor([[1.0, 2.0, 3.0]], dtype=tg.float16, device=device)
    assert tg.softmax(h, -1).dtype is tg.float16
    out = tg.softmax(h, -1, dtype=tg.float32)
    assert out.dtype is tg.float32
    np.testing.assert_allclose(host(out), _softmax(np.array([[1.0, 2.0, 3.0]]), 1), rtol=1e-6)
    assert tg.softmax(tg.tensor([1, 2], device=device), 0, dtype=tg.float64).dtype is tg.float64
    allneg = tg.tensor([float("-inf")] * 3, device=device)
    assert np.all(np.isnan(host(allneg.softmax(0))))  # as PyTorch


def test_softmax_errors_and_legacy_dim(device):
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        tg.softmax(tg.tensor([1, 2], device=device), 0)  # (PyTorch's kernel's error)
    with pytest.raises(IndexError, match="dimension out of range"):
        tg.softmax(tg.ones(2, 3, device=device), 2)
    # the implicit dim is nn.functional's alone; tg.softmax and Tensor.softmax need a dim
    with pytest.warns(UserWarning, match="Implicit dimension choice"):
        y = tg.nn.functional.softmax(tg.ones(2, 3, device=device))
    with pytest.raises(TypeError, match="'dim' must be int, not NoneType"):
        tg.softmax(tg.ones(2, 3, device=device), None)
    with pytest.raises(TypeError, match="dim"):
        tg.ones(2, 3, device=device).log_softmax()
    np.testing.assert_allclose(host(y), np.full((2, 3), 1 / 3), rtol=1e-6)
    assert tg.softmax(tg.tensor(3.0, device=device), 0).item() == 1.0
    assert tg.ones(0, 3, device=device).softmax(1).shape == (0, 3)


# -- property tests -------------------------------------------------------------------------------

@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_reductions_over_random_dims_property(data):
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    nd = len(shape)
    dims = tuple(sorted(data.draw(st.sets(st.integers(0, nd - 1), min_size=1))))
    keepdim = data.draw(st.booleans())
    x = t64(shape, "cpu")
    a = x.numpy()
    for name, ref in (("amax", np.max), ("amin", np.min), ("sum", np.sum)):
        np.testing.assert_allclose(getattr(x, name)(dims, keepdim).numpy(),
                                   ref(a, axis=dims, keepdims=keepdim))
    np.testing.assert_allclose(x.var(dims, keepdim=keepdim, correction=0).numpy(),
                               a.var(axis=dims, keepdims=keepdim), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(x.logsumexp(dims, keepdim).numpy(),
                               np.log(np.exp(a).sum(axis=dims, keepdims=keepdim)), rtol=1e-12)
    assert_grads_match(lambda v: v.logsumexp(dims, keepdim) * v.amax(dims, keepdim), [x],
                       atol=1e-5)


def test_dim_arguments_of_the_wrong_type_name_the_op(device):
    x = tg.ones(2, 3, device=device)
    assert host(x.sum(np.int64(1))).tolist() == [3.0, 3.0]  # any integer type is a dim
    for fn, op in ((lambda: x.sum(1.0), "sum"), (lambda: x.sum("a"), "sum"),
                   (lambda: x.mean((0, 1.5)), "mean"), (lambda: x.argmax(0.5), "argmax")):
        with pytest.raises(TypeError, match=rf"{op}\(\): argument 'dim' must be int, not"):
            fn()
    with pytest.raises(RuntimeError, match="does not support bool input"):
        tg.tensor([True, False], device=device).argmax()



@pytest.mark.parametrize("op", ["sum", "prod", "cumsum", "cumprod"])
@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "float32"])
def test_accumulations_return_the_dtype_asked_for(op, dtype):
    # integers accumulate in int64 but the result has the dtype= asked for, as PyTorch's
    # (300 ones summed as int8 wrap to 44, as there)
    x = tg.ones(2, 150, dtype=tg.int16)
    dt = getattr(tg, dtype)
    args = (1,) if op.startswith("cum") else ()
    out = getattr(tg, op)(x, *args, dtype=dt)
    assert out.dtype is dt
    if op in ("sum", "prod"):
        assert getattr(tg, op)(x, 1, dtype=dt).dtype is dt
    if op == "sum":
        expect = {"int8": 44}.get(dtype, 300)
        assert tg.sum(x, dtype=dt).item() == expect
    assert getattr(tg, op)(x, *args).dtype is tg.int64  # (no dtype=: int64)


def test_all_any_with_no_dims_reduce_nothing():
    # PyTorch's all/any with dim=() give each element's truth (sum's legacy () reduces all)
    x = tg.tensor([[0.0, 1.0, 2.0], [3.0, 0.0, 5.0]])
    for fn in (tg.all, tg.any):
        assert fn(x, ()).tolist() == [[False, True, True], [True, False, True]]
        assert fn(x, [], keepdim=True).shape == (2, 3)
    assert tg.all(x, (0, 1)).item() is False and tg.any(x, (0, 1)).item() is True


def test_nan_reductions_keep_every_dim():
    x = tg.tensor([[1.0, float("nan")], [3.0, 4.0]])
    s = tg.nansum(x, keepdim=True)
    assert s.shape == (1, 1) and s.item() == 8.0
    m = tg.nanmean(x, keepdim=True)
    assert m.shape == (1, 1) and m.item() == pytest.approx(8.0 / 3)
    assert tg.nansum(x).shape == () and tg.nanmean(x, 1).tolist() == [1.0, 3.5]


def test_mean_gradient_is_a_fresh_tensor_a_hook_may_change(device):
    """mean's backward divides the expanded gradient (PyTorch's): the input's gradient is a
    fresh array, so a hook may scale it in place (a stride-0 view would refuse the write, as
    sum's does in both libraries)."""
    x = tg.tensor(np.arange(6.0).reshape(2, 3), device=device, requires_grad=True)
    y = x * 1.0
    seen = []

    def double_in_place(g):
        seen.append(g.stride())
        g.mul_(2.0)

    y.register_hook(double_in_place)
    y.mean(dim=1).sum().backward()
    assert seen == [(3, 1)]
    np.testing.assert_allclose(host(x.grad), np.full((2, 3), 2.0 / 3.0))
