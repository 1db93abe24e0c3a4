"""nn.Module's registration errors name the value's type as PyTorch's ``typename`` does."""

import re

import pytest

import tritongrad as tg


def test_parameter_and_buffer_type_errors_name_the_tensor_type():
    m = tg.nn.Module()
    with pytest.raises(TypeError, match=r"cannot assign 'tritongrad.FloatTensor' object to "
                                        r"parameter 'a' \(tritongrad.nn.Parameter or None"):
        m.register_parameter("a", tg.ones(1))
    with pytest.raises(TypeError, match=r"cannot assign 'int' object to buffer 'a'"):
        m.register_buffer("a", 3)


def test_assigning_a_module_over_a_parameter_names_its_full_type():
    m = tg.nn.Linear(2, 2)
    with pytest.raises(TypeError, match=r"cannot assign 'tritongrad\.nn\.[a-z_.]*ReLU' as "
                                        r"parameter 'weight'"):
        m.weight = tg.nn.ReLU()


def test_dotted_names():
    m = tg.nn.Module()
    with pytest.raises(KeyError, match=r'module name can\\\'t contain "\.", got: a\.b'):
        m.add_module("a.b", tg.nn.ReLU())
    with pytest.raises(KeyError) as e:
        m.register_buffer("a.b", None)
    assert str(e.value) == """'buffer name can\\'t contain "."'"""


@pytest.mark.parametrize("call, words", [
    (lambda: tg.randn(3).fmod_(None), "fmod_(): argument 'other' (position 1) must be Tensor, "
                                      "not NoneType"),
    (lambda: tg.randn(3).remainder_("a"), "remainder_(): argument 'other' (position 1) must be "
                                          "Tensor, not str"),
    (lambda: tg.eye(None), "eye(): argument 'n' (position 1) must be int, not NoneType"),
    (lambda: tg.norm_except_dim(None), "norm_except_dim(): argument 'v' (position 1) must be "
                                       "Tensor, not NoneType"),
])
def test_bad_arguments_are_type_errors_naming_the_op(call, words):
    # (these reached NumPy or an attribute lookup: AttributeError 'float' object has no
    # attribute 'fmod', NumPy's eye message)
    with pytest.raises(TypeError) as e:
        call()
    assert str(e.value) == words


def test_instance_norm_refuses_a_number_for_its_statistics():
    with pytest.raises(TypeError, match=r"instance_norm\(\): argument 'running_mean' \(position "
                                        r"2\) must be Tensor, not int"):
        tg.nn.functional.instance_norm(tg.randn(2, 3, 4), 5)


@pytest.mark.parametrize("call, words", [
    (lambda x: tg.nn.functional.bilinear(x, "a", x), "bilinear(): argument 'input2'"),
    (lambda x: tg.nn.functional.bilinear(x, x, "a"), "bilinear(): argument 'weight'"),
    (lambda x: tg.nn.functional.cosine_embedding_loss(x, "a", x),
     "cosine_embedding_loss(): argument 'input2'"),
    (lambda x: tg.nn.functional.cosine_embedding_loss(x, x, "a"),
     "cosine_embedding_loss(): argument 'target'"),
    (lambda x: tg.nn.functional.cross_entropy(x, tg.zeros(3, dtype=tg.long), weight="a"),
     "cross_entropy(): argument 'weight'"),
])
def test_functional_arguments_of_the_wrong_type(call, words):
    with pytest.raises(TypeError, match="^" + re.escape(words) + " must be Tensor, not str"):
        call(tg.randn(3, 4))
