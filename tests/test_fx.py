"""tritongrad.fx: symbolic tracing, the Graph/Node API, generated code and GraphModule. Values
are checked against the eager module (and NumPy float64 for an MLP), gradients through the
GraphModule against the eager module's and finite differences. The passes are tested in
test_fx_passes.py, the comparisons with torch.fx in test_fx_vs_torch.py."""

from __future__ import annotations

import copy
import math
import operator
import pickle

from math import sqrt

import numpy as np
import pytest

import tritongrad as tg
import tritongrad.fx as fx
from tritongrad import nn

from helpers import host, numeric_grads


def my_clamp_sum(x, lo):  # wrapped below: traced as one call_function node
    return x.clamp(min=lo).sum() if float(x.abs().max().item()) > 0 else x.sum()


fx.wrap("my_clamp_sum")


def scale_by_width(x):  # not traceable (int of a Proxy): given as autowrap_functions
    return int(x.shape[1]) * x


def _close(a, b, atol=1e-5):
    np.testing.assert_allclose(host(a), host(b), atol=atol, rtol=1e-5)


# -- models -----------------------------------------------------------------------------------

class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(5, 7)
        self.fc2 = nn.Linear(7, 3)

    def forward(self, x):
        return self.fc2(tg.relu(self.fc1(x))).softmax(-1)


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(4)
        self.block = nn.Sequential(nn.Conv2d(4, 6, 3), nn.BatchNorm2d(6), nn.ReLU())
        self.head = nn.Linear(6, 2)

    def forward(self, x):
        h = nn.functional.relu(self.bn1(self.conv1(x)))
        h = self.block(h)
        return self.head(h.mean((2, 3)))


class WithParams(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(tg.randn(4, 3))
        self.register_buffer("scale", tg.tensor([2.0, 3.0, 4.0]))
        self.sub = nn.Module()
        self.sub.b = nn.Parameter(tg.randn(3))

    def forward(self, x):
        return (x @ self.w + self.sub.b) * self.scale


class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x, mode: str = "relu", times=1):
        h = self.lin(x)
        for _ in range(times):
            h = tg.relu(h) if mode == "relu" else tg.tanh(h)
        return h

# -- tracing: structure of the graph ---------------------------------------------------------

def test_mlp_graph_nodes_code_and_values_against_numpy():
    m = MLP()
    gm = fx.symbolic_trace(m)
    nodes = list(gm.graph.nodes)
    assert [(n.op, n.name) for n in nodes] == [
        ("placeholder", "x"), ("call_module", "fc1"), ("call_function", "relu"),
        ("call_module", "fc2"), ("call_method", "softmax"), ("output", "output")]
    assert nodes[2].target is tg.relu and nodes[4].target == "softmax"
    assert nodes[4].args == (nodes[3], -1) and nodes[1].args == (nodes[0],)
    assert nodes[0].users == {nodes[1]: None} and nodes[4].all_input_nodes == [nodes[3]]
    assert "relu = tritongrad.relu(fc1);  fc1 = None" in gm.code
    assert "softmax = fc2.softmax(-1);  fc2 = None" in gm.code
    x = tg.randn(4, 5)
    out = gm(x)
    # float64 NumPy reference written from the definitions
    xs = host(x).astype(np.float64)
    w1, b1 = host(m.fc1.weight), host(m.fc1.bias)
    w2, b2 = host(m.fc2.weight), host(m.fc2.bias)
    z = np.maximum(xs @ w1.T + b1, 0) @ w2.T + b2
    ref = np.exp(z - z.max(-1, keepdims=True))
    ref /= ref.sum(-1, keepdims=True)
    np.testing.assert_allclose(host(out), ref, atol=1e-5)
    assert type(gm).__name__ == "MLP" and isinstance(gm, fx.GraphModule)


def test_str_of_graph_is_pytorchs_format():
    gm = fx.symbolic_trace(MLP())
    lines = str(gm.graph).splitlines()
    assert lines[0] == "graph():"
    assert lines[1] == "    %x : [num_users=1] = placeholder[target=x]"
    assert lines[2] == ("    %fc1 : [num_users=1] = call_module[target=fc1](args = (%x,), "
                        "kwargs = {})")
    assert lines[3] == ("    %relu : [num_users=1] = call_function[target=tritongrad.relu]"
                        "(args = (%fc1,), kwargs = {})")
    assert lines[-1] == "    return softmax"
    assert gm.code.startswith("\n\n\ndef forward(self, x):\n")


def test_conv_bn_net_leaf_modules_outputs_and_gradients():
    m = ConvNet()
    gm = fx.symbolic_trace(m)
    targets = [n.target for n in gm.graph.nodes if n.op == "call_module"]
    # tritongrad.nn layers are leaves; Sequential is traced through
    assert targets == ["conv1", "bn1", "block.0", "block.1", "block.2", "head"]
    assert 'getattr(self.block, "0")' in gm.code
    x = tg.randn(2, 3, 6, 6)
    for mode in ("train", "eval"):
        getattr(m, mode)()
        gm = fx.symbolic_trace(m)
        m2 = copy.deepcopy(m)
        xe = x.clone().requires_grad_(True)
        xg = x.clone().requires_grad_(True)
        ye, yg = m2(xe), gm(xg)
        _close(ye, yg)
        ye.square().sum().backward()
        yg.square().sum().backward()
        _close(xe.grad, xg.grad, atol=1e-4)
        _close(m2.conv1.weight.grad, m.conv1.weight.grad, atol=1e-4)
        # the GraphModule shares the module's parameters and buffers
        assert gm.conv1 is m.conv1
        assert getattr(gm.block, "1").running_mean is m.block[1].running_mean
        m.zero_grad()


def test_parameters_and_buffers_become_get_attr_and_gradients_match_finite_differences():
    tg.manual_seed(0)
    m = WithParams()
    gm = fx.symbolic_trace(m)
    gets = [n.target for n in gm.graph.nodes if n.op == "get_attr"]
    assert gets == ["w", "sub.b", "scale"]
    assert "w = self.w" in gm.code and "sub_b = self.sub.b" in gm.code
    assert gm.get_parameter("sub.b") is m.sub.b and "scale" in dict(gm.named_buffers())
    x = tg.randn(2, 4, dtype=tg.float64)
    m64 = copy.deepcopy(m).double()
    gm64 = fx.symbolic_trace(m64)
    xg = x.clone().requires_grad_(True)
    gm64(xg).sum().backward()
    (num,) = numeric_grads(lambda t: gm64(t), [x])
    np.testing.assert_allclose(host(xg.grad), num, atol=1e-6)
    num_w = numeric_grads(lambda w: (x @ w + m64.sub.b.detach()) * m64.scale, [m64.w.detach()])
    np.testing.assert_allclose(host(m64.w.grad), num_w[0], atol=1e-6)


def test_plain_tensor_attribute_and_constant_become_get_attr():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.table = tg.arange(3.0)

        def forward(self, x):
            return x + self.table + tg.ones(3)

    m = M()
    gm = fx.symbolic_trace(m)
    gets = [n.target for n in gm.graph.nodes if n.op == "get_attr"]
    assert gets == ["table", "_tensor_constant0"]
    x = tg.randn(3)
    _close(gm(x), x + tg.arange(3.0) + 1)
    assert "_tensor_constant0" in dict(gm.named_buffers())


def test_tensor_methods_operators_getitem_and_getattr_are_recorded():
    def f(x, y):
        a = x.view(-1, 2)[0] * 2 - y.sum(dim=0, keepdim=True)
        b = -a / 3 + 2 ** a
        n = x.shape[0]
        return (a @ b.t()).exp(), n, x.size(1)

    gm = fx.symbolic_trace(f)
    ops = [(n.op, n.target if isinstance(n.target, str) else n.target.__name__)
           for n in gm.graph.nodes]
    assert ("call_method", "view") in ops and ("call_function", "getitem") in ops
    assert ("call_function", "neg") in ops and ("call_function", "pow") in ops
    assert ("call_function", "getattr") in ops and ("call_function", "matmul") in ops
    pw = next(n for n in gm.graph.nodes if n.target is operator.pow)
    assert pw.args[0] == 2  # reflected: 2 ** a
    assert "getattr_1 = x.shape" in gm.code and "getitem_1 = getattr_1[0]" in gm.code
    x, y = tg.randn(4, 2), tg.randn(3, 2)
    out, n, s1 = gm(x, y)
    ref, rn, rs1 = f(x, y)
    _close(out, ref)
    assert n == rn == 4 and s1 == rs1 == 2


def test_functional_calls_keyword_arguments_and_containers():
    def f(x, ys):
        h = nn.functional.gelu(x, approximate="tanh")
        h = tg.cat([h, ys[0], ys[1]], dim=0)
        return {"out": tg.clamp(h, min=-0.5, max=0.5), "pair": (h.shape, 1)}

    gm = fx.symbolic_trace(f)
    gelu = next(n for n in gm.graph.nodes if n.name == "gelu")
    assert gelu.op == "call_function" and gelu.kwargs == {"approximate": "tanh"}
    cat = next(n for n in gm.graph.nodes if n.name == "cat")
    assert isinstance(cat.args[0], list) and len(cat.args[0]) == 3
    assert "approximate = 'tanh'" in gm.code
    x, ys = tg.randn(2, 3), [tg.randn(1, 3), tg.randn(2, 3)]
    out = gm(x, ys)
    ref = f(x, ys)
    _close(out["out"], ref["out"])
    assert out["pair"] == ref["pair"]


def test_tensor_on_the_left_of_an_operator_with_a_proxy():
    c = tg.tensor([1.0, 2.0])

    def f(x):
        return c * x + c

    gm = fx.symbolic_trace(f)
    x = tg.randn(2)
    _close(gm(x), c * x + c)


def test_unpacking_a_proxy_into_names_makes_getitem_nodes():
    def f(x):
        a, b = x.chunk(2)
        return a - b

    gm = fx.symbolic_trace(f)
    assert sum(n.target is operator.getitem for n in gm.graph.nodes) == 2
    x = tg.randn(4)
    _close(gm(x), x[:2] - x[2:])


def test_varargs_and_keyword_only_arguments():
    def f(x, *, scale=2.0):
        return x * scale

    gm = fx.symbolic_trace(f)
    phs = [n for n in gm.graph.nodes if n.op == "placeholder"]
    assert [p.target for p in phs] == ["x", "scale"] and phs[1].args == (2.0,)
    x = tg.randn(3)
    _close(gm(x), 2 * x)
    _close(gm(x, 3.0), 3 * x)

    def g(*args):
        return args[0] + args[1]

    gg = fx.symbolic_trace(g)
    assert [n.target for n in gg.graph.nodes if n.op == "placeholder"] == ["*args"]
    assert "def forward(self, *args)" in gg.code
    _close(gg(x, x), 2 * x)


# -- control flow, concrete_args, errors --------------------------------------------------------

def test_data_dependent_control_flow_raises_trace_error_with_pytorchs_message():
    def f(x):
        if x.sum() > 0:
            return x
        return -x

    with pytest.raises(fx.TraceError, match="symbolically traced variables cannot be used as "
                                            "inputs to control flow"):
        fx.symbolic_trace(f)
    assert issubclass(fx.TraceError, ValueError)

    def loop(x):
        return [y for y in x]

    with pytest.raises(fx.TraceError, match="Proxy object cannot be iterated"):
        fx.symbolic_trace(loop)

    def length(x):
        return len(x)

    with pytest.raises(RuntimeError, match="'len' is not supported in symbolic tracing"):
        fx.symbolic_trace(length)


def test_trace_error_leaves_nn_module_unpatched():
    call, getattr_ = nn.Module.__call__, nn.Module.__getattr__

    class Bad(nn.Module):
        def forward(self, x):
            return x if x.max() > 1 else x

    with pytest.raises(fx.TraceError):
        fx.symbolic_trace(Bad())
    assert nn.Module.__call__ is call and nn.Module.__getattr__ is getattr_


def test_concrete_args_specialize_control_flow_and_check_the_value():
    m = Branchy()
    with pytest.raises(fx.TraceError):
        fx.symbolic_trace(_DataBranch())
    gm = fx.symbolic_trace(m, concrete_args={"mode": "tanh", "times": 2})
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert targets.count(tg.tanh) == 2 and tg.relu not in targets
    assert sum(n.op == "placeholder" for n in gm.graph.nodes) == 3
    assert "mode_1" in gm.code and "times_1" in gm.code
    x = tg.randn(2, 3)
    _close(gm(x, "tanh", 2), m(x, "tanh", 2))
    with pytest.raises(AssertionError, match="mode has been specialized to have value tanh"):
        gm(x, "relu", 2)
    # the checks survive dead-code elimination
    gm.graph.eliminate_dead_code()
    assert any("_assert" in n.name for n in gm.graph.nodes)


class _DataBranch(nn.Module):
    def forward(self, x):
        return x.relu() if x.mean() > 0 else x


def test_concrete_args_none_and_ph():
    def f(x, y=None):
        return x if y is None else x + y

    gm = fx.symbolic_trace(f, concrete_args={"y": None})
    x = tg.randn(3)
    _close(gm(x), x)
    with pytest.raises(AssertionError, match="y has been specialized to have value None"):
        gm(x, x)
    gm2 = fx.symbolic_trace(f, concrete_args={"y": fx.PH})
    _close(gm2(x, x), 2 * x)
    with pytest.raises(TypeError, match="no parameter 'z'"):
        fx.symbolic_trace(f, concrete_args={"z": 1})


def test_custom_leaf_modules_and_call_module_override():
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            return tg.sigmoid(self.lin(x))

    class Top(nn.Module):
        def __init__(self):
            super().__init__()
            self.b1, self.b2 = Block(), Block()

        def forward(self, x):
            return self.b2(self.b1(x))

    class LeafBlocks(fx.Tracer):
        def is_leaf_module(self, m, qualname):
            return isinstance(m, Block) or super().is_leaf_module(m, qualname)

    top = Top()
    g_default = fx.Tracer().trace(top)
    assert [n.target for n in g_default.nodes if n.op == "call_module"] == \
        ["b1.lin", "b2.lin"]
    tracer = LeafBlocks()
    g = tracer.trace(top)
    assert tracer.root is top
    assert [n.target for n in g.nodes if n.op == "call_module"] == ["b1", "b2"]
    gm = fx.GraphModule(top, g)
    x = tg.randn(2, 3)
    _close(gm(x), top(x))
    seen = []

    class Recording(fx.Tracer):
        def call_module(self, m, forward, args, kwargs):
            seen.append(self.path_of_module(m))
            return super().call_module(m, forward, args, kwargs)

    Recording().trace(top)
    assert seen == ["b1", "b1.lin", "b2", "b2.lin"]


def test_quantization_modules_are_leaves_as_in_pytorch():
    """Modules of tritongrad.ao.nn (QAT, quantized) stay call_module nodes, as torch.ao.nn's
    do under torch.fx: their observers' data-dependent checks are not traced into."""
    import tritongrad.ao.nn.quantized as nnq
    import tritongrad.ao.quantization as tq
    qat = tg.ao.nn.qat.Linear(3, 2, qconfig=tq.default_qat_qconfig)
    m = nn.Sequential(qat, nn.ReLU(), nnq.DeQuantize())
    gm = fx.symbolic_trace(m)
    assert [(n.op, n.target) for n in gm.graph.nodes if n.op != "placeholder"] == [
        ("call_module", "0"), ("call_module", "1"), ("call_module", "2"), ("output", "output")]
    x = tg.randn(4, 3)
    _close(gm(x), m(x))


def test_wrapped_function_autowrap_math_and_autowrap_functions():
    def f(x):
        return my_clamp_sum(x, 0.0) + 1

    gm = fx.symbolic_trace(f)
    node = next(n for n in gm.graph.nodes if n.op == "call_function" and
                getattr(n.target, "__name__", "") == "my_clamp_sum")
    assert node.meta.get("is_wrapped") is True
    x = tg.randn(5)
    _close(gm(x), x.clamp(min=0.0).sum() + 1)
    # after tracing the global is the original again
    assert globals()["my_clamp_sum"].__code__.co_name == "my_clamp_sum"

    def g(x):
        return x * sqrt(x.shape[0])

    gmg = fx.symbolic_trace(g)
    assert any(n.target is math.sqrt for n in gmg.graph.nodes)
    _close(gmg(tg.ones(4)), 2 * tg.ones(4))

    def h(x):
        return scale_by_width(x)

    with pytest.raises(TypeError):
        fx.symbolic_trace(h)  # int() of a Proxy
    tracer = fx.Tracer(autowrap_functions=(scale_by_width,))
    gh = fx.GraphModule(nn.Module(), tracer.trace(h))
    assert any(n.target is scale_by_width for n in gh.graph.nodes)
    _close(gh(tg.ones(2, 3)), 3 * tg.ones(2, 3))
    with pytest.raises(NotImplementedError, match="top level of a module"):
        fx.wrap("scale_by_width")


def test_param_shapes_constant():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(tg.randn(3, 4))

        def forward(self, x):
            return x.reshape(-1, self.w.shape[0]) @ self.w

    g = fx.Tracer(param_shapes_constant=True).trace(M())
    reshape = next(n for n in g.nodes if n.target == "reshape")
    assert reshape.args[1:] == (-1, 3)
    g2 = fx.Tracer().trace(M())
    assert any(n.target is getattr for n in g2.nodes)


# -- Graph and Node API ---------------------------------------------------------------------

def test_building_a_graph_by_hand_with_inserting_points_and_copy():
    g = fx.Graph()
    x = g.placeholder("x")
    y = g.placeholder("input")  # a builtin's name: the variable is renamed
    add = g.call_function(operator.add, (x, y))
    out = g.output(add)
    assert y.name == "input_1" and "input_1 = input" in g.python_code("self").src
    with g.inserting_before(add):
        r = g.call_function(tg.relu, (x,))
    with g.inserting_after(add):
        neg = g.call_method("neg", (add,))
    add.replace_input_with(x, r)
    out.args = (neg,)
    # (tg.relu without or with the __torch_function__ wrapper: the public name either way)
    assert "call_function[target=tritongrad.relu](args = (%x,)" in str(g)
    assert [n.name for n in g.nodes] == ["x", "input_1", "relu", "add", "neg", "output"]
    assert add.prev is r and add.next is neg and r.users == {add: None}
    assert x.users == {r: None}
    g.lint()
    gm = fx.GraphModule(nn.Module(), g)
    a, b = tg.randn(3), tg.randn(3)
    _close(gm(a, b), -(tg.relu(a) + b))
    g2 = copy.deepcopy(g)
    assert [n.name for n in g2.nodes] == [n.name for n in g.nodes]
    assert all(n.graph is g2 for n in g2.nodes)
    g3 = fx.Graph()
    env = {}
    rv = g3.graph_copy(g, env)
    g3.output(rv)
    assert len(env) == 5 and len(g3.nodes) == 6
    copied = g3.node_copy(g.find_nodes(op="call_method")[0], lambda n: env[n])
    assert copied.target == "neg" and copied.name == "neg_1"


def test_node_replace_all_uses_erase_and_dead_code():
    gm = fx.symbolic_trace(lambda x: tg.relu(x).sigmoid() + tg.tanh(x))
    g = gm.graph
    relu = next(n for n in g.nodes if n.name == "relu")
    x_node = next(iter(g.nodes))
    with pytest.raises(RuntimeError, match="Tried to erase Node relu but it still had 1 users"):
        g.erase_node(relu)
    changed = relu.replace_all_uses_with(x_node)
    assert [u.name for u in changed] == ["sigmoid"] and not relu.users
    assert g.eliminate_dead_code() is True
    assert "relu" not in [n.name for n in g.nodes]
    assert g.eliminate_dead_code() is False
    gm.recompile()
    x = tg.randn(4)
    _close(gm(x), x.sigmoid() + tg.tanh(x))
    # an in-place method keeps its node: it is impure
    gi = fx.symbolic_trace(lambda x: (x.add_(1), x)[1])
    assert not gi.graph.eliminate_dead_code()


def test_lint_reports_use_before_definition_and_missing_targets():
    g = fx.Graph()
    x = g.placeholder("x")
    a = g.call_function(tg.relu, (x,))
    b = g.call_function(tg.neg, (a,))
    g.output(b)
    b.prepend(b.next)  # output moved before b: b is then used before it is defined
    with pytest.raises(RuntimeError, match="used before it has been defined"):
        g.lint()
    gm = fx.symbolic_trace(MLP())
    x = next(iter(gm.graph.nodes))
    with gm.graph.inserting_after(x):
        with pytest.warns(UserWarning, match="no underlying reference"):
            gm.graph.call_module("nope", (x,))
    with pytest.raises(RuntimeError, match="references nonexistent attribute nope"):
        gm.graph.lint()


def test_format_node_map_arg_and_immutable_collections():
    gm = fx.symbolic_trace(lambda x: tg.cat([x, x], 0) + 1)
    cat = next(n for n in gm.graph.nodes if n.name == "cat")
    assert cat.format_node() == ("%cat : [num_users=1] = call_function[target=tritongrad.cat]"
                                 "(args = ([%x, %x], 0), kwargs = {})")
    assert isinstance(cat.args[0], fx.immutable_collections.immutable_list)
    with pytest.raises(TypeError, match="does not support mutation"):
        cat.args[0].append(1)
    names = fx.map_arg(cat.args, lambda n: n.name)
    assert names == (["x", "x"], 0)
    d = fx.immutable_collections.immutable_dict(a=1)
    with pytest.raises(TypeError):
        d["b"] = 2
    assert pickle.loads(pickle.dumps(d)) == {"a": 1}


def test_print_tabular_without_or_with_tabulate(capsys):
    gm = fx.symbolic_trace(MLP())
    try:
        import tabulate  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError):
            gm.graph.print_tabular()
        assert "pip install tabulate" in capsys.readouterr().out
    else:
        gm.graph.print_tabular()
        out = capsys.readouterr().out
        assert "opcode" in out and "call_module" in out and "fc1" in out


# -- GraphModule -----------------------------------------------------------------------------

def test_graph_module_recompile_print_readable_str_and_submodule_editing(capsys):
    m = ConvNet().eval()
    gm = fx.symbolic_trace(m)
    text = gm.print_readable(print_output=False)
    assert text.startswith("class ConvNet(tritongrad.nn.Module):\n    def forward(self, x):")
    gm.print_readable()
    assert "def forward" in capsys.readouterr().out
    assert str(gm).endswith("# To see more debug info, please use "
                            "`graph_module.print_readable()`")
    assert gm.add_submodule("extra.act", nn.Tanh())
    out_node = next(n for n in gm.graph.nodes if n.op == "output")
    with gm.graph.inserting_before(out_node):
        t = gm.graph.call_module("extra.act", (out_node.args[0],))
    out_node.args = (t,)
    gm.recompile()
    assert "extra_act = self.extra.act(head)" in gm.code
    x = tg.randn(1, 3, 5, 5)
    _close(gm(x), tg.tanh(m(x)))
    assert not gm.add_submodule("head.weight.x", nn.ReLU())  # a Parameter is in the way
    out_node.args = (t.args[0],)
    gm.graph.erase_node(t)
    gm.recompile()
    gm.delete_all_unused_submodules()
    assert not hasattr(gm, "extra")
    assert gm.delete_submodule("head") and not gm.delete_submodule("head")
    gm.add_submodule("head", m.head)
    _close(gm(x), m(x))


def test_graph_module_state_dict_deepcopy_and_pickle_round_trip(tmp_path):
    m = ConvNet().eval()
    gm = fx.symbolic_trace(m)
    x = tg.randn(2, 3, 5, 5)
    ref = m(x)
    sd = gm.state_dict()
    assert set(sd) == set(m.state_dict())
    gm2 = copy.deepcopy(gm)
    _close(gm2(x), ref)
    assert gm2.conv1.weight is not gm.conv1.weight and gm2.code == gm.code
    assert type(gm2) is not type(gm) and type(gm2).__name__ == "ConvNet"
    gm3 = pickle.loads(pickle.dumps(gm))
    _close(gm3(x), ref)
    assert [n.name for n in gm3.graph.nodes] == [n.name for n in gm.graph.nodes]
    assert gm3.graph.owning_module is gm3
    with tg.no_grad():
        gm3.conv1.weight.mul_(0)
    fresh = fx.symbolic_trace(ConvNet().eval())
    fresh.load_state_dict(gm.state_dict())
    _close(fresh(x), ref)
    path = tmp_path / "gm.pt"
    tg.save(gm, path)
    loaded = tg.load(path, weights_only=False)
    _close(loaded(x), ref)


def test_graph_module_from_dict_root_and_errors():
    g = fx.Graph()
    x = g.placeholder("x")
    w = g.get_attr("lin.weight")
    g.output(g.call_function(tg.matmul, (x, w)))
    weight = tg.randn(3, 2)
    gm = fx.GraphModule({"lin.weight": weight}, g)
    a = tg.randn(4, 3)
    _close(gm(a), a @ weight)
    with pytest.raises(RuntimeError, match="not provided in ``root``"):
        fx.GraphModule({}, g)
    with pytest.raises(RuntimeError, match="Expected positional argument for parameter x"):
        fx.Interpreter(gm).run()

# -- code generation details -------------------------------------------------------------------

def test_dtypes_devices_setitem_and_math_module_calls_in_generated_code():
    def f(x):
        y = x.clone()
        y[0] = 5.0
        z = tg.zeros(x.shape, dtype=tg.float64, device=x.device)
        return y.to(tg.float64) + z * math.floor(x.shape[0] / 2)

    gm = fx.symbolic_trace(f)
    assert "tritongrad.float64" in gm.code and "clone[0] = 5.0" in gm.code
    assert any(n.target is math.floor for n in gm.graph.nodes)
    x = tg.randn(3)
    out = gm(x)
    assert out.dtype == tg.float64
    ref = host(x).astype(np.float64)
    ref[0] = 5.0
    np.testing.assert_allclose(host(out), ref, atol=1e-6)
    # the setitem node stays: it has an effect
    assert not gm.graph.eliminate_dead_code()


def test_importing_fx_does_not_install_the_dispatch_check():
    import subprocess
    import sys
    code = ("import tritongrad, tritongrad.fx\n"
            "from tritongrad.autograd import overrides\n"
            "print(overrides.active)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120, check=False)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "False"


def test_proxy_repr_keys_and_tracer_mixing_errors():
    g = fx.Graph()
    p = fx.Proxy(g.placeholder("x"))
    q = p + 1  # a Proxy made from a node appends to that node's graph
    assert repr(q) == "Proxy(add)" and [n.name for n in g.nodes] == ["x", "add"]
    g2 = fx.Graph()
    r = fx.Proxy(g2.placeholder("y"))
    with pytest.raises(RuntimeError, match="Found multiple different tracers"):
        tg.add(p, r)
    with pytest.raises(RuntimeError, match="cannot contain a Node"):
        p.tracer.create_arg({p: 1})

def test_nodes_record_the_module_stack():
    gm = fx.symbolic_trace(ConvNet())
    by_name = {n.name: n for n in gm.graph.nodes}
    assert "nn_module_stack" not in by_name["x"].meta
    assert by_name["conv1"].meta["nn_module_stack"] == {"conv1": ("conv1", nn.Conv2d)}
    assert list(by_name["block_1"].meta["nn_module_stack"]) == ["block", "block.1"]
    assert "nn_module_stack" not in by_name["mean"].meta


def test_retracing_a_graph_module_and_tracebacks_through_generated_code():
    import traceback
    m = ConvNet().eval()
    gm = fx.symbolic_trace(m)
    again = fx.symbolic_trace(gm)
    assert [(n.op, n.name) for n in again.graph.nodes] == \
        [(n.op, n.name) for n in gm.graph.nodes]
    x = tg.randn(1, 3, 5, 5)
    _close(again(x), m(x))
    with pytest.raises(Exception) as info:
        gm(tg.randn(1, 5, 5, 5))  # wrong channel count: conv1 raises
    text = "".join(traceback.format_exception(info.value))
    assert "conv1 = self.conv1(x)" in text  # the generated line, found through linecache

    class LocalTracer(fx.Tracer):
        pass

    gl = fx.GraphModule(m, LocalTracer().trace(m))
    _close(pickle.loads(pickle.dumps(gl))(x), m(x))


def _uses_raw_functions(x):
    return raw_gelu(raw_cat([x, x]))  # noqa: F821  (globals the test below installs)


def test_functions_imported_by_name_before_dispatch_was_installed_are_recorded(monkeypatch):
    from tritongrad.autograd import overrides
    overrides.activate()
    gelu = nn.functional.gelu
    # the functions as ``from tritongrad.nn.functional import gelu`` at import time gets them
    monkeypatch.setitem(globals(), "raw_gelu", gelu.__torch_function_wrapped__)
    monkeypatch.setitem(globals(), "raw_cat", tg.cat.__torch_function_wrapped__)
    gm = fx.symbolic_trace(_uses_raw_functions)
    assert [n.target for n in gm.graph.nodes if n.op == "call_function"] == [tg.cat, gelu]
    assert globals()["raw_gelu"] is gelu.__torch_function_wrapped__  # put back
    x = tg.randn(3)
    _close(gm(x), gelu(tg.cat([x, x])))
    # a guarded op held elsewhere than in globals (a closure): its guard hands it over
    raw_relu = tg.relu.__torch_function_wrapped__
    gr = fx.symbolic_trace(lambda x: raw_relu(x) + 1)
    assert [n.target for n in gr.graph.nodes if n.op == "call_function"][0] is tg.relu
    _close(gr(x), tg.relu(x) + 1)


def test_a_tracer_can_trace_into_tritongrads_own_layers():
    class Into(fx.Tracer):
        def is_leaf_module(self, m, qualname):
            return False

    m = nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(3, 2))
    relu_functional = vars(nn.ReLU)["functional"]
    g = Into().trace(m)
    assert vars(nn.ReLU)["functional"] is relu_functional  # the layer's class put back
    assert not [n for n in g.nodes if n.op == "call_module"]
    called = [n.target.__name__ for n in g.nodes if n.op == "call_function"]
    assert called == ["conv2d", "relu", "max_pool2d", "adaptive_avg_pool2d", "linear"]
    assert [n.target for n in g.nodes if n.op == "get_attr"] == \
        ["0.weight", "0.bias", "5.weight", "5.bias"]
    gm = fx.GraphModule(m, g)
    x = tg.randn(2, 2, 6, 6)
    _close(gm(x), m(x))


def test_negative_and_complex_constants_keep_their_meaning_in_generated_operators():
    def f(x):
        return (-2) ** x + (-1.5) * x + x[-1]

    gm = fx.symbolic_trace(f)
    assert "(-2) ** x" in gm.code and "x[-1]" in gm.code
    x = tg.tensor([1.0, 2.0, 3.0])
    _close(gm(x), f(x))


def test_record_stack_traces_points_at_the_users_line():
    tracer = fx.Tracer()
    tracer.record_stack_traces = True
    g = tracer.trace(MLP())
    relu = next(n for n in g.nodes if n.name == "relu")
    assert "test_fx.py" in relu.stack_trace and "tg.relu(self.fc1(x))" in relu.stack_trace
    assert fx.Tracer().trace(MLP()).find_nodes(op="call_function")[0].stack_trace is None


def test_annotations_and_annotate_show_in_the_graph_and_the_code():
    from tritongrad.fx.annotate import annotate

    def f(x: tg.Tensor, n: int = 2) -> tg.Tensor:
        y = annotate(x.sum(), float)
        return y * n

    # (this file's annotations are strings: ``from __future__ import annotations``)
    f.__annotations__ = {"x": tg.Tensor, "n": int, "return": tg.Tensor}
    gm = fx.symbolic_trace(f)
    lines = str(gm.graph).splitlines()
    assert lines[1] == "    %x : tritongrad.Tensor [num_users=1] = placeholder[target=x]"
    assert lines[3].startswith("    %sum_1 : float [num_users=1] = call_method[target=sum]")
    assert "def forward(self, x : tritongrad.Tensor, n : int = 2) -> tritongrad.Tensor:" \
        in gm.code
    assert "sum_1 : float = x.sum()" in gm.code
    _close(gm(tg.ones(3)), tg.tensor(6.0))
    assert annotate(5, int) == 5  # outside tracing: the value as is

    def twice(x):
        return annotate(annotate(x, int), int)

    with pytest.raises(RuntimeError, match="already had a type on it"):
        fx.symbolic_trace(twice)


def test_string_annotations_stay_strings_in_the_generated_code():
    def f(x: SomeType) -> Other:  # noqa: F821  (strings here, naming nothing)
        return x + 1

    gm = fx.symbolic_trace(f)
    assert "def forward(self, x : 'SomeType') -> 'Other':" in gm.code
    _close(gm(tg.ones(2)), 2 * tg.ones(2))


def test_docstring_examples_run():
    """The examples in the package's docstrings print what they say."""
    import doctest
    import importlib

    ran, runner = 0, doctest.DocTestRunner(verbose=False)
    for name in ("tritongrad.fx", "tritongrad.fx._symbolic_trace", "tritongrad.fx.graph",
                 "tritongrad.fx.node", "tritongrad.fx.interpreter",
                 "tritongrad.fx.subgraph_rewriter", "tritongrad.fx.passes.shape_prop"):
        mod = importlib.import_module(name)
        for test in doctest.DocTestFinder().find(mod, globs={"tg": tg}):
            ran += len(test.examples)
            runner.run(test)
    assert ran >= 30
    assert runner.failures == 0, runner.summarize(verbose=False)
