"""The matrix and piecewise transforms (CorrCholesky, LowerCholesky, PositiveDefinite, Reshape,
Cat, Stack, CumulativeDistribution): values, inverses, log-det-Jacobians against numerical
Jacobians in float64, shapes, and the constraint registry's entries for them."""

from __future__ import annotations

import math

import numpy as np
import pytest
from tritongrad.distributions import biject_to, constraints, transform_to
from tritongrad.distributions import transforms as T

import tritongrad as torch
from tritongrad import distributions as D


def t(x, device="cpu"):
    return torch.tensor(np.asarray(x, dtype=np.float64), device=device)


def numerical_log_abs_det(fn, x: np.ndarray, h: float = 1e-6) -> float:
    """log |det J| of ``fn`` (R^n -> R^n, NumPy in and out) at ``x`` by central differences."""
    n = x.size
    J = np.empty((n, n))
    for i in range(n):
        e = np.zeros(n)
        e[i] = h
        J[:, i] = (fn(x + e) - fn(x - e)) / (2 * h)
    return float(np.linalg.slogdet(J)[1])


@pytest.mark.parametrize("n", [3, 6, 10])
def test_corr_cholesky_transform(n, device):
    rng = np.random.default_rng(n)
    tr = T.CorrCholeskyTransform()
    x = rng.standard_normal((2, n)) * 1.5
    y = tr(t(x, device))
    D_ = tr.forward_shape((2, n))[-1]
    assert y.shape == (2, D_, D_)
    assert bool(constraints.corr_cholesky.check(y).all())
    np.testing.assert_allclose(tr.inv(y).cpu().numpy(), x, rtol=1e-9, atol=1e-9)
    rows, cols = np.tril_indices(D_, -1)

    def free(v):  # the strictly lower triangle of y is determined by (and determines) x
        return tr(t(v)).numpy()[rows, cols]

    ladj = tr.log_abs_det_jacobian(t(x, device), y).cpu().numpy()
    for b in range(2):
        assert abs(ladj[b] - numerical_log_abs_det(free, x[b])) < 1e-6
    assert tr.inverse_shape((4, D_, D_)) == (4, n)
    with pytest.raises(ValueError, match="not a flattened lower-diagonal number"):
        tr.forward_shape((5,))


def test_corr_cholesky_transform_values_match_pytorch():
    # PyTorch 2.13 (by hand, in .venv): CorrCholeskyTransform()(tensor([0.3, -0.5, 1.2]))
    tr = T.CorrCholeskyTransform()
    x = t([0.3, -0.5, 1.2])
    y = tr(x)
    np.testing.assert_allclose(y.numpy(), [[1.0, 0.0, 0.0], [0.2913, 0.9566, 0.0],
                                           [-0.4621, 0.7393, 0.4898]], atol=1e-4)
    assert abs(tr.log_abs_det_jacobian(x, y).item() + 1.6364) < 1e-4


def test_lower_cholesky_and_positive_definite_transforms(device):
    A = np.array([[[0.5, 2.0, 0.1], [-1.0, 0.3, 4.0], [0.7, -0.2, -1.1]]])
    L = T.LowerCholeskyTransform()(t(A, device))
    expected = np.tril(A[0], -1) + np.diag(np.exp(np.diag(A[0])))
    np.testing.assert_allclose(L.cpu().numpy()[0], expected, rtol=1e-12)
    assert bool(constraints.lower_cholesky.check(L).all())
    np.testing.assert_allclose(T.LowerCholeskyTransform().inv(L).cpu().numpy()[0],
                               np.tril(A[0]), rtol=1e-12)
    P = T.PositiveDefiniteTransform()(t(A, device))
    np.testing.assert_allclose(P.cpu().numpy()[0], expected @ expected.T, rtol=1e-12)
    assert bool(constraints.positive_definite.check(P).all())
    np.testing.assert_allclose(T.PositiveDefiniteTransform().inv(P).cpu().numpy()[0],
                               np.tril(A[0]), rtol=1e-9, atol=1e-12)
    for tr in (T.LowerCholeskyTransform(), T.PositiveDefiniteTransform()):
        assert not tr.bijective  # (they drop the upper triangle)
        assert tr == type(tr)()
        with pytest.raises(NotImplementedError):
            tr.log_abs_det_jacobian(t(A), tr(t(A)))


def test_reshape_transform():
    tr = T.ReshapeTransform((2, 3), (3, 2))
    x = torch.arange(24.0, dtype=torch.float64).reshape(4, 2, 3)
    y = tr(x)
    assert y.shape == (4, 3, 2)
    assert tr.inv(y).tolist() == x.tolist()
    assert tr.log_abs_det_jacobian(x, y).tolist() == [0.0] * 4
    assert tuple(tr.forward_shape((5, 2, 3))) == (5, 3, 2)
    assert tuple(tr.inverse_shape((3, 2))) == (2, 3)
    assert tr.domain.event_dim == 2 and tr.codomain.event_dim == 2 and tr.bijective
    with pytest.raises(ValueError, match="different numbers of elements"):
        T.ReshapeTransform((2, 3), (7,))
    with pytest.raises(ValueError, match="Shape mismatch"):
        tr.forward_shape((3, 3))
    # through a distribution: a Normal vector seen as a matrix
    d = D.TransformedDistribution(D.Independent(D.Normal(t(np.zeros(6)), t(np.ones(6))), 1),
                                  [T.ReshapeTransform((6,), (2, 3))])
    assert d.event_shape == (2, 3)
    assert abs(d.log_prob(t(np.zeros((2, 3)))).item() + 3 * math.log(2 * math.pi)) < 1e-12


def test_cat_and_stack_transforms(device):
    x = np.array([[0.1, 0.2, 0.3], [-0.5, 1.0, 2.0]])
    cat = T.CatTransform([T.ExpTransform(), T.AffineTransform(1.0, 2.0)], dim=1,
                         lengths=[2, 1])
    y = cat(t(x, device))
    np.testing.assert_allclose(y.cpu().numpy(), np.concatenate(
        [np.exp(x[:, :2]), 1 + 2 * x[:, 2:]], 1), rtol=1e-12)
    np.testing.assert_allclose(cat.inv(y).cpu().numpy(), x, rtol=1e-12)
    np.testing.assert_allclose(cat.log_abs_det_jacobian(t(x, device), y).cpu().numpy(),
                               np.concatenate([x[:, :2], np.full((2, 1), math.log(2))], 1))
    assert cat.length == 3 and cat.event_dim == 0 and cat.bijective
    with pytest.raises(ValueError, match="lengths sum to 3"):
        cat(t(np.zeros((2, 4))))
    stack = T.StackTransform([T.ExpTransform(), T.AffineTransform(1.0, 2.0)], dim=0)
    z = np.array([[0.1, 0.2], [0.3, 0.4]])
    w = stack(t(z, device))
    np.testing.assert_allclose(w.cpu().numpy(), [np.exp(z[0]), 1 + 2 * z[1]], rtol=1e-12)
    np.testing.assert_allclose(stack.inv(w).cpu().numpy(), z, rtol=1e-12)
    np.testing.assert_allclose(stack.log_abs_det_jacobian(t(z, device), w).cpu().numpy(),
                               [z[0], [math.log(2)] * 2])
    # Cat over an event dimension: the pieces' terms add up into one per event
    ind = T.CatTransform([T.IndependentTransform(T.ExpTransform(), 1),
                          T.IndependentTransform(T.AffineTransform(0.0, 3.0), 1)],
                         dim=-1, lengths=[2, 1])
    assert ind.event_dim == 1
    np.testing.assert_allclose(ind.log_abs_det_jacobian(t(x), ind(t(x))).numpy(),
                               x[:, :2].sum(1) + math.log(3))


def test_cumulative_distribution_transform():
    base = D.Normal(t(0.5), t(2.0))
    tr = T.CumulativeDistributionTransform(base)
    x = np.array([-1.0, 0.5, 3.0])
    y = tr(t(x))
    np.testing.assert_allclose(y.numpy(), base.cdf(t(x)).numpy())
    np.testing.assert_allclose(tr.inv(y).numpy(), x, rtol=1e-9)
    h = 1e-6
    numeric = np.log((base.cdf(t(x + h)).numpy() - base.cdf(t(x - h)).numpy()) / (2 * h))
    np.testing.assert_allclose(tr.log_abs_det_jacobian(t(x), y).numpy(), numeric, rtol=1e-7)
    assert tr.sign == 1 and tr.bijective
    assert repr(tr.codomain) == "Interval(lower_bound=0.0, upper_bound=1.0)"
    # a Gaussian copula: uniform marginals
    copula = D.TransformedDistribution(
        D.MultivariateNormal(t(np.zeros(2)), t([[1.0, 0.6], [0.6, 1.0]])),
        [T.CumulativeDistributionTransform(D.Normal(t(0.0), t(1.0)))])
    torch.manual_seed(0)
    u = copula.sample((20000,)).numpy()
    assert np.abs(u.mean(0) - 0.5).max() < 0.01 and np.abs(u.var(0) - 1 / 12).max() < 0.003


@pytest.mark.parametrize("constraint", [
    constraints.corr_cholesky, constraints.lower_cholesky, constraints.positive_definite,
    constraints.positive_semidefinite, constraints.greater_than_eq(2.0),
    constraints.greater_than(-1.0), constraints.nonnegative,
    constraints.cat([constraints.positive, constraints.real, constraints.unit_interval], 0,
                    [1, 2, 1]),
    constraints.stack([constraints.positive, constraints.interval(-1.0, 1.0)], 1),
], ids=repr)
def test_transform_to_reaches_the_constraint(constraint):
    rng = np.random.default_rng(0)
    shape = {2: (3, 3), 0: (4, 2)}[constraint.event_dim]
    if constraint is constraints.corr_cholesky:
        shape = (5, 3)  # vectors of 3 = 3 * 2 / 2 entries
    x = t(rng.standard_normal(shape) * 2)
    for registry in (biject_to, transform_to):
        try:
            tr = registry(constraint)
        except NotImplementedError:
            assert registry is biject_to  # (biject_to has no non-bijective entries)
            continue
        y = tr(x)
        assert bool(constraint.check(y).all()), (registry, constraint)
        if tr.bijective:
            np.testing.assert_allclose(tr.inv(y).numpy(), x.numpy(), rtol=1e-7, atol=1e-7)


def test_registry_entries_match_pytorchs():
    assert isinstance(biject_to(constraints.corr_cholesky), T.CorrCholeskyTransform)
    assert isinstance(transform_to(constraints.lower_cholesky), T.LowerCholeskyTransform)
    assert isinstance(transform_to(constraints.positive_definite), T.PositiveDefiniteTransform)
    with pytest.raises(NotImplementedError):
        biject_to(constraints.lower_cholesky)
    cat = biject_to(constraints.cat([constraints.positive, constraints.real], 0, [1, 2]))
    assert isinstance(cat, T.CatTransform) and cat.lengths == [1, 2]
    assert isinstance(transform_to(constraints.stack([constraints.positive], 0)),
                      T.StackTransform)
    # greater_than_eq(2) maps to exp shifted by 2 (a bare exp would ignore the bound)
    assert abs(transform_to(constraints.greater_than_eq(2.0))(t(0.0)).item() - 3.0) < 1e-12
