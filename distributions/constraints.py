"""Constraints: the sets that parameters and values of distributions live in, as PyTorch's
``torch.distributions.constraints``. ``constraint.check(value)`` returns a bool tensor of which
events satisfy it (one entry per event: its shape is ``value``'s without the constraint's
``event_dim`` right-most dimensions).
"""

from __future__ import annotations

import tritongrad as torch

__all__ = [
    "Constraint", "MixtureSameFamilyConstraint", "boolean", "cat", "corr_cholesky", "dependent",
    "dependent_property",
    "greater_than", "greater_than_eq", "half_open_interval", "independent", "integer_interval",
    "interval", "is_dependent", "less_than", "lower_cholesky", "lower_triangular", "multinomial",
    "nonnegative", "nonnegative_integer", "one_hot", "positive", "positive_definite",
    "positive_integer", "positive_semidefinite", "real", "real_vector", "simplex", "square",
    "stack", "symmetric", "unit_interval",
]


class Constraint:
    """Abstract base class for constraints.

    Attributes:
        is_discrete (bool): whether the constrained space is discrete.
        event_dim (int): number of right-most dimensions that together define an event; ``check``
            reduces over them.
    """

    is_discrete = False
    event_dim = 0

    def check(self, value):
        """A byte tensor of ``sample_shape + batch_shape`` saying whether each event in
        ``value`` satisfies this constraint."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.__class__.__name__[1:] + "()"


class _Dependent(Constraint):
    """Placeholder for variables whose support depends on other variables (such as a Uniform's
    ``low`` and ``high``): it has no ``check``."""

    def __init__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        self._is_discrete = is_discrete
        self._event_dim = event_dim
        super().__init__()

    @property
    def is_discrete(self) -> bool:
        if self._is_discrete is NotImplemented:
            raise NotImplementedError(".is_discrete cannot be determined statically")
        return self._is_discrete

    @property
    def event_dim(self) -> int:
        if self._event_dim is NotImplemented:
            raise NotImplementedError(".event_dim cannot be determined statically")
        return self._event_dim

    def __call__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        """A new dependent constraint with the given static attributes."""
        if is_discrete is NotImplemented:
            is_discrete = self._is_discrete
        if event_dim is NotImplemented:
            event_dim = self._event_dim
        return _Dependent(is_discrete=is_discrete, event_dim=event_dim)

    def check(self, x):
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint) -> bool:
    """Whether ``constraint`` is a ``_Dependent`` (checks against it are skipped)."""
    return isinstance(constraint, _Dependent)


class _DependentProperty(property, _Dependent):
    """A property that is a dependent constraint on the class and a computed constraint on an
    instance::

        class Uniform(Distribution):
            @constraints.dependent_property(is_discrete=False, event_dim=0)
            def support(self):
                return constraints.interval(self.low, self.high)
    """

    def __init__(self, fn=None, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        property.__init__(self, fn)
        self._is_discrete = is_discrete
        self._event_dim = event_dim

    def __call__(self, fn):
        return _DependentProperty(fn, is_discrete=self._is_discrete, event_dim=self._event_dim)


class _IndependentConstraint(Constraint):
    """Wraps a constraint by aggregating over ``reinterpreted_batch_ndims`` more dimensions,
    as ``Independent`` does for distributions."""

    def __init__(self, base_constraint: Constraint, reinterpreted_batch_ndims: int):
        assert isinstance(base_constraint, Constraint)
        assert isinstance(reinterpreted_batch_ndims, int) and reinterpreted_batch_ndims >= 0
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        super().__init__()

    @property
    def is_discrete(self) -> bool:
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value):
        result = self.base_constraint.check(value)
        if result.dim() < self.reinterpreted_batch_ndims:
            expected = self.base_constraint.event_dim + self.reinterpreted_batch_ndims
            raise ValueError(f"Expected value.dim() >= {expected} but got {value.dim()}")
        result = result.reshape(tuple(result.shape[:result.dim()
                                                    - self.reinterpreted_batch_ndims]) + (-1,))
        return result.all(-1)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__[1:]}({self.base_constraint!r}, "
                f"{self.reinterpreted_batch_ndims})")


class _Boolean(Constraint):
    """Constrain to the two values ``{0, 1}``."""

    is_discrete = True

    def check(self, value):
        return (value == 0) | (value == 1)


class _OneHot(Constraint):
    """Constrain to one-hot vectors."""

    is_discrete = True
    event_dim = 1

    def check(self, value):
        is_boolean = (value == 0) | (value == 1)
        is_normalized = value.sum(-1).eq(1)
        return is_boolean.all(-1) & is_normalized


class _IntegerInterval(Constraint):
    """Constrain to an integer interval ``[lower_bound, upper_bound]``."""

    is_discrete = True

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value):
        return (value % 1 == 0) & (self.lower_bound <= value) & (value <= self.upper_bound)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound}, "
                f"upper_bound={self.upper_bound})")


class _IntegerGreaterThan(Constraint):
    """Constrain to an integer interval ``[lower_bound, inf)``."""

    is_discrete = True

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound
        super().__init__()

    def check(self, value):
        return (value % 1 == 0) & (value >= self.lower_bound)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound})"


class _Real(Constraint):
    """Trivially constrain to the extended real line ``[-inf, inf]`` (NaN is refused)."""

    def check(self, value):
        return ~torch.isnan(value)


class _GreaterThan(Constraint):
    """Constrain to a real half line ``(lower_bound, inf]``."""

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound
        super().__init__()

    def check(self, value):
        return self.lower_bound < value

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound})"


class _GreaterThanEq(_GreaterThan):
    """Constrain to a real half line ``[lower_bound, inf)``."""

    def check(self, value):
        return self.lower_bound <= value


class _LessThan(Constraint):
    """Constrain to a real half line ``[-inf, upper_bound)``."""

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value):
        return value < self.upper_bound

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}(upper_bound={self.upper_bound})"


class _Interval(Constraint):
    """Constrain to a real interval ``[lower_bound, upper_bound]``."""

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value):
        return (self.lower_bound <= value) & (value <= self.upper_bound)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound}, "
                f"upper_bound={self.upper_bound})")


class _HalfOpenInterval(_Interval):
    """Constrain to a real interval ``[lower_bound, upper_bound)``."""

    def check(self, value):
        return (self.lower_bound <= value) & (value < self.upper_bound)


class _Simplex(Constraint):
    """Constrain to the unit simplex in the innermost (right-most) dimension: ``x >= 0`` and
    ``x.sum(-1) == 1`` (to 1e-6)."""

    event_dim = 1

    def check(self, value):
        return (value >= 0).all(-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _Multinomial(Constraint):
    """Constrain to nonnegative integer values summing to at most ``upper_bound`` (the sum is
    not checked to equal it, as PyTorch's)."""

    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, x):
        return (x >= 0).all(dim=-1) & (x.sum(dim=-1) <= self.upper_bound)


class _LowerTriangular(Constraint):
    """Constrain to lower-triangular square matrices."""

    event_dim = 2

    def check(self, value):
        value_tril = value.tril()
        return (value_tril == value).reshape(tuple(value.shape[:-2]) + (-1,)).all(-1)


class _LowerCholesky(Constraint):
    """Constrain to lower-triangular square matrices with positive diagonals."""

    event_dim = 2

    def check(self, value):
        value_tril = value.tril()
        lower = (value_tril == value).reshape(tuple(value.shape[:-2]) + (-1,)).all(-1)
        positive_diagonal = (value.diagonal(dim1=-2, dim2=-1) > 0).all(-1)
        return lower & positive_diagonal


class _CorrCholesky(Constraint):
    """Constrain to lower-triangular square matrices with positive diagonals and each row
    vector of unit length."""

    event_dim = 2

    def check(self, value):
        tol = torch.finfo(value.dtype).eps * value.size(-1) * 10
        row_norm = torch.linalg.norm(value.detach(), dim=-1)
        unit_row_norm = ((row_norm - 1.0).abs() <= tol).all(dim=-1)
        return _LowerCholesky().check(value) & unit_row_norm


class _Square(Constraint):
    """Constrain to square matrices."""

    event_dim = 2

    def check(self, value):
        return torch.full(tuple(value.shape[:-2]), value.shape[-2] == value.shape[-1],
                          dtype=torch.bool, device=value.device)


class _Symmetric(_Square):
    """Constrain to symmetric square matrices."""

    def check(self, value):
        square_check = super().check(value)
        if not square_check.all():
            return square_check
        return torch.isclose(value, value.mT, atol=1e-6).all(-2).all(-1)


class _PositiveSemidefinite(_Symmetric):
    """Constrain to positive-semidefinite matrices."""

    def check(self, value):
        sym_check = super().check(value)
        if not sym_check.all():
            return sym_check
        return torch.linalg.eigvalsh(value).ge(0).all(-1)


class _PositiveDefinite(_Symmetric):
    """Constrain to positive-definite matrices."""

    def check(self, value):
        sym_check = super().check(value)
        if not sym_check.all():
            return sym_check
        # (a matrix with an infinite entry is not positive definite, whatever the
        # factorization reports)
        finite = value.isfinite().all(-1).all(-1)
        return torch.linalg.cholesky_ex(value).info.eq(0) & finite


class _Cat(Constraint):
    """Applies a sequence of constraints ``cseq`` to the submatrices at dimension ``dim``, each
    of size ``lengths[dim]``, in a way compatible with ``torch.cat``."""

    def __init__(self, cseq, dim: int = 0, lengths=None):
        assert all(isinstance(c, Constraint) for c in cseq)
        self.cseq = list(cseq)
        if lengths is None:
            lengths = [1] * len(self.cseq)
        self.lengths = list(lengths)
        assert len(self.lengths) == len(self.cseq)
        self.dim = dim
        super().__init__()

    @property
    def is_discrete(self) -> bool:
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self) -> int:
        return max(c.event_dim for c in self.cseq)

    def check(self, value):
        assert -value.dim() <= self.dim < value.dim()
        checks, start = [], 0
        for constr, length in zip(self.cseq, self.lengths):
            v = value.narrow(self.dim, start, length)
            checks.append(constr.check(v))
            start = start + length
        return torch.cat(checks, self.dim)


class _Stack(Constraint):
    """Applies a sequence of constraints ``cseq`` to the submatrices at dimension ``dim``, in
    a way compatible with ``torch.stack``."""

    def __init__(self, cseq, dim: int = 0):
        assert all(isinstance(c, Constraint) for c in cseq)
        self.cseq = list(cseq)
        self.dim = dim
        super().__init__()

    @property
    def is_discrete(self) -> bool:
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self) -> int:
        dim = max(c.event_dim for c in self.cseq)
        if self.dim + dim < 0:
            dim += 1
        return dim

    def check(self, value):
        assert -value.dim() <= self.dim < value.dim()
        vs = [value.select(self.dim, i) for i in range(value.size(self.dim))]
        return torch.stack([constr.check(v) for v, constr in zip(vs, self.cseq)], self.dim)


class MixtureSameFamilyConstraint(Constraint):
    """The support of a ``MixtureSameFamily``: a value (without the components' dimension)
    is checked against the component distribution's constraint ``base_constraint`` (whose
    parameters carry that dimension, the right-most batch dimension) for every component."""

    def __init__(self, base_constraint: Constraint):
        assert isinstance(base_constraint, Constraint)
        self.base_constraint = base_constraint
        super().__init__()

    @property
    def is_discrete(self) -> bool:
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:
        return self.base_constraint.event_dim

    def check(self, value):
        # add back the components' dimension, check every component, require all
        unsqueeze_dim = -1 - self.event_dim
        result = self.base_constraint.check(value.unsqueeze(unsqueeze_dim))
        return result.all(-1)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.base_constraint!r})"


# Public interface (PyTorch's names).
dependent = _Dependent()
dependent_property = _DependentProperty
independent = _IndependentConstraint
boolean = _Boolean()
one_hot = _OneHot()
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
integer_interval = _IntegerInterval
real = _Real()
real_vector = independent(real, 1)
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
multinomial = _Multinomial
unit_interval = _Interval(0.0, 1.0)
interval = _Interval
half_open_interval = _HalfOpenInterval
simplex = _Simplex()
lower_triangular = _LowerTriangular()
lower_cholesky = _LowerCholesky()
corr_cholesky = _CorrCholesky()
square = _Square()
symmetric = _Symmetric()
positive_semidefinite = _PositiveSemidefinite()
positive_definite = _PositiveDefinite()
cat = _Cat
stack = _Stack
