"""Ops under CPU autocast (sweep 33, op side): PyTorch's CPU float32 list (linear algebra,
quantiles, trace, cdist, grid_sample, the unpools and fractional pools, the reflect and
replicate paddings, the margin losses), the lower precision ops vecdot and inner, the ops
with no policy (gaussian_nll_loss, bilinear), the RNN layers, ``out=`` forms (never
autocast) and float16/bfloat16 addmm rounding once. Expected values come from NumPy in
float32/float64 on the inputs as autocast casts them; torch, where installed, is compared
too."""

import re
import warnings

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.autograd import autocast as ac
from tritongrad.nn import functional as F


@pytest.fixture(autouse=True)
def _clean_state():
    yield
    assert not tg.is_autocast_enabled("cpu") and ac._tls.nesting == 0 and ac._threads_on == 0


def _bf16(x) -> np.ndarray:
    """Values rounded to bfloat16 (through float32; to nearest, ties to even), as float64."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


def _f64(t) -> np.ndarray:
    return t.detach().double().numpy()


_RNG = np.random.default_rng(33)
_SPD = (lambda a: a @ a.T + 3 * np.eye(3))(_RNG.standard_normal((3, 3)))
_TRI = np.triu(_RNG.standard_normal((3, 3))) + 3 * np.eye(3)


def _arr(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


# -- PyTorch's CPU float32 list: bfloat16 in, float32 out, computed in float32 ----------------

# name -> (function of the library and tensors, input arrays, NumPy float64 reference of the
# inputs as bfloat16 rounds them)

def _lu_solve_case(lib, b):
    A = lib.tensor(_SPD, dtype=lib.float32)  # (lu_factor is not on the list: float32)
    LU, piv = lib.linalg.lu_factor(A)
    return lib.linalg.lu_solve(LU, piv, b)


_FLOAT32_CASES = {
    "trace": (lambda L, x: L.trace(x), [_SPD], np.trace),
    "quantile": (lambda L, x: L.quantile(x, 0.3), [_arr(7)], lambda x: np.quantile(x, 0.3)),
    "nanquantile": (lambda L, x: L.nanquantile(x, 0.3), [_arr(7, 1)],
                    lambda x: np.nanquantile(x, 0.3)),
    "cdist": (lambda L, a, b: L.cdist(a, b), [_arr((3, 4)), _arr((2, 4), 1)],
              lambda a, b: np.linalg.norm(a[:, None] - b[None], axis=-1)),
    "inverse": (lambda L, a: L.inverse(a), [_SPD], np.linalg.inv),
    "cholesky": (lambda L, a: L.cholesky(a), [_SPD], np.linalg.cholesky),
    "cholesky_solve": (lambda L, b, a: L.cholesky_solve(b, L.linalg.cholesky(a)),
                       [_arr((3, 2)), _SPD], lambda b, a: np.linalg.solve(a, b)),
    "pinverse": (lambda L, a: L.pinverse(a), [_arr((3, 2))], np.linalg.pinv),
    "triangular_solve": (lambda L, b, a: L.triangular_solve(b, a).solution,
                         [_arr((3, 2)), _TRI], lambda b, a: np.linalg.solve(a, b)),
    "qr": (lambda L, a: L.qr(a)[1].abs(), [_arr((3, 2))],
           lambda a: np.abs(np.linalg.qr(a)[1])),
    "svd": (lambda L, a: L.svd(a)[1], [_arr((3, 2))], lambda a: np.linalg.svd(a)[1]),
    "geqrf": (lambda L, a: L.geqrf(a)[0].diagonal().abs(), [_arr((3, 2))],
              lambda a: np.abs(np.diag(np.linalg.qr(a)[1]))),
    "orgqr": (lambda L, a: L.orgqr(*L.geqrf(a)).abs(), [_arr((3, 2))],
              lambda a: np.abs(np.linalg.qr(a)[0])),
    "ormqr": (lambda L, a, c: L.ormqr(*L.geqrf(a), c, transpose=True)[:2].abs(),
              [_arr((3, 2)), _arr((3, 2), 1)],
              lambda a, c: np.abs(np.linalg.qr(a)[0].T @ c)),
    # (lu_factor is not on the list: the factors are made from float32)
    "lu_solve": (lambda L, b: L.lu_solve(b, *L.linalg.lu_factor(L.tensor(
        _SPD, dtype=L.float32))), [_arr((3, 2))],
        lambda b: np.linalg.solve(np.float32(_SPD).astype(np.float64), b)),
    "linalg.inv": (lambda L, a: L.linalg.inv(a), [_SPD], np.linalg.inv),
    "linalg.inv_ex": (lambda L, a: L.linalg.inv_ex(a).inverse, [_SPD], np.linalg.inv),
    "linalg.solve": (lambda L, a, b: L.linalg.solve(a, b), [_SPD, _arr((3, 2))],
                     np.linalg.solve),
    "linalg.cholesky": (lambda L, a: L.linalg.cholesky(a), [_SPD], np.linalg.cholesky),
    "linalg.cholesky_ex": (lambda L, a: L.linalg.cholesky_ex(a).L, [_SPD],
                           np.linalg.cholesky),
    "linalg.qr": (lambda L, a: L.linalg.qr(a).R.abs(), [_arr((3, 2))],
                  lambda a: np.abs(np.linalg.qr(a)[1])),
    "linalg.eigh": (lambda L, a: L.linalg.eigh(a).eigenvalues, [_SPD], np.linalg.eigvalsh),
    "linalg.eigvalsh": (lambda L, a: L.linalg.eigvalsh(a), [_SPD], np.linalg.eigvalsh),
    "linalg.svd": (lambda L, a: L.linalg.svd(a, full_matrices=False).S, [_arr((3, 2))],
                   lambda a: np.linalg.svd(a)[1]),
    "linalg.svdvals": (lambda L, a: L.linalg.svdvals(a), [_arr((3, 2))],
                       lambda a: np.linalg.svd(a)[1]),
    "linalg.lstsq": (lambda L, a, b: L.linalg.lstsq(a, b).solution,
                     [_arr((3, 2)), _arr((3, 1), 1)], lambda a, b: np.linalg.lstsq(a, b)[0]),
    "linalg.eig": (lambda L, a: L.linalg.eig(a).eigenvalues.real, [_SPD],
                   lambda a: np.linalg.eigvals(a).real),
    "linalg.eigvals": (lambda L, a: L.linalg.eigvals(a).abs(), [_SPD],
                       lambda a: np.abs(np.linalg.eigvals(a))),
    "linalg.cond": (lambda L, a: L.linalg.cond(a), [_SPD], np.linalg.cond),
    "linalg.matrix_rank": (lambda L, a: L.linalg.matrix_rank(a).float(), [_SPD],
                           lambda a: np.float64(np.linalg.matrix_rank(a))),
    "linalg.tensorinv": (lambda L, a: L.linalg.tensorinv(a.reshape(3, 3, 1), ind=1),
                         [_SPD], lambda a: np.linalg.inv(a).reshape(3, 1, 3)),
    "linalg.tensorsolve": (lambda L, a, b: L.linalg.tensorsolve(a, b), [_SPD, _arr(3)],
                           np.linalg.solve),
    "linalg.householder_product": (lambda L, a: L.linalg.householder_product(*L.geqrf(a))
                                   .abs(), [_arr((3, 2))],
                                   lambda a: np.abs(np.linalg.qr(a)[0])),
}


@pytest.mark.parametrize("name", sorted(_FLOAT32_CASES))
def test_cpu_float32_list_linear_algebra(name):
    fn, arrays, reference = _FLOAT32_CASES[name]
    args = [tg.tensor(a, dtype=tg.bfloat16) for a in arrays]
    with tg.autocast("cpu"):
        out = fn(tg, *args)
    assert out.dtype is tg.float32 or (name == "linalg.matrix_rank")
    want = reference(*[_bf16(a) for a in arrays])
    # float32 arithmetic on the bfloat16 inputs (not bfloat16 arithmetic: 4e-3 relative)
    np.testing.assert_allclose(_f64(out), want, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("name", ["lu_solve", "pinverse", "linalg.lstsq", "ormqr",
                                  "linalg.cond", "linalg.householder_product"])
def test_float32_inputs_are_not_cast_inside(name):
    # (their products ran in bfloat16 before: a bfloat16 result, wrong values, or an error)
    fn, arrays, reference = _FLOAT32_CASES[name]
    args = [tg.tensor(a, dtype=tg.float32) for a in arrays]
    with tg.autocast("cpu"):
        out = fn(tg, *args)
    assert out.dtype is tg.float32
    want = reference(*[np.float32(a).astype(np.float64) for a in arrays])
    np.testing.assert_allclose(_f64(out), want, rtol=2e-5, atol=2e-5)


def test_linalg_lu_solve_runs_as_called():
    # (not on the list, one kernel in PyTorch: float32 stays float32, no cast inside)
    b = tg.tensor(_arr((3, 2)), dtype=tg.float32)
    with tg.autocast("cpu"):
        x = _lu_solve_case(tg, b)
    assert x.dtype is tg.float32
    np.testing.assert_allclose(_f64(x), np.linalg.solve(np.float32(_SPD), np.float32(_arr((3, 2)))),
                               rtol=2e-5, atol=2e-5)


def test_float32_policy_gradients_reach_bfloat16_leaves_in_bfloat16():
    a = tg.tensor(_SPD, dtype=tg.bfloat16, requires_grad=True)
    with tg.autocast("cpu"):
        y = tg.linalg.inv(a)
    assert y.dtype is tg.float32
    y.sum().backward()
    assert a.grad.dtype is tg.bfloat16
    inv = np.linalg.inv(_bf16(_SPD))
    want = -(inv.T @ np.ones((3, 3)) @ inv.T)
    np.testing.assert_allclose(_f64(a.grad), _bf16(want), rtol=1e-2, atol=1e-2)


def test_out_forms_of_listed_linalg_functions_run_as_called():
    a = tg.tensor(_SPD, dtype=tg.float32)
    out = tg.empty(3, 3)
    with tg.autocast("cpu"):
        assert tg.linalg.inv(a, out=out) is out
        with pytest.raises(RuntimeError, match="Low precision dtypes not supported"):
            tg.linalg.inv(a.bfloat16(), out=tg.empty(3, 3))
    np.testing.assert_allclose(_f64(out), np.linalg.inv(np.float32(_SPD)), rtol=1e-5)


# -- nn.functional on the CPU float32 list ------------------------------------------------------

def _pool_input():
    return tg.tensor(_arr((1, 1, 4, 4), 2), dtype=tg.bfloat16)


def test_grid_sample_float32_on_cpu():
    x = tg.tensor(np.arange(9.0).reshape(1, 1, 3, 3), dtype=tg.bfloat16)
    grid = tg.tensor(np.full((1, 1, 1, 2), 0.25), dtype=tg.bfloat16)
    with tg.autocast("cpu"):
        y = F.grid_sample(x, grid, align_corners=True)
    # (0.25 in [-1, 1] is pixel 1.25 along both axes: 4 + 1.25 * 0.25 * 4 = 5)
    assert y.dtype is tg.float32 and y.item() == 5.0
    with tg.autocast("cuda", dtype=tg.bfloat16):  # (not on PyTorch's CUDA list)
        assert F.grid_sample(x.cuda(), grid.cuda(), align_corners=True).dtype is tg.bfloat16


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_max_unpool_float32_on_cpu(nd):
    x = tg.tensor(_arr((1, 1) + (4,) * nd, 3), dtype=tg.bfloat16)
    pool = (F.max_pool1d, F.max_pool2d, F.max_pool3d)[nd - 1]
    unpool = (F.max_unpool1d, F.max_unpool2d, F.max_unpool3d)[nd - 1]
    y, i = pool(x, 2, return_indices=True)
    with tg.autocast("cpu"):
        z = unpool(y, i, 2)
    assert z.dtype is tg.float32
    flat = np.zeros(4 ** nd)
    flat[i.numpy().ravel()] = _f64(y).ravel()
    np.testing.assert_array_equal(_f64(z).ravel(), flat)


@pytest.mark.parametrize("nd", [2, 3])
def test_fractional_max_pool_float32_on_cpu(nd):
    x = tg.tensor(_arr((1, 1) + (4,) * nd, 4), dtype=tg.bfloat16)
    pool = F.fractional_max_pool2d if nd == 2 else F.fractional_max_pool3d
    samples = tg.full((1, 1, nd), 0.5)  # (float32: cast with the input)
    with tg.autocast("cpu"):
        y = pool(x, 2, output_size=2, _random_samples=samples)
    assert y.dtype is tg.float32
    # output 2 from 4 with a kernel of 2: the windows start at 0 and 2 in every dim
    v = _f64(x).reshape((2, 2) * nd if nd == 2 else (2, 2, 2, 2, 2, 2))
    want = v.max(axis=(1, 3)) if nd == 2 else v.max(axis=(1, 3, 5))
    np.testing.assert_array_equal(_f64(y).reshape(want.shape), want)


def test_fractional_max_pool_samples_must_have_the_inputs_dtype():
    x = tg.tensor(_arr((1, 1, 4, 4)), dtype=tg.float64)
    with pytest.raises(RuntimeError, match="Expect _random_samples to have the same dtype as "
                                           "input"):
        F.fractional_max_pool2d(x, 2, output_size=2, _random_samples=tg.full((1, 1, 2), 0.5))


@pytest.mark.parametrize("mode, pad, shape, float32", [
    ("reflect", (2, 1), (1, 2, 5), True),
    ("reflect", (1, 1, 2, 1), (1, 2, 4, 4), True),
    ("reflect", (1, 1, 2, 1), (2, 4, 4), True),  # (an unbatched 2-D padding)
    ("reflect", (1,) * 6, (1, 1, 3, 3, 3), False),  # (reflection_pad3d: not on the list)
    ("replicate", (2, 1), (1, 2, 5), True),
    ("replicate", (1, 1, 2, 1), (1, 2, 4, 4), True),
    ("replicate", (1,) * 6, (1, 1, 3, 3, 3), True),
    ("circular", (1, 1), (1, 2, 4), False),
    ("constant", (1, 1), (1, 2, 4), False),
])
def test_pad_modes(mode, pad, shape, float32):
    v = _bf16(_arr(shape, 5))
    x = tg.tensor(v, dtype=tg.bfloat16)
    with tg.autocast("cpu"):
        y = F.pad(x, pad, mode=mode)
    assert y.dtype is (tg.float32 if float32 else tg.bfloat16)
    widths = [(0, 0)] * (len(shape) - len(pad) // 2) + \
        [(pad[i], pad[i + 1]) for i in range(len(pad) - 2, -1, -2)]
    np_mode = {"reflect": "reflect", "replicate": "edge", "circular": "wrap",
               "constant": "constant"}[mode]
    np.testing.assert_array_equal(_f64(y), np.pad(v, widths, mode=np_mode))
    with tg.autocast("cuda", dtype=tg.bfloat16):  # (the CPU list's only)
        assert F.pad(x.cuda(), pad, mode=mode).dtype is tg.bfloat16


def test_pad_argument_errors_are_unchanged():
    with tg.autocast("cpu"):
        with pytest.raises(NotImplementedError, match="Unrecognised padding mode"):
            F.pad(tg.ones(1, 2, 3, dtype=tg.bfloat16), (1, 1), mode="mirror")


def _margin_cases():
    a, b, c = (_bf16(_arr((3, 4), s)) for s in (6, 7, 8))
    y = np.array([1, -1, 1])
    x1, x2 = a[:, 0], b[:, 0]
    cos = (a * b).sum(1) / np.sqrt(((a * a).sum(1) + 1e-12) * ((b * b).sum(1) + 1e-12))
    tri = np.maximum(np.linalg.norm(a - b + 1e-6, axis=1) - np.linalg.norm(a - c + 1e-6, axis=1)
                     + 1, 0)
    tgt = np.array([0, 3, 1])
    mm = np.maximum(0, 1 - a[np.arange(3), tgt][:, None] + a)
    mm[np.arange(3), tgt] = 0
    return {
        "cosine_embedding_loss": (lambda: F.cosine_embedding_loss(
            _t(a), _t(b), tg.tensor(y)), np.where(y == 1, 1 - cos, np.maximum(cos, 0)).mean()),
        "hinge_embedding_loss": (lambda: F.hinge_embedding_loss(_t(x1), tg.tensor(y)),
                                 np.where(y == 1, x1, np.maximum(0, 1 - x1)).mean()),
        "margin_ranking_loss": (lambda: F.margin_ranking_loss(_t(x1), _t(x2), _t(y * 1.0)),
                                np.maximum(0, -y * (x1 - x2)).mean()),
        "soft_margin_loss": (lambda: F.soft_margin_loss(_t(x1), _t(y * 1.0)),
                             np.log1p(np.exp(-y * x1)).mean()),
        "triplet_margin_loss": (lambda: F.triplet_margin_loss(_t(a), _t(b), _t(c)),
                                tri.mean()),
        "multi_margin_loss": (lambda: F.multi_margin_loss(_t(a), tg.tensor(tgt)),
                              (mm.sum(1) / 4).mean()),
    }


def _t(v):
    return tg.tensor(v, dtype=tg.bfloat16)


@pytest.mark.parametrize("name", ["cosine_embedding_loss", "hinge_embedding_loss",
                                  "margin_ranking_loss", "soft_margin_loss",
                                  "triplet_margin_loss", "multi_margin_loss"])
def test_margin_losses_run_in_float32(name):
    fn, want = _margin_cases()[name]
    with tg.autocast("cpu"):
        out = fn()
    assert out.dtype is tg.float32
    np.testing.assert_allclose(out.item(), want, rtol=1e-5, atol=1e-6)


def test_margin_losses_run_in_float32_on_cuda_too():
    a = tg.tensor(_arr((3, 4)), dtype=tg.float16, device="cuda")
    y = tg.tensor([1, -1, 1], device="cuda")
    with tg.autocast("cuda"):
        assert F.cosine_embedding_loss(a, a, y).dtype is tg.float32
        assert F.triplet_margin_loss(a, a, a).dtype is tg.float32
        assert F.hinge_embedding_loss(a[:, 0], y).dtype is tg.float32


def test_the_nn_modules_use_the_same_policies():
    x = tg.tensor(_arr((1, 1, 4, 4)), dtype=tg.bfloat16)
    y, i = F.max_pool2d(x, 2, return_indices=True)
    with tg.autocast("cpu"):
        assert tg.nn.MaxUnpool2d(2)(y, i).dtype is tg.float32
        assert tg.nn.ReflectionPad2d(1)(x).dtype is tg.float32
        assert tg.nn.ReplicationPad1d(1)(x[0]).dtype is tg.float32
        assert tg.nn.CosineEmbeddingLoss()(x[0, 0], x[0, 0], tg.tensor([1, -1, 1, 1])).dtype \
            is tg.float32
        # a convolution with reflect padding: the padding in float32, the conv in bfloat16
        conv = tg.nn.Conv2d(1, 1, 3, padding=1, padding_mode="reflect")
        assert conv(x).dtype is tg.bfloat16


# -- lower precision: vecdot and inner ----------------------------------------------------------

@pytest.mark.parametrize("op", ["vecdot", "inner"])
def test_vecdot_and_inner_run_in_lower_precision(op):
    a, b = _arr((3, 8), 9), _arr((3, 8), 10)
    fn = tg.linalg.vecdot if op == "vecdot" else (lambda x, y: tg.inner(x, y).diagonal())
    with tg.autocast("cpu"):
        out = fn(tg.tensor(a, dtype=tg.float32), tg.tensor(b, dtype=tg.float32))
        mixed = fn(tg.tensor(a, dtype=tg.float32), tg.tensor(b, dtype=tg.bfloat16))
    assert out.dtype is tg.bfloat16 and mixed.dtype is tg.bfloat16
    want = (_bf16(a) * _bf16(b)).sum(1)
    np.testing.assert_allclose(_f64(out), want, rtol=8e-3, atol=1e-2)
    np.testing.assert_array_equal(_f64(out), _f64(mixed))
    with tg.autocast("cpu"):  # float64 is not cast
        assert fn(tg.tensor(a), tg.tensor(b)).dtype is tg.float64


# -- no policy ----------------------------------------------------------------------------------

def test_gaussian_nll_loss_keeps_the_input_dtype_on_cpu():
    x, t = tg.tensor(_arr(4), dtype=tg.bfloat16), tg.tensor(_arr(4, 1), dtype=tg.bfloat16)
    var = tg.ones(4, dtype=tg.bfloat16)
    with tg.autocast("cpu"):
        out = F.gaussian_nll_loss(x, t, var)
    assert out.dtype is tg.bfloat16
    want = (0.5 * (_bf16(_arr(4)) - _bf16(_arr(4, 1))) ** 2).mean()
    np.testing.assert_allclose(out.float().item(), want, rtol=2e-2)


def test_bilinear_runs_in_its_inputs_dtype():
    x1, x2, w, b = _arr((2, 3), 11), _arr((2, 4), 12), _arr((5, 3, 4), 13), _arr(5, 14)
    args = [tg.tensor(v, dtype=tg.float32) for v in (x1, x2, w, b)]
    with tg.autocast("cpu"):
        y = F.bilinear(*args)
        with pytest.raises(RuntimeError):  # (mixed dtypes are refused, as PyTorch's)
            F.bilinear(args[0].bfloat16(), *args[1:])
    assert y.dtype is tg.float32
    f32 = [np.float32(v).astype(np.float64) for v in (x1, x2, w, b)]
    want = np.einsum("ni,oij,nj->no", f32[0], f32[2], f32[1]) + f32[3]
    # (PyTorch's _trilinear lowers its inner bmm under autocast: its float32 result is up to
    # ~3e-2 off this; here it is computed in float32)
    np.testing.assert_allclose(_f64(y), want, rtol=1e-5, atol=1e-5)


# -- RNN layers ---------------------------------------------------------------------------------

def _rnn(cls, dtype, **kw):
    m = cls(3, 4, **kw)
    with tg.no_grad():
        for k, p in enumerate(m.parameters()):
            p.copy_(tg.tensor(_arr(tuple(p.shape), 20 + k) * 0.3))
    return m.to(dtype)


@pytest.mark.parametrize("cls, weights, autocast_dtype, want", [
    (tg.nn.GRU, tg.float32, tg.bfloat16, tg.float32),
    (tg.nn.GRU, tg.bfloat16, tg.bfloat16, tg.bfloat16),
    (tg.nn.GRU, tg.float16, tg.bfloat16, tg.float32),  # (bfloat16 gates, float16 state)
    (tg.nn.GRU, tg.float16, tg.float16, tg.float16),
    (tg.nn.RNN, tg.float32, tg.bfloat16, tg.bfloat16),
    (tg.nn.RNN, tg.float16, tg.bfloat16, tg.bfloat16),
    (tg.nn.LSTM, tg.float32, tg.bfloat16, tg.bfloat16),
    (tg.nn.LSTM, tg.float16, tg.bfloat16, tg.float32),  # (no mkldnn layer: a composite)
    (tg.nn.LSTM, tg.float16, tg.float16, tg.float16),
])
def test_rnn_dtypes_on_cpu(cls, weights, autocast_dtype, want):
    m = _rnn(cls, weights)
    x = tg.tensor(_arr((5, 2, 3), 30), dtype=weights)
    with tg.autocast("cpu", dtype=autocast_dtype):
        y, h = m(x)
    h = h[0] if isinstance(h, tuple) else h
    assert y.dtype is want and h.dtype is want


def test_gru_on_cpu_matches_a_numpy_emulation():
    # PyTorch's CPU GRU under autocast: the linears in bfloat16 (float32 accumulation, one
    # rounding), the gates in bfloat16, the state blended in float32
    m = _rnn(tg.nn.GRU, tg.float32)
    xs = _arr((4, 2, 3), 31)
    with tg.autocast("cpu"):
        y, _ = m(tg.tensor(xs, dtype=tg.float32))
    w_ih, w_hh, b_ih, b_hh = (_f64(p) for p in (m.weight_ih_l0, m.weight_hh_l0,
                                                  m.bias_ih_l0, m.bias_hh_l0))

    def lin(x, w, b):
        return _bf16(_bf16(x) @ _bf16(w).T + _bf16(b))

    def sig(v):
        return _bf16(1 / (1 + np.exp(-v)))

    h, outs = np.zeros((2, 4)), []
    gi_all = lin(xs.reshape(8, 3), w_ih, b_ih).reshape(4, 2, 12)
    for t in range(4):
        gi, gh = gi_all[t], lin(h, w_hh, b_hh)
        r = sig(_bf16(gi[:, :4] + gh[:, :4]))
        z = sig(_bf16(gi[:, 4:8] + gh[:, 4:8]))
        n = _bf16(np.tanh(_bf16(gi[:, 8:] + _bf16(r * gh[:, 8:]))))
        h = np.float32((h - n) * z + n).astype(np.float64)
        outs.append(h)
    np.testing.assert_allclose(_f64(y), np.stack(outs), rtol=1e-2, atol=1e-2)


def test_gru_packed_sequence_under_autocast():
    m = _rnn(tg.nn.GRU, tg.float32)
    x = tg.tensor(_arr((4, 2, 3), 32), dtype=tg.float32)
    packed = tg.nn.utils.rnn.pack_padded_sequence(x, [4, 2])
    with tg.autocast("cpu"):
        y, h = m(packed)
        y_full, h_full = m(x)
    assert y.data.dtype is tg.float32 and h.dtype is tg.float32
    np.testing.assert_allclose(_f64(y.data[:2]), _f64(y_full[0]), rtol=1e-6)


# -- out= forms and addmm's rounding ------------------------------------------------------------

@pytest.mark.parametrize("op", ["mm", "matmul", "bmm"])
def test_out_forms_are_computed_in_float32(op):
    a, b = _arr((2, 3, 8), 40), _arr((2, 8, 4), 41)
    if op == "mm":
        a, b = a[0], b[0]
    fn = getattr(tg, op)
    out = tg.empty(0)
    with tg.autocast("cpu"):
        assert fn(tg.tensor(a, dtype=tg.float32), tg.tensor(b, dtype=tg.float32), out=out) \
            is out
    assert out.dtype is tg.float32
    np.testing.assert_allclose(_f64(out), np.float32(a) @ np.float32(b), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("beta, alpha", [(1, 1), (0.5, 2.0), (0, 3.0)])
def test_low_precision_addmm_rounds_once(dtype, beta, alpha):
    rng = np.random.default_rng(7)
    a, b, c = rng.standard_normal((16, 32)), rng.standard_normal((32, 8)), rng.standard_normal(8)
    if dtype == "float16":
        low = [np.float16(v).astype(np.float64) for v in (c, a, b)]
        exact = beta * low[0] + alpha * (low[1] @ low[2])
        want = np.float32(exact).astype(np.float16).astype(np.float64)
    else:
        low = [_bf16(v) for v in (c, a, b)]
        want = _bf16(beta * low[0] + alpha * (low[1] @ low[2]))
    dt = getattr(tg, dtype)
    got = tg.addmm(*[tg.tensor(v, dtype=dt) for v in low], beta=beta, alpha=alpha)
    assert got.dtype is dt
    np.testing.assert_array_equal(_f64(got), want)


def test_linear_under_autocast_rounds_once():
    x, w, b = _arr((16, 32), 50), _arr((8, 32), 51), _arr(8, 52)
    lin = tg.nn.Linear(32, 8)
    with tg.no_grad():
        lin.weight.copy_(tg.tensor(w, dtype=tg.float32))
        lin.bias.copy_(tg.tensor(b, dtype=tg.float32))
    with tg.autocast("cpu"):
        y = lin(tg.tensor(x, dtype=tg.float32))
    assert y.dtype is tg.bfloat16
    want = _bf16(_bf16(x) @ _bf16(w).T + _bf16(b))
    np.testing.assert_array_equal(_f64(y), want)


# -- against torch ------------------------------------------------------------------------------

def test_against_torch():
    torch = pytest.importorskip("torch")
    for name, (fn, arrays, _) in sorted(_FLOAT32_CASES.items()):
        got = []
        for lib in (torch, tg):
            args = [lib.tensor(a, dtype=lib.bfloat16) for a in arrays]
            with lib.autocast("cpu"), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # (torch's deprecated cholesky, qr, ...)
                out = fn(lib, *args)
            got.append((str(out.dtype).split(".")[-1], out.detach().double().numpy()))
        assert got[0][0] == got[1][0], name
        np.testing.assert_allclose(got[1][1], got[0][1], rtol=1e-4, atol=1e-4, err_msg=name)
    # the RNN layers' dtypes and values
    for name, dtype in [(n, d) for n in ("GRU", "RNN", "LSTM") for d in ("float32", "float16")]:
        outs = []
        for lib in (torch, tg):
            m = getattr(lib.nn, name)(3, 4)
            with lib.no_grad():
                for k, p in enumerate(m.parameters()):
                    p.copy_(lib.tensor(_arr(tuple(p.shape), 20 + k) * 0.3, dtype=lib.float32))
            m = m.to(getattr(lib, dtype))
            with lib.autocast("cpu"):
                y = m(lib.tensor(_arr((5, 2, 3), 30), dtype=getattr(lib, dtype)))[0]
            outs.append((str(y.dtype).split(".")[-1], y.detach().double().numpy()))
        assert outs[0][0] == outs[1][0], (name, dtype)
        np.testing.assert_allclose(outs[1][1], outs[0][1], rtol=2e-2, atol=2e-2,
                                   err_msg=f"{name} {dtype}")
    # addmm in bfloat16: the same bits
    rng = np.random.default_rng(7)
    vals = [rng.standard_normal(s) for s in ((8,), (16, 32), (32, 8))]
    t = torch.addmm(*[torch.tensor(v, dtype=torch.bfloat16) for v in vals], beta=0.5, alpha=2)
    g = tg.addmm(*[tg.tensor(v, dtype=tg.bfloat16) for v in vals], beta=0.5, alpha=2)
    np.testing.assert_array_equal(g.double().numpy(), t.double().numpy())


def test_multi_dot_refuses_mixed_dtypes_before_any_cast():
    a, b, c = tg.ones(3, 4), tg.ones(4, 5, dtype=tg.bfloat16), tg.ones(5, 2)
    message = ("multi_dot(): all tensors must have be the same dtype but tensor 0 is float and "
               "tensor 1 c10::BFloat16")
    with pytest.raises(RuntimeError, match=re.escape(message)):
        tg.linalg.multi_dot([a, b, c])
    with tg.autocast("cpu"), pytest.raises(RuntimeError, match=re.escape(message)):
        tg.linalg.multi_dot([a, b, c])  # (its products would have cast both)
    with tg.autocast("cpu"):
        out = tg.linalg.multi_dot([a, b.float(), c])
    assert out.dtype is tg.bfloat16 and out.tolist() == [[20.0, 20.0]] * 3
