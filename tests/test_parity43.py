"""Differences from PyTorch that a differential sweep found (session 43), each pinned to
PyTorch's behaviour as measured against torch 2.13, checked here against hand-computed values
(torch is not installed in CI)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import tritongrad as tg


@pytest.mark.parametrize("op, args", [
    ("addmv", lambda: (tg.ones(2, 3), tg.ones(3))),
    ("addr", lambda: (tg.ones(2), tg.ones(2))),
    ("addbmm", lambda: (tg.ones(2, 2, 3), tg.ones(2, 3, 2))),
    ("baddbmm", lambda: (tg.ones(2, 2, 3), tg.ones(2, 3, 2))),
])
def test_beta_zero_keeps_the_input_in_the_graph(op, args):
    """With beta=0 the input's values are ignored (a NaN does not propagate) but, requiring
    grad, it stays in the graph with a zero gradient, as PyTorch's node gives it."""
    a, b = args()
    shape = tuple(getattr(tg, op)(tg.zeros(1), a, b).shape)
    c = tg.full(shape, math.nan, requires_grad=True)
    y = getattr(tg, op)(c, a, b, beta=0)
    assert y.requires_grad and not np.isnan(y.detach().numpy()).any()
    y.sum().backward()
    np.testing.assert_array_equal(c.grad.numpy(), np.zeros(shape))


def test_logaddexp2_promotes_and_is_one_node():
    a = tg.tensor([1.0], dtype=tg.float16)
    assert tg.logaddexp2(a, tg.tensor([0])).dtype is tg.float16
    # float16 and float64 operands compute in float64: log2(2^-1 + 2^0)
    r = tg.logaddexp2(tg.tensor([-1.0], dtype=tg.float16), tg.tensor([0.0], dtype=tg.float64))
    assert r.dtype is tg.float64 and r.item() == pytest.approx(math.log2(1.5), rel=1e-14)
    inf = math.inf
    np.testing.assert_array_equal(
        tg.logaddexp2(tg.tensor([inf, -inf, 3.0]), tg.tensor([inf, -inf, 1e30])).numpy(),
        np.array([inf, -inf, 1e30], np.float32))
    x = tg.tensor([0.3, -2.0, 5.0], dtype=tg.float64, requires_grad=True)
    y = tg.tensor([1.0, 4.0, -1.0], dtype=tg.float64, requires_grad=True)
    out = tg.logaddexp2(x, y)
    assert out.grad_fn.name() == "Logaddexp2Backward0"
    xs, ys = x.detach().numpy(), y.detach().numpy()
    np.testing.assert_allclose(out.detach().numpy(), np.log2(2 ** xs + 2 ** ys), rtol=1e-14)
    assert tg.autograd.gradcheck(tg.logaddexp2, (x, y), check_forward_ad=True)
    assert tg.autograd.gradgradcheck(tg.logaddexp2, (x, y))
    with pytest.raises(NotImplementedError):
        tg.logaddexp2(tg.tensor([1]), tg.tensor([2]))


def test_lerp_casts_a_zero_dim_weight():
    w = tg.tensor(0.25, dtype=tg.float64, requires_grad=True)
    y = tg.lerp(tg.zeros(2), tg.full((2,), 4.0), w)
    assert y.dtype is tg.float32 and y.tolist() == [1.0, 1.0]
    y.sum().backward()
    assert w.grad.dtype is tg.float64 and w.grad.item() == 8.0
    with pytest.raises(RuntimeError, match="for `weight`"):  # (a 1-d weight is not cast)
        tg.lerp(tg.zeros(2), tg.ones(2), tg.tensor([0.5, 0.5], dtype=tg.float64))


def test_integer_logspace_and_arange_read_their_bounds_as_integers():
    assert tg.logspace(0.5, 2.5, 3, dtype=tg.int64).tolist() == [1, 10, 100]
    assert tg.logspace(0.5, 2.5, 3, base=2, dtype=tg.int64).tolist() == [1, 2, 4]
    assert tg.logspace(-1.5, 2.7, 4, dtype=tg.int32).tolist() == [0, 1, 10, 100]
    np.testing.assert_allclose(tg.logspace(0.5, 2.5, 3).numpy(), 10 ** np.array([0.5, 1.5, 2.5]),
                               rtol=1e-6)
    assert tg.arange(-3.65, 2.21, 1.6, dtype=tg.int64).tolist() == [-3, -2, -1, 0, 1]
    with pytest.raises(ValueError, match="step must be nonzero"):
        tg.arange(0, 5, 0.5, dtype=tg.int64)


def test_quantile_ranks_in_the_inputs_dtype():
    """float32 q * (n - 1) rounds in float32 first: 0.1 * 5 is 0.5 there (nearest: 0), where
    float64's 0.50000000745 goes to 1; 0.7 * 5 is 3.5 (nearest: 4, half to even)."""
    x = tg.arange(6.0)
    q = tg.tensor([0.1, 0.7])
    assert tg.quantile(x, q, interpolation="nearest").tolist() == [0.0, 4.0]
    assert tg.quantile(x, 0.1, interpolation="nearest").item() == 0.0
    # linear and midpoint are PyTorch's lerp between the neighbours (its rounding for w >= 0.5)
    vals = np.float32([0.25, 1.0, 7.5])
    lo, hi = np.float32(1.0), np.float32(7.5)
    got = tg.quantile(tg.tensor(vals), 0.75, interpolation="midpoint").item()
    assert got == float(hi - (hi - lo) * np.float32(0.5))


def test_round_with_decimals_refuses_integers():
    with pytest.raises(NotImplementedError, match="round_cpu"):
        tg.round(tg.tensor([15, 25]), decimals=-1)
    assert tg.round(tg.tensor([15, 25])).tolist() == [15, 25]  # (without decimals: a copy)


def test_clamp_complex_bounds():
    x = tg.tensor([1.0, 2.0])
    assert tg.clamp(x, 1.5 + 0j).tolist() == [1.5, 2.0]  # read as a real number
    assert tg.clamp(x, 1.5 + 0j).dtype is tg.float32
    with pytest.raises(RuntimeError, match="cannot be converted"):
        tg.clamp(x, 1.5 + 2j)
    with pytest.raises(NotImplementedError):
        tg.clamp(x, tg.tensor(1 + 0j))


def test_where_takes_a_uint8_condition_with_a_warning():
    cond = tg.tensor([1, 0, 7], dtype=tg.uint8)
    with pytest.warns(UserWarning, match="uint8 condition tensor"):
        assert tg.where(cond, 1.0, 2.0).tolist() == [1.0, 2.0, 1.0]
    with pytest.raises(RuntimeError, match="boolean tensor"):
        tg.where(tg.tensor([1, 0]), 1.0, 2.0)


def test_amax_of_an_empty_tensor_with_dim_none():
    for op in (tg.amax, tg.amin):
        with pytest.raises(RuntimeError, match="Expected reduction dim to be specified"):
            op(tg.zeros(0, 4), dim=None)
    assert tg.amax(tg.ones(2, 3), dim=None).item() == 1.0


def test_make_dual_casts_a_tangent_of_another_floating_dtype():
    fw = tg.autograd.forward_ad
    with fw.dual_level():
        d = fw.make_dual(tg.ones(3, dtype=tg.float64), tg.full((3,), 2.0, dtype=tg.float32))
        t = fw.unpack_dual(d * 3).tangent
        assert t.dtype is tg.float64 and t.tolist() == [6.0, 6.0, 6.0]


def test_extra_gradients_are_ignored_too_few_refused():
    x = tg.ones(3, requires_grad=True)
    tg.autograd.backward([x.sum()], grad_tensors=[tg.tensor(2.0), tg.tensor(5.0)])
    assert x.grad.tolist() == [2.0, 2.0, 2.0]
    g, = tg.autograd.grad([x.sum()], [x], grad_outputs=[tg.tensor(3.0), tg.tensor(5.0)])
    assert g.tolist() == [3.0, 3.0, 3.0]
    with pytest.raises(RuntimeError, match="got 2 tensors and 1 gradients"):
        tg.autograd.grad([x.sum(), x.sum()], [x], grad_outputs=[tg.tensor(1.0)])


def test_no_warning_escapes_these_paths():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tg.lerp(tg.zeros(2), tg.ones(2), tg.tensor(0.5, dtype=tg.float64))
        tg.quantile(tg.arange(6.0), tg.tensor([0.1, 0.7]))


def test_node_names_as_pytorch_records_them():
    x = tg.ones(3, 4, requires_grad=True)
    y = x * 1
    assert x.expand_as(x).grad_fn.name() == "ExpandBackward0"  # (also for the same shape)
    assert y.narrow(0, 0, 3).grad_fn.name() == "SliceBackward0"  # (a whole-dim narrow too)
    assert y.narrow(0, 0, 3).grad_fn._saved_end == 3
    assert x[:, 0:4].grad_fn.name() == "AliasBackward0"  # (where indexing skips the slice)
    assert x.nan_to_num().grad_fn.name() == "NanToNumBackward0"
    assert tg.fill(y, 2.0).grad_fn.name() == "FillBackward0"
    assert tg.fill(y, tg.tensor(2.0)).grad_fn.name() == "FillBackward1"
    assert y.clone().fill_(2.0).grad_fn.name() == "FillBackward2"
    assert y.clone().fill_(tg.tensor(2.0)).grad_fn.name() == "FillBackward3"
    z = y.clone()
    z[z > 0] = 0.0
    assert z.grad_fn.name() == "IndexPutBackward0" and len(z.grad_fn.next_functions) == 2
    z.sum().backward()
    assert x.grad.abs().sum().item() == 0.0


def test_nan_to_num_node():
    inf = math.inf
    x = tg.tensor([math.nan, inf, -inf, 2.0], dtype=tg.float64, requires_grad=True)
    y = tg.nan_to_num(x, posinf=5.0)
    assert y.tolist() == [0.0, 5.0, -np.finfo(np.float64).max, 2.0]
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0, 1.0]
    assert tg.nan_to_num(tg.tensor([inf], dtype=tg.float16)).item() == 65504.0


def test_multi_margin_loss_of_a_vector_keeps_the_targets_shape():
    F = tg.nn.functional
    x = tg.tensor([0.1, 0.5, -0.3, 0.2])
    # margin 1 - x[3] + x[i] for i != 3: 0.9, 1.3, 0.5; their mean over C = 4 classes
    one = F.multi_margin_loss(x, tg.tensor([3]), reduction="none")
    assert tuple(one.shape) == (1,) and one.item() == pytest.approx(2.7 / 4)
    assert tuple(F.multi_margin_loss(x, tg.tensor(3), reduction="none").shape) == ()


@pytest.mark.parametrize("dtype", [tg.float32, tg.bfloat16, tg.int64, tg.bool, tg.complex64])
def test_tensor_of_a_tensor_copies(dtype):
    a = tg.tensor([1, 0], dtype=dtype)
    with pytest.warns(UserWarning, match="To copy construct"):
        b = tg.tensor(a)
    with pytest.warns(UserWarning, match="To copy construct"):
        c = a.new_tensor(a)
    b[0] = 0
    c[0] = 0
    assert a.tolist()[0] == 1 and b.data_ptr() != a.data_ptr() != c.data_ptr()


def test_partial_overlap_in_place_refused():
    a = tg.arange(6.0)
    for write in (lambda: a[1:].copy_(a[:-1]), lambda: a[1:].add_(a[:-1])):
        with pytest.raises(RuntimeError, match="refer to a single memory location"):
            write()
    assert a.tolist() == [0, 1, 2, 3, 4, 5]
    a.add_(a)                # the same view: fine
    a[:3].add_(a[3:])        # no overlap: fine
    a[::2].mul_(a[1::2])     # interleaved (PyTorch's "too hard" case): allowed
    assert a.tolist() == [60.0, 10.0, 84.0, 6.0, 80.0, 10.0]


def test_results_that_were_their_input():
    b = tg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    p = tg.linalg.matrix_power(b, 1)
    assert p is not b and p.grad_fn.name() == "CloneBackward0"
    p.detach().add_(100)
    assert b[0, 0].item() == 1.0
    x = tg.tensor([1 + 0j, 2 + 0j])
    y = tg.fft.fftn(x, dim=())
    y.mul_(10)
    assert x.tolist() == [1 + 0j, 2 + 0j] and y.tolist() == [10 + 0j, 20 + 0j]


def test_fftfreq_with_zero_spacing():
    np.testing.assert_array_equal(tg.fft.fftfreq(4, 0.0, dtype=tg.float64).numpy(),
                                  [math.nan, math.inf, -math.inf, -math.inf])
    np.testing.assert_allclose(tg.fft.fftfreq(5, 0.5, dtype=tg.float64).numpy(),
                               [0, 0.4, 0.8, -0.8, -0.4], rtol=1e-15)


def test_bernoulli_of_probabilities_that_require_grad():
    p = tg.full((3,), 0.5, requires_grad=True)
    y = tg.bernoulli(p)
    assert y.grad_fn.name() == "BernoulliBackward0" and set(y.tolist()) <= {0.0, 1.0}
    y.sum().backward()
    assert p.grad.tolist() == [0.0, 0.0, 0.0]
    assert not tg.bernoulli(p.detach()).requires_grad


def test_ldl_factor_results_are_named():
    pytest.importorskip("scipy")
    a = tg.tensor([[4.0, 2.0], [2.0, 3.0]], dtype=tg.float64)
    r = tg.linalg.ldl_factor_ex(a)
    assert type(r).__name__ == "linalg_ldl_factor_ex" and r.info.item() == 0
    np.testing.assert_allclose(r.LD.numpy(), [[4.0, 0.0], [0.5, 2.0]])
    assert r.pivots.tolist() == [1, 2]
    f = tg.linalg.ldl_factor(a)
    assert type(f).__name__ == "linalg_ldl_factor" and f.pivots.tolist() == [1, 2]
    x = tg.linalg.ldl_solve(f.LD, f.pivots, tg.tensor([[1.0], [2.0]], dtype=tg.float64))
    np.testing.assert_allclose((a @ x).numpy(), [[1.0], [2.0]], rtol=1e-12)
