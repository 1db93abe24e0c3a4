"""dtypes, finfo/iinfo, promotion and the Tensor object's own API against PyTorch's rules.

Expected values are written out (PyTorch 2.x's behaviour, checked by hand); where torch is
installed, a few tables are also compared with it directly.
"""

import copy
import operator
import pickle
import warnings

import numpy as np
import pytest

import tritongrad as tg

ALL_DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
              "float32", "float64", "complex64", "complex128", "uint16", "uint32", "uint64",
              "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
              "float8_e8m0fnu")


# -- dtype objects -----------------------------------------------------------------------------

def test_dtypes_are_read_only_singletons():
    with pytest.raises(AttributeError, match="attribute 'itemsize' of 'tritongrad.dtype' "
                                             "objects is not writable"):
        tg.float32.itemsize = 3
    with pytest.raises(AttributeError, match="not writable"):
        tg.float64.is_complex = True
    with pytest.raises(AttributeError, match="not writable"):
        del tg.int8.is_signed
    assert tg.float32.itemsize == 4 and tg.zeros(2, 3).nbytes == 24
    with pytest.raises(TypeError, match="cannot create 'tritongrad.dtype' instances"):
        tg.dtype("float32")
    assert type(tg.float32).__module__ == "tritongrad" and type(tg.float32) is tg.dtype
    for name in ALL_DTYPES:
        d = getattr(tg, name)
        assert pickle.loads(pickle.dumps(d)) is d and copy.deepcopy(d) is d
    # the quantized dtypes (a dtype subclass) are still made and pickled
    assert pickle.loads(pickle.dumps(tg.qint8)) is tg.qint8 and tg.qint8.itemsize == 1


def test_to_complex_and_to_real():
    assert tg.float32.to_complex() is tg.complex64 and tg.float64.to_complex() is tg.complex128
    assert tg.bfloat16.to_complex() is tg.complex64
    assert tg.float16.to_complex() is tg.complex64  # (no complex32 here; PyTorch's twin)
    assert tg.complex128.to_complex() is tg.complex128
    for name, cpp in (("bool", "Bool"), ("uint8", "Byte"), ("int64", "Long"),
                      ("uint16", "UInt16"), ("float8_e4m3fn", "Float8_e4m3fn")):
        with pytest.raises(RuntimeError, match=f"^Unknown Complex ScalarType for {cpp}$"):
            getattr(tg, name).to_complex()
    assert tg.complex64.to_real() is tg.float32 and tg.complex128.to_real() is tg.float64
    assert tg.int32.to_real() is tg.int32 and tg.float8_e5m2.to_real() is tg.float8_e5m2


# -- finfo / iinfo -----------------------------------------------------------------------------

def test_finfo_iinfo_equality_arguments_and_errors():
    assert tg.finfo(tg.float32) == tg.finfo(tg.float32)
    assert tg.finfo(tg.float32) != tg.finfo(tg.float64)
    assert tg.finfo(tg.complex64) == tg.finfo(tg.float32) and tg.finfo(tg.float32) != 3
    assert tg.iinfo(tg.int8) == tg.iinfo(tg.int8) and tg.iinfo(tg.int8) != tg.iinfo(tg.uint8)
    with pytest.raises(TypeError, match="unhashable"):
        hash(tg.finfo())
    with pytest.raises(TypeError, match="unhashable"):
        hash(tg.iinfo(tg.int32))
    assert tg.finfo().dtype == "float32" and tg.finfo(float).dtype == "float64"
    assert tg.finfo(complex).dtype == "float64" and tg.iinfo(int).dtype == "int64"
    with pytest.raises(TypeError, match="requires a floating point input type"):
        tg.finfo(None)  # (not the default dtype: only finfo() is)
    with pytest.raises(TypeError, match="requires a floating point input type"):
        tg.finfo(tg.ones(2))
    with pytest.raises(TypeError, match="requires a floating point input type"):
        tg.finfo(int)
    with pytest.raises(TypeError, match=r'^iinfo\(\) missing 1 required positional'):
        tg.iinfo()
    with pytest.raises(TypeError, match=r"^iinfo\(\): argument 'type' \(position 1\) must be "):
        tg.iinfo("int8")
    with pytest.raises(TypeError, match="torch.bool is not supported by torch.iinfo"):
        tg.iinfo(bool)
    assert tg.iinfo(tg.uint64).max == 2 ** 64 - 1 and type(tg.iinfo(tg.uint64).max) is int


# -- promotion ---------------------------------------------------------------------------------

def test_promote_types_keywords_and_bad_arguments():
    assert tg.promote_types(type1=tg.int8, type2=tg.float16) is tg.float16
    assert tg.promote_types(tg.uint8, tg.int8) is tg.int16
    with pytest.raises(TypeError, match=r"^promote_types\(\): argument 'type2' \(position 2\) "
                                        r"must be tritongrad.dtype, not int$"):
        tg.promote_types(tg.int8, 3)
    with pytest.raises(TypeError, match=r"argument 'type1' \(position 1\).*not NoneType$"):
        tg.promote_types(None, tg.int8)


def test_result_type_public_form_refuses_non_numbers():
    from tritongrad.runtime.dtype import public_result_type
    i8 = tg.zeros(2, dtype=tg.int8)
    for bad, name in (("a", "str"), ([1], "list"), (tg.float32, "dtype"),
                      (np.array(1.0), "ndarray"), (None, "NoneType")):
        with pytest.raises(TypeError, match=r"^result_type\(\) received an invalid combination "
                                            rf"of arguments - got \(Tensor, {name}\)"):
            public_result_type(i8, bad)
    for args in ((), (i8,), (i8, i8, 1.0)):
        with pytest.raises(TypeError, match=r"^result_type\(\) received an invalid combination"):
            public_result_type(*args)
    with pytest.raises(TypeError, match=r"got \(Tensor, foo=int\)"):
        public_result_type(i8, foo=1)
    assert public_result_type(tensor=i8, other=2.5) is tg.float32
    assert public_result_type(scalar=1j, tensor=i8) is tg.complex64
    assert public_result_type(scalar1=1, scalar2=2) is tg.int64
    assert public_result_type(i8, np.bool_(True)) is tg.int8
    # numbers of every kind promote as the ops' result_type does
    assert public_result_type(i8, 2.5) is tg.float32 and public_result_type(i8, 2) is tg.int8
    assert public_result_type(i8, 1j) is tg.complex64 and public_result_type(True, i8) is tg.int8
    assert public_result_type(i8, np.float64(1.0)) is tg.float32
    assert public_result_type(1, 2.0) is tg.float32
    assert public_result_type(True, 1j) is tg.complex64
    from fractions import Fraction
    assert public_result_type(i8, Fraction(1, 2)) is tg.float32
    # the ops' form stays lenient: the op refuses a non-number, naming itself
    with pytest.raises(TypeError, match=r"^div\("):
        tg.div("a", i8)


def test_tg_result_type_is_the_public_form():
    with pytest.raises(TypeError, match=r"^result_type\(\) received an invalid combination"):
        tg.result_type(tg.zeros(2), "a")


def test_set_default_dtype_refusals():
    for d in (tg.int64, tg.bool, tg.complex64, tg.uint16):
        with pytest.raises(TypeError, match="^only floating-point types are supported as the "
                                            "default type$"):
            tg.set_default_dtype(d)
    for bad in ("float64", float, None):
        with pytest.raises(TypeError, match="^invalid dtype object: only floating-point types"):
            tg.set_default_dtype(bad)
    with pytest.raises(TypeError, match="^couldn't find storage object Float8_e4m3fnStorage$"):
        tg.set_default_dtype(tg.float8_e4m3fn)
    assert tg.get_default_dtype() is tg.float32
    try:
        tg.set_default_dtype(tg.float64)
        assert tg.tensor(1.5).dtype is tg.float64 and tg.tensor(1j).dtype is tg.complex128
        assert tg.finfo().dtype == "float64"
    finally:
        tg.set_default_dtype(tg.float32)


# -- Tensor.type() and casts -------------------------------------------------------------------

def test_type_names_of_every_dtype():
    names = {"complex64": "ComplexFloatTensor", "complex128": "ComplexDoubleTensor",
             "uint16": "UInt16Tensor", "uint32": "UInt32Tensor", "int8": "CharTensor",
             "float8_e4m3fn": "Float8_e4m3fnTensor", "float8_e8m0fnu": "Float8_e8m0fnuTensor",
             "bfloat16": "BFloat16Tensor", "bool": "BoolTensor"}
    for name, legacy in names.items():
        t = tg.zeros(2, dtype=getattr(tg, name))
        assert t.type() == "tritongrad." + legacy and tg.typename(t) == "tritongrad." + legacy
    x = tg.zeros(2)
    assert x.type("torch.ComplexFloatTensor").dtype is tg.complex64
    assert x.type("tritongrad.HalfTensor").dtype is tg.float16
    assert x.type(tg.float32) is x and x.type(tg.LongTensor).dtype is tg.int64
    with pytest.raises(TypeError, match="^dtype must be a type, str, or dtype object$"):
        x.type(3)  # (not a device index)
    with pytest.raises(ValueError, match="^invalid type: 'float'$"):
        x.type(float)
    with pytest.raises(ValueError, match="invalid type"):
        x.type("torch.FooTensor")


def test_complex_to_real_casts_warn_as_pytorch():
    z = tg.tensor([1 + 2j, -3j])
    for cast in (lambda: z.to(tg.float64), lambda: z.float(), lambda: z.int(),
                 lambda: z.half(), lambda: tg.zeros(2).copy_(z)):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = cast()
        assert [x.category for x in w] == [UserWarning], [str(x.message) for x in w]
        assert str(w[0].message) == "Casting complex values to real discards the imaginary part"
        assert r.tolist() == [1, 0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert z.bool().tolist() == [True, True]  # (either part nonzero: nothing discarded)
        assert tg.zeros(2, dtype=tg.bool).copy_(z).tolist() == [True, True]
        assert z.to(tg.complex128).dtype is tg.complex128
        assert tg.zeros(2, dtype=tg.float64).to(tg.float32).dtype is tg.float32


def test_to_unexpected_keyword():
    with pytest.raises(TypeError, match=r"^to\(\) received an invalid combination of arguments"):
        tg.zeros(2).to(foo=1)


# -- Tensor methods and factories -------------------------------------------------------------


def test_requires_grad_on_an_integer_tensor_message():
    with pytest.raises(RuntimeError, match="^only Tensors of floating point dtype can require "
                                           "gradients$"):
        tg.zeros(2, dtype=tg.int64).requires_grad_()


def test_index_of_a_complex_tensor():
    with pytest.raises(TypeError, match="^only integer tensors of a single element"):
        operator.index(tg.tensor(1 + 0j))


def test_size_of_a_0d_tensor():
    with pytest.raises(IndexError, match="^Dimension specified as -1 but tensor has no "
                                         "dimensions$"):
        tg.zeros(()).size(-1)


def test_reversed_of_a_0d_tensor():
    with pytest.raises(TypeError, match="^iteration over a 0-d tensor$"):
        list(reversed(tg.zeros(())))


def test_numpy_force_shares_memory_on_the_cpu():
    t = tg.zeros(2, 3)
    assert np.shares_memory(t.numpy(force=True), t.numpy())


def test_is_contiguous_memory_format_is_keyword_only():
    with pytest.raises(TypeError):
        tg.zeros(2, 3).is_contiguous(tg.channels_last)


def test_deepcopy_keeps_a_plain_tensors_attributes():
    t = tg.zeros(2)
    t.foo = 3
    assert copy.deepcopy(t).foo == 3


def test_H_of_a_0d_tensor_warns_and_conjugates():
    with pytest.warns(UserWarning, match="Tensor.H is deprecated on 0-D tensors"):
        assert tg.tensor(1 + 2j).H.item() == 1 - 2j


def test_new_tensor_of_a_tensor_warns():
    with pytest.warns(UserWarning, match="To copy construct from a tensor"):
        tg.zeros(2).new_tensor(tg.ones(2))


# -- against torch -----------------------------------------------------------------------------

def _name(d) -> str:
    return str(d).rsplit(".", 1)[-1]


def test_dtype_tables_match_torch():
    torch = pytest.importorskip("torch")
    for name in ALL_DTYPES:
        a, b = getattr(torch, name), getattr(tg, name)
        assert (a.is_floating_point, a.is_complex, a.is_signed, a.itemsize) == \
            (b.is_floating_point, b.is_complex, b.is_signed, b.itemsize), name
        assert _name(a.to_real()) == _name(b.to_real())
        if a.is_floating_point or a.is_complex:
            fa, fb = torch.finfo(a), tg.finfo(b)
            for f in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution",
                      "dtype"):
                assert getattr(fa, f) == getattr(fb, f), (name, f)
            assert repr(fa) == repr(fb)
        elif a is not torch.bool:
            ia, ib = torch.iinfo(a), tg.iinfo(b)
            assert (ia.bits, ia.min, ia.max, ia.dtype) == (ib.bits, ib.min, ib.max, ib.dtype)
            assert repr(ia) == repr(ib)
        ta, tb = torch.zeros(1, dtype=a), tg.zeros(1, dtype=b)
        assert ta.type().replace("torch.", "tritongrad.") == tb.type(), name
        assert ta.element_size() == tb.element_size() and ta.is_signed() == tb.is_signed()


def test_promotion_matches_torch():
    torch = pytest.importorskip("torch")
    names = ALL_DTYPES[:12]
    for x in names:
        for y in names:
            assert _name(torch.promote_types(getattr(torch, x), getattr(torch, y))) == \
                _name(tg.promote_types(getattr(tg, x), getattr(tg, y))), (x, y)
    for x in names:
        for s in (True, 3, 2.5):
            for shape in ((), (2,)):
                a = torch.zeros(shape, dtype=getattr(torch, x))
                b = tg.zeros(shape, dtype=getattr(tg, x))
                assert _name(torch.result_type(a, s)) == _name(tg.result_type(b, s)), (x, s)
