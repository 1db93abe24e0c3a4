"""Module hooks (forward with kwargs / prepend / always_call, full backward and backward pre
hooks), ParameterList / ParameterDict, Unflatten and nn.utils' vector helpers."""

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import host
from tritongrad import nn


class Scale(nn.Module):
    def forward(self, x, y=None, *, factor=2.0):
        return x * factor if y is None else (x * factor, y * factor)


def test_forward_hooks_order_kwargs_and_removal():
    m, log = Scale(), []
    m.register_forward_hook(lambda mod, args, out: log.append("a"))
    h = m.register_forward_hook(lambda mod, args, out: log.append("b"), prepend=True)
    m.register_forward_hook(lambda mod, args, kwargs, out: log.append(("kw", kwargs)),
                            with_kwargs=True)
    m.register_forward_pre_hook(lambda mod, args, kwargs: (args, {"factor": 3.0}),
                                with_kwargs=True)
    out = m(tg.ones(2), factor=5.0)
    assert out.tolist() == [3.0, 3.0]  # the pre-hook replaced the kwargs
    assert log == ["b", "a", ("kw", {"factor": 3.0})]
    h.remove()
    log.clear()
    m(tg.ones(1))
    assert log[0] == "a"


def test_forward_pre_hook_replaces_args_and_checks_kwargs_result():
    m = Scale()
    m.register_forward_pre_hook(lambda mod, args: args[0] + 1)  # a single value is wrapped
    assert m(tg.zeros(1)).tolist() == [2.0]
    bad = Scale()
    bad.register_forward_pre_hook(lambda mod, args, kwargs: args, with_kwargs=True)
    with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple of "
                                           r"\(new_args, new_kwargs\)"):
        bad(tg.zeros(1))


def test_always_call_hook_runs_when_forward_raises():
    class Boom(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    m, log = Boom(), []
    m.register_forward_hook(lambda mod, args, out: log.append(("always", out)), always_call=True)
    m.register_forward_hook(lambda mod, args, out: log.append("normal"))
    with pytest.raises(ValueError, match="boom"):
        m(tg.ones(1))
    assert log == [("always", None)]


def test_full_backward_hook_sees_grad_input_and_grad_output(device):
    lin = nn.Linear(3, 2, device=device).double()
    log = []

    def pre(mod, grad_output):
        log.append(("pre", host(grad_output[0]).copy()))
        return (grad_output[0] * 2,)

    def full(mod, grad_input, grad_output):
        log.append(("full", [None if g is None else host(g).copy() for g in grad_input],
                    host(grad_output[0]).copy()))

    lin.register_full_backward_pre_hook(pre)
    lin.register_full_backward_hook(full)
    x = tg.tensor(np.ones((4, 3)), device=device, requires_grad=True)
    lin(x).sum().backward()
    w = host(lin.weight)
    assert log[0][0] == "pre" and (log[0][1] == 1.0).all()
    assert log[1][0] == "full" and (log[1][2] == 2.0).all()  # the doubled grad_output
    np.testing.assert_allclose(log[1][1][0], 2 * np.ones((4, 2)) @ w)
    np.testing.assert_allclose(host(x.grad), 2 * np.ones((4, 2)) @ w)
    np.testing.assert_allclose(host(lin.weight.grad), 2 * np.ones((2, 4)) @ np.ones((4, 3)))


def test_full_backward_hook_replaces_grad_input_and_handles_no_input_grad():
    m = Scale()
    seen = []
    m.register_full_backward_hook(lambda mod, gi, go: (seen.append(len(gi)), (gi[0] * 0, None))[1])
    x = tg.ones(2, requires_grad=True)
    y = tg.ones(2)  # does not require grad: None in grad_input
    a, _ = m(x, y)
    a.sum().backward()
    assert x.grad.tolist() == [0.0, 0.0] and seen == [2]
    # no input requires grad: the hook fires from the outputs with grad_input all None
    w = tg.ones(2, requires_grad=True)

    class UsesParam(nn.Module):
        def forward(self, x):
            return x * w

    u, calls = UsesParam(), []
    u.register_full_backward_hook(lambda mod, gi, go: calls.append((gi, go[0].tolist())))
    u(tg.ones(2)).sum().backward()
    assert calls == [((None,), [1.0, 1.0])]


def test_backward_hook_wrong_count_raises():
    m = Scale()
    m.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0], gi[0]))
    x = tg.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Backward hook returned an invalid number of "
                                           "grad_input, got 3, but expected 1"):
        m(x).sum().backward()


def test_parameter_list_and_dict():
    pl = nn.ParameterList([tg.ones(2), nn.Parameter(tg.zeros(3))])
    assert isinstance(pl[0], nn.Parameter) and len(pl) == 2
    pl.append(tg.ones(1))
    assert [n for n, _ in pl.named_parameters()] == ["0", "1", "2"]
    assert pl[-1].shape == (1,) and len(pl[1:]) == 2
    assert "(0): Parameter containing: [tritongrad.float32 of size 2]" in repr(pl)

    class Owner(nn.Module):
        def __init__(self):
            super().__init__()
            self.ps = nn.ParameterDict({"a": tg.ones(2)})
            self.ps["b"] = nn.Parameter(tg.zeros(1))

    o = Owner()
    assert [n for n, _ in o.named_parameters()] == ["ps.a", "ps.b"]
    assert list(o.ps.keys()) == ["a", "b"] and "a" in o.ps
    del o.ps["a"]
    assert list(o.state_dict()) == ["ps.b"]


def test_unflatten_and_identity():
    x = tg.randn(2, 12)
    y = nn.Unflatten(1, (3, -1))(x)
    assert y.shape == (2, 3, 4)
    assert nn.Flatten()(y).shape == (2, 12)
    assert nn.Identity(5, unused=True)(x) is x
    assert repr(nn.Unflatten(1, (3, 4))) == "Unflatten(dim=1, unflattened_size=(3, 4))"


def test_parameters_to_vector_and_back():
    m = nn.Linear(3, 2)
    v = nn.utils.parameters_to_vector(m.parameters())
    assert v.shape == (8,)
    (v * tg.arange(8).float()).sum().backward()  # recorded: gradients reach the parameters
    assert m.bias.grad.tolist() == [6.0, 7.0]
    new = tg.arange(8).float()
    nn.utils.vector_to_parameters(new, m.parameters())
    assert m.weight.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]] and isinstance(m.weight,
                                                                                 nn.Parameter)
    with pytest.raises(RuntimeError, match="expected a 1-D vector of 8 elements"):
        nn.utils.vector_to_parameters(tg.zeros(7), m.parameters())


def test_clip_grad_value_():
    p = nn.Parameter(tg.zeros(3))
    p.grad = tg.tensor([-5.0, 0.5, 7.0])
    nn.utils.clip_grad_value_([p], 1.0)
    assert p.grad.tolist() == [-1.0, 0.5, 1.0]
