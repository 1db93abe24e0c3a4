"""Indexing parity with PyTorch 2.13 (a differential sweep's fixes): contiguous advanced-index
results, the index dtypes PyTorch takes, float index lists, 0-d nonzero(as_tuple), the out=
forms of nonzero/masked_select/take_along_dim, scatter_reduce's "max"/"min", index_add's
alpha in self's dtype, index_fill's value gradient with repeated indices, PyTorch's node
names for index_fill/index_copy/x[mask] = t, and PyTorch's errors and messages.

Expected values are NumPy / hand-computed; a torch comparison runs where torch is installed."""

import warnings

import numpy as np
import pytest

import tritongrad as tg

B = np.arange(12.0).reshape(3, 4)
W = np.arange(12.0).reshape(3, 4) + 1.0  # weights for the backward passes


def i64(v):
    return tg.tensor(np.asarray(v, dtype=np.int64))


def grad_of(fn, *arrays):
    """The gradients of sum(fn(*leaves) * W) with respect to the leaves (float64)."""
    leaves = [tg.tensor(np.asarray(a, dtype=np.float64), requires_grad=True) for a in arrays]
    y = fn(*leaves)
    (y * tg.tensor(W[tuple(slice(0, n) for n in y.shape)] if y.ndim else 1.0)).sum().backward()
    return y, [leaf.grad.numpy() for leaf in leaves]


# -- advanced-index results are contiguous, as PyTorch's ---------------------------------------

@pytest.mark.parametrize("make", [
    lambda x: x[:, i64([2, 0])],
    lambda x: x[:, tg.tensor([True, False, True, True])],
    lambda x: x.t()[:, i64([1, 2])],
    lambda x: x.index_select(1, i64([3, 1])),
    lambda x: x.index_select(-1, i64([0])),
    lambda x: x.t().masked_scatter(tg.tensor(B.T > 4), tg.zeros(12, dtype=tg.float64)),
    lambda x: x.t().masked_fill(tg.tensor(B.T > 4), 0.0),
    lambda x: x.t().masked_fill(tg.tensor([True, False, True]), tg.tensor(1.0, dtype=tg.float64)),
])
def test_advanced_index_results_are_contiguous(make):
    y = make(tg.tensor(B))
    assert y.is_contiguous()
    want = np.empty(tuple(y.shape)).strides  # row-major (a size-1 dim's stride is free)
    assert all(n == 1 or st * 8 == w for n, st, w in zip(y.shape, y.stride(), want))


def test_index_fill_keeps_a_transposed_layout_as_pytorchs():
    y = tg.tensor(B).t().index_fill(1, i64([0]), 0.0)
    assert not y.is_contiguous() and y.stride() == (1, 4)
    want = B.T.copy()
    want[:, 0] = 0
    np.testing.assert_array_equal(y.numpy(), want)


def test_contiguous_result_values_and_3d_separated_indices():
    a = np.arange(60.0).reshape(3, 4, 5)
    y = tg.tensor(a)[i64([0, 2]), :, i64([1, 4])]  # separated: the index dims go first
    np.testing.assert_array_equal(y.numpy(), a[[0, 2], :, [1, 4]])
    assert tuple(y.shape) == (2, 4) and y.is_contiguous()
    z = tg.tensor(a)[:, i64([0, 2]), i64([1, 4])]  # adjacent: they stay in place
    np.testing.assert_array_equal(z.numpy(), a[:, [0, 2], [1, 4]])
    assert tuple(z.shape) == (3, 2) and z.is_contiguous()


# -- index dtypes --------------------------------------------------------------------------

@pytest.mark.parametrize("dt", [tg.int8, tg.int16])
def test_int8_and_int16_index_tensors_are_refused(dt):
    x = tg.tensor(B)
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or "
                                         "bool tensors"):
        x[tg.tensor([1, 0]).to(dt)]
    with pytest.raises(IndexError, match="tensors used as indices must be long"):
        x[tg.tensor([1]).to(dt)] = 1.0


def test_int32_index_still_works_and_uint8_mask_warns():
    x = tg.tensor(B)
    np.testing.assert_array_equal(x[tg.tensor([2, 0]).to(tg.int32)].numpy(), B[[2, 0]])
    with pytest.warns(UserWarning, match="indexing with dtype torch.uint8 is now deprecated"):
        y = x[tg.tensor([1, 0, 1]).to(tg.uint8)]
    np.testing.assert_array_equal(y.numpy(), B[[True, False, True]])


def test_float_index_lists_truncate_as_pytorchs_and_float_arrays_are_refused():
    x = tg.tensor(B)
    np.testing.assert_array_equal(x[[0.0, 2.0]].numpy(), B[[0, 2]])
    np.testing.assert_array_equal(x[[1.7]].numpy(), B[[1]])  # truncated, as a C cast
    with pytest.raises(IndexError, match="only integers, slices"):
        x[np.array([0.0, 1.0])]


# -- nonzero / where / argwhere ---------------------------------------------------------------

def test_nonzero_as_tuple_of_a_0d_tensor_reads_it_as_1d():
    (a,) = tg.tensor(3.0).nonzero(as_tuple=True)
    assert a.dtype == tg.int64 and a.tolist() == [0]
    (b,) = tg.nonzero(tg.tensor(0.0), as_tuple=True)
    assert b.dtype == tg.int64 and tuple(b.shape) == (0,)
    assert tg.where(tg.tensor(2.0))[0].tolist() == [0]
    assert tuple(tg.tensor(2.0).nonzero().shape) == (1, 0)


def test_nonzero_out():
    out = tg.zeros(0, dtype=tg.int64)
    r = tg.nonzero(tg.tensor([[0.0, 1.0], [2.0, 0.0]]), out=out)
    assert r is out and out.tolist() == [[0, 1], [1, 0]]
    with pytest.raises(RuntimeError, match="nonzero does not support the out kwarg when "
                                           "as_tuple is True"):
        tg.nonzero(tg.tensor([1.0]), out=out, as_tuple=True)
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype"):
        tg.nonzero(tg.tensor([1.0]), out=tg.zeros(0))


def test_masked_select_and_take_along_dim_out():
    out = tg.zeros(0, dtype=tg.float64)
    r = tg.masked_select(tg.tensor(B), tg.tensor(B % 5 == 0), out=out)
    assert r is out and out.tolist() == [0.0, 5.0, 10.0]
    out = tg.zeros(0, dtype=tg.float64)
    r = tg.take_along_dim(tg.tensor(B), i64([[3], [0], [1]]), 1, out=out)
    assert r is out and out.tolist() == [[3.0], [4.0], [9.0]]


# -- scatter_reduce / index_reduce / index_add -------------------------------------------------

@pytest.mark.parametrize("alias,name", [("max", "amax"), ("min", "amin")])
def test_scatter_reduce_takes_max_and_min(alias, name):
    x = tg.tensor([1.0, 5.0, -2.0])
    idx, src = i64([0, 0, 2, 1]), tg.tensor([3.0, -4.0, 7.0, 0.0])
    for incl in (True, False):
        want = x.scatter_reduce(0, idx, src, name, include_self=incl)
        got = x.scatter_reduce(0, idx, src, alias, include_self=incl)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert x.scatter_reduce(0, idx, src, alias).tolist() == (
        [3.0, 5.0, 7.0] if alias == "max" else [-4.0, 0.0, -2.0])
    with pytest.raises(RuntimeError, match="reduce argument must be either sum, prod, mean, "
                                           "amax or amin, got maximum"):
        x.scatter_reduce(0, idx, src, "maximum")


def test_bool_mean_reductions_are_not_implemented_as_pytorchs():
    x, src = tg.tensor([True, False]), tg.tensor([True])
    with pytest.raises(NotImplementedError, match="\"scatter_gather_tensor_cpu_reduce_mean\" "
                                                  "not implemented for 'Bool'"):
        x.scatter_reduce(0, i64([0]), src, "mean")
    with pytest.raises(NotImplementedError, match="\"index_func_\" not implemented for 'Bool'"):
        x.index_reduce(0, i64([0]), src, "mean")


def test_index_add_alpha_is_cast_to_self_dtype_first():
    # out = x + int(alpha) * src for integer dtypes (PyTorch's Scalar::to<int64_t>, toward 0)
    assert tg.tensor([1, 2, 3]).index_add(0, i64([0, 0]), tg.tensor([5, 1]),
                                          alpha=2.5).tolist() == [13, 2, 3]
    assert tg.tensor([1, 2]).index_add(0, i64([1]), tg.tensor([1]), alpha=-2.7).tolist() == [1, 0]
    x = tg.tensor([1, 2, 3])
    x.index_add_(0, i64([2]), tg.tensor([4]), alpha=1.9)
    assert x.tolist() == [1, 2, 7]
    assert tg.tensor([True, False]).index_add(0, i64([1]), tg.tensor([True]),
                                              alpha=2).tolist() == [True, True]
    with pytest.raises(RuntimeError, match="value cannot be converted to type int8_t without "
                                           "overflow"):
        tg.tensor([1], dtype=tg.int8).index_add(0, i64([0]), tg.tensor([1], dtype=tg.int8),
                                                alpha=300)
    with pytest.raises(RuntimeError, match="value cannot be converted to type float without "
                                           "overflow"):
        tg.zeros(2).index_add(0, i64([0]), tg.ones(1), alpha=1j)
    # floats keep a fractional alpha; its gradient is alpha times g's rows
    y, (gx, gs) = grad_of(lambda x, s: x.index_add(0, i64([2, 0, 2]), s, alpha=0.5),
                          B, np.ones((3, 4)))
    want = B.copy()
    want[0] += 0.5
    want[2] += 1.0
    np.testing.assert_allclose(y.detach().numpy(), want)
    np.testing.assert_allclose(gx, W)
    np.testing.assert_allclose(gs, 0.5 * W[[2, 0, 2]])


def test_index_add_shape_message():
    with pytest.raises(RuntimeError, match=r"^source tensor shape must match self tensor shape, "
                                           r"excluding the specified dimension. Got self.shape "
                                           r"= \[3, 4\] source.shape = \[1, 3\]"):
        tg.tensor(B).index_add(0, i64([1]), tg.ones(1, 3, dtype=tg.float64))


# -- index_fill / index_copy --------------------------------------------------------------------

def test_index_fill_tensor_value_gradient_counts_each_place_once():
    x = tg.tensor(B, requires_grad=True)
    v = tg.tensor(2.0, dtype=tg.float64, requires_grad=True)
    y = x.index_fill(1, i64([1, 1, -1]), v)  # columns 1 and 3, column 1 named twice
    assert type(y.grad_fn).__name__ == "IndexFillBackward1"
    want = B.copy()
    want[:, [1, 3]] = 2.0
    np.testing.assert_array_equal(y.detach().numpy(), want)
    (y * tg.tensor(W)).sum().backward()
    assert v.grad.item() == W[:, [1, 3]].sum()  # 66: each filled element once
    gx = W.copy()
    gx[:, [1, 3]] = 0
    np.testing.assert_array_equal(x.grad.numpy(), gx)


@pytest.mark.parametrize("dim", [0, 1, -1, -2])
def test_index_fill_number(dim):
    y, (gx,) = grad_of(lambda x: x.index_fill(dim, i64([0, 0, -1]), -3.0), B)
    assert type(y.grad_fn).__name__ == "IndexFillBackward0"
    want, g = B.copy(), W.copy()
    sl = [slice(None)] * 2
    sl[dim] = [0, -1]
    want[tuple(sl)] = -3.0
    g[tuple(sl)] = 0
    np.testing.assert_array_equal(y.detach().numpy(), want)
    np.testing.assert_array_equal(gx, g)


def test_index_fill_inplace_records_its_node_and_checks():
    x = tg.tensor(B, requires_grad=True) * 1
    r = x.index_fill_(0, i64([1]), 7)
    assert r is x and type(x.grad_fn).__name__ == "IndexFillBackward0"
    assert x[1].tolist() == [7.0] * 4
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        tg.tensor(B, requires_grad=True).index_fill_(0, i64([0]), 1.0)
    with pytest.raises(IndexError, match=r"index_fill_\(\): Expected dtype int64 for index"):
        tg.tensor(B).index_fill(0, tg.tensor([1]).to(tg.int32), 1.0)
    with pytest.raises(RuntimeError, match="^Index has to be a vector/scalar"):
        tg.tensor(B).index_fill(0, i64([[1]]), 1.0)
    with pytest.raises(RuntimeError, match="index_fill_ only supports a 0-dimensional value"):
        tg.tensor(B).index_fill(0, i64([1]), tg.ones(1))
    s = tg.tensor(4.0)
    assert s.index_fill(0, i64([0]), 1.0).item() == 1.0
    assert s.index_fill(0, i64([], ), 1.0).item() == 4.0
    assert tg.tensor([1, 2, 3]).index_fill(0, i64([1]), 2.7).tolist() == [1, 2, 3]


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_copy_node_values_and_gradients(dim):
    shape = list(B.shape)
    shape[dim] = 2
    src = np.arange(float(np.prod(shape))).reshape(shape) + 50
    y, (gx, gs) = grad_of(lambda x, s: x.index_copy(dim, i64([2, 0]), s), B, src)
    assert type(y.grad_fn).__name__ == "IndexCopyBackward0"
    want, g = B.copy(), W.copy()
    sl = [slice(None)] * 2
    sl[dim] = [2, 0]
    want[tuple(sl)] = src
    g[tuple(sl)] = 0
    np.testing.assert_array_equal(y.detach().numpy(), want)
    np.testing.assert_array_equal(gx, g)
    np.testing.assert_array_equal(gs, W[tuple(sl)])


def test_index_copy_inplace_and_errors():
    x = tg.tensor(B, requires_grad=True) * 1
    assert x.index_copy_(0, i64([1]), tg.zeros(1, 4, dtype=tg.float64)) is x
    assert type(x.grad_fn).__name__ == "IndexCopyBackward0" and x[1].tolist() == [0.0] * 4
    with pytest.raises(RuntimeError, match=r"^index_copy_\(\): Expected a long tensor for index, "
                                           r"but got Int"):
        tg.tensor(B).index_copy(0, tg.tensor([1]).to(tg.int32), tg.ones(1, 4,
                                                                       dtype=tg.float64))
    with pytest.raises(RuntimeError, match=r"^index_copy_\(\): Source/destination tensor must "
                                           r"have same slice shapes. Destination slice shape: 4 "
                                           r"at dimension 0 and source slice shape: 3 at "
                                           r"dimension 0."):
        tg.tensor(B).index_copy(0, i64([1]), tg.ones(1, 3, dtype=tg.float64))
    s = tg.tensor(4.0)
    assert s.index_copy(0, i64([0]), tg.tensor(9.0)).item() == 9.0
    s.index_copy_(0, i64([0]), tg.tensor(8.0))
    assert s.item() == 8.0


# -- setitem / index_put -------------------------------------------------------------------

def test_setitem_bool_mask_with_0d_tensor_records_index_put():
    x = tg.tensor(B) * 1
    v = tg.tensor(-1.0, dtype=tg.float64, requires_grad=True)
    x[tg.tensor(B > 6)] = v
    assert type(x.grad_fn).__name__ == "IndexPutBackward0"
    (x * tg.tensor(W)).sum().backward()
    assert v.grad.item() == W[B > 6].sum()


@pytest.mark.parametrize("target,value,msg", [
    ((2, 3), (4,), r"^The expanded size of the tensor \(3\) must match the existing size \(4\) "
                   r"at non-singleton dimension 1.  Target sizes: \[2, 3\].  Tensor sizes: \[4\]"),
    ((2, 3), (3, 3), r"^The expanded size of the tensor \(2\) must match the existing size \(3\) "
                     r"at non-singleton dimension 0"),
    ((2, 3), (5, 2, 3), r"the number of sizes provided \(2\) must be greater or equal to the "
                        r"number of dimensions in the tensor \(3\)"),
])
def test_setitem_basic_shape_errors_are_pytorchs(target, value, msg):
    x = tg.zeros(*target)
    with pytest.raises(RuntimeError, match=msg):
        x[:] = tg.ones(*value)


def test_setitem_basic_broadcasts_and_drops_leading_ones():
    x = tg.zeros(2, 3)
    x[:] = tg.tensor([1.0, 2.0, 3.0])
    x[0] = tg.ones(1, 1, 3) * 5
    assert x.tolist() == [[5.0, 5.0, 5.0], [1.0, 2.0, 3.0]]


def test_index_put_without_index_tensors_is_a_clear_error():
    with pytest.raises(RuntimeError, match=r"index_put\(\): expected at least one index tensor"):
        tg.tensor(3.0).index_put((), tg.tensor(5.0))
    assert tg.tensor(3.0).index_put((tg.tensor(True),), tg.tensor(5.0)).item() == 5.0


# -- messages --------------------------------------------------------------------------------

def test_masked_and_take_messages():
    x = tg.tensor(B)
    with pytest.raises(RuntimeError, match="^masked_fill_ only supports boolean masks, but got "
                                           "mask with dtype"):
        x.masked_fill(tg.ones(3, 4, dtype=tg.int64), 0.0)
    with pytest.raises(RuntimeError, match="^masked_fill_ only supports a 0-dimensional value"):
        x.masked_fill(tg.tensor(B > 1), tg.ones(1))
    with pytest.raises(RuntimeError, match="^masked_select: expected BoolTensor for mask"):
        x.masked_select(tg.ones(3, 4, dtype=tg.uint8))
    with pytest.raises(RuntimeError, match="Number of elements of source < number of ones in "
                                           "mask"):
        x.masked_scatter(tg.tensor(B > 1), tg.ones(3, dtype=tg.float64))
    with pytest.raises(IndexError, match=r"^take\(\): tried to take from an empty tensor"):
        tg.zeros(0).take(i64([0]))
    assert tuple(tg.zeros(0).take(i64([])).shape) == (0,)
    with pytest.raises(RuntimeError, match=r"^torch.take_along_dim\(\): dtype of indices should "
                                           r"be Long but got Int"):
        tg.take_along_dim(x, tg.tensor([[1]]).to(tg.int32), 0)


# -- changes needed in files this sweep does not own ------------------------------------------

def test_index_select_of_a_scalar_with_two_indices_is_a_runtime_error():
    with pytest.raises(RuntimeError, match="Index to scalar can have only 1 value, got 2"):
        tg.tensor(3.0).index_select(0, i64([0, 0]))


def test_put_records_put_backward():
    x = tg.tensor(B, requires_grad=True) * 1
    x.put_(i64([0]), tg.tensor([1.0], dtype=tg.float64))
    assert type(x.grad_fn).__name__ == "PutBackward0"


def test_basic_index_messages_of_0d_tensors_and_zero_steps():
    with pytest.raises(IndexError, match="^invalid index of a 0-dim tensor"):
        tg.tensor(1.0)[0]
    with pytest.raises(IndexError, match=r"^slice\(\) cannot be applied to a 0-dim tensor"):
        tg.tensor(1.0)[:]
    with pytest.raises(ValueError, match="^slice step cannot be zero"):
        tg.zeros(3)[::0]


def test_list_of_lists_index_warns():
    with pytest.warns(UserWarning, match="Using a non-tuple sequence for multidimensional "
                                         "indexing is deprecated"):
        tg.tensor(B)[[[0, 2], [1, 1]]]


# -- against torch -------------------------------------------------------------------------

def _run(lib, case):
    x = lib.tensor(B, requires_grad=True)
    v = lib.tensor(2.0, dtype=lib.float64, requires_grad=True)
    s = lib.tensor(np.arange(6.0).reshape(3, 2) + 10, requires_grad=True)
    ix = lib.tensor(np.array([3, 1, 3]))
    y = {"fill": lambda: x.index_fill(1, ix, v),
         "copy": lambda: x.index_copy(1, lib.tensor(np.array([3, 0])), s),
         "add": lambda: lib.tensor(np.array([1, 2, 3])).index_add(
             0, lib.tensor(np.array([0])), lib.tensor(np.array([5])), alpha=2.5),
         "sel": lambda: x[:, ix] * x.index_select(1, ix),
         "red": lambda: x.scatter_reduce(1, lib.tensor(np.array([[0, 0], [1, 3], [3, 3]])), s,
                                         "amax", include_self=False),
         "nz": lambda: lib.nonzero(lib.tensor(5.0), as_tuple=True)[0]}[case]()
    out = [y.detach().numpy(), str(y.dtype).split(".")[-1], y.is_contiguous()]
    if y.requires_grad:
        (y * lib.tensor(W[:, :y.shape[1]] if y.ndim == 2 else 1.0)).sum().backward()
        out += [t.grad.numpy() if t.grad is not None else None for t in (x, v, s)]
    return out


@pytest.mark.parametrize("case", ["fill", "copy", "add", "sel", "red", "nz"])
def test_against_torch(case):
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want, got = _run(torch, case), _run(tg, case)
    assert len(want) == len(got)
    for w, g in zip(want, got):
        if isinstance(w, np.ndarray):
            np.testing.assert_allclose(g, w)
        else:
            assert g == w
