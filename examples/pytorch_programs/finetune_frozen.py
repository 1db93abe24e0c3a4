"""Transfer learning as a PyTorch user writes it: pretrain a small CNN on digits 0-4, freeze its
feature extractor (requires_grad_(False), eval() for its BatchNorm), put a new head on it for
digits 5-9, train with SGD + momentum over only the trainable parameters, ReduceLROnPlateau on
the validation loss, early stopping that keeps the best weights with copy.deepcopy of the
state dict, and evaluation under CPU bfloat16 autocast."""

import copy

import numpy as np
import tritongrad as torch
import tritongrad.nn as nn
import tritongrad.nn.functional as F
from tritongrad.utils.data import DataLoader, TensorDataset, random_split


def digits():
    from sklearn.datasets import load_digits
    d = load_digits()
    x = torch.from_numpy((d.images / 16.0).astype(np.float32)).unsqueeze(1)
    return x, torch.from_numpy(d.target.astype(np.int64))


class Features(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(32)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.relu(self.bn2(self.conv2(x)))
        return F.adaptive_avg_pool2d(x, 1).flatten(1)


def run_epoch(model, loader, opt=None):
    total, correct, count = 0.0, 0, 0
    for xb, yb in loader:
        with torch.set_grad_enabled(opt is not None):
            logits = model(xb)
            loss = F.cross_entropy(logits, yb)
        if opt is not None:
            opt.zero_grad()
            loss.backward()
            opt.step()
        total += loss.item() * len(yb)
        correct += (logits.argmax(1) == yb).sum().item()
        count += len(yb)
    return total / count, correct / count


def main(epochs: int = 12, verbose: bool = True) -> float:
    torch.manual_seed(0)
    x, y = digits()
    low, high = y < 5, y >= 5
    pre = TensorDataset(x[low], y[low])
    features = Features()
    model = nn.Sequential(features, nn.Linear(32, 5))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(4):
        model.train()
        run_epoch(model, DataLoader(pre, batch_size=64, shuffle=True), opt)

    for p in features.parameters():
        p.requires_grad_(False)
    head = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, 5))
    model = nn.Sequential(features, head)
    new = TensorDataset(x[high], y[high] - 5)
    train_set, val_set, test_set = random_split(new, [0.6, 0.2, 0.2],
                                                generator=torch.Generator().manual_seed(0))
    train = DataLoader(train_set, batch_size=32, shuffle=True)
    val, test = DataLoader(val_set, batch_size=128), DataLoader(test_set, batch_size=128)
    trainable = [p for p in model.parameters() if p.requires_grad]
    assert len(trainable) == 4
    opt = torch.optim.SGD(trainable, lr=0.1, momentum=0.9, nesterov=True)
    plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=0.5,
                                                         patience=1)
    best, best_state, waited = float("inf"), None, 0
    for epoch in range(epochs):
        head.train()
        features.eval()  # frozen: its BatchNorm keeps the pretrained statistics
        train_loss, _ = run_epoch(model, train, opt)
        model.eval()
        val_loss, val_acc = run_epoch(model, val)
        plateau.step(val_loss)
        if verbose:
            print(f"epoch {epoch + 1}: train {train_loss:.3f} val {val_loss:.3f} "
                  f"acc {val_acc:.3f} lr {opt.param_groups[0]['lr']:.4f}")
        if val_loss < best - 1e-4:
            best, best_state, waited = val_loss, copy.deepcopy(model.state_dict()), 0
        else:
            waited += 1
            if waited >= 4:
                break
    model.load_state_dict(best_state)
    model.eval()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        _, acc = run_epoch(model, test)
    if verbose:
        print(f"held-out accuracy on digits 5-9 (bfloat16 autocast): {acc:.3f}")
    return 1.0 - acc


if __name__ == "__main__":
    main()
