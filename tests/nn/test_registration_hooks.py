"""The global registration hooks of ``nn.modules.module`` (run whenever any module registers
a parameter, buffer or child, and able to replace it), and small PyTorch names around them:
the deprecated ``nn.init.eye``/``dirac`` and ``nn.utils.clip_grad_norm``,
``convert_conv2d_weight_memory_format``, ``utils.hooks.unserializable_hook``."""

import warnings

import numpy as np
import pytest

import tritongrad as tg
from tritongrad import nn
from tritongrad.nn.modules import module as module_mod


def test_registration_hooks_see_and_replace_what_modules_register():
    seen, made = [], []

    def on_param(m, name, p):
        seen.append(("param", type(m).__name__, name))
        if name == "bias":
            made.append(nn.Parameter(p.detach().clone()))
            return made[-1]
        return None

    def on_buffer(m, name, b):
        seen.append(("buffer", type(m).__name__, name))

    def on_module(m, name, sub):
        seen.append(("module", type(m).__name__, name))
        return nn.Identity() if isinstance(sub, nn.Dropout) else None

    handles = [module_mod.register_module_parameter_registration_hook(on_param),
               module_mod.register_module_buffer_registration_hook(on_buffer),
               module_mod.register_module_module_registration_hook(on_module)]
    try:
        lin = nn.Linear(2, 3)
        assert seen[:2] == [("param", "Linear", "weight"), ("param", "Linear", "bias")]
        assert lin.bias is made[0]  # the hook's parameter was registered in its place
        bn = nn.BatchNorm1d(3)
        assert ("buffer", "BatchNorm1d", "running_mean") in seen
        seq = nn.Sequential(lin, nn.Dropout(0.5))
        assert type(seq[1]) is nn.Identity and ("module", "Sequential", "1") in seen
        bn.running_mean = tg.ones(3)  # assigning to a buffer's name registers it again
        assert seen[-1] == ("buffer", "BatchNorm1d", "running_mean")
        holder = nn.Module()
        holder.child = nn.ReLU()  # assigning a module
        assert seen[-1] == ("module", "Module", "child")
    finally:
        for h in handles:
            h.remove()
    n = len(seen)
    nn.Linear(2, 2)
    assert len(seen) == n  # removed


def test_deprecated_names_and_small_utilities():
    w = tg.empty(3, 3)
    with pytest.warns(FutureWarning, match="`nn.init.eye` is now deprecated"):
        nn.init.eye(w)
    np.testing.assert_array_equal(w.numpy(), np.eye(3))
    c = tg.empty(2, 2, 3)
    with pytest.warns(FutureWarning, match="nn.init.dirac"):
        nn.init.dirac(c)
    np.testing.assert_array_equal(c[:, :, 1].numpy(), np.eye(2))
    p = nn.Parameter(tg.ones(4))
    p.grad = tg.full((4,), 3.0)
    with pytest.warns(FutureWarning, match="clip_grad_norm_"):
        total = nn.utils.clip_grad_norm(p, 1.0)
    assert float(total) == pytest.approx(6.0)
    np.testing.assert_allclose(p.grad.numpy(), np.full(4, 3.0 / (6.0 + 1e-6)), rtol=1e-6)

    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Sequential(nn.Conv2d(4, 2, 1)))
    before = [m.weight.detach().clone() for m in (model[0], model[2][0])]
    assert nn.utils.convert_conv2d_weight_memory_format(model, tg.channels_last) is model
    for m, w0 in zip((model[0], model[2][0]), before):
        assert m.weight.is_contiguous(memory_format=tg.channels_last)
        assert type(m.weight) is nn.Parameter and m.weight.requires_grad
        np.testing.assert_array_equal(m.weight.detach().numpy(), w0.numpy())

    t = tg.ones(2, requires_grad=True)
    t.register_hook(tg.utils.hooks.unserializable_hook(lambda g: g))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tg.utils.hooks.warn_if_has_hooks(t)  # marked: no warning
    t.register_hook(lambda g: g)
    with pytest.warns(UserWarning, match="will not be serialized"):
        tg.utils.hooks.warn_if_has_hooks(t)
