"""Elementwise results laid out as PyTorch's TensorIterator lays them out (Note [Result layouts]
in kernels/numpy/elementwise.py): the rule (autograd/layout.py ``elementwise_strides``)
against strides recorded from torch 2.13 and, where torch is installed, against torch on
random layouts; then the ops on both backends (CPU and CUDA, emulated or real): binary ops
whose operands' layouts differ, comparisons, where, the activations and their gradients keep
PyTorch's layout and the values of the row-major computation."""

import random

import numpy as np
import pytest
from tritongrad.autograd.layout import elementwise_strides

import tritongrad as tg

F = tg.nn.functional

# (name, result shape, operands' (shape, strides), torch 2.13's result strides)
RECORDED = [
    ("cl + c", (2, 3, 4, 5), [((2, 3, 4, 5), (60, 1, 15, 3)), ((2, 3, 4, 5), (60, 20, 5, 1))],
     (60, 1, 15, 3)),
    ("c + cl", (2, 3, 4, 5), [((2, 3, 4, 5), (60, 20, 5, 1)), ((2, 3, 4, 5), (60, 1, 15, 3))],
     (60, 20, 5, 1)),
    ("cl + bias", (2, 3, 4, 5), [((2, 3, 4, 5), (60, 1, 15, 3)), ((3, 1, 1), (1, 1, 1))],
     (60, 1, 15, 3)),
    ("bias + cl", (2, 3, 4, 5), [((3, 1, 1), (1, 1, 1)), ((2, 3, 4, 5), (60, 1, 15, 3))],
     (60, 1, 15, 3)),
    ("cl + scalar", (2, 3, 4, 5), [((2, 3, 4, 5), (60, 1, 15, 3)), ((), ())], (60, 1, 15, 3)),
    ("T + c", (2, 3), [((2, 3), (1, 2)), ((2, 3), (3, 1))], (1, 2)),
    ("c + T", (2, 3), [((2, 3), (3, 1)), ((2, 3), (1, 2))], (3, 1)),
    ("T + row", (2, 3), [((2, 3), (1, 2)), ((3,), (1,))], (1, 2)),
    ("perm3 + perm3'", (2, 3, 4), [((2, 3, 4), (3, 1, 6)), ((2, 3, 4), (4, 8, 1))], (3, 1, 6)),
    ("sliced", (2, 3, 4), [((2, 3, 4), (24, 8, 2))], (12, 4, 1)),
    ("cl N=1 + c", (1, 3, 4, 5), [((1, 3, 4, 5), (60, 1, 15, 3)),
                                  ((1, 3, 4, 5), (60, 20, 5, 1))], (60, 1, 15, 3)),
    ("expanded + T", (2, 3), [((2, 3), (0, 1)), ((2, 3), (1, 2))], (1, 2)),
    ("cl3d + c", (2, 3, 4, 5, 6), [((2, 3, 4, 5, 6), (360, 1, 90, 18, 3)),
                                   ((2, 3, 4, 5, 6), (360, 120, 30, 6, 1))],
     (360, 1, 90, 18, 3)),
    ("empty", (3, 0), [((3, 0), (1, 3)), ((3, 0), (1, 1))], (1, 1)),
    ("three", (2, 3), [((2, 3), (3, 1)), ((2, 3), (1, 2)), ((2, 3), (1, 2))], (3, 1)),
]


def _row_major(shape) -> tuple:
    out, step = [], 1
    for n in reversed(shape):
        out.append(step)
        step *= max(n, 1)
    return tuple(reversed(out))


def _strides(shape, operands) -> tuple:
    got = elementwise_strides(shape, operands)
    return _row_major(shape) if got is None else got


@pytest.mark.parametrize("name,shape,operands,want", RECORDED, ids=[c[0] for c in RECORDED])
def test_rule_against_recorded_torch(name, shape, operands, want):
    assert _strides(shape, operands) == want


def test_rule_against_torch_on_random_layouts():
    torch = pytest.importorskip("torch")
    rng = random.Random(41)

    def laid_out(shape):  # a zero tensor of ``shape`` in a random memory order, maybe sliced
        perm = list(range(len(shape)))
        rng.shuffle(perm)
        inv = [perm.index(i) for i in range(len(shape))]
        if shape and shape[-1] > 1 and rng.random() < 0.2:
            wide = [shape[p] * (2 if p == len(shape) - 1 else 1) for p in perm]
            return torch.zeros(wide).permute(*inv)[..., ::2]
        return torch.zeros([shape[p] for p in perm]).permute(*inv)

    checked = 0
    for trial in range(1500):
        nd = rng.randint(2, 5)
        sizes = [0, 1, 1, 2, 3] if trial % 9 == 0 else [1, 1, 2, 3, 4]
        shape = [rng.choice(sizes) for _ in range(nd)]
        ops = []
        for _ in range(rng.randint(1, 3)):
            if rng.random() < 0.2:
                ops.append(torch.tensor(1.0))
                continue
            sh = [1 if rng.random() < 0.25 else n for n in shape]
            ops.append(laid_out(sh[rng.randint(0, nd - 1):] if rng.random() < 0.2 else sh))
        try:
            r = (ops[0].exp() if len(ops) == 1 else ops[0] + ops[1] if len(ops) == 2
                 else torch.addcmul(*ops))
        except RuntimeError:
            continue
        if r.dim() < 2:
            continue
        checked += 1
        operands = [(tuple(t.shape), tuple(t.stride())) for t in ops]
        assert _strides(tuple(r.shape), operands) == tuple(r.stride()), operands
    assert checked > 1000


# -- the ops, on both backends ----------------------------------------------------------------

def _layouts(device):
    """(name, tensor, the same values row-major) for a channels-last, a permuted and a
    transposed operand."""
    rng = np.random.default_rng(0)
    a4 = (rng.random((2, 3, 4, 5)) * 3 - 1.5).astype(np.float32)
    a3 = (rng.random((4, 5, 3)) * 3 - 1.5).astype(np.float32)
    a2 = (rng.random((5, 3)) * 3 - 1.5).astype(np.float32)
    cl = tg.tensor(a4, device=device).contiguous(memory_format=tg.channels_last)
    perm = tg.tensor(a3, device=device).permute(2, 0, 1)
    t = tg.tensor(a2, device=device).t()
    return [(n, x, x.contiguous()) for n, x in (("cl", cl), ("perm", perm), ("T", t))]


def _want(*xs) -> tuple:
    shape = tuple(tg.broadcast_shapes(*(tuple(x.shape) for x in xs)))
    return _strides(shape, [(tuple(x.shape), tuple(x.stride())) for x in xs])


BINARY = [tg.add, tg.sub, tg.mul, tg.div, tg.maximum, tg.atan2, tg.remainder, tg.fmod,
          tg.floor_divide, tg.gt, tg.eq]


# CUDA runs a few (one elementwise kernel serves them all; the interpreter is slow)
ON_CUDA = (tg.add, tg.mul, tg.atan2, tg.remainder, tg.gt)


@pytest.mark.parametrize("device,op", [("cpu", op) for op in BINARY]
                         + [("cuda", op) for op in ON_CUDA],
                         ids=lambda v: getattr(v, "__name__", v))
def test_binary_ops_with_mixed_layouts(device, op):
    for name, x, xc in _layouts(device):
        y = xc.flip(0) + 2.5  # row-major, other values
        for a, b in ((x, y), (y, x), (x, x)):
            r = op(a, b)
            assert r.stride() == _want(a, b), (op.__name__, name)
            ref = op(a.contiguous(), b.contiguous())
            assert tg.equal(r, ref), (op.__name__, name)


def test_where_and_scalars(device):
    for name, x, xc in _layouts(device):
        y = xc + 1
        for cond, a, b in ((x > 0, x, y), (xc > 0, x, y), (x > 0, y, 0.5), (xc > 0, 1.0, x)):
            r = tg.where(cond, a, b)
            assert r.stride() == _want(*(v for v in (cond, a, b) if isinstance(v, tg.Tensor))) \
                or r.stride() == _want(cond, a if isinstance(a, tg.Tensor) else b), name
            ref = tg.where(cond.contiguous(), *(v.contiguous() if isinstance(v, tg.Tensor) else v
                                                for v in (a, b)))
            assert tg.equal(r, ref), name
        assert (x * 2.0).stride() == x.stride() == (x + 1).stride() == x.exp().stride() \
            == tg.erf(x).stride()


ACTIVATIONS = [
    ("gelu", F.gelu), ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh")),
    ("silu", F.silu), ("mish", F.mish), ("softplus", F.softplus), ("hardswish", F.hardswish),
    ("hardsigmoid", F.hardsigmoid), ("hardtanh", F.hardtanh), ("relu6", F.relu6),
    ("elu", F.elu), ("sigmoid", tg.sigmoid),
]


@pytest.mark.parametrize("name,fn", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_activations_keep_the_layout_forward_and_backward(device, name, fn):
    for lname, x, xc in _layouts(device):
        x = x.detach().requires_grad_()
        xc = xc.detach().requires_grad_()
        y, yc = fn(x), fn(xc)
        assert y.stride() == x.stride(), (name, lname)
        np.testing.assert_allclose(y.detach().cpu().numpy(), yc.detach().cpu().numpy(),
                                   rtol=1e-6, atol=1e-6)
        seen = []
        x.register_hook(lambda g, seen=seen: seen.append(g.stride()))
        g = (y.detach() * 0 + 1.5).contiguous()  # a row-major gradient, as sum() gives
        y.backward(y.detach() * 0 + 1.5)  # a gradient in y's layout
        yc.backward(g)
        assert seen == [x.stride()], (name, lname)
        np.testing.assert_allclose(x.grad.cpu().numpy(), xc.grad.cpu().numpy(),
                                   rtol=1e-6, atol=1e-6)


def test_log_sigmoid_is_row_major_as_pytorchs(device):
    for _, x, _ in _layouts(device):
        assert F.logsigmoid(x).is_contiguous()


def test_against_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    a = rng.random((2, 3, 4, 5)).astype(np.float32)
    for lib, out in ((tg, []), (torch, [])):
        x = lib.tensor(a).contiguous(memory_format=lib.channels_last)
        y = lib.tensor(a + 1)
        fs = lib.nn.functional
        out += [(x + y).stride(), (y + x).stride(), (x > y).stride(), (x * y[0]).stride(),
                lib.where(x > 0.5, y, x).stride(), lib.where(y > 0.5, x, y).stride(),
                fs.gelu(x).stride(), fs.silu(x.permute(0, 2, 3, 1)).stride(),
                fs.logsigmoid(x).stride(), lib.isreal(x).stride(),
                lib.atan2(x.transpose(0, 3), y.transpose(0, 3)).stride()]
        if lib is tg:
            mine = out
        else:
            assert mine == out


def test_flip_keeps_the_layout(device):
    for name, x, xc in _layouts(device):
        for dims in ((0,), (-1,), (0, 1)):
            r = x.flip(dims)
            assert r.stride() == x.stride(), (name, dims)
            assert tg.equal(r, xc.flip(dims)), (name, dims)
    sliced = tg.arange(16.0, device=device).reshape(2, 8)[:, ::2]  # not dense: row-major
    assert sliced.flip(1).stride() == (4, 1)


def test_binary_and_where_against_torch_on_random_layouts():
    # the CPU backend's kernels (not only the rule), on layouts without size-1 dimensions,
    # whose strides NumPy's row-major flag skips (Note [Result layouts])
    torch = pytest.importorskip("torch")
    rng = random.Random(7)

    def laid(lib, shape, perm, sliced):
        inv = [perm.index(i) for i in range(len(shape))]
        if sliced:
            wide = [shape[p] * (2 if p == len(shape) - 1 else 1) for p in perm]
            return lib.zeros(wide).permute(*inv)[..., ::2]
        return lib.zeros([shape[p] for p in perm]).permute(*inv)

    for _ in range(400):
        nd = rng.randint(2, 4)
        shape = [rng.randint(2, 4) for _ in range(nd)]
        specs = []
        for _ in range(rng.choice([2, 3])):
            sh = shape[rng.randint(0, nd - 1):] if rng.random() < 0.2 else shape
            perm = list(range(len(sh)))
            rng.shuffle(perm)
            specs.append((sh, perm, rng.random() < 0.2))
        results = []
        for lib in (torch, tg):
            xs = [laid(lib, *s) for s in specs]
            results.append(xs[0] * xs[1] if len(xs) == 2
                           else lib.where(xs[0] > 0, xs[1], xs[2]))
        assert tuple(results[1].stride()) == tuple(results[0].stride()), specs
