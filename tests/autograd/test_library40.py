"""torch.library's registration by name (session 40): ``Library``/``define``/``impl``, the
module-level ``register_*``, fake implementations on the meta device and ``get_ctx``.

Each scenario takes the library as ``torch`` and returns what a user observes (printed
schemas, the arguments a kernel gets, values, gradients, warnings, error messages). The tests
compare tritongrad's observations with the ones recorded from PyTorch 2.13 (so they check
something without torch), and with a live PyTorch run where torch is installed.
"""


import itertools
import re
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tritongrad as tg
from tritongrad import _op_schema

_count = itertools.count()


def _ns(torch) -> str:
    """A namespace no other test (or library) has used: registrations are process-wide."""
    return f"t40_{'tg' if torch is tg else 'pt'}_{next(_count)}"


def _said(fn):
    """``fn()``'s result, or ``"TypeName: first line of the message"``."""
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 (what a user sees is the point)
        return f"{type(e).__name__}: {str(e).strip().splitlines()[0]}"


def _values(t):
    return np.asarray(t.detach().cpu().numpy()).round(6).tolist()


# -- scenarios --------------------------------------------------------------------------------

SCHEMAS = [
    "a(Tensor x, float a=2.0, float b=1e-5, float c=0.1, float d=-3.5, float e=100000.0, "
    "float f=1e20, int g=-1, int[2] h=1, int[] i=[1, 2], bool j=True, str k=\"mean\", "
    "Scalar l=1, Scalar m=1.5, ScalarType? n=None, Tensor? o=None, float[] p=[0.5, 1.0]) -> Tensor",
    "b(Tensor(a!) x, Tensor(b) y, Tensor(a!)[] z, Tensor?[] w) -> (Tensor(a!), Tensor)",
    "c.out(Tensor x,*,Tensor(a!) out)->Tensor(a!)",
    "d(Tensor x) -> (Tensor values, Tensor indices)",
    "e(Tensor x, int[]? s=None, SymInt[] t=[], Device? d=None, Layout? l=None, "
    "MemoryFormat? mf=None, Generator? g=None, int? n=None, float? q=None, "
    "bool[3] bb=[True, False, True]) -> Tensor[]",
    "f() -> ()",
    "g(Tensor x) -> int",
]
# PyTorch 2.13's str(op._schema) of SCHEMAS, without the namespace
PRINTED = [
    "a(Tensor x, float a=2., float b=1.0000000000000001e-05, float c=0.10000000000000001, "
    "float d=-3.5, float e=100000., float f=1e+20, int g=-1, int[2] h=1, int[] i=[1, 2], "
    "bool j=True, str k=\"mean\", Scalar l=1, Scalar m=1.5, ScalarType? n=None, Tensor? o=None, "
    "float[] p=[0.5, 1.]) -> Tensor",
    "b(Tensor(a!) x, Tensor(b) y, Tensor(a!)[] z, Tensor?[] w) -> (Tensor(a!), Tensor)",
    "c.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)",
    "d(Tensor x) -> (Tensor values, Tensor indices)",
    "e(Tensor x, int[]? s=None, SymInt[] t=[], Device? d=None, Layout? l=None, "
    "MemoryFormat? mf=None, Generator? g=None, int? n=None, float? q=None, "
    "bool[3] bb=[True, False, True]) -> Tensor[]",
    "f() -> ()",
    "g(Tensor x) -> int",
]


def schemas(torch):
    ns = _ns(torch)
    lib = torch.library.Library(ns, "DEF")
    out = []
    for text in SCHEMAS:
        lib.define(text)
        base, _, overload = text.split("(")[0].partition(".")
        op = getattr(getattr(torch.ops, ns), base)
        schema = getattr(op, overload or "default")._schema
        out.append(str(schema).replace(f"{ns}::", ""))
        out.append([(a.name, str(a.type), a.kwarg_only) for a in schema.arguments])
        out.append([(r.name, str(r.type)) for r in schema.returns])
    lib._destroy()
    return out


def bad_schemas(torch):
    lib = torch.library.Library(_ns(torch), "DEF")
    out = [_said(lambda s=s: lib.define(s)) for s in (
        "bad(Tensor x -> Tensor", "zz(Tensor x, Footype y) -> Tensor", "Tensor x",
        "zz(Tensor x, float a=inf) -> Tensor")]
    out.append(_said(lambda: lib.define("zz(Tensor x, int y=1, Tensor z) -> Tensor")).split(
        "Non-default")[-1])
    lib._destroy()
    return out


def kernel_arguments(torch):
    """What a Python kernel is handed (PyTorch drops trailing defaults)."""
    ns = _ns(torch)
    lib = torch.library.Library(ns, "DEF")
    lib.define(SCHEMAS[0])
    seen = []

    def kernel(*args, **kwargs):
        seen.append((len(args), [a if not isinstance(a, torch.Tensor) else "T" for a in args[1:]],
                     {k: str(v) for k, v in kwargs.items()}))
        return args[0].clone()
    lib.impl("a", kernel, "CPU")
    lib.define("k(Tensor x, float a=2.0, *, int b=1, Device? d=None) -> Tensor")
    lib.impl("k", kernel, "CPU")
    x = torch.ones(2)
    op, k = getattr(torch.ops, ns).a, getattr(torch.ops, ns).k
    op(x)
    op(x, a=2.0)
    op(x, 3)
    op(x, h=2)
    op(x, h=(2, 2), j=1)
    op(x, l=True, m=2, n=torch.float16, o=torch.ones(1), g=True)
    op(x, a=torch.tensor(4.0), i=(3,))
    k(x, b=3)
    k(x, 2.5, b=1, d="cpu")
    errors = [_said(lambda: op(x, zz=3)), _said(lambda: op()), _said(lambda: op(3)),
              _said(lambda: op(x, g=1.5)), _said(lambda: op(x, i=1.5)),
              _said(lambda: op(x, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7, 1, [1], True, "s", 1, 1,
                               None, None, [1.0], 5)),
              _said(lambda: k(x, 1.0, 2))]
    lib._destroy()
    return seen + errors


def dispatch(torch):
    """Which kernel runs: a device's over CompositeImplicitAutograd, the Autograd kernel with
    its own op below it, a register_autograd formula, fallthrough, the not-implemented
    fallback (its warning at backward and its missing gradient)."""
    ns = _ns(torch)
    lib = torch.library.Library(ns, "DEF")
    ops = getattr(torch.ops, ns)
    out = []
    x = torch.tensor([1.0, 2.0], requires_grad=True)

    lib.define("ci(Tensor x) -> Tensor")
    lib.impl("ci", lambda x: x * 5, "CompositeImplicitAutograd")
    y = ops.ci(x)
    y.sum().backward()
    out += [_values(y), type(y.grad_fn).__name__, _values(x.grad)]
    lib.impl("ci", lambda x: x * 7, "CPU")
    out.append(_values(ops.ci(x)))

    class Triple(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            with torch._C._AutoDispatchBelowAutograd():
                return ops.ag(x)

        @staticmethod
        def backward(ctx, g):
            return g * 10

    lib.define("ag(Tensor x) -> Tensor")
    lib.impl("ag", lambda x: x * 3, "CPU")
    lib.impl("ag", Triple.apply, "Autograd")
    x.grad = None
    y = ops.ag(x)
    y.sum().backward()
    out += [_values(y), _values(x.grad)]

    lib.define("sc(Tensor x, float a=2.0) -> Tensor")
    lib.impl("sc", lambda x, a=2.0: torch.from_numpy(x.detach().numpy() * a), "CPU")
    torch.library.register_autograd(f"{ns}::sc", lambda ctx, g: (g * ctx.a, None),
                                    setup_context=lambda ctx, inputs, output:
                                    setattr(ctx, "a", inputs[1]))
    x.grad = None
    y = ops.sc(x, 3.0)
    y.sum().backward()
    out += [_values(y), type(y.grad_fn).__name__, _values(x.grad)]

    lib.define("nd(Tensor x) -> Tensor")
    lib.impl("nd", lambda x: torch.from_numpy(x.detach().numpy() * 2), "CPU")
    y = ops.nd(x)
    out += [y.requires_grad, y.grad_fn.name().split("::")[-1].replace("Backward", ""),
            len(y.grad_fn.next_functions)]
    x.grad = None
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        y.sum().backward()
    out += [x.grad is None, [str(w.message).split(": ", 1)[1][:40] for w in said]]
    out.append(ops.nd(torch.ones(2, dtype=torch.int64)).requires_grad)

    def grads_and_warnings(op):
        x.grad = None
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            op(x).sum().backward()
        return [_values(x.grad), len(said)]

    lib.define("tr(Tensor x) -> Tensor")
    lib.impl("tr", lambda x: x * 4, "CPU")  # differentiable ops inside, no formula
    out += grads_and_warnings(ops.tr)
    lib.define("ft(Tensor x) -> Tensor")
    lib.impl("ft", lambda x: x + 1, "CPU")
    lib.impl("ft", torch.library.fallthrough_kernel, "Autograd")
    out += grads_and_warnings(ops.ft)

    lib.define("two(Tensor x) -> (Tensor, Tensor)")
    lib.impl("two", lambda x: (x + 1, x * 2), "CompositeExplicitAutograd")
    a, b = ops.two(x)
    out += [_values(a), _values(b)]
    out.append(_said(lambda: ops.ci(torch.ones(1), 2)))
    lib._destroy()
    return out


def meta(torch):
    """Fake implementations and Meta kernels run for meta tensors; get_ctx refuses there."""
    ns = _ns(torch)
    lib = torch.library.Library(ns, "DEF")
    ops = getattr(torch.ops, ns)
    m = torch.empty(3, 4, device="meta")
    out = []
    lib.define("rows(Tensor x, int n) -> Tensor")
    lib.impl("rows", lambda x, n: x[:n].clone(), "CPU")
    out.append(_said(lambda: ops.rows(m, 2)).split(".")[0])
    torch.library.register_fake(f"{ns}::rows")(lambda x, n: x.new_empty(n, x.shape[1]))
    r = ops.rows(m, 2)
    out += [tuple(r.shape), str(r.device), _values(ops.rows(torch.ones(3, 2), 1))]
    lib.define("dbl(Tensor x) -> Tensor")
    lib.impl("dbl", lambda x: x.new_empty(x.shape[0] * 2), "Meta")
    out += [tuple(ops.dbl(m).shape), _said(lambda: ops.dbl(torch.ones(2))).split(".")[0]]

    @torch.library.custom_op(f"{ns}::cop", mutates_args=())
    def cop(x: torch.Tensor) -> torch.Tensor:
        return x.clone()
    out.append(_said(lambda: cop(m)).split(".")[0])

    @cop.register_fake
    def _(x):
        return torch.empty_like(x)
    out.append(tuple(cop(m).shape))
    cop.register_autograd(lambda ctx, g: g * 2)
    mg = torch.empty(3, device="meta", requires_grad=True)
    y = cop(mg)
    y.sum().backward()
    out += [type(y.grad_fn).__name__, str(mg.grad.device), tuple(mg.grad.shape)]

    @torch.library.custom_op(f"{ns}::nz", mutates_args=())
    def nz(x: torch.Tensor) -> torch.Tensor:
        return x[x > 0].clone()

    @nz.register_fake
    def _(x):
        ctx = torch.library.get_ctx()
        return x.new_empty(ctx.new_dynamic_size())
    out.append(_said(lambda: nz(m)).split("): ", 1)[1].split(".")[0])
    out.append(torch.library.get_ctx())
    lib._destroy()
    return out


def libraries(torch):
    """A Library's kinds, keys and lifetime, and the module-level functions."""
    ns = _ns(torch)
    out = []
    lib = torch.library.Library(ns, "DEF")
    out += [repr(lib).replace(ns, "NS"), lib.define("foo(Tensor x) -> Tensor"),
            lib.define("foo.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)")]
    out.append(_said(lambda: torch.library.Library(ns, "DEF")).split(";")[0].replace(ns, "NS"))
    out.append(_said(lambda: torch.library.Library(ns, "XX")))
    out.append(_said(lambda: lib.impl("foo", lambda x: x, "Bogus")))
    out.append(_said(lambda: lib.define("foo(Tensor x) -> Tensor")).split(" with")[0])
    out.append(_said(lambda: lib.define("other::zz(Tensor x) -> Tensor")).split(" in")[0])
    impl_lib = torch.library.Library(ns, "IMPL", "CPU")
    out.append(_said(lambda: impl_lib.define("zz(Tensor x) -> Tensor")).split(":")[1][:40])
    impl_lib.impl("foo", lambda x: x * 2)

    def foo_out(x, *, out):
        out.copy_(x * 3)
        return out
    lib.impl("foo.out", foo_out, "CPU")
    ops = getattr(torch.ops, ns)
    buf = torch.zeros(2)
    version = buf._version
    res = ops.foo.out(torch.ones(2), out=buf)
    out += [_values(ops.foo(torch.ones(2))), _values(buf), res is buf, buf._version - version,
            sorted(ops.foo.overloads()), str(ops.foo.out), ops.foo.default.name().replace(ns, "NS"),
            _said(lambda: ops.foo.nothere).replace(ns, "NS")]

    torch.library.define(f"{ns}::baz", "(Tensor x, float a=1.0) -> Tensor")

    @torch.library.impl(f"{ns}::baz", ["cpu", "cuda"])
    def baz(x, a=1.0):
        return x - a
    out.append(_values(ops.baz(torch.ones(2), 0.5)))
    torch.library.register_kernel(f"{ns}::baz", "cpu", lambda x, a=1.0: x + a)
    out.append(_values(ops.baz(torch.ones(2))))
    torch.library.impl(lib, "foo", "CompositeExplicitAutograd")(lambda x: x - 1)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        torch.library.impl_abstract(f"{ns}::baz")(lambda x, a=1.0: torch.empty_like(x))
    out += [[(w.category.__name__, str(w.message)[:40]) for w in said],
            tuple(ops.baz(torch.empty(5, device="meta")).shape)]
    out += [_said(lambda: torch.library.register_fake(f"{ns}::nonexist")(lambda x: x)),
            _said(lambda: torch.library.register_autograd(f"{ns}::nonexist", lambda c, g: g)),
            _said(lambda: torch.library.register_autograd("nonsense", lambda c, g: g)),
            _said(lambda: torch.library.define("nm2", "(Tensor x) -> Tensor"))]
    out = [o.replace(ns, "NS") if isinstance(o, str) else o for o in out]
    impl_lib._destroy()
    lib._destroy()
    out.append(_said(lambda: ops.foo).replace(ns, "NS"))
    out.append(_said(lambda: torch.library.Library(ns, "DEF")._destroy()))
    return out


SCENARIOS = {"schemas": schemas, "bad_schemas": bad_schemas,
             "kernel_arguments": kernel_arguments, "dispatch": dispatch, "meta": meta,
             "libraries": libraries}

_A = "NS::" + PRINTED[0]  # (the declaration PyTorch's messages quote)
# What PyTorch 2.13 gives (recorded from the scenarios above, the same code on torch).
RECORDED = {
    "kernel_arguments": [
        (1, [], {}), (1, [], {}), (2, [3.0], {}),
        (9, [2.0, 1e-05, 0.1, -3.5, 100000.0, 1e+20, -1, [2, 2]], {}),
        (9, [2.0, 1e-05, 0.1, -3.5, 100000.0, 1e+20, -1, [2, 2]], {}),
        (16, [2.0, 1e-05, 0.1, -3.5, 100000.0, 1e+20, 1, [1, 1], [1, 2], True, "mean", True, 2,
              "F16", "T"], {}),
        (10, [4.0, 1e-05, 0.1, -3.5, 100000.0, 1e+20, -1, [1, 1], [3]], {}),
        (1, [], {"b": "3"}), (2, [2.5], {"d": "cpu"}),
        "RuntimeError: Unknown keyword argument 'zz' for operator 'NS::a'. Schema: " + _A,
        "RuntimeError: NS::a() is missing value for argument 'x'. Declaration: " + _A,
        "RuntimeError: NS::a() Expected a value of type 'Tensor' for argument 'x' but instead "
        "found type 'int'.",
        "RuntimeError: NS::a() Expected a value of type 'int' for argument 'g' but instead found "
        "type 'float'.",
        "RuntimeError: NS::a() Expected a value of type 'List[int]' for argument 'i' but instead "
        "found type 'float'.",
        "RuntimeError: NS::a() expected at most 17 argument(s) but received 18 argument(s). "
        "Declaration: " + _A,
        "RuntimeError: NS::k() takes 2 positional argument(s) but 3 was/were given.  Declaration: "
        "NS::k(Tensor x, float a=2., *, int b=1, Device? d=None) -> Tensor",
    ],
    "dispatch": [
        [5.0, 10.0], "MulBackward0", [5.0, 5.0], [7.0, 14.0], [3.0, 6.0], [10.0, 10.0],
        [3.0, 6.0], "GeneratedBackwardFor_NS_sc_defaultBackward", [3.0, 3.0],
        True, "WarnNotImplemented", 1, True, ["an autograd kernel was not registered to"],
        False, [4.0, 4.0], 1, [1.0, 1.0], 0, [2.0, 3.0], [2.0, 4.0],
        "RuntimeError: NS::ci() expected at most 1 argument(s) but received 2 argument(s). "
        "Declaration: NS::ci(Tensor x) -> Tensor",
    ],
    "meta": [
        "NotImplementedError: NS::rows: attempted to run this operator with Meta tensors, but "
        "there was no fake impl or Meta kernel registered", (2, 4), "meta", [[1.0, 1.0]],
        (6,), "NotImplementedError: Could not run 'NS::dbl' with arguments from the 'CPU' "
        "backend", "RuntimeError: There was no fake impl registered for <CustomOpDef(NS::cop)>",
        (3, 4), "GeneratedBackwardFor_NS_cop_defaultBackward", "meta", (3,),
        "You're trying to run this operator with meta Tensors (as opposed to FakeTensors), but "
        "this operator may return an output Tensor with data-dependent shape", None,
    ],
    "libraries": [
        "Library(kind=DEF, ns=NS, dispatch_key=)>", "foo", "foo",
        "RuntimeError: Only a single TORCH_LIBRARY can be used to register the namespace NS",
        "ValueError: Unsupported kind: XX", "RuntimeError: could not parse dispatch key: Bogus",
        "RuntimeError: Tried to register an operator (NS::foo(Tensor x) -> Tensor)",
        "RuntimeError: Explicitly provided namespace (other)", ' def("zz")',
        [2.0, 2.0], [3.0, 3.0], True, 1, ["default", "out"], "NS.foo.out", "NS::foo",
        "AttributeError: The underlying op of 'NS.foo' has no overload name 'nothere'",
        [0.5, 0.5], [2.0, 2.0], [("FutureWarning", "`torch.library.impl_abstract` was rename")],
        (5,), "RuntimeError: operator NS::nonexist does not exist",
        "AttributeError: '_OpNamespace' 'NS' object has no attribute 'nonexist'",
        'ValueError: Expected `qualname` to be of the form "namespace::name", but got nonsense. '
        "The qualname passed to the torch.library APIs must consist of a namespace and a name, "
        "e.g. aten::sin",
        'ValueError: Expected `qualname` to be of the form "namespace::name", but got nm2. The '
        "qualname passed to the torch.library APIs must consist of a namespace and a name, e.g. "
        "aten::sin",
        "AttributeError: '_OpNamespace' 'NS' object has no attribute 'foo'", None,
    ],
    "bad_schemas": [
        "RuntimeError: expected ) but found 'arrow' here:",
        "RuntimeError: unknown type specifier. Common valid schema types include Tensor, SymInt, "
        "int, float, bool, Scalar; for a full list, please see https://github.com/pytorch/pytorch/"
        "blob/main/aten/src/ATen/native/README.md#func :",
        "RuntimeError: expected eof but found 'ident' here:",
        "RuntimeError: invalid numeric default value:",
        " positional argument follows default argument. Parameter z in zz(Tensor x, int y=1, "
        "Tensor z) -> Tensor",
    ],
}


def _normalised(torch, name):
    """A scenario's observations with the namespace and dtype names made comparable."""
    out = SCENARIOS[name](torch)

    def fix(v):
        if isinstance(v, str):
            return (v.replace("torch.float16", "F16").replace("tritongrad.float16", "F16")
                    .replace("<class 'torch.Tensor'>", "T"))
        if isinstance(v, (list, tuple)):
            return type(v)(fix(i) for i in v)
        if isinstance(v, dict):
            return {k: fix(i) for k, i in v.items()}
        if isinstance(v, tg.dtype) or type(v).__name__ == "dtype":
            return "F16" if "16" in str(v) else str(v)
        return v
    text = repr(fix(out))
    return eval(re.sub(r"t40_(tg|pt)_\d+", "NS", text))  # (our own repr)


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_against_recorded_torch(name):
    assert _normalised(tg, name) == RECORDED[name]


def test_schemas_print_as_torch_does():
    out = schemas(tg)
    assert out[0::3] == PRINTED
    assert out[1][:3] == [("x", "Tensor", False), ("a", "float", False), ("b", "float", False)]
    assert out[1][8] == ("h", "List[int]", False)
    assert out[7] == [("x", "Tensor", False), ("out", "Tensor", True)]
    assert out[11] == [("values", "Tensor"), ("indices", "Tensor")]
    assert out[13][1] == ("s", "Optional[List[int]]", False)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_against_torch(name):
    torch = pytest.importorskip("torch", minversion="2.13")
    assert _normalised(tg, name) == _normalised(torch, name)


@settings(max_examples=40, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False, width=64)
       | st.integers(-10**6, 10**6).map(float))
def test_float_defaults_print_as_cpp_does(value):
    """PyTorch prints a float default with 17 significant digits, a dot when integral."""
    text = _op_schema._format_default(value)
    assert float(text) == value
    assert any(c in text for c in ".e")
    schema = _op_schema.parse(f"f(float a={text}) -> Tensor")
    assert schema.arguments[0].default_value == value
    assert str(schema) == f"f(float a={text}) -> Tensor"


def test_float_defaults_against_torch():
    torch = pytest.importorskip("torch", minversion="2.13")
    rng = np.random.default_rng(0)
    values = [0.0, -0.0, 1.0, 2.5e-300, 1e300, 123456789.0, 0.3] + list(
        rng.standard_normal(10) * 10.0 ** rng.integers(-20, 20, 10))
    ns = _ns(torch)
    lib = torch.library.Library(ns, "DEF")
    for i, v in enumerate(values):
        lib.define(f"f{i}(float a={float(v)!r}) -> Tensor")
        printed = str(getattr(torch.ops, ns).__getattr__(f"f{i}").default._schema)
        assert printed.split("a=")[1].split(")")[0] == _op_schema._format_default(float(v))
    lib._destroy()


def test_defined_op_gradcheck_and_vmap():
    """register_autograd on a defined op passes gradcheck; register_vmap by name is used."""
    ns = _ns(tg)
    lib = tg.library.Library(ns, "DEF")
    lib.define("cube(Tensor x) -> Tensor")
    lib.impl("cube", lambda x: tg.from_numpy(x.detach().numpy() ** 3), "CPU")
    tg.library.register_autograd(f"{ns}::cube", lambda ctx, g: g * 3 * ctx.x ** 2,
                                 setup_context=lambda ctx, inputs, output:
                                 setattr(ctx, "x", inputs[0]))
    x = tg.tensor([0.5, -1.25, 2.0], dtype=tg.float64, requires_grad=True)
    op = getattr(tg.ops, ns).cube
    assert tg.autograd.gradcheck(op, (x,))
    calls = []

    def rule(info, in_dims, x):
        calls.append(in_dims)
        return op(x), in_dims[0]
    tg.library.register_vmap(f"{ns}::cube", rule)
    batch = tg.arange(6, dtype=tg.float64).reshape(2, 3)
    np.testing.assert_allclose(tg.func.vmap(op)(batch).numpy(), batch.numpy() ** 3)
    assert calls and set(calls) == {(0,)}  # (the rule, with the batch's in_dims)
    lib._destroy()


def test_defined_op_autocast_and_profiler():
    ns = _ns(tg)
    lib = tg.library.Library(ns, "DEF")
    lib.define("dt(Tensor x) -> Tensor")
    lib.impl("dt", lambda x: x.clone(), "CompositeExplicitAutograd")
    tg.library.register_autocast(f"{ns}::dt", "cpu", tg.bfloat16)
    op = getattr(tg.ops, ns).dt
    assert op(tg.ones(2)).dtype == tg.float32
    with tg.autocast("cpu", dtype=tg.bfloat16):
        assert op(tg.ones(2)).dtype == tg.bfloat16
    with tg.profiler.profile() as prof:
        op(tg.ones(2))
    assert f"{ns}::dt" in {e.key for e in prof.key_averages()}
    lib._destroy()


def test_defined_op_on_emulated_cuda():
    """A CUDA kernel is picked for CUDA tensors and refused for CPU ones."""
    if not tg.cuda.is_available():
        pytest.skip("no CUDA device (real or emulated)")
    ns = _ns(tg)
    lib = tg.library.Library(ns, "DEF")
    lib.define("half(Tensor x) -> Tensor")
    lib.impl("half", lambda x: x * 0.5, "CUDA")
    op = getattr(tg.ops, ns).half
    np.testing.assert_allclose(op(tg.ones(3, device="cuda")).cpu().numpy(), 0.5)
    with pytest.raises(NotImplementedError, match="from the 'CPU' backend"):
        op(tg.ones(3))
    lib._destroy()


def test_library_destroyed_when_collected():
    ns = _ns(tg)
    lib = tg.library.Library(ns, "DEF")
    lib.define("gone(Tensor x) -> Tensor")
    assert callable(getattr(tg.ops, ns).gone)
    del lib
    import gc
    gc.collect()
    with pytest.raises(AttributeError, match="has no attribute 'gone'"):
        getattr(tg.ops, ns).gone  # noqa: B018


def _kernel_before_definition(torch) -> list:
    ns = _ns(torch)
    lib = torch.library.Library(ns, "DEF")
    lib.impl("foo", lambda x: x * 9, "CPU")  # (PyTorch takes a kernel before the definition)
    torch.library.impl(f"{ns}::bar", "cpu")(lambda x: x + 1)
    lib.define("foo(Tensor x) -> Tensor")
    lib.define("bar(Tensor x) -> Tensor")
    ops = getattr(torch.ops, ns)
    out = [_values(ops.foo(torch.ones(2))), _values(ops.bar(torch.ones(2)))]
    lib._destroy()
    return out


def test_kernel_registered_before_its_definition():
    assert _kernel_before_definition(tg) == [[9.0, 9.0], [2.0, 2.0]]
    torch = pytest.importorskip("torch", minversion="2.13")
    assert _kernel_before_definition(torch) == [[9.0, 9.0], [2.0, 2.0]]
