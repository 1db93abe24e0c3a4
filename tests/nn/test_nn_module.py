"""nn.Module and nn.Parameter: registration, traversal, modes, moving/casting, state dicts
(round trips and the documented errors), hooks, repr; the containers."""

import copy
from collections import OrderedDict

import numpy as np
import pytest

import tritongrad as tg
from tritongrad import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 3)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(3, 2)
        self.scale = nn.Parameter(tg.ones(2))
        self.register_buffer("running", tg.zeros(2))
        self.register_buffer("scratch", tg.zeros(1), persistent=False)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x))) * self.scale + self.running


def test_parameter_is_a_leaf_tensor_that_requires_grad():
    data = tg.tensor([1.0, 2.0])
    p = nn.Parameter(data)
    assert isinstance(p, tg.Tensor) and isinstance(p, nn.Parameter)
    assert p.is_leaf and p.requires_grad and p.grad_fn is None
    assert repr(p) == "Parameter containing:\ntensor([1., 2.], requires_grad=True)"
    assert str(p) == repr(p)
    assert type(p * 2) is tg.Tensor and type(p.detach()) is tg.Tensor
    assert not nn.Parameter(data, requires_grad=False).requires_grad
    with tg.no_grad():
        p.mul_(3)  # shares storage with data, as PyTorch's Parameter(data)
    assert data.tolist() == [3.0, 6.0]
    (p * p).sum().backward()
    assert p.grad.tolist() == [6.0, 12.0]
    q = copy.deepcopy(p)
    assert isinstance(q, nn.Parameter) and q.tolist() == p.tolist() and q.data_ptr() != \
        p.data_ptr()
    assert nn.Parameter().shape == (0,)


def test_registration_and_traversal():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == ["scale", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert [n for n, _ in net.named_buffers()] == ["running", "scratch"]
    assert [n for n, _ in net.named_children()] == ["fc1", "act", "fc2"]
    assert [n for n, _ in net.named_modules()] == ["", "fc1", "act", "fc2"]
    assert len(list(net.parameters(recurse=False))) == 1
    assert net.fc1.weight is net._modules["fc1"]._parameters["weight"]
    assert net.get_submodule("fc2") is net.fc2
    assert net.get_parameter("fc2.bias") is net.fc2.bias
    assert "fc1" in dir(net)
    net.fc1 = nn.Linear(4, 3)  # re-assigning a module replaces it
    assert sum(1 for _ in net.children()) == 3
    del net.act
    assert [n for n, _ in net.named_children()] == ["fc1", "fc2"]


def test_setattr_rules():
    net = Net()
    with pytest.raises(TypeError, match="cannot assign"):
        net.scale = tg.ones(2)  # a plain tensor to a parameter's name
    net.scale = None
    assert "scale" in net._parameters and net.scale is None
    assert next(n for n, _ in net.named_parameters()) == "fc1.weight"
    net.running = tg.ones(2)  # a tensor to a buffer's name stays a buffer
    assert net._buffers["running"].tolist() == [1.0, 1.0]
    with pytest.raises(TypeError, match="buffer"):
        net.running = 3
    net.plain = 5  # ordinary attributes are ordinary
    assert net.plain == 5 and "plain" not in net._parameters
    with pytest.raises(AttributeError, match="nothing"):
        _ = net.nothing
    with pytest.raises(KeyError, match="already exists"):
        net.register_buffer("plain", tg.zeros(1))
    with pytest.raises(KeyError, match=r"\."):
        net.register_parameter("a.b", None)
    with pytest.raises(ValueError, match="non-leaf"):
        net.register_parameter("bad", _nonleaf_parameter())

    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(tg.ones(1))

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Early()


def _nonleaf_parameter():
    p = nn.Parameter(tg.ones(1))
    p._grad_fn = (tg.ones(1, requires_grad=True) * 2).grad_fn  # forge history
    return p


def test_weight_tying_counts_a_shared_parameter_once():
    emb = nn.Embedding(5, 3)
    head = nn.Linear(3, 5, bias=False)
    head.weight = emb.weight
    model = nn.Sequential(emb, head)
    assert len(list(model.parameters())) == 1
    assert list(model.state_dict()) == ["0.weight", "1.weight"]
    assert len(list(model.named_parameters(remove_duplicate=False))) == 2


def test_train_eval_and_zero_grad():
    net = Net()
    assert net.training and net.fc1.training
    assert net.eval() is net
    assert not net.training and not net.fc2.training
    net.train()
    assert net.act.training
    net(tg.randn(2, 4)).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad(set_to_none=False)
    assert all(float(p.grad.abs().sum()) == 0 for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())


def test_to_and_casts_keep_parameter_objects():
    net = Net()
    net(tg.randn(2, 4)).sum().backward()
    w = net.fc1.weight
    assert net.double() is net
    assert net.fc1.weight is w and w.dtype is tg.float64 and w.grad.dtype is tg.float64
    assert net.running.dtype is tg.float64
    net.to(tg.float32)
    assert w.dtype is tg.float32
    net.to("cpu", dtype=tg.float16)
    assert w.dtype is tg.float16
    net.float()
    net.register_buffer("steps", tg.tensor([3]))
    net.half()
    assert net.steps.dtype is tg.int64  # only floating point tensors change dtype
    net.cpu()
    with pytest.raises(TypeError, match="floating point"):
        net.to(tg.int32)
    assert w.is_leaf and w.requires_grad


def test_state_dict_round_trip():
    tg.manual_seed(0)
    a, b = Net(), Net()
    sd = a.state_dict()
    assert list(sd) == ["scale", "running", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert isinstance(sd, OrderedDict)
    assert all(not v.requires_grad and type(v) is tg.Tensor for v in sd.values())
    assert type(a.state_dict(keep_vars=True)["scale"]) is nn.Parameter
    result = b.load_state_dict(sd)
    assert repr(result) == "<All keys matched successfully>"
    x = tg.randn(3, 4)
    np.testing.assert_array_equal(a(x).detach().numpy(), b(x).detach().numpy())
    assert b.fc1.weight.data_ptr() != a.fc1.weight.data_ptr()  # copied, not aliased
    c = Net()
    c.load_state_dict(sd, assign=True)
    assert isinstance(c.fc1.weight, nn.Parameter) and c.fc1.weight.requires_grad
    d = Net().double()  # values are cast to the model's dtype
    d.load_state_dict(sd)
    assert d.fc1.weight.dtype is tg.float64


def test_load_state_dict_errors():
    net = Net()
    sd = net.state_dict()
    bad = OrderedDict(sd)
    del bad["fc1.bias"]
    bad["extra"] = tg.zeros(1)
    bad["fc2.weight"] = tg.zeros(2, 4)
    with pytest.raises(RuntimeError) as e:
        Net().load_state_dict(bad)
    msg = str(e.value)
    assert msg.startswith("Error(s) in loading state_dict for Net:\n\t")
    assert 'Missing key(s) in state_dict: "fc1.bias".' in msg
    assert 'Unexpected key(s) in state_dict: "extra".' in msg
    assert ("size mismatch for fc2.weight: copying a param with shape tritongrad.Size([2, 4]) from checkpoint, "
            "the shape in current model is tritongrad.Size([2, 3]).") in msg
    del bad["fc2.weight"]
    res = Net().load_state_dict(bad, strict=False)
    assert res.missing_keys == ["fc1.bias", "fc2.weight"] and res.unexpected_keys == ["extra"]
    bad["fc2.weight"] = tg.zeros(2, 4)
    with pytest.raises(RuntimeError, match="size mismatch"):  # even when not strict
        Net().load_state_dict(bad, strict=False)
    with pytest.raises(RuntimeError, match="expected tritongrad.Tensor or Tensor-like"):
        Net().load_state_dict({**sd, "scale": [1, 2]})
    with pytest.raises(TypeError, match="dict-like"):
        Net().load_state_dict([1, 2])


def test_repr_matches_pytorch_format():
    model = nn.Sequential(nn.Linear(64, 128), nn.GELU(approximate="tanh"), nn.Dropout(0.1),
                          nn.LayerNorm(128), nn.Linear(128, 10, bias=False), nn.Embedding(
                              10, 3, padding_idx=0), nn.Tanh())
    assert repr(model) == (
        "Sequential(\n"
        "  (0): Linear(in_features=64, out_features=128, bias=True)\n"
        "  (1): GELU(approximate='tanh')\n"
        "  (2): Dropout(p=0.1, inplace=False)\n"
        "  (3): LayerNorm((128,), eps=1e-05, elementwise_affine=True, bias=True)\n"
        "  (4): Linear(in_features=128, out_features=10, bias=False)\n"
        "  (5): Embedding(10, 3, padding_idx=0)\n"
        "  (6): Tanh()\n"
        ")")
    nested = nn.Sequential(nn.Sequential(nn.ReLU()))
    assert repr(nested) == "Sequential(\n  (0): Sequential(\n    (0): ReLU()\n  )\n)"


def test_forward_hooks_apply_and_call():
    net = Net()
    seen = []
    h1 = net.register_forward_pre_hook(lambda m, args: (args[0] * 0,))
    h2 = net.fc2.register_forward_hook(lambda m, args, out: seen.append(out.shape))
    out = net(tg.randn(2, 4))
    assert seen == [(2, 2)]
    h2.remove()
    expected = net.fc2(net.fc1.bias.relu().unsqueeze(0)) * net.scale  # the input was zeroed
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy() * np.ones((2, 1)),
                               rtol=1e-6)
    h1.remove()
    net(tg.randn(2, 4))
    assert len(seen) == 1
    names = []
    assert net.apply(lambda m: names.append(type(m).__name__)) is net
    assert names == ["Linear", "ReLU", "Linear", "Net"]
    with pytest.raises(NotImplementedError, match="forward"):
        nn.Module()(1)


def test_sequential_and_module_list():
    a, b, c = nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)
    seq = nn.Sequential(a, b, c)
    assert len(seq) == 3 and seq[0] is a and seq[-1] is c and list(seq) == [a, b, c]
    assert isinstance(seq[1:], nn.Sequential) and list(seq[1:]) == [b, c]
    with pytest.raises(IndexError):
        seq[3]
    assert tuple(seq(tg.randn(5, 2)).shape) == (5, 1)
    named = nn.Sequential(OrderedDict([("inp", a), ("act", b)]))
    assert named.inp is a and [n for n, _ in named.named_children()] == ["inp", "act"]
    seq.append(nn.Sigmoid())
    assert len(seq) == 4
    ml = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    assert len(ml) == 3 and len(list(ml.parameters())) == 6
    ml.append(nn.ReLU())
    ml.insert(0, nn.Tanh())
    assert isinstance(ml[0], nn.Tanh) and len(ml) == 5
    del ml[0]
    assert isinstance(ml[0], nn.Linear)
    md = nn.ModuleDict({"x": nn.ReLU()})
    md["y"] = nn.Linear(1, 1)
    assert list(md) == ["x", "y"] and "y" in md and len(list(md.parameters())) == 2
