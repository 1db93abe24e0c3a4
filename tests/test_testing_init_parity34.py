"""PyTorch parity of tritongrad.testing (assert_close's pairing, messages and dtype rules,
assert_allclose, make_tensor's draws) and tritongrad.nn.init (draws through the tensor's own
uniform_/normal_, errors, warnings). Expected values are written out by hand or computed with
NumPy in float64; the torch comparisons run only where torch is installed."""

import math
import warnings

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.nn import init
from tritongrad.testing import assert_allclose, assert_close, make_tensor


def _message(exc, actual, expected, **kw) -> str:
    with pytest.raises(exc) as info:
        assert_close(actual, expected, **kw)
    return str(info.value)


# -- assert_close ------------------------------------------------------------------------------

def test_mismatch_message_text():
    msg = _message(AssertionError, tg.tensor([1.0, 2.5, 3.0]), tg.tensor([1.0, 2.0, 3.0]))
    assert msg == ("Tensor-likes are not close!\n\nMismatched elements: 1 / 3 (33.3%)\n"
                   "Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)\n"
                   "Greatest relative difference: 0.25 at index (1,) (up to 1.3e-06 allowed)")


def test_nan_is_the_greatest_difference_even_after_an_inf():
    # PyTorch's max over the differences propagates the first NaN (index 1), not the inf
    msg = _message(AssertionError, tg.tensor([math.inf, math.nan, 3.0]),
                   tg.tensor([1.0, 1.0, 1.0]))
    assert "Greatest absolute difference: nan at index (1,)" in msg
    assert "Greatest relative difference: nan at index (1,)" in msg


def test_closeness_is_computed_in_the_dtype():
    # in float16, atol + rtol |e| rounds up to admit this pair; in float64 it would not
    a, e = 1.9404296875, 1.9423828125
    assert abs(a - e) > 1e-5 + 1e-3 * e
    assert_close(tg.tensor([a], dtype=tg.float16), tg.tensor([e], dtype=tg.float16))


def test_complex_relative_difference_is_correctly_rounded():
    # |2+3j| = sqrt(13) = 3.605551275463989 (correctly rounded); 1 / that = 0.2773500981126146
    msg = _message(AssertionError, tg.tensor([1 + 1j, 2 + 2j], dtype=tg.complex128),
                   tg.tensor([1 + 1j, 2 + 3j], dtype=tg.complex128))
    assert f"Greatest relative difference: {1 / math.sqrt(13.0)} at index (1,)" in msg
    assert str(1 / math.sqrt(13.0)) == "0.2773500981126146"


def test_inputs_are_paired_before_values_are_compared():
    # an unusable pair later in the inputs fails before a differing value earlier
    msg = _message(TypeError, [tg.zeros(1), "x"], [tg.ones(1), 3])
    assert msg == ("No comparison pair was able to handle inputs of type <class 'str'> and "
                   "<class 'int'>.\n\nThe failure occurred for item [1]")
    msg = _message(AssertionError, [tg.zeros(1), [1, 2]], [tg.ones(1), [1]])
    assert msg == ("The length of the sequences mismatch: 2 != 1\n\n"
                   "The failure occurred for item [1]")
    with pytest.raises(ValueError, match="but got no atol"):
        assert_close([tg.zeros(1), tg.zeros(1)], [tg.ones(1), tg.zeros(1)], rtol=0.1)


@pytest.mark.parametrize("msg", ["custom", lambda m: f"Header\n\n{m}"])
def test_msg_replaces_only_comparison_failures(msg):
    assert _message(AssertionError, [tg.zeros(2)], [tg.zeros(2), tg.zeros(2)],
                    msg=msg) == "The length of the sequences mismatch: 1 != 2"
    assert _message(TypeError, tg.zeros(2), np.zeros(2), msg=msg).startswith("No comparison")
    assert _message(ValueError, tg.zeros(2), tg.zeros(2), msg=msg, rtol=1.0).startswith("Both")
    failed = _message(AssertionError, tg.tensor([1.0]), tg.tensor([2.0]), msg=msg)
    assert failed == "custom" or failed.startswith("Header\n\nTensor-likes are not close!")


def test_type_names_in_messages():
    msg = _message(TypeError, tg.tensor(1.0), 1.0)
    assert msg == ("No comparison pair was able to handle inputs of type "
                   "<class 'tritongrad.Tensor'> and <class 'float'>.")


def test_wide_unsigned_against_int64():
    # uint16/32/64 are compared as int64 (promote_types refuses them)
    msg = _message(AssertionError, tg.tensor([1, 2]).to(tg.uint32), tg.tensor([1, 3]),
                   check_dtype=False)
    assert msg.startswith("Tensor-likes are not equal!\n\nMismatched elements: 1 / 2 (50.0%)")


def test_float8_compares_bitwise():
    f8 = tg.float8_e4m3fn
    assert_close(tg.tensor([1.0, 2.0]).to(f8), tg.tensor([1.0, 2.0]).to(f8))
    msg = _message(AssertionError, tg.tensor([1.0, 2.0, 3.0]).to(f8),
                   tg.tensor([1.0, 2.5, 4.0]).to(f8))
    assert msg == ("Tensor-likes are not 'equal'!\n\nMismatched elements: 2 / 3 (66.7%)\n"
                   "The first mismatched element is at index (1,).")
    msg = _message(AssertionError, tg.tensor([1.0]).to(f8), tg.tensor([1.0]).to(f8),
                   rtol=1e-3, atol=0.0)
    assert msg.startswith("Rtol=0.001 and atol=0.0 are not supported for bitwise comparison")


@pytest.mark.parametrize("fmt", ["coo", "csr", "csc"])
def test_sparse_tensors(fmt):
    def sparse(values):
        dense = tg.tensor(values)
        return {"coo": dense.to_sparse, "csr": dense.to_sparse_csr,
                "csc": dense.to_sparse_csc}[fmt]()

    base = [[0.0, 1.0], [2.0, 0.0]]
    assert_close(sparse(base), sparse(base), check_stride=True)
    name = fmt.upper()
    msg = _message(AssertionError, sparse(base), sparse([[0.0, 1.0], [2.5, 0.0]]))
    assert msg.startswith(f"Sparse {name} values are not close!\n\nMismatched elements: 1 / 2")
    msg = _message(AssertionError, sparse(base), sparse([[0.0, 1.0], [2.0, 3.0]]))
    assert msg == (f"The number of specified values in sparse {name} tensors does not match: "
                   f"2 != 3")
    msg = _message(AssertionError, sparse(base), sparse([[1.0, 0.0], [2.0, 0.0]]))
    indices = {"coo": "COO indices", "csr": "CSR col_indices", "csc": "CSC ccol_indices"}[fmt]
    assert msg.startswith(f"Sparse {indices} are not equal!")
    # another layout: a mismatch, or (check_layout=False) both compared dense
    assert "attribute 'layout'" in _message(AssertionError, sparse(base), tg.tensor(base))
    assert_close(sparse(base), tg.tensor(base), check_layout=False)
    msg = _message(AssertionError, sparse(base), tg.tensor([[0.0, 1.0], [3.0, 0.0]]),
                   check_layout=False)
    assert "Greatest absolute difference: 1.0 at index (1, 0)" in msg


def test_numbers_and_booleans():
    assert_close(1, 1)
    assert_close(True, 1, check_dtype=False)  # (a bool against an int: compared as ints)
    with pytest.raises(AssertionError, match=r"The \(d\)types do not match"):
        assert_close(1, 1.0)
    assert _message(AssertionError, 1.0, 1.1) == (
        "Scalars are not close!\n\nExpected 1.1 but got 1.0.\n"
        f"Absolute difference: {abs(1.0 - 1.1)} (up to 1e-07 allowed)\n"
        f"Relative difference: {abs(1.0 - 1.1) / 1.1} (up to 1e-07 allowed)")


def test_assert_allclose_is_deprecated_with_looser_defaults():
    with pytest.warns(FutureWarning, match=r"`torch.testing.assert_allclose\(\)` is deprecated"):
        assert_allclose(tg.tensor([1.0, 2.0]), tg.tensor([1.0, 2.0001]))  # rtol 1e-4
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        assert_allclose([1.0, math.nan], [1.0, math.nan])  # lists; equal_nan=True by default
        assert_allclose(tg.tensor([1.0]), tg.tensor([1.0], dtype=tg.float64))  # no dtype check
        with pytest.raises(AssertionError, match="Tensor-likes are not close"):
            assert_allclose(tg.tensor([1.0, 2.0]), tg.tensor([1.0, 2.01]))
        with pytest.raises(AssertionError, match="^boom$"):
            assert_allclose(tg.tensor([1.0]), tg.tensor([2.0]), msg="boom")


# -- make_tensor -------------------------------------------------------------------------------

@pytest.mark.parametrize("dt", ["float16", "bfloat16", "float32", "float64", "complex64"])
def test_make_tensor_draws_as_uniform_(dt):
    dtype = getattr(tg, dt)
    tg.manual_seed(3)
    made = make_tensor((4, 5), dtype=dtype, device="cpu", low=-2, high=3)
    tg.manual_seed(3)
    expected = tg.empty((4, 5), dtype=dtype)
    (tg.view_as_real(expected) if dtype.is_complex else expected).uniform_(-2, 3)
    assert made.dtype is dtype
    assert np.array_equal(made.numpy(), expected.numpy())


def test_make_tensor_float8_and_complex_tiny():
    t = make_tensor((), dtype=tg.float8_e5m2, device="cpu", requires_grad=True)
    assert t.shape == () and t.dtype is tg.float8_e5m2 and not t.requires_grad
    values = make_tensor((8, 8), dtype=tg.float8_e4m3fn, device="cpu", low=-1, high=1)
    assert ((values.float() >= -1) & (values.float() <= 1)).all()
    # zeros become tiny + 0j (the real tiny assigned, as PyTorch's)
    z = make_tensor((64,), dtype=tg.complex64, device="cpu", low=0, high=1e-45,
                    exclude_zero=True).numpy()
    tiny = np.finfo(np.float32).tiny
    assert (z != 0).all() and (z == tiny).any()
    assert (z[z.real == tiny].imag == 0).all()


def test_make_tensor_uint64_range_is_clamped_to_int64():
    t = make_tensor((50,), dtype=tg.uint64, device="cpu", low=-1e40, high=1e40)
    assert t.dtype is tg.uint64 and int(t.max()) < 2 ** 63


# -- nn.init -----------------------------------------------------------------------------------

def test_calculate_gain():
    for name in ("linear", "conv1d", "conv_transpose3d", "sigmoid"):
        gain = init.calculate_gain(name)
        assert gain == 1 and type(gain) is int
    assert init.calculate_gain("tanh") == 5.0 / 3
    assert init.calculate_gain("relu") == math.sqrt(2.0)
    assert init.calculate_gain("leaky_relu") == math.sqrt(2.0 / (1 + 0.01 ** 2))
    assert init.calculate_gain("leaky_relu", 3) == math.sqrt(2.0 / 10)
    assert init.calculate_gain("selu") == 0.75
    with pytest.raises(ValueError, match="negative_slope True not a valid number"):
        init.calculate_gain("leaky_relu", True)
    with pytest.raises(ValueError, match="Unsupported nonlinearity gelu"):
        init.calculate_gain("gelu")


def test_fans_and_modes():
    assert init._calculate_fan_in_and_fan_out(tg.zeros(6, 4, 3, 3)) == (36, 54)
    assert init._calculate_correct_fan(tg.zeros(6, 4), "FAN_OUT") == 6
    with pytest.raises(ValueError, match=r"Mode bad not supported, please use one of "
                                         r"\['fan_in', 'fan_out'\]"):
        init.kaiming_uniform_(tg.zeros(3, 4), mode="bad")
    # the fans fail before the gain does (a 1-D tensor, an unknown nonlinearity)
    with pytest.raises(ValueError, match="Fan in and fan out can not be computed"):
        init.kaiming_normal_(tg.zeros(5), nonlinearity="gelu")


@pytest.mark.parametrize("fn", [init.kaiming_uniform_, init.kaiming_normal_])
def test_kaiming_warns_on_zero_elements(fn):
    t = tg.zeros(0, 3)
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        assert fn(t) is t


@pytest.mark.parametrize("fn, name", [(init.uniform_, "check_uniform_bounds"),
                                      (init.normal_, "normal_kernel_cpu"),
                                      (init.xavier_uniform_, "check_uniform_bounds"),
                                      (init.kaiming_normal_, "normal_kernel_cpu")])
def test_integer_tensors_cannot_be_drawn_into(fn, name):
    with pytest.raises(NotImplementedError, match=f'"{name}" not implemented for \'Long\''):
        fn(tg.zeros(3, 4, dtype=tg.int64))


def test_complex_tensors_draw_both_parts():
    tg.manual_seed(5)
    t = init.uniform_(tg.zeros(3, 4, dtype=tg.complex64), -1.0, 2.0)
    tg.manual_seed(5)
    parts = tg.zeros(3, 4, 2).uniform_(-1.0, 2.0).numpy()
    assert np.array_equal(t.numpy(), parts[..., 0] + 1j * parts[..., 1])


def test_xavier_uniform_bound_is_pytorchs():
    # sqrt(3) * sqrt(2 / 4) rounds differently from sqrt(6 / 4): PyTorch's is the former
    bound = math.sqrt(3.0) * (1.0 * math.sqrt(2.0 / 4))
    assert bound != math.sqrt(6.0 / 4)
    tg.manual_seed(2)
    t = init.xavier_uniform_(tg.zeros(2, 2, dtype=tg.float64))
    tg.manual_seed(2)
    expected = tg.zeros(2, 2, dtype=tg.float64).uniform_(-bound, bound)
    assert np.array_equal(t.numpy(), expected.numpy())


def test_no_gradient_is_recorded():
    for fn, args in [(init.uniform_, ()), (init.constant_, (0.5,)), (init.zeros_, ()),
                     (init.eye_, ()), (init.orthogonal_, ()), (init.trunc_normal_, ())]:
        w = tg.zeros(3, 4, requires_grad=True)
        assert fn(w, *args) is w
        assert w.is_leaf and w.requires_grad and w.grad_fn is None


def test_orthogonal():
    w = init.orthogonal_(tg.zeros(3, 5, dtype=tg.float64), gain=2.0).numpy()
    assert np.allclose(w @ w.T, 4 * np.eye(3), atol=1e-12)
    with pytest.raises(NotImplementedError, match="\"geqrf_cpu\" not implemented for 'Half'"):
        init.orthogonal_(tg.zeros(3, 5, dtype=tg.float16))


def test_errors_and_aliases():
    with pytest.raises(TypeError, match=r"nn.init.uniform_\(\): expected a Tensor, got list"):
        init.uniform_([1.0, 2.0])
    with pytest.raises(ValueError, match="dim 0 must be divisible by groups"):
        init.dirac_(tg.zeros(3, 2, 3), groups=2)
    with pytest.warns(FutureWarning, match=r"`nn.init.normal` is now deprecated in favor of "
                                           r"`nn.init.normal_`\."):
        init.normal(tg.zeros(2))
    assert init._no_grad_trunc_normal_ is init.trunc_normal_


# -- against torch -----------------------------------------------------------------------------

def _torch():
    return pytest.importorskip("torch", minversion="2.13")


@pytest.mark.parametrize("case", [
    ("uniform_", (4, 5), "float32", (-2.0, 3.0)), ("normal_", (40,), "float64", (0.5, 2.0)),
    ("normal_", (3, 5), "complex64", ()), ("trunc_normal_", (40, 3), "float32", ()),
    ("trunc_normal_", (20,), "float64", (0.0, 1.0, 1.5, 3.0)),
    ("xavier_uniform_", (6, 6, 3, 3), "float32", ()), ("xavier_normal_", (5, 7), "bfloat16", ()),
    ("kaiming_uniform_", (8, 3), "float16", (math.sqrt(5),)),
    ("kaiming_normal_", (4, 3, 2), "float32", (0, "FAN_OUT", "relu")),
    ("sparse_", (6, 4), "float32", (0.5,)), ("dirac_", (6, 2, 3), "float32", (2,))])
def test_init_matches_torch_bitwise(case):
    torch = _torch()
    name, shape, dt, args = case
    out = []
    for lib in (torch, tg):
        lib.manual_seed(11)
        t = getattr(lib.nn.init, name)(lib.zeros(shape, dtype=getattr(lib, dt)), *args)
        out.append((t.to(lib.complex128 if t.dtype.is_complex else lib.float64).numpy(),
                    lib.rand(2).tolist()))  # (and the same number of draws)
    assert np.array_equal(out[0][0], out[1][0]) and out[0][1] == out[1][1]


def test_orthogonal_matches_torch():
    torch = _torch()
    values = []
    for lib in (torch, tg):
        lib.manual_seed(4)
        values.append(lib.nn.init.orthogonal_(lib.zeros(5, 3)).numpy())
    assert np.allclose(values[0], values[1], rtol=0, atol=1e-6)


@pytest.mark.parametrize("dt", ["float16", "bfloat16", "float32", "float64", "complex128",
                                "int8", "uint8", "int64", "bool", "float8_e4m3fn"])
def test_make_tensor_matches_torch(dt):
    torch = _torch()
    out = []
    for lib in (torch, tg):
        lib.manual_seed(7)
        t = lib.testing.make_tensor((3, 5), dtype=getattr(lib, dt), device="cpu",
                                    noncontiguous=True)
        assert not t.is_contiguous()
        out.append(t.to(lib.complex128 if t.dtype.is_complex else lib.float64).numpy())
    assert np.array_equal(out[0], out[1])


@pytest.mark.parametrize("pair", [
    ([1.0, 2.0, 3.0], [1.0, 2.001, 2.5], "float32"), ([1, 2, 3], [1, 7, 3], "int32"),
    ([1 + 1j, 3 - 2j], [1 + 1j, 2.5 - 2j], "complex64"), ([0.5, 2.0], [0.0, 2.2], "bfloat16")])
def test_messages_match_torch(pair):
    torch = _torch()
    a, e, dt = pair
    messages = []
    for lib in (torch, tg):
        with pytest.raises(AssertionError) as info:
            lib.testing.assert_close(lib.tensor(a, dtype=getattr(lib, dt)),
                                     lib.tensor(e, dtype=getattr(lib, dt)))
        messages.append(str(info.value))
    assert messages[0] == messages[1]
