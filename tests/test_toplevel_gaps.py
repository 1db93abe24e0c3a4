"""The top-level PyTorch names added together: ``tg.futures`` and ``jit.fork``/``wait``,
``tg.functional``, fake quantization (autograd/ops/quantize.py), the storage classes and
helpers (autograd/storage.py) and the sparse-dense products (autograd/sparse_products.py).

Each behaviour is checked against NumPy (float64 or float32 emulating the kernels) or finite
differences; the torch comparisons (skipped without torch) check the same calls against
PyTorch itself.
"""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

import tritongrad as tg
from tritongrad import futures
from tritongrad import jit
from tritongrad.autograd import sparse_products as sp
from tritongrad.autograd import storage as st

pytestmark = [pytest.mark.filterwarnings("ignore:TypedStorage is deprecated"),
              pytest.mark.filterwarnings("ignore:`torch.jit.(fork|wait)` is deprecated")]


def _torch():
    torch = pytest.importorskip("torch")
    warnings.filterwarnings("ignore", message="Sparse invariant checks")
    return torch


# -- futures -------------------------------------------------------------------------------------

def test_future_result_callbacks_and_chaining():
    fut = futures.Future()
    seen = []
    fut.add_done_callback(lambda f: seen.append(f.value()))
    chained = fut.then(lambda f: f.wait() * 2)
    assert not fut.done() and not chained.done() and seen == []
    with pytest.raises(RuntimeError, match="not completed"):
        fut.value()
    fut.set_result(21)
    assert fut.done() and fut.wait() == 21 and fut.value() == 21
    assert seen == [21] and chained.wait() == 42
    fut.add_done_callback(lambda f: seen.append(-f.value()))  # already done: runs at once
    assert seen == [21, -21]
    with pytest.raises(RuntimeError, match="completed Future as complete again"):
        fut.set_result(1)


def test_future_errors():
    fut = futures.Future()
    fut.set_exception(ValueError("boom"))
    assert fut.done()
    with pytest.raises(ValueError, match="boom"):
        fut.wait()
    with pytest.raises(ValueError, match="boom"):
        fut.value()
    chained = fut.then(lambda f: f.wait() + 1)  # the callback's error, wrapped as PyTorch's
    with pytest.raises(RuntimeError, match="error when running the callback: ValueError: boom"):
        chained.wait()
    with pytest.raises(AssertionError, match="not an Exception"):
        futures.Future().set_exception(3)


def test_future_completed_from_another_thread():
    fut = futures.Future()
    t = threading.Timer(0.05, fut.set_result, args=("late",))
    t.start()
    assert fut.wait() == "late"  # (blocks until the other thread completes it)
    t.join()


def test_collect_all_and_wait_all():
    a, b = futures.Future(), futures.Future()
    both = futures.collect_all([a, b])
    a.set_result(1)
    assert not both.done()
    b.set_result(2)
    assert [f.value() for f in both.wait()] == [1, 2]
    assert futures.wait_all([a, b]) == [1, 2]
    assert futures.collect_all([]).wait() == []
    bad = futures.Future()
    bad.set_exception(KeyError("k"))
    with pytest.raises(KeyError):
        futures.wait_all([a, bad])
    with pytest.raises(TypeError, match="expected a list of Futures"):
        futures.collect_all([a, 3])


def test_jit_fork_runs_eagerly_and_wait_reads_it():
    calls = []

    def f(x, *, y):
        calls.append(x)
        return x + y
    with pytest.warns(DeprecationWarning, match="torch.jit.fork` is deprecated"):
        fut = jit.fork(f, tg.ones(2), y=tg.ones(2))
    assert calls and fut.done()  # (ran at once)
    assert jit.wait(fut).tolist() == [2.0, 2.0]

    def boom():
        raise ValueError("inner")
    with pytest.raises(ValueError, match="inner"):
        jit.fork(boom)
    with pytest.raises(TypeError, match="expected a Future"):
        jit.wait(3)


def test_top_level_fork_and_wait_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fut = jit._fork(lambda a, b=2: a + b, 1, b=5)
        assert fut.done() and jit._wait(fut) == 6
    with pytest.raises(TypeError, match="expected a callable"):
        jit._fork(1)


def test_futures_against_torch():
    torch = _torch()
    assert sorted(futures.__all__) == sorted(torch.futures.__all__)
    for mod in (torch, tg):
        fut = (mod.futures.Future)()
        chained = fut.then(lambda f: f.wait() + 1)
        fut.set_result(1)
        assert chained.wait() == 2
        assert mod.jit.wait(mod.jit.fork(lambda a, b=2: a + b, 1, b=5)) == 6


# -- functional ----------------------------------------------------------------------------------

def test_functional_reexports_the_top_level_functions():
    from tritongrad import functional
    for name in functional.__all__:
        assert getattr(functional, name) is getattr(tg, name), name
    a, b = functional.broadcast_tensors(tg.ones(2, 1), tg.zeros(3))
    assert a.shape == (2, 3) and b.shape == (2, 3)
    x = np.arange(6.0).reshape(2, 3)
    assert np.allclose(functional.einsum("ij->ji", tg.tensor(x)).numpy(), x.T)


def test_functional_names_match_torch():
    torch = _torch()
    from tritongrad import functional
    assert sorted(functional.__all__) == sorted(torch.functional.__all__)


# -- fake quantization ---------------------------------------------------------------------------

def _ref_fq(x, scale, zp, qmin, qmax, float_zp=False):
    """float32 NumPy: q = rint(x * (1/scale)) + zp (half to even), clamped, mapped back."""
    x = np.asarray(x, np.float32)
    scale = np.asarray(scale, np.float32)
    inv = np.float32(1) / scale
    q = np.rint(x * inv + zp) if float_zp else np.rint(x * inv) + zp
    out = ((np.clip(q, qmin, qmax) - zp) * scale).astype(np.float32)
    return q, (q >= qmin) & (q <= qmax), out


def _x(shape=(5, 4), seed=0, k=3.0):
    return (np.random.default_rng(seed).standard_normal(shape) * k).astype(np.float32)


def test_fake_quantize_per_tensor_values_rounding_and_gradient():
    xn = _x()
    xn[0, :4] = [0.25, 0.35, -0.05, 0.15]  # exact halves of scale 0.1 in float32 arithmetic
    x = tg.tensor(xn, requires_grad=True)
    y = tg.fake_quantize_per_tensor_affine(x, 0.1, 3, -8, 7)
    q, mask, ref = _ref_fq(xn, 0.1, 3, -8, 7)
    assert y.dtype == tg.float32 and np.array_equal(y.detach().numpy(), ref)
    assert 0 < mask.sum() < mask.size  # (both kinds of element are present)
    w = np.random.default_rng(1).standard_normal(xn.shape).astype(np.float32)
    (y * tg.tensor(w)).sum().backward()
    assert np.array_equal(x.grad.numpy(), np.where(mask, w, 0))
    # 0-d tensor qparams (PyTorch's tensor_qparams overload): the same values
    y2 = tg.fake_quantize_per_tensor_affine(tg.tensor(xn), tg.tensor(0.1), tg.tensor(3), -8, 7)
    assert np.array_equal(y2.numpy(), ref)


def test_fake_quantize_dtypes():
    xn = _x(seed=2)
    ref = _ref_fq(xn, 0.25, 0, -4, 4)[2]
    for dt, tol in ((tg.float64, 1e-6), (tg.float16, 2e-3), (tg.bfloat16, 2e-2)):
        y = tg.fake_quantize_per_tensor_affine(tg.tensor(xn).to(dt), 0.25, 0, -4, 4)
        assert y.dtype == dt
        assert np.allclose(y.float().numpy(), ref, atol=tol)


def test_fake_quantize_input_gradient_by_finite_differences():
    """With a scale far below the finite-difference step the rounding is invisible, so the
    straight-through gradient (1 inside the range, 0 where clamped) is the true derivative."""
    x = tg.tensor(np.random.default_rng(3).uniform(0.5, 2.0, (3, 4)), requires_grad=True)
    big = 2 ** 40  # x / 1e-12 reaches 2e12 > 2**40: some elements clamp
    fns = [lambda t: tg.fake_quantize_per_tensor_affine(t, 1e-12, 0, -big, big),
           lambda t: tg._fake_quantize_learnable_per_tensor_affine(
               t, tg.tensor([1e-12]), tg.tensor([0.0]), -big, big)]
    for fn in fns:
        assert tg.autograd.gradcheck(fn, (x,))
        g, = tg.autograd.grad(fn(x).sum(), x)
        assert 0 < g.sum().item() < g.numel()


def test_fake_quantize_per_channel_values_and_gradient():
    xn = _x((3, 4, 2), seed=4)
    s = np.array([0.1, 0.2, 0.3, 0.7], np.float32)
    z = np.array([0, 1, -2, 3], np.int32)
    x = tg.tensor(xn, requires_grad=True)
    y = tg.fake_quantize_per_channel_affine(x, tg.tensor(s), tg.tensor(z), 1, -8, 7)
    _, mask, ref = _ref_fq(xn, s[:, None], z[:, None], -8, 7)
    assert np.array_equal(y.detach().numpy(), ref)
    y.sum().backward()
    assert np.array_equal(x.grad.numpy(), mask.astype(np.float32))
    zf = np.array([0.5, 1.5, -2.0, 3.0], np.float32)  # a float zero point is added first
    y = tg.fake_quantize_per_channel_affine(tg.tensor(xn), tg.tensor(s), tg.tensor(zf), 1, -8, 7)
    assert np.array_equal(y.numpy(), _ref_fq(xn, s[:, None], zf[:, None], -8, 7, True)[2])


def _ref_learnable(xn, s, z_b, qmin, qmax, w, gf):
    """PyTorch's learnable backward in float32 NumPy: (dx, dscale, dzero_point) per element."""
    q, mask, fq = _ref_fq(xn, s, z_b, qmin, qmax)
    dx = np.where(mask, w, 0)
    ds = np.where(mask, (fq - xn) / s, np.where(q < qmin, qmin - z_b, qmax - z_b)) * w * gf
    dz = np.where(mask, 0, -s) * w * gf
    return dx, ds, dz


@pytest.mark.parametrize("zp, gf", [(1.5, 1.0), (2.5, 0.5), (-0.3, 1.0), (40.0, 2.0)])
def test_learnable_per_tensor_gradients(zp, gf):
    xn, w = _x(seed=5), _x(seed=6, k=1.0)
    x = tg.tensor(xn, requires_grad=True)
    s = tg.tensor([0.3], requires_grad=True)
    z = tg.tensor([zp], requires_grad=True)
    y = tg._fake_quantize_learnable_per_tensor_affine(x, s, z, -4, 5, gf)
    # the forward rounds the zero point half to even, the backward adds 0.5 and truncates
    z_f = min(max(np.rint(zp), -4), 5)
    z_b = min(max(float(np.trunc(np.float32(zp) + np.float32(0.5))), -4), 5)
    assert np.array_equal(y.detach().numpy(), _ref_fq(xn, 0.3, z_f, -4, 5)[2])
    (y * tg.tensor(w)).sum().backward()
    dx, ds, dz = _ref_learnable(xn, np.float32(0.3), z_b, -4, 5, w, gf)
    assert np.array_equal(x.grad.numpy(), dx)
    assert s.grad.shape == (1,) and np.allclose(s.grad.numpy(), ds.sum(), rtol=1e-5)
    assert np.allclose(z.grad.numpy(), dz.sum(), rtol=1e-5, atol=1e-6)


def test_learnable_per_channel_gradients():
    xn, w = _x((3, 4), seed=7), _x((3, 4), seed=8, k=1.0)
    sn = np.array([0.1, 0.2, 0.3, 0.7], np.float32)
    zn = np.array([0.5, 1.5, -2.2, 30.0], np.float32)
    x = tg.tensor(xn, requires_grad=True)
    s, z = tg.tensor(sn, requires_grad=True), tg.tensor(zn, requires_grad=True)
    y = tg._fake_quantize_learnable_per_channel_affine(x, s, z, 1, -8, 7, 0.7)
    zr = np.clip(np.rint(zn), -8, 7)  # (rounded half to even, clamped: forward and backward)
    assert np.array_equal(y.detach().numpy(), _ref_fq(xn, sn, zr, -8, 7, True)[2])
    (y * tg.tensor(w)).sum().backward()
    dx, ds, dz = _ref_learnable(xn, sn, zr, -8, 7, w, 0.7)
    assert np.array_equal(x.grad.numpy(), dx)
    assert np.allclose(s.grad.numpy(), ds.sum(0), rtol=1e-5, atol=1e-6)
    assert np.allclose(z.grad.numpy(), dz.sum(0), rtol=1e-5, atol=1e-6)


def test_fake_quantize_on_each_device(device):
    """The composites run on the CUDA backend (real, or emulated by the Triton interpreter)
    with the CPU's values and gradients."""
    xn, w = _x((3, 4), seed=12), _x((3, 4), seed=13, k=1.0)
    sn = np.array([0.1, 0.2, 0.3, 0.7], np.float32)
    zn = np.array([0.5, 1.5, -2.2, 30.0], np.float32)
    x = tg.tensor(xn, device=device, requires_grad=True)
    s = tg.tensor(sn, device=device, requires_grad=True)
    z = tg.tensor(zn, device=device, requires_grad=True)
    y = tg._fake_quantize_learnable_per_channel_affine(x, s, z, 1, -8, 7, 0.7)
    (y * tg.tensor(w, device=device)).sum().backward()
    zr = np.clip(np.rint(zn), -8, 7)
    dx, ds, dz = _ref_learnable(xn, sn, zr, -8, 7, w, 0.7)
    assert np.allclose(y.detach().cpu().numpy(), _ref_fq(xn, sn, zr, -8, 7, True)[2], atol=1e-6)
    assert np.array_equal(x.grad.cpu().numpy(), dx)
    assert np.allclose(s.grad.cpu().numpy(), ds.sum(0), rtol=1e-5, atol=1e-5)
    assert np.allclose(z.grad.cpu().numpy(), dz.sum(0), rtol=1e-5, atol=1e-5)
    y = tg.fake_quantize_per_tensor_affine(tg.tensor(xn, device=device), 0.1, 3, -8, 7)
    assert y.device.type == device
    assert np.allclose(y.cpu().numpy(), _ref_fq(xn, 0.1, 3, -8, 7)[2], atol=1e-6)


def test_fake_quantize_errors():
    x = tg.randn(4, 3)
    s, z = tg.tensor([0.1, 0.2, 0.3]), tg.tensor([0, 1, 2], dtype=tg.int32)
    pt, pc = tg.fake_quantize_per_tensor_affine, tg.fake_quantize_per_channel_affine
    cases = [
        (lambda: pt(x, 0.1, 0, 5, 3), RuntimeError, "`quant_min` should be less than"),
        (lambda: pt(x, 0.1, 10, 0, 3), RuntimeError, "`zero_point` must be between"),
        (lambda: pt(x.int(), 0.1, 0, 0, 3), NotImplementedError, "not implemented for"),
        (lambda: pt([1.0], 0.1, 0, 0, 3), TypeError, "must be Tensor"),
        (lambda: pc(x, s, z.long(), 1, 0, 255), RuntimeError, "Zero-point must be Int32"),
        (lambda: pc(x, s.double(), z, 1, 0, 255), RuntimeError, "Scale must be Float"),
        (lambda: pc(x, s, z, 0, 0, 255), RuntimeError, "not consistent with input"),
        (lambda: pc(x, s, z, 2, 0, 255), IndexError, "Dimension out of range"),
        (lambda: pc(x, s, z, -1, 0, 255), RuntimeError, "`axis` must be between"),
        (lambda: pc(x, s, z, 1, 5, 2), RuntimeError, "`quant_min` should be less than"),
        (lambda: pc(x, s, z + 5, 1, 0, 3), RuntimeError, "`zero_point` must be between"),
        (lambda: pc(x, s[None], z, 1, 0, 255), RuntimeError, "scale should be a 1-D"),
        (lambda: pc(x, s, z[:2], 1, 0, 255), RuntimeError, "same dimensions"),
        (lambda: tg._fake_quantize_learnable_per_tensor_affine(
            x, tg.tensor([0.1]), tg.tensor([1.0]), 5, 2), RuntimeError, "`quant_min`"),
    ]
    for call, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            call()


def test_fake_quantize_against_torch():
    torch = _torch()
    xn, w = _x((5, 4), seed=9), _x((5, 4), seed=10, k=1.0)
    r = torch.fake_quantize_per_tensor_affine(torch.tensor(xn), 0.1, 3, -8, 7)
    assert np.array_equal(tg.fake_quantize_per_tensor_affine(tg.tensor(xn), 0.1, 3, -8, 7)
                          .numpy(), r.numpy())
    sn = np.array([0.1, 0.2, 0.3, 0.7], np.float32)
    for zn in (np.array([0, 1, -2, 3], np.int32), np.array([0.5, 1.5, -2, 3], np.float32)):
        r = torch.fake_quantize_per_channel_affine(torch.tensor(xn), torch.tensor(sn),
                                                   torch.tensor(zn), 1, -8, 7)
        g = tg.fake_quantize_per_channel_affine(tg.tensor(xn), tg.tensor(sn), tg.tensor(zn), 1,
                                                -8, 7)
        assert np.array_equal(g.numpy(), r.numpy())
    for per_channel in (False, True):
        outs = []
        for mod in (torch, tg):
            x = mod.tensor(xn, requires_grad=True)
            if per_channel:
                s = mod.tensor(sn, requires_grad=True)
                z = mod.tensor([0.5, 2.5, -2.2, 30.0], requires_grad=True)
                y = mod._fake_quantize_learnable_per_channel_affine(x, s, z, 1, -8, 7, 0.7)
            else:
                s = mod.tensor([0.3], requires_grad=True)
                z = mod.tensor([2.5], requires_grad=True)
                y = mod._fake_quantize_learnable_per_tensor_affine(x, s, z, -4, 5, 0.5)
            (y * mod.tensor(w)).sum().backward()
            outs.append([t.detach().numpy() for t in (y, x.grad, s.grad, z.grad)])
        for a, b in zip(*outs):
            assert np.allclose(a, b, rtol=1e-5, atol=1e-5)


# -- storages and tensor helpers -----------------------------------------------------------------

def test_storage_constructors_and_legacy_classes():
    s = st.TypedStorage([1, 2], dtype=tg.float64)
    assert s.tolist() == [1.0, 2.0] and s.size() == len(s) == 2 and s.dtype == tg.float64
    assert st.TypedStorage().size() == 0 and st.TypedStorage(3).dtype == tg.get_default_dtype()
    assert st.UntypedStorage(5).nbytes() == 5 and len(st.UntypedStorage()) == 0
    f = st.FloatStorage([1, 2])
    assert type(f) is st.TypedStorage and f.dtype == tg.float32 and f.tolist() == [1.0, 2.0]
    assert st.FloatStorage(3).size() == 3 and st.FloatStorage.dtype == tg.float32
    assert st.LongStorage([1, 2]).tolist() == [1, 2]
    assert st.BoolStorage([1, 0]).tolist() == [True, False]
    assert isinstance(tg.tensor([1.0]).storage(), st.FloatStorage)
    assert not isinstance(tg.tensor([1.0]).storage(), st.DoubleStorage)
    t = tg.empty(0, dtype=tg.float64)
    t.set_(st.DoubleStorage([5, 6]))
    assert t.tolist() == [5.0, 6.0]
    with pytest.raises(RuntimeError, match="Could not set tensor of type double"):
        tg.empty(0).set_(st.DoubleStorage([5, 6]))
    u = tg.tensor([1.0, 2.0]).untyped_storage()
    assert st.TypedStorage(wrap_storage=u, dtype=tg.float32).tolist() == [1.0, 2.0]
    with pytest.raises(RuntimeError, match="Keyword argument 'dtype' cannot be specified"):
        st.FloatStorage([1], dtype=tg.int32)
    with pytest.raises(TypeError, match="invalid data type 'str'"):
        st.FloatStorage("a")
    with pytest.raises(RuntimeError, match="non-negative"):
        st.FloatStorage(-1)


def test_is_set_to_module_load_resize_as():
    a = tg.zeros(3)
    assert st.is_set_to(a, a) and st.is_set_to(a, a[:]) and st.is_set_to(a, a.view(3))
    assert not st.is_set_to(a, a[:2]) and not st.is_set_to(a, a.clone())
    assert not st.is_set_to(a, a[1:].as_strided((2,), (1,), 0))  # other offset
    m = tg.zeros(3)
    r = st.module_load(m, tg.ones(3))
    assert r is not m and m.tolist() == [1.0] * 3 and r.tolist() == [1.0] * 3
    o = tg.ones(2, requires_grad=True)
    r = st.module_load(m, o, assign=True)
    assert r is not o and not r.requires_grad and r.data_ptr() == o.data_ptr()
    b = tg.zeros(2)
    assert b.resize_as_(tg.zeros(2, 3)).shape == (2, 3)
    with pytest.raises(TypeError, match="must be Tensor"):
        st.is_set_to(a, [1])


def test_storages_against_torch():
    torch = _torch()
    for name in st.LEGACY_STORAGES:
        tt, gt = getattr(torch, name), getattr(st, name)
        assert str(tt.dtype).split(".")[1] == gt.dtype.name
        data = [1, 0, 1]
        assert tt(data).tolist() == gt(data).tolist() and tt(4).size() == gt(4).size()
    a, b = torch.zeros(3), tg.zeros(3)
    for f in (lambda t: t[:], lambda t: t[:2], lambda t: t.clone()):
        assert a.is_set_to(f(a)) == st.is_set_to(b, f(b))


# -- sparse-dense products -----------------------------------------------------------------------

_I, _V = [[0, 1, 1, 0], [2, 0, 2, 2]], [3.0, 4.0, 5.0, 1.0]


def _mats(mod, dtype):
    d = np.random.default_rng(11).standard_normal((3, 2))
    s = mod.sparse_coo_tensor(mod.tensor(_I), mod.tensor(_V, dtype=dtype), (3, 3))
    return s, mod.tensor(d, dtype=dtype)


def test_sparse_products_layouts_and_values():
    s, d = _mats(tg, tg.float64)
    ref = s.to_dense().numpy() @ d.numpy()
    for fn in (sp.dsmm, sp.spmm):
        r = fn(s, d)
        assert r.layout == tg.strided and np.allclose(r.numpy(), ref)
    assert np.allclose(sp.spmm(s.to_dense(), d).numpy(), ref)  # (a dense mat1 too)
    r = sp.smm(s, d)
    assert r.layout == tg.sparse_coo and (r.sparse_dim(), r.dense_dim()) == (2, 0)
    assert r._nnz() == 4 and np.allclose(r.to_dense().numpy(), ref)  # rows {0, 1} x 2 cols
    for fn in (sp.hspmm, sp.hsmm):
        r = fn(s, d)
        assert (r.sparse_dim(), r.dense_dim(), r._nnz()) == (1, 1, 2)
        assert r.indices().tolist() == [[0, 1]] and np.allclose(r.to_dense().numpy(), ref)
    inp = tg.sparse_coo_tensor(tg.tensor([[0, 2], [1, 1]]), tg.tensor([1.0, 2.0],
                                                                      dtype=tg.float64), (3, 2))
    for fn in (sp.sspaddmm, sp.saddmm):
        r = fn(inp, s, d, beta=0.5, alpha=2)
        assert r.layout == tg.sparse_coo and r._nnz() == 6 and not r.is_coalesced()
        assert np.allclose(r.to_dense().numpy(), 0.5 * inp.to_dense().numpy() + 2 * ref)
    with pytest.raises(RuntimeError, match="expected input to be a sparse COO tensor"):
        sp.sspaddmm(inp.to_dense(), s, d)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        sp.smm(s, tg.zeros(4, 2, dtype=tg.float64))


def test_sparse_products_gradients():
    s, d = _mats(tg, tg.float64)
    for fn in (sp.smm, sp.hspmm):
        assert tg.autograd.gradcheck(lambda m: fn(s, m).to_dense(), (d.requires_grad_(),))


def test_sparse_products_against_torch():
    torch = _torch()
    (ts, td), (gs, gd) = _mats(torch, torch.float64), _mats(tg, tg.float64)
    for name in ("smm", "hspmm", "hsmm", "dsmm", "spmm"):
        r, g = getattr(torch, name)(ts, td), getattr(sp, name)(gs, gd)
        assert r.is_sparse == (g.layout == tg.sparse_coo), name
        if r.is_sparse:
            assert (r.sparse_dim(), r.dense_dim(), r._nnz()) == \
                (g.sparse_dim(), g.dense_dim(), g._nnz())
            r, g = r.to_dense(), g.to_dense()
        assert np.allclose(r.numpy(), g.numpy())
    ti = torch.sparse_coo_tensor(torch.tensor([[0, 2], [1, 1]]),
                                 torch.tensor([1.0, 2.0], dtype=torch.float64), (3, 2))
    gi = tg.sparse_coo_tensor(tg.tensor([[0, 2], [1, 1]]),
                              tg.tensor([1.0, 2.0], dtype=tg.float64), (3, 2))
    r, g = torch.sspaddmm(ti, ts, td, beta=0.5, alpha=2), sp.sspaddmm(gi, gs, gd, beta=0.5,
                                                                      alpha=2)
    assert r._indices().tolist() == g._indices().tolist()
    assert np.allclose(r.to_dense().numpy(), g.to_dense().numpy())


def test_toplevel_helpers_and_methods():
    assert tg.get_device_module("cpu") is tg.cpu and tg.get_device_module("cuda:0") is tg.cuda
    assert tg.get_device_module(tg.device("cuda")) is tg.cuda
    with pytest.raises(RuntimeError, match="Invalid value of device '3'"):
        tg.get_device_module(3)
    assert tg.init_num_threads() is None and tg.compiled_with_cxx11_abi() is True
    x = tg.arange(6.0)
    assert x.is_set_to(x) and not x.is_set_to(x.clone()) and not x[1:].is_set_to(x)
    y = tg.zeros(6)
    loaded = y.module_load(x)
    assert loaded is not y and loaded.tolist() == x.tolist() and y.tolist() == x.tolist()
    assigned = y.module_load(x * 2, assign=True)
    assert assigned.tolist() == (x * 2).tolist() and not assigned.requires_grad
    assert tg.fork(len, [1, 2]).wait() == 2 and tg.wait(tg.fork(abs, -3)) == 3
