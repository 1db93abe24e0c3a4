"""Ordinary PyTorch programs, written as PyTorch users write them, run under tritongrad.

Each ``_<name>(torch, rec, init)`` is a small training / inference program taking the library
as ``torch``: a VAE, a GAN step with two optimizers, a packed char-LSTM, a ResNet block, a
Transformer encoder and a full seq2seq Transformer with masks, custom autograd Functions,
checkpointing with bfloat16 autocast and a GradScaler, a contrastive loss, a GNN over
``index_add_`` / ``scatter_reduce``, Hessian-vector and Gauss-Newton products through
``torch.func``, a DataLoader pipeline, a checkpoint save / resume, seeded initialisation, ...
``rec(name, value)`` logs what the program computes (losses step by step, outputs, final
parameters) and ``init(module, seed, scale)`` gives every parameter the same NumPy-drawn values
in both libraries (the programs' data is drawn with NumPy too).

``test_program`` checks tritongrad's run against PyTorch 2.13's numbers recorded here (the
first and last value of each program's loss; these run without torch) and, where torch is
installed, the whole log against a PyTorch run of the same program: every value to float32
rounding, printed output and warnings.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import io
import math
import warnings

import numpy as np
import pytest

import tritongrad as tg


def _mod(torch, name: str):
    """``torch.<name>`` imported (``from torch.<name> import ...`` in the programs)."""
    return importlib.import_module(f"{torch.__name__}.{name}")


def _set_params(torch, module, seed: int = 0, scale: float = 0.3) -> None:
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for _, p in module.named_parameters():
            p.copy_(torch.from_numpy(
                rng.standard_normal(tuple(p.shape)).astype(np.float32) * scale))


def _plain(value):
    """A logged value as NumPy (tensors, through float32 for the 16-bit floats)."""
    if hasattr(value, "detach"):
        value = value.detach()
        if str(value.dtype).endswith("float16"):  # bfloat16 / float16: no NumPy dtype
            value = value.float()
        return value.numpy()
    if isinstance(value, str):  # dtype names and messages: "torch.int64" / "tritongrad.int64"
        return value.replace("tritongrad.", "torch.")
    return value


# Warnings only one library gives, by design: PyTorch's C++ backend's once-per-process
# nested-tensor prototype notice (tritongrad's encoder fast path computes the same values
# without nested tensors), oneDNN's fallback for projected LSTMs and torch.func's internal
# jit.script deprecation; tritongrad's notice that torch.compile runs eagerly.
_ONE_SIDED_WARNINGS = ("nested tensors is in prototype", "oneDNN", "torch.jit.script",
                       "torch.compile: backend")


def _run(torch, program) -> tuple[list, str, list]:
    log: list = []
    out = io.StringIO()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(out):
        warnings.simplefilter("always")
        program(torch, lambda name, v: log.append((name, _plain(v))),
                functools.partial(_set_params, torch))
    said = [f"{w.category.__name__}: {w.message}".replace("tritongrad", "torch")
            for w in caught]
    said = [s for s in said if not any(t in s for t in _ONE_SIDED_WARNINGS)]
    return log, out.getvalue().replace("tritongrad", "torch"), said


def _same(name: str, a, b, rtol: float, atol: float) -> str | None:
    """Why the logged values differ, or None."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"{name}: {a.shape} {a.dtype} vs {b.shape} {b.dtype}"
        if a.dtype.kind in "fc":
            ok = np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
        else:
            ok = np.array_equal(a, b)
        return None if ok else f"{name}: {a.ravel()[:4]} vs {b.ravel()[:4]}"
    if isinstance(a, float) and isinstance(b, float):
        return None if math.isclose(a, b, rel_tol=rtol, abs_tol=atol) else f"{name}: {a} vs {b}"
    return None if (type(a), a) == (type(b), b) else f"{name}: {a!r} vs {b!r}"


def _adaptive_lm(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    rng = np.random.default_rng(25)
    V = 20
    tokens = torch.from_numpy(rng.integers(0, V, (4, 7)))

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(V, 8, max_norm=1.0, scale_grad_by_freq=True)
            layer = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, batch_first=True,
                                               norm_first=True, activation=F.silu)
            self.dec = nn.TransformerDecoder(layer, 1, norm=nn.LayerNorm(8))
            self.asm = nn.AdaptiveLogSoftmaxWithLoss(8, V, cutoffs=[4, 10], div_value=2.0)

        def forward(self, x):
            h = self.emb(x)
            m = nn.Transformer.generate_square_subsequent_mask(x.size(1))
            return self.dec(h, h, tgt_mask=m, memory_mask=m, tgt_is_causal=True,
                            memory_is_causal=True)

    model = LM(); init(model, 0, 0.3)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(10):
        h = model(tokens[:, :-1])
        res = model.asm(h.reshape(-1, 8), tokens[:, 1:].reshape(-1))
        opt.zero_grad(); res.loss.backward(); opt.step()
        rec("loss", res.loss.item()); rec("out", res.output)
    rec("emb_norms", model.emb.weight.norm(dim=1))
    with torch.no_grad():
        lp = model.asm.log_prob(h.reshape(-1, 8))
        rec("logprob_sum", lp.exp().sum(1)); rec("predict", model.asm.predict(h.reshape(-1, 8)))
    unfold = nn.Unfold(kernel_size=(2, 3), dilation=1, padding=1, stride=(1, 2))
    img = torch.from_numpy(rng.standard_normal((2, 3, 5, 6)).astype(np.float32))
    cols = unfold(img)
    rec("cols", cols)
    rec("fold", nn.Fold((5, 6), (2, 3), padding=1, stride=(1, 2))(cols))
    for n, p in model.named_parameters():
        rec(n, p)


def _char_lstm(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    _m = _mod(torch, "nn.utils.rnn")
    pack_padded_sequence = _m.pack_padded_sequence
    pad_packed_sequence = _m.pad_packed_sequence
    pad_sequence = _m.pad_sequence
    rng = np.random.default_rng(3)
    V, PAD = 12, 0
    seqs = [torch.from_numpy(rng.integers(1, V, size=n)) for n in (7, 3, 5, 6, 2)]
    lengths = torch.tensor([len(s) for s in seqs])
    batch = pad_sequence(seqs, batch_first=True, padding_value=PAD)

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(V, 8, padding_idx=PAD)
            self.rnn = nn.LSTM(8, 16, num_layers=2, batch_first=True, dropout=0.0)
            self.out = nn.Linear(16, V)

        def forward(self, x, lens):
            packed = pack_padded_sequence(self.emb(x), lens, batch_first=True,
                                          enforce_sorted=False)
            out, (h, c) = self.rnn(packed)
            out, out_lens = pad_packed_sequence(out, batch_first=True, total_length=x.size(1))
            return self.out(out), h, out_lens

    model = LM()
    init(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.5)
    inp, tgt = batch[:, :-1], batch[:, 1:]
    in_lens = (lengths - 1).clamp(min=1)
    for step in range(15):
        opt.zero_grad()
        logits, h, out_lens = model(inp, in_lens)
        loss = F.cross_entropy(logits.reshape(-1, V), tgt.reshape(-1), ignore_index=PAD)
        loss.backward()
        norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        opt.step()
        sched.step()
        rec("loss", loss.item()); rec("norm", norm); rec("lr", sched.get_last_lr()[0])
    rec("h", h); rec("out_lens", out_lens)
    rec("emb_pad_row", model.emb.weight[PAD])
    with torch.no_grad():
        pred = logits.argmax(-1)
        mask = tgt != PAD
        acc = (pred[mask] == tgt[mask]).float().mean().item()
    rec("acc", acc)
    print(f"acc={acc:.3f} lr={sched.get_last_lr()}")
    for n, p in model.named_parameters():
        rec(n, p)


def _ckpt_amp(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    _m = _mod(torch, "utils.checkpoint")
    checkpoint = _m.checkpoint
    checkpoint_sequential = _m.checkpoint_sequential

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList(
                [nn.Sequential(nn.Linear(16, 16), nn.LayerNorm(16), nn.SiLU()) for _ in range(3)])
            self.tail = nn.Sequential(nn.Linear(16, 16), nn.GELU(approximate="tanh"),
                                      nn.Linear(16, 16), nn.Mish())
            self.out = nn.Linear(16, 1)

        def forward(self, x):
            for b in self.blocks:
                x = x + checkpoint(b, x, use_reentrant=False)
            x = checkpoint_sequential(self.tail, 2, x, use_reentrant=False)
            return self.out(x)

    rng = np.random.default_rng(7)
    X = torch.from_numpy(rng.standard_normal((32, 16)).astype(np.float32))
    y = torch.from_numpy(rng.standard_normal((32, 1)).astype(np.float32))
    model = MLP(); init(model, 0, 0.2)
    # plain float32 with checkpointing: gradients must equal the non-checkpointed ones
    loss = F.mse_loss(model(X), y)
    grads = torch.autograd.grad(loss, list(model.parameters()))
    rec("ck_loss", loss.item())
    rec("ck_grad0", grads[0])
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 10)
    for step in range(10):
        opt.zero_grad()
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            out = model(X)
            rec("out_dtype", str(out.dtype))
            loss = F.mse_loss(out.float(), y)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        nn.utils.clip_grad_value_(model.parameters(), 0.5)
        scaler.step(opt)
        scaler.update()
        rec("loss", loss.item())
    rec("scale", scaler.get_scale())
    with torch.autocast("cpu", dtype=torch.bfloat16), torch.no_grad():
        a = torch.mm(X, X.t())
        b = torch.softmax(a, dim=-1)
        c = F.layer_norm(a, (32,))
    rec("mm_dtype", str(a.dtype)); rec("softmax_dtype", str(b.dtype)); rec("ln_dtype", str(c.dtype))


def _contrastive(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    enc = nn.Sequential(nn.Linear(10, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 8))
    init(enc, 0, 0.3)
    log_t = nn.Parameter(torch.tensor(np.log(1 / 0.07), dtype=torch.float32))
    opt = torch.optim.SGD([{"params": enc.parameters()},
                           {"params": [log_t], "lr": 1e-3, "weight_decay": 0.0}],
                          lr=0.1, momentum=0.9, weight_decay=1e-4)
    rng = np.random.default_rng(8)
    base = rng.standard_normal((16, 10)).astype(np.float32)
    for step in range(15):
        a = torch.from_numpy(base + 0.1 * rng.standard_normal((16, 10)).astype(np.float32))
        b = torch.from_numpy(base + 0.1 * rng.standard_normal((16, 10)).astype(np.float32))
        za = F.normalize(enc(a), dim=1)
        zb = F.normalize(enc(b), p=2, dim=-1, eps=1e-12)
        logits = za @ zb.T * log_t.exp().clamp(max=100)
        labels = torch.arange(za.size(0))
        loss = (F.cross_entropy(logits, labels) + F.cross_entropy(logits.t(), labels)) / 2
        opt.zero_grad(); loss.backward(); opt.step()
        rec("loss", loss.item())
        sim = F.cosine_similarity(za.detach(), zb.detach(), dim=1)
        rec("pos_sim", sim.mean().item())
        rec("acc", (logits.argmax(1) == labels).float().mean().item())
    # pairwise cosine via broadcasting, triplet margin and pairwise distances
    with torch.no_grad():
        cs = F.cosine_similarity(za[:, None, :], zb[None, :, :], dim=-1)
        rec("cs", cs)
        rec("pd", F.pairwise_distance(za, zb, p=2.0, eps=1e-6))
        rec("cdist", torch.cdist(za, zb))
        trip = F.triplet_margin_loss(za, zb, zb.roll(1, 0), margin=0.5)
        rec("triplet", trip)
        emb = nn.CosineEmbeddingLoss(margin=0.2)(za, zb, torch.ones(16))
        rec("cos_emb", emb)
    rec("log_t", log_t)
    for n, p in enc.named_parameters():
        rec(n, p)


def _custom_fn(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional

    class SortedSoftClip(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, scale):
            vals, idx = torch.sort(x, dim=-1, descending=True)
            y = scale * torch.tanh(vals / scale)
            ctx.save_for_backward(vals, idx)
            ctx.scale = scale
            ctx.mark_non_differentiable(idx)
            return y, idx

        @staticmethod
        def backward(ctx, gy, gidx):
            vals, idx = ctx.saved_tensors
            gv = gy * (1 - torch.tanh(vals / ctx.scale) ** 2)
            gx = torch.zeros_like(gv).scatter_(-1, idx, gv)
            return gx, None

    class MyReLU(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.clamp(min=0)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * (x > 0).to(g.dtype)

    rng = np.random.default_rng(6)
    x64 = torch.tensor(rng.standard_normal((3, 5)), dtype=torch.float64, requires_grad=True)
    ok = torch.autograd.gradcheck(lambda t: SortedSoftClip.apply(t, 2.0)[0], (x64,))
    rec("gradcheck", ok)
    y, idx = SortedSoftClip.apply(x64, 2.0)
    rec("idx_requires_grad", idx.requires_grad)
    rec("idx_dtype", str(idx.dtype))
    rec("y_grad_fn", type(y.grad_fn).__name__.startswith("SortedSoftClip"))
    lin = nn.Linear(5, 4); init(lin)
    head = nn.Linear(4, 1); init(head, 1)
    opt = torch.optim.RMSprop(list(lin.parameters()) + list(head.parameters()), lr=1e-2,
                              alpha=0.9, centered=True)
    X = torch.from_numpy(rng.standard_normal((20, 5)).astype(np.float32))
    t = torch.from_numpy(rng.standard_normal((20, 1)).astype(np.float32))
    for step in range(15):
        h, order = SortedSoftClip.apply(lin(X), 1.5)
        out = head(MyReLU.apply(h))
        loss = F.smooth_l1_loss(out, t, beta=0.5)
        opt.zero_grad(); loss.backward(); opt.step()
        rec("loss", loss.item())
    rec("order", order)
    with torch.enable_grad():
        z = torch.ones(2, requires_grad=True)
        w = MyReLU.apply(z * 2)
        (g,) = torch.autograd.grad(w.sum(), z)
    rec("g", g)
    for n, p in list(lin.named_parameters()) + list(head.named_parameters()):
        rec(n, p)


def _dataloader(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    _m = _mod(torch, "utils.data")
    DataLoader = _m.DataLoader
    TensorDataset = _m.TensorDataset
    random_split = _m.random_split
    Dataset = _m.Dataset
    Subset = _m.Subset
    rng = np.random.default_rng(11)
    X = torch.from_numpy(rng.standard_normal((50, 3)).astype(np.float32))
    y = (X @ torch.tensor([1.0, -2.0, 0.5]) + 0.3).unsqueeze(1)
    ds = TensorDataset(X, y)
    train_ds, val_ds = random_split(ds, [40, 10], generator=torch.Generator().manual_seed(0))
    rec("split_idx", np.array(train_ds.indices[:5]))
    rec("len", (len(train_ds), len(val_ds)))

    class Ragged(Dataset):
        def __init__(self, n):
            self.items = [torch.arange(i % 4 + 1, dtype=torch.float32) for i in range(n)]

        def __len__(self):
            return len(self.items)

        def __getitem__(self, i):
            return self.items[i], i % 2

    def collate(batch):
        seqs, labels = zip(*batch)
        lens = torch.tensor([len(s) for s in seqs])
        padded = nn.utils.rnn.pad_sequence(list(seqs), batch_first=True)
        return padded, lens, torch.tensor(labels)

    for padded, lens, labels in DataLoader(Ragged(7), batch_size=3, collate_fn=collate):
        rec("padded", padded); rec("lens", lens); rec("labels", labels)
    model = nn.Linear(3, 1); init(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    train_dl = DataLoader(train_ds, batch_size=8, shuffle=False, drop_last=True)
    val_dl = DataLoader(val_ds, batch_size=4)
    rec("n_batches", (len(train_dl), len(val_dl)))
    for epoch in range(3):
        model.train()
        for xb, yb in train_dl:
            loss = F.mse_loss(model(xb), yb)
            opt.zero_grad(); loss.backward(); opt.step()
            rec("loss", loss.item())
        model.eval()
        with torch.no_grad():
            tot = sum(F.mse_loss(model(xb), yb, reduction="sum").item() for xb, yb in val_dl)
        rec("val", tot / len(val_ds))
        print(f"epoch {epoch} val {tot / len(val_ds):.4f}")
    xb, yb = next(iter(DataLoader(Subset(ds, [3, 1, 4]), batch_size=3)))
    rec("subset", xb)
    d = DataLoader(list(zip(range(5), ["a", "b", "c", "d", "e"])), batch_size=2)
    b0 = next(iter(d))
    rec("default_collate", (type(b0).__name__, type(b0[0]).__name__, tuple(b0[1])))
    rec("w", model.weight); rec("b", model.bias)


def _distill(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    rng = np.random.default_rng(26)
    X = torch.from_numpy(rng.standard_normal((24, 6)).astype(np.float32))
    y = torch.from_numpy(rng.integers(0, 4, 24))
    teacher = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4)); init(teacher, 0, 0.5)
    student = nn.Sequential(nn.Linear(6, 4)); init(student, 1, 0.3)
    teacher.eval()
    opt = torch.optim.SGD(student.parameters(), lr=0.2)
    T = 3.0
    for step in range(12):
        with torch.no_grad():
            t_logits = teacher(X)
        s_logits = student(X)
        kd = F.kl_div(F.log_softmax(s_logits / T, dim=1), F.softmax(t_logits / T, dim=1),
                      reduction="batchmean") * T * T
        # focal loss on one-vs-rest targets
        tgt = F.one_hot(y, 4).float()
        bce = F.binary_cross_entropy_with_logits(s_logits, tgt, reduction="none")
        p_t = torch.exp(-bce)
        focal = ((1 - p_t) ** 2 * bce).sum(1).mean()
        ce = F.cross_entropy(s_logits, y)
        pt = F.softmax(s_logits, 1, dtype=torch.float64).gather(1, y[:, None]).squeeze(1)
        loss = 0.5 * kd + 0.3 * focal + 0.2 * ce
        opt.zero_grad(); loss.backward(); opt.step()
        rec("loss", loss.item()); rec("pt", pt)
    rec("lsm64", F.log_softmax(s_logits, 1, dtype=torch.float64))
    d = nn.TripletMarginWithDistanceLoss(
        distance_function=lambda a, b: 1 - F.cosine_similarity(a, b), margin=0.3, swap=True)
    rec("trip", d(s_logits[:8], s_logits[8:16], s_logits[16:]))
    rec("pdist", F.pdist(s_logits[:5]))
    for name, fn in (("mse", F.mse_loss), ("l1", F.l1_loss), ("smooth", F.smooth_l1_loss)):
        with torch.no_grad():
            rec(name, fn(s_logits[:, :1], y.float()))  # (N, 1) against (N,): broadcasts
    for bad in (lambda: F.binary_cross_entropy_with_logits(s_logits, y.float()),
                lambda: F.cross_entropy(s_logits, y.float()),
                lambda: F.nll_loss(s_logits, y + 4),
                lambda: F.binary_cross_entropy(torch.sigmoid(s_logits[:, 0]), y.float())):
        try:
            bad()
            rec("bad", "no error")
        except Exception as e:
            rec("bad", type(e).__name__ + ": " + str(e))
    rec("w", student[0].weight)


def _gan(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    G = nn.Sequential(nn.Linear(3, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 2), nn.Tanh())
    D = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2, inplace=True), nn.Linear(16, 1))
    init(G, 0); init(D, 1)
    optG = torch.optim.Adam(G.parameters(), lr=2e-3, betas=(0.5, 0.999))
    optD = torch.optim.Adam(D.parameters(), lr=2e-3, betas=(0.5, 0.999), weight_decay=1e-4)
    crit = nn.BCEWithLogitsLoss()
    rng = np.random.default_rng(2)
    for step in range(15):
        real = torch.from_numpy(rng.normal(0.5, 0.1, (32, 2)).astype(np.float32))
        noise = torch.from_numpy(rng.standard_normal((32, 3)).astype(np.float32))
        ones, zeros = torch.ones(32, 1), torch.zeros(32, 1)
        # discriminator
        for p in D.parameters():
            p.requires_grad_(True)
        fake = G(noise)
        optD.zero_grad(set_to_none=True)
        lossD = crit(D(real), ones) + crit(D(fake.detach()), zeros)
        lossD.backward()
        optD.step()
        # generator
        for p in D.parameters():
            p.requires_grad_(False)
        optG.zero_grad()
        lossG = crit(D(fake), ones)
        lossG.backward()
        optG.step()
        assert all(p.grad is None or not p.requires_grad for p in D.parameters())
        rec("lossD", lossD.item()); rec("lossG", lossG.item())
        rec("D_grad_none", D[0].weight.grad is None)
    rec("running_mean", G[1].running_mean)
    rec("running_var", G[1].running_var)
    rec("nbt", G[1].num_batches_tracked)
    G.eval()
    with torch.no_grad():
        s = G(torch.zeros(5, 3))
    rec("sample", s)
    print("sample", tuple(s.shape), s.requires_grad)
    for n, p in list(G.named_parameters()) + list(D.named_parameters()):
        rec(n, p)


def _gnn(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    rng = np.random.default_rng(9)
    N, E = 12, 40
    src = torch.from_numpy(rng.integers(0, N, E))
    dst = torch.from_numpy(rng.integers(0, N, E))
    x = torch.from_numpy(rng.standard_normal((N, 6)).astype(np.float32))
    y = torch.from_numpy(rng.integers(0, 3, N))
    train_mask = torch.zeros(N, dtype=torch.bool); train_mask[:8] = True

    class GraphConv(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.lin = nn.Linear(cin, cout)
            self.root = nn.Linear(cin, cout, bias=False)

        def forward(self, h, src, dst):
            deg = torch.zeros(h.size(0)).index_add_(0, dst, torch.ones(dst.numel()))
            msg = self.lin(h)[src]
            agg = torch.zeros(h.size(0), msg.size(1)).index_add_(0, dst, msg)
            agg = agg / deg.clamp(min=1).unsqueeze(-1)
            mx = torch.full((h.size(0), msg.size(1)), -1e4).scatter_reduce(
                0, dst.unsqueeze(-1).expand_as(msg), msg, reduce="amax", include_self=False)
            mx = torch.where(deg[:, None] > 0, mx, torch.zeros_like(mx))
            return agg + 0.5 * mx + self.root(h)

    class GNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = GraphConv(6, 16); self.c2 = GraphConv(16, 3)

        def forward(self, h, src, dst):
            h = F.elu(self.c1(h, src, dst))
            return F.log_softmax(self.c2(h, src, dst), dim=-1)

    model = GNN(); init(model, 0, 0.3)
    opt = torch.optim.Adagrad(model.parameters(), lr=0.05, lr_decay=1e-3)
    for step in range(15):
        out = model(x, src, dst)
        loss = F.nll_loss(out[train_mask], y[train_mask])
        opt.zero_grad(); loss.backward(); opt.step()
        rec("loss", loss.item())
    pred = out.argmax(dim=1)
    rec("pred", pred)
    rec("test_acc", int((pred[~train_mask] == y[~train_mask]).sum()) / int((~train_mask).sum()))
    # scatter_reduce mean / sum with include_self and gradients
    vals = torch.from_numpy(rng.standard_normal(E).astype(np.float32)).requires_grad_()
    pooled = torch.zeros(N).scatter_reduce(0, dst, vals, reduce="mean", include_self=True)
    prod = torch.ones(N).scatter_reduce(0, dst, vals, reduce="prod")
    (pooled.sum() + prod.sum()).backward()
    rec("pooled", pooled); rec("prod", prod); rec("vals_grad", vals.grad)
    counts = torch.bincount(dst, minlength=N)
    rec("counts", counts)
    rec("segment", torch.zeros(N, 3).index_add(0, dst, torch.ones(E, 3), alpha=2.0))
    for n, p in model.named_parameters():
        rec(n, p)


def _gru_attn(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    _m = _mod(torch, "nn.utils.rnn")
    pack_padded_sequence = _m.pack_padded_sequence
    pad_packed_sequence = _m.pad_packed_sequence

    class Clf(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.GRU(5, 8, num_layers=2, bidirectional=True, batch_first=True)
            self.att = nn.Linear(16, 1)
            self.out = nn.Linear(16, 1)

        def forward(self, x, lens):
            packed = pack_padded_sequence(x, lens, batch_first=True, enforce_sorted=False)
            h, hn = self.rnn(packed)
            h, _ = pad_packed_sequence(h, batch_first=True)
            mask = torch.arange(h.size(1))[None, :] < lens[:, None]
            scores = self.att(h).squeeze(-1).masked_fill(~mask, float("-inf"))
            a = torch.softmax(scores, dim=1)
            ctx = torch.bmm(a.unsqueeze(1), h).squeeze(1)
            final = torch.cat([hn[-2], hn[-1]], dim=1)
            return self.out(ctx + final).squeeze(-1), a

    rng = np.random.default_rng(13)
    x = torch.from_numpy(rng.standard_normal((6, 7, 5)).astype(np.float32))
    lens = torch.tensor([7, 2, 5, 7, 3, 1])
    y = torch.tensor([1.0, 0.0, 1.0, 0.0, 0.0, 1.0])
    model = Clf(); init(model, 0, 0.3)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=1)
    crit = nn.BCEWithLogitsLoss(pos_weight=torch.tensor([1.5]))
    for step in range(15):
        logit, att = model(x, lens)
        loss = crit(logit, y)
        opt.zero_grad(); loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.5, norm_type=2.0)
        opt.step()
        sched.step(1.0)
        rec("loss", loss.item()); rec("lr", opt.param_groups[0]["lr"])
    rec("att", att)
    with torch.inference_mode():
        prob = torch.sigmoid(model(x, lens)[0])
    rec("prob", prob); rec("pred", (prob > 0.5).long())
    for n, p in model.named_parameters():
        rec(n, p)
    # the unpacked path with an initial hidden state and a GRUCell loop
    h0 = torch.zeros(4, 6, 8)
    out, hn = model.rnn(x, h0)
    rec("unpacked", out); rec("hn", hn)
    cell = nn.GRUCell(5, 8); init(cell, 3)
    h = torch.zeros(6, 8)
    for t in range(x.size(1)):
        h = cell(x[:, t], h)
    rec("cell_h", h)


def _hooks_utils(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    rng = np.random.default_rng(19)
    model = nn.Sequential(nn.Conv1d(2, 4, 3, padding=1, dilation=1), nn.ReLU(),
                          nn.Conv1d(4, 4, 3, padding=2, dilation=2, groups=2), nn.Tanh(),
                          nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(4, 2))
    init(model, 0, 0.4)
    feats, grads, pre = {}, {}, []
    h1 = model[1].register_forward_hook(lambda m, i, o: feats.__setitem__("relu", o.detach()))
    h2 = model[2].register_full_backward_hook(
        lambda m, gi, go: grads.__setitem__("conv2", go[0].detach()))
    h3 = model.register_forward_pre_hook(lambda m, args: pre.append(args[0].shape))
    x = torch.from_numpy(rng.standard_normal((3, 2, 9)).astype(np.float32))
    y = torch.tensor([0, 1, 1])
    for p in model[0].parameters():
        p.requires_grad_(False)
    opt = torch.optim.SGD(filter(lambda p: p.requires_grad, model.parameters()), lr=0.1,
                          momentum=0.5, dampening=0.1)
    for step in range(8):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        rec("loss", loss.item())
    rec("feat", feats["relu"]); rec("gout", grads["conv2"]); rec("pre", tuple(pre[-1]))
    rec("frozen_grad", model[0].weight.grad is None)
    for h in (h1, h2, h3):
        h.remove()

    @torch.no_grad()
    def reinit(m):
        if isinstance(m, nn.Linear):
            m.weight.fill_(0.01); m.bias.zero_()
    model.apply(reinit)
    vec = nn.utils.parameters_to_vector(model.parameters())
    rec("vec", vec)
    nn.utils.vector_to_parameters(vec * 2, model.parameters())
    rec("lin_w", model[6].weight)
    m64 = model.double()
    rec("dtype", str(next(m64.parameters()).dtype))
    rec("out64", m64(x.double()))
    rec("names", tuple(n for n, _ in model.named_modules()))
    rec("n_train", sum(p.numel() for p in model.parameters() if p.requires_grad))
    print(model)


def _hvp(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    _m = _mod(torch, "func")
    functional_call = _m.functional_call
    grad = _m.grad
    jvp = _m.jvp
    vjp = _m.vjp
    jacrev = _m.jacrev
    vmap = _m.vmap
    hessian = _m.hessian
    rng = np.random.default_rng(10)
    X = torch.from_numpy(rng.standard_normal((16, 4)).astype(np.float64))
    y = torch.from_numpy(rng.standard_normal((16,)).astype(np.float64))
    model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 1)).double()
    init(model)
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss_fn(p):
        out = functional_call(model, p, (X,)).squeeze(-1)
        return F.mse_loss(out, y)

    g = grad(loss_fn)(params)
    rec("g", g["0.weight"])
    # the same with autograd.grad(create_graph=True)
    ps = list(model.parameters())
    loss = F.mse_loss(model(X).squeeze(-1), y)
    gs = torch.autograd.grad(loss, ps, create_graph=True)
    dot = sum((gi * torch.full_like(gi, 0.1)).sum() for gi in gs)
    hv2 = torch.autograd.grad(dot, ps)
    rec("hv2", hv2[0])
    # Gauss-Newton: J^T J v via jvp/vjp of the residuals, with a few damped steps
    w = torch.cat([p.detach().reshape(-1) for p in ps])
    shapes = [p.shape for p in ps]

    def unflat(wv):
        out, i = {}, 0
        for (k, _), s in zip(model.named_parameters(), shapes):
            n = int(np.prod(s)); out[k] = wv[i:i + n].reshape(s); i += n
        return out

    def resid(wv):
        return functional_call(model, unflat(wv), (X,)).squeeze(-1) - y

    for it in range(4):
        J = jacrev(resid)(w)
        r = resid(w)
        A = J.T @ J + 1e-2 * torch.eye(w.numel(), dtype=w.dtype)
        step = torch.linalg.solve(A, J.T @ r)
        w = w - step
        rec("gn_loss", (resid(w) ** 2).mean().item())
    flat_loss = lambda wv: (resid(wv) ** 2).mean()
    _, hv = jvp(grad(flat_loss), (w,), (torch.full_like(w, 0.1),))
    rec("hv", hv)
    _, jv = jvp(resid, (w,), (torch.ones_like(w),))
    _, vjp_fn = vjp(resid, w)
    (jtv,) = vjp_fn(torch.ones(16, dtype=torch.float64))
    rec("jv", jv); rec("jtv", jtv)
    _, hv3 = torch.autograd.functional.hvp(lambda wv: (resid(wv) ** 2).mean(), w,
                                           torch.ones_like(w))
    rec("hv3", hv3)
    rec("hessian_func", hessian(lambda wv: (resid(wv) ** 2).mean())(w))
    H = torch.autograd.functional.hessian(lambda wv: (resid(wv) ** 2).mean(), w)
    rec("H", H); rec("H_sym", torch.allclose(H, H.T))
    per_ex = vmap(grad(lambda wv, xi, yi: (functional_call(model, unflat(wv), (xi,)).squeeze(-1)
                                          - yi) ** 2), in_dims=(None, 0, 0))(w, X, y)
    rec("per_ex", per_ex)


def _losses_mix(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    rng = np.random.default_rng(17)
    X = torch.from_numpy(rng.standard_normal((16, 6)).astype(np.float32))
    multi = torch.from_numpy((rng.random((16, 4)) > 0.6).astype(np.float32))
    counts = torch.from_numpy(rng.poisson(2.0, (16, 1)).astype(np.float32))
    reg = torch.from_numpy(rng.standard_normal((16, 1)).astype(np.float32))
    cls = torch.from_numpy(rng.integers(0, 3, 16))
    soft = torch.softmax(torch.from_numpy(rng.standard_normal((16, 3)).astype(np.float32)), -1)
    trunk = nn.Sequential(nn.Linear(6, 12), nn.SELU(), nn.Linear(12, 12), nn.Softplus(beta=2))
    heads = nn.ModuleDict({"ml": nn.Linear(12, 4), "pois": nn.Linear(12, 1),
                           "gauss": nn.Linear(12, 2), "cls": nn.Linear(12, 3)})
    init(trunk, 0); init(heads, 1)
    params = list(trunk.parameters()) + list(heads.parameters())
    opt = torch.optim.NAdam(params, lr=5e-3)
    w = torch.tensor([1.0, 2.0, 0.5])
    for step in range(12):
        h = trunk(X)
        ml = heads["ml"](h)
        l1 = F.binary_cross_entropy(torch.sigmoid(ml), multi, weight=torch.tensor([1, 2, 1, .5]))
        l2 = nn.MultiLabelSoftMarginLoss()(ml, multi)
        l3 = F.poisson_nll_loss(heads["pois"](h), counts, log_input=True, full=True)
        mu, logv = heads["gauss"](h).chunk(2, dim=-1)
        l4 = nn.GaussianNLLLoss(full=True)(mu, reg, logv.exp())
        logits = heads["cls"](h)
        l5 = F.cross_entropy(logits, cls, weight=w, label_smoothing=0.05)
        l6 = F.kl_div(F.log_softmax(logits, -1), soft, reduction="batchmean")
        l7 = F.kl_div(F.log_softmax(logits, -1), soft.log(), reduction="batchmean",
                      log_target=True)
        l8 = F.cross_entropy(logits, soft)  # probabilities as targets
        l9 = F.multi_margin_loss(logits, cls, p=1, margin=1.0, weight=w)
        l10 = F.nll_loss(F.log_softmax(logits, 1), cls, reduction="none")
        loss = l1 + l2 + l3 + l4 + l5 + l6 + l7 + l8 + l9 + l10.mean()
        opt.zero_grad(); loss.backward(); opt.step()
        for i, l in enumerate((l1, l2, l3, l4, l5, l6, l7, l8, l9)):
            rec(f"l{i + 1}", l.item())
        rec("l10", l10)
    # CTC on a tiny alignment problem
    T, C = 8, 5
    lp = F.log_softmax(torch.from_numpy(rng.standard_normal((T, 3, C)).astype(np.float32))
                       .requires_grad_(), dim=-1)
    targets = torch.tensor([1, 2, 2, 3, 1, 4, 4, 1])
    ctc = F.ctc_loss(lp, targets, torch.tensor([8, 7, 6]), torch.tensor([3, 2, 3]),
                     blank=0, reduction="mean", zero_infinity=True)
    ctc.backward()
    rec("ctc", ctc)
    for n, p in list(trunk.named_parameters()) + list(heads.named_parameters()):
        rec(n, p)


def _meta_llm(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        def __init__(self, d=16, h=4):
            super().__init__()
            self.h = h
            self.norm1, self.norm2 = nn.RMSNorm(d), nn.RMSNorm(d)
            self.qkv = nn.Linear(d, 3 * d, bias=False)
            self.proj = nn.Linear(d, d, bias=False)
            self.up = nn.Linear(d, 2 * 32, bias=False)
            self.down = nn.Linear(32, d, bias=False)
            self.register_buffer("freqs", torch.arange(4, dtype=torch.float32), persistent=False)

        def forward(self, x):
            B, T, D = x.shape
            q, k, v = self.qkv(self.norm1(x)).split(D, dim=-1)
            q, k, v = (t.view(B, T, self.h, D // self.h).transpose(1, 2) for t in (q, k, v))
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(a.transpose(1, 2).contiguous().view(B, T, D))
            gate, val = self.up(self.norm2(x)).chunk(2, dim=-1)
            return x + self.down(F.silu(gate) * val)

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(13, 16)
            self.blocks = nn.ModuleList([Block() for _ in range(2)])
            self.head = nn.Linear(16, 13, bias=False)
            self.head.weight = self.tok.weight  # tied

        def forward(self, idx):
            x = self.tok(idx)
            for b in self.blocks:
                x = b(x)
            return self.head(x)

    model = GPT().to_empty(device="cpu")
    init(model, 0, 0.2)
    rec("tied", model.head.weight is model.tok.weight)
    rec("n_params", sum(p.numel() for p in model.parameters()))
    rec("sd_keys", tuple(model.state_dict().keys()))
    rng = np.random.default_rng(27)
    idx = torch.from_numpy(rng.integers(0, 13, (3, 8)))
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}], lr=3e-3,
                            betas=(0.9, 0.95), fused=None)
    compiled = torch.compile(model)
    for step in range(10):
        logits = compiled(idx[:, :-1])
        loss = F.cross_entropy(logits.flatten(0, 1), idx[:, 1:].flatten())
        opt.zero_grad(set_to_none=True); loss.backward()
        rec("norm", nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True))
        opt.step()
        rec("loss", loss.item())
    sd = {k: v.clone() for k, v in model.state_dict().items()}
    m2 = GPT()
    m2.load_state_dict(sd, assign=True)
    rec("assigned", m2.tok.weight.data_ptr() == sd["tok.weight"].data_ptr())
    m2.head.weight = m2.tok.weight
    with torch.no_grad():
        ids = idx[:1, :2]
        for _ in range(5):
            nxt = m2(ids)[:, -1].argmax(-1, keepdim=True)
            ids = torch.cat([ids, nxt], 1)
    rec("gen", ids)
    for n, p in model.named_parameters():
        rec(n, p)


def _norms_acts(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    rng = np.random.default_rng(21)
    model = nn.Sequential(
        nn.Conv3d(2, 4, (1, 3, 3), padding=(0, 1, 1)), nn.BatchNorm3d(4, momentum=None),
        nn.ReLU6(), nn.MaxPool3d((1, 2, 2)), nn.Conv3d(4, 6, 1), nn.GLU(dim=1),
        nn.AdaptiveAvgPool3d((1, 2, 2)), nn.Flatten(), nn.Linear(12, 8),
        nn.BatchNorm1d(8, track_running_stats=False), nn.CELU(0.5), nn.Linear(8, 6),
        nn.Identity(), nn.Hardtanh(-2, 2),
        nn.Linear(6, 3), nn.LogSoftmax(dim=1))
    init(model, 0, 0.3)
    x = torch.from_numpy(rng.standard_normal((5, 2, 2, 6, 6)).astype(np.float32))
    y = torch.from_numpy(rng.integers(0, 3, 5))
    opt = torch.optim.ASGD(model.parameters(), lr=0.05, t0=3)
    for step in range(8):
        loss = F.nll_loss(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        rec("loss", loss.item())
    rec("rm", model[1].running_mean); rec("rv", model[1].running_var)
    model.eval()
    with torch.no_grad():
        rec("eval", model(x))
    z = torch.from_numpy(rng.standard_normal((2, 4, 3, 3)).astype(np.float32)).requires_grad_()
    acts = [nn.Softmin(1), nn.LogSigmoid(), nn.Threshold(0.1, -1.0), nn.Softsign(),
            nn.Tanhshrink(), nn.Softshrink(0.3), nn.Hardshrink(0.3), nn.Softmax2d(),
            nn.SiLU(), nn.Hardsigmoid(), nn.ELU(alpha=0.7), nn.GELU(), nn.Sigmoid(),
            nn.LocalResponseNorm(3, alpha=1e-2, beta=0.75, k=1.0),
            nn.GroupNorm(2, 4, affine=False), nn.InstanceNorm2d(4, track_running_stats=True),
            nn.LayerNorm([3, 3], bias=False), nn.ZeroPad2d((1, 0, 2, 0)), nn.ReflectionPad2d(1),
            nn.ReplicationPad2d((0, 1, 1, 0)), nn.CircularPad2d(1), nn.ChannelShuffle(2),
            nn.Upsample(scale_factor=2, mode="nearest"), nn.PixelUnshuffle(3)]
    total = 0
    for a in acts:
        out = a(z)
        rec(type(a).__name__, out)
        total = total + out.square().mean()
    total.backward()
    rec("zgrad", z.grad)
    rec("inorm_rm", acts[15].running_mean)
    inplace = z.detach().clone()
    F.relu_(inplace); F.silu(inplace, inplace=True); F.hardtanh_(inplace, 0.0, 0.5)
    rec("inplace", inplace)
    for n, p in model.named_parameters():
        rec(n, p)


def _param_swa(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    P = torch.nn.utils.parametrizations
    rng = np.random.default_rng(22)
    X = torch.from_numpy(rng.standard_normal((20, 5)).astype(np.float32))
    y = torch.from_numpy(rng.standard_normal((20, 2)).astype(np.float32))
    model = nn.Sequential(nn.Linear(5, 6), nn.Tanh(), nn.Linear(6, 6), nn.Tanh(), nn.Linear(6, 2))
    init(model, 0, 0.4)
    P.weight_norm(model[0], name="weight", dim=0)
    P.spectral_norm(model[2], n_power_iterations=3)
    rec("names", tuple(n for n, _ in model.named_parameters()))
    ema = torch.optim.swa_utils.AveragedModel(
        model, multi_avg_fn=torch.optim.swa_utils.get_ema_multi_avg_fn(0.9))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.2, total_steps=12)
    for step in range(12):
        loss = F.mse_loss(model(X), y)
        opt.zero_grad(); loss.backward(); opt.step(); sched.step()
        ema.update_parameters(model)
        rec("loss", loss.item()); rec("lr", sched.get_last_lr()[0])
        rec("mom", opt.param_groups[0]["momentum"])
    model.eval()
    with torch.no_grad():
        rec("ema_out", ema(X)); rec("out", model(X))
        sv = torch.linalg.matrix_norm(model[2].weight, ord=2)
    rec("spectral", sv.item())
    rec("w0", model[0].weight)
    rec("ema_n", ema.n_averaged)
    nn.utils.parametrize.remove_parametrizations(model[0], "weight")
    rec("after_remove", tuple(n for n, _ in model[0].named_parameters()))
    sd_keys = tuple(model.state_dict().keys())
    rec("sd_keys", sd_keys)


def _perceiver(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    rng = np.random.default_rng(20)

    class Perceiver(nn.Module):
        def __init__(self):
            super().__init__()
            self.latents = nn.Parameter(torch.zeros(3, 8))
            self.cross = nn.MultiheadAttention(8, 2, kdim=5, vdim=6, add_bias_kv=True)
            self.selfa = nn.MultiheadAttention(8, 4, add_zero_attn=True, batch_first=True)
            self.norm = nn.RMSNorm(8, eps=1e-6)
            self.ln = nn.LayerNorm(8, elementwise_affine=False)
            self.q = nn.Linear(8, 8); self.kv = nn.Linear(8, 4)
            self.head = nn.Linear(8, 2)

        def forward(self, k, v, kpm):
            lat = self.latents.unsqueeze(1).expand(-1, k.size(1), -1)  # (L, N, E)
            h, w = self.cross(lat, k, v, key_padding_mask=kpm, average_attn_weights=False)
            h = self.norm(h + lat).transpose(0, 1)  # (N, L, E)
            m3 = torch.zeros(k.size(1) * 4, 3, 3)
            m3[:, 0, 2] = float("-inf")
            h2, _ = self.selfa(h, h, h, attn_mask=m3, need_weights=False)
            h = self.ln(h + h2)
            q = self.q(h).view(h.size(0), 3, 4, 2).transpose(1, 2)  # 4 query heads
            kv = self.kv(h).view(h.size(0), 3, 2, 2).transpose(1, 2)  # 2 key/value heads
            o = F.scaled_dot_product_attention(q, kv, kv, is_causal=True, enable_gqa=True)
            h = h + o.transpose(1, 2).reshape(h.size(0), 3, 8)
            return self.head(h.mean(1)), w

    k = torch.from_numpy(rng.standard_normal((7, 4, 5)).astype(np.float32))
    v = torch.from_numpy(rng.standard_normal((7, 4, 6)).astype(np.float32))
    kpm = torch.arange(7)[None, :] >= torch.tensor([7, 5, 7, 2])[:, None]
    y = torch.tensor([0, 1, 1, 0])
    model = Perceiver(); init(model, 0, 0.3)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(10):
        logits, w = model(k, v, kpm)
        loss = F.cross_entropy(logits, y)
        opt.zero_grad(); loss.backward(); opt.step()
        rec("loss", loss.item())
    rec("w", w); rec("w_shape", tuple(w.shape))
    q = torch.from_numpy(rng.standard_normal((2, 2, 3, 4)).astype(np.float32))
    bm = torch.tensor([[True, False, True, True], [True, True, False, True], [True] * 4])
    rec("sdpa_bool", F.scaled_dot_product_attention(q, q.roll(1, 0).repeat(1, 1, 2, 1)[..., :4, :],
                                                   q.repeat(1, 1, 2, 1)[..., :4, :], attn_mask=bm))
    rec("sdpa_scale", F.scaled_dot_product_attention(q, q, q, scale=0.3))
    for n, p in model.named_parameters():
        rec(n, p)


def _recsys(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    rng = np.random.default_rng(16)
    n_users, n_items = 7, 11
    users = torch.from_numpy(rng.integers(0, n_users, 24))
    items = torch.from_numpy(rng.integers(0, n_items, 24))
    neg = torch.from_numpy(rng.integers(0, n_items, 24))
    hist = torch.from_numpy(rng.integers(0, n_items, 40))
    offsets = torch.tensor([0, 3, 3, 9, 15, 22, 30])
    hist_w = torch.from_numpy(rng.random(40).astype(np.float32))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.u = nn.Embedding(n_users, 6, max_norm=1.5)
            self.i = nn.Embedding(n_items, 6)
            self.bag = nn.EmbeddingBag(n_items, 6, mode="sum")
            self.bil = nn.Bilinear(6, 6, 1)

        def forward(self, u, i):
            hu = self.u(u) + self.bag(hist, offsets, per_sample_weights=hist_w)[u]
            return self.bil(hu, self.i(i)).squeeze(-1) + (hu * self.i(i)).sum(-1)

    model = Model(); init(model, 0, 0.3)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    rank = nn.MarginRankingLoss(margin=0.5)
    for step in range(15):
        pos, ng = model(users, items), model(users, neg)
        loss = rank(pos, ng, torch.ones_like(pos)) + 0.1 * F.softplus(ng - pos).mean()
        loss = loss + F.hinge_embedding_loss(pos - ng, torch.where(pos > ng, 1.0, -1.0))
        opt.zero_grad(); loss.backward(); opt.step()
        rec("loss", loss.item())
    rec("u_norms", model.u.weight.norm(dim=1))
    with torch.no_grad():
        scores = model(torch.arange(n_users).repeat_interleave(n_items),
                       torch.arange(n_items).repeat(n_users)).view(n_users, n_items)
        top = scores.topk(3, dim=1)
    rec("top_idx", top.indices); rec("top_val", top.values)
    bag_mean = nn.EmbeddingBag.from_pretrained(model.i.weight.detach(), mode="mean")
    rec("bag_mean", bag_mean(torch.tensor([[1, 2, 3], [4, 4, 0]])))
    bag_max = nn.EmbeddingBag.from_pretrained(model.i.weight.detach(), mode="max",
                                              padding_idx=0)
    rec("bag_max", bag_max(hist[:9], torch.tensor([0, 4])))
    for n, p in model.named_parameters():
        rec(n, p)


def _resnet(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        def __init__(self, cin, cout, stride=1):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.short = nn.Sequential()
            if stride != 1 or cin != cout:
                self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                           nn.BatchNorm2d(cout))

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return F.relu(out + self.short(x))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU())
            self.layers = nn.Sequential(Block(4, 4), Block(4, 8, stride=2))
            self.pool = nn.AdaptiveAvgPool2d((1, 1))
            self.drop = nn.Dropout(0.0)
            self.fc = nn.Linear(8, 3)

        def forward(self, x):
            x = self.pool(self.layers(self.stem(x)))
            return self.fc(self.drop(torch.flatten(x, 1)))

    rng = np.random.default_rng(4)
    X = torch.from_numpy(rng.standard_normal((24, 1, 8, 8)).astype(np.float32))
    y = torch.from_numpy(rng.integers(0, 3, 24))
    model = Net()
    init(model, 0, 0.2)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True,
                          weight_decay=5e-4)
    crit = nn.CrossEntropyLoss()
    for step in range(12):
        model.train()
        opt.zero_grad()
        out = model(X[:16])
        loss = crit(out, y[:16])
        loss.backward()
        opt.step()
        rec("loss", loss.item())
        model.eval()
        with torch.no_grad():
            logits = model(X[16:])
            correct = logits.argmax(dim=1).eq(y[16:]).sum().item()
        rec("correct", correct)
        rec("eval_logits", logits)
    print(f"acc {correct}/{len(y[16:])} {100.0 * correct / 8:.1f}%")
    for n, b in model.named_buffers():
        rec(n, b)
    for n, p in model.named_parameters():
        rec(n, p)
    rec("n_params", sum(p.numel() for p in model.parameters() if p.requires_grad))


def _resume(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    rng = np.random.default_rng(12)
    X = torch.from_numpy(rng.standard_normal((32, 5)).astype(np.float32))
    y = torch.from_numpy(rng.integers(0, 2, 32)).float()

    def make():
        m = nn.Sequential(nn.Linear(5, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 1))
        o = torch.optim.Adam(m.parameters(), lr=1e-2, amsgrad=True)
        s = torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=20, eta_min=1e-4)
        return m, o, s

    def train(m, o, s, steps, tag):
        for _ in range(steps):
            loss = F.binary_cross_entropy_with_logits(m(X).squeeze(1), y,
                                                      pos_weight=torch.tensor(2.0))
            o.zero_grad(); loss.backward(); o.step(); s.step()
            rec(tag, loss.item())

    m, o, s = make(); init(m)
    train(m, o, s, 5, "loss")
    buf = io.BytesIO()
    torch.save({"model": m.state_dict(), "opt": o.state_dict(), "sched": s.state_dict(),
                "step": 5}, buf)
    train(m, o, s, 5, "loss_cont")
    buf.seek(0)
    ck = torch.load(buf, weights_only=True)
    rec("keys", tuple(ck["model"].keys()))
    rec("opt_keys", tuple(sorted(ck["opt"]["state"][0].keys())))
    m2, o2, s2 = make()
    missing = m2.load_state_dict(ck["model"])
    rec("missing", (tuple(missing.missing_keys), tuple(missing.unexpected_keys)))
    o2.load_state_dict(ck["opt"]); s2.load_state_dict(ck["sched"])
    rec("lr_after_load", s2.get_last_lr()[0])
    train(m2, o2, s2, 5, "loss_resumed")
    for (n, p), p2 in zip(m.named_parameters(), m2.parameters()):
        rec(n, p); rec(n + "_resumed", p2)
    rec("same", all(torch.equal(a, b) for a, b in zip(m.state_dict().values(),
                                                     m2.state_dict().values())))
    sd = m.state_dict()
    sd.pop("1.num_batches_tracked")
    res = m2.load_state_dict(sd, strict=False)
    rec("nonstrict", tuple(res.missing_keys))
    try:
        m2.load_state_dict({"0.weight": torch.zeros(3, 3)}, strict=False)
    except RuntimeError as e:
        rec("err", str(e).split("\n")[0][:40])


def _rnn_h0(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    _m = _mod(torch, "nn.utils.rnn")
    pack_padded_sequence = _m.pack_padded_sequence
    pad_packed_sequence = _m.pad_packed_sequence
    rng = np.random.default_rng(24)
    x = torch.from_numpy(rng.standard_normal((4, 6, 3)).astype(np.float32))
    lens = torch.tensor([3, 6, 2, 5])
    h0 = torch.from_numpy(rng.standard_normal((2, 4, 5)).astype(np.float32))
    c0 = torch.from_numpy(rng.standard_normal((2, 4, 5)).astype(np.float32))
    gru = nn.GRU(3, 5, batch_first=True, num_layers=2); init(gru)
    lstm = nn.LSTM(3, 5, batch_first=True, bidirectional=True); init(lstm, 1)
    packed = pack_padded_sequence(x, lens, batch_first=True, enforce_sorted=False)
    out, hn = gru(packed, h0)
    rec("gru_out", pad_packed_sequence(out, batch_first=True)[0]); rec("gru_hn", hn)
    out, (hn, cn) = lstm(packed, (h0, c0))
    rec("lstm_out", pad_packed_sequence(out, batch_first=True, padding_value=-1.0)[0])
    rec("lstm_hn", hn); rec("lstm_cn", cn)
    rec("sorted_idx", packed.sorted_indices); rec("unsorted_idx", packed.unsorted_indices)
    (hn.sum() + cn.sum()).backward()
    rec("w_grad", lstm.weight_hh_l0_reverse.grad)
    # one sequence at a time must give the same final states
    for i in range(4):
        _, (h, c) = lstm(x[i:i + 1, :lens[i]], (h0[:, i:i + 1], c0[:, i:i + 1]))
        rec(f"single{i}", h)
    torch.manual_seed(0)
    d = nn.LSTM(3, 5, num_layers=2, dropout=0.5); init(d, 2)
    o, _ = d(x.transpose(0, 1))
    rec("dropout_lstm", o)
    d.eval()
    rec("dropout_lstm_eval", d(x.transpose(0, 1))[0])
    moved = packed.to(torch.float64)
    rec("moved", str(moved.data.dtype))
    rec("moved_sizes", moved.batch_sizes)
    rec("is_packed", isinstance(packed, nn.utils.rnn.PackedSequence))


def _rnn_tbptt(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    _m = _mod(torch, "nn.utils.rnn")
    pack_sequence = _m.pack_sequence
    pad_packed_sequence = _m.pad_packed_sequence
    unpack_sequence = _m.unpack_sequence
    rng = np.random.default_rng(18)
    series = torch.from_numpy(np.sin(np.linspace(0, 12, 61))[:, None, None].repeat(3, 1)
                              .astype(np.float32))  # (T, N, 1) sequence-first
    lstm = nn.LSTM(1, 8, num_layers=1, proj_size=4)
    rnn = nn.RNN(4, 6, nonlinearity="relu", bidirectional=True)
    out = nn.Linear(12, 1)
    mods = nn.ModuleList([lstm, rnn, out]); init(mods, 0, 0.3)
    opt = torch.optim.Adamax(mods.parameters(), lr=1e-2)
    state = None
    for chunk in range(6):  # truncated backprop through time, 10 steps a chunk
        x = series[chunk * 10:(chunk + 1) * 10]
        y = series[chunk * 10 + 1:(chunk + 1) * 10 + 1]
        h, state = lstm(x, state)
        state = tuple(s.detach() for s in state)
        r, _ = rnn(h)
        loss = F.mse_loss(out(r), y)
        opt.zero_grad(); loss.backward(); opt.step()
        rec("loss", loss.item())
    rec("h_n", state[0]); rec("c_n", state[1])
    seqs = [torch.from_numpy(rng.standard_normal((n, 1)).astype(np.float32)) for n in (5, 3, 2)]
    packed = pack_sequence(seqs)  # sorted: enforce_sorted defaults to True
    rec("batch_sizes", packed.batch_sizes)
    p_out, (hn, cn) = lstm(packed)
    padded, lens = pad_packed_sequence(p_out)
    rec("padded", padded); rec("lens", lens); rec("hn", hn)
    back = unpack_sequence(p_out)
    rec("unpacked_last", back[-1])
    cell = nn.LSTMCell(1, 4); init(cell, 2)
    hx = cx = torch.zeros(3, 4)
    for t in range(5):
        hx, cx = cell(series[t], (hx, cx))
    rec("cell", hx)
    rnn_cell = nn.RNNCell(1, 4, nonlinearity="tanh"); init(rnn_cell, 3)
    rec("rnn_cell", rnn_cell(series[0]))
    try:
        lstm(torch.zeros(4, 3, 2))
    except RuntimeError as e:
        rec("err", "must be equal to input_size. Expected 1, got 2" in str(e))


def _seeded(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    torch.manual_seed(0)
    lin = nn.Linear(4, 3)
    conv = nn.Conv2d(2, 3, 3)
    rec("lin_w", lin.weight); rec("lin_b", lin.bias); rec("conv_w", conv.weight)
    rec("randn", torch.randn(3, 2)); rec("rand", torch.rand(4))
    rec("randint", torch.randint(0, 10, (5,))); rec("randperm", torch.randperm(6))
    drop = nn.Dropout(0.5)
    rec("dropout", drop(torch.ones(2, 8)))
    emb = nn.Embedding(5, 3); rec("emb", emb.weight)
    w = torch.empty(3, 5); nn.init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")
    rec("kaiming", w)
    nn.init.xavier_uniform_(w, gain=nn.init.calculate_gain("tanh")); rec("xavier", w)
    nn.init.trunc_normal_(w, std=0.02); rec("trunc", w)
    nn.init.orthogonal_(w); rec("orth_gram", w @ w.T)
    g = torch.Generator().manual_seed(42)
    rec("gen_randn", torch.randn(3, generator=g))
    rec("normal_", torch.empty(3).normal_(2.0, 0.5))
    rec("bern", torch.bernoulli(torch.full((6,), 0.5)))
    rec("multinom", torch.multinomial(torch.tensor([0.1, 0.2, 0.7]), 4, replacement=True))
    torch.manual_seed(1)
    rnn = nn.GRU(3, 4); rec("gru_w", rnn.weight_hh_l0)
    ln = nn.LayerNorm(4); rec("ln", ln.weight)
    mha = nn.MultiheadAttention(4, 2); rec("mha", mha.in_proj_weight)
    tfl = nn.TransformerEncoderLayer(4, 2, 8)
    rec("tfl", tfl.linear1.weight)
    state = torch.get_rng_state()
    a = torch.randn(3)
    torch.set_rng_state(state)
    rec("replay", torch.equal(a, torch.randn(3)))
    x = torch.randn(2, 4)
    rec("fdrop", F.dropout(x, 0.3, training=True))
    rec("alpha_drop", nn.AlphaDropout(0.2)(x))
    rec("rrelu", F.rrelu(x, training=True))
    rec("gumbel", F.gumbel_softmax(x, tau=0.5, hard=True))


def _segment(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.d1 = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU())
            self.d2 = nn.Sequential(nn.Conv2d(4, 8, 3, stride=2, padding=1), nn.ReLU())
            self.up = nn.ConvTranspose2d(8, 4, 3, stride=2, padding=1, output_padding=1)
            self.fuse = nn.Conv2d(8, 4, (3, 1), padding=(1, 0), bias=False)
            self.aux = nn.Conv2d(8, 3, 1)
            self.out = nn.Conv2d(4, 3, 1)

        def forward(self, x):
            a = self.d1(x)
            b = self.d2(a)
            u = torch.cat([self.up(b), a], dim=1)
            aux = F.interpolate(self.aux(b), scale_factor=2, mode="bilinear", align_corners=False)
            return self.out(F.relu(self.fuse(u))), aux

    rng = np.random.default_rng(23)
    x = torch.from_numpy(rng.standard_normal((3, 3, 8, 8)).astype(np.float32))
    y = torch.from_numpy(rng.integers(0, 3, (3, 8, 8)))
    y[0, :2, :2] = 255
    model = UNet().to(memory_format=torch.channels_last); init(model, 0, 0.3)
    x = x.to(memory_format=torch.channels_last)
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    ce = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 0.5]), ignore_index=255)
    for step in range(10):
        logits, aux = model(x)
        valid = (y != 255)
        onehot = F.one_hot(y.clamp(max=2), 3).permute(0, 3, 1, 2).float() * valid[:, None]
        probs = logits.softmax(1) * valid[:, None]
        inter = (probs * onehot).sum((2, 3))
        dice = 1 - (2 * inter + 1) / (probs.sum((2, 3)) + onehot.sum((2, 3)) + 1)
        loss = ce(logits, y) + 0.4 * ce(aux, y) + dice.mean()
        opt.zero_grad(); loss.backward(); opt.step()
        rec("loss", loss.item())
    rec("cl", logits.is_contiguous(memory_format=torch.channels_last))
    rec("none", F.cross_entropy(logits, y, ignore_index=255, reduction="none"))
    with torch.no_grad():
        pred = logits.argmax(1)
        inter = ((pred == 1) & (y == 1)).sum().item()
        union = ((pred == 1) | (y == 1)).sum().item()
    rec("iou", inter / max(union, 1))
    for n, p in model.named_parameters():
        rec(n, p)


def _seq2seq(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    V, D, BOS = 9, 16, 1
    rng = np.random.default_rng(14)
    src = torch.from_numpy(rng.integers(2, V, (4, 5)))
    tgt = torch.flip(src, dims=[1])
    tgt_in = torch.cat([torch.full((4, 1), BOS), tgt[:, :-1]], dim=1)
    src_pad = torch.arange(5)[None, :] >= torch.tensor([5, 4, 5, 3])[:, None]
    emb = nn.Embedding(V, D)
    model = nn.Transformer(D, nhead=2, num_encoder_layers=1, num_decoder_layers=2,
                           dim_feedforward=32, dropout=0.0, batch_first=True)
    head = nn.Linear(D, V)
    mods = nn.ModuleList([emb, model, head]); init(mods, 0, 0.2)
    opt = torch.optim.Adam(mods.parameters(), lr=5e-3)
    tgt_mask = model.generate_square_subsequent_mask(5)
    for step in range(10):
        out = model(emb(src), emb(tgt_in), tgt_mask=tgt_mask, src_key_padding_mask=src_pad,
                    memory_key_padding_mask=src_pad, tgt_is_causal=True)
        loss = F.cross_entropy(head(out).view(-1, V), tgt.reshape(-1))
        opt.zero_grad(); loss.backward(); opt.step()
        rec("loss", loss.item())
    model.eval()
    with torch.no_grad():
        memory = model.encoder(emb(src), src_key_padding_mask=src_pad)
        ys = torch.full((4, 1), BOS, dtype=torch.long)
        for i in range(5):
            m = nn.Transformer.generate_square_subsequent_mask(ys.size(1))
            h = model.decoder(emb(ys), memory, tgt_mask=m, memory_key_padding_mask=src_pad)
            nxt = head(h[:, -1]).argmax(-1, keepdim=True)
            ys = torch.cat([ys, nxt], dim=1)
    rec("memory", memory.masked_fill(src_pad[..., None], 0)); rec("greedy", ys)
    print("greedy", ys.tolist())
    rec("enc_in_proj_bias", model.encoder.layers[0].self_attn.in_proj_bias)
    rec("dec_in_proj_bias", model.decoder.layers[1].self_attn.in_proj_bias)
    rec("head", head.weight)


def _sparse_emb(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    rng = np.random.default_rng(28)
    emb = nn.Embedding(30, 6, sparse=True)
    bag = nn.EmbeddingBag(30, 6, mode="mean", sparse=True)
    lin = nn.Linear(12, 1)
    init(emb, 0); init(bag, 1); init(lin, 2)
    sopt = torch.optim.SparseAdam(list(emb.parameters()) + list(bag.parameters()), lr=1e-2)
    dopt = torch.optim.Adam(lin.parameters(), lr=1e-2)
    ids = torch.from_numpy(rng.integers(0, 30, 16))
    bags = torch.from_numpy(rng.integers(0, 30, (16, 3)))
    y = torch.from_numpy(rng.standard_normal((16, 1)).astype(np.float32))
    for step in range(10):
        out = lin(torch.cat([emb(ids), bag(bags)], 1))
        loss = F.mse_loss(out, y)
        sopt.zero_grad(); dopt.zero_grad(); loss.backward()
        rec("sparse", emb.weight.grad.is_sparse)
        sopt.step(); dopt.step()
        rec("loss", loss.item())
    g = emb.weight.grad.coalesce()
    rec("g_idx", g.indices()); rec("g_val", g.values()); rec("dense", g.to_dense())
    rec("w", emb.weight); rec("bag_w", bag.weight)


def _transformer(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional

    class Enc(nn.Module):
        def __init__(self, V=10, d=16, L=6):
            super().__init__()
            self.emb = nn.Embedding(V, d)
            self.pos = nn.Parameter(torch.zeros(1, L, d))
            layer = nn.TransformerEncoderLayer(d, nhead=4, dim_feedforward=32, dropout=0.0,
                                               batch_first=True, norm_first=True,
                                               activation="gelu")
            self.enc = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
            self.head = nn.Linear(d, V)

        def forward(self, x, pad_mask):
            h = self.emb(x) * math.sqrt(16) + self.pos[:, :x.size(1)]
            causal = nn.Transformer.generate_square_subsequent_mask(x.size(1))
            h = self.enc(h, mask=causal, src_key_padding_mask=pad_mask, is_causal=True)
            return self.head(h)

    rng = np.random.default_rng(5)
    x = torch.from_numpy(rng.integers(1, 10, (8, 6)))
    lens = torch.tensor([6, 6, 5, 4, 6, 3, 6, 2])
    pad_mask = torch.arange(6)[None, :] >= lens[:, None]
    y = torch.roll(x, -1, dims=1).masked_fill(pad_mask, -100)
    model = Enc()
    init(model, 0, 0.2)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 5))
    crit = nn.CrossEntropyLoss(label_smoothing=0.1, ignore_index=-100)
    for step in range(12):
        logits = model(x, pad_mask)
        loss = crit(logits.transpose(1, 2), y)
        opt.zero_grad()
        loss.backward()
        opt.step(); sched.step()
        rec("loss", loss.item())
    model.eval()
    with torch.no_grad():
        out = model(x, pad_mask)
        rec("eval", out.masked_fill(pad_mask[..., None], 0.0))
        probs = F.softmax(out, dim=-1)
        rec("probsum", probs.sum(-1))
        rec("top", torch.topk(out[~pad_mask], k=2, dim=-1).indices)
    for n, p in model.named_parameters():
        rec(n, p)


def _vae(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional

    class VAE(nn.Module):
        def __init__(self, d=20, h=32, z=4):
            super().__init__()
            self.enc = nn.Sequential(nn.Linear(d, h), nn.ReLU())
            self.mu = nn.Linear(h, z)
            self.logvar = nn.Linear(h, z)
            self.dec = nn.Sequential(nn.Linear(z, h), nn.LeakyReLU(0.1), nn.Linear(h, d))

        def forward(self, x, eps):
            h = self.enc(x)
            mu, logvar = self.mu(h), self.logvar(h).clamp(-6, 6)
            z = mu + torch.exp(0.5 * logvar) * eps
            return self.dec(z), mu, logvar

    rng = np.random.default_rng(1)
    data = torch.from_numpy((rng.random((64, 20)) > 0.5).astype(np.float32))
    eps_all = torch.tensor(rng.standard_normal((15, 64, 4)), dtype=torch.float32)
    model = VAE()
    init(model)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(15):
        opt.zero_grad()
        logits, mu, logvar = model(data, eps_all[step])
        bce = F.binary_cross_entropy_with_logits(logits, data, reduction="sum")
        kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
        loss = (bce + kl) / data.size(0)
        loss.backward()
        opt.step()
        rec("loss", loss.item())
        rec("kl", kl.detach())
    with torch.no_grad():
        model.eval()
        recon = torch.sigmoid(model(data[:4], torch.zeros(4, 4))[0])
        rec("recon", recon)
        rec("mse", F.mse_loss(recon, data[:4]).item())
        print(f"final {loss.item():.4f}", recon.shape, recon.dtype)
    for n, p in model.named_parameters():
        rec(n, p)


def _vision_ops(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional

    class STNAutoEnc(nn.Module):
        def __init__(self):
            super().__init__()
            self.loc = nn.Sequential(nn.Flatten(), nn.Linear(64, 6))
            self.enc = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1, padding_mode="reflect"),
                                     nn.GroupNorm(2, 4), nn.Hardswish())
            self.pool = nn.MaxPool2d(2, return_indices=True)
            self.unpool = nn.MaxUnpool2d(2)
            self.mid = nn.Sequential(nn.Conv2d(4, 8, 3, padding="same", dilation=1),
                                     nn.InstanceNorm2d(8, affine=True), nn.PReLU(8))
            self.up = nn.ConvTranspose2d(8, 4, 3, stride=1, padding=1)
            self.shuf = nn.Sequential(nn.Conv2d(4, 4, 1), nn.PixelShuffle(2))
            self.out = nn.Conv2d(1, 1, 3, padding=1, padding_mode="circular")

        def forward(self, x):
            theta = self.loc(x).view(-1, 2, 3) + torch.tensor([[1.0, 0, 0], [0, 1.0, 0]])
            grid = F.affine_grid(theta, list(x.size()), align_corners=False)
            x = F.grid_sample(x, grid, mode="bilinear", padding_mode="border",
                              align_corners=False)
            h = self.enc(x)
            p, idx = self.pool(h)
            p = self.up(self.mid(p))
            u = self.unpool(p, idx, output_size=h.shape[-2:])
            s = F.interpolate(self.shuf(u), scale_factor=0.5, mode="bilinear",
                              align_corners=True)
            s2 = F.avg_pool2d(self.shuf(u), 2, ceil_mode=True, count_include_pad=False)
            return self.out(s + s2)

    rng = np.random.default_rng(15)
    x = torch.from_numpy(rng.standard_normal((4, 1, 8, 8)).astype(np.float32))
    model = STNAutoEnc(); init(model, 0, 0.2)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for step in range(10):
        loss = F.l1_loss(model(x), x) + 0.1 * F.huber_loss(model(x), x, delta=0.5)
        opt.zero_grad(); loss.backward(); opt.step()
        rec("loss", loss.item())
    with torch.no_grad():
        y = model(x)
        rec("y", y)
        patches = F.unfold(x, kernel_size=3, padding=1, stride=2)
        rec("unfold", patches)
        rec("fold", F.fold(patches, (8, 8), kernel_size=3, padding=1, stride=2))
        rec("up_nearest", F.interpolate(x, size=(5, 7), mode="nearest"))
        rec("up_bicubic", F.interpolate(x, scale_factor=1.5, mode="bicubic", align_corners=False))
        rec("adaptive_max", F.adaptive_max_pool2d(x, (3, 3)))
        rec("lp", F.lp_pool2d(x.abs(), 2, 2))
    for n, p in model.named_parameters():
        rec(n, p)


META = {
    'adaptive_lm': (   0.0001,
                       1e-05,
                       (   'dec.layers.0.multihead_attn.in_proj_bias',
                           'dec.layers.0.self_attn.in_proj_bias')),
    'char_lstm': (0.0001, 1e-05, ()),
    'ckpt_amp': (0.002, 0.002, ()),
    'contrastive': (0.0001, 1e-05, ()),
    'custom_fn': (0.0001, 1e-05, ()),
    'dataloader': (0.0001, 1e-05, ()),
    'distill': (0.0001, 1e-05, ()),
    'gan': (0.0001, 1e-05, ('0.bias', 'running_mean', 'sample')),
    'gnn': (0.0001, 1e-05, ()),
    'gru_attn': (0.0001, 1e-05, ('att.bias',)),
    'hooks_utils': (0.0001, 1e-05, ()),
    'hvp': (0.0001, 1e-05, ()),
    'losses_mix': (0.0001, 1e-05, ()),
    'meta_llm': (0.0001, 1e-05, ()),
    'norms_acts': (0.0001, 1e-05, ()),
    'param_swa': (0.0001, 1e-05, ()),
    'perceiver': (0.0001, 1e-05, ()),
    'recsys': (0.0001, 1e-05, ()),
    'resnet': (0.0001, 1e-05, ()),
    'resume': (0.0001, 1e-05, ('0.bias', '0.bias_resumed')),
    'rnn_h0': (0.0001, 1e-05, ()),
    'rnn_tbptt': (0.0001, 1e-05, ()),
    'seeded': (0.0001, 1e-05, ()),
    'segment': (0.0001, 1e-05, ('d1.0.bias',)),
    'seq2seq': (0.0002, 1e-05, ('dec_in_proj_bias', 'enc_in_proj_bias')),
    'sparse_emb': (0.0001, 1e-05, ()),
    'transformer': (   0.0002,
                       1e-05,
                       (   'enc.layers.0.self_attn.in_proj_bias',
                           'enc.layers.1.self_attn.in_proj_bias')),
    'vae': (0.0001, 1e-05, ()),
    'vision_ops': (0.0001, 1e-05, ('mid.0.bias',)),
}

# PyTorch 2.13 (CPU): (a logged name, its first and last value, summed)
REFS = {
    'adaptive_lm': ('loss', 3.0727431774139404, 2.651362895965576),
    'char_lstm': ('loss', 2.7274086475372314, 2.07548189163208),
    'ckpt_amp': ('loss', 0.7262203693389893, 0.2022494524717331),
    'contrastive': ('loss', 1.1400914192199707, 0.011211378499865532),
    'custom_fn': ('loss', 0.4612193703651428, 0.34948235750198364),
    'dataloader': ('loss', 5.297987937927246, 0.30526068806648254),
    'distill': ('loss', 1.4004058837890625, 0.973508358001709),
    'gan': ('lossD', 1.4412646293640137, 1.3757755756378174),
    'gnn': ('loss', 2.326775550842285, 0.11098949611186981),
    'gru_attn': ('loss', 0.7239301800727844, 0.2925323247909546),
    'hooks_utils': ('loss', 0.8674989342689514, 0.6247890591621399),
    'hvp': ('gn_loss', 23.62371758692622, 5.748189629781324),
    'losses_mix': ('l1', 0.7863679528236389, 0.733924150466919),
    'meta_llm': ('loss', 2.5709409713745117, 2.3697235584259033),
    'norms_acts': ('loss', 0.8897468447685242, 0.6392384767532349),
    'param_swa': ('loss', 0.9548965692520142, 0.5941328406333923),
    'perceiver': ('loss', 0.7307460904121399, 0.47163161635398865),
    'recsys': ('loss', 1.4032824039459229, 0.7462562322616577),
    'resnet': ('loss', 1.1400439739227295, 1.025390863418579),
    'resume': ('loss', 0.951850414276123, 0.9350806474685669),
    'rnn_h0': ('gru_out', -0.5848356857895851, -0.5848356857895851),
    'rnn_tbptt': ('loss', 1.277136206626892, 0.4800618588924408),
    'seeded': ('lin_w', -0.34842902421951294, -0.34842902421951294),
    'segment': ('loss', 2.348576545715332, 2.189579486846924),
    'seq2seq': ('loss', 2.1888163089752197, 2.0168232917785645),
    'sparse_emb': ('loss', 0.8549191951751709, 0.48761674761772156),
    'transformer': ('loss', 2.513017416000366, 2.0958774089813232),
    'vae': ('loss', 24.45205307006836, 14.214484214782715),
    'vision_ops': ('loss', 0.9022085666656494, 0.8734731674194336),
}


# name -> (program, rtol, atol, names compared loosely). The loose ones are parameters whose
# gradient is exactly zero in exact arithmetic (a bias feeding a BatchNorm / InstanceNorm, the
# key bias of attention, a score bias before a softmax): Adam turns their rounding noise into
# lr-sized steps, so both libraries move them only to within ~1e-3.
PROGRAMS = {name: (globals()[f"_{name}"],) + META[name] for name in META}

_cached_tg_run = functools.lru_cache(maxsize=None)(lambda name: _run(tg, PROGRAMS[name][0]))


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program(name: str) -> None:
    _, rtol, atol, loose = PROGRAMS[name]
    log, _, _ = _cached_tg_run(name)
    key, first, last = REFS[name]  # PyTorch 2.13's, from the same weights and data
    got = [float(np.asarray(v, dtype=np.float64).sum()) for n, v in log if n == key]
    assert np.isfinite(got).all()
    np.testing.assert_allclose([got[0], got[-1]], [first, last], rtol=max(rtol, 1e-4),
                               atol=atol)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_matches_torch(name: str) -> None:
    torch = pytest.importorskip("torch", minversion="2.13")
    program, rtol, atol, loose = PROGRAMS[name]
    ref_log, ref_out, ref_warnings = _run(torch, program)
    log, out, said = _cached_tg_run(name)
    assert [n for n, _ in log] == [n for n, _ in ref_log]
    diffs = [_same(n, a, b, rtol, 1e-2 if n in loose else atol)
             for (n, a), (_, b) in zip(ref_log, log)]
    assert [d for d in diffs if d] == []
    assert out == ref_out
    assert said == ref_warnings


# A bool padding mask given with a float attention mask (the usual pairing: a bool
# ``src_key_padding_mask`` and ``generate_square_subsequent_mask``'s float one): PyTorch warns
# once per module that converts them (MultiheadAttention, the functional form, each encoder
# layer, the encoder: the layers below then see two float masks) and computes as with two
# float masks.
_MISMATCH = "Support for mismatched {} and {} is deprecated. Use same type for both instead."


def _mask_case(kind: str, pad, causal):
    tg.manual_seed(0)
    x = tg.from_numpy(np.random.default_rng(0).standard_normal((2, 4, 8)).astype(np.float32))
    nn = tg.nn
    if kind == "mha":
        mha = nn.MultiheadAttention(8, 2, batch_first=True)
        return lambda: mha(x, x, x, key_padding_mask=pad, attn_mask=causal)[0]
    if kind == "layer":
        layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
        return lambda: layer(x, src_mask=causal, src_key_padding_mask=pad)
    if kind == "encoder":
        enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0,
                                                               batch_first=True), 2,
                                    enable_nested_tensor=False)
        return lambda: enc(x, mask=causal, src_key_padding_mask=pad)
    dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0,
                                                           batch_first=True), 2)
    return lambda: dec(x, x, tgt_mask=causal, tgt_key_padding_mask=pad)


@pytest.mark.parametrize("kind, names, count", [
    ("mha", ("key_padding_mask", "attn_mask"), 1),
    ("layer", ("src_key_padding_mask", "src_mask"), 1),
    ("encoder", ("src_key_padding_mask", "mask"), 1),
    ("decoder", ("key_padding_mask", "attn_mask"), 2),  # each layer's self-attention
])
def test_mismatched_masks_warn(kind: str, names: tuple, count: int) -> None:
    pad = tg.tensor([[False, False, False, True], [False, False, True, True]])
    causal = tg.nn.Transformer.generate_square_subsequent_mask(4)
    pad_float = tg.zeros(2, 4).masked_fill(pad, float("-inf"))
    causal_bool = tg.ones(4, 4, dtype=tg.bool).triu(1)
    for p, c in ((pad, causal), (pad_float, causal_bool)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = _mask_case(kind, p, c)()
        assert [str(w.message) for w in caught] == [_MISMATCH.format(*names)] * count
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # one dtype: no warning
            want = _mask_case(kind, pad_float, causal)()
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6,
                                   atol=1e-6)


def test_mismatched_masks_attention_values() -> None:
    """MultiheadAttention with a bool padding mask and a float causal mask, against float64
    NumPy: softmax(q k^T / sqrt(d) + masks) v per head, projected."""
    tg.manual_seed(0)
    mha = tg.nn.MultiheadAttention(8, 2, batch_first=True)
    _set_params(tg, mha, 3, 0.4)
    x = np.random.default_rng(1).standard_normal((2, 4, 8))
    pad = np.array([[False, False, False, True], [False, False, True, True]])
    causal = tg.nn.Transformer.generate_square_subsequent_mask(4)
    with pytest.warns(UserWarning, match="Support for mismatched key_padding_mask"):
        out, weights = mha(*(tg.tensor(x, dtype=tg.float32),) * 3,
                           key_padding_mask=tg.tensor(pad), attn_mask=causal)
    w_in, b_in = (mha.in_proj_weight.detach().numpy().astype(np.float64),
                  mha.in_proj_bias.detach().numpy().astype(np.float64))
    q, k, v = np.split(x @ w_in.T + b_in, 3, axis=-1)
    heads = lambda t: t.reshape(2, 4, 2, 4).transpose(0, 2, 1, 3)  # (N, H, L, D)
    bias = np.where(np.triu(np.ones((4, 4)), 1) > 0, -np.inf, 0.0)[None, None] \
        + np.where(pad, -np.inf, 0.0)[:, None, None, :]
    s = heads(q) @ heads(k).transpose(0, 1, 3, 2) / 2.0 + bias
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    o = (p @ heads(v)).transpose(0, 2, 1, 3).reshape(2, 4, 8)
    want = o @ mha.out_proj.weight.detach().numpy().T + mha.out_proj.bias.detach().numpy()
    np.testing.assert_allclose(out.detach().numpy(), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(weights.detach().numpy(), p.mean(1), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("target, message", [
    ([0.0, 2.0, 1.0], "all elements of target should be between 0 and 1"),
    ([0.0, float("nan"), 1.0], "all elements of target should be between 0 and 1"),
    ([-0.5, 0.0, 1.0], "all elements of target should be between 0 and 1"),
])
def test_binary_cross_entropy_checks_its_target(target: list, message: str) -> None:
    """Class indices passed as BCE targets (a common slip) are refused, as PyTorch refuses
    them, instead of giving a loss of no meaning."""
    with pytest.raises(RuntimeError, match=message):
        tg.nn.functional.binary_cross_entropy(tg.full((3,), 0.5), tg.tensor(target))
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        tg.nn.functional.binary_cross_entropy(tg.tensor(target), tg.full((3,), 0.5))
    ok = tg.nn.functional.binary_cross_entropy(tg.full((3,), 0.5), tg.tensor([0.0, 0.25, 1.0]))
    assert math.isclose(ok.item(), math.log(2.0), rel_tol=1e-6)


@pytest.mark.parametrize("shape, target, first", [
    ((3, 4), [[5, 7, 6]], 5),
    ((3, 4), [[1, -2, 6]], -2),
    ((2, 4, 2), [[1, -100], [5, 9]], 5),  # ignore_index skipped; (N, d) in order
])
def test_nll_loss_names_the_first_bad_target(shape: tuple, target: list, first: int) -> None:
    t = tg.tensor(target).reshape(shape[:1] + shape[2:])
    with pytest.raises(IndexError, match=f"^Target {first} is out of bounds.$"):
        tg.nn.functional.nll_loss(tg.zeros(shape), t)
