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
    # the rules that were Tensor-level ``backward`` methods before every rule became a vjp
    "pow_tensor": ((_pos(3, 4), _any(4)), lambda a, b: a ** b),
    "maximum": ((_any(3, 4), _any(3, 4)), lambda a, b: tg.maximum(a, b)),
    "minimum": ((_any(3, 4), _any(4)), lambda a, b: tg.minimum(a, b)),
    "where": ((_any(3, 4), _any(4)), lambda a, b: tg.where(a > 0, a, b)),
    "clamp": ((_any(3, 4),), lambda a: a.clamp(-0.5, 0.5)),
    "clamp_tensor": ((_any(3, 4), _any(4), _any(3, 1)),
                     lambda a, lo, hi: tg.clamp(a, lo, hi + 1)),
    "remainder": ((_any(3, 4), _pos(3, 4)), lambda a, b: tg.remainder(a, b)),
    "floor_divide": ((_any(3, 4), _pos(4)), lambda a, b: tg.floor_divide(a, b) + a * b),
    "fill_": ((_any(3, 4),), lambda a: a.clone().fill_(2.0) * a),
    "clone": ((_any(3, 4),), lambda a: a.clone() * a),
    "copy_": ((_any(3, 4), _any(4)), lambda a, b: (a * 1).copy_(b) * a),
    "amax": ((_any(3, 4),), lambda a: a.amax(1)),
    "max_all": ((_any(3, 4),), lambda a: a.max()),
    "max_dim": ((_any(3, 4),), lambda a: a.max(1).values),
    "min_dim_keepdim": ((_any(3, 4),), lambda a: a.min(0, keepdim=True).values),
    "var": ((_any(3, 4),), lambda a: a.var(1)),
    "std": ((_any(3, 4),), lambda a: a.std(0)),
    "prod": ((_any(3, 4),), lambda a: a.prod(1)),
    "logsumexp": ((_any(3, 4),), lambda a: a.logsumexp(1)),
    "cumsum": ((_any(3, 4),), lambda a: a.cumsum(1)),
    "cat": ((_any(3, 4), _any(3, 2)), lambda a, b: tg.cat([a, b], 1)),
    "stack": ((_any(3, 4), _any(3, 4)), lambda a, b: tg.stack([a, b], 1)),
    "split": ((_any(3, 4),), lambda a: a.split(3, 1)[1] * 2),
    "unbind": ((_any(3, 4),), lambda a: a.unbind(1)[2] * 2),
    "repeat": ((_any(3, 4),), lambda a: a.repeat(2, 1, 3)),
    "tril": ((_any(3, 4),), lambda a: a.tril()),
    "triu": ((_any(3, 4),), lambda a: a.triu(1)),
    "slice": ((_any(3, 4),), lambda a: a[1:, ::2] * 2),
    "as_strided": ((_any(3, 4),), lambda a: a.as_strided((2, 2), (1, 2), 1) * 2),
    "index": ((_any(3, 4),), lambda a: a[tg.tensor([0, 2, 2], device=a.device)]),
    "index_put": ((_any(3, 4), _any(2, 4)),
                  lambda a, b: a.index_put((tg.tensor([0, 2], device=a.device),), b)),
    "gather": ((_any(3, 4),), lambda a: a.gather(1, tg.tensor([[0, 0], [1, 3], [2, 2]],
                                                              device=a.device))),
    "scatter": ((_any(3, 4), _any(3, 2)), lambda a, b: a.scatter(
        1, tg.tensor([[0, 1], [1, 3], [2, 0]], device=a.device), b)),
    "scatter_add": ((_any(3, 4), _any(3, 2)), lambda a, b: a.scatter_add(
        1, tg.tensor([[0, 0], [1, 3], [2, 2]], device=a.device), b)),
    "masked_fill": ((_any(3, 4),), lambda a: a.masked_fill(a > 0, 0.5) * a),
    "gelu": ((_any(3, 4),), lambda a: tg.nn.functional.gelu(a)),
    "gelu_tanh": ((_any(3, 4),), lambda a: tg.nn.functional.gelu(a, approximate="tanh")),
    "layer_norm": ((_any(3, 4), _any(4), _any(4)),
                   lambda a, w, b: tg.nn.functional.layer_norm(a, (4,), w, b)),
    "cross_entropy": ((_any(3, 4),), lambda a: tg.nn.functional.cross_entropy(
        a, tg.tensor([0, 3, 1], device=a.device), reduction="none", label_smoothing=0.1)),
    "embedding": ((_any(5, 3),), lambda w: tg.nn.functional.embedding(
        tg.tensor([[0, 4], [4, 2]], device=w.device), w)),
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
    for node, kernel in (("TanhBackward0", "aten::tanh_backward"),
                         ("SigmoidBackward0", "aten::sigmoid_backward"),
                         ("ReluBackward0", "aten::relu_backward")):
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


@pytest.mark.parametrize("mode", ["arrays", "create_graph", "profiled"])
def test_embedding_padding_and_frequency_scaling_in_every_mode(mode, device):
    # not the forward's derivative (the padding row gets none, rows are divided by how often
    # they are picked), so checked against the formula rather than finite differences
    w = tg.tensor(_any(5, 3), device=device, requires_grad=True)
    idx = [[0, 4], [4, 2]]
    g = np.random.default_rng(2).uniform(-1, 1, (2, 2, 3))
    out = tg.nn.functional.embedding(tg.tensor(idx, device=device), w, padding_idx=2,
                                     scale_grad_by_freq=True)
    loss = (out * tg.tensor(g, device=device)).sum()
    if mode == "profiled":
        with profiler.profile():
            got, = tg.autograd.grad(loss, w)
    else:
        got, = tg.autograd.grad(loss, w, create_graph=mode == "create_graph")
    expected = np.zeros((5, 3))
    flat = np.array(idx).reshape(-1)
    for pos, row in enumerate(flat):
        expected[row] += g.reshape(-1, 3)[pos] / np.count_nonzero(flat == row)
    expected[2] = 0
    np.testing.assert_allclose(got.detach().cpu().numpy(), expected, rtol=1e-12, atol=1e-12)


# The recorded (traced) path is what a second derivative differentiates: each rule converted
# from a Tensor-level backward, checked to second order.
SECOND_ORDER = ["pow_tensor", "maximum", "where", "clamp_tensor", "remainder", "copy_", "amax",
                "max_dim", "var", "std", "prod", "logsumexp", "cumsum", "cat", "stack", "split",
                "unbind", "repeat", "tril", "slice", "as_strided", "index", "index_put",
                "gather", "scatter", "scatter_add", "masked_fill", "gelu", "gelu_tanh",
                "layer_norm", "cross_entropy", "embedding"]


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_converted_rule_differentiates_to_second_order(name):
    inputs, fn = CASES[name]
    xs = [tg.tensor(a, requires_grad=True) for a in inputs]
    assert tg.autograd.gradgradcheck(fn, xs)


@pytest.mark.parametrize("mode", ["arrays", "create_graph", "profiled"])
def test_a_rule_that_moves_the_gradient_hands_it_to_the_other_backend(mode):
    # ToCopyBackward0's gradient is on its input's device: the rules after it in the backward
    # run on the CPU's arrays, those before it on the device's
    a = _any(3, 4)
    x = tg.tensor(a, requires_grad=True)
    loss = ((x.exp().cuda() * 2).sin().to(tg.float32).sum())
    if mode == "profiled":
        with profiler.profile():
            loss.backward()
    else:  # (backward, not autograd.grad: the engine's plain path, no captures)
        loss.backward(create_graph=mode == "create_graph")
    g = x.grad
    assert g.device.type == "cpu" and g.dtype is tg.float64
    np.testing.assert_allclose(g.detach().numpy(), np.cos(2 * np.exp(a)) * 2 * np.exp(a),
                               rtol=1e-6)
