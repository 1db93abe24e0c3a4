"""vmap's argument checks and batch norm rule, and UninitializedParameter's refusal of ops, as
PyTorch: expected behaviour written out, then compared with torch where it is installed."""

import copy
import pickle
import subprocess
import sys

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.autograd import overrides
from tritongrad.nn.parameter import UninitializedBuffer, UninitializedParameter

BN_MSG = ("Batch norm got a batched tensor as input while the running_mean or running_var, "
          "which will be updated in place, were not batched.\nIf you are using a module and do "
          "not need eval mode, please set `track_running_stats` to be False.If you are using a "
          "prebuilt module and do not need eval mode, please see the functorch website for "
          "resources on how to patch your module to work with vmap")
UNINIT = "Attempted to use an uninitialized parameter in"


def _bn_cases(lib):
    """(name, thunk) pairs: vmap of batch and instance norms, training and eval."""
    F = lib.nn.functional
    x = lib.randn(3, 2, 4)
    rm, rv = lib.zeros(4), lib.ones(4)
    bn = lib.nn.BatchNorm1d(4)
    bn_eval = lib.nn.BatchNorm1d(4).eval()
    inn = lib.nn.InstanceNorm1d(2, track_running_stats=True)
    return [
        ("module", lambda: lib.vmap(bn)(x)),
        ("module-eval", lambda: lib.vmap(bn_eval)(x)),
        ("no-stats", lambda: lib.vmap(lib.nn.BatchNorm1d(4, track_running_stats=False))(x)),
        ("F-train", lambda: lib.vmap(lambda a: F.batch_norm(a, rm, rv, training=True))(x)),
        ("F-eval", lambda: lib.vmap(lambda a: F.batch_norm(a, rm, rv, training=False))(x)),
        ("instance", lambda: lib.vmap(inn)(lib.randn(3, 2, 2, 5))),
    ]


def _outcome(thunk):
    try:
        out = thunk()
    except Exception as e:  # noqa: BLE001 - the outcome is what is compared
        return type(e).__name__, str(e)
    return "ok", tuple(out.shape)


# -- batch norm under vmap -------------------------------------------------------------------

def test_batch_norm_tracking_stats_refused_with_pytorchs_message():
    bn = tg.nn.BatchNorm1d(4)
    with pytest.raises(RuntimeError) as e:
        tg.vmap(bn)(tg.randn(3, 2, 4))
    assert str(e.value) == BN_MSG
    # refused before the update: the running statistics are untouched
    np.testing.assert_array_equal(bn.running_mean.numpy(), np.zeros(4))
    np.testing.assert_array_equal(bn.running_var.numpy(), np.ones(4))
    with pytest.raises(RuntimeError, match="Batch norm got a batched tensor"):
        tg.vmap(tg.nn.InstanceNorm1d(2, track_running_stats=True))(tg.randn(3, 2, 2, 5))


def test_batch_norm_without_updates_still_maps():
    x = tg.randn(3, 2, 4, dtype=tg.float64)
    xs = x.numpy()
    ref = (xs - xs.mean(1, keepdims=True)) / np.sqrt(xs.var(1, keepdims=True) + 1e-5)
    out = tg.vmap(tg.nn.BatchNorm1d(4, track_running_stats=False, dtype=tg.float64))(x)
    np.testing.assert_allclose(out.detach().numpy(), ref, rtol=1e-10, atol=1e-12)
    bn = tg.nn.BatchNorm1d(4, dtype=tg.float64).eval()  # eval: running stats read, not written
    np.testing.assert_allclose(tg.vmap(bn)(x).detach().numpy(), xs / np.sqrt(1 + 1e-5),
                               rtol=1e-10)


def test_batch_norm_with_batched_running_stats_updates_each_entry():
    # the statistics vmapped over too (in_dims 0): each entry updates its own row
    x = tg.randn(3, 5, 4, dtype=tg.float64)
    rm, rv = tg.zeros(3, 4, dtype=tg.float64), tg.ones(3, 4, dtype=tg.float64)
    f = tg.vmap(lambda a, m, v: tg.nn.functional.batch_norm(a, m, v, training=True))
    f(x, rm, rv)
    xs = x.numpy()
    np.testing.assert_allclose(rm.numpy(), 0.1 * xs.mean(1), rtol=1e-10)
    np.testing.assert_allclose(rv.numpy(), 0.9 + 0.1 * xs.var(1, ddof=1), rtol=1e-10)


def test_batch_norm_outside_vmap_unchanged():
    bn = tg.nn.BatchNorm1d(4, dtype=tg.float64)
    x = tg.randn(6, 4, dtype=tg.float64)
    bn(x)
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.1 * x.numpy().mean(0), rtol=1e-10)


# -- vmap's arguments --------------------------------------------------------------------------

@pytest.mark.parametrize("chunk_size", [0, -1, False])
def test_chunk_size_not_positive_is_value_error(chunk_size):
    with pytest.raises(ValueError, match=r"chunk_size should be None or greater than 0"):
        tg.vmap(lambda a: a, chunk_size=chunk_size)


@pytest.mark.parametrize("chunk_size", [1.5, True, "2"])
def test_chunk_size_not_int_is_type_error(chunk_size):
    with pytest.raises(TypeError, match="vmap: chunk_size should be None or an int"):
        tg.vmap(lambda a: a, chunk_size=chunk_size)(tg.randn(3))


def test_chunk_size_int_or_none_maps():
    x = tg.randn(5, 2, dtype=tg.float64)
    for cs in (None, 1, 2, 7):
        np.testing.assert_allclose(tg.vmap(lambda a: a * 2, chunk_size=cs)(x).numpy(),
                                   2 * x.numpy())


@pytest.mark.parametrize("in_dims, match", [
    ((0, 0), "in_dims is not compatible with the structure of `inputs`"),
    (1.5, "expected `in_dims` to be int or a \\(potentially nested\\) tuple"),
    (2, "expected in_dim to satisfy -2 <= in_dim < 2"),
    (-3, "expected in_dim to satisfy -2 <= in_dim < 2"),
    (None, "expected `in_dims` to be int or a \\(potentially nested\\) tuple"),
])
def test_in_dims_checked(in_dims, match):
    with pytest.raises(ValueError, match=match):
        tg.vmap(lambda a: a, in_dims=in_dims)(tg.randn(3, 4))


def test_out_dims_and_randomness_checked():
    x = tg.randn(3, 4)
    with pytest.raises(IndexError, match="expected to be in range of \\[-2, 1\\], but got 2"):
        tg.vmap(lambda a: a, out_dims=2)(x)
    with pytest.raises(ValueError, match="out_dims is not compatible with the structure"):
        tg.vmap(lambda a: a, out_dims=(0, 0))(x)
    with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
        tg.vmap(lambda a: a, randomness="bad")
    for r in ("error", "same", "different"):
        assert tuple(tg.vmap(lambda a: a, randomness=r)(x).shape) == (3, 4)


def test_vmap_matches_torch():
    torch = pytest.importorskip("torch")
    got = [(n, _outcome(f)) for n, f in _bn_cases(tg)]
    want = [(n, _outcome(f)) for n, f in _bn_cases(torch)]
    assert got == want
    for cs in (0, -1):
        with pytest.raises(ValueError) as e:
            torch.vmap(lambda a: a, chunk_size=cs)
        with pytest.raises(ValueError) as g:
            tg.vmap(lambda a: a, chunk_size=cs)
        assert str(g.value) == str(e.value)
    with pytest.raises(TypeError):  # (PyTorch: on the call, splitting the batch)
        torch.vmap(lambda a: a, chunk_size=1.5)(torch.randn(3))


# -- UninitializedParameter --------------------------------------------------------------------

def test_uninitialized_parameter_refuses_ops():
    p = UninitializedParameter()
    for op in (lambda: p + 1, lambda: tg.add(p, 1), lambda: p.sum(), lambda: p.numel(),
               lambda: p.detach(), lambda: tg.nn.functional.linear(tg.randn(2, 3), p),
               lambda: UninitializedBuffer() * 2):
        with pytest.raises(ValueError) as e:
            op()
        assert str(e.value).startswith(UNINIT)
        assert "`LazyModule`" in str(e.value) and "dummy batch" in str(e.value)
    assert "torch.nn.parameter.UninitializedBuffer" in _outcome(lambda: UninitializedBuffer()
                                                                 + 1)[1]


def test_uninitialized_parameter_allows_conversions_and_attributes():
    p = UninitializedParameter(dtype=tg.float32)
    assert p.dtype == tg.float32 and p.requires_grad and p.is_leaf and p.grad is None
    assert repr(p) == "<UninitializedParameter>"
    assert tuple(p.size()) == (0,)
    assert p.to(tg.float64).dtype == tg.float64
    assert p.double().dtype == tg.float64
    with pytest.raises(RuntimeError, match="Can't access the shape"):
        p.shape  # noqa: B018


def test_uninitialized_copies_and_pickles_stay_uninitialized():
    for obj in (UninitializedParameter(requires_grad=False), UninitializedBuffer(True)):
        for copied in (copy.deepcopy(obj), pickle.loads(pickle.dumps(obj))):
            assert type(copied) is type(obj) and copied is not obj
            assert copied.requires_grad == obj.requires_grad
    m = copy.deepcopy(tg.nn.LazyBatchNorm1d(dtype=tg.float64))
    x = tg.randn(5, 3, dtype=tg.float64)
    y = m(x).detach().numpy()
    xs = x.numpy()
    np.testing.assert_allclose(y, (xs - xs.mean(0)) / np.sqrt(xs.var(0) + 1e-5), rtol=1e-10)
    np.testing.assert_allclose(m.running_mean.numpy(), 0.1 * xs.mean(0), rtol=1e-10)


def test_materialized_parameter_runs_ops():
    p = UninitializedParameter()
    p.materialize((2, 3))
    assert type(p) is tg.nn.Parameter
    with tg.no_grad():
        p.fill_(1.5)
    np.testing.assert_array_equal((p + 1).detach().numpy(), np.full((2, 3), 2.5, np.float32))


def test_lazy_module_before_and_after_forward():
    m = tg.nn.LazyLinear(3, dtype=tg.float64)
    m.to(tg.float64)
    m.zero_grad()
    assert list(m.state_dict()) == ["weight", "bias"]
    with pytest.raises(ValueError, match=UNINIT):
        m.weight * 2
    x = tg.randn(2, 4, dtype=tg.float64)
    y = m(x)
    ref = x.numpy() @ m.weight.detach().numpy().T + m.bias.detach().numpy()
    np.testing.assert_allclose(y.detach().numpy(), ref, rtol=1e-12)


def test_uninitialized_parameter_matches_torch():
    torch = pytest.importorskip("torch")

    def outcomes(lib):
        U = lib.nn.parameter.UninitializedParameter
        p = U()
        cases = [lambda: p + 1, lambda: p.sum(), lambda: p.numel(), lambda: p.size(),
                 lambda: p.to(lib.float64), lambda: p.requires_grad, lambda: repr(p),
                 lambda: lib.nn.LazyLinear(2).requires_grad_(False)]
        out = []
        for c in cases:
            try:
                r = c()
                out.append(("ok", tuple(r) if "Size" in type(r).__name__ else
                            type(r).__name__))
            except Exception as e:  # noqa: BLE001
                out.append((type(e).__name__, str(e).split(" in ")[0]))
        return out

    assert outcomes(tg) == outcomes(torch)


def test_import_installs_no_check():
    # the class is defined while the package loads: no check installed then (op cost kept),
    # and no circular import (Note [Overrides installed on first use])
    code = ("import tritongrad as tg\nfrom tritongrad.autograd import overrides as o\n"
            "assert not o.active\ntg.nn.Linear(2, 3)(tg.randn(1, 2))\nassert not o.active\n"
            "tg.nn.LazyLinear(3)\nassert o.active\nprint('ok')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


def test_check_removed_when_the_last_lazy_parameter_materializes():
    # (Note [Transient overrides]: a lazy program's ops do not pay the check once its
    # parameters exist; one that still holds an uninitialized parameter, or something else
    # that asked for the check, keeps it)
    code = """
import copy
import tritongrad as tg
from tritongrad.autograd import overrides as o
m = tg.nn.Sequential(tg.nn.LazyLinear(3), tg.nn.ReLU(), tg.nn.LazyBatchNorm1d())
assert o.active
spare = copy.deepcopy(m)
m(tg.ones(5, 4)).sum().backward()
assert o.active  # (spare's parameters are still uninitialized)
try:
    spare[0].weight + 1
    raise SystemExit("no error")
except ValueError:
    pass
spare(tg.ones(2, 4))
assert not o.active
assert abs(float((m[0].weight + 1).sum()) - float(m[0].weight.sum()) - 12) < 1e-4
class Mine(tg.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return "mine"
tg.nn.LazyLinear(2)(tg.ones(1, 3))
assert o.active  # (a class of the user's asked for it too)
assert tg.add(tg.Tensor._make_subclass(Mine, tg.zeros(1)), 1) == "mine"
print("ok")
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


def test_class_defined_while_loading_is_deferred(monkeypatch):
    monkeypatch.setattr(overrides, "_package_loading", lambda: True)
    overrides.deactivate()

    class Late(tg.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return "handled"

    assert not overrides.active  # deferred: nothing installed at definition
    monkeypatch.undo()
    t = tg.Tensor._make_subclass(Late, tg.zeros(2))
    assert overrides.active  # the first instance installed it
    assert tg.add(t, 1) == "handled"
