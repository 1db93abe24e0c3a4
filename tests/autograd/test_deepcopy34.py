"""copy.deepcopy of tensors copies each storage once (PyTorch's storage memo): tensors that
shared memory share their copies' memory, with their offsets and strides."""

import copy

import numpy as np
import pytest

import tritongrad as tg


def _devices():
    return ["cpu"] + (["cuda"] if tg.cuda.is_available() else [])


@pytest.mark.parametrize("device", _devices())
def test_views_share_their_copied_storage(device):
    x = tg.arange(6.0, device=device)
    a, b, c = copy.deepcopy([x, x[1:], x.view(2, 3).t()])
    assert b.storage_offset() == 1 and c.stride() == (1, 3) and not c.is_contiguous()
    assert a._base is None and b._base is None  # (set_ semantics, not views)
    b[0] = 100.0
    np.testing.assert_array_equal(a.cpu().numpy(), [0, 100, 2, 3, 4, 5])
    np.testing.assert_array_equal(c.cpu().numpy(), [[0, 3], [100, 4], [2, 5]])
    np.testing.assert_array_equal(x.cpu().numpy(), np.arange(6.0))  # the original untouched
    assert a.data_ptr() != x.data_ptr()


def test_separate_deepcopies_do_not_share():
    x = tg.arange(4.0)
    a = copy.deepcopy(x)
    b = copy.deepcopy(x[1:])
    b[0] = -1.0
    assert a[1].item() == 1.0 and b.storage_offset() == 1


def test_leaf_fields_and_gradient():
    w = tg.randn(3, 2, dtype=tg.float64, requires_grad=True)
    w.grad = tg.ones(3, 2, dtype=tg.float64)
    v = copy.deepcopy(w)
    assert v.requires_grad and v.is_leaf and v.dtype == tg.float64
    assert tg.equal(v, w) and tg.equal(v.grad, w.grad) and v.grad.data_ptr() != w.grad.data_ptr()
    with pytest.raises(RuntimeError, match="Only Tensors created explicitly by the user"):
        copy.deepcopy(w * 2)


def test_bfloat16_views():
    x = tg.arange(4.0).to(tg.bfloat16)
    a, b = copy.deepcopy([x, x[2:]])
    b[0] = 9.0
    assert a.dtype == b.dtype == tg.bfloat16 and a.tolist() == [0.0, 1.0, 9.0, 3.0]


def test_against_torch():
    torch = pytest.importorskip("torch")
    for lib in (torch, tg):
        x = lib.arange(12.0).reshape(3, 4)
        a, b = copy.deepcopy([x, x[:, 1::2]])
        b.mul_(-1)
        assert a.tolist() == [[0.0, -1.0, 2.0, -3.0], [4.0, -5.0, 6.0, -7.0],
                              [8.0, -9.0, 10.0, -11.0]], lib
        assert (b.storage_offset(), b.stride()) == (1, (4, 2)), lib


def test_mark_shared_storage_is_deprecated():
    class Same(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            out = x.view_as(x)
            ctx.mark_shared_storage((x, out))
            return out

        @staticmethod
        def backward(ctx, g):
            return g

    x = tg.ones(2, requires_grad=True)
    with pytest.warns(FutureWarning, match="`mark_shared_storage` is deprecated"):
        Same.apply(x).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]


def test_pickle_keeps_offset_and_strides():
    import pickle
    x = tg.arange(24.0).reshape(2, 3, 4)
    for v in (x[1:, 1:], x.transpose(0, 2), x[:, :, ::2], tg.ones(3).expand(4, 3)):
        y = pickle.loads(pickle.dumps(v))
        assert (y.storage_offset(), y.stride(), tuple(y.shape)) == \
            (v.storage_offset(), v.stride(), tuple(v.shape))
        assert tg.equal(y, v)
    bf = pickle.loads(pickle.dumps(tg.arange(6.0).to(tg.bfloat16)[2:]))
    assert bf.dtype == tg.bfloat16 and bf.storage_offset() == 2 and bf.tolist() == [2, 3, 4, 5]
