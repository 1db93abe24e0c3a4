"""The state-dict protocol of nn.Module, as PyTorch's: per-module metadata versions,
``_save_to_state_dict``/``_load_from_state_dict`` as override points, extra state, the four
hook kinds, lazy modules loading before their first forward, and BatchNorm's version-1
checkpoints (no ``num_batches_tracked``)."""

import io
import warnings
from collections import OrderedDict

import numpy as np
import pytest

import tritongrad as tg
from tritongrad import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)
        self.bn = nn.BatchNorm1d(2)


def test_metadata_records_each_modules_version():
    sd = Net().state_dict()
    assert list(sd) == ["fc.weight", "fc.bias", "bn.weight", "bn.bias", "bn.running_mean",
                        "bn.running_var", "bn.num_batches_tracked"]
    assert dict(sd._metadata) == {"": {"version": 1}, "fc": {"version": 1},
                                  "bn": {"version": 2}}
    with pytest.warns(FutureWarning, match="Positional args are being deprecated"):
        sd2 = nn.Linear(2, 1).state_dict(None, "p.")
    assert list(sd2) == ["p.weight", "p.bias"] and sd2._metadata == {"p": {"version": 1}}


def test_metadata_survives_save_and_load():
    buf = io.BytesIO()
    tg.save(Net().state_dict(), buf)
    buf.seek(0)
    sd = tg.load(buf)
    assert dict(sd._metadata) == {"": {"version": 1}, "fc": {"version": 1},
                                  "bn": {"version": 2}}


class Renamed(nn.Module):
    """Version 2 renamed ``old_w`` to ``w``; loading a version-1 dict converts it."""

    _version = 2

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(tg.zeros(2))

    def _load_from_state_dict(self, sd, prefix, local_metadata, strict, missing, unexpected,
                              errors):
        if local_metadata.get("version", 1) < 2 and prefix + "old_w" in sd:
            sd[prefix + "w"] = sd.pop(prefix + "old_w")
        super()._load_from_state_dict(sd, prefix, local_metadata, strict, missing,
                                      unexpected, errors)


def test_load_from_state_dict_override_sees_version_and_prefix():
    model = nn.Sequential(Renamed())
    old = OrderedDict([("0.old_w", tg.tensor([1.0, 2.0]))])
    old._metadata = OrderedDict([("", {"version": 1}), ("0", {"version": 1})])
    assert str(model.load_state_dict(old)) == "<All keys matched successfully>"
    np.testing.assert_array_equal(model[0].w.detach().numpy(), [1.0, 2.0])
    assert "0.old_w" in old  # the caller's dict is not edited: load works on a copy
    new = OrderedDict([("0.old_w", tg.tensor([3.0, 4.0]))])
    new._metadata = OrderedDict([("0", {"version": 2})])  # no conversion for version 2
    res = model.load_state_dict(new, strict=False)
    assert res.missing_keys == ["0.w"] and res.unexpected_keys == ["0.old_w"]


class Counter(nn.Linear):
    def __init__(self):
        super().__init__(2, 2)
        self.calls = 0

    def get_extra_state(self):
        return {"calls": self.calls}

    def set_extra_state(self, state):
        self.calls = state["calls"]


def test_extra_state_round_trip_and_keys():
    a = Counter()
    a.calls = 7
    sd = a.state_dict()
    assert list(sd) == ["weight", "bias", "_extra_state"]
    b = Counter()
    b.load_state_dict(sd)
    assert b.calls == 7
    del sd["_extra_state"]
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "_extra_state"'):
        b.load_state_dict(sd)
    plain = nn.Linear(2, 2)
    res = plain.load_state_dict({**plain.state_dict(), "_extra_state": 1}, strict=False)
    assert res.unexpected_keys == ["_extra_state"]
    with pytest.raises(RuntimeError, match="should never be called"):
        plain.get_extra_state()


def test_state_dict_hooks():
    m = Net()
    seen = []
    h1 = m.fc.register_state_dict_pre_hook(lambda mod, prefix, kv: seen.append((prefix, kv)))
    h2 = m.register_state_dict_post_hook(
        lambda mod, sd, prefix, meta: sd.pop("bn.num_batches_tracked"))
    with pytest.raises(RuntimeError, match="state_dict post-hook must return None"):
        m.state_dict()  # pop returns the tensor: an in-place post hook must return None
    h2.remove()
    h3 = m.register_state_dict_post_hook(
        lambda mod, sd, prefix, meta: sd.__delitem__(prefix + "bn.num_batches_tracked"))
    sd = m.state_dict(prefix="net.", keep_vars=True)
    assert "net.bn.num_batches_tracked" not in sd and sd["net.fc.weight"] is m.fc.weight
    assert seen[-1] == ("net.fc.", True)
    h1.remove()
    h3.remove()
    n = len(seen)
    m._register_state_dict_hook(lambda mod, sd, prefix, meta: {"only": 1})  # may replace
    assert m.state_dict() == {"only": 1} and len(seen) == n


def test_load_state_dict_hooks():
    m = Net()
    sd = Net().state_dict()
    calls = []

    def pre(module, state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
        calls.append((type(module).__name__, prefix, local_metadata, strict))
        state_dict[prefix + "bias"] = tg.full((2,), 5.0)

    h = m.fc.register_load_state_dict_pre_hook(pre)
    m.load_state_dict(sd)
    assert calls == [("Linear", "fc.", {"version": 1}, True)]
    np.testing.assert_array_equal(m.fc.bias.detach().numpy(), [5.0, 5.0])
    assert not np.array_equal(sd["fc.bias"].numpy(), [5.0, 5.0])
    h.remove()
    priv = []
    m.bn._register_load_state_dict_pre_hook(lambda *a: priv.append(len(a)))  # no module
    m.load_state_dict(sd)
    assert priv == [7]
    del sd["fc.bias"]
    with pytest.raises(RuntimeError, match="Missing key"):
        m.load_state_dict(sd)
    post = m.register_load_state_dict_post_hook(lambda mod, keys: keys.missing_keys.clear())
    assert str(m.load_state_dict(sd)) == "<All keys matched successfully>"
    post.remove()
    m.register_load_state_dict_post_hook(lambda mod, keys: keys)
    with pytest.raises(AssertionError, match="not expected to return new values"):
        m.load_state_dict(sd, strict=False)


def test_lazy_module_loads_before_first_forward():
    src = nn.Linear(5, 3)
    lazy = nn.LazyLinear(3)
    sd = lazy.state_dict()
    assert all(nn.parameter.is_lazy(t) for t in sd.values())
    nn.LazyLinear(3).load_state_dict(sd)  # uninitialized into uninitialized: stays lazy
    lazy.load_state_dict(src.state_dict())
    assert type(lazy) is nn.LazyLinear and lazy.weight.shape == (3, 5)
    np.testing.assert_array_equal(lazy.weight.detach().numpy(), src.weight.detach().numpy())
    x = tg.randn(4, 5)
    np.testing.assert_allclose(lazy(x).detach().numpy(), src(x).detach().numpy(), rtol=1e-6)
    assert type(lazy) is nn.Linear  # the first forward keeps the values, changes the class
    np.testing.assert_array_equal(lazy.bias.detach().numpy(), src.bias.detach().numpy())
    with pytest.raises(RuntimeError, match="Can't access the shape"):
        nn.Linear(5, 3).load_state_dict(nn.LazyLinear(3).state_dict())


def test_batchnorm_version_1_checkpoint_without_counter():
    bn = nn.BatchNorm1d(2)
    bn.num_batches_tracked.fill_(4)
    old = bn.state_dict()
    del old["num_batches_tracked"]
    old._metadata[""] = {"version": 1}
    target = nn.BatchNorm1d(2)
    assert str(target.load_state_dict(old)) == "<All keys matched successfully>"
    assert target.num_batches_tracked.item() == 0  # its own count, as PyTorch keeps it
    old._metadata[""] = {"version": 2}  # a version-2 dict must have it
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: '
                                           '"num_batches_tracked"'):
        target.load_state_dict(old)


def test_assign_and_old_scalar_format():
    m = nn.Linear(2, 1)
    m.weight.requires_grad_(False)
    new_w, new_b = tg.ones(1, 2), tg.tensor([3.0])
    m.load_state_dict({"weight": new_w, "bias": new_b}, assign=True)
    assert isinstance(m.weight, nn.Parameter) and not m.weight.requires_grad
    assert m.bias.requires_grad and m.bias.item() == 3.0

    class Scalar(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("s", tg.tensor(0.0))

    s = Scalar()
    s.load_state_dict({"s": tg.tensor([2.5])})  # a 0-dim buffer saved as 1 element
    assert s.s.shape == () and s.s.item() == 2.5


def test_mapping_check_and_no_warning_on_clean_load():
    m = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like"):
        m.load_state_dict([("weight", m.weight)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m.load_state_dict(m.state_dict())


def test_old_weight_norm_checkpoint_loads_into_parametrization():
    from tritongrad.nn.utils.parametrizations import weight_norm
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # the old form is deprecated
        old = nn.utils.weight_norm(nn.Linear(3, 2))
    with tg.no_grad():
        old.weight_g.mul_(2.0)
    sd = old.state_dict()
    assert sorted(sd) == ["bias", "weight_g", "weight_v"]
    new = weight_norm(nn.Linear(3, 2))
    assert str(new.load_state_dict(sd)) == "<All keys matched successfully>"
    x = tg.randn(4, 3)
    np.testing.assert_allclose(new(x).detach().numpy(), old(x).detach().numpy(), rtol=1e-6)
