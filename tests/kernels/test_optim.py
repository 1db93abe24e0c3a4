"""The fused optimizer updates against the NumPy backend (bit-exact for float32 under the
interpreter; ~1 ulp on GPUs, which may fuse multiply-adds)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from kernel_kit import INTERPRET, D, tk

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

EXACT = (0, 0) if INTERPRET else (2e-6, 1e-7)
TOL = {D.float32: EXACT, D.float64: (1e-14, 1e-15), D.float16: (2e-3, 1e-3),
       D.bfloat16: (1e-2, 1e-2)}


def _arrays(kit, rng, dtype, n, k, layout="contig"):
    pairs = [kit.pair((n,) if layout == "contig" else (n, 3), dtype, rng, layout=layout)
             for _ in range(k)]
    return [p[0] for p in pairs], [np.array(p[1], dtype=np.float64 if dtype is D.float64
                                            else np.float32) for p in pairs]


def _close(kit, got, want, dtype):
    r, a = TOL[dtype]
    kit.check(got, want, dtype, rtol=r, atol=a, check_dtype=False)


SGD = list(itertools.product([0.0, 0.9], [0.0, 0.1], [0.0, 0.01], [False, True],
                             [False, True], [False, True]))


@pytest.mark.parametrize("momentum,dampening,wd,nesterov,maximize,first", SGD)
def test_sgd_step_float32(kit, rng, momentum, dampening, wd, nesterov, maximize, first):
    (p, g, buf), (rp, rg, rbuf) = _arrays(kit, rng, D.float32, 37, 3)
    tk.sgd_step(p, g, buf if momentum else None, 0.1, momentum, dampening, wd, nesterov,
                maximize, first)
    kit.nk.sgd_step(rp, rg, rbuf if momentum else None, 0.1, momentum, dampening, wd, nesterov,
                    maximize, first)
    _close(kit, p, rp, D.float32)
    _close(kit, buf, rbuf, D.float32)


ADAM = list(itertools.product([0.0, 0.01], [False, True], [False, True], [False, True]))


@pytest.mark.parametrize("wd,amsgrad,maximize,decoupled", ADAM)
def test_adam_step_float32(kit, rng, wd, amsgrad, maximize, decoupled):
    (p, g, m, v, vm), (rp, rg, rm, rv, rvm) = _arrays(kit, rng, D.float32, 37, 5)
    v, rv = tk.mul(v, v), rv * rv
    vm, rvm = tk.mul(vm, vm), rvm * rvm
    for step in (1, 5):
        tk.adam_step(p, g, m, v, vm if amsgrad else None, step, 1e-3, 0.9, 0.999, 1e-8, wd,
                     amsgrad, maximize, decoupled)
        kit.nk.adam_step(rp, rg, rm, rv, rvm if amsgrad else None, step, 1e-3, 0.9, 0.999,
                         1e-8, wd, amsgrad, maximize, decoupled)
    for got, want in [(p, rp), (m, rm), (v, rv), (vm, rvm)]:
        _close(kit, got, want, D.float32)


@pytest.mark.parametrize("dtype", [D.float64, D.float16, D.bfloat16], ids=str)
def test_steps_other_dtypes(kit, rng, dtype):
    (p, g, buf), (rp, rg, rbuf) = _arrays(kit, rng, dtype, 29, 3)
    tk.sgd_step(p, g, buf, 0.05, 0.9, 0.0, 0.01, True, False, False)
    kit.nk.sgd_step(rp, rg, rbuf, 0.05, 0.9, 0.0, 0.01, True, False, False)
    _close(kit, p, rp, dtype)
    (p, g, m, v), (rp, rg, rm, rv) = _arrays(kit, rng, dtype, 29, 4)
    v, rv = tk.mul(v, v), rv * rv
    tk.adam_step(p, g, m, v, None, 2, 1e-2, 0.9, 0.999, 1e-8, 0.01, False, False, True)
    kit.nk.adam_step(rp, rg, rm, rv, None, 2, 1e-2, 0.9, 0.999, 1e-8, 0.01, False, False, True)
    _close(kit, p, rp, dtype)
    _close(kit, m, rm, dtype)


def test_steps_noncontiguous_and_small_blocks(kit, rng, small_blocks):
    (p, g, m, v), (rp, rg, rm, rv) = _arrays(kit, rng, D.float32, 11, 4, layout="T")
    v, rv = tk.mul(v, v), rv * rv
    tk.adam_step(p, g, m, v, None, 3, 1e-3, 0.9, 0.999, 1e-8, 0.0, False, False, False)
    kit.nk.adam_step(rp, rg, rm, rv, None, 3, 1e-3, 0.9, 0.999, 1e-8, 0.0, False, False, False)
    for got, want in [(p, rp), (m, rm), (v, rv)]:
        _close(kit, got, want, D.float32)
    with pytest.raises(ValueError, match="sgd_step: shapes differ"):
        tk.sgd_step(p, tk.empty((3,), D.float32), None, 0.1, 0.0, 0.0, 0.0, False, False, True)
