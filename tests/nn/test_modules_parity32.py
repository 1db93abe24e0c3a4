"""torch.nn module classes and the Module API: the differences a differential sweep against
PyTorch 2.13 found (reprs, attributes, container methods, from_pretrained, error types and
texts), each checked against explicit expected behaviour or NumPy float64 references, and
against torch itself where it is installed."""

import collections
import math

import numpy as np
import pytest

import tritongrad as tg
import tritongrad.nn as nn


def _torch():
    return pytest.importorskip("torch")


def _norm(s: str) -> str:
    return s.replace("tritongrad.", "").replace("torch.", "")


# -- reprs -------------------------------------------------------------------------------------

REPRS = [
    ("Hardshrink", (), {}, "Hardshrink(0.5)"),
    ("Softshrink", (0.3,), {}, "Softshrink(0.3)"),
    ("Embedding", (10, 3), {"padding_idx": 1, "max_norm": 2.0, "sparse": True},
     "Embedding(10, 3, padding_idx=1, max_norm=2.0, sparse=True)"),
    ("Unflatten", (-1, [5, 1]), {}, "Unflatten(dim=-1, unflattened_size=[5, 1])"),
    ("Unflatten", (1, (2, 2)), {}, "Unflatten(dim=1, unflattened_size=(2, 2))"),
]


@pytest.mark.parametrize("name,args,kwargs,expected", REPRS)
def test_repr(name, args, kwargs, expected):
    assert repr(getattr(nn, name)(*args, **kwargs)) == expected


@pytest.mark.parametrize("name,args,kwargs,expected", REPRS)
def test_repr_matches_torch(name, args, kwargs, expected):
    torch = _torch()
    assert repr(getattr(torch.nn, name)(*args, **kwargs)) == expected


def test_unflatten_list_sizes_still_reshape():
    y = nn.Unflatten(1, [2, -1])(tg.arange(12.0).reshape(2, 6))
    np.testing.assert_array_equal(y.numpy(), np.arange(12.0).reshape(2, 2, 3))


def test_triplet_margin_with_distance_default_is_a_submodule():
    loss = nn.TripletMarginWithDistanceLoss()
    assert isinstance(loss.distance_function, nn.PairwiseDistance)
    assert repr(loss) == ("TripletMarginWithDistanceLoss(\n  (distance_function): "
                          "PairwiseDistance()\n)")
    rng = np.random.default_rng(0)
    a, p, n = (rng.standard_normal((4, 5)) for _ in range(3))
    d = lambda x, y: np.sqrt(((x - y + 1e-6) ** 2).sum(-1))  # noqa: E731
    ref = np.maximum(d(a, p) - d(a, n) + 1.0, 0).mean()
    got = loss(tg.tensor(a), tg.tensor(p), tg.tensor(n)).item()
    assert got == pytest.approx(ref, rel=1e-10)


# -- Embedding / EmbeddingBag.from_pretrained -------------------------------------------------

def test_embedding_bag_from_pretrained():
    w = tg.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    bag = nn.EmbeddingBag.from_pretrained(w, mode="sum")
    assert bag.weight is not None and bag.mode == "sum" and not bag.weight.requires_grad
    np.testing.assert_array_equal(bag(tg.tensor([[0, 1], [1, 2]])).numpy(),
                                  [[4.0, 6.0], [8.0, 10.0]])
    trainable = nn.EmbeddingBag.from_pretrained(w, freeze=False, max_norm=1.0,
                                                include_last_offset=True, padding_idx=0)
    assert trainable.weight.requires_grad and trainable.max_norm == 1.0
    assert trainable.include_last_offset and trainable.padding_idx == 0
    with pytest.raises(AssertionError, match="2-dimensional"):
        nn.EmbeddingBag.from_pretrained(tg.ones(3))


def test_embedding_from_pretrained_keywords():
    w = tg.ones(4, 2)
    e = nn.Embedding.from_pretrained(w, freeze=False, padding_idx=1, max_norm=2.0,
                                     norm_type=1.0, scale_grad_by_freq=True, sparse=True)
    assert e.weight.requires_grad and e.padding_idx == 1 and e.max_norm == 2.0
    assert e.norm_type == 1.0 and e.scale_grad_by_freq and e.sparse
    assert not nn.Embedding.from_pretrained(w).weight.requires_grad


def test_embedding_bag_from_pretrained_matches_torch():
    torch = _torch()
    w = np.arange(6.0).reshape(3, 2)
    idx = np.array([[0, 2], [1, 1]])
    ref = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(w), mode="max")(torch.tensor(idx))
    got = nn.EmbeddingBag.from_pretrained(tg.tensor(w), mode="max")(tg.tensor(idx))
    np.testing.assert_array_equal(got.numpy(), ref.numpy())


# -- Module API ----------------------------------------------------------------------------------

class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(2, 3)
        self.b = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3))
        self.register_buffer("buf", tg.ones(2))
        self.p = nn.Parameter(tg.ones(3))


GETTER_ERRORS = [
    ("get_submodule", "p", "`p` is not an nn.Module"),
    ("get_submodule", "b.7", "Sequential has no attribute `7`"),
    ("get_parameter", "b.0.zz", "Linear has no attribute `zz`"),
    ("get_parameter", "buf", "`buf` is not an nn.Parameter"),
    ("get_buffer", "p", "`p` is not a buffer"),
]


@pytest.mark.parametrize("method,target,message", GETTER_ERRORS)
def test_getter_errors(method, target, message):
    with pytest.raises(AttributeError) as e:
        getattr(_Net(), method)(target)
    assert str(e.value) == message


def test_getter_errors_match_torch():
    torch = _torch()

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(2, 3)
            self.b = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.BatchNorm1d(3))
            self.register_buffer("buf", torch.ones(2))
            self.p = torch.nn.Parameter(torch.ones(3))

    for method, target, message in GETTER_ERRORS:
        with pytest.raises(AttributeError) as e:
            getattr(Net(), method)(target)
        assert str(e.value) == message


def test_get_submodule_and_parameter_found():
    net = _Net()
    assert net.get_submodule("b.1") is net.b[1]
    assert net.get_parameter("b.0.bias") is net.b[0].bias
    assert net.get_submodule("") is net


def test_module_class_flags_and_init_arguments():
    assert nn.Module.dump_patches is False and nn.Module.call_super_init is False
    with pytest.raises(TypeError, match="unexpected keyword argument 'foo'"):
        nn.Module(foo=1)
    with pytest.raises(TypeError, match="takes 1 positional argument but 2 were given"):
        nn.Module(1)

    class Mixin:
        def __init__(self, *args, **kwargs):
            self.got = (args, kwargs)

    class Cooperative(nn.Module, Mixin):
        call_super_init = True

    m = Cooperative(1, k=2)
    assert m.got == ((1,), {"k": 2}) and m.training


def test_other_backends_raise_like_a_torch_build_without_them():
    lin = nn.Linear(1, 1)
    with pytest.raises(AssertionError, match="XPU"):
        lin.xpu()
    with pytest.raises(RuntimeError, match="IPU"):
        lin.ipu()
    with pytest.raises(AssertionError, match="MTIA"):
        lin.mtia()
    empty = nn.ReLU()
    assert empty.xpu() is empty  # nothing to move


def test_dir_leaves_out_numeric_names():
    names = dir(nn.Sequential(nn.ReLU(), nn.Tanh()))
    assert "0" not in names and "1" not in names and "forward" in names
    net_names = dir(_Net())
    assert {"a", "b", "buf", "p"} <= set(net_names)


# -- conv / transformer / rnn attributes -----------------------------------------------------

def test_conv_attributes():
    c = nn.Conv2d(2, 4, 3, padding=(1, 2), padding_mode="reflect")
    assert c.transposed is False and c.output_padding == (0, 0)
    assert c._reversed_padding_repeated_twice == (2, 2, 1, 1)
    same = nn.Conv2d(2, 4, (3, 4), padding="same", dilation=2)
    assert same._reversed_padding_repeated_twice == [3, 3, 2, 2]
    valid = nn.Conv1d(2, 4, 3, padding="valid")
    assert valid._reversed_padding_repeated_twice == [0, 0]
    t = nn.ConvTranspose3d(2, 4, 3, 2, 1, 1)
    assert t.transposed is True and t.output_padding == (1, 1, 1)


def test_conv_attributes_match_torch():
    torch = _torch()
    for args, kw in [((2, 4, 3), {"padding": (1, 2)}), ((2, 4, (3, 4)), {"padding": "same",
                                                                         "dilation": 2})]:
        a, b = torch.nn.Conv2d(*args, **kw), nn.Conv2d(*args, **kw)
        assert a._reversed_padding_repeated_twice == b._reversed_padding_repeated_twice
        assert a.output_padding == b.output_padding and a.transposed == b.transposed


def test_transformer_flags_and_default_activation():
    import inspect
    from tritongrad.nn import functional as F
    sig = inspect.signature(nn.TransformerEncoderLayer.__init__)
    assert sig.parameters["activation"].default is F.relu
    assert nn.TransformerEncoderLayer(8, 2, 16).activation_relu_or_gelu == 1
    assert nn.TransformerEncoderLayer(8, 2, 16, activation="gelu").activation_relu_or_gelu == 2
    assert nn.TransformerEncoderLayer(8, 2, 16, activation=nn.GELU()).activation_relu_or_gelu == 2
    assert nn.TransformerEncoderLayer(8, 2, 16, activation=tg.tanh).activation_relu_or_gelu == 0
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 2,
                                enable_nested_tensor=False, mask_check=False)
    assert (enc.enable_nested_tensor, enc.use_nested_tensor, enc.mask_check) == (
        False, False, False)


def test_rnn_flat_weights_is_live():
    m = nn.LSTM(2, 3, 2, bias=False)
    assert len(m._flat_weights) == 4
    assert [w is getattr(m, n) for w, n in zip(m._flat_weights, m._flat_weights_names)] == \
        [True] * 4
    m.weight_ih_l0 = nn.Parameter(tg.zeros(12, 2))
    assert float(m._flat_weights[0].abs().sum()) == 0.0


def test_rnn_errors():
    with pytest.raises(TypeError, match="must be tuple of Tensors, not Tensor"):
        nn.LSTMCell(2, 3)(tg.ones(4, 2), tg.ones(4, 3))
    with pytest.raises(ValueError, match=r"^RNN input dtype"):
        nn.LSTM(2, 3)(tg.ones(4, 1, 2, dtype=tg.float64))


# -- MultiheadAttention ------------------------------------------------------------------------

def test_mha_key_value_shape_assertions():
    with pytest.raises(AssertionError, match="key shape .* does not match value shape"):
        nn.MultiheadAttention(4, 2)(tg.ones(3, 2, 4), tg.ones(3, 2, 4), tg.ones(5, 2, 4))
    with pytest.raises(AssertionError, match="key's sequence and batch dims"):
        nn.MultiheadAttention(4, 2, kdim=3, vdim=5)(tg.ones(3, 2, 4), tg.ones(3, 2, 3),
                                                    tg.ones(6, 2, 5))


def test_mha_merge_masks():
    m = nn.MultiheadAttention(4, 2)
    q = tg.ones(2, 3, 4)
    assert m.merge_masks(None, None, q) == (None, None)
    kpm = tg.tensor([[0.0, 0.0, -1.0], [0.0, -2.0, 0.0]])
    merged, kind = m.merge_masks(None, kpm, q)
    assert kind == 1 and merged is kpm
    am = tg.tensor(np.triu(np.full((3, 3), -5.0), 1))
    merged, kind = m.merge_masks(am, kpm, q)
    ref = am.numpy()[None, None] + kpm.numpy()[:, None, None, :]
    assert kind == 2 and tuple(merged.shape) == (2, 2, 3, 3)
    np.testing.assert_array_equal(merged.numpy(), np.broadcast_to(ref, (2, 2, 3, 3)))


# -- containers --------------------------------------------------------------------------------

def test_container_type_errors():
    with pytest.raises(TypeError, match="ModuleList.extend should be called with an iterable, "
                                        "but got int"):
        nn.ModuleList().extend(3)
    with pytest.raises(TypeError, match="ModuleDict.update should be called with an iterable "
                                        "of key/value pairs, but got int"):
        nn.ModuleDict().update(3)
    with pytest.raises(TypeError, match="ParameterList.extend should be called with an "
                                        "iterable, but got Tensor"):
        nn.ParameterList().extend(tg.ones(2))
    with pytest.raises(ValueError, match="#0 has length 3; 2 is required"):
        nn.ModuleDict([("a", nn.ReLU(), 1)])


def test_parameter_dict_methods():
    pd = nn.ParameterDict({"b": tg.ones(1), "a": tg.zeros(2)})
    assert list(pd.keys()) == ["a", "b"]  # a plain dict is taken in sorted key order
    ordered = nn.ParameterDict(collections.OrderedDict([("b", tg.ones(1)), ("a", tg.ones(1))]))
    assert list(ordered.keys()) == ["b", "a"]
    assert pd.setdefault("c", None) is None and list(pd.keys()) == ["a", "b", "c"]
    assert pd.setdefault("a") is pd["a"]
    k, v = pd.popitem()
    assert k == "c" and v is None and list(pd.keys()) == ["a", "b"]
    cp = pd.copy()
    assert type(cp) is nn.ParameterDict and cp["a"] is pd["a"] and list(cp.keys()) == ["a", "b"]
    merged = pd | nn.ParameterDict({"z": tg.ones(1)})
    assert list(merged.keys()) == ["a", "b", "z"] and list(pd.keys()) == ["a", "b"]
    pd |= {"y": tg.ones(3)}
    assert list(pd.keys()) == ["a", "b", "y"]
    fk = pd.fromkeys(["x", "w"], tg.ones(2))
    assert list(fk.keys()) == ["x", "w"] and isinstance(fk["x"], nn.Parameter)
    assert list(reversed(pd)) == ["y", "b", "a"]
    assert pd.get("missing", 7) == 7
    with pytest.raises(AttributeError, match="'ParameterDict' object has no attribute 'zz'"):
        pd["zz"]
    pd.clear()
    assert len(pd) == 0 and list(pd.named_parameters()) == []


def test_parameter_dict_matches_torch():
    torch = _torch()

    def run(L):
        pd = L.nn.ParameterDict({"b": L.ones(1), "a": L.zeros(2)})
        pd.setdefault("c", None)
        first = pd.popitem()[0]
        merged = pd | L.nn.ParameterDict({"z": L.ones(1)})
        return list(pd.keys()), first, list(merged.keys()), [k for k, _ in
                                                              merged.named_parameters()]

    assert run(tg) == run(torch)


# -- losses --------------------------------------------------------------------------------------

def test_invalid_reduction_is_reported_on_the_call():
    loss = nn.MSELoss(reduction="foo")  # (PyTorch's modules do not check it up front)
    assert loss.reduction == "foo"
    with pytest.raises(ValueError, match="foo is not a valid value for reduction"):
        loss(tg.ones(2), tg.zeros(2))
    assert nn.L1Loss(size_average=False).reduction == "sum"
    assert nn.L1Loss(reduce=False).reduction == "none"


# -- values: forward and gradients against NumPy float64 and torch -----------------------------

def test_hardshrink_softshrink_values_and_grads():
    x = np.array([-1.0, -0.3, 0.0, 0.2, 0.6])
    for mod, ref, dref in [(nn.Hardshrink(0.25), np.where(np.abs(x) > 0.25, x, 0.0),
                            (np.abs(x) > 0.25).astype(float)),
                           (nn.Softshrink(0.25), np.sign(x) * np.maximum(np.abs(x) - 0.25, 0),
                            (np.abs(x) > 0.25).astype(float))]:
        t = tg.tensor(x, requires_grad=True)
        y = mod(t)
        y.sum().backward()
        np.testing.assert_allclose(y.detach().numpy(), ref, rtol=0, atol=1e-15)
        np.testing.assert_allclose(t.grad.numpy(), dref)


def test_cooperative_init_keeps_registration():
    class Base:
        def __init__(self, width=0):
            self.width = width

    class Net(nn.Module, Base):
        call_super_init = True

        def __init__(self):
            super().__init__(width=3)
            self.lin = nn.Linear(self.width, 1)

    net = Net()
    assert net.width == 3 and [k for k, _ in net.named_parameters()] == ["lin.weight",
                                                                          "lin.bias"]
    assert math.isclose(sum(p.numel() for p in net.parameters()), 4)


# -- RNN argument-check methods (PyTorch's public RNNBase API) ---------------------------------

def test_rnn_check_methods():
    m = nn.LSTM(3, 4, 2, proj_size=2, batch_first=True)
    x = tg.ones(2, 5, 3)
    assert m.get_expected_hidden_size(x, None) == (2, 2, 2)
    assert m.get_expected_cell_size(x, None) == (2, 2, 4)
    assert m.get_expected_hidden_size(x[0], tg.tensor([3, 2])) == (2, 3, 2)
    m.check_forward_args(x, (tg.ones(2, 2, 2), tg.ones(2, 2, 4)), None)
    with pytest.raises(RuntimeError, match=r"Expected hidden\[1\] size \(2, 2, 4\), got "
                                           r"\[2, 2, 3\]"):
        m.check_forward_args(x, (tg.ones(2, 2, 2), tg.ones(2, 2, 3)), None)
    gru = nn.GRU(3, 4)
    with pytest.raises(RuntimeError, match="input must have 3 dimensions, got 2"):
        gru.check_input(tg.ones(2, 3), None)
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. "
                                           "Expected 3, got 5"):
        gru.check_input(tg.ones(2, 1, 5), None)
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(1, 1, 4\), got \[1, 2, 4\]"):
        gru.check_forward_args(tg.ones(2, 1, 3), tg.ones(1, 2, 4), None)
    h = tg.arange(6.0).reshape(1, 3, 2)
    np.testing.assert_array_equal(gru.permute_hidden(h, tg.tensor([2, 0, 1])).numpy(),
                                  h.numpy()[:, [2, 0, 1]])
    assert gru.permute_hidden(h, None) is h
    hc = m.permute_hidden((h, h * 2), tg.tensor([1, 2, 0]))
    np.testing.assert_array_equal(hc[1].numpy(), 2 * h.numpy()[:, [1, 2, 0]])


def test_rnn_check_methods_match_torch():
    torch = _torch()
    for L in (torch, tg):
        m = L.nn.LSTM(3, 4, 2, proj_size=2)
        x = L.ones(5, 2, 3)
        assert m.get_expected_hidden_size(x, None) == (2, 2, 2)
        assert m.get_expected_cell_size(x, None) == (2, 2, 4)


def test_relu6_bounds_and_module_typevar():
    r = nn.ReLU6()
    assert (r.min_val, r.max_val) == (0.0, 6.0) and repr(r) == "ReLU6()"
    np.testing.assert_array_equal(r(tg.tensor([-1.0, 3.0, 7.0])).numpy(), [0.0, 3.0, 6.0])
    assert nn.Module.T_destination.__name__ == "T_destination"


def test_padding_signatures():
    import inspect
    for name in ("ZeroPad2d", "ReflectionPad1d", "ReplicationPad3d", "CircularPad2d"):
        assert list(inspect.signature(getattr(nn, name).__init__).parameters) == [
            "self", "padding"]
        with pytest.raises(TypeError):
            getattr(nn, name)(1, 2.0)
    assert list(inspect.signature(nn.ConstantPad2d.__init__).parameters) == [
        "self", "padding", "value"]
    x = np.arange(6.0).reshape(1, 2, 3)
    np.testing.assert_array_equal(nn.ZeroPad1d((1, 2))(tg.tensor(x)).numpy(),
                                  np.pad(x, ((0, 0), (0, 0), (1, 2))))
    np.testing.assert_array_equal(nn.ConstantPad1d(1, -1.5)(tg.tensor(x)).numpy(),
                                  np.pad(x, ((0, 0), (0, 0), (1, 1)), constant_values=-1.5))
    np.testing.assert_array_equal(nn.ReflectionPad1d(2)(tg.tensor(x)).numpy(),
                                  np.pad(x, ((0, 0), (0, 0), (2, 2)), mode="reflect"))
