"""PyTorch's ``out=`` contract (elementwise._result, registry.write_out and the factories'
_factory_out): an out of another shape is resized (with PyTorch's deprecation warning when
it had elements), a result whose dtype cannot be cast to out's is refused, reductions such as
sum compute in out's dtype, the structured ops want out's dtype to be the result's, and the
returned tensor is out itself."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tritongrad as tg

A = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
B = np.array([[0.5, 1.0], [2.0, 3.0]], dtype=np.float32)


def _ab(lib=tg):
    return lib.tensor(A), lib.tensor(B)


def test_out_is_returned_and_written():
    a, b = _ab()
    out = tg.empty(2, 2)
    assert tg.add(a, b, out=out) is out
    np.testing.assert_array_equal(out.numpy(), A + B)
    t = tg.zeros(2, 2).t()  # a strided out keeps its strides
    tg.mul(a, b, out=t)
    assert t.stride() == (1, 2)
    np.testing.assert_array_equal(t.numpy(), A * B)


def test_out_of_another_shape_is_resized():
    a, b = _ab()
    empty = tg.empty(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no warning for an out without elements)
        tg.add(a, b, out=empty)
    assert empty.shape == (2, 2)
    out = tg.zeros(5)
    with pytest.warns(UserWarning, match=r"An output with one or more elements was resized "
                                         r"since it had shape \[5\], which does not match the "
                                         r"required output shape \[2, 2\]"):
        tg.exp(a, out=out)
    np.testing.assert_allclose(out.numpy(), np.exp(A), rtol=1e-6)


@pytest.mark.parametrize("out_dtype, message", [
    ("int64", "result type Float can't be cast to the desired output type Long"),
    ("bool", "result type Float can't be cast to the desired output type Bool"),
])
def test_results_that_cannot_be_cast_are_refused(out_dtype, message):
    a, b = _ab()
    with pytest.raises(RuntimeError, match=message):
        tg.add(a, b, out=tg.zeros(2, 2, dtype=getattr(tg, out_dtype)))
    with pytest.raises(RuntimeError, match=message):
        tg.maximum(a, b, out=tg.zeros(2, 2, dtype=getattr(tg, out_dtype)))
    out = tg.zeros(2, 2, dtype=tg.float64)  # float into double: allowed
    tg.add(a, b, out=out)
    np.testing.assert_array_equal(out.numpy(), (A + B).astype(np.float64))
    cmp = tg.zeros(2, 2, dtype=tg.int64)  # a bool result goes anywhere
    tg.gt(a, b, out=cmp)
    assert cmp.tolist() == [[1, 1], [1, 1]]


def test_reductions_compute_in_outs_dtype():
    x = tg.tensor([1.5, 1.5])
    out = tg.zeros((), dtype=tg.int64)
    tg.sum(x, 0, out=out)
    assert out.item() == 2  # (the input cast first, as PyTorch's: not round(3.0))
    c = tg.zeros(2, dtype=tg.int64)
    tg.cumsum(x, 0, out=c)
    assert c.tolist() == [1, 2]
    m = tg.zeros((), dtype=tg.float64)
    tg.mean(x, 0, out=m)
    assert m.item() == 1.5 and m.dtype is tg.float64
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        tg.mean(x, 0, out=tg.zeros((), dtype=tg.int64))


@pytest.mark.parametrize("call", [
    lambda a, b, out: tg.matmul(a, b, out=out), lambda a, b, out: tg.mm(a, b, out=out),
    lambda a, b, out: tg.tril(a, out=out), lambda a, b, out: tg.triu(a, out=out),
    lambda a, b, out: tg.where(a > 2, a, b, out=out),
])
def test_structured_ops_want_the_results_dtype(call):
    a, b = _ab()
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float, but got "
                                           "double instead"):
        call(a, b, tg.zeros(2, 2, dtype=tg.float64))
    out = tg.empty(0)
    assert call(a, b, out) is out and out.shape == (2, 2)


def test_arg_reductions_write_int64():
    a, _ = _ab()
    out = tg.zeros(2, dtype=tg.int64)
    tg.argmax(a, 1, out=out)
    assert out.tolist() == [1, 1]
    with pytest.raises(RuntimeError, match="to have dtype long int, but got float instead"):
        tg.argmax(a, 1, out=tg.zeros(2))


def test_max_min_write_every_form():
    a, b = _ab()
    out = tg.empty(2, 2)
    assert tg.max(a, b, out=out) is out
    np.testing.assert_array_equal(out.numpy(), np.maximum(A, B))
    whole = tg.empty(())
    tg.min(a, out=whole)
    assert whole.item() == 1.0
    values, indices = tg.empty(0), tg.empty(0, dtype=tg.int64)
    r = tg.max(a, 1, out=(values, indices))
    assert r.values is values and r.indices is indices
    assert values.tolist() == [2.0, 4.0] and indices.tolist() == [1, 1]


def test_factories_fill_out():
    out = tg.ones(5)
    assert tg.zeros(2, 3, out=out) is out and out.shape == (2, 3) and not out.any()
    assert tg.ones(4, out=out) is out and out.tolist() == [1.0] * 4
    square = tg.zeros(2, 2)
    tg.arange(4, out=square)  # as many elements: filled in out's shape
    assert square.tolist() == [[0.0, 1.0], [2.0, 3.0]]
    tg.linspace(0, 1, 4, out=square)
    np.testing.assert_allclose(square.numpy().ravel(), [0, 1 / 3, 2 / 3, 1], rtol=1e-6)
    longs = tg.zeros(3, dtype=tg.int64)
    with pytest.warns(UserWarning, match="was resized"):
        tg.arange(5, out=longs)
    assert longs.tolist() == [0, 1, 2, 3, 4] and longs.dtype is tg.int64


def test_out_and_autograd():
    a = tg.tensor(A, requires_grad=True)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        tg.exp(a, out=tg.empty(2, 2))
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        tg.sum(a, 1, out=tg.empty(2))


def test_against_torch():
    torch = pytest.importorskip("torch")
    cases = [
        lambda L, o: L.add(L.tensor(A), 1, out=o),
        lambda L, o: L.sum(L.tensor(A) + 0.5, 1, out=o),
        lambda L, o: L.cumsum(L.tensor(A) / 3, 1, out=o),
        lambda L, o: L.matmul(L.tensor(A), L.tensor(B), out=o),
        lambda L, o: L.arange(4, out=o),
        lambda L, o: L.max(L.tensor(A), L.tensor(B), out=o),
    ]
    for case in cases:
        for dtype in ("float32", "float64", "int64"):
            for shape in ((2, 2), (0,), (5,)):
                got = []
                for lib in (tg, torch):
                    out = lib.zeros(shape, dtype=getattr(lib, dtype))
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        try:
                            case(lib, out)
                            got.append((tuple(out.shape), out.tolist()))
                        except RuntimeError:
                            got.append("error")
                assert got[0] == got[1], (case, dtype, shape, got)


def test_factory_out_checks_dtype_and_keeps_the_profiler_name():
    for factory in (tg.zeros, tg.ones):
        with pytest.raises(RuntimeError, match=r"dtype Long does not match dtype of out "
                                               r"parameter \(Float\)"):
            factory(2, out=tg.empty(2), dtype=tg.int64)
    with pytest.raises(RuntimeError, match="does not match dtype of out parameter"):
        tg.arange(3, out=tg.empty(3), dtype=tg.int64)
    with tg.profiler.profile() as prof:
        tg.ones(3)
    assert [e.name for e in prof.events()] == ["aten::ones"]
