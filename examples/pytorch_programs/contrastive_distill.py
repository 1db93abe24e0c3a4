"""Two training tricks as PyTorch users write them: SimCLR-style contrastive pretraining (two
noisy views, F.normalize, a cosine-similarity matrix with the diagonal masked_fill'ed, the
NT-Xent loss as cross_entropy over it) followed by knowledge distillation of a linear-probed
teacher into a smaller student (KLDivLoss with log_target on temperature-scaled
log_softmax, plus the hard-label loss), with gradient accumulation over micro-batches, a
CosineAnnealingLR, and top-p filtering of the student's predictions with sort/cumsum/scatter."""

import numpy as np
import tritongrad as torch
import tritongrad.nn as nn
import tritongrad.nn.functional as F


def digits():
    from sklearn.datasets import load_digits
    d = load_digits()
    x = torch.from_numpy((d.data / 16.0).astype(np.float32))
    return x, torch.from_numpy(d.target.astype(np.int64))


def augment(x, gen):
    noise = 0.15 * torch.randn(x.shape, generator=gen)
    drop = (torch.rand(x.shape, generator=gen) > 0.15).float()
    return (x + noise) * drop


def nt_xent(z1, z2, temperature=0.2):
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    sim = z @ z.T / temperature
    n = z1.shape[0]
    sim = sim.masked_fill(torch.eye(2 * n, dtype=torch.bool), float("-inf"))
    targets = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)])
    return F.cross_entropy(sim, targets)


def top_p_filter(logits, p=0.9):
    sorted_logits, order = torch.sort(logits, descending=True, dim=-1)
    cum = sorted_logits.softmax(-1).cumsum(-1)
    remove = cum > p
    remove[..., 1:] = remove[..., :-1].clone()
    remove[..., 0] = False
    mask = torch.zeros_like(remove).scatter(-1, order, remove)
    return logits.masked_fill(mask, float("-inf"))


def main(epochs: int = 8, verbose: bool = True) -> float:
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    x, y = digits()
    train_x, train_y, test_x, test_y = x[:1400], y[:1400], x[1400:], y[1400:]
    encoder = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64))
    projector = nn.Sequential(nn.ReLU(), nn.Linear(64, 32))
    opt = torch.optim.Adam(list(encoder.parameters()) + list(projector.parameters()), lr=2e-3)
    for epoch in range(epochs):
        perm = torch.randperm(len(train_x), generator=gen)
        for i in range(0, len(perm) - 127, 128):
            xb = train_x[perm[i:i + 128]]
            loss = nt_xent(projector(encoder(augment(xb, gen))),
                           projector(encoder(augment(xb, gen))))
            opt.zero_grad()
            loss.backward()
            opt.step()
        if verbose:
            print(f"contrastive epoch {epoch + 1}: loss {loss.item():.3f}")

    teacher = nn.Sequential(encoder, nn.Linear(64, 10))
    for p in encoder.parameters():
        p.requires_grad_(False)
    probe_opt = torch.optim.Adam(teacher[1].parameters(), lr=1e-2)
    for _ in range(100):
        loss = F.cross_entropy(teacher(train_x), train_y)
        probe_opt.zero_grad()
        loss.backward()
        probe_opt.step()
    teacher.eval()

    student = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    s_opt = torch.optim.SGD(student.parameters(), lr=0.1, momentum=0.9)
    steps, accum, T = 120, 4, 3.0
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(s_opt, T_max=steps)
    kl = nn.KLDivLoss(reduction="batchmean", log_target=True)
    for step in range(steps):
        idx = torch.randint(0, len(train_x), (128,), generator=gen)
        s_opt.zero_grad()
        for micro in idx.chunk(accum):
            xb, yb = train_x[micro], train_y[micro]
            with torch.no_grad():
                t_logits = teacher(xb)
            s_logits = student(xb)
            loss = (0.7 * T * T * kl(F.log_softmax(s_logits / T, -1),
                                     F.log_softmax(t_logits / T, -1))
                    + 0.3 * F.cross_entropy(s_logits, yb)) / accum
            loss.backward()
        s_opt.step()
        sched.step()
    student.eval()
    with torch.no_grad():
        t_err = (teacher(test_x).argmax(1) != test_y).float().mean().item()
        logits = top_p_filter(student(test_x))
        s_err = (logits.argmax(1) != test_y).float().mean().item()
        kept = torch.isfinite(logits).sum(1).float().mean().item()
    if verbose:
        print(f"teacher (linear probe) error {t_err:.3f}, student error {s_err:.3f}, "
              f"classes kept by top-p 0.9: {kept:.2f}")
    return s_err


if __name__ == "__main__":
    main()
