"""``nn.attention.sdpa_kernel`` / ``SDPBackend`` and ``backends.cuda``'s ``enable_*_sdp``
switches: which implementation ``F.scaled_dot_product_attention`` takes (the fused op for the
flash and memory-efficient backends, the composite for math), the same values either way, "No
available kernel" when nothing enabled can run, and the flags restored on exit."""

from __future__ import annotations

import numpy as np
import pytest

import tritongrad as tg
import tritongrad.nn.functional as F
from tests.helpers import host
from tritongrad.nn.attention import SDPBackend, sdpa_kernel

FUSED = "ScaledDotProductFlashAttentionBackward0"


def _qkv(device):
    rng = np.random.default_rng(0)
    return [tg.tensor(rng.standard_normal((2, 3, 6, 8)), dtype=tg.float32, device=device,
                      requires_grad=True) for _ in range(3)]


def test_backends_choose_the_implementation_with_equal_results(device):
    q, k, v = _qkv(device)
    default = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert type(default.grad_fn).__name__ == FUSED
    with sdpa_kernel(SDPBackend.MATH):
        math_out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert type(math_out.grad_fn).__name__ != FUSED
    for backends in ([SDPBackend.FLASH_ATTENTION], [SDPBackend.EFFICIENT_ATTENTION],
                     [SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION]):
        with sdpa_kernel(backends):
            assert type(F.scaled_dot_product_attention(q, k, v).grad_fn).__name__ == FUSED
    np.testing.assert_allclose(host(default), host(math_out), rtol=1e-5, atol=1e-5)
    g1 = tg.autograd.grad(default.sum(), (q, k, v))
    g2 = tg.autograd.grad(math_out.sum(), (q, k, v))
    for a, b in zip(g1, g2):
        np.testing.assert_allclose(host(a), host(b), rtol=1e-4, atol=1e-5)


def test_no_available_kernel():
    q, k, v = _qkv("cpu")
    mask = tg.ones(6, 6, dtype=tg.bool)
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        with pytest.warns(UserWarning, match="fused kernel takes no attn_mask"), \
                pytest.raises(RuntimeError, match="No available kernel. Aborting execution."):
            F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        with pytest.warns(UserWarning, match="flash and memory-efficient kernels are disabled"), \
                pytest.raises(RuntimeError, match="No available kernel"):
            F.scaled_dot_product_attention(q, k, v)
    with pytest.raises(AssertionError, match="instance of SDPBackend"):
        with sdpa_kernel(["MATH"]):
            pass


def test_flags_are_shared_and_restored():
    cuda = tg.backends.cuda
    assert cuda.flash_sdp_enabled() and cuda.math_sdp_enabled()
    with sdpa_kernel([SDPBackend.MATH]):
        assert cuda.math_sdp_enabled() and not cuda.flash_sdp_enabled()
        assert not cuda.mem_efficient_sdp_enabled() and not cuda.cudnn_sdp_enabled()
    assert cuda.flash_sdp_enabled() and cuda.mem_efficient_sdp_enabled()
    cuda.enable_flash_sdp(False)
    cuda.enable_mem_efficient_sdp(False)
    try:
        q, k, v = _qkv("cpu")
        assert type(F.scaled_dot_product_attention(q, k, v).grad_fn).__name__ != FUSED
    finally:
        cuda.enable_flash_sdp(True)
        cuda.enable_mem_efficient_sdp(True)
    with pytest.warns(FutureWarning, match="sdp_kernel\\(\\)` is deprecated"):
        ctx = cuda.sdp_kernel(enable_flash=False, enable_mem_efficient=False)
    with ctx:
        assert not cuda.flash_sdp_enabled() and cuda.math_sdp_enabled()
    assert cuda.flash_sdp_enabled()
