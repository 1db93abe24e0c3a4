"""Bad input and edge cases found by calling every public function with the same inputs under
PyTorch and tritongrad (session 24): each case here failed before its fix, with an error from
deep inside (an AttributeError, a NumPy ValueError), an error naming another op, or a result
PyTorch does not give. Values against NumPy references."""

import warnings

import numpy as np
import pytest

import tritongrad as tg
from tritongrad import nn
from tritongrad.nn import functional as F

RNG = np.random.default_rng(24)


def _x(*shape):
    return tg.tensor(RNG.standard_normal(shape).astype(np.float32))


# -- arguments that are no tensors: a TypeError naming the op and the argument ----------------

@pytest.mark.parametrize("op", ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
                                "binary_cross_entropy", "binary_cross_entropy_with_logits",
                                "kl_div", "cross_entropy", "nll_loss", "poisson_nll_loss",
                                "multi_margin_loss"])
@pytest.mark.parametrize("target", [3, None, "a", (1, 2)])
def test_loss_target_must_be_a_tensor(op, target):
    with pytest.raises(TypeError, match=rf"{op}\(\): argument 'target' (\(position 2\) )?must be Tensor, not "
                                        rf"{type(target).__name__}"):
        getattr(F, op)(_x(2, 3).sigmoid(), target)


def test_gaussian_nll_loss_input_must_be_a_tensor():
    with pytest.raises(TypeError, match=r"gaussian_nll_loss\(\): argument 'input' must be "
                                        r"Tensor, not list"):
        F.gaussian_nll_loss([1.0], _x(2), _x(2).exp())


@pytest.mark.parametrize("call, op, arg", [
    (lambda x: F.linear(x, 3), "linear", "weight"),
    (lambda x: F.conv1d(x.reshape(1, 2, 3), None), "conv1d", "weight"),
    (lambda x: F.conv2d(x.reshape(1, 1, 2, 3), "w"), "conv2d", "weight"),
    (lambda x: F.conv_transpose1d(x.reshape(1, 2, 3), 2.0), "conv_transpose1d", "weight"),
    (lambda x: F.grid_sample(x.reshape(1, 1, 2, 3), 1), "grid_sampler", "grid"),
    (lambda x: F.embedding_bag(3, x), "embedding_bag", "input"),
    (lambda x: x.expand_as(3), "expand_as", "other"),
    (lambda x: x.type_as("float"), "type_as", "other"),
    (lambda x: x.copy_("abc"), "copy_", "other"),  # (torch 2.13 names it other)
    (lambda x: F.normalize([1.0, 2.0]), "normalize", "input"),
    (lambda x: F.group_norm([1.0], 1), "group_norm", "input"),
    (lambda x: F.scaled_dot_product_attention(x, 3, x), "scaled_dot_product_attention", "key"),
    (lambda x: F.batch_norm(x, tg.zeros(3), 1), "batch_norm", "running_var"),
    (lambda x: tg.masked_scatter(x, 1, x), "masked_scatter", "mask"),
    (lambda x: tg.addbmm(tg.zeros(3, 3), 1, x), "addbmm", "batch1"),
])
def test_weights_and_others_must_be_tensors(call, op, arg):
    with pytest.raises(TypeError,
                       match=rf"{op}\(\): argument '{arg}' (\(position \d\) )?must be Tensor"):
        call(_x(2, 3))


def test_sequences_of_tensors():
    with pytest.raises(TypeError, match=r"expected Tensor as element 1 in argument 0, but got "
                                        r"int"):
        tg.broadcast_tensors(_x(2), 3)
    for op in ("hstack", "vstack", "dstack", "column_stack", "row_stack"):
        # a tensor is no sequence of tensors here (PyTorch refuses it; it was taken row-wise)
        with pytest.raises(TypeError, match=rf"{op}\(\): argument 'tensors' \(position 1\) "
                                            rf"must be tuple of Tensors, not Tensor"):
            getattr(tg, op)(_x(2, 3))
    assert tg.hstack([_x(2), _x(3)]).shape == (5,)
    with pytest.raises(TypeError, match=r"can_cast\(\): argument 'from_' must be "
                                        r"tritongrad.dtype, not Tensor"):
        tg.can_cast(_x(2), tg.float32)
    assert tg.can_cast(tg.int64, tg.float32) and not tg.can_cast(tg.float32, tg.int64)


def test_scalar_and_size_arguments():
    x = _x(2, 3)
    with pytest.raises(TypeError, match=r"full_like\(\): argument 'fill_value' must be Number, "
                                        r"not Tensor"):
        tg.full_like(x, _x(3, 4))
    with pytest.raises(TypeError, match=r"full\(\): argument 'fill_value' must be Number, not "
                                        r"str"):
        tg.full((2,), "a")
    np.testing.assert_array_equal(tg.full((2,), tg.tensor(3.0)).numpy(), [3.0, 3.0])
    np.testing.assert_array_equal(tg.full((2,), np.bool_(True)).numpy(), [True, True])
    with pytest.raises(TypeError, match=r"isin\(\) received an invalid combination of "
                                        r"arguments - got \(Tensor, str\)"):
        tg.isin(x, "abc")
    with pytest.raises(TypeError, match=r"rot90\(\): argument 'k' \(position 2\) must be int, "
                                        r"not float"):
        tg.rot90(x, 1.5)
    with pytest.raises(TypeError, match=r"group_norm\(\): argument 'num_groups' \(position 2\) "
                                        r"must be int, not float"):
        F.group_norm(_x(2, 6), 2.0)
    with pytest.raises(RuntimeError, match="group_norm: num_groups must be positive, but got 0"):
        F.group_norm(_x(2, 6), 0)
    np.testing.assert_allclose(F.group_norm(_x(2, 6), tg.tensor(3)).shape, (2, 6))
    np.testing.assert_array_equal(tg.tensor(1.5).broadcast_to(3).numpy(), [1.5] * 3)
    with pytest.raises(TypeError, match=r"resize_as\(\): argument 'the_template' must be "
                                        r"Tensor"):
        x.resize_as(3)


# -- dims out of range: the error names the op called ----------------------------------------

@pytest.mark.parametrize("op, call", [
    ("any", lambda x: tg.any(x, 5)), ("all", lambda x: x.all((0, 3))),
    ("nansum", lambda x: tg.nansum(x, 4)), ("nanmean", lambda x: tg.nanmean(x, -3)),
    ("count_nonzero", lambda x: tg.count_nonzero(x, 2)),
    ("argsort", lambda x: tg.argsort(x, 3)), ("argsort", lambda x: x.argsort(dim=-4)),
    ("softmin", lambda x: F.softmin(x, 2)), ("normalize", lambda x: F.normalize(x, dim=2)),
    ("frobenius_norm", lambda x: tg.frobenius_norm(x, (0, 3))),
    ("slice_copy", lambda x: tg.slice_copy(x, 5)),
    ("flatten", lambda x: tg.flatten(x[0, 0], 1)), ("unbind", lambda x: tg.unbind(x[0, 0], 1)),
])
def test_dim_errors_name_the_op(op, call):
    with pytest.raises(IndexError, match=rf"^{op}: dimension out of range"):
        call(_x(2, 3))


def test_nuclear_norm_dims_are_checked_not_wrapped():
    x = _x(2, 3, 4)
    # dim 3 of a 3-d tensor was taken modulo ndim (as dim 0): a result for a wrong dim
    with pytest.raises(IndexError, match="nuclear_norm: dimension out of range"):
        tg.nuclear_norm(x, (3, 2))
    ref = np.linalg.svd(np.moveaxis(x.numpy(), (2, 0), (-2, -1)), compute_uv=False).sum(-1)
    r = tg.nuclear_norm(x, (-1, 0), keepdim=True)
    assert r.shape == (1, 3, 1)
    np.testing.assert_allclose(r.numpy().reshape(-1), ref, rtol=1e-5)


def test_zero_dim_inputs():
    s = tg.tensor(0.5)
    with pytest.raises(IndexError, match="slice_copy: slice\\(\\) cannot be applied to a 0-dim"):
        tg.slice_copy(s)
    with pytest.raises(IndexError, match="unbind: Dimension specified as 0 but tensor has no"):
        s.unbind()
    assert tg.flatten(s, 0, -1).shape == (1,)
    for op in ("svd_lowrank", "pca_lowrank"):
        with pytest.raises(RuntimeError, match=rf"{op}: The input tensor A must have at least 2"):
            getattr(tg, op)(s)
    with pytest.raises(RuntimeError, match="ldl_factor_ex: The input tensor A must have at least"):
        tg.linalg.ldl_factor(s)
    with pytest.raises(IndexError, match="multilabel_soft_margin_loss: Dimension specified as"):
        F.multilabel_soft_margin_loss(s, s)
    sp = tg.tensor(0.7).to_sparse()
    assert sp.shape == () and sp._nnz() == 1 and sp.to_dense().item() == pytest.approx(0.7)
    assert tg.tensor(0.0).to_sparse()._nnz() == 0


def test_dropout_of_a_zero_dim_tensor():
    tg.manual_seed(0)
    # the 0-d keep mask came back from NumPy as a scalar, which the tensor took for its device
    got = {round(F.dropout(tg.tensor(0.7), 0.5).item(), 5) for _ in range(40)}
    assert got == {0.0, 1.4}


# -- values -------------------------------------------------------------------------------------

def _cosine(a, b, dim):
    a, b = np.broadcast_arrays(a.astype(np.float64), b.astype(np.float64))
    na = np.maximum(np.linalg.norm(a, axis=dim, keepdims=True), 1e-8)
    nb = np.maximum(np.linalg.norm(b, axis=dim, keepdims=True), 1e-8)
    return (a / na * b / nb).sum(dim)


def test_cosine_similarity_broadcasts_and_promotes():
    a = RNG.standard_normal((2, 3)).astype(np.float32)
    b = RNG.standard_normal(3).astype(np.float32)
    i = np.array([1, -2, 3])
    x = tg.tensor(a, requires_grad=True)
    r = F.cosine_similarity(x, tg.tensor(b))
    np.testing.assert_allclose(r.detach().numpy(), _cosine(a, b, 1), rtol=1e-5)
    r.sum().backward()
    eps = 1e-3  # central differences of the reference
    num = np.zeros_like(a, np.float64)
    for idx in np.ndindex(a.shape):
        d = np.zeros_like(a, np.float64)
        d[idx] = eps
        num[idx] = (_cosine(a + d, b, 1).sum() - _cosine(a - d, b, 1).sum()) / (2 * eps)
    np.testing.assert_allclose(x.grad.numpy(), num, rtol=1e-3, atol=1e-4)
    r = F.cosine_similarity(tg.tensor(a), tg.tensor(i))  # an integer operand joins the float
    assert r.dtype is tg.float32
    np.testing.assert_allclose(r.numpy(), _cosine(a, i, 1), rtol=1e-5)
    with pytest.raises(RuntimeError, match="expected common dtype to be floating point, yet "
                                           "common dtype is Long"):
        F.cosine_similarity(tg.tensor(i), tg.tensor(i), dim=0)


@pytest.mark.parametrize("p", [0, -1.5, None, 1, 3, float("inf")])
def test_normalize_any_p(p):
    a = RNG.standard_normal((3, 4)).astype(np.float32)
    a[0, 1] = 0.0
    q = 2.0 if p is None else p
    if q == 0:
        norm = (a != 0).sum(1, keepdims=True).astype(np.float64)
    elif np.isinf(q):
        norm = np.abs(a).max(1, keepdims=True)
    else:
        with np.errstate(divide="ignore"):
            norm = (np.abs(a.astype(np.float64)) ** q).sum(1, keepdims=True) ** (1 / q)
    np.testing.assert_allclose(F.normalize(tg.tensor(a), p).numpy(),
                               a / np.maximum(norm, 1e-12), rtol=1e-5)
    assert F.normalize(tg.zeros(0, 3), 0.0, 0).shape == (0, 3)


def test_hypot_promotes_an_integer_operand():
    a = RNG.standard_normal((2, 3)).astype(np.float32)
    i = np.arange(6).reshape(2, 3)
    r = tg.hypot(tg.tensor(a), tg.tensor(i))
    assert r.dtype is tg.float32
    np.testing.assert_allclose(r.numpy(), np.hypot(a, i), rtol=1e-6)
    with pytest.raises(NotImplementedError, match="\"hypot_cpu\" not implemented for 'Long'"):
        tg.hypot(tg.tensor(i), tg.tensor(i))


def test_nan_to_num_takes_none_for_nan():
    r = tg.nan_to_num(tg.tensor([float("nan"), float("inf"), 2.0]), None, 5.0)
    np.testing.assert_array_equal(r.numpy(), [0.0, 5.0, 2.0])


def test_hardtanh_and_relu6_keep_integer_dtypes():
    r = F.hardtanh(tg.tensor([-3, 0, 3]))
    assert r.dtype is tg.int64
    np.testing.assert_array_equal(r.numpy(), [-1, 0, 1])
    np.testing.assert_array_equal(F.relu6(tg.tensor([-3, 2, 8])).numpy(), [0, 2, 6])


def test_pinv_rcond_and_per_matrix_tolerances():
    a = RNG.standard_normal((2, 3, 3))
    s = np.linalg.svd(a, compute_uv=False)

    def ref(cut):  # pinv over the singular values above each matrix's cut
        u, sv, vh = np.linalg.svd(a)
        inv = np.where(sv > cut[:, None], 1 / sv, 0.0)
        return np.einsum("bji,bj,bkj->bik", vh, inv, u)

    A = tg.tensor(a)
    atol = np.array([s[0, 1] + 1e-3, 0.0])
    np.testing.assert_allclose(tg.linalg.pinv(A, atol=tg.tensor(atol)).numpy(), ref(atol),
                               atol=1e-10)
    rtol = np.array([0.9, 0.0])
    np.testing.assert_allclose(tg.linalg.pinv(A, rtol=tg.tensor(rtol)).numpy(),
                               ref(rtol * s[:, 0]), atol=1e-10)
    np.testing.assert_allclose(tg.linalg.pinv(A, 0.9).numpy(), ref(0.9 * s[:, 0]), atol=1e-10)
    with pytest.raises(RuntimeError, match="rcond cannot be given together with atol or rtol"):
        tg.linalg.pinv(A, 0.9, rtol=0.1)


def test_empty_matrices():
    LU, piv = tg.linalg.lu_factor(tg.zeros(0, 3))
    assert LU.shape == (0, 3) and piv.shape == (0,) and piv.dtype is tg.int32
    assert tg.linalg.lu_factor(tg.zeros(2, 0, 3))[1].shape == (2, 0)
    P, L, U = tg.linalg.lu(tg.zeros(0, 3))
    assert (P.shape, L.shape, U.shape) == ((0, 0), (0, 0), (0, 3))
    np.testing.assert_array_equal(tg.linalg.cond(tg.zeros(2, 0, 0)).numpy(), [0.0, 0.0])


def test_lu_unpack_checks_its_pivots():
    LU, piv = tg.linalg.lu_factor(_x(3, 3))
    with pytest.raises(RuntimeError, match="pivots passed to lu_unpack must be between 1 and"):
        tg.lu_unpack(LU, tg.tensor([0, 5, 1], dtype=tg.int32))
    with pytest.raises(RuntimeError, match="LU_pivots is expected to be a tensor of int32"):
        tg.lu_unpack(LU, piv.long())
    with pytest.raises(RuntimeError, match="LU_data must have at least 2 dimensions"):
        tg.lu_unpack(_x(3), piv)


def test_empty_outputs_and_inputs():
    assert F.adaptive_max_pool1d(tg.zeros(2, 3), 0).shape == (2, 0)
    v, i = F.adaptive_max_pool2d(tg.zeros(1, 2, 3), (0, 2), return_indices=True)
    assert v.shape == i.shape == (1, 0, 2)
    # the pooling itself, unchanged: windows [0, 2), [1, 3), [3, 5), [4, 6) of 0..5
    np.testing.assert_array_equal(
        F.adaptive_max_pool1d(tg.arange(6.0).reshape(1, 6), 4).numpy(), [[1.0, 2.0, 4.0, 5.0]])
    # (an empty tensor has no two elements at one address: no "internal overlap" refusal)
    assert F.gumbel_softmax(tg.zeros(0, 3)).shape == (0, 3)
    assert F.gumbel_softmax(tg.zeros(0, 3), hard=True).shape == (0, 3)


def test_embedding_takes_integer_indices_only():
    w = _x(5, 3)
    for dt in (tg.bool, tg.uint8, tg.int16, tg.float32):
        with pytest.raises(RuntimeError, match="'indices' to have one of the following scalar "
                                               "types: Long, Int"):
            F.embedding(tg.tensor([1, 0]).to(dt), w)
    np.testing.assert_array_equal(F.embedding(tg.tensor([4, 0], dtype=tg.int32), w).numpy(),
                                  w.numpy()[[4, 0]])


def test_feature_alpha_dropout():
    tg.manual_seed(0)
    x = tg.ones(6, 8, 5)
    y = tg.feature_alpha_dropout(x, 0.5, True).numpy()
    assert (y.min(-1) == y.max(-1)).all()  # one draw per (dim 0, dim 1) entry
    assert len(np.unique(y)) == 2
    assert tg.feature_alpha_dropout(x, 0.5, False) is x
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions"):
        tg.feature_alpha_dropout(tg.ones(3), 0.5, True)


def test_dropout2d_unbatched_three_d_input_is_n_c_l():
    tg.manual_seed(1)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        y = nn.Dropout2d(0.5)(tg.ones(6, 7, 50)).numpy()
    assert any("interpreted as shape (N, C, L)" in str(w.message) for w in seen)
    assert (y.min(-1) == y.max(-1)).all() and len(np.unique(y[:, :, 0])) == 2
    assert not (y[:, :, 0].min(0) == y[:, :, 0].max(0)).all()  # draws differ along dim 0 too


# -- sizes and module arguments ---------------------------------------------------------------

def test_sizes_are_integers():
    assert tg.zeros(tg.tensor(3)).shape == (3,)  # an integer 0-d tensor is one size
    assert tg.zeros([tg.tensor(2), np.int64(3)]).shape == (2, 3)
    # a float size was truncated (3.5 -> 3); a float 0-d tensor was taken as no size at all
    for call in (lambda: tg.zeros(3.5), lambda: tg.ones(2, 3.0), lambda: tg.empty(tg.tensor(1.0)),
                 lambda: tg.randn((2, 1.5)), lambda: nn.Linear(3.5, 2),
                 lambda: nn.Embedding(4.0, 2)):
        with pytest.raises(TypeError, match="size must be a sequence of ints"):
            call()


def test_module_arguments():
    for cls in (nn.RNN, nn.LSTM, nn.GRU):
        with pytest.raises(ValueError, match="input_size must be greater than zero"):
            cls(0, 2)
        with pytest.raises(TypeError, match="input_size should be of type int, got: float"):
            cls(3.5, 2)
    with pytest.raises(ValueError, match="GroupNorm: num_groups must be positive, but got 0"):
        nn.GroupNorm(0, 3)
    m = nn.PReLU(3, -2)  # an integer init makes a float weight
    assert m.weight.dtype is tg.float32 and m.weight.requires_grad
    np.testing.assert_array_equal(m.weight.detach().numpy(), [-2.0] * 3)


# -- complex inputs to real-only ops ---------------------------------------------------------

_C = np.array([[0.5 + 1j, -1.5 - 0.5j]], np.complex64)


@pytest.mark.parametrize("call, error, message", [
    (lambda c: tg.max(c), NotImplementedError, "\"max_all\" not implemented for 'ComplexFloat'"),
    (lambda c: c.min(1), RuntimeError, "min\\(\\): does not support complex input"),
    (lambda c: c.amax(), NotImplementedError, "\"max_values_cpu\" not implemented"),
    (lambda c: tg.amin(c, 0), NotImplementedError, "\"min_values_cpu\" not implemented"),
    (lambda c: c.argmax(), RuntimeError, "argmax\\(\\): does not support complex input"),
    (lambda c: tg.argmin(c, 1), RuntimeError, "argmin\\(\\): does not support complex input"),
    (lambda c: tg.sort(c), RuntimeError, "Sort does not support complex dtypes on CPU"),
    (lambda c: c.argsort(), RuntimeError, "Sort does not support complex dtypes on CPU"),
    (lambda c: tg.topk(c, 1), RuntimeError, "topk does not support complex dtypes on CPU"),
    (lambda c: tg.kthvalue(c, 1), NotImplementedError, "\"kthvalue_cpu\" not implemented"),
    (lambda c: tg.maximum(c, c), RuntimeError, "maximum not implemented for complex tensors"),
    (lambda c: tg.minimum(c, c), RuntimeError, "minimum not implemented for complex tensors"),
    (lambda c: c.clamp(min=0), NotImplementedError, "clamp is not supported for complex types"),
    (lambda c: tg.cummax(c, 1), NotImplementedError, "\"cummax_cpu\" not implemented"),
    (lambda c: tg.unique(c), NotImplementedError, "\"unique\" not implemented"),
])
def test_ordering_ops_refuse_complex(call, error, message):
    # NumPy orders complex numbers lexicographically: these gave an answer PyTorch refuses
    # (with the exception type and message torch 2.13 raises for each)
    with pytest.raises(error, match=message):
        call(tg.tensor(_C))


@pytest.mark.parametrize("op, message", [
    ("floor", "floor is not supported for complex inputs"),
    ("ceil_", "ceil is not supported for complex inputs"),
    ("trunc", "trunc is not supported for complex inputs"),
    ("round", "round is not supported for complex inputs"),
    ("sign", "torch.sign is not intended to support complex numbers"),
    ("relu", "relu\\(\\): does not support complex input"),
    ("lgamma", "\"lgamma\" not implemented for 'ComplexFloat'"),
    ("digamma", "\"digamma\" not implemented for 'ComplexFloat'"),
    ("erf", "\"erf\" not implemented for 'ComplexFloat'"),
])
def test_real_functions_refuse_complex(op, message):
    # the rounding ops and lgamma/digamma failed inside NumPy ("ufunc 'floor' not supported")
    with pytest.raises(NotImplementedError, match=message):
        getattr(tg, op)(tg.tensor(_C))


def test_complex_ops_that_stay():
    c = tg.tensor(_C)
    np.testing.assert_allclose(tg.sinc(c).numpy(), np.sinc(_C), rtol=1e-5)
    np.testing.assert_allclose(tg.sgn(c).numpy(), _C / np.abs(_C), rtol=1e-6)
    np.testing.assert_allclose(c.abs().max().item(), np.abs(_C).max(), rtol=1e-6)
    np.testing.assert_array_equal(tg.round(tg.tensor([2.5, -0.4])).numpy(), [2.0, -0.0])


@pytest.mark.parametrize("op, call", [
    ("sum", lambda: tg.sum(3)), ("mean", lambda: tg.mean(2.0)), ("max", lambda: tg.max(3)),
    ("amax", lambda: tg.amax([1, 2])), ("argmax", lambda: tg.argmax(3)),
    ("sort", lambda: tg.sort(3)), ("cummax", lambda: tg.cummax(3, 0)),
    ("clamp", lambda: tg.clamp(3, 0)), ("zeros_like", lambda: tg.zeros_like(3)),
    ("ceil_", lambda: tg.ceil_(3)), ("nansum", lambda: tg.nansum(3)),
    ("relu_", lambda: F.relu_(3)),
])
def test_inputs_must_be_tensors(op, call):
    # these failed inside with "'int' object has no attribute ..."
    with pytest.raises(TypeError, match=rf"{op}\(\): argument 'input' (\(position 1\) )?must be Tensor"):
        call()


def test_complex_reciprocal_and_variance():
    # reciprocal cast a complex input to float (its imaginary part dropped); var and std of a
    # complex tensor squared x - mean instead of its modulus, and were complex
    c = tg.tensor(np.array([[0.5 + 1j, -1.5 - 0.5j, 2 + 0j]], np.complex64), requires_grad=True)
    z = c.detach().numpy().astype(np.complex128)
    np.testing.assert_allclose(tg.reciprocal(c).detach().numpy(), 1 / z, rtol=1e-6)
    d = c.detach().clone()
    d.reciprocal_()
    np.testing.assert_allclose(d.numpy(), 1 / z, rtol=1e-6)
    ref_var = (np.abs(z - z.mean()) ** 2).sum() / (z.size - 1)
    v = tg.var(c)
    assert v.dtype is tg.float32
    np.testing.assert_allclose(v.item(), ref_var, rtol=1e-6)
    np.testing.assert_allclose(tg.std(c, 1, correction=0).detach().numpy(),
                               [np.sqrt((np.abs(z - z.mean()) ** 2).mean())], rtol=1e-6)
    vm, mean = tg.var_mean(c, 1)
    np.testing.assert_allclose(vm.detach().numpy(), [ref_var], rtol=1e-6)
    np.testing.assert_allclose(mean.detach().numpy(), [z.mean()], rtol=1e-6)
    v.backward()  # d var / d conj(x) convention: 2 (x - mean) / (n - 1), as PyTorch's
    np.testing.assert_allclose(c.grad.numpy(), 2 * (z - z.mean()) / (z.size - 1), rtol=1e-5)


def test_complex_logaddexp():
    a = np.array([0.5 + 1j, 300 - 0.5j, -2 + 3j])
    b = np.array([-1 + 0.2j, 299 + 2j, 1 - 1j])
    # log(e^a + e^b) with the larger real part factored out (no overflow at 300)
    m = np.where(a.real >= b.real, a, b)
    ref = m + np.log1p(np.exp(a + b - 2 * m))
    np.testing.assert_allclose(ref[[0, 2]], np.log(np.exp(a[[0, 2]]) + np.exp(b[[0, 2]])))
    np.testing.assert_allclose(tg.logaddexp(tg.tensor(a), tg.tensor(b)).numpy(), ref,
                               rtol=1e-12)


@pytest.mark.parametrize("fill", ["normal_", "uniform_", "random_", "exponential_", "cauchy_",
                                  "log_normal_"])
def test_random_fills_are_in_place_ops(fill):
    w = tg.zeros(3, requires_grad=True)
    # a leaf that requires grad was filled silently (PyTorch refuses, as for any in-place op)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used"):
        getattr(w, fill)()
    with tg.no_grad():
        getattr(w, fill)()
    assert w._version == 1 and w.requires_grad
    # a non-leaf's old history no longer reaches the loss: the gradient 2 of y = 2 x flowed
    x = tg.ones(3, requires_grad=True)
    y = x * 2
    getattr(y, fill)()
    y.sum().backward()
    assert x.grad is None or not x.grad.numpy().any()


def test_random_of_complex():
    with pytest.raises(NotImplementedError, match="\"random_\" not implemented for "
                                                  "'ComplexFloat'"):
        tg.zeros(2, dtype=tg.complex64).random_()


@pytest.mark.parametrize("dtype", [tg.float64, tg.complex128])
def test_eigh_gradient_is_hermitian(dtype):
    # PyTorch projects V^H gV onto the skew-Hermitian matrices: dA is Hermitian, the gradient
    # of a function of a Hermitian matrix (it had an anti-Hermitian part, and second
    # derivatives differed); its Hermitian part, checked by finite differences along Hermitian
    # directions, was and is right
    r = np.random.default_rng(5)
    a = r.standard_normal((4, 4)) + (1j * r.standard_normal((4, 4)) if dtype.is_complex else 0)
    a = a + a.conj().T + 4 * np.eye(4)
    S = tg.tensor(np.sin(np.arange(16).reshape(4, 4) + 0.7))

    def loss(x):
        w, V = tg.linalg.eigh(x)
        return (w * tg.tensor([1.0, -2.0, 0.5, 3.0])).sum() + ((V * V.conj()).real * S).sum()

    A = tg.tensor(a, dtype=dtype, requires_grad=True)
    g, = tg.autograd.grad(loss(A), A, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), g.detach().numpy().conj().T, atol=1e-12)
    d = r.standard_normal((4, 4)) + (1j * r.standard_normal((4, 4)) if dtype.is_complex else 0)
    d = d + d.conj().T
    eps = 1e-6
    fd = (loss(tg.tensor(a + eps * d, dtype=dtype)).item()
          - loss(tg.tensor(a - eps * d, dtype=dtype)).item()) / (2 * eps)
    np.testing.assert_allclose((g.detach().numpy().conj() * d).sum().real, fd, rtol=1e-6)
    h, = tg.autograd.grad((g * S).real.sum(), A)  # the second derivative: Hermitian too
    np.testing.assert_allclose(h.numpy(), h.numpy().conj().T, atol=1e-10)
