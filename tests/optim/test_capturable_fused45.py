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
