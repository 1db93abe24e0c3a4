"""Storages as PyTorch's (bytes and elements read and written, copies, equality, from_buffer),
``set_`` into a storage too small for the geometry, ``resize_`` with a memory format, the
resize an ``out=`` op makes (no version bump), and the layout of leaf gradients.

Expected values are computed here from the bytes (NumPy's views of the same values), with a
torch comparison where torch is installed.
"""

from __future__ import annotations

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.autograd.storage import resize_for_output


def _bytes(values, np_dtype) -> list:
    """The little-endian bytes of ``values`` as ``np_dtype`` elements."""
    return np.asarray(values, dtype=np.dtype(np_dtype).newbyteorder("<")).view(np.uint8).tolist()


def _bf16_bits(values) -> np.ndarray:
    """bfloat16 bit patterns of values exactly representable in bfloat16."""
    return (np.asarray(values, dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)


def _bf16_of(bits) -> list:
    return (np.asarray(bits, np.uint32) << 16).view(np.float32).tolist()


# -- UntypedStorage: bytes ---------------------------------------------------------------------

@pytest.mark.parametrize("dtype, np_dtype, values", [
    ("int16", np.int16, [1, 2, -3]), ("float32", np.float32, [1.0, -2.5]),
    ("float64", np.float64, [0.1]), ("int64", np.int64, [2 ** 40]),
    ("bool", np.bool_, [True, False]), ("complex64", np.complex64, [1 + 2j]),
    ("float16", np.float16, [1.5, 65504.0]), ("uint8", np.uint8, [255, 0])])
def test_untyped_storage_tolist_is_the_bytes(dtype, np_dtype, values):
    t = tg.tensor(values, dtype=getattr(tg, dtype))
    s = t.untyped_storage()
    assert s.tolist() == _bytes(values, np_dtype)
    assert list(s) == s.tolist() and len(s) == s.nbytes() == t.nbytes


def test_untyped_storage_of_bfloat16_reads_and_writes_its_bytes():
    t = tg.tensor([1.5, -2.0], dtype=tg.bfloat16)
    s = t.untyped_storage()
    assert s.tolist() == _bytes(_bf16_bits([1.5, -2.0]), np.uint16) == [192, 63, 0, 192]
    assert s[1] == 63 and s[-1] == 192
    s[1] = 64  # 0x40C0
    assert t.tolist() == _bf16_of([0x40C0, 0xC000]) == [6.0, -2.0]
    s.fill_(0x3F)
    assert t.tolist() == _bf16_of([0x3F3F, 0x3F3F])
    s.copy_(tg.tensor([7, 9], dtype=tg.int16).untyped_storage())
    assert t.tolist() == _bf16_of([7, 9])
    other = tg.zeros(2, dtype=tg.int16)
    other.untyped_storage().copy_(tg.tensor([6.0, 1.0], dtype=tg.bfloat16).untyped_storage())
    assert other.tolist() == _bf16_bits([6.0, 1.0]).view(np.int16).tolist()


def test_storage_item_access_writes_through_without_a_version_bump():
    t = tg.tensor([258, 3], dtype=tg.int16)
    s = t.untyped_storage()
    assert (s[0], s[1], s[2], s[-1]) == (2, 1, 3, 0)
    s[0] = 7
    s[3] = 300  # (PyTorch keeps the low byte: 300 % 256 == 44)
    assert t.tolist() == [7 + 256, 3 + 44 * 256]
    s.fill_(1)
    assert t.tolist() == [257, 257]
    s.fill_(-1)
    assert t.tolist() == [-1, -1]
    assert t._version == 0  # (storage writes bypass the version counter, as PyTorch's)


def test_storage_item_errors():
    s = tg.zeros(2, dtype=tg.int16).untyped_storage()
    with pytest.raises(IndexError, match="index 4 out of range for storage of size 4"):
        s[4]
    with pytest.raises(IndexError, match="index -1 out of range for storage of size 4"):
        s[-5]
    with pytest.raises(TypeError, match="can't index"):
        s["a"]
    with pytest.raises(RuntimeError, match="out of bounds"):
        s[4] = 1
    with pytest.raises(RuntimeError, match="fill_ expects int, but got float"):
        s.fill_(1.5)


def test_storage_slice_views_the_same_bytes():
    t = tg.tensor([1, 2], dtype=tg.int16)
    part = t.untyped_storage()[1:3]
    assert part.nbytes() == 2 and part.tolist() == [0, 2]
    part[1] = 5
    assert t.tolist() == [1, 5]


def test_storage_copy_and_its_errors():
    t = tg.zeros(2, dtype=tg.int16)
    s = t.untyped_storage()
    assert s.copy_(tg.tensor([1.0], dtype=tg.float32).untyped_storage()) is s
    assert t.tolist() == np.array([1.0], np.float32).view(np.int16).tolist()
    u = tg.tensor([5, 6], dtype=tg.int32)
    v = tg.tensor([1, 2], dtype=tg.int32)
    v.untyped_storage().copy_(u.untyped_storage())
    assert v.tolist() == [5, 6] and v._version == 0
    with pytest.raises(RuntimeError, match="size does not match, self was 8 bytes but src was "
                                           "4 bytes"):
        v.untyped_storage().copy_(tg.zeros(1, dtype=tg.int32).untyped_storage())
    with pytest.raises(TypeError, match=r"copy_\(\): argument 'src' \(position 1\) must be"):
        v.untyped_storage().copy_(u)


def test_storage_clone_cpu_and_queries():
    t = tg.tensor([1, 2], dtype=tg.int16)
    s = t.untyped_storage()
    c = s.clone()
    c[0] = 9
    assert t.tolist() == [1, 2] and c.tolist() == [9, 0, 2, 0]
    assert c.data_ptr() != s.data_ptr() and c.nbytes() == 4
    assert s.cpu() is s
    assert s.is_pinned() is False and s.is_cuda is False
    assert s.get_device() is None and s.resizable() is True
    assert tg.zeros(0).untyped_storage().data_ptr() == 0


def test_storages_of_the_same_memory_compare_equal():
    t = tg.zeros(3)
    assert t[1:].untyped_storage() == t.untyped_storage()
    assert t.untyped_storage() != t.clone().untyped_storage()
    assert len({t.untyped_storage(), t.view(3).untyped_storage()}) == 1
    assert tg.zeros(0).untyped_storage() != tg.zeros(0).untyped_storage()


def test_storage_resize_is_refused_unless_a_no_op():
    s = tg.zeros(2).untyped_storage()
    assert s.resize_(8) is s
    with pytest.raises(NotImplementedError, match="resize_"):
        s.resize_(0)
    with pytest.raises(NotImplementedError, match="resize_"):
        s.resize_(16)


def test_from_buffer_reads_elements_in_the_byte_order_given():
    data = b"\x01\x00\x02\x00"
    little = tg.UntypedStorage.from_buffer(data, dtype=tg.int16, byte_order="little")
    big = tg.UntypedStorage.from_buffer(data, dtype=tg.int16, byte_order="big")
    assert little.tolist() == _bytes([1, 2], np.int16)
    assert big.tolist() == _bytes([256, 512], np.int16)
    assert tg.UntypedStorage.from_buffer(data, dtype=tg.uint8).tolist() == [1, 0, 2, 0]
    with pytest.raises(RuntimeError, match="argument 'dtype' cannot be None"):
        tg.UntypedStorage.from_buffer(data)
    with pytest.raises(RuntimeError, match="byte_order"):
        tg.UntypedStorage.from_buffer(data, dtype=tg.int16)


def test_untyped_storage_from_a_sequence_of_bytes():
    assert tg.UntypedStorage([1, 2, 300]).tolist() == [1, 2, 44]
    assert tg.UntypedStorage([]).nbytes() == 0
    with pytest.raises(RuntimeError, match="one of the items was of type str instead of int"):
        tg.UntypedStorage(["a"])
    with pytest.raises(RuntimeError, match="can only set storage content with a int types"):
        tg.zeros(1).untyped_storage()[0] = 1.5


def test_storage_bytes_on_each_device(device):
    for dtype, values in [(tg.int16, [258, -2]), (tg.bfloat16, [1.5, -2.0])]:
        t = tg.tensor(values, dtype=dtype, device=device)
        s = t.untyped_storage()
        expected = (_bytes(values, np.int16) if dtype is tg.int16 else
                    _bytes(_bf16_bits(values), np.uint16))
        assert s.tolist() == expected and s.device == t.device
        s[0] = 0
        expected[0] = 0
        assert t.untyped_storage().tolist() == expected
        assert s.clone().tolist() == expected and s.cpu().tolist() == expected
    u = tg.zeros(120, device=device)
    u.resize_(2, 3, 4, 5, memory_format=tg.channels_last)
    assert u.stride() == (60, 1, 15, 3)
    src = tg.tensor([1.0, 2.0, 3.0, 4.0], device=device)
    v = tg.tensor([], device=device)
    v.set_(src.untyped_storage(), 2, (5,), (1,))
    assert v[:2].tolist() == [3.0, 4.0] and v.untyped_storage().nbytes() == 28


# -- TypedStorage: elements --------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore:TypedStorage is deprecated")
def test_typed_storage_items_are_elements():
    t = tg.tensor([1.0, 2.0, 3.0, 4.0])
    s = t.storage()
    s[1] = 9
    assert (s[1], s[-1]) == (9.0, 4.0) and t.tolist() == [1.0, 9.0, 3.0, 4.0]
    s.fill_(2.5)
    assert t.tolist() == [2.5] * 4
    s.copy_(tg.tensor([1.0, 2.0, 3.0, 4.0]).storage())
    assert t.tolist() == [1.0, 2.0, 3.0, 4.0]
    c = s.clone()
    c[0] = 7
    assert t.tolist()[0] == 1.0 and c.tolist() == [7.0, 2.0, 3.0, 4.0] and c.dtype is tg.float32
    assert (s.element_size(), s.nbytes(), len(s)) == (4, 16, 4)


# -- set_ and resize_ --------------------------------------------------------------------------

def test_set_into_a_storage_too_small_grows_it():
    src = tg.tensor([1.0, 2.0, 3.0, 4.0])
    t = tg.tensor([])
    t.set_(src.untyped_storage(), 2, (5,), (1,))
    assert t.shape == (5,) and t[:2].tolist() == [3.0, 4.0]
    assert t.untyped_storage().nbytes() == 7 * 4
    assert src.tolist() == [1.0, 2.0, 3.0, 4.0]  # (the source keeps its memory)
    u = tg.tensor([])
    u.set_(src.untyped_storage(), 1, (2, 2), (3, 1))
    assert u[0].tolist() == [2.0, 3.0] and u.stride() == (3, 1) and u.storage_offset() == 1
    with pytest.raises(RuntimeError, match="invalid storage offset -1"):
        tg.tensor([]).set_(src.untyped_storage(), -1, (2,), (1,))
    with pytest.raises(TypeError, match=r"set_\(\) received an invalid combination"):
        tg.zeros(2).set_([1, 2])


def test_set_with_a_source_that_requires_grad_is_not_implemented():
    t = tg.zeros(1)
    t.set_(tg.ones(2, requires_grad=True))
    assert t.requires_grad and type(t.grad_fn).__name__ == "NotImplemented"


@pytest.mark.parametrize("fmt, shape, strides", [
    ("channels_last", (2, 3, 4, 5), (60, 1, 15, 3)),
    ("channels_last_3d", (2, 3, 4, 5, 6), (360, 1, 90, 18, 3)),
    ("contiguous_format", (2, 3, 4, 5), (60, 20, 5, 1))])
def test_resize_lays_out_as_the_memory_format(fmt, shape, strides):
    n = int(np.prod(shape))
    t = tg.arange(float(n))
    t.resize_(*shape, memory_format=getattr(tg, fmt))
    assert t.stride() == strides and t._version == 1
    assert t.is_contiguous(memory_format=getattr(tg, fmt))
    # (the elements keep their memory: element at flat memory offset i holds i)
    index = tuple(np.unravel_index(7, shape))
    assert t[index].item() == float(sum(i * s for i, s in zip(index, strides)))
    t.resize_(*shape, memory_format=getattr(tg, fmt))  # the same shape: no bump
    assert t._version == 1


def test_resize_restrides_without_a_bump_when_the_shape_stays():
    t = tg.zeros(2, 3, 4, 5)
    t.resize_(2, 3, 4, 5, memory_format=tg.channels_last)
    assert t.stride() == (60, 1, 15, 3) and t._version == 0
    u = tg.zeros(3, 2).t()
    u.resize_(2, 3)
    assert u.stride() == (1, 2)  # no memory_format: nothing changes
    u.resize_(2, 3, memory_format=tg.contiguous_format)
    assert u.stride() == (3, 1) and u._version == 0
    with pytest.raises(RuntimeError, match="Unsupported memory format"):
        tg.zeros(3).resize_(3, memory_format=tg.preserve_format)
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last"):
        tg.zeros(3).resize_(3, memory_format=tg.channels_last)


def test_resize_for_output_neither_bumps_nor_checks_requires_grad():
    out = tg.zeros(0)
    resize_for_output(out, (2, 3))
    assert out.shape == (2, 3) and out._version == 0
    p = tg.zeros(2, requires_grad=True)
    with tg.no_grad():
        resize_for_output(p, (4,))
    assert p.shape == (4,) and p._version == 0


# -- *_copy functions ----------------------------------------------------------------------------

def test_view_copies_are_row_major_whatever_the_view():
    x = tg.arange(24.0).reshape(2, 3, 4)
    ref = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    for got, want in [(tg.permute_copy(x, (2, 0, 1)), ref.transpose(2, 0, 1)),
                      (tg.transpose_copy(x, 0, 2), ref.transpose(2, 1, 0)),
                      (tg.t_copy(x[0]), ref[0].T),
                      (tg.as_strided_copy(x, (2, 2), (1, 2), 1),
                       np.lib.stride_tricks.as_strided(ref.reshape(-1)[1:], (2, 2), (4, 8))),
                      (tg.view_copy(x.unsqueeze(0).to(memory_format=tg.channels_last),
                                    (1, 2, 3, 4)), ref.reshape(1, 2, 3, 4))]:
        assert got.is_contiguous() and got.stride() == tuple(
            s // 4 for s in np.ascontiguousarray(want).strides)
        np.testing.assert_array_equal(got.numpy(), want)


def test_multi_output_copies_with_out_fill_it_and_return_none():
    out = [tg.zeros(2), tg.zeros(2)]
    assert tg.split_copy(tg.tensor([1.0, 2.0, 3.0, 4.0]), 2, out=out) is None
    assert [o.tolist() for o in out] == [[1.0, 2.0], [3.0, 4.0]]
    with pytest.raises(RuntimeError, match="expected an out= argument of size 2, got size 1"):
        tg.split_copy(tg.ones(4), 2, out=[tg.zeros(2)])
    with pytest.raises(TypeError, match=r"t_copy\(\): argument 'input' \(position 1\) must be "
                                        r"Tensor, not list"):
        tg.t_copy([1, 2])


# -- gradient layout ---------------------------------------------------------------------------

def test_leaf_gradients_take_dense_leaf_layouts_after_accumulation_too():
    p = tg.arange(12.0).reshape(3, 4).t().requires_grad_()
    (p * 2).sum().backward()
    (p * 3).sum().backward()
    assert p.grad.stride() == (1, 4)
    np.testing.assert_array_equal(p.grad.numpy(), np.full((4, 3), 5.0, np.float32))
    q = tg.ones(2, 3, 2, 2).to(memory_format=tg.channels_last).requires_grad_()
    (q * 2).sum().backward()
    (q * q).sum().backward()
    assert q.grad.stride() == (12, 1, 6, 3)
    np.testing.assert_array_equal(q.grad.numpy(), np.full((2, 3, 2, 2), 4.0, np.float32))


# -- against torch -----------------------------------------------------------------------------

def test_storage_bytes_match_torch():
    torch = pytest.importorskip("torch")
    for name, values in [("int16", [1, -2]), ("float32", [1.0, -2.5]), ("bfloat16", [1.5, -2]),
                         ("complex64", [1 + 2j]), ("bool", [True, False]),
                         ("float16", [0.5, 3.0])]:
        a = tg.tensor(values, dtype=getattr(tg, name))
        b = torch.tensor(values, dtype=getattr(torch, name))
        assert a.untyped_storage().tolist() == b.untyped_storage().tolist(), name
        a.untyped_storage()[1] = 77
        b.untyped_storage()[1] = 77
        assert a.tolist() == b.tolist(), name
    for fmt in ("channels_last", "contiguous_format"):
        a, b = tg.zeros(120), torch.zeros(120)
        a.resize_(2, 3, 4, 5, memory_format=getattr(tg, fmt))
        b.resize_(2, 3, 4, 5, memory_format=getattr(torch, fmt))
        assert a.stride() == b.stride() and a._version == b._version


# -- the fixes made outside the sweep's files ------------------------------------------------------

def test_out_resize_bumps_the_version_once():
    t = tg.zeros(0)
    tg.add(tg.ones(3), tg.ones(3), out=t)
    assert t._version == 1


def test_modified_saved_tensor_message_names_the_op():
    a = tg.ones(3, requires_grad=True)
    b = a.exp()
    b.add_(1)
    with pytest.raises(RuntimeError, match=r"which is output 0 of Exp, is at version 1; "
                                           r"expected version 0 instead\. Hint: .*"
                                           r"set_detect_anomaly\(True, check_nan=False\)"):
        b.sum().backward()


def test_empty_tensor_data_ptr_is_zero():
    assert tg.zeros(0).data_ptr() == 0 and tg.zeros(3)[3:].data_ptr() == 0


def test_tensor_metadata_messages_as_torch():
    with pytest.raises(IndexError, match="^Dimension specified as 0 but tensor has no dimensions"):
        tg.tensor(1.0).stride(0)
    with pytest.raises(IndexError, match="dimension out of range"):
        tg.tensor(1.0).stride(1)
    assert tg.ones(2, 3).stride(-1) == 1
    with pytest.raises(TypeError, match="^Variable data has to be a tensor, but got int"):
        tg.ones(2).data = 3
    t = tg.ones(2, dtype=tg.int64)
    with pytest.raises(RuntimeError, match="^only Tensors of floating point and complex dtype"):
        t.requires_grad = True
