"""A small regression pipeline as a PyTorch user writes one: a TensorDataset and DataLoader,
an MLP with SiLU and LayerNorm, Adam with a StepLR schedule and gradient clipping, validation
under no_grad in eval mode, then the state dict saved, reloaded into a fresh model (tg.save /
tg.load, and safetensors when installed) and checked."""

import os
import tempfile

import tritongrad as torch
from tritongrad.utils.data import DataLoader, TensorDataset, random_split


def make_model():
    return torch.nn.Sequential(torch.nn.Linear(4, 32), torch.nn.LayerNorm(32),
                               torch.nn.SiLU(), torch.nn.Linear(32, 1))


def main(epochs: int = 30, verbose: bool = True) -> float:
    torch.manual_seed(0)
    x = torch.randn(512, 4)
    w = torch.tensor([[1.5], [-2.0], [0.5], [3.0]])
    y = x @ w + 0.3 * torch.sin(3 * x[:, :1]) + 0.01 * torch.randn(512, 1)
    train, val = random_split(TensorDataset(x, y), [0.8, 0.2],
                              generator=torch.Generator().manual_seed(0))
    loader = DataLoader(train, batch_size=32, shuffle=True)
    model = make_model()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)
    loss_fn = torch.nn.MSELoss()
    for epoch in range(epochs):
        model.train()
        for xb, yb in loader:
            opt.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
        sched.step()
        model.eval()
        with torch.no_grad():
            xv, yv = next(iter(DataLoader(val, batch_size=len(val))))
            val_loss = loss_fn(model(xv), yv).item()
        if verbose and epoch % 10 == 9:
            print(f"epoch {epoch + 1}: val loss {val_loss:.5f}, lr {sched.get_last_lr()[0]}")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.pt")
        torch.save(model.state_dict(), path)
        again = make_model()
        again.load_state_dict(torch.load(path))
        again.eval()
        with torch.no_grad():
            assert torch.equal(again(xv), model(xv))
    return val_loss


if __name__ == "__main__":
    main()
