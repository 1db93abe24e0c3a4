"""Losses: PyTorch parity fixes of the 35th sweep (legacy arguments, size warnings, BCE input
and weight checks, kl_div's legacy 'batchmean', gaussian_nll_loss's var rules, margin-loss
checks), and float64 finite-difference checks of the losses' gradients."""

import math
import warnings

import numpy as np
import pytest

import tritongrad as tg

F = tg.nn.functional
rng = np.random.default_rng(35)


def t64(a, grad=False):
    return tg.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


def t32(a, grad=False):
    return tg.tensor(np.asarray(a, dtype=np.float32), requires_grad=grad)


# -- legacy size_average / reduce ---------------------------------------------------------------

@pytest.mark.parametrize("kw, want", [({"size_average": False}, "sum"),
                                      ({"reduce": False}, "none"),
                                      ({"size_average": True, "reduce": True}, "mean")])
def test_legacy_arguments_warn_and_map(kw, want):
    x, y = rng.standard_normal(5), rng.standard_normal(5)
    with pytest.warns(UserWarning, match=f"size_average and reduce args will be deprecated, "
                                         f"please use reduction='{want}' instead"):
        got = F.mse_loss(t64(x), t64(y), **kw)
    ref = (x - y) ** 2
    ref = {"sum": ref.sum(), "mean": ref.mean(), "none": ref}[want]
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-12)


def test_legacy_arguments_warn_in_loss_modules_at_construction():
    with pytest.warns(UserWarning, match="reduction='sum'"):
        loss = tg.nn.CrossEntropyLoss(size_average=False)
    assert loss.reduction == "sum"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (none on the call)
        loss(t32(np.zeros((2, 3))), tg.tensor([0, 1]))
    with pytest.warns(UserWarning, match="reduction='none'"):
        assert tg.nn.MarginRankingLoss(reduce=False).reduction == "none"


def test_kl_div_legacy_arguments_override_batchmean_which_still_divides():
    x, y = np.log(rng.uniform(0.1, 1, (4, 3))), rng.uniform(0.1, 1, (4, 3))
    ref = y * (np.log(y) - x)
    with pytest.warns(UserWarning, match="size_average and reduce"):
        got = F.kl_div(t64(x), t64(y), reduction="batchmean", reduce=False)
    np.testing.assert_allclose(got.numpy(), ref / 4, rtol=1e-12)  # PyTorch's: 'none' / batch
    with pytest.warns(UserWarning, match="size_average and reduce"):
        loss = tg.nn.KLDivLoss(reduction="batchmean", size_average=False)
    assert loss.reduction == "sum"
    np.testing.assert_allclose(loss(t64(x), t64(y)).item(), ref.sum(), rtol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = F.kl_div(t64(x), t64(y), reduction="batchmean")
    np.testing.assert_allclose(got.item(), ref.sum() / 4, rtol=1e-12)


def test_kl_div_mean_warning_comes_before_the_integer_error():
    with pytest.warns(UserWarning, match="reduction: 'mean' divides"):
        with pytest.raises(RuntimeError, match="Integral inputs not supported"):
            F.kl_div(tg.tensor([1, 2]), tg.tensor([1, 2]))


# -- target size warnings ----------------------------------------------------------------------

@pytest.mark.parametrize("fn", [F.l1_loss, F.mse_loss, F.smooth_l1_loss, F.huber_loss])
def test_target_size_warning_names_the_sizes(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fn(t32(np.zeros((3, 4))), t32(np.zeros(4)))
    msgs = [str(x.message) for x in w]
    assert msgs == ["Using a target size (tritongrad.Size([4])) that is different to the input "
                    "size (tritongrad.Size([3, 4])). This will likely lead to incorrect results "
                    "due to broadcasting. Please ensure they have the same size."]


def test_smooth_l1_beta_zero_warns_once():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got = F.smooth_l1_loss(t64([[1.0, -2.0]] * 3), t64([0.5, 0.0]), beta=0.0)
    assert len(w) == 1
    assert got.item() == pytest.approx(1.25)


def test_cross_entropy_probabilities_refuse_a_nonnegative_ignore_index():
    x, p = t64(np.zeros((2, 3))), t64(np.full((2, 3), 1 / 3))
    with pytest.raises(RuntimeError, match="ignore_index is not supported for floating point"):
        F.cross_entropy(x, p, ignore_index=0)
    for ii in (-100, -1):  # (negative ones are accepted, and unused)
        assert F.cross_entropy(x, p, ignore_index=ii).item() == pytest.approx(math.log(3))


@pytest.mark.parametrize("fn, shape, kernel", [
    (F.cross_entropy, (2, 3), "cross_entropy"),
    (F.nll_loss, (2, 3), "nll_loss_out_frame"),
    (F.nll_loss, (2, 3, 2), "nll_loss2d_forward_out_frame")])
def test_integer_input_names_pytorchs_kernel(fn, shape, kernel):
    target = tg.zeros((2,) + shape[2:], dtype=tg.int64)
    with pytest.raises(NotImplementedError, match=f'"{kernel}" not implemented for \'Long\''):
        fn(tg.ones(shape, dtype=tg.int64), target)


# -- binary cross-entropy ----------------------------------------------------------------------

def test_bce_refuses_nan_inputs_as_pytorch():
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(t32([math.nan, 0.5]), t32([1.0, 0.0]))


def test_bce_weight_shapes():
    x, y = t32(np.full((3, 4), 0.5)), t32(np.ones((3, 4)))
    with pytest.raises(RuntimeError):  # (not NumPy's ValueError)
        F.binary_cross_entropy(x, y, t32(np.ones(3)))
    with pytest.raises(RuntimeError, match="output with shape"):
        F.binary_cross_entropy(x, y, t32(np.ones((2, 3, 4))))
    for kw in ({"weight": t32(np.ones(3))}, {"pos_weight": t32(np.ones(3))}):
        with pytest.raises(RuntimeError, match="must match the size"):
            F.binary_cross_entropy_with_logits(x, y, **kw)
    with pytest.raises(RuntimeError, match="output with shape"):
        F.binary_cross_entropy_with_logits(x, y, t32(np.ones((2, 3, 4))))
    got = F.binary_cross_entropy(x, y, t32([1.0, 2.0, 3.0, 4.0]), reduction="sum")
    assert got.item() == pytest.approx(3 * 10 * math.log(2), rel=1e-6)


def test_nll_loss_weight_requiring_grad_refused_before_the_dtype_check():
    w = t32(np.ones(3), grad=True)
    with pytest.raises(RuntimeError, match="'nll_loss_forward' is not differentiable"):
        F.nll_loss(t64(np.zeros((2, 3)), grad=True), tg.tensor([0, 1]), w)


# -- gaussian_nll_loss --------------------------------------------------------------------------

def _gauss_ref(x, y, v, eps=1e-6):
    v = np.maximum(v, eps)
    return 0.5 * (np.log(v) + (x - y) ** 2 / v)


@pytest.mark.parametrize("vshape", [(3, 4), (3,), (3, 1), (1, 4)])
def test_gaussian_nll_var_shapes(vshape):
    x, y = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    v = rng.uniform(0.1, 2, vshape)
    got = F.gaussian_nll_loss(t64(x), t64(y), t64(v), reduction="none")
    vb = v[:, None] if vshape == (3,) else v
    np.testing.assert_allclose(got.numpy(), _gauss_ref(x, y, vb), rtol=1e-12)


@pytest.mark.parametrize("vshape", [(), (1, 1), (2, 4), (4,)])
def test_gaussian_nll_var_of_incorrect_size(vshape):
    with pytest.raises(ValueError, match="var is of incorrect size"):
        F.gaussian_nll_loss(t64(np.zeros((3, 4))), t64(np.zeros((3, 4))),
                            t64(np.ones(vshape)))


def test_gaussian_nll_var_checks_order_and_float_var():
    x = t64(np.zeros((3, 4)))
    with pytest.raises(ValueError, match="var has negative entry"):
        F.gaussian_nll_loss(x, x, -1.0)
    with pytest.raises(ValueError, match="var has negative entry"):  # (before its size)
        F.gaussian_nll_loss(x, x, t64(-np.ones(2)))
    with pytest.raises(ValueError, match="avg is not valid"):
        F.gaussian_nll_loss(x, x, 1.0, reduction="avg")
    got = F.gaussian_nll_loss(t64([1.0, 2.0]), t64([0.0, 0.0]), 2.0, reduction="none")
    np.testing.assert_allclose(got.numpy(), _gauss_ref(np.array([1.0, 2.0]), 0.0, 2.0))


# -- margin losses ------------------------------------------------------------------------------

def test_multi_margin_target_checks():
    x = t32(np.zeros((2, 3)))
    with pytest.raises(RuntimeError, match="target out of range"):
        F.multi_margin_loss(x, tg.tensor([0, 3]))
    with pytest.raises(RuntimeError, match="target tensor should be 1-D"):
        F.multi_margin_loss(x, tg.tensor([[0], [1]]))


@pytest.mark.parametrize("fn", [F.triplet_margin_loss, F.triplet_margin_with_distance_loss])
def test_triplet_margin_must_be_positive(fn):
    a = t32(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="margin must be greater than 0, got 0.0"):
        fn(a, a, a, margin=0.0)


def test_triplet_with_distance_checks_dims():
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        F.triplet_margin_with_distance_loss(t32(np.zeros((2, 3))), t32(np.zeros(3)),
                                            t32(np.zeros((2, 3))))


# -- float64 finite differences of the losses' gradients --------------------------------------

def _fd_check(fn, arrays, wrt=(0,), h=1e-6, tol=1e-6):
    """The gradient of sum(fn(...) * c) for each argument in ``wrt`` against central
    differences in float64."""
    ts = [t64(a, grad=i in wrt) for i, a in enumerate(arrays)]
    out = fn(*ts)
    c = np.linspace(0.5, 1.5, out.numel()).reshape(tuple(out.shape))
    grads = tg.autograd.grad((out * t64(c)).sum(), [ts[i] for i in wrt])

    def value(args):
        return float((fn(*[t64(a) for a in args]).numpy() * c).sum())

    for i, g in zip(wrt, grads):
        a = np.array(arrays[i], dtype=np.float64)
        num = np.zeros_like(a)
        for j in np.ndindex(a.shape):
            up, dn = a.copy(), a.copy()
            up[j] += h
            dn[j] -= h
            args_up, args_dn = list(arrays), list(arrays)
            args_up[i], args_dn[i] = up, dn
            num[j] = (value(args_up) - value(args_dn)) / (2 * h)
        np.testing.assert_allclose(g.numpy(), num, rtol=tol, atol=tol)


X = rng.standard_normal((3, 4))
Y = rng.standard_normal((3, 4))
P = rng.uniform(0.1, 0.9, (3, 4))
Q = rng.uniform(0.1, 0.9, (3, 4))
IDX = tg.tensor([0, 3, 1])
FD_CASES = {
    "cross_entropy ls w ignore": (lambda x: F.cross_entropy(
        x, tg.tensor([0, 3, -100]), t64([1.0, 2.0, 0.5, 3.0]), label_smoothing=0.2), [X], (0,)),
    "cross_entropy probs ls": (lambda x, y: F.cross_entropy(x, y, label_smoothing=0.1,
                                                            reduction="none"), [X, P], (0, 1)),
    "cross_entropy kdim": (lambda x: F.cross_entropy(x.reshape(1, 3, 4), tg.tensor([[0, 2, 1, 1]]),
                                                     reduction="sum"), [X], (0,)),
    "nll_loss w": (lambda x: F.nll_loss(x, IDX, t64([1.0, 2.0, 0.5, 3.0])), [X], (0,)),
    "bce w": (lambda p, q: F.binary_cross_entropy(p, q, t64([1.0, 2.0, 3.0, 4.0])), [P, Q],
              (0, 1)),
    "bce_with_logits pw": (lambda x, q: F.binary_cross_entropy_with_logits(
        x, q, t64(np.ones((3, 1)) * 2), pos_weight=t64([1.0, 2.0, 3.0, 0.5]),
        reduction="none"), [X, Q], (0, 1)),
    "kl_div": (lambda x, q: F.kl_div(x, q, reduction="batchmean"), [X, Q], (0, 1)),
    "kl_div log_target": (lambda x, y: F.kl_div(x, y, reduction="sum", log_target=True),
                          [X, Y], (0, 1)),
    "poisson full": (lambda x, q: F.poisson_nll_loss(x, q * 5, full=True), [X, Q], (0, 1)),
    "poisson rates": (lambda p, q: F.poisson_nll_loss(p, q, log_input=False), [P, Q], (0, 1)),
    "gaussian": (lambda x, y, v: F.gaussian_nll_loss(x, y, v, full=True), [X, Y, P + 0.5],
                 (0, 1, 2)),
    "huber": (lambda x, y: F.huber_loss(x, y, delta=0.7), [X, Y], (0, 1)),
    "smooth_l1": (lambda x, y: F.smooth_l1_loss(x, y, beta=0.5), [X, Y], (0, 1)),
    "soft_margin": (lambda x, y: F.soft_margin_loss(x, y), [X, np.sign(Y)], (0,)),
    "multilabel_soft_margin": (lambda x, q: F.multilabel_soft_margin_loss(
        x, q, t64([1.0, 2.0, 3.0, 4.0])), [X, Q], (0, 1)),
    "multi_margin p2": (lambda x: F.multi_margin_loss(x, IDX, p=2, margin=0.7,
                                                      weight=t64([1.0, 2.0, 3.0, 4.0])),
                        [X], (0,)),
    "multilabel_margin": (lambda x: F.multilabel_margin_loss(
        x, tg.tensor([[3, 0, -1, 1], [0, 1, 2, 3], [2, -1, 1, 0]])), [X], (0,)),
    "triplet swap": (lambda a, p, n: F.triplet_margin_loss(a, p, n, margin=0.5, p=3, swap=True,
                                                           reduction="none"),
                     [X, Y, X[::-1] * 0.5], (0, 1, 2)),
    "cosine_embedding": (lambda a, b: F.cosine_embedding_loss(a, b, t64([1.0, -1.0, 1.0]),
                                                              margin=-0.5), [X, Y], (0, 1)),
    "margin_ranking": (lambda a, b: F.margin_ranking_loss(a, b, t64(np.sign(Y)), margin=0.1),
                       [X, Y], (0, 1)),
}


@pytest.mark.parametrize("name", list(FD_CASES))
def test_gradients_against_finite_differences(name):
    fn, arrays, wrt = FD_CASES[name]
    _fd_check(fn, arrays, wrt)


def test_ctc_gradient_against_finite_differences():
    logits = rng.standard_normal((5, 2, 4))
    targets, in_len, tgt_len = tg.tensor([[1, 2, 2], [3, 1, 0]]), tg.tensor([5, 4]), \
        tg.tensor([3, 2])
    _fd_check(lambda x: F.ctc_loss(x.log_softmax(2), targets, in_len, tgt_len,
                                   reduction="sum"), [logits])


# -- against PyTorch ------------------------------------------------------------------------------

def test_against_torch():
    torch = pytest.importorskip("torch")
    x, y = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    v = rng.uniform(0.1, 1, (1, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the legacy arguments' warnings, both libraries')
        pairs = _torch_pairs(torch, x, y, v)
    for ours, theirs in pairs:
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10)


def _torch_pairs(torch, x, y, v):
    tF = torch.nn.functional
    return [
        (F.gaussian_nll_loss(t64(x), t64(y), t64(v)),
         tF.gaussian_nll_loss(torch.tensor(x), torch.tensor(y), torch.tensor(v))),
        (F.kl_div(t64(x), t64(np.abs(y)), reduction="batchmean", size_average=False),
         tF.kl_div(torch.tensor(x), torch.tensor(np.abs(y)), reduction="batchmean",
                   size_average=False)),
        (F.binary_cross_entropy_with_logits(t64(x), t64(np.abs(y) % 1),
                                            pos_weight=t64([1.0, 2.0, 3.0, 4.0]), reduce=False),
         tF.binary_cross_entropy_with_logits(torch.tensor(x), torch.tensor(np.abs(y) % 1),
                                             pos_weight=torch.tensor([1.0, 2.0, 3.0, 4.0]),
                                             reduce=False)),
    ]
