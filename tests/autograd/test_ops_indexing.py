"""Indexing (autograd/ops/indexing.py): advanced __getitem__/__setitem__ with index tensors,
lists and bool masks mixed with ints/slices/None/Ellipsis (PyTorch's rules: ints select first),
index_put_ (duplicates accumulate), gather/scatter/scatter_add, index_select, masked_fill,
nonzero, masked_select, and the IndexError messages for out-of-range indices."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tritongrad as tg
from tests.helpers import assert_grads_match, t64, host

rng = np.random.default_rng(5)


def idx(values, device):
    return tg.tensor(values, dtype=tg.int64, device=device)


def on(index, like):
    """``index`` (a tensor, or a tuple holding some) on ``like``'s device: the finite
    differences of assert_grads_match run on the CPU, and an index on another device than the
    indexed tensor is refused there as in PyTorch."""
    if isinstance(index, tuple):
        return tuple(on(i, like) for i in index)
    return index.to(like.device) if isinstance(index, tg.Tensor) else index


def torch_style(a, index):
    """PyTorch's getitem on a NumPy array: ints, slices and None first (a view), then NumPy
    advanced indexing of the remaining arrays on that view."""
    items = index if isinstance(index, tuple) else (index,)
    basic, adv_pos, out_dim, n_consumed = [], [], 0, 0
    for ix in items:
        n_consumed += 0 if ix is None or ix is Ellipsis else (
            np.asarray(ix).ndim if np.asarray(ix).dtype == bool else 1)
    for ix in items:
        if ix is Ellipsis:
            k = a.ndim - n_consumed
            basic += [slice(None)] * k
            out_dim += k
        elif ix is None or isinstance(ix, slice):
            basic.append(ix)
            out_dim += 1
        elif isinstance(ix, int):
            basic.append(ix)
        else:
            arr = np.asarray(ix)
            if arr.dtype == bool:
                cols = np.nonzero(arr)
                for c in cols:
                    basic.append(slice(None))
                    adv_pos.append((out_dim, c))
                    out_dim += 1
            else:
                basic.append(slice(None))
                adv_pos.append((out_dim, arr))
                out_dim += 1
    view = a[tuple(basic) + (Ellipsis,)]
    if not adv_pos:
        return view
    key = [slice(None)] * (max(d for d, _ in adv_pos) + 1)
    for d, arr in adv_pos:
        key[d] = arr
    return view[tuple(key)]


CASES = [
    lambda d: idx([2, 0, 2], d),
    lambda d: [1, -1],
    lambda d: (slice(None), [0, 3, 3]),
    lambda d: ([0, 2], [1, 4]),
    lambda d: ([[0, 1], [2, 2]], slice(1, 3)),
    lambda d: (Ellipsis, [3, 0]),
    lambda d: (None, [1, 1], None, slice(None, None, 2)),
    lambda d: ([0, 1], slice(None), [3, 2]),          # separated: indexed dims go first
    lambda d: (1, slice(None), [3, 2]),               # an int selects first (PyTorch)
    lambda d: (idx([2, 1], d), 0),
    lambda d: (slice(1, None), idx(1, d)),            # 0-d index tensor
    lambda d: (idx(1, d), idx(-2, d), idx(3, d)),     # 0-d for every dim: a 0-d result
    lambda d: idx([], d),
    lambda d: (tg.tensor([True, False, True], device=d),),
    lambda d: (slice(None), tg.tensor([False, True, True, False, True], device=d)),
    lambda d: (tg.tensor([[True, False, True, True, False]] * 3, device=d),),
    lambda d: (True,),
    lambda d: (slice(None), False),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_advanced_getitem_values_and_grads(case, device):
    x = t64((3, 5, 4), device)
    index = CASES[case](device)

    def np_index(ix):
        if isinstance(ix, tuple):
            return tuple(np_index(i) for i in ix)
        return host(ix) if isinstance(ix, tg.Tensor) else ix

    out = x[index]
    ref = torch_style(host(x), np_index(index))
    assert tuple(out.shape) == ref.shape and out.dtype is x.dtype
    np.testing.assert_array_equal(host(out), ref)
    if out.numel():
        w = rng.uniform(-1, 1, ref.shape)
        assert_grads_match(lambda v: v[on(index, v)], [x], grad_output=w)


def test_torch_int_rule_and_separated_placement(device):
    x = t64((5, 3, 7, 4), device)
    assert x[:, [0], :, 0].shape == (5, 1, 7)     # PyTorch, not NumPy's (1, 5, 7)
    assert x[[0, 1], :, [2, 3]].shape == (2, 3, 4)  # separated arrays: broadcast dims first
    assert x[:, [0, 1], [2, 3]].shape == (5, 2, 4)  # adjacent: in place
    assert x[..., [1, 2]].shape == (5, 3, 7, 2)
    assert x[None, [0], None].shape == (1, 1, 1, 3, 7, 4)


def test_duplicate_indices_accumulate_gradient(device):
    x = tg.tensor([1.0, 2.0, 3.0], dtype=tg.float64, device=device, requires_grad=True)
    x[[0, 0, 2, 0]].sum().backward()
    assert host(x.grad).tolist() == [3.0, 0.0, 1.0]
    y = t64((4, 3), device).requires_grad_(True)
    (y[[1, 1], [2, 2]] * tg.tensor([2.0, 5.0], dtype=tg.float64, device=device)).sum().backward()
    g = np.zeros((4, 3))
    g[1, 2] = 7.0
    np.testing.assert_array_equal(host(y.grad), g)


def test_advanced_getitem_second_order_and_non_contiguous(device):
    base = t64((4, 6), device)
    assert_grads_match(lambda v: v.t()[[1, 5, 5]][:, ::2] ** 2, [base],
                       grad_output=rng.uniform(-1, 1, (3, 2)))
    x = base.detach().requires_grad_(True)
    g, = tg.autograd.grad((x[[0, 0, 3]] ** 3).sum(), x, create_graph=True)
    g.sum().backward()
    expected = np.zeros((4, 6))
    expected[0] = 2 * 6 * host(base)[0]
    expected[3] = 6 * host(base)[3]
    np.testing.assert_allclose(host(x.grad), expected)


def test_getitem_errors_name_op_index_and_size(device):
    x = tg.ones(3, 4, device=device)
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
        x[[0, 5]]
    with pytest.raises(IndexError, match="index -4 is out of bounds for dimension 0 with size 3"):
        x[idx([-4], device)]
    with pytest.raises(IndexError, match="index 4 is out of bounds for dimension 1 with size 4"):
        x[:, [4]]
    with pytest.raises(IndexError, match="index 9 is out of bounds for dimension 0 with size 3"):
        x[9]  # basic
    with pytest.raises(IndexError, match=r"^__getitem__: index 3 is out of bounds for dimension "
                                         r"0 with size 3$"):
        x[idx([0, 3], device), 1:]
    with pytest.raises(IndexError, match=r"^__setitem__: index -9 is out of bounds"):
        x[[-9]] = 1.0
    with pytest.raises(IndexError, match=r"^index_put_: index 7 is out of bounds for dimension "
                                         r"1 with size 4$"):
        x.index_put_((idx([0], device), idx([7], device)), tg.tensor(1.0, device=device))
    with pytest.raises(IndexError, match="tensors used as indices must be long"):
        x[tg.tensor([0.0], device=device)]
    with pytest.raises(IndexError, match="The shape of the mask"):
        x[tg.tensor([True, False], device=device)]
    with pytest.raises(IndexError, match="too many indices"):
        x[[0], [0], [0]]
    with pytest.raises(IndexError, match="shape mismatch"):
        x[[0, 1], [0, 1, 2]]
    with pytest.raises(TypeError, match="invalid data type 'str'"):  # (PyTorch's type)
        x[["a"]]
    with pytest.raises(IndexError, match="valid indices"):
        x[{}]  # (as PyTorch: not a sequence, no index)


def test_index_tensor_on_another_device_is_moved(device):
    x = t64((4,), device)
    out = x[tg.tensor([3, 1])]  # a CPU index tensor works on either device, as in PyTorch
    assert out.device == x.device
    np.testing.assert_array_equal(host(out), host(x)[[3, 1]])


# -- __setitem__ / index_put_ ---------------------------------------------------------------------

def test_setitem_basic(device):
    x = tg.zeros(3, 4, dtype=tg.float64, device=device)
    x[0] = 1.0
    x[1, 1:3] = tg.tensor([2.0, 3.0], dtype=tg.float64, device=device)
    x[2] = tg.tensor([5.0], device=device)  # broadcast and cast
    x[..., -1] = 7
    assert host(x).tolist() == [[1, 1, 1, 7], [0, 2, 3, 7], [5, 5, 5, 7]]
    x[:] = [[1, 2, 3, 4]] * 3
    assert host(x)[2].tolist() == [1, 2, 3, 4]


def test_setitem_advanced(device):
    x = tg.zeros(3, 4, dtype=tg.float64, device=device)
    v = x._version
    x[[0, 2], [1, 3]] = 9.0
    assert x._version > v
    x[x == 9.0] = -1.0  # mask with a scalar (masked_fill_ path)
    x[:, [0, 2]] = tg.tensor([[1.0, 2.0]], dtype=tg.float64, device=device)
    x[tg.tensor([False, True, False], device=device)] = tg.tensor([4.0], dtype=tg.float64,
                                                                  device=device)
    expected = np.zeros((3, 4))
    expected[[0, 2], [1, 3]] = -1
    expected[:, [0, 2]] = [1, 2]
    expected[1] = 4
    np.testing.assert_array_equal(host(x), expected)
    with pytest.raises(RuntimeError, match="shape mismatch"):
        x[[0, 1]] = tg.ones(3, 4, device=device)


def test_setitem_autograd(device):
    leaf = t64((3, 4), device).requires_grad_(True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        leaf[[0, 1]] = 0.0
    with pytest.raises(RuntimeError, match="view of a leaf Variable"):
        leaf[0] = 0.0
    val = t64((2,), device).requires_grad_(True)
    y = leaf * 2
    y[[0, 2], 1] = val            # advanced: index_put_
    y[1, :2] = val * 3            # basic: copy_ into a view
    w = rng.uniform(-1, 1, (3, 4))
    (y * tg.tensor(w, dtype=tg.float64, device=device)).sum().backward()
    g = 2 * w
    g[[0, 2], 1] = 0
    g[1, :2] = 0
    np.testing.assert_allclose(host(leaf.grad), g)
    np.testing.assert_allclose(host(val.grad), w[[0, 2], 1] + 3 * w[1, :2])
    z = tg.zeros(3, dtype=tg.float64, device=device)
    z[[1]] = val[:1]  # a tensor that needs no grad gets history from the value written
    assert z.requires_grad


def test_index_put_accumulate_duplicates(device):
    x = tg.zeros(5, dtype=tg.float64, device=device)
    x.index_put_((idx([1, 1, 3, 1], device),), tg.tensor([1.0, 2.0, 3.0, 4.0], dtype=tg.float64,
                                                          device=device), accumulate=True)
    assert host(x).tolist() == [0, 7, 0, 3, 0]
    y = tg.ones(2, 3, dtype=tg.float64, device=device)
    out = y.index_put((idx([0, 1], device), idx([2, 2], device)),
                      tg.tensor(5.0, dtype=tg.float64, device=device))
    assert host(out).tolist() == [[1, 1, 5], [1, 1, 5]] and host(y).sum() == 6


def test_index_put_gradients(device):
    x, v = t64((4, 3), device), t64((3,), device)
    ix = (idx([0, 2], device),)
    w = rng.uniform(-1, 1, (4, 3))
    assert_grads_match(lambda a, b: tg.index_put(a, on(ix, a), b), [x, v], grad_output=w)
    assert_grads_match(lambda a, b: tg.index_put(a, on(ix, a), b, accumulate=True), [x, v],
                       grad_output=w)
    dup = (idx([1, 1, 1], device),)
    assert_grads_match(lambda a, b: a.index_put(on(dup, a), b, True), [x, v], grad_output=w)


# -- gather / scatter -----------------------------------------------------------------------------

def test_gather(device):
    x = t64((3, 4), device)
    index = idx([[0, 3, 3], [1, 1, 0]], device)
    out = x.gather(1, index)
    np.testing.assert_array_equal(host(out), np.take_along_axis(host(x)[:2], host(index), 1))
    assert_grads_match(lambda v: tg.gather(v, 1, on(index, v)), [x])
    i0 = idx([[2, 0, 1, 2], [2, 2, 2, 2]], device)
    np.testing.assert_array_equal(host(x.gather(0, i0)), np.take_along_axis(host(x), host(i0), 0))
    assert_grads_match(lambda v: v.gather(0, on(i0, v)) ** 2, [x])
    s = tg.tensor(3.0, device=device)
    assert s.gather(0, idx(0, device)).item() == 3.0


def test_gather_errors(device):
    x = tg.ones(3, 4, device=device)
    # PyTorch's scatter/gather kernels raise a RuntimeError (not IndexError) out of range
    with pytest.raises(RuntimeError, match="^index 4 is out of bounds for dimension 1 with "
                                           "size 4$"):
        x.gather(1, idx([[0, 4]], device))
    with pytest.raises(RuntimeError, match="^index -1 is out of bounds"):
        x.gather(0, idx([[-1]], device))
    with pytest.raises(RuntimeError, match=r"gather\(\): Expected dtype int32/int64 for index"):
        x.gather(0, tg.tensor([[0]], dtype=tg.int16, device=device))
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        x.gather(0, idx([0], device))
    with pytest.raises(RuntimeError, match="Size does not match at dimension 1"):
        x.gather(0, idx([[0] * 5], device))


def test_scatter_and_scatter_add(device):
    x = t64((3, 5), device)
    src = t64((2, 5), device)
    index = idx([[0, 1, 2, 0, 0], [2, 0, 0, 1, 2]], device)
    out = x.scatter(0, index, src)
    ref = host(x).copy()
    for i in range(2):
        for j in range(5):
            ref[host(index)[i, j], j] = host(src)[i, j]
    np.testing.assert_array_equal(host(out), ref)
    dup = idx([[0, 1, 2, 0, 0], [0, 1, 1, 0, 2]], device)
    out = tg.scatter_add(x, 0, dup, src)
    ref = host(x).copy()
    np.add.at(ref, (host(dup), np.arange(5)[None, :]), host(src))
    np.testing.assert_allclose(host(out), ref)
    w = rng.uniform(-1, 1, (3, 5))
    assert_grads_match(lambda a, b: a.scatter(0, on(index, a), b), [x, src], grad_output=w)
    assert_grads_match(lambda a, b: a.scatter_add(0, on(dup, a), b), [x, src], grad_output=w)
    assert_grads_match(lambda a: a.scatter(1, idx([[4], [0]], a.device), 2.5), [x],
                       grad_output=w)
    np.testing.assert_array_equal(host(x.scatter(1, idx([[4], [0]], device), value=2.5))[:2],
                                  np.where(np.eye(5)[[4, 0]] == 1, 2.5, host(x)[:2]))


def test_scatter_src_larger_than_index_and_inplace(device):
    x = tg.zeros(3, 3, dtype=tg.float64, device=device)
    src = t64((3, 4), device)
    x.scatter_(1, idx([[2], [0]], device), src)
    assert host(x)[0, 2] == host(src)[0, 0] and host(x)[1, 0] == host(src)[1, 0]
    assert_grads_match(lambda a, b: a.scatter_add(1, idx([[2, 2], [0, 1]], a.device), b),
                       [t64((3, 3), device), src])
    y = tg.zeros(4, dtype=tg.int64, device=device)
    y.scatter_add_(0, idx([1, 1, 3], device), tg.tensor([5, 6, 7], device=device))
    assert y.tolist() == [0, 11, 0, 7]
    with pytest.raises(RuntimeError, match="^index 4 is out of bounds for dimension 0 with "
                                           "size 4$"):
        y.scatter_add_(0, idx([4], device), tg.tensor([1], device=device))
    y.scatter_(0, idx([1], device), 2, reduce="multiply")
    assert y.tolist() == [0, 22, 0, 7]
    with pytest.raises(RuntimeError, match="reduce argument must be either add or multiply"):
        y.scatter_(0, idx([0], device), 1, reduce="max")


def test_index_select(device):
    x = t64((4, 5), device)
    i = idx([3, 0, 3], device)
    np.testing.assert_array_equal(host(x.index_select(0, i)), host(x)[[3, 0, 3]])
    np.testing.assert_array_equal(host(tg.index_select(x, 1, i)), host(x)[:, [3, 0, 3]])
    assert_grads_match(lambda v: v.index_select(1, on(i, v)) * 2, [x])
    assert x.index_select(0, idx(2, device)).shape == (1, 5)
    assert x.index_select(0, tg.tensor([1], dtype=tg.int32, device=device)).shape == (1, 5)
    with pytest.raises(IndexError, match="^index out of range in self$"):  # PyTorch's
        x.index_select(0, idx([4], device))
    with pytest.raises(IndexError, match="Index is supposed to be a vector"):
        x.index_select(0, idx([[1]], device))


# -- where / masked_fill / nonzero / masked_select ------------------------------------------------

def test_where_broadcasts_promotes_and_routes_gradients(device):
    cond = tg.tensor([[True], [False], [True]], device=device)  # (3, 1)
    x, y = t64((3, 4), device), t64((4,), device)
    out = tg.where(cond, x, y)
    np.testing.assert_array_equal(host(out), np.where(host(cond), host(x), host(y)))
    assert tuple(out.shape) == (3, 4)
    w = rng.uniform(-1, 1, (3, 4))
    assert_grads_match(lambda a, b: tg.where(cond.to(a.device), a, b), [x, y], grad_output=w)
    assert_grads_match(lambda a: a.where(cond.to(a.device), 0.5), [x], grad_output=w)  # method
    ints = tg.where(cond, tg.tensor([1, 2, 3, 4], device=device), 2.5)  # int and a float number
    assert ints.dtype is tg.float32 and host(ints)[1].tolist() == [2.5] * 4
    with pytest.raises(RuntimeError, match="boolean"):
        tg.where(x, x, y)  # a float condition
    with pytest.raises(RuntimeError, match="size of tensor"):
        tg.where(cond, x, t64((2,), device))


def test_masked_fill(device):
    x = t64((3, 4), device)
    mask = tg.tensor([[True, False, False, True]], device=device)
    out = x.masked_fill(mask, -1.0)
    np.testing.assert_array_equal(host(out), np.where(host(mask), -1.0, host(x)))
    assert out.grad_fn is None
    w = rng.uniform(-1, 1, (3, 4))
    assert_grads_match(lambda v: v.masked_fill(mask.to(v.device), 0.5), [x], grad_output=w)
    val = tg.tensor(2.0, dtype=tg.float64, device=device, requires_grad=True)
    y = x.detach().requires_grad_(True)
    out = tg.masked_fill(y, mask, val)
    assert out.grad_fn.name() == "MaskedFillBackward1"
    (out * tg.tensor(w, dtype=tg.float64, device=device)).sum().backward()
    np.testing.assert_allclose(host(val.grad), (w * host(mask)).sum())
    np.testing.assert_allclose(host(y.grad), np.where(host(mask), 0, w))
    i = tg.tensor([1, 2, 3], device=device).masked_fill(tg.tensor([True, False, True],
                                                                  device=device), 2.7)
    assert i.dtype is tg.int64 and i.tolist() == [2, 2, 2]


def test_masked_fill_inplace_and_errors(device):
    x = tg.zeros(2, 3, device=device)
    v = x._version
    x.masked_fill_(tg.tensor([True, False, True], device=device), 5.0)
    assert x._version == v + 1 and host(x).tolist() == [[5, 0, 5], [5, 0, 5]]
    with pytest.raises(RuntimeError, match="only supports boolean masks"):
        x.masked_fill(tg.tensor([1, 0, 1], device=device), 1.0)
    with pytest.raises(RuntimeError, match="0-dimensional value tensor"):
        x.masked_fill(tg.tensor([True, False, True], device=device), tg.ones(2, device=device))
    with pytest.raises(RuntimeError, match="does not broadcast"):
        x.masked_fill_(tg.ones(4, 2, 3, dtype=tg.bool, device=device), 1.0)
    assert x.masked_fill(tg.ones(4, 2, 3, dtype=tg.bool, device=device), 1.0).shape == (4, 2, 3)


def test_nonzero_and_masked_select(device):
    x = tg.tensor([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]], device=device)
    nz = x.nonzero()
    assert nz.dtype is tg.int64 and nz.tolist() == [[0, 1], [1, 0], [1, 2]]
    rows, cols = tg.nonzero(x, as_tuple=True)
    assert rows.tolist() == [0, 1, 1] and cols.tolist() == [1, 0, 2]
    assert tg.zeros(2, 2, device=device).nonzero().shape == (0, 2)
    assert x.masked_select(x > 0).tolist() == [1.5, 2.0]
    assert x.masked_select(tg.tensor([True, False, True], device=device)).tolist() == [
        0.0, 0.0, 2.0, -1.0]
    y = t64((2, 3), device)
    m = tg.tensor([[True, False, True], [False, False, True]], device=device)
    assert_grads_match(lambda v: v.masked_select(m.to(v.device)) ** 2, [y])
    assert_grads_match(lambda v: v[m.to(v.device)] * 3, [y])


# -- property -------------------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_advanced_indexing_property(data):
    """Random shapes and mixes of slices, ints and index arrays: values match the PyTorch-style
    NumPy reference, gradients (duplicates included) match finite differences, and index_put_
    with accumulate matches np.add.at."""
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    x = t64(shape, "cpu")
    n_idx = data.draw(st.integers(1, len(shape)))
    length = data.draw(st.integers(0, 4))
    index = []
    for d in range(len(shape)):
        kind = data.draw(st.sampled_from(["slice", "int", "array"])) if d < n_idx else "slice"
        if kind == "slice":
            index.append(slice(data.draw(st.integers(0, shape[d] - 1)), None))
        elif kind == "int":
            index.append(data.draw(st.integers(-shape[d], shape[d] - 1)))
        else:
            index.append(data.draw(st.lists(st.integers(-shape[d], shape[d] - 1),
                                            min_size=length, max_size=length)))
    index = tuple(index)
    ref = torch_style(x.numpy(), tuple(np.array(i, dtype=np.int64) if isinstance(i, list)
                                       else i for i in index))
    out = x[index]
    assert tuple(out.shape) == ref.shape
    np.testing.assert_array_equal(out.numpy(), ref)
    if out.numel():
        assert_grads_match(lambda v: v[index], [x], grad_output=rng.uniform(-1, 1, ref.shape))
    arrays = [np.array(i, dtype=np.int64) % s for i, s in zip(index, shape)
              if isinstance(i, list)]
    if arrays and all(isinstance(i, list) for i in index[:len(arrays)]):
        target = np.zeros(shape)
        vals = rng.uniform(-1, 1, target[tuple(arrays)].shape)
        np.add.at(target, tuple(arrays), vals)
        got = tg.zeros(shape, dtype=tg.float64)
        got.index_put_(tuple(tg.tensor(a) for a in arrays), tg.tensor(vals), accumulate=True)
        np.testing.assert_allclose(got.numpy(), target)


# -- regressions found against PyTorch ------------------------------------------------------------

def _sum_to(g, shape):
    """g summed back to ``shape`` (the inverse of broadcasting ``shape`` to g.shape)."""
    lead = g.ndim - len(shape)
    g = g.sum(tuple(range(lead))) if lead else g
    dims = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    return g.sum(dims, keepdims=True) if dims else g


def test_setitem_repeated_indices_value_grad_has_value_shape(device):
    # PyTorch: the value's gradient is g gathered at every index (duplicates too), summed back
    # to the value's shape; x's is g zeroed where written
    x = tg.zeros(1, dtype=tg.float64, device=device, requires_grad=True)
    v = tg.tensor([5.0], dtype=tg.float64, device=device, requires_grad=True)
    y = x * 1
    y[[0, 0]] = v
    (y * 3).sum().backward()
    assert v.grad.shape == (1,) and host(v.grad).tolist() == [6.0]
    assert host(x.grad).tolist() == [0.0]
    x = tg.zeros(3, 1, dtype=tg.float64, device=device, requires_grad=True)
    v = tg.tensor([5.0], dtype=tg.float64, device=device, requires_grad=True)
    y = x * 1
    y[1, idx([0, 0], device)] = v
    (y * 2).sum().backward()
    assert v.grad.shape == (1,) and host(v.grad).tolist() == [4.0]
    assert host(x.grad).tolist() == [[2.0], [0.0], [2.0]]
    v = tg.tensor([1.0, 2.0], dtype=tg.float64, device=device, requires_grad=True)
    tg.index_put(tg.zeros(3, dtype=tg.float64, device=device), (idx([2, 2], device),),
                 v).sum().backward()
    assert host(v.grad).tolist() == [1.0, 1.0]


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_setitem_broadcast_value_grad_property(data):
    """x[index] = v with duplicate indices and v broadcasting (size-1 dims, fewer dims, extra
    leading 1s): v's gradient is sum_to(g[index], v.shape), x's is g zeroed at the index."""
    shape = tuple(data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=3)))
    n_adv = data.draw(st.integers(1, len(shape)))
    length = data.draw(st.integers(1, 4))
    arrays = tuple(np.array(data.draw(st.lists(st.integers(0, shape[d] - 1), min_size=length,
                                               max_size=length)), dtype=np.int64)
                   for d in range(n_adv))
    w = rng.uniform(-1, 1, shape)
    target = w[arrays].shape
    keep = data.draw(st.integers(0, len(target)))  # v has the last `keep` dims of the target
    vshape = tuple(n if data.draw(st.booleans()) else 1 for n in target[len(target) - keep:])
    vshape = (1,) * data.draw(st.integers(0, 1)) + vshape
    x = tg.tensor(rng.uniform(-1, 1, shape), requires_grad=True)
    v = tg.tensor(rng.uniform(-1, 1, vshape), requires_grad=True)
    y = x * 1
    y[tuple(tg.tensor(a) for a in arrays)] = v
    (y * tg.tensor(w)).sum().backward()
    gx = w.copy()
    gx[arrays] = 0
    np.testing.assert_allclose(x.grad.numpy(), gx)
    stripped = vshape[next((i for i, n in enumerate(vshape) if n != 1), len(vshape)):]
    gv = _sum_to(w[arrays], stripped).reshape(vshape)
    assert tuple(v.grad.shape) == vshape
    np.testing.assert_allclose(v.grad.numpy(), gv)


def test_gather_and_scatter_take_int32_index(device):
    x = t64((3, 4), device)
    i64 = idx([[2, 0, 1, 2], [0, 0, 2, 1]], device)
    i32 = i64.to(tg.int32)
    np.testing.assert_array_equal(host(x.gather(0, i32)),
                                  np.take_along_axis(host(x), host(i64), 0))
    src = t64((2, 4), device)
    for op in ("scatter", "scatter_add"):
        np.testing.assert_array_equal(host(getattr(x, op)(0, i32, src)),
                                      host(getattr(x, op)(0, i64, src)))
    y = x.clone()
    y.scatter_add_(0, i32, src)
    np.testing.assert_array_equal(host(y), host(x.scatter_add(0, i64, src)))
    np.testing.assert_array_equal(host(x.scatter(1, i32[:, :2], 7.0)),
                                  host(x.scatter(1, i64[:, :2], 7.0)))
    assert_grads_match(lambda a: a.gather(1, on(i32 % 3, a)), [x])
    with pytest.raises(RuntimeError, match=r"scatter_add\(\): Expected dtype int32/int64 for "
                                           r"index \(got tritongrad.int16\)"):
        x.scatter_add(0, i64.to(tg.int16), src)


def test_scatter_and_index_put_refuse_other_dtypes(device):
    x = tg.zeros(3, device=device)
    i = idx([0, 1, 1], device)
    s64 = tg.ones(3, dtype=tg.float64, device=device)
    for op in ("scatter", "scatter_add", "scatter_", "scatter_add_"):
        with pytest.raises(RuntimeError, match=rf"{op}\(\): Expected self.dtype to be equal to "
                                               r"src.dtype \(got tritongrad.float32 and "
                                               r"tritongrad.float64\)"):
            getattr(x, op)(0, i, s64)
    assert host(x.scatter(0, i, 2)).tolist() == [2, 2, 0]  # a number is cast
    msg = ("Index put requires the source and destination dtypes match, got tritongrad.float32 "
           "for the destination and tritongrad.float64 for the source")
    with pytest.raises(RuntimeError, match=r"index_put_: " + msg):
        x.index_put_((i,), s64)
    with pytest.raises(RuntimeError, match=r"index_put: " + msg):
        x.index_put((i,), s64[0])
    with pytest.raises(RuntimeError, match=r"__setitem__: " + msg):
        x[[0, 1]] = s64[:2]
    with pytest.raises(RuntimeError, match="shape mismatch"):  # shapes are checked first
        x[[0, 1]] = s64
    x[i] = 1.0  # numbers, basic indices and a 1-element value through a mask still cast
    x[1:] = s64[:2]
    x[tg.tensor([True, False, True], device=device)] = tg.tensor([4], device=device)
    assert host(x).tolist() == [4, 1, 4]


def test_index_by_a_float_names_the_op(device):
    x = tg.zeros(3, 4, device=device)
    msg = r"only integers, slices \(`:`\), ellipsis \(`...`\), None and long or byte Variables " \
          r"are valid indices \(got float\)"
    with pytest.raises(IndexError, match=r"__getitem__: " + msg):
        x[1.0]
    with pytest.raises(IndexError, match=r"__getitem__: " + msg):
        x[0, 1.0]
    with pytest.raises(IndexError, match=r"__setitem__: " + msg):
        x[1.0] = 0
    for op in ("gather", "scatter_add", "index_select"):
        args = (idx([[0]], device),) + ((x,) if op == "scatter_add" else ())
        if op == "index_select":
            args = (idx([0], device),)
        with pytest.raises(TypeError, match=rf"{op}\(\): argument 'dim' \(position 1\) must be "
                                            r"int, not float"):
            getattr(x, op)(0.0, *args)


def test_list_of_sequences_indexes_as_a_tuple(device):
    # PyTorch (and old NumPy): a short list holding a sequence, slice, None, Ellipsis or tensor
    # is a tuple of indices; a list of ints is one index
    a = np.arange(16.0).reshape(4, 4)
    x = tg.tensor(a, device=device)
    np.testing.assert_array_equal(host(x[[[0, 1], [2, 3]]]), a[[0, 1], [2, 3]])
    np.testing.assert_array_equal(host(x[[[0, 1]]]), a[[0, 1]])
    np.testing.assert_array_equal(host(x[[0, slice(None)]]), a[0, :])
    assert x[[0, None]].shape == (1, 4)
    np.testing.assert_array_equal(host(x[[idx([0, 1], device), idx([2, 3], device)]]),
                                  a[[0, 1], [2, 3]])
    np.testing.assert_array_equal(host(x[[0, 1]]), a[[0, 1]])
    x[[[0, 1], [2, 3]]] = -1.0
    a[[0, 1], [2, 3]] = -1
    np.testing.assert_array_equal(host(x), a)


def test_setitem_drops_value_leading_ones(device):
    z = tg.zeros(3, 2, device=device)
    z[0] = tg.ones(1, 1, 2, device=device)
    z[idx([1, 2], device), 0] = tg.tensor([[2.0, 3.0]], device=device)
    assert host(z).tolist() == [[1, 1], [2, 0], [3, 0]]
    z = tg.zeros(3, device=device)
    z[1] = tg.tensor([5.0], device=device)
    assert host(z).tolist() == [0, 5, 0]


def test_index_select_of_a_scalar(device):
    s = tg.tensor(3.0, device=device)
    assert s.index_select(0, idx([0], device)).shape == ()
    assert s.index_select(0, idx(0, device)).item() == 3.0
    with pytest.raises(RuntimeError, match="Index to scalar can have only 1 value, got 2"):
        s.index_select(0, idx([0, 0], device))


# -- index_add / scatter_reduce ----------------------------------------------------------------

from tests.helpers import second_order  # (this section appended to the file)

def ref_index_add(x, dim, index, source, alpha):
    out = np.array(x, dtype=np.float64)
    moved = np.moveaxis(out, dim, 0)  # a view: writes land in out
    np.add.at(moved, index, alpha * np.moveaxis(source, dim, 0))
    return out


@pytest.mark.parametrize("dim", [0, 1])
def test_index_add(device, dim):
    x = t64((4, 3), device)
    index = [3, 0, 3] if dim == 0 else [2, 2]
    src = t64((3, 3) if dim == 0 else (4, 2), device)
    ix = idx(index, device)
    out = x.index_add(dim, ix, src, alpha=2.5)
    np.testing.assert_allclose(host(out), ref_index_add(host(x), dim, np.array(index),
                                                        host(src), 2.5), rtol=1e-12)
    y = x.clone()
    assert y.index_add_(dim, ix, src) is y
    np.testing.assert_allclose(host(y), ref_index_add(host(x), dim, np.array(index), host(src),
                                                      1), rtol=1e-12)
    assert_grads_match(lambda a, b: tg.index_add(a, dim, on(ix, a), b, alpha=-1.5),
                       [x.requires_grad_(True), src.requires_grad_(True)])
    assert tg.index_add(x, dim, ix, src).grad_fn.name() == "IndexAddBackward0"


def test_index_add_int_and_errors(device):
    a = tg.zeros(3, dtype=tg.int64, device=device)
    out = a.index_add(0, idx([0, 0, 1], device), tg.tensor([3, 4, 4], device=device), alpha=2)
    assert host(out).tolist() == [14, 8, 0]
    with pytest.raises(RuntimeError, match=r"^index_add_\(\): self \(Long\) and source "
                                           r"\(Float\) must have the same scalar type$"):
        a.index_add(0, idx([0], device), tg.ones(1, device=device))
    with pytest.raises(RuntimeError, match=r"^index_add_\(\): Number of indices \(3\) should be "
                                           r"equal to source.size\(dim\): \(2\), for dim: 0$"):
        a.index_add_(0, idx([0, 0, 1], device), tg.tensor([3, 4], device=device))
    with pytest.raises(IndexError, match="^index out of range in self$"):
        a.index_add(0, idx([0, 5], device), tg.tensor([3, 4], device=device))
    with pytest.raises(IndexError, match=r"Index is supposed to be a vector, but got dim: 2"):
        a.index_add(0, idx([[0, 1]], device), tg.tensor([3, 4], device=device))
    with pytest.raises(RuntimeError, match=r"Expected dtype int32/int64 for index but got: "
                                           r"Float"):
        a.index_add(0, tg.tensor([0.0], device=device), tg.tensor([3], device=device))


def ref_scatter_reduce(x, dim, index, src, reduce, include_self):
    """PyTorch's scatter_reduce on float64/int64 NumPy arrays, one place at a time."""
    out = np.array(x)
    groups = {}
    for pos in np.ndindex(*index.shape):
        place = list(pos)
        place[dim] = index[pos]
        groups.setdefault(tuple(place), []).append(src[pos])
    for place, vals in groups.items():
        vals = ([x[place]] if include_self else []) + vals
        if reduce == "sum":
            out[place] = np.sum(vals)
        elif reduce == "prod":
            out[place] = np.prod(vals)
        elif reduce == "mean":
            out[place] = (np.sum(vals) / len(vals) if out.dtype.kind == "f"
                          else np.floor_divide(np.sum(vals), len(vals)))
        elif reduce == "amax":
            out[place] = np.max(vals)
        else:
            out[place] = np.min(vals)
    return out


REDUCES = ["sum", "prod", "mean", "amax", "amin"]


@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_values(device, reduce, include_self):
    x = t64((3, 4), device)
    src = t64((4, 5), device)  # larger than the index: only its leading window is read
    index = rng.integers(0, 3, (2, 4))
    ix = idx(index, device)
    out = x.scatter_reduce(0, ix, src, reduce, include_self=include_self)
    ref = ref_scatter_reduce(host(x), 0, index, host(src), reduce, include_self)
    np.testing.assert_allclose(host(out), ref, rtol=1e-12)
    y = x.clone()
    assert y.scatter_reduce_(0, ix, src, reduce, include_self=include_self) is y
    np.testing.assert_allclose(host(y), ref, rtol=1e-12)
    iv = rng.integers(-9, 9, (3, 4))
    sv = rng.integers(-9, 9, (2, 4))
    got = tg.tensor(iv, device=device).scatter_reduce(
        1, ix, tg.tensor(sv, device=device), reduce, include_self=include_self)
    np.testing.assert_array_equal(host(got), ref_scatter_reduce(iv, 1, index, sv, reduce,
                                                                include_self))


def test_scatter_reduce_nan_propagates(device):
    x = tg.zeros(2, device=device)
    src = tg.tensor([float("nan"), 4.0, 5.0], device=device)
    out = x.scatter_reduce(0, idx([0, 0, 1], device), src, "amax")
    assert np.isnan(host(out)[0]) and host(out)[1] == 5.0


@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_gradients(device, reduce, include_self):
    x = t64((3, 4), device, 0.5, 2.0).requires_grad_(True)
    src = t64((2, 4), device, 0.5, 2.0).requires_grad_(True)
    ix = idx([[0, 1, 2, 0], [0, 2, 2, 1]], device)
    assert_grads_match(lambda a, b: a.scatter_reduce(0, on(ix, a), b, reduce,
                                                     include_self=include_self), [x, src])
    assert x.scatter_reduce(0, ix, src, reduce).grad_fn.name() == "ScatterReduceBackward0"


def test_scatter_reduce_prod_gradient_with_zeros(device):
    x = tg.tensor([[0.0, 2.0, 3.0], [1.5, 0.0, 1.0]], dtype=tg.float64, device=device)
    src = tg.tensor([[2.0, 0.0, 0.5]], dtype=tg.float64, device=device)
    ix = idx([[0, 1, 0]], device)
    assert_grads_match(lambda a, b: a.scatter_reduce(0, on(ix, a), b, "prod"),
                       [x.requires_grad_(True), src.requires_grad_(True)])


def test_scatter_reduce_ties_share_the_gradient():
    x = tg.tensor([1.0, 0.0], dtype=tg.float64, requires_grad=True)
    src = tg.tensor([1.0, 1.0, 0.5], dtype=tg.float64, requires_grad=True)
    x.scatter_reduce(0, idx([0, 0, 1], "cpu"), src, "amax").sum().backward()
    np.testing.assert_allclose(host(x.grad), [1 / 3, 0.0])
    np.testing.assert_allclose(host(src.grad), [1 / 3, 1 / 3, 1.0])


@pytest.mark.parametrize("reduce", ["mean", "amax", "prod"])
def test_scatter_reduce_second_order(reduce):
    x = t64((3, 2), "cpu", 0.5, 2.0).requires_grad_(True)
    src = t64((3, 2), "cpu", 0.5, 2.0).requires_grad_(True)
    ix = idx([[0, 1], [0, 0], [2, 1]], "cpu")
    second_order(lambda a, b: a.scatter_reduce(0, ix, b, reduce), [x, src])


def test_scatter_reduce_errors():
    x = tg.ones(3)
    with pytest.raises(RuntimeError, match="^reduce argument must be either sum, prod, mean, "
                                           "amax or amin, got foo$"):
        x.scatter_reduce(0, idx([0], "cpu"), tg.ones(1), "foo")
    with pytest.raises(RuntimeError, match=r"^scatter\(\): Expected self.dtype to be equal to "
                                           r"src.dtype$"):
        x.scatter_reduce(0, idx([0], "cpu"), tg.ones(1, dtype=tg.float64), "sum")
    with pytest.raises(RuntimeError, match="index 7 is out of bounds"):
        x.scatter_reduce(0, idx([7], "cpu"), tg.ones(1), "sum")


def test_scatter_reduce_argument_add_and_multiply():
    # PyTorch's legacy reduce= of scatter: "multiply" was refused, "sum" wrongly accepted
    x = tg.ones(2, 3)
    idx = tg.tensor([[0, 0], [1, 2]])
    np.testing.assert_array_equal(x.scatter(1, idx, 2.5, reduce="multiply").numpy(),
                                  [[6.25, 1, 1], [1, 2.5, 2.5]])
    with pytest.warns(UserWarning, match="reduce argument of torch.scatter with Tensor src"):
        r = x.scatter(1, idx, tg.tensor([[2.0, 3.0], [4.0, 5.0]]), reduce="multiply")
    np.testing.assert_array_equal(r.numpy(), [[6, 1, 1], [1, 4, 5]])
    y = tg.ones(2, 3, dtype=tg.int64)
    assert y.scatter_(1, idx, 3, reduce="multiply") is y and y.tolist() == [[9, 1, 1], [1, 3, 3]]
    np.testing.assert_array_equal(x.scatter(1, idx, 2.5, reduce="add").numpy(),
                                  [[6, 1, 1], [1, 3.5, 3.5]])
    for bad in ("sum", "mean"):
        with pytest.raises(RuntimeError, match="reduce argument must be either add or multiply"):
            x.scatter(1, idx, 2.5, reduce=bad)


def test_index_ops_out_of_range_errors_are_pytorchs():
    x = tg.ones(2, 3)
    one = tg.ones(2, 1)
    for call, kind, msg in (
            (lambda: x.index_select(0, tg.tensor([5])), IndexError, "index out of range in self"),
            (lambda: x.index_select(1, tg.tensor([3])), RuntimeError,
             "INDICES element is out of DATA bounds, id=3 axis_dim=3"),
            (lambda: x.index_add(1, tg.tensor([3]), one), RuntimeError,
             "index 3 is out of bounds for dimension 1 with size 3"),
            (lambda: x.index_reduce(1, tg.tensor([3]), one, "prod"), IndexError,
             "index out of range in self"),
            (lambda: x.index_copy(1, tg.tensor([-1]), one), IndexError,
             "index_copy_\\(\\): index -1 is out of bounds for dimension 1 with size 3"),
            (lambda: x.index_fill(1, tg.tensor([3]), 1.0), IndexError,
             "^index 3 is out of bounds for dimension 1 with size 3")):
        with pytest.raises(kind, match=msg):
            call()
    np.testing.assert_array_equal(x.index_fill(1, tg.tensor([-1]), 2.0).numpy(),
                                  [[1, 1, 2], [1, 1, 2]])
