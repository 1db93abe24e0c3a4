"""The nn.Module API: what a second differential sweep against PyTorch 2.13 found (train()
propagation through children's own ``train``, backward-hook and forward-hook messages and
warnings, ParameterList/ParameterDict calls and dict views, ModuleList deletion bounds,
``Module.to``'s refusal of ``copy``), each checked against explicit expected behaviour, and
against torch itself where it is installed."""

import warnings

import numpy as np
import pytest

import tritongrad as tg
import tritongrad.nn as nn


def _torch():
    return pytest.importorskip("torch")


def _lin(L, i=3, o=2):
    m = L.nn.Linear(i, o)
    with L.no_grad():
        m.weight.copy_(L.tensor(np.arange(i * o, dtype=np.float32).reshape(o, i) / 7 - 0.3))
        m.bias.copy_(L.tensor(np.arange(o, dtype=np.float32) * 0.25 - 0.1))
    return m


# -- train()/eval() ---------------------------------------------------------------------------

def _train_cases(L):
    """(calls of the children's overridden train, training flags after a frozen child)."""
    log = []

    class Logs(L.nn.Module):
        def train(self, mode=True):
            log.append(mode)
            return super().train(mode)

    class Frozen(L.nn.Module):  # keeps itself in eval mode whatever its parent asks
        def train(self, mode=True):
            super().train(mode)
            self.training = False
            return self

    m = L.nn.Sequential(Logs(), L.nn.Sequential(Logs()))
    m.eval()
    m.train()
    frozen = L.nn.Sequential(Frozen(), L.nn.ReLU())
    frozen.train()
    return log, [c.training for c in frozen.modules()]


def test_train_calls_children_train():
    # each child's own train() decides its mode, as PyTorch's (a module overriding train to
    # stay frozen was silently put back in training mode)
    log, flags = _train_cases(tg)
    assert log == [False, False, True, True]
    assert flags == [True, False, True]


def test_train_assigns_through_setattr():
    seen = []

    class C(nn.Module):
        def __setattr__(self, name, value):
            if name == "training":
                seen.append(value)
            super().__setattr__(name, value)

    m = nn.Sequential(C())
    seen.clear()
    m.eval()
    assert seen == [False]
    assert m.train() is m and m[0].training


def test_train_matches_torch():
    torch = _torch()
    assert _train_cases(tg) == _train_cases(torch)


# -- hooks ------------------------------------------------------------------------------------

class _Raises(nn.Module):
    def forward(self, x):
        raise ValueError("boom")


def test_always_call_hook_warning_names_module_hook():
    m = _Raises()

    def bad(mod, args, out):
        raise KeyError("hook")

    m.register_forward_hook(bad, always_call=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match="boom"):
            m(1)
    msgs = [str(x.message) for x in w]
    assert len(msgs) == 1
    assert msgs[0].startswith("module forward hook with ``always_call=True`` raised an "
                              "exception that was silenced")


def test_backward_pre_hook_wrong_count_message():
    m = _lin(tg)
    m.register_full_backward_pre_hook(lambda mod, go: (go[0], go[0]))
    x = tg.ones(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"^Backward pre hook returned an invalid number of "
                                           r"grad_output, got 2, but expected 1$"):
        m(x).sum().backward()


class _DictOut(nn.Module):
    def forward(self, x):
        return {"a": x * 2}


def test_backward_hook_dict_output_warns():
    m = _DictOut()
    calls = []
    m.register_full_backward_hook(lambda mod, gi, go: calls.append(gi))
    x = tg.ones(2, requires_grad=True)
    with pytest.warns(UserWarning, match="For backward hooks to be called, module output "
                                         "should be a Tensor or a tuple of Tensors but "
                                         "received <class 'dict'>"):
        out = m(x)
    out["a"].sum().backward()
    assert calls == [] and x.grad.tolist() == [2.0, 2.0]


def test_backward_hook_tensor_output_does_not_warn():
    m = _lin(tg)
    m.register_full_backward_hook(lambda *a: None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m(tg.ones(1, 3, requires_grad=True)).sum().backward()


# -- containers -------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["ParameterList", "ParameterDict"])
def test_parameter_containers_refuse_calls(kind):
    with pytest.raises(RuntimeError, match=f"^{kind} should not be called.$"):
        getattr(nn, kind)()(tg.ones(1))


def test_parameter_dict_views():
    pd = nn.ParameterDict({"b": tg.ones(1), "a": tg.zeros(2)})  # a plain dict: sorted keys
    keys = pd.keys()
    assert type(keys).__name__ == "dict_keys" and list(keys) == ["a", "b"]
    pd["c"] = tg.ones(3)
    assert list(keys) == ["a", "b", "c"]  # a live view
    values, items = pd.values(), pd.items()
    assert type(values).__name__ == "generator" and type(items).__name__ == "generator"
    assert [tuple(v.shape) for v in values] == [(2,), (1,), (3,)]
    assert [k for k, _ in items] == ["a", "b", "c"]
    assert list(reversed(pd)) == ["c", "b", "a"]


def test_parameter_dict_errors():
    pd = nn.ParameterDict()
    with pytest.raises(TypeError, match=r"^Index given to ParameterDict cannot be used as a key "
                                        r"as it is not a string \(type is 'int'\)"):
        pd[1] = tg.ones(1)
    assert len(pd) == 0
    with pytest.raises(KeyError, match="popitem\\(\\): dictionary is empty"):
        pd.popitem()
    pd["x"] = tg.ones(1)
    assert pd.popitem()[0] == "x" and len(pd) == 0


def test_module_list_delitem_bounds():
    ml = nn.ModuleList([nn.ReLU(), nn.Tanh()])
    with pytest.raises(IndexError, match="^index 3 is out of range$"):
        del ml[3]
    with pytest.raises(IndexError, match="^index -3 is out of range$"):
        del ml[-3]
    assert len(ml) == 2
    del ml[-2]
    assert [(n, type(c).__name__) for n, c in ml.named_children()] == [("0", "Tanh")]
    ml = nn.ModuleList([nn.ReLU(), nn.Tanh(), nn.Sigmoid()])
    del ml[::2]
    assert [(n, type(c).__name__) for n, c in ml.named_children()] == [("0", "Tanh")]


# -- setattr, to() ----------------------------------------------------------------------------

def test_buffer_assignment_message():
    m = nn.Module()
    m.register_buffer("b", tg.ones(2))
    with pytest.raises(TypeError, match=r"^cannot assign 'str' as buffer 'b' \(tritongrad.nn."
                                        r"Buffer, tritongrad.Tensor or None expected\)$"):
        m.b = "x"


@pytest.mark.parametrize("args,kwargs", [((tg.float64,), {"copy": True}),
                                         ((tg.float64,), {"copy": False}),
                                         (("cpu", tg.float64, False, True), {}),
                                         ((tg.float64, False, False), {})])
def test_module_to_refuses_copy(args, kwargs):
    m = _lin(tg)
    with pytest.raises(RuntimeError, match=r"^\.to\(\) does not accept copy argument$"):
        m.to(*args, **kwargs)
    assert m.weight.dtype == tg.float32
    # one positional bool is non_blocking, accepted
    assert m.to("cpu", tg.float64, True) is m and m.weight.dtype == tg.float64


def test_messages_match_torch():
    torch = _torch()

    def errors(L):
        out = []
        for f in (lambda: L.nn.ParameterList()(1), lambda: L.nn.ParameterDict()(1),
                  lambda: L.nn.ParameterDict().popitem(),
                  lambda: L.nn.ModuleList([L.nn.ReLU()]).__delitem__(3),
                  lambda: _lin(L).to(L.float64, copy=True)):
            with pytest.raises(Exception) as e:
                f()
            out.append((type(e.value).__name__, str(e.value).split(" (type")[0]))
        return out

    assert errors(tg) == errors(torch)


# -- state dict, pickling, conversions --------------------------------------------------------

def test_compiled_module_pickles_and_copies():
    import copy
    import pickle
    m = _lin(tg)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the backend notice)
        m.compile()
    assert "_compiled_call_impl" in m.__dict__
    x = tg.tensor([[1.0, -2.0, 0.5]])
    want = (x.numpy().astype(np.float64) @ m.weight.detach().numpy().T.astype(np.float64)
            + m.bias.detach().numpy())
    for c in (pickle.loads(pickle.dumps(m)), copy.deepcopy(m)):  # pickling used to fail
        assert "_compiled_call_impl" not in c.__dict__
        np.testing.assert_allclose(c(x).detach().numpy(), want, rtol=1e-6)
    assert "_compiled_call_impl" in m.__dict__


@pytest.fixture
def conversion_flags():
    from tritongrad.nn import module
    yield module
    module.set_overwrite_module_params_on_conversion(False)
    module.set_swap_module_params_on_conversion(False)


def _converted(L, set_flag):
    set_flag(True)
    m = _lin(L)
    m(L.ones(1, 3)).sum().backward()
    w, g = m.weight, m.weight.grad
    m.double()
    return (m.weight is w, m.weight.grad is g, str(m.weight.dtype).split(".")[-1],
            str(m.weight.grad.dtype).split(".")[-1], str(w.dtype).split(".")[-1],
            type(m.weight).__name__, m.weight.requires_grad, m.weight.grad.tolist())


def test_overwrite_params_on_conversion(conversion_flags):
    assert not conversion_flags.get_overwrite_module_params_on_conversion()
    got = _converted(tg, conversion_flags.set_overwrite_module_params_on_conversion)
    # new Parameter objects; the old ones keep their float32 values
    assert got == (False, False, "float64", "float64", "float32", "Parameter", True,
                   [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]])


def test_swap_params_on_conversion(conversion_flags):
    assert not conversion_flags.get_swap_module_params_on_conversion()
    got = _converted(tg, conversion_flags.set_swap_module_params_on_conversion)
    # the same objects, holding the converted values
    assert got == (True, True, "float64", "float64", "float64", "Parameter", True,
                   [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]])


def test_conversion_flags_match_torch(conversion_flags):
    torch = _torch()
    f = torch.__future__
    for tg_set, torch_set in ((conversion_flags.set_overwrite_module_params_on_conversion,
                               f.set_overwrite_module_params_on_conversion),
                              (conversion_flags.set_swap_module_params_on_conversion,
                               f.set_swap_module_params_on_conversion)):
        try:
            assert _converted(tg, tg_set) == _converted(torch, torch_set)
        finally:
            torch_set(False)
            tg_set(False)


def _module_registrations(L):
    log = []
    hook = L.nn.modules.module.register_module_module_registration_hook(
        lambda mod, name, child: log.append((name, type(child).__name__)))
    try:
        m = L.nn.Module()
        m.a = L.nn.ReLU()
        m.a = None  # clearing a child goes through the registration hooks too
        m.a = L.nn.Tanh()
    finally:
        hook.remove()
    return log, [n for n, _ in m.named_children()]


def test_module_registration_hook_sees_none():
    assert _module_registrations(tg) == ([("a", "ReLU"), ("a", "NoneType"), ("a", "Tanh")],
                                         ["a"])
    with pytest.raises(TypeError, match="cannot assign 'int' as child module 'a'"):
        m = nn.Module()
        m.a = nn.ReLU()
        m.a = 3


def test_module_registration_hook_matches_torch():
    torch = _torch()
    assert _module_registrations(tg) == _module_registrations(torch)


def test_private_call_and_members_api():
    # PyTorch's private names that other libraries use
    m = nn.Sequential(_lin(tg), nn.BatchNorm1d(2))
    names = [n for n, _ in m._named_members(lambda mod: mod._parameters.items(), prefix="p")]
    assert names == ["p.0.weight", "p.0.bias", "p.1.weight", "p.1.bias"]
    assert [n for n, _ in m._named_members(lambda mod: mod._buffers.items(), recurse=False)] == []
    assert m._compiled_call_impl is None

    class Scaled(nn.Linear):
        def __call__(self, *args, **kwargs):  # delegating to _call_impl runs the hooks once
            return self._call_impl(*args, **kwargs) * 2

    log = []
    s = Scaled(3, 2)
    with tg.no_grad():
        s.weight.copy_(_lin(tg).weight)
        s.bias.zero_()
    s.register_forward_hook(lambda *a: log.append(1))
    x = tg.tensor([[1.0, 2.0, -1.0]])
    want = 2 * (x.numpy().astype(np.float64) @ s.weight.detach().numpy().T.astype(np.float64))
    np.testing.assert_allclose(s(x).detach().numpy(), want, rtol=1e-6)
    assert log == [1]
    np.testing.assert_allclose(s._wrapped_call_impl(x).detach().numpy(), want / 2, rtol=1e-6)
    assert log == [1, 1]


@pytest.mark.parametrize("kind", ["full", "pre"])
def test_backward_hook_bad_replacement_names_hook(kind):
    m = _lin(tg)
    if kind == "full":
        m.register_full_backward_hook(lambda mod, gi, go: (tg.ones(5),))
    else:
        m.register_full_backward_pre_hook(lambda mod, go: (tg.ones(5),))
    x = tg.ones(1, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="^hook 'hook' has changed the size of value$"):
        m(x).sum().backward()


def test_parameter_pickle_keeps_user_attributes():
    import pickle
    p = nn.Parameter(tg.tensor([1.0, -2.0]))
    p.is_sharded = True
    p.register_hook(lambda g: g)  # (internal fields are not user attributes)
    (p * 2).sum().backward()
    c = pickle.loads(pickle.dumps(p))
    assert type(c) is nn.Parameter and c.is_sharded is True and c.requires_grad
    assert c.grad is None
    assert c.tolist() == [1.0, -2.0] and list(c.__dict__) == ["is_sharded"]
    m = _lin(tg)
    m.weight.tag = "w"
    assert pickle.loads(pickle.dumps(m)).weight.tag == "w"
    plain = pickle.loads(pickle.dumps(nn.Parameter(tg.ones(1))))
    assert plain.__dict__ == {} and plain.requires_grad
