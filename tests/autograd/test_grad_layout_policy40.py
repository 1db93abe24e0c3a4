"""``tg.autograd.enforce_grad_layout_policy`` (session 40), against torch 2.13."""

import threading
import warnings

import pytest

import tritongrad as tg


def _scenario(torch) -> list:
    out = []
    p = torch.empty(2, 3, 4).permute(2, 0, 1).requires_grad_()
    (p * 2).sum().backward()
    out.append(p.grad.stride())  # enforced: the parameter's strides
    p.grad = None
    with torch.autograd.enforce_grad_layout_policy(False):
        (p * 2).sum().backward()
        out.append(p.grad.stride())  # relaxed: the incoming gradient, stolen as it is
        p.grad = None
        (p.contiguous() * 1).sum().backward()
        out.append(p.grad.stride())
    p.grad = None
    (p.contiguous() * 1).sum().backward()
    out.append(p.grad.stride())  # restored on exit
    q = torch.zeros(3, 4).requires_grad_()
    q.grad = torch.zeros(4, 3).t()
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        with torch.autograd.enforce_grad_layout_policy(False):
            (q * 2).sum().backward()
    out.append(len(said))  # the contract's warning is not given
    torch.autograd.enforce_grad_layout_policy(False)  # as a function: stays
    p.grad = None
    (p.contiguous() * 1).sum().backward()
    out.append(p.grad.stride())
    torch.autograd.enforce_grad_layout_policy(True)
    p.grad = None
    (p.contiguous() * 1).sum().backward()
    out.append(p.grad.stride())
    try:
        torch.autograd.enforce_grad_layout_policy(1)
    except TypeError as e:
        out.append(str(e))
    return out


RECORDED = [(1, 12, 4), (6, 3, 1), (6, 3, 1), (1, 12, 4), 0, (6, 3, 1), (1, 12, 4),
            "set_grad_layout_enforcement_enabled(): argument 'enabled' (position 1) must be "
            "bool, not int"]


def test_against_recorded_torch():
    assert _scenario(tg) == RECORDED


def test_against_torch():
    torch = pytest.importorskip("torch", minversion="2.13")
    assert _scenario(tg) == _scenario(torch)


def test_thread_local_and_values_unchanged():
    seen = []
    with tg.autograd.enforce_grad_layout_policy(False):
        t = threading.Thread(target=lambda: seen.append(
            tg.autograd.grad_mode.state.grad_layout_enforced))
        t.start()
        t.join()
        p = tg.randn(2, 3, 4).permute(2, 0, 1).requires_grad_()
        (p * 3).sum().backward()
    assert seen == [True]
    assert float((p.grad - 3).abs().max()) == 0.0
