"""Reference gradients for tests: float64 central differences, independent of tritongrad's
own gradcheck (so a bug there cannot hide one in the engine)."""

from __future__ import annotations

import numpy as np

import tritongrad as tg


def numeric_grads(fn, inputs, eps: float = 1e-6, grad_output=None):
    """d(sum(fn(*inputs) * grad_output))/d(input) for each input, by central differences on
    float64 copies. ``fn`` maps tritongrad tensors to one tensor; the differences are always
    taken on the CPU backend (cheap, and independent of the device under test)."""
    arrays = [np.array(t.detach().cpu().numpy(), dtype=np.float64) for t in inputs]
    device = "cpu"

    def value(arrs):
        out = fn(*[tg.tensor(a, dtype=tg.float64, device=device) for a in arrs])
        o = out.detach().cpu().numpy().astype(np.float64)
        w = np.ones_like(o) if grad_output is None else np.asarray(grad_output, dtype=np.float64)
        return float((o * w).sum())

    grads = []
    for i, a in enumerate(arrays):
        g = np.zeros_like(a)
        it = np.nditer(a, flags=["multi_index"])
        for _ in it:
            idx = it.multi_index
            orig = a[idx]
            a[idx] = orig + eps
            plus = value(arrays)
            a[idx] = orig - eps
            minus = value(arrays)
            a[idx] = orig
            g[idx] = (plus - minus) / (2 * eps)
        grads.append(g)
    return grads


def analytic_grads(fn, inputs, grad_output=None):
    xs = [t.detach().to(tg.float64).requires_grad_(True) for t in inputs]
    out = fn(*xs)
    if not out.requires_grad:  # a constant of the inputs (e.g. the derivative of a linear map)
        return [np.zeros(tuple(x.shape)) for x in xs]
    g = None if grad_output is None else tg.tensor(grad_output, dtype=tg.float64,
                                                    device=out.device)
    if g is None and out.numel() != 1:
        g = tg.ones_like(out)
    grads = tg.autograd.grad(out, xs, g, allow_unused=True)
    return [np.zeros(x.shape) if gr is None else gr.cpu().numpy() for x, gr in zip(xs, grads)]


def assert_grads_match(fn, inputs, atol=1e-6, rtol=1e-5, grad_output=None):
    num = numeric_grads(fn, inputs, grad_output=grad_output)
    ana = analytic_grads(fn, inputs, grad_output=grad_output)
    for i, (n, a) in enumerate(zip(num, ana)):
        np.testing.assert_allclose(a, n, atol=atol, rtol=rtol,
                                   err_msg=f"gradient of input {i} differs from finite differences")


# -- shared by the op tests ------------------------------------------------------------------

_rng = np.random.default_rng(1)


def t64(shape, device="cpu", low: float = -2.0, high: float = 2.0):
    """A float64 tensor of uniform values in [low, high)."""
    return tg.tensor(_rng.uniform(low, high, shape), dtype=tg.float64, device=device)


def host(t) -> np.ndarray:
    """A tensor's values, on the host."""
    return t.detach().cpu().numpy()


def second_order(fn, inputs, atol: float = 1e-5):
    """Checks d/dx of sum(w * grad(fn(*x).sum(), x)) (create_graph through fn) against finite
    differences of the first-order gradient; ``inputs`` is a tensor or a list of them."""
    inputs = [inputs] if isinstance(inputs, tg.Tensor) else list(inputs)
    ws = [_rng.uniform(0.5, 1.5, tuple(x.shape)) for x in inputs]

    def first(*xs):
        xs = [x if x.requires_grad else x.detach().requires_grad_(True) for x in xs]
        gs = tg.autograd.grad(fn(*xs).sum(), xs, create_graph=True)
        total = None
        for g, w in zip(gs, ws):
            term = (g * tg.tensor(w, dtype=g.dtype, device=g.device)).sum()
            total = term if total is None else total + term
        return total

    assert_grads_match(first, inputs, atol=atol, rtol=1e-4)


class Exp(tg.autograd.Function):
    """The seeds' example Function: ``exp`` with its output saved for backward."""

    @staticmethod
    def forward(ctx, i):
        result = i.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        (result,) = ctx.saved_tensors
        return grad_output * result


def run_optimizer(opt_cls, grads, p0, device="cpu", dtype=tg.float64, **kw):
    """Steps ``opt_cls(**kw)`` over one parameter (initial values ``p0``) with the given
    gradient sequence: (the parameter's values after each step, the optimizer, the
    parameter)."""
    p = tg.nn.Parameter(tg.tensor(p0, dtype=dtype, device=device))
    opt = opt_cls([p], **kw)
    out = []
    for g in grads:
        p.grad = tg.tensor(g, dtype=dtype, device=device)
        opt.step()
        out.append(p.detach().cpu().numpy().copy())
    return out, opt, p


class Mul(tg.autograd.Function):
    """``a * b`` as a custom Function saving both inputs for backward."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g * b, g * a


def load_module(path, name: str):
    """The Python file at ``path`` imported as module ``name`` (examples and programs that are
    scripts, not packages)."""
    import importlib.util
    import sys
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def run_threads(fn, n: int) -> None:
    """Runs ``fn(i)`` for i in range(n) on n threads released together (a barrier); fails if
    a thread hangs, and re-raises the first error any thread met."""
    import threading

    errors = []
    start = threading.Barrier(n)

    def body(i):
        try:
            start.wait()
            fn(i)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    assert not errors, errors[0]


class TorchMT:
    """A reference of PyTorch's CPU stream written apart from kernels/numpy/random.py, for the
    tests: the reference mt19937 seeding (init_genrand) of NumPy's MT19937, its raw 32-bit
    outputs, and the 24- and 53-bit uniforms ATen makes of them."""

    def __init__(self, seed: int):
        key, x = [seed & 0xFFFFFFFF], seed & 0xFFFFFFFF
        for i in range(1, 624):
            x = (1812433253 * (x ^ (x >> 30)) + i) & 0xFFFFFFFF
            key.append(x)
        self.bits = np.random.MT19937(0)
        self.bits.state = {"bit_generator": "MT19937",
                           "state": {"key": np.array(key, np.uint32), "pos": 624}}

    def raw32(self, n: int) -> list:
        return [int(v) for v in self.bits.random_raw(n)]

    def raw64(self, n: int) -> list:
        r = self.raw32(2 * n)
        return [(r[2 * i] << 32) | r[2 * i + 1] for i in range(n)]

    def u24(self, n: int) -> np.ndarray:
        return np.array([(v & 0xFFFFFF) * 2.0 ** -24 for v in self.raw32(n)], np.float32)

    def u53(self, n: int) -> np.ndarray:
        return np.array([(v & (2 ** 53 - 1)) * 2.0 ** -53 for v in self.raw64(n)])


def saved_bytes(fn, *args) -> tuple:
    """(bytes, count, result) of the tensors packed by saved_tensors_hooks while ``fn(*args)``
    runs (what its graph keeps for backward), the bytes counted once per distinct tensor."""
    packed = []
    with tg.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
        out = fn(*args)
    distinct = {id(t): t for t in packed}.values()
    return sum(t.numel() * t.element_size() for t in distinct), len(packed), out


def sigmoid_ref(x):
    """1 / (1 + exp(-x)) in NumPy (float64 references of the activation tests)."""
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


def softplus_ref(x, beta=1.0, threshold=20.0):
    """PyTorch's softplus in NumPy: log(1 + exp(beta x)) / beta, x itself past the
    threshold."""
    with np.errstate(over="ignore"):
        soft = np.log1p(np.exp(np.minimum(beta * x, threshold))) / beta
    return np.where(beta * x > threshold, x, soft)
