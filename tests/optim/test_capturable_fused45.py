"""Capturable Adam/AdamW through the Triton backend's ``adam_step_capturable`` (one kernel a
parameter, the bias corrections computed on the device from the count: Note [capturable Adam]
in optim/adam.py) against the non-capturable step and the tensor-op form it replaces
(``fused=False``), and its CUDA graph (two nodes a parameter) against its eager steps. On the
emulated device in CI; on a GPU where one is lent."""

from __future__ import annotations

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.runtime import driver

CASES = [("Adam", {}), ("Adam", dict(amsgrad=True, weight_decay=0.1)),
         ("AdamW", dict(maximize=True)), ("AdamW", dict(weight_decay=0.3, amsgrad=True))]


def _run(cls, kw, dtype, fused, grads, x0, capturable=True):
    p = tg.nn.Parameter(tg.tensor(x0, dtype=dtype, device="cuda"))
    opt = getattr(tg.optim, cls)([p], lr=0.05, capturable=capturable, fused=fused, **kw)
    for g in grads:
        p.grad = tg.tensor(g, dtype=dtype, device="cuda")
        opt.step()
    return p, opt


def _values(p):
    return p.detach().cpu().double().numpy()


@pytest.mark.parametrize("cls,kw", CASES)
@pytest.mark.parametrize("dtype", [tg.float32, tg.float64, tg.float16], ids=str)
def test_fused_capturable_step_is_adams_step(cls, kw, dtype):
    if not tg.cuda.is_available():
        pytest.skip("no CUDA device (real or emulated)")
    rng = np.random.default_rng(3)
    x0 = rng.standard_normal(37)
    grads = [rng.standard_normal(37) for _ in range(4)]
    fused, opt = _run(cls, kw, dtype, None, grads, x0)
    assert float(opt.state[fused]["step"].cpu()) == len(grads)
    for name in ("exp_avg", "exp_avg_sq"):
        assert opt.state[fused][name].dtype is dtype
    # the non-capturable step (host scalars in float64): the capturable one takes its bias
    # corrections in float32, as PyTorch's does; 1 - beta2 at the first step loses ~1e-4 of
    # itself there, so its updates (~lr) differ by ~1e-6
    host, _ = _run(cls, kw, dtype, None, grads, x0, capturable=False)
    tol = 2e-3 if dtype is tg.float16 else 1e-5
    np.testing.assert_allclose(_values(fused), _values(host), rtol=tol, atol=tol)
    if dtype is not tg.float16:  # the tensor-op form it replaced: the same float32 scalars
        # (float16: those ops round each intermediate to float16, and eps = 1e-8 to 0 there)
        ops, _ = _run(cls, kw, dtype, False, grads, x0)
        np.testing.assert_allclose(_values(fused), _values(ops), rtol=1e-6, atol=1e-7)


def test_fused_capturable_step_is_one_launch_and_replays():
    if not tg.cuda.is_available():
        pytest.skip("no CUDA device (real or emulated)")
    rng = np.random.default_rng(4)
    x0 = rng.standard_normal((5, 7))
    grads = [rng.standard_normal((5, 7)) for _ in range(4)]
    eager, _ = _run("AdamW", {}, tg.float32, None, grads, x0)
    p, opt = _run("AdamW", {}, tg.float32, None, grads[:1], x0)
    g = tg.cuda.CUDAGraph(keep_graph=True)
    with tg.cuda.graph(g):
        opt.step()
    # the count's add and the update: two nodes (the tensor-op form took ~26)
    assert driver.get_driver().graph_node_count(0, g.raw_cuda_graph()) == 2
    for grad in grads[1:]:
        p.grad.copy_(tg.tensor(grad, dtype=tg.float32, device="cuda"))
        g.replay()
    np.testing.assert_array_equal(p.detach().cpu().numpy(), eager.detach().cpu().numpy())
    assert float(opt.state[p]["step"].cpu()) == len(grads)


def test_captured_clipping_takes_the_multi_tensor_kernels():
    """Gradients made inside a capture have new addresses: their address table is copied from
    page-locked memory, which the graph repeats (Note [chunk tables] in
    kernels/triton/foreach.py), instead of falling back to four launches a gradient."""
    if not tg.cuda.is_available():
        pytest.skip("no CUDA device (real or emulated)")
    rng = np.random.default_rng(5)
    shapes = [(7, 3), (11,), (2, 5, 4), (1,)]
    params = [tg.nn.Parameter(tg.zeros(s, device="cuda")) for s in shapes]
    g = tg.cuda.CUDAGraph(keep_graph=True)
    with tg.cuda.graph(g):
        grads = [tg.empty(s, device="cuda") for s in shapes]  # (from the graph's pool)
        for p, gr in zip(params, grads):
            p.grad = gr
        total = tg.nn.utils.clip_grad_norm_(params, 1.0)
    # the two tables' copies, the partial norms, their finish, the scaling
    assert driver.get_driver().graph_node_count(0, g.raw_cuda_graph()) == 5
    for scale in (3.0, 0.01, 2.0):
        values = [(rng.standard_normal(s) * scale).astype(np.float32) for s in shapes]
        for gr, v in zip(grads, values):
            gr.copy_(tg.tensor(v, device="cuda"))
        g.replay()
        norm = np.sqrt(sum(float((v.astype(np.float64) ** 2).sum()) for v in values))
        np.testing.assert_allclose(float(total.cpu()), norm, rtol=1e-6)
        coef = min(1.0, 1.0 / (norm + 1e-6))
        for gr, v in zip(grads, values):
            np.testing.assert_allclose(gr.cpu().numpy(), v * coef, rtol=1e-6, atol=1e-7)


def _models(shapes, dtype, n=2):
    rng = np.random.default_rng(6)
    values = [rng.standard_normal(s) for s in shapes]
    return [[tg.nn.Parameter(tg.tensor(v, dtype=dtype, device="cuda")) for v in values]
            for _ in range(n)]


@pytest.mark.parametrize("cls,kw", [("AdamW", {}), ("Adam", {"weight_decay": 0.1,
                                                                 "maximize": True})])
@pytest.mark.parametrize("dtype", [tg.float32, tg.bfloat16], ids=str)
def test_capturable_groups_take_the_multi_tensor_kernel(cls, kw, dtype):
    """A capturable group's parameters go through foreach.py's ``adam_step_capturable`` (two
    launches whatever their number), bit for bit as one kernel a parameter (foreach=False),
    the counts too; a parameter joining later keeps its own count in the same launches."""
    if not tg.cuda.is_available():
        pytest.skip("no CUDA device (real or emulated)")
    from tritongrad.kernels.triton import foreach

    shapes = [(6, 5), (5,), (3, 2, 4)]
    multi, single = _models(shapes, dtype)
    opts = [getattr(tg.optim, cls)(m, lr=0.05, capturable=True, foreach=f, **kw)
            for m, f in ((multi, None), (single, False))]
    rng = np.random.default_rng(7)
    calls = []
    real = foreach.adam_step_capturable

    def counted(*args):
        calls.append(len(args[0]))
        return real(*args)

    foreach.adam_step_capturable = counted
    try:
        for k in range(4):
            if k == 2:  # a parameter joins: its count starts at 0 beside the others' 2
                extra = _models([(4,)], dtype)
                multi += extra[0]
                single += extra[1]
                opts[0].param_groups[0]["params"].append(extra[0][0])
                opts[1].param_groups[0]["params"].append(extra[1][0])
            for a, b in zip(multi, single):
                a.grad = b.grad = tg.tensor(rng.standard_normal(a.shape), dtype=dtype,
                                            device="cuda")
            for opt in opts:
                opt.step()
    finally:
        foreach.adam_step_capturable = real
    assert calls == [3, 3, 4, 4]  # the foreach=False optimizer never calls it
    for a, b in zip(multi, single):
        np.testing.assert_array_equal(_values(a), _values(b))
        for name in ("step", "exp_avg", "exp_avg_sq"):
            np.testing.assert_array_equal(opts[0].state[a][name].cpu().double().numpy(),
                                          opts[1].state[b][name].cpu().double().numpy())
    assert [float(opts[0].state[a]["step"].cpu()) for a in multi] == [4.0, 4.0, 4.0, 2.0]


def test_fused_false_keeps_the_tensor_op_form():
    """``fused=False`` means no fused kernel, single or multi-tensor (docs/training.md): a
    capturable group of several parameters then takes the tensor-op form, as foreach=False
    with fused=False does, to the same values."""
    if not tg.cuda.is_available():
        pytest.skip("no CUDA device (real or emulated)")
    from tritongrad.kernels.triton import foreach

    shapes = [(4, 3), (5,)]
    a, b = _models(shapes, tg.float32)
    opts = [tg.optim.AdamW(m, lr=0.05, capturable=True, fused=False, foreach=f)
            for m, f in ((a, None), (b, False))]
    calls = []
    real = foreach.adam_step_capturable
    foreach.adam_step_capturable = lambda *args: calls.append(args) or real(*args)
    try:
        rng = np.random.default_rng(9)
        for _ in range(2):
            for x, y in zip(a, b):
                x.grad = y.grad = tg.tensor(rng.standard_normal(x.shape), dtype=tg.float32,
                                            device="cuda")
            for opt in opts:
                opt.step()
    finally:
        foreach.adam_step_capturable = real
    assert calls == []
    for x, y in zip(a, b):
        np.testing.assert_array_equal(_values(x), _values(y))


def test_captured_multi_tensor_step_is_two_kernels_and_replays():
    """The whole group's update in a graph: the counts' add and the update, two kernel nodes
    for any number of parameters (one kernel a parameter took two each), replayed as eager
    steps."""
    if not tg.cuda.is_available():
        pytest.skip("no CUDA device (real or emulated)")
    shapes = [(5, 7), (7,), (3, 3), (2,)]
    rng = np.random.default_rng(8)
    grads = [[rng.standard_normal(s) for s in shapes] for _ in range(4)]
    eager, graphed = _models(shapes, tg.float32)
    opts = [tg.optim.AdamW(m, lr=0.05, capturable=True) for m in (eager, graphed)]
    for params, opt in zip((eager, graphed), opts):
        for p, gr in zip(params, grads[0]):
            p.grad = tg.tensor(gr, dtype=tg.float32, device="cuda")
        opt.step()  # (warm: the address tables are made outside the capture)
    g = tg.cuda.CUDAGraph(keep_graph=True)
    with tg.cuda.graph(g):
        opts[1].step()
    # and the copies of its four tables (chunk maps and addresses of the parameters and of
    # the counts), which are kept per stream, and the capture's stream is a side stream
    assert driver.get_driver().graph_node_count(0, g.raw_cuda_graph()) == 2 + 4
    for k in range(1, 4):
        for a, b, gr in zip(eager, graphed, grads[k]):
            a.grad = tg.tensor(gr, dtype=tg.float32, device="cuda")
            b.grad.copy_(tg.tensor(gr, dtype=tg.float32, device="cuda"))
        opts[0].step()
        g.replay()
    for a, b in zip(eager, graphed):
        np.testing.assert_array_equal(_values(a), _values(b))
        # the warm-up and three replays (a capture runs nothing)
        assert float(opts[1].state[b]["step"].cpu()) == float(opts[0].state[a]["step"].cpu()) == 4
