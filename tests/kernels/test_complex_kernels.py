"""Complex64/complex128 on the Triton backend (kernels/triton/complex.py, Note [complex lanes])
against complex128 NumPy references: creation, copies and casts, views and host transfers,
the arithmetic and math kernels in every layout with broadcasting and Python scalars, where,
sum/prod/all/any, cumsum, indexing, matmul/bmm, multi-program grids, and the TypeErrors of
what stays unsupported."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes
from kernel_kit import D, tk
from tritongrad.kernels.triton import complex as C

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

CDTYPES = [D.complex64, D.complex128]
# (rtol, atol) against complex128 references: a few roundings of the lanes' float type
CTOL = {D.complex64: (2e-5, 2e-6), D.complex128: (1e-12, 1e-13)}
LAYOUTS = ["contig", "T", "strided", "expanded"]


def cvalues(shape, rng, scale=1.0):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)) * scale


def cpair(kit, shape, dtype, rng, layout="contig", scale=1.0):
    """(device array of ``dtype`` in ``layout``, its values as complex128)."""
    shape = tuple(shape)
    nd = len(shape)
    if layout == "contig" or nd == 0:
        host = cvalues(shape, rng, scale).astype(dtype.np)
        return kit.up(host), host.astype(np.complex128)
    if layout == "T":
        host = cvalues(shape[::-1], rng, scale).astype(dtype.np)
        perm = tuple(range(nd))[::-1]
        return tk.permute(kit.up(host), perm), host.transpose(perm).astype(np.complex128)
    if layout == "strided":
        host = cvalues(tuple(2 * n + 1 for n in shape), rng, scale).astype(dtype.np)
        idx = tuple(slice(1, 1 + 2 * n, 2) for n in shape)
        return tk.getitem(kit.up(host), idx), host[idx].astype(np.complex128)
    small = tuple(1 if i % 2 == 0 else n for i, n in enumerate(shape))
    host = cvalues(small, rng, scale).astype(dtype.np)
    return tk.expand(kit.up(host), shape), np.broadcast_to(host, shape).astype(np.complex128)


def check(kit, got, ref, dtype, scale=1.0):
    ref = np.asarray(ref)
    assert tuple(got.shape) == ref.shape, (got.shape, ref.shape)
    host = kit.down(got)
    r, a = CTOL[dtype]
    np.testing.assert_allclose(host.astype(np.complex128 if host.dtype.kind == "c" else
                                           host.dtype), ref, rtol=r, atol=a * scale,
                               equal_nan=True)


# -- memory ------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", CDTYPES, ids=str)
def test_full_empty_and_host_round_trip(kit, rng, dtype):
    f = tk.full((3, 4), 1.5 - 2j, dtype)
    assert f.dtype is dtype and f.shape == (3, 4)
    np.testing.assert_array_equal(kit.down(f), np.full((3, 4), 1.5 - 2j, dtype.np))
    np.testing.assert_array_equal(kit.down(tk.full((5,), 2, dtype)), np.full(5, 2, dtype.np))
    np.testing.assert_array_equal(kit.down(tk.full((2,), True, dtype)), np.ones(2, dtype.np))
    assert tk.empty((2, 3), dtype).dtype is dtype
    host = cvalues((4, 5), rng).astype(dtype.np)
    back = kit.down(kit.up(host))
    assert back.dtype == dtype.np
    np.testing.assert_array_equal(back, host)  # byte copies: exact


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", CDTYPES, ids=str)
def test_contiguous_copy_and_views(kit, rng, dtype, layout):
    a, ra = cpair(kit, (4, 6), dtype, rng, layout)
    c = tk.contiguous(a)
    assert c.is_contiguous()
    np.testing.assert_array_equal(kit.down(c), ra.astype(dtype.np))
    dst, _ = cpair(kit, (4, 6), dtype, rng, "strided")
    assert tk.copy_(dst, a) is None
    np.testing.assert_array_equal(kit.down(dst), ra.astype(dtype.np))
    row = tk.copy_(dst, kit.up(np.array([1j] * 6, dtype.np)))  # broadcast source
    assert row is None and np.all(kit.down(dst) == 1j)
    tk.copy_(dst, 2 - 1j)  # a scalar
    assert np.all(kit.down(dst) == 2 - 1j)
    v = tk.getitem(tk.view(c, (2, 12)), (1, slice(3, 9, 2)))
    np.testing.assert_array_equal(kit.down(v), ra.reshape(2, 12)[1, 3:9:2].astype(dtype.np))


@pytest.mark.parametrize("src", [D.float16, D.float32, D.float64, D.int32, D.bool,
                                 D.complex64, D.complex128], ids=str)
@pytest.mark.parametrize("dtype", CDTYPES, ids=str)
def test_casts_between_real_and_complex(kit, rng, dtype, src):
    if src.is_complex:
        a, ra = cpair(kit, (3, 5), src, rng, "T")
    else:
        ra = kit.values((3, 5), src, rng)
        a = kit.up(ra)
    # real -> complex: imaginary part 0; complex -> complex: both lanes cast
    np.testing.assert_allclose(kit.down(tk.astype(a, dtype)), ra.astype(dtype.np), rtol=1e-6)
    assert tk.astype(a, dtype).dtype is dtype
    if src.is_complex:  # complex -> real keeps the real part (NumPy's unsafe cast)
        for real_dt in (D.float32, D.float64, D.int64):
            got = kit.down(tk.astype(a, real_dt))
            with np.errstate(all="ignore"), pytest.warns(np.exceptions.ComplexWarning):
                want = ra.astype(src.np).astype(real_dt.np)
            np.testing.assert_array_equal(got, want)
        z = np.array([0j, 1j, 2 + 0j, 0.5 - 1j], src.np)  # complex -> bool: either part
        np.testing.assert_array_equal(kit.down(tk.astype(kit.up(z), D.bool)), z != 0)
        np.testing.assert_array_equal(kit.down(tk.full((2,), 1j, D.bool)), [True, True])


@pytest.mark.parametrize("dtype", CDTYPES, ids=str)
def test_real_imag_conj(kit, rng, dtype):
    a, ra = cpair(kit, (3, 4), dtype, rng, "T")
    re, im, cj = tk.real(a), tk.imag(a), tk.conj(a)
    assert re.dtype is dtype.to_real() and im.dtype is dtype.to_real() and cj.dtype is dtype
    np.testing.assert_array_equal(kit.down(re), ra.real.astype(dtype.to_real().np))
    np.testing.assert_array_equal(kit.down(im), ra.imag.astype(dtype.to_real().np))
    np.testing.assert_array_equal(kit.down(cj), np.conj(ra).astype(dtype.np))
    x = kit.up(np.array([1.0, -2.0], np.float32))  # real arrays: a copy, zeros, a copy
    np.testing.assert_array_equal(kit.down(tk.real(x)), [1, -2])
    np.testing.assert_array_equal(kit.down(tk.imag(x)), [0, 0])
    np.testing.assert_array_equal(kit.down(tk.conj(x)), [1, -2])


def test_view_as_real_is_a_view(kit):
    a = kit.up(np.array([[1 + 2j, 3 - 4j]], np.complex64))
    r = a.view_as_real()
    assert r.shape == (1, 2, 2) and r.strides == (4, 2, 1) and r.dtype is D.float32
    assert r.storage is a.storage
    np.testing.assert_array_equal(kit.down(r), [[[1, 2], [3, -4]]])
    back = C.view_as_complex(r)
    assert back.shape == a.shape and back.strides == a.strides and back.dtype is D.complex64


# -- elementwise ---------------------------------------------------------------------------------
BINARY = ["add", "sub", "mul", "div", "pow"]
SHAPES = [((), ()), ((7,), (7,)), ((0,), (0,)), ((4, 5), (5,)), ((4, 1, 3), (2, 1)),
          ((6, 1), (1, 5))]


def _ref(op, x, y):
    with np.errstate(all="ignore"):
        return {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
                "pow": np.power}[op](x, y)


@pytest.mark.parametrize("shapes", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", CDTYPES, ids=str)
@pytest.mark.parametrize("op", BINARY)
def test_binary_broadcasting(kit, rng, op, dtype, shapes):
    a, ra = cpair(kit, shapes[0], dtype, rng)
    b, rb = cpair(kit, shapes[1], dtype, rng, scale=0.5 if op == "pow" else 1.0)
    got = getattr(tk, op)(a, b)
    assert got.dtype is dtype
    check(kit, got, _ref(op, ra, rb), dtype)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", CDTYPES, ids=str)
@pytest.mark.parametrize("op", BINARY)
def test_binary_layouts(kit, rng, op, dtype, layout):
    a, ra = cpair(kit, (5, 6), dtype, rng, layout)
    b, rb = cpair(kit, (5, 6), dtype, rng, "T", scale=0.5 if op == "pow" else 1.0)
    check(kit, getattr(tk, op)(a, b), _ref(op, ra, rb), dtype)


@pytest.mark.parametrize("s", [2.5 - 1j, 3, -2, 0.5, 1j, True], ids=repr)
@pytest.mark.parametrize("dtype", CDTYPES, ids=str)
@pytest.mark.parametrize("op", BINARY)
def test_python_scalars(kit, rng, op, dtype, s):
    a, ra = cpair(kit, (3, 4), dtype, rng, "strided")
    got = getattr(tk, op)(a, s)
    assert got.dtype is dtype
    check(kit, got, _ref(op, ra, s), dtype)


def test_integer_powers_are_exact_products(kit):
    z = np.array([1 + 1j, 2 - 3j, -1j, 0j, 0.5 + 0.5j])
    a = kit.up(z)
    for n in (0, 1, 2, 3, 7, -1, -2, 100):
        with np.errstate(all="ignore"):
            want = np.array([complex(v) ** n if v != 0 or n >= 0 else complex("nan+nanj")
                             for v in z])
        got = kit.down(tk.pow(a, n))
        np.testing.assert_allclose(got[:4] if n < 0 else got, want[:4] if n < 0 else want,
                                   rtol=1e-13)
    np.testing.assert_array_equal(kit.down(tk.pow(a, 2))[:3], [2j, -5 - 12j, -1])


@pytest.mark.parametrize("real", [D.float32, D.float64, D.int64, D.bool], ids=str)
@pytest.mark.parametrize("op", BINARY + ["eq"])
def test_real_and_complex_operands_mix(kit, rng, op, real):
    a, ra = cpair(kit, (4, 3), D.complex64, rng)
    rx = kit.values((3,), real, rng)
    x = kit.up(rx)
    want_dtype = D.promote_types(D.complex64, real)
    got = getattr(tk, op)(a, x)
    assert got.dtype is (D.bool if op == "eq" else want_dtype)
    if op == "eq":
        np.testing.assert_array_equal(kit.down(got), ra.astype(np.complex64) == rx)
    else:
        check(kit, got, _ref(op, ra, rx), D.complex64)
    # a real array with a complex scalar: NumPy's weak scalar rule (float32 -> complex64)
    got = tk.mul(x, 2j)
    want = D.complex64 if real is D.float32 else D.complex128
    assert got.dtype is want
    check(kit, got, rx * 2j, want)


@pytest.mark.parametrize("dtype", CDTYPES, ids=str)
def test_out_argument(kit, rng, dtype):
    a, ra = cpair(kit, (3, 4), dtype, rng)
    out, _ = cpair(kit, (3, 4), D.complex128, rng, "strided")
    assert tk.mul(a, 1j, out=out) is out
    check(kit, out, ra * 1j, dtype)
    x = kit.up(np.array([1.0, 2.0]))
    zout = tk.empty((2,), dtype)
    tk.add(x, x, out=zout)  # a real result into complex out=
    np.testing.assert_array_equal(kit.down(zout), [2, 4])
    tk.mul(x, 3.0, out=zout)  # ... of a real array and a real scalar
    np.testing.assert_array_equal(kit.down(zout), [3, 6])
    tk.neg(x, out=zout)
    np.testing.assert_array_equal(kit.down(zout), [-1, -2])
    with pytest.raises(TypeError, match="complex"):
        tk.mul(a, 1j, out=tk.empty((3, 4), D.float32))


UNARY = {  # op -> NumPy reference (complex128)
    "neg": np.negative, "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "abs": np.abs,
    "angle": np.angle, "sin": np.sin, "cos": np.cos, "tan": np.tan, "tanh": np.tanh,
    "sigmoid": lambda z: 1 / (1 + np.exp(-z)), "expm1": np.expm1, "log1p": np.log1p,
    "sign": lambda z: np.where(z == 0, 0, z / np.where(z == 0, 1, np.abs(z))),
    "conj": np.conj,
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", CDTYPES, ids=str)
@pytest.mark.parametrize("op", list(UNARY))
def test_unary(kit, rng, op, dtype, layout):
    a, ra = cpair(kit, (4, 5), dtype, rng, layout)
    got = getattr(tk, op)(a) if op in ("neg", "exp", "log", "sqrt", "conj") else tk.unary(op, a)
    assert got.dtype is (dtype.to_real() if op in ("abs", "angle") else dtype)
    check(kit, got, UNARY[op](ra), dtype)


@pytest.mark.parametrize("dtype", CDTYPES, ids=str)
def test_special_points(kit, dtype):
    z = np.array([0j, -4 + 0j, -4 - 0j, 1e-8 + 1e-8j, 30 + 1j, -30 - 2j, 3j, -1e-3 + 0j])
    a = kit.up(z.astype(dtype.np))
    zz = z.astype(dtype.np).astype(np.complex128)
    check(kit, tk.sqrt(a), np.sqrt(zz), dtype)
    check(kit, tk.unary("tanh", a), np.tanh(zz), dtype)
    check(kit, tk.unary("abs", a), np.abs(zz), dtype)
    check(kit, tk.unary("expm1", a), np.expm1(zz), dtype)
    check(kit, tk.unary("log1p", a), np.log1p(zz), dtype)
    check(kit, tk.div(a, 1e-30 + 1j), zz / (1e-30 + 1j), dtype)  # Smith: the other branch
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(kit.down(tk.div(a, 0j))[1:2].real, -np.inf)
    np.testing.assert_array_equal(kit.down(tk.pow(a, 0))[0], 1)  # 0 ** 0
    np.testing.assert_array_equal(kit.down(tk.pow(a, 2.5))[0], 0)  # 0 ** positive


@pytest.mark.parametrize("dtype", CDTYPES, ids=str)
def test_backward_formulas(kit, rng, dtype):
    g, rg = cpair(kit, (6,), dtype, rng)
    y, ry = cpair(kit, (6,), dtype, rng)
    check(kit, tk.binary("tanh_backward", g, y), rg * (1 - ry * ry), dtype)
    check(kit, tk.binary("sigmoid_backward", g, y), rg * ry * (1 - ry), dtype)


@pytest.mark.parametrize("dtype", CDTYPES, ids=str)
def test_eq_ne_where(kit, rng, dtype):
    za = np.array([1 + 1j, 2 - 1j, 3j, 0j])
    zb = np.array([1 + 1j, 2 + 1j, 3j, 1 + 0j])
    a, b = kit.up(za.astype(dtype.np)), kit.up(zb.astype(dtype.np))
    np.testing.assert_array_equal(kit.down(tk.eq(a, b)), za == zb)
    np.testing.assert_array_equal(kit.down(tk.ne(a, b)), za != zb)
    np.testing.assert_array_equal(kit.down(tk.eq(a, 3j)), za == 3j)
    np.testing.assert_array_equal(kit.down(tk.ne(a, 0)), za != 0)
    cond = kit.up(np.array([[True], [False]]))
    w = tk.where(cond, a, b)
    assert w.dtype is dtype
    np.testing.assert_array_equal(kit.down(w), np.where([[True], [False]], za, zb))
    w = tk.where(cond, a, 5 - 1j)  # a scalar branch
    np.testing.assert_array_equal(kit.down(w), np.where([[True], [False]], za, 5 - 1j))
    x = kit.up(np.arange(4.0))  # a real branch
    w = tk.where(cond, x, b)
    np.testing.assert_array_equal(kit.down(w), np.where([[True], [False]], np.arange(4.0), zb))


def test_order_comparisons_are_numpys_lexicographic_order(kit):
    za = np.array([1 + 1j, 1 + 2j, 0 + 5j, 2 - 1j, 1 + 1j])
    zb = np.array([1 + 1j, 1 + 1j, 1 + 0j, 1 + 9j, complex("nan")])
    a, b = kit.up(za), kit.up(zb)
    for op, ref in (("gt", np.greater), ("ge", np.greater_equal), ("lt", np.less),
                    ("le", np.less_equal)):
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(kit.down(getattr(tk, op)(a, b)), ref(za, zb))
            np.testing.assert_array_equal(kit.down(getattr(tk, op)(a, 1 + 1j)), ref(za, 1 + 1j))


# -- reductions and products ----------------------------------------------------------------
@pytest.mark.parametrize("dims,keepdim", [((0,), False), ((1,), True), ((0, 2), False),
                                          ((0, 1, 2), False), ((), False)])
@pytest.mark.parametrize("dtype", CDTYPES, ids=str)
def test_sum(kit, rng, dtype, dims, keepdim):
    a, ra = cpair(kit, (3, 4, 5), dtype, rng, "T")
    got = tk.sum(a, dims, keepdim)
    assert got.dtype is dtype
    check(kit, got, np.sum(ra, axis=dims, keepdims=keepdim), dtype, scale=10)


@pytest.mark.parametrize("dtype", CDTYPES, ids=str)
def test_matmul_and_bmm(kit, rng, dtype):
    a, ra = cpair(kit, (5, 7), dtype, rng, "T")
    b, rb = cpair(kit, (7, 3), dtype, rng, "strided")
    got = tk.matmul(a, b)
    assert got.dtype is dtype and got.shape == (5, 3)
    check(kit, got, ra @ rb, dtype, scale=10)
    x, rx = cpair(kit, (2, 4, 6), dtype, rng)
    y, ry = cpair(kit, (2, 6, 3), dtype, rng, "expanded")
    check(kit, tk.bmm(x, y), rx @ ry, dtype, scale=10)
    r = rng.standard_normal((7, 3))  # a real operand is promoted
    got = tk.matmul(a, kit.up(r))
    assert got.dtype is D.promote_types(dtype, D.float64)
    check(kit, got, ra @ r, dtype, scale=10)
    check(kit, tk.matmul(tk.empty((2, 0), dtype), tk.empty((0, 3), dtype)), np.zeros((2, 3)),
          dtype)


def test_multi_program_grids(kit, rng, small_blocks):
    assert C._elements_per_program() <= 16
    a, ra = cpair(kit, (9, 13), D.complex128, rng, "T")
    b, rb = cpair(kit, (13,), D.complex128, rng)
    check(kit, tk.mul(a, b), ra * rb, D.complex128)
    check(kit, tk.exp(a), np.exp(ra), D.complex128)
    check(kit, tk.sum(a, (0,), False), ra.sum(0), D.complex128)
    check(kit, tk.matmul(a, tk.permute(a, (1, 0))), ra @ ra.T, D.complex128)


def test_int64_offsets(kit, rng, monkeypatch):
    from tritongrad.kernels.triton import _launch
    monkeypatch.setattr(_launch, "_INT32_SAFE", 1)
    _launch.clear_plans()
    try:
        a, ra = cpair(kit, (4, 3), D.complex64, rng, "T")
        check(kit, tk.div(a, 1 - 1j), ra / (1 - 1j), D.complex64)
    finally:
        _launch.clear_plans()


@settings(max_examples=25, deadline=None)
@given(mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=4),
       st.sampled_from(["add", "mul", "div"]), st.sampled_from(CDTYPES))
def test_broadcasting_property(kit, shapes, op, dtype):
    rng = np.random.default_rng(0)
    a, ra = cpair(kit, shapes.input_shapes[0], dtype, rng)
    b, rb = cpair(kit, shapes.input_shapes[1], dtype, rng)
    got = getattr(tk, op)(a, b)
    assert got.shape == shapes.result_shape
    check(kit, got, _ref(op, ra, rb), dtype)


@pytest.mark.parametrize("dims,keepdim", [((1,), False), ((0, 2), True), ((0, 1, 2), False),
                                          ((), False)])
def test_prod_all_any(kit, rng, dims, keepdim):
    a, ra = cpair(kit, (3, 5, 2), D.complex128, rng, "T")
    got = tk.reduce("prod", a, dims, keepdim)
    assert got.dtype is D.complex128
    check(kit, got, np.prod(ra, axis=dims, keepdims=keepdim), D.complex128)
    check(kit, tk.reduce("prod", tk.empty((2, 0), D.complex64), (1,), False), np.ones(2),
          D.complex64)
    z = kit.up(np.array([[0j, 1j], [0j, 0j]]))
    np.testing.assert_array_equal(kit.down(tk.reduce("any", z, (1,), False)), [True, False])
    np.testing.assert_array_equal(kit.down(tk.reduce("all", z, (0,), True)), [[False, False]])


@pytest.mark.parametrize("dtype", CDTYPES, ids=str)
def test_indexing_cumsum_nonzero(kit, rng, dtype):
    a, ra = cpair(kit, (4, 5), dtype, rng, "T")
    i = np.array([[3, 0], [1, 1]])
    j = np.array([4, 2])
    ti, tj = kit.up(i), kit.up(j)
    got = tk.index(a, (ti, None))
    check(kit, got, ra[i], dtype)
    check(kit, tk.index(a, (ti, tj)), ra[i, j], dtype)
    check(kit, tk.index(a, (None, tj)), ra[:, j], dtype)
    g = np.array([[0, 3, 1, 1, 2], [3, 3, 0, 1, 2]])
    check(kit, tk.gather(a, 0, kit.up(g)), np.take_along_axis(ra, g, 0), dtype)
    check(kit, tk.cumsum(a, 1), np.cumsum(ra, 1), dtype, scale=10)
    check(kit, tk.cumsum(a, 0, True), np.cumsum(ra[::-1], 0)[::-1], dtype, scale=10)
    # index_put_ (set, accumulate with duplicates, a real value, a scalar) and scatter_
    dst, rd = cpair(kit, (4, 5), dtype, rng)
    v, rv = cpair(kit, (2, 2, 5), dtype, rng)
    tk.index_put_(dst, (ti,), v, True)
    np.add.at(rd, i, rv)
    check(kit, dst, rd, dtype, scale=10)
    tk.index_put_(dst, (kit.up(i[0]), tj), 2.5 - 1j, False)
    rd[i[0], j] = 2.5 - 1j
    check(kit, dst, rd, dtype, scale=10)
    tk.index_put_(dst, (None, tj), kit.up(np.arange(4.0).reshape(4, 1)), False)
    rd[:, j] = np.arange(4.0).reshape(4, 1)
    check(kit, dst, rd, dtype, scale=10)
    s_idx = np.array([[1, 0, 3], [2, 2, 0]])
    src, rs = cpair(kit, (2, 3), dtype, rng)
    tk.scatter_(dst, 1, kit.up(s_idx), src, True)
    for r in range(2):
        for c in range(3):
            rd[r, s_idx[r, c]] += rs[r, c]
    check(kit, dst, rd, dtype, scale=10)
    tk.scatter_(dst, 0, kit.up(s_idx), 1j, False)
    for r in range(2):
        for c in range(3):
            rd[s_idx[r, c], c] = 1j
    check(kit, dst, rd, dtype, scale=10)
    z = kit.up(np.array([[0j, 1j], [2 + 0j, 0j]], dtype.np))
    np.testing.assert_array_equal(kit.down(tk.nonzero(z)), [[0, 1], [1, 0]])


# -- what stays unsupported --------------------------------------------------------------------
@pytest.mark.parametrize("call,op", [
    (lambda a: tk.reduce("amax", a, (0,), False), "amax"),
    (lambda a: tk.argreduce("argmax", a, 0, False), "argmax"),
    (lambda a: tk.softmax(a, 0), "softmax"),
    (lambda a: tk.scatter_reduce_(a, 0, tk.full((1,), 0, D.int64), a, "sum", True),
     "scatter_reduce_"),
    (lambda a: tk.maximum(a, a), "maximum"),
    (lambda a: tk.relu(a), "relu"),
    (lambda a: tk.unary("floor", a), "floor"),
    (lambda a: tk.sort(a, 0, False), "sort"),
], ids=lambda x: x if isinstance(x, str) else "")
def test_unsupported_ops_raise_type_error_naming_op_and_dtype(kit, call, op):
    a = kit.up(np.array([1 + 1j, 2j], np.complex64))
    with pytest.raises(TypeError, match=f"{op}.*complex64"):
        call(a)
