"""The op tables (autograd/registry.py) are the one source of tritongrad's op names: the
package namespace, Tensor's methods and operators, the profiler's FLOP rules and docs/ops.md
must all say what the tables say."""

from __future__ import annotations

import pathlib

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
