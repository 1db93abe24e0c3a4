"""A ``vjp`` rule runs two ways (autograd/dispatch.py): on the backend's arrays when the
backward records nothing, and on Tensors through ops/traced.py under create_graph or while a
profiler observes. Both must give the float64 reference gradient, on both backends."""

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.autograd import profiler

RNG = np.random.default_rng(7)


def _pos(*shape):
    return RNG.uniform(0.5, 2.0, shape)


def _any(*shape):
    return RNG.uniform(-2.0, 2.0, shape)


# name -> (inputs, fn over Tensors); every fn is reduced with a weighted sum below
CASES = {
    "mul": ((_any(3, 4), _any(3, 4)), lambda a, b: a * b),
    "mul_broadcast": ((_any(3, 4), _any(4)), lambda a, b: a * b),
    "mul_scalar": ((_any(3, 4),), lambda a: a * 1.5),
    "div": ((_any(3, 4), _pos(3, 4)), lambda a, b: a / b),
    "div_scalar": ((_any(3, 4),), lambda a: a / 3.0),
    "add_alpha": ((_any(3, 4), _any(1, 4)), lambda a, b: tg.add(a, b, alpha=2.5)),
    "sub_alpha": ((_any(3, 4), _any(3, 1)), lambda a, b: tg.sub(a, b, alpha=0.5)),
    "rsub": ((_any(3, 4),), lambda a: 2.0 - a),
    "neg": ((_any(5),), lambda a: -a),
    "pow_scalar": ((_pos(3, 4),), lambda a: a ** 3),
    "pow_zero": ((_pos(3, 4),), lambda a: a ** 0),
    "exp": ((_any(3, 4),), lambda a: a.exp()),
    "log": ((_pos(3, 4),), lambda a: a.log()),
    "sqrt": ((_pos(3, 4),), lambda a: a.sqrt()),
    "relu": ((_any(3, 4),), lambda a: a.relu()),
    "abs": ((_any(3, 4),), lambda a: a.abs()),
    "sin": ((_any(3, 4),), lambda a: a.sin()),
    "cos": ((_any(3, 4),), lambda a: a.cos()),
    "tanh": ((_any(3, 4),), lambda a: a.tanh()),
    "sigmoid": ((_any(3, 4),), lambda a: a.sigmoid()),
    "log1p": ((_pos(3, 4),), lambda a: a.log1p()),
    "expm1": ((_any(3, 4),), lambda a: a.expm1()),
    "sum_dims": ((_any(2, 3, 4),), lambda a: a.sum((0, 2))),
    "sum_keepdim": ((_any(2, 3, 4),), lambda a: a.sum(1, keepdim=True) * a),
    "mean": ((_any(2, 3, 4),), lambda a: a.mean(2)),
    "mm": ((_any(3, 4), _any(4, 5)), lambda a, b: a.mm(b)),
    "mm_transposed": ((_any(4, 3), _any(5, 4)), lambda a, b: a.t().mm(b.t())),
    "bmm": ((_any(2, 3, 4), _any(2, 4, 5)), lambda a, b: a.bmm(b)),
    "softmax": ((_any(3, 4),), lambda a: tg.softmax(a, 1)),
    "log_softmax": ((_any(3, 4),), lambda a: tg.log_softmax(a, 0)),
    "permute": ((_any(2, 3, 4),), lambda a: a.permute(2, 0, 1) * a.permute(2, 0, 1)),
    "view_of_transpose": ((_any(3, 4),), lambda a: a.t().reshape(12) * 2),
    "expand": ((_any(3, 1),), lambda a: a.expand(3, 4) * 2),
}


def _reference_grads(inputs, fn, w):
    """Central differences in float64 of sum(fn(inputs) * w)."""
    grads = []
    for i, a in enumerate(inputs):
        g = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            vals = []
            for step in (1e-6, -1e-6):
                args = [x.copy() for x in inputs]
                args[i][idx] += step
                out = fn(*[tg.tensor(x) for x in args])
                vals.append(float((out.numpy() * w).sum()))
            g[idx] = (vals[0] - vals[1]) / 2e-6
        grads.append(g)
    return grads


@pytest.mark.parametrize("mode", ["arrays", "create_graph", "profiled"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_rule_gives_the_reference_gradient(name, mode, device):
    inputs, fn = CASES[name]
    out_shape = fn(*[tg.tensor(a) for a in inputs]).shape
    w = np.random.default_rng(1).uniform(-1, 1, tuple(out_shape))
    expected = _reference_grads(inputs, fn, w)
    xs = [tg.tensor(a, device=device, requires_grad=True) for a in inputs]
    loss = (fn(*xs) * tg.tensor(w, device=device)).sum()
    if mode == "profiled":
        with profiler.profile():
            got = tg.autograd.grad(loss, xs)
    else:
        got = tg.autograd.grad(loss, xs, create_graph=mode == "create_graph")
    for g, e in zip(got, expected):
        if mode != "create_graph":  # (recorded grads of linear ops need not require grad)
            assert not g.requires_grad
        assert g.dtype is tg.float64 and g.device.type == device
        np.testing.assert_allclose(g.detach().cpu().numpy(), e, rtol=1e-6, atol=1e-7)


def test_profiled_backward_shows_the_fused_kernels_inside_their_nodes():
    x = tg.randn(4, 4, requires_grad=True)
    y = x.tanh().sigmoid().relu().sum()
    with profiler.profile() as prof:
        y.backward()
    keys = {e.key for e in prof.function_events}
    for node, kernel in (("TanhBackward0", "tanh_backward"),
                         ("SigmoidBackward0", "sigmoid_backward"),
                         ("ReluBackward0", "relu_backward")):
        inner = [e for e in prof.function_events if e.key == kernel]
        assert node in keys and len(inner) == 1
        assert inner[0].cpu_parent is not None and inner[0].cpu_parent.key == node


def test_a_recorded_backward_differentiates_the_fused_rules():
    # d/dx of tanh'(x) = -2 tanh(x) (1 - tanh(x)^2): the composite form is what is recorded
    x = tg.tensor([0.3, -1.2], dtype=tg.float64, requires_grad=True)
    g, = tg.autograd.grad(x.tanh().sum(), x, create_graph=True)
    gg, = tg.autograd.grad(g.sum(), x)
    t = np.tanh([0.3, -1.2])
    np.testing.assert_allclose(gg.numpy(), -2 * t * (1 - t * t), rtol=1e-12)
