"""Tensor methods and functions whose keywords or arguments differed from torch 2.13 (sweep 32).

Every behaviour is checked against NumPy float64 references or explicit expectations; where
torch is installed, the same calls are also compared with torch (``pytest.importorskip``).
"""

import warnings

import numpy as np
import pytest

import tritongrad as tg

RNG = np.random.default_rng(32)
M = RNG.standard_normal((2, 3))
A = RNG.standard_normal((2, 4))
B = RNG.standard_normal((4, 3))
B1 = RNG.standard_normal((5, 2, 4))
B2 = RNG.standard_normal((5, 4, 3))
V2, V3, V4 = RNG.standard_normal(2), RNG.standard_normal(3), RNG.standard_normal(4)


def t(a, lib=tg, **kw):
    return lib.tensor(np.asarray(a), **kw)


# -- 1. in-place products: PyTorch's operand names -------------------------------------------

# (method, self, operand names and values, the float64 reference of the result)
PRODUCTS = {
    "addmm_": (M, {"mat1": A, "mat2": B}, lambda b, a: b * M + a * (A @ B)),
    "addbmm_": (M, {"batch1": B1, "batch2": B2},
                lambda b, a: b * M + a * np.einsum("bij,bjk->ik", B1, B2)),
    "baddbmm_": (np.broadcast_to(M, (5, 2, 3)).copy(), {"batch1": B1, "batch2": B2},
                 lambda b, a: b * M + a * (B1 @ B2)),
    "addmv_": (V2, {"mat": A, "vec": V4}, lambda b, a: b * V2 + a * (A @ V4)),
    "addr_": (M, {"vec1": V2, "vec2": V3}, lambda b, a: b * M + a * np.outer(V2, V3)),
}


@pytest.mark.parametrize("op", sorted(PRODUCTS))
@pytest.mark.parametrize("form", ["keywords", "positional", "mixed"])
def test_inplace_products_take_torch_keywords(op, form):
    self_, operands, ref = PRODUCTS[op]
    (n1, x1), (n2, x2) = operands.items()
    x = t(self_)
    if form == "keywords":
        r = getattr(x, op)(**{n1: t(x1), n2: t(x2)}, beta=0.5, alpha=2.0)
    elif form == "positional":
        r = getattr(x, op)(t(x1), t(x2), beta=0.5, alpha=2.0)
    else:
        r = getattr(x, op)(t(x1), **{n2: t(x2)}, beta=0.5, alpha=2.0)
    assert r is x
    np.testing.assert_allclose(x.numpy(), ref(0.5, 2.0), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("op", sorted(PRODUCTS))
def test_inplace_products_refuse_other_keywords(op):
    self_, operands, _ = PRODUCTS[op]
    x1, x2 = (t(v) for v in operands.values())
    with pytest.raises(TypeError, match="unexpected keyword argument 'a'"):
        getattr(t(self_), op)(a=x1, b=x2)
    with pytest.raises(TypeError, match="missing"):
        getattr(t(self_), op)(x1)


@pytest.mark.parametrize("op", ["addmm", "addbmm", "baddbmm", "addmv", "addr"])
def test_product_functions_and_methods_take_torch_keywords(op):
    self_, operands, ref = PRODUCTS[op + "_"]
    kw = {k: t(v) for k, v in operands.items()}
    np.testing.assert_allclose(getattr(tg, op)(input=t(self_), **kw, beta=3).numpy(),
                               ref(3, 1), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(getattr(t(self_), op)(**kw, alpha=-1).numpy(), ref(1, -1),
                               rtol=1e-12, atol=1e-12)


def test_inplace_products_against_torch():
    torch = pytest.importorskip("torch")
    for op, (self_, operands, _) in PRODUCTS.items():
        outs = []
        for lib in (tg, torch):
            x = t(self_, lib)
            getattr(x, op)(**{k: t(v, lib) for k, v in operands.items()}, beta=2, alpha=0.5)
            outs.append(x.numpy())
        np.testing.assert_allclose(*outs, rtol=1e-12, err_msg=op)


# -- random_(from=, to=) ---------------------------------------------------------------------

@pytest.mark.parametrize("args, kwargs, lo, hi", [
    ((), {"from": 3, "to": 7}, 3, 6),
    ((), {"to": 5}, 0, 4),
    ((5,), {}, 0, 4),
    ((3, 7), {}, 3, 6),
    ((3,), {"to": 7}, 3, 6),
    ((-4, 2), {}, -4, 1),
])
def test_random_bounds(args, kwargs, lo, hi):
    x = tg.zeros(2000).random_(*args, **kwargs, generator=tg.Generator().manual_seed(0))
    v = x.numpy()
    assert set(np.unique(v)) == set(range(lo, hi + 1))  # 2000 draws hit each of <= 7 values


def test_random_from_with_no_upper_bound():
    # (from, None): from ``from`` up to 2^24 for float32, as PyTorch's
    v = tg.zeros(2000).random_(**{"from": 1000, "to": None}).numpy()
    assert v.min() >= 1000 and v.max() <= 2 ** 24 and v.max() > 2 ** 20
    v = tg.zeros(2000).random_(1000, None).numpy()
    assert v.min() >= 1000 and v.max() > 2 ** 20


@pytest.mark.parametrize("args, kwargs, err", [
    ((), {"from": 3}, TypeError),  # from without to: no overload
    ((), {"low": 3}, TypeError),
    ((3,), {"from": 3}, TypeError),
    ((1, 2, 3), {}, TypeError),
    ((0,), {}, RuntimeError),  # to = 0: [0, 0) is empty
    ((5, 3), {}, RuntimeError),
])
def test_random_refuses_what_torch_refuses(args, kwargs, err):
    with pytest.raises(err, match="random_"):
        tg.zeros(3).random_(*args, **kwargs)


def test_random_against_torch():
    torch = pytest.importorskip("torch")
    cases = [((), {"from": 3, "to": 7}), ((), {"to": 5}), ((5,), {}), ((3,), {"to": 7}),
             ((), {"from": 3}), ((0,), {}), ((3,), {"from": 3})]
    for args, kwargs in cases:
        got = []
        for lib in (tg, torch):
            try:
                v = lib.zeros(500).random_(*args, **kwargs).numpy()
                got.append((v.min(), v.max()))
            except (TypeError, RuntimeError) as e:
                got.append(type(e))
        assert got[0] == got[1], (args, kwargs, got)


# -- resize_as_(the_template=), sum_to_size(size=), h/v/dsplit(sections=, indices=) ----------

def test_resize_as_takes_the_template():
    from tritongrad.autograd.storage import resize_as_
    x = tg.zeros(3)
    assert resize_as_(x, the_template=tg.ones(2, 2)) is x and tuple(x.shape) == (2, 2)
    with pytest.raises(TypeError, match="the_template"):
        resize_as_(x, [1, 2])


def test_tensor_resize_as_method_takes_the_template():
    x = tg.zeros(3)
    assert x.resize_as_(the_template=tg.ones(2, 2)) is x and tuple(x.shape) == (2, 2)


@pytest.mark.parametrize("call, shape", [
    (lambda x: x.sum_to_size(size=(1, 3)), (1, 3)),
    (lambda x: x.sum_to_size(size=[3]), (3,)),
    (lambda x: x.sum_to_size(size=tg.Size([2, 1])), (2, 1)),
    (lambda x: x.sum_to_size(1, 3), (1, 3)),
    (lambda x: x.sum_to_size((1, 1)), (1, 1)),
])
def test_sum_to_size_forms(call, shape):
    r = call(t(M))
    assert tuple(r.shape) == shape
    np.testing.assert_allclose(r.numpy(), M.reshape(2, 3).sum(
        axis=tuple(i for i, (a, b) in enumerate(zip(shape if len(shape) == 2 else (1,) + shape,
                                                    (2, 3))) if a != b), keepdims=True)
        .reshape(shape), rtol=1e-12)


def test_sum_to_size_refusals():
    with pytest.raises(TypeError, match="multiple values for argument 'size'"):
        t(M).sum_to_size(1, size=(1, 3))
    with pytest.raises(TypeError, match="tuple of ints, not int"):
        t(M).sum_to_size(size=3)


X3 = np.arange(4 * 6 * 8, dtype=np.float64).reshape(4, 6, 8)


@pytest.mark.parametrize("op, axis", [("hsplit", 1), ("vsplit", 0), ("dsplit", 2)])
@pytest.mark.parametrize("fn", [False, True])
def test_dim_splits_take_sections_and_indices(op, axis, fn):
    def call(*args, **kw):
        return getattr(tg, op)(t(X3), *args, **kw) if fn else getattr(t(X3), op)(*args, **kw)
    for got, want in ((call(sections=2), np.split(X3, 2, axis)),
                      (call(2), np.split(X3, 2, axis)),
                      (call(indices=[1, 3]), np.split(X3, [1, 3], axis)),
                      (call(indices=(1, 3)), np.split(X3, [1, 3], axis)),
                      (call([1, 3]), np.split(X3, [1, 3], axis))):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), w)
    assert len(getattr(tg, op)(input=t(X3), sections=2)) == 2


@pytest.mark.parametrize("op", ["hsplit", "vsplit", "dsplit"])
@pytest.mark.parametrize("args, kwargs", [
    ((), {}), ((2,), {"sections": 2}), ((), {"sections": 2, "indices": [1]}),
    ((), {"sections": [1, 3]}), ((), {"indices": 2}),
])
def test_dim_splits_refuse_bad_combinations(op, args, kwargs):
    with pytest.raises(TypeError, match=f"{op}\\(\\) received an invalid combination"):
        getattr(t(X3), op)(*args, **kwargs)


def test_keyword_forms_against_torch():
    torch = pytest.importorskip("torch")
    calls = [
        lambda lib, x: x.sum_to_size(size=(1, 3)),
        lambda lib, x: x.hsplit(sections=3)[1],
        lambda lib, x: x.vsplit(indices=[1])[0],
        lambda lib, x: lib.hsplit(x, indices=(1,))[1],
    ]
    for call in calls:
        a, b = (call(lib, t(M, lib)).numpy() for lib in (tg, torch))
        np.testing.assert_allclose(a, b, rtol=1e-12)


# -- 2. mul_(alpha=) refused -------------------------------------------------------------------

@pytest.mark.parametrize("op", ["mul_", "div_"])
def test_mul_div_inplace_refuse_alpha(op):
    x = tg.ones(2)
    with pytest.raises(TypeError, match=f"^{op}\\(\\) got an unexpected keyword argument "
                                        f"'alpha'"):
        getattr(x, op)(tg.ones(2), alpha=2)
    with pytest.raises(TypeError, match="alpha"):
        getattr(x, op)(2, alpha=2)
    np.testing.assert_array_equal(x.numpy(), [1.0, 1.0])  # nothing was written
    x *= 3
    np.testing.assert_array_equal(getattr(x, op)(tg.tensor([2.0, 4.0])).numpy(),
                                  [6.0, 12.0] if op == "mul_" else [1.5, 0.75])


def test_add_sub_inplace_keep_alpha():
    x = tg.ones(2)
    np.testing.assert_array_equal(x.add_(tg.ones(2), alpha=2).numpy(), [3.0, 3.0])
    np.testing.assert_array_equal(x.sub_(1, alpha=0.5).numpy(), [2.5, 2.5])


def test_mul_alpha_against_torch():
    torch = pytest.importorskip("torch")
    for lib in (tg, torch):
        with pytest.raises(TypeError, match="mul_\\(\\) got an unexpected keyword argument"):
            lib.ones(2).mul_(lib.ones(2), alpha=2)


# -- 3. norm(out=), complex(out=), polar(out=) -------------------------------------------------

@pytest.mark.parametrize("args, ref", [
    ((), np.linalg.norm(M)),
    ((2, 1), np.linalg.norm(M, axis=1)),
    ((1,), np.abs(M).sum()),
    (("fro",), np.linalg.norm(M)),
    (("nuc",), np.linalg.norm(M, "nuc")),
])
def test_norm_out(args, ref):
    out = tg.empty(np.shape(ref), dtype=tg.float64)
    r = tg.norm(t(M), *args, out=out)
    assert r is out
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-12)


def test_norm_out_rules():
    x = t(M).float()
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float, but got "
                                           "double"):
        tg.norm(x, out=tg.empty((), dtype=tg.float64))
    out = tg.empty((), dtype=tg.float64)  # dtype= computes in out's dtype
    tg.norm(x, dtype=tg.float64, out=out)
    np.testing.assert_allclose(out.item(), np.linalg.norm(M.astype(np.float32)), rtol=1e-6)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        tg.norm(t(M, requires_grad=True), out=tg.empty((), dtype=tg.float64))
    with pytest.raises(TypeError, match="out"):  # the method has no out=, as PyTorch's
        t(M).norm(out=tg.empty(()))


def test_complex_and_polar_out():
    re, im = RNG.standard_normal(3), RNG.standard_normal(3)
    out = tg.empty(3, dtype=tg.complex128)
    assert tg.complex(t(re), t(im), out=out) is out
    np.testing.assert_array_equal(out.numpy(), re + 1j * im)
    out = tg.empty(0, dtype=tg.complex64)  # resized silently (no elements)
    tg.complex(t(re).float()[:, None], t(im).float(), out=out)
    assert tuple(out.shape) == (3, 3)
    np.testing.assert_allclose(out.numpy(), re[:, None] + 1j * im[None, :], rtol=1e-6)
    out = tg.empty(3, dtype=tg.complex128)
    tg.polar(t(re), t(im), out=out)
    np.testing.assert_allclose(out.numpy(), re * np.exp(1j * im), rtol=1e-12)
    for fn in (tg.complex, tg.polar):
        with pytest.raises(RuntimeError, match="Expected object of scalar type ComplexFloat but "
                                               "got scalar type ComplexDouble for argument 'out'"):
            fn(tg.ones(2), tg.ones(2), out=tg.empty(2, dtype=tg.complex128))
        with pytest.raises(RuntimeError, match="scalar type Float for argument 'out'"):
            fn(tg.ones(2), tg.ones(2), out=tg.empty(2))


def test_out_forms_against_torch():
    torch = pytest.importorskip("torch")
    for lib in (tg, torch):
        with pytest.raises(RuntimeError) as e:
            lib.complex(lib.ones(2), lib.ones(2), out=lib.empty(2, dtype=lib.complex128))
        assert "for argument 'out'" in str(e.value)
    res = []
    for lib in (tg, torch):
        o1, o2 = lib.empty((), dtype=lib.float64), lib.empty(3, dtype=lib.complex128)
        lib.norm(t(M, lib), 3, out=o1)
        lib.polar(t(V3, lib), t(V3, lib), out=o2)
        res.append((o1.numpy(), o2.numpy()))
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-12)


# -- 4. conj_physical_, const_data_ptr -------------------------------------------------------

def test_conj_physical_and_inplace():
    z = RNG.standard_normal(3) + 1j * RNG.standard_normal(3)
    x = t(z)
    np.testing.assert_array_equal(tg.conj_physical(x).numpy(), np.conj(z))
    v = x._version
    assert x.conj_physical_() is x and x._version == v + 1
    np.testing.assert_array_equal(x.numpy(), np.conj(z))
    r = t(M)  # real: its own conjugate (the function returns it; in place, a write all the
    v = r._version  # same, as PyTorch's: the version moves)
    assert tg.conj_physical(r) is r and r.conj_physical_() is r and r._version == v + 1
    np.testing.assert_array_equal(r.numpy(), M)
    leaf = t(z, requires_grad=True)
    y = tg.conj_physical(leaf)
    assert type(y.grad_fn).__name__ == "ConjPhysicalBackward0"
    y.real.sum().backward()  # d Re(conj z) / dz = 1 (PyTorch's convention: conj of g)
    np.testing.assert_array_equal(leaf.grad.numpy(), np.ones(3))


def test_const_data_ptr():
    x = tg.ones(4)
    assert x.const_data_ptr() == x.data_ptr()
    assert x[1:].const_data_ptr() == x.data_ptr() + x.element_size()


def test_conj_physical_against_torch():
    torch = pytest.importorskip("torch")
    z = RNG.standard_normal(3) + 1j * RNG.standard_normal(3)
    a, b = (t(z, lib).conj_physical_().numpy() for lib in (tg, torch))
    np.testing.assert_array_equal(a, b)


# -- 5. no NumPy RuntimeWarnings at singular points ------------------------------------------

SINGULAR = {
    "sqrt": (lambda x: x.sqrt(), [0.0, 4.0]),
    "rsqrt": (lambda x: x.rsqrt(), [0.0, 4.0]),
    "log": (lambda x: x.log(), [0.0, -1.0]),
    "log2": (lambda x: x.log2(), [0.0, -1.0]),
    "log1p": (lambda x: x.log1p(), [-1.0, -2.0]),
    "div": (lambda x: x / x, [0.0, 2.0]),
    "reciprocal": (lambda x: x.reciprocal(), [0.0, 2.0]),
    "pow": (lambda x: x ** 0.5, [0.0, -1.0]),
    "pow_tensor": (lambda x: x ** x, [0.0, 2.0]),
    "asin": (lambda x: x.asin(), [1.0, 2.0]),
    "acosh": (lambda x: x.acosh(), [1.0, 0.0]),
    "atan2": (lambda x: tg.atan2(x, x), [0.0, 1.0]),
    "norm": (lambda x: x.norm(), [0.0, 0.0]),
    "norm3": (lambda x: x.norm(p=3), [0.0, 0.0]),
    "logsumexp": (lambda x: x.logsumexp(0), [-np.inf, -np.inf]),
    "masked_reciprocal": (lambda x: tg.where(x > 0, 1 / x, x), [0.0, 1.0]),
    "exp": (lambda x: x.exp(), [1000.0, 0.0]),
    "prod": (lambda x: x.prod(), [0.0, 0.0]),
}


@pytest.mark.parametrize("name", sorted(SINGULAR))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_no_numpy_warnings_at_singular_points(name, dtype):
    fn, vals = SINGULAR[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = tg.tensor(vals, dtype=getattr(tg, dtype), requires_grad=True)
        y = fn(x)
        (g,) = tg.autograd.grad(y.sum(), x)
    assert g.shape == x.shape


def test_singular_point_values():
    # silenced, not changed: the values are PyTorch's (inf, NaN where it gives them)
    x = tg.tensor([0.0, 4.0], dtype=tg.float64, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x.sqrt().sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), [np.inf, 0.25])
        x.grad = None
        (x / x).sum().backward()
        assert np.isnan(x.grad.numpy()[0]) and x.grad.numpy()[1] == 0
        x.grad = None
        tg.where(x > 0, 1 / x, x).sum().backward()  # 0 * inf in 1/x's rule: NaN, as PyTorch
        assert np.isnan(x.grad.numpy()[0]) and x.grad.numpy()[1] == -1 / 16


def test_quiet_float_errors_is_scoped():
    from tritongrad.kernels.numpy.elementwise import quiet_float_errors
    zero, inf = np.zeros(1), np.full(1, np.inf)
    before = np.geterr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with quiet_float_errors():
            assert np.isnan(zero * inf)[0]
        assert np.geterr() == before
        with pytest.raises(RuntimeWarning):
            zero * inf  # noqa: B018 - the user's NumPy warns again outside the block
        with pytest.raises(KeyError), quiet_float_errors():
            raise KeyError
        assert np.geterr() == before


def test_var_without_degrees_of_freedom():
    # PyTorch's UserWarning, no NumPy RuntimeWarning; inf, or NaN where the squares sum to 0
    for call, want in ((lambda: tg.ones(1).var(), np.nan),
                       (lambda: tg.tensor([1.0, 2.0]).var(correction=2), np.inf),
                       (lambda: tg.ones(1).std(), np.nan)):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            r = call().item()
        assert [w.category for w in seen] == [UserWarning]
        assert "degrees of freedom is <= 0" in str(seen[0].message)
        np.testing.assert_array_equal(r, want)
