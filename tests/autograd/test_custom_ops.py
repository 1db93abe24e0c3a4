"""``tg.library.custom_op`` (tritongrad/library.py): custom operators autograd treats as one
op, with registered backward formulas, kernels per device type, vmap rules, autocast, the
checks PyTorch makes (schemas from type hints, aliasing, mutation) and ``tg.ops``. Values and
gradients are checked against NumPy float64 and central differences."""

import itertools
from typing import Optional

import numpy as np
import pytest

import tritongrad as tg
from tritongrad import Tensor
from tritongrad.library import custom_op, infer_schema, opcheck

_names = itertools.count()


def host(t):
    return t.detach().cpu().numpy()


def fresh(stem: str) -> str:
    """A new op name per test (ops live for the process, as PyTorch's)."""
    return f"tglib_test::{stem}_{next(_names)}"


def numpy_sin_op():
    """PyTorch's documentation example: an op whose body leaves autograd (NumPy)."""
    @custom_op(fresh("numpy_sin"), mutates_args=())
    def numpy_sin(x: Tensor) -> Tensor:
        return tg.from_numpy(np.sin(x.detach().cpu().numpy())).to(x.device)

    def setup_context(ctx, inputs, output):
        (x,) = inputs
        ctx.save_for_backward(x)

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.cos()

    return numpy_sin, backward, setup_context


def test_schema_from_type_hints():
    def f(x: Tensor, v: float, n: int, b: bool, s: str, t: Optional[Tensor], ts: list[Tensor],
          d: tg.dtype, dev: tg.device, li: list[int], o: Optional[int] = None, *,
          k: float = 2.0) -> tuple[Tensor, Tensor]:
        ...
    assert infer_schema(f, mutates_args=()) == (
        "(Tensor x, float v, SymInt n, bool b, str s, Tensor? t, Tensor[] ts, ScalarType d, "
        "Device dev, SymInt[] li, SymInt? o=None, *, float k=2.0) -> (Tensor, Tensor)")

    def g(x: Tensor, y: Tensor, n: tg.types.Number = 2) -> None:
        ...
    assert infer_schema(g, mutates_args={"x"}) == "(Tensor(a0!) x, Tensor y, Scalar n=2) -> ()"
    with pytest.raises(ValueError, match="Parameter x must have a type annotation"):
        infer_schema(lambda x: x, mutates_args=())
    with pytest.raises(ValueError, match="Parameter y has unsupported type <class 'dict'>"):
        def h(x: Tensor, y: dict) -> Tensor:
            ...
        infer_schema(h, mutates_args=())
    with pytest.raises(ValueError, match=r"\{'z'\} in mutates_args were not found"):
        infer_schema(g, mutates_args={"z"})
    with pytest.raises(ValueError, match="name must look like"):
        custom_op("no_namespace", mutates_args=())


def test_an_op_without_a_formula_refuses_backward(device):
    op, _, _ = numpy_sin_op()
    x = tg.tensor([0.5, 1.0, -2.0], dtype=tg.float64, device=device, requires_grad=True)
    y = op(x)
    np.testing.assert_allclose(host(y), np.sin(host(x)))
    assert type(y.grad_fn).__name__.startswith("GeneratedBackwardFor_tglib_test_numpy_sin")
    with pytest.raises(RuntimeError, match="no autograd formula was registered. Please use "
                                           "register_autograd to add one."):
        y.sum().backward()


def test_registered_formula_gives_gradients(device):
    op, backward, setup_context = numpy_sin_op()
    op.register_autograd(backward, setup_context=setup_context)
    x = tg.tensor([0.5, 1.0, -2.0], dtype=tg.float64, device=device, requires_grad=True)
    (g,) = tg.autograd.grad(op(x).sum(), x)
    np.testing.assert_allclose(host(g), np.cos(host(x)))
    assert tg.autograd.gradcheck(op, (x,))
    assert opcheck(op, (x,)) == {"test_schema": "SUCCESS",
                                 "test_autograd_registration": "SUCCESS"}
    y = op(tg.ones(2, device=device))  # nothing requires grad: no node
    assert y.grad_fn is None and not y.requires_grad


def test_the_body_records_nothing_and_outputs_are_new():
    seen = []

    @custom_op(fresh("inner"), mutates_args=())
    def inner(x: Tensor) -> Tensor:
        r = x * 2
        seen.append((tg.is_grad_enabled(), r.requires_grad))
        return r

    inner(tg.ones(2, requires_grad=True))
    assert seen == [(False, False)]

    @custom_op(fresh("alias"), mutates_args=())
    def alias(x: Tensor) -> Tensor:
        return x[1:]

    with pytest.raises(RuntimeError, match="may not alias any inputs"):
        alias(tg.ones(3))


def test_mutation_bumps_versions_and_is_checked():
    @custom_op(fresh("fill"), mutates_args={"x"})
    def fill(x: Tensor, v: float) -> None:
        x.fill_(v)

    t = tg.zeros(2)
    v0 = t._version
    assert fill(t, 3.0) is None
    assert t.tolist() == [3.0, 3.0] and t._version == v0 + 2  # fill_'s bump and the op's
    with pytest.raises(RuntimeError, match="Cannot register autograd formula for "
                                           "non-functional operator"):
        fill.register_autograd(lambda ctx, g: None)

    @custom_op(fresh("sneaky"), mutates_args=())
    def sneaky(x: Tensor) -> Tensor:
        x.add_(1)
        return x.clone()

    with pytest.raises(tg.library.OpCheckError, match="mutated its argument 'x'"):
        opcheck(sneaky, (tg.zeros(2),))


def test_lists_keyword_only_arguments_and_several_outputs():
    @custom_op(fresh("weighted"), mutates_args=())
    def weighted(xs: list[Tensor], w: float, *, shift: float = 0.0) -> tuple[Tensor, Tensor]:
        total = sum(x * w for x in xs) + shift
        return total, total * 2

    def setup_context(ctx, inputs, keyword_only_inputs, output):
        ctx.w = inputs[1]
        ctx.count = len(inputs[0])
        assert keyword_only_inputs == {"shift": 1.0}

    def backward(ctx, g1, g2):
        g = (g1 + 2 * g2) * ctx.w
        return [g] * ctx.count, None

    weighted.register_autograd(backward, setup_context=setup_context)
    a = tg.tensor([1.0, 2.0], requires_grad=True)
    b = tg.tensor([3.0, -1.0], requires_grad=True)
    t1, t2 = weighted([a, b], 0.5, shift=1.0)
    np.testing.assert_allclose(host(t1), [3.0, 1.5])
    (t1.sum() + t2.sum()).backward()  # d/da of sum(t1 + t2) = (1 + 2) * w
    np.testing.assert_allclose(host(a.grad), [1.5, 1.5])
    np.testing.assert_allclose(host(b.grad), [1.5, 1.5])

    weighted.register_autograd(lambda ctx, g1, g2: [g1, g1])  # one gradient per argument: 2
    with pytest.raises(RuntimeError, match=r"returned an incorrect number of gradients "
                                           r"\(expected 2, got 1\)"):
        weighted([a, b], 0.5, shift=1.0)[0].sum().backward()


def test_kernels_per_device_type(device):
    @custom_op(fresh("dev"), mutates_args=())
    def dev(x: Tensor) -> Tensor:
        return x + 1

    @dev.register_kernel("cpu")
    def _(x):
        return x + 100

    x = tg.zeros(1, device=device)
    assert host(dev(x)).tolist() == ([100.0] if device == "cpu" else [1.0])
    with dev.set_kernel_enabled("cpu", False):
        assert host(dev(x)).tolist() == [1.0]

    @custom_op(fresh("cpu_only"), mutates_args=(), device_types="cpu")
    def cpu_only(x: Tensor) -> Tensor:
        return x * 2

    if device == "cuda":
        with pytest.raises(NotImplementedError, match="with arguments from the 'cuda' device"):
            cpu_only(x)


def test_ops_namespace_profiler_and_vmap():
    op, backward, setup_context = numpy_sin_op()
    op.register_autograd(backward, setup_context=setup_context)
    ns, name = op._qualname.split("::")
    packet = getattr(getattr(tg.ops, ns), name)
    x = tg.tensor([0.25, 0.5], dtype=tg.float64)
    np.testing.assert_allclose(host(packet(x)), np.sin([0.25, 0.5]))
    assert packet.default._custom_op is op and packet.default.name() == op._qualname
    assert str(packet.default._schema) == f"{op._qualname}(Tensor x) -> Tensor"
    eye = tg.eye(2, dtype=tg.float64)
    np.testing.assert_array_equal(host(tg.ops.aten.mm.default(eye, x[:, None])),
                                  host(x[:, None]))
    with tg.profiler.profile() as prof:
        op(x.requires_grad_())
    assert op._qualname in [e.name for e in prof.events()]

    @op.register_vmap
    def rule(info, in_dims, x):
        return op(x), in_dims[0]

    batch = tg.tensor([[0.1, 0.2], [0.3, 0.4]], dtype=tg.float64)
    np.testing.assert_allclose(host(tg.vmap(op)(batch)), np.sin(host(batch)))


def test_autocast_registration():
    seen = []

    @custom_op(fresh("cast"), mutates_args=())
    def cast(x: Tensor) -> Tensor:
        seen.append(x.dtype)
        return x.clone()

    cast.register_autocast("cpu", tg.float64)
    with tg.autocast("cpu", dtype=tg.bfloat16):
        cast(tg.ones(2))
    cast(tg.ones(2))
    assert seen == [tg.float64, tg.float32]


def test_wrap_triton_launches_a_kernel_on_tensors():
    triton = pytest.importorskip("triton")
    import triton.language as tl

    @triton.jit
    def axpy_kernel(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        keep = offsets < n
        x = tl.load(x_ptr + offsets, mask=keep)
        tl.store(out_ptr + offsets, alpha * x + tl.load(y_ptr + offsets, mask=keep), mask=keep)

    @tg.library.triton_op(fresh("triton_axpy"), mutates_args=())
    def axpy(x: Tensor, y: Tensor, alpha: float) -> Tensor:
        out = tg.empty_like(x)
        n = x.numel()
        tg.library.wrap_triton(axpy_kernel)[(triton.cdiv(n, 64),)](x, y, out, alpha, n,
                                                                   BLOCK=64)
        return out

    x = tg.arange(100, dtype=tg.float32, device="cuda")
    y = tg.ones(100, device="cuda")
    np.testing.assert_array_equal(host(axpy(x, y, 3.0)), 3.0 * np.arange(100) + 1.0)


def test_subclasses_and_modes_see_custom_ops():
    op, backward, setup_context = numpy_sin_op()
    op.register_autograd(backward, setup_context=setup_context)

    class Marked(tg.Tensor):
        pass

    out = op(tg.tensor([0.5], dtype=tg.float64).as_subclass(Marked))
    assert type(out) is Marked
    np.testing.assert_allclose(host(out), np.sin([0.5]))
    seen = []

    class Log(tg.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(func)
            return func(*args, **(kwargs or {}))

    with Log():
        op(tg.ones(1))
    assert op in seen
