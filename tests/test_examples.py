"""The walking skeleton's end-to-end job: the MLP trains on the CPU and, with device="cuda"
(the emulated device in CI, a GPU when lent), with the same losses within float32 tolerance."""

import runpy
import sys
from pathlib import Path

import numpy as np

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _train_mlp():
    return runpy.run_path(str(EXAMPLES / "train_mlp.py"))["train"]


def test_mlp_loss_falls_on_cpu():
    losses = _train_mlp()("cpu", steps=60, verbose=False)
    assert losses[-1] < 0.2 * losses[0]


def test_mlp_trains_the_same_on_cuda_and_never_imports_torch():
    train = _train_mlp()
    cpu = np.array(train("cpu", steps=8, verbose=False))
    cuda = np.array(train("cuda", steps=8, verbose=False))
    np.testing.assert_allclose(cuda, cpu, rtol=2e-4)
    assert cuda[-1] < cuda[0]
    assert "torch" not in sys.modules
