"""A small residual CNN as a PyTorch user writes one: BasicBlocks with BatchNorm2d and a 1x1
projection shortcut, kaiming_normal_ initialisation through model.apply, AdaptiveAvgPool2d,
SGD with momentum and weight decay, CosineAnnealingLR, label smoothing, a training-state
checkpoint (model, optimizer, scheduler, epoch) saved and resumed, and accuracy in eval mode.
main returns the held-out error rate."""

import os
import tempfile

import tritongrad as torch
import tritongrad.nn as nn
import tritongrad.nn.functional as F
from tritongrad.utils.data import DataLoader, TensorDataset


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False),
                                          nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)), inplace=True)
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet(nn.Module):
    def __init__(self, classes=4):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8),
                                  nn.ReLU(inplace=True))
        self.layers = nn.Sequential(BasicBlock(8, 8), BasicBlock(8, 16, stride=2))
        self.pool = nn.AdaptiveAvgPool2d((1, 1))
        self.drop = nn.Dropout(0.1)
        self.fc = nn.Linear(16, classes)

    def forward(self, x):
        x = self.pool(self.layers(self.stem(x)))
        return self.fc(self.drop(torch.flatten(x, 1)))


def init_weights(m):
    if isinstance(m, nn.Conv2d):
        nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
    elif isinstance(m, nn.BatchNorm2d):
        nn.init.constant_(m.weight, 1)
        nn.init.zeros_(m.bias)


def make_data(n, gen):
    """4 classes of 8x8 images: a bright bar in one of four places, plus noise."""
    labels = torch.randint(0, 4, (n,), generator=gen)
    x = 0.3 * torch.randn(n, 1, 8, 8, generator=gen)
    for c in range(4):
        sel = labels == c
        if c < 2:
            x[sel, :, 2 + 3 * c, :] += 1.5
        else:
            x[sel, :, :, 2 + 3 * (c - 2)] += 1.5
    return x, labels


def accuracy(model, x, y):
    model.eval()
    with torch.no_grad():
        return (model(x).argmax(dim=1) == y).float().mean().item()


def main(epochs: int = 4, verbose: bool = True) -> float:
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    xtr, ytr = make_data(512, gen)
    xte, yte = make_data(256, gen)
    loader = DataLoader(TensorDataset(xtr, ytr), batch_size=32, shuffle=True, drop_last=True)
    model = ResNet()
    model.apply(init_weights)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4,
                          nesterov=True)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = os.path.join(tmp, "ckpt.pth")
        for epoch in range(epochs):
            model.train()
            total = 0.0
            for xb, yb in loader:
                opt.zero_grad()
                loss = criterion(model(xb), yb)
                loss.backward()
                opt.step()
                total += loss.item() * xb.size(0)
            sched.step()
            if verbose:
                print(f"epoch {epoch}: loss {total / len(loader.dataset):.4f} "
                      f"acc {accuracy(model, xte, yte):.3f} lr {sched.get_last_lr()[0]:.4f}")
            if epoch == epochs // 2 - 1:  # save, then resume into fresh objects
                torch.save({"epoch": epoch, "model": model.state_dict(),
                            "optimizer": opt.state_dict(), "scheduler": sched.state_dict()},
                           ckpt)
                state = torch.load(ckpt, map_location="cpu", weights_only=True)
                model = ResNet()
                model.load_state_dict(state["model"])
                opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9,
                                      weight_decay=5e-4, nesterov=True)
                opt.load_state_dict(state["optimizer"])
                sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
                sched.load_state_dict(state["scheduler"])
                assert state["epoch"] == epoch
    return 1.0 - accuracy(model, xte, yte)


if __name__ == "__main__":
    main()
