"""Tensor creation and conversion against PyTorch's behaviour: dtype inference in tensor(),
NumPy arrays no tensor can hold, size=/layout=/out= on the factories, range refusals, the
casts' memory_format, to()'s overloads and copy_'s gradient.

Each behaviour is checked against NumPy (or finite differences) without torch; the
``*_matches_torch`` tests compare with torch where it is installed.
"""

import numpy as np
import pytest

import tritongrad as tg


def _t(L, name):
    return getattr(L, name)


# -- tensor(): dtype inference from the elements ----------------------------------------------

def test_typed_elements_bring_their_dtypes():
    # NumPy arrays and tensors inside a list keep their dtypes (promoted with the rest)
    a = tg.tensor([np.ones(2), np.zeros(2)])
    assert a.dtype is tg.float64
    np.testing.assert_array_equal(a.numpy(), [[1.0, 1.0], [0.0, 0.0]])
    assert tg.tensor([np.ones(2, np.int8)]).dtype is tg.int8
    assert tg.tensor([np.ones(2, np.float32), np.zeros(2)]).dtype is tg.float64
    assert tg.tensor([tg.tensor(1, dtype=tg.int8)]).dtype is tg.int8
    assert tg.tensor([tg.tensor(1, dtype=tg.int8), tg.tensor(2, dtype=tg.int16)]).dtype \
        is tg.int16
    # a Python float takes the default dtype, promoted with the tensor's
    assert tg.tensor([tg.tensor(1, dtype=tg.float16), 2.5]).dtype is tg.float32
    assert tg.tensor([tg.tensor(1.5), tg.tensor(2.5)]).tolist() == [1.5, 2.5]
    with pytest.raises(ValueError, match="only one element tensors"):
        tg.tensor([tg.ones(2), tg.zeros(2)])


def test_big_ints_to_floating_dtypes_and_complex_to_real():
    v = tg.tensor(2 ** 64, dtype=tg.float32)
    assert v.dtype is tg.float32 and v.item() == np.float32(2.0 ** 64)
    assert tg.tensor([2 ** 64, 1], dtype=tg.float64).tolist() == [2.0 ** 64, 1.0]
    assert tg.tensor([2 ** 64, 0], dtype=tg.bool).tolist() == [True, False]
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):
        tg.tensor(2 ** 64)  # no dtype: an int64 that does not fit
    # the imaginary part is never dropped silently
    with pytest.raises(TypeError, match="must be real number, not complex"):
        tg.tensor([1 + 2j], dtype=tg.float32)
    with pytest.raises(TypeError, match="'complex' object cannot be interpreted as an integer"):
        tg.tensor(1j, dtype=tg.int64)
    with pytest.raises(TypeError, match="'numpy.complex64' object cannot be interpreted"):
        tg.tensor(np.complex64(1j), dtype=tg.uint8)
    assert tg.tensor(1j, dtype=tg.bool).item() is True  # (truth value, as PyTorch's)
    assert tg.tensor(np.complex64(3 + 1j), dtype=tg.float32).item() == 3.0


def test_non_numbers_and_strings():
    with pytest.raises(RuntimeError, match="Could not infer dtype of NoneType"):
        tg.tensor([None])
    with pytest.raises(TypeError, match="must be real number, not NoneType"):
        tg.tensor([None], dtype=tg.float32)
    with pytest.raises(TypeError, match="'set' object cannot be interpreted as an integer"):
        tg.tensor({1, 2}, dtype=tg.int64)
    with pytest.raises(ValueError, match="too many dimensions 'str'"):
        tg.tensor(["a"])
    with pytest.raises(TypeError, match="new\\(\\): invalid data type 'str'"):
        tg.tensor([[1, "a"]])  # (a string after the first element: a bad element)


def test_bfloat16_default_dtype_reaches_tensor():
    old = tg.get_default_dtype()
    try:
        tg.set_default_dtype(tg.bfloat16)
        assert tg.tensor(1.5).dtype is tg.bfloat16
        assert tg.tensor([1, 2.5]).dtype is tg.bfloat16
        assert tg.tensor([1, 2.5]).float().tolist() == [1.0, 2.5]
        assert tg.as_tensor([1.5]).dtype is tg.bfloat16
        assert tg.tensor(np.float32(1)).dtype is tg.float32  # (its own dtype)
        assert tg.tensor([1, 2]).dtype is tg.int64
    finally:
        tg.set_default_dtype(old)


@pytest.mark.parametrize("arr, typ, match", [
    (np.array([1], object), TypeError, "can't convert np.ndarray of type numpy.object_"),
    (np.array(["a"]), TypeError, "can't convert np.ndarray of type numpy.str_"),
    (np.array([1], "datetime64[s]"), TypeError, "numpy.datetime64"),
    (np.ones(2, ">f8"), ValueError, "byte order different from the native byte order"),
])
@pytest.mark.parametrize("fn", ["tensor", "as_tensor", "asarray", "from_numpy", "tensor_dt"])
def test_numpy_arrays_no_tensor_holds(arr, typ, match, fn):
    call = (lambda a: tg.tensor(a, dtype=tg.float32)) if fn == "tensor_dt" else _t(tg, fn)
    with pytest.raises(typ, match=match):
        call(arr)


# -- factories: size=, layout=, out= ----------------------------------------------------------

@pytest.mark.parametrize("fn", ["zeros", "ones", "empty", "rand", "randn"])
def test_size_keyword_layout_and_missing_size(fn):
    f = _t(tg, fn)
    assert tuple(f(size=(2, 3)).shape) == (2, 3)
    assert tuple(f(size=()).shape) == ()
    assert tuple(f(2, layout=tg.strided).shape) == (2,)
    with pytest.raises(TypeError, match=f'{fn}\\(\\) missing 1 required positional'):
        f()
    with pytest.raises(TypeError, match="multiple values for argument 'size'"):
        f(2, size=(3,))
    with pytest.raises(TypeError, match="unexpected keyword argument 'sise'"):
        f(sise=(3,))
    with pytest.raises(NotImplementedError, match="layout"):
        f(2, layout=tg.sparse_coo)


def test_new_and_like_factories_take_size_and_layout():
    x = tg.ones(1, dtype=tg.float64)
    for m in ("new_zeros", "new_ones", "new_empty"):
        r = getattr(x, m)(size=(2, 3))
        assert tuple(r.shape) == (2, 3) and r.dtype is tg.float64
    np.testing.assert_array_equal(x.new_ones(size=(2,)).numpy(), np.ones(2))
    for f in (tg.zeros_like, tg.ones_like, tg.empty_like, tg.rand_like, tg.randn_like):
        assert tuple(f(x, layout=tg.strided, pin_memory=False).shape) == (1,)
        with pytest.raises(NotImplementedError, match="layout"):
            f(x, layout=tg.sparse_coo)
    assert tg.full_like(x, 7, layout=tg.strided).tolist() == [7.0]
    with pytest.raises(NotImplementedError, match="layout"):
        tg.arange(3, layout=tg.sparse_coo)


@pytest.mark.parametrize("fn, args, want", [
    ("empty", (2, 3), None),
    ("full", ((2, 3), 7), np.full((2, 3), 7.0)),
    ("eye", (2, 3), np.eye(2, 3)),
    ("zeros", (2, 3), np.zeros((2, 3))),
    ("rand", (2, 3), None),
])
def test_out_is_resized_filled_and_returned(fn, args, want):
    out = tg.empty(5, dtype=tg.float64)
    r = _t(tg, fn)(*args, out=out)
    assert r is out and tuple(out.shape) == (2, 3) and out.dtype is tg.float64
    if want is not None:
        np.testing.assert_array_equal(out.numpy(), want)
    if fn == "rand":
        assert ((out.numpy() >= 0) & (out.numpy() < 1)).all()
    with pytest.raises(RuntimeError, match="does not match dtype of out parameter"):
        _t(tg, fn)(*args, out=tg.empty(0, dtype=tg.int32), dtype=tg.float32)


def test_full_fill_value_and_eye_arguments():
    out = tg.empty(0, dtype=tg.int64)
    assert tg.full((2,), 3, out=out).tolist() == [3, 3] and out.dtype is tg.int64
    assert tg.full((2,), tg.tensor(2.5)).tolist() == [2.5, 2.5]
    with pytest.raises(TypeError, match="argument 'fill_value' must be Number, not Tensor"):
        tg.full((2,), tg.tensor([3.0]))
    with pytest.raises(TypeError, match="argument 'fill_value' must be Number, not Tensor"):
        tg.full_like(tg.ones(2), tg.tensor([3.0]))
    np.testing.assert_array_equal(tg.eye(tg.tensor(2)).numpy(), np.eye(2))
    with pytest.raises(TypeError, match="eye\\(\\): argument 'n' \\(position 1\\) must be int"):
        tg.eye(2.0)
    with pytest.raises(TypeError, match="argument 'm' \\(position 2\\) must be int"):
        tg.eye(2, 1.5)
    with pytest.raises(RuntimeError, match="n must be greater or equal to 0, got -1"):
        tg.eye(-1)
    with pytest.raises(RuntimeError, match="dimensionality of sizes \\(2\\) must match"):
        tg.empty_strided((2, 3), (1,))


# -- ranges -----------------------------------------------------------------------------------

def test_range_arguments_and_refused_dtypes():
    assert tg.arange(end=4).tolist() == [0, 1, 2, 3]
    assert tg.arange(start=1, end=4).tolist() == [1, 2, 3]
    with pytest.raises(TypeError, match="missing 1 required positional"):
        tg.arange()
    for dt, name in ((tg.complex64, "ComplexFloat"), (tg.complex128, "ComplexDouble"),
                     (tg.bool, "Bool")):
        with pytest.raises(NotImplementedError, match=f"\"arange_cpu\" not implemented for "
                                                      f"'{name}'"):
            tg.arange(3, dtype=dt)
        with pytest.raises(NotImplementedError, match=f"\"range_cpu\" not implemented for "
                                                      f"'{name}'"):
            tg.range(0, 3, dtype=dt)
    with pytest.raises(NotImplementedError, match="\"linspace_cpu\" not implemented for 'Bool'"):
        tg.linspace(0, 1, 3, dtype=tg.bool)
    with pytest.raises(RuntimeError, match="value cannot be converted to type double"):
        tg.arange(1j)
    with pytest.raises(RuntimeError, match="upper bound and lower bound inconsistent"):
        tg.arange(0, 5, -1)
    # (the step truncates to 0: PyTorch's int64 ValueError; its int32 kernel repeats the start
    # instead, which is refused here too)
    with pytest.raises(ValueError, match="step must be nonzero"):
        tg.arange(0, 2.5, 0.5, dtype=tg.int32)
    np.testing.assert_allclose(tg.linspace(0, 1, tg.tensor(5)).numpy(), np.linspace(0, 1, 5),
                               rtol=1e-6)
    with pytest.raises(TypeError, match="argument 'steps' must be int, not Tensor"):
        tg.linspace(0, 1, tg.tensor(5.0))


# -- conversions ------------------------------------------------------------------------------

@pytest.mark.parametrize("m, dt", [("float", tg.float32), ("double", tg.float64),
                                   ("half", tg.float16), ("long", tg.int64), ("int", tg.int32),
                                   ("bool", tg.bool), ("byte", tg.uint8), ("short", tg.int16)])
def test_casts_take_memory_format(m, dt):
    x = tg.tensor(np.arange(24.0).reshape(1, 2, 3, 4))
    r = getattr(x, m)(memory_format=tg.channels_last)
    assert r.dtype is dt and r.stride() == (24, 1, 8, 2)
    np.testing.assert_array_equal(r.double().numpy(), np.arange(24.0).reshape(1, 2, 3, 4)
                                  .astype(dt.np if dt is not tg.bool else bool))
    # (a source of another dtype: a cast to its own dtype returns it as is, as PyTorch's)
    t = tg.ones(2, 3, dtype=tg.float32 if dt is tg.float64 else tg.float64).t()
    assert getattr(t, m)(memory_format=tg.preserve_format).stride() == (1, 3)
    assert getattr(t, m)(memory_format=tg.contiguous_format).stride() == (2, 1)
    with pytest.raises(TypeError, match=f"{m}\\(\\) takes 1 positional argument"):
        getattr(x, m)(tg.preserve_format)


def test_clone_input_keyword_and_to_overloads():
    x = tg.tensor([1.0, 2.0])
    c = tg.clone(input=x)
    assert c is not x and c.tolist() == [1.0, 2.0]
    with pytest.raises(TypeError, match="to\\(\\) received an invalid combination"):
        x.to(tg.float32, tg.float64)
    with pytest.raises(TypeError, match="to\\(\\) received an invalid combination"):
        x.to(tg.ones(1), tg.float64)
    assert x.to("cpu", tg.float64).dtype is tg.float64


def test_copy_gives_the_overwritten_values_a_zero_gradient():
    a = tg.tensor([1.0, 2.0, 3.0], dtype=tg.float64, requires_grad=True)
    b = tg.tensor([4.0, 5.0, 6.0], dtype=tg.float64, requires_grad=True)
    w = tg.tensor([1.0, -2.0, 0.5], dtype=tg.float64)
    y = a.clone().copy_(b)
    ga, gb = tg.autograd.grad((y * w).sum(), (a, b))  # a takes part: no allow_unused needed
    np.testing.assert_array_equal(ga.numpy(), np.zeros(3))
    np.testing.assert_array_equal(gb.numpy(), w.numpy())
    # broadcast and cast source: gradients by finite differences
    f = lambda a, b: a.clone().copy_(b) * 2  # noqa: E731
    a2 = tg.tensor(np.random.default_rng(0).standard_normal((2, 3)), requires_grad=True)
    b2 = tg.tensor(np.random.default_rng(1).standard_normal(3), requires_grad=True)
    assert tg.autograd.gradcheck(f, (a2, b2))


# -- against torch ----------------------------------------------------------------------------

def _same(L, fn):
    try:
        r = fn(L)
    except Exception as e:  # noqa: BLE001
        return ("err", type(e).__name__)
    if isinstance(r, L.Tensor):
        x = r.detach()
        if x.dtype in (L.bfloat16, L.float16):
            x = x.float()
        return ("T", str(r.dtype).split(".")[-1], tuple(r.shape), x.numpy().tolist())
    return ("v", r if not isinstance(r, tuple) else tuple(map(str, r)))


_CASES = {
    "list_arrays": lambda L: L.tensor([np.ones(2), np.zeros(2)]),
    "list_int8_tensors": lambda L: L.tensor([L.tensor(1, dtype=L.int8), 2]),
    "f16_and_float": lambda L: L.tensor([L.tensor(1, dtype=L.float16), 2.5]),
    "1d_tensors": lambda L: L.tensor([L.ones(2)]),
    "big_float": lambda L: L.tensor([2 ** 64, 3], dtype=L.float64),
    "big_bool": lambda L: L.tensor(2 ** 64, dtype=L.bool),
    "complex_to_float": lambda L: L.tensor(1j, dtype=L.float32),
    "complex_to_int": lambda L: L.tensor([1j], dtype=L.int32),
    "none_float": lambda L: L.tensor([None], dtype=L.float64),
    "list_str": lambda L: L.tensor(["a"]),
    "object_array": lambda L: L.as_tensor(np.array([1], object)),
    "big_endian": lambda L: L.from_numpy(np.ones(2, ">f4")),
    "zeros_size": lambda L: L.zeros(size=(2, 3)),
    "zeros_none": lambda L: L.zeros(),
    "ones_layout": lambda L: L.ones(2, layout=L.strided),
    "empty_out": lambda L: (lambda o: (L.empty(2, 3, out=o) is o, tuple(o.shape)))(L.empty(0)),
    "full_out": lambda L: L.full((2,), 3, out=L.empty(0, dtype=L.int16)),
    "eye_out": lambda L: L.eye(2, 3, out=L.empty(0, dtype=L.float64)),
    "eye_float": lambda L: L.eye(2.5),
    "full_1d_fill": lambda L: L.full((2,), L.tensor([1.0])),
    "arange_end": lambda L: L.arange(end=3),
    "arange_c": lambda L: L.arange(3, dtype=L.complex64),
    "linspace_bool": lambda L: L.linspace(0, 1, 3, dtype=L.bool),
    "linspace_t_steps": lambda L: L.linspace(0, 1, L.tensor(4)),
    "strided_bad": lambda L: L.empty_strided((2, 2), (1,)),
    "float_chlast": lambda L: L.ones(1, 2, 2, 2).float(memory_format=L.channels_last).stride(),
    "half_pos": lambda L: L.ones(2).half(L.preserve_format),
    "clone_input": lambda L: L.clone(input=L.ones(2)),
    "to_2dtypes": lambda L: L.ones(2).to(L.float32, L.float64),
    "bf16_default": lambda L: (L.set_default_dtype(L.bfloat16), L.tensor([1.5, 2]),
                               L.set_default_dtype(L.float32))[1],
}


@pytest.mark.parametrize("name", sorted(_CASES))
def test_matches_torch(name):
    torch = pytest.importorskip("torch")
    assert _same(tg, _CASES[name]) == _same(torch, _CASES[name])


def test_copy_gradient_matches_torch():
    torch = pytest.importorskip("torch")
    grads = []
    for L in (tg, torch):
        a = L.tensor([1.0, 2.0], dtype=L.float64, requires_grad=True)
        b = L.tensor([3.0], dtype=L.float32, requires_grad=True)
        y = a.clone().copy_(b)
        grads.append([g.numpy() for g in L.autograd.grad((y * y).sum(), (a, b))])
    for g, h in zip(*grads):
        np.testing.assert_allclose(g, h)


def test_factories_and_copy_gradient_on_each_device(device):
    z = tg.zeros(size=(2, 3), device=device)
    assert z.device.type == device and tuple(z.shape) == (2, 3)
    out = tg.empty(0, device=device, dtype=tg.float64)
    assert tg.eye(2, 3, out=out) is out
    np.testing.assert_array_equal(out.cpu().numpy(), np.eye(2, 3))
    assert tg.full((2,), 4, out=tg.empty(1, dtype=tg.int32, device=device)).cpu().tolist() \
        == [4, 4]
    x = tg.tensor(np.arange(24.0).reshape(1, 2, 3, 4), device=device)
    r = x.float(memory_format=tg.channels_last)
    assert r.stride() == (24, 1, 8, 2)
    np.testing.assert_array_equal(r.cpu().numpy(), np.arange(24.0).reshape(1, 2, 3, 4))
    a = tg.ones(3, dtype=tg.float64, device=device, requires_grad=True)
    b = tg.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)  # float32 source
    ga, gb = tg.autograd.grad((a.clone().copy_(b) * 2).sum(), (a, b))
    np.testing.assert_array_equal(ga.cpu().numpy(), np.zeros(3))
    assert gb.dtype is tg.float32
    np.testing.assert_array_equal(gb.cpu().numpy(), np.full(3, 2.0))


def test_complex_places_the_parts_so_inf_and_nan_survive():
    # real + imag * 1j made complex(1, inf) nan + inf j: inf * 1j is nan + inf j
    inf, nan = np.inf, np.nan
    z = tg.complex(tg.tensor([inf, 1.0, 1.0, -inf]), tg.tensor([nan, -inf, 2.0, 0.0]))
    want = np.array([inf, 1, 1, -inf]) + 0j
    want.imag = [nan, -inf, 2, 0]
    np.testing.assert_array_equal(z.numpy(), want.astype(np.complex64))
    r = tg.tensor(np.linspace(-1, 1, 3), dtype=tg.float64, requires_grad=True)
    i = tg.tensor([[0.5], [2.0]], dtype=tg.float64, requires_grad=True)  # broadcast parts
    assert tuple(tg.complex(r, i).shape) == (2, 3)
    assert tg.autograd.gradcheck(tg.complex, (r, i), check_forward_ad=True)
    assert tg.autograd.gradgradcheck(tg.complex, (r, i))
