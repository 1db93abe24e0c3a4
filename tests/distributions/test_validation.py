"""validate_args: PyTorch's ValueErrors for bad parameters and out-of-support values, the
class-wide default, and the constructors' own refusals; constraints and transforms."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from tritongrad.distributions import constraints

import tritongrad as torch
from tritongrad import distributions as D


def t(x):
    return torch.tensor(np.asarray(x, dtype=np.float64))


def test_bad_parameters_raise_pytorchs_message():
    msg = ("Expected parameter scale (Tensor of shape (2,)) of distribution "
           "Normal(loc: tritongrad.Size([2]), scale: tritongrad.Size([2])) to satisfy the "
           "constraint GreaterThan(lower_bound=0.0), but found invalid values:")
    with pytest.raises(ValueError, match=re.escape(msg)):
        D.Normal(t([0.0, 0.0]), t([1.0, -1.0]))
    for make in (lambda: D.Gamma(t([1.0]), t([0.0])), lambda: D.Exponential(t([-1.0])),
                 lambda: D.Bernoulli(t([1.5])), lambda: D.Categorical(t([-0.5, 1.5])),
                 lambda: D.Dirichlet(t([1.0, -1.0])), lambda: D.Poisson(t([-0.5])),
                 lambda: D.Beta(t([1.0]), t([-1.0])), lambda: D.Geometric(t([1.5])),
                 lambda: D.Binomial(t([2.5]), t([0.5])), lambda: D.Laplace(t(0.0), t(0.0)),
                 lambda: D.MultivariateNormal(t([0.0, 0.0]), t([[1.0, 2.0], [2.0, 1.0]])),
                 lambda: D.MultivariateNormal(t([0.0, 0.0]), scale_tril=t([[1.0, 1.0],
                                                                           [0.0, 1.0]]))):
        with pytest.raises(ValueError, match="to satisfy the constraint"):
            make()
    with pytest.raises(ValueError, match=re.escape(  # (0-dim tensors shown as numbers)
            "Expected parameter low (Tensor of shape ()) of distribution Uniform(low: 1.0, "
            "high: 1.0) to satisfy the constraint LessThan(upper_bound=1.0), but found invalid "
            "values:\n1.0")):
        D.Uniform(1.0, 1.0)
    with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified, but "
                                         "not both."):
        D.Bernoulli(t([0.5]), t([0.0]))
    with pytest.raises(ValueError, match="Exactly one of covariance_matrix or precision_matrix"):
        D.MultivariateNormal(t([0.0]))
    with pytest.raises(ValueError, match="`probs` parameter must be at least one-dimensional."):
        D.Categorical(t(0.5))
    with pytest.raises(ValueError, match="Expected reinterpreted_batch_ndims <= "):
        D.Independent(D.Normal(t([0.0]), t([1.0])), 2)
    # nan is outside every real constraint
    with pytest.raises(ValueError):
        D.Normal(t([math.nan]), t([1.0]))


def test_out_of_support_values_raise():
    with pytest.raises(ValueError, match=re.escape(
            "Expected value argument (Tensor of shape (1,)) to be within the support "
            "(GreaterThanEq(lower_bound=0.0)) of the distribution Exponential(rate: tensor(")):
        D.Exponential(t([1.0])).log_prob(t([-1.0]))
    with pytest.raises(ValueError, match="to be within the support \\(Boolean\\(\\)\\)"):
        D.Bernoulli(t([0.5])).log_prob(t([0.5]))
    with pytest.raises(ValueError, match="IntegerInterval\\(lower_bound=0, upper_bound=2\\)"):
        D.Categorical(t([0.2, 0.3, 0.5])).log_prob(t(3.0))
    with pytest.raises(ValueError, match="Simplex"):
        D.Dirichlet(t([1.0, 1.0])).log_prob(t([0.5, 0.6]))
    with pytest.raises(ValueError, match="The right-most size of value must match event_shape"):
        D.MultivariateNormal(t([0.0, 0.0]), t(np.eye(2))).log_prob(t([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="Value is not broadcastable with "
                                         "batch_shape\\+event_shape"):
        D.Normal(t([0.0, 0.0]), t([1.0, 1.0])).log_prob(t([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="The value argument to log_prob must be a Tensor"):
        D.Normal(t(0.0), t(1.0)).log_prob(0.5)


def test_validate_args_false_and_the_default():
    assert not bool(torch.isfinite(D.Normal(t([0.0]), t([-1.0]), validate_args=False)
                                   .log_prob(t([0.0]))).all())
    try:
        D.Distribution.set_default_validate_args(False)
        d = D.Normal(t([0.0]), t([-1.0]))  # no error
        assert d.batch_shape == (1,)
        D.Exponential(t([1.0])).log_prob(t([-1.0]))
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Normal(t([0.0]), t([-1.0]))
    with pytest.raises(ValueError):
        D.Distribution.set_default_validate_args("yes")
    # expand keeps the instance's setting without validating again
    e = D.Normal(t([0.0]), t([1.0]), validate_args=False).expand((3,))
    assert e._validate_args is False and e.batch_shape == (3,)


def test_unimplemented_properties_say_so():
    with pytest.raises(NotImplementedError, match="does not implement mean"):
        D.TransformedDistribution(D.Normal(t(0.0), t(1.0)), []).mean  # noqa: B018
    mix = D.MixtureSameFamily(D.Categorical(t([0.5, 0.5])), D.Normal(t([0.0, 1.0]),
                                                                     t([1.0, 1.0])))
    with pytest.raises(NotImplementedError, match="does not implement mode"):
        mix.mode  # noqa: B018


def test_constraints():
    assert repr(constraints.positive) == "GreaterThan(lower_bound=0.0)"
    assert repr(constraints.unit_interval) == "Interval(lower_bound=0.0, upper_bound=1.0)"
    assert repr(constraints.real_vector) == "IndependentConstraint(Real(), 1)"
    assert constraints.integer_interval(0, 3).check(t([0.0, 3.0, 4.0, 1.5])).tolist() == [
        True, True, False, False]
    assert constraints.nonnegative_integer.check(t([0.0, 7.0, -1.0])).tolist() == [
        True, True, False]
    assert constraints.simplex.check(t([[0.2, 0.8], [0.5, 0.6]])).tolist() == [True, False]
    assert constraints.one_hot.check(t([[0.0, 1.0], [1.0, 1.0]])).tolist() == [True, False]
    assert constraints.lower_cholesky.check(t([[[1.0, 0.0], [2.0, 1.0]],
                                               [[1.0, 0.0], [2.0, -1.0]]])).tolist() == [
        True, False]
    assert constraints.positive_definite.check(t([[2.0, 1.0], [1.0, 2.0]])).item()
    assert not constraints.positive_definite.check(t([[1.0, 2.0], [2.0, 1.0]])).item()
    assert constraints.independent(constraints.positive, 1).check(t([[1.0, 2.0],
                                                                     [1.0, -2.0]])).tolist() == [
        True, False]
    assert constraints.is_dependent(constraints.dependent(is_discrete=False, event_dim=0))
    assert not constraints.is_dependent(D.Uniform(t(0.0), t(2.0)).arg_constraints["low"])
    with pytest.raises(ValueError, match="Cannot determine validity of dependent constraint"):
        constraints.dependent.check(t(1.0))
    assert D.Uniform(t(0.0), t(2.0)).support.check(t([1.0, 3.0])).tolist() == [True, False]


def test_transforms():
    tr = D.transforms
    x = t([-1.0, 0.0, 2.0])
    for f, dydx in ((tr.ExpTransform(), np.exp), (tr.SigmoidTransform(),
                                                   lambda v: np.exp(-v) / (1 + np.exp(-v)) ** 2),
                    (tr.TanhTransform(), lambda v: 1 - np.tanh(v) ** 2),
                    (tr.AffineTransform(1.0, -3.0), lambda v: 3.0 + 0 * v)):
        y = f(x)
        np.testing.assert_allclose(f.inv(y).numpy(), x.numpy(), atol=1e-12)
        np.testing.assert_allclose(f.log_abs_det_jacobian(x, y).numpy(),
                                   np.log(dydx(x.numpy())), rtol=1e-10)
        assert f.inv.inv is f
    c = tr.ComposeTransform([tr.AffineTransform(0.5, 2.0), tr.ExpTransform()])
    np.testing.assert_allclose(c(x).numpy(), np.exp(0.5 + 2 * x.numpy()))
    np.testing.assert_allclose(c.log_abs_det_jacobian(x, c(x)).numpy(),
                               math.log(2.0) + 0.5 + 2 * x.numpy())
    np.testing.assert_allclose(c.inv(c(x)).numpy(), x.numpy(), atol=1e-12)
    assert c.sign == 1 and tr.AffineTransform(0.0, -2.0).sign == -1
    assert tr.ExpTransform() == tr.ExpTransform() and tr.ExpTransform() != tr.TanhTransform()
    # caching returns the forward input for the inverse of its output
    cached = tr.TanhTransform(cache_size=1)
    y = cached(t([30.0]))
    assert cached.inv(y) is not None and cached.inv(y).item() == 30.0
    # an affine transform over vectors sums its log-det over the event
    a = tr.AffineTransform(t([0.0, 1.0]), t([2.0, 3.0]), event_dim=1)
    np.testing.assert_allclose(a.log_abs_det_jacobian(t([[1.0, 1.0]]), None).numpy(),
                               [math.log(6.0)])
    with pytest.raises(ValueError, match="transforms must be a Transform or list"):
        D.TransformedDistribution(D.Normal(t(0.0), t(1.0)), "exp")
