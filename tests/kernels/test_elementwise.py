"""The elementwise kernels (flat and strided) against the NumPy backend.

Odd and degenerate shapes, broadcasting, Python scalars, every layout (transposed, strided,
sliced, expanded), strided and aliased ``out=``, every supported dtype, multi-program grids
(``small_blocks``), the int64 index path (``force_int64``), errors, and hypothesis over shapes.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes
from kernel_kit import FLOATS, INTS, D, tk

from tritongrad.kernels.triton import elementwise_ops as eo

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

BINARY = ["add", "sub", "mul", "div", "pow", "maximum", "minimum"]
COMPARE = ["gt", "ge", "lt", "le", "eq", "ne"]
UNARY = ["neg", "exp", "log", "relu", "sqrt"]
POSITIVE = {"pow", "log", "sqrt"}  # first operand drawn positive
INT_BINARY = ["add", "sub", "mul", "maximum", "minimum"]
LAYOUTS = ["contig", "T", "strided", "sliced", "expanded"]

SHAPES = [
    ((), ()), ((1,), (1,)), ((7,), (7,)), ((257,), (257,)), ((0,), (0,)), ((3, 0), (0,)),
    ((4, 5), (5,)), ((4, 1, 3), (2, 1)), ((6, 1), (1, 5)),
]


def _ids(shapes):
    return "x".join(str(s).replace(" ", "") for s in shapes)


def _kind(op):
    return "positive" if op in POSITIVE else "normal"


@pytest.fixture
def force_int64(monkeypatch):
    """Makes every plan take the int64 offset path (as tensors past 2**31 elements do)."""
    from tritongrad.kernels.triton import _launch

    monkeypatch.setattr(_launch, "_INT32_SAFE", 1)
    _launch.clear_plans()
    yield
    _launch.clear_plans()


# -- binary ops -------------------------------------------------------------------------------
@pytest.mark.parametrize("shapes", SHAPES, ids=_ids)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("op", BINARY)
def test_binary_float(kit, rng, op, dtype, shapes):
    a, ra = kit.pair(shapes[0], dtype, rng, kind=_kind(op))
    b, rb = kit.pair(shapes[1], dtype, rng, kind="small" if op == "pow" else "normal")
    kit.check(getattr(tk, op)(a, b), kit.ref(getattr(kit.nk, op), ra, rb, dtype=dtype), dtype)


@pytest.mark.parametrize("la", LAYOUTS)
@pytest.mark.parametrize("lb", LAYOUTS)
def test_binary_layouts(kit, rng, la, lb):
    a, ra = kit.pair((3, 5, 4), D.float32, rng, layout=la)
    b, rb = kit.pair((3, 5, 4), D.float32, rng, layout=lb)
    kit.check(tk.sub(a, b), ra - rb)
    kit.check(tk.mul(a, tk.getitem(b, (0,))), ra * rb[0])


@pytest.mark.parametrize("dtype", FLOATS + INTS, ids=str)
@pytest.mark.parametrize("layout", LAYOUTS[1:])
def test_binary_layouts_dtypes(kit, rng, dtype, layout):
    a, ra = kit.pair((4, 6), dtype, rng, layout=layout)
    b, rb = kit.pair((4, 6), dtype, rng, layout="T")
    kit.check(tk.add(a, b), kit.ref(kit.nk.add, ra, rb, dtype=dtype), dtype)
    kit.check(tk.maximum(a, b), kit.ref(kit.nk.maximum, ra, rb, dtype=dtype), dtype)


@pytest.mark.parametrize("scalar", [2.5, -3, True, 2**40])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("op", BINARY)
def test_binary_python_scalar(kit, rng, op, dtype, scalar):
    if op == "pow" and scalar == 2**40:
        scalar = 3
    a, ra = kit.pair((3, 7), dtype, rng, layout="strided", kind=_kind(op))
    kit.check(getattr(tk, op)(a, scalar), kit.ref(getattr(kit.nk, op), ra, scalar, dtype=dtype),
              dtype)


def test_float64_scalar_keeps_full_precision(kit):
    a = kit.up(np.zeros(3))
    kit.check(tk.add(a, 0.1), np.zeros(3) + 0.1, rtol=0, atol=0)
    kit.check(tk.mul(kit.up(np.ones(2)), 1 / 3), np.ones(2) / 3, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", INTS, ids=str)
@pytest.mark.parametrize("op", INT_BINARY)
def test_binary_int(kit, rng, op, dtype):
    a, ra = kit.pair((5, 6), dtype, rng)
    b, rb = kit.pair((6,), dtype, rng)
    kit.check(getattr(tk, op)(a, b), getattr(kit.nk, op)(ra, rb))
    kit.check(getattr(tk, op)(a, 3), getattr(kit.nk, op)(ra, 3))


@pytest.mark.parametrize("op", ["add", "mul", "maximum", "minimum"])
def test_binary_bool(kit, rng, op):
    a, ra = kit.pair((4, 5), D.bool, rng)
    b, rb = kit.pair((5,), D.bool, rng)
    kit.check(getattr(tk, op)(a, b), getattr(kit.nk, op)(ra, rb))
    kit.check(getattr(tk, op)(a, True), getattr(kit.nk, op)(ra, True))


@pytest.mark.parametrize("scalar", [2.5, 7])
@pytest.mark.parametrize("dtype", [D.int32, D.bool, D.uint8], ids=str)
def test_weak_scalar_promotion_as_numpy(kit, rng, dtype, scalar):
    # int array * 2.5 -> float64, bool + 7 -> int64: NumPy 2's rules (NEP 50)
    a, ra = kit.pair((3, 4), dtype, rng)
    kit.check(tk.mul(a, scalar), kit.nk.mul(ra, scalar))
    kit.check(tk.lt(a, scalar), kit.nk.lt(ra, scalar))


def test_mixed_dtypes_promote(kit, rng):
    a, ra = kit.pair((3,), D.float32, rng)
    b, rb = kit.pair((3,), D.float64, rng)
    kit.check(tk.add(a, b), ra.astype(np.float64) + rb)
    i, ri = kit.pair((3,), D.int32, rng)
    j, rj = kit.pair((3,), D.int64, rng)
    kit.check(tk.mul(i, j), kit.nk.mul(ri, rj))


def test_nan_propagation(kit):
    x = np.array([np.nan, 1.0, -np.inf, np.nan, 0.0], dtype=np.float32)
    y = np.array([1.0, np.nan, 2.0, np.nan, -0.0], dtype=np.float32)
    for op in ["maximum", "minimum", "add", "div"]:
        kit.check(getattr(tk, op)(kit.up(x), kit.up(y)), getattr(kit.nk, op)(x, y))
    for op in COMPARE:
        kit.check(getattr(tk, op)(kit.up(x), kit.up(y)), getattr(kit.nk, op)(x, y))
    kit.check(tk.relu(kit.up(x)), kit.nk.relu(x))


@pytest.mark.parametrize("dtype", [D.float32, D.float64], ids=str)
def test_pow_special_cases(kit, dtype):
    xs = np.array([-2, -1, -0.5, 0, 0.5, 1, 2, np.inf, -np.inf, np.nan])
    ys = np.array([-2, -1, -0.5, 0, 0.5, 1, 2, 3, np.inf, -np.inf, np.nan])
    x, y = np.meshgrid(xs, ys)
    x, y = x.astype(dtype.np), y.astype(dtype.np)
    kit.check(tk.pow(kit.up(x), kit.up(y)), kit.nk.pow(x, y))


def test_pow_integer_exponent_of_negative_base(kit, rng):
    x = -np.abs(rng.standard_normal(9)) - 0.5
    for e in (2, 3, -1, 0.5):
        kit.check(tk.pow(kit.up(x), e), kit.nk.pow(x, e))


@pytest.mark.parametrize("dtype", INTS, ids=str)
def test_pow_integers(kit, dtype):
    # PyTorch's integer pow: exact while it fits, wrapping past it, and the truncated
    # reciprocal for a negative exponent (1 ** -n = 1, (-1) ** -n = +-1, else 0)
    signed = dtype is not D.uint8
    x = np.array([2, 3, 1, -1, -1, 0, 5, -3, 7] if signed else [2, 3, 1, 0, 5, 7, 2, 3, 9],
                 dtype=dtype.np)
    e = np.array([-1, 2, -2, -1, -2, 3, 0, 3, 40] if signed else [1, 2, 5, 3, 0, 2, 7, 8, 9],
                 dtype=dtype.np)
    want = [0, 9, 1, -1, 1, 0, 1, -27, 7 ** 40] if signed else \
        [int(a) ** int(b) for a, b in zip(x, e)]
    got = kit.nk.pow(x, e)
    assert got.dtype == dtype.np
    want = np.array(want, dtype=object) % (2 ** (8 * dtype.itemsize))  # as two's complement
    np.testing.assert_array_equal(got.astype(object) % (2 ** (8 * dtype.itemsize)), want)
    kit.check(tk.pow(kit.up(x), kit.up(e)), got, dtype)
    kit.check(tk.pow(kit.up(x), 2), kit.nk.pow(x, 2), dtype)


# -- comparisons ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS + INTS + [D.bool], ids=str)
@pytest.mark.parametrize("op", COMPARE)
def test_compare(kit, rng, op, dtype):
    a, ra = kit.pair((4, 6), dtype, rng, layout="T")
    b, rb = kit.pair((6,), dtype, rng)
    if dtype is not D.bool:  # some ties
        b, rb = kit.up(ra[1], dtype), ra[1]
    got = getattr(tk, op)(a, b)
    assert got.dtype is D.bool
    kit.check(got, getattr(kit.nk, op)(ra, rb))
    scalar = 0 if dtype in (D.uint8, D.bool) else 0.5
    kit.check(getattr(tk, op)(a, scalar), getattr(kit.nk, op)(ra, scalar))


# -- unary ------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(), (1,), (7,), (257,), (0, 3), (3, 5, 2)], ids=str)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("op", UNARY)
def test_unary_float(kit, rng, op, dtype, shape):
    a, ra = kit.pair(shape, dtype, rng, layout="T", kind=_kind(op))
    kit.check(getattr(tk, op)(a), kit.ref(getattr(kit.nk, op), ra, dtype=dtype), dtype)


@pytest.mark.parametrize("dtype", INTS, ids=str)
@pytest.mark.parametrize("op", ["neg", "relu"])
def test_unary_int(kit, rng, op, dtype):
    a, ra = kit.pair((3, 5), dtype, rng, layout="strided")
    kit.check(getattr(tk, op)(a), getattr(kit.nk, op)(ra))


def test_exp_log_ranges(kit):
    x = np.array([-100, -10, -1e-3, 0, 1e-3, 1, 10, 80], dtype=np.float32)
    kit.check(tk.exp(kit.up(x)), np.exp(x), rtol=2e-6)
    p = np.array([1e-30, 1e-3, 0.5, 1, 1.0001, 2, 1e10, 3e38], dtype=np.float32)
    kit.check(tk.log(kit.up(p)), np.log(p), rtol=2e-6, atol=1e-6)


# -- where ------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS + INTS + [D.bool], ids=str)
def test_where(kit, rng, dtype):
    c, rc = kit.pair((4, 1), D.bool, rng)
    a, ra = kit.pair((1, 5), dtype, rng)
    b, rb = kit.pair((4, 5), dtype, rng, layout="T")
    kit.check(tk.where(c, a, b), kit.ref(kit.nk.where, rc, ra, rb, dtype=dtype), dtype)


def test_where_scalars_and_nonbool_condition(kit, rng):
    c, rc = kit.pair((3, 4), D.int32, rng, layout="T")
    a, ra = kit.pair((4,), D.float32, rng)
    kit.check(tk.where(c, a, 0.0), kit.nk.where(rc, ra, 0.0))
    kit.check(tk.where(c, -1.5, a), kit.nk.where(rc, -1.5, ra))
    kit.check(tk.where(c, 1.0, 0.0), kit.nk.where(rc, 1.0, 0.0))
    kit.check(tk.where(c, 1, 0), kit.nk.where(rc, 1, 0))
    cond0, rc0 = kit.pair((), D.bool, rng)
    kit.check(tk.where(cond0, a, ra[0].item()), kit.nk.where(rc0, ra, ra[0].item()))


# -- out= -------------------------------------------------------------------------------------
def test_out_strided(kit, rng):
    a, ra = kit.pair((4, 6), D.float32, rng)
    b, rb = kit.pair((6,), D.float32, rng)
    buf = kit.up(np.zeros((6, 9), np.float32))
    out = tk.permute(tk.getitem(buf, (slice(None), slice(1, 9, 2))), (1, 0))  # (4, 6) view
    host = np.zeros((6, 9), np.float32)
    ref_out = host[:, 1:9:2].T
    assert tk.add(a, b, out=out) is out
    kit.nk.add(ra, rb, out=ref_out)
    kit.check(buf, host)  # untouched elements stay zero too


@pytest.mark.parametrize("op", ["add", "div", "maximum"])
def test_out_other_dtype(kit, rng, op):
    a, ra = kit.pair((3, 4), D.float16, rng)
    b, rb = kit.pair((3, 4), D.float16, rng)
    out = tk.empty((3, 4), D.float32)
    ref = np.empty((3, 4), np.float32)
    getattr(tk, op)(a, b, out=out)
    getattr(kit.nk, op)(ra, rb, out=ref)
    kit.check(out, ref)
    iout = tk.empty((3, 4), D.int32)
    iref = np.empty((3, 4), np.int32)
    tk.exp(a, out=iout)
    kit.nk.exp(ra, out=iref)
    kit.check(iout, iref)


def test_out_in_place_and_overlapping(kit, rng):
    a, ra = kit.pair((10,), D.float32, rng)
    ra = ra.copy()
    tk.mul(a, 2.0, out=a)
    kit.nk.mul(ra, 2.0, out=ra)
    kit.check(a, ra)
    # out overlaps the input shifted by one: NumPy semantics (as if the input were copied)
    tk.add(tk.getitem(a, (slice(0, 9),)), 1.0, out=tk.getitem(a, (slice(1, 10),)))
    kit.nk.add(ra[0:9], 1.0, out=ra[1:10])
    kit.check(a, ra)
    tk.neg(tk.getitem(a, (slice(1, 10),)), out=tk.getitem(a, (slice(0, 9),)))
    kit.nk.neg(ra[1:10], out=ra[0:9])
    kit.check(a, ra)


def test_out_broadcasts_inputs(kit, rng):
    a, ra = kit.pair((3,), D.float64, rng)
    out = tk.empty((2, 3), D.float64)
    ref = np.empty((2, 3))
    tk.add(a, a, out=out)
    kit.nk.add(ra, ra, out=ref)
    kit.check(out, ref)


def test_out_shape_mismatch_raises(kit):
    a = kit.up(np.zeros((3, 4), np.float32))
    with pytest.raises(ValueError, match="add"):
        tk.add(a, a, out=tk.empty((4, 3), D.float32))


# -- errors -----------------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["div"])
def test_float_only_ops_reject_ints(kit, op):
    a = kit.up(np.arange(3, dtype=np.int32))
    with pytest.raises(TypeError, match=rf"{op}.*int32"):
        getattr(tk, op)(a, a)


@pytest.mark.parametrize("op", ["exp", "log", "sqrt"])
def test_float_only_unary_reject_ints(kit, op):
    with pytest.raises(TypeError, match=rf"{op}.*int64"):
        getattr(tk, op)(kit.up(np.arange(3)))


def test_bool_errors_and_complex(kit):
    b = kit.up(np.array([True, False]))
    with pytest.raises(TypeError, match="sub.*bool"):
        tk.sub(b, b)
    with pytest.raises(TypeError, match="neg.*bool"):
        tk.neg(b)
    c = kit.up(np.ones(2, np.complex64))  # (complex arithmetic: test_complex_kernels.py)
    with pytest.raises(TypeError, match="maximum.*complex64"):
        tk.maximum(c, c)


def test_broadcast_error_names_op(kit):
    a = kit.up(np.zeros((3, 4), np.float32))
    with pytest.raises(ValueError, match=r"mul: shapes \(3, 4\) and \(3,\)"):
        tk.mul(a, kit.up(np.zeros(3, np.float32)))


# -- multi-program grids and the int64 path ---------------------------------------------------
@pytest.mark.parametrize("layout", LAYOUTS)
def test_small_blocks_grids(kit, rng, small_blocks, layout):
    a, ra = kit.pair((13, 9), D.float32, rng, layout=layout)
    b, rb = kit.pair((9,), D.float32, rng)
    kit.check(tk.add(a, b), ra + rb)
    kit.check(tk.exp(a), np.exp(ra))
    kit.check(tk.where(tk.gt(a, 0.0), a, b), np.where(ra > 0, ra, rb))
    c, rc = kit.pair((70,), D.float16, rng)
    kit.check(tk.mul(c, c), rc * rc, D.float16)


@pytest.mark.parametrize("layout", ["contig", "T", "expanded"])
def test_int64_offsets(kit, rng, force_int64, layout):
    a, ra = kit.pair((5, 9), D.float32, rng, layout=layout)
    b, rb = kit.pair((9,), D.float32, rng)
    kit.check(tk.div(a, b), ra / rb)
    kit.check(tk.ge(a, 0.0), ra >= 0)


def test_plans_are_cached(kit, rng):
    from tritongrad.kernels.triton import elementwise as ew

    a, _ = kit.pair((6, 7), D.float32, rng, layout="T")
    tk.add(a, 1.0)
    n = len(ew._PLANS)
    tk.add(a, 2.0)
    tk.mul(a, 3.0)
    assert len(ew._PLANS) == n


def test_small_blocks_shrinks_every_block_size(small_blocks):
    """Every block size of the backend (a module global named like one) is one the fixture
    shrinks, so that small inputs take the multi-program paths."""
    import importlib
    import pkgutil
    import re

    from tritongrad.kernels import triton as package

    for info in pkgutil.iter_modules(package.__path__):
        mod = importlib.import_module(f"{package.__name__}.{info.name}")
        for name, value in vars(mod).items():
            if re.fullmatch(r"[A-Z0-9_]*(BLOCK|TILE|SINGLE_MAX|CHUNK|WIDTH)[A-Z0-9_]*", name) \
                    and type(value) is int:  # (not caches named like them: foreach._CHUNKS)
                assert value <= 64, f"{info.name}.{name} = {value}: add it to SMALL_BLOCKS"


# -- the op table -----------------------------------------------------------------------------
def test_op_table_is_what_the_launchers_pick():
    """Every formula variant a launcher picks is an entry of elementwise.OPS, and every entry
    is picked by some launcher (no formula without a caller, no caller without a formula)."""
    from tritongrad.kernels.triton import nn
    from tritongrad.kernels.triton.elementwise import OPS

    ops = [*BINARY, *COMPARE, *UNARY, *eo.UNARY_OPS, *eo.BINARY_OPS]
    picked = {"copy", "arange", "where"}
    for op in ops:
        for dtype in [*FLOATS, *INTS, D.bool]:
            try:
                eo._check_op(op, dtype)
            except TypeError:
                continue
            picked.add(eo._op_variant(op, dtype))
            assert eo._formula_of(op, dtype) is OPS[eo._op_variant(op, dtype)]
    for approximate in ("none", "tanh"):
        for dtype in FLOATS:
            op = nn._gelu_op(approximate, dtype)
            picked |= {op, op + "_grad"}
    assert picked == set(OPS)


# -- property-based ---------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(shapes=mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, max_side=4),
       op=st.sampled_from(["add", "sub", "mul", "maximum", "lt", "eq"]),
       dtype=st.sampled_from([D.float32, D.float64, D.int32, D.float16]),
       layouts=st.tuples(st.sampled_from(LAYOUTS), st.sampled_from(LAYOUTS)),
       seed=st.integers(0, 2**16))
def test_property_broadcasting(kit, shapes, op, dtype, layouts, seed):
    rng = np.random.default_rng(seed)
    a, ra = kit.pair(shapes.input_shapes[0], dtype, rng, layout=layouts[0])
    b, rb = kit.pair(shapes.input_shapes[1], dtype, rng, layout=layouts[1])
    got = getattr(tk, op)(a, b)
    kit.check(got, getattr(kit.nk, op)(ra, rb), dtype)
    assert got.shape == shapes.result_shape


# -- the unary and binary tables --------------------------------------------------------------
# every op of the unary table that floats take (the table is Triton's, elementwise.UNARY)
UNARY_FLOAT = [op for op in eo.UNARY_OPS if op not in eo._INT_ONLY]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("op", UNARY_FLOAT)
def test_unary_table_float(kit, rng, op, dtype):
    kind = "positive" if op == "log1p" else "normal"
    a, ra = kit.pair((4, 9), dtype, rng, layout="T", kind=kind)
    if op in ("floor", "ceil", "round", "trunc"):  # halves and exact halves: ties to even
        a, ra = kit.pair((4, 9), dtype, rng, layout="T")
        ra = np.round(ra * 4) / 2
        a = kit.up(ra, dtype)
    kit.check(tk.unary(op, a), kit.ref(lambda x: kit.nk.unary(op, x), ra, dtype=dtype), dtype)


def test_unary_special_values(kit):
    x = np.array([np.nan, -0.0, 0.0, -2.5, 2.5, 0.5, -0.5, np.inf, -np.inf], np.float32)
    for op in ["abs", "sign", "floor", "ceil", "round", "trunc", "tanh", "sigmoid", "expm1"]:
        kit.check(tk.unary(op, kit.up(x)), kit.nk.unary(op, x))


@pytest.mark.parametrize("dtype", INTS + [D.bool], ids=str)
def test_unary_table_int(kit, rng, dtype):
    a, ra = kit.pair((3, 5), dtype, rng, layout="strided")
    kit.check(tk.unary("abs", a), kit.nk.unary("abs", ra))
    kit.check(tk.unary("bitwise_not", a), kit.nk.unary("bitwise_not", ra))
    if dtype is not D.bool:
        kit.check(tk.unary("sign", a), kit.nk.unary("sign", ra))
        for op in ("floor", "ceil", "trunc"):  # integers: a copy, as PyTorch
            kit.check(tk.unary(op, a), ra)


@pytest.mark.parametrize("dtype", FLOATS + INTS, ids=str)
@pytest.mark.parametrize("op", ["floor_divide", "trunc_divide", "remainder"])
def test_binary_table_divisions(kit, rng, op, dtype):
    a, ra = kit.pair((5, 6), dtype, rng, layout="T")
    if dtype in INTS:
        rb = rng.integers(1, 9, (6,)).astype(dtype.np)
        if dtype is not D.uint8:
            rb = rb * np.where(rng.random(6) < 0.5, -1, 1).astype(dtype.np)
        b = kit.up(rb)
        kit.check(tk.binary(op, a, 3), kit.nk.binary(op, ra, 3))
    else:
        b, rb = kit.pair((6,), dtype, rng)
        kit.check(tk.binary(op, a, 0.75), kit.ref(lambda x: kit.nk.binary(op, x, 0.75), ra,
                                                   dtype=dtype), dtype)
    kit.check(tk.binary(op, a, b), kit.ref(lambda x, y: kit.nk.binary(op, x, y), ra, rb,
                                           dtype=dtype), dtype)


def test_float_division_special_values(kit):
    x = np.array([7.5, -7.5, 7.5, -7.5, 0.0, 1.0, np.inf, 5.0, np.nan], np.float64)
    y = np.array([2.0, 2.0, -2.0, -2.0, 3.0, 0.0, 2.0, np.inf, 1.0], np.float64)
    for op in ["floor_divide", "trunc_divide", "remainder"]:
        kit.check(tk.binary(op, kit.up(x), kit.up(y)), kit.nk.binary(op, x, y))


def test_integer_division_by_zero_scalar_raises(kit):
    a = kit.up(np.arange(4, dtype=np.int32))
    for op in ["floor_divide", "trunc_divide", "remainder"]:
        with pytest.raises(RuntimeError, match="division by zero"):
            tk.binary(op, a, 0)


@pytest.mark.parametrize("dtype", [D.uint8, D.int32, D.int64, D.bool], ids=str)
@pytest.mark.parametrize("op", ["bitwise_and", "bitwise_or", "bitwise_xor"])
def test_binary_table_bitwise(kit, rng, op, dtype):
    a, ra = kit.pair((4, 5), dtype, rng)
    b, rb = kit.pair((5,), dtype, rng, layout="strided")
    kit.check(tk.binary(op, a, b), kit.nk.binary(op, ra, rb))
    s = True if dtype is D.bool else 6
    kit.check(tk.binary(op, a, s), kit.nk.binary(op, ra, s))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_binary_table_atan2(kit, rng, dtype):
    a, ra = kit.pair((5, 6), dtype, rng, layout="T")
    b, rb = kit.pair((6,), dtype, rng, layout="strided")
    kit.check(tk.binary("atan2", a, b), kit.ref(lambda x, y: kit.nk.binary("atan2", x, y), ra,
                                                rb, dtype=dtype), dtype)
    # the quadrants, signed zeros and infinities (IEEE atan2, as NumPy and PyTorch)
    y = np.array([0.0, -0.0, 0.0, -0.0, 1.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 2.0], np.float64)
    x = np.array([0.0, 0.0, -0.0, -0.0, -1.0, 1.0, -1.0, np.inf, 3.0, 1.0, -np.inf], np.float64)
    got = tk.binary("atan2", kit.up(y), kit.up(x))
    kit.check(got, np.arctan2(y, x))
    assert np.array_equal(np.signbit(kit.down(got)), np.signbit(np.arctan2(y, x)))
    with pytest.raises(TypeError, match="atan2.*int32"):
        tk.binary("atan2", kit.up(np.ones(3, np.int32)), kit.up(np.ones(3, np.int32)))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_binary_table_incomplete_gamma(kit, rng, dtype):
    # both the series (x < a + 1) and the continued fraction, and PyTorch's edge cases
    a = np.array([0.0, 0.0, 1.0, 2.0, 0.5, -1.0, 3.0, np.inf, 2.0, 300.0, 50.0, 0.1, 7.5, 30.0,
                  np.nan, np.inf, 1e-3, 4.0])
    x = np.array([0.0, 1.0, 0.0, 1.0, 2.0, 1.0, -1.0, 3.0, np.inf, 310.0, 10.0, 1e-5, 9.0,
                  25.0, 1.0, np.inf, 1.0, np.nan])
    ra, rx = a.astype(dtype.np), x.astype(dtype.np)
    if dtype is D.bfloat16:
        ra, rx = a.astype(np.float32), x.astype(np.float32)
    for op in ("igamma", "igammac", "igamma_dx"):
        got = tk.binary(op, kit.up(ra, dtype), kit.up(rx, dtype))
        kit.check(got, kit.ref(lambda p, q, op=op: kit.nk.binary(op, p, q), ra, rx,
                               dtype=dtype), dtype)
    ga, ra = kit.pair((4, 9), dtype, rng, layout="T", kind="positive")
    gx, rx = kit.pair((9,), dtype, rng, layout="strided", kind="positive")
    kit.check(tk.binary("igamma", ga, gx), kit.ref(lambda p, q: kit.nk.binary("igamma", p, q),
                                                   ra, rx, dtype=dtype), dtype)


def test_tables_reject_bad_ops_and_dtypes(kit):
    f = kit.up(np.ones(3, np.float32))
    with pytest.raises(ValueError, match="unary: unknown op 'nope'"):
        tk.unary("nope", f)
    with pytest.raises(ValueError, match="binary: unknown op"):
        tk.binary("nope", f, f)
    with pytest.raises(TypeError, match="bitwise_and.*float32"):
        tk.binary("bitwise_and", f, f)
    with pytest.raises(TypeError, match="sin.*int32"):
        tk.unary("sin", kit.up(np.ones(3, np.int32)))


def test_tables_out_strided(kit, rng):
    a, ra = kit.pair((4, 6), D.float32, rng)
    out = tk.permute(tk.empty((6, 4), D.float64), (1, 0))
    ref = np.empty((4, 6))
    tk.unary("tanh", a, out=out)
    kit.nk.unary("tanh", ra, out=ref)
    # computed in float32, then widened: a GPU's tanh may differ from NumPy's by an ulp of
    # float32 (seen on an H200, 2026-11-29), which a float64 tolerance would call wrong
    kit.check(out, ref, rtol=4e-7, atol=0)
    tk.binary("remainder", a, 0.5, out=out)
    kit.nk.binary("remainder", ra, 0.5, out=ref)
    kit.check(out, ref)


def test_op_plans_repeat_each_variant_exactly(kit, rng):
    # Note [op plans]: a repeated array op is one lookup keyed by its dtypes and layouts; each
    # variant seen must keep its own result dtype, shape and launch, and errors still come from
    # the checks
    from tritongrad.kernels.triton import _launch

    _launch.clear_plans()
    variants = [((4, 6), (4, 6), D.float32, "contig"), ((4, 6), (6,), D.float32, "contig"),
                ((4, 6), (4, 6), D.float32, "T"), ((4, 6), (4, 6), D.float64, "sliced"),
                ((4, 6), (6,), D.int32, "expanded"), ((4, 6), (4, 6), D.bool, "contig")]
    operands = [(kit.pair(sa, dt, rng, layout=lay), kit.pair(sb, dt, rng), dt)
                for sa, sb, dt, lay in variants]
    for _ in range(2):  # the second round goes through the op plans
        for (a, ra), (b, rb), dt in operands:
            kit.check(tk.mul(a, b), kit.ref(kit.nk.mul, ra, rb, dtype=dt), dt)
            if dt.is_floating_point:
                kit.check(tk.unary("tanh", a), kit.ref(lambda p: kit.nk.unary("tanh", p), ra,
                                                       dtype=dt), dt)
        (a, _), (b, _), _ = operands[0]
        with pytest.raises(ValueError, match="mul"):
            tk.mul(a, kit.up(np.ones(5, np.float32)))
        with pytest.raises(TypeError, match="tanh.*int32"):
            tk.unary("tanh", operands[4][0][0])
    assert len(eo._OP_PLANS) == len(variants) + 3  # tanh: the float layouts (two share one)
    _launch.clear_plans()
    assert not eo._OP_PLANS
