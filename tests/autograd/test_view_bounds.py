"""No view reaches outside its storage.

Views made from user geometry (``as_strided``, ``expand``'s sizes, ``permute``'s dims) are
checked as PyTorch checks them, on both backends, through the one check they share
(``runtime.array.check_view_bounds``); views derived from valid views (slices, transposes,
reshapes) stay inside by construction. Direct tests of each finding, then hypothesis
properties: random chains of views stay inside the storage and read what NumPy reads, and
random bad ``as_strided`` requests raise RuntimeError (never a crash or a read past the end).
"""

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tritongrad as tg
from tests.helpers import host

# -- the findings --------------------------------------------------------------------------------


def _raises(msg: str):
    return pytest.raises(RuntimeError, match=f"^{re.escape(msg)}$")


def test_huge_stride_raises_instead_of_crashing(device):
    # used to be a SIGSEGV on both backends (a read 4 TiB past a 12-byte buffer)
    x = tg.ones(3, device=device)
    with _raises("setStorage: sizes [2], strides [1099511627776], storage offset 0, and "
                 "itemsize 4 requiring a storage size of 4398046511108 are out of bounds for "
                 "storage of size 12"):
        x.as_strided((2,), (1 << 40,)).sum()
    with _raises("Storage size calculation overflowed with sizes=[2] and strides="
                 "[4611686018427387904]"):
        x.as_strided((2,), (1 << 62,))
    assert x.sum().item() == 3.0


def test_size_past_the_storage_raises(device):
    # used to sum garbage read past the buffer
    x = tg.ones(3, device=device)
    with _raises("setStorage: sizes [1000], strides [1], storage offset 0, and itemsize 4 "
                 "requiring a storage size of 4000 are out of bounds for storage of size 12"):
        x.as_strided((1000,), (1,)).sum()
    with _raises("setStorage: sizes [2, 2], strides [2, 1], storage offset 0, and itemsize 8 "
                 "requiring a storage size of 32 are out of bounds for storage of size 24"):
        tg.ones(3, dtype=tg.float64, device=device).as_strided((2, 2), (2, 1))


def test_negative_stride_raises(device):
    x = tg.arange(3.0, device=device)
    with _raises("as_strided: Negative strides are not supported at the moment, got strides: "
                 "[-1]"):
        x.as_strided((2,), (-1,), 2)
    with _raises("as_strided: Negative strides are not supported at the moment, got strides: "
                 "[1, -3]"):
        x.as_strided((1, 1), (1, -3))


def test_storage_offset_negative_or_past_the_end_raises(device):
    x = tg.arange(3.0, device=device)
    with _raises("Tensor: invalid storage offset -1"):
        x.as_strided((2,), (1,), -1)
    with _raises("setStorage: sizes [2], strides [1], storage offset 5, and itemsize 4 "
                 "requiring a storage size of 28 are out of bounds for storage of size 12"):
        x.as_strided((2,), (1,), 5)
    with _raises("setStorage: sizes [1], strides [1], storage offset 3, and itemsize 4 "
                 "requiring a storage size of 16 are out of bounds for storage of size 12"):
        x.as_strided((1,), (1,), 3)
    with _raises("Tensor: invalid storage offset -1"):
        x.as_strided((0,), (1,), -1)


def test_negative_sizes_raise(device):
    x = tg.ones(3, device=device)
    with _raises("Trying to create tensor with negative dimension -1: [-1]"):
        x.as_strided((-1,), (1,))
    with _raises("Trying to create tensor with negative dimension -2: [2, -2]"):
        x.as_strided((2, -2), (1, 1))
    one = tg.ones(1, device=device)
    with _raises("Trying to create tensor with negative dimension -2: [-2]"):
        one.expand(-2)
    with _raises("The expanded size of the tensor (-1) isn't allowed in a leading, "
                 "non-existing dimension 0"):
        one.expand(-1, 1)
    with pytest.raises(RuntimeError, match="must match the existing size"):
        tg.ones(2, device=device).expand(-3)


def test_the_storage_bounds_the_view_not_its_input(device):
    """The limit is the storage's size, whatever view as_strided is called on."""
    x = tg.arange(6.0, device=device)
    v = x[2:4]
    np.testing.assert_array_equal(host(v.as_strided((6,), (1,), 0)), np.arange(6.0))
    np.testing.assert_array_equal(host(v.as_strided((2,), (2,))), [2.0, 4.0])
    with _raises("setStorage: sizes [7], strides [1], storage offset 0, and itemsize 4 "
                 "requiring a storage size of 28 are out of bounds for storage of size 24"):
        v.as_strided((7,), (1,), 0)
    # an as_strided view of an as_strided view: offsets are the storage's, not the input's
    w = x.as_strided((2,), (1,), 2).as_strided((2,), (1,), 3)
    assert w.storage_offset() == 3
    np.testing.assert_array_equal(host(w), [3.0, 4.0])
    with _raises("setStorage: sizes [2], strides [1], storage offset 5, and itemsize 4 "
                 "requiring a storage size of 28 are out of bounds for storage of size 24"):
        x.as_strided((2,), (1,), 2).as_strided((2,), (1,), 5)


def test_views_with_no_elements_take_any_offset(device):
    """PyTorch: a view with no elements reads nothing, so only a negative offset is wrong."""
    x = tg.ones(3, device=device)
    for size, stride, off in [((0,), (1,), 5), ((0, 4), (1 << 40, 1), 3), ((3, 0), (7, 1), 2)]:
        e = x.as_strided(size, stride, off)
        assert e.shape == size and e.storage_offset() == off and e.sum().item() == 0.0


def test_bfloat16_counts_its_own_itemsize(device):
    x = tg.ones(3, dtype=tg.bfloat16, device=device)
    with _raises("setStorage: sizes [4], strides [1], storage offset 0, and itemsize 2 "
                 "requiring a storage size of 8 are out of bounds for storage of size 6"):
        x.as_strided((4,), (1,))
    assert x.as_strided((2,), (2,)).sum().item() == 2.0


def test_geometry_arguments_are_ints():
    x = tg.ones(3)
    with pytest.raises(TypeError, match=r"as_strided\(\): argument 'size' \(position 1\) must "
                                        r"be tuple of ints, but found element of type float"):
        x.as_strided((2.0,), (1,))
    with pytest.raises(TypeError, match=r"as_strided\(\): argument 'stride' \(position 2\)"):
        x.as_strided((2,), (None,))
    with pytest.raises(TypeError, match=r"as_strided\(\): argument 'storage_offset' \(position "
                                        r"3\) must be int, not float"):
        x.as_strided((2,), (1,), 1.0)
    v = x.as_strided(np.array([2]), (np.int64(1),), np.int64(1))
    assert v.shape == (2,) and v.storage_offset() == 1


def test_empty_strided_goes_through_the_check(device):
    e = tg.empty_strided((2, 3), (1, 2), device=device).fill_(1.0)
    assert e.stride() == (1, 2) and e.storage_offset() == 0 and e.sum().item() == 6.0
    assert tg.empty_strided((0, 3), (5, 1), device=device).shape == (0, 3)


def test_as_strided_backward_reaching_outside_its_input(device):
    """The output may read storage outside the input view's span; its gradient flows only to
    the input's elements (and no buffer is written out of bounds on the way)."""
    x = tg.arange(6.0, device=device, requires_grad=True)
    w = x[2:4].as_strided((3,), (1,), 0)  # storage 0, 1, 2: only 2 is in the input
    np.testing.assert_array_equal(host(w), [0.0, 1.0, 2.0])
    (w * tg.tensor([1.0, 2.0, 3.0], device=device)).sum().backward()
    np.testing.assert_array_equal(host(x.grad), [0, 0, 3, 0, 0, 0])
    x.grad = None
    w = x[1:3].as_strided((2,), (2,), 2)  # storage 2, 4: 4 is past the input's end
    (w * tg.tensor([5.0, 7.0], device=device)).sum().backward()
    np.testing.assert_array_equal(host(x.grad), [0, 0, 5, 0, 0, 0])
    x.grad = None
    w = x[1:5].as_strided((2,), (1,), 2)  # inside the input: its layout
    (w * tg.tensor([5.0, 7.0], device=device)).sum().backward()
    np.testing.assert_array_equal(host(x.grad), [0, 0, 5, 7, 0, 0])


def test_as_strided_backward_sums_over_overlapping_windows(device):
    """Windows that share storage (sliding windows: stride 1 under a size-2 dim) each send
    their gradient to the shared element: the contributions add up, as in PyTorch."""
    x = tg.tensor([1.0, 2.0, 3.0, 4.0], dtype=tg.float64, device=device, requires_grad=True)
    w = tg.tensor([[1.0, 10.0], [100.0, 1000.0], [1e4, 1e5]], dtype=tg.float64, device=device)
    ((x * 1).as_strided((3, 2), (1, 1)) * w).sum().backward()
    np.testing.assert_array_equal(host(x.grad), [1, 110, 11000, 100000])
    x.grad = None
    (x * 1).as_strided((2, 2), (0, 2), 1).sum().backward()  # a stride-0 (expanded) dim
    np.testing.assert_array_equal(host(x.grad), [0, 2, 0, 2])
    assert tg.autograd.gradgradcheck(lambda t: (t * 1).as_strided((3, 2), (1, 1)) ** 2, (x,))


# -- properties ------------------------------------------------------------------------------------

N_MAX = 48


def _extent(shape, strides) -> int:
    return 0 if 0 in shape else 1 + sum((n - 1) * s for n, s in zip(shape, strides))


def _assert_inside(t, n_storage: int, base) -> None:
    """Every element ``t`` can read lies inside a storage of ``n_storage`` elements, and its
    address is the storage's start plus its offset."""
    shape, strides, off = tuple(t.shape), t.stride(), t.storage_offset()
    assert off >= 0 and all(s >= 0 for s in strides), (shape, strides, off)
    if 0 not in shape:
        lo, hi = off, off + _extent(shape, strides) - 1
        assert 0 <= lo <= hi < n_storage, (shape, strides, off, n_storage)
        assert t.data_ptr() == base.data_ptr() + off * t.element_size()


@st.composite
def _geometry(draw, n_storage: int):
    """A valid as_strided request on a storage of ``n_storage`` elements."""
    nd = draw(st.integers(0, 3))
    shape = [draw(st.integers(0, 4)) for _ in range(nd)]
    strides = [draw(st.integers(0, 6)) for _ in range(nd)]
    while _extent(shape, strides) > n_storage:
        d = max(range(nd), key=lambda i: (shape[i] - 1) * strides[i])
        strides[d] //= 2
    off = draw(st.integers(0, n_storage - max(_extent(shape, strides), 1)))
    return tuple(shape), tuple(strides), off


def _step(data, t, ref, flat):
    """One random view op applied to tensor ``t`` and to its NumPy reference ``ref``
    (``flat``: the reference storage, for as_strided)."""
    nd = t.ndim
    kinds = ["as_strided", "unsqueeze"]
    if nd:
        kinds += ["slice", "expand", "view"]
    if nd >= 2:
        kinds.append("transpose")
    kind = data.draw(st.sampled_from(kinds), label="op")
    if kind == "slice":
        d = data.draw(st.integers(0, nd - 1), label="dim")
        n = t.shape[d]
        start = data.draw(st.integers(-n - 1, n + 1), label="start")
        stop = data.draw(st.integers(-n - 1, n + 1), label="stop")
        step = data.draw(st.integers(1, 3), label="step")
        ix = (slice(None),) * d + (slice(start, stop, step),)
        return t[ix], ref[ix]
    if kind == "transpose":
        d0, d1 = (data.draw(st.integers(-nd, nd - 1), label="dim") for _ in range(2))
        return t.transpose(d0, d1), np.swapaxes(ref, d0, d1)
    if kind == "unsqueeze":
        d = data.draw(st.integers(-nd - 1, nd), label="dim")
        return t.unsqueeze(d), np.expand_dims(ref, d)
    if kind == "expand":
        lead = data.draw(st.integers(0, 1), label="lead")
        sizes = [data.draw(st.integers(0, 3)) for _ in range(lead)]
        for n in t.shape:
            sizes.append(data.draw(st.sampled_from([-1, n] + ([0, 2, 3] if n == 1 else [])),
                                   label="size"))
        target = tuple(n if s == -1 else s for n, s in zip((None,) * lead + tuple(t.shape),
                                                            sizes))
        return t.expand(*sizes), np.broadcast_to(ref, target)
    if kind == "view":
        shape = list(t.shape)
        how = data.draw(st.sampled_from(["flatten", "merge", "split"]), label="how")
        if how == "flatten":
            new = [-1]
        elif how == "merge" and nd >= 2:
            d = data.draw(st.integers(0, nd - 2), label="dim")
            new = shape[:d] + [shape[d] * shape[d + 1]] + shape[d + 2:]
        else:
            d = data.draw(st.integers(0, nd - 1), label="dim")
            f = next((f for f in (2, 3) if shape[d] % f == 0 and shape[d]), 1)
            new = shape[:d] + [f, shape[d] // f] + shape[d + 1:]
        target = ref.reshape(new).shape
        if tg.runtime.array.view_strides(tuple(t.shape), t.stride(), target) is None:
            with pytest.raises(RuntimeError, match="view size is not compatible"):
                t.view(new)
            return t, ref
        return t.view(new), ref.reshape(new)
    n_storage = flat.size
    shape, strides, off = data.draw(_geometry(n_storage), label="geometry")
    item = flat.itemsize
    want = np.lib.stride_tricks.as_strided(flat[off:], shape, tuple(s * item for s in strides))
    return t.as_strided(shape, strides, off), want


def _view_chain_property(data, device):
    n = data.draw(st.integers(1, N_MAX), label="storage")
    dtype = data.draw(st.sampled_from([tg.float32, tg.int64]), label="dtype")
    flat = np.arange(n).astype(dtype.np)
    base = tg.tensor(flat, device=device)
    shape = data.draw(st.sampled_from([s for s in [(n,), (2, n // 2), (n // 3, 3), (2, 2, n // 4)]
                                       if np.prod(s) == n]), label="shape")
    t, ref = base.view(shape), flat.reshape(shape)
    for _ in range(data.draw(st.integers(1, 6), label="steps")):
        t, ref = _step(data, t, ref, flat)
        _assert_inside(t, n, base)
        assert tuple(t.shape) == ref.shape
    np.testing.assert_array_equal(host(t), ref)
    if t.numel():
        assert t.sum().item() == ref.sum()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_view_chains_stay_inside_cpu(data):
    _view_chain_property(data, "cpu")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_view_chains_stay_inside_cuda(data):
    _view_chain_property(data, "cuda")


@st.composite
def _bad_geometry(draw, n_storage: int):
    """An as_strided request that a storage of ``n_storage`` elements cannot hold."""
    big = st.one_of(st.integers(n_storage + 1, 4 * n_storage), st.sampled_from(
        [1 << 31, 1 << 40, 1 << 62, 1 << 63, 1 << 70]))
    nd = draw(st.integers(1, 3))
    shape = [draw(st.integers(1, 4)) for _ in range(nd)]
    strides = [draw(st.integers(0, 3)) for _ in range(nd)]
    off = draw(st.integers(0, 3))
    d = draw(st.integers(0, nd - 1))
    kind = draw(st.sampled_from(["size", "stride", "negative_stride", "negative_offset",
                                 "offset", "negative_size"]))
    if kind == "size":
        shape[d], strides[d] = draw(big), max(strides[d], 1)
    elif kind == "stride":
        shape[d], strides[d] = max(shape[d], 2), draw(big)
    elif kind == "negative_stride":
        strides[d] = -draw(st.integers(1, 1 << 40))
    elif kind == "negative_offset":
        off = -draw(st.integers(1, 1 << 40))
    elif kind == "offset":
        off = draw(st.one_of(st.integers(n_storage, 2 * n_storage), big))
    else:
        shape[d] = -draw(st.integers(1, 5))
    return kind, tuple(shape), tuple(strides), off


def _broken_rules(shape, strides, off, n_storage: int, item: int) -> list:
    """What PyTorch says for each rule the request breaks (it reports one of them)."""
    broken = []
    if any(n < 0 for n in shape):
        broken.append("Trying to create tensor with negative dimension")
    elif np.prod(shape, dtype=object) > (1 << 63) - 1:
        broken.append("numel: integer multiplication overflow")
    if any(s < 0 for s in strides):
        broken.append("as_strided: Negative strides are not supported")
    if 0 not in shape:
        extent = 1 + sum((n - 1) * s for n, s in zip(shape, strides))
        if extent * item > (1 << 63) - 1:
            broken.append("Storage size calculation overflowed")
        if (extent + off) * item > n_storage * item:
            broken.append("setStorage: ")
    if off < 0:
        broken.append("Tensor: invalid storage offset")
    return broken


def _bad_as_strided_property(data, device):
    n = data.draw(st.integers(1, 24), label="storage")
    base = tg.arange(float(n), device=device)
    lo = data.draw(st.integers(0, n - 1), label="view start")
    x = base[lo:]  # the request is judged against the storage, not the view
    kind, shape, strides, off = data.draw(_bad_geometry(n), label="request")
    broken = _broken_rules(shape, strides, off, n, base.element_size())
    assert broken, (kind, shape, strides, off)
    with pytest.raises(RuntimeError) as info:
        x.as_strided(shape, strides, off)
    assert any(str(info.value).startswith(b) for b in broken), (str(info.value), broken)
    assert base.sum().item() == n * (n - 1) / 2  # still there, still intact


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_bad_as_strided_requests_raise_cpu(data):
    _bad_as_strided_property(data, "cpu")


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_bad_as_strided_requests_raise_cuda(data):
    _bad_as_strided_property(data, "cuda")
