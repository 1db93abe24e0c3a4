"""Fixes from the second GPU run (H200, 2026-11-30): docs/gpu.md, "What the second run found"."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=300, check=False)


def test_a_module_named_nvtx_that_is_not_the_package_leaves_ranges_off():
    # Without the nvtx wheel, a folder named nvtx on sys.path (pytest puts tests/ there, and
    # tests/nvtx/ exists) imports as an empty namespace package: emit_nvtx raised
    # AttributeError on the GPU machine. It must be treated as "no package".
    r = _run("""
        import sys, types
        sys.modules["nvtx"] = types.ModuleType("nvtx")  # what the namespace package offers
        import tritongrad as tg
        from tritongrad.runtime import nvtx as rt
        from tritongrad import selfcheck
        assert rt._nvtx is None and not rt.is_enabled()
        assert not selfcheck._nvtx_imports()
        x = tg.ones(3, requires_grad=True)
        with tg.autograd.profiler.emit_nvtx():
            (x * 2).sum().backward()
        tg.cuda.nvtx.range_push("a")
        tg.cuda.nvtx.range_pop()
        print("ok", x.grad.tolist())
    """)
    assert r.returncode == 0, r.stderr
    assert "ok [2.0, 2.0, 2.0]" in r.stdout


# -- float(), int() of a complex tensor, as PyTorch's --------------------------------------------

def test_float_and_int_of_a_complex_tensor():
    import pytest

    import tritongrad as tg

    assert float(tg.tensor(3 + 0j)) == 3.0 and int(tg.tensor(-3.7 + 0j)) == -3
    with pytest.raises(RuntimeError, match="cannot be converted to type double without overflow"):
        float(tg.tensor(1 + 2j))
    with pytest.raises(RuntimeError, match="cannot be converted to type int64_t without overflow"):
        int(tg.tensor(1 - 1e-30j))
    assert complex(tg.tensor(1 + 2j)) == 1 + 2j and float(tg.tensor(2.5)) == 2.5


# -- Adagrad(fused=True) ---------------------------------------------------------------------------

def _adagrad_steps(dtype, fused, steps=4, **kw):
    import numpy as np

    import tritongrad as tg

    rng = np.random.default_rng(7)
    p = tg.nn.Parameter(tg.tensor(rng.standard_normal(6), dtype=dtype))
    opt = tg.optim.Adagrad([p], lr=0.3, fused=fused, **kw)
    grads = [rng.standard_normal(6) for _ in range(steps)]
    for g in grads:
        p.grad = tg.tensor(g, dtype=dtype)
        opt.step()
    return p, opt, grads, rng


def test_fused_adagrad_float32_is_the_single_tensor_update():
    import numpy as np

    import tritongrad as tg

    kw = {"lr_decay": 0.1, "weight_decay": 0.05, "initial_accumulator_value": 0.2,
          "maximize": True}
    fused, _, _, _ = _adagrad_steps(tg.float32, True, **kw)
    plain, _, _, _ = _adagrad_steps(tg.float32, None, **kw)
    np.testing.assert_array_equal(fused.detach().numpy(), plain.detach().numpy())


def test_fused_adagrad_half_computes_in_float32_rounding_once():
    # PyTorch's fused kernel reads p and s as float32 and rounds each once per step; the
    # reference below does that in NumPy, the plain (per-op float16) update does not
    import numpy as np

    import tritongrad as tg

    p, opt, grads, _ = _adagrad_steps(tg.float16, True, lr_decay=0.1, weight_decay=0.05)
    rng = np.random.default_rng(7)
    p16 = rng.standard_normal(6).astype(np.float16)
    s16 = np.zeros(6, np.float16)
    for t, g in enumerate(grads, 1):
        g32 = g.astype(np.float16).astype(np.float32)
        p32 = p16.astype(np.float32)
        g32 = g32 + np.float32(0.05) * p32
        clr = 0.3 / (1 + (t - 1) * 0.1)
        s32 = s16.astype(np.float32) + g32 * g32
        s16 = s32.astype(np.float16)
        p16 = (p32 - g32 / (np.sqrt(s32) + np.float32(1e-10)) * np.float32(clr)).astype(np.float16)
    np.testing.assert_array_equal(p.detach().numpy(), p16)
    np.testing.assert_array_equal(opt.state[p]["sum"].numpy(), s16)


def test_fused_adagrad_refusals_are_pytorch_s():
    import pytest

    import tritongrad as tg

    p = tg.nn.Parameter(tg.ones(3))
    with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True` together"):
        tg.optim.Adagrad([p], fused=True, foreach=True)
    emb = tg.nn.Embedding(4, 2, sparse=True)
    opt = tg.optim.Adagrad(emb.parameters(), fused=True)
    emb(tg.tensor([1, 2])).sum().backward()
    with pytest.raises(RuntimeError, match="`fused` does not support sparse grad"):
        opt.step()
    if tg.cuda.is_available():
        q = tg.nn.Parameter(tg.ones(3, device="cuda"))
        q.grad = tg.ones(3, device="cuda")
        with pytest.raises(RuntimeError, match=r"supported devices: \['cpu'\] but .* and cuda"):
            tg.optim.Adagrad([q], fused=True).step()
