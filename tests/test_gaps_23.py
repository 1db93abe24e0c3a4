"""Gaps found in session 23 (2026-11-30) by running PyTorch snippets under tritongrad."""

from __future__ import annotations

import numpy as np
import pytest
import tritongrad as tg


def test_top_level_aliases_are_the_namespaced_objects():
    """PyTorch keeps these at the top as well: ``torch.GradScaler is torch.amp.GradScaler``,
    ``torch.OutOfMemoryError is torch.cuda.OutOfMemoryError``, ``torch.to_dlpack``."""
    assert tg.GradScaler is tg.amp.GradScaler
    assert tg.OutOfMemoryError is tg.cuda.OutOfMemoryError
    assert issubclass(tg.OutOfMemoryError, RuntimeError)
    x = tg.tensor(np.arange(6.0).reshape(2, 3))
    y = tg.from_dlpack(tg.to_dlpack(x))
    assert np.array_equal(y.numpy(), x.numpy())
    y[0, 0] = 7.0  # one memory, as PyTorch's
    assert x[0, 0].item() == 7.0
    for name in ("GradScaler", "OutOfMemoryError", "to_dlpack"):
        assert name in tg.__all__


def test_layer_norm_repr_names_its_bias():
    assert repr(tg.nn.LayerNorm(4)) == ("LayerNorm((4,), eps=1e-05, elementwise_affine=True, "
                                        "bias=True)")
    assert repr(tg.nn.LayerNorm(4, bias=False)).endswith("bias=False)")


def test_sgd_defaults_and_repr_name_differentiable():
    opt = tg.optim.SGD([tg.nn.Parameter(tg.ones(1))], lr=0.1)
    assert list(opt.defaults) == ["lr", "momentum", "dampening", "weight_decay", "nesterov",
                                  "maximize", "foreach", "differentiable", "fused"]
    assert "    differentiable: False\n" in repr(opt)


def test_optimizer_state_loaded_from_a_live_optimizer_is_shared_as_pytorchs():
    """PyTorch's load_state_dict keeps state tensors that need no conversion: an optimizer
    loaded from another's live state dict steps the same tensors (a snapshot needs
    copy.deepcopy); one of another dtype gets converted copies."""
    p = tg.nn.Parameter(tg.ones(2, dtype=tg.float64))
    opt = tg.optim.Adam([p], lr=0.1)
    p.grad = tg.ones(2, dtype=tg.float64)
    opt.step()
    q = tg.nn.Parameter(tg.ones(2, dtype=tg.float64))
    shared = tg.optim.Adam([q], lr=0.1)
    shared.load_state_dict(opt.state_dict())
    assert all(shared.state[q][k] is opt.state[p][k] for k in ("step", "exp_avg", "exp_avg_sq"))
    q.grad = tg.ones(2, dtype=tg.float64)
    shared.step()
    assert opt.state[p]["step"].item() == 2  # (PyTorch's: the step counter is one tensor)
    r = tg.nn.Parameter(tg.ones(2))
    cast = tg.optim.Adam([r], lr=0.1)
    cast.load_state_dict(opt.state_dict())
    assert cast.state[r]["exp_avg"] is not opt.state[p]["exp_avg"]
    assert cast.state[r]["exp_avg"].dtype is tg.float32


def test_modified_saved_input_names_the_tensor_s_grad_fn_now():
    """PyTorch's message names the node that last wrote the saved input (its grad_fn when the
    backward finds it modified), and output nr of that node; a saved output names its own."""
    x = tg.arange(4.0, requires_grad=True)
    a = x * 1
    w = a * a
    a.add_(1)
    with pytest.raises(RuntimeError, match=r"\], which is output 0 of Add, is at "
                                           r"version 1; expected version 0 instead"):
        w.sum().backward()
    e = x.exp()
    e.sigmoid_()
    with pytest.raises(RuntimeError, match="which is output 0 of Exp,"):
        e.sum().backward()
    leaf = tg.ones(3, requires_grad=True)
    sq = leaf * leaf
    with tg.no_grad():
        leaf.mul_(2)
    # (no origin, so no comma: "[torch.FloatTensor [3]] is at version 1", torch 2.13's text)
    with pytest.raises(RuntimeError, match=r"inplace operation: \[tritongrad.FloatTensor \[3\]\] "
                                           r"is at version 1"):
        sq.sum().backward()
