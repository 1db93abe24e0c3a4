"""``__torch_function__`` and Tensor subclasses against PyTorch 2.13 (autograd/overrides.py):
what handlers are handed (the method an operator computes, PyTorch's names), how a refusal is
reported (Python's operator error, PyTorch's two messages), which calls modes see, and the
helpers of ``torch.overrides``. Each scenario runs under tritongrad against values recorded
from torch 2.13, and under torch too where it is installed (``lib`` is either module)."""

import inspect
import operator

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.autograd import overrides as ov

try:
    import torch
except ImportError:  # (CI: the recorded values alone)
    torch = None
else:  # the parity is with PyTorch 2.13's overrides (2.11 lacks some of them)
    if tuple(int(p) for p in torch.__version__.split(".")[:2]) < (2, 13):
        torch = None

LIBS = [tg] if torch is None else [tg, torch]


def _ov(lib):
    """``lib``'s torch.overrides (the helpers added here are reached through the module that
    defines them until tritongrad.overrides re-exports them)."""
    return ov if lib is tg else lib.overrides


def _name(lib, func):
    """``resolve_name(func)`` with the library's own name as ``torch``."""
    name = _ov(lib).resolve_name(func)
    return name.replace("tritongrad", "torch") if name else name


def _logging(lib, log):
    class Logged(lib.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            log.append(_name(lib, func))
            return super().__torch_function__(func, types, args, kwargs)
    return Logged


def _refusing(lib):
    class Refusing:  # PyTorch's tensor-like example with nothing handled
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return NotImplemented
    return Refusing


def _recording_mode(lib, seen):
    class Recording(lib.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(func.__name__)
            return func(*args, **(kwargs or {}))
    return Recording()


# -- what a handler is handed -------------------------------------------------------------------

OPERATOR_NAMES = [  # torch 2.13: resolve_name of the func handed over, in order of the calls
    "torch.Tensor.add", "torch.Tensor.add", "torch.Tensor.sub", "torch.Tensor.__rsub__",
    "torch.Tensor.mul", "torch.Tensor.mul", "torch.Tensor.div", "torch.Tensor.__rtruediv__",
    "torch.Tensor.__pow__", "torch.Tensor.__rpow__", "torch.Tensor.__floordiv__",
    "torch.Tensor.remainder", "torch.Tensor.neg", "torch.Tensor.positive", "torch.Tensor.abs",
    "torch.Tensor.lt", "torch.Tensor.ge", "torch.Tensor.__eq__", "torch.Tensor.ne",
    "torch.Tensor.__getitem__", "torch.Tensor.__setitem__", "torch.Tensor.matmul",
    "torch.Tensor.__len__", "torch.Tensor.clone", "torch.Tensor.add_", "torch.Tensor.mul_",
    "torch.Tensor.sub_", "torch.Tensor.div_"]


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_operators_hand_over_the_method_they_compute(lib):
    log = []
    x = lib.ones(2).as_subclass(_logging(lib, log))
    for op in (operator.add, lambda a, b: b + a, operator.sub, lambda a, b: b - a, operator.mul,
               lambda a, b: b * a, operator.truediv, lambda a, b: b / a, operator.pow,
               lambda a, b: b ** a, operator.floordiv, operator.mod):
        op(x, 2)
    for op in (operator.neg, operator.pos, abs, lambda a: a < 1, lambda a: a >= 1,
               lambda a: a == 1, lambda a: a != 1, lambda a: a[0],
               lambda a: operator.setitem(a, 0, 1.0), lambda a: a @ a, len):
        op(x)
    y = x.clone()
    for op, value in ((operator.iadd, 1), (operator.imul, 2), (operator.isub, 1),
                      (operator.itruediv, 2)):
        y = op(y, value)
    assert log == OPERATOR_NAMES
    assert type(y).__name__ == "Logged"
    np.testing.assert_allclose(y.detach().numpy(), [1.5, 1.5])  # ((1 + 1) * 2 - 1) / 2


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_arguments_as_pytorch_hands_them_over(lib):
    seen = []

    class Keywords(lib.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            seen.append((func.__name__, len(args), kwargs))
            return super().__torch_function__(func, types, args, kwargs)

    x = lib.ones(2).as_subclass(Keywords)
    F = lib.nn.functional
    for call in (lambda: lib.add(x, 1), lambda: x.sum(0), lambda: lib.sum(x, dim=0),
                 lambda: x + 1, lambda: F.relu(x), lambda: F.softmax(x, 0),
                 lambda: lib.einsum("i->", x), lambda: F.linear(x, lib.ones(2, 2))):
        call()
    # a builtin called without keywords hands over None; nn.functional's Python functions
    # their trailing arguments by keyword, with the defaults
    assert seen == [("add", 2, None), ("sum", 2, None), ("sum", 1, {"dim": 0}),
                    ("add", 2, None), ("relu", 1, {"inplace": False}),
                    ("softmax", 1, {"dim": 0, "_stacklevel": 3, "dtype": None}),
                    ("einsum", 2, {}), ("linear", 2, None)]


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_names_of_overridable_functions(lib):
    class Enable(lib.Tensor):  # (installs tritongrad's check: ``__add__`` is its own then)
        pass

    names = [_name(lib, f) for f in (lib.add, lib.Tensor.add, lib.Tensor.T.__get__,
                                     lib.nn.functional.relu, lib.linalg.norm,
                                     lib.Tensor.__add__, len, None)]
    assert names == ["torch.add", "torch.Tensor.add", "torch.Tensor.T.__get__",
                     "torch.nn.functional.relu", "torch.linalg.norm", "torch.Tensor.__add__",
                     None, None]
    is_method = _ov(lib).is_tensor_method_or_property
    assert [is_method(f) for f in (lib.Tensor.add, lib.Tensor.T.__get__, lib.add,
                                   lib.Tensor.__add__, len)] == [True, True, False, True, False]


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_rows_of_a_subclass_keep_its_type(lib):
    class MyT(lib.Tensor):
        pass

    m = lib.tensor([[1.0, 2.0], [3.0, 4.0]]).as_subclass(MyT)
    rows, flipped = list(m), list(reversed(m))
    assert [type(r) for r in rows + flipped] == [MyT] * 4
    np.testing.assert_array_equal(flipped[0].numpy(), [3.0, 4.0])
    # ``tensor(data)`` copies as a plain tensor; ``as_tensor`` keeps the object
    assert type(lib.tensor(m)) is lib.Tensor and lib.as_tensor(m) is m


# -- refusals -----------------------------------------------------------------------------------

@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_operators_refuse_in_pythons_words(lib):
    class MyT(lib.Tensor):
        pass

    a, b = lib.ones(1).as_subclass(MyT), lib.ones(1).as_subclass(_logging(lib, []))
    t, d = lib.ones(1), _refusing(lib)()
    cases = [(operator.add, a, b, "unsupported operand type(s) for +: 'MyT' and 'Logged'"),
             (operator.pow, a, b, ("unsupported operand type(s) for ** or pow(): 'MyT' and "
                                   "'Logged'")),
             (operator.matmul, a, b, "unsupported operand type(s) for @: 'MyT' and 'Logged'"),
             (operator.lt, a, b, "'<' not supported between instances of 'MyT' and 'Logged'"),
             (operator.iadd, a, b, "unsupported operand type(s) for +=: 'MyT' and 'Logged'"),
             (operator.add, t, d, "unsupported operand type(s) for +: 'Tensor' and 'Refusing'")]
    for op, left, right, message in cases:
        with pytest.raises(TypeError) as info:
            op(left, right)
        assert str(info.value) == message


def _message(fn) -> str:
    with pytest.raises(TypeError) as info:
        fn()
    text = str(info.value).replace("tritongrad", "torch")
    # (PyTorch's builtins add a pointer to its TORCH_LOGS, which tritongrad has no use for)
    return text.replace("\nFor more information, try re-running with "
                        "TORCH_LOGS=not_implemented", "")


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_refusal_messages(lib):
    d = _refusing(lib)()
    cls = f"<class '{type(d).__module__}.{type(d).__qualname__}'>"
    builtin = ("Multiple dispatch failed for '{}'; all __torch_function__ handlers returned "
               "NotImplemented:\n\n{}\n")
    assert _message(lambda: lib.exp(d)) == builtin.format("torch.exp", f"  - tensor subclass {cls}")
    assert _message(lambda: lib.ones(1).add(d)) == \
        builtin.format("torch.Tensor.add", f"  - tensor subclass {cls}")
    assert _message(lambda: lib.nn.functional.relu(d)) == \
        f"no implementation found for 'torch.nn.functional.relu' on types that implement " \
        f"__torch_function__: [{cls}]"

    def mine(x):
        return _ov(lib).handle_torch_function(mine, (x,), x)

    assert _message(lambda: mine(d)) == \
        f"no implementation found for '{__name__}.mine' on types that implement " \
        f"__torch_function__: [{cls}]"

    class Refuses(lib.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return NotImplemented

    with Refuses() as mode:
        text = _message(lambda: lib.exp(d))
        python_text = _message(lambda: lib.nn.functional.relu(d))
    mode_line = f"  - mode object {mode!r}"
    assert text == builtin.format("torch.exp", f"{mode_line}\n  - tensor subclass {cls}")
    assert python_text.endswith(f"[{cls}] nor in mode {mode!r}")


# -- the helpers --------------------------------------------------------------------------------

@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_has_torch_function(lib):
    class MyT(lib.Tensor):
        pass

    has = lib.overrides.has_torch_function
    d, m = _refusing(lib)(), lib.ones(1).as_subclass(MyT)
    assert [has((d,)), has((lib.ones(1),)), has((m,)), has((lib.nn.Parameter(lib.ones(1)),)),
            has([lib.ones(1), m]), has(())] == [True, False, True, False, True, False]
    # (torch 2.13's does not look into a list among them, ``has(([d],))`` is False; ours does,
    # for the custom operators' Tensor[] arguments)


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_modes_see_factories_and_dtype_functions(lib):
    seen = []
    with _recording_mode(lib, seen):
        lib.tensor([1.0])
        lib.from_numpy(np.ones(1))
        lib.result_type(lib.ones(1), 1)
        lib.broadcast_shapes((1,), (2,))
        lib.can_cast(lib.float32, lib.int32)
    assert seen == ["tensor", "ones", "result_type", "can_cast"]


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_mode_stack_and_switches(lib):
    with pytest.raises(RuntimeError, match="^trying to pop from empty mode stack$"):
        lib.overrides._pop_mode()
    with lib._C.DisableTorchFunctionSubclass() as inner:
        assert inner is None and not lib._C._is_torch_function_enabled()
    with lib._C.DisableTorchFunction() as inner:
        assert inner is None
    assert lib._C._is_torch_function_enabled()
    c = tg.autograd.overrides if lib is tg else lib._C  # (until tritongrad._C exports them)
    mode = _recording_mode(lib, [])
    c._push_on_torch_function_stack(mode)
    assert c._get_function_stack_at(0) is mode and lib._C._len_torch_function_stack() == 1
    assert c._pop_torch_function_stack() is mode and lib._C._len_torch_function_stack() == 0


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_overridable_ignored_and_testing_lists(lib):
    o = _ov(lib)
    table = o.get_overridable_functions()
    listed = {f for fs in table.values() for f in fs}
    ignored = o.get_ignored_functions()
    for f in (lib.add, lib.Tensor.add, lib.nn.functional.relu, lib.Tensor.T.__get__, lib.cat,
              lib.Tensor.__add__, lib.Tensor.__getitem__, lib.special.erf, lib.fft.fft):
        assert f in listed and f not in ignored, f
    for f in (lib.zeros, lib.tensor, lib.as_tensor, lib.from_numpy, lib.Tensor.__new__,
              lib.manual_seed, lib.is_tensor, lib.get_default_dtype):
        assert f in ignored and f not in listed, f
    testing = o.get_testing_overrides()
    assert testing[lib.add](1, 2) == -1 and lib.Tensor.add in testing
    assert list(inspect.signature(testing[lib.nn.functional.relu]).parameters) == \
        ["input", "inplace"]


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_redispatch_function_skips_one_level(lib):
    log = []

    class Redispatching(lib.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            log.append(func.__name__)
            return _ov(lib).redispatch_function(func, types, args, kwargs)

    def scaled(a, b):
        if lib.overrides.has_torch_function((a, b)):
            return lib.overrides.handle_torch_function(scaled, (a, b), a, b)
        return a * b + 1

    r = lib.ones(2, 2).as_subclass(Redispatching)
    out = scaled(r, r)  # its body runs: the product dispatches, the sum of a plain one not
    assert type(out) is lib.Tensor and type(r.T) is lib.Tensor
    assert log == ["scaled", "mul", "__get__"]
    np.testing.assert_array_equal(out.numpy(), np.full((2, 2), 2.0))


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_enable_reentrant_dispatch_outside_torch_dispatch(lib):
    message = "^Accessing torch dispatch state outside of '__torch_dispatch__' is not allowed.$"
    with pytest.raises(RuntimeError, match=message), _ov(lib).enable_reentrant_dispatch():
        pass


def test_overrides_all_is_pytorchs_and_importable():
    expected = ["enable_reentrant_dispatch", "get_ignored_functions",
                "get_overridable_functions", "get_testing_overrides", "handle_torch_function",
                "has_torch_function", "is_tensor_like", "is_tensor_method_or_property",
                "redispatch_function", "resolve_name", "wrap_torch_function"]
    assert sorted(ov.__all__) == expected
    if torch is not None:
        assert sorted(torch.overrides.__all__) == expected
    missing = [n for n in tg.overrides.__all__ if not hasattr(tg.overrides, n)]
    assert not missing, f"tritongrad.overrides lacks {missing} (``import *`` would fail)"
