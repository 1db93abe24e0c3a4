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
        registry.install({"a": (row,), "b": (row,)}, type("T", (), {}))


def test_unknown_flop_rule_is_refused():
    with pytest.raises(ValueError, match="flops must be one of"):
        registry.OpInfo("f", len, flops="cubic")


@pytest.mark.parametrize("row", [r for r in ROWS if r.flops], ids=lambda r: r.name)
def test_flops_come_from_the_table(row):
    shapes = [(2, 3), (3, 4)] if row.flops == "matmul" else [(2, 3), (3,)]
    expected = {"matmul": 2 * 2 * 3 * 4, "elementwise": 6, "reduction": 6}[row.flops]
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
                     "nan_to_num"], lambda: ()),
    **dict.fromkeys(["add", "sub", "mul", "div", "pow", "floor_divide", "remainder"],
                    lambda: (_f(3, 4, seed=1),)),
    **dict.fromkeys(["bitwise_and", "bitwise_or", "bitwise_xor"], lambda: (_i(3, 4, seed=1),)),
    "clamp": lambda: (0.8, 1.5),
    "lerp": lambda: (_f(3, 4, seed=1), 0.25),
    "addcmul": lambda: (_f(3, 4, seed=1), _f(4, seed=2)),
    "addcdiv": lambda: (_f(3, 4, seed=1), _f(4, seed=2)),
    "addmm": lambda: (_f(3, 5, seed=1), _f(5, 4, seed=2)),
    "addmv": lambda: (_f(3, 4, seed=1), _f(4, seed=2)),
    "baddbmm": lambda: (_f(3, 3, 5, seed=1), _f(3, 5, 4, seed=2)),
    "scatter": lambda: (1, tg.tensor([[0, 2], [1, 3], [3, 0]]), _f(3, 2, seed=1)),
    "scatter_add": lambda: (1, tg.tensor([[0, 2], [1, 1], [3, 0]]), _f(3, 2, seed=1)),
    "index_put": lambda: ((tg.tensor([0, 2]), tg.tensor([1, 3])), _f(2, seed=1)),
    "masked_fill": lambda: (_f(3, 4, seed=1) > 1.2, -1.0),
    "index_add": lambda: (0, tg.tensor([2, 0]), _f(2, 4, seed=1)),
    "scatter_reduce": lambda: (1, tg.tensor([[0, 0], [1, 3], [3, 3]]), _f(3, 2, seed=1),
                               "amax"),
}
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
    x = _i(3, 4) if row.name.startswith("bitwise") else _f(*IN_PLACE_SHAPE.get(row.name, (3, 4)))
    expected = row.fn(x, *args)
    target = x.clone()
    version = target._version
    assert row.inplace(target, *args) is target
    assert target._version > version
    assert target.dtype is expected.dtype
    np.testing.assert_allclose(target.numpy(), expected.numpy(), rtol=1e-15, atol=0)
