"""A dense first operand and a sparse COO second one (Note [Dense first, sparse second] in
autograd/sparse_ops.py): ``torch.add``/``sub`` give a dense result whose gradient for the
sparse operand is dense, ``torch.mul`` a sparse one, division by a sparse tensor is refused,
and dense-sparse addition does not broadcast; plus ``Tensor.__setstate__``'s legacy states."""

import collections

import numpy as np
import pytest

import tritongrad as tg

D = np.random.RandomState(0).randn(3, 4)
S = np.where(np.random.RandomState(1).rand(3, 4) > 0.5, np.random.RandomState(2).randn(3, 4),
             0.0)
G = np.cos(np.arange(12.0)).reshape(3, 4)


def _operands():
    d = tg.tensor(D, requires_grad=True)
    s = tg.tensor(S).to_sparse().requires_grad_()
    return d, s


@pytest.mark.parametrize("call, sign, alpha", [
    (lambda d, s: tg.add(d, s), 1, 1),
    (lambda d, s: tg.add(d, s, alpha=2), 1, 2),
    (lambda d, s: tg.sub(d, s), -1, 1),
    (lambda d, s: tg.subtract(d, s, alpha=2), -1, 2),
    (lambda d, s: tg.sub(d, s, alpha=0.5), -1, 0.5),
])
def test_add_sub_are_dense_with_dense_gradients(call, sign, alpha):
    d, s = _operands()
    y = call(d, s)
    assert y.layout is tg.strided
    np.testing.assert_allclose(y.detach().numpy(), D + sign * alpha * S, rtol=1e-15)
    y.backward(tg.tensor(G))
    np.testing.assert_allclose(d.grad.numpy(), G)
    assert s.grad.layout is tg.strided  # (not masked to s's pattern: PyTorch's)
    np.testing.assert_allclose(s.grad.numpy(), sign * alpha * G)


@pytest.mark.parametrize("name, kwargs, sign, alpha", [
    ("add", {}, 1, 1), ("add", {"alpha": 2}, 1, 2), ("sub", {}, -1, 1),
    ("sub", {"alpha": 3}, -1, 3), ("subtract", {"alpha": 0.5}, -1, 0.5)])
def test_methods_out_of_place_and_in_place(name, kwargs, sign, alpha):
    d, s = _operands()
    y = getattr(d, name)(s, **kwargs)
    assert y.layout is tg.strided
    np.testing.assert_allclose(y.detach().numpy(), D + sign * alpha * S, rtol=1e-15)
    d, s = _operands()
    x = d * 1.0  # (a non-leaf, to be written in place)
    v = x._version
    r = getattr(x, name + "_")(s, **kwargs)
    assert r is x and x._version == v + 1
    np.testing.assert_allclose(x.detach().numpy(), D + sign * alpha * S, rtol=1e-15)
    x.backward(tg.tensor(G))
    np.testing.assert_allclose(d.grad.numpy(), G)
    assert s.grad.layout is tg.strided
    np.testing.assert_allclose(s.grad.numpy(), sign * alpha * G)


def test_mul_methods():
    d, s = _operands()
    y = d.mul(s)
    assert y.layout is tg.sparse_coo
    np.testing.assert_allclose(y.to_dense().detach().numpy(), D * S)
    d, s = _operands()
    x = d * 1.0
    x.mul_(s)  # (in place: dense, zeros where s specifies nothing, as PyTorch's)
    assert x.layout is tg.strided
    np.testing.assert_allclose(x.detach().numpy(), D * S)
    x.backward(tg.tensor(G))
    np.testing.assert_allclose(d.grad.numpy(), G * S)
    np.testing.assert_allclose(s.grad.numpy(), G * D)
    for call in (lambda: tg.tensor(D).div(tg.tensor(S).to_sparse()),
                 lambda: tg.tensor(D).div_(tg.tensor(S).to_sparse())):
        with pytest.raises(RuntimeError, match="Sparse division requires a scalar"):
            call()
    with pytest.raises(NotImplementedError, match="does not support sparse COO"):
        tg.tensor(D).pow(tg.tensor(S).to_sparse())  # (no sparse rule: the plain refusal)


def test_add_with_out_and_promotion():
    out = tg.empty(3, 4, dtype=tg.float64)
    r = tg.add(tg.tensor(D), tg.tensor(S).to_sparse(), alpha=3, out=out)
    assert r is out
    np.testing.assert_allclose(out.numpy(), D + 3 * S)
    r = tg.add(tg.ones(3, 4, dtype=tg.int64), tg.tensor(S, dtype=tg.float32).to_sparse())
    assert r.dtype is tg.float32 and r.layout is tg.strided
    with pytest.raises(RuntimeError, match="Boolean alpha only supported"):
        tg.add(tg.tensor(D), tg.tensor(S).to_sparse(), alpha=True)


def test_mul_is_sparse():
    for call in (lambda d, s: tg.mul(d, s), lambda d, s: tg.multiply(d, s)):
        d, s = _operands()
        y = call(d, s)
        assert y.layout is tg.sparse_coo
        np.testing.assert_allclose(y.to_dense().detach().numpy(), D * S)
        tg.sparse.sum(y).backward()
        np.testing.assert_allclose(d.grad.to_dense().numpy(), np.where(S != 0, S, 0.0))
        assert s.grad.layout is tg.sparse_coo
        np.testing.assert_allclose(s.grad.to_dense().numpy(), np.where(S != 0, D, 0.0))
    with pytest.raises(RuntimeError, match="out= takes a dense one"):
        tg.mul(tg.tensor(D), tg.tensor(S).to_sparse(), out=tg.empty(3, 4, dtype=tg.float64))


def test_refusals():
    d, s = tg.tensor(D), tg.tensor(S).to_sparse()
    for call in (lambda: tg.div(d, s), lambda: tg.true_divide(d, s), lambda: tg.divide(d, s)):
        with pytest.raises(RuntimeError, match="Sparse division requires a scalar"):
            call()
    big = tg.ones(2, 3, 4, dtype=tg.float64)
    for call in (lambda: tg.add(big, s), lambda: big + s, lambda: big - s):
        with pytest.raises(RuntimeError, match="does not currently support broadcasting"):
            call()


def test_against_torch():
    torch = pytest.importorskip("torch")
    for name, kwargs in (("add", {}), ("add", {"alpha": 2}), ("sub", {"alpha": 3}),
                         ("mul", {})):
        res = []
        for lib in (torch, tg):
            d = lib.tensor(D, requires_grad=True)
            s = lib.tensor(S).to_sparse().requires_grad_()
            y = getattr(lib, name)(d, s, **kwargs)
            dense = y.to_dense() if y.layout != lib.strided else y
            dense.backward(lib.tensor(G))
            res.append((str(y.layout).split(".")[-1], dense.detach().numpy(),
                        d.grad.to_dense().numpy(), s.grad.to_dense().numpy(),
                        str(s.grad.layout).split(".")[-1]))
        assert res[0][0] == res[1][0] and res[0][4] == res[1][4], (name, res)
        for a, b in zip(res[0][1:4], res[1][1:4]):
            np.testing.assert_allclose(b, a, rtol=1e-15)


def test_setstate_legacy_states():
    a = tg.arange(6.0)
    b = tg.empty(0)
    b.__setstate__((a.untyped_storage(), 0, (2, 3), (3, 1)))
    assert b.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    c = tg.empty(0)
    c.__setstate__((tg.ones(2), None, None, True, None))  # (a legacy Variable)
    assert c.tolist() == [1.0, 1.0] and c.requires_grad
    h = tg.ones(2)
    h.__setstate__((True, None, collections.OrderedDict([(0, lambda g: g * 3)])))
    (h * 1).sum().backward()
    assert h.grad.tolist() == [3.0, 3.0]
    with pytest.raises(RuntimeError, match="can be only called on leaf Tensors"):
        (tg.ones(2, requires_grad=True) * 2).__setstate__((True, None, None))
