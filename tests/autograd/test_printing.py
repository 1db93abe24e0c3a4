"""Tensor repr in PyTorch's format (autograd/printing.py, PyTorch's ``_tensor_str``): one
column width for all values, the fixed/scientific/integral choice, summarized long tensors
with " ..." and its line breaks, complex values, empty sizes, the dtype shown only when it is
not a default one. The expected strings are PyTorch 2.x's for the same values."""

from __future__ import annotations

import pytest

import tritongrad as tg

NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize(("make", "text"), [
    (lambda: tg.tensor([-0.5, 3.0]), "tensor([-0.5000,  3.0000])"),
    (lambda: tg.tensor([1.5, NAN]), "tensor([1.5000,    nan])"),
    (lambda: tg.tensor([-1.5, INF]), "tensor([-1.5000,     inf])"),
    (lambda: tg.tensor([1.0, NAN]), "tensor([1., nan])"),
    (lambda: tg.tensor([-10.0, 2.0]), "tensor([-10.,   2.])"),
    (lambda: tg.tensor([0.0, 0.5]), "tensor([0.0000, 0.5000])"),
    # scientific: magnitudes spanning more than 1000x, above 1e8, or (non-integral) below 1e-4
    (lambda: tg.tensor([1.0, 2000.0]), "tensor([1.0000e+00, 2.0000e+03])"),
    (lambda: tg.tensor([1000.5, 0.5]), "tensor([1.0005e+03, 5.0000e-01])"),
    (lambda: tg.tensor([1e-5, -3.0]), "tensor([ 1.0000e-05, -3.0000e+00])"),
    (lambda: tg.tensor([1e9, -1.0]), "tensor([ 1.0000e+09, -1.0000e+00])"),
    (lambda: tg.tensor([[-1.5, 2.0], [3.25, 100.0]]),
     "tensor([[ -1.5000,   2.0000],\n        [  3.2500, 100.0000]])"),
    (lambda: tg.tensor(3.5), "tensor(3.5000)"),
    (lambda: tg.tensor([-1, 20]), "tensor([-1, 20])"),
    (lambda: tg.tensor([1 + 2j, -3.5j]), "tensor([1.+2.0000j, -0.-3.5000j])"),
    (lambda: tg.zeros(0, 3), "tensor([], size=(0, 3))"),
    (lambda: tg.zeros(0), "tensor([])"),
    (lambda: tg.zeros(0, dtype=tg.int32), "tensor([], dtype=tritongrad.int32)"),
    (lambda: tg.tensor([1.5], dtype=tg.float64), "tensor([1.5000], dtype=tritongrad.float64)"),
    (lambda: tg.tensor([-0.5, 3.0], requires_grad=True) * 2,
     "tensor([-1.,  6.], grad_fn=<MulBackward0>)"),
])
def test_values_print_as_pytorch(make, text):
    assert repr(make()) == text


def test_long_tensors_are_summarized_as_pytorch():
    assert repr(tg.arange(2000.0)) == (
        "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n"
        "        1.9990e+03])")
    text = repr(tg.arange(2000.0).reshape(40, 50) / 7)
    assert text.startswith(
        "tensor([[0.0000e+00, 1.4286e-01, 2.8571e-01,  ..., 6.7143e+00, 6.8571e+00,\n"
        "         7.0000e+00],\n"
        "        [7.1429e+00, 7.2857e+00, 7.4286e+00,  ..., 1.3857e+01, 1.4000e+01,\n")
    assert "        ...,\n        [2.6429e+02, 2.6443e+02," in text
    assert text.endswith("2.8543e+02,\n         2.8557e+02]])")


def test_the_default_dtype_decides_what_is_shown():
    old = tg.get_default_dtype()
    tg.set_default_dtype(tg.float64)
    try:
        assert repr(tg.tensor([1.5, 2.0])) == "tensor([1.5000, 2.0000])"
        assert repr(tg.tensor([1.5], dtype=tg.float32)) == (
            "tensor([1.5000], dtype=tritongrad.float32)")
        assert repr(tg.tensor([1 + 1j])) == "tensor([1.+1.j])"
    finally:
        tg.set_default_dtype(old)
    assert repr(tg.tensor([1 + 1j])) == "tensor([1.+1.j])"  # complex64 with float32


def test_suffixes_wrap_past_linewidth_as_pytorch():
    # PyTorch's _add_suffixes: a suffix that would pass 80 columns starts a new line indented
    # under the values
    x = tg.tensor([1.0, -2.0, 448.0, 0.3125], dtype=tg.float64)
    assert repr(x) == ("tensor([ 1.0000e+00, -2.0000e+00,  4.4800e+02,  3.1250e-01],\n"
                       "       dtype=tritongrad.float64)")
    assert repr(tg.ones(2, 3, dtype=tg.float16)) == (
        "tensor([[1., 1., 1.],\n        [1., 1., 1.]], dtype=tritongrad.float16)")


def test_format_of_a_0d_tensor_is_its_number_as_pytorch():
    # f"{loss:.4f}" in training loops: PyTorch's Tensor.__format__ formats 0-d tensors by item()
    assert f"{tg.tensor(3.14159):.2f}" == "3.14" and f"{tg.tensor(4.0)}" == "4.0"
    assert f"{tg.tensor(7):>4}" == "   7" and f"{tg.tensor(True)}" == "True"
    assert f"{tg.tensor([1.0, 2.0])}" == str(tg.tensor([1.0, 2.0]))
    with pytest.raises(TypeError, match="unsupported format string"):
        f"{tg.tensor([1.0, 2.0]):.2f}"
