"""tritongrad.fx against torch.fx: the same programs traced by both print the same graph and
generate the same code (function targets compared by name: ``torch._C._nn.gelu`` and
``tritongrad.nn.functional.gelu`` are both ``gelu``). The torch tests skip without torch;
the larger program is also checked without it, against the eager module."""

from __future__ import annotations

import pytest

import tritongrad as tg
import tritongrad.fx as fx
from tritongrad import nn

from test_fx import MLP, _close


# -- against torch.fx ----------------------------------------------------------------------

def _torch_twin():
    torch = pytest.importorskip("torch")

    class TMLP(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = torch.nn.Linear(5, 7)
            self.fc2 = torch.nn.Linear(7, 3)

        def forward(self, x):
            return self.fc2(torch.relu(self.fc1(x))).softmax(-1)

    return torch, TMLP


def _strip(s: str, *prefixes: str) -> str:
    for p in prefixes:
        s = s.replace(p, "<mod>.")
    return s


def test_against_torch_fx_same_graph_text_and_code():
    torch, TMLP = _torch_twin()
    ours = fx.symbolic_trace(MLP())
    theirs = torch.fx.symbolic_trace(TMLP())
    assert _strip(str(ours.graph), "tritongrad.") == _strip(str(theirs.graph), "torch.")
    assert _strip(ours.code, "tritongrad.") == _strip(theirs.code, "torch.")

    def f(x, y):
        a, b = x.chunk(2)
        h = (a * 2 - y).view(-1)[1:] @ b.view(-1)[1:]
        return {"h": h + 1, "n": x.shape[0], "t": (-h, 2 ** h)}

    ours = fx.symbolic_trace(f)
    g_ours = ours.graph

    def tf(x, y):
        a, b = x.chunk(2)
        h = (a * 2 - y).view(-1)[1:] @ b.view(-1)[1:]
        return {"h": h + 1, "n": x.shape[0], "t": (-h, 2 ** h)}

    g_theirs = torch.fx.symbolic_trace(tf).graph
    assert [(n.op, n.name) for n in g_ours.nodes] == [(n.op, n.name) for n in g_theirs.nodes]
    assert _strip(str(g_ours), "tritongrad.") == _strip(str(g_theirs), "torch.")


def test_against_torch_fx_concrete_args_and_sequential_names():
    torch, _ = _torch_twin()

    class TB(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.seq = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU())

        def forward(self, x, flag=True):
            return self.seq(x) if flag else x

    class B(nn.Module):
        def __init__(self):
            super().__init__()
            self.seq = nn.Sequential(nn.Linear(3, 3), nn.ReLU())

        def forward(self, x, flag=True):
            return self.seq(x) if flag else x

    ours = fx.symbolic_trace(B(), concrete_args={"flag": True})
    theirs = torch.fx.symbolic_trace(TB(), concrete_args={"flag": True})
    def key(n):
        return (n.op, n.name, n.target.__name__ if callable(n.target) else n.target,
                str(n.args))
    ours_nodes = [key(n) for n in ours.graph.nodes]
    their_nodes = [key(n) for n in theirs.graph.nodes]
    assert ours_nodes == their_nodes
    sig = ours.code.splitlines()[3]
    assert sig == theirs.code.splitlines()[3] == "def forward(self, x, flag_1 = True):"

def _big_program(T, nn):
    """The same module for tritongrad and torch (``T``/``nn`` the library's modules)."""
    class Big(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 4)
            self.w = nn.Parameter(T.ones(4))
            self.register_buffer("b", T.zeros(4))
            self.conv = nn.Conv2d(1, 2, 3)
            self.bn = nn.BatchNorm2d(2)
            self.seq = nn.Sequential(nn.ReLU(), nn.Sequential(nn.Tanh()))

        def forward(self, x, img, flag=True, y=None, *, k=2):
            h = self.lin(x) + self.w + self.b
            h = T.relu(h) * 2
            a, b = h.chunk(2, dim=-1)
            h = T.cat([a, b], -1).view(-1, 2)[0, 1:]
            h = nn.functional.gelu(h, approximate="tanh")
            z = self.seq(self.bn(self.conv(img))).flatten(1).mean()
            if flag:
                h = h + 1
            h = h.clamp(min=0.1) ** 2 - k
            return {"a": h, "n": h.shape[0], "t": (h, z, x.size(1))}
    return Big()


def _normalize(text: str) -> str:
    """Function targets by their last name only (``torch._C._nn.gelu`` and
    ``tritongrad.nn.functional.gelu`` both ``gelu``)."""
    import re
    text = re.sub(r"target=[\w.]+\.(\w+)\]", r"target=\1]", text)
    return re.sub(r"= (?:torch|tritongrad)[\w.]*\.(\w+)\(", r"= \1(", text)


def test_against_torch_fx_a_larger_program_prints_the_same():
    torch = pytest.importorskip("torch")
    ours = fx.symbolic_trace(_big_program(tg, nn), concrete_args={"flag": True})
    theirs = torch.fx.symbolic_trace(_big_program(torch, torch.nn),
                                     concrete_args={"flag": True})
    assert _normalize(str(ours.graph)) == _normalize(str(theirs.graph))
    assert _normalize(ours.code) == _normalize(theirs.code)
    # and both GraphModules compute what their module does
    m = _big_program(tg, nn).eval()
    gm = fx.symbolic_trace(m, concrete_args={"flag": True})
    x, img = tg.randn(2, 3), tg.randn(1, 1, 5, 5)
    out, ref = gm(x, img, True, None, 3), m(x, img, True, None, k=3)
    _close(out["a"], ref["a"])
    _close(out["t"][1], ref["t"][1])
    assert out["n"] == ref["n"] and out["t"][2] == ref["t"][2] == 3


def test_a_larger_program_without_torch():
    m = _big_program(tg, nn).eval()
    gm = fx.symbolic_trace(m, concrete_args={"flag": True})
    phs = [(n.target, n.args) for n in gm.graph.nodes if n.op == "placeholder"]
    assert phs == [("x", ()), ("img", ()), ("flag_1", (True,)), ("y", (None,)), ("k", (2,))]
    assert "def forward(self, x, img, flag_1 = True, y = None, k = 2):" in gm.code
    x, img = tg.randn(2, 3), tg.randn(1, 1, 5, 5)
    out, ref = gm(x, img), m(x, img)
    _close(out["a"], ref["a"])
    _close(out["t"][1], ref["t"][1])


def test_against_torch_fx_type_annotations():
    torch = pytest.importorskip("torch")
    from torch.fx.annotate import annotate as t_annotate

    from tritongrad.fx.annotate import annotate

    def ours(x: tg.Tensor, n: int = 2) -> tg.Tensor:
        return annotate(x.sum(), float) * n

    def theirs(x: torch.Tensor, n: int = 2) -> torch.Tensor:
        return t_annotate(x.sum(), float) * n

    # (this file's annotations are strings: ``from __future__ import annotations``)
    ours.__annotations__ = {"x": tg.Tensor, "n": int, "return": tg.Tensor}
    theirs.__annotations__ = {"x": torch.Tensor, "n": int, "return": torch.Tensor}
    a, b = fx.symbolic_trace(ours), torch.fx.symbolic_trace(theirs)
    assert str(a.graph).replace("tritongrad.", "torch.") == str(b.graph)
    assert a.code.replace("tritongrad.", "torch.") == b.code
