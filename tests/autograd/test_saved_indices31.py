"""Index tensors that backward reads are saved tensors (Note [Saved indices] in
autograd/dispatch.py): saved-tensor hooks pack them (so ``save_on_cpu`` sees them), backward
refuses one modified in place since (before, ``i.zero_()`` on max's indices gave a silently
wrong gradient), and the nodes name them as PyTorch's (``_saved_indices``, ``_saved_index``).
An index, mask, condition or target that is an argument of the op is no edge of its node, as
in PyTorch (gather, masked_fill, where, take, masked_select, cross_entropy, nll_loss,
embedding); and ``x[False] = v`` writes nothing, as PyTorch's early return.

Each op runs on both backends; gradients are compared with NumPy references computed from
the indices, with and without hooks, and double backward and forward AD still run through
the recorded rules that now read the indices from ``saved``."""

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import host

_rng = np.random.default_rng(31)
_X = _rng.standard_normal((4, 6))
_SRC = _rng.standard_normal((4, 2))
_ROWS = _rng.standard_normal((3, 6))


def _x(device, requires_grad=True):
    return tg.tensor(_X, dtype=tg.float64, device=device, requires_grad=requires_grad)


def _idx(values, device):
    return tg.tensor(values, dtype=tg.int64, device=device)


def _scatter_ref(shape, dim, index, g):
    """zeros(shape) with g added at index along dim (the gather-type gradient)."""
    out = np.zeros(shape)
    for pos in np.ndindex(*index.shape):
        target = list(pos)
        target[dim] = index[pos]
        out[tuple(target)] += g[pos]
    return out


# (name, run(x, device) -> (out, user_index or None, reference gradient of out.sum()))
def _max(x, device):
    v, i = x.max(1)
    return v, i, _scatter_ref(_X.shape, 1, host(i)[:, None], np.ones((4, 1)))


def _sort(x, device):
    v, i = x.sort(1, descending=True)
    return v, i, np.ones(_X.shape)


def _topk(x, device):
    v, i = x.topk(2, 1)
    return v, i, _scatter_ref(_X.shape, 1, host(i), np.ones((4, 2)))


def _kthvalue(x, device):
    v, i = x.kthvalue(2, 1)
    return v, i, _scatter_ref(_X.shape, 1, host(i)[:, None], np.ones((4, 1)))


def _median(x, device):
    v, i = x.median(1)
    return v, i, _scatter_ref(_X.shape, 1, host(i)[:, None], np.ones((4, 1)))


def _gather(x, device):
    index = np.array([[0, 5, 5], [1, 1, 2], [3, 0, 4], [2, 2, 2]])
    i = _idx(index, device)
    return x.gather(1, i), i, _scatter_ref(_X.shape, 1, index, np.ones(index.shape))


def _index_select(x, device):
    i = _idx([3, 0, 3], device)
    ref = np.zeros(_X.shape)
    np.add.at(ref, [3, 0, 3], 1.0)
    return x.index_select(0, i), i, ref


def _advanced_index(x, device):
    i = _idx([2, 2, 1], device)
    ref = np.zeros(_X.shape)
    np.add.at(ref, [2, 2, 1], 1.0)
    return x[i], i, ref


def _scatter_add(x, device):
    index = np.array([[0, 5], [1, 1], [3, 0], [2, 2]])
    i = _idx(index, device)
    src = tg.tensor(_SRC, dtype=tg.float64, device=device, requires_grad=True)
    # out = x.scatter_add(...) * w: x's gradient is w
    w = tg.tensor(np.arange(24.0).reshape(4, 6), dtype=tg.float64, device=device)
    return x.scatter_add(1, i, src) * w, i, np.arange(24.0).reshape(4, 6)


def _scatter(x, device):
    index = np.array([[0], [1], [3], [2]])
    i = _idx(index, device)
    ref = np.ones(_X.shape)
    ref[np.arange(4), index[:, 0]] = 0.0  # the overwritten places get no gradient
    return x.scatter(1, i, 7.0), i, ref


def _index_add(x, device):
    i = _idx([1, 1, 3], device)
    src = tg.tensor(_ROWS, dtype=tg.float64, device=device)
    w = tg.tensor(np.arange(24.0).reshape(4, 6), dtype=tg.float64, device=device)
    return x.index_add(0, i, src) * w, i, np.arange(24.0).reshape(4, 6)


def _index_put(x, device):
    i = _idx([1, 3], device)
    ref = np.ones(_X.shape)
    ref[[1, 3]] = 0.0
    return x.index_put((i,), tg.zeros(6, dtype=tg.float64, device=device)), i, ref


def _masked_fill(x, device):
    mask = tg.tensor(_X[0] > 0, device=device)  # (6,): broadcast over the rows
    ref = np.where(_X[0] > 0, 0.0, 1.0)[None].repeat(4, 0)
    return x.masked_fill(mask, -1.0), mask, ref


CASES = {"max": _max, "sort": _sort, "topk": _topk, "kthvalue": _kthvalue, "median": _median,
         "gather": _gather, "index_select": _index_select, "advanced_index": _advanced_index,
         "scatter_add": _scatter_add, "scatter": _scatter, "index_add": _index_add,
         "index_put": _index_put, "masked_fill": _masked_fill}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_hooks_pack_the_index_and_backward_unpacks_it(device, name):
    packed = []

    def pack(t):
        packed.append(t._dtype)
        return ("packed", t.detach().cpu().numpy().copy(), t._dtype)

    def unpack(p):
        _, a, dt = p
        return tg.tensor(a, dtype=dt, device=device)

    x = _x(device)
    with tg.autograd.graph.saved_tensors_hooks(pack, unpack):
        out, _, ref = CASES[name](x, device)
    assert tg.int64 in packed or tg.bool in packed, f"{name}: its index was not packed"
    out.sum().backward()
    np.testing.assert_allclose(host(x.grad), ref, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_index_modified_in_place_is_refused(device, name):
    x = _x(device)
    out, index, ref = CASES[name](x, device)
    g, = tg.autograd.grad(out.sum(), x, retain_graph=True)  # unmodified: the reference
    np.testing.assert_allclose(host(g), ref, rtol=0, atol=1e-12)
    index.zero_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_save_on_cpu_sees_the_indices(device):
    x = _x(device)
    with tg.autograd.graph.save_on_cpu():
        v, i = x.max(1)
        y = x.gather(1, i[:, None])
    for raw in (v.grad_fn._raw_saved_indices, y.grad_fn._raw_saved_index):
        device_was, packed = raw.data  # (save_on_cpu packs (device, tensor), as PyTorch's)
        assert packed.device.type == "cpu" and packed.dtype is tg.int64
    (v.sum() + y.sum()).backward()
    ref = 2 * _scatter_ref(_X.shape, 1, host(i)[:, None], np.ones((4, 1)))
    np.testing.assert_allclose(host(x.grad), ref, rtol=0, atol=1e-12)


def test_saved_index_names_are_pytorchs():
    x = _x("cpu")
    v, i = x.max(0)
    assert np.array_equal(host(v.grad_fn._saved_indices), host(i))
    v, i = x.sort(1)
    assert np.array_equal(host(v.grad_fn._saved_indices), host(i))
    index = _idx([[1, 0], [2, 2], [0, 0], [5, 4]], "cpu")
    y = x.gather(1, index)
    assert np.array_equal(host(y.grad_fn._saved_index), host(index))
    y.sum().backward()
    with pytest.raises(RuntimeError, match="freed"):
        y.grad_fn._saved_index


def test_an_index_is_no_edge_as_in_pytorch():
    x = _x("cpu")
    y = x.gather(1, _idx([[0], [1], [2], [3]], "cpu"))
    assert len(y.grad_fn.next_functions) == 1
    assert len(x.index_select(0, _idx([1], "cpu")).grad_fn.next_functions) == 1
    mask = tg.tensor(_X > 0)
    assert len(x.masked_fill(mask, 0.0).grad_fn.next_functions) == 1
    v = tg.tensor(2.0, dtype=tg.float64, requires_grad=True)
    y = x.masked_fill(mask, v)  # self and the 0-d value
    assert [type(e[0]).__name__ for e in y.grad_fn.next_functions] == ["AccumulateGrad"] * 2
    assert np.array_equal(host(y.grad_fn._saved_mask), _X > 0)


def test_masked_fill_with_a_broadcast_mask_and_a_tensor_value():
    mask = tg.tensor(_rng.standard_normal((3, 4, 6)) > 0)
    x = tg.tensor(_rng.standard_normal((4, 1)), dtype=tg.float64, requires_grad=True)
    v = tg.tensor(0.5, dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradcheck(lambda a, b: a.masked_fill(mask, b), (x, v),
                                 check_forward_ad=True)
    assert tg.autograd.gradgradcheck(lambda a, b: a.masked_fill(mask, b), (x, v))
    (x.masked_fill(mask, v) * 3).sum().backward()
    m = host(mask)
    np.testing.assert_allclose(host(x.grad), 3 * (~m).sum((0, 2))[:, None], rtol=0, atol=0)
    np.testing.assert_allclose(host(v.grad), 3 * m.sum(), rtol=0, atol=0)


@pytest.mark.parametrize("name", ["max", "sort", "gather", "advanced_index", "scatter_add",
                                  "masked_fill"])
def test_double_backward_and_forward_ad_read_the_saved_indices(name):
    # the recorded rules read the indices from ``saved`` as tensors
    def f(x):
        out, _, _ = CASES[name](x, "cpu")
        return out

    x = _x("cpu")
    assert tg.autograd.gradcheck(f, (x,), check_forward_ad=True)
    assert tg.autograd.gradgradcheck(f, (x,))


def test_scatter_reduce_rule_reads_its_saved_index():
    index = _idx([[0, 0], [1, 1], [3, 3], [2, 5]], "cpu")
    src = tg.tensor(_SRC, dtype=tg.float64, requires_grad=True)
    x = _x("cpu")
    assert tg.autograd.gradcheck(lambda a, s: a.scatter_reduce(1, index, s, "sum"), (x, src),
                                 check_forward_ad=True)
    y = x.scatter_reduce(1, index, src, "amax")
    index.zero_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_max_pool_indices_are_saved():
    x = tg.tensor(_rng.standard_normal((1, 2, 4, 4)), dtype=tg.float64, requires_grad=True)
    out, idx = tg.nn.functional.max_pool2d(x, 2, return_indices=True)
    ref = np.zeros(16 * 2)
    flat = host(idx).reshape(2, -1) + 16 * np.arange(2)[:, None]
    ref[flat.ravel()] = 1.0
    g, = tg.autograd.grad(out.sum(), x, retain_graph=True)
    np.testing.assert_allclose(host(g).ravel(), ref, rtol=0, atol=0)
    idx.zero_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_matches_pytorch_on_the_version_check():
    torch = pytest.importorskip("torch")
    t = torch.tensor(_X, requires_grad=True)
    v, i = t.max(1)
    i.zero_()
    with pytest.raises(RuntimeError) as theirs:
        v.sum().backward()
    x = _x("cpu")
    v, i = x.max(1)
    i.zero_()
    with pytest.raises(RuntimeError) as ours:
        v.sum().backward()
    # the same message but for the library's name in the hint
    assert str(ours.value).split("Hint")[0].replace("tritongrad", "torch") == \
        str(theirs.value).split("Hint")[0]


def test_setitem_with_false_writes_nothing():
    # PyTorch returns early for the index False: no write, no history, the value unused
    x = _x("cpu")
    v = tg.ones(6, dtype=tg.float64, requires_grad=True)
    y = x.clone()
    y[False] = v
    assert y.grad_fn.name() == "CloneBackward0" and y._version == 0
    y.sum().backward()
    assert v.grad is None
    np.testing.assert_array_equal(host(x.grad), np.ones(_X.shape))
    with pytest.raises(TypeError, match="str"):
        y[False] = "a"
    y = x.detach().clone()
    y[tg.tensor(False)] = 5.0  # a 0-d bool tensor is a mask that selects nothing
    np.testing.assert_array_equal(host(y), _X)


def test_take_is_one_node_with_pytorchs_error(device):
    x = _x(device)
    index = _idx([[1, -1], [1, 5]], device)
    y = x.take(index)
    assert y.grad_fn.name() == "TakeBackward0" and len(y.grad_fn.next_functions) == 1
    y.sum().backward()
    ref = np.zeros(24)
    np.add.at(ref, [1, 23, 1, 5], 1.0)
    np.testing.assert_array_equal(host(x.grad).ravel(), ref)
    np.testing.assert_array_equal(host(y), _X.ravel()[[[1, 23], [1, 5]]])
    with pytest.raises(IndexError, match="out of range: tried to access index 24 on a tensor "
                                         "of 24 elements."):
        x.take(_idx([24], device))
    assert tg.autograd.gradcheck(lambda a: a.t().take(index), (_x(device),),
                                 check_forward_ad=True)
    assert tg.autograd.gradgradcheck(lambda a: a.take(index), (_x(device),))


def test_masked_select_is_one_node_saving_the_mask(device):
    m = _rng.standard_normal((3, 4, 6)) > 0
    mask = tg.tensor(m, device=device)
    x = tg.tensor(_rng.standard_normal((4, 1)), dtype=tg.float64, device=device,
                  requires_grad=True)
    y = x.masked_select(mask)  # broadcast to (3, 4, 6)
    assert y.grad_fn.name() == "MaskedSelectBackward0"
    np.testing.assert_array_equal(host(y), np.broadcast_to(host(x), m.shape)[m])
    assert np.array_equal(host(y.grad_fn._saved_mask), m)
    (y * 2).sum().backward()
    np.testing.assert_array_equal(host(x.grad)[:, 0], 2 * m.sum((0, 2)))
    assert tg.autograd.gradcheck(lambda a: a.masked_select(mask), (x.detach().requires_grad_(),),
                                 check_forward_ad=True)
    assert tg.autograd.gradgradcheck(lambda a: a.masked_select(mask),
                                     (x.detach().requires_grad_(),))
    s = tg.tensor(3.0, dtype=tg.float64, device=device, requires_grad=True)  # 0-d: 1-D result
    y = s.masked_select(tg.tensor([True, False, True], device=device))
    assert tuple(y.shape) == (2,)
    y.sum().backward()
    assert float(s.grad) == 2.0


def test_loss_targets_and_embedding_indices_are_saved_not_edges(device):
    F = tg.nn.functional
    x = _x(device)
    target = _idx([0, 5, 2, 2], device)
    weight = tg.tensor(np.linspace(0.5, 2.0, 6), dtype=tg.float64, device=device)
    table = tg.tensor(_rng.standard_normal((10, 3)), dtype=tg.float64, device=device,
                      requires_grad=True)
    ids = _idx([[1, 2], [2, 9]], device)
    outs = {"cross_entropy": F.cross_entropy(x, target),
            "nll_loss": F.nll_loss(x, target, weight=weight),
            "embedding": F.embedding(ids, table)}
    for name, out in outs.items():  # one edge each, as PyTorch's
        assert [type(e[0]).__name__ for e in out.grad_fn.next_functions] == ["AccumulateGrad"]
    assert np.array_equal(host(outs["nll_loss"].grad_fn._saved_target), host(target))
    assert np.array_equal(host(outs["embedding"].grad_fn._saved_indices), host(ids))
    # the gradients: nll's is -w[t] at t over the total weight; the table's counts the rows
    ref = np.zeros(_X.shape)
    w = np.linspace(0.5, 2.0, 6)
    ref[np.arange(4), [0, 5, 2, 2]] = -w[[0, 5, 2, 2]] / w[[0, 5, 2, 2]].sum()
    g, = tg.autograd.grad(outs["nll_loss"], x, retain_graph=True)
    np.testing.assert_allclose(host(g), ref, rtol=0, atol=1e-15)
    outs["embedding"].sum().backward(retain_graph=True)
    np.testing.assert_array_equal(host(table.grad)[:, 0], [0, 1, 2, 0, 0, 0, 0, 0, 0, 1])
    packed = []
    with tg.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t._dtype) or t,
                                               lambda t: t):
        F.cross_entropy(x, target)
    assert tg.int64 in packed
    target.zero_()
    ids.zero_()
    for out in outs.values():
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            out.sum().backward(retain_graph=True)
