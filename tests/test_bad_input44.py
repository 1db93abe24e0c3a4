"""Bad input to cov/corrcoef, the broadcasting composites (hypot, logaddexp, xlogy, addcmul,
addcdiv, lerp) and the ops' number and dtype arguments: PyTorch 2.13's error type and words
(checked against torch), never NumPy's error from deep inside or a silently wrong result."""

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.nn import functional as F

_X = [[1.0, 2.0, 4.0]]


# -- cov / corrcoef -----------------------------------------------------------------------------

_INTEGRAL = "expected fweights to have integral dtype but got fweights with {} dtype"
_COUNT = "expected {}weights to have the same numel as there are observations in the input but got"


@pytest.mark.parametrize("kwargs, words", [
    ({"fweights": [1.5, 1.0, 1.0]}, _INTEGRAL.format("Float")),
    ({"fweights": [True, True, True]}, _INTEGRAL.format("Bool")),
    ({"fweights": [1, -1, 1]}, "fweights cannot be negative"),
    ({"aweights": [1.0, -1.0, 1.0]}, "aweights cannot be negative"),
    ({"aweights": [1.0, float("nan"), 1.0]}, "aweights cannot be negative"),
    ({"aweights": [1, 1, 1]}, "expected aweights to have floating point dtype but got "
                              + "aweights with Long dtype"),
    ({"fweights": [1, 1]}, _COUNT.format("f") + " 2 != 3"),
    ({"fweights": 1}, _COUNT.format("f") + " 1 != 3"),
    ({"aweights": [1.0, 1.0]}, _COUNT.format("a") + " 2 != 3"),
    ({"aweights": [[1.0, 1.0, 1.0]]}, "expected aweights to have one or fewer dimensions but "
                                      + "got aweights with 2 dimensions"),
    ({"fweights": [0, 0, 0]}, "weights sum to zero, can't be normalized"),
])
def test_cov_checks_its_weights(kwargs, words):
    kwargs = {k: tg.tensor(v) for k, v in kwargs.items()}
    with pytest.raises(RuntimeError, match="^cov\\(\\): " + words.replace("(", "\\(")):
        tg.cov(tg.tensor(_X), **kwargs)


@pytest.mark.parametrize("correction, kind", [(0.5, "float"), (2.0, "float"), (True, "bool"),
                                              (None, "NoneType"), ("a", "str")])
def test_cov_correction_must_be_an_int(correction, kind):
    with pytest.raises(TypeError, match=f"cov\\(\\): argument 'correction' must be int, not "
                                        f"{kind}"):
        tg.cov(tg.tensor(_X), correction=correction)
    # (an integer of another type is one: NumPy's, or a tensor's through __index__)
    assert tg.cov(tg.tensor(_X), correction=np.int64(0)).item() == pytest.approx(14 / 9)


@pytest.mark.parametrize("op", ["cov", "corrcoef"])
def test_cov_and_corrcoef_refuse_3d_input_naming_themselves(op):
    with pytest.raises(RuntimeError, match=f"^{op}\\(\\): expected input to have two or fewer "
                                           f"dimensions but got an input with 3 dimensions"):
        getattr(tg, op)(tg.ones(2, 2, 2))


def test_cov_of_one_variable_is_0d_and_aweights_promote():
    # PyTorch squeezes the result (a 1 x n input too), and float64 aweights promote it
    assert tg.cov(tg.tensor(_X)).shape == ()
    assert tg.corrcoef(tg.tensor(_X)).shape == ()
    c = tg.cov(tg.tensor(_X), aweights=tg.tensor([1.0, 2.0, 1.0], dtype=tg.float64))
    assert c.dtype is tg.float64 and c.item() == pytest.approx(1.9)
    c = tg.cov(tg.tensor(_X), fweights=tg.tensor([1, 2, 1], dtype=tg.uint8))
    assert c.dtype is tg.float32 and c.item() == pytest.approx(1.5833333)


# -- shapes that don't broadcast ------------------------------------------------------------------

_A, _B = tg.ones(3), tg.ones(4)
_SIZE = "The size of tensor a \\(3\\) must match the size of tensor b \\(4\\) at non-singleton " \
        "dimension 0"


@pytest.mark.parametrize("call", [
    lambda: tg.hypot(_A, _B), lambda: tg.logaddexp(_A, _B), lambda: tg.logaddexp2(_A, _B),
    lambda: tg.xlogy(_A, _B), lambda: tg.special.xlogy(_A, _B), lambda: tg.copysign(_A, _B),
    lambda: tg.addcmul(_A, _A, _B), lambda: tg.addcdiv(_A, _A, _B),
    lambda: tg.addcmul(_A, _B, _B), lambda: tg.lerp(_A, _B, 0.5), lambda: tg.lerp(_A, _A, _B),
    lambda: tg.lerp(_A, _B, _A), lambda: _A.clone().lerp_(_B, 0.5),
    lambda: _A.clone().addcmul_(_A, _B), lambda: _A.clone().hypot_(_B),
], ids=["hypot", "logaddexp", "logaddexp2", "xlogy", "special.xlogy", "copysign", "addcmul",
        "addcdiv", "addcmul_tensors", "lerp", "lerp_weight", "lerp_end_weight", "lerp_",
        "addcmul_", "hypot_"])
def test_shapes_that_dont_broadcast_get_pytorchs_error(call):
    with pytest.raises(RuntimeError, match=_SIZE):
        call()


def test_broadcasting_shapes_still_work():
    r = tg.lerp(tg.ones(2, 1), tg.zeros(3), tg.full((2, 3), 0.25))
    assert r.shape == (2, 3) and r.tolist() == [[0.75] * 3] * 2
    assert tg.hypot(tg.full((2, 1), 3.0), tg.full((3,), 4.0)).tolist() == [[5.0] * 3] * 2
    assert tg.addcmul(tg.ones(2, 1), tg.ones(3), tg.ones(2, 3), value=2).shape == (2, 3)
    with pytest.raises(RuntimeError, match="The size of tensor a \\(2\\) must match the size of "
                                           "tensor b \\(3\\) at non-singleton dimension 0"):
        tg.lerp(tg.ones(2, 3), tg.ones(3, 3), 0.5)


# -- number and dtype arguments of the wrong type -----------------------------------------------

@pytest.mark.parametrize("kwargs, words", [
    ({"nan": "a"}, "nan_to_num\\(\\): argument 'nan' must be float, not str"),
    ({"posinf": "a"}, "nan_to_num\\(\\): argument 'posinf' must be float, not str"),
    ({"neginf": [1.0]}, "nan_to_num\\(\\): argument 'neginf' must be float, not list"),
    ({"nan": 1j}, "nan_to_num\\(\\): argument 'nan' must be float, not complex"),
])
def test_nan_to_num_values_must_be_floats(kwargs, words):
    for x in (tg.ones(3), tg.tensor([1, 2])):  # (an integer tensor, which it copies, too)
        with pytest.raises(TypeError, match=words):
            tg.nan_to_num(x, **kwargs)
    with pytest.raises(TypeError, match=words.replace("num", "num_", 1)):
        tg.ones(3).nan_to_num_(**kwargs)


def test_nan_to_num_takes_numbers_and_0d_tensors():
    x = tg.tensor([float("nan"), 1.0])
    for v in (2, 2.0, np.int64(2), np.float32(2), tg.tensor(2.0), tg.tensor(2)):
        r = tg.nan_to_num(x, nan=v)
        assert r.dtype is tg.float32 and r.tolist() == [2.0, 1.0]


@pytest.mark.parametrize("value, kind", [("a", "str"), ([1.0], "list"), (1j, "complex"),
                                         (tg.tensor([2.0, 3.0]), "Tensor")])
def test_pad_value_must_be_a_float(value, kind):
    for mode, x in (("constant", tg.ones(3)), ("reflect", tg.ones(1, 3))):
        with pytest.raises(TypeError, match=f"pad\\(\\): argument 'value' \\(position 4\\) must "
                                            f"be float, not {kind}"):
            F.pad(x, (1, 1), mode=mode, value=value)
    assert F.pad(tg.ones(2), (1, 1), value=tg.tensor(2.0)).tolist() == [2.0, 1.0, 1.0, 2.0]


@pytest.mark.parametrize("fn, op", [(tg.special.logit, "special_logit"), (tg.logit, "logit")])
def test_logit_eps_must_be_a_float(fn, op):
    with pytest.raises(TypeError, match=f"^{op}\\(\\): argument 'eps' must be float, not str"):
        fn(tg.ones(3) / 2, eps="a")
    with pytest.raises(TypeError, match="must be float, not list"):
        fn(tg.ones(3) / 2, eps=[0.1])
    assert fn(tg.tensor([0.0]), eps=np.float32(0.25)).item() == pytest.approx(-1.0986123)


@pytest.mark.parametrize("call", [lambda x: x.sum(dtype="float"),
                                  lambda x: tg.sum(x, 0, dtype="float"),
                                  lambda x: tg.sum(x.long(), dtype="float")])
def test_sum_dtype_must_be_a_dtype(call):
    with pytest.raises(TypeError, match="sum\\(\\): argument 'dtype' must be torch.dtype, not "
                                        "str"):
        call(tg.ones(2))


def test_sum_dtype_takes_python_number_types():
    # (PyTorch's parser takes float, int and bool as float64, int64 and bool)
    assert tg.ones(2).sum(dtype=float).dtype is tg.float64
    assert tg.ones(2).sum(0, dtype=int).dtype is tg.int64
