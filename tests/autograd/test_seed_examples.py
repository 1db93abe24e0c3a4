"""The documented examples of the seeds (../shared/seeds), run with tritongrad as torch.

Adapted only where the docs print random values or use an integer tensor with
requires_grad=True (which PyTorch itself rejects): there we check the documented behaviour.
"""

import warnings

import numpy as np
import pytest

import tritongrad as torch
from tritongrad import autograd
from tritongrad.autograd import Function
from tests.helpers import Exp


def test_no_grad_example():
    x = torch.tensor([1.0], requires_grad=True)
    with torch.no_grad():
        y = x * 2
    assert y.requires_grad is False

    @torch.no_grad()
    def doubler(x):
        return x * 2
    z = doubler(x)
    assert z.requires_grad is False


def test_enable_grad_example():
    x = torch.tensor([1.0], requires_grad=True)
    with torch.no_grad():
        with torch.enable_grad():
            y = x * 2
    assert y.requires_grad is True
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0])

    @torch.enable_grad()
    def doubler(x):
        return x * 2
    with torch.no_grad():
        z = doubler(x)
    assert z.requires_grad is True


def test_set_grad_enabled_example():
    x = torch.tensor([1.0], requires_grad=True)
    is_train = False
    with torch.set_grad_enabled(is_train):
        y = x * 2
    assert y.requires_grad is False
    torch.set_grad_enabled(True)
    y = x * 2
    assert y.requires_grad is True
    torch.set_grad_enabled(False)
    y = x * 2
    assert y.requires_grad is False
    torch.set_grad_enabled(True)


def test_integer_tensor_cannot_require_grad_as_in_pytorch():
    with pytest.raises(RuntimeError, match="Only Tensors of floating point"):
        torch.tensor([1], requires_grad=True)


def test_register_hook_example():
    v = torch.tensor([0.0, 0.0, 0.0], requires_grad=True)
    h = v.register_hook(lambda grad: grad * 2)  # double the gradient
    v.backward(torch.tensor([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(v.grad.numpy(), [2, 4, 6])
    h.remove()


def test_function_exp_example():
    # the seed's Exp, as written there: tests/helpers.py keeps it for every test that uses it
    input = torch.randn(4, dtype=torch.float64, requires_grad=True)
    output = Exp.apply(input)
    output.sum().backward()
    np.testing.assert_allclose(input.grad.numpy(), np.exp(input.detach().numpy()))


class MyFunc(autograd.Function):
    @staticmethod
    def forward(ctx, inp):
        return inp.clone()

    @staticmethod
    def backward(ctx, gO):
        # Error during the backward pass
        raise RuntimeError("Some error in backward")


def run_fn(a):
    out = MyFunc.apply(a)
    return out.sum()


def test_anomaly_example_without_detection():
    inp = torch.rand(10, 10, requires_grad=True)
    out = run_fn(inp)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no forward traceback without anomaly mode
        with pytest.raises(RuntimeError, match="Some error in backward"):
            out.backward()


def test_anomaly_example_with_detection_shows_forward_traceback():
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        ctx = autograd.detect_anomaly()
    with ctx:
        inp = torch.rand(10, 10, requires_grad=True)
        out = run_fn(inp)
        with pytest.warns(UserWarning) as record:
            with pytest.raises(RuntimeError, match="Some error in backward"):
                out.backward()
    text = "\n".join(str(w.message) for w in record)
    assert "Traceback of forward call that caused the error" in text
    assert "MyFuncBackward" in text and "run_fn" in text and "MyFunc.apply(a)" in text


def test_anomaly_nan_check_names_node():
    class NaNBackward(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g * float("nan")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with autograd.set_detect_anomaly(True):
            x = torch.ones(2, requires_grad=True)
            with pytest.raises(RuntimeError, match="Function 'NaNBackwardBackward' returned "
                                                   "nan values in its 0th output"):
                NaNBackward.apply(x).sum().backward()
    assert not autograd.is_anomaly_enabled()


def test_set_detect_anomaly_as_function():
    autograd.set_detect_anomaly(True)
    assert autograd.is_anomaly_enabled()
    autograd.set_detect_anomaly(False)
    assert not autograd.is_anomaly_enabled()


def test_saved_tensors_hooks_example(capsys):
    def pack_hook(x):
        print("Packing", x)
        return x

    def unpack_hook(x):
        print("Unpacking", x)
        return x

    a = torch.ones(5, requires_grad=True)
    b = torch.ones(5, requires_grad=True) * 2
    with torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
        y = a * b
    out = capsys.readouterr().out.splitlines()
    assert out == ["Packing tensor([1., 1., 1., 1., 1.], requires_grad=True)",
                   "Packing tensor([2., 2., 2., 2., 2.], grad_fn=<MulBackward0>)"]
    y.sum().backward()
    out = capsys.readouterr().out.splitlines()
    assert out == ["Unpacking tensor([1., 1., 1., 1., 1.], requires_grad=True)",
                   "Unpacking tensor([2., 2., 2., 2., 2.], grad_fn=<MulBackward0>)"]
    np.testing.assert_allclose(a.grad.numpy(), [2] * 5)


def test_saved_tensors_hooks_can_store_anything():
    store = {}

    def pack(t):
        key = len(store)
        store[key] = t.detach().clone()
        return key

    def unpack(key):
        return store[key]

    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = (x.exp() * x).sum()
    assert len(store) == 3  # exp's output, and mul's two inputs
    y.backward()
    xv = np.array([1.0, 2.0])
    np.testing.assert_allclose(x.grad.numpy(), np.exp(xv) * (1 + xv), rtol=1e-6)


def test_save_on_cpu(device):
    a = torch.randn(5, requires_grad=True, device=device)
    with torch.autograd.graph.save_on_cpu(pin_memory=True):
        y = (a * a).sum()
    y.backward()
    np.testing.assert_allclose(a.grad.cpu().numpy(), 2 * a.detach().cpu().numpy(), rtol=1e-6)


def test_disable_saved_tensors_hooks():
    with torch.autograd.graph.disable_saved_tensors_hooks("no hooks here"):
        y = (torch.ones(2, requires_grad=True) * torch.ones(2)).sum()  # saving still works
        with pytest.raises(RuntimeError, match="no hooks here"):
            with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                pass
    y.backward()


def test_inference_mode():
    x = torch.ones(2, requires_grad=True)
    with torch.inference_mode():
        y = x * 2
        assert torch.is_inference_mode_enabled()
    assert not y.requires_grad and y.is_inference()
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        (x * y).sum()
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside "
                                           "InferenceMode"):
        y.add_(1)

    @torch.inference_mode()
    def f(v):
        return v * 3
    assert f(x).is_inference()
    with torch.inference_mode():
        with torch.inference_mode(False):
            z = x * 2
    assert z.requires_grad and not z.is_inference()


def test_grad_mode_decorates_generators():
    x = torch.ones(1, requires_grad=True)

    @torch.no_grad()
    def gen():
        for _ in range(2):
            yield (x * 2).requires_grad, torch.is_grad_enabled()

    results = []
    for item in gen():
        results.append(item)
        results.append(torch.is_grad_enabled())  # the caller's mode, between yields
    assert results == [(False, False), True, (False, False), True]


def test_variable_is_deprecated_shim():
    t = torch.ones(3)
    v = torch.autograd.Variable(t, requires_grad=True)
    assert isinstance(v, torch.Tensor) and v.requires_grad and v.is_leaf
    assert v.data_ptr() == t.data_ptr()
    assert torch.autograd.Variable(t).requires_grad is False


def test_grad_variables_alias_warns():
    x = torch.ones(2, requires_grad=True)
    with pytest.warns(DeprecationWarning, match="grad_variables"):
        torch.autograd.backward([x * 2], grad_variables=[torch.ones(2)])
    np.testing.assert_allclose(x.grad.numpy(), [2, 2])


def test_only_inputs_is_deprecated_and_ignored():
    x = torch.ones(2, requires_grad=True)
    with pytest.warns(FutureWarning, match="only_inputs argument is deprecated"):
        (g,) = torch.autograd.grad((x * 3).sum(), x, only_inputs=False)
    np.testing.assert_allclose(g.numpy(), [3, 3])
    assert x.grad is None


def test_emit_nvtx_example_with_cuda_profiler():
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(),
                                torch.nn.Linear(8, 1)).cuda()
    x = torch.randn(5, 4, device="cuda")
    with torch.cuda.profiler.profile():
        model(x)  # Warmup CUDA memory allocator and profiler
        with torch.autograd.profiler.emit_nvtx():
            out = model(x).sum()
            out.backward()
    assert model[0].weight.grad is not None and model[0].weight.grad.shape == (8, 4)


def test_record_function_example():
    x = torch.randn((1, 1), requires_grad=True)
    with torch.autograd.profiler.profile() as prof:
        y = x ** 2
        with torch.autograd.profiler.record_function("label-z"):  # label the block
            z = y ** 3
        y.backward()
    names = [e.name for e in prof.function_events]
    assert "label-z" in names and "aten::pow" in names and "PowBackward0" in names
