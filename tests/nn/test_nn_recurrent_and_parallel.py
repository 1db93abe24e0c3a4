"""nn.LSTM, nn.GRU, nn.RNN and the cells (nn/rnn.py), InstanceNorm1d/2d/3d and
F.instance_norm, F.threshold, and nn.DataParallel, against NumPy float64 references and hand-derived values."""

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import assert_grads_match, host
from tritongrad import nn

F = nn.functional
rng = np.random.default_rng(5)


# -- LSTM --------------------------------------------------------------------------------------

def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


def _lstm_reference(lstm: nn.LSTM, x: np.ndarray, h0: np.ndarray, c0: np.ndarray):
    """PyTorch's documented LSTM equations in NumPy: x (L, N, H_in) -> output, (h_n, c_n)."""
    p = {n: host(t) for n, t in lstm.named_parameters()}
    dirs = 2 if lstm.bidirectional else 1
    hs, cs = [], []
    layer_in = x
    for layer in range(lstm.num_layers):
        outs = []
        for d in range(dirs):
            sfx = f"_l{layer}" + ("_reverse" if d else "")
            h, c = h0[layer * dirs + d], c0[layer * dirs + d]
            ys = [None] * len(layer_in)
            steps = range(len(layer_in) - 1, -1, -1) if d else range(len(layer_in))
            for t in steps:
                z = layer_in[t] @ p["weight_ih" + sfx].T + h @ p["weight_hh" + sfx].T
                if lstm.bias:
                    z = z + p["bias_ih" + sfx] + p["bias_hh" + sfx]
                i, f, g, o = np.split(z, 4, axis=-1)
                c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
                h = _sigmoid(o) * np.tanh(c)
                if lstm.proj_size:
                    h = h @ p["weight_hr" + sfx].T
                ys[t] = h
            outs.append(np.stack(ys))
            hs.append(h)
            cs.append(c)
        layer_in = np.concatenate(outs, -1)
    return layer_in, np.stack(hs), np.stack(cs)


@pytest.mark.parametrize("kw", [{}, {"num_layers": 2, "bidirectional": True},
                                {"num_layers": 2, "proj_size": 2, "bias": False}], ids=str)
def test_lstm_matches_the_equations(kw):
    lstm = nn.LSTM(3, 4, **kw).double()
    dirs = 2 if lstm.bidirectional else 1
    out_size = lstm.proj_size or 4
    x = rng.standard_normal((5, 2, 3))
    h0 = rng.standard_normal((dirs * lstm.num_layers, 2, out_size))
    c0 = rng.standard_normal((dirs * lstm.num_layers, 2, 4))
    out, (h, c) = lstm(tg.tensor(x), (tg.tensor(h0), tg.tensor(c0)))
    ref_out, ref_h, ref_c = _lstm_reference(lstm, x, h0, c0)
    assert tuple(out.shape) == (5, 2, dirs * out_size)
    for got, ref in ((out, ref_out), (h, ref_h), (c, ref_c)):
        np.testing.assert_allclose(host(got), ref, rtol=1e-12, atol=1e-12)


def test_lstm_parameters_batch_first_unbatched_and_default_state():
    lstm = nn.LSTM(3, 4, num_layers=2, bidirectional=True, batch_first=True)
    names = [n for n, _ in lstm.named_parameters()]
    assert names[:5] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0",
                         "weight_ih_l0_reverse"]
    assert tuple(lstm.weight_ih_l1.shape) == (16, 8) and tuple(lstm.weight_hh_l0.shape) == (16, 4)
    bound = 1 / np.sqrt(4)
    assert all(np.abs(host(p)).max() <= bound for p in lstm.parameters())
    x = tg.randn(2, 5, 3)
    out, (h, _) = lstm(x)
    assert tuple(out.shape) == (2, 5, 8) and tuple(h.shape) == (4, 2, 4)
    lstm.batch_first = False  # the same weights over the transposed sequence
    out_t, _ = lstm(x.transpose(0, 1))
    np.testing.assert_allclose(host(out_t.transpose(0, 1)), host(out), rtol=1e-6)
    lstm.batch_first = True
    single = nn.LSTM(3, 4)
    seq = tg.randn(5, 3)
    o1, (h1, _) = single(seq)
    o2, _ = single(seq.unsqueeze(1))
    np.testing.assert_allclose(host(o1), host(o2)[:, 0], rtol=1e-6)
    assert tuple(h1.shape) == (1, 4)
    assert repr(lstm) == "LSTM(3, 4, num_layers=2, batch_first=True, bidirectional=True)"


def test_lstm_gradients_and_errors():
    lstm = nn.LSTM(2, 3, num_layers=2, proj_size=2).double()
    x = tg.tensor(rng.standard_normal((3, 1, 2)))

    assert_grads_match(lambda v: lstm(v)[0], [x])
    out = lstm(x.requires_grad_(True))[0].sum()
    out.backward()
    assert all(p.grad is not None for p in lstm.parameters())
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. "
                                           "Expected 2, got 3"):
        lstm(tg.randn(3, 1, 3, dtype=tg.float64))
    with pytest.raises(RuntimeError, match=r"Expected hidden\[0\] size \(2, 1, 2\), got "
                                           r"\[2, 1, 3\]"):
        lstm(x, (tg.zeros(2, 1, 3, dtype=tg.float64), tg.zeros(2, 1, 3, dtype=tg.float64)))
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        nn.LSTM(2, 3, proj_size=3)
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        nn.LSTM(2, 3, dropout=0.5)


# -- RNN and GRU, and the cells ----------------------------------------------------------------

def _step(mode, x, h, p, sfx, hidden):
    """One step of PyTorch's documented equations (RNN_TANH, RNN_RELU, GRU) in NumPy."""
    gi = x @ p["weight_ih" + sfx].T + p.get("bias_ih" + sfx, 0)
    gh = h @ p["weight_hh" + sfx].T + p.get("bias_hh" + sfx, 0)
    if mode == "GRU":
        r = _sigmoid(gi[:, :hidden] + gh[:, :hidden])
        z = _sigmoid(gi[:, hidden:2 * hidden] + gh[:, hidden:2 * hidden])
        n = np.tanh(gi[:, 2 * hidden:] + r * gh[:, 2 * hidden:])
        return (1 - z) * n + z * h
    return np.tanh(gi + gh) if mode == "RNN_TANH" else np.maximum(gi + gh, 0)


def _rnn_reference(rnn, x, h0):
    p = {n: host(t) for n, t in rnn.named_parameters()}
    dirs = 2 if rnn.bidirectional else 1
    hs, layer_in = [], x
    for layer in range(rnn.num_layers):
        outs = []
        for d in range(dirs):
            sfx = f"_l{layer}" + ("_reverse" if d else "")
            h = h0[layer * dirs + d]
            ys = [None] * len(layer_in)
            for t in (range(len(layer_in) - 1, -1, -1) if d else range(len(layer_in))):
                h = ys[t] = _step(rnn.mode, layer_in[t], h, p, sfx, rnn.hidden_size)
            outs.append(np.stack(ys))
            hs.append(h)
        layer_in = np.concatenate(outs, -1)
    return layer_in, np.stack(hs)


@pytest.mark.parametrize("cls, kw", [(nn.GRU, {}), (nn.GRU, {"num_layers": 2,
                                                             "bidirectional": True}),
                                     (nn.RNN, {"bias": False}),
                                     (nn.RNN, {"nonlinearity": "relu", "num_layers": 2})],
                         ids=lambda v: getattr(v, "__name__", str(v)))
def test_rnn_and_gru_match_the_equations(cls, kw):
    rnn = cls(3, 4, **kw).double()
    dirs = 2 if rnn.bidirectional else 1
    x = rng.standard_normal((5, 2, 3))
    h0 = rng.standard_normal((dirs * rnn.num_layers, 2, 4))
    out, h = rnn(tg.tensor(x), tg.tensor(h0))
    ref_out, ref_h = _rnn_reference(rnn, x, h0)
    np.testing.assert_allclose(host(out), ref_out, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(host(h), ref_h, rtol=1e-12, atol=1e-12)
    o1, h1 = rnn(tg.tensor(x[:, 0]), tg.tensor(h0[:, 0]))  # unbatched
    np.testing.assert_allclose(host(o1), ref_out[:, 0], rtol=1e-12, atol=1e-12)
    assert tuple(h1.shape) == (dirs * rnn.num_layers, 4)
    assert_grads_match(lambda v: rnn(v)[0], [tg.tensor(x[:2])])


def test_rnn_and_gru_parameters_and_errors():
    gru = nn.GRU(3, 5, num_layers=2, batch_first=True)
    assert tuple(gru.weight_ih_l0.shape) == (15, 3) and tuple(gru.weight_hh_l1.shape) == (15, 5)
    assert repr(gru) == "GRU(3, 5, num_layers=2, batch_first=True)"
    out, h = gru(tg.randn(2, 7, 3))
    assert tuple(out.shape) == (2, 7, 5) and tuple(h.shape) == (2, 2, 5)
    rnn = nn.RNN(3, 4, nonlinearity="relu")
    assert rnn.mode == "RNN_RELU" and tuple(rnn.weight_hh_l0.shape) == (4, 4)
    with pytest.raises(ValueError, match="Unknown nonlinearity 'sigmoid'"):
        nn.RNN(3, 4, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM"):
        nn.RNNBase("GRU", 3, 4, proj_size=2)
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(1, 2, 4\), got \[1, 2, 3\]"):
        rnn(tg.randn(5, 2, 3), tg.zeros(1, 2, 3))
    with pytest.raises(RuntimeError, match="For batched 3-D input, hx should also be 3-D"):
        rnn(tg.randn(5, 2, 3), tg.zeros(2, 4))


@pytest.mark.parametrize("cls", [nn.RNNCell, nn.GRUCell, nn.LSTMCell])
def test_cells_are_one_step_of_their_layer(cls):
    cell = cls(3, 4).double()
    layer = {nn.RNNCell: nn.RNN, nn.GRUCell: nn.GRU, nn.LSTMCell: nn.LSTM}[cls](3, 4).double()
    with tg.no_grad():
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(layer, name + "_l0").copy_(getattr(cell, name))
    x, h0, c0 = (tg.tensor(rng.standard_normal(s)) for s in ((2, 3), (2, 4), (2, 4)))
    if cls is nn.LSTMCell:
        h, c = cell(x, (h0, c0))
        _, (hl, cl) = layer(x.unsqueeze(0), (h0.unsqueeze(0), c0.unsqueeze(0)))
        np.testing.assert_allclose(host(c), host(cl[0]), rtol=1e-12)
        assert cell(x[0])[0].shape == (4,)  # unbatched, zero state
    else:
        h = cell(x, h0)
        _, hl = layer(x.unsqueeze(0), h0.unsqueeze(0))
        assert cell(x[0]).shape == (4,)
    np.testing.assert_allclose(host(h), host(hl[0]), rtol=1e-12)
    assert repr(cls(3, 4, bias=False)) == f"{cls.__name__}(3, 4, bias=False)"
    assert cls(3, 4, bias=False).bias_ih is None
    with pytest.raises(RuntimeError, match="input has inconsistent input_size: got 5 "
                                           "expected 3"):
        cell(tg.randn(2, 5, dtype=tg.float64))


def test_lstm_dropout_between_layers_only_in_training():
    lstm = nn.LSTM(2, 3, num_layers=2, dropout=0.5)
    x = tg.randn(4, 2, 2)
    lstm.eval()
    a, b = lstm(x)[0], lstm(x)[0]
    np.testing.assert_array_equal(host(a), host(b))


# -- instance norm -----------------------------------------------------------------------------

def test_instance_norm2d_values_running_stats_and_eval():
    m = nn.InstanceNorm2d(3, affine=True, track_running_stats=True, momentum=0.2).double()
    nn.init.normal_(m.weight)
    nn.init.normal_(m.bias)
    x = rng.standard_normal((2, 3, 4, 5)) * 3 + 1
    mean, var = x.mean(axis=(2, 3), keepdims=True), x.var(axis=(2, 3), keepdims=True)
    w, b = host(m.weight)[:, None, None], host(m.bias)[:, None, None]
    ref = (x - mean) / np.sqrt(var + 1e-5) * w + b
    np.testing.assert_allclose(host(m(tg.tensor(x))), ref, rtol=1e-12, atol=1e-12)
    unbiased = x.var(axis=(2, 3), ddof=1).mean(0)
    np.testing.assert_allclose(host(m.running_mean), 0.2 * mean.mean(0).ravel(), rtol=1e-12)
    np.testing.assert_allclose(host(m.running_var), 0.8 + 0.2 * unbiased, rtol=1e-12)
    m.eval()  # eval: the running statistics, per channel
    rm, rv = host(m.running_mean)[:, None, None], host(m.running_var)[:, None, None]
    np.testing.assert_allclose(host(m(tg.tensor(x))), (x - rm) / np.sqrt(rv + 1e-5) * w + b,
                               rtol=1e-12, atol=1e-12)


def test_instance_norm_defaults_unbatched_gradients_and_checks():
    m = nn.InstanceNorm1d(2)
    assert m.weight is None and m.running_mean is None
    x = tg.tensor(rng.standard_normal((2, 2, 6)))
    np.testing.assert_allclose(host(m(x[0])), host(m(x))[0], rtol=1e-12)
    assert_grads_match(lambda v: F.instance_norm(v) * tg.arange(6.0, dtype=tg.float64), [x])
    with pytest.warns(UserWarning, match="input's size at dim=1 does not match num_features"):
        nn.InstanceNorm2d(2)(tg.randn(1, 1, 1, 2))
    with pytest.raises(ValueError, match=r"expected input's size at dim=1 to match "
                                         r"num_features \(2\), but got: 1"):
        nn.InstanceNorm2d(2, affine=True)(tg.randn(1, 1, 1, 2))
    with pytest.raises(ValueError, match=r"expected 4D or 5D input \(got 3D input\)"):
        nn.InstanceNorm3d(2)(tg.randn(2, 2, 2))
    with pytest.raises(ValueError, match="Expected more than 1 spatial element"):
        F.instance_norm(tg.randn(2, 3, 1))


def test_instance_norm_then_inplace_relu_double_backward():
    # PyTorch issue 10532: create_graph through instance norm and an in-place ReLU on its output
    net = nn.Sequential(nn.InstanceNorm2d(1), nn.ReLU(True))
    x = tg.tensor([[[[1.0, 3.0]]]], requires_grad=True)
    (g,) = tg.autograd.grad(net(x).pow(2), [x], grad_outputs=x.new_ones(x.shape),
                            create_graph=True)
    (gg,) = tg.autograd.grad(g.sum(), [x])
    assert gg.shape == x.shape and np.isfinite(host(gg)).all()


# -- threshold -----------------------------------------------------------------------------------

def test_threshold_values_gradients_and_nodes(device):
    a = np.array([-1.0, 0.5, 1.0, 2.0, np.nan])
    x = tg.tensor(a, device=device, requires_grad=True)
    y = F.threshold(x, 1.0, -7.0)
    np.testing.assert_array_equal(host(y), np.where(a <= 1.0, -7.0, a))
    assert type(y.grad_fn).__name__ == "ThresholdBackward0"
    v = tg.ones_like(y).requires_grad_(True)  # (g is linear in v: recorded through it)
    (g,) = tg.autograd.grad(y, x, v, create_graph=True)
    np.testing.assert_array_equal(host(g), [0, 0, 0, 1, 1])  # NaN passes the gradient
    assert type(g.grad_fn).__name__ == "ThresholdBackwardBackward0"
    z = (x * 1)
    assert F.threshold(z, 0.0, 0.0, inplace=True) is z
    assert type(z.grad_fn).__name__ == "ThresholdBackward1"
    z.sum().backward()
    np.testing.assert_array_equal(host(x.grad), [0, 1, 1, 1, 1])


def test_threshold_module():
    m = nn.Threshold(0.1, 20.0)
    np.testing.assert_array_equal(host(m(tg.tensor([0.0, 0.1, 0.5]))), [20.0, 20.0, 0.5])
    assert repr(m) == "Threshold(threshold=0.1, value=20.0)"
    x = tg.tensor([-1.0, 1.0])
    assert nn.Threshold(0.0, 0.0, inplace=True)(x) is x and x.tolist() == [0.0, 1.0]


# -- DataParallel --------------------------------------------------------------------------------

def test_data_parallel_without_cuda_calls_the_module_in_this_thread(monkeypatch):
    monkeypatch.setattr(tg.cuda, "is_available", lambda: False)
    inner = nn.Linear(3, 2)
    model = nn.DataParallel(inner)
    assert model.module is inner and model.device_ids == []
    x = tg.randn(4, 3, requires_grad=True)
    packed = []
    with tg.autograd.graph.saved_tensors_hooks(lambda t: packed.append(1) or t, lambda t: t):
        out = model(x)
    assert packed  # the caller's thread-local hooks saw the module's saved tensors
    np.testing.assert_array_equal(host(out), host(inner(x)))
    assert list(dict(model.named_parameters())) == ["module.weight", "module.bias"]


def test_data_parallel_one_device_moves_module_inputs_and_outputs():
    if not tg.cuda.is_available():
        pytest.skip("no CUDA device, emulated or real")
    inner = nn.Linear(3, 2)
    model = nn.DataParallel(inner, device_ids=[0])
    assert inner.weight.device.type == "cuda"
    out = model(tg.randn(4, 3))  # a CPU input goes to the module's device
    assert out.device.type == "cuda" and tuple(out.shape) == (4, 2)
    out.sum().backward()
    assert inner.weight.grad is not None
    with pytest.raises(NotImplementedError, match="more than one device"):
        nn.DataParallel(nn.Linear(3, 2), device_ids=[0, 1])
