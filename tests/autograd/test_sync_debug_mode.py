"""``tg.cuda.set_sync_debug_mode`` (runtime/sync_debug.py): implicit device-to-host waits warn
or raise; explicit synchronisation does not. A transformer training step on CUDA, with the
deferred index checks, queues everything without one wait (issue 15's "no host round trips"),
which the "error" mode proves; the loss's ``.item()`` is the step's only sync."""

from __future__ import annotations

import warnings

import pytest

import tritongrad as tg
import tritongrad.nn.functional as F
from tritongrad import nn
from tritongrad.autograd import checks


@pytest.fixture
def debug_mode(cuda_only):
    yield tg.cuda.set_sync_debug_mode
    tg.cuda.set_sync_debug_mode(0)


@pytest.fixture
def cuda_only():
    if not tg.cuda.is_available():
        pytest.skip("no CUDA device, real or emulated")


def test_modes_and_their_names(debug_mode):
    assert tg.cuda.get_sync_debug_mode() == 0
    for name, value in (("warn", 1), ("error", 2), ("default", 0), (2, 2), (0, 0)):
        debug_mode(name)
        assert tg.cuda.get_sync_debug_mode() == value
    with pytest.raises(RuntimeError, match="invalid value of debug_mode"):
        debug_mode("loud")
    with pytest.raises(RuntimeError, match="invalid value of debug_mode"):
        debug_mode(3)


def test_implicit_reads_warn_or_raise_explicit_waits_do_not(debug_mode):
    x = tg.arange(6.0, device="cuda")
    debug_mode("warn")
    with pytest.warns(UserWarning, match="called a synchronizing CUDA operation") as rec:
        x.sum().item()
    assert rec[0].filename == __file__  # (pointed at the user's line)
    debug_mode("error")
    for read in (lambda: x.sum().item(), lambda: x.cpu(), lambda: x.tolist(),
                 lambda: bool(x[1] > 0), lambda: x.nonzero()):
        with pytest.raises(RuntimeError, match="called a synchronizing CUDA operation"):
            read()
    y = x * 2  # queued work, then explicit waits: not flagged
    tg.cuda.synchronize()
    tg.cuda.current_stream().synchronize()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        debug_mode("default")
        assert y.cpu().tolist() == [0, 2, 4, 6, 8, 10]


class _Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Dropout(0.1),
                                 nn.Linear(2 * d, d))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (a.reshape(b, t, self.heads, d // self.heads).transpose(1, 2)
                   for a in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


def test_a_training_step_makes_no_implicit_sync(debug_mode):
    tg.manual_seed(0)
    vocab, d, t = 11, 16, 8
    emb, pos = nn.Embedding(vocab, d).to("cuda"), nn.Embedding(t, d).to("cuda")
    block, head = _Block(d, 2).to("cuda"), nn.Linear(d, vocab).to("cuda")
    params = [*emb.parameters(), *pos.parameters(), *block.parameters(), *head.parameters()]
    opt = tg.optim.AdamW(params, lr=1e-2)
    ids = tg.randint(0, vocab, (2, t + 1), device="cuda")
    x, y = ids[:, :-1], ids[:, 1:]
    saved = checks.get_index_check_mode()
    checks.set_index_check_mode("deferred")
    try:
        losses = []
        for _ in range(3):
            debug_mode("error")
            opt.zero_grad()
            h = emb(x) + pos(tg.arange(t, device="cuda"))
            loss = F.cross_entropy(head(block(h)).reshape(-1, vocab), y.reshape(-1))
            loss.backward()
            nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            with pytest.raises(RuntimeError, match="synchronizing CUDA operation"):
                loss.item()  # (the step's one read, flagged)
            debug_mode("default")
            losses.append(loss.item())
        assert losses[-1] < losses[0]
        checks.set_index_check_mode("sync")  # the default mode reads each index check back
        debug_mode("error")
        with pytest.raises(RuntimeError, match="synchronizing CUDA operation"):
            emb(x)
    finally:
        checks.set_index_check_mode(saved)
