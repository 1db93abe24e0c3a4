"""The ``__torch_function__`` protocol (autograd/overrides.py): Tensor subclasses that keep
their type, handlers that see each call, tensor-like objects, modes, and PyTorch's legacy
``Tensor(...)`` constructor that subclasses are made with. Each test starts with the dispatch
check uninstalled (tests/conftest.py), so installing it on first use is tested too."""

import copy
import pickle
import threading

import numpy as np
import pytest

import tritongrad as tg
import tritongrad.nn.functional as F
from tritongrad.autograd import overrides
from tritongrad.overrides import (BaseTorchFunctionMode, TorchFunctionMode,
                                  handle_torch_function, has_torch_function,
                                  has_torch_function_unary, has_torch_function_variadic)


def host(t):
    return t.detach().cpu().numpy()


class Plain(tg.Tensor):
    """A subclass with Tensor's own __torch_function__: keeps its type through ops."""


class Logged(tg.Tensor):
    """Records each call handed to it, then runs it as Tensor's __torch_function__ does."""

    calls: list = []

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        cls.calls.append((func, types))
        return super().__torch_function__(func, types, args, kwargs)


class Refusing(tg.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return NotImplemented


class LoggedChild(Logged):
    pass


# -- subclasses keep their type -----------------------------------------------------------------

def test_ops_keep_the_subclass(device):
    x0 = np.arange(6.0).reshape(2, 3)
    m = tg.tensor(x0, device=device).as_subclass(Plain)
    plain = tg.ones(2, 3, device=device, dtype=tg.float64)
    for out in (m + 1, 2 * m, plain - m, tg.add(plain, m), m.exp(), m.sum(1), m[0], m[:, 1:],
                m.T, tg.cat([plain, m]), F.relu(m), tg.linalg.vector_norm(m), m.mT.real):
        assert type(out) is Plain
    np.testing.assert_allclose(host(plain - m), 1 - x0)
    np.testing.assert_allclose(host(m.T), x0.T)
    parts = m.split(1)
    assert type(parts) is tuple and all(type(p) is Plain for p in parts)
    values, indices = m.max(1)
    assert type(m.max(1)).__name__ == "max" and type(values) is Plain and type(indices) is Plain
    np.testing.assert_array_equal(host(indices), [2, 2])
    assert m.add_(1) is m and type(m) is Plain
    assert type(m.shape) is tg.Size and isinstance(m.sum().item(), float)
    assert isinstance(len(m), int) and bool(m[0, 0] > 0) is True


def test_parameters_stay_plain_but_not_next_to_a_subclass():
    p = tg.nn.Parameter(tg.ones(2))
    assert type(p * 2) is tg.Tensor and not has_torch_function((p,))
    assert type(p * tg.ones(2).as_subclass(Plain)) is Plain
    with tg.DisableTorchFunctionSubclass():
        assert type(tg.ones(2).as_subclass(Plain) + 1) is tg.Tensor


def test_a_parameter_of_a_subclass_keeps_its_class():
    # PyTorch's Parameter(data of a user's subclass): data.detach(), of that class, marked
    s = tg.tensor([1.0, 2.0]).as_subclass(Plain)
    p = tg.nn.Parameter(s)
    assert type(p) is Plain and isinstance(p, tg.nn.Parameter) and p.requires_grad and p.is_leaf
    assert p.data_ptr() == s.data_ptr() and not s.requires_grad
    assert not isinstance(s, tg.nn.Parameter) and not isinstance(tg.ones(1), tg.nn.Parameter)
    assert repr(p) == "Parameter(Plain([1., 2.], requires_grad=True))"
    m = tg.nn.Module()
    m.w = p
    assert dict(m.named_parameters()) == {"w": p} and type(m.w) is Plain
    m.double()
    assert type(m.w) is Plain and m.w.dtype is tg.float64 and isinstance(m.w, tg.nn.Parameter)
    assert not tg.nn.Parameter(s, requires_grad=False).requires_grad
    with pytest.raises(RuntimeError, match="only Tensors of floating point"):
        tg.nn.Parameter(tg.ones(2, dtype=tg.int64).as_subclass(Plain))
    assert type(tg.nn.Parameter(tg.ones(2))) is tg.nn.Parameter  # (a plain Tensor's)


def test_gradients_flow_through_a_subclass(device):
    x = tg.tensor([1.0, -2.0, 3.0], dtype=tg.float64, device=device, requires_grad=True)
    m = x.as_subclass(Plain)
    y = (m * m).sum()
    assert type(y) is Plain and type(y.grad_fn).__name__ == "AliasBackward0"
    y.backward()
    assert type(x.grad) is tg.Tensor
    np.testing.assert_allclose(host(x.grad), 2 * np.array([1.0, -2.0, 3.0]))
    lin = tg.nn.Linear(3, 2, dtype=tg.float64).to(device)
    out = lin(tg.ones(4, 3, dtype=tg.float64, device=device).as_subclass(Plain))
    assert type(out) is Plain
    out.sum().backward()
    np.testing.assert_allclose(host(lin.weight.grad), np.full((2, 3), 4.0))


# -- handlers -----------------------------------------------------------------------------------

def test_handlers_see_public_functions_and_types():
    Logged.calls.clear()
    a = tg.ones(2, 2).as_subclass(Logged)
    a + 1
    tg.add(tg.ones(2, 2), a)
    F.linear(a, tg.ones(2, 2))
    a.T
    a[0] = 3.0
    funcs = [f for f, _ in Logged.calls]
    assert funcs[0] is tg.Tensor.add
    assert funcs[1] is tg.add and funcs[2] is F.linear
    assert funcs[3] == tg.Tensor.T.__get__ and funcs[4] is tg.Tensor.__setitem__
    assert all(types == (Logged,) for _, types in Logged.calls)  # exact Tensors never override
    np.testing.assert_array_equal(host(a), [[3.0, 3.0], [1.0, 1.0]])


def test_subclasses_are_asked_before_their_bases():
    order = []

    class Base(tg.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            order.append(("Base", types))
            return NotImplemented

    class Child(Base):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            order.append(("Child", types))
            return "child"

    b, c = tg.ones(1).as_subclass(Base), tg.ones(1).as_subclass(Child)
    assert tg.mul(b, c) == "child"
    assert order == [("Child", (Child, Base))]
    order.clear()
    with pytest.raises(TypeError, match="Multiple dispatch failed for 'tritongrad.mul'"):
        tg.mul(b, tg.ones(1).as_subclass(Refusing))
    assert [name for name, _ in order] == ["Base"]


def test_unrelated_subclasses_refuse_each_other():
    # an operator returns NotImplemented, so Python words the refusal (PyTorch's too)
    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for \+: 'Plain' and "
                                        "'Logged'"):
        tg.ones(1).as_subclass(Plain) + tg.ones(1).as_subclass(Logged)
    with pytest.raises(TypeError, match="all __torch_function__ handlers returned "
                                        "NotImplemented"):
        tg.add(tg.ones(1).as_subclass(Plain), tg.ones(1).as_subclass(Logged))
    # a child of a handler's class is its own: Tensor's __torch_function__ gives the child
    assert type(tg.ones(1).as_subclass(Logged) + tg.ones(1).as_subclass(LoggedChild)) \
        is LoggedChild


def test_a_tensor_like_object_reaches_its_handler_first_time():
    class Diagonal:  # not a Tensor: PyTorch's "tensor-like" example
        def __init__(self, n, value):
            self.n, self.value = n, value

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if func is tg.mean:
                return args[0].value / args[0].n
            return NotImplemented

    overrides.deactivate()  # (the classes above installed it when this module loaded)
    assert tg.mean(Diagonal(5, 2.0)) == 0.4
    assert overrides.active
    with pytest.raises(TypeError, match="Multiple dispatch failed for 'tritongrad.exp'"):
        tg.exp(Diagonal(5, 2.0))
    assert overrides.is_tensor_like(Diagonal(1, 1)) and not overrides.is_tensor_like([1])


# -- modes --------------------------------------------------------------------------------------

class Recording(TorchFunctionMode):
    def __init__(self, name, log):
        super().__init__()
        self.name, self.log = name, log

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.log.append((self.name, func.__name__))
        return func(*args, **(kwargs or {}))


def test_modes_see_every_call_innermost_first():
    log = []
    with Recording("outer", log), Recording("inner", log) as inner:
        assert overrides._get_current_function_mode() is inner
        x = tg.randn(3)
        y = F.relu(x + 1)
    assert log == [("inner", "randn"), ("outer", "randn"), ("inner", "add"),
                   ("outer", "add"), ("inner", "relu"), ("outer", "relu")]
    assert type(y) is tg.Tensor and overrides._get_current_function_mode() is None
    log.clear()
    with Recording("only", log):
        with tg.DisableTorchFunctionSubclass():
            tg.ones(1) * 2  # modes still run
        with tg.DisableTorchFunction():
            tg.ones(1) * 2  # nothing runs
    assert log == [("only", "ones"), ("only", "mul")]


def test_a_mode_before_the_subclass_and_base_mode():
    log, Logged.calls[:] = [], []
    with Recording("mode", log):
        out = tg.ones(2).as_subclass(Logged) * 3
    assert type(out) is Logged  # the mode ran mul, which then went to the subclass
    assert ("mode", "mul") in log and Logged.calls[-1][0] is tg.Tensor.mul
    with BaseTorchFunctionMode():
        np.testing.assert_array_equal(host(tg.arange(3) * 2), [0, 2, 4])


def test_modes_are_per_thread():
    log, seen = [], []

    def other():
        seen.append(overrides._get_current_function_mode())
        tg.ones(1) + 1

    with Recording("main", log):
        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert seen == [None] and log == []


# -- functions of one's own ---------------------------------------------------------------------

def test_handle_torch_function_for_a_function_of_ones_own():
    def scale(x, factor=2.0):
        if has_torch_function_unary(x):
            return handle_torch_function(scale, (x,), x, factor=factor)
        return x * factor

    @overrides.wrap_torch_function(lambda x, y: (x, y))
    def both(x, y):
        return x + y

    Logged.calls.clear()
    a = tg.ones(2).as_subclass(Logged)
    assert type(scale(a)) is Logged and Logged.calls[0][0] is scale
    assert type(both(tg.ones(2), a)) is Logged and Logged.calls[-1][0] is both
    assert type(scale(tg.ones(2))) is tg.Tensor
    assert has_torch_function_variadic(1, a) and not has_torch_function_variadic(1, tg.ones(1))
    assert has_torch_function([[tg.ones(1), a]][0])


def test_overridable_and_ignored_functions():
    class Enable(tg.Tensor):
        pass

    assert overrides.active
    table = overrides.get_overridable_functions()
    assert tg.add in table[tg] and F.linear in table[F] and tg.Tensor.add in table[tg.Tensor]
    assert tg.manual_seed in overrides.get_ignored_functions()
    assert overrides.resolve_name(tg.add) == "tritongrad.add"
    assert pickle.loads(pickle.dumps(tg.add)) is tg.add  # wrappers are found where they live
    assert overrides.is_tensor_method_or_property(tg.Tensor.add)
    assert overrides.is_tensor_method_or_property(tg.Tensor.T.__get__)


def test_no_check_until_a_subclass_exists():
    """Note [Overrides installed on first use]: plain programs pay nothing."""
    overrides.deactivate()
    assert not overrides.active and not hasattr(tg.add, "__torch_function_wrapped__")
    assert not hasattr(tg.Tensor.add, "__torch_function_wrapped__")

    class Enable(tg.Tensor):
        pass

    assert overrides.active and tg.add.__torch_function_wrapped__ is not None
    overrides.deactivate()
    Enable([1.0])  # an instance installs it again
    assert overrides.active


# -- constructors, copies, printing ------------------------------------------------------------

def test_legacy_constructor_and_subclass_constructors():
    assert tg.Tensor(2, 3).shape == (2, 3) and tg.Tensor(2, 3).dtype is tg.float32
    assert tg.Tensor([2, 3]).tolist() == [2.0, 3.0] and tg.Tensor().shape == (0,)
    assert tg.Tensor(tg.Size([4])).shape == (4,)
    tg.set_default_dtype(tg.float64)
    assert tg.Tensor([1]).dtype is tg.float64
    tg.set_default_dtype(tg.float32)
    x = tg.ones(2, requires_grad=True)
    alias = tg.Tensor(x)  # an alias of a tensor: its storage and its history
    assert type(alias.grad_fn).__name__ == "AliasBackward0" and alias.data_ptr() == x.data_ptr()
    m = Plain([1.0, 2.0])
    assert type(m) is Plain and m.is_leaf and not m.requires_grad and m.dtype is tg.float32
    assert type(Plain(x)) is Plain and Plain(x).requires_grad and Plain().shape == (0,)
    s = tg.Tensor._make_subclass(Plain, x, True)
    assert type(s) is Plain and s.is_leaf and s.requires_grad and s.data_ptr() == x.data_ptr()
    with pytest.raises(TypeError, match="invalid data type .str."):
        tg.Tensor("a")
    with pytest.raises(TypeError, match="does not inherit from Tensor is not possible"):
        tg.Tensor._make_subclass(int, x)
    with pytest.raises(TypeError, match=r"argument 'data' \(position 2\) must be Tensor, not list"):
        tg.Tensor._make_subclass(Plain, [1.0])
    with pytest.raises(RuntimeError, match="^Only Tensors of floating point and complex dtype"):
        tg.Tensor._make_subclass(Plain, tg.ones(2, dtype=tg.int64), True)
    assert not tg.Tensor._make_subclass(Plain, tg.ones(2, dtype=tg.int64)).requires_grad


def test_copies_keep_the_subclass_and_its_attributes():
    m = Plain([1.0, 2.0]).requires_grad_()
    m.note = {"unit": "m"}
    for c in (copy.deepcopy(m), pickle.loads(pickle.dumps(m))):
        assert type(c) is Plain and c.note == {"unit": "m"} and c.requires_grad and c.is_leaf
        np.testing.assert_array_equal(host(c), [1.0, 2.0])
    assert copy.deepcopy(m).note is not m.note
    assert type(copy.deepcopy(tg.ones(1))) is tg.Tensor
    with pytest.raises(RuntimeError, match="graph leaves.*weight_norm usage"):
        copy.deepcopy(m * 2)  # (a non-leaf; PyTorch names the usual cause)


def test_repr_names_the_subclass():
    assert repr(Plain([1.0, 2.0])) == "Plain([1., 2.])"
    assert repr(tg.nn.Parameter(tg.zeros(1))).endswith("tensor([0.], requires_grad=True)")
