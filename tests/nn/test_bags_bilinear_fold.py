"""EmbeddingBag, Bilinear, LocalResponseNorm, Fold/Unfold, gumbel_softmax and the in-place
random fills (uniform_, normal_, ...): values against NumPy float64 references written from
PyTorch's documented definitions, gradients by central differences, sample statistics."""

import math

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import assert_grads_match, host
from tritongrad import nn

F = nn.functional
rng = np.random.default_rng(31)
W = rng.standard_normal((10, 4))
IDX = np.array([1, 2, 4, 5, 4, 3, 2, 9, 0])
OFFSETS = np.array([0, 4, 4, 6])  # bags [1 2 4 5], [], [4 3], [2 9 0]


def bags(offsets=OFFSETS, n=len(IDX)):
    ends = list(offsets[1:]) + [n]
    return [IDX[a:b] for a, b in zip(offsets, ends)]


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 4])
def test_embedding_bag(device, mode, padding_idx):
    w = tg.tensor(W, device=device)
    y = F.embedding_bag(tg.tensor(IDX, device=device), w, tg.tensor(OFFSETS, device=device),
                        mode=mode, padding_idx=padding_idx)
    ref = []
    for bag in bags():
        rows = W[[i for i in bag if i != padding_idx]]
        if len(rows) == 0:
            ref.append(np.zeros(4))
        else:
            ref.append({"sum": rows.sum(0), "mean": rows.mean(0), "max": rows.max(0)}[mode])
    np.testing.assert_allclose(host(y), np.array(ref), rtol=1e-12)
    assert_grads_match(lambda w: F.embedding_bag(tg.tensor(IDX, device=w.device), w,
                                                 tg.tensor(OFFSETS, device=w.device),
                                                 mode=mode, padding_idx=padding_idx), [w])


def test_embedding_bag_weights_2d_input_and_module():
    psw = rng.random(len(IDX))
    y = F.embedding_bag(tg.tensor(IDX), tg.tensor(W), tg.tensor([0, 3, 9]), mode="sum",
                        per_sample_weights=tg.tensor(psw), include_last_offset=True)
    np.testing.assert_allclose(host(y), [(W[IDX[:3]] * psw[:3, None]).sum(0),
                                         (W[IDX[3:]] * psw[3:, None]).sum(0)], rtol=1e-12)
    i2 = rng.integers(0, 10, (3, 4))
    np.testing.assert_allclose(host(F.embedding_bag(tg.tensor(i2), tg.tensor(W))),
                               W[i2].mean(1), rtol=1e-12)
    m = nn.EmbeddingBag(10, 3, mode="max")
    assert repr(m) == "EmbeddingBag(10, 3, mode='max')" and m(tg.tensor(i2)).shape == (3, 3)
    with pytest.raises(NotImplementedError, match="per_sample_weights is only supported for "
                                                  "mode='sum'"):
        F.embedding_bag(tg.tensor(IDX), tg.tensor(W), tg.tensor(OFFSETS),
                        per_sample_weights=tg.tensor(psw))


def test_bilinear(device):
    x1, x2 = rng.standard_normal((5, 3)), rng.standard_normal((5, 4))
    a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal(2)
    y = F.bilinear(*(tg.tensor(v, device=device) for v in (x1, x2, a, b)))
    np.testing.assert_allclose(host(y), np.einsum("ni,oij,nj->no", x1, a, x2) + b, rtol=1e-12)
    assert_grads_match(F.bilinear, [tg.tensor(v, device=device) for v in (x1, x2, a, b)])
    m = nn.Bilinear(3, 4, 2)
    assert float(m.weight.abs().max()) <= 1 / math.sqrt(3)
    assert m(tg.randn(5, 3), tg.randn(5, 4)).shape == (5, 2)


@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_local_response_norm(device, size):
    x = rng.standard_normal((2, 7, 3, 4))
    y = F.local_response_norm(tg.tensor(x, device=device), size, 0.1, 0.6, 2.0)
    sq = np.pad(x * x, ((0, 0), (size // 2, (size - 1) // 2), (0, 0), (0, 0)))
    window = sum(sq[:, j:j + 7] for j in range(size))
    np.testing.assert_allclose(host(y), x / (2.0 + 0.1 * window / size) ** 0.6, rtol=1e-12)
    assert_grads_match(lambda t: F.local_response_norm(t, size, 0.1, 0.6, 2.0),
                       [tg.tensor(x[:1, :, :2, :2], device=device)])
    assert nn.LocalResponseNorm(size)(tg.randn(2, 7, 5)).shape == (2, 7, 5)


@pytest.mark.parametrize("kw", [{"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1},
                                {"kernel_size": 2, "dilation": 2, "padding": 1}])
def test_fold_is_the_adjoint_of_unfold(device, kw):
    x = tg.tensor(rng.standard_normal((2, 3, 5, 6)), device=device)
    cols = F.unfold(x, **kw)
    v = tg.tensor(rng.standard_normal(tuple(cols.shape)), device=device)
    folded = F.fold(v, (5, 6), **kw)
    assert folded.shape == (2, 3, 5, 6)
    # <unfold(x), v> = <x, fold(v)>
    assert float((cols * v).sum()) == pytest.approx(float((x * folded).sum()), rel=1e-12)
    # folding the blocks of ones counts how many blocks cover each pixel
    ones = F.fold(F.unfold(tg.ones(1, 1, 5, 6, dtype=tg.float64, device=device), **kw),
                  (5, 6), **kw)
    counts = F.fold(tg.ones(1, cols.shape[1] // 3, cols.shape[2], dtype=tg.float64,
                            device=device), (5, 6), **kw)
    np.testing.assert_array_equal(host(ones), host(counts))
    assert nn.Fold((5, 6), **kw)(v).shape == (2, 3, 5, 6)
    assert nn.Unfold(**kw)(x).shape == tuple(cols.shape)


def test_gumbel_softmax_and_random_fills():
    tg.manual_seed(0)
    logits = tg.tensor(np.log([0.1, 0.2, 0.7]))
    soft = F.gumbel_softmax(logits.expand(20000, 3), tau=0.5)
    np.testing.assert_allclose(host(soft.sum(1)), 1.0, rtol=1e-6)
    hard = F.gumbel_softmax(logits.expand(20000, 3).requires_grad_(), hard=True)
    freq = host(hard).mean(0)
    np.testing.assert_allclose(freq, [0.1, 0.2, 0.7], atol=0.02)  # Gumbel-max samples
    assert set(np.unique(host(hard)).tolist()) == {0.0, 1.0}
    x = tg.empty(200000, dtype=tg.float64)
    checks = [(lambda: x.uniform_(-2, 3), 0.5, 5 / math.sqrt(12)),
              (lambda: x.normal_(1, 2), 1.0, 2.0),
              (lambda: x.exponential_(2.0), 0.5, 0.5),
              (lambda: x.log_normal_(0.0, 0.5), math.exp(0.125),
               math.sqrt((math.exp(0.25) - 1) * math.exp(0.25))),
              (lambda: x.geometric_(0.25), 4.0, math.sqrt(0.75) / 0.25),
              (lambda: x.random_(3, 9), 5.5, math.sqrt((6 ** 2 - 1) / 12))]
    for fill, mean, std in checks:
        assert fill() is x
        assert x.mean().item() == pytest.approx(mean, rel=0.02, abs=0.02)
        assert x.std().item() == pytest.approx(std, rel=0.03)
    assert x.min().item() >= 3 and x.max().item() <= 8
    w = nn.Linear(3, 2).weight
    w.data.normal_(0, 0.02)  # the usual initialisation idiom
    assert w.requires_grad and abs(w.std().item()) < 0.1
    with pytest.raises(RuntimeError, match="uniform_ expects to return a \\[from, to\\) range"):
        x.uniform_(2, 1)


def test_alpha_dropout_keeps_mean_and_variance():
    tg.manual_seed(1)
    x = tg.randn(400000, dtype=tg.float64)
    y = F.alpha_dropout(x, 0.3, training=True)
    assert abs(y.mean().item()) < 0.01 and abs(y.std().item() - 1) < 0.01
    alpha = -1.6732632423543772848170429916717 * 1.0507009873554804934193349852946
    a = ((1 - 0.3) * (1 + 0.3 * alpha ** 2)) ** -0.5
    dropped = alpha * a - a * alpha * 0.3  # every dropped element's value
    v = host(y)
    assert 0.28 < np.isclose(v, dropped).mean() < 0.32
    assert F.alpha_dropout(x, 0.3, training=False) is x
    assert repr(nn.AlphaDropout(0.2)) == "AlphaDropout(p=0.2, inplace=False)"
