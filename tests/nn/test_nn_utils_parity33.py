"""nn.utils against PyTorch 2.13 (sweep 33): weight_norm's norm_except_dim for 1-D weights and
negative dims, parametrize.transfer_parametrizations_and_params, parameters_to_vector /
vector_to_parameters edge cases and clip_grads_with_norm_'s argument check. NumPy references
run everywhere; the torch comparisons only where torch is installed."""

import numpy as np
import pytest

import tritongrad as tg

P = tg.nn.utils.parametrize


def _linear(lib, seed: int = 0, n_in: int = 4, n_out: int = 3):
    rng = np.random.RandomState(seed)
    m = lib.nn.Linear(n_in, n_out)
    with lib.no_grad():
        for p in m.parameters():
            p.copy_(lib.tensor(rng.randn(*p.shape), dtype=p.dtype))
    return m


def _np(t) -> np.ndarray:
    return np.asarray(t.detach().tolist(), dtype=np.float64)


# -- weight_norm: norm_except_dim ------------------------------------------------------------

@pytest.mark.parametrize("api", ["old", "new"])
def test_weight_norm_of_a_1d_weight_is_elementwise(api):
    # a 1-D weight with dim=0 has one element per "row": g = |b| (shape (3,)), w = b, and the
    # direction gets no gradient (w does not depend on v's magnitude)
    m = _linear(tg)
    bias = _np(m.bias)
    if api == "old":
        with pytest.warns(FutureWarning):
            tg.nn.utils.weight_norm(m, "bias")
        g, v = m.bias_g, m.bias_v
    else:
        tg.nn.utils.parametrizations.weight_norm(m, "bias")
        g, v = m.parametrizations.bias.original0, m.parametrizations.bias.original1
    assert tuple(g.shape) == (3,)
    np.testing.assert_allclose(_np(g), np.abs(bias), rtol=1e-6)
    x = tg.tensor(np.random.RandomState(1).randn(5, 4), dtype=tg.float32)
    m(x).sum().backward()
    np.testing.assert_allclose(_np(m.bias), bias, rtol=1e-6)
    np.testing.assert_allclose(_np(v.grad), 0.0, atol=1e-6)
    np.testing.assert_allclose(_np(g.grad), 5.0 * np.sign(bias), rtol=1e-6)


@pytest.mark.parametrize("dim,shape", [(0, (3, 1)), (-2, (3, 1)), (1, (1, 4)), (-1, ())])
def test_norm_except_dim_negative_dims(dim, shape):
    # -1 is the whole tensor (PyTorch's convention); another negative dim counts from the end
    w = np.random.RandomState(2).randn(3, 4)
    m = _linear(tg)
    with tg.no_grad():
        m.weight.copy_(tg.tensor(w, dtype=tg.float32))
    tg.nn.utils.parametrizations.weight_norm(m, dim=dim)
    g = m.parametrizations.weight.original0
    assert tuple(g.shape) == shape
    axis = {0: 1, -2: 1, 1: 0, -1: None}[dim]
    np.testing.assert_allclose(_np(g), np.sqrt((w * w).sum(axis=axis)).reshape(shape),
                               rtol=1e-5)
    np.testing.assert_allclose(_np(m.weight), w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dim,name", [(2, "weight"), (-3, "weight"), (-2, "bias")])
def test_weight_norm_dim_out_of_range(dim, name):
    with pytest.raises(IndexError, match="Dimension out of range"):
        tg.nn.utils.parametrizations.weight_norm(_linear(tg), name, dim=dim)


def test_norm_except_dim_middle_dim_of_a_conv_weight():
    w = np.random.RandomState(3).randn(2, 3, 4, 5)
    g = tg.nn.utils.parametrizations.norm_except_dim(tg.tensor(w), 2, 2)
    assert tuple(g.shape) == (1, 1, 4, 1)
    np.testing.assert_allclose(_np(g).reshape(-1), np.sqrt((w * w).sum(axis=(0, 1, 3))),
                               rtol=1e-12)


# -- parametrize.transfer_parametrizations_and_params -----------------------------------------

class _Scale(tg.nn.Module):
    def forward(self, x):
        return x * 2.0

    def right_inverse(self, a):
        return a / 2.0


class _Split(tg.nn.Module):
    def forward(self, a, b):
        return a + b

    def right_inverse(self, x):
        return x * 0.25, x * 0.75


def test_transfer_parametrizations_and_params_shares_originals():
    a, b = _linear(tg, 0), _linear(tg, 1)
    w = _np(a.weight)
    P.register_parametrization(a, "weight", _Scale())
    P.register_parametrization(a, "bias", _Split())
    assert P.transfer_parametrizations_and_params(a, b) is b
    assert P.is_parametrized(b, "weight") and P.is_parametrized(b, "bias")
    assert b.parametrizations.weight.original is a.parametrizations.weight.original
    assert b.parametrizations.bias.original1 is a.parametrizations.bias.original1
    np.testing.assert_allclose(_np(b.weight), w, rtol=1e-6)
    assert sorted(b.state_dict()) == sorted(a.state_dict())


def test_transfer_one_tensor_into_a_module_without_it():
    a, b = _linear(tg), tg.nn.Module()
    P.register_parametrization(a, "weight", _Split())
    P.register_parametrization(a, "bias", _Scale())
    P.transfer_parametrizations_and_params(a, b, "weight")
    np.testing.assert_allclose(_np(b.weight), _np(a.weight), rtol=1e-6)
    assert not P.is_parametrized(b, "bias")
    assert sorted(b.state_dict()) == ["parametrizations.weight.original0",
                                      "parametrizations.weight.original1"]


def test_transfer_from_an_unparametrized_module_does_nothing():
    a, b = _linear(tg), _linear(tg, 1)
    assert P.transfer_parametrizations_and_params(a, b) is b
    assert not P.is_parametrized(b)
    assert "transfer_parametrizations_and_params" in P.__all__


# -- parameters_to_vector / vector_to_parameters / clip_grads_with_norm_ ------------------------

def test_parameters_to_vector_of_nothing_is_a_value_error():
    with pytest.raises(ValueError, match="non-empty"):
        tg.nn.utils.parameters_to_vector([])


def test_vector_to_parameters_ignores_a_longer_vector_and_rejects_a_shorter_one():
    ps = [tg.zeros(2, 3, requires_grad=True), tg.zeros(4, requires_grad=True)]
    tg.nn.utils.vector_to_parameters(tg.arange(12, dtype=tg.float32), ps)
    np.testing.assert_array_equal(_np(ps[0]), np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(_np(ps[1]), np.arange(6.0, 10.0))
    with pytest.raises(RuntimeError):
        tg.nn.utils.vector_to_parameters(tg.arange(9, dtype=tg.float32), ps)


def test_clip_grads_with_norm_needs_a_tensor_total():
    p = tg.ones(3, requires_grad=True)
    p.grad = tg.tensor([3.0, 4.0, 0.0])
    with pytest.raises(TypeError, match="total_norm"):
        tg.nn.utils.clip_grads_with_norm_([p], 1.0, 5.0)
    tg.nn.utils.clip_grads_with_norm_([p], 1.0, tg.tensor(5.0))
    np.testing.assert_allclose(_np(p.grad), [0.6, 0.8, 0.0], rtol=1e-5)
    q = tg.ones(3, requires_grad=True)  # (no gradients: nothing to check, as PyTorch)
    tg.nn.utils.clip_grads_with_norm_([q], 1.0, 5.0)


# -- against torch ---------------------------------------------------------------------------

@pytest.mark.parametrize("api", ["old", "new"])
@pytest.mark.parametrize("dim", [0, -2, None])
def test_weight_norm_matches_torch(api, dim):
    torch = pytest.importorskip("torch")
    out = {}
    for lib in (torch, tg):
        m = _linear(lib)
        for name, d in (("weight", dim), ("bias", 0 if dim == -2 else dim)):
            if api == "old":
                with pytest.warns(FutureWarning):
                    lib.nn.utils.weight_norm(m, name, dim=d)
            else:
                lib.nn.utils.parametrizations.weight_norm(m, name, dim=d)
        x = lib.tensor(np.random.RandomState(1).randn(5, 4), dtype=lib.float32)
        y = m(x)
        (y * y).sum().backward()
        out[lib.__name__] = ([_np(y)], {k: (tuple(p.shape), _np(p.grad))
                                        for k, p in m.named_parameters()})
    (y_t, g_t), (y_g, g_g) = out["torch"], out["tritongrad"]
    np.testing.assert_allclose(y_g[0], y_t[0], rtol=1e-5, atol=1e-6)
    assert sorted(g_t) == sorted(g_g)
    for k in g_t:
        assert g_t[k][0] == g_g[k][0], k
        np.testing.assert_allclose(g_g[k][1], g_t[k][1], rtol=1e-4, atol=1e-5, err_msg=k)


def test_transfer_matches_torch():
    torch = pytest.importorskip("torch")
    import torch.nn.utils.parametrize as TP

    class TScale(torch.nn.Module):
        def forward(self, x):
            return x * 2.0

        def right_inverse(self, a):
            return a / 2.0

    keys = {}
    for lib, mod, scale in ((torch, TP, TScale), (tg, P, _Scale)):
        a, b = _linear(lib, 0), _linear(lib, 1)
        mod.register_parametrization(a, "weight", scale())
        mod.transfer_parametrizations_and_params(a, b)
        keys[lib.__name__] = (sorted(b.state_dict()), _np(b.weight))
    assert keys["torch"][0] == keys["tritongrad"][0]
    np.testing.assert_allclose(keys["tritongrad"][1], keys["torch"][1], rtol=1e-6)


def test_pytorch_submodule_paths():
    # PyTorch's own module paths: code importing from them runs unchanged
    from tritongrad.nn.utils.clip_grad import clip_grad_norm, clip_grad_norm_, clip_grad_value_
    from tritongrad.nn.utils.convert_parameters import parameters_to_vector
    from tritongrad.nn.utils.init import skip_init
    from tritongrad.nn.utils.memory_format import convert_conv2d_weight_memory_format

    U = tg.nn.utils
    assert (clip_grad_norm_, clip_grad_value_, clip_grad_norm) == (
        U.clip_grad_norm_, U.clip_grad_value_, U.clip_grad_norm)
    assert parameters_to_vector is U.parameters_to_vector and skip_init is U.skip_init
    assert convert_conv2d_weight_memory_format is U.convert_conv2d_weight_memory_format
    p = tg.ones(2, requires_grad=True)
    p.grad = tg.tensor([3.0, 4.0])
    total = clip_grad_norm_([p], 1.0)
    np.testing.assert_allclose(float(total), 5.0, rtol=1e-6)
    np.testing.assert_allclose(_np(p.grad), [0.6, 0.8], rtol=1e-5)
