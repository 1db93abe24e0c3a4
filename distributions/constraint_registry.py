"""``biject_to`` and ``transform_to``: from a constraint to a transform whose codomain it is
(PyTorch's ``torch.distributions.constraint_registry``), for optimizing constrained
parameters in unconstrained space::

    loc = torch.zeros(100, requires_grad=True)
    unconstrained = torch.zeros(100, requires_grad=True)
    scale = transform_to(Normal.arg_constraints["scale"])(unconstrained)
    loss = -Normal(loc, scale).log_prob(data).sum()

``biject_to(c)`` is bijective (``log_abs_det_jacobian`` is meaningful, as HMC needs);
``transform_to(c)`` need not be (the simplex gets the softmax, whose coordinates suit
optimizers better). ``register(constraint, factory)`` adds a constraint (type or instance).
"""

from __future__ import annotations

import numbers

from . import constraints, transforms

__all__ = ["biject_to", "transform_to"]


class ConstraintRegistry:
    """Registry to link constraints to transforms."""

    def __init__(self):
        self._registry: dict = {}
        super().__init__()

    def register(self, constraint, factory=None):
        """Registers a ``Constraint`` subclass (or singleton instance) in this registry, with
        ``factory(constraint) -> Transform``. Usable as a decorator when ``factory`` is
        omitted."""
        if factory is None:
            return lambda factory: self.register(constraint, factory)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not isinstance(constraint, type) or not issubclass(constraint,
                                                              constraints.Constraint):
            raise TypeError("Expected constraint to be either a Constraint subclass or "
                            f"instance, but got {constraint}")
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint):
        """Looks up a transform to constrained space, given a constraint object."""
        try:
            factory = self._registry[type(constraint)]
        except KeyError:
            raise NotImplementedError(f"Cannot transform {type(constraint).__name__} "
                                      "constraints") from None
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


def _both(constraint, factory) -> None:
    biject_to.register(constraint, factory)
    transform_to.register(constraint, factory)


_both(constraints.real, lambda c: transforms.identity_transform)
_both(constraints.independent, lambda c: transforms.IndependentTransform(
    biject_to(c.base_constraint), c.reinterpreted_batch_ndims))
# (positive and nonnegative are instances of these two classes: exp, shifted by 0)
for _c in (constraints.greater_than, constraints.greater_than_eq):
    _both(_c, lambda c: transforms.ComposeTransform(
        [transforms.ExpTransform(), transforms.AffineTransform(c.lower_bound, 1)]))
_both(constraints.less_than, lambda c: transforms.ComposeTransform(
    [transforms.ExpTransform(), transforms.AffineTransform(c.upper_bound, -1)]))


def _transform_to_interval(c):
    # Handle the special case of the unit interval.
    lower_is_0 = isinstance(c.lower_bound, numbers.Number) and c.lower_bound == 0
    upper_is_1 = isinstance(c.upper_bound, numbers.Number) and c.upper_bound == 1
    if lower_is_0 and upper_is_1:
        return transforms.SigmoidTransform()
    return transforms.ComposeTransform([
        transforms.SigmoidTransform(),
        transforms.AffineTransform(c.lower_bound, c.upper_bound - c.lower_bound)])


_both(constraints.interval, _transform_to_interval)
_both(constraints.half_open_interval, _transform_to_interval)
biject_to.register(constraints.simplex, lambda c: transforms.StickBreakingTransform())
transform_to.register(constraints.simplex, lambda c: transforms.SoftmaxTransform())
transform_to.register(constraints.independent, lambda c: transforms.IndependentTransform(
    transform_to(c.base_constraint), c.reinterpreted_batch_ndims))
transform_to.register(constraints.lower_cholesky, lambda c: transforms.LowerCholeskyTransform())
transform_to.register(constraints.positive_definite,
                      lambda c: transforms.PositiveDefiniteTransform())
transform_to.register(constraints.positive_semidefinite,
                      lambda c: transforms.PositiveDefiniteTransform())
_both(constraints.corr_cholesky, lambda c: transforms.CorrCholeskyTransform())


def _piecewise(registry, transform_type, attrs=()):
    """The factory of ``registry`` for a ``cat``/``stack`` constraint: each piece's transform
    from the same registry, joined along the constraint's dim."""
    def factory(c):
        return transform_type([registry(part) for part in c.cseq], dim=c.dim,
                              **{a: getattr(c, a) for a in attrs})
    return factory


for _registry in (biject_to, transform_to):
    _registry.register(constraints.cat, _piecewise(_registry, transforms.CatTransform,
                                                   ("lengths",)))
    _registry.register(constraints.stack, _piecewise(_registry, transforms.StackTransform))
