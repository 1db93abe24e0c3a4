"""torch.func.replace_all_batch_norm_modules_: batch norms stop tracking running statistics in
place, so that under vmap each mapped entry is normalised with its own batch statistics
(checked against a float64 NumPy reference), in training and eval mode alike."""

from __future__ import annotations

import numpy as np

import tritongrad as tg
from tritongrad.func import replace_all_batch_norm_modules_, vmap


def _batch_norm_ref(x, weight, bias, eps=1e-5):
    mean = x.mean(0)
    var = x.var(0)  # biased, as batch norm normalises with
    return (x - mean) / np.sqrt(var + eps) * weight + bias


def test_buffers_go_and_instance_norms_stay():
    model = tg.nn.Sequential(tg.nn.Conv2d(1, 2, 1), tg.nn.BatchNorm2d(2),
                             tg.nn.InstanceNorm2d(2, track_running_stats=True),
                             tg.nn.Flatten(), tg.nn.BatchNorm1d(8))
    assert replace_all_batch_norm_modules_(model) is model
    for bn in (model[1], model[4]):
        assert bn.running_mean is None and bn.running_var is None
        assert bn.num_batches_tracked is None and bn.track_running_stats is False
    assert model[2].track_running_stats and model[2].running_mean is not None
    keys = set(model.state_dict())
    assert not any(k.startswith(("1.running", "4.running", "1.num", "4.num")) for k in keys)
    assert "2.running_mean" in keys


def test_vmap_normalises_each_entry_with_its_own_statistics():
    tg.manual_seed(0)
    model = tg.nn.Sequential(tg.nn.Linear(3, 4), tg.nn.BatchNorm1d(4)).double()
    with tg.no_grad():
        model[1].weight.copy_(tg.tensor([1.0, 2.0, 0.5, -1.0]))
        model[1].bias.copy_(tg.tensor([0.0, 0.1, -0.2, 0.3]))
    replace_all_batch_norm_modules_(model)
    x = np.random.default_rng(0).standard_normal((3, 6, 3)) * np.array([1.0, 5.0, 0.2])
    w, b = (model[0].weight.detach().numpy(), model[0].bias.detach().numpy())
    gamma, beta = model[1].weight.detach().numpy(), model[1].bias.detach().numpy()
    expected = np.stack([_batch_norm_ref(xi @ w.T + b, gamma, beta) for xi in x])
    for mode in ("train", "eval"):
        getattr(model, mode)()
        got = vmap(model)(tg.tensor(x)).detach().numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
