"""Session 38's torch.fx sweep against torch 2.13: the generated code's global names and
``wrap`` prologue, functionals recorded with PyTorch's keyword arguments, ``abs`` of a Proxy,
``Graph.call_function(name=)``, ``lint``'s message for a foreign argument and
``print_readable``'s verbose form. Expected text is written out here; torch.fx is compared
where installed (the same programs, ``tritongrad`` read as ``torch``)."""

from __future__ import annotations

import math
import operator

import numpy as np
import pytest

import tritongrad as tg
import tritongrad.fx as fx
from tritongrad.fx.passes.shape_prop import ShapeProp

from helpers import host


def leaf_fn38(x, k):  # wrapped: recorded as one call_function node
    return x * k + 1


fx.wrap("leaf_fn38")

_MOD = __name__.replace(".", "_")  # (the module's name, as the generated global spells it)
_X = (np.arange(12, dtype=np.float32).reshape(3, 4) / 7 - 0.5)


def _as_torch(s: str) -> str:
    return s.replace("tritongrad", "torch")


def _uses_wrapped(x):
    return leaf_fn38(x, 3) - 1


def _uses_math(x):
    return x * math.sqrt(x.size(0))


def _functionals(lib):
    F = lib.nn.functional

    def f(x):
        a = F.relu(x) + F.softmax(x, 1) + F.dropout(x, 0.1, training=False)
        b = F.max_pool2d(x[None], 2) + F.layer_norm(x, (4,)).sum()
        return a, b, F.cross_entropy(x, x.softmax(-1))
    return f


def test_wrapped_function_global_name_and_prologue():
    gm = fx.symbolic_trace(_uses_wrapped)
    assert gm.code == (f'\ntritongrad.fx._symbolic_trace.wrap("{_MOD}_leaf_fn38")\n\n'
                       f"def forward(self, x):\n"
                       f"    leaf_fn38 = {_MOD}_leaf_fn38(x, 3);  x = None\n"
                       f"    sub = leaf_fn38 - 1;  leaf_fn38 = None\n    return sub\n    ")
    x = tg.tensor(_X)
    np.testing.assert_allclose(host(gm(x)), _X * 3, rtol=1e-6, atol=1e-6)
    # the prologue registers the global again: tracing the GraphModule keeps the call
    again = fx.symbolic_trace(gm)
    calls = [n for n in again.graph.nodes if n.op == "call_function"]
    assert calls[0].target is leaf_fn38 and calls[0].meta.get("is_wrapped")
    np.testing.assert_allclose(host(again(x)), _X * 3, rtol=1e-6, atol=1e-6)


def test_autowrapped_math_and_abs_globals():
    gm = fx.symbolic_trace(_uses_math)
    assert "sqrt = math_sqrt(size);  size = None" in gm.code
    assert 'wrap("math_sqrt")' in gm.code
    np.testing.assert_allclose(host(gm(tg.tensor(_X))), _X * math.sqrt(3), rtol=1e-6)

    gm = fx.symbolic_trace(lambda x: abs(x) + 1)
    (node,) = [n for n in gm.graph.nodes if n.target is operator.abs]
    assert "abs_1 = _operator_abs(x);  x = None" in gm.code
    np.testing.assert_allclose(host(gm(tg.tensor(_X))), np.abs(_X) + 1, rtol=1e-6)


def test_functionals_record_pytorchs_keywords():
    f = _functionals(tg)
    gm = fx.symbolic_trace(f)
    code = gm.code
    for line in ("relu = tritongrad.nn.functional.relu(x, inplace = False)",
                 "softmax = tritongrad.nn.functional.softmax(x, dim = 1, _stacklevel = 3, "
                 "dtype = None)",
                 "dropout = tritongrad.nn.functional.dropout(x, p = 0.1, training = False, "
                 "inplace = False)",
                 "max_pool2d = tritongrad.nn.functional.max_pool2d(getitem, 2, stride = None, "
                 "padding = 0, dilation = 1, ceil_mode = False, return_indices = False)",
                 "layer_norm = tritongrad.nn.functional.layer_norm(x, (4,), weight = None, "
                 "bias = None, eps = 1e-05)"):
        assert line in code, line
    sm = next(n for n in gm.graph.nodes if n.name == "softmax")
    assert sm.args == (next(iter(gm.graph.nodes)),) and sm.kwargs["dim"] == 1
    x = tg.tensor(_X)
    for got, want in zip(gm(x), f(x)):
        np.testing.assert_allclose(host(got), host(want), rtol=1e-6, atol=1e-6)
    # a call that does not bind (a wrong keyword) is recorded as written
    g = fx.symbolic_trace(lambda x: tg.nn.functional.relu(x, bogus=1)).graph
    assert [n.kwargs for n in g.nodes if n.op == "call_function"] == [{"bogus": 1}]


def test_graph_call_function_name_and_lint_message():
    g = fx.Graph()
    x = g.placeholder("input")
    y = g.call_function(operator.add, (x, 1), name="for")
    g.output(g.call_function(operator.add, (y, 1), name="list"))
    gm = fx.GraphModule(tg.nn.Module(), g)
    assert gm.code == ("\n\n\ndef forward(self, input):\n    input_1 = input\n"
                       "    for_1 = input_1 + 1;  input_1 = None\n"
                       "    list_1 = for_1 + 1;  for_1 = None\n    return list_1\n    ")
    assert gm(tg.tensor(1.0)).item() == 3.0

    other = fx.Graph()
    z = other.placeholder("z")
    y.args = (z, 1)
    with pytest.raises(RuntimeError, match="Argument 'z' of Node 'for_1' does not belong to "
                                           "this Graph, but was used as an argument!"):
        g.lint()


class _Net(tg.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = tg.nn.Linear(4, 4)

    def forward(self, x):
        return (self.lin(x) + 1).sum(0)


def test_print_readable_verbose_form():
    gm = fx.symbolic_trace(_Net())
    inner = fx.Graph()
    inner.output(inner.placeholder("y"))
    gm.inner = fx.GraphModule(tg.nn.Module(), inner)
    want = ("class _Net(tritongrad.nn.Module):\n"
            "    def forward(self, x):\n"
            "        # No stacktrace found for following nodes\n"
            "        lin = self.lin(x);  x = None\n"
            "        add = lin + 1;  lin = None\n"
            "        sum_1 = add.sum(0);  add = None\n"
            "        return sum_1\n"
            "\n"
            "    class inner(tritongrad.nn.Module):\n"
            "        def forward(self, y):\n"
            "            return y\n")
    assert gm.print_readable(print_output=False) == want
    del gm.inner
    ShapeProp(gm).propagate(tg.tensor(_X))
    text = gm.print_readable(print_output=False)
    assert 'def forward(self, x: "f32[3, 4]"):' in text
    assert 'add: "f32[3, 4]" = lin + 1;  lin = None' in text
    assert 'sum_1: "f32[4]" = add.sum(0);  add = None' in text
    # a node with a recorded stack trace: its line, then a blank line before the next run
    nodes = list(gm.graph.nodes)
    nodes[2].stack_trace = '  File "/a/b.py", line 3, in f\n    y = x + 1\n'
    text = gm.print_readable(print_output=False)
    assert ("        lin: \"f32[3, 4]\" = self.lin(x);  x = None\n\n"
            "        # File: /a/b.py:3 in f, code: y = x + 1\n"
            "        add: ") in text
    assert "# No stacktrace" not in gm.code  # (the plain code has neither)


def test_against_torch_fx_code_and_readable_text():
    torch = pytest.importorskip("torch")
    ours = fx.symbolic_trace(_functionals(tg))
    theirs = torch.fx.symbolic_trace(_functionals(torch))
    assert _as_torch(ours.code) == theirs.code
    assert _as_torch(str(ours.graph)) == str(theirs.graph)

    class TNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x):
            return (self.lin(x) + 1).sum(0)
    TNet.__name__ = "_Net"
    from torch.fx.passes.shape_prop import ShapeProp as TShapeProp
    tgm = torch.fx.symbolic_trace(TNet())
    TShapeProp(tgm).propagate(torch.tensor(_X))
    gm = fx.symbolic_trace(_Net())
    ShapeProp(gm).propagate(tg.tensor(_X))
    assert _as_torch(gm.print_readable(print_output=False)) == \
        tgm.print_readable(print_output=False)

    def tf(x):
        return abs(x) * math.sqrt(x.size(0))
    assert _as_torch(fx.symbolic_trace(tf).code) == torch.fx.symbolic_trace(tf).code


class _Saved(tg.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = tg.nn.Linear(4, 4)
        self.act = tg.nn.ReLU()
        self.register_buffer("b", tg.ones(4))
        self.p = tg.nn.Parameter(tg.full((4,), 3.0))

    def forward(self, x):
        return self.act(self.lin(x) + self.b) * self.p


def test_to_folder_writes_an_importable_module(tmp_path, monkeypatch):
    import importlib
    m = _Saved()
    gm = fx.symbolic_trace(m)
    with pytest.warns(UserWarning, match="saved as pickled files instead: \\['act'\\]"):
        gm.to_folder(tmp_path / "saved_fx38", "Foo")
    assert sorted(p.name for p in (tmp_path / "saved_fx38").iterdir()) == \
        ["__init__.py", "act.pt", "module.py", "state_dict.pt"]
    src = (tmp_path / "saved_fx38" / "module.py").read_text()
    assert "setattr(self, 'lin', Linear(in_features=4, out_features=4, bias=True))" in src
    monkeypatch.syspath_prepend(str(tmp_path))
    foo = importlib.import_module("saved_fx38").Foo()
    x = tg.tensor(_X)
    np.testing.assert_allclose(host(foo(x)), host(m(x)), rtol=1e-6)
    assert [n for n, _ in foo.named_children()] == ["lin", "act"]
