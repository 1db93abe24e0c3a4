"""The out= and in-place forms against PyTorch's rules (sweep 37): which out= forms cast the
result into out and which want out's dtype to be the result's (and with which error), the
out= keywords that were missing, the version bump of an in-place op that leaves the values
as they are, the order of an in-place op's checks (autograd's, then several elements in one
memory location, then the broadcast shape, then the cast), and the resize warning naming the
caller's line."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tritongrad as tg

A = np.array([[-1.5, 0.25, 2.0, -0.75], [0.5, -2.5, 1.25, 3.0], [0.1, -0.3, -4.0, 0.6]],
             dtype=np.float32)
B = np.array([[0.5, -1.0, 1.5, 0.0], [-0.5, 2.0, -1.25, 1.0], [0.2, 0.4, -0.6, 0.8]],
             dtype=np.float32)


def _a():
    return tg.tensor(A.copy())


# -- out= keywords that were missing ------------------------------------------------------------

@pytest.mark.parametrize("call, expected", [
    (lambda x, out: tg.clamp_min(x, 0.0, out=out), np.maximum(A, 0.0)),
    (lambda x, out: tg.clamp_max(x, 0.0, out=out), np.minimum(A, 0.0)),
    (lambda x, out: tg.hardshrink(x, 0.5, out=out), np.where(np.abs(A) > 0.5, A, 0.0)),
    (lambda x, out: tg.take(x, tg.tensor([5, 0, -1]), out=out), A.ravel()[[5, 0, -1]]),
    (lambda x, out: tg.diff(x, out=out), np.diff(A.astype(np.float64), axis=-1)),
    (lambda x, out: tg.narrow_copy(x, 1, 1, 2, out=out), A[:, 1:3]),
    (lambda x, out: tg.renorm(x, 2, 0, 1.0, out=out),
     A * np.minimum(1.0, 1.0 / (np.linalg.norm(A.astype(np.float64), axis=1, keepdims=True)
                                + 1e-7))),
])
def test_missing_out_forms_write_and_return_out(call, expected):
    out = tg.empty(0)
    assert call(_a(), out) is out
    assert out.dtype is tg.float32 and out.shape == expected.shape
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6, atol=1e-6)


def test_lstsq_out_is_the_tuple_given():
    a = np.array([[2.0, 1.0], [1.0, 3.0], [0.0, 1.0]], dtype=np.float32)
    b = np.array([[1.0], [2.0], [3.0]], dtype=np.float32)
    outs = (tg.empty(0), tg.empty(0), tg.empty(0, dtype=tg.int64), tg.empty(0))
    r = tg.linalg.lstsq(tg.tensor(a), tg.tensor(b), out=outs)
    assert all(x is o for x, o in zip(r, outs)) and r.solution is outs[0]
    expected = np.linalg.lstsq(a.astype(np.float64), b.astype(np.float64), rcond=None)[0]
    np.testing.assert_allclose(outs[0].numpy(), expected, rtol=1e-5, atol=1e-5)
    wide = (tg.empty(0, dtype=tg.float64),) + outs[1:]  # (a safe cast: allowed)
    tg.linalg.lstsq(tg.tensor(a), tg.tensor(b), out=wide)
    assert wide[0].dtype is tg.float64
    with pytest.raises(RuntimeError, match="torch.linalg.lstsq: Expected solution to be safely "
                                           "castable from Float dtype to Long dtype"):
        tg.linalg.lstsq(tg.tensor(a), tg.tensor(b), out=(tg.empty(0, dtype=tg.int64),) + outs[1:])


# -- which out= forms cast, and their errors ----------------------------------------------------

def test_number_bounds_clamp_wants_outs_dtype_tensor_bounds_cast():
    wide = tg.empty(0, dtype=tg.float64)
    for call in (lambda o: tg.clamp(_a(), -0.5, 0.5, out=o),
                 lambda o: tg.clamp_min(_a(), 0.0, out=o), lambda o: tg.clip(_a(), max=0.2, out=o),
                 lambda o: tg.hardshrink(_a(), out=o), lambda o: tg.frac(_a(), out=o)):
        with pytest.raises(RuntimeError, match="^Found dtype Double but expected Float$"):
            call(wide)
    bound = tg.tensor(B)
    assert tg.clamp(_a(), min=bound, out=wide) is wide and wide.dtype is tg.float64
    np.testing.assert_allclose(wide.numpy(), np.maximum(A, B))
    assert tg.clamp_max(_a(), bound, out=wide) is wide
    np.testing.assert_allclose(wide.numpy(), np.minimum(A, B))
    ints = tg.tensor([[-3, 0, 5]])
    with pytest.raises(RuntimeError, match="^Found dtype Double but expected Long$"):
        tg.clamp(ints, -1, 2, out=tg.empty(0, dtype=tg.float64))


def test_lerp_casts_for_a_number_weight_only():
    wide = tg.empty(0, dtype=tg.float64)
    tg.lerp(_a(), tg.tensor(B), 0.25, out=wide)
    np.testing.assert_allclose(wide.numpy(), A + 0.25 * (B - A), rtol=1e-6)
    with pytest.raises(RuntimeError, match="^Found dtype Double but expected Float$"):
        tg.lerp(_a(), tg.tensor(B), tg.full((3, 4), 0.25), out=wide)


@pytest.mark.parametrize("call", [
    lambda o: tg.msort(_a(), out=o),
    lambda o: tg.t_copy(_a(), out=o),
    lambda o: tg.detach_copy(_a(), out=o),
    lambda o: tg.narrow_copy(_a(), 0, 0, 1, out=o),
    lambda o: tg.renorm(_a(), 2, 0, 1.0, out=o),
])
def test_copies_and_sorts_want_outs_dtype(call):
    with pytest.raises(RuntimeError, match="^Expected out tensor to have dtype float, but got "
                                           "double instead$"):
        call(tg.empty(0, dtype=tg.float64))


def test_own_out_dtype_errors():
    with pytest.raises(RuntimeError, match="^Expected out tensor to have dtype bool, but got "
                                           "float instead$"):
        tg.isin(tg.tensor([1, 2]), tg.tensor([2]), out=tg.empty(0))
    with pytest.raises(RuntimeError, match="^nan_to_num: dtype of out: Double should be same as "
                                           "input: Float$"):
        tg.nan_to_num(_a(), out=tg.empty(0, dtype=tg.float64))
    with pytest.raises(RuntimeError, match="^take\\(\\): self and out expected to have the same "
                                           "dtype, but got self.dtype = Float and out.dtype = "
                                           "Double$"):
        tg.take(_a(), tg.tensor([0]), out=tg.empty(0, dtype=tg.float64))
    with pytest.raises(RuntimeError, match="^torch.frexp\\(\\) expects mantissa to have dtype "
                                           "float but got double$"):
        tg.frexp(_a(), out=(tg.empty(0, dtype=tg.float64), tg.empty(0, dtype=tg.int32)))
    with pytest.raises(RuntimeError, match="^torch.frexp\\(\\) expects exponent to have int "
                                           "dtype but got long int$"):
        tg.frexp(_a(), out=(tg.empty(0), tg.empty(0, dtype=tg.int64)))


def test_legacy_cholesky_out_casts_where_safe():
    spd = np.array([[4.0, 2.0], [2.0, 5.0]], dtype=np.float32)
    wide = tg.empty(0, dtype=tg.float64)
    assert tg.cholesky(tg.tensor(spd), out=wide) is wide and wide.dtype is tg.float64
    np.testing.assert_allclose(wide.numpy(), np.linalg.cholesky(spd.astype(np.float64)),
                               rtol=1e-6)
    with pytest.raises(RuntimeError, match="^cholesky: Expected result to be safely castable "
                                           "from Float dtype to Long dtype.$"):
        tg.cholesky(tg.tensor(spd), out=tg.empty(0, dtype=tg.int64))
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float, but got "
                                           "double"):  # (linalg.cholesky does not cast)
        tg.linalg.cholesky(tg.tensor(spd), out=wide)


def test_resize_warning_names_the_callers_line():
    for call in (lambda: tg.add(_a(), 1, out=tg.zeros(5)),
                 lambda: tg.sum(_a(), 0, out=tg.zeros(5)),
                 lambda: tg.clamp_min(_a(), 0.0, out=tg.zeros(5))):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call()
        resized = [w for w in caught if "was resized" in str(w.message)]
        assert len(resized) == 1 and resized[0].filename == __file__


# -- in-place forms -----------------------------------------------------------------------------

def test_an_inplace_op_that_keeps_the_values_is_still_a_write():
    for t, op in ((tg.tensor([True, False]), "sign_"), (tg.tensor([3, -2]), "ceil_"),
                  (tg.tensor([3, -2]), "trunc_")):
        v = t._version
        before = t.tolist()
        assert getattr(t, op)() is t and t.tolist() == before
        assert t._version == v + 1  # (PyTorch's bump: saved copies of t notice the write)
        with pytest.raises(RuntimeError, match="unsupported operation: more than one element "
                                               "of the written-to tensor"):
            getattr(t[:1].expand(3), op)()


def test_inplace_checks_come_in_pytorchs_order():
    ints = tg.tensor([1, 2, 3])
    overlap = "unsupported operation: more than one element of the written-to tensor"
    # several elements in one memory location before the cast
    for call in (lambda t: t.add_(1.5), lambda t: t.mul_(0.5), lambda t: t.sqrt_(),
                 lambda t: t.div_(tg.tensor([1, 2, 3]))):
        with pytest.raises(RuntimeError, match=overlap):
            call(ints[:1].expand(3))
    # the broadcast shape before the cast
    with pytest.raises(RuntimeError, match=r"^output with shape \[3\] doesn't match the "
                                           r"broadcast shape \[2, 3\]$"):
        ints.add_(tg.ones(2, 3))
    # autograd's checks first
    leaf = tg.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad is being used "
                                           "in an in-place operation.$"):
        leaf.mul_(tg.tensor([1j, 1j, 1j]))
    with pytest.raises(RuntimeError, match="^a view of a leaf Variable that requires grad is "
                                           "being used in an in-place operation.$"):
        leaf[:2].mul_(tg.tensor([1j, 1j]))
    # and the cast where nothing else is wrong
    with pytest.raises(RuntimeError, match="^result type Float can't be cast to the desired "
                                           "output type Long$"):
        ints.add_(1.5)
    assert ints.tolist() == [1, 2, 3]


@pytest.mark.parametrize("call", [
    lambda t: t.copy_(tg.ones(2, 3)),
    lambda t: t.clamp_(tg.zeros(2, 3)),
    lambda t: t.lerp_(tg.ones(2, 3), 0.5),
    lambda t: t.fmod_(tg.ones(2, 3)),
    lambda t: t.xlogy_(tg.ones(2, 3)),
])
def test_inplace_broadcast_error_is_pytorchs(call):
    t = tg.zeros(3)
    with pytest.raises(RuntimeError, match=r"^output with shape \[3\] doesn't match the "
                                           r"broadcast shape \[2, 3\]$"):
        call(t)
    assert t.tolist() == [0.0, 0.0, 0.0]


# -- against PyTorch ----------------------------------------------------------------------------

def _torch_cases(lib):
    x = lib.tensor(A.copy())
    return [
        lambda: lib.clamp_min(x, 0.0, out=lib.empty(0)),
        lambda: lib.clamp(x, -0.5, 0.5, out=lib.empty(0, dtype=lib.float64)),
        lambda: lib.clamp(x, min=lib.tensor(B), out=lib.empty(0, dtype=lib.float64)),
        lambda: lib.hardshrink(x, out=lib.empty(0, dtype=lib.float16)),
        lambda: lib.take(x, lib.tensor([1, -2]), out=lib.empty(0)),
        lambda: lib.diff(x, out=lib.empty(0, dtype=lib.int64)),
        lambda: lib.diff(x, out=lib.empty(0, dtype=lib.float64)),
        lambda: lib.msort(x, out=lib.empty(0, dtype=lib.float64)),
        lambda: lib.isin(lib.tensor([1, 2]), lib.tensor([2]), out=lib.empty(0, dtype=lib.int64)),
        lambda: lib.nan_to_num(x, out=lib.empty(0, dtype=lib.float16)),
        lambda: lib.tensor([True, False]).sign_(),
        lambda: lib.tensor([1, 2])[:1].expand(2).add_(1.5),
        lambda: lib.zeros(3).copy_(lib.ones(2, 3)),
    ]


def test_against_pytorch():
    torch = pytest.importorskip("torch")

    def run(f):
        try:
            r = f()
        except Exception as e:  # noqa: BLE001 - compared by type and message
            return type(e).__name__, str(e).split("\n")[0][:60]
        return r.dtype.__repr__().split(".")[-1], tuple(r.shape), np.asarray(r.tolist())

    for ft, fg in zip(_torch_cases(torch), _torch_cases(tg)):
        rt, rg = run(ft), run(fg)
        assert rt[:2] == rg[:2]
        if len(rt) == 3:
            np.testing.assert_allclose(rg[2], rt[2], rtol=1e-6)


@pytest.mark.parametrize("call, message", [
    (lambda o: tg.amax(_a(), 1, out=o), "^Expected the dtype for input and out to match, but "
                                         "got Float for input's dtype and Double for out's "
                                         "dtype.$"),
    (lambda o: tg.amin(_a(), 1, out=o), "^Expected the dtype for input and out to match"),
    (lambda o: tg.index_select(_a(), 1, tg.tensor([0]), out=o),
     r"^index_select\(\): self and result must have the same scalar type$"),
    (lambda o: tg.masked_select(_a(), tg.tensor(A > 0), out=o),
     r"^masked_select\(\): self and result must have the same scalar type$"),
])
def test_exact_out_errors_in_the_kernels_words(call, message):
    with pytest.raises(RuntimeError, match=message):
        call(tg.empty(0, dtype=tg.float64))


@pytest.mark.parametrize("call", [
    lambda s: s.addmm_(tg.ones(3, 4), tg.ones(4, 5)),
    lambda s: s.addmv_(tg.ones(3, 4), tg.ones(4)),
    lambda s: s.baddbmm_(tg.ones(2, 3, 4), tg.ones(2, 4, 5)),
])
def test_inplace_products_check_autograd_first(call):
    leaf = tg.zeros(5, requires_grad=True)  # (and of a shape the product is not)
    with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad"):
        call(leaf)
    with pytest.raises(RuntimeError, match="^a view of a leaf Variable that requires grad"):
        call(tg.zeros(2, 5, requires_grad=True)[0])
    x = tg.zeros(3, 5, requires_grad=True)
    y = x * 1.0
    y.addmm_(tg.ones(3, 4), tg.ones(4, 5), beta=2.0)
    np.testing.assert_array_equal(y.detach().numpy(), np.full((3, 5), 4.0))
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((3, 5), 2.0))
