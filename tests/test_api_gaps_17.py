"""PyTorch API gaps, round 17: ``F.linear_cross_entropy`` / ``nn.LinearCrossEntropyLoss``
(chunked), ``optim.Muon``, ``signal.windows``, ``quasirandom.SobolEngine``, the ``native_*``
functions, ``Tensor.resize`` / ``resize_as``, the ``*_copy`` ops, ``segment_reduce``,
``nn.CrossMapLRN2d`` / ``NLLLoss2d``, ``hub``, the legacy autocast functions, the ``has_*``
flags, the ``uint16``/``uint32``/``uint64`` dtypes, ``linalg.ldl_factor``/``ldl_solve`` and the
``lstm``/``gru``/``rnn_tanh``/``rnn_relu`` functions. Values against float64 NumPy / SciPy formulas written here, gradients against finite
differences (tests/helpers.py) and tritongrad's gradcheck, errors against PyTorch's
messages."""

import math
import warnings

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import assert_grads_match, host, t64

F = tg.nn.functional
rng = np.random.default_rng(17)


# -- linear_cross_entropy --------------------------------------------------------------------------

def _ce_reference(x, w, b, t, cw, reduction, ignore_index=-100):
    """float64 cross-entropy of x @ w.T + b against class indices t (class weights cw)."""
    logits = x @ w.T + (0 if b is None else b)
    logp = logits - logits.max(1, keepdims=True)
    logp = logp - np.log(np.exp(logp).sum(1, keepdims=True))
    cw = np.ones(w.shape[0]) if cw is None else cw
    valid = t != ignore_index
    ts = np.where(valid, t, 0)
    rows = np.where(valid, -logp[np.arange(len(t)), ts] * cw[ts], 0.0)
    if reduction == "none":
        return rows
    if reduction == "sum":
        return rows.sum()
    return rows.sum() / np.where(valid, cw[ts], 0.0).sum()


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("chunk", [None, 1, 4, 64])
@pytest.mark.parametrize("weighted", [False, True])
def test_linear_cross_entropy_values(reduction, chunk, weighted):
    n, d, c = 11, 5, 23
    x, w, b = rng.normal(size=(n, d)), rng.normal(size=(c, d)), rng.normal(size=c)
    t = rng.integers(0, c, n)
    t[3] = -100
    cw = rng.uniform(0.5, 2, c) if weighted else None
    options = None if chunk is None else tg.nn.LinearCrossEntropyOptions(batch_chunk_size=chunk)
    got = F.linear_cross_entropy(tg.tensor(x), tg.tensor(w), tg.tensor(t), linear_bias=tg.tensor(b),
                                 weight=None if cw is None else tg.tensor(cw), reduction=reduction,
                                 options=options)
    np.testing.assert_allclose(host(got), _ce_reference(x, w, b, t, cw, reduction), rtol=1e-12,
                               atol=1e-12)


@pytest.mark.parametrize("device,reduction", [("cpu", "mean"), ("cpu", "none"), ("cuda", "sum")])
def test_linear_cross_entropy_chunked_gradients(device, reduction):
    n, d, c = 5, 2, 4
    x, w, b = t64((n, d), device), t64((c, d), device), t64((c,), device)
    t = tg.tensor(rng.integers(0, c, n), device=device)
    cw = tg.tensor(rng.uniform(0.5, 2, c), device=device)
    opts = tg.nn.LinearCrossEntropyOptions(batch_chunk_size=2)
    assert_grads_match(lambda x, w, b: F.linear_cross_entropy(  # (differences run on the CPU)
        x, w, t.to(x.device), linear_bias=b, weight=cw.to(x.device), reduction=reduction,
        options=opts), [x, w, b])


def test_linear_cross_entropy_chunked_matches_reference_and_retains_graph():
    x = tg.randn(33, 8, dtype=tg.float64, requires_grad=True)
    w = tg.randn(50, 8, dtype=tg.float64, requires_grad=True)
    t = tg.randint(0, 50, (33,))
    ref = F.linear_cross_entropy(x, w, t)
    gx, gw = tg.autograd.grad(ref, [x, w])
    opts = tg.nn.LinearCrossEntropyOptions(chunking_method="aspect_ratio")
    assert opts.chunk_rows(33, 8, 50) == 8  # next_pow2(ceil(33 / ceil(50 / 8)))
    auto = tg.nn.LinearCrossEntropyOptions()
    assert tg.nn.LinearCrossEntropyOptions(chunking_method="aspect_ratio:2").chunk_rows(
        2048, 64, 8192) == 8  # PyTorch's 8-row chunks, asked for explicitly
    assert auto.chunk_rows(2048, 64, 8192) == 256 and auto.chunk_rows(100, 64, 8192) == 100
    loss = F.linear_cross_entropy(x, w, t, options=opts)
    loss.backward(retain_graph=True)
    loss.backward()  # the recomputing backward keeps nothing it consumes
    np.testing.assert_allclose(host(loss), host(ref), rtol=1e-12)
    np.testing.assert_allclose(host(x.grad), 2 * host(gx), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(host(w.grad), 2 * host(gw), rtol=1e-10, atol=1e-12)


def test_linear_cross_entropy_unbatched_k_dim_and_probabilities():
    x, w = rng.normal(size=4), rng.normal(size=(6, 4))
    for opts in (None, tg.nn.LinearCrossEntropyOptions()):
        got = F.linear_cross_entropy(tg.tensor(x), tg.tensor(w), tg.tensor(2), options=opts)
        np.testing.assert_allclose(host(got), _ce_reference(x[None], w, None, np.array([2]),
                                                            None, "mean"), rtol=1e-12)
    # K-dimensional: weight (C, d1, D) gives logits (N, C, d1); options fall back with a warning
    xk, wk = rng.normal(size=(3, 4)), rng.normal(size=(5, 2, 4))
    tk = rng.integers(0, 5, (3, 2))
    logits = np.einsum("nd,ckd->nck", xk, wk)
    lp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    want = -np.mean([lp[i, tk[i, j], j] for i in range(3) for j in range(2)])
    with pytest.warns(UserWarning, match="options`` ignored"):
        got = F.linear_cross_entropy(tg.tensor(xk), tg.tensor(wk), tg.tensor(tk),
                                     options=tg.nn.LinearCrossEntropyOptions())
    np.testing.assert_allclose(host(got), want, rtol=1e-12)
    # class probabilities
    p = rng.dirichlet(np.ones(6), 2)
    x2 = rng.normal(size=(2, 4))
    lp2 = x2 @ w.T
    lp2 = lp2 - np.log(np.exp(lp2).sum(1, keepdims=True))
    got = F.linear_cross_entropy(tg.tensor(x2), tg.tensor(w), tg.tensor(p))
    np.testing.assert_allclose(host(got), -(p * lp2).sum(1).mean(), rtol=1e-12)


def test_linear_cross_entropy_errors():
    x, w, t = tg.randn(3, 4), tg.randn(5, 4), tg.randint(0, 5, (3,))
    with pytest.raises(RuntimeError, match="expected input with dimensionality 1 or 2, got 3"):
        F.linear_cross_entropy(tg.randn(2, 3, 4), w, t)
    with pytest.raises(RuntimeError, match="linear_weight with dimensionality at least 2, got 1"):
        F.linear_cross_entropy(x, tg.randn(4), t)
    with pytest.raises(RuntimeError, match="in_features\\), got 4 and 3, respectively"):
        F.linear_cross_entropy(x, tg.randn(5, 3), t)
    with pytest.raises(RuntimeError, match="expected linear_bias shape \\(5,\\), got \\(4,\\)"):
        F.linear_cross_entropy(x, w, t, linear_bias=tg.randn(4))
    with pytest.raises(RuntimeError, match="requires batched input"):
        F.linear_cross_entropy(tg.randn(4), tg.randn(5, 2, 4), tg.tensor(1))
    with pytest.raises(RuntimeError, match="ignore_index cannot be specified"):
        F.linear_cross_entropy(x, w, tg.rand(3, 5), ignore_index=1)
    with pytest.raises(ValueError, match="invalid acc_policy: 'fast'"):
        tg.nn.LinearCrossEntropyOptions(acc_policy="fast")
    with pytest.raises(ValueError, match="invalid chunking_method: 'aspect_ratio:0'"):
        tg.nn.LinearCrossEntropyOptions(chunking_method="aspect_ratio:0")
    with pytest.raises(ValueError, match="batch_chunk_size must be positive int or None"):
        tg.nn.LinearCrossEntropyOptions(batch_chunk_size=0)
    with pytest.raises(ValueError, match="acc_dtype must be one of"):
        tg.nn.LinearCrossEntropyOptions(acc_dtype=tg.int32)
    with pytest.raises(ValueError, match="give different chunk sizes"):
        tg.nn.LinearCrossEntropyOptions(batch_chunk_size=3,
                                        chunking_method="aspect_ratio").chunk_rows(16, 4, 8)
    with pytest.warns(UserWarning, match="label_smoothing=0.1"):
        F.linear_cross_entropy(x, w, t, label_smoothing=0.1,
                               options=tg.nn.LinearCrossEntropyOptions())


def test_linear_cross_entropy_loss_module():
    tg.manual_seed(0)
    crit = tg.nn.LinearCrossEntropyLoss(4, 6, out_features=(2,), bias=True, ignore_index=1)
    assert tuple(crit.linear.weight.shape) == (12, 4) and tuple(crit.linear.bias.shape) == (12,)
    x, t = tg.randn(3, 4), tg.randint(0, 6, (3, 2))
    logits = (x @ crit.linear.weight.T + crit.linear.bias).reshape(3, 6, 2)
    want = F.cross_entropy(logits, t, ignore_index=1)
    np.testing.assert_allclose(host(crit(x, t)), host(want), rtol=1e-6)
    crit(x, t).backward()
    assert crit.linear.weight.grad is not None
    assert "num_classes=6" in repr(crit)
    with pytest.raises(RuntimeError, match="expected weight shape to be \\(6,\\), got \\(5,\\)"):
        tg.nn.LinearCrossEntropyLoss(4, 6, weight=tg.ones(5))
    with pytest.raises(RuntimeError, match="label_smoothing to be in range \\[0, 1\\], got 2"):
        tg.nn.LinearCrossEntropyLoss(4, 6, label_smoothing=2)


# -- Muon ------------------------------------------------------------------------------------------

def _bf16(a):
    return host(tg.tensor(np.asarray(a, np.float32)).bfloat16().float()).astype(np.float64)


def _ns_reference(g, steps=5, coeffs=(3.4445, -4.7750, 2.0315), eps=1e-7):
    """The Newton-Schulz iteration with every product rounded to bfloat16, as PyTorch's."""
    a, b, c = coeffs
    x = _bf16(g)
    tall = x.shape[0] > x.shape[1]
    x = x.T if tall else x
    x = _bf16(x / max(np.linalg.norm(x), eps))
    for _ in range(steps):
        gram = _bf16(x @ x.T)
        x = _bf16(a * x + _bf16(b * gram + c * gram @ gram) @ x)
    return x.T if tall else x


@pytest.mark.parametrize("shape", [(5, 3), (3, 7), (4, 4)])
def test_newton_schulz_orthogonalises(shape):
    from tritongrad.optim.muon import zeropower_via_newtonschulz
    g = rng.normal(size=shape).astype(np.float32)
    got = host(zeropower_via_newtonschulz(tg.tensor(g)).float()).astype(np.float64)
    np.testing.assert_allclose(got, _ns_reference(g), atol=0.06)  # bfloat16 products
    s = np.linalg.svd(got, compute_uv=False)
    assert s.min() > 0.5 and s.max() < 1.5  # Muon's "U S' V^T, S' ~ U(0.5, 1.5)"
    u, _, vt = np.linalg.svd(g.astype(np.float64), full_matrices=False)
    assert np.sign((got * (u @ vt)).sum()) > 0 and np.abs(got - u @ vt).max() < 0.5


@pytest.mark.parametrize("nesterov,adjust", [(True, None), (False, "match_rms_adamw")])
def test_muon_steps_follow_the_algorithm(nesterov, adjust):
    w0 = rng.normal(size=(6, 4)).astype(np.float32)
    grads = [rng.normal(size=(6, 4)).astype(np.float32) for _ in range(3)]
    p = tg.nn.Parameter(tg.tensor(w0))
    opt = tg.optim.Muon([p], lr=0.05, weight_decay=0.1, momentum=0.9, nesterov=nesterov,
                        adjust_lr_fn=adjust)
    w, buf = w0.astype(np.float64), np.zeros((6, 4))
    scale = math.sqrt(1.5) if adjust is None else 0.2 * math.sqrt(6)
    for g in grads:
        p.grad = tg.tensor(g)
        opt.step()
        buf = 0.9 * buf + 0.1 * g
        update = 0.1 * g + 0.9 * buf if nesterov else buf
        w = w * (1 - 0.05 * 0.1) - 0.05 * scale * _ns_reference(update)
    np.testing.assert_allclose(host(p), w, atol=0.02)
    assert tuple(opt.state[p]["momentum_buffer"].shape) == (6, 4)
    np.testing.assert_allclose(host(opt.state[p]["momentum_buffer"]), buf, rtol=1e-5, atol=1e-6)


def test_muon_defaults_and_checks():
    p = tg.nn.Parameter(tg.randn(3, 2))
    group = tg.optim.Muon([p]).param_groups[0]
    assert (group["lr"], group["weight_decay"], group["momentum"], group["nesterov"],
            group["ns_steps"], group["eps"], group["adjust_lr_fn"]) == (
        1e-3, 0.1, 0.95, True, 5, 1e-7, None)
    assert group["ns_coefficients"] == (3.4445, -4.7750, 2.0315)
    with pytest.raises(ValueError, match="Learning rate should be >= 0 but is: -1"):
        tg.optim.Muon([p], lr=-1)
    with pytest.raises(ValueError, match="momentum should be >= 0 but is: -0.5"):
        tg.optim.Muon([p], momentum=-0.5)
    with pytest.raises(ValueError, match="weight decay should be >= 0 but is: -1"):
        tg.optim.Muon([p], weight_decay=-1)
    with pytest.raises(ValueError, match="Adjust learning rate function foo is not supported"):
        tg.optim.Muon([p], adjust_lr_fn="foo")
    with pytest.raises(ValueError, match="Muon only supports 2D parameters whereas we found a "
                                         "parameter with size: "):
        tg.optim.Muon([tg.nn.Parameter(tg.randn(3))])
    from tritongrad.optim.muon import zeropower_via_newtonschulz
    with pytest.raises(ValueError, match="Number of steps must be less than 100"):
        zeropower_via_newtonschulz(tg.randn(2, 2), ns_steps=100)
    with pytest.raises(ValueError, match="exactly 3 values"):
        zeropower_via_newtonschulz(tg.randn(2, 2), (1.0, 2.0))


# -- signal.windows --------------------------------------------------------------------------------

def _scipy_window(name, m, sym, **kw):
    from scipy.signal import windows as sw
    if name == "exponential" and kw.get("center") is None:
        kw.pop("center", None)
    fn = {"bartlett": sw.bartlett, "blackman": sw.blackman, "cosine": sw.cosine,
          "exponential": sw.exponential, "gaussian": sw.gaussian,
          "general_cosine": sw.general_cosine, "general_hamming": sw.general_hamming,
          "hamming": sw.hamming, "hann": sw.hann, "kaiser": sw.kaiser, "nuttall": sw.nuttall}[name]
    args = {"gaussian": ("std",), "general_cosine": ("a",), "general_hamming": ("alpha",),
            "kaiser": ("beta",)}.get(name, ())
    return fn(m, *[kw.pop(a) for a in args], sym=sym, **kw)


_WINDOWS = [("bartlett", {}), ("blackman", {}), ("cosine", {}), ("exponential", {"tau": 2.5}),
            ("gaussian", {"std": 1.7}), ("general_cosine", {"a": [0.5, 0.3, 0.2]}),
            ("general_hamming", {"alpha": 0.6}), ("hamming", {}), ("hann", {}),
            ("kaiser", {"beta": 5.0}), ("nuttall", {})]


@pytest.mark.parametrize("name,kw", _WINDOWS)
@pytest.mark.parametrize("m", [0, 1, 2, 7, 16])
@pytest.mark.parametrize("sym", [True, False])
def test_windows_match_scipy(name, kw, m, sym):
    got = getattr(tg.signal.windows, name)(m, sym=sym, dtype=tg.float64, **kw)
    assert got.dtype is tg.float64 and tuple(got.shape) == (m,)
    want = _scipy_window(name, m, sym, **dict(kw))
    np.testing.assert_allclose(host(got), want, rtol=1e-12, atol=1e-14)


def test_windows_options_and_errors(device):
    w = tg.signal.windows.hann(8, sym=False, device=device, requires_grad=True)
    assert w.dtype is tg.float32 and w.requires_grad and w.device.type == device
    e = tg.signal.windows.exponential(6, sym=False, center=1.0, tau=2.0, dtype=tg.float64)
    np.testing.assert_allclose(host(e), np.exp(-np.abs(np.arange(6) - 1.0) / 2.0), rtol=1e-12)
    windows = tg.signal.windows
    with pytest.raises(ValueError, match="bartlett requires non-negative window length, got M=-1"):
        windows.bartlett(-1)
    with pytest.raises(ValueError, match="general_cosine expects float32 or float64 dtypes, got: "
                                         "torch.int64"):
        windows.hann(3, dtype=tg.int64)
    with pytest.raises(ValueError, match="Tau must be positive, got: 0 instead."):
        windows.exponential(3, tau=0)
    with pytest.raises(ValueError, match="Center must be None for symmetric windows"):
        windows.exponential(3, center=1.0)
    with pytest.raises(ValueError, match="Standard deviation must be positive, got: 0 instead."):
        windows.gaussian(3, std=0)
    with pytest.raises(ValueError, match="beta must be non-negative, got: -1 instead."):
        windows.kaiser(3, beta=-1)
    with pytest.raises(TypeError, match="Coefficients must be a list/tuple"):
        windows.general_cosine(3, a=1.0)
    with pytest.raises(ValueError, match="Coefficients cannot be empty"):
        windows.general_cosine(3, a=[])


# -- SobolEngine -----------------------------------------------------------------------------------

def test_sobol_unscrambled_points():
    eng = tg.quasirandom.SobolEngine(3)
    # the first points of the Sobol sequence (Gray-code order), dimension 1 the van der Corput
    want = [[0, 0, 0], [0.5, 0.5, 0.5], [0.75, 0.25, 0.25], [0.25, 0.75, 0.75],
            [0.375, 0.375, 0.625], [0.875, 0.875, 0.125]]
    got = tg.cat([eng.draw(1), eng.draw(2), eng.draw(3, dtype=tg.float64)])
    np.testing.assert_array_equal(host(got), want)
    assert eng.num_generated == 6 and eng.draw().dtype is tg.float32
    eng.reset()
    skipped = eng.fast_forward(4).draw(2)
    np.testing.assert_array_equal(host(skipped), want[4:])
    out = tg.empty(0)
    assert eng.reset().draw(2, out=out) is out and tuple(out.shape) == (2, 3)


def test_sobol_scrambled_is_seeded_and_balanced():
    a = tg.quasirandom.SobolEngine(4, scramble=True, seed=5).draw_base2(5)
    b = tg.quasirandom.SobolEngine(4, scramble=True, seed=5).draw_base2(5)
    c = tg.quasirandom.SobolEngine(4, scramble=True, seed=6).draw_base2(5)
    np.testing.assert_array_equal(host(a), host(b))
    assert not np.array_equal(host(a), host(c))
    pts = host(a)
    assert ((pts >= 0) & (pts < 1)).all()
    for j in range(4):  # a (0, m, 1)-net in each coordinate: one point per interval of 1/32
        assert sorted(np.floor(pts[:, j] * 32).astype(int).tolist()) == list(range(32))
    tg.manual_seed(3)
    d = tg.quasirandom.SobolEngine(2, scramble=True).draw(4)
    tg.manual_seed(3)
    np.testing.assert_array_equal(host(tg.quasirandom.SobolEngine(2, scramble=True).draw(4)),
                                  host(d))


def test_sobol_errors_and_repr():
    with pytest.raises(ValueError, match="Supported range of dimensionality for SobolEngine is "
                                         "\\[1, 21201\\]"):
        tg.quasirandom.SobolEngine(0)
    eng = tg.quasirandom.SobolEngine(2, scramble=True, seed=1)
    eng.draw(3)
    with pytest.raises(ValueError, match="n=3\\+2\\*\\*1=5"):
        eng.draw_base2(1)
    assert repr(eng) == "SobolEngine(dimension=2, scramble=True, seed=1)"


# -- native_* --------------------------------------------------------------------------------------

def test_native_layer_and_group_norm(device):
    x = t64((2, 6, 3, 2), device)
    out, mean, rstd = tg.native_layer_norm(x, [3, 2], None, None, 1e-5)
    a = host(x)
    np.testing.assert_allclose(host(mean), a.mean((2, 3), keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(host(rstd), 1 / np.sqrt(a.var((2, 3), keepdims=True) + 1e-5),
                               rtol=1e-10)
    np.testing.assert_allclose(host(out), (a - host(mean)) * host(rstd), rtol=1e-9, atol=1e-12)
    out, mean, rstd = tg.native_group_norm(x, None, None, 2, 6, 6, 3, 1e-5)
    g = a.reshape(2, 3, -1)
    assert tuple(mean.shape) == (2, 3)
    np.testing.assert_allclose(host(rstd), 1 / np.sqrt(g.var(-1) + 1e-5), rtol=1e-10)
    want = (g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(host(out), want.reshape(a.shape), rtol=1e-9, atol=1e-12)
    assert_grads_match(lambda x: tg.native_layer_norm(x, [2], None, None, 1e-5)[0],
                       [t64((3, 2), device)])


def test_native_batch_norm_and_dropout():
    x = t64((4, 3, 5))
    rm, rv = tg.zeros(3, dtype=tg.float64), tg.ones(3, dtype=tg.float64)
    out, mean, invstd = tg.native_batch_norm(x, None, None, rm, rv, True, 0.1, 1e-5)
    a = host(x)
    np.testing.assert_allclose(host(mean), a.mean((0, 2)), rtol=1e-12)
    np.testing.assert_allclose(host(invstd), 1 / np.sqrt(a.var((0, 2)) + 1e-5), rtol=1e-10)
    np.testing.assert_allclose(host(rm), 0.1 * a.mean((0, 2)), rtol=1e-12)
    np.testing.assert_allclose(host(rv), 0.9 + 0.1 * a.var((0, 2), ddof=1), rtol=1e-12)
    out, m2, s2 = tg.native_batch_norm(x, None, None, rm, rv, False, 0.1, 1e-5)
    assert tuple(m2.shape) == (0,) and tuple(s2.shape) == (0,)
    with pytest.raises(RuntimeError, match="running_mean and running_var must be defined"):
        tg.native_batch_norm(x, None, None, None, None, False, 0.1, 1e-5)
    y = tg.ones(2000, dtype=tg.float64)
    out, mask = tg.native_dropout(y, 0.25, True)
    assert mask.dtype is tg.bool and 0.65 < host(mask).mean() < 0.85
    np.testing.assert_allclose(host(out), host(mask) / 0.75)
    out, mask = tg.native_dropout(y, 0.25, False)
    assert host(mask).all() and np.array_equal(host(out), host(y))


# -- resize, resize_as -----------------------------------------------------------------------------

def test_resize_and_resize_as():
    x = t64((2, 3)).requires_grad_()
    with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
        y = x.resize(3, 2)
    assert tuple(y.shape) == (3, 2)
    np.testing.assert_array_equal(host(y).ravel(), host(x).ravel())
    with pytest.warns(UserWarning, match="non-inplace resize_as is deprecated"):
        z = x.resize_as(tg.empty(6))
    assert tuple(z.shape) == (6,)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_grads_match(lambda x: x.resize((3, 2)) * tg.arange(6.0).reshape(3, 2), [x])
        with pytest.raises(RuntimeError, match="requested resize to 4x2 \\(8 elements in "
                                               "total\\), but the given tensor has a size of 2x3 "
                                               "\\(6 elements\\)"):
            x.resize(4, 2)
    x = tg.zeros(2)
    assert x.resize_as_(tg.ones(3, 2)) is x and tuple(x.shape) == (3, 2)


# -- *_copy ----------------------------------------------------------------------------------------

_COPY_CASES = [
    ("view_copy", ((6, 4),)), ("permute_copy", ((2, 0, 1),)), ("transpose_copy", (0, 2)),
    ("expand_copy", ((2, 2, 3, 4),)), ("unsqueeze_copy", (1,)), ("squeeze_copy", ()),
    ("select_copy", (1, 2)), ("slice_copy", (2, 1, None, 2)), ("split_copy", (2, 2)),
    ("split_with_sizes_copy", ([1, 2], 1)), ("unbind_copy", (1,)),
    ("diagonal_copy", (0, 1, 2)), ("as_strided_copy", ((2, 2), (4, 1), 1)), ("detach_copy", ()),
    ("alias_copy", ()), ("unfold_copy", (2, 2, 1)),
]


@pytest.mark.parametrize("name,args", _COPY_CASES)
def test_copy_ops_equal_the_view_but_do_not_alias(device, name, args):
    x = tg.tensor(rng.normal(size=(2, 3, 4)), device=device)
    view = name[:-5]
    if view == "split_with_sizes":
        want = x.split(*args)
    elif view == "alias":
        want = x
    elif view == "slice_copy" or view == "slice":
        want = x[:, :, 1::2]
    else:
        want = getattr(x, view)(*args)
    got = getattr(tg, name)(x, *args)
    pieces = (got, want) if isinstance(got, tg.Tensor) else None
    for g, w in ([pieces] if pieces else zip(got, want, strict=True)):
        assert tuple(g.shape) == tuple(w.shape)
        np.testing.assert_array_equal(host(g), host(w))
    before = [host(g).copy() for g in ([got] if pieces else got)]
    x.add_(1.0)
    for g, b in zip([got] if pieces else got, before):
        np.testing.assert_array_equal(host(g), b)  # a copy: the write to x does not show


def test_copy_ops_complex_views_gradients_and_out():
    z = tg.tensor([1 + 2j, 3 - 1j])
    np.testing.assert_array_equal(host(tg.view_as_real_copy(z)), [[1, 2], [3, -1]])
    np.testing.assert_array_equal(host(tg.view_as_complex_copy(tg.view_as_real(z))), host(z))
    x = t64((3, 4))
    assert_grads_match(lambda x: tg.t_copy(x) * tg.arange(12.0).reshape(4, 3), [x])
    assert_grads_match(lambda x: tg.slice_copy(x, 1, 1, 3).sum(0), [x])
    assert not tg.detach_copy(x.requires_grad_()).requires_grad
    out = tg.empty(4, 3, dtype=tg.float64)
    assert tg.t_copy(x.detach(), out=out) is out
    np.testing.assert_array_equal(host(out), host(x).T)


# -- segment_reduce --------------------------------------------------------------------------------

@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "prod"])
@pytest.mark.parametrize("initial", [None, 0.5])
def test_segment_reduce_values(reduce, initial):
    data = rng.normal(size=(7, 2))
    lengths = [2, 0, 4, 1]
    np_fn = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod}
    empty = {"sum": 0.0, "mean": np.nan, "max": -np.inf, "min": np.inf, "prod": 1.0}
    want, start = [], 0
    for n in lengths:
        seg = data[start:start + n]
        start += n
        if n == 0:
            want.append(np.full(2, empty[reduce] if initial is None else initial))
        elif initial is None:
            want.append(np_fn[reduce](seg, 0))
        else:
            with_init = np.concatenate([seg, np.full((1, 2), initial)])
            want.append(seg.sum(0) + initial if reduce == "sum" else
                        (seg.sum(0) + initial) / n if reduce == "mean" else
                        np_fn[reduce](with_init, 0))
    for kw in ({"lengths": tg.tensor(lengths)}, {"offsets": tg.tensor([0, 2, 2, 6, 7])}):
        got = tg.segment_reduce(tg.tensor(data), reduce, initial=initial, **kw)
        np.testing.assert_allclose(host(got), np.array(want), rtol=1e-12)


def test_segment_reduce_batched_gradients_and_errors():
    got = tg.segment_reduce(tg.arange(6.0).reshape(2, 3), "sum",
                            lengths=tg.tensor([[2, 1], [0, 3]]), axis=1)
    np.testing.assert_array_equal(host(got), [[1, 2], [0, 12]])
    x = t64((6,))
    assert_grads_match(lambda x: tg.segment_reduce(x, "mean", lengths=tg.tensor([2, 3, 1])), [x])
    assert_grads_match(lambda x: tg.segment_reduce(x, "prod", lengths=tg.tensor([4, 2])), [x])
    with pytest.raises(RuntimeError, match="reduce argument must be either sum, prod, mean, amax "
                                           "or amin, got foo"):
        tg.segment_reduce(x, "foo", lengths=tg.tensor([6]))
    with pytest.raises(RuntimeError, match="Either lengths or offsets must be defined"):
        tg.segment_reduce(x, "sum")
    with pytest.raises(RuntimeError, match="lengths contains negative value!"):
        tg.segment_reduce(x, "sum", lengths=tg.tensor([7, -1]))
    with pytest.raises(RuntimeError, match="to sum to data.size\\(lengths.dim\\(\\)-1\\)"):
        tg.segment_reduce(x, "sum", lengths=tg.tensor([1, 1]))


# -- CrossMapLRN2d, NLLLoss2d ----------------------------------------------------------------------

def _cross_map_reference(x, size, alpha, beta, k):
    """PyTorch's window per channel, written as index sets: [0, c + pre) for c <= pre; then
    channel 0 and (c - pre, c + pre) (the first channel is never dropped)."""
    c_all = x.shape[1]
    pre = (size - 1) // 2 + 1
    out = np.empty_like(x)
    for c in range(c_all):
        chans = set(range(0, min(c + pre, c_all)))
        if c > pre:
            chans = {0} | set(range(c - pre + 1, min(c + pre, c_all)))
        s = sum(x[:, j] ** 2 for j in chans)
        out[:, c] = x[:, c] * (k + alpha / size * s) ** -beta
    return out


@pytest.mark.parametrize("size", [1, 3, 4, 5])
def test_cross_map_lrn2d(size):
    x = t64((2, 7, 2, 3))
    m = tg.nn.CrossMapLRN2d(size, alpha=0.5, beta=0.75, k=1.5)
    np.testing.assert_allclose(host(m(x)), _cross_map_reference(host(x), size, 0.5, 0.75, 1.5),
                               rtol=1e-12)
    assert repr(m) == f"CrossMapLRN2d({size}, alpha=0.5, beta=0.75, k=1.5)"
    assert tg.autograd.gradcheck(m, [t64((1, 4, 2, 2)).requires_grad_()])


def test_cross_map_lrn2d_on_cuda():
    x = t64((1, 5, 2, 2), "cuda")
    np.testing.assert_allclose(host(tg.nn.CrossMapLRN2d(3)(x)),
                               _cross_map_reference(host(x), 3, 1e-4, 0.75, 1.0), rtol=1e-12)


def test_cross_map_lrn2d_rank_and_nll_loss2d():
    with pytest.raises(ValueError, match="CrossMapLRN2d: Expected input to be 4D, got 3D "
                                         "instead."):
        tg.nn.CrossMapLRN2d(3)(tg.ones(1, 2, 3))
    logp = F.log_softmax(tg.randn(2, 3, 4, 4), 1)
    t = tg.randint(0, 3, (2, 4, 4))
    assert isinstance(tg.nn.NLLLoss2d(), tg.nn.NLLLoss)
    np.testing.assert_allclose(host(tg.nn.NLLLoss2d()(logp, t)), host(F.nll_loss(logp, t)))


# -- hub, legacy autocast, has_* -------------------------------------------------------------------

def test_hub_downloads_and_caches(tmp_path):
    import hashlib
    src = tmp_path / "src.pt"
    tg.save({"w": tg.arange(3.0)}, str(src))
    digest = hashlib.sha256(src.read_bytes()).hexdigest()
    named = tmp_path / f"model-{digest[:8]}.pt"
    named.write_bytes(src.read_bytes())
    try:
        tg.hub.set_dir(str(tmp_path / "hub"))
        assert tg.hub.get_dir() == str(tmp_path / "hub")
        sd = tg.hub.load_state_dict_from_url(named.as_uri(), check_hash=True)
        np.testing.assert_array_equal(host(sd["w"]), [0, 1, 2])
        assert (tmp_path / "hub" / "checkpoints" / named.name).exists()
        named.unlink()  # now only the cache has it
        assert "w" in tg.hub.load_state_dict_from_url(named.as_uri())
    finally:
        tg.hub._hub_dir = None  # back to the default ($TORCH_HOME/hub)
    dst = tmp_path / "copy.pt"
    with pytest.raises(RuntimeError, match="invalid hash value"):
        tg.hub.download_url_to_file(src.as_uri(), str(dst), hash_prefix="ffff0000")
    assert not dst.exists() and not list(tmp_path.glob("*.partial"))
    with pytest.raises(RuntimeError, match="could not download .*copy the file to"):
        tg.hub.download_url_to_file((tmp_path / "missing.pt").as_uri(), str(dst))


def test_legacy_autocast_functions_and_flags():
    with pytest.warns(DeprecationWarning, match="torch.is_autocast_cpu_enabled\\(\\) is "
                                                "deprecated"):
        assert tg.is_autocast_cpu_enabled() is False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert tg.get_autocast_cpu_dtype() is tg.bfloat16
        assert tg.get_autocast_gpu_dtype() is tg.float16
        try:
            tg.set_autocast_cpu_enabled(True)
            assert tg.is_autocast_enabled("cpu")
            tg.set_autocast_cpu_dtype(tg.float16)
            tg.set_autocast_gpu_dtype(tg.bfloat16)
            assert tg.get_autocast_dtype("cpu") is tg.float16
            assert tg.get_autocast_dtype("cuda") is tg.bfloat16
        finally:
            tg.set_autocast_cpu_enabled(False)
            tg.set_autocast_cpu_dtype(tg.bfloat16)
            tg.set_autocast_gpu_dtype(tg.float16)
    assert tg.has_lapack is True and tg.has_spectral is True
    assert isinstance(tg.has_mkl, bool) and tg.has_openmp is False


# -- uint16 / uint32 / uint64 ----------------------------------------------------------------------

@pytest.mark.parametrize("name,bits", [("uint16", 16), ("uint32", 32), ("uint64", 64)])
def test_limited_unsigned_dtypes(name, bits):
    device = "cpu"  # (the Triton backend has no unsigned types but uint8: see below)
    dt = getattr(tg, name)
    assert repr(dt) == f"tritongrad.{name}" and dt.itemsize == bits // 8
    assert not dt.is_signed and not dt.is_floating_point and not dt.is_complex
    info = tg.iinfo(dt)
    assert (info.min, info.max, info.bits) == (0, 2 ** bits - 1, bits)
    top = 2 ** bits - 1
    x = tg.tensor([0, 7, top], dtype=dt, device=device)
    assert x.dtype is dt and x.tolist() == [0, 7, top]
    assert host(x).dtype == np.dtype(name)
    # (the dtype on a line of its own where it would pass 80 columns, as PyTorch wraps it)
    assert repr(x.cpu()).replace(",\n       ", ", ") == \
        f"tensor([{0:>{len(str(top))}}, {7:>{len(str(top))}}, {top}], dtype=tritongrad.{name})"
    np.testing.assert_array_equal(host(x == 7), [False, True, False])
    np.testing.assert_array_equal(host(x != 7), [True, False, True])
    np.testing.assert_array_equal(host(x.to(tg.float64)), [0.0, 7.0, float(top)])
    np.testing.assert_array_equal(host(tg.tensor([1.9, 3.0], device=device).to(dt)), [1, 3])
    assert tg.zeros(2, dtype=dt).dtype is dt and tg.full((2,), 5, dtype=dt).tolist() == [5, 5]
    assert tg.from_numpy(np.array([3], dtype=name)).dtype is dt
    assert tg.tensor([-1], dtype=dt).tolist() == [top]  # a negative wraps, as PyTorch's
    if bits < 64:  # (past uint64, Python ints do not even unpack: a ValueError)
        with pytest.raises(RuntimeError, match=f"value cannot be converted to type {name} "
                                               "without overflow"):
            tg.tensor([top + 1], dtype=dt)


def test_limited_unsigned_promotion():
    assert tg.promote_types(tg.uint32, tg.uint32) is tg.uint32
    assert tg.promote_types(tg.uint16, tg.float16) is tg.float16
    assert tg.promote_types(tg.bfloat16, tg.uint64) is tg.bfloat16
    for a, b, names in ((tg.uint16, tg.int64, "UInt16 and Long"),
                        (tg.uint32, tg.uint8, "UInt32 and Byte"),
                        (tg.uint16, tg.uint32, "UInt16 and UInt32"),
                        (tg.bool, tg.uint64, "Bool and UInt64"),
                        (tg.uint16, tg.complex64, "UInt16 and ComplexFloat")):
        with pytest.raises(RuntimeError, match="Promotion for uint16, uint32, uint64 types is "
                                               f"not supported, attempted to promote {names}"):
            tg.promote_types(a, b)
    x = tg.tensor([1, 2], dtype=tg.uint32)
    np.testing.assert_array_equal(host(x * 2.5), [2.5, 5.0])  # to the float: allowed
    with pytest.raises(RuntimeError, match="Promotion for uint16, uint32, uint64"):
        x + tg.tensor([1, 2])


def test_limited_unsigned_dtypes_on_cuda_are_refused_clearly():
    with pytest.raises(TypeError, match="dtype tritongrad.uint32 is not supported by the Triton "
                                        "backend"):
        tg.tensor([1, 2], dtype=tg.uint32, device="cuda") + 0


# -- linalg.ldl_factor / ldl_solve -----------------------------------------------------------------

def _unpack_ldl(ld, piv):
    """P, L, D of LAPACK's sytrf output (lower), so that A = (P L) D (P L)^T: the blocks and
    interchanges applied in LAPACK's order (k = 0, 1, ...)."""
    n = ld.shape[0]
    d = np.zeros((n, n))
    m = np.eye(n)  # the product P_0 L_0 P_1 L_1 ... built up
    k = 0
    while k < n:
        if piv[k] > 0:
            s, p = 1, piv[k] - 1
        else:
            s, p = 2, -piv[k] - 1
        perm = np.eye(n)
        j = k + s - 1
        perm[[j, p]] = perm[[p, j]]
        lk = np.eye(n)
        lk[k + s:, k:k + s] = ld[k + s:, k:k + s]
        d[k:k + s, k:k + s] = ld[k:k + s, k:k + s]
        if s == 2:
            d[k, k + 1] = d[k + 1, k]
        m = m @ perm @ lk
        k += s
    return m, d


@pytest.mark.parametrize("a", [
    [[4.0, 2.0, 1.0], [2.0, 3.0, 0.5], [1.0, 0.5, 2.0]],
    [[0.0, 1.0, 2.0], [1.0, 0.0, 3.0], [2.0, 3.0, 1.0]],  # 2x2 pivots (negative pairs)
])
def test_ldl_factor_reconstructs_and_solves(a):
    a = np.array(a)
    ld, piv = tg.linalg.ldl_factor(tg.tensor(a))
    assert piv.dtype is tg.int32 and ld.dtype is tg.float64
    ld, piv = host(ld), host(piv)
    assert np.allclose(np.triu(ld, 1), 0)
    m, d = _unpack_ldl(ld, piv)
    np.testing.assert_allclose(m @ d @ m.T, a, atol=1e-12)
    b = t64((3, 2)).requires_grad_()
    x = tg.linalg.ldl_solve(*tg.linalg.ldl_factor(tg.tensor(a)), b)
    np.testing.assert_allclose(host(x), np.linalg.solve(a, host(b)), rtol=1e-10, atol=1e-12)
    assert tg.autograd.gradcheck(
        lambda b: tg.linalg.ldl_solve(*tg.linalg.ldl_factor(tg.tensor(a)), b), [b])


def test_ldl_batched_ex_and_errors():
    a = rng.normal(size=(2, 4, 4))
    a = a + np.swapaxes(a, -1, -2)
    ld, piv, info = tg.linalg.ldl_factor_ex(tg.tensor(a))
    assert tuple(piv.shape) == (2, 4) and tuple(info.shape) == (2,) and not host(info).any()
    b = rng.normal(size=(2, 4, 3))
    np.testing.assert_allclose(host(tg.linalg.ldl_solve(ld, piv, tg.tensor(b))),
                               np.linalg.solve(a, b), rtol=1e-9, atol=1e-12)
    with pytest.raises(RuntimeError, match="A must be batches of square matrices, but they are 2 "
                                           "by 3 matrices"):
        tg.linalg.ldl_factor(tg.ones(2, 3))
    with pytest.raises(RuntimeError, match="Expected b and A to have the same dtype, but found b "
                                           "of type Float and A of type Double instead"):
        tg.linalg.ldl_solve(ld, piv, tg.ones(2, 4, 1))


# -- lstm / gru / rnn_tanh / rnn_relu function forms -----------------------------------------------

@pytest.mark.parametrize("kind,kw", [("LSTM", {}), ("LSTM", {"proj_size": 2}), ("GRU", {}),
                                     ("RNN", {"nonlinearity": "relu", "bias": False})])
@pytest.mark.parametrize("bidirectional,batch_first", [(False, False), (True, True)])
def test_recurrent_functions_match_the_modules(kind, kw, bidirectional, batch_first):
    tg.manual_seed(1)
    m = getattr(tg.nn, kind)(3, 4, num_layers=2, bidirectional=bidirectional,
                             batch_first=batch_first, **kw).double()
    x = t64((2, 5, 3) if batch_first else (5, 2, 3))
    dirs = 2 if bidirectional else 1
    h_out = kw.get("proj_size", 4)
    h0 = t64((2 * dirs, 2, h_out))
    params = [p for ws in m.all_weights for p in ws]
    bias = kw.get("bias", True)
    args = (params, bias, 2, 0.0, False, bidirectional, batch_first)
    if kind == "LSTM":
        c0 = t64((2 * dirs, 2, 4))
        got = tg.lstm(x, [h0, c0], *args)
        want_out, (want_h, want_c) = m(x, (h0, c0))
        np.testing.assert_allclose(host(got[2]), host(want_c), rtol=1e-10, atol=1e-12)
    else:
        fn = {"GRU": tg.gru, "RNN": tg.rnn_relu}[kind]
        got = fn(x, h0, *args)
        want_out, want_h = m(x, h0)
    np.testing.assert_allclose(host(got[0]), host(want_out), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(host(got[1]), host(want_h), rtol=1e-10, atol=1e-12)


def test_recurrent_functions_gradients_unbatched_and_packed_refusal():
    w = [t64((4, 2)), t64((4, 4)), t64((4,)), t64((4,))]
    x, h0 = t64((3, 2)), t64((1, 4))
    assert_grads_match(lambda x, h0, *w: tg.rnn_tanh(x, h0, list(w), True, 1, 0.0, False, False,
                                                     False)[0], [x, h0, *w])
    with pytest.raises(NotImplementedError, match="packed-sequence form"):
        tg.lstm(x, tg.tensor([2, 1]), [h0, h0], w, True, 1, 0.0, False, False)
