"""Property tests: random compositions of ops over random broadcastable shapes, with first and
second derivatives checked against float64 finite differences (tests/helpers.py)."""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tritongrad as tg
from tests.helpers import assert_grads_match

# smooth on the sampled domain (inputs in [0.5, 1.5]), so finite differences are reliable
UNARY = {
    "exp": lambda x: (x * 0.5).exp(),
    "tanh": lambda x: x.tanh(),
    "sigmoid": lambda x: x.sigmoid(),
    "sin": lambda x: x.sin(),
    "square": lambda x: x * x,
    "log": lambda x: (x * x + 1).log(),
    "sqrt": lambda x: (x * x + 1).sqrt(),
}
BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / (b * b + 1),
    "maximum_soft": lambda a, b: (a * a + b * b).sqrt(),
}


@st.composite
def programs(draw):
    """Two inputs of broadcastable shapes and a random sequence of ops over them."""
    nd = draw(st.integers(0, 3))
    base = draw(st.lists(st.integers(1, 3), min_size=nd, max_size=nd))

    def shape():
        k = draw(st.integers(0, nd))
        return tuple(1 if draw(st.booleans()) else n for n in base[nd - k:])

    steps = draw(st.lists(st.tuples(st.sampled_from(sorted(UNARY) + sorted(BINARY)),
                                    st.integers(0, 1)), min_size=1, max_size=5))
    reduce_dim = draw(st.sampled_from([None, -1]))
    return shape(), shape(), steps, reduce_dim


def build(steps, reduce_dim):
    def fn(a, b):
        vals = [a, b]
        for name, which in steps:
            if name in UNARY:
                vals[which] = UNARY[name](vals[which])
            else:
                vals[which] = BINARY[name](vals[which], vals[1 - which])
        out = vals[0] * 0.7 + vals[1] * 0.3
        if reduce_dim is not None and out.ndim:
            out = out.sum(reduce_dim)
        return out
    return fn


def _inputs(sa, sb, seed):
    rng = np.random.default_rng(seed)
    return (tg.tensor(rng.uniform(0.5, 1.5, sa), dtype=tg.float64),
            tg.tensor(rng.uniform(0.5, 1.5, sb), dtype=tg.float64))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.integers(0, 2**31))
def test_random_programs_first_derivatives(prog, seed):
    sa, sb, steps, reduce_dim = prog
    fn = build(steps, reduce_dim)
    a, b = _inputs(sa, sb, seed)
    assert_grads_match(fn, [a, b], atol=1e-5, rtol=1e-4)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.integers(0, 2**31))
def test_random_programs_second_derivatives(prog, seed):
    """d/dx of <grad f(x), w>: the gradient of the first derivative, against finite
    differences of that first derivative (itself computed by the engine, create_graph=True)."""
    sa, sb, steps, reduce_dim = prog
    fn = build(steps, reduce_dim)
    a, b = _inputs(sa, sb, seed)
    rng = np.random.default_rng(seed + 1)
    wa = tg.tensor(rng.uniform(-1, 1, sa), dtype=tg.float64)
    wb = tg.tensor(rng.uniform(-1, 1, sb), dtype=tg.float64)

    def first_derivative_dot_w(x, y):
        if not x.requires_grad:  # the finite-difference evaluations pass plain tensors
            x, y = x.requires_grad_(), y.requires_grad_()
        out = fn(x, y)
        g = tg.ones_like(out) if out.numel() != 1 else None
        ga, gb = tg.autograd.grad(out, (x, y), g, create_graph=True, allow_unused=True)
        total = tg.zeros((), dtype=tg.float64)
        if ga is not None:
            total = total + (ga * wa).sum()
        if gb is not None:
            total = total + (gb * wb).sum()
        return total

    assert_grads_match(first_derivative_dot_w, [a, b], atol=1e-5, rtol=1e-4)


def test_random_programs_on_cuda_match_cpu():
    """A fixed sample of programs: gradients on the CUDA backend equal the CPU backend's."""
    rng = np.random.default_rng(7)
    names = sorted(UNARY) + sorted(BINARY)
    for i in range(6):
        steps = [(names[rng.integers(len(names))], int(rng.integers(2))) for _ in range(3)]
        fn = build(steps, -1)
        a, b = _inputs((2, 3), (3,), i)
        grads = {}
        for dev in ("cpu", "cuda"):
            x = a.to(dev).requires_grad_()
            y = b.to(dev).requires_grad_()
            out = fn(x, y)
            gx, gy = tg.autograd.grad(out, (x, y), tg.ones_like(out), allow_unused=True)
            grads[dev] = [None if g is None else g.cpu().numpy() for g in (gx, gy)]
        for c, d in zip(grads["cpu"], grads["cuda"]):
            assert (c is None) == (d is None)
            if c is not None:
                np.testing.assert_allclose(d, c, rtol=1e-10, atol=1e-12)
