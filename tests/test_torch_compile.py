"""``tg.compile`` / ``tg.compiler``: PyTorch's entry points, running the model eagerly with the
same results, gradients, parameters and state-dict keys as ``torch.compile(backend="eager")``."""

import warnings

import numpy as np
import pytest

import tritongrad as tg
from tritongrad import compiler


def _mlp():
    tg.manual_seed(0)
    return tg.nn.Sequential(tg.nn.Linear(4, 8), tg.nn.Tanh(), tg.nn.Linear(8, 2))


def test_a_compiled_module_computes_and_trains_as_the_original(device):
    model = _mlp().to(device)
    compiled = tg.compile(model, backend="eager")
    assert isinstance(compiled, compiler.OptimizedModule) and compiled._orig_mod is model
    x = tg.tensor(np.random.default_rng(0).standard_normal((5, 4)), dtype=tg.float32,
                  device=device)
    np.testing.assert_array_equal(compiled(x).detach().cpu().numpy(),
                                  model(x).detach().cpu().numpy())
    (compiled(x) ** 2).sum().backward()
    want = [p.grad.clone() for p in model.parameters()]
    for p in model.parameters():
        p.grad = None
    (model(x) ** 2).sum().backward()
    for w, p in zip(want, model.parameters()):
        assert tg.equal(w, p.grad)
    assert [n for n, _ in compiled.named_parameters()] == [
        "_orig_mod.0.weight", "_orig_mod.0.bias", "_orig_mod.2.weight", "_orig_mod.2.bias"]
    assert list(compiled.state_dict()) == [f"_orig_mod.{k}" for k in model.state_dict()]
    assert getattr(compiled, "0") is model[0]  # attributes read through to the original
    assert compiled.training and not compiled.eval()._orig_mod.training


def test_functions_decorators_and_disable():
    calls = []

    @tg.compile(backend="eager", fullgraph=True, dynamic=True)
    def f(x):
        calls.append(1)
        return x.sin() * 2

    x = tg.linspace(0, 1, 5)
    assert tg.equal(f(x), x.sin() * 2) and calls == [1]
    assert f.__name__ == "f" and f._torchdynamo_orig_callable.__name__ == "f"
    m = _mlp()
    assert tg.compile(m, disable=True) is m
    assert compiler.disable(f) is f and compiler.disable()(f) is f
    assert compiler.list_backends() == ["eager"] and not compiler.is_compiling()


def test_other_backends_warn_once_and_run_eagerly(monkeypatch):
    monkeypatch.setattr(compiler, "_warned", False)
    with pytest.warns(UserWarning, match="backend 'inductor' is not available"):
        g = tg.compile(lambda x: x + 1)
    assert g(tg.ones(2)).tolist() == [2.0, 2.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tg.compile(lambda x: x, mode="reduce-overhead")  # (warned already)


def test_bad_arguments_raise_as_in_pytorch():
    with pytest.raises(RuntimeError, match="Unrecognized mode=fast"):
        tg.compile(_mlp(), mode="fast")
    with pytest.raises(RuntimeError, match="Either mode or options can be specified"):
        tg.compile(_mlp(), mode="default", options={})
    with pytest.raises(AssertionError, match="A callable function is expected"):
        tg.compile(3)
