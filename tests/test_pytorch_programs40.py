"""More ordinary PyTorch programs run under tritongrad (session 40), with programs38's harness.

Each ``_<name>(torch, rec, init)`` is a small program a PyTorch user writes, taking the library
as ``torch``: a ViT with a class token over a Conv2d patch stem, a U-Net with transposed
convolutions and skip concatenation, a packed GRU seq2seq with teacher forcing, SWA with
``SWALR`` and ``update_bn``, LoRA adapters over a frozen base, RMSNorm with rotary embeddings
through ``torch.polar``, a spatial transformer, a Newton step through
``autograd.functional``, a data pipeline over ``random_split`` / ``WeightedRandomSampler``,
bucketized features and quantile metrics, REINFORCE with an entropy bonus, early stopping on
``ReduceLROnPlateau``, gradient accumulation with per-group weight decay, overlap-add denoising
through ``Fold`` / ``Unfold``, a linear-chain CRF with Viterbi decoding, beam search, k-means,
a NeRF-style renderer, a PointNet, a mean teacher, closed-form linear algebra, a prototypical
network, a gradient-reversal domain adapter, a text CNN, multi-label metrics, a Fourier
neural operator with complex parameters, an STFT front end, lazy modules with the legacy
weight / spectral norm hooks, count regression, second-order MAML through ``functional_call``,
an ``IterableDataset`` stream, Bayes by backprop and fine-tuning a ``skip_init`` head over a
loaded backbone. ``test_program`` checks tritongrad against PyTorch 2.13's first / last
loss recorded in REFS (runs without torch); ``test_program_matches_torch`` compares the whole
log, the printed output and the warnings with a PyTorch run where torch is installed. The
tests after them are the regressions the sweep found (error and warning words, ``skip_init``'s
random stream).
"""

from __future__ import annotations

import copy
import io
import math
import warnings

import numpy as np
import pytest

import tritongrad as tg
from tests.test_pytorch_programs38 import _mod
from tests.test_pytorch_programs39 import _data, program_tests


def _vit(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    rng = np.random.default_rng(40)
    x = torch.from_numpy(_data(rng, 6, 3, 8, 8)); y = torch.from_numpy(rng.integers(0, 4, 6))

    class ViT(nn.Module):
        def __init__(self, d=16, patch=4):
            super().__init__()
            self.patch = patch
            self.stem = nn.Conv2d(3, d, patch, stride=patch)
            self.cls = nn.Parameter(torch.zeros(1, 1, d))
            self.pos = nn.Parameter(torch.zeros(1, 1 + (8 // patch) ** 2, d))
            layer = nn.TransformerEncoderLayer(d, 4, 32, dropout=0.0, activation="gelu",
                                               batch_first=True, norm_first=True)
            self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.norm = nn.LayerNorm(d)
            self.head = nn.Linear(d, 4)

        def forward(self, x):
            tok = self.stem(x).flatten(2).transpose(1, 2)
            tok = torch.cat([self.cls.expand(x.shape[0], -1, -1), tok], dim=1) + self.pos
            return self.head(self.norm(self.enc(tok))[:, 0])

    model = ViT(); init(model, 1, 0.2)
    # the same patches through unfold: a Conv2d stem is a linear map of the flattened patches
    cols = F.unfold(x, kernel_size=4, stride=4).transpose(1, 2)
    lin = cols @ model.stem.weight.flatten(1).T + model.stem.bias
    rec("stem_vs_unfold", (lin - model.stem(x).flatten(2).transpose(1, 2)).abs().max())
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2 and "pos" not in n]
    no_decay = [p for n, p in model.named_parameters() if p.ndim < 2 or "pos" in n]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05},
                             {"params": no_decay, "weight_decay": 0.0}], lr=3e-3)
    warm = torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=3)
    cos = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=7, eta_min=1e-4)
    sched = torch.optim.lr_scheduler.SequentialLR(opt, [warm, cos], milestones=[3])
    for step in range(10):
        loss = F.cross_entropy(model(x), y, label_smoothing=0.1)
        opt.zero_grad(); loss.backward(); opt.step(); sched.step()
        rec("loss", loss.item()); rec("lr", sched.get_last_lr())
    model.eval()
    with torch.inference_mode():
        probs = model(x).softmax(-1)
    rec("probs", probs); rec("is_inference", probs.is_inference())
    for n, p in model.named_parameters():
        rec(n, p)


def _unet(torch, rec, init):
    nn = torch.nn
    rng = np.random.default_rng(41)
    x = torch.from_numpy(_data(rng, 2, 1, 16, 16))
    mask = torch.from_numpy((rng.random((2, 1, 16, 16)) > 0.7).astype(np.float32))

    def block(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False),
                             nn.BatchNorm2d(cout), nn.ReLU(inplace=True))

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.d1, self.d2 = block(1, 4), block(4, 8)
            self.pool = nn.MaxPool2d(2)
            self.mid = block(8, 8)
            self.u2 = nn.ConvTranspose2d(8, 8, 2, stride=2)
            self.c2 = block(16, 4)
            self.u1 = nn.ConvTranspose2d(4, 4, 2, stride=2)
            self.c1 = block(8, 4)
            self.out = nn.Conv2d(4, 1, 1)

        def forward(self, x):
            s1 = self.d1(x)
            s2 = self.d2(self.pool(s1))
            m = self.mid(self.pool(s2))
            h = self.c2(torch.cat([self.u2(m), s2], dim=1))
            h = self.c1(torch.cat([self.u1(h), s1], dim=1))
            return self.out(h)

    def dice_loss(logits, target, eps=1.0):
        p = logits.sigmoid()
        inter = (p * target).sum(dim=(1, 2, 3))
        return 1 - ((2 * inter + eps) / (p.sum(dim=(1, 2, 3)) + target.sum(dim=(1, 2, 3)) + eps)
                    ).mean()

    net = UNet(); init(net, 2, 0.3)
    bce = nn.BCEWithLogitsLoss(pos_weight=torch.tensor([2.0]))
    opt = torch.optim.Adam(net.parameters(), lr=1e-2, betas=(0.8, 0.99))
    for step in range(8):
        logits = net(x)
        loss = bce(logits, mask) + dice_loss(logits, mask)
        opt.zero_grad(set_to_none=True); loss.backward(); opt.step()
        rec("loss", loss.item())
    net.eval()
    with torch.no_grad():
        pred = (net(x) > 0).float()
    iou = (pred * mask).sum() / ((pred + mask) > 0).float().sum().clamp(min=1)
    rec("iou", iou); rec("running_var", net.mid[1].running_var)
    rec("tracked", net.d1[1].num_batches_tracked)
    for n, p in net.named_parameters():
        rec(n, p)


def _packed_seq2seq(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    rnn_utils = _mod(torch, "nn.utils.rnn")
    rng = np.random.default_rng(42)
    V, PAD, BOS = 10, 0, 1
    lens = [6, 4, 5, 2]
    src = [torch.from_numpy(rng.integers(2, V, n)) for n in lens]
    tgt = [s.flip(0) for s in src]  # learn to reverse
    src_pad = rnn_utils.pad_sequence(src, batch_first=True, padding_value=PAD)
    tgt_pad = rnn_utils.pad_sequence(tgt, batch_first=True, padding_value=PAD)
    dec_in = F.pad(tgt_pad[:, :-1], (1, 0), value=BOS)
    teacher = torch.from_numpy(rng.random((8, tgt_pad.size(1))) < 0.5)

    class Seq2Seq(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(V, 8, padding_idx=PAD)
            self.enc = nn.GRU(8, 8, batch_first=True, bidirectional=True)
            self.bridge = nn.Linear(16, 12)
            self.dec = nn.GRUCell(8, 12)
            self.out = nn.Linear(12, V)

        def encode(self, x, lengths):
            packed = rnn_utils.pack_padded_sequence(self.emb(x), lengths, batch_first=True,
                                                    enforce_sorted=False)
            out, h = self.enc(packed)
            out, out_lens = rnn_utils.pad_packed_sequence(out, batch_first=True)
            return out, torch.tanh(self.bridge(torch.cat([h[0], h[1]], dim=-1))), out_lens

    model = Seq2Seq(); init(model, 3, 0.3)
    opt = torch.optim.Adam(model.parameters(), lr=2e-2)
    lengths = torch.tensor(lens)
    for step in range(8):
        enc_out, h, out_lens = model.encode(src_pad, lengths)
        inp, logits = dec_in[:, 0], []
        for t in range(tgt_pad.size(1)):
            h = model.dec(model.emb(inp), h)
            logits.append(model.out(h))
            nxt = logits[-1].argmax(-1)
            inp = torch.where(teacher[step, t], tgt_pad[:, t], nxt) if t + 1 < tgt_pad.size(1) \
                else nxt
        logits = torch.stack(logits, 1)
        loss = F.cross_entropy(logits.transpose(1, 2), tgt_pad, ignore_index=PAD)
        opt.zero_grad(); loss.backward()
        rec("gnorm", nn.utils.clip_grad_norm_(model.parameters(), 1.0)); opt.step()
        rec("loss", loss.item())
    rec("enc_out", enc_out); rec("out_lens", out_lens)
    packed = rnn_utils.pack_sequence(src, enforce_sorted=False)
    rec("batch_sizes", packed.batch_sizes); rec("sorted_idx", packed.sorted_indices)
    rec("unsorted_idx", packed.unsorted_indices)
    rec("unpacked", rnn_utils.unpad_sequence(src_pad, lengths, batch_first=True)[3])
    for n, p in model.named_parameters():
        rec(n, p)


def _swa_bn(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    swa_utils = _mod(torch, "optim.swa_utils")
    data = _mod(torch, "utils.data")
    rng = np.random.default_rng(43)
    X = torch.from_numpy(_data(rng, 40, 6)); y = torch.from_numpy(rng.integers(0, 3, 40))
    loader = data.DataLoader(data.TensorDataset(X, y), batch_size=10, shuffle=False)
    model = nn.Sequential(nn.Linear(6, 12), nn.BatchNorm1d(12), nn.ReLU(), nn.Linear(12, 3))
    init(model, 4, 0.3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    swa_model = swa_utils.AveragedModel(model)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4)
    swa_sched = swa_utils.SWALR(opt, swa_lr=0.02, anneal_epochs=2, anneal_strategy="linear")
    for epoch in range(6):
        for xb, yb in loader:
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad(); loss.backward(); opt.step()
            rec("loss", loss.item())
        if epoch >= 3:
            swa_model.update_parameters(model); swa_sched.step()
        else:
            sched.step()
        rec("lr", opt.param_groups[0]["lr"])
    rec("n_averaged", swa_model.n_averaged)
    rec("mean_before", swa_model.module[1].running_mean)
    swa_utils.update_bn(loader, swa_model)
    rec("mean_after", swa_model.module[1].running_mean)
    rec("var_after", swa_model.module[1].running_var)
    rec("momentum_restored", swa_model.module[1].momentum)
    swa_model.eval()
    with torch.no_grad():
        rec("swa_out", swa_model(X[:5]))
    rec("keys", sorted(swa_model.state_dict()))
    for n, p in swa_model.named_parameters():
        rec(n, p)


def _lora(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    rng = np.random.default_rng(44)
    x = torch.from_numpy(_data(rng, 16, 12)); y = torch.from_numpy(rng.integers(0, 5, 16))

    class LoRALinear(nn.Module):
        def __init__(self, base: nn.Linear, r=2, alpha=4.0):
            super().__init__()
            self.base = base.requires_grad_(False)
            self.A = nn.Parameter(torch.zeros(r, base.in_features))
            self.B = nn.Parameter(torch.zeros(base.out_features, r))
            self.scale = alpha / r

        def forward(self, x):
            return self.base(x) + (x @ self.A.T @ self.B.T) * self.scale

        @torch.no_grad()
        def merge(self) -> nn.Linear:
            merged = copy.deepcopy(self.base)
            merged.weight += self.scale * self.B @ self.A
            return merged

    base = nn.Sequential(nn.Linear(12, 16), nn.GELU(), nn.Linear(16, 5))
    init(base, 5, 0.3)
    model = nn.Sequential(LoRALinear(base[0]), base[1], LoRALinear(base[2]))
    torch.manual_seed(0)  # A drawn as nn.Linear draws its weight; B stays zero
    for m in model.modules():
        if isinstance(m, LoRALinear):
            nn.init.kaiming_uniform_(m.A, a=math.sqrt(5))
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    rec("trainable", trainable)
    rec("n_trainable", sum(p.numel() for p in model.parameters() if p.requires_grad))
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    frozen = model[0].base.weight.clone()
    for step in range(10):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        rec("loss", loss.item())
    rec("base_unchanged", torch.equal(frozen, model[0].base.weight))
    rec("base_grad", model[0].base.weight.grad is None)
    merged = nn.Sequential(model[0].merge(), nn.GELU(), model[2].merge())
    with torch.no_grad():
        rec("merge_err", (merged(x) - model(x)).abs().max())
    rec("A0", model[0].A); rec("B2", model[2].B)


def _rope_rms(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    rng = np.random.default_rng(45)
    V, T, D, H = 16, 8, 16, 2
    tokens = torch.from_numpy(rng.integers(0, V, (3, T + 1)))

    def rope_freqs(dim, T, theta=10000.0):
        freqs = 1.0 / theta ** (torch.arange(0, dim, 2).float() / dim)
        angles = torch.outer(torch.arange(T).float(), freqs)
        return torch.polar(torch.ones_like(angles), angles)

    def apply_rope(x, freqs):
        xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
        return torch.view_as_real(xc * freqs).flatten(-2).type_as(x)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.n1, self.n2 = nn.RMSNorm(D, eps=1e-6), nn.RMSNorm(D, eps=1e-6)
            self.qkv = nn.Linear(D, 3 * D, bias=False)
            self.proj = nn.Linear(D, D, bias=False)
            self.w1, self.w3 = nn.Linear(D, 32, bias=False), nn.Linear(D, 32, bias=False)
            self.w2 = nn.Linear(32, D, bias=False)

        def forward(self, x, freqs):
            B = x.shape[0]
            q, k, v = self.qkv(self.n1(x)).view(B, T, 3, H, D // H).unbind(2)
            q, k = apply_rope(q, freqs[:, None]), apply_rope(k, freqs[:, None])
            a = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                               v.transpose(1, 2), is_causal=True)
            x = x + self.proj(a.transpose(1, 2).reshape(B, T, D))
            h = self.n2(x)
            return x + self.w2(F.silu(self.w1(h)) * self.w3(h))

    emb = nn.Embedding(V, D); block = Block(); head = nn.Linear(D, V, bias=False)
    model = nn.ModuleList([emb, block, head]); init(model, 6, 0.3)
    head.weight = emb.weight  # tied
    freqs = rope_freqs(D // H, T)
    rec("freqs", torch.view_as_real(freqs)); rec("freq_dtype", str(freqs.dtype))
    opt = torch.optim.AdamW(model.parameters(), lr=5e-3, betas=(0.9, 0.95), fused=False)
    for step in range(8):
        logits = head(block(emb(tokens[:, :-1]), freqs))
        loss = F.cross_entropy(logits.reshape(-1, V), tokens[:, 1:].reshape(-1))
        opt.zero_grad(); loss.backward(); opt.step()
        rec("loss", loss.item())
    rec("n_params", sum(p.numel() for p in model.parameters()))
    rec("tied", head.weight is emb.weight)
    rec("abs_freqs", freqs.abs()); rec("angle", freqs.angle()[-1])
    for n, p in model.named_parameters():
        rec(n, p)


def _stn(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    rng = np.random.default_rng(46)
    img = torch.from_numpy(_data(rng, 4, 1, 10, 10)); y = torch.from_numpy(rng.integers(0, 3, 4))

    class STN(nn.Module):
        def __init__(self):
            super().__init__()
            self.loc = nn.Sequential(nn.Conv2d(1, 4, 3), nn.MaxPool2d(2), nn.ReLU(),
                                     nn.Flatten(), nn.Linear(4 * 4 * 4, 6))
            self.cls = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(),
                                     nn.AdaptiveAvgPool2d(2), nn.Flatten(), nn.Linear(16, 3))

        def forward(self, x):
            theta = self.loc(x).view(-1, 2, 3)
            grid = F.affine_grid(theta, list(x.size()), align_corners=False)
            warped = F.grid_sample(x, grid, mode="bilinear", padding_mode="border",
                                   align_corners=False)
            return self.cls(warped), theta

    net = STN(); init(net, 7, 0.2)
    with torch.no_grad():  # start from the identity transform, as the tutorial does
        net.loc[-1].weight.zero_()
        net.loc[-1].bias.copy_(torch.tensor([1, 0, 0, 0, 1, 0], dtype=torch.float))
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    for step in range(8):
        out, theta = net(img)
        loss = F.cross_entropy(out, y)
        opt.zero_grad(); loss.backward(); opt.step()
        rec("loss", loss.item()); rec("theta", theta)
    g = F.affine_grid(torch.eye(2, 3).unsqueeze(0), [1, 1, 4, 5], align_corners=True)
    rec("id_sample", F.grid_sample(img[:1], F.affine_grid(torch.eye(2, 3)[None], [1, 1, 10, 10],
                                                          align_corners=True),
                                   align_corners=True) - img[:1])
    rec("grid", g)
    rot = torch.tensor([[[0.0, -1.0, 0.0], [1.0, 0.0, 0.0]]])
    for mode in ("nearest", "bicubic"):
        for pad in ("zeros", "reflection"):
            grid = F.affine_grid(rot * 1.2, [1, 1, 10, 10], align_corners=False)
            rec(f"{mode}_{pad}", F.grid_sample(img[:1], grid, mode=mode, padding_mode=pad,
                                               align_corners=False))
    for n, p in net.named_parameters():
        rec(n, p)


def _newton(torch, rec, init):
    AF = _mod(torch, "autograd.functional")
    rng = np.random.default_rng(47)
    X = torch.from_numpy(rng.standard_normal((30, 3)))
    w_true = torch.tensor([1.5, -2.0, 0.5], dtype=torch.float64)
    y = (torch.sigmoid(X @ w_true) > torch.from_numpy(rng.random(30))).double()

    def nll(w):
        z = X @ w
        return F_bce(z, y) + 0.05 * w.pow(2).sum()

    F_bce = lambda z, t: torch.nn.functional.binary_cross_entropy_with_logits(z, t)
    w = torch.zeros(3, dtype=torch.float64)
    for step in range(6):
        g = AF.jacobian(nll, w)
        Hm = AF.hessian(nll, w)
        w = w - torch.linalg.solve(Hm, g)
        rec("loss", nll(w).item()); rec("gnorm", g.norm().item())
    rec("w", w)
    # jacobian of a vector map, vectorized and not, and the strategy variants
    f = lambda a, b: (a.sin() * b, (a * b).sum().reshape(1))
    a, b = torch.from_numpy(rng.standard_normal(3)), torch.from_numpy(rng.standard_normal(3))
    Ja = AF.jacobian(f, (a, b))
    rec("J00", Ja[0][0]); rec("J01", Ja[0][1]); rec("J10", Ja[1][0])
    Jv = AF.jacobian(f, (a, b), vectorize=True, strategy="forward-mode")
    rec("Jv00", Jv[0][0])
    rec("hvp", AF.hvp(nll, w, torch.ones(3, dtype=torch.float64))[1])
    rec("vhp", AF.vhp(nll, w, torch.ones(3, dtype=torch.float64))[1])
    _, jvp = AF.jvp(lambda t: t.exp().cumsum(0), a, torch.ones(3, dtype=torch.float64))
    rec("jvp", jvp)


def _data_pipeline(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    data = _mod(torch, "utils.data")
    rng = np.random.default_rng(48)
    X = torch.from_numpy(_data(rng, 50, 4)); y = torch.from_numpy(rng.integers(0, 3, 50))
    y[:35] = 0  # imbalanced: most samples in class 0
    ds = data.TensorDataset(X, y)
    g = torch.Generator().manual_seed(7)
    train, val, test = data.random_split(ds, [0.6, 0.2, 0.2], generator=g)
    rec("split_sizes", (len(train), len(val), len(test)))
    rec("train_idx", list(train.indices))
    counts = torch.bincount(y[train.indices], minlength=3)
    weights = (1.0 / counts.float())[y[train.indices]]
    sampler = data.WeightedRandomSampler(weights, num_samples=len(train), replacement=True,
                                         generator=torch.Generator().manual_seed(3))
    drawn = list(sampler)
    rec("drawn", drawn)
    loader = data.DataLoader(train, batch_size=8, sampler=sampler, drop_last=True)
    rec("n_batches", len(loader))
    model = nn.Linear(4, 3); init(model, 8, 0.3)
    opt = torch.optim.Adagrad(model.parameters(), lr=0.1, lr_decay=0.01)
    torch.manual_seed(11)
    for epoch in range(3):
        for xb, yb in loader:
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad(); loss.backward(); opt.step()
            rec("loss", loss.item())
    sub = data.Subset(ds, [0, 5, 10, 49])
    both = data.ConcatDataset([sub, data.Subset(ds, range(2))])
    rec("concat_len", len(both)); rec("concat_last", both[5][1])
    batches = list(data.BatchSampler(data.SequentialSampler(both), batch_size=4, drop_last=False))
    rec("batches", batches)
    rec("perm_sampler", list(data.RandomSampler(range(6), generator=torch.Generator()
                                                .manual_seed(1))))
    rec("subset_rand", list(data.SubsetRandomSampler([3, 1, 4, 9],
                                                     generator=torch.Generator().manual_seed(2))))
    vl = data.DataLoader(val, batch_size=16, collate_fn=lambda b: torch.stack([x for x, _ in b]))
    with torch.no_grad():
        rec("val_out", torch.cat([model(xb) for xb in vl]))
    for n, p in model.named_parameters():
        rec(n, p)


def _feature_eng(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    rng = np.random.default_rng(49)
    age = torch.from_numpy((rng.random(40) * 80).astype(np.float32))
    income = torch.from_numpy(rng.lognormal(3, 1, 40).astype(np.float32))
    y = torch.from_numpy((rng.random(40) < 0.4).astype(np.float32))
    edges = torch.tensor([18.0, 30.0, 45.0, 65.0])
    age_bin = torch.bucketize(age, edges)
    age_bin_r = torch.bucketize(age, edges, right=True)
    rec("age_bin", age_bin); rec("age_bin_r", age_bin_r)
    q = torch.quantile(income, torch.tensor([0.25, 0.5, 0.75]))
    rec("q", q)
    for interp in ("lower", "higher", "nearest", "midpoint"):
        rec(f"q_{interp}", torch.quantile(income, 0.3, interpolation=interp))
    inc_bin = torch.searchsorted(q, income)
    rec("inc_bin", inc_bin)
    rec("hist", torch.histc(age, bins=8, min=0, max=80))
    h, e = torch.histogram(income, bins=5)
    rec("histogram", h); rec("hist_edges", e)
    log_inc = torch.log1p(income)
    z = (log_inc - log_inc.mean()) / log_inc.std(unbiased=True)
    feats = torch.cat([F.one_hot(age_bin, 5).float(), F.one_hot(inc_bin, 4).float(),
                       z[:, None]], dim=1)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(10, 8); self.out = nn.Linear(8, 1)

        def forward(self, f):
            return self.out(F.mish(self.lin(f))).squeeze(-1)

    net = Net(); init(net, 9, 0.3)
    opt = torch.optim.NAdam(net.parameters(), lr=2e-2, momentum_decay=4e-3)
    for step in range(10):
        loss = F.binary_cross_entropy_with_logits(net(feats), y)
        opt.zero_grad(); loss.backward(); opt.step()
        rec("loss", loss.item())
    with torch.no_grad():
        err = (net(feats).sigmoid() - y).abs()
    rec("median_err", err.median()); rec("nanmedian", torch.nanmedian(
        torch.where(err > 0.6, float("nan"), err)))
    vals, idx = err.view(4, 10).median(dim=1)
    rec("row_median", vals); rec("row_median_idx", idx)
    rec("p90", torch.quantile(err.view(4, 10), 0.9, dim=1, keepdim=True))
    rec("nanq", torch.nanquantile(torch.tensor([1.0, float("nan"), 3.0, 2.0]), 0.5))
    kth, mode = torch.kthvalue(err, 5), torch.mode(age_bin)
    rec("kth", kth.values); rec("kth_i", kth.indices); rec("mode", mode.values)
    uniq, counts = torch.unique(age_bin, return_counts=True)
    rec("unique", uniq); rec("counts", counts)
    for n, p in net.named_parameters():
        rec(n, p)


def _reinforce(torch, rec, init):
    nn = torch.nn
    D = _mod(torch, "distributions")
    rng = np.random.default_rng(50)
    states = torch.from_numpy(_data(rng, 12, 4))  # a batch of contexts for a 3-armed bandit
    payoff = torch.from_numpy(_data(rng, 4, 3))
    policy = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 3))
    init(policy, 10, 0.3)
    opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
    torch.manual_seed(5)
    baseline = 0.0
    for step in range(10):
        dist = D.Categorical(logits=policy(states))
        actions = dist.sample()
        reward = (states @ payoff).gather(1, actions[:, None]).squeeze(1)
        baseline = 0.9 * baseline + 0.1 * reward.mean().item()
        loss = -(dist.log_prob(actions) * (reward - baseline)).mean() - 0.01 * dist.entropy().mean()
        opt.zero_grad(); loss.backward(); opt.step()
        rec("loss", loss.item()); rec("actions", actions); rec("entropy", dist.entropy())
    # discounted returns of one episode, computed backwards with flip / cumsum-free loop
    rewards = torch.from_numpy(_data(rng, 7))
    gamma, R, returns = 0.9, 0.0, []
    for r in rewards.flip(0):
        R = r + gamma * R
        returns.append(R)
    returns = torch.stack(returns[::-1])
    rec("returns", (returns - returns.mean()) / (returns.std() + 1e-8))
    dist = D.Categorical(probs=torch.tensor([[0.2, 0.5, 0.3], [0.6, 0.2, 0.2]]))
    rec("probs", dist.probs); rec("logits", dist.logits); rec("mode", dist.mode)
    rec("sample_n", dist.sample((4,))); rec("enum", dist.enumerate_support())
    rec("kl", D.kl_divergence(dist, D.Categorical(logits=torch.zeros(2, 3))))
    oh = D.OneHotCategorical(logits=torch.zeros(3))
    rec("onehot", oh.sample((2,)))
    for n, p in policy.named_parameters():
        rec(n, p)


def _early_stop(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    rng = np.random.default_rng(51)
    Xtr, Xva = torch.from_numpy(_data(rng, 30, 5)), torch.from_numpy(_data(rng, 10, 5))
    w = torch.from_numpy(_data(rng, 5, 1))
    ytr, yva = Xtr @ w + 0.3 * torch.from_numpy(_data(rng, 30, 1)), Xva @ w
    model = nn.Sequential(nn.Linear(5, 16), nn.ELU(alpha=0.5), nn.Dropout(0.0), nn.Linear(16, 1))
    init(model, 11, 0.5)
    opt = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.8)
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=1,
                                                       threshold=1e-2, threshold_mode="abs",
                                                       cooldown=1, min_lr=1e-3)
    best, best_state, bad, patience = float("inf"), None, 0, 4
    for epoch in range(30):
        model.train()
        loss = F.mse_loss(model(Xtr), ytr)
        opt.zero_grad(); loss.backward(); opt.step()
        model.eval()
        with torch.no_grad():
            val = F.mse_loss(model(Xva), yva).item()
        sched.step(val)
        rec("loss", loss.item()); rec("val", val); rec("lr", sched.get_last_lr()[0])
        if val < best - 1e-4:
            best, bad = val, 0
            best_state = copy.deepcopy(model.state_dict())
        else:
            bad += 1
            if bad >= patience:
                print(f"early stop at epoch {epoch}, best {best:.4f}")
                break
    state = sched.state_dict()
    for k in ("best", "num_bad_epochs", "cooldown_counter", "last_epoch", "_last_lr"):
        rec(k, state[k])
    model.load_state_dict(best_state)
    with torch.no_grad():
        rec("restored_val", F.mse_loss(model(Xva), yva).item())
    rec("best", best)
    for n, p in model.named_parameters():
        rec(n, p)


def _grad_accum(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    rng = np.random.default_rng(52)
    X = torch.from_numpy(_data(rng, 24, 8)); y = torch.from_numpy(rng.integers(0, 4, 24))
    model = nn.Sequential(nn.Linear(8, 16), nn.LayerNorm(16), nn.GELU(), nn.Linear(16, 4))
    init(model, 12, 0.4)
    no_decay = {n for n, _ in model.named_parameters() if n.endswith("bias") or n.startswith("1.")}
    groups = [{"params": [p for n, p in model.named_parameters() if n not in no_decay]},
              {"params": [p for n, p in model.named_parameters() if n in no_decay],
               "weight_decay": 0.0, "lr": 5e-3}]
    opt = torch.optim.AdamW(groups, lr=1e-2, weight_decay=0.1)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, [lambda s: 0.9 ** s, lambda s: 1.0])
    accum = 3
    for i, (xb, yb) in enumerate(zip(X.split(4), y.split(4))):
        loss = F.cross_entropy(model(xb), yb) / accum
        loss.backward()
        rec("loss", loss.item() * accum)
        if (i + 1) % accum == 0:
            total = nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.5)
            rec("total_norm", total)
            opt.step(); sched.step(); opt.zero_grad(set_to_none=True)
            rec("lrs", sched.get_last_lr())
    grads = [p.grad for p in model.parameters()]
    rec("grads_none", all(g is None for g in grads))
    loss = F.cross_entropy(model(X), y); loss.backward()
    norm = nn.utils.get_total_norm([p.grad for p in model.parameters()], norm_type=2.0)
    nn.utils.clip_grads_with_norm_(model.parameters(), 0.1, norm)
    rec("norm", norm); rec("clipped", nn.utils.get_total_norm([p.grad for p in model.parameters()]))
    rec("state_steps", torch.stack([opt.state[p]["step"] for p in model.parameters()]))
    sd = opt.state_dict()
    rec("groups", [(g["lr"], g["weight_decay"], g["params"]) for g in sd["param_groups"]])
    for n, p in model.named_parameters():
        rec(n, p)


def _fold_denoise(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    rng = np.random.default_rng(53)
    clean = torch.from_numpy(_data(rng, 2, 1, 12, 12)).cumsum(-1) * 0.3
    noisy = clean + 0.5 * torch.from_numpy(_data(rng, 2, 1, 12, 12))
    k, s = 4, 2
    unfold, fold = nn.Unfold(k, stride=s), nn.Fold((12, 12), k, stride=s)
    counts = fold(unfold(torch.ones(1, 1, 12, 12)))  # how many patches cover each pixel
    rec("counts", counts)

    class PatchAE(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Linear(k * k, 6); self.dec = nn.Linear(6, k * k)

        def forward(self, img):
            patches = unfold(img).transpose(1, 2)  # (N, L, k*k)
            rec_p = self.dec(F.softplus(self.enc(patches), beta=2.0))
            return fold(rec_p.transpose(1, 2)) / counts

    ae = PatchAE(); init(ae, 13, 0.3)
    opt = torch.optim.Adamax(ae.parameters(), lr=2e-2)
    for step in range(10):
        out = ae(noisy)
        loss = F.mse_loss(out, clean)
        opt.zero_grad(); loss.backward(); opt.step()
        rec("loss", loss.item())
    rec("psnr", 10 * torch.log10(clean.max() ** 2 / F.mse_loss(out, clean)))
    pairs = F.unfold(noisy, (3, 2), dilation=(1, 2), padding=(1, 0), stride=(3, 1))
    rec("pairs", pairs)
    rec("refold", F.fold(pairs, (12, 12), (3, 2), dilation=(1, 2), padding=(1, 0),
                         stride=(3, 1)))
    for n, p in ae.named_parameters():
        rec(n, p)


def _crf(torch, rec, init):
    nn = torch.nn
    rng = np.random.default_rng(54)
    B, T, K, V = 3, 6, 4, 12
    words = torch.from_numpy(rng.integers(0, V, (B, T)))
    tags = torch.from_numpy(rng.integers(0, K, (B, T)))
    lengths = torch.tensor([6, 4, 5])
    mask = torch.arange(T)[None] < lengths[:, None]

    class CRFTagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(V, 8)
            self.lstm = nn.LSTM(8, 6, batch_first=True, bidirectional=True)
            self.emit = nn.Linear(12, K)
            self.trans = nn.Parameter(torch.zeros(K, K))
            self.start, self.end = nn.Parameter(torch.zeros(K)), nn.Parameter(torch.zeros(K))

        def emissions(self, w):
            return self.emit(self.lstm(self.emb(w))[0])

        def log_partition(self, em):
            alpha = self.start + em[:, 0]
            for t in range(1, T):
                nxt = torch.logsumexp(alpha[:, :, None] + self.trans + em[:, t, None], dim=1)
                alpha = torch.where(mask[:, t, None], nxt, alpha)
            return torch.logsumexp(alpha + self.end, dim=1)

        def score(self, em, tg_):
            s = self.start[tg_[:, 0]] + em[:, 0].gather(1, tg_[:, :1]).squeeze(1)
            for t in range(1, T):
                step = self.trans[tg_[:, t - 1], tg_[:, t]] + em[:, t].gather(
                    1, tg_[:, t:t + 1]).squeeze(1)
                s = s + step * mask[:, t]
            last = tg_.gather(1, (lengths - 1)[:, None]).squeeze(1)
            return s + self.end[last]

        def viterbi(self, em):
            score, back = self.start + em[:, 0], []
            for t in range(1, T):
                best, idx = (score[:, :, None] + self.trans).max(dim=1)
                back.append(idx)
                score = torch.where(mask[:, t, None], best + em[:, t], score)
            paths = []
            for b in range(B):
                tag = int((score[b] + self.end).argmax())
                path = [tag]
                for t in range(int(lengths[b]) - 1, 0, -1):
                    tag = int(back[t - 1][b, tag]); path.append(tag)
                paths.append(path[::-1])
            return paths

    crf = CRFTagger(); init(crf, 14, 0.3)
    opt = torch.optim.SGD(crf.parameters(), lr=0.1, momentum=0.9, nesterov=True,
                          weight_decay=1e-4)
    for step in range(8):
        em = crf.emissions(words)
        loss = (crf.log_partition(em) - crf.score(em, tags)).mean()
        opt.zero_grad(); loss.backward(); opt.step()
        rec("loss", loss.item())
    with torch.no_grad():
        rec("viterbi", crf.viterbi(crf.emissions(words)))
    for n, p in crf.named_parameters():
        rec(n, p)


def _beam_search(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    rng = np.random.default_rng(55)
    V, H, BEAM = 9, 12, 3
    seqs = torch.from_numpy(rng.integers(1, V, (6, 7)))

    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(V, 8)
            self.rnn = nn.LSTM(8, H, num_layers=2, batch_first=True)
            self.out = nn.Linear(H, V)

        def forward(self, x, state=None):
            out, state = self.rnn(self.emb(x), state)
            return self.out(out), state

    dec = Decoder(); init(dec, 15, 0.4)
    opt = torch.optim.Adam(dec.parameters(), lr=2e-2)
    for step in range(8):
        logits, _ = dec(seqs[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, V), seqs[:, 1:].reshape(-1))
        opt.zero_grad(); loss.backward(); opt.step()
        rec("loss", loss.item())
    dec.eval()
    with torch.no_grad():
        beams = torch.tensor([[3]]); scores = torch.zeros(1); state = None
        for t in range(5):
            logits, state = dec(beams[:, -1:], state)
            logp = F.log_softmax(logits[:, -1], -1)
            cand = (scores[:, None] + logp).reshape(-1)
            scores, flat = cand.topk(BEAM, largest=True, sorted=True)
            src, tok = flat // V, flat % V
            beams = torch.cat([beams[src], tok[:, None]], dim=1)
            state = tuple(s.index_select(1, src) for s in state)
            rec("beam_scores", scores)
        rec("beams", beams)
        norm = scores / beams.size(1) ** 0.7
        rec("best", beams[norm.argmax()])
        greedy = torch.tensor([[3]]); st = None
        for t in range(5):
            lg, st = dec(greedy[:, -1:], st)
            greedy = torch.cat([greedy, lg[:, -1].argmax(-1, keepdim=True)], 1)
        rec("greedy", greedy)
        topk_lp, topk_i = torch.topk(logp, 2, dim=-1, largest=False)
        rec("topk_small", topk_lp); rec("topk_i", topk_i)
    for n, p in dec.named_parameters():
        rec(n, p)


def _kmeans(torch, rec, init):
    rng = np.random.default_rng(56)
    centers = torch.tensor([[0.0, 0.0], [3.0, 3.0], [-3.0, 2.0]])
    X = torch.cat([c + 0.5 * torch.from_numpy(_data(rng, 20, 2)) for c in centers])
    K = 3
    torch.manual_seed(2)
    C = X[torch.randperm(X.size(0))[:K]].clone()  # k-means init from random points
    for it in range(8):
        d = torch.cdist(X, C)
        assign = d.argmin(dim=1)
        counts = torch.bincount(assign, minlength=K).float()
        sums = torch.zeros(K, 2).index_add_(0, assign, X)
        C = sums / counts.clamp(min=1)[:, None]
        inertia = d.gather(1, assign[:, None]).pow(2).sum()
        rec("loss", inertia.item()); rec("counts", counts)
    rec("C", C[C[:, 0].argsort()])
    sums2 = torch.zeros(K, 2).scatter_add_(0, assign[:, None].expand(-1, 2), X)
    rec("scatter_vs_index", (sums2 - sums).abs().max())
    mean_r = torch.zeros(K, 2).scatter_reduce(0, assign[:, None].expand(-1, 2), X, "mean",
                                              include_self=False)
    rec("scatter_mean", (mean_r - C).abs().max())
    # soft k-means: responsibilities through a temperature softmax, differentiable in C (in
    # float64: the gradient is a sum of cancelling terms that float32 leaves ~1e-5 off)
    Cs, X64 = C.double().requires_grad_(True), X.double()
    for t in (1.0, 0.3):
        r = torch.softmax(-torch.cdist(X64, Cs).pow(2) / t, dim=1)
        obj = (r * torch.cdist(X64, Cs).pow(2)).sum()
        g, = torch.autograd.grad(obj, Cs)
        rec(f"soft_grad_{t}", g)
    rec("pdist", torch.nn.functional.pdist(C)); rec("cdist_l1", torch.cdist(C, C, p=1))
    rec("silhouette_a", torch.cdist(X[:5], X[:20]).mean(1))


def _nerf(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    rng = np.random.default_rng(57)
    R, S, L = 8, 12, 4  # rays, samples per ray, frequency bands
    origins = torch.from_numpy(_data(rng, R, 3)) * 0.1
    dirs = F.normalize(torch.from_numpy(_data(rng, R, 3)), dim=-1)
    target = torch.from_numpy(rng.random((R, 3)).astype(np.float32))
    t = torch.linspace(0.5, 2.5, S).expand(R, S)

    def encode(p):
        bands = 2.0 ** torch.arange(L, dtype=torch.float32) * math.pi
        ang = p[..., None] * bands
        return torch.cat([p, ang.sin().flatten(-2), ang.cos().flatten(-2)], dim=-1)

    class Field(nn.Module):
        def __init__(self):
            super().__init__()
            self.trunk = nn.Sequential(nn.Linear(3 + 6 * L, 32), nn.ReLU(), nn.Linear(32, 32),
                                       nn.ReLU())
            self.sigma, self.rgb = nn.Linear(32, 1), nn.Linear(32, 3)

        def forward(self, p):
            h = self.trunk(encode(p))
            return F.softplus(self.sigma(h)).squeeze(-1), torch.sigmoid(self.rgb(h))

    def render(field):
        pts = origins[:, None] + t[..., None] * dirs[:, None]
        sigma, rgb = field(pts)
        delta = torch.cat([t[:, 1:] - t[:, :-1], torch.full((R, 1), 1e10)], dim=-1)
        alpha = 1 - torch.exp(-sigma * delta)
        trans = torch.cumprod(torch.cat([torch.ones(R, 1), 1 - alpha + 1e-10], -1), -1)[:, :-1]
        w = alpha * trans
        return (w[..., None] * rgb).sum(1), (w * t).sum(1), w.sum(1)

    field = Field(); init(field, 16, 0.3)
    opt = torch.optim.Adam(field.parameters(), lr=5e-3, eps=1e-7)
    sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.95)
    for step in range(8):
        color, depth, acc = render(field)
        loss = F.mse_loss(color, target)
        opt.zero_grad(); loss.backward(); opt.step(); sched.step()
        rec("loss", loss.item())
    rec("psnr", -10.0 * torch.log10(loss)); rec("depth", depth); rec("acc", acc)
    rec("enc", encode(origins[:2]))
    for n, p in field.named_parameters():
        rec(n, p)


def _pointnet(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    rng = np.random.default_rng(58)
    pts = torch.from_numpy(_data(rng, 6, 3, 32)); y = torch.from_numpy(rng.integers(0, 3, 6))

    class TNet(nn.Module):
        def __init__(self, k):
            super().__init__()
            self.k = k
            self.conv = nn.Sequential(nn.Conv1d(k, 16, 1), nn.BatchNorm1d(16), nn.ReLU())
            self.fc = nn.Linear(16, k * k)

        def forward(self, x):
            h = self.conv(x).amax(dim=2)
            return self.fc(h).view(-1, self.k, self.k) + torch.eye(self.k)

    class PointNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.tnet = TNet(3)
            self.feat = nn.Sequential(nn.Conv1d(3, 16, 1), nn.BatchNorm1d(16), nn.ReLU(),
                                      nn.Conv1d(16, 32, 1))
            self.head = nn.Sequential(nn.Linear(32, 16), nn.Dropout(0.0), nn.ReLU(),
                                      nn.Linear(16, 3))

        def forward(self, x):
            T = self.tnet(x)
            x = torch.bmm(T, x)
            g, idx = self.feat(x).max(dim=2)
            return self.head(g), T, idx

    net = PointNet(); init(net, 17, 0.3)
    opt = torch.optim.Adam(net.parameters(), lr=1e-2, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.7)
    for step in range(8):
        out, T, idx = net(pts)
        reg = torch.linalg.matrix_norm(T @ T.transpose(1, 2) - torch.eye(3), ord="fro").mean()
        loss = F.cross_entropy(out, y) + 1e-3 * reg
        opt.zero_grad(); loss.backward(); opt.step(); sched.step()
        rec("loss", loss.item()); rec("reg", reg)
    rec("critical_idx", idx)
    net.eval()
    perm = torch.from_numpy(rng.permutation(32))
    with torch.no_grad():
        rec("perm_invariant", (net(pts)[0] - net(pts[:, :, perm])[0]).abs().max())
    rec("bn_mean", net.feat[1].running_mean)
    for n, p in net.named_parameters():
        rec(n, p)


def _mean_teacher(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    rng = np.random.default_rng(59)
    x_lab = torch.from_numpy(_data(rng, 8, 6)); y_lab = torch.from_numpy(rng.integers(0, 3, 8))
    x_unl = torch.from_numpy(_data(rng, 16, 6))
    noise = torch.from_numpy(_data(rng, 10, 2, 16, 6)) * 0.1
    student = nn.Sequential(nn.Linear(6, 16), nn.SiLU(), nn.Linear(16, 3))
    init(student, 18, 0.4)
    teacher = copy.deepcopy(student).requires_grad_(False)
    opt = torch.optim.SGD(student.parameters(), lr=0.1, momentum=0.9)

    @torch.no_grad()
    def ema_update(decay):
        for t, s in zip(teacher.parameters(), student.parameters()):
            t.mul_(decay).add_(s, alpha=1 - decay)

    for step in range(10):
        sup = F.cross_entropy(student(x_lab), y_lab)
        s_out = F.softmax(student(x_unl + noise[step, 0]), -1)
        with torch.no_grad():
            t_out = F.softmax(teacher(x_unl + noise[step, 1]), -1)
        cons = F.mse_loss(s_out, t_out)
        w = math.exp(-5 * (1 - min(step, 5) / 5) ** 2)  # sigmoid ramp-up
        loss = sup + 10 * w * cons
        opt.zero_grad(); loss.backward(); opt.step()
        ema_update(min(1 - 1 / (step + 1), 0.99))
        rec("loss", loss.item()); rec("cons", cons)
    for (n, p), q in zip(student.named_parameters(), teacher.parameters()):
        rec(n, p); rec("teacher." + n, q)
    t2 = copy.deepcopy(teacher)
    for p, q in zip(t2.parameters(), student.parameters()):
        p.lerp_(q, 0.5)
    rec("lerp", t2[0].weight)
    rec("teacher_grad", [p.requires_grad for p in teacher.parameters()])


def _linalg_fit(torch, rec, init):
    rng = np.random.default_rng(60)
    X = torch.from_numpy(rng.standard_normal((40, 5)))
    w = torch.from_numpy(rng.standard_normal((5, 2)))
    Y = X @ w + 0.1 * torch.from_numpy(rng.standard_normal((40, 2)))
    ls = torch.linalg.lstsq(X, Y)
    rec("lstsq", ls.solution); rec("rank", ls.rank)
    lam = 0.5
    ridge = torch.linalg.solve(X.T @ X + lam * torch.eye(5, dtype=X.dtype), X.T @ Y)
    rec("ridge", ridge)
    rec("pinv", torch.linalg.pinv(X) @ Y)
    U, S, Vh = torch.linalg.svd(X, full_matrices=False)
    rec("recon", (U * S) @ Vh - X); rec("S", S)
    rec("svdvals", torch.linalg.svdvals(X))
    # PCA: project on the top two principal directions (sign fixed by the largest loading)
    Xc = X - X.mean(0)
    evals, evecs = torch.linalg.eigh(Xc.T @ Xc / (X.shape[0] - 1))
    top = evecs[:, -2:].flip(1)
    top = top * torch.sign(top.gather(0, top.abs().argmax(0, keepdim=True)))
    rec("evals", evals); rec("explained", evals[-2:].sum() / evals.sum())
    rec("proj", (Xc @ top)[:5])
    rec("cov", torch.cov(X.T)); rec("corrcoef", torch.corrcoef(X.T))
    Q, Rm = torch.linalg.qr(X)
    rec("qr", Q @ Rm - X); rec("R_diag_abs", Rm.diagonal().abs())
    L = torch.linalg.cholesky(X.T @ X)
    rec("chol_solve", torch.cholesky_solve(X.T @ Y, L) - torch.linalg.solve(X.T @ X, X.T @ Y))
    rec("cond", torch.linalg.cond(X)); rec("matrix_rank", torch.linalg.matrix_rank(X[:, :3]
                                                                                    .repeat(1, 2)))
    # gradient descent to the same ridge solution, through autograd in float64
    W = torch.zeros(5, 2, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.SGD([W], lr=0.01)
    for step in range(30):
        loss = ((X @ W - Y) ** 2).sum() / 2 + lam / 2 * (W ** 2).sum()
        opt.zero_grad(); loss.backward(); opt.step()
        if step % 5 == 0 or step == 29:
            rec("loss", loss.item())
    rec("gd_vs_ridge", (W - ridge).abs().max())
    rec("expm", torch.linalg.matrix_exp(0.1 * (w.T @ w)))
    rec("det", torch.linalg.det(X.T @ X)); rec("inv", torch.linalg.inv(X.T @ X))


def _protonet(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    rng = np.random.default_rng(61)
    N_WAY, K_SHOT, Q = 3, 4, 5
    means = torch.from_numpy(_data(rng, 10, 8)) * 2
    # no biases: a bias before BatchNorm, or shifting every embedding alike, gets no gradient
    enc = nn.Sequential(nn.Linear(8, 16, bias=False), nn.BatchNorm1d(16), nn.ReLU(),
                        nn.Linear(16, 8, bias=False))
    init(enc, 19, 0.3)
    opt = torch.optim.SGD(enc.parameters(), lr=0.05, momentum=0.9)
    for episode in range(8):
        classes = torch.from_numpy(rng.choice(10, N_WAY, replace=False))
        support = means[classes][:, None] + torch.from_numpy(_data(rng, N_WAY, K_SHOT, 8))
        query = means[classes][:, None] + torch.from_numpy(_data(rng, N_WAY, Q, 8))
        z_s = enc(support.reshape(-1, 8)).view(N_WAY, K_SHOT, -1)
        z_q = enc(query.reshape(-1, 8))
        protos = z_s.mean(1)
        logits = -torch.cdist(z_q, protos).pow(2)
        labels = torch.arange(N_WAY).repeat_interleave(Q)
        loss = F.cross_entropy(logits, labels)
        opt.zero_grad(); loss.backward(); opt.step()
        acc = (logits.argmax(1) == labels).float().mean()
        rec("loss", loss.item()); rec("acc", acc)
    enc.eval()
    with torch.no_grad():
        z = enc(means)
        sim = F.cosine_similarity(z[:, None], z[None], dim=-1)
        rec("sim", sim); rec("nearest", sim.fill_diagonal_(-2).argmax(1))
    for n, p in enc.named_parameters():
        rec(n, p)


def _dann(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional

    class GradReverse(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, lambd):
            ctx.lambd = lambd
            return x.view_as(x)

        @staticmethod
        def backward(ctx, grad):
            return grad.neg() * ctx.lambd, None

    rng = np.random.default_rng(62)
    xs = torch.from_numpy(_data(rng, 16, 5)); ys = torch.from_numpy(rng.integers(0, 2, 16))
    xt = torch.from_numpy(_data(rng, 16, 5)) + 1.0  # shifted target domain
    feat = nn.Sequential(nn.Linear(5, 12), nn.LeakyReLU(0.2))
    cls, dom = nn.Linear(12, 2), nn.Sequential(nn.Linear(12, 8), nn.ReLU(), nn.Linear(8, 1))
    model = nn.ModuleDict({"feat": feat, "cls": cls, "dom": dom}); init(model, 20, 0.3)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for step in range(10):
        p = step / 10
        lambd = 2.0 / (1.0 + math.exp(-10 * p)) - 1
        fs, ft = feat(xs), feat(xt)
        cls_loss = F.cross_entropy(cls(fs), ys)
        d_in = GradReverse.apply(torch.cat([fs, ft]), lambd)
        d_lab = torch.cat([torch.zeros(16), torch.ones(16)])
        dom_loss = F.binary_cross_entropy_with_logits(dom(d_in).squeeze(1), d_lab)
        loss = cls_loss + dom_loss
        opt.zero_grad(); loss.backward(); opt.step()
        rec("loss", loss.item()); rec("dom_loss", dom_loss)
    x = torch.from_numpy(_data(rng, 3, 5)).requires_grad_()
    GradReverse.apply(x, 0.5).sum().backward()
    rec("reversed", x.grad)
    for n, p in model.named_parameters():
        rec(n, p)


def _text_cnn(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    rng = np.random.default_rng(63)
    V, PAD = 30, 0
    docs = torch.from_numpy(rng.integers(1, V, (8, 12)))
    docs[::2, 9:] = PAD
    y = torch.from_numpy(rng.integers(0, 2, 8)).float()

    class TextCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(V, 10, padding_idx=PAD)
            self.convs = nn.ModuleList(nn.Conv1d(10, 6, k, padding=k // 2) for k in (2, 3, 5))
            self.pool = nn.AdaptiveMaxPool1d(1, return_indices=True)
            self.drop = nn.Dropout(0.5)
            self.fc = nn.Linear(18, 1)

        def forward(self, x):
            e = self.emb(x).transpose(1, 2)
            pooled, where = zip(*(self.pool(F.relu(c(e))) for c in self.convs))
            return self.fc(self.drop(torch.cat(pooled, 1).squeeze(-1))).squeeze(-1), where

    net = TextCNN(); init(net, 21, 0.3)
    opt = torch.optim.Adadelta(net.parameters(), lr=1.0, rho=0.9)
    net.eval()  # dropout off: the same program in both libraries regardless of draws
    for step in range(10):
        logits, where = net(docs)
        loss = F.binary_cross_entropy_with_logits(logits, y)
        opt.zero_grad(); loss.backward(); opt.step()
        rec("loss", loss.item())
    rec("where", where[1]); rec("pad_row", net.emb.weight[PAD])
    rec("pad_grad", net.emb.weight.grad[PAD])
    net.train(); torch.manual_seed(4)
    rec("dropped", net(docs)[0])
    rec("training", [m.training for m in net.modules()])
    for n, p in net.named_parameters():
        rec(n, p)


def _multilabel(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    rng = np.random.default_rng(64)
    X = torch.from_numpy(_data(rng, 20, 6)); Y = torch.from_numpy(rng.random((20, 4)) < 0.3)
    model = nn.Sequential(nn.Linear(6, 16), nn.Hardswish(), nn.Linear(16, 4))
    init(model, 22, 0.4)
    pos = Y.float().sum(0)
    crit = nn.BCEWithLogitsLoss(pos_weight=(20 - pos) / pos.clamp(min=1), reduction="mean")
    opt = torch.optim.RAdam(model.parameters(), lr=1e-2, weight_decay=1e-3)
    for step in range(10):
        logits = model(X)
        loss = crit(logits, Y.float())
        opt.zero_grad(); loss.backward(); opt.step()
        rec("loss", loss.item())
    with torch.no_grad():
        probs = torch.sigmoid(model(X))
    pred = probs > 0.5
    tp = (pred & Y).sum(0).float(); fp = (pred & ~Y).sum(0).float()
    fn = (~pred & Y).sum(0).float()
    prec, recall = tp / (tp + fp).clamp(min=1), tp / (tp + fn).clamp(min=1)
    f1 = torch.where(prec + recall > 0, 2 * prec * recall / (prec + recall), 0.0)
    rec("f1", f1); rec("macro_f1", f1.mean())
    rec("micro_f1", 2 * tp.sum() / (2 * tp.sum() + fp.sum() + fn.sum()))
    top2 = probs.topk(2, dim=1).indices
    rec("top2", top2); rec("hit@2", Y.gather(1, top2).any(1).float().mean())
    # AUC of the first label through ranks (ties averaged)
    s, lab = probs[:, 0], Y[:, 0]
    order = s.argsort()
    ranks = torch.empty_like(s).scatter_(0, order, torch.arange(1, 21, dtype=s.dtype))
    n1 = lab.sum()
    rec("auc", (ranks[lab].sum() - n1 * (n1 + 1) / 2) / (n1 * (20 - n1)))
    rec("msml", F.multilabel_soft_margin_loss(model(X), Y.float()))
    rec("hamming", (pred != Y).float().mean())
    rec("nonzero", torch.nonzero(pred[:4])); rec("argwhere", torch.argwhere(Y[:3]))
    for n, p in model.named_parameters():
        rec(n, p)


def _fno(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    rng = np.random.default_rng(65)
    N, M = 32, 6  # grid points, Fourier modes kept
    a = torch.from_numpy(_data(rng, 8, 1, N)).cumsum(-1) * 0.2
    u = torch.fft.irfft(torch.fft.rfft(a) * torch.exp(-0.1 * torch.arange(N // 2 + 1)), n=N)

    class SpectralConv1d(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            scale = 1 / (cin * cout)
            w = torch.from_numpy((rng.standard_normal((cin, cout, M, 2)) * scale)
                                 .astype(np.float32))
            self.weight = nn.Parameter(torch.view_as_complex(w))

        def forward(self, x):
            x_ft = torch.fft.rfft(x, norm="ortho")
            out = torch.zeros(x.shape[0], self.weight.shape[1], x_ft.shape[-1],
                              dtype=torch.cfloat)
            out[..., :M] = torch.einsum("bix,iox->box", x_ft[..., :M], self.weight)
            return torch.fft.irfft(out, n=x.shape[-1], norm="ortho")

    class FNO(nn.Module):
        def __init__(self):
            super().__init__()
            self.lift = nn.Conv1d(1, 4, 1)
            self.spec = nn.ModuleList(SpectralConv1d(4, 4) for _ in range(2))
            self.pw = nn.ModuleList(nn.Conv1d(4, 4, 1) for _ in range(2))
            self.proj = nn.Conv1d(4, 1, 1)

        def forward(self, x):
            h = self.lift(x)
            for s, w in zip(self.spec, self.pw):
                h = F.gelu(s(h) + w(h))
            return self.proj(h)

    net = FNO()
    init(net.lift, 23, 0.3); init(net.pw, 24, 0.3); init(net.proj, 25, 0.3)
    rec("complex_param", str(net.spec[0].weight.dtype))
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    for step in range(8):
        pred = net(a)
        loss = torch.linalg.vector_norm(pred - u) / torch.linalg.vector_norm(u)
        opt.zero_grad(); loss.backward(); opt.step()
        rec("loss", loss.item())
    rec("spec_w", torch.view_as_real(net.spec[0].weight))
    rec("exp_avg", torch.view_as_real(opt.state[net.spec[1].weight]["exp_avg"]))
    spec = torch.fft.fft(a[0, 0])
    rec("fftfreq", torch.fft.rfftfreq(N, d=0.5)); rec("shift", torch.fft.fftshift(
        torch.fft.fftfreq(8)))
    rec("power", spec.abs() ** 2); rec("phase", spec.angle()[:5])
    rec("fft2", torch.view_as_real(torch.fft.fft2(a[:2, 0].reshape(2, 4, 8))))
    rec("ihfft", torch.fft.ihfft(a[0, 0]).imag.resolve_neg())
    for n, p in net.named_parameters():
        rec(n, torch.view_as_real(p) if p.is_complex() else p)


def _spectrogram(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    rng = np.random.default_rng(66)
    sr, n_fft, hop = 800, 64, 16
    t = torch.arange(400) / sr
    freqs = torch.from_numpy(rng.uniform(50, 350, 6).astype(np.float32))
    wave = torch.sin(2 * math.pi * freqs[:, None] * t) + 0.1 * torch.from_numpy(
        _data(rng, 6, 400))
    y = (freqs > 200).long()
    window = torch.hann_window(n_fft)
    spec = torch.stft(wave, n_fft, hop_length=hop, window=window, center=True,
                      pad_mode="reflect", return_complex=True)
    rec("spec_shape", tuple(spec.shape))
    mag = spec.abs()
    mel = torch.from_numpy(np.abs(rng.standard_normal((12, n_fft // 2 + 1))).astype(np.float32))
    logmel = torch.log(mel @ mag + 1e-6)  # (6, 12, frames)
    feats = (logmel - logmel.mean(dim=(1, 2), keepdim=True)) / logmel.std(dim=(1, 2),
                                                                         keepdim=True)
    recon = torch.istft(spec, n_fft, hop_length=hop, window=window, length=400)
    rec("istft_err", (recon - wave).abs().max())
    net = nn.Sequential(nn.Unflatten(1, (1, 12)), nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(),
                        nn.MaxPool2d((2, 2)), nn.Conv2d(4, 8, 3, padding=1), nn.ReLU(),
                        nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(), nn.Linear(8, 2))
    init(net, 26, 0.3)
    opt = torch.optim.AdamW(net.parameters(), lr=5e-3)
    for step in range(8):
        loss = F.cross_entropy(net(feats), y)
        opt.zero_grad(); loss.backward(); opt.step()
        rec("loss", loss.item())
    rec("feats", feats[0, :, :4])
    rec("windows", torch.hamming_window(8, periodic=False) + torch.blackman_window(8))
    onesided = torch.stft(wave[:1], 32, hop_length=8, window=torch.hann_window(32),
                          center=False, onesided=False, normalized=True, return_complex=True)
    rec("stft_twosided", torch.view_as_real(onesided)[0, :3, :3])
    for n, p in net.named_parameters():
        rec(n, p)


def _lazy_legacy(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    rng = np.random.default_rng(67)
    x = torch.from_numpy(_data(rng, 4, 3, 6, 6)); y = torch.from_numpy(_data(rng, 4, 2))
    torch.manual_seed(0)
    net = nn.Sequential(nn.LazyConv2d(4, 3), nn.ReLU(), nn.Flatten(), nn.LazyLinear(2))
    rec("uninit", isinstance(net[3].weight, nn.parameter.UninitializedParameter))
    net(x)  # the dry run materializes the lazy parameters
    rec("shapes", [tuple(p.shape) for p in net.parameters()])
    rec("cls", [type(m).__name__ for m in net])
    init(net, 27, 0.2)
    wn = nn.utils.weight_norm(nn.Linear(2, 2), name="weight", dim=0)
    sn = nn.utils.spectral_norm(nn.Linear(2, 2), n_power_iterations=2)
    init(wn, 28, 0.4); init(sn, 29, 0.4)
    rec("wn_names", sorted(n for n, _ in wn.named_parameters()))
    rec("sn_buffers", sorted(n for n, _ in sn.named_buffers()))
    grads = []
    opt = torch.optim.SGD(list(net.parameters()) + list(wn.parameters()), lr=0.05)
    for step in range(6):
        h = net(x)
        h.register_hook(lambda g: grads.append(g.norm()))  # inspect d loss / d h
        out = wn(torch.tanh(h))
        loss = F.mse_loss(out, y)
        opt.zero_grad(); loss.backward(); opt.step()
        rec("loss", loss.item())
    rec("hook_grads", torch.stack(grads))
    rec("wn_w", wn.weight); rec("wn_g", wn.weight_g)
    sn.eval()
    with torch.no_grad():
        rec("sn_sigma", torch.linalg.matrix_norm(sn.weight, 2))
    nn.utils.remove_weight_norm(wn)
    rec("wn_removed", sorted(n for n, _ in wn.named_parameters()))
    pad = nn.Sequential(nn.ConstantPad2d((1, 0, 2, 1), 0.5), nn.ZeroPad2d(1),
                        nn.ReflectionPad2d((1, 1, 0, 0)), nn.ReplicationPad2d(1))
    rec("pads", pad(x[:1, :1]))
    rec("cos", nn.CosineSimilarity(dim=1, eps=1e-6)(y, y.flip(0)))
    rec("pair", nn.PairwiseDistance(p=1.5, keepdim=True)(y, y.flip(0)))


def _count_regression(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    D = _mod(torch, "distributions")
    rng = np.random.default_rng(68)
    X = torch.from_numpy(_data(rng, 30, 4))
    counts = torch.from_numpy(rng.poisson(3.0, 30).astype(np.float32))
    model = nn.Linear(4, 2); init(model, 30, 0.2)
    pois = nn.PoissonNLLLoss(log_input=True, full=True)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(10):
        out = model(X)
        log_rate, log_disp = out[:, 0], out[:, 1]
        nb = D.NegativeBinomial(total_count=F.softplus(log_disp) + 0.5, logits=log_rate)
        loss = pois(log_rate, counts) - 0.1 * nb.log_prob(counts).mean()
        opt.zero_grad(); loss.backward(); opt.step()
        rec("loss", loss.item())
    rec("pois_nolog", F.poisson_nll_loss(log_rate.exp(), counts, log_input=False,
                                         reduction="none"))
    rec("nb_mean", nb.mean); rec("nb_var", nb.variance)
    p = D.Poisson(log_rate.exp().detach())
    rec("pois_lp", p.log_prob(counts)); rec("pois_mean", p.mean)
    err = out[:, 0].detach() - counts.log1p()
    rec("smoothl1", nn.SmoothL1Loss(beta=0.5)(err, torch.zeros_like(err)))
    rec("huber", nn.HuberLoss(delta=0.5, reduction="sum")(err, torch.zeros_like(err)))
    sign = torch.where(counts > 3, 1.0, -1.0)
    rec("hinge_emb", nn.HingeEmbeddingLoss(margin=0.5)(err.abs(), sign))
    rec("logcumsumexp", torch.logcumsumexp(err, 0))
    cm = torch.cummax(err, 0)
    rec("cummax", cm.values); rec("cummax_i", cm.indices); rec("cummin", torch.cummin(err, 0)[0])
    rec("trapz", torch.trapezoid(counts, dx=0.5)); rec("cumtrapz",
                                                       torch.cumulative_trapezoid(counts[:6]))
    rec("diff", torch.diff(counts, n=2, prepend=torch.zeros(1)))
    for n, q in model.named_parameters():
        rec(n, q)


def _maml(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    func = _mod(torch, "func")
    rng = np.random.default_rng(69)
    net = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1))
    init(net, 31, 0.5)
    meta_opt = torch.optim.Adam(net.parameters(), lr=5e-3)
    inner_lr = 0.1
    for it in range(6):
        meta_opt.zero_grad()
        total = 0.0
        for task in range(2):
            amp, phase = rng.uniform(0.5, 2.0), rng.uniform(0, math.pi)
            xs = torch.from_numpy(rng.uniform(-3, 3, (5, 1)).astype(np.float32))
            xq = torch.from_numpy(rng.uniform(-3, 3, (5, 1)).astype(np.float32))
            ys, yq = amp * torch.sin(xs + phase), amp * torch.sin(xq + phase)
            params = dict(net.named_parameters())
            for _ in range(2):  # inner adaptation, differentiable (second order)
                inner = F.mse_loss(func.functional_call(net, params, (xs,)), ys)
                grads = torch.autograd.grad(inner, params.values(), create_graph=True)
                params = {n: p - inner_lr * g for (n, p), g in zip(params.items(), grads)}
            outer = F.mse_loss(func.functional_call(net, params, (xq,)), yq)
            (outer / 2).backward()
            total += outer.item() / 2
        meta_opt.step()
        rec("loss", total)
    rec("adapted", params["2.weight"])
    # first-order variant: no create_graph, gradients detached
    p = {n: v.detach().clone().requires_grad_() for n, v in net.named_parameters()}
    l = F.mse_loss(func.functional_call(net, p, xs), ys)
    g = torch.autograd.grad(l, list(p.values()))
    rec("fo_grad", g[0]); rec("fo_graph", g[0].requires_grad)
    for n, q in net.named_parameters():
        rec(n, q)


def _stream_data(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    data = _mod(torch, "utils.data")

    class Stream(data.IterableDataset):
        def __init__(self, n, seed):
            self.n, self.seed = n, seed

        def __iter__(self):
            info = data.get_worker_info()
            rng = np.random.default_rng(self.seed if info is None else self.seed + info.id)
            for i in range(self.n):
                x = rng.standard_normal(3).astype(np.float32)
                yield {"x": torch.from_numpy(x), "y": float(x.sum() > 0), "id": i}

    ds = Stream(26, 70)
    loader = data.DataLoader(ds, batch_size=8, drop_last=False)
    first = next(iter(loader))
    rec("keys", sorted(first)); rec("y_dtype", str(first["y"].dtype))
    rec("id_dtype", str(first["id"].dtype)); rec("ids", first["id"])
    model = nn.Sequential(nn.Linear(3, 8), nn.Softplus(), nn.Linear(8, 1))
    init(model, 32, 0.4)
    opt = torch.optim.SGD(model.parameters(), lr=0.3)
    for epoch in range(2):
        for batch in loader:
            logit = model(batch["x"]).squeeze(-1)
            loss = F.binary_cross_entropy(torch.sigmoid(logit), batch["y"].float())
            opt.zero_grad(); loss.backward(); opt.step()
            rec("loss", loss.item()); rec("bs", len(batch["id"]))
    chained = data.ChainDataset([Stream(3, 1), Stream(2, 2)])
    rec("chain", [d["id"] for d in chained])
    coll = data.default_collate([(torch.ones(2), 1, {"a": 2.0}), (torch.zeros(2), 0, {"a": 3.0})])
    rec("collate", coll[0]); rec("collate_int", coll[1]); rec("collate_dict", coll[2]["a"])
    rec("convert", data.default_convert(np.arange(3)))
    for n, p in model.named_parameters():
        rec(n, p)


def _bayes_backprop(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    D = _mod(torch, "distributions")
    rng = np.random.default_rng(71)
    X = torch.from_numpy(_data(rng, 20, 3)); y = torch.from_numpy(_data(rng, 20, 1))

    class BayesLinear(nn.Module):
        def __init__(self, i, o):
            super().__init__()
            self.mu = nn.Parameter(torch.zeros(o, i))
            self.rho = nn.Parameter(torch.full((o, i), -3.0))
            self.prior = D.Normal(0.0, 1.0)

        def forward(self, x):
            q = D.Normal(self.mu, F.softplus(self.rho))
            w = q.rsample()
            self.kl = D.kl_divergence(q, self.prior.expand(q.batch_shape)).sum()
            return x @ w.T

    net = nn.Sequential(BayesLinear(3, 8), nn.ReLU(), BayesLinear(8, 1))
    with torch.no_grad():
        for m in net:
            if isinstance(m, BayesLinear):
                m.mu.copy_(torch.from_numpy(_data(rng, *m.mu.shape)) * 0.4)
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    torch.manual_seed(3)
    for step in range(10):
        pred = net(X)
        nll = -D.Normal(pred, 0.5).log_prob(y).sum()
        kl = sum(m.kl for m in net if isinstance(m, BayesLinear))
        loss = (nll + kl / 10) / 20
        opt.zero_grad(); loss.backward(); opt.step()
        rec("loss", loss.item()); rec("kl", kl)
    ind = D.Independent(D.Normal(torch.zeros(3), torch.ones(3) * 2), 1)
    rec("ind_lp", ind.log_prob(X[:4])); rec("ind_shape", (tuple(ind.batch_shape),
                                                         tuple(ind.event_shape)))
    lr = D.LowRankMultivariateNormal(torch.zeros(3), cov_factor=X[:3, :2] * 0.3,
                                     cov_diag=torch.ones(3))
    rec("lowrank_lp", lr.log_prob(X[:4])); rec("lowrank_cov", lr.covariance_matrix)
    mvn = D.MultivariateNormal(torch.zeros(3), covariance_matrix=lr.covariance_matrix)
    rec("mvn_vs_lowrank", (mvn.log_prob(X[:4]) - lr.log_prob(X[:4])).abs().max())
    rec("kl_mvn", D.kl_divergence(mvn, D.MultivariateNormal(torch.ones(3), torch.eye(3))))
    rec("entropy", lr.entropy())
    for n, p in net.named_parameters():
        rec(n, p)


def _finetune(torch, rec, init):
    nn, F = torch.nn, torch.nn.functional
    rng = np.random.default_rng(72)
    X = torch.from_numpy(_data(rng, 24, 6)); y = torch.from_numpy(rng.integers(0, 3, 24))

    def backbone():
        return nn.Sequential(nn.Linear(6, 12), nn.LayerNorm(12), nn.GELU(), nn.Linear(12, 12),
                             nn.GELU())

    pretrained = nn.Sequential(backbone(), nn.Linear(12, 5))  # trained on another 5-way task
    init(pretrained, 33, 0.3)
    buf = io.BytesIO()
    torch.save(pretrained.state_dict(), buf)
    buf.seek(0)
    torch.manual_seed(9)
    model = nn.Sequential(backbone(), nn.utils.skip_init(nn.Linear, 12, 3))
    state = torch.load(buf, weights_only=True)
    head_keys = [k for k in state if k.startswith("1.")]
    for k in head_keys:  # the old head does not fit the new task
        del state[k]
    result = model.load_state_dict(state, strict=False)
    rec("missing", sorted(result.missing_keys)); rec("unexpected", result.unexpected_keys)
    with torch.no_grad():  # a fresh head, drawn after skip_init (which draws nothing)
        model[1].weight.copy_(torch.randn(3, 12) * 0.1); model[1].bias.zero_()
    for name, p in model.named_parameters():
        p.requires_grad_(not name.startswith("0.0."))  # freeze the first layer
    groups = [{"params": [p for n, p in model.named_parameters()
                          if n.startswith("0.") and p.requires_grad], "lr": 1e-3},
              {"params": model[1].parameters(), "lr": 1e-2}]
    opt = torch.optim.Adam(groups)
    for step in range(10):
        loss = F.cross_entropy(model(X), y)
        opt.zero_grad(); loss.backward(); opt.step()
        rec("loss", loss.item())
    rec("frozen_same", torch.equal(model[0][0].weight, pretrained[0][0].weight))
    rec("n_groups", [len(g["params"]) for g in opt.param_groups])
    for n, p in model.named_parameters():
        rec(n, p)


# name -> (rtol, atol, names compared loosely): the loose ones are parameters whose gradient is
# exactly zero in exact arithmetic (attention's key bias; a convolution's bias feeding a
# BatchNorm, and the BatchNorm statistics it shifts): Adam turns their rounding noise into
# lr-sized steps, so both libraries move them only to within ~1e-3.
META = {name: (1e-4, 1e-5, ()) for name in (
    "bayes_backprop", "beam_search", "count_regression", "crf", "dann", "data_pipeline",
    "early_stop", "feature_eng", "finetune", "fno", "fold_denoise", "grad_accum", "kmeans",
    "lazy_legacy", "linalg_fit", "lora", "maml", "mean_teacher", "multilabel", "nerf", "newton",
    "packed_seq2seq", "protonet", "reinforce", "rope_rms", "spectrogram", "stn", "stream_data",
    "swa_bn", "text_cnn", "unet")}
META["vit"] = (1e-4, 1e-5, ("enc.layers.0.self_attn.in_proj_bias",
                            "enc.layers.1.self_attn.in_proj_bias"))
META["pointnet"] = (1e-4, 1e-5, ("tnet.conv.0.bias", "feat.0.bias", "bn_mean"))

# PyTorch 2.13 (CPU): (a logged name, its first and last value, summed)
REFS = {
    'bayes_backprop': ('loss', 1.9644410610198975, 1.7852281332015991),
    'beam_search': ('loss', 2.2621750831604004, 1.9955942630767822),
    'count_regression': ('loss', 3.9919488430023193, 2.3460915088653564),
    'crf': ('loss', 7.302042007446289, 4.306199073791504),
    'dann': ('loss', 1.8855290412902832, 1.07230544090271),
    'data_pipeline': ('loss', 1.0274463891983032, 0.7944365739822388),
    'early_stop': ('loss', 5.6244635581970215, 0.8838641047477722),
    'feature_eng': ('loss', 0.6706143021583557, 0.5817009210586548),
    'finetune': ('loss', 1.0993561744689941, 1.0773597955703735),
    'fno': ('loss', 1.033115029335022, 0.855108916759491),
    'fold_denoise': ('loss', 0.9924309849739075, 0.3512597978115082),
    'grad_accum': ('loss', 1.5627754926681519, 1.3220634162425995),
    'kmeans': ('loss', 74.39601135253906, 27.490074157714844),
    'lazy_legacy': ('loss', 2.0310399532318115, 1.7247458696365356),
    'linalg_fit': ('loss', 88.87572389599617, 1.6282889197592332),
    'lora': ('loss', 1.7605029344558716, 1.5477159023284912),
    'maml': ('loss', 2.937762141227722, 1.138861283659935),
    'mean_teacher': ('loss', 1.007116675376892, 0.17564654350280762),
    'multilabel': ('loss', 1.291796088218689, 1.2727770805358887),
    'nerf': ('loss', 0.07042703777551651, 0.017997687682509422),
    'newton': ('loss', 0.508504148101242, 0.5065712814020431),
    'packed_seq2seq': ('loss', 2.2727344036102295, 1.6644985675811768),
    'pointnet': ('loss', 2.368669271469116, 0.5573114156723022),
    'protonet': ('loss', 0.8709109425544739, 0.7295024991035461),
    'reinforce': ('loss', -0.35710999369621277, 0.3924681544303894),
    'rope_rms': ('loss', 2.8732376098632812, 2.484914779663086),
    'spectrogram': ('loss', 0.6530582308769226, 0.5767586827278137),
    'stn': ('loss', 1.0431021451950073, 0.9464654326438904),
    'stream_data': ('loss', 0.7389443516731262, 0.6882915496826172),
    'swa_bn': ('loss', 1.204082727432251, 0.8473931550979614),
    'text_cnn': ('loss', 0.7919575572013855, 0.44102710485458374),
    'unet': ('loss', 1.5225393772125244, 1.4597179889678955),
    'vit': ('loss', 1.647410273551941, 1.4894630908966064),
}

PROGRAMS = {name: (globals()[f"_{name}"],) + META[name] for name in META}

test_program, test_program_matches_torch = program_tests(PROGRAMS, REFS)


# -- regressions found by the sweep -----------------------------------------------------------

_BILINEAR_BAD = [  # (input1, input2, weight, bias shapes) -> PyTorch 2.13's exception
    (((2, 3), (3, 4), (5, 3, 4), None), RuntimeError,
     "bilinear(): input batch dimensions do not match at dim 0: got 2 and 3"),
    (((2, 5, 3), (2, 4, 4), (5, 3, 4), None), RuntimeError,
     "bilinear(): input batch dimensions do not match at dim 1: got 5 and 4"),
    (((2, 3), (2, 1, 4), (5, 3, 4), None), RuntimeError,
     "bilinear(): input dimensions do not match: got 2 and 3"),
    (((2, 3), (2, 4), (5, 2, 4), None), RuntimeError,
     "bilinear(): input1 size does not match weight size: got 3 but expected 2"),
    (((2, 3), (2, 4), (5, 3, 5), None), RuntimeError,
     "bilinear(): input2 size does not match weight size: got 4 but expected 5"),
    (((2, 3), (2, 4), (5, 3, 4), (4,)), RuntimeError,
     "bilinear(): bias size does not match weight size: got 4 but expected 5"),
    (((2, 3), (2, 4), (5, 3), None), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    (((2, 3), (2, 4), (5, 3, 4, 1), None), RuntimeError, "number of dimensions must match"),
]


def _bilinear_error(m, shapes) -> tuple[type, str]:
    a, b, w, bias = shapes
    try:
        m.nn.functional.bilinear(m.ones(*a), m.ones(*b), m.ones(*w),
                                 None if bias is None else m.ones(*bias))
    except (RuntimeError, IndexError) as e:
        return type(e), str(e)
    return type(None), ""


@pytest.mark.parametrize("shapes, kind, message", _BILINEAR_BAD)
def test_bilinear_names_the_mismatch_in_torch_words(shapes: tuple, kind: type,
                                                    message: str) -> None:
    """nn.Bilinear / F.bilinear fed the wrong features (a common slip: the two inputs swapped)
    say which input and which size, in PyTorch's order of checks (tritongrad named the weight's
    whole shape and both inputs' features at once)."""
    assert _bilinear_error(tg, shapes) == (kind, message)
    torch = pytest.importorskip("torch")
    assert _bilinear_error(torch, shapes) == (kind, message)


def _optimizer_slips(m) -> list[str]:
    said = []
    p = m.nn.Parameter(m.ones(2))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m.optim.Adam([p, p], lr=0.1)  # the same parameter listed twice
    said += [f"{w.category.__name__}: {w.message}" for w in caught]
    try:  # a scheduler "resumed" on an optimizer that never had one
        m.optim.lr_scheduler.StepLR(m.optim.SGD([p], lr=0.1), 2, last_epoch=3)
    except KeyError as e:
        said.append(f"KeyError: {e.args[0]}")
    lbfgs = m.optim.LBFGS([p], line_search_fn="armijo")  # accepted here ...
    said.append(str(lbfgs.param_groups[0]["line_search_fn"]))
    try:  # ... refused at the first step that searches
        lbfgs.step(lambda: (lbfgs.zero_grad(), (p ** 2).sum().backward(), 0.0)[-1])
    except RuntimeError as e:
        said.append(str(e))
    return said


_OPTIMIZER_SLIPS = [
    ("UserWarning: optimizer contains a parameter group with duplicate parameters; in future, "
     "this will cause an error; see github.com/pytorch/pytorch/issues/40967 for more "
     "information"),
    ("KeyError: param 'initial_lr' is not specified in param_groups[0] when resuming scheduler "
     "with last_epoch >= 0.\nThis typically happens when:\n1. You're trying to resume training "
     "from a checkpoint but haven't properly loaded the optimizer state\n2. You're using "
     "last_epoch >= 0 for a fresh training run (not recommended)"),
    "armijo", "only 'strong_wolfe' is supported"]


def test_optimizer_slips_are_told_in_torch_words() -> None:
    """The warning for a parameter listed twice (which a program's log of warnings compares),
    the KeyError for a scheduler resumed without its optimizer's state, and LBFGS's refusal of
    an unknown line search at its first step (PyTorch accepts it when constructing)."""
    assert _optimizer_slips(tg) == _OPTIMIZER_SLIPS
    torch = pytest.importorskip("torch")
    assert _optimizer_slips(torch) == _OPTIMIZER_SLIPS


def test_batch_norm_single_value_names_the_size_as_torch() -> None:
    """BatchNorm training on one value per channel names the input's ``Size`` as PyTorch does
    (``torch.Size([1, 3])``, not a list)."""
    with pytest.raises(ValueError, match=r"got input size tritongrad\.Size\(\[1, 3\]\)$"):
        tg.nn.BatchNorm1d(3)(tg.ones(1, 3))
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError, match=r"got input size torch\.Size\(\[1, 3\]\)$"):
        torch.nn.BatchNorm1d(3)(torch.ones(1, 3))


def _draws_around_skip_init(m) -> tuple:
    m.manual_seed(1)
    lin = m.nn.utils.skip_init(m.nn.Linear, 5, 2, dtype=m.float64)
    return m.rand(3).tolist(), tuple(lin.weight.shape), str(lin.weight.dtype)


def test_skip_init_leaves_the_random_stream_alone() -> None:
    """``skip_init`` builds the module on the meta device (PyTorch's way): a seeded program
    draws after it what it would draw without it (tritongrad ran the constructor's
    initialization, consuming the global generator)."""
    tg.manual_seed(1)
    expected = tg.rand(3).tolist()
    assert _draws_around_skip_init(tg) == (expected, (2, 5), "tritongrad.float64")
    torch = pytest.importorskip("torch")
    assert _draws_around_skip_init(torch) == (expected, (2, 5), "torch.float64")


@pytest.mark.parametrize("bias_dtype, message", [
    ("float64", "mat1 and mat2 must have the same dtype, but got Float and Double"),
    ("float32", "self and mat2 must have the same dtype, but got Float and Double"),
    ("float16", "self and mat2 must have the same dtype, but got Half and Double"),
])
def test_linear_dtype_mismatch_checks_the_bias_first(bias_dtype: str, message: str) -> None:
    """float32 data through a float64 layer whose bias has yet another dtype (the usual slip:
    NumPy's float64 data, or a half-converted model): PyTorch's addmm(bias, input, weight.t())
    names the bias ("self") against the weight before the input (tritongrad always named the
    input). tritongrad's message names the op first."""
    for shape in ((3,), (2, 3), (2, 2, 3)):
        with pytest.raises(RuntimeError, match=f"^linear: {message}$"):
            tg.nn.functional.linear(tg.ones(*shape), tg.ones(4, 3, dtype=tg.float64),
                                    tg.ones(4, dtype=getattr(tg, bias_dtype)))
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match=f"^{message}$"):
        torch.nn.functional.linear(torch.ones(2, 3), torch.ones(4, 3, dtype=torch.float64),
                                   torch.ones(4, dtype=getattr(torch, bias_dtype)))


def _mha_layouts(m) -> list:
    """The strides of MultiheadAttention's output: sequence-first, batch-first training, and
    batch-first self-attention in eval without autograd (PyTorch's fused fast path)."""
    nn = m.nn
    m.manual_seed(0)
    seq, bf = nn.MultiheadAttention(8, 2), nn.MultiheadAttention(8, 2, batch_first=True)
    x = m.ones(5, 2, 8)
    out = [seq(x, x, x)[0].stride(), bf(x, x, x)[0].stride(), bf(x, x * 2, x * 2)[0].stride()]
    bf.eval()
    with m.no_grad():
        out += [bf(x, x, x)[0].stride(), bf(x, x * 2, x * 2)[0].stride()]
    out.append(tuple(seq(x, x, x)[0].view(10, 8).shape))  # (what the layout allows)
    return out


_MHA_LAYOUTS = [(16, 8, 1), (8, 40, 1), (8, 40, 1), (16, 8, 1), (8, 40, 1), (10, 8)]


def test_attention_output_has_torch_layout() -> None:
    """PyTorch projects MultiheadAttention's output sequence-first: a sequence-first output is
    contiguous (``attn_out.view(L * N, E)`` works) and a batch-first one is its transposed view,
    except on the fused fast path (tritongrad had them the other way round: ``.view`` failed
    on a sequence-first output)."""
    assert _mha_layouts(tg) == _MHA_LAYOUTS
    torch = pytest.importorskip("torch")
    assert _mha_layouts(torch) == _MHA_LAYOUTS


def _seeded_encoder_layer(m, norm_first: bool) -> np.ndarray:
    m.manual_seed(0)
    layer = m.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.3, batch_first=True,
                                         norm_first=norm_first)
    x = m.from_numpy(_data(np.random.default_rng(0), 2, 5, 8))
    m.manual_seed(1)
    return layer(x).detach().numpy()


@pytest.mark.parametrize("norm_first", [False, True])
def test_seeded_encoder_layer_dropout_draws_as_torch(norm_first: bool) -> None:
    """A seeded training step of a batch-first encoder layer draws the dropout after its
    self-attention over PyTorch's memory layout (the transposed view), so the same seed drops
    the same activations (tritongrad dropped others)."""
    got = _seeded_encoder_layer(tg, norm_first)
    assert np.isfinite(got).all() and (got != 0).any()
    torch = pytest.importorskip("torch")
    np.testing.assert_allclose(got, _seeded_encoder_layer(torch, norm_first), rtol=1e-5,
                               atol=1e-5)


def _dropout_after_pad_packed(m) -> tuple:
    R = m.nn.utils.rnn
    m.manual_seed(0)
    lstm = m.nn.LSTM(4, 6, batch_first=True)
    seq = m.from_numpy(_data(np.random.default_rng(1), 3, 5, 4))
    out, _ = R.pad_packed_sequence(lstm(R.pack_padded_sequence(seq, [5, 3, 2],
                                                              batch_first=True))[0],
                                   batch_first=True, total_length=6)
    m.manual_seed(3)
    dropped = m.nn.functional.dropout(out, 0.5)
    return out.stride(), type(out.grad_fn).__name__, (dropped != 0).numpy()


def test_pad_packed_batch_first_is_a_transposed_view_as_torch() -> None:
    """``pad_packed_sequence(batch_first=True)`` pads sequence-first and returns the transposed
    view, as PyTorch (its grad_fn a TransposeBackward0): the usual dropout after an LSTM's
    padded output then keeps the same activations under the same seed (tritongrad returned a
    contiguous batch-first tensor, and dropped others)."""
    stride, node, kept = _dropout_after_pad_packed(tg)
    assert (stride, node) == ((6, 18, 1), "TransposeBackward0")
    torch = pytest.importorskip("torch")
    ref_stride, ref_node, ref_kept = _dropout_after_pad_packed(torch)
    assert (ref_stride, ref_node) == (stride, node)
    np.testing.assert_array_equal(kept, ref_kept)
