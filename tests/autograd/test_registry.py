"""The op tables (autograd/registry.py) are the one source of tritongrad's op names: the
package namespace, Tensor's methods and operators, the profiler's FLOP rules and docs/ops.md
must all say what the tables say."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.autograd import ops, registry
from tritongrad.autograd.ops import FAMILIES
from tritongrad.autograd.ops.__main__ import render
from tritongrad.autograd.profiler_util import estimate_flops

ROWS = [row for rows in FAMILIES.values() for row in rows]
ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_namespace_and_methods_are_the_table(row):
    for name in row.names():
        assert (name in ops.__all__) == row.function, name
        if row.function:  # (a method-only name may be something else at the top: tg.float)
            assert getattr(tg, name) is row.fn and name in tg.__all__, name
        if row.bound is not None:
            assert getattr(tg.Tensor, name) is row.bound, name
        if row.inplace is not None:
            assert getattr(tg.Tensor, name + "_") is row.inplace, name
    for dunder in row.operators:
        assert getattr(tg.Tensor, dunder) is not None
    assert row.fn.__doc__ or not row.function, f"{row.name} has no docstring"


def test_methods_are_discoverable():
    assert {"sin", "sin_", "clamp", "__add__", "matmul"} <= set(dir(tg.Tensor))
    assert "sin" in tg.Tensor.sin.__doc__.lower()


def test_operators_follow_the_table():
    x = tg.tensor([1.0, 2.0])
    assert (2 - x).tolist() == [1.0, 0.0]
    assert (2 / x).tolist() == [2.0, 1.0]
    assert (2 ** x).tolist() == [2.0, 4.0]
    assert (-x).tolist() == [-1.0, -2.0] and (+x) is x
    y = x.clone()
    y += 1
    assert y.tolist() == [2.0, 3.0]
    assert (~tg.tensor([True, False])).tolist() == [False, True]


def test_one_name_one_row():
    row = FAMILIES["pointwise"][0]
    with pytest.raises(ValueError, match="in both the a and b tables"):
        registry.install({"a": (row,), "b": (row,)}, type("T", (), {}), {})


def test_unknown_flop_rule_is_refused():
    with pytest.raises(ValueError, match="flops must be one of"):
        registry.OpInfo("f", len, flops="cubic")


@pytest.mark.parametrize("row", [r for r in ROWS if r.flops], ids=lambda r: r.name)
def test_flops_come_from_the_table(row):
    shapes = {"matmul": [(2, 3), (3, 4)], "addmm": [(2, 4), (2, 3), (3, 4)]}.get(
        row.flops, [(2, 3), (3,)])
    expected = {"matmul": 2 * 2 * 3 * 4, "addmm": 2 * 2 * 3 * 4, "elementwise": 6,
                "reduction": 6}[row.flops]
    assert estimate_flops(row.name, shapes) == expected
    if row.inplace is not None:
        assert estimate_flops(row.name + "_", shapes) == expected


def test_ops_without_a_rule_have_no_estimate():
    assert [r.name for r in ROWS if r.name == "view" and r.flops] == []
    assert estimate_flops("view", [(4, 5)]) is None


def test_docs_op_list_is_generated_from_the_tables():
    page = (ROOT / "docs" / "ops.md").read_text()
    assert render(page) == page, "docs/ops.md is stale: run python -m tritongrad.autograd.ops"
    for row in ROWS:
        assert f"`{row.name}`" in page


# -- in-place variants, from the tables ---------------------------------------------------------

def _f(*shape, lo=0.5, hi=2.0, seed=0):
    return tg.tensor(np.random.default_rng(seed).uniform(lo, hi, shape), dtype=tg.float64)


def _i(*shape, seed=0):
    return tg.tensor(np.random.default_rng(seed).integers(1, 9, shape))


# The arguments after ``self`` for every op with an in-place variant: each table row with an
# ``inplace`` needs an entry (test_every_in_place_row_has_arguments), and its in-place form
# must equal its function on a copy (test_in_place_equals_out_of_place).
IN_PLACE_ARGS = {
    **dict.fromkeys(["neg", "exp", "log", "sqrt", "relu", "abs", "sin", "cos", "tan", "tanh",
                     "sigmoid", "log1p", "expm1", "sign", "floor", "ceil", "trunc", "round",
                     "nan_to_num", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh",
                     "atanh", "log2", "log10", "exp2"], lambda: ()),
    **dict.fromkeys(["add", "sub", "mul", "div", "pow", "floor_divide", "remainder", "fmod",
                     "atan2",
                     "igamma", "igammac"],
                    lambda: (_f(3, 4, seed=1),)),
    **dict.fromkeys(["bitwise_and", "bitwise_or", "bitwise_xor"], lambda: (_i(3, 4, seed=1),)),
    # comparisons: some elements equal (x against itself rounded), written in x's dtype
    **dict.fromkeys(["eq", "ne", "gt", "ge", "lt", "le"], lambda: (1.25,)),
    "clamp": lambda: (0.8, 1.5),
    "lerp": lambda: (_f(3, 4, seed=1), 0.25),
    "addcmul": lambda: (_f(3, 4, seed=1), _f(4, seed=2)),
    "addcdiv": lambda: (_f(3, 4, seed=1), _f(4, seed=2)),
    "addmm": lambda: (_f(3, 5, seed=1), _f(5, 4, seed=2)),
    "addmv": lambda: (_f(3, 4, seed=1), _f(4, seed=2)),
    "baddbmm": lambda: (_f(3, 3, 5, seed=1), _f(3, 5, 4, seed=2)),
    "addbmm": lambda: (_f(2, 3, 5, seed=1), _f(2, 5, 4, seed=2)),
    "addr": lambda: (_f(3, seed=1), _f(4, seed=2)),
    "index_fill": lambda: (1, tg.tensor([0, 2]), -1.5),
    "index_copy": lambda: (1, tg.tensor([3, 0]), _f(3, 2, seed=1)),
    "masked_scatter": lambda: (_f(3, 4, seed=1) > 1.2, _f(12, seed=2)),
    "scatter": lambda: (1, tg.tensor([[0, 2], [1, 3], [3, 0]]), _f(3, 2, seed=1)),
    "scatter_add": lambda: (1, tg.tensor([[0, 2], [1, 1], [3, 0]]), _f(3, 2, seed=1)),
    "index_put": lambda: ((tg.tensor([0, 2]), tg.tensor([1, 3])), _f(2, seed=1)),
    "masked_fill": lambda: (_f(3, 4, seed=1) > 1.2, -1.0),
    "index_add": lambda: (0, tg.tensor([2, 0]), _f(2, 4, seed=1)),
    "scatter_reduce": lambda: (1, tg.tensor([[0, 0], [1, 3], [3, 3]]), _f(3, 2, seed=1),
                               "amax"),
    "index_reduce": lambda: (1, tg.tensor([3, 0, 3]), _f(3, 3, seed=1), "prod"),
    # in-place views: the tensor takes the view's geometry (values compared as laid out)
    **dict.fromkeys(["transpose", "swapaxes", "swapdims"], lambda: (0, 1)),
    "t": lambda: (),
    "unsqueeze": lambda: (1,),
    "squeeze": lambda: (),
    "as_strided": lambda: ((2, 2), (1, 2), 1),
    # composites made in place by registry.with_inplace, and the numeric family
    **dict.fromkeys(["erf", "erfc", "erfinv", "lgamma", "digamma", "i0", "sinc", "frac", "sgn",
                     "conj_physical",
                     "reciprocal", "rsqrt", "tril", "triu", "logical_not", "bitwise_not",
                     "square", "deg2rad", "rad2deg"], lambda: ()),
    **dict.fromkeys(["xlogy", "hypot", "logical_and", "logical_or", "logical_xor", "copysign",
                     "heaviside", "ldexp", "nextafter", "float_power"],
                    lambda: (_f(3, 4, seed=1),)),
    **dict.fromkeys(["gcd", "lcm", "bitwise_left_shift", "bitwise_right_shift"],
                    lambda: (_i(3, 4, seed=1),)),
    "clamp_min": lambda: (0.8,),
    "clamp_max": lambda: (1.5,),
    **dict.fromkeys(["cumsum", "cumprod"], lambda: (1,)),
    "polygamma": lambda: (1,),
    "mvlgamma": lambda: (2,),
    "logit": lambda: (0.25,),
    "renorm": lambda: (2, 0, 1.0),
    "put": lambda: (tg.tensor([0, 5, -1]), _f(3, seed=1)),
}
IN_PLACE_INTS = {"gcd", "lcm"}  # (and the bitwise rows) run on integer tensors
IN_PLACE_SHAPE = {"baddbmm": (3, 3, 4), "addmv": (3,)}  # self's shape, where not (3, 4)
# Not comparable this way: bernoulli(input) draws with input's probabilities, while
# x.bernoulli_(p) fills x with draws of p (tests/autograd/test_ops_random.py).
IN_PLACE_DIFFERENT = {"bernoulli"}
IN_PLACE_ROWS = [r for r in ROWS if r.inplace is not None and r.name not in IN_PLACE_DIFFERENT]


def test_every_in_place_row_has_arguments():
    assert {r.name for r in IN_PLACE_ROWS} == set(IN_PLACE_ARGS)


@pytest.mark.parametrize("row", IN_PLACE_ROWS, ids=lambda r: r.name)
def test_in_place_equals_out_of_place(row):
    args = IN_PLACE_ARGS[row.name]()
    x = _i(3, 4) if row.name.startswith("bitwise") or row.name in IN_PLACE_INTS else \
        _f(*IN_PLACE_SHAPE.get(row.name, (3, 4)))
    expected = (row.bound or row.fn)(x, *args)  # (the method: polygamma's takes n second)
    if expected.dtype is tg.bool:  # a comparison, in place: 1 or 0 in the target's dtype
        expected = expected.to(x.dtype)
    target = x.clone()
    version = target._version
    assert row.inplace(target, *args) is target
    assert target._version > version
    assert target.dtype is expected.dtype
    np.testing.assert_allclose(target.numpy(), expected.numpy(), rtol=1e-15, atol=0)


# -- gradients of every differentiable op, from the tables --------------------------------------

def _g(*shape, lo=0.5, hi=2.0, seed=0):
    """A float64 leaf of uniform values (away from zero: logs, roots and kinks are safe)."""
    return _f(*shape, lo=lo, hi=hi, seed=seed).requires_grad_(True)


def _tensors(*shapes):
    return lambda: tuple(_g(*s, seed=i) for i, s in enumerate(shapes))


_A, _AB = _tensors((3, 4)), _tensors((3, 4), (3, 4))
_Z = _tensors((3, 2))  # the real view of 3 complex numbers
_IDX = tg.tensor([[0, 2], [1, 3], [3, 0]])
# op -> (the differentiable inputs, a function of them calling the op). Every differentiable
# function of the tables needs an entry (test_every_differentiable_op_has_a_gradient_check);
# tests/autograd/test_ops_*.py hold the detailed checks, this one sweeps them all alike.
GRAD_CASES = {
    **{n: (_A, lambda x, n=n: getattr(tg, n)(x)) for n in (
        "neg", "exp", "log", "sqrt", "rsqrt", "relu", "reciprocal", "positive", "abs", "sin",
        "cos", "tan", "tanh", "sigmoid", "log1p", "expm1", "sum", "mean", "amax", "amin",
        "var", "std", "prod", "clone", "norm", "fliplr", "flipud", "t",
        "nan_to_num", "diagonal", "diag", "tril", "triu", "diag_embed", "flatten",
        "std_mean", "var_mean", "max", "min")},
    **{n: (_AB, lambda a, b, n=n: getattr(tg, n)(a, b)) for n in (
        "add", "sub", "mul", "div", "pow", "maximum", "minimum", "remainder", "fmod", "xlogy",
        "logaddexp", "rsub", "atan2")},
    "flip": (_A, lambda x: tg.flip(x, (0, 1))),
    "where": (_AB, lambda a, b: tg.where(a > 1.2, a, b)),
    "clamp": (_A, lambda x: tg.clamp(x, 0.8, 1.6)),
    "clamp_min": (_A, lambda x: tg.clamp_min(x, 0.8)),
    "clamp_max": (_A, lambda x: tg.clamp_max(x, 1.6)),
    "cumsum": (_A, lambda x: tg.cumsum(x, 1)),
    "logsumexp": (_A, lambda x: tg.logsumexp(x, 1)),
    "softmax": (_A, lambda x: tg.softmax(x, 1)),
    "log_softmax": (_A, lambda x: tg.log_softmax(x, 0)),
    "lerp": (_AB, lambda a, b: tg.lerp(a, b, 0.3)),
    "prelu": (_tensors((3, 4), (4,)), lambda x, w: tg.prelu(x - 1.25, w)),
    "hardshrink": (_A, lambda x: tg.hardshrink(x, 1.0)),
    "addcmul": (_tensors((3, 4), (3, 4), (4,)), lambda a, b, c: tg.addcmul(a, b, c, value=0.5)),
    "addcdiv": (_tensors((3, 4), (3, 4), (4,)), lambda a, b, c: tg.addcdiv(a, b, c, value=0.5)),
    "mm": (_tensors((3, 4), (4, 2)), tg.mm),
    "bmm": (_tensors((2, 3, 4), (2, 4, 2)), tg.bmm),
    "matmul": (_tensors((2, 3, 4), (4,)), tg.matmul),
    "outer": (_tensors((3,), (4,)), tg.outer),
    "addmm": (_tensors((3, 2), (3, 4), (4, 2)), tg.addmm),
    "addmv": (_tensors((3,), (3, 4), (4,)), tg.addmv),
    "baddbmm": (_tensors((2, 3, 2), (2, 3, 4), (2, 4, 2)), tg.baddbmm),
    "einsum": (_tensors((3, 4), (4, 2)), lambda a, b: tg.einsum("ij,jk->ik", a, b)),
    "cat": (_AB, lambda a, b: tg.cat([a, b], 1)),
    "stack": (_AB, lambda a, b: tg.stack([a, b], 0)),
    "split": (_A, lambda x: tg.split(x, 2, 1)[1]),
    "split_with_sizes": (_A, lambda x: tg.split_with_sizes(x, [1, 3], 1)[1]),
    "chunk": (_A, lambda x: tg.chunk(x, 2, 0)[0]),
    "unsafe_split": (_A, lambda x: tg.unsafe_split(x, 2, 1)[1]),
    "unsafe_split_with_sizes": (_A, lambda x: tg.unsafe_split_with_sizes(x, [1, 3], 1)[1]),
    "unsafe_chunk": (_A, lambda x: tg.unsafe_chunk(x, 2, 0)[0]),
    "unbind": (_A, lambda x: tg.unbind(x, 1)[2]),
    "narrow": (_A, lambda x: tg.narrow(x, 1, 1, 2)),
    "select": (_A, lambda x: tg.select(x, 0, 2)),
    "movedim": (_tensors((2, 3, 4)), lambda x: tg.movedim(x, 0, 2)),
    "repeat": (_A, lambda x: tg.repeat(x, 2, 1)),
    "tile": (_A, lambda x: tg.tile(x, (1, 2))),
    "view": (_A, lambda x: tg.view(x, (4, 3))),
    "reshape": (_A, lambda x: tg.reshape(x, (2, 6))),
    "permute": (_tensors((2, 3, 4)), lambda x: tg.permute(x, (2, 0, 1))),
    "transpose": (_A, lambda x: tg.transpose(x, 0, 1)),
    "swapaxes": (_A, lambda x: tg.swapaxes(x, 0, 1)),
    "swapdims": (_A, lambda x: tg.swapdims(x, 0, 1)),
    "expand": (_tensors((3, 1)), lambda x: tg.expand(x, (3, 4))),
    "expand_as": (_tensors((3, 1)), lambda x: tg.expand_as(x, tg.zeros(3, 4))),
    "broadcast_to": (_tensors((1, 4)), lambda x: tg.broadcast_to(x, (3, 4))),
    "unsqueeze": (_A, lambda x: tg.unsqueeze(x, 1)),
    "squeeze": (_tensors((3, 1, 4)), lambda x: tg.squeeze(x, 1)),
    "as_strided": (_A, lambda x: tg.as_strided(x, (3, 2), (1, 1))),  # overlapping windows
    "sum_to_size": (_A, lambda x: tg.sum_to_size(x, (1, 4))),
    "unflatten": (_A, lambda x: tg.unflatten(x, 1, (2, 2))),
    "tensor_split": (_A, lambda x: tg.tensor_split(x, 3, 1)[1]),
    "repeat_interleave": (_A, lambda x: tg.repeat_interleave(x, 2, 0)),
    "roll": (_A, lambda x: tg.roll(x, (1, -1), (0, 1))),
    "gather": (_A, lambda x: tg.gather(x, 1, _IDX)),
    "scatter": (_AB, lambda a, b: tg.scatter(a, 1, _IDX, b[:, :2])),
    "scatter_add": (_AB, lambda a, b: tg.scatter_add(a, 1, _IDX, b[:, :2])),
    "scatter_reduce": (_AB, lambda a, b: tg.scatter_reduce(a, 1, _IDX, b[:, :2], "sum")),
    "index_add": (_AB, lambda a, b: tg.index_add(a, 0, tg.tensor([2, 0]), b[:2])),
    "index_select": (_A, lambda x: tg.index_select(x, 1, tg.tensor([3, 0, 3]))),
    "index_put": (_AB, lambda a, b: tg.index_put(a, (tg.tensor([0, 2]),), b[:2])),
    "index_put_": (_AB, lambda a, b: tg.index_put_(a * 1, (tg.tensor([0, 2]),), b[:2])),
    "masked_fill": (_A, lambda x: tg.masked_fill(x, x > 1.2, -1.0)),
    "masked_select": (_A, lambda x: tg.masked_select(x, x > 1.2)),
    "sort": (_A, lambda x: tg.sort(x, 1).values),
    "topk": (_A, lambda x: tg.topk(x, 2).values),
    "kthvalue": (_A, lambda x: tg.kthvalue(x, 2).values),
    "mode": (_A, lambda x: tg.mode(x, 0).values),  # (distinct values: the smallest)
    # (differentiable in x only, as PyTorch)
    **{n: (_A, lambda x, n=n: getattr(tg, n)(tg.full((3, 4), 1.5, dtype=tg.float64), x))
       for n in ("igamma", "igammac")},
    "median": (_A, lambda x: tg.median(x) + tg.median(x, 1).values),
    "nanmedian": (_A, lambda x: tg.nanmedian(x) + tg.nanmedian(x, 0, True).values),
    "index_reduce": (_AB, lambda a, b: tg.index_reduce(a, 1, tg.tensor([3, 0, 3]), b[:, :3],
                                                       "mean")),
    "trace": (_A, lambda x: tg.trace(x)),
    # complex parts, through real views (complex gradcheck is the real views' anyway)
    "conj": (_Z, lambda x: tg.view_as_real(tg.view_as_complex(x).conj() * (1 + 2j))),
    "conj_physical": (_Z, lambda x: tg.view_as_real(
        tg.conj_physical(tg.view_as_complex(x)) * (1 + 2j))),
    "real": (_Z, lambda x: tg.view_as_complex(x).exp().real),
    "imag": (_Z, lambda x: (tg.view_as_complex(x) * (2 - 1j)).imag),
    "view_as_real": (_Z, lambda x: tg.view_as_real(tg.view_as_complex(x).sin())),
    "view_as_complex": (_Z, lambda x: tg.view_as_complex(x).abs()),
    "angle": (_Z, lambda x: tg.angle(tg.view_as_complex(x))),
    "sgn": (_Z, lambda x: tg.view_as_real(tg.sgn(tg.view_as_complex(x)))),
    "complex": (_AB, lambda a, b: tg.view_as_real(tg.complex(a, b))),
    "polar": (_AB, lambda a, b: tg.view_as_real(tg.polar(a, b))),
    # -- scans, sets and special functions
    "cumprod": (_A, lambda x: tg.cumprod(x, 1)),
    "cummax": (_A, lambda x: tg.cummax(x, 1).values),
    "cummin": (_A, lambda x: tg.cummin(x, 0).values),
    "logcumsumexp": (_A, lambda x: tg.logcumsumexp(x, 1)),
    "diff": (_A, lambda x: tg.diff(x, 2, 1)),
    "trapezoid": (_AB, lambda y, x: tg.trapezoid(y, x.cumsum(1))),
    "cumulative_trapezoid": (_A, lambda y: tg.cumulative_trapezoid(y, dx=0.5)),
    "kron": (_tensors((2, 3), (3, 2)), tg.kron),
    "tensordot": (_tensors((2, 3, 4), (4, 3)), lambda a, b: tg.tensordot(a, b, ([1, 2], [1, 0]))),
    "cross": (_tensors((4, 3), (4, 3)), lambda a, b: tg.cross(a, b, dim=1)),
    "meshgrid": (_tensors((3,), (4,)), lambda a, b: tg.meshgrid(a, b, indexing="xy")[1]),
    "cartesian_prod": (_tensors((3,), (2,)), tg.cartesian_prod),
    "combinations": (_tensors((4,)), lambda x: tg.combinations(x, 3)),
    "block_diag": (_tensors((2, 2), (3,)), tg.block_diag),
    "cdist": (_tensors((3, 4), (2, 4)), tg.cdist),
    "_grouped_mm": (_tensors((5, 3), (2, 3, 2)),
                    lambda a, b: tg._grouped_mm(a, b, offs=tg.tensor([2, 4], dtype=tg.int32))),
    "lgamma": (_A, tg.lgamma),
    "digamma": (_A, tg.digamma),
    "polygamma": (_A, lambda x: tg.polygamma(2, x)),
    "mvlgamma": (_A, lambda x: tg.mvlgamma(x + 1, 3)),
    "erfinv": (_A, lambda x: tg.erfinv(x / 2.5)),
    "i0": (_A, tg.i0),
    "hypot": (_AB, tg.hypot),
    "logaddexp2": (_AB, tg.logaddexp2),
    **{n: (_A, lambda x, n=n: getattr(tg, n)(x)) for n in (
        "atan", "sinh", "cosh", "asinh", "log2", "log10", "exp2", "erf", "erfc", "sinc")},
    **{n: (_A, lambda x, n=n: getattr(tg, n)(x / 2.5)) for n in ("asin", "acos", "atanh",
                                                                 "logit")},
    "acosh": (_A, lambda x: tg.acosh(x + 1)),
    # -- statistics (composites)
    "nansum": (_A, lambda x: tg.nansum(x.where(x < 1.8, float("nan")), 1)),
    "nanmean": (_A, lambda x: tg.nanmean(x.where(x < 1.8, float("nan")), 0)),
    "aminmax": (_A, lambda x: tg.aminmax(x, dim=1).max),
    "dist": (_AB, lambda a, b: tg.dist(a, b, 3)),
    "cov": (_A, lambda x: tg.cov(x, aweights=tg.tensor([1.0, 2.0, 0.5, 1.5],
                                                       dtype=tg.float64))),
    "corrcoef": (_A, tg.corrcoef),
    "fmax": (_AB, tg.fmax),
    "fmin": (_AB, tg.fmin),
    "frac": (_A, tg.frac),
    "rot90": (_A, lambda x: tg.rot90(x, 1, (1, 0))),
    "broadcast_tensors": (_tensors((3, 1), (1, 4)),
                          lambda a, b: tg.broadcast_tensors(a, b)[0] * b),
    "take": (_A, lambda x: tg.take(x, tg.tensor([[0, 5], [11, -1]]))),
    "take_along_dim": (_A, lambda x: tg.take_along_dim(x, tg.tensor([[0], [2], [3]]), 1)),
    "index_fill": (_A, lambda x: x.index_fill(1, tg.tensor([1, 3]), 0.5)),
    "index_copy": (_AB, lambda a, b: a.index_copy(1, tg.tensor([3, 0]), b[:, :2])),
    "masked_scatter": (_AB, lambda a, b: a.masked_scatter(a > 1.2, b)),
    "inner": (_tensors((2, 3), (4, 3)), tg.inner),
    "matrix_power": (_tensors((3, 3)), lambda a: tg.matrix_power(a + tg.eye(3), -2)),
    "addr": (_tensors((3, 4), (3,), (4,)), lambda i, a, b: tg.addr(i, a, b, alpha=0.5)),
    "addbmm": (_tensors((3, 2), (4, 3, 5), (4, 5, 2)), tg.addbmm),
    "quantile": (_A, lambda x: tg.quantile(x, tg.tensor([0.3, 0.8], dtype=tg.float64), 1)),
    "nanquantile": (_A, lambda x: tg.nanquantile(x.where(x < 1.8, float("nan")), 0.4, 0)),
    "dot": (_tensors((4,), (4,)), tg.dot),
    "vdot": (_tensors((4,), (4,)), tg.vdot),
    "mv": (_tensors((3, 4), (4,)), tg.mv),
    # -- decompositions (square inputs made well conditioned; losses of eigen- and singular
    # vectors invariant to their signs)
    "inverse": (_tensors((3, 3)), lambda a: tg.inverse(a + 3 * tg.eye(3))),
    "det": (_tensors((2, 3, 3)), lambda a: tg.det(a + 3 * tg.eye(3))),
    "logdet": (_tensors((3, 3)), lambda a: tg.logdet(a + 3 * tg.eye(3))),
    "slogdet": (_tensors((3, 3)), lambda a: tg.slogdet(a + 3 * tg.eye(3)).logabsdet),
    "cholesky": (_tensors((3, 3)), lambda a: tg.cholesky(a @ a.mT + tg.eye(3))),
    "cholesky_solve": (_tensors((3, 3), (3, 2)),
                       lambda a, b: tg.cholesky_solve(b, a.tril() + 3 * tg.eye(3))),
    "qr": (_tensors((4, 3)), lambda a: tg.qr(a)),
    "svd": (_tensors((4, 3)), lambda a: (lambda U, S, V: (U @ V.mT, S))(*tg.svd(a))),
    "pinverse": (_tensors((4, 3)), tg.pinverse),
    "triangular_solve": (_tensors((3, 3), (3, 2)),
                         lambda a, b: tg.triangular_solve(b, a + 3 * tg.eye(3)).solution),
    "matrix_exp": (_tensors((3, 3)), tg.matrix_exp),
    "lobpcg": (_tensors((6, 6)), lambda a: (lambda E, X: (E, X * X))(
        *tg.lobpcg(a @ a.mT, k=2))),
    # -- stacking, signal, legacy linalg (top-level torch functions)
    **{n: (_tensors((3,), (3,)), lambda a, b, n=n: getattr(tg, n)([a, b]))
       for n in ("hstack", "vstack", "row_stack", "dstack", "column_stack")},
    **{n: (_tensors((3,)), lambda x, n=n: getattr(tg, n)(x)) for n in ("atleast_1d",
                                                                      "atleast_2d",
                                                                      "atleast_3d")},
    "vander": (_tensors((3,)), lambda x: tg.vander(x, 4)),
    "fill": (_tensors((3, 4), ()), lambda x, v: tg.fill(x, v) * x),
    "stft": (_tensors((10,), (4,)), lambda x, w: tg.view_as_real(
        tg.stft(x, 4, hop_length=2, window=w, return_complex=True))),
    "istft": (_tensors((3, 4, 2)), lambda z: tg.istft(
        tg.view_as_complex(z), 4, hop_length=2, window=tg.hann_window(4, dtype=tg.float64))),
    "lu_unpack": (_A, lambda a: (lambda P, L, U: L @ U)(
        *tg.lu_unpack(a, tg.tensor([2, 3, 3], dtype=tg.int32)))),
    "lu_solve": (_tensors((3, 3), (3, 2)), lambda a, b: tg.lu_solve(
        b, a + 3 * tg.eye(3), tg.tensor([1, 2, 3], dtype=tg.int32))),
    "lu": (_tensors((3, 4)), lambda a: tg.lu(a)[0]),
    # -- householder products, numerical gradient
    "orgqr": (_tensors((4, 3), (2,)), tg.orgqr),
    "ormqr": (_tensors((4, 3), (3,), (4, 2)), lambda a, t, c: tg.ormqr(a, t, c, transpose=True)),
    "gradient": (_tensors((3, 4), (4,)), lambda y, x: tg.gradient(
        y, spacing=[x.cumsum(0)], dim=1, edge_order=2)[0]),
    "chain_matmul": (_tensors((2, 3), (3, 4), (4, 2)), tg.chain_matmul),
    "nuclear_norm": (_A, tg.nuclear_norm),
    "frobenius_norm": (_tensors((2, 3, 4)), lambda x: tg.frobenius_norm(x, (0, 2))),
    "cholesky_inverse": (_tensors((3, 3)), lambda a: tg.cholesky_inverse(a.tril() + 3 * tg.eye(3))),
    # (a full-rank sketch, reseeded each call: the exact singular values, deterministically)
    "svd_lowrank": (_A, lambda a: (tg.manual_seed(0), tg.svd_lowrank(a, q=3)[1])[1]),
    "pca_lowrank": (_A, lambda a: (tg.manual_seed(0), tg.pca_lowrank(a, q=3)[1])[1]),
    # tests/autograd/test_ops_api_surface.py holds these ops' detailed checks
    **{n: (_A, lambda x, n=n: getattr(tg, n)(x)) for n in (
        "square", "deg2rad", "rad2deg", "ravel", "adjoint", "msort", "diagflat", "resolve_conj",
        "resolve_neg")},
    **{n: (_AB, lambda a, b, n=n: getattr(tg, n)(a, b)) for n in (
        "copysign", "ldexp", "float_power", "nextafter")},
    "frexp": (_A, lambda x: tg.frexp(x * 3).mantissa),
    "renorm": (_A, lambda x: tg.renorm(x, 2, 0, 2.0)),
    "narrow_copy": (_A, lambda x: tg.narrow_copy(x, 1, 1, 2)),
    **{n: (_A, lambda x, n=n: getattr(tg, n)(x.reshape(2, 2, 3), [1])[1]) for n in (
        "hsplit", "vsplit", "dsplit")},
    "select_scatter": (_tensors((3, 4), (3,)), lambda a, s: tg.select_scatter(a, s, 1, 2)),
    "slice_scatter": (_tensors((3, 4), (3, 2)),
                      lambda a, s: tg.slice_scatter(a, s, 1, 0, None, 2)),
    "diagonal_scatter": (_tensors((3, 4), (2,)), lambda a, s: tg.diagonal_scatter(a, s, -1)),
    "as_strided_scatter": (_tensors((3, 4), (2,)),
                           lambda a, s: tg.as_strided_scatter(a, s, (2,), (5,), 1)),
    "put": (_tensors((3, 4), (3,)), lambda a, s: tg.put(a, tg.tensor([1, -1, 5]), s)),
    "fill_": (_tensors((3, 4), ()), lambda a, v: tg.fill_(a * 1, v)),
    # autograd/ops/copies.py and native.py (tests/test_api_gaps_17.py checks their values)
    **{n: (_A, fn) for n, fn in {
        "view_copy": lambda x: tg.view_copy(x, (4, 3)),
        "permute_copy": lambda x: tg.permute_copy(x, (1, 0)),
        "transpose_copy": lambda x: tg.transpose_copy(x, 0, 1),
        "t_copy": tg.t_copy,
        "expand_copy": lambda x: tg.expand_copy(x, (2, 3, 4)),
        "unsqueeze_copy": lambda x: tg.unsqueeze_copy(x, 1),
        "squeeze_copy": lambda x: tg.squeeze_copy(x.unsqueeze(0), 0),
        "select_copy": lambda x: tg.select_copy(x, 1, 2),
        "slice_copy": lambda x: tg.slice_copy(x, 1, 0, None, 2),
        "split_copy": lambda x: tg.split_copy(x, 3, 1)[1],
        "split_with_sizes_copy": lambda x: tg.split_with_sizes_copy(x, [1, 3], 1)[1],
        "unbind_copy": lambda x: tg.unbind_copy(x, 1)[2],
        "diagonal_copy": tg.diagonal_copy,
        "as_strided_copy": lambda x: tg.as_strided_copy(x, (2, 2), (1, 2), 1),
        "alias_copy": tg.alias_copy,
        "unfold_copy": lambda x: tg.unfold_copy(x, 1, 2, 1),
        "native_layer_norm": lambda x: tg.native_layer_norm(x, [4], None, None, 1e-5),
        "native_batch_norm": lambda x: tg.native_batch_norm(x, None, None, None, None, True,
                                                            0.1, 1e-5),
        "native_group_norm": lambda x: tg.native_group_norm(x.reshape(3, 4, 1), None, None, 3,
                                                            4, 1, 2, 1e-5),
        "native_dropout": lambda x: tg.native_dropout(x, 0.5, False),
        "segment_reduce": lambda x: tg.segment_reduce(x.reshape(-1), "prod",
                                                      lengths=tg.tensor([5, 0, 7])),
    }.items()},
    "view_as_real_copy": (_Z, lambda x: tg.view_as_real_copy(tg.view_as_complex(x).sin())),
    "view_as_complex_copy": (_Z, lambda x: tg.view_as_complex_copy(x).abs()),
    # (a scale far below the finite-difference step hides the rounding; x / 1e-12 > 2**40 for
    # some elements, so the straight-through gradient is checked where it clamps too)
    **{n: (_A, fn) for n, fn in {
        "fake_quantize_per_tensor_affine":
            lambda x: tg.fake_quantize_per_tensor_affine(x, 1e-12, 0, -2 ** 40, 2 ** 40),
        "fake_quantize_per_channel_affine": lambda x: tg.fake_quantize_per_channel_affine(
            x, tg.full((4,), 1e-12), tg.zeros(4, dtype=tg.int32), 1, -2 ** 40, 2 ** 40),
        "_fake_quantize_learnable_per_tensor_affine":
            lambda x: tg._fake_quantize_learnable_per_tensor_affine(
                x, tg.tensor([1e-12]), tg.tensor([0.0]), -2 ** 40, 2 ** 40),
        "_fake_quantize_learnable_per_channel_affine":
            lambda x: tg._fake_quantize_learnable_per_channel_affine(
                x, tg.full((4,), 1e-12), tg.zeros(4), 1, -2 ** 40, 2 ** 40),
    }.items()},
}
DIFFERENTIABLE = sorted({r.name for r in ROWS if r.function and r.grad not in ("none", "0", "")})
# whether forward-mode AD goes through the op (the table's "forward AD" column)
FORWARD_AD = {r.name: r.forward_ad == "yes" for r in ROWS if r.name in DIFFERENTIABLE}


def test_every_differentiable_op_has_a_gradient_check():
    assert set(DIFFERENTIABLE) == set(GRAD_CASES)


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_gradients_match_finite_differences(name):
    """First and second derivatives (gradcheck, gradgradcheck: float64 central differences)
    of every differentiable op, through its table's function, and both as batched gradients
    (one backward for a batch of grad_outputs, against one backward each); where the table
    says forward AD goes through the op, its forward-mode Jacobian and forward-over-reverse
    too."""
    make, fn = GRAD_CASES[name]

    def first(*xs):  # ops returning a tuple (std_mean) are checked through their first
        out = fn(*xs)
        return out[0] if isinstance(out, tuple) else out
    forward = FORWARD_AD[name]
    assert tg.autograd.gradcheck(first, make(), check_batched_grad=True,
                                 check_forward_ad=forward)
    assert tg.autograd.gradgradcheck(first, make(), check_batched_grad=True,
                                     check_fwd_over_rev=forward)
