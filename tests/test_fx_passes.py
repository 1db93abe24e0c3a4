"""tritongrad.fx passes: Interpreter and Transformer subclasses, a conv+bn fusion pass written
as in PyTorch's FX tutorial, replace_pattern, ShapeProp, and what programs use fx for (op
counts, feature extraction, inserted instrumentation); values against the eager modules."""

from __future__ import annotations

import copy

import pytest

import tritongrad as tg
import tritongrad.fx as fx
from tritongrad import nn
from tritongrad.fx.passes.shape_prop import ShapeProp, TensorMetadata

from test_fx import MLP, ConvNet, _close


# -- Interpreter / Transformer ---------------------------------------------------------------

def test_interpreter_runs_and_subclasses_override_ops():
    m = MLP()
    gm = fx.symbolic_trace(m)
    x = tg.randn(3, 5)
    _close(fx.Interpreter(gm).run(x), m(x))
    _close(fx.Interpreter(gm).boxed_run([x]), m(x))

    class SwapRelu(fx.Interpreter):
        def call_function(self, target, args, kwargs):
            if target is tg.relu:
                return tg.sigmoid(*args)
            return super().call_function(target, args, kwargs)

        def call_module(self, target, args, kwargs):
            self.modules_seen.append(target)
            return super().call_module(target, args, kwargs)

    interp = SwapRelu(gm)
    interp.modules_seen = []
    out = interp.run(x)
    ref = m.fc2(tg.sigmoid(m.fc1(x))).softmax(-1)
    _close(out, ref)
    assert interp.modules_seen == ["fc1", "fc2"]
    # values are dropped after their last use: only the output's is left
    assert [n.op for n in interp.env] == ["output"]
    keep = fx.Interpreter(gm, garbage_collect_values=False)
    keep.run(x)
    assert len(keep.env) == len(gm.graph.nodes)

    class Bad(fx.Interpreter):
        def call_method(self, target, args, kwargs):
            raise ValueError("boom")

    with pytest.raises(ValueError, match="boom\n\nWhile executing %softmax"):
        Bad(gm).run(x)


def test_transformer_rewrites_and_keeps_the_rest():
    m = ConvNet().eval()
    gm = fx.symbolic_trace(m)

    class ReluToGelu(fx.Transformer):
        def call_function(self, target, args, kwargs):
            if target is nn.functional.relu:  # (relu's ``inplace = False`` is not gelu's)
                target, kwargs = nn.functional.gelu, {}
            return super().call_function(target, args, kwargs)

    new = ReluToGelu(gm).transform()
    assert any(n.target is nn.functional.gelu for n in new.graph.nodes)
    assert [n.op for n in new.graph.nodes] == [n.op for n in gm.graph.nodes]
    x = tg.randn(1, 3, 6, 6)
    h = nn.functional.gelu(m.bn1(m.conv1(x)))
    _close(new(x), m.head(m.block(h).mean((2, 3))))
    _close(fx.Transformer(gm).transform()(x), m(x))


# -- conv + bn fusion, as in PyTorch's tutorial ------------------------------------------------

def _parent_name(target):
    *parent, name = target.rsplit(".", 1)
    return parent[0] if parent else "", name


def fuse(model):
    """Folds each eval-mode BatchNorm2d into the Conv2d before it (PyTorch's FX tutorial)."""
    from tritongrad.nn.utils.fusion import fuse_conv_bn_eval
    model = copy.deepcopy(model)
    fx_model = fx.symbolic_trace(model)
    modules = dict(fx_model.named_modules())
    for node in fx_model.graph.nodes:
        if node.op != "call_module" or not isinstance(node.args[0], fx.Node) \
                or node.args[0].op != "call_module":
            continue
        if type(modules[node.target]) is nn.BatchNorm2d and \
                type(modules[node.args[0].target]) is nn.Conv2d:
            if len(node.args[0].users) > 1:
                continue
            conv, bn = modules[node.args[0].target], modules[node.target]
            fused = fuse_conv_bn_eval(conv, bn)
            parent, name = _parent_name(node.args[0].target)
            setattr(modules[parent], name, fused)
            node.replace_all_uses_with(node.args[0])
            fx_model.graph.erase_node(node)
    fx_model.graph.lint()
    fx_model.recompile()
    fx_model.delete_all_unused_submodules()
    return fx_model


def test_conv_bn_fusion_pass():
    tg.manual_seed(1)
    m = ConvNet()
    # non-trivial running statistics
    m.train()
    for _ in range(3):
        m(tg.randn(4, 3, 6, 6) * 2 + 1)
    m.eval()
    fused = fuse(m)
    kinds = [type(mod).__name__ for _, mod in fused.named_modules()]
    assert "BatchNorm2d" not in kinds and kinds.count("Conv2d") == 2
    assert [n.target for n in fused.graph.nodes if n.op == "call_module"] == \
        ["conv1", "block.0", "block.2", "head"]
    x = tg.randn(2, 3, 6, 6)
    _close(fused(x), m(x), atol=1e-4)


# -- replace_pattern ------------------------------------------------------------------------

def test_replace_pattern_replaces_every_occurrence():
    def f(x, w):
        a = tg.relu(tg.add(x, w))
        b = tg.relu(tg.add(a, w)) * 2
        return b + tg.relu(x)

    def pattern(a, b):
        return tg.relu(tg.add(a, b))

    def replacement(a, b):
        return tg.sigmoid(tg.sub(a, b))

    gm = fx.symbolic_trace(f)
    matches = fx.replace_pattern(gm, pattern, replacement)
    assert len(matches) == 2 and all(isinstance(m, fx.subgraph_rewriter.Match)
                                     for m in matches)
    assert matches[0].anchor.name == "relu" and len(matches[0].nodes_map) == 4
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert targets.count(tg.sigmoid) == 2 and targets.count(tg.relu) == 1
    gm.graph.lint()
    x, w = tg.randn(4), tg.randn(4)
    a = tg.sigmoid(x - w)
    _close(gm(x, w), tg.sigmoid(a - w) * 2 + tg.relu(x))


def test_replace_pattern_skips_matches_whose_inner_values_escape_and_uses_modules():
    def f(x):
        s = tg.add(x, 1)
        return tg.relu(s), s  # s is used outside the pattern

    def pattern(a):
        return tg.relu(tg.add(a, 1))

    gm = fx.symbolic_trace(f)
    assert fx.replace_pattern(gm, pattern, lambda a: tg.tanh(a)) == []

    class Rep(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = nn.Parameter(tg.tensor(3.0))

        def forward(self, a):
            return a * self.scale

    gm2 = fx.symbolic_trace(lambda x: tg.relu(tg.add(x, 1)) - 1)
    assert len(fx.replace_pattern(gm2, pattern, fx.symbolic_trace(Rep()))) == 1
    x = tg.randn(3)
    _close(gm2(x), x * 3 - 1)
    assert "scale" in dict(gm2.named_parameters())


# -- ShapeProp -------------------------------------------------------------------------------

def test_shape_prop_fills_tensor_meta():
    m = ConvNet().eval()
    gm = fx.symbolic_trace(m)
    x = tg.randn(2, 3, 7, 7)
    out = ShapeProp(gm).propagate(x)
    _close(out, m(x))
    shapes = {n.name: n.meta["tensor_meta"].shape for n in gm.graph.nodes
              if "tensor_meta" in n.meta}
    assert shapes["x"] == (2, 3, 7, 7) and shapes["conv1"] == (2, 4, 7, 7)
    assert shapes["block_0"] == (2, 6, 5, 5) and shapes["head"] == (2, 2)
    meta = next(n for n in gm.graph.nodes if n.name == "head").meta["tensor_meta"]
    assert isinstance(meta, TensorMetadata) and meta.dtype == tg.float32
    assert meta.stride == (2, 1) and meta.requires_grad
    gt = fx.symbolic_trace(lambda x: (x.shape, x.chunk(2)))
    ShapeProp(gt).propagate(tg.randn(4, 2))
    chunk = next(n for n in gt.graph.nodes if n.name == "chunk").meta["tensor_meta"]
    assert [c.shape for c in chunk] == [(2, 2), (2, 2)]

# -- what programs use fx for ------------------------------------------------------------------

def test_counting_ops_and_extracting_intermediate_features():
    from collections import Counter
    m = ConvNet().eval()
    gm = fx.symbolic_trace(m)
    modules = dict(gm.named_modules())
    counts = Counter(type(modules[n.target]).__name__ for n in gm.graph.nodes
                     if n.op == "call_module")
    assert counts == {"Conv2d": 2, "BatchNorm2d": 2, "ReLU": 1, "Linear": 1}
    # feature extraction: the graph returns intermediate values, the rest is dropped
    by_name = {n.name: n for n in gm.graph.nodes}
    out = by_name["output"]
    out.args = ({"stem": by_name["relu"], "block": by_name["block_2"]},)
    assert gm.graph.eliminate_dead_code()
    gm.recompile()
    assert "head" not in gm.code and "mean" not in gm.code
    gm.delete_all_unused_submodules()
    assert not hasattr(gm, "head")
    x = tg.randn(1, 3, 6, 6)
    feats = gm(x)
    stem = nn.functional.relu(m.bn1(m.conv1(x)))
    _close(feats["stem"], stem)
    _close(feats["block"], m.block(stem))


_seen_shapes: list = []


def record_shape(t, name):
    """The instrumentation inserted below: records what flows out of each layer."""
    _seen_shapes.append((name, tuple(t.shape)))
    return t


def test_inserting_instrumentation_after_each_layer():
    _seen_shapes.clear()
    m = ConvNet().eval()
    gm = fx.symbolic_trace(m)
    for node in list(gm.graph.nodes):
        if node.op != "call_module":
            continue
        with gm.graph.inserting_after(node):
            probe = gm.graph.call_function(record_shape, (node, node.target))
        node.replace_all_uses_with(probe, delete_user_cb=lambda u, p=probe: u is not p)
    gm.graph.lint()
    gm.recompile()
    # (the function's global is named after its module and name, as PyTorch's)
    glob = f"{record_shape.__module__.replace('.', '_')}_record_shape"
    assert f"record_shape = {glob}(conv1, 'conv1')" in gm.code
    x = tg.randn(2, 3, 5, 5)
    _close(gm(x), m(x))
    assert [n for n, _ in _seen_shapes] == ["conv1", "bn1", "block.0", "block.1", "block.2",
                                            "head"]
    assert _seen_shapes[2] == ("block.0", (2, 6, 3, 3)) and _seen_shapes[-1][1] == (2, 2)


def test_replace_pattern_with_filters_literals_and_callback():
    from tritongrad.fx.subgraph_rewriter import replace_pattern_with_filters

    def f(x):
        return tg.relu(x * 2) + tg.relu(x * 3) + tg.relu(x.neg() * 2)

    def pattern(a):
        return tg.relu(a * 2)

    def only_on_inputs(match, original_graph, pattern_graph):
        return all(n.op == "placeholder" for n in match.placeholder_nodes)

    gm = fx.symbolic_trace(f)
    done = replace_pattern_with_filters(gm, pattern, lambda a: tg.sigmoid(a),
                                        match_filters=[only_on_inputs])
    assert len(done) == 1 and [n.target for n in done[0].replacements] == [tg.sigmoid]
    x = tg.randn(5)
    _close(gm(x), tg.sigmoid(x) + tg.relu(x * 3) + tg.relu(-x * 2))

    gm = fx.symbolic_trace(f)
    seen = []

    def callback(match, original_graph, pattern_graph):
        # the constant each occurrence multiplies by, kept in its replacement
        k = match.returning_nodes[0].args[0].args[1]
        seen.append(k)
        return fx.symbolic_trace(lambda a: tg.tanh(a) * k).graph

    done = replace_pattern_with_filters(gm, pattern, ignore_literals=True,
                                        replacement_callback=callback)
    assert len(done) == 3 and seen == [2, 3, 2]
    _close(gm(x), tg.tanh(x) * 2 + tg.tanh(x) * 3 + tg.tanh(-x) * 2)
    with pytest.raises(ValueError, match="exactly one of replacement"):
        replace_pattern_with_filters(gm, pattern)
