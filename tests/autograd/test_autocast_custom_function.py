"""``tg.amp.custom_fwd`` / ``custom_bwd`` (and the deprecated ``tg.cuda.amp`` forms): a custom
Function's forward under autocast, with or without ``cast_inputs``, and its backward in the
autocast state the forward ran in."""

from __future__ import annotations

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.amp import custom_bwd, custom_fwd


def _function(cast_inputs, device_type="cpu"):
    seen = {}

    class MyMM(tg.autograd.Function):
        @staticmethod
        @custom_fwd(device_type=device_type, cast_inputs=cast_inputs)
        def forward(ctx, a, b, scale=None):
            seen["fwd"] = (a.dtype, b.dtype, tg.is_autocast_enabled(device_type))
            ctx.save_for_backward(a, b)
            return a.mm(b)

        @staticmethod
        @custom_bwd(device_type=device_type)
        def backward(ctx, grad):
            a, b = ctx.saved_tensors
            seen["bwd"] = (tg.is_autocast_enabled(device_type),
                           tg.get_autocast_dtype(device_type))
            return grad.mm(b.t()), a.t().mm(grad), None

    return MyMM, seen


def _inputs(device="cpu"):
    rng = np.random.default_rng(0)
    a = tg.tensor(rng.standard_normal((4, 3)), dtype=tg.float32, device=device,
                  requires_grad=True)
    b = tg.tensor(rng.standard_normal((3, 5)), dtype=tg.float32, device=device,
                  requires_grad=True)
    return a, b


def test_cast_inputs_casts_and_runs_forward_without_autocast():
    fn, seen = _function(tg.float64)
    a, b = _inputs()
    with tg.autocast("cpu", dtype=tg.bfloat16):
        out = fn.apply(a, b, {"k": a})
    assert seen["fwd"] == (tg.float64, tg.float64, False)
    assert out.dtype == tg.float64
    out.sum().backward()
    assert seen["bwd"][0] is False  # (forward did not use autocast)
    np.testing.assert_allclose(a.grad.numpy(), np.ones((4, 5)) @ b.detach().numpy().T,
                               rtol=1e-6)


def test_without_cast_inputs_forward_and_backward_share_the_autocast_state():
    fn, seen = _function(None)
    a, b = _inputs()
    with tg.autocast("cpu", dtype=tg.bfloat16):
        out = fn.apply(a, b)
    assert seen["fwd"] == (tg.float32, tg.float32, True)
    assert out.dtype == tg.bfloat16  # (mm autocasts inside forward)
    out.float().sum().backward()  # outside the region: custom_bwd re-enters it
    assert seen["bwd"] == (True, tg.bfloat16)
    assert a.grad.dtype == tg.float32 and b.grad.dtype == tg.float32


def test_outside_autocast_custom_fwd_is_a_no_op():
    fn, seen = _function(tg.float64)
    a, b = _inputs()
    out = fn.apply(a, b)
    assert seen["fwd"] == (tg.float32, tg.float32, False) and out.dtype == tg.float32
    out.sum().backward()
    assert seen["bwd"][0] is False


def test_device_type_is_checked_and_partial_form_works():
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        custom_fwd(lambda ctx: None, device_type=tg.device("cpu"))
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        custom_bwd(device_type=None)
    assert callable(custom_fwd(device_type="cpu"))


def test_deprecated_cuda_amp_forms_warn_and_use_cuda():
    with pytest.warns(FutureWarning, match="torch.cuda.amp.custom_fwd"):
        fwd = tg.cuda.amp.custom_fwd(cast_inputs=tg.float32)
    with pytest.warns(FutureWarning, match="torch.cuda.amp.custom_bwd"):
        bwd = tg.cuda.amp.custom_bwd(lambda ctx, g: g)
    assert callable(fwd) and callable(bwd)


def test_on_cuda_with_float16(device):
    if device == "cpu":
        pytest.skip("the CUDA form (the CPU form is tested above)")
    fn, seen = _function(tg.float16, device_type="cuda")
    a, b = _inputs("cuda")
    with tg.autocast("cuda"):
        out = fn.apply(a, b)
    assert seen["fwd"] == (tg.float16, tg.float16, False) and out.dtype == tg.float16
    out.float().sum().backward()
    assert a.grad.dtype == tg.float32
