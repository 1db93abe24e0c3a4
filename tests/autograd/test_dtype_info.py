"""``tg.finfo`` and ``tg.iinfo``: each limit from the format's definition (bits of exponent and
significand), not from a table copied from another library."""

from __future__ import annotations

import pytest

import tritongrad as tg

# dtype: (bits, exponent bits, stored significand bits, decimal digits of resolution)
FLOAT_FORMATS = {tg.float16: (16, 5, 10, 3), tg.bfloat16: (16, 8, 7, 2),
                 tg.float32: (32, 8, 23, 6), tg.float64: (64, 11, 52, 15)}


@pytest.mark.parametrize("dt", list(FLOAT_FORMATS), ids=str)
def test_finfo_from_the_format(dt):
    bits, exp_bits, man_bits, digits = FLOAT_FORMATS[dt]
    bias = 2 ** (exp_bits - 1) - 1
    f = tg.finfo(dt)
    assert f.bits == bits and f.dtype == str(dt).split(".")[-1]
    assert f.eps == 2.0 ** -man_bits
    assert f.max == (2 - 2.0 ** -man_bits) * 2.0 ** bias and f.min == -f.max
    assert f.tiny == f.smallest_normal == 2.0 ** (1 - bias)
    assert f.resolution == 10.0 ** -digits
    assert all(type(v) is float for v in (f.eps, f.max, f.min, f.tiny, f.resolution))
    assert repr(f).startswith(f"finfo(resolution={f.resolution:g}, min=")


def test_finfo_default_and_complex():
    assert tg.finfo().dtype == "float32"
    with tg_default(tg.float64):
        assert tg.finfo().eps == 2.0 ** -52
    assert tg.finfo(tg.complex64).eps == tg.finfo(tg.float32).eps
    assert tg.finfo(tg.complex128).dtype == "float64"


class tg_default:
    def __init__(self, dt):
        self.dt = dt

    def __enter__(self):
        self.old = tg.get_default_dtype()
        tg.set_default_dtype(self.dt)

    def __exit__(self, *exc):
        tg.set_default_dtype(self.old)


@pytest.mark.parametrize(("dt", "bits", "signed"), [(tg.uint8, 8, False), (tg.int8, 8, True),
                                                    (tg.int16, 16, True), (tg.int32, 32, True),
                                                    (tg.int64, 64, True)], ids=str)
def test_iinfo_from_the_format(dt, bits, signed):
    i = tg.iinfo(dt)
    assert i.bits == bits
    assert (i.min, i.max) == ((-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else
                              (0, 2 ** bits - 1))
    assert type(i.min) is int and type(i.max) is int
    assert repr(i) == f"iinfo(min={i.min:g}, max={i.max:g}, dtype={i.dtype})"


def test_wrong_kinds_are_refused():
    with pytest.raises(TypeError, match="requires a floating point input type"):
        tg.finfo(tg.int32)
    with pytest.raises(TypeError, match="requires an integer input type"):
        tg.iinfo(tg.float32)
    with pytest.raises(TypeError, match="torch.bool is not supported by torch.iinfo"):
        tg.iinfo(tg.bool)
    with pytest.raises(TypeError, match="requires a floating point input type"):
        tg.finfo("float32")


def test_masking_with_the_lowest_value():
    """The common use: fill masked attention scores with finfo(dtype).min."""
    x = tg.zeros(2, 3)
    mask = tg.tensor([[True, False, False], [False, False, True]])
    y = x.masked_fill(mask, tg.finfo(x.dtype).min).softmax(-1)
    assert y[0, 0].item() == 0.0 and abs(y[0, 1].item() - 0.5) < 1e-7
