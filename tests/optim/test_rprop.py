"""Rprop (optim/rprop.py) against a float64 NumPy transcription of PyTorch's documented update
over twelve steps with sign flips, and its argument checks."""

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import run_optimizer as run
from tritongrad import nn, optim

rng = np.random.default_rng(41)


def ref_rprop(p, grads, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), maximize=False):
    p = np.array(p, dtype=np.float64)
    prev, step = np.zeros_like(p), np.full_like(p, lr)
    out = []
    for g in grads:
        g = -np.asarray(g) if maximize else np.array(g, dtype=np.float64)
        s = g * prev
        step = np.clip(step * np.where(s > 0, etas[1], np.where(s < 0, etas[0], 1.0)),
                       *step_sizes)
        g = np.where(s < 0, 0.0, g)
        p = p - np.sign(g) * step
        prev = g
        out.append(p.copy())
    return out


@pytest.mark.parametrize("kw", [{}, {"lr": 0.05, "etas": (0.4, 1.3), "step_sizes": (1e-3, 0.2)},
                                {"maximize": True}], ids=str)
def test_matches_the_formula(device, kw):
    p0 = rng.standard_normal((3, 4))
    grads = [rng.standard_normal((3, 4)) * (1 if i % 3 else -1) for i in range(12)]
    got, opt, p = run(optim.Rprop, grads, p0, device, **kw)
    for a, b in zip(got, ref_rprop(p0, grads, **kw)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    assert set(opt.state[p]) == {"step", "prev", "step_size"}


def test_checks():
    w = [nn.Parameter(tg.ones(1))]
    with pytest.raises(ValueError, match="Invalid eta values: 1.5, 1.2"):
        optim.Rprop(w, etas=(1.5, 1.2))
    with pytest.raises(ValueError, match="Invalid learning rate"):
        optim.Rprop(w, lr=-1)
