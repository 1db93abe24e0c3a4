"""Shared pieces of the quantization tests: the quantized-tensor API (from the top of
tritongrad once it re-exports it, else from tritongrad.ao._qtensor) and a small conv net
written once for tritongrad and torch."""

import numpy as np

import tritongrad as tg
from tritongrad.ao import _qtensor

# the functions and dtypes PyTorch has at the top (torch.quantize_per_tensor, torch.qint8)
Q = tg if hasattr(tg, "quantize_per_tensor") else _qtensor


def build_net(lib, stubs):
    """QuantStub -> conv-bn-relu -> conv-relu -> flatten -> linear -> DeQuantStub."""
    nn = lib.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.quant = stubs.QuantStub()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.bn = nn.BatchNorm2d(8)
            self.relu = nn.ReLU()
            self.conv2 = nn.Conv2d(8, 4, 3, stride=2)
            self.relu2 = nn.ReLU()
            self.fc = nn.Linear(4 * 3 * 3, 10)
            self.dequant = stubs.DeQuantStub()

        def forward(self, x):
            x = self.quant(x)
            x = self.relu(self.bn(self.conv(x)))
            x = self.relu2(self.conv2(x))
            x = x.reshape(x.shape[0], -1)
            return self.dequant(self.fc(x))

    return Net()


def dyadic_state(state: dict, rng) -> dict:
    """Weights k/8 (|k| <= 2), batch-norm weights 1/2 or 1 and ``running_var + eps == 1/4``
    (eps 2**-10): the float model's arithmetic on inputs j/4 (|j| <= 8) is exact (every sum
    fits float32's 24 bits), so it is the same in any library and observers see identical
    values."""
    out = {}
    for k, v in state.items():
        v = np.asarray(v)
        if v.dtype != np.float32:
            out[k] = v.copy()
        elif "running_var" in k:
            out[k] = np.full(v.shape, 0.25 - 2 ** -10, np.float32)
        elif "bn.weight" in k:
            out[k] = rng.choice(np.array([0.5, 1.0], np.float32), v.shape)
        else:
            out[k] = (rng.integers(-2, 3, v.shape) / 8).astype(np.float32)
    return out


def dyadic_input(rng, shape) -> np.ndarray:
    return (rng.integers(-8, 9, shape) / 4).astype(np.float32)


FUSE = [["conv", "bn", "relu"], ["conv2", "relu2"]]
