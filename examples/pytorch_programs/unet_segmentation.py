"""Image segmentation as PyTorch users write it: a small U-Net (Conv2d + BatchNorm2d + ReLU
blocks, MaxPool2d down, ConvTranspose2d and F.interpolate up, skip connections with
torch.cat) finding discs in noisy 32x32 images, trained with BCE-with-logits plus a soft Dice
loss, data augmentation by torch.flip and torch.rot90, and intersection-over-union at the end."""

import tritongrad as torch
import tritongrad.nn as nn
import tritongrad.nn.functional as F


def make_batch(n, gen, size=32):
    yy, xx = torch.meshgrid(torch.arange(size).float(), torch.arange(size).float(),
                            indexing="ij")
    centers = torch.rand(n, 2, generator=gen) * (size - 12) + 6
    radii = torch.rand(n, generator=gen) * 5 + 3
    d2 = (yy[None] - centers[:, 0, None, None]) ** 2 + (xx[None] - centers[:, 1, None, None]) ** 2
    masks = (d2 < radii[:, None, None] ** 2).float().unsqueeze(1)
    images = masks * 0.8 + 0.5 * torch.randn(n, 1, size, size, generator=gen)
    return images, masks


def block(c_in, c_out):
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out),
                         nn.ReLU(inplace=True), nn.Conv2d(c_out, c_out, 3, padding=1),
                         nn.ReLU(inplace=True))


class UNet(nn.Module):
    def __init__(self, c=8):
        super().__init__()
        self.down1, self.down2, self.bottom = block(1, c), block(c, 2 * c), block(2 * c, 4 * c)
        self.pool = nn.MaxPool2d(2)
        self.up2 = nn.ConvTranspose2d(4 * c, 2 * c, 2, stride=2)
        self.dec2 = block(4 * c, 2 * c)
        self.dec1 = block(2 * c + c, c)
        self.out = nn.Conv2d(c, 1, 1)

    def forward(self, x):
        d1 = self.down1(x)
        d2 = self.down2(self.pool(d1))
        b = self.bottom(self.pool(d2))
        u2 = self.dec2(torch.cat([self.up2(b), d2], dim=1))
        u1 = F.interpolate(u2, scale_factor=2, mode="bilinear", align_corners=False)
        return self.out(self.dec1(torch.cat([u1, d1], dim=1)))


def dice_loss(logits, target, eps=1.0):
    p = torch.sigmoid(logits)
    inter = (p * target).sum(dim=(1, 2, 3))
    union = p.sum(dim=(1, 2, 3)) + target.sum(dim=(1, 2, 3))
    return (1 - (2 * inter + eps) / (union + eps)).mean()


def main(steps: int = 60, verbose: bool = True) -> float:
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    model = UNet()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for step in range(steps):
        x, m = make_batch(16, gen)
        if step % 2:
            x, m = torch.flip(x, dims=[3]), torch.flip(m, dims=[3])
        k = step % 4
        x, m = torch.rot90(x, k, dims=(2, 3)), torch.rot90(m, k, dims=(2, 3))
        logits = model(x)
        loss = F.binary_cross_entropy_with_logits(logits, m) + dice_loss(logits, m)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if verbose and step % 20 == 19:
            print(f"step {step + 1}: loss {loss.item():.3f}")
    model.eval()
    with torch.no_grad():
        x, m = make_batch(64, gen)
        pred = (model(x) > 0).float()
        iou = ((pred * m).sum() / ((pred + m).clamp(max=1).sum())).item()
    if verbose:
        print(f"held-out IoU: {iou:.3f}")
    return 1.0 - iou


if __name__ == "__main__":
    main()
