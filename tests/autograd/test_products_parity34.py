"""Parity of the products (tensordot, cross, einsum, block_diag, cartesian_prod) with
PyTorch's rules: empty contractions, dtype refusals, out= dtypes, dims forms and errors.
References are float64 NumPy; the torch comparisons run only where torch is installed."""

import warnings

import numpy as np
import pytest

import tritongrad as tg


def _t(a, dtype=None, requires_grad=False):
    x = tg.tensor(np.asarray(a))
    if dtype is not None:
        x = x.to(dtype)
    return x.requires_grad_() if requires_grad else x


_rng = np.random.default_rng(34)


def _r(*shape):
    return _rng.standard_normal(shape)


# -- tensordot -----------------------------------------------------------------------------------

@pytest.mark.parametrize("sa,sb,dims", [((2, 0), (0, 3), 1), ((0, 3), (3, 0), 1),
                                        ((2, 0, 4), (0, 4, 3), 2), ((0,), (0,), 1)])
def test_tensordot_empty(sa, sb, dims):
    a, b = _r(*sa), _r(*sb)
    x, y = _t(a, requires_grad=True), _t(b, requires_grad=True)
    r = tg.tensordot(x, y, dims)
    want = np.tensordot(a, b, dims)
    assert tuple(r.shape) == want.shape
    np.testing.assert_array_equal(r.detach().numpy(), want)
    r.sum().backward()
    assert tuple(x.grad.shape) == sa and tuple(y.grad.shape) == sb
    assert not x.grad.numpy().any() and not y.grad.numpy().any()


def test_tensordot_values_and_gradients():
    a, b = _r(3, 4, 5), _r(5, 4, 2)
    x, y = _t(a, requires_grad=True), _t(b, requires_grad=True)
    r = tg.tensordot(x, y, dims=([2, 1], [0, 1]))
    np.testing.assert_allclose(r.detach().numpy(), np.tensordot(a, b, ([2, 1], [0, 1])))
    g = _r(3, 2)
    r.backward(_t(g))
    np.testing.assert_allclose(x.grad.numpy(), np.einsum("ac,kjc->ajk", g, b))
    np.testing.assert_allclose(y.grad.numpy(), np.einsum("ac,ajk->kjc", g, a))


def test_tensordot_dims_forms():
    a, b = _r(3, 4, 5), _r(4, 5, 2)
    want = np.tensordot(a, b, 2)
    for dims in (2, True and 2, tg.tensor(2), tg.tensor([[1, 2], [0, 1]]), [[1, 2], [0, 1]],
                 ((1, 2), (0, 1))):
        np.testing.assert_allclose(tg.tensordot(_t(a), _t(b), dims).numpy(), want)
    with pytest.raises(TypeError, match="must be tuple of ints, not int"):
        tg.tensordot(_t(a), _t(b), (1, 0))  # (a pair of ints is no pair of lists)
    with pytest.raises(TypeError, match="must be tuple of ints, not int"):
        tg.tensordot(_t(a), _t(b), tg.tensor([1, 0]))
    with pytest.raises(RuntimeError, match="tensordot expects dims to be int or"):
        tg.tensordot(_t(a), _t(b), 1.5)
    with pytest.raises(RuntimeError, match="both dimension lists should have same length"):
        tg.tensordot(_t(a), _t(b), ([1], [0, 1]))
    with pytest.raises(RuntimeError, match="tensordot expects dims >= 0"):
        tg.tensordot(_t(a), _t(b), -1)


def test_tensordot_dtypes_and_out():
    a, b = _r(2, 3), _r(3, 2)
    with pytest.raises(RuntimeError, match="^both inputs should have same dtype"):
        tg.tensordot(_t(a, tg.float32), _t(b), 1)
    with pytest.raises(RuntimeError, match="^both inputs should have same dtype"):
        tg.inner(_t(a, tg.float32), _t(a))  # (inner is a tensordot)
    with pytest.raises(RuntimeError, match="^tensordot: Expected the output tensor to have "
                                           "dtype Double, but got an output tensor with dtype "
                                           "Float"):
        tg.tensordot(_t(a), _t(b), 1, out=tg.zeros(2, 2))
    out = tg.zeros(2, 2, dtype=tg.float64)
    assert tg.tensordot(_t(a), _t(b), 1, out=out) is out
    np.testing.assert_allclose(out.numpy(), a @ b)
    m, n = np.arange(6).reshape(2, 3), np.arange(6).reshape(3, 2)
    r = tg.tensordot(_t(m), _t(n), 1)
    assert r.dtype is tg.int64
    np.testing.assert_array_equal(r.numpy(), m @ n)


# -- cross ---------------------------------------------------------------------------------------

def test_cross_refuses_mixed_dtypes():
    a, b = _r(2, 3), _r(2, 3)
    with pytest.raises(RuntimeError, match="^expected scalar type Float but found Double"):
        tg.cross(_t(a, tg.float32), _t(b), dim=1)
    with pytest.raises(RuntimeError, match="^expected scalar type Long but found Float"):
        tg.cross(_t(a, tg.int64), _t(b, tg.float32), dim=1)
    with pytest.raises(RuntimeError, match="^expected scalar type Float but found Bool"):
        tg.cross(_t(a, tg.float32), _t(b, tg.bool), dim=1)
    with pytest.raises(NotImplementedError, match="\"cross\" not implemented for 'Bool'"):
        tg.cross(_t(a, tg.bool), _t(b, tg.float32), dim=1)


def test_cross_broadcasting_and_dims():
    a, b = _r(4, 3), _r(1, 3)
    np.testing.assert_allclose(tg.cross(_t(a), _t(b), dim=-1).numpy(), np.cross(a, b))
    # the cross dim itself never broadcasts, with or without dim
    with pytest.raises(RuntimeError, match="inputs dimension 1 must have length 3. Got 3 and 1"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tg.cross(_t(_r(1, 3)), _t(_r(2, 1)))
    # (0 broadcast with 1 is 0)
    assert tuple(tg.cross(_t(_r(0, 3)), _t(_r(1, 3)), dim=1).shape) == (0, 3)
    with pytest.raises(IndexError, match="^Dimension specified as 0 but tensor has no "
                                         "dimensions"):
        tg.cross(_t(_r()), _t(_r()), dim=0)


def test_cross_out():
    a, b = _r(2, 3), _r(2, 3)
    out = tg.zeros(2, 3, dtype=tg.float64)
    assert tg.cross(_t(a), _t(b), dim=1, out=out) is out
    np.testing.assert_allclose(out.numpy(), np.cross(a, b))
    with pytest.raises(RuntimeError, match="^Expected out tensor to have dtype double, but got "
                                           "float instead"):
        tg.cross(_t(a), _t(b), dim=1, out=tg.zeros(2, 3))
    with pytest.raises(RuntimeError, match="^linalg_cross\\(\\): functions with out="):
        tg.cross(_t(a, requires_grad=True), _t(b), dim=1, out=tg.zeros(2, 3, dtype=tg.float64))


# -- cdist ---------------------------------------------------------------------------------------

def test_cdist_refuses_mixed_dtypes_and_names_batch_mismatch():
    with pytest.raises(RuntimeError, match="^expected scalar type Float but found Double"):
        tg.cdist(_t(_r(3, 2), tg.float32), _t(_r(4, 2)))
    with pytest.raises(RuntimeError, match="^The size of tensor a \\(2\\) must match the size "
                                           "of tensor b \\(3\\) at non-singleton dimension 1"):
        tg.cdist(_t(_r(4, 2, 3, 4)), _t(_r(3, 3, 4)))
    a, b = _r(2, 3, 4), _r(1, 5, 4)  # (batch dims broadcast)
    want = np.sqrt(((a[:, :, None] - b[:, None]) ** 2).sum(-1))
    np.testing.assert_allclose(tg.cdist(_t(a), _t(b)).numpy(), want)


# -- block_diag, cartesian_prod ----------------------------------------------------------------

def test_varargs_take_no_list():
    a = tg.tensor([1., 2.])
    for fn in (tg.block_diag, tg.cartesian_prod):
        with pytest.raises(TypeError, match="expected Tensor as element 0 in argument 0, but "
                                            "got list"):
            fn([a, a])
        with pytest.raises(TypeError, match="expected Tensor as element 1 in argument 0, but "
                                            "got int"):
            fn(a, 3)
    # (meshgrid takes a list, as PyTorch's)
    assert len(tg.meshgrid([a, a], indexing="ij")) == 2


# -- einsum --------------------------------------------------------------------------------------

def test_einsum_no_operands_is_value_error():
    for args in (("ij",), (tg.ones(2, 3),)):
        with pytest.raises(ValueError, match="^einsum\\(\\): must specify the equation string "
                                             "and at least one operand"):
            tg.einsum(*args)


def test_einsum_ellipsis_broadcast_error():
    with pytest.raises(RuntimeError, match="^einsum\\(\\): dimension 0 covered by ellipsis in "
                                           "operand 1 has size 3 which does not broadcast with "
                                           "previously seen ellipsis with size 2"):
        tg.einsum("...ij,...jk", tg.ones(2, 2, 3), tg.ones(3, 3, 4))
    with pytest.raises(RuntimeError, match="^einsum\\(\\): dimension 1 covered by ellipsis in "
                                           "operand 1 has size 4"):
        tg.einsum(tg.ones(2, 3), [..., 1], tg.ones(3, 4), [1, ...], [...])
    with pytest.raises(RuntimeError, match="^einsum\\(\\): subscript j has size 4 for operand 1 "
                                           "which does not broadcast"):
        tg.einsum("ij,jk", tg.ones(2, 3), tg.ones(4, 4))


# -- against torch -------------------------------------------------------------------------------

def test_against_torch():
    torch = pytest.importorskip("torch")

    def both(fn):
        outs = []
        for lib in (torch, tg):
            try:
                outs.append(("ok", np.asarray(fn(lib).tolist())))
            except Exception as e:  # noqa: BLE001 (the comparison is of the error)
                outs.append((type(e).__name__, str(e).split()[:3]))
        return outs

    a, b, c = _r(3, 4, 5), _r(4, 5, 2), _r(2, 0)
    cases = [
        lambda L: L.tensordot(L.tensor(c), L.tensor(_r(0, 3)), 1),
        lambda L: L.tensordot(L.tensor(a), L.tensor(b), 2),
        lambda L: L.tensordot(L.tensor(a).float(), L.tensor(b), 2),
        lambda L: L.tensordot(L.tensor(a), L.tensor(b), 1.5),
        lambda L: L.cross(L.tensor(a[:, :3, 0]), L.tensor(b[:3, :3, 0]).float(), dim=1),
        lambda L: L.cross(L.tensor(_r(0, 3)), L.tensor(_r(1, 3)), dim=1),
        lambda L: L.cross(L.tensor(_r()), L.tensor(_r()), dim=0),
        lambda L: L.einsum("...ij,...jk", L.ones(2, 2, 3), L.ones(3, 3, 4)),
        lambda L: L.block_diag([L.ones(2)]),
    ]
    for i, case in enumerate(cases):
        want, got = both(case)
        assert want[0] == got[0], (i, want, got)
        if want[0] == "ok":
            np.testing.assert_allclose(got[1], want[1], err_msg=str(i))
        elif want[0] != "TypeError":  # (tg's TypeErrors name the op first)
            assert want[1] == got[1], (i, want, got)


def test_ndarray_matmul_tensor_is_pythons_type_error():
    with pytest.raises(TypeError, match="unsupported operand type"):
        np.ones((2, 2)) @ tg.ones(2, 2)
    with pytest.raises(TypeError, match=r"matmul\(\): argument 'input' \(position 1\) must be"):
        tg.matmul(np.ones((2, 2)), tg.ones(2, 2))
    a = tg.arange(6.0).reshape(2, 3)
    assert (tg.ones(1, 2) @ a).tolist() == [[3.0, 5.0, 7.0]]  # (the reflected order kept)
