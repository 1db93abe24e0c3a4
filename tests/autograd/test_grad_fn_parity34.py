"""The autograd graph ops record, as PyTorch's: grad_fn names, next_functions, the saved
values nodes show (``_saved_<name>``), views and bases (shape, view, reduction, scan,
indexing ops). Expected values are written out; a torch comparison runs where it is
installed."""

import numpy as np
import pytest

import tritongrad as tg

INT64_MAX = (1 << 63) - 1


def _leaf(*shape, dtype=tg.float32):
    a = np.arange(float(np.prod(shape))).reshape(shape) / 7.0 - 0.5
    return tg.tensor(a, dtype=dtype, requires_grad=True)


def _saved(fn) -> dict:
    """The non-tensor values a node shows, as a torchviz-like walk reads them."""
    out = {}
    for name in dir(fn):
        if name.startswith("_saved_") and name != "_saved_slot_names":
            v = getattr(fn, name)  # (every listed name must be readable)
            if not hasattr(v, "shape"):
                out[name] = v
    return out


def _edges(fn) -> list:
    return [None if n is None else type(n).__name__ for n, _ in fn.next_functions]


# -- reshape / flatten / basic indexing ---------------------------------------------------------

def test_reshape_that_copies_is_an_unsafe_view_not_a_view():
    x = _leaf(3, 4)
    y = x.t().reshape(12)
    assert y.grad_fn.name() == "UnsafeViewBackward0"
    assert _edges(y.grad_fn) == ["CloneBackward0"]
    assert y._base is None and not y._is_view()
    assert _saved(y.grad_fn) == {"_saved_self_sym_sizes": (4, 3)}
    y.mul_(2)  # not a view: no CopySlices on x's clone, no view rules
    (y * tg.arange(12.0)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), 2 * np.arange(12.0).reshape(4, 3).T)
    z = x.reshape(4, 3)  # viewable: a view, as before
    assert z.grad_fn.name() == "ViewBackward0" and z._base is x


def test_flatten_of_one_dim_returns_the_input_itself():
    x = _leaf(3)
    assert x.flatten() is x
    w = _leaf(3, 4)
    assert w.flatten(1) is w and w.flatten(0, 0) is w
    assert w.flatten().grad_fn.name() == "ViewBackward0"
    assert _leaf().flatten().shape == (1,)


@pytest.mark.parametrize("index, expected", [
    (slice(None), (0, 0, INT64_MAX, 1)),
    (slice(1, 3), (0, 1, 3, 1)),
    (slice(0, 10), (0, 0, 10, 1)),
    ((slice(None), slice(None, None, 2)), (1, 0, INT64_MAX, 2)),
    ((0, slice(1, 3)), (0, 1, 3, 1)),
])
def test_slice_nodes_show_the_slice_as_written(index, expected):
    x = _leaf(3, 4)
    fn = x[index].grad_fn
    assert fn.name() == "SliceBackward0"
    got = (fn._saved_dim, fn._saved_start, fn._saved_end, fn._saved_step)
    assert got == expected


def test_a_lone_full_slice_is_a_slice_node_but_a_tuple_one_is_an_alias():
    x = _leaf(3, 4)
    y = x[:]
    assert y.grad_fn.name() == "SliceBackward0" and y._base is x
    assert x[(slice(None),)].grad_fn.name() == "AliasBackward0"
    assert x[...].grad_fn.name() == "AliasBackward0"
    (y * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((3, 4), 3.0))


def test_select_shows_no_slice_values():
    fn = _leaf(3, 4)[:, 2].grad_fn
    assert fn.name() == "SelectBackward0"
    assert _saved(fn) == {"_saved_dim": 1, "_saved_index": 2, "_saved_self_sym_sizes": (3, 4)}


def test_unsqueeze_squeeze_transpose_show_their_arguments():
    x = _leaf(1, 3)
    assert _saved(x.unsqueeze(2).grad_fn) == {"_saved_dim": 2}
    assert _saved(x[:, None].grad_fn) == {"_saved_dim": 1}
    assert _saved(x.squeeze().grad_fn) == {"_saved_self_sym_sizes": (1, 3)}
    assert _saved(x.squeeze(0).grad_fn) == {"_saved_dim": 0, "_saved_self_sym_sizes": (1, 3)}
    assert _saved(x.squeeze((0, 1)).grad_fn) == {"_saved_dim": (0, 1),
                                                 "_saved_self_sym_sizes": (1, 3)}
    y = _leaf(3, 4)
    assert _saved(y.t().grad_fn) == {}
    assert _saved(y.transpose(1, 0).grad_fn) == {"_saved_dim0": 1, "_saved_dim1": 0}
    assert _saved(y.permute(1, 0).grad_fn) == {"_saved_dims": (1, 0)}
    assert _saved(y.view(12).grad_fn) == {"_saved_self_sym_sizes": (3, 4)}


# -- reductions and scans -----------------------------------------------------------------------

def test_sum_and_cumsum_with_dtype_are_one_node_and_cast_the_gradient_back():
    x = _leaf(3, 4)
    s = x.sum(dtype=tg.float64)
    assert s.dtype is tg.float64 and s.grad_fn.name() == "SumBackward0"
    assert _edges(s.grad_fn) == ["AccumulateGrad"]
    c = x.cumsum(1, dtype=tg.float64)
    assert c.dtype is tg.float64 and _edges(c.grad_fn) == ["AccumulateGrad"]
    (s + (c * tg.arange(4.0, dtype=tg.float64)).sum()).backward()
    assert x.grad.dtype is tg.float32
    # d/dx_j of sum_k k * cumsum_k = sum_{k >= j} k = 6, 6, 5, 3; plus 1 from the sum
    np.testing.assert_array_equal(x.grad.numpy(), np.tile([7.0, 7.0, 6.0, 4.0], (3, 1)))
    (g,) = tg.autograd.grad(x.sum(dtype=tg.float64) ** 2, x, create_graph=True)
    assert g.dtype is tg.float32 and g.requires_grad


def test_cumsum_of_a_zero_dim_tensor_is_one_node():
    x = _leaf()
    y = x.cumsum(0)
    assert y.shape == () and y.grad_fn.name() == "CumsumBackward0"
    assert _edges(y.grad_fn) == ["AccumulateGrad"] and not y._is_view()
    y.backward()
    assert x.grad.item() == 1.0


def test_var_and_std_show_dim_correction_keepdim():
    x = _leaf(3, 4)
    want = {"_saved_dim": None, "_saved_correction": None, "_saved_keepdim": False}
    assert _saved(x.var().grad_fn) == want
    assert _saved(x.var(1, correction=0, keepdim=True).grad_fn) == {
        "_saved_dim": (1,), "_saved_correction": 0, "_saved_keepdim": True}
    assert _saved(x.var(1).grad_fn)["_saved_correction"] == 1
    assert _saved(x.std(unbiased=False).grad_fn) == {
        "_saved_dim": None, "_saved_correction": 0, "_saved_keepdim": False}
    assert _saved(tg.var_mean(x, 1)[0].grad_fn) == {
        "_saved_dim": (1,), "_saved_correction": 1, "_saved_keepdim": False}


def test_extrema_show_pytorchs_values():
    x = _leaf(3, 4)
    assert _saved(x.amax().grad_fn) == {"_saved_dim": (), "_saved_keepdim": False}
    assert _saved(x.amin(1).grad_fn) == {"_saved_dim": (1,), "_saved_keepdim": False}
    assert x.max().grad_fn.name() == "MaxBackward1" and _saved(x.max().grad_fn) == {}
    assert _saved(x.min().grad_fn) == {}


def test_scans_flip_roll_diagonal_split_show_their_arguments():
    x = _leaf(3, 4)
    assert _saved(x.cumprod(1).grad_fn) == {"_saved_dim": 1}
    assert _saved(x.logcumsumexp(0).grad_fn) == {"_saved_dim": 0}
    assert _saved(x.flip(0, 1).grad_fn) == {"_saved_dims": (0, 1)}
    assert _saved(x.roll(1).grad_fn) == {"_saved_dims": (), "_saved_shifts": (1,)}
    assert _saved(x.roll((1, 2), (0, 1)).grad_fn) == {"_saved_dims": (0, 1),
                                                      "_saved_shifts": (1, 2)}
    assert _saved(x.diagonal(1, 1, 0).grad_fn) == {
        "_saved_offset": 1, "_saved_dim1": 1, "_saved_dim2": 0, "_saved_self_sym_sizes": (3, 4)}
    base = {"_saved_dim": 1, "_saved_self_sym_sizes": (3, 4)}
    assert _saved(x.split(2, 1)[0].grad_fn) == {**base, "_saved_split_size": 2}
    assert _saved(x.split([1, 3], 1)[1].grad_fn) == {**base, "_saved_split_sizes": (1, 3)}
    assert _saved(x.unsafe_split(2, 1)[0].grad_fn) == {**base, "_saved_split_size": 2}
    assert x.tensor_split(3, 1)[2].grad_fn._saved_end == 4


def test_repeat_interleave_is_a_view_of_a_copy():
    x = _leaf(3, 4)
    y = x.repeat_interleave(2, 0)
    assert y.grad_fn.name() == "ViewBackward0" and _edges(y.grad_fn) == ["CloneBackward0"]
    assert y._is_view()
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((3, 4), 2.0))


# -- in-place writes ---------------------------------------------------------------------------

def test_setitem_of_a_number_has_an_edge_for_it():
    x = _leaf(3, 4)
    y = x.clone()
    y[0] = 1.0
    assert y.grad_fn.name() in ("CopySlices", "torch::autograd::CopySlices")
    assert _edges(y.grad_fn) == ["CloneBackward0", None]
    assert y._version == 1
    (y * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.r_[np.zeros((1, 4)), np.full((2, 4), 2.0)])
    z = tg.zeros(3, dtype=tg.int8)  # (no graph: a fill, with its checks)
    z[1:] = 5
    assert z.tolist() == [0, 5, 5]


# -- against PyTorch ----------------------------------------------------------------------------

_CASES = {
    "reshape_t": lambda x: x.t().reshape(12),
    "slice_full": lambda x: x[:],
    "slice_step": lambda x: x[:, ::2],
    "select": lambda x: x[1],
    "unsqueeze": lambda x: x.unsqueeze(1),
    "squeeze_dim": lambda x: x[:1].squeeze(0),
    "transpose": lambda x: x.transpose(1, 0),
    "t": lambda x: x.t(),
    "sum_dtype": lambda x: x.sum(dtype=x.double().dtype),
    "var": lambda x: x.var(),
    "std_dim": lambda x: x.std(0, unbiased=False),
    "amax": lambda x: x.amax(),
    "max": lambda x: x.max(),
    "cumprod": lambda x: x.cumprod(1),
    "flip": lambda x: x.flip(0),
    "roll": lambda x: x.roll(1, 1),
    "diagonal": lambda x: x.diagonal(1),
    "split_sizes": lambda x: x.split([1, 3], 1)[1],
    "repeat_interleave": lambda x: x.repeat_interleave(2, 0),
    "tensor_split": lambda x: x.tensor_split(3, 1)[2],
}


def _walk(fn, depth=3):
    if fn is None or depth == 0:
        return None if fn is None else type(fn).__name__
    return (type(fn).__name__, tuple((_walk(n, depth - 1), nr) for n, nr in fn.next_functions))


@pytest.mark.parametrize("name", sorted(_CASES))
def test_graph_matches_pytorch(name):
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    ours = _CASES[name](tg.tensor(a, requires_grad=True))
    theirs = _CASES[name](torch.tensor(a, requires_grad=True))
    assert _walk(ours.grad_fn) == _walk(theirs.grad_fn)
    assert ours._is_view() == theirs._is_view() and ours.is_leaf == theirs.is_leaf
    assert _saved(ours.grad_fn) == _saved(theirs.grad_fn)


def test_frac_is_one_node_with_gradient_one():
    x = tg.tensor([-2.5, -0.25, 0.0, 0.75, 3.5], dtype=tg.float64, requires_grad=True)
    y = x.frac()
    assert y.grad_fn.name() == "FracBackward0" and _edges(y.grad_fn) == ["AccumulateGrad"]
    np.testing.assert_array_equal(y.detach().numpy(), [-0.5, -0.25, 0.0, 0.75, 0.5])
    (y * tg.arange(5.0, dtype=tg.float64)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.arange(5.0))
    with pytest.raises(NotImplementedError, match="frac_cpu"):
        tg.tensor([1, 2]).frac()
