"""Batch normalisation in evaluation mode is one ``NativeBatchNormBackward0`` node (edges to
input, weight, bias), as PyTorch's native_batch_norm records; values and gradients against a
float64 NumPy reference, gradcheck/gradgradcheck, forward AD, vmap and batched gradients."""

import numpy as np
import pytest

import tritongrad as tg
import tritongrad.nn.functional as F

EPS = 1e-3


def _data(shape, seed=0):
    rs = np.random.RandomState(seed)
    c = shape[1]
    return (rs.randn(*shape), rs.randn(c), rs.rand(c) + 0.5, rs.randn(c), rs.randn(c),
            np.cos(np.arange(np.prod(shape))).reshape(shape))


def _reference(x, m, v, w, b, g):
    """(y, dx, dw, db) in float64: y = (x - m) / sqrt(v + eps) * w + b per channel."""
    shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    rstd = 1 / np.sqrt(v + EPS)
    xhat = (x - m.reshape(shape)) * rstd.reshape(shape)
    other = (0,) + tuple(range(2, x.ndim))
    y = xhat * w.reshape(shape) + b.reshape(shape)
    return y, g * (w * rstd).reshape(shape), (g * xhat).sum(other), g.sum(other)


@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5), (2, 3, 4, 4), (2, 3, 2, 2, 2)])
@pytest.mark.parametrize("affine", [(True, True), (True, False), (False, True), (False, False)])
def test_values_gradients_and_node(shape, affine):
    x, m, v, w, b, g = _data(shape)
    wr = w if affine[0] else np.ones_like(w)
    br = b if affine[1] else np.zeros_like(b)
    y_ref, dx_ref, dw_ref, db_ref = _reference(x, m, v, wr, br, g)
    xt = tg.tensor(x, requires_grad=True)
    wt = tg.tensor(w, requires_grad=True) if affine[0] else None
    bt = tg.tensor(b, requires_grad=True) if affine[1] else None
    y = F.batch_norm(xt, tg.tensor(m), tg.tensor(v), wt, bt, training=False, eps=EPS)
    assert type(y.grad_fn).__name__ == "NativeBatchNormBackward0"
    assert len(y.grad_fn.next_functions) == 1 + sum(affine)
    y.backward(tg.tensor(g))
    np.testing.assert_allclose(y.detach().numpy(), y_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(xt.grad.numpy(), dx_ref, rtol=1e-12, atol=1e-12)
    if wt is not None:
        np.testing.assert_allclose(wt.grad.numpy(), dw_ref, rtol=1e-12, atol=1e-12)
    if bt is not None:
        np.testing.assert_allclose(bt.grad.numpy(), db_ref, rtol=1e-12, atol=1e-12)


def test_module_in_eval_mode_records_one_node():
    m = tg.nn.BatchNorm2d(3).double().eval()
    y = m(tg.randn(2, 3, 4, 4, dtype=tg.float64, requires_grad=True))
    names = [type(f).__name__ for f, _ in y.grad_fn.next_functions]
    assert type(y.grad_fn).__name__ == "NativeBatchNormBackward0"
    assert names == ["AccumulateGrad"] * 3


@pytest.mark.parametrize("affine", [(True, True), (False, True), (True, False)])
def test_gradcheck_and_gradgradcheck(affine):
    x, m, v, w, b, _ = _data((3, 2, 4), seed=1)
    args = [tg.tensor(x, requires_grad=True)]
    args += [tg.tensor(p, requires_grad=True) for p, on in zip((w, b), affine) if on]
    mt, vt = tg.tensor(m), tg.tensor(v)

    def fn(xx, *p):
        it = iter(p)
        ww = next(it) if affine[0] else None
        bb = next(it) if affine[1] else None
        return F.batch_norm(xx, mt, vt, ww, bb, training=False, eps=EPS)

    assert tg.autograd.gradcheck(fn, args)
    assert tg.autograd.gradgradcheck(fn, args)


def test_forward_ad_matches_finite_differences():
    x, m, v, w, b, _ = _data((3, 2, 4), seed=2)
    rs = np.random.RandomState(3)
    tx, tw, tb = rs.randn(*x.shape), rs.randn(2), rs.randn(2)
    mt, vt = tg.tensor(m), tg.tensor(v)

    def fn(xx, ww, bb):
        return F.batch_norm(xx, mt, vt, ww, bb, training=False, eps=EPS)

    _, jvp = tg.func.jvp(fn, (tg.tensor(x), tg.tensor(w), tg.tensor(b)),
                         (tg.tensor(tx), tg.tensor(tw), tg.tensor(tb)))
    h = 1e-6
    plus = _reference(x + h * tx, m, v, w + h * tw, b + h * tb, x)[0]
    minus = _reference(x - h * tx, m, v, w - h * tw, b - h * tb, x)[0]
    np.testing.assert_allclose(jvp.numpy(), (plus - minus) / (2 * h), rtol=1e-6, atol=1e-7)


def test_running_statistics_changed_after_forward_do_not_reach_backward():
    x, m, v, w, b, g = _data((4, 3))
    mt, vt = tg.tensor(m), tg.tensor(v)
    xt, wt = tg.tensor(x, requires_grad=True), tg.tensor(w, requires_grad=True)
    y = F.batch_norm(xt, mt, vt, wt, None, training=False, eps=EPS)
    mt.add_(5.0)  # (the next training step updates them in place)
    vt.mul_(3.0)
    y.backward(tg.tensor(g))
    _, dx_ref, dw_ref, _ = _reference(x, m, v, w, np.zeros(3), g)
    np.testing.assert_allclose(xt.grad.numpy(), dx_ref, rtol=1e-12)
    np.testing.assert_allclose(wt.grad.numpy(), dw_ref, rtol=1e-12)


def test_vmap_and_batched_gradients():
    x, m, v, w, b, _ = _data((5, 4, 3), seed=4)
    mt, vt, wt, bt = (tg.tensor(a) for a in (m, v, w, b))

    def fn(xx):  # one sample (C, L) as a batch of one
        return F.batch_norm(xx.unsqueeze(0), mt, vt, wt, bt, training=False, eps=EPS)[0]

    out = tg.func.vmap(fn)(tg.tensor(x))
    np.testing.assert_allclose(out.numpy(), _reference(x, m, v, w, b, x)[0], rtol=1e-12)
    xt = tg.tensor(x, requires_grad=True)
    y = F.batch_norm(xt, mt, vt, wt, bt, training=False, eps=EPS)
    eye = tg.eye(y.numel(), dtype=tg.float64).reshape(-1, *y.shape)[:7]
    (jac,) = tg.autograd.grad(y, xt, eye, is_grads_batched=True)
    expect = np.stack([_reference(x, m, v, w, b, e.numpy())[1] for e in eye])
    np.testing.assert_allclose(jac.numpy(), expect, rtol=1e-12)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_input_float32_statistics(dtype):
    x, m, v, w, b, g = _data((4, 3, 5), seed=5)
    dt = getattr(tg, dtype)
    xt = tg.tensor(x, dtype=dt, requires_grad=True)
    wt = tg.tensor(w, dtype=tg.float32, requires_grad=True)
    bt = tg.tensor(b, dtype=tg.float32, requires_grad=True)
    y = F.batch_norm(xt, tg.tensor(m, dtype=tg.float32), tg.tensor(v, dtype=tg.float32), wt,
                     bt, training=False, eps=EPS)
    assert y.dtype is dt
    y.backward(tg.tensor(g, dtype=dt))
    assert xt.grad.dtype is dt and wt.grad.dtype is tg.float32 and bt.grad.dtype is tg.float32
    xr = xt.detach().double().numpy()  # (the reference from the rounded input)
    y_ref, dx_ref, dw_ref, db_ref = _reference(xr, m.astype(np.float32), v.astype(np.float32),
                                               w.astype(np.float32), b.astype(np.float32),
                                               tg.tensor(g, dtype=dt).double().numpy())
    tol = 1e-2 if dtype == "float16" else 6e-2
    np.testing.assert_allclose(y.double().detach().numpy(), y_ref, rtol=tol, atol=tol)
    np.testing.assert_allclose(xt.grad.double().numpy(), dx_ref, rtol=tol, atol=tol)
    np.testing.assert_allclose(wt.grad.numpy(), dw_ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(bt.grad.numpy(), db_ref, rtol=1e-4, atol=1e-4)


def test_against_torch():
    torch = pytest.importorskip("torch")
    x, m, v, w, b, g = _data((2, 3, 4, 4), seed=6)
    res = []
    for lib in (torch, tg):
        xt, wt, bt = (lib.tensor(a, requires_grad=True) for a in (x, w, b))
        y = lib.nn.functional.batch_norm(xt, lib.tensor(m), lib.tensor(v), wt, bt,
                                         training=False, eps=EPS)
        y.backward(lib.tensor(g))
        res.append([type(y.grad_fn).__name__] + [t.detach().numpy() for t in
                                                (y, xt.grad, wt.grad, bt.grad)])
    assert res[0][0] == res[1][0]
    for a, bb in zip(res[0][1:], res[1][1:]):
        np.testing.assert_allclose(bb, a, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("training", [False, True])
@pytest.mark.parametrize("which", ["running_mean", "running_var"])
def test_running_statistics_requiring_grad_are_refused(training, which):
    stats = {"running_mean": tg.zeros(3), "running_var": tg.ones(3)}
    stats[which].requires_grad_()
    x = tg.randn(4, 3)
    with pytest.raises(RuntimeError, match=f"not differentiable with respect to argument "
                                           f"'{which}'"):
        F.batch_norm(x, stats["running_mean"], stats["running_var"], training=training)
    with tg.no_grad():  # (nothing recorded: allowed, as PyTorch's)
        assert F.batch_norm(x, stats["running_mean"], stats["running_var"],
                            training=training).shape == (4, 3)
    with pytest.raises(RuntimeError, match="not differentiable"):
        F.instance_norm(tg.randn(2, 3, 5), stats["running_mean"], stats["running_var"],
                        use_input_stats=False)
