"""tritongrad.utils.tensorboard.SummaryWriter: tensors logged through tensorboardX, read back
from the event file's records."""

import struct

import numpy as np
import pytest

import tritongrad as tg

tbx = pytest.importorskip("tensorboardX")
from tensorboardX.proto.event_pb2 import Event

from tritongrad.utils.tensorboard import SummaryWriter


def _events(log_dir):
    """{sub-directory relative to log_dir: its Events} over every event file below log_dir
    (TFRecord framing: length, its CRC, data, the data's CRC)."""
    out = {}
    for f in sorted(log_dir.rglob("*tfevents*")):
        raw, pos = f.read_bytes(), 0
        while pos < len(raw):
            (n,) = struct.unpack_from("<Q", raw, pos)
            out.setdefault(str(f.parent.relative_to(log_dir)), []).append(
                Event.FromString(raw[pos + 12:pos + 12 + n]))
            pos += 12 + n + 4
    return out


def _values(events):
    return [(e.step, v) for e in events if e.HasField("summary") for v in e.summary.value]


def test_scalars_histograms_images_and_text(tmp_path, device):
    w = SummaryWriter(str(tmp_path))
    losses = [tg.tensor(2.5 - i, device=device) for i in range(3)]
    for step, loss in enumerate(losses):
        w.add_scalar("loss/train", loss, step)
    w.add_scalar("lr", 0.1, 3, new_style=True)
    weights = tg.randn(1000, device=device)
    w.add_histogram("w", weights, 3)
    w.add_image("img", tg.rand(3, 4, 5, device=device), 3)
    w.add_text("note", "hello", 3)
    w.close()
    vals = _values(_events(tmp_path)["."])
    scalars = [(s, v.simple_value) for s, v in vals if v.tag == "loss/train"]
    assert scalars == [(0, 2.5), (1, 1.5), (2, 0.5)]
    assert [v.simple_value for _, v in vals if v.tag == "lr"] == [pytest.approx(0.1)]
    (hist,) = [v.histo for _, v in vals if v.tag == "w"]
    host = weights.cpu().numpy()
    assert hist.num == 1000 and hist.sum == pytest.approx(float(host.sum()), rel=1e-4, abs=1e-3)
    assert hist.min == pytest.approx(float(host.min())) and hist.max == pytest.approx(
        float(host.max()))
    (img,) = [v.image for _, v in vals if v.tag == "img"]
    assert (img.height, img.width, img.colorspace) == (4, 5, 3)
    assert any(v.tag.startswith("note") for _, v in vals)


def test_scalars_dict_and_hparams_take_tensors(tmp_path):
    w = SummaryWriter(str(tmp_path))
    w.add_scalars("run", {"a": tg.tensor(1.0), "b": tg.tensor(np.float32(2.0))}, 0)
    w.add_hparams({"lr": 0.01, "bs": 32}, {"hparam/acc": tg.tensor(0.9)})
    w.close()
    found = {(d, v.tag): v.simple_value for d, events in _events(tmp_path).items()
             for _, v in _values(events) if v.HasField("simple_value")}
    assert found[("run/a", "run")] == 1.0 and found[("run/b", "run")] == 2.0
    assert [x for (d, tag), x in found.items() if tag == "hparam/acc"] == [pytest.approx(0.9)]


def test_add_graph_says_what_is_missing(tmp_path):
    w = SummaryWriter(str(tmp_path))
    with pytest.raises(NotImplementedError, match="add_graph"):
        w.add_graph(tg.nn.Linear(2, 2), tg.randn(1, 2))
    w.close()
