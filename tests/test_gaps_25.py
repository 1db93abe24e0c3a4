"""Bad input and edge cases found in session 25's sweeps (PyTorch 2.13 beside tritongrad on
the same inputs): each case here failed before its fix with an error from deep inside (an
AttributeError naming a list's missing attribute), silently returned its non-tensor input, or
gave a result PyTorch does not give."""

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.nn import functional as F

RNG = np.random.default_rng(25)


def _x(*shape):
    return tg.tensor(RNG.standard_normal(shape).astype(np.float32))


# -- nn.functional's composites take a Tensor first: PyTorch's TypeError naming the op --------

_FIRST_ARG = {  # op -> its other positional arguments (valid ones)
    "leaky_relu": (), "elu": (), "softplus": (), "mish": (), "hardtanh": (), "relu6": (),
    "selu": (), "celu": (), "softsign": (), "hardswish": (), "hardsigmoid": (),
    "logsigmoid": (), "glu": (), "tanhshrink": (), "softshrink": (), "hardshrink": (),
    "rrelu": (), "dropout": (), "alpha_dropout": (), "feature_alpha_dropout": (),
    "dropout1d": (), "dropout2d": (), "dropout3d": (), "local_response_norm": (2,),
    "pixel_shuffle": (2,), "pixel_unshuffle": (2,), "channel_shuffle": (2,), "pdist": (),
    "unfold": (2,), "fold": ((4, 4), 2), "instance_norm": (), "interpolate": (None, 2.0),
    "pad": ((1, 1),), "rms_norm": ((2,),), "max_pool1d": (2,), "max_pool2d": (2,),
    "max_pool3d": (2,), "avg_pool1d": (2,), "avg_pool2d": (2,), "avg_pool3d": (2,),
    "adaptive_max_pool1d": (2,), "adaptive_max_pool2d": (2,), "adaptive_max_pool3d": (2,),
    "adaptive_avg_pool1d": (2,), "adaptive_avg_pool2d": (2,), "adaptive_avg_pool3d": (2,),
}


@pytest.mark.parametrize("op", sorted(_FIRST_ARG))
@pytest.mark.parametrize("bad", [[[1.0, 2.0]], np.ones((2, 3, 4, 4))], ids=["list", "ndarray"])
def test_functional_input_must_be_a_tensor(op, bad):
    with pytest.raises(TypeError, match=rf"{op}\(\): argument 'input' must be Tensor, not "
                                        rf"{type(bad).__name__}"):
        getattr(F, op)(bad, *_FIRST_ARG[op])


@pytest.mark.parametrize("op", ["max_unpool1d", "max_unpool2d"])
def test_max_unpool_indices_must_be_a_tensor(op):
    x = _x(1, 2, 4) if op == "max_unpool1d" else _x(1, 2, 4, 4)
    with pytest.raises(TypeError, match=rf"{op}\(\): argument 'indices' must be Tensor, not "
                                        r"NoneType"):
        getattr(F, op)(x, None, 2)


def test_the_checks_keep_the_results():
    """The added checks sit before the computations they guard: values as before (NumPy
    references)."""
    x = _x(2, 3, 4, 4)
    a = x.numpy().astype(np.float64)
    np.testing.assert_allclose(F.leaky_relu(x, 0.2).numpy(), np.where(a > 0, a, 0.2 * a),
                               rtol=1e-6)
    np.testing.assert_allclose(F.softsign(x).numpy(), a / (1 + np.abs(a)), rtol=1e-6)
    np.testing.assert_allclose(F.max_pool2d(x, 2).numpy(),
                               a.reshape(2, 3, 2, 2, 2, 2).max(axis=(3, 5)), rtol=1e-6)
    np.testing.assert_allclose(F.avg_pool2d(x, 2).numpy(),
                               a.reshape(2, 3, 2, 2, 2, 2).mean(axis=(3, 5)), rtol=1e-6)
    np.testing.assert_allclose(F.pad(x, (1, 1)).numpy(),
                               np.pad(a, ((0, 0), (0, 0), (0, 0), (1, 1))), rtol=1e-6)
    assert F.dropout(x, 0.5, training=False) is x
