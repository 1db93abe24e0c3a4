"""``Distribution``: the abstract base class of probability distributions (PyTorch's
``torch.distributions.Distribution``)."""

from __future__ import annotations

import warnings

import tritongrad as torch
from tritongrad import Size, Tensor

from . import constraints
from .utils import lazy_property

__all__ = ["Distribution"]


class Distribution:
    r"""Distribution is the abstract base class for probability distributions.

    A distribution has a ``batch_shape`` (independent, not identically distributed draws) and
    an ``event_shape`` (the shape of one draw); ``sample(sample_shape)`` returns a tensor of
    ``sample_shape + batch_shape + event_shape``, and ``log_prob(value)`` one of
    ``sample_shape + batch_shape``.

    Args:
        batch_shape: the shape over which parameters are batched.
        event_shape: the shape of a single sample (without batching).
        validate_args: whether to validate input arguments (parameters in the constructor,
            values in ``log_prob`` and friends). Defaults to the class-wide setting,
            ``Distribution.set_default_validate_args`` (True unless Python runs with ``-O``).

    Example:
        >>> import tritongrad as torch
        >>> d = torch.distributions.Normal(torch.zeros(3), torch.ones(3))
        >>> d.sample((2,)).shape
        tritongrad.Size([2, 3])
    """

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Sets whether validation is enabled or disabled (for distributions constructed
        without ``validate_args``).

        The default behavior mimics Python's ``assert`` statement: validation is on by
        default, but is disabled if Python is run in optimized mode (via ``python -O``).
        Validation may be expensive, so you may want to disable it once a model is working.
        """
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args: bool | None = None):
        self._batch_shape = Size(batch_shape)
        self._event_shape = Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
                warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set "
                              "`arg_constraints = {}` or initialize the distribution with "
                              "`validate_args=False` to turn off validation.", stacklevel=2)
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue  # skip constraints that cannot be checked
                if param not in self.__dict__ and isinstance(getattr(type(self), param),
                                                             lazy_property):
                    continue  # skip checking lazily-constructed args
                value = getattr(self, param)
                valid = constraint.check(value)
                if not bool(valid.all()):
                    raise ValueError(
                        f"Expected parameter {param} "
                        f"({type(value).__name__} of shape {tuple(value.shape)}) "
                        f"of distribution {self!r} "
                        f"to satisfy the constraint {constraint!r}, "
                        f"but found invalid values:\n{value}")
        super().__init__()

    def expand(self, batch_shape, _instance=None):
        """Returns a new distribution instance (or populates an existing instance provided by a
        derived class) with batch dimensions expanded to ``batch_shape``. This calls
        ``Tensor.expand`` on the distribution's parameters, so no new memory is allocated for
        the expanded instance; validation is not repeated.

        Args:
            batch_shape (Size): the desired expanded size.
            _instance: new instance provided by subclasses that need to override ``.expand``.
        """
        raise NotImplementedError

    def _expanded(self, cls: type, batch_shape, _instance, params):
        """``expand``'s common body: a ``cls`` instance whose parameters (those of ``params``
        set on this instance: names, or a dict of names to their count of event dimensions,
        which are kept) are expanded to ``batch_shape``."""
        new = self._get_checked_instance(cls, _instance)
        batch_shape = Size(batch_shape)
        dims = params if isinstance(params, dict) else dict.fromkeys(params, 0)
        for name, event_dims in dims.items():
            if name in self.__dict__:
                value = self.__dict__[name]
                tail = tuple(value.shape[value.dim() - event_dims:]) if event_dims else ()
                setattr(new, name, value.expand(tuple(batch_shape) + tail))
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def batch_shape(self) -> Size:
        """The shape over which parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        """The shape of a single sample (without batching)."""
        return self._event_shape

    @property
    def arg_constraints(self) -> dict:
        """A dictionary from argument names to ``Constraint`` objects that should be satisfied
        by each argument of this distribution. Args that are not tensors need not appear."""
        raise NotImplementedError

    @property
    def support(self):
        """A ``Constraint`` object representing this distribution's support."""
        raise NotImplementedError

    @property
    def mean(self) -> Tensor:
        """The mean of the distribution."""
        raise NotImplementedError(f"{self.__class__} does not implement mean")

    @property
    def mode(self) -> Tensor:
        """The mode of the distribution."""
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self) -> Tensor:
        """The variance of the distribution."""
        raise NotImplementedError(f"{self.__class__} does not implement variance")

    @property
    def stddev(self) -> Tensor:
        """The standard deviation of the distribution."""
        return self.variance.sqrt()

    def sample(self, sample_shape=()) -> Tensor:
        """Generates a ``sample_shape`` shaped sample, or ``sample_shape`` shaped batch of
        samples if the distribution parameters are batched (without gradients)."""
        with torch.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()) -> Tensor:
        """Generates a ``sample_shape`` shaped reparameterized sample, or ``sample_shape``
        shaped batch of reparameterized samples if the distribution parameters are batched."""
        raise NotImplementedError

    def sample_n(self, n: int) -> Tensor:
        """Generates ``n`` samples, or ``n`` batches of samples if the distribution parameters
        are batched (deprecated: use ``sample((n,))``)."""
        warnings.warn("`sample_n(n)` will be deprecated. Use `sample((n,))` instead.",
                      FutureWarning, stacklevel=2)
        return self.sample(Size((n,)))

    def log_prob(self, value: Tensor) -> Tensor:
        """Returns the log of the probability density/mass function evaluated at ``value``."""
        raise NotImplementedError

    def cdf(self, value: Tensor) -> Tensor:
        """Returns the cumulative density/mass function evaluated at ``value``."""
        raise NotImplementedError

    def icdf(self, value: Tensor) -> Tensor:
        """Returns the inverse cumulative density/mass function evaluated at ``value``."""
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """Returns a tensor containing all values supported by a discrete distribution, of
        shape ``(cardinality,) + batch_shape + event_shape`` (``(cardinality,) + (1,) *
        len(batch_shape) + event_shape`` with ``expand=False``). Values are enumerated over
        dimension 0."""
        raise NotImplementedError

    def entropy(self) -> Tensor:
        """Returns the entropy of the distribution, batched over ``batch_shape``."""
        raise NotImplementedError

    def perplexity(self) -> Tensor:
        """Returns the perplexity of the distribution, batched over ``batch_shape``."""
        return torch.exp(self.entropy())

    def _extended_shape(self, sample_shape=()) -> Size:
        """The size of the sample returned by the distribution, given a ``sample_shape``:
        ``sample_shape + batch_shape + event_shape``."""
        if isinstance(sample_shape, int):
            # (PyTorch's words, from torch.Size(int), then the fix)
            raise TypeError(f"'int' object is not iterable: sample_shape must be a tuple of ints "
                            f"(torch.Size), got the int {sample_shape}; write ({sample_shape},)")
        return Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _validate_sample(self, value: Tensor) -> None:
        """Argument validation for ``log_prob`` and friends: ``value`` must be a tensor whose
        right-most dimensions match ``event_shape``, that broadcasts with ``batch_shape +
        event_shape``, and that lies in the support."""
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = len(value.size()) - len(self._event_shape)
        if tuple(value.size()[event_dim_start:]) != tuple(self._event_shape):
            raise ValueError(f"The right-most size of value must match event_shape: "
                             f"{value.size()} vs {self._event_shape}.")
        actual_shape = value.size()
        expected_shape = Size(tuple(self._batch_shape) + tuple(self._event_shape))
        for i, j in zip(reversed(actual_shape), reversed(expected_shape)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: "
                                 f"{actual_shape} vs {expected_shape}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample "
                          "validation. Please initialize the distribution with "
                          "`validate_args=False` to turn off validation.", stacklevel=2)
            return
        assert support is not None
        valid = support.check(value)
        if not bool(valid.all()):
            raise ValueError(
                "Expected value argument "
                f"({type(value).__name__} of shape {tuple(value.shape)}) "
                f"to be within the support ({support!r}) "
                f"of the distribution {self!r}, "
                f"but found invalid values:\n{value}")

    def _get_checked_instance(self, cls: type, _instance=None):
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(
                f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                "__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self) -> str:
        param_names = [k for k, _ in self.arg_constraints.items() if k in self.__dict__]
        args_string = ", ".join(
            f"{p}: {v if (v := self.__dict__[p]).numel() == 1 else v.size()}"
            for p in param_names)
        return self.__class__.__name__ + "(" + args_string + ")"
