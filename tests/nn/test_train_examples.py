"""The training examples end to end: the digits MLP (the main job) reaches >= 95% held-out
accuracy in its --quick mode and round-trips its checkpoint; the transformer's loss falls."""

import contextlib
import struct
import time
import zlib
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import load_module

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _example(name: str):
    return load_module(EXAMPLES / f"{name}.py", f"example_{name}")


def _one_blas_thread():
    """The examples' small matrices run fastest on one BLAS thread, and stall badly with more
    when other processes hold the cores (the scripts set OPENBLAS_NUM_THREADS themselves; in
    this process NumPy is already loaded). threadpoolctl comes with scikit-learn."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(1)


def _png_size(path: Path) -> tuple:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and zlib.crc32(data[12:16 + length]) == struct.unpack(
        ">I", data[16 + length:20 + length])[0]
    return struct.unpack(">II", data[16:24])


def test_digits_quick_reaches_95_percent(tmp_path, capsys):
    pytest.importorskip("sklearn")
    digits = _example("train_digits")
    t0 = time.perf_counter()
    with _one_blas_thread():
        result = digits.main(["--quick", "--device", "cpu", "--checkpoint",
                              str(tmp_path / "digits.tg"), "--plot", str(tmp_path / "loss.png")])
    elapsed = time.perf_counter() - t0
    out = capsys.readouterr().out
    assert result["accuracy"] >= 0.95, out
    assert result["reloaded_accuracy"] == result["accuracy"]
    assert "held-out accuracy" in out and "epoch  15/15 [" in out
    assert result["losses"][-1] < 0.5 * result["losses"][0]
    assert (tmp_path / "digits.tg").stat().st_size > 0
    assert _png_size(tmp_path / "loss.png")[0] > 0
    assert elapsed < 60, f"--quick took {elapsed:.1f} s"


def test_digits_cnn_reaches_97_percent():
    """The CNN example: Conv2d, BatchNorm2d, pooling, DataLoader, OneCycleLR and gradient
    clipping together reach the issue's bar on held-out digits."""
    pytest.importorskip("sklearn")
    cnn = _example("train_digits_cnn")
    with _one_blas_thread():
        r = cnn.train("cpu", verbose=False)
    assert r["accuracy"] >= 0.97
    assert r["losses"][-1] < 0.5 * r["losses"][0]
    lrs = r["lrs"]  # one cycle: up from max_lr / 25 to max_lr, then down to about zero
    peak = int(np.argmax(lrs))
    assert 0.2 * len(lrs) < peak < 0.4 * len(lrs)
    assert lrs[0] == pytest.approx(0.05 / 25, rel=0.05) and lrs[-1] < 1e-5
    bn = r["model"].features[1]
    assert bn.num_batches_tracked.item() == len(lrs)  # running statistics were tracked


def test_transformer_loss_decreases():
    tt = _example("train_transformer")
    with _one_blas_thread():
        r = tt.train("cpu", steps=40, context=32, batch=16, dim=32, heads=2, layers=1, lr=1e-2,
                     verbose=False)
    losses = r["losses"]
    assert np.mean(losses[-5:]) < np.mean(losses[:5]) - 0.5
    assert r["final_loss"] < r["baseline"]  # already below the unigram entropy
    assert 2.5 < r["baseline"] < 4.0


def test_transformer_top_k_sampling():
    tt = _example("train_transformer")
    tg = tt.tg
    tg.manual_seed(0)
    model = tt.CharTransformer(vocab=12, context=8, dim=16, heads=2, layers=1)
    prompt = np.array([1, 2, 3])
    a = tt.sample(model, prompt, 20, "cpu", top_k=3, seed=5)
    assert a == tt.sample(model, prompt, 20, "cpu", top_k=3, seed=5)  # the generator's seed
    assert len(a) == 20 and all(0 <= i < 12 for i in a)
    # with top_k=1 sampling is greedy: always the most likely next token
    greedy = tt.sample(model, prompt, 5, "cpu", top_k=1, seed=1)
    with tg.no_grad():
        first = model(tg.tensor(prompt[None, :]))[0, -1].argmax().item()
    assert greedy[0] == first
