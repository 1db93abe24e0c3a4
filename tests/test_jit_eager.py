"""``tg.jit`` (tritongrad/jit.py): TorchScript's entry points run the code eagerly, with one
warning per process; the compiler-only decorators pass through; archives and futures refuse."""

from __future__ import annotations

import warnings

import pytest

import tritongrad as tg
from tritongrad import jit


@pytest.fixture(autouse=True)
def _fresh_warning():
    jit._warned = False
    yield
    jit._warned = False


def test_script_and_trace_run_the_code_eagerly_and_warn_once():
    def gelu_ish(x: tg.Tensor) -> tg.Tensor:
        return x * tg.sigmoid(1.702 * x)

    with pytest.warns(UserWarning, match="no TorchScript compiler"):
        fn = tg.jit.script(gelu_ish)
    assert fn is gelu_ish
    model = tg.nn.Linear(3, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (once per process: no second warning)
        traced = tg.jit.trace(model, tg.randn(4, 3))
    assert traced is model
    x = tg.randn(5, requires_grad=True)
    fn(x).sum().backward()
    s = tg.sigmoid(1.702 * x.detach())
    expected = s + 1.702 * x.detach() * s * (1 - s)
    assert tg.allclose(x.grad, expected, atol=1e-6)


def test_compiler_only_helpers_pass_through():
    assert not tg.jit.is_scripting() and not tg.jit.is_tracing()
    assert tg.jit.annotate(list, [1]) == [1]

    def f():
        return 1
    assert tg.jit.ignore(f) is f and tg.jit.ignore(drop=True)(f) is f
    assert tg.jit.unused(f) is f and tg.jit.export(f) is f
    m = tg.nn.Linear(2, 2)
    assert tg.jit.freeze(m) is m and tg.jit.optimize_for_inference(m) is m


@pytest.mark.parametrize("call, msg", [
    (lambda: tg.jit.save(tg.nn.Linear(2, 2), "m.pt"), "save the state dict"),
    (lambda: tg.jit.load("m.pt"), "cannot read TorchScript archives"),
])
def test_archives_refuse(call, msg):
    with pytest.raises(NotImplementedError, match=msg):
        call()
