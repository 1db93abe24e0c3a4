"""Rearranging composites (autograd/ops/combinations.py): flip, roll, repeat_interleave,
tensor_split, unflatten, swapaxes, diagonal, diag, diag_embed, triu/tril_indices, against
NumPy (np.flip, np.roll, np.repeat, np.array_split, np.diagonal, np.diag), with gradients by
finite differences and PyTorch's errors."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tritongrad as tg
from tests.helpers import assert_grads_match, host, second_order, t64


def same(t, ref):
    assert tuple(t.shape) == np.shape(ref), (tuple(t.shape), np.shape(ref))
    np.testing.assert_array_equal(host(t), ref)


# -- flip / roll --------------------------------------------------------------------------------

@pytest.mark.parametrize("dims", [0, (1,), (0, 2), (-1, 0, 1), ()])
def test_flip(dims, device):
    x = t64((2, 3, 4), device)
    ref = np.flip(host(x), dims) if dims != () else host(x)
    same(tg.flip(x, dims), ref)
    same(x.flip(dims), ref)
    if isinstance(dims, tuple) and len(dims) > 1:
        same(x.flip(*dims), ref)
    assert_grads_match(lambda t: tg.flip(t, dims), [x])


def test_fliplr_flipud(device):
    x = t64((3, 4), device)
    same(tg.fliplr(x), np.fliplr(host(x)))
    same(x.flipud(), np.flipud(host(x)))
    assert_grads_match(tg.fliplr, [x])
    with pytest.raises(RuntimeError, match="Input must be >= 2-d."):
        tg.fliplr(tg.ones(3))
    with pytest.raises(RuntimeError, match="Input must be >= 1-d."):
        tg.flipud(tg.ones(()))
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times in the list of dims"):
        tg.flip(tg.ones(3), (0, 0))


@pytest.mark.parametrize("shifts,dims", [(2, None), (-7, None), (1, 0), ((1, -2), (0, 2)),
                                         ((3, 3), (1, 1)), (0, 1)])
def test_roll(shifts, dims, device):
    x = t64((2, 3, 4), device)
    same(tg.roll(x, shifts, dims), np.roll(host(x), shifts, dims))
    same(x.roll(shifts, dims), np.roll(host(x), shifts, dims))
    assert_grads_match(lambda t: tg.roll(t, shifts, dims), [x])


def test_roll_errors():
    with pytest.raises(RuntimeError, match="shifts and dimensions must align. shifts: 2, "
                                           "dims:1"):
        tg.roll(tg.ones(3), (1, 2), (0,))
    with pytest.raises(RuntimeError, match="shifts and dimensions must align. shifts: 2, "
                                           "dims:0"):
        tg.roll(tg.ones(3), (1, 2))
    with pytest.raises(RuntimeError, match="`shifts` required"):
        tg.roll(tg.ones(3), ())


# -- repeat_interleave --------------------------------------------------------------------------

def test_repeat_interleave_int(device):
    x = t64((2, 3), device)
    same(tg.repeat_interleave(x, 2), np.repeat(host(x), 2))
    same(x.repeat_interleave(3, dim=1), np.repeat(host(x), 3, axis=1))
    same(x.repeat_interleave(0, dim=0), np.repeat(host(x), 0, axis=0))
    same(x.repeat_interleave(tg.tensor(2), dim=-2), np.repeat(host(x), 2, axis=0))
    assert_grads_match(lambda t: t.repeat_interleave(2, dim=1), [x])
    s = tg.tensor(5.0, device=device)
    same(s.repeat_interleave(2), [5.0, 5.0])


def test_repeat_interleave_tensor(device):
    x = t64((3, 2), device)
    reps = tg.tensor([1, 0, 2], device=device)
    same(tg.repeat_interleave(x, reps, dim=0), np.repeat(host(x), [1, 0, 2], axis=0))
    same(tg.repeat_interleave(x, tg.tensor([1, 2, 0, 1, 1, 3]), output_size=8),
         np.repeat(host(x), [1, 2, 0, 1, 1, 3]))
    assert_grads_match(lambda t: tg.repeat_interleave(t, reps, dim=0), [x])
    same(tg.repeat_interleave(tg.tensor([1, 2, 0, 1])), [0, 1, 1, 3])


def test_repeat_interleave_errors():
    with pytest.raises(RuntimeError, match=r"repeats must have the same size as input along "
                                           r"dim, but got repeats.size\(0\) = 2 and "
                                           r"input.size\(0\) = 3"):
        tg.repeat_interleave(tg.ones(3), tg.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="repeats can not be negative"):
        tg.repeat_interleave(tg.ones(3), tg.tensor([1, -2, 1]))
    with pytest.raises(RuntimeError, match="Repeats must be non-negative"):
        tg.repeat_interleave(tg.ones(3), -1)
    with pytest.raises(RuntimeError, match="allocated size does not match"):
        tg.repeat_interleave(tg.ones(3), 2, output_size=5)


# -- splitting and reshaping views ----------------------------------------------------------------

@pytest.mark.parametrize("arg", [3, 4, 7, 9, [1, 5], (0, 2, 2, 6), [5, 2], [10]])
def test_tensor_split(arg, device):
    x = t64((7, 2), device)
    pieces = tg.tensor_split(x, arg)
    refs = np.array_split(host(x), arg)
    assert len(pieces) == len(refs)
    for p, r in zip(pieces, refs):
        same(p, r)
        assert p._base is x
    assert_grads_match(lambda t: tg.cat([p * (i + 1) for i, p in
                                         enumerate(tg.tensor_split(t, arg))]), [x])


def test_tensor_split_tensor_argument_and_errors():
    x = tg.arange(7)
    assert [p.tolist() for p in tg.tensor_split(x, tg.tensor([1, 5]))] == \
        [[0], [1, 2, 3, 4], [5, 6]]
    assert [p.tolist() for p in x.tensor_split(tg.tensor(3))] == [[0, 1, 2], [3, 4], [5, 6]]
    assert [p.shape for p in tg.tensor_split(tg.ones(2, 5), 2, dim=1)] == [(2, 3), (2, 2)]
    with pytest.raises(RuntimeError, match="number of sections must be larger than 0, got 0"):
        tg.tensor_split(x, 0)
    with pytest.raises(RuntimeError, match="expected at least a 1-dimensional tensor"):
        tg.tensor_split(tg.ones(()), 2)


def test_unflatten_and_swaps(device):
    x = t64((2, 6), device)
    y = x.unflatten(1, (3, -1))
    same(y, host(x).reshape(2, 3, 2))
    assert y._base is x
    same(tg.unflatten(x, -2, (1, 2)), host(x).reshape(1, 2, 6))
    with pytest.raises(RuntimeError, match=r"unflatten: Provided sizes \[4, -1\] don't multiply "
                                           r"up to the size of dim 1 \(6\) in the input tensor"):
        x.unflatten(1, (4, -1))
    with pytest.raises(RuntimeError, match="unflatten: sizes must be non-empty"):
        x.unflatten(1, ())
    same(tg.swapaxes(x, 0, 1), host(x).T)
    same(x.swapdims(1, 0), host(x).T)
    assert_grads_match(lambda t: t.unflatten(1, (2, 3)).swapaxes(0, 2), [x])


# -- diagonals ------------------------------------------------------------------------------------

@pytest.mark.parametrize("offset,d1,d2", [(0, 0, 1), (1, 0, 1), (-1, 1, 0), (2, 2, 0),
                                          (-5, 0, 2), (0, -1, -2)])
def test_diagonal_is_a_view(offset, d1, d2, device):
    x = t64((3, 4, 5), device)
    d = tg.diagonal(x, offset, d1, d2)
    same(d, np.diagonal(host(x), offset, d1, d2))
    assert d._base is x
    assert_grads_match(lambda t: t.diagonal(offset, d1, d2), [x])
    # through a transposed (non-contiguous) input
    same(x.transpose(0, 2).diagonal(offset), np.diagonal(host(x).transpose(2, 1, 0), offset))


def test_diagonal_writes_through():
    x = tg.zeros(3, 3)
    x.diagonal().fill_(1.0)
    same(x, np.eye(3, dtype=np.float32))
    with pytest.raises(RuntimeError, match="diagonal dimensions cannot be identical 0, 0"):
        tg.diagonal(x, 0, 0, 0)


@pytest.mark.parametrize("offset", [0, 1, -2, 4])
def test_diag(offset, device):
    v, m = t64((3,), device), t64((3, 4), device)
    same(tg.diag(v, offset), np.diag(host(v), offset))
    same(m.diag(offset), np.diag(host(m), offset))
    assert_grads_match(lambda t: tg.diag(t, offset), [v])
    assert_grads_match(lambda t: tg.diag(t, offset), [m])
    with pytest.raises(RuntimeError, match=r"diag\(\): Supports 1D or 2D tensors. Got 3D"):
        tg.diag(tg.ones(2, 2, 2))


def _np_diag_embed(a, offset, d1, d2):
    n = a.shape[-1] + abs(offset)
    out = np.zeros(a.shape[:-1] + (n, n), a.dtype)
    for i in range(a.shape[-1]):
        r, c = (i, i + offset) if offset >= 0 else (i - offset, i)
        out[..., r, c] = a[..., i]
    return np.moveaxis(out, (-2, -1), (d1, d2))


@pytest.mark.parametrize("offset,d1,d2", [(0, -2, -1), (1, 0, 2), (-2, 2, 0), (3, 1, 0)])
def test_diag_embed(offset, d1, d2, device):
    x = t64((2, 3), device)
    same(tg.diag_embed(x, offset, d1, d2), _np_diag_embed(host(x), offset, d1, d2))
    same(x.diag_embed(offset, d1, d2).diagonal(offset, d1, d2), host(x))
    assert_grads_match(lambda t: tg.diag_embed(t, offset, d1, d2), [x])


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 4), st.integers(0, 4), st.integers(-5, 5))
def test_diag_embed_round_trips_through_diagonal(batch, n, offset):
    x = tg.arange(batch * n, dtype=tg.float64).reshape(batch, n)
    e = tg.diag_embed(x, offset)
    assert tuple(e.shape) == (batch, n + abs(offset), n + abs(offset))
    same(e.diagonal(offset, -2, -1), host(x))
    assert float(e.abs().sum()) == float(x.abs().sum())


@pytest.mark.parametrize("row,col,offset", [(3, 3, 0), (3, 4, 1), (4, 3, -1), (0, 3, 0),
                                            (3, 5, 9), (3, 2, -9)])
def test_triangle_indices(row, col, offset):
    same(tg.triu_indices(row, col, offset), np.stack(np.triu_indices(row, offset, col)))
    same(tg.tril_indices(row, col, offset), np.stack(np.tril_indices(row, offset, col)))
    assert tg.triu_indices(row, col, offset).dtype is tg.int64
    assert tg.tril_indices(row, col, offset, dtype=tg.int32).dtype is tg.int32


@pytest.mark.parametrize("fn", [
    lambda t: (t.flip(0) * t).sum(1), lambda t: (t.roll(1, 1) * t).sum(0),
    lambda t: t.diagonal() ** 2, lambda t: tg.diag_embed(t * t, 1),
    lambda t: t.repeat_interleave(2, dim=0) ** 3,
], ids=["flip", "roll", "diagonal", "diag_embed", "repeat_interleave"])
def test_second_order(fn):
    second_order(fn, t64((3, 3)))
