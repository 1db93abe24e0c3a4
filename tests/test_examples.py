"""The walking skeleton's end-to-end job: the MLP trains on the CPU and, with device="cuda"
(the emulated device in CI, a GPU when lent), with the same losses within float32 tolerance;
and the digits example's optional packages (tqdm, matplotlib), present and missing."""

import re
import runpy
import sys
from pathlib import Path

import numpy as np
import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _train_mlp():
    return runpy.run_path(str(EXAMPLES / "train_mlp.py"))["train"]


def test_mlp_loss_falls_on_cpu():
    losses = _train_mlp()("cpu", steps=60, verbose=False)
    assert losses[-1] < 0.2 * losses[0]


def test_mlp_trains_the_same_on_cuda_and_never_imports_torch(torch_untouched):
    train = _train_mlp()
    cpu = np.array(train("cpu", steps=8, verbose=False))
    cuda = np.array(train("cuda", steps=8, verbose=False))
    np.testing.assert_allclose(cuda, cpu, rtol=2e-4)
    assert cuda[-1] < cuda[0]


# -- train_digits.py's optional packages: tqdm (progress) and matplotlib (--plot) ------------------

def _digits(monkeypatch, blocked=()):
    """The digits example loaded afresh, with the ``blocked`` packages unimportable."""
    pytest.importorskip("sklearn")
    for name in blocked:
        for mod in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            monkeypatch.delitem(sys.modules, mod)
        monkeypatch.setitem(sys.modules, name, None)  # import raises ImportError
    return runpy.run_path(str(EXAMPLES / "train_digits.py"))


def test_digits_progress_with_tqdm(monkeypatch, capsys):
    pytest.importorskip("tqdm")
    ns = _digits(monkeypatch)
    ns["train"]("cpu", epochs=2, batch_size=256, checkpoint=None)
    out = capsys.readouterr().out
    assert "tqdm is not installed" not in out
    # the bar's final state for each epoch, as "epoch   2/2 [<bar>] 100%, loss 1.2345"
    assert re.search(r"epoch   2/2 \[.{30}\] 100%, loss \d+\.\d{4}", out), out


def test_digits_without_tqdm_prints_one_line_per_epoch(monkeypatch, capsys):
    ns = _digits(monkeypatch, blocked=["tqdm"])
    ns["train"]("cpu", epochs=2, batch_size=256, checkpoint=None)
    out = capsys.readouterr().out
    assert "tqdm is not installed" in out
    lines = [ln for ln in out.splitlines() if ln.startswith("epoch")]
    assert len(lines) == 2 and re.fullmatch(r"epoch   1/2 \[6/6 steps\] loss \d+\.\d{4}",
                                            lines[0]), out


def test_digits_plot_without_matplotlib_exits_2_before_training(monkeypatch, capsys, tmp_path):
    ns = _digits(monkeypatch, blocked=["matplotlib"])
    with pytest.raises(SystemExit) as e:
        ns["main"](["--quick", "--plot", str(tmp_path / "loss.png")])
    assert e.value.code == 2
    captured = capsys.readouterr()
    assert "--plot needs matplotlib" in captured.err and "pip install matplotlib" in captured.err
    assert "digits:" not in captured.out  # stopped before training
    assert not (tmp_path / "loss.png").exists()


def test_digits_plot_writes_a_png_with_matplotlib(monkeypatch, tmp_path):
    pytest.importorskip("matplotlib")
    ns = _digits(monkeypatch)
    ns["plot_losses"](list(np.linspace(2.0, 0.1, 30)), 10, str(tmp_path / "c.png"))
    assert (tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
