"""Gaps found in session 21 (2026-11-30), each against PyTorch's documented behaviour."""

from __future__ import annotations

import numpy as np
import pytest
import tritongrad as tg
from tritongrad import nn, optim


@pytest.mark.parametrize("make", [lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9),
                                  lambda ps: optim.Adam(ps, lr=0.1),
                                  lambda ps: optim.AdamW(ps, lr=0.1)],
                         ids=["SGD", "Adam", "AdamW"])
def test_optimizer_step_and_zero_grad_are_profiler_ranges(make):
    """PyTorch's profiler shows ``Optimizer.step#SGD.step`` and ``Optimizer.zero_grad#...``
    around the ops they run, once per call (a subclass's super().step() opens no second one),
    with step hooks and without."""
    model = nn.Linear(3, 2)
    opt = make(model.parameters())
    name = type(opt).__name__
    seen = []
    opt.register_step_post_hook(lambda o, a, k: seen.append(1))
    x = tg.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3))
    with tg.autograd.profiler.profile() as prof:
        for _ in range(2):
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
    counts = {e.key: e.count for e in prof.key_averages()}
    assert counts[f"Optimizer.step#{name}.step"] == 2
    assert counts[f"Optimizer.zero_grad#{name}.zero_grad"] == 2
    assert seen == [1, 1]
    step = next(e for e in prof.function_events if e.name == f"Optimizer.step#{name}.step")
    assert step.cpu_children  # the update's ops are inside the range
    opt.step()  # outside a profiler: nothing left behind
    assert not opt.__dict__.get("_in_profiled_step")
