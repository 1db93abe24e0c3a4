"""Hogwild! training (PyTorch's mnist_hogwild example, on a small regression): the model's
parameters go to shared memory with model.share_memory(), several processes run SGD on their
own shards of the data and update the same parameters in place without locks, and the parent
process sees the trained model. Run with `import torch` and `import torch.multiprocessing as
mp` for PyTorch."""

import tritongrad as torch
import tritongrad.multiprocessing as mp


def make_data(n: int = 4096, d: int = 16):
    """A noisy linear target: y = x @ w + b + noise."""
    x = torch.randn(n, d)
    w = torch.randn(d, 1)
    y = x @ w + 0.5 + 0.05 * torch.randn(n, 1)
    return x, y


def train(rank: int, model, x, y, epochs: int, batch_size: int, lr: float) -> None:
    torch.manual_seed(1 + rank)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.5)
    loss_fn = torch.nn.MSELoss()
    for _ in range(epochs):
        for idx in torch.randperm(x.shape[0]).split(batch_size):
            optimizer.zero_grad()
            loss = loss_fn(model(x[idx]), y[idx])
            loss.backward()
            optimizer.step()  # writes the shared parameters: every process sees it


def main(epochs: int = 3, processes: int = 4, verbose: bool = True) -> float:
    x, y = make_data()
    model = torch.nn.Linear(x.shape[1], 1)
    model.share_memory()  # parameters in shared memory: the processes train this model
    loss_fn = torch.nn.MSELoss()
    with torch.no_grad():
        before = loss_fn(model(x), y).item()
    # Each process trains on its own shard (fork: the shards are inherited, not sent).
    ctx = mp.get_context("fork")
    workers = [ctx.Process(target=train, args=(rank, model, xs, ys, epochs, 32, 0.01))
               for rank, (xs, ys) in enumerate(zip(x.chunk(processes), y.chunk(processes)))]
    for p in workers:
        p.start()
    for p in workers:
        p.join()
        if p.exitcode != 0:
            raise RuntimeError(f"a training process failed (exit code {p.exitcode})")
    with torch.no_grad():
        after = loss_fn(model(x), y).item()
    if verbose:
        print(f"{processes} processes, {epochs} epochs each: MSE {before:.4f} -> {after:.4f}")
    return after


if __name__ == "__main__":
    torch.manual_seed(0)
    main()
