"""Gaps found by the torch 2.13 nn sweep (s25): container methods, the ``nn.modules`` import
paths, global module hooks, Module methods, transformer child order, reprs, full backward
hooks' grad_input, and data-loading details. Expected values are torch 2.13's, written out."""

from __future__ import annotations

import warnings

import pytest

import tritongrad as tg
from tritongrad import nn


def _names(m):
    return [n for n, _ in m.named_children()]


# -- 1. containers ------------------------------------------------------------------------
def test_sequential_del_renumbers_children():
    s = nn.Sequential(nn.ReLU(), nn.Tanh(), nn.ELU())
    del s[0]
    assert _names(s) == ["0", "1"] and type(s[0]).__name__ == "Tanh"
    s = nn.Sequential(nn.ReLU(), nn.Tanh(), nn.ELU())
    del s[0:2]
    assert _names(s) == ["0"] and type(s[0]).__name__ == "ELU"


def test_sequential_list_methods():
    a, b, c = nn.ReLU(), nn.Tanh(), nn.ELU()
    s = nn.Sequential(a, b)
    assert s.insert(1, c) is s and list(s) == [a, c, b] and _names(s) == ["0", "1", "2"]
    s.insert(-3, nn.GELU())
    assert type(s[0]).__name__ == "GELU"
    with pytest.raises(IndexError, match="Index out of range: 9"):
        s.insert(9, nn.ReLU())
    with pytest.raises(AssertionError, match="module should be of type"):
        s.insert(0, 3)
    s = nn.Sequential(a).extend([b, c])
    assert list(s) == [a, b, c]
    assert s.pop(1) is b and list(s) == [a, c] and _names(s) == ["0", "1"]
    popped = s.pop(slice(0, 1))
    assert type(popped) is nn.Sequential and list(popped) == [a] and list(s) == [c]


def test_sequential_add_mul():
    a, b = nn.ReLU(), nn.Tanh()
    s1, s2 = nn.Sequential(a), nn.Sequential(b)
    s3 = s1 + s2
    assert type(s3) is nn.Sequential and list(s3) == [a, b] and list(s1) == [a]
    with pytest.raises(ValueError, match="add operator supports only objects of Sequential"):
        s1 + [b]  # noqa: B018
    assert list(s1 * 3) == [a, a, a] and list((s1 * 2)._modules) == ["0", "1"]
    assert list(2 * s3) == [a, b, a, b]
    with pytest.raises(ValueError, match="Non-positive multiplication factor 0"):
        s1 * 0  # noqa: B018
    with pytest.raises(TypeError, match="unsupported operand"):
        s1 * 1.5  # noqa: B018
    s = nn.Sequential(a, b)
    s *= 2
    assert list(s) == [a, b, a, b] and list(s._modules) == ["0", "1", "2", "3"]
    s = nn.Sequential(a)
    s += nn.Sequential(b)
    assert list(s) == [a, b]


def test_module_list_pop_add_and_module_dict_pop_clear():
    a, b, c = nn.ReLU(), nn.Tanh(), nn.ELU()
    ml = nn.ModuleList([a, b, c])
    assert ml.pop(0) is a and list(ml) == [b, c] and _names(ml) == ["0", "1"]
    both = ml + nn.ModuleList([a])
    assert type(both) is nn.ModuleList and list(both) == [b, c, a] and len(ml) == 2
    d = nn.ModuleDict({"x": a, "y": b})
    assert d.pop("x") is a and list(d.keys()) == ["y"]
    with pytest.raises(KeyError):
        d.pop("zz")
    d.clear()
    assert len(d) == 0 and list(d.children()) == []


# -- 2. import paths ----------------------------------------------------------------------
def test_nn_modules_import_paths():
    from tritongrad.nn.common_types import _size_2_t  # noqa: F401
    from tritongrad.nn.modules.activation import MultiheadAttention
    from tritongrad.nn.modules.batchnorm import _BatchNorm, _NormBase
    from tritongrad.nn.modules.conv import _ConvNd
    from tritongrad.nn.modules.instancenorm import _InstanceNorm
    from tritongrad.nn.modules.linear import NonDynamicallyQuantizableLinear
    from tritongrad.nn.modules.loss import _Loss, _WeightedLoss
    from tritongrad.nn.modules.module import Module
    from tritongrad.nn.modules.utils import _pair, _quadruple, _single, _triple
    from tritongrad.utils.data._utils.collate import default_collate, default_convert

    assert Module is nn.Module and MultiheadAttention is nn.MultiheadAttention
    assert isinstance(nn.Conv2d(1, 1, 1), _ConvNd) and isinstance(nn.MSELoss(), _Loss)
    assert isinstance(nn.NLLLoss(), _WeightedLoss) and not isinstance(nn.MSELoss(),
                                                                       _WeightedLoss)
    assert not isinstance(nn.BCEWithLogitsLoss(), _WeightedLoss)  # a _Loss in torch too
    assert issubclass(NonDynamicallyQuantizableLinear, nn.Linear)
    assert _single(2) == (2,) and _pair(3) == (3, 3) and _triple((1, 2)) == (1, 2)
    assert _quadruple(0) == (0, 0, 0, 0)
    assert default_collate([1, 2]).tolist() == [1, 2] and default_convert(3) == 3
    # torch: an instance norm is a _NormBase but not a _BatchNorm
    assert isinstance(nn.BatchNorm2d(3), _BatchNorm)
    assert not isinstance(nn.InstanceNorm2d(3), _BatchNorm)
    assert isinstance(nn.InstanceNorm2d(3), _NormBase | _InstanceNorm)
    assert nn.modules.linear.Linear is nn.Linear


def test_convert_sync_batchnorm_skips_instance_norm():
    net = nn.Sequential(nn.BatchNorm2d(3), nn.InstanceNorm2d(3))
    out = nn.SyncBatchNorm.convert_sync_batchnorm(net)
    assert [type(m).__name__ for m in out] == ["SyncBatchNorm", "InstanceNorm2d"]


def test_global_forward_hooks_run_for_every_module():
    from tritongrad.nn.modules.module import (register_module_forward_hook,
                                              register_module_forward_pre_hook)
    seen = []
    net = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    net[0].register_forward_pre_hook(lambda m, a: seen.append("own-pre"))
    h1 = register_module_forward_pre_hook(lambda m, a: seen.append(("pre", type(m).__name__)))
    h2 = register_module_forward_hook(lambda m, a, o: seen.append(("post", type(m).__name__)))
    try:
        net(tg.ones(1, 2))
    finally:
        h1.remove()
        h2.remove()
    # torch's order: global pre-hooks before the module's own
    assert seen == [("pre", "Sequential"), ("pre", "Linear"), "own-pre", ("post", "Linear"),
                    ("pre", "ReLU"), ("post", "ReLU"), ("post", "Sequential")]
    seen.clear()
    net(tg.ones(1, 2))
    assert seen == ["own-pre"]  # removed


def test_global_forward_hook_kwargs_replace_output_and_always_call():
    from tritongrad.nn.modules.module import register_module_forward_hook
    lin = nn.Linear(2, 2)
    with register_module_forward_hook(lambda m, a, kw, o: o * 0, with_kwargs=True):
        assert lin(tg.ones(1, 2)).abs().sum().item() == 0.0
    called = []

    class Boom(nn.Module):
        def forward(self, x):
            raise KeyError("boom")

    with register_module_forward_hook(lambda m, a, o: called.append(o), always_call=True):
        with pytest.raises(KeyError):
            Boom()(1)
    assert called == [None]


def test_global_full_backward_hooks():
    from tritongrad.nn.modules.module import (register_module_full_backward_hook,
                                              register_module_full_backward_pre_hook)
    seen = []
    lin = nn.Linear(2, 1)
    lin.register_full_backward_hook(lambda m, gi, go: seen.append("own"))
    h1 = register_module_full_backward_hook(lambda m, gi, go: seen.append("global"))
    h2 = register_module_full_backward_pre_hook(lambda m, go: seen.append("global-pre"))
    try:
        lin(tg.ones(3, 2, requires_grad=True)).sum().backward()
    finally:
        h1.remove()
        h2.remove()
    assert seen == ["global-pre", "global", "own"]


# -- 3. Module methods --------------------------------------------------------------------
def test_get_buffer_and_set_submodule():
    m = nn.Sequential(nn.BatchNorm1d(2), nn.Sequential(nn.ReLU(), nn.ReLU()))
    assert m.get_buffer("0.running_var").tolist() == [1.0, 1.0]
    with pytest.raises(AttributeError, match="`weight` is not a buffer"):
        m.get_buffer("0.weight")
    with pytest.raises(AttributeError, match="has no attribute `nope`"):
        m.get_buffer("0.nope")
    m.set_submodule("1.1", nn.Tanh())
    assert type(m[1][1]).__name__ == "Tanh"
    m.set_submodule("1.new", nn.ELU())  # strict=False adds it
    assert _names(m[1]) == ["0", "1", "new"]
    with pytest.raises(AttributeError, match="has no attribute `other`"):
        m.set_submodule("1.other", nn.ELU(), strict=True)
    with pytest.raises(ValueError, match="is not an nn.Module"):
        m.set_submodule("1.0", 3)
    with pytest.raises(ValueError, match="without a target name"):
        m.set_submodule("", nn.ReLU())
    with pytest.raises(AttributeError, match="`weight` is not an nn.Module"):
        m.set_submodule("0.weight", nn.ReLU())


def test_type_share_memory_compile():
    m = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    assert m.type(tg.float64) is m and m[0].weight.dtype == tg.float64
    assert m[1].num_batches_tracked.dtype == tg.float64  # torch casts every tensor here
    m.type("torch.FloatTensor")
    assert m[0].weight.dtype == tg.float32
    assert m.share_memory() is m
    assert m.compile(backend="eager") is None and callable(m._compiled_call_impl)
    assert m(tg.ones(2, 2)).shape == (2, 3)
    with pytest.raises(RuntimeError, match="Unrecognized mode"):
        m.compile(mode="bogus")


def test_legacy_backward_hook_warns_and_excludes_full_hooks():
    lin = nn.Linear(2, 1)
    seen = []
    lin.register_backward_hook(lambda m, gi, go: seen.append(len(go)))
    with pytest.warns(FutureWarning, match="non-full backward hook"):
        out = lin(tg.ones(3, 2, requires_grad=True))
    out.sum().backward()
    assert seen == [1]
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks"):
        lin.register_full_backward_hook(lambda *a: None)
    other = nn.Linear(2, 1)
    other.register_full_backward_hook(lambda *a: None)
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks"):
        other.register_backward_hook(lambda *a: None)


def test_to_complex_warns():
    with pytest.warns(UserWarning, match="Complex modules are a new feature"):
        nn.Linear(2, 2).to(tg.complex64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.Linear(2, 2).to(tg.float64)


# -- 4. transformer order -----------------------------------------------------------------
def test_transformer_layer_child_order():
    enc = [n for n, _ in nn.TransformerEncoderLayer(8, 2, 16).named_modules()]
    assert enc == ["", "self_attn", "self_attn.out_proj", "linear1", "dropout", "linear2",
                   "norm1", "norm2", "dropout1", "dropout2"]
    dec = _names(nn.TransformerDecoderLayer(8, 2, 16, activation=nn.GELU()))
    assert dec == ["self_attn", "multihead_attn", "linear1", "dropout", "linear2", "norm1",
                   "norm2", "norm3", "dropout1", "dropout2", "dropout3", "activation"]


# -- 5. reprs -----------------------------------------------------------------------------
def test_module_list_repr_collapses_runs():
    ml = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 2)])
    lin = "Linear(in_features=2, out_features=2, bias=True)"
    assert repr(ml) == f"ModuleList(\n  (0-1): 2 x {lin}\n  (2): ReLU()\n  (3): {lin}\n)"
    assert repr(nn.ModuleList()) == "ModuleList()"
    # Sequential does not collapse
    seq = nn.Sequential(nn.ReLU(), nn.ReLU())
    assert repr(seq) == "Sequential(\n  (0): ReLU()\n  (1): ReLU()\n)"


def test_out_proj_repr_name():
    r = repr(nn.MultiheadAttention(8, 2))
    assert "(out_proj): NonDynamicallyQuantizableLinear(in_features=8, out_features=8, " \
           "bias=True)" in r


def test_parameter_container_reprs():
    one = nn.ParameterList([nn.Parameter(tg.ones(2))])
    assert repr(one) == ("ParameterList(  (0): Parameter containing: "
                         "[tritongrad.float32 of size 2])")
    many = nn.ParameterList([nn.Parameter(tg.ones(2)), tg.ones(3, 2), 3])
    assert repr(many) == ("ParameterList(\n"
                          "    (0): Parameter containing: [tritongrad.float32 of size 2]\n"
                          "    (1): Parameter containing: [tritongrad.float32 of size 3x2]\n"
                          "    (2): Object of type: int\n)")
    d = nn.ParameterDict({"a": nn.Parameter(tg.ones(2))})
    assert repr(d) == ("ParameterDict(  (a): Parameter containing: "
                       "[tritongrad.FloatTensor of size 2])")
    d = nn.ParameterDict({"a": nn.Parameter(tg.ones(2)),
                          "b": tg.ones(2, dtype=tg.float64), "c": "x"})
    assert repr(d) == ("ParameterDict(\n"
                       "    (a): Parameter containing: [tritongrad.FloatTensor of size 2]\n"
                       "    (b): Parameter containing: [tritongrad.DoubleTensor of size 2]\n"
                       "    (c): Object of type: str\n)")
    assert repr(nn.ParameterList()) == "ParameterList()"


# -- 6. full backward hooks' grad_input -----------------------------------------------------
def _grad_input(module, args, loss):
    got = []
    module.register_full_backward_hook(lambda m, gi, go: got.append(gi))
    loss(module(*args)).backward()
    return [None if g is None else g.tolist() for g in got[0]]


class _Two(nn.Module):
    def forward(self, a, b):
        return a * b, a + b


class _FirstOnly(nn.Module):
    def forward(self, a, n, b):
        return a * 2


def test_full_backward_hook_gives_zeros_to_tensor_inputs_without_grad():
    a = tg.ones(2, requires_grad=True)
    # torch 2.13: the input that does not require grad gets zeros, not None
    assert _grad_input(_Two(), (a, tg.full((2,), 2.0)),
                       lambda o: o[0].sum() + 3 * o[1].sum()) == [[5.0, 5.0], [0.0, 0.0]]
    assert _grad_input(_Two(), (tg.full((2,), 2.0), a),
                       lambda o: o[0].sum()) == [[0.0, 0.0], [2.0, 2.0]]
    # a non-tensor argument stays None; an integer tensor gets integer zeros
    assert _grad_input(_FirstOnly(), (a, 3, tg.tensor([1, 2])),
                       lambda o: o.sum()) == [[2.0, 2.0], None, [0, 0]]


def test_full_backward_hook_unused_input_requiring_grad_gets_zero_grad():
    a, b = tg.ones(2, requires_grad=True), tg.ones(2, requires_grad=True)
    assert _grad_input(_FirstOnly(), (a, 1, b), lambda o: o.sum()) == [[2.0, 2.0], None,
                                                                        [0.0, 0.0]]
    assert b.grad.tolist() == [0.0, 0.0]  # torch also hands the zeros on to b


def test_full_backward_hook_single_input_without_grad_still_none():
    lin = nn.Linear(2, 1)
    got = []
    lin.register_full_backward_hook(lambda m, gi, go: got.append(gi))
    with pytest.warns(UserWarning, match="no inputs require gradients"):
        lin(tg.ones(3, 2)).sum().backward()
    assert got == [(None,)]


# -- 7. data ------------------------------------------------------------------------------
def test_tensor_dataset_mismatch_is_assertion_error():
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        tg.utils.data.TensorDataset(tg.ones(3), tg.ones(4))


@pytest.mark.parametrize("attr", ["batch_size", "batch_sampler", "sampler", "drop_last",
                                  "dataset", "persistent_workers"])
def test_dataloader_refuses_setting_iteration_attributes(attr):
    dl = tg.utils.data.DataLoader(tg.utils.data.TensorDataset(tg.arange(5.0)), batch_size=2)
    with pytest.raises(ValueError, match=f"{attr} attribute should not be set after "
                                         "DataLoader is initialized"):
        setattr(dl, attr, None)
    dl.num_workers = 0  # others stay settable
    assert [b[0].tolist() for b in dl] == [[0.0, 1.0], [2.0, 3.0], [4.0]]
