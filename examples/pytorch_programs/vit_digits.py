"""A small Vision Transformer on the 8x8 digits as a PyTorch user writes one: 4x4 patches cut
with Tensor.unfold and embedded by a Linear, a class token and learned position embeddings
as nn.Parameter (trunc_normal_ initialised, expanded over the batch), nn.TransformerEncoder
(batch_first, norm_first, GELU) with a final LayerNorm, label smoothing, AdamW, a linear
warmup followed by cosine decay via SequentialLR(LinearLR, CosineAnnealingLR), an exponential
moving average of the weights with swa_utils.AveragedModel updated by an optimizer step
post-hook (register_step_post_hook), and evaluation of the EMA model.
main returns the EMA model's held-out error rate."""

import numpy as np
import tritongrad as torch
import tritongrad.nn as nn
from tritongrad.optim.lr_scheduler import CosineAnnealingLR, LinearLR, SequentialLR
from tritongrad.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn


def digits():
    from sklearn.datasets import load_digits
    d = load_digits()
    x = torch.from_numpy((d.data / 16.0).astype(np.float32)).view(-1, 1, 8, 8)
    return x, torch.from_numpy(d.target).long()


class ViT(nn.Module):
    def __init__(self, patch=4, dim=64, depth=2, heads=4, classes=10):
        super().__init__()
        self.patch = patch
        n_patches = (8 // patch) ** 2
        self.embed = nn.Linear(patch * patch, dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, n_patches + 1, dim))
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        nn.init.trunc_normal_(self.cls_token, std=0.02)
        layer = nn.TransformerEncoderLayer(dim, heads, dim_feedforward=2 * dim, dropout=0.1,
                                           activation="gelu", batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, depth, norm=nn.LayerNorm(dim),
                                             enable_nested_tensor=False)
        self.head = nn.Linear(dim, classes)

    def patchify(self, x):
        p = self.patch
        # (B, C, H, W) -> (B, C, H/p, W/p, p, p) -> (B, H/p * W/p, C * p * p)
        x = x.unfold(2, p, p).unfold(3, p, p)
        return x.permute(0, 2, 3, 1, 4, 5).reshape(x.shape[0], -1, x.shape[1] * p * p)

    def forward(self, x):
        tokens = self.embed(self.patchify(x))
        cls = self.cls_token.expand(tokens.shape[0], -1, -1)
        h = self.encoder(torch.cat([cls, tokens], dim=1) + self.pos_embed)
        return self.head(h[:, 0])


def main(epochs: int = 8, verbose: bool = True) -> float:
    torch.manual_seed(0)
    x, y = digits()
    perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(0))
    train, test = perm[:1400], perm[1400:]
    model = ViT()
    ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.95))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.05)
    batch = 64
    steps_per_epoch = (len(train) + batch - 1) // batch
    warmup = steps_per_epoch
    sched = SequentialLR(opt, [LinearLR(opt, start_factor=0.1, total_iters=warmup),
                               CosineAnnealingLR(opt, T_max=epochs * steps_per_epoch - warmup)],
                         milestones=[warmup])
    opt.register_step_post_hook(lambda optimizer, args, kwargs: ema.update_parameters(model))
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)
    for epoch in range(epochs):
        model.train()
        order = train[torch.randperm(len(train))]
        for i in range(0, len(order), batch):
            idx = order[i:i + batch]
            loss = loss_fn(model(x[idx]), y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
        if verbose:
            print(f"epoch {epoch + 1}: loss {loss.item():.3f} lr {sched.get_last_lr()[0]:.2e}")
    ema.eval()
    with torch.no_grad():
        acc = (ema(x[test]).argmax(dim=1) == y[test]).float().mean().item()
    if verbose:
        print(f"EMA held-out accuracy {acc:.3f}")
    return 1.0 - acc


if __name__ == "__main__":
    main()
