"""Tensor and module printing against PyTorch 2.13 (sweep 33; autograd/printing.py).

The expected strings below are PyTorch 2.13's for the same values with its module prefix
``torch.`` written as this library's, ``tritongrad.`` (``str(tg.int32)``, which a dtype
suffix shows). They cover every dtype's column widths, the fixed/scientific/integral choice,
NaN/inf and negative zero, summarization and line wrapping under each print option, empty
sizes, and the ``size=`` suffix PyTorch adds when ``edgeitems`` is 0. ``get_printoptions`` and
the ``printoptions`` context manager are PyTorch's ``torch._tensor_str`` ones. Where torch is
installed a seeded random sweep compares ``repr`` directly.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.autograd import printing

NAN, INF = float("nan"), float("inf")


@pytest.fixture(autouse=True)
def _default_print_options():
    tg.set_printoptions(profile="default")
    yield
    tg.set_printoptions(profile="default")


@pytest.mark.parametrize(("options", "make", "text"), [
    pytest.param({"edgeitems": 0, "threshold": 5}, lambda: tg.arange(20),
                 "tensor([...], size=(20,))", id="edge0_1d"),
    pytest.param({"edgeitems": 0}, lambda: tg.tensor([1.0, 2.0]),
                 "tensor([1., 2.], size=(2,))", id="edge0_small"),
    pytest.param({"edgeitems": 0}, lambda: tg.tensor(3.14159),
                 "tensor(3.1416, size=())", id="edge0_0d"),
    pytest.param({"edgeitems": 0, "threshold": 5}, lambda: tg.ones(3, 3, requires_grad=True) * 2,
                 "tensor([...], size=(3, 3), grad_fn=<MulBackward0>)", id="edge0_2d_grad"),
    pytest.param({"edgeitems": 0},
                 lambda: tg.complex(tg.tensor([1.5, 2.0]), tg.tensor([1e-6, -3.0])),
                 "tensor([1.5000+1.0000e-06j, 2.0000-3.0000e+00j], size=(2,))", id="edge0_cplx"),
    pytest.param({"edgeitems": 0, "threshold": 2},
                 lambda: tg.arange(6, dtype=tg.int32).reshape(2, 3),
                 "tensor([...], size=(2, 3), dtype=tritongrad.int32)", id="edge0_int32"),
    pytest.param({"edgeitems": 0}, lambda: tg.zeros(0, 2),
                 "tensor([], size=(0, 2))", id="edge0_empty"),
    pytest.param({}, lambda: tg.tensor([60000.0, 0.0001, -2.5], dtype=tg.float16),
                 "tensor([ 6.0000e+04,  1.0002e-04, -2.5000e+00], dtype=tritongrad.float16)",
                 id="f16_mixed"),
    pytest.param({}, lambda: tg.tensor([0.1, 1.7, -3.3], dtype=tg.bfloat16),
                 "tensor([ 0.1001,  1.7031, -3.2969], dtype=tritongrad.bfloat16)", id="bf16_round"),
    pytest.param({}, lambda: tg.tensor([-0.0, 0.0, 1.0]),
                 "tensor([-0., 0., 1.])", id="negzero"),
    pytest.param({}, lambda: tg.tensor([-0.0, 0.5]),
                 "tensor([-0.0000, 0.5000])", id="negzero_frac"),
    pytest.param({}, lambda: tg.tensor([NAN, INF, -INF, 2.0]),
                 "tensor([nan, inf, -inf, 2.])", id="nan_inf_int"),
    pytest.param({}, lambda: tg.tensor([NAN, -INF, 1.25]),
                 "tensor([   nan,   -inf, 1.2500])", id="nan_inf_frac"),
    pytest.param({}, lambda: tg.tensor([NAN, NAN]),
                 "tensor([nan, nan])", id="all_nan"),
    pytest.param({}, lambda: tg.tensor([1e30, -3e-30], dtype=tg.float64),
                 "tensor([ 1.0000e+30, -3.0000e-30], dtype=tritongrad.float64)", id="huge_tiny"),
    pytest.param({"precision": 2, "sci_mode": True}, lambda: tg.tensor([1.5, -2.0, 1000.0]),
                 "tensor([ 1.50e+00, -2.00e+00,  1.00e+03])", id="sci_p2"),
    pytest.param({"sci_mode": False}, lambda: tg.tensor([1e-8, 1.0, 1e9]),
                 "tensor([         0.0000,          1.0000, 1000000000.0000])", id="fixed_forced"),
    pytest.param({"precision": 0}, lambda: tg.tensor([1.5, 2.25, -0.75]),
                 "tensor([ 2,  2, -1])", id="p0"),
    pytest.param({"linewidth": 40}, lambda: tg.linspace(-3, 3, 24).reshape(2, 12),
                 "tensor([[-3.0000, -2.7391, -2.4783,\n"
                 "         -2.2174, -1.9565, -1.6957,\n"
                 "         -1.4348, -1.1739, -0.9130,\n"
                 "         -0.6522, -0.3913, -0.1304],\n"
                 "        [ 0.1304,  0.3913,  0.6522,\n"
                 "          0.9130,  1.1739,  1.4348,\n"
                 "          1.6957,  1.9565,  2.2174,\n"
                 "          2.4783,  2.7391,  3.0000]])", id="lw40_2d"),
    pytest.param({"edgeitems": 1}, lambda: (tg.arange(2000.).reshape(10, 10, 20) * 1.25 - 40),
                 "tensor([[[ -40.0000,  ...,  -16.2500],\n"
                 "         ...,\n"
                 "         [ 185.0000,  ...,  208.7500]],\n"
                 "\n"
                 "        ...,\n"
                 "\n"
                 "        [[2210.0000,  ..., 2233.7500],\n"
                 "         ...,\n"
                 "         [2435.0000,  ..., 2458.7500]]])", id="summ_3d"),
    pytest.param({}, lambda: tg.complex(tg.arange(1200.), -tg.arange(1200.) * 0.5),
                 "tensor([0.0000e+00-0.0000e+00j, 1.0000e+00-5.0000e-01j, 2.0000e+00-1.0000e+00j,\n"
                 "         ..., 1.1970e+03-5.9850e+02j, 1.1980e+03-5.9900e+02j,\n"
                 "        1.1990e+03-5.9950e+02j])", id="summ_cplx"),
    pytest.param({}, lambda: tg.tensor([[-128, 5], [127, 0]], dtype=tg.int8),
                 "tensor([[-128,    5],\n"
                 "        [ 127,    0]], dtype=tritongrad.int8)", id="int8_widths"),
    pytest.param({}, lambda: tg.tensor([0, 200, 7], dtype=tg.uint8),
                 "tensor([  0, 200,   7], dtype=tritongrad.uint8)", id="uint8"),
    pytest.param({}, lambda: tg.tensor([[True, False], [False, True]]),
                 "tensor([[ True, False],\n"
                 "        [False,  True]])", id="bool_2d"),
    pytest.param({}, lambda: tg.complex(tg.tensor([1.0, -2.0]), tg.tensor([-0.0, 0.5])),
                 "tensor([ 1.-0.0000j, -2.+0.5000j])", id="cplx_negzero"),
    pytest.param({}, lambda: tg.complex(tg.tensor(1.5, dtype=tg.float64),
                                        tg.tensor(-2.0, dtype=tg.float64)),
                 "tensor(1.5000-2.j, dtype=tritongrad.complex128)", id="cplx128_0d"),
    pytest.param({}, lambda: tg.zeros(2, 0, 4, dtype=tg.bool),
                 "tensor([], size=(2, 0, 4), dtype=tritongrad.bool)", id="empty_bool_3d"),
    pytest.param({}, lambda: tg.zeros(0, dtype=tg.int64),
                 "tensor([], dtype=tritongrad.int64)", id="empty_int64"),
    pytest.param({}, lambda: tg.zeros(3, 0, dtype=tg.float16),
                 "tensor([], size=(3, 0), dtype=tritongrad.float16)", id="empty_f16"),
    pytest.param({}, lambda: tg.zeros(0, dtype=tg.complex64),
                 "tensor([], dtype=tritongrad.complex64)", id="empty_cplx64"),
    pytest.param({}, lambda: tg.arange(6.).reshape(2, 3).T,
                 "tensor([[0., 3.],\n"
                 "        [1., 4.],\n"
                 "        [2., 5.]])", id="transposed"),
    pytest.param({"profile": "short"}, lambda: tg.arange(2000.).reshape(40, 50) / 3,
                 "tensor([[0.00e+00, 3.33e-01,  ..., 1.60e+01, 1.63e+01],\n"
                 "        [1.67e+01, 1.70e+01,  ..., 3.27e+01, 3.30e+01],\n"
                 "        ...,\n"
                 "        [6.33e+02, 6.34e+02,  ..., 6.49e+02, 6.50e+02],\n"
                 "        [6.50e+02, 6.50e+02,  ..., 6.66e+02, 6.66e+02]])", id="short_profile"),
    pytest.param({"threshold": 0}, lambda: tg.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]),
                 "tensor([1., 2., 3.,  ..., 5., 6., 7.])", id="thr0"),
])
def test_repr_is_pytorchs(options, make, text):
    t = make()
    tg.set_printoptions(**options)
    assert repr(t) == text
    assert str(t) == text


def test_full_profile_never_summarizes():
    tg.set_printoptions(profile="full")
    text = repr(tg.arange(1001) % 7)
    assert "..." not in text and text.count(",") == 1000
    tg.set_printoptions(profile="default")
    assert " ..." in repr(tg.arange(1001) % 7)


def test_get_printoptions_round_trips_through_set_printoptions():
    assert printing.get_printoptions() == {"precision": 4, "threshold": 1000, "edgeitems": 3,
                                           "linewidth": 80, "sci_mode": None}
    tg.set_printoptions(precision=2, sci_mode=True, linewidth=50)
    saved = printing.get_printoptions()
    assert saved == {"precision": 2, "threshold": 1000, "edgeitems": 3, "linewidth": 50,
                     "sci_mode": True}
    tg.set_printoptions(profile="default")
    tg.set_printoptions(**saved)
    assert repr(tg.tensor([1.5])) == "tensor([1.50e+00])"


def test_printoptions_context_restores_even_on_error():
    x = tg.tensor([1.123456, 2.5])
    with printing.printoptions(precision=1, sci_mode=False):
        assert repr(x) == "tensor([1.1, 2.5])"
        with printing.printoptions(precision=6):  # (nested: sci_mode goes back to None)
            assert repr(x) == "tensor([1.123456, 2.500000])"
        assert repr(x) == "tensor([1.1, 2.5])"
    assert repr(x) == "tensor([1.1235, 2.5000])"
    with pytest.raises(ZeroDivisionError):
        with printing.printoptions(threshold=2, edgeitems=1):
            1 / 0
    assert printing.get_printoptions()["threshold"] == 1000
    assert repr(tg.arange(5)) == "tensor([0, 1, 2, 3, 4])"


def test_parameter_subclass_wraps_its_repr_as_pytorch():
    class MyParam(tg.nn.Parameter):
        pass

    assert repr(MyParam(tg.ones(2))) == ("Parameter containing:\n"
                                         "Parameter(MyParam([1., 1.], requires_grad=True))")
    # a plain Parameter and a user's Tensor subclass are not wrapped
    assert repr(tg.nn.Parameter(tg.ones(1))) == ("Parameter containing:\n"
                                                 "tensor([1.], requires_grad=True)")

    class MyTensor(tg.Tensor):
        pass

    assert repr(tg.ones(2).as_subclass(MyTensor)) == "MyTensor([1., 1.])"


def test_sparse_shows_no_dtype_its_values_imply():
    # as a dense tensor's: int64, bool and the default complex dtype print no dtype= suffix
    assert repr(tg.tensor([[0, 2], [3, 0]]).to_sparse()) == (
        "tensor(indices=tensor([[0, 1],\n"
        "                       [1, 0]]),\n"
        "       values=tensor([2, 3]),\n"
        "       size=(2, 2), nnz=2, layout=tritongrad.sparse_coo)")
    assert repr(tg.tensor([[False, True]]).to_sparse_csr()) == (
        "tensor(crow_indices=tensor([0, 1]),\n"
        "       col_indices=tensor([1]),\n"
        "       values=tensor([True]), size=(1, 2), nnz=1, layout=tritongrad.sparse_csr)")
    assert "dtype=" not in repr(tg.tensor([[0j, 1 + 1j]]).to_sparse())
    assert "dtype=tritongrad.int32," in repr(tg.tensor([[0, 2]], dtype=tg.int32).to_sparse())
    tg.set_default_dtype(tg.float64)
    try:
        assert "dtype=" not in repr(tg.tensor([[0j, 1 + 1j]]).to_sparse())  # (complex128)
        assert "dtype=tritongrad.complex64" in repr(
            tg.tensor([[0j, 1 + 1j]], dtype=tg.complex64).to_sparse())
        assert "dtype=tritongrad.float32" in repr(tg.tensor([[0.0, 1.5]]).float().to_sparse())
    finally:
        tg.set_default_dtype(tg.float32)


def test_tensor_contents_replaces_the_values():
    # PyTorch's Tensor.__repr__(tensor_contents=...): the suffixes stay, the values go
    assert printing.tensor_repr(tg.ones(2), "abc") == "tensor(abc)"
    assert printing.tensor_repr(tg.ones(0, 2, dtype=tg.int32), tensor_contents="X") == (
        "tensor(X, size=(0, 2), dtype=tritongrad.int32)")
    assert printing.tensor_repr(tg.ones(2, requires_grad=True) * 2, "X") == (
        "tensor(X, grad_fn=<MulBackward0>)")
    assert printing.sparse_repr(tg.eye(2).to_sparse(), tensor_contents="X") == (
        "tensor(X,\n       size=(2, 2), nnz=2, layout=tritongrad.sparse_coo)")


def test_subclass_repr_with_tensor_contents():
    class Custom(tg.Tensor):
        def __repr__(self):
            return super().__repr__(tensor_contents="[custom]")

    assert repr(tg.ones(2).as_subclass(Custom)) == "Custom([custom])"


def test_scalars_format_and_convert_as_python_numbers():
    t = tg.tensor(3.14159)
    assert (format(t, ".3f"), f"{t:>8.2f}") == ("3.142", "    3.14")
    assert f"{t}" == "3.141590118408203"  # (the float32 value's Python float, as PyTorch)
    assert f"{tg.tensor(2.5, requires_grad=True):.1f}" == "2.5"
    assert (tg.tensor(7).item(), tg.tensor(0.1, dtype=tg.bfloat16).item()) == (7, 0.10009765625)
    assert tg.tensor([[1.5, -2.0]], dtype=tg.float16).tolist() == [[1.5, -2.0]]
    assert format(tg.tensor([1.0, 2.0]), "") == "tensor([1., 2.])"
    with pytest.raises(TypeError, match="unsupported format string"):
        format(tg.tensor([1.0, 2.0]), ".3f")


def test_device_suffix_on_cuda():
    if not tg.cuda.is_available():
        pytest.skip("no CUDA device (real or emulated)")
    x = tg.tensor([1.0, 2.0], device="cuda")
    assert repr(x) == "tensor([1., 2.], device='cuda:0')"
    assert repr(x.to(tg.int32)) == "tensor([1, 2], device='cuda:0', dtype=tritongrad.int32)"
    assert repr(tg.zeros(0, 3, device="cuda")) == "tensor([], device='cuda:0', size=(0, 3))"
    assert repr(tg.ones(2, device="cuda", requires_grad=True) * 2) == (
        "tensor([2., 2.], device='cuda:0', grad_fn=<MulBackward0>)")


def test_embedding_bag_extra_repr_order():
    m = tg.nn.EmbeddingBag(10, 3, max_norm=1.0, scale_grad_by_freq=True, mode="sum",
                           sparse=True, padding_idx=1)
    assert repr(m) == ("EmbeddingBag(10, 3, max_norm=1.0, scale_grad_by_freq=True, mode='sum', "
                       "padding_idx=1)")


def test_hardswish_repr_has_no_inplace():
    assert repr(tg.nn.Hardswish(inplace=True)) == "Hardswish()"
    assert repr(tg.nn.Hardsigmoid(inplace=True)) == "Hardsigmoid()"


def test_print_options_under_torchs_module_path():
    with tg._tensor_str.printoptions(precision=2):
        assert repr(tg.tensor([1.23456])) == "tensor([1.23])"
        assert tg._tensor_str.get_printoptions()["precision"] == 2
    assert repr(tg.tensor([1.23456])) == "tensor([1.2346])"


def test_float_of_a_tensor_requiring_grad_warns_once(monkeypatch):
    from tritongrad.autograd import tensor as tensor_module
    monkeypatch.setattr(tensor_module, "_scalar_warned", [])
    x = tg.tensor(1.5, requires_grad=True)
    with pytest.warns(UserWarning, match="Converting a tensor with requires_grad=True"):
        assert float(x) == 1.5
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(x) == 1.5 and complex(x) == 1.5  # (once per process, as PyTorch's)
        assert int(x) == 1 and x.item() == 1.5 and float(x.detach()) == 1.5


# -- against torch: a seeded random sweep ------------------------------------------------------

_DTYPES = ("float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64",
           "uint8", "bool", "complex64", "complex128")
_OPTIONS = {"precision": (0, 2, 6), "threshold": (3, 50, 1000), "edgeitems": (0, 1, 2),
            "linewidth": (20, 120), "sci_mode": (True, False)}


def _random_case(rs: np.random.RandomState):
    ndim = rs.randint(0, 5)
    shape = tuple(int(s) for s in rs.randint(0, 5 if ndim > 2 else 25, size=ndim))
    n = int(np.prod(shape))
    kind = rs.randint(4)
    if kind == 0:  # spanning magnitudes: the scientific switch
        values = rs.randn(n) * 10.0 ** rs.uniform(-8, 8, size=n)
    elif kind == 1:  # integral floats
        values = np.round(rs.randn(n) * 10.0 ** rs.randint(0, 6))
    elif kind == 2:
        values = rs.choice([0.0, -0.0, NAN, INF, -INF, 1.0, 0.5, 1e-5, 1e5, 123.456], size=n)
    else:
        values = rs.randn(n) * 10.0 ** rs.randint(-5, 5)
    options = {k: v[rs.randint(len(v))] for k, v in _OPTIONS.items() if rs.rand() < 0.3}
    return shape, _DTYPES[rs.randint(len(_DTYPES))], values, rs.randn(n), options


def _build(lib, shape, dtype, values, imag):
    if dtype not in ("float32", "float64", "float16", "bfloat16", "complex64", "complex128"):
        values = np.clip(np.nan_to_num(values, nan=0.0, posinf=9.0, neginf=-9.0), -100, 100)
        if dtype == "uint8":
            values = np.abs(values)
    elif dtype == "float16":  # (kept finite where finite: a cast's overflow is another test's)
        values = np.where(np.isfinite(values), np.clip(values, -6e4, 6e4), values)
    t = lib.tensor(values.tolist(), dtype=lib.float64).reshape(shape)
    if dtype.startswith("complex"):
        t = lib.complex(t, lib.tensor(imag.tolist(), dtype=lib.float64).reshape(shape))
    t = t > 0 if dtype == "bool" else t.to(getattr(lib, dtype))
    # (odd sizes transposed: a non-contiguous input prints as its values)
    return t.transpose(0, -1) if t.ndim >= 2 and t.numel() % 2 else t


def test_random_reprs_match_torch():
    torch = pytest.importorskip("torch")
    rs = np.random.RandomState(33)
    try:
        for _ in range(120):
            shape, dtype, values, imag, options = _random_case(rs)
            tg.set_printoptions(**options)
            torch.set_printoptions(**options)
            ours = repr(_build(tg, shape, dtype, values, imag))
            theirs = repr(_build(torch, shape, dtype, values, imag))
            theirs = theirs.replace("torch.", "tritongrad.")
            # the longer module prefix may move a suffix onto a new line; nothing else differs
            if ours != theirs:
                assert re.sub(r",\n +", ", ", ours) == re.sub(r",\n +", ", ", theirs), (
                    shape, dtype, options)
    finally:
        torch.set_printoptions(profile="default")
