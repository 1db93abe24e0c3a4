"""``tritongrad.quasirandom``: PyTorch's ``SobolEngine`` (quasi-random Sobol sequences).

The sequence is SciPy's ``scipy.stats.qmc.Sobol`` with 30 bits: the same Joe-Kuo direction
numbers (search criterion D(6), up to 21201 dimensions) and Gray-code order as PyTorch's
engine, so unscrambled points equal PyTorch's. Scrambling (a random lower-triangular matrix
scramble plus a digital shift, Owen's linear matrix scrambling, as PyTorch's) draws its random
bits from NumPy's generator seeded with ``seed``: a seed gives the same points on every run, but
not the points PyTorch's generator would give.
"""

from __future__ import annotations

import warnings

__all__ = ["SobolEngine"]


class SobolEngine:
    """An engine drawing (scrambled) Sobol points in [0, 1)^dimension, as
    ``torch.quasirandom.SobolEngine``.

    Args:
        dimension: the points' dimension, in [1, 21201].
        scramble: scramble the sequence (default False).
        seed: the scrambling's seed; None draws one from tritongrad's default generator (so
            ``tg.manual_seed`` makes it reproducible).

    Example:
        >>> tg.quasirandom.SobolEngine(dimension=2).draw(3)
        tensor([[0.0000, 0.0000],
                [0.5000, 0.5000],
                [0.7500, 0.2500]])
    """

    MAXBIT = 30
    MAXDIM = 21201

    def __init__(self, dimension: int, scramble: bool = False, seed: int | None = None):
        if dimension > self.MAXDIM or dimension < 1:
            raise ValueError(f"Supported range of dimensionality for SobolEngine is "
                             f"[1, {self.MAXDIM}]")
        self.seed, self.scramble, self.dimension = seed, scramble, dimension
        self._engine = self._make_engine()
        self.num_generated = 0

    def _make_engine(self):
        try:
            from scipy.stats import qmc
        except ImportError as e:
            raise ImportError("SobolEngine draws its points with SciPy's scipy.stats.qmc.Sobol, "
                              "and SciPy is not installed: pip install scipy") from e
        seed = self.seed
        if self.scramble and seed is None:
            from .autograd.ops import randint
            seed = int(randint(0, 2 ** 62, ()).item())
        return qmc.Sobol(self.dimension, scramble=self.scramble, bits=self.MAXBIT, rng=seed)

    def draw(self, n: int = 1, out=None, dtype=None):
        """The next ``n`` points, an (n, dimension) tensor of ``dtype`` (default: the default
        dtype); written into ``out`` (resized) when given."""
        from .autograd.ops import tensor
        from .runtime import dtype as dtypes
        with warnings.catch_warnings():  # SciPy's note on n not being a power of 2
            warnings.simplefilter("ignore")
            points = self._engine.random(n)
        self.num_generated += n
        result = tensor(points, dtype=dtypes.get_default_dtype() if dtype is None else dtype)
        if out is not None:
            out.resize_as_(result).copy_(result)
            return out
        return result

    def draw_base2(self, m: int, out=None, dtype=None):
        """The next 2 ** m points; the total drawn must stay a power of 2 (Sobol points are
        balanced only then), as PyTorch requires."""
        n = 2 ** m
        total_n = self.num_generated + n
        if total_n & (total_n - 1) != 0:
            raise ValueError(
                "The balance properties of Sobol' points require n to be a power of 2. "
                f"{self.num_generated} points have been previously generated, then: "
                f"n={self.num_generated}+2**{m}={total_n}. If you still want to do this, "
                "please use 'SobolEngine.draw()' instead.")
        return self.draw(n=n, out=out, dtype=dtype)

    def reset(self) -> "SobolEngine":
        """Back to the first point (the same scrambling)."""
        self._engine.reset()
        self.num_generated = 0
        return self

    def fast_forward(self, n: int) -> "SobolEngine":
        """Skips ``n`` points, as drawing them would."""
        self._engine.fast_forward(n)
        self.num_generated += n
        return self

    def __repr__(self) -> str:
        parts = [f"dimension={self.dimension}"]
        if self.scramble:
            parts.append("scramble=True")
        if self.seed is not None:
            parts.append(f"seed={self.seed}")
        return f"{type(self).__name__}({', '.join(parts)})"
