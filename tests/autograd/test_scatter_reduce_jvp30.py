"""scatter_reduce's forward-mode rule (each input element folds into one place: the rule's
gradient of ones gives the Jacobian's entries), and complex scatter_reduce on the CPU."""

import numpy as np
import pytest

import tritongrad as tg

REDUCTIONS = ["sum", "mean", "amax", "amin", "prod"]
INDEX = [[0, 1, 0], [2, 2, 1]]


@pytest.mark.parametrize("reduce", REDUCTIONS)
@pytest.mark.parametrize("include_self", [True, False])
def test_forward_gradcheck(reduce, include_self):
    rng = np.random.default_rng(0)
    x = tg.tensor(rng.standard_normal((3, 3)), requires_grad=True)
    src = tg.tensor(rng.standard_normal((2, 4)), requires_grad=True)  # (wider than the index)
    idx = tg.tensor(INDEX)

    def fn(x, s):
        return x.scatter_reduce(0, idx, s, reduce, include_self=include_self)

    assert tg.autograd.gradcheck(fn, (x, src), check_forward_ad=True)


@pytest.mark.parametrize("include_self", [True, False])
def test_prod_tangent_at_zeros_is_the_derivative(include_self):
    # zeros in both x and src (two folding into one place): the tangent is the product of
    # the others times each tangent, as central differences give
    x0 = np.array([[0.0, 1.0, 0.0], [-1.0, 2.0, 0.0], [3.0, 1.0, 0.5]])
    s0 = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 2.0]])
    rng = np.random.default_rng(1)
    tx, ts = rng.standard_normal(x0.shape), rng.standard_normal(s0.shape)
    idx = tg.tensor(INDEX)

    def fn(x, s):
        return x.scatter_reduce(0, idx, s, "prod", include_self=include_self)

    _, t = tg.func.jvp(fn, (tg.tensor(x0), tg.tensor(s0)), (tg.tensor(tx), tg.tensor(ts)))
    e = 1e-6
    fd = (fn(tg.tensor(x0 + e * tx), tg.tensor(s0 + e * ts)).numpy()
          - fn(tg.tensor(x0 - e * tx), tg.tensor(s0 - e * ts)).numpy()) / (2 * e)
    np.testing.assert_allclose(t.numpy(), fd, atol=1e-8)


def test_index_reduce_forward_ad_refused_as_pytorch():
    import tritongrad.autograd.forward_ad as fwAD
    with fwAD.dual_level():
        x = fwAD.make_dual(tg.ones(3, dtype=tg.float64), tg.ones(3, dtype=tg.float64))
        with pytest.raises(NotImplementedError, match="index_reduce"):
            x.index_reduce(0, tg.tensor([0, 0]), tg.ones(2, dtype=tg.float64), "prod")


def test_complex_values():
    x0 = np.array([1 + 1j, 2 + 0j, 3 - 1j])
    s0 = np.array([1j, 2 + 2j, -1 + 0.5j])
    index = np.array([0, 0, 2])
    for reduce, fold in (("sum", np.add), ("prod", np.multiply)):
        for include_self in (True, False):
            got = tg.tensor(x0).scatter_reduce(0, tg.tensor(index), tg.tensor(s0), reduce,
                                               include_self=include_self).numpy()
            want = x0.copy()
            for p in set(index):
                vals = list(s0[index == p]) + ([x0[p]] if include_self else [])
                want[p] = fold.reduce(vals)
            np.testing.assert_allclose(got, want, rtol=1e-12)
    mean = tg.tensor(x0).scatter_reduce(0, tg.tensor(index), tg.tensor(s0), "mean").numpy()
    np.testing.assert_allclose(mean[0], (x0[0] + s0[0] + s0[1]) / 3, rtol=1e-12)
    with pytest.raises(NotImplementedError, match="scatter_gather_tensor_cpu_reduce_amax"):
        tg.tensor(x0).scatter_reduce(0, tg.tensor(index), tg.tensor(s0), "amax")


def test_tangents_against_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    x0, s0 = np.round(rng.standard_normal((3, 3))), np.round(rng.standard_normal((2, 3)))
    tx, ts = rng.standard_normal((3, 3)), rng.standard_normal((2, 3))
    for reduce in ("sum", "mean", "amax", "amin"):  # (ties included; torch's prod is wrong at
        for include_self in (True, False):           # zeros: the test above)
            outs = [m.func.jvp(lambda x, s, m=m: x.scatter_reduce(
                0, m.tensor(INDEX), s, reduce, include_self=include_self),
                (m.tensor(x0), m.tensor(s0)), (m.tensor(tx), m.tensor(ts)))[1].numpy()
                for m in (tg, torch)]
            np.testing.assert_allclose(outs[0], outs[1], rtol=1e-12, atol=1e-14)
