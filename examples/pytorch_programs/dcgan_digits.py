"""A DCGAN on the 8x8 digits as a PyTorch user writes one: a generator of ConvTranspose2d +
BatchNorm2d + ReLU ending in Tanh, a discriminator of strided Conv2d + LeakyReLU, DCGAN's
weights_init (nn.init.normal_ / zeros_ chosen by class name) through model.apply,
BCEWithLogitsLoss against torch.full label tensors, two Adam optimizers with betas=(0.5, 0.999),
fakes detached for the discriminator step, and a fixed noise batch sampled under torch.no_grad
in eval mode. main returns how far the generated images' per-pixel mean and standard
deviation lie from the real ones (mean absolute difference, pixels in [-1, 1])."""

import numpy as np
import tritongrad as torch
import tritongrad.nn as nn

NZ = 16


def digits():
    from sklearn.datasets import load_digits
    x = load_digits().data.astype(np.float32) / 8.0 - 1.0  # [0, 16] -> [-1, 1], as Tanh gives
    return torch.from_numpy(x).view(-1, 1, 8, 8)


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        nn.init.normal_(m.weight.data, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        nn.init.normal_(m.weight.data, 1.0, 0.02)
        nn.init.zeros_(m.bias.data)


class Generator(nn.Module):
    def __init__(self, ngf=32):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(NZ, ngf * 2, 4, 1, 0, bias=False),      # 1x1 -> 4x4
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False),     # 4x4 -> 8x8
            nn.BatchNorm2d(ngf),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf, 1, 3, 1, 1, bias=False),           # 8x8 -> 8x8
            nn.Tanh(),
        )

    def forward(self, z):
        return self.main(z)


class Discriminator(nn.Module):
    def __init__(self, ndf=32):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(1, ndf, 4, 2, 1, bias=False),                    # 8x8 -> 4x4
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),              # 4x4 -> 2x2
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, 1, 2, 1, 0, bias=False),                # 2x2 -> 1x1
        )

    def forward(self, x):
        return self.main(x).view(-1)


def main(epochs: int = 4, verbose: bool = True) -> float:
    torch.manual_seed(0)
    data = digits()
    netG, netD = Generator(), Discriminator()
    netG.apply(weights_init)
    netD.apply(weights_init)
    criterion = nn.BCEWithLogitsLoss()
    optD = torch.optim.Adam(netD.parameters(), lr=2e-3, betas=(0.5, 0.999))
    optG = torch.optim.Adam(netG.parameters(), lr=2e-3, betas=(0.5, 0.999))
    fixed_noise = torch.randn(500, NZ, 1, 1)
    real_label, fake_label = 1.0, 0.0
    batch = 64
    for epoch in range(epochs):
        for idx in torch.randperm(len(data)).split(batch):
            real = data[idx]
            b = real.size(0)
            # (1) discriminator: maximise log D(x) + log(1 - D(G(z)))
            netD.zero_grad()
            label = torch.full((b,), real_label, dtype=torch.float)
            errD_real = criterion(netD(real), label)
            errD_real.backward()
            fake = netG(torch.randn(b, NZ, 1, 1))
            label.fill_(fake_label)
            errD_fake = criterion(netD(fake.detach()), label)
            errD_fake.backward()
            optD.step()
            # (2) generator: maximise log D(G(z))
            netG.zero_grad()
            label.fill_(real_label)
            errG = criterion(netD(fake), label)
            errG.backward()
            optG.step()
        if verbose:
            print(f"epoch {epoch + 1}: loss_D {(errD_real + errD_fake).item():.3f} "
                  f"loss_G {errG.item():.3f}")
    netG.eval()
    with torch.no_grad():
        samples = netG(fixed_noise)
    gap = ((samples.mean(0) - data.mean(0)).abs().mean()
           + (samples.std(0) - data.std(0)).abs().mean()).item()
    if verbose:
        print(f"per-pixel mean/std gap to the real digits: {gap:.3f}")
    return gap


if __name__ == "__main__":
    main()
