"""tritongrad.masked: the masked reductions and normalizations against float64 NumPy
references written from their definitions (masked-in elements only, loops where a slice has
its own rule), gradients against finite differences, and the prototype MaskedTensor. The
torch comparisons at the end skip without torch."""

import copy
import math
import pickle
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tritongrad as tg
import tritongrad.masked as M
from tritongrad.autograd import overrides
from tritongrad.autograd.gradcheck import gradcheck
from tritongrad.masked import MaskedTensor, as_masked_tensor, is_masked_tensor, masked_tensor

from helpers import host

pytestmark = pytest.mark.filterwarnings(
    "ignore:The PyTorch API of MaskedTensors is in prototype stage:UserWarning")

_rng = np.random.default_rng(7)


# -- NumPy references -------------------------------------------------------------------------

def _dims(dim, ndim):
    if dim is None:
        return tuple(range(ndim))
    return tuple(sorted(d % ndim for d in ((dim,) if isinstance(dim, int) else dim)))


def _slices(x, mask, dims):
    """Per output index (reduced dims kept as size 1): the masked-in values of its slice."""
    keep = [d for d in range(x.ndim) if d not in dims]
    xt = np.moveaxis(x, keep + list(dims), range(x.ndim))
    mt = np.moveaxis(mask, keep + list(dims), range(x.ndim))
    out_shape = tuple(x.shape[d] for d in keep)
    flat_x = xt.reshape(out_shape + (-1,))
    flat_m = mt.reshape(out_shape + (-1,))
    return out_shape, flat_x, flat_m


def _per_slice(x, mask, dim, keepdim, fn):
    dims = _dims(dim, x.ndim)
    out_shape, fx, fm = _slices(x, mask, dims)
    out = np.empty(out_shape)
    for idx in np.ndindex(*out_shape):
        out[idx] = fn(fx[idx][fm[idx]])
    if keepdim:
        out = out.reshape(tuple(1 if d in dims else n for d, n in enumerate(x.shape)))
    return out


def _median(v):
    return np.sort(v)[(len(v) - 1) // 2] if len(v) else np.nan  # the lower median, as torch


def _var(v, correction=1.0):
    if not len(v):
        return np.nan
    with np.errstate(all="ignore"):  # (n <= correction: inf or nan, as the op)
        return ((v - v.mean()) ** 2).sum() / np.float64(max(len(v) - correction, 0))


def _norm(v, p):
    a = np.abs(v)
    if p == math.inf:
        return a.max() if len(a) else 0.0
    if p == -math.inf:
        return a.min() if len(a) else math.inf
    if p == 0:
        return float((a != 0).sum())
    return (a ** p).sum() ** (1 / p)


def _lse(v):
    if not len(v):
        return -math.inf
    m = v.max()
    return m + np.log(np.exp(v - m).sum())


REDUCTIONS = {
    "sum": lambda v: v.sum(),
    "prod": lambda v: v.prod(),
    "amax": lambda v: v.max() if len(v) else -math.inf,
    "amin": lambda v: v.min() if len(v) else math.inf,
    "mean": lambda v: v.mean() if len(v) else np.nan,
    "logsumexp": _lse,
    "var": _var,
    "std": lambda v: np.sqrt(_var(v)),
    "norm": lambda v: _norm(v, 2.0),
}


def reference(name, x, mask, dim=None, keepdim=False):
    mask = np.broadcast_to(mask, x.shape)
    return _per_slice(x, mask, dim, keepdim, REDUCTIONS[name])


def call(name, x, dim=None, **kw):
    if name == "norm":
        return M.norm(x, 2.0, dim, **kw)
    return getattr(M, name)(x, dim, **kw)


def _softmax_ref(x, mask, dim, kind):
    mask = np.broadcast_to(mask, x.shape)
    v = -x if kind == "softmin" else x
    filled = np.where(mask, v, -np.inf)
    with np.errstate(all="ignore"):  # (a fully masked-out slice: nan)
        m = filled.max(axis=dim, keepdims=True)
        e = np.exp(filled - m)
        s = e / e.sum(axis=dim, keepdims=True)
        return np.log(s) if kind == "log_softmax" else s


def close(actual, expected, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(host(actual), expected, rtol=rtol, atol=atol, equal_nan=True)


def data(shape, device="cpu"):
    return tg.tensor(_rng.uniform(-2, 2, shape), dtype=tg.float64, device=device)


def bmask(shape, device="cpu", p=0.6):
    return tg.tensor(_rng.random(shape) < p, device=device)


# one row fully masked out, one full, one partial
MASK = np.array([[True, False, True, False], [False, False, False, False],
                 [True, True, True, True]])


# -- the reductions ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reductions_match_numpy_with_a_fully_masked_row(device, name):
    x = data((3, 4), device)
    m = tg.tensor(MASK, device=device)
    for dim in (None, 0, 1, (0, 1), -1):
        for keepdim in (False, True):
            out = call(name, x, dim, keepdim=keepdim, mask=m)
            assert out.device == x.device and out.dtype is tg.float64
            close(out, reference(name, host(x), MASK, dim, keepdim))


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reductions_without_a_mask_are_the_plain_ops(name):
    x = data((2, 3, 2))
    close(call(name, x, (0, 2)), reference(name, host(x), np.ones((2, 3, 2), bool), (0, 2)))


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_reductions_property(draw):
    ndim = draw.draw(st.integers(1, 3))
    shape = tuple(draw.draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim)))
    # a broadcastable mask: some leading dims dropped, some dims of size 1
    lead = draw.draw(st.integers(0, ndim - 1))
    mshape = tuple(1 if draw.draw(st.booleans()) else n for n in shape[lead:])
    mask = np.array(draw.draw(st.lists(st.booleans(), min_size=int(np.prod(mshape)),
                                       max_size=int(np.prod(mshape))))).reshape(mshape)
    dims = draw.draw(st.one_of(st.none(), st.integers(-ndim, ndim - 1),
                               st.sets(st.integers(0, ndim - 1), min_size=1).map(tuple)))
    keepdim = draw.draw(st.booleans())
    name = draw.draw(st.sampled_from(sorted(REDUCTIONS)))
    x = _rng.uniform(-2, 2, shape)
    out = call(name, tg.tensor(x), dims, keepdim=keepdim, mask=tg.tensor(mask))
    close(out, reference(name, x, mask, dims, keepdim))


def test_median_argmax_argmin_match_numpy(device):
    x = data((3, 5), device)
    m = tg.tensor(MASK[:, [0, 1, 2, 3, 0]], device=device)
    mk = host(m)
    for dim in (0, 1, -1):
        for keepdim in (False, True):
            close(M.median(x, dim, keepdim=keepdim, mask=m),
                  _per_slice(host(x), mk, dim, keepdim, _median))
    filled_max = np.where(mk, host(x), -np.inf)
    filled_min = np.where(mk, host(x), np.inf)
    for dim in (0, 1):
        # (the dtype of argmax is the input's, as PyTorch's masked argmax)
        close(M.argmax(x, dim, mask=m), np.argmax(filled_max, axis=dim).astype(float))
        close(M.argmin(x, dim, keepdim=True, mask=m),
              np.argmin(filled_min, axis=dim, keepdims=True).astype(float))
    assert M.argmax(x, mask=m).item() == np.argmax(filled_max)
    assert M.argmax(x, 1, dtype=tg.int64, mask=m).dtype is tg.int64


@pytest.mark.parametrize("kind", ["softmax", "log_softmax", "softmin"])
def test_softmaxes_match_numpy(device, kind):
    x = data((3, 4), device)
    m = tg.tensor(MASK, device=device)
    for dim in (0, 1):
        close(getattr(M, kind)(x, dim, mask=m), _softmax_ref(host(x), MASK, dim, kind))
    # the fully masked-out row is nan; the masked-out elements of the others are 0 (-inf)
    out = host(M.softmax(x, 1, mask=m))
    assert np.isnan(out[1]).all() and (out[0, [1, 3]] == 0).all()


def test_normalize_cumsum_cumprod_logaddexp_match_numpy(device):
    x, y = data((3, 4), device), data((3, 4), device)
    m = tg.tensor(MASK, device=device)
    xm = np.where(MASK, host(x), 0)
    for p in (1.0, 2.0, math.inf):
        nrm = _per_slice(host(x), MASK, 1, True, lambda v: _norm(v, p))
        close(M.normalize(x, p, 1, mask=m), xm / np.maximum(nrm, 1e-12))
    close(M.cumsum(x, 1, mask=m), np.cumsum(xm, 1))
    close(M.cumprod(x, 0, mask=m), np.cumprod(np.where(MASK, host(x), 1), 0))
    other = tg.tensor(MASK[::-1].copy(), device=device)
    expect = np.logaddexp(np.where(MASK, host(x), -np.inf),
                          np.where(MASK[::-1], host(y), -np.inf))
    close(M.logaddexp(x, y, input_mask=m, other_mask=other), expect)
    close(M.logaddexp(x, y), np.logaddexp(host(x), host(y)))


@pytest.mark.parametrize("p", [1.0, 3.0, 0.0, math.inf, -math.inf])
def test_norm_orders(p):
    x = data((3, 4))
    m = tg.tensor(MASK)
    close(M.norm(x, p, 1, mask=m), _per_slice(host(x), MASK, 1, False, lambda v: _norm(v, p)))


def test_var_std_correction_and_unbiased():
    x = data((3, 4))
    m = tg.tensor(MASK)
    for correction in (0, 1, 2):
        close(M.var(x, 1, correction=correction, mask=m),
              _per_slice(host(x), MASK, 1, False, lambda v: _var(v, correction)))
    close(M.std(x, 1, unbiased=False, mask=m),
          _per_slice(host(x), MASK, 1, False, lambda v: np.sqrt(_var(v, 0))))
    with pytest.raises(ValueError, match="only one of unbiased and correction"):
        M.var(x, 1, True, correction=1, mask=m)


def test_integer_and_bool_inputs_and_identities():
    xi = tg.tensor([[1, -2, 3], [4, 5, 6]], dtype=tg.int32)
    m = tg.tensor([[True, False, True], [False, False, False]])
    assert M.sum(xi, 1, mask=m).dtype is tg.int64  # promoted, as torch.sum
    assert M.sum(xi, 1, mask=m).tolist() == [4, 0]
    assert M.prod(xi, 1, mask=m).tolist() == [3, 1]
    info = tg.iinfo(tg.int32)
    assert M.amax(xi, 1, mask=m).tolist() == [3, info.min]
    assert M.amin(xi, 1, mask=m).tolist() == [1, info.max]
    assert M.amax(xi, 1, mask=m).dtype is tg.int32
    assert M.sum(tg.tensor([True, True, False]), mask=tg.tensor([True, False, True])).item() == 1
    with pytest.raises(ValueError, match=r"mean\(\): Could not infer output dtype. Input dtype "
                                         r"must be either a floating point or complex dtype"):
        M.mean(xi, 1, mask=m)
    with pytest.raises(ValueError, match="no fully masked out rows if dtype is not floating"):
        M.median(xi, 1, mask=m)
    assert M.median(xi, 1, mask=tg.tensor([True, False, True])).tolist() == [1, 4]
    # var of an integer input is computed in float32
    assert M.var(xi, 1, mask=tg.tensor([True, True, True])).dtype is tg.float32


def test_dtype_argument():
    x = tg.tensor([[1.5, 2.5, 3.5]], dtype=tg.float32)
    m = tg.tensor([True, False, True])
    assert M.sum(x, 1, dtype=tg.float64, mask=m).dtype is tg.float64
    assert M.mean(x, 1, dtype=tg.float64, mask=m).dtype is tg.float64
    assert M.amax(x, 1, dtype=tg.float64, mask=m).dtype is tg.float64
    assert M.softmax(x, 1, dtype=tg.float64, mask=m).dtype is tg.float64
    assert M.cumsum(x, 1, dtype=tg.float64, mask=m).dtype is tg.float64
    assert M.norm(x, 2.0, 1, dtype=tg.float64, mask=m).dtype is tg.float64
    xi = tg.tensor([[1, 2, 3]])
    close(M.mean(xi, 1, dtype=tg.float64, mask=m), [2.0])
    assert M.sum(xi, 1, dtype=tg.int32, mask=m).dtype is tg.int32


def test_mask_broadcasting_and_conversion(device):
    x = data((2, 3, 4), device)
    row = np.array([True, False, True, True])
    for mask in (tg.tensor(row, device=device), tg.tensor(row[None, None], device=device),
                 tg.tensor(row.astype(np.int64), device=device),  # non-bool: as bool
                 tg.tensor(row)):  # another device: moved
        close(M.sum(x, 2, mask=mask), np.where(row, host(x), 0).sum(2))
    with pytest.raises(IndexError, match="got mask dimensionality higher than of the input"):
        M.sum(x, 1, mask=tg.ones(1, 2, 3, 4, dtype=tg.bool))
    with pytest.raises(RuntimeError):
        M.sum(x, 1, mask=tg.ones(3, 3, dtype=tg.bool))


def test_errors_name_the_problem():
    x = data((2, 3))
    m = tg.ones(2, 3, dtype=tg.bool)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range "
                                         r"of \[-2, 1\], but got 2\)"):
        M.sum(x, 2, mask=m)
    with pytest.raises(RuntimeError, match="dim=-1 appears multiple times"):
        M.sum(x, (1, -1), mask=m)
    with pytest.raises(TypeError, match=r"masked sum\(\): input must be a Tensor"):
        M.sum(np.ones(3))
    with pytest.raises(TypeError, match="mask must be a Tensor or None"):
        M.amax(x, mask=[[True]])
    with pytest.raises(TypeError, match="ord=-inf needs a floating point input"):
        M.norm(tg.ones(3, dtype=tg.int64), -math.inf, mask=tg.ones(3, dtype=tg.bool))
    sp = tg.ones(2, 2).to_sparse() if hasattr(tg.Tensor, "to_sparse") else None
    if sp is not None:
        with pytest.raises(ValueError, match="masked amax expects strided tensor"):
            M.amax(sp, mask=tg.ones(2, 2, dtype=tg.bool))


def test_zero_dim_input():
    x = tg.tensor(2.5, dtype=tg.float64)
    assert M.sum(x, mask=tg.tensor(False)).item() == 0
    assert M.amax(x, mask=tg.tensor(True)).item() == 2.5
    assert M.sum(x, 0, mask=tg.tensor(True)).item() == 2.5


# -- gradients --------------------------------------------------------------------------------

GRAD_MASK = np.array([[True, False, True, True], [False, True, False, True],
                      [True, True, True, False]])  # every row and column has a masked-in one

DIFFERENTIABLE = {
    "sum": lambda x, m: M.sum(x, 1, mask=m),
    "prod": lambda x, m: M.prod(x, (0, 1), mask=m),
    "amax": lambda x, m: M.amax(x, 1, mask=m),
    "amin": lambda x, m: M.amin(x, 0, keepdim=True, mask=m),
    "mean": lambda x, m: M.mean(x, 1, mask=m),
    "median": lambda x, m: M.median(x, 1, mask=m),
    "logsumexp": lambda x, m: M.logsumexp(x, 0, mask=m),
    "norm": lambda x, m: M.norm(x, 2.0, 1, mask=m),
    "norm1": lambda x, m: M.norm(x, 3.0, (0, 1), mask=m),
    "var": lambda x, m: M.var(x, 1, mask=m),
    "std": lambda x, m: M.std(x, 0, mask=m),
    "softmax": lambda x, m: M.softmax(x, 1, mask=m),
    # (masked-out outputs of log_softmax and logaddexp are -inf: left out here)
    "log_softmax": lambda x, m: tg.where(m, M.log_softmax(x, 0, mask=m), 0.0),
    "softmin": lambda x, m: M.softmin(x, 1, mask=m),
    "normalize": lambda x, m: M.normalize(x, 2.0, 1, mask=m),
    "cumsum": lambda x, m: M.cumsum(x, 1, mask=m),
    "cumprod": lambda x, m: M.cumprod(x, 1, mask=m),
    "logaddexp": lambda x, m: tg.where(m, M.logaddexp(x, x * 2, input_mask=m, other_mask=m),
                                       0.0),
}


@pytest.mark.parametrize("name", sorted(DIFFERENTIABLE))
def test_gradients_against_finite_differences(name):
    x = data((3, 4)).requires_grad_()
    m = tg.tensor(GRAD_MASK)
    assert gradcheck(lambda t: DIFFERENTIABLE[name](t, m), (x,))


@pytest.mark.parametrize("name", sorted(DIFFERENTIABLE))
def test_masked_out_elements_get_zero_gradient(device, name):
    """Also where a whole row is masked out (its outputs nan or inf are left out of the
    loss): no gradient leaks into a masked-out element, not even nan."""
    x = data((3, 4), device).requires_grad_()
    m = tg.tensor(MASK, device=device)
    out = DIFFERENTIABLE[name](x, m)
    tg.where(tg.isfinite(out), out, 0.0).sum().backward()
    g = host(x.grad)
    assert (g[~MASK] == 0).all(), g  # (nan != 0)


def test_second_derivative_through_a_masked_softmax():
    x = data((2, 3)).requires_grad_()
    m = tg.tensor([[True, False, True], [True, True, False]])
    assert tg.autograd.gradgradcheck(lambda t: M.softmax(t, 1, mask=m), (x,))


# -- MaskedTensor: construction, printing -----------------------------------------------------

def test_construction_validates_like_pytorch():
    d, m = tg.ones(2, 3), tg.ones(2, 3, dtype=tg.bool)
    with pytest.raises(TypeError, match="data must be a Tensor"):
        masked_tensor([1.0], m)
    with pytest.raises(TypeError, match="mask must be a Tensor"):
        masked_tensor(d, [True])
    with pytest.raises(TypeError, match="mask must have dtype bool."):
        masked_tensor(d, tg.ones(2, 3))
    with pytest.raises(TypeError, match="is not supported in MaskedTensor."):
        masked_tensor(tg.ones(2, 3, dtype=tg.uint8), m)
    with pytest.raises(ValueError, match=r"data.dim\(\) must equal mask.dim\(\)"):
        masked_tensor(d, tg.ones(3, dtype=tg.bool))
    with pytest.raises(ValueError, match=r"data.size\(\) must equal mask.size\(\)"):
        masked_tensor(d, tg.ones(2, 2, dtype=tg.bool))
    with pytest.raises(TypeError, match="data must be a Tensor"):
        masked_tensor(masked_tensor(d, m), m)
    with pytest.warns(UserWarning, match="prototype stage"):
        masked_tensor(d, m)
    with pytest.warns(UserWarning, match="not recommended to create a MaskedTensor with a "
                                         "tensor that requires_grad"):
        masked_tensor(d.requires_grad_(), m)


def test_members_are_copies():
    d, m = tg.tensor([1.0, 2.0]), tg.tensor([True, False])
    mt = masked_tensor(d, m, requires_grad=True)
    d.add_(1)
    m.logical_not_()
    assert host(mt.get_data()).tolist() == [1.0, 2.0]
    assert host(mt.get_mask()).tolist() == [True, False]
    assert is_masked_tensor(mt) and not is_masked_tensor(d) and isinstance(mt, tg.Tensor)
    assert mt.is_leaf and mt.requires_grad and not mt.is_sparse
    assert mt.shape == (2,) and mt.dtype is tg.float32 and mt.dim() == 1 and len(mt) == 2
    assert type(mt.get_data()) is tg.Tensor


def test_printing_marks_masked_out_elements():
    mt = masked_tensor(tg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]),
                       tg.tensor([[True, False, True], [False, False, False]]))
    assert repr(mt) == ("MaskedTensor(\n  [\n    [  1.0000,       --,   3.0000],\n"
                        "    [      --,       --,       --]\n  ]\n)")
    assert str(mt) == repr(mt)
    assert repr(masked_tensor(tg.tensor([1, 2]), tg.tensor([True, False]))) == \
        "MaskedTensor(\n  [1,       --]\n)"
    assert repr(masked_tensor(tg.tensor(3), tg.tensor(False))) == "MaskedTensor(--, False)"
    assert repr(masked_tensor(tg.tensor(2.5), tg.tensor(True))) == \
        "MaskedTensor(  2.5000, True)"


def test_import_installs_no_dispatch_check():
    """Note [MaskedTensor and the dispatch check]: importing tritongrad.masked (in a fresh
    process) or running its reductions installs nothing; the first MaskedTensor made does."""
    import subprocess
    import sys
    code = ("import tritongrad as tg, tritongrad.masked as M\n"
            "from tritongrad.autograd import overrides\n"
            "M.sum(tg.ones(3), mask=tg.tensor([True, False, True]))\n"
            "print(overrides.active)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120, check=False)
    assert r.returncode == 0 and r.stdout.strip() == "False", r.stderr[-2000:]
    overrides.deactivate()
    M.sum(tg.ones(3), mask=tg.tensor([True, False, True]))
    assert not overrides.active
    mt = masked_tensor(tg.ones(1), tg.ones(1, dtype=tg.bool))
    assert overrides.active and type(mt + 1) is MaskedTensor


# -- MaskedTensor: ops ------------------------------------------------------------------------

def _mt(device="cpu", shape=(3, 4), requires_grad=False):
    d = data(shape, device)
    m = tg.tensor(MASK if shape == (3, 4) else _rng.random(shape) < 0.6, device=device)
    return masked_tensor(d, m, requires_grad=requires_grad), host(d), host(m)


def _check(mt, values, mask):
    assert type(mt) is MaskedTensor
    np.testing.assert_array_equal(host(mt.get_mask()), np.broadcast_to(mask, values.shape))
    got = host(mt.get_data())
    np.testing.assert_allclose(got[mask], np.asarray(values)[mask], rtol=1e-12)


def test_unary_ops_keep_the_mask(device):
    mt, d, m = _mt(device)
    _check(mt.exp(), np.exp(d), m)
    _check(tg.sin(mt), np.sin(d), m)
    _check(-mt, -d, m)
    _check(abs(mt), np.abs(d), m)
    _check(mt.clamp(-1, 1), np.clip(d, -1, 1), m)
    _check(tg.sqrt(mt.abs()), np.sqrt(np.abs(d)), m)
    out = mt.clone()
    assert out.tanh_() is out and type(out) is MaskedTensor
    _check(out, np.tanh(d), m)
    with pytest.raises(TypeError, match="unary ops do not support additional Tensor"):
        mt.clamp(tg.zeros(3, 4, device=device))


def test_binary_ops_need_equal_masks(device):
    a, da, m = _mt(device)
    b = masked_tensor(data((3, 4), device), tg.tensor(MASK, device=device))
    db = host(b.get_data())
    _check(a + b, da + db, m)
    _check(a * 2, da * 2, m)
    _check(2 - a, 2 - da, m)
    _check(a / b, da / db, m)
    _check(a ** 2, da ** 2, m)
    _check(tg.maximum(a, b), np.maximum(da, db), m)
    _check(a > b, da > db, m)
    plain = data((4,), device)
    _check(a + plain, da + host(plain), m)  # a plain tensor is taken as it is
    _check(plain * a, host(plain) * da, m)
    with pytest.raises(ValueError, match="Input masks must match. If you need support for "
                                         "this, please open an issue on Github."):
        a + masked_tensor(data((3, 4), device), tg.tensor(~MASK, device=device))
    with pytest.raises(ValueError, match="len\\(kwargs\\) must equal 0"):
        tg.add(a, b, alpha=2)
    c = a.clone()
    c += b
    assert type(c) is MaskedTensor
    _check(c, da + db, m)
    assert c.mul_(2) is c


def test_reductions_as_methods_and_functions(device):
    mt, d, m = _mt(device)
    total = mt.sum()
    assert type(total) is MaskedTensor and total.shape == ()
    assert total.get_mask().item() is True
    assert abs(total.get_data().item() - d[m].sum()) < 1e-12
    rows = tg.sum(mt, 1)
    np.testing.assert_array_equal(host(rows.get_mask()), m.any(1))
    _check(rows, reference("sum", d, m, 1), m.any(1))
    _check(mt.mean(1, keepdim=True), reference("mean", d, m, 1, True), m.any(1, keepdims=True))
    _check(mt.amax(0), reference("amax", d, m, 0), m.any(0))
    _check(tg.amin(mt, 1), reference("amin", d, m, 1), m.any(1))
    _check(mt.prod(1), reference("prod", d, m, 1), m.any(1))
    _check(mt.var(1), reference("var", d, m, 1), m.any(1))
    _check(tg.std(mt, 0), reference("std", d, m, 0), m.any(0))
    _check(mt.norm(), reference("norm", d, m), m.any())
    _check(mt.norm(2, 1), reference("norm", d, m, 1), m.any(1))
    _check(mt.argmax(1), np.argmax(np.where(m, d, -np.inf), 1).astype(float), m.any(1))
    _check(mt.argmin(), np.array(float(np.argmin(np.where(m, d, np.inf)))), m.any())
    flags = (mt > 0).all(1)
    _check(flags, np.where(m, d > 0, True).all(1), m.any(1))
    sm = mt.softmax(1)
    _check(sm, _softmax_ref(d, m, 1, "softmax"), m)
    _check(tg.nn.functional.log_softmax(mt, 1), _softmax_ref(d, m, 1, "log_softmax"), m)
    _check(tg.nn.functional.softmin(mt, dim=0), _softmax_ref(d, m, 0, "softmin"), m)
    # tritongrad.masked's functions take a MaskedTensor (its mask) and return a plain Tensor
    out = M.sum(mt, 1)
    assert type(out) is tg.Tensor
    close(out, reference("sum", d, m, 1))


def test_views_shape_ops_conversions_and_where(device):
    mt, d, m = _mt(device)
    _check(mt[0], d[0], m[0])
    _check(mt[:, 1:3], d[:, 1:3], m[:, 1:3])
    _check(mt.t(), d.T, m.T)
    _check(mt.transpose(0, 1), d.T, m.T)
    _check(mt.reshape(2, 6), d.reshape(2, 6), m.reshape(2, 6))
    _check(mt.unsqueeze(0), d[None], m[None])
    parts = mt.split(2)
    assert type(parts) is tuple and len(parts) == 2
    _check(parts[1], d[2:], m[2:])
    _check(tg.cat([mt, mt]), np.concatenate([d, d]), np.concatenate([m, m]))
    _check(tg.stack([mt, mt]), np.stack([d, d]), np.stack([m, m]))
    _check(mt.double(), d, m)
    f = mt.float()
    assert f.dtype is tg.float32 and f.get_mask().dtype is tg.bool
    _check(mt.to("cpu"), d, m)
    assert mt.to(mt.device) is mt
    assert mt.detach().requires_grad is False and type(mt.detach()) is MaskedTensor
    cond = tg.tensor(_rng.random((3, 4)) < 0.5, device=device)
    w = tg.where(cond, mt, 0.0)
    c = host(cond)
    _check(w, np.where(c, d, 0.0), np.where(c, m, True))
    np.testing.assert_array_equal(host(mt.to_tensor(-1.0)), np.where(m, d, -1.0))
    rows = list(mt)
    assert len(rows) == 3 and type(rows[0]) is MaskedTensor
    total = mt.sum()  # scalars convert as the data's item, as in PyTorch
    assert float(total) == pytest.approx(d[m].sum()) and bool(total) is True
    assert f"{mt}" == repr(mt)


def test_masked_tensor_op_errors_and_edge_cases():
    mt, d, m = _mt()
    with pytest.raises(TypeError, match="in-place op on a Tensor cannot take a MaskedTensor"):
        tg.zeros(3, 4, dtype=tg.float64).add_(mt)
    with pytest.raises(TypeError, match="condition must be a bool Tensor, not a MaskedTensor"):
        tg.where(mt > 0, mt, 0.0)
    with pytest.raises(ValueError, match="supports vector norms only"):
        mt.norm("nuc")
    with pytest.raises(TypeError, match="binary ops do not support Tensor arguments aside"):
        tg.Tensor.add(mt, mt, tg.ones(1))
    # a plain tensor in cat counts as all masked in
    plain = data((1, 4))
    _check(tg.cat([mt, plain]), np.concatenate([d, host(plain)]),
           np.concatenate([m, np.ones((1, 4), bool)]))
    # .grad takes a MaskedTensor or a Tensor, and can be deleted
    leaf = masked_tensor(tg.ones(3, 4, dtype=tg.float64), tg.tensor(MASK), requires_grad=True)
    leaf.grad = masked_tensor(tg.full((3, 4), 2.0, dtype=tg.float64), tg.tensor(MASK))
    assert type(leaf.grad) is MaskedTensor and host(leaf.grad.get_data()).max() == 2.0
    leaf.sum().backward()
    np.testing.assert_array_equal(host(leaf.grad.get_data())[MASK], 3.0)
    del leaf.grad
    assert leaf.grad is None


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_masked_tensor_reductions_property(draw):
    """A MaskedTensor's reduction: the masked reduction on its masked-in data, masked out
    where a slice had nothing; elementwise ops keep the mask."""
    ndim = draw.draw(st.integers(1, 3))
    shape = tuple(draw.draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim)))
    n = int(np.prod(shape))
    mask = np.array(draw.draw(st.lists(st.booleans(), min_size=n, max_size=n))).reshape(shape)
    dim = draw.draw(st.integers(-ndim, ndim - 1))
    keepdim = draw.draw(st.booleans())
    name = draw.draw(st.sampled_from(["sum", "mean", "amax", "amin", "prod", "var", "std"]))
    x = _rng.uniform(-2, 2, shape)
    mt = masked_tensor(tg.tensor(x), tg.tensor(mask))
    out = getattr(mt.exp(), name)(dim, keepdim=keepdim)
    _check(out, reference(name, np.exp(x), mask, dim, keepdim), mask.any(dim, keepdims=keepdim))


def test_an_op_without_a_handler_is_refused():
    mt, _, _ = _mt()
    with pytest.warns(UserWarning, match="is not implemented for MaskedTensor"):
        with pytest.raises(TypeError, match="Multiple dispatch failed"):
            mt.cumsum(0)


def test_pickle_and_deepcopy_keep_the_mask():
    mt, d, m = _mt()
    for c in (copy.deepcopy(mt), pickle.loads(pickle.dumps(mt))):
        assert type(c) is MaskedTensor
        _check(c, d, m)


# -- MaskedTensor: autograd -------------------------------------------------------------------

def test_gradients_are_masked_tensors(device):
    mt, d, m = _mt(device, requires_grad=True)
    (mt * mt).sum().backward()
    g = mt.grad
    assert type(g) is MaskedTensor and g is mt.grad
    _check(g, 2 * d, m)
    assert (host(g.get_data())[~m] == 0).all()  # masked-out elements get nothing


def test_gradients_through_unary_reductions_and_normalizations():
    mt, d, m = _mt(requires_grad=True)
    mt.exp().amax(1).sum().backward()
    expect = np.zeros_like(d)
    filled = np.where(m, d, -np.inf)
    for i in range(3):
        if m[i].any():
            j = np.argmax(filled[i])
            expect[i, j] = np.exp(d[i, j])
    np.testing.assert_allclose(host(mt.grad.get_data()), expect, rtol=1e-12)
    mt.grad = None
    w = _rng.uniform(-1, 1, (3, 4))
    (mt.softmax(1) * tg.tensor(w)).to_tensor(0.0).sum().backward()
    s = _softmax_ref(d, m, 1, "softmax")
    ds = s * (w - (s * w).sum(1, keepdims=True))
    np.testing.assert_allclose(host(mt.grad.get_data())[m], ds[m], rtol=1e-10)


def test_as_masked_tensor_keeps_the_history(device):
    x = data((3, 4), device).requires_grad_()
    mt = as_masked_tensor(x * 3, tg.tensor(MASK, device=device))
    assert not mt.is_leaf and mt.requires_grad
    mt.sum().backward()
    np.testing.assert_array_equal(host(x.grad), np.where(MASK, 3.0, 0.0))
    # to_tensor and get_data are differentiable too
    x.grad = None
    as_masked_tensor(x, tg.tensor(MASK, device=device)).to_tensor(0.0).pow(2).sum().backward()
    np.testing.assert_allclose(host(x.grad), np.where(MASK, 2 * host(x), 0.0))


def test_gradcheck_through_a_masked_tensor():
    m = tg.tensor(GRAD_MASK)

    def f(x):
        mt = as_masked_tensor(x, m)
        return (mt.sin() * mt).sum(1).get_data()

    assert gradcheck(f, (data((3, 4)).requires_grad_(),))


# -- torch comparison -------------------------------------------------------------------------

def _to_torch(torch, t):
    return torch.from_numpy(np.ascontiguousarray(host(t)))


TORCH_CASES = [(n, d) for n in ("sum", "prod", "amax", "amin", "mean", "logsumexp", "var",
                                "std", "norm", "median", "argmax", "argmin", "softmax",
                                "log_softmax", "softmin", "cumsum", "cumprod", "normalize")
               for d in (0, 1)]


@pytest.mark.parametrize("name,dim", TORCH_CASES)
def test_against_torch(name, dim):
    torch = pytest.importorskip("torch")
    x = data((3, 4)).requires_grad_()
    m = tg.tensor(MASK)
    tx = _to_torch(torch, x).requires_grad_()
    tm = _to_torch(torch, m)
    kw = {}
    if name in ("sum", "prod", "amax", "amin", "mean", "logsumexp", "var", "std", "norm",
                "median", "argmax", "argmin"):
        kw = {"keepdim": dim == 1}
    args = (2.0, dim) if name in ("norm", "normalize") else (dim,)
    ours = getattr(M, name)(x, *args, mask=m, **kw)
    theirs = getattr(torch.masked, name)(tx, *args, mask=tm, **kw)
    np.testing.assert_allclose(host(ours), theirs.detach().numpy(), rtol=1e-10, atol=1e-12,
                               equal_nan=True)
    if not ours.requires_grad:
        return
    w = np.where(np.isfinite(theirs.detach().numpy()), 1.0, 0.0) * _rng.uniform(
        0.5, 1.5, tuple(ours.shape))
    tg.where(tg.isfinite(ours), ours, 0.0).mul(tg.tensor(w)).sum().backward()
    torch.where(torch.isfinite(theirs), theirs, 0.0).mul(torch.from_numpy(w)).sum().backward()
    ok = np.isfinite(tx.grad.numpy())  # (torch's var/std give a fully masked row nan)
    np.testing.assert_allclose(host(x.grad)[ok], tx.grad.numpy()[ok], rtol=1e-9, atol=1e-12)


def test_mask_broadcasting_and_errors_against_torch():
    torch = pytest.importorskip("torch")
    x = data((2, 3, 4))
    row = np.array([True, False, True, True])
    for name in ("sum", "mean", "amax", "var"):
        ours = getattr(M, name)(x, (0, 2), mask=tg.tensor(row[None]))
        theirs = getattr(torch.masked, name)(_to_torch(torch, x), (0, 2),
                                             mask=torch.from_numpy(row[None]))
        np.testing.assert_allclose(host(ours), theirs.numpy(), rtol=1e-10)
    for bad, exc in ((dict(dim=5), IndexError), (dict(dim=(1, 1)), RuntimeError)):
        with pytest.raises(exc) as theirs:
            torch.masked.sum(_to_torch(torch, x), **bad)
        with pytest.raises(exc) as ours:
            M.sum(x, **bad)
        assert str(ours.value) == str(theirs.value)


def test_masked_tensor_against_torch():
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d = data((3, 4))
        td, tmask = _to_torch(torch, d), torch.from_numpy(MASK)
        mt = masked_tensor(d, tg.tensor(MASK), requires_grad=True)
        tmt = torch.masked.masked_tensor(td, tmask, requires_grad=True)
        for f in (lambda a: a.sum(), lambda a: a.sum(1), lambda a: a.amax(0),
                  lambda a: a.mean(1), lambda a: a.exp(), lambda a: a * a + 1,
                  lambda a: a.softmax(1), lambda a: a[1:]):
            ours, theirs = f(mt), f(tmt)
            assert repr(ours) == repr(theirs)
            om, tm_ = host(ours.get_mask()), theirs.get_mask().numpy()
            np.testing.assert_array_equal(om, tm_)
        (mt * mt).sum().backward()
        (tmt * tmt).sum().backward()
        assert repr(mt.grad) == repr(tmt.grad)
        with pytest.raises(ValueError) as ours_err:
            mt + masked_tensor(d, tg.tensor(~MASK))
        with pytest.raises(ValueError) as theirs_err:
            tmt + torch.masked.masked_tensor(td, ~tmask)
        assert str(ours_err.value) == str(theirs_err.value)
        assert repr(masked_tensor(tg.tensor([1, 2]), tg.tensor([True, False]))) == repr(
            torch.masked.masked_tensor(torch.tensor([1, 2]), torch.tensor([True, False])))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_docstring_examples_run():
    """The examples in the docstrings print what they say."""
    import doctest

    from tritongrad.masked.maskedtensor import core, creation
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(verbose=False)
    objects = [getattr(M, n) for n in M.__all__ if n != "MaskedTensor"] + [
        core.MaskedTensor, creation.masked_tensor]
    ran = 0
    for obj in objects:
        for test in finder.find(obj, globs={"tritongrad": tg}):
            ran += len(test.examples)
            runner.run(test)
    assert ran > 60
    assert runner.failures == 0, runner.summarize(verbose=False)
