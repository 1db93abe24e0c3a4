"""Shape ops (autograd/ops/shape.py): cat, stack, split, chunk, unbind, narrow, select, movedim,
repeat, tile, tril, triu. Values against NumPy, gradients by finite differences, views sharing
storage where PyTorch's do, and hypothesis properties over random shapes."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tritongrad as tg
from tests.helpers import assert_grads_match, host, t64

rng = np.random.default_rng(4)


# -- cat / stack ----------------------------------------------------------------------------------

@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat(dim, device):
    shapes = [(2, 3, 4), (2, 3, 4), (2, 3, 4)]
    shapes = [tuple(s if i != dim % 3 else s + j for i, s in enumerate(sh))
              for j, sh in enumerate(shapes)]
    xs = [t64(s, device) for s in shapes]
    out = tg.cat(xs, dim)
    np.testing.assert_array_equal(host(out), np.concatenate([host(x) for x in xs], dim))
    assert_grads_match(lambda *v: tg.cat(v, dim), xs)
    w = rng.uniform(-1, 1, tuple(out.shape))
    assert_grads_match(lambda *v: tg.cat(v, dim) ** 2, xs, grad_output=w)


def test_cat_mixed_dtypes_empty_and_non_contiguous(device):
    a = tg.tensor([[1, 2]], device=device)
    b = tg.tensor([[0.5, 1.5]], dtype=tg.float64, device=device)
    out = tg.cat([a, b])
    assert out.dtype is tg.float64 and host(out).tolist() == [[1, 2], [0.5, 1.5]]
    legacy = tg.cat([tg.ones(2, 3, device=device), tg.ones(0, device=device)])
    assert legacy.shape == (2, 3)  # 1-D empty tensors are skipped, as PyTorch
    assert tg.cat([tg.ones(0, 3, device=device), tg.ones(2, 3, device=device)]).shape == (2, 3)
    nc = t64((4, 3), device).t()
    np.testing.assert_array_equal(host(tg.cat([nc, nc], 1)), np.concatenate([host(nc)] * 2, 1))
    assert tg.concat([a, a]).shape == (2, 2) and tg.concatenate([a], 1).shape == (1, 2)
    h = tg.cat([tg.ones(2, dtype=tg.float16, device=device)] * 2)
    assert h.dtype is tg.float16


def test_cat_only_grad_for_inputs_that_need_it(device):
    a = t64((2, 2), device).requires_grad_(True)
    b = t64((3, 2), device)
    tg.cat([a, b]).sum().backward()
    assert host(a.grad).tolist() == [[1, 1], [1, 1]] and b.grad is None


def test_cat_errors(device):
    with pytest.raises(ValueError, match="non-empty list"):
        tg.cat([])
    with pytest.raises(RuntimeError, match="zero-dimensional tensor"):
        tg.cat([tg.tensor(1.0, device=device)])
    with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dimension 0"):
        tg.cat([tg.ones(2, 3, device=device), tg.ones(2, 4, device=device)])
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        tg.cat([tg.ones(2, 3, device=device), tg.ones(2, 3, 1, device=device)])
    with pytest.raises(TypeError, match="sequence of Tensors"):
        tg.cat(tg.ones(2, device=device))
    with pytest.raises(IndexError, match="dimension out of range"):
        tg.cat([tg.ones(2, device=device)], 1)


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_stack(dim, device):
    xs = [t64((2, 3), device) for _ in range(3)]
    out = tg.stack(xs, dim)
    np.testing.assert_array_equal(host(out), np.stack([host(x) for x in xs], dim))
    w = rng.uniform(-1, 1, tuple(out.shape))
    assert_grads_match(lambda *v: tg.stack(v, dim), xs, grad_output=w)
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        tg.stack([tg.ones(2, device=device), tg.ones(3, device=device)])
    assert tg.stack([tg.tensor(1.0, device=device)] * 4).shape == (4,)


# -- split / chunk / unbind -----------------------------------------------------------------------

def test_split_int_and_sizes_are_views(device):
    x = t64((7, 4), device)
    parts = x.split(3)
    assert [tuple(p.shape) for p in parts] == [(3, 4), (3, 4), (1, 4)]
    for p, r in zip(parts, np.split(host(x), [3, 6])):
        np.testing.assert_array_equal(host(p), r)
        assert p._base is x and p._vc is x._vc
    parts = tg.split(x, [1, 2, 1], dim=1)
    assert [tuple(p.shape) for p in parts] == [(7, 1), (7, 2), (7, 1)]
    np.testing.assert_array_equal(host(parts[1]), host(x)[:, 1:3])
    parts[1].mul_(0)  # writes through to x
    assert np.all(host(x)[:, 1:3] == 0)


def test_split_gradients(device):
    x = t64((5, 6), device)
    assert_grads_match(lambda v: v.split(2, 1)[1] * 3, [x])
    assert_grads_match(lambda v: sum(p.sum() * (i + 1) for i, p in enumerate(v.split([2, 3]))),
                       [x])
    assert_grads_match(lambda v: v.chunk(3, 1)[2].exp(), [x])
    leaf = x.detach().requires_grad_(True)
    a, b = leaf.split([2, 3])
    assert a.grad_fn.name() == "SplitWithSizesBackward0" and a.grad_fn is b.grad_fn
    (a.sum() + (b * b).sum()).backward(create_graph=True)
    expected = np.concatenate([np.ones((2, 6)), 2 * host(leaf)[2:]])
    np.testing.assert_allclose(host(leaf.grad), expected)


def test_chunk(device):
    x = t64((10,), device)
    assert [p.shape[0] for p in x.chunk(3)] == [4, 4, 2]
    assert [p.shape[0] for p in x.chunk(4)] == [3, 3, 3, 1]
    assert [p.shape[0] for p in tg.ones(6, device=device).chunk(4)] == [2, 2, 2]
    assert len(x.chunk(20)) == 10
    with pytest.raises(RuntimeError, match="greater than 0"):
        x.chunk(0)


def test_split_errors(device):
    x = tg.ones(5, device=device)
    with pytest.raises(RuntimeError, match="split_with_sizes expects split_sizes to sum exactly"):
        x.split([2, 2])
    with pytest.raises(RuntimeError, match="split_size can only be 0"):
        x.split(0)
    with pytest.raises(RuntimeError, match="at least a 1-dimensional"):
        tg.tensor(1.0, device=device).split(1)


def test_unbind(device):
    x = t64((3, 4), device)
    rows = x.unbind()
    assert len(rows) == 3 and all(r._base is x for r in rows)
    np.testing.assert_array_equal(host(rows[2]), host(x)[2])
    cols = tg.unbind(x, 1)
    assert len(cols) == 4 and cols[0].shape == (3,)
    assert_grads_match(lambda v: v.unbind(1)[3] * v.unbind(1)[0], [x])
    assert tg.ones(0, 2, device=device).unbind() == ()


# -- narrow / select / movedim --------------------------------------------------------------------

def test_narrow_select_movedim(device):
    x = t64((4, 5, 6), device)
    np.testing.assert_array_equal(host(x.narrow(1, 1, 3)), host(x)[:, 1:4])
    np.testing.assert_array_equal(host(x.narrow(-1, -4, 2)), host(x)[..., 2:4])
    assert x.narrow(0, 1, 2)._base is x
    np.testing.assert_array_equal(host(x.select(1, -1)), host(x)[:, -1])
    np.testing.assert_array_equal(host(tg.movedim(x, 0, -1)), np.moveaxis(host(x), 0, -1))
    np.testing.assert_array_equal(host(x.movedim((0, 1), (2, 0))),
                                  np.moveaxis(host(x), (0, 1), (2, 0)))
    np.testing.assert_array_equal(host(tg.moveaxis(x, 2, 0)), np.moveaxis(host(x), 2, 0))
    assert_grads_match(lambda v: v.narrow(2, 2, 3).movedim(2, 0).select(1, 0), [x])
    with pytest.raises(RuntimeError, match=r"start \(4\) \+ length \(3\) exceeds dimension size"):
        x.narrow(0, 4, 3)
    with pytest.raises(IndexError, match="select\\(\\): index 5 out of range"):
        x.select(0, 5)
    with pytest.raises(RuntimeError, match="movedim: Invalid source or destination"):
        x.movedim((0, 1), 2)


# -- repeat / tile --------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,reps", [((2, 3), (2, 1)), ((3,), (2, 3)), ((2, 1, 3), (1, 4, 2)),
                                        ((), (3,)), ((2, 2), (1, 1)), ((2, 3), (0, 2))])
def test_repeat(shape, reps, device):
    x = t64(shape, device)
    out = x.repeat(*reps)
    np.testing.assert_array_equal(host(out), np.tile(host(x), reps))
    np.testing.assert_array_equal(host(x.repeat(reps)), np.tile(host(x), reps))
    if out.numel():
        w = rng.uniform(-1, 1, tuple(out.shape))
        assert_grads_match(lambda v: v.repeat(*reps), [x], grad_output=w)


def test_tile_and_repeat_errors(device):
    x = t64((2, 3), device)
    np.testing.assert_array_equal(host(x.tile((2,))), np.tile(host(x), (1, 2)))
    np.testing.assert_array_equal(host(tg.tile(x, (2, 1, 2))), np.tile(host(x), (2, 1, 2)))
    with pytest.raises(RuntimeError, match="can not be smaller than number of dimensions"):
        x.repeat(2)
    nc = t64((3, 4), device).t()
    np.testing.assert_array_equal(host(nc.repeat(2, 1)), np.tile(host(nc), (2, 1)))


# -- tril / triu ----------------------------------------------------------------------------------

@pytest.mark.parametrize("diagonal", [0, 1, -1, 5, -5])
@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (2, 5, 3), (1, 1)])
def test_tril_triu(shape, diagonal, device):
    x = t64(shape, device)
    np.testing.assert_array_equal(host(x.tril(diagonal)), np.tril(host(x), diagonal))
    np.testing.assert_array_equal(host(tg.triu(x, diagonal)), np.triu(host(x), diagonal))
    w = rng.uniform(-1, 1, shape)
    assert_grads_match(lambda v: v.tril(diagonal), [x], grad_output=w)
    assert_grads_match(lambda v: v.triu(diagonal), [x], grad_output=w)


def test_tril_dtypes_and_errors(device):
    b = tg.ones(3, 3, dtype=tg.bool, device=device).tril()
    assert b.dtype is tg.bool and host(b).sum() == 6
    i = tg.ones(2, 3, dtype=tg.int64, device=device).triu(1)
    assert i.tolist() == [[0, 1, 1], [0, 0, 1]]
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        tg.ones(3, device=device).tril()



# -- regressions found against PyTorch ------------------------------------------------------------

def test_chunk_of_an_empty_dim_gives_every_chunk(device):
    # PyTorch: `chunks` empty pieces (split(0) of an empty dim gives one)
    assert [p.shape for p in tg.zeros(0, 2, device=device).chunk(3)] == [(0, 2)] * 3
    assert [p.shape for p in tg.zeros(2, 0, device=device).chunk(2, 1)] == [(2, 0)] * 2
    assert [p.shape for p in tg.zeros(0, device=device).split(2)] == [(0,)]
    assert [p.shape[0] for p in tg.zeros(2, device=device).chunk(3)] == [1, 1]
    assert [p.shape[0] for p in tg.zeros(5, device=device).chunk(3)] == [2, 2, 1]
    x = tg.zeros(0, 2, dtype=tg.float64, device=device, requires_grad=True)
    parts = x.chunk(3)
    assert all(p._base is x for p in parts)
    sum(p.sum() for p in parts).backward()
    assert x.grad.shape == (0, 2)


def test_zero_dim_tensor_takes_dims_0_and_minus_1(device):
    s = tg.tensor(2.0, dtype=tg.float64, device=device, requires_grad=True)
    for out in (s.transpose(0, -1), s.transpose(0, 0), s.t(), s.permute(()), s.movedim(0, 0),
                s.movedim(-1, 0), tg.movedim(s, (0,), (-1,)), s.squeeze(0), s.squeeze(-1)):
        assert out.shape == () and out.item() == 2.0
    assert s.unsqueeze(0).shape == (1,) and s.unsqueeze(-1).shape == (1,)
    (s.transpose(0, -1) * 3).backward()
    assert s.grad.item() == 3.0
    with pytest.raises(IndexError, match=r"transpose: dimension out of range \(expected to be "
                                         r"in range of \[-1, 0\], but got 1\)"):
        s.transpose(1, 0)
    with pytest.raises(IndexError, match="movedim: dimension out of range"):
        s.movedim(1, 0)


def test_permute_checks_the_count_first_then_range_then_duplicates(device):
    """PyTorch 2.x's order and wording (its count message names sparse_coo for dense tensors
    too); a wrong count used to be reported as a dimension out of range."""
    x = tg.zeros(2, 3, device=device)
    for dims, n in [((1, 0, 2), 3), ((0,), 1), ((), 0)]:
        with pytest.raises(RuntimeError) as info:
            x.permute(*dims) if dims else x.permute(())
        assert str(info.value) == (
            "permute(sparse_coo): number of dimensions in the tensor input does not match the "
            "length of the desired ordering of dimensions i.e. input.dim() = 2 is not equal to "
            f"len(dims) = {n}")
    with pytest.raises(RuntimeError, match=r"^permute\(\): duplicate dims are not allowed\.$"):
        x.permute(1, -1)
    with pytest.raises(IndexError, match=r"permute: dimension out of range \(expected to be in "
                                         r"range of \[-2, 1\], but got 2\)"):
        x.permute(0, 2)
    y = tg.zeros(2, 3, 4, device=device).permute(-1, 0, 1)
    assert y.shape == (4, 2, 3) and y.stride() == (1, 12, 4)


def test_shape_ops_name_the_op_and_argument_for_non_ints(device):
    x = tg.zeros(3, 4, device=device)
    cases = [
        (lambda: x.reshape(12.0), ("reshape(): argument 'shape' (position 1) must be tuple of "
                                  "ints, not float")),
        (lambda: x.reshape(3, 4.0), ("reshape(): argument 'shape' (position 1) must be tuple of "
                                    "ints, but found element of type float at pos 1")),
        (lambda: x.view(12.0), ("view(): argument 'size' (position 1) must be tuple of ints, not "
                               "float")),
        (lambda: x.expand(3.0, 4), ("expand(): argument 'size' (position 1) must be tuple of "
                                   "ints, but found element of type float at pos 0")),
        (lambda: x.expand("ab"), ("expand(): argument 'size' (position 1) must be tuple of "
                                 "ints, not str")),
        (lambda: x.split(1.5), ("split(): argument 'split_size' (position 1) must be int, not "
                               "float")),
        (lambda: x.split([1.5, 1.5]), ("split_with_sizes(): argument 'split_sizes' (position 1) "
                                      "must be tuple of ints, but found element of type float "
                                      "at pos 0")),
        (lambda: x.split(1, 0.0), "split(): argument 'dim' (position 2) must be int, not float"),
        (lambda: x.chunk(1.5), "chunk(): argument 'chunks' (position 1) must be int, not float"),
        (lambda: x.tril(1.5), "tril(): argument 'diagonal' (position 1) must be int, not float"),
        (lambda: x.triu("1"), "triu(): argument 'diagonal' (position 1) must be int, not str"),
        (lambda: x.transpose(0.0, 1), ("transpose(): argument 'dim0' (position 1) must be int, "
                                      "not float")),
        (lambda: x.permute(0.0, 1), ("permute(): argument 'dims' (position 1) must be tuple of "
                                    "ints, but found element of type float at pos 0")),
        (lambda: x.unsqueeze(0.0), "unsqueeze(): argument 'dim' (position 1) must be int"),
        (lambda: x[None].squeeze(0.0), "squeeze(): argument 'dim' (position 1) must be int"),
        (lambda: x.flatten(0.0), "flatten(): argument 'start_dim' (position 1) must be int"),
        (lambda: x.select(0.0, 1), "select(): argument 'dim' (position 1) must be int"),
        (lambda: x.narrow(0, 0.0, 1), "narrow(): argument 'start' (position 2) must be int"),
        (lambda: x.movedim(0.0, 1), ("movedim(): argument 'source' (position 1) must be tuple "
                                    "of ints, not float")),
        (lambda: x.repeat(2.0, 1), ("repeat(): argument 'repeats' (position 1) must be tuple of "
                                   "ints, but found element of type float at pos 0")),
        (lambda: x.tile(2.0), ("tile(): argument 'dims' (position 1) must be tuple of ints, not "
                              "float")),
        (lambda: tg.cat([x, x], 0.0), "cat(): argument 'dim' (position 2) must be int"),
        (lambda: tg.stack([x, x], 0.0), "stack(): argument 'dim' (position 2) must be int"),
        (lambda: x.unbind(0.0), "unbind(): argument 'dim' (position 1) must be int"),
    ]
    for fn, msg in cases:
        with pytest.raises(TypeError) as info:
            fn()
        assert str(info.value).startswith(msg), (str(info.value), msg)


def test_sizes_may_be_numpy_ints_or_0d_tensors(device):
    x = tg.zeros(3, 4, device=device)
    assert x.reshape(np.int64(12)).shape == (12,)
    assert x.reshape(tg.tensor(12)).shape == (12,)
    assert x.view(tg.tensor(4), np.int64(3)).shape == (4, 3)
    assert x[:1].expand(np.int64(2), 4).shape == (2, 4)
    assert x.repeat(np.array([2, 1])).shape == (6, 4)
    assert x.tile(np.int64(2)).shape == (3, 8)
    assert x.movedim(np.int64(0), 1).shape == (4, 3)

# -- properties -----------------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_shape_ops_property(data):
    """Random shapes: cat of a split is the identity, stack/unbind round-trip, repeat matches
    np.tile, and gradients of a mixed chain match finite differences."""
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = t64(shape, "cpu")
    size = data.draw(st.integers(1, shape[dim]))
    parts = x.split(size, dim)
    np.testing.assert_array_equal(tg.cat(parts, dim).numpy(), x.numpy())
    np.testing.assert_array_equal(tg.stack(x.unbind(dim), dim).numpy(), x.numpy())
    reps = tuple(data.draw(st.lists(st.integers(1, 3), min_size=len(shape),
                                    max_size=len(shape) + 1)))
    np.testing.assert_array_equal(x.repeat(reps).numpy(), np.tile(x.numpy(), reps))
    w = rng.uniform(-1, 1, tuple(x.repeat(reps).shape))

    def chain(v):
        ps = v.split(size, dim)
        return tg.cat([p * (i + 1) for i, p in enumerate(ps)], dim).repeat(reps)

    assert_grads_match(chain, [x], grad_output=w)
