"""Engine behaviours matched to PyTorch's: node hooks under a partial backward, tensor hooks
and batch-size checks under ``is_grads_batched``, the gradient layout contract warning, the
create_graph warning once per process, and an unpack hook's tensor of the wrong shape.

Each behaviour is tested against explicit expected values (no torch needed); the ``*_torch``
tests check the same expectations against PyTorch when it is installed.
"""

import subprocess
import sys
import warnings

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.autograd import engine

_LAYOUT = ("grad and param do not obey the gradient layout contract. This is not an error, "
           "but may impair performance.")


@pytest.fixture
def fresh_warnings(monkeypatch):
    """The engine's once-per-process warnings, not yet given."""
    monkeypatch.setattr(engine, "_warned", {k: False for k in engine._warned})


def _values(t):
    return None if t is None else np.asarray(t.detach().tolist(), dtype=np.float64)


# -- 1. node hooks under a partial backward -----------------------------------------------------

def _partial_hooks(lib, partial):
    """What the hooks of z = x * y's node see when grad()/backward() needs only x."""
    x = lib.tensor([1., 2.], requires_grad=True)
    y = lib.tensor([3., 4.], requires_grad=True)
    z = x * y
    w = z.sin()
    seen = {}
    z.grad_fn.register_hook(lambda gi, go: seen.update(post=gi, post_out=go))
    z.grad_fn.register_prehook(lambda go: seen.update(pre=go))
    partial(w.sum(), x)
    return seen


@pytest.mark.parametrize("partial", ["grad", "backward"])
def test_node_hooks_see_none_for_input_gradients_not_needed(partial):
    run = ((lambda out, x: tg.autograd.grad(out, [x])) if partial == "grad"
           else (lambda out, x: out.backward(inputs=[x])))
    seen = _partial_hooks(tg, run)
    cos = np.cos(np.array([3., 8.]))  # d sin(z)/dz at z = x * y
    gx, gy = seen["post"]
    np.testing.assert_allclose(_values(gx), cos * np.array([3., 4.]))
    assert gy is None  # y's gradient is not needed: PyTorch does not compute it
    (go,) = seen["pre"]
    np.testing.assert_allclose(_values(go), cos)  # the node's own output gradient, all there


def test_node_hooks_see_every_gradient_in_a_full_backward():
    x = tg.tensor([1., 2.], requires_grad=True)
    y = tg.tensor([3., 4.], requires_grad=True)
    z = x * y
    seen = []
    z.grad_fn.register_hook(lambda gi, go: seen.append(gi))
    z.sum().backward()
    np.testing.assert_allclose(_values(seen[0][1]), [1., 2.])


def test_post_hook_may_still_replace_the_needed_gradient_under_grad():
    x = tg.tensor([1., 2.], requires_grad=True)
    y = tg.tensor([3., 4.], requires_grad=True)
    z = x * y
    z.grad_fn.register_hook(lambda gi, go: (gi[0] * 10, gi[1]))
    (gx,) = tg.autograd.grad(z.sum(), [x])
    np.testing.assert_allclose(_values(gx), [30., 40.])


@pytest.mark.parametrize("partial", ["grad", "backward"])
def test_node_hooks_under_partial_backward_torch(partial):
    torch = pytest.importorskip("torch")
    run = {"grad": lambda out, x, lib: lib.autograd.grad(out, [x]),
           "backward": lambda out, x, lib: out.backward(inputs=[x])}[partial]
    ours = _partial_hooks(tg, lambda out, x: run(out, x, tg))
    theirs = _partial_hooks(torch, lambda out, x: run(out, x, torch))
    for key in ("post", "pre", "post_out"):
        assert len(ours[key]) == len(theirs[key])
        for a, b in zip(ours[key], theirs[key]):
            assert (a is None) == (b is None)
            if a is not None:
                np.testing.assert_allclose(_values(a), b.detach().numpy())


# -- 2. is_grads_batched: tensor hooks, batch sizes ---------------------------------------------

def _batched_hooks(lib):
    x = lib.tensor([1., 2., 3.], requires_grad=True)
    y = x * 2
    shapes = []
    y.register_hook(lambda g: shapes.append(tuple(g.shape)))
    y.register_hook(lambda g: g * 2)
    (r,) = lib.autograd.grad(y, x, lib.eye(3), is_grads_batched=True)
    return shapes, r


def test_tensor_hooks_see_one_entry_of_a_batched_gradient():
    shapes, r = _batched_hooks(tg)
    assert shapes and set(shapes) == {(3,)}  # one entry's shape, never the batch's (3, 3)
    np.testing.assert_allclose(_values(r), 4 * np.eye(3))  # the replacement, per entry


def test_batched_tensor_hook_may_change_some_entries_only():
    x = tg.tensor([1., 2.], requires_grad=True)
    y = x * 3
    y.register_hook(lambda g: g * 0 if float(g[0]) == 1. else None)
    (r,) = tg.autograd.grad(y, x, tg.tensor([[1., 0.], [0., 1.]]), is_grads_batched=True)
    np.testing.assert_allclose(_values(r), [[0., 0.], [0., 3.]])


def test_batched_tensor_hook_of_wrong_shape_is_refused():
    x = tg.tensor([1., 2.], requires_grad=True)
    y = x * 3
    y.register_hook(lambda g: g[:1])
    with pytest.raises(RuntimeError, match="has changed the size of value"):
        tg.autograd.grad(y, x, tg.eye(2), is_grads_batched=True)


def test_batch_size_mismatch_is_a_value_error():
    a = tg.tensor([1., 2.], requires_grad=True)
    b = tg.tensor([1., 2., 3.], requires_grad=True)
    with pytest.raises(ValueError, match=r"got sizes \[2, 3\] for the mapped dimension"):
        tg.autograd.grad([a * 1, b * 1], [a, b], [tg.ones(2, 2), tg.ones(3, 3)],
                         is_grads_batched=True)


def test_batched_hooks_and_batch_mismatch_torch():
    torch = pytest.importorskip("torch")
    ours, theirs = _batched_hooks(tg), _batched_hooks(torch)
    assert set(ours[0]) == set(theirs[0])
    np.testing.assert_allclose(_values(ours[1]), theirs[1].numpy())
    a = torch.tensor([1., 2.], requires_grad=True)
    b = torch.tensor([1., 2., 3.], requires_grad=True)
    with pytest.raises(ValueError, match=r"got sizes \[2, 3\] for the mapped dimension"):
        torch.autograd.grad([a * 1, b * 1], [a, b], [torch.ones(2, 2), torch.ones(3, 3)],
                            is_grads_batched=True)


# -- 3. the gradient layout contract ------------------------------------------------------------

def _layout_warnings(lib, make_p, make_grad, create_graph=False):
    p = make_p(lib)
    p.grad = make_grad(lib)
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        (p * 2).sum().backward(create_graph=create_graph)
    return p, [str(w.message).split(" (Triggered internally")[0] for w in ws
               if "gradient layout contract" in str(w.message)]


_CASES = {  # param, the .grad the user sets, the strides PyTorch names or None (no warning)
    "transposed": (lambda lib: lib.zeros(3, 4, requires_grad=True),
                   lambda lib: lib.zeros(4, 3).t(), ([3, 4], [1, 3], [4, 1])),
    "strided": (lambda lib: lib.zeros(3, 4, requires_grad=True),
                lambda lib: lib.zeros(3, 8)[:, ::2], ([3, 4], [8, 2], [4, 1])),
    "size_one_dim": (lambda lib: lib.zeros(1, 4, requires_grad=True),
                     lambda lib: lib.zeros(4, 2)[:, :1].t(), ([1, 4], [1, 2], [4, 1])),
    "non_dense_param": (lambda lib: lib.zeros(3, 8)[:, ::2].detach().requires_grad_(),
                        lambda lib: lib.zeros(4, 3).t(), ([3, 4], [1, 3], [8, 2])),
    "same_layout": (lambda lib: lib.zeros(4, 3).t().detach().requires_grad_(),
                    lambda lib: lib.zeros(4, 3).t(), None),
    "contiguous_grad_non_dense_param": (lambda lib: lib.zeros(3, 8)[:, ::2].detach()
                                        .requires_grad_(), lambda lib: lib.zeros(3, 4), None),
}


def _expected(case):
    want = _CASES[case][2]
    if want is None:
        return []
    sizes, g_strides, p_strides = want
    return [f"{_LAYOUT}\ngrad.sizes() = {sizes}, strides() = {g_strides}\n"
            f"param.sizes() = {sizes}, strides() = {p_strides}"]


@pytest.mark.parametrize("case", sorted(_CASES))
def test_layout_contract_warning(case, fresh_warnings):
    make_p, make_grad, _ = _CASES[case]
    p, got = _layout_warnings(tg, make_p, make_grad)
    assert got == _expected(case)
    np.testing.assert_allclose(_values(p.grad), np.full(tuple(p.shape), 2.))
    assert p.grad.stride() == make_grad(tg).stride()  # rule 3: the user's strides kept


def test_layout_contract_warning_once_per_process(fresh_warnings):
    make_p, make_grad, _ = _CASES["transposed"]
    assert len(_layout_warnings(tg, make_p, make_grad)[1]) == 1
    assert _layout_warnings(tg, make_p, make_grad)[1] == []


def test_layout_contract_warning_with_create_graph_is_its_own_site(fresh_warnings):
    # a result of another layout than the param's warns; ours is row-major, as the param
    make_p, make_grad, _ = _CASES["transposed"]
    _layout_warnings(tg, make_p, make_grad)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = tg.zeros(4, 3).t().detach().requires_grad_()  # a transposed param
        p.grad = tg.zeros(3, 4)
        with warnings.catch_warnings(record=True) as ws:
            warnings.simplefilter("always")
            (p * 2).sum().backward(create_graph=True)
    got = [str(w.message) for w in ws if "gradient layout contract" in str(w.message)]
    assert got == [f"{_LAYOUT}\ngrad.sizes() = [3, 4], strides() = [4, 1]\n"
                   f"param.sizes() = [3, 4], strides() = [1, 3]"]


_TORCH_LAYOUT = """
import sys, warnings, torch
sys.path.insert(0, {path!r})
from test_engine_parity32 import _CASES, _layout_warnings
print(repr(_layout_warnings(torch, *_CASES[{case!r}][:2])[1]))
"""


@pytest.mark.parametrize("case", ["transposed", "same_layout", "non_dense_param"])
def test_layout_contract_warning_torch(case):
    pytest.importorskip("torch")
    import os
    # a fresh process each: PyTorch warns once per process
    code = _TORCH_LAYOUT.format(path=os.path.dirname(__file__), case=case)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert eval(out.strip().splitlines()[-1]) == _expected(case)


# -- 4. the create_graph reference-cycle warning, once per process ------------------------------

def _create_graph_warnings(lib, times=3):
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        for _ in range(times):
            p = lib.tensor([1., 2.], requires_grad=True)
            (p * p).sum().backward(create_graph=True)
    return [w for w in ws if "Using backward() with create_graph=True" in str(w.message)]


def test_create_graph_warning_once_per_process(fresh_warnings):
    ws = _create_graph_warnings(tg)
    assert len(ws) == 1 and ws[0].category is UserWarning
    assert "reference cycle between the parameter and its gradient" in str(ws[0].message)
    assert _create_graph_warnings(tg) == []


def test_create_graph_warning_once_per_process_torch():
    pytest.importorskip("torch")
    code = ("import warnings, torch\n"
            "with warnings.catch_warnings(record=True) as ws:\n"
            "    warnings.simplefilter('always')\n"
            "    for _ in range(3):\n"
            "        p = torch.tensor([1., 2.], requires_grad=True)\n"
            "        (p * p).sum().backward(create_graph=True)\n"
            "print(sum('create_graph=True' in str(w.message) for w in ws))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert out.split()[-1] == "1"


# -- 5. an unpack hook's tensor of the wrong shape ----------------------------------------------

def _unpacked_wrong_shape(lib, unpack):
    z = lib.tensor([[1., 2.], [3., 4.]], requires_grad=True)
    with lib.autograd.graph.saved_tensors_hooks(lambda t: t, unpack):
        out = (z * z).sum()
    out.backward()
    return z.grad


def test_unpack_hook_of_wrong_shape_raises_runtime_error():
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(2\) must match the size of "
                                           r"tensor b \(4\) at non-singleton dimension 1"):
        _unpacked_wrong_shape(tg, lambda t: t.reshape(4))


def test_unpack_hook_of_a_broadcastable_shape_is_let_through():
    # (as PyTorch: the rule broadcasts it) d(z * z)/dz with both saved z unpacked as [[1, 2]]
    g = _unpacked_wrong_shape(tg, lambda t: t[:1])
    np.testing.assert_allclose(_values(g), [[2., 4.], [2., 4.]])


def test_unpack_hook_of_wrong_shape_torch():
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(2\) must match the size of "
                                           r"tensor b \(4\) at non-singleton dimension 1"):
        _unpacked_wrong_shape(torch, lambda t: t.reshape(4))
    np.testing.assert_allclose(_unpacked_wrong_shape(torch, lambda t: t[:1]).numpy(),
                               [[2., 4.], [2., 4.]])
