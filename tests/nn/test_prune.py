"""``nn.utils.prune``: masks against NumPy selections (the smallest magnitudes, the lowest
channel norms, across tensors for global pruning), iterative pruning among the survivors,
the re-parametrization (``_orig`` parameter, ``_mask`` buffer, the pre-hook, gradients
through the mask), ``remove``, and PyTorch's errors."""

from __future__ import annotations

import numpy as np
import pytest

import tritongrad as tg
import tritongrad.nn.utils.prune as prune


def _linear(out_f=6, in_f=5, seed=0):
    rng = np.random.default_rng(seed)
    m = tg.nn.Linear(in_f, out_f)
    w = rng.standard_normal((out_f, in_f)).astype(np.float32)
    with tg.no_grad():
        m.weight.copy_(tg.tensor(w))
    return m, w


def _smallest(values, k):
    out = np.ones(values.size)
    out[np.argsort(np.abs(values).ravel(), kind="stable")[:k]] = 0
    return out.reshape(values.shape)


@pytest.mark.parametrize("amount, k", [(0.3, 9), (4, 4), (0, 0), (1.0, 30)])
def test_l1_unstructured_zeroes_the_smallest_magnitudes(amount, k):
    m, w = _linear()
    prune.l1_unstructured(m, "weight", amount=amount)
    np.testing.assert_array_equal(m.weight_mask.numpy(), _smallest(w, k))
    np.testing.assert_array_equal(m.weight.detach().numpy(), w * _smallest(w, k))
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight_orig"]
    assert [n for n, _ in m.named_buffers()] == ["weight_mask"]
    assert set(m.state_dict()) == {"bias", "weight_orig", "weight_mask"}


def test_iterative_pruning_counts_among_the_survivors():
    m, w = _linear()
    prune.l1_unstructured(m, "weight", amount=10)
    prune.l1_unstructured(m, "weight", amount=0.5)  # half of the 20 left: 10 more
    np.testing.assert_array_equal(m.weight_mask.numpy(), _smallest(w, 20))
    assert isinstance(list(m._forward_pre_hooks.values())[0], prune.PruningContainer)
    assert len(m._forward_pre_hooks) == 1


@pytest.mark.parametrize("n, dim", [(2, 0), (1, 1), (float("inf"), -1)])
def test_ln_structured_removes_the_lowest_norm_channels(n, dim):
    m, w = _linear()
    prune.ln_structured(m, "weight", amount=2, n=n, dim=dim)
    d = dim % 2
    norms = np.linalg.norm(w, ord=n, axis=1 - d)
    pruned = np.argsort(norms, kind="stable")[:2]
    expected = np.ones_like(w)
    if d == 0:
        expected[pruned, :] = 0
    else:
        expected[:, pruned] = 0
    np.testing.assert_array_equal(m.weight_mask.numpy(), expected)
    prune.ln_structured(m, "weight", amount=1, n=n, dim=dim)  # a third channel, among the rest
    alive = [c for c in np.argsort(norms, kind="stable") if c not in pruned]
    if d == 0:
        expected[alive[0], :] = 0
    else:
        expected[:, alive[0]] = 0
    np.testing.assert_array_equal(m.weight_mask.numpy(), expected)


def test_gradients_reach_the_original_through_the_mask():
    m, w = _linear()
    prune.l1_unstructured(m, "weight", amount=0.5)
    x = tg.randn(3, 5)
    m(x).sum().backward()
    mask = m.weight_mask.numpy()
    expected = np.ones((6, 1)) @ x.sum(0, keepdim=True).numpy()
    np.testing.assert_allclose(m.weight_orig.grad.numpy(), expected * mask, rtol=1e-5)
    with tg.no_grad():  # the hook recomputes weight before each forward
        m.weight_orig.mul_(2)
    m(x)
    np.testing.assert_allclose(m.weight.detach().numpy(), 2 * w * mask, rtol=1e-6)


def test_remove_makes_pruning_permanent():
    m, w = _linear()
    prune.l1_unstructured(m, "weight", amount=7)
    assert prune.is_pruned(m) and prune.is_pruned(tg.nn.Sequential(m))
    prune.remove(m, "weight")
    assert not prune.is_pruned(m)
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight"]  # (re-registered last)
    assert isinstance(m.weight, tg.nn.Parameter) and not list(m.named_buffers())
    np.testing.assert_array_equal(m.weight.detach().numpy(), w * _smallest(w, 7))
    with pytest.raises(ValueError, match="has to be pruned before pruning can be removed"):
        prune.remove(m, "weight")


def test_global_unstructured_prunes_across_tensors():
    a, wa = _linear(6, 5, seed=1)
    b, wb = _linear(3, 6, seed=2)
    prune.global_unstructured([(a, "weight"), (b, "weight")],
                              pruning_method=prune.L1Unstructured, amount=0.4)
    both = np.concatenate([wa.ravel(), wb.ravel()])
    mask = _smallest(both, round(0.4 * both.size))
    np.testing.assert_array_equal(a.weight_mask.numpy().ravel(), mask[:wa.size])
    np.testing.assert_array_equal(b.weight_mask.numpy().ravel(), mask[wa.size:])
    with pytest.raises(TypeError, match='Only "unstructured" PRUNING_TYPE'):
        prune.global_unstructured([(a, "weight")], prune.LnStructured, amount=1, n=2, dim=0)


def test_random_methods_prune_the_right_counts_reproducibly():
    masks = []
    for _ in range(2):
        tg.manual_seed(3)
        m, _ = _linear()
        prune.random_unstructured(m, "weight", amount=0.4)
        masks.append(m.weight_mask.numpy())
        assert (masks[-1] == 0).sum() == 12
    np.testing.assert_array_equal(*masks)
    m, _ = _linear()
    prune.random_structured(m, "weight", amount=0.5, dim=1)
    zero_cols = (m.weight_mask.numpy() == 0).all(axis=0)
    assert zero_cols.sum() == 2 and ((m.weight_mask.numpy() == 1).all(axis=0) | zero_cols).all()


def test_custom_from_mask_and_identity():
    m, w = _linear()
    mask = tg.tensor(np.random.default_rng(5).integers(0, 2, w.shape), dtype=tg.float32)
    prune.custom_from_mask(m, "weight", mask)
    np.testing.assert_array_equal(m.weight.detach().numpy(), w * mask.numpy())
    prune.identity(m, "bias")
    np.testing.assert_array_equal(m.bias_mask.numpy(), np.ones(6))


@pytest.mark.parametrize("call, exc, msg", [
    (lambda m: prune.l1_unstructured(m, "weight", amount=-1), ValueError,
     "should either be a float in the range"),
    (lambda m: prune.l1_unstructured(m, "weight", amount=1.5), ValueError,
     "should either be a float in the range"),
    (lambda m: prune.l1_unstructured(m, "weight", amount=31), ValueError,
     "should be smaller than the number of parameters to prune=30"),
    (lambda m: prune.ln_structured(m, "bias", amount=1, n=2, dim=0), ValueError,
     "Structured pruning can only be applied to multidimensional tensors"),
    (lambda m: prune.l1_unstructured(m, "weight", amount="half"), TypeError,
     "Invalid type for amount"),
])
def test_errors(call, exc, msg):
    m, _ = _linear()
    with pytest.raises(exc, match=msg):
        call(m)
    assert "weight" in dict(m.named_parameters())  # (nothing half-done left behind)
