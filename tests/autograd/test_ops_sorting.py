"""Sorting (autograd/ops/sorting.py): sort, argsort, topk, kthvalue against NumPy's stable
argsort on float64 references, on both devices; gradients (g written back at the indices)
against finite differences, to second order; PyTorch's errors."""

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import assert_grads_match, host, second_order, t64

rng = np.random.default_rng(11)


def ref_sort(a, dim, descending):
    """NumPy's stable order; descending keeps equal elements in their original order."""
    if descending:
        n = a.shape[dim]
        idx = np.flip(n - 1 - np.argsort(np.flip(a, dim), axis=dim, kind="stable"), dim)
    else:
        idx = np.argsort(a, axis=dim, kind="stable")
    return np.take_along_axis(a, idx, dim), idx


def ties_and_nan(shape):
    """Small integers as floats (many ties), a NaN or two: the cases a sort gets wrong."""
    a = rng.integers(-3, 4, shape).astype(np.float64)
    a.reshape(-1)[::5] = np.nan
    return a


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_values_and_indices(device, dim, descending):
    a = ties_and_nan((5, 7))
    x = tg.tensor(a, device=device)
    out = tg.sort(x, dim, descending)
    assert type(out).__name__ == "sort" and out.indices.dtype is tg.int64
    rv, ri = ref_sort(a, dim, descending)
    np.testing.assert_array_equal(host(out.values), rv)
    np.testing.assert_array_equal(host(out.indices), ri)
    np.testing.assert_array_equal(host(x.argsort(dim, descending=descending)), ri)
    np.testing.assert_array_equal(host(x.sort(dim=dim, descending=descending, stable=True)[1]),
                                  ri)


@pytest.mark.parametrize("dtype", [tg.float16, tg.bfloat16, tg.float32, tg.int32, tg.int64,
                                   tg.uint8, tg.bool], ids=str)
def test_sort_dtypes(device, dtype):
    a = rng.integers(0, 5, (3, 9))
    x = tg.tensor(a, device=device).to(dtype)
    v, i = x.sort(descending=True)
    assert v.dtype is dtype
    rv, ri = ref_sort(host(x.to(tg.float64)), 1, True)
    np.testing.assert_array_equal(host(v.to(tg.float64)), rv)
    np.testing.assert_array_equal(host(i), ri)


def test_sort_non_contiguous(device):
    a = rng.normal(size=(6, 4))
    x = tg.tensor(a, device=device).t()  # (4, 6), strided
    for dim in (0, 1):
        v, i = x.sort(dim)
        rv, ri = ref_sort(a.T, dim, False)
        np.testing.assert_array_equal(host(v), rv)
        np.testing.assert_array_equal(host(i), ri)
        assert v.stride() == x.stride()  # (a dense input's layout kept, as PyTorch's)


def test_sort_scalar_and_empty(device):
    v, i = tg.tensor(3.0, device=device).sort()
    assert v.shape == () and i.item() == 0 and v.item() == 3.0
    v, i = tg.zeros(2, 0, device=device).sort()
    assert tuple(v.shape) == (2, 0) and tuple(i.shape) == (2, 0)


@pytest.mark.parametrize("largest", [True, False])
def test_topk(device, largest):
    a = ties_and_nan((4, 6))
    x = tg.tensor(a, device=device)
    out = x.topk(3, 1, largest=largest)
    assert type(out).__name__ == "topk"
    rv, ri = ref_sort(a, 1, largest)
    np.testing.assert_array_equal(host(out.values), rv[:, :3])
    np.testing.assert_array_equal(host(out.indices), ri[:, :3])
    assert tuple(tg.topk(x, 0).values.shape) == (4, 0)


@pytest.mark.parametrize("keepdim", [False, True])
def test_kthvalue(device, keepdim):
    a = ties_and_nan((3, 5))
    x = tg.tensor(a, device=device)
    out = tg.kthvalue(x, 2, 0, keepdim=keepdim)
    assert type(out).__name__ == "kthvalue"
    rv, ri = ref_sort(a, 0, False)
    np.testing.assert_array_equal(host(out.values), rv[1:2] if keepdim else rv[1])
    np.testing.assert_array_equal(host(out.indices), ri[1:2] if keepdim else ri[1])
    v, i = tg.tensor(4.0, device=device).kthvalue(1)
    assert v.shape == () and v.item() == 4.0 and i.item() == 0


@pytest.mark.parametrize("op", ["sort", "sort_desc", "topk", "topk_smallest", "kthvalue",
                                "kthvalue_keepdim"])
def test_gradients(device, op):
    fns = {
        "sort": lambda x: x.sort(1).values,
        "sort_desc": lambda x: x.sort(0, descending=True).values,
        "topk": lambda x: x.topk(2, 1).values,
        "topk_smallest": lambda x: x.topk(2, 0, largest=False).values,
        "kthvalue": lambda x: x.kthvalue(2, 1).values,
        "kthvalue_keepdim": lambda x: x.kthvalue(3, 0, keepdim=True).values,
    }
    x = t64((3, 4), device).requires_grad_(True)  # distinct values: a smooth neighbourhood
    w = rng.uniform(0.5, 1.5, tuple(fns[op](x).shape))
    assert_grads_match(fns[op], [x], grad_output=w)
    out = fns[op](x)
    assert out.grad_fn.name().lower().startswith(op.split("_")[0])


def test_second_order(device):
    x = t64((2, 5), device).requires_grad_(True)
    second_order(lambda x: x.sort(1).values * x.topk(5, 1).values.flip(1), [x])


def test_indices_are_not_differentiable():
    x = t64((4,)).requires_grad_(True)
    v, i = x.sort()
    assert v.requires_grad and not i.requires_grad


def test_errors():
    x = tg.ones(3)
    with pytest.raises(RuntimeError, match="^selected index k out of range$"):
        x.topk(4)
    with pytest.raises(RuntimeError, match="^selected index k out of range$"):
        x.topk(-1)
    with pytest.raises(RuntimeError, match=r"^kthvalue\(\): selected number k out of range "
                                           r"for dimension 0$"):
        x.kthvalue(0)
    with pytest.raises(RuntimeError, match="^topk does not support bool dtypes"):
        tg.tensor([True, False]).topk(1)
    with pytest.raises(NotImplementedError, match="kthvalue.*'Bool'"):
        tg.tensor([True, False]).kthvalue(1)
    with pytest.raises(IndexError, match="dimension out of range"):
        x.sort(dim=3)
    with pytest.raises(TypeError, match=r"topk\(\): argument 'k' \(position 2\) must be int"):
        x.topk(1.5)


def test_registered():
    for name in ("sort", "argsort", "topk", "kthvalue"):
        assert callable(getattr(tg, name)) and callable(getattr(tg.Tensor, name))
    assert "tritongrad.return_types.sort(" in repr(tg.sort(tg.ones(2)))


def test_forward_ad(device):
    fwAD = pytest.importorskip("tritongrad.autograd.forward_ad")
    x, t = t64((3, 4), device), t64((3, 4), device)
    ops = [lambda z: z.sort(1, descending=True).values, lambda z: z.topk(2, 0).values,
           lambda z: z.kthvalue(2, 1).values, lambda z: z.kthvalue(1, 0, keepdim=True).values]
    for op in ops:
        with fwAD.dual_level():
            got = fwAD.unpack_dual(op(fwAD.make_dual(x, t))).tangent
        eps = 1e-6  # the sort order is locally constant: the tangent is exact
        want = (host(op(x + eps * t)) - host(op(x - eps * t))) / (2 * eps)
        np.testing.assert_allclose(host(got), want, rtol=1e-6, atol=1e-8)
