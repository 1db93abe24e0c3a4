"""The polynomial fit as an nn.Module: the powers of x as features, nn.Sequential(Linear,
Flatten), MSELoss with reduction="sum", and a hand-written SGD step over model.parameters()."""

import math

import tritongrad as torch


def main(steps: int = 2000, verbose: bool = True) -> float:
    x = torch.linspace(-math.pi, math.pi, 2000)
    y = torch.sin(x)
    p = torch.tensor([1, 2, 3])
    xx = x.unsqueeze(-1).pow(p)  # (2000, 3): x, x^2, x^3
    model = torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Flatten(0, 1))
    loss_fn = torch.nn.MSELoss(reduction="sum")
    learning_rate = 1e-6
    for t in range(steps):
        loss = loss_fn(model(xx), y)
        if verbose and t % 500 == 499:
            print(t, loss.item())
        model.zero_grad()
        loss.backward()
        with torch.no_grad():
            for param in model.parameters():
                param -= learning_rate * param.grad
    linear = model[0]
    if verbose:
        w = linear.weight[:, 0].item(), linear.weight[:, 1].item(), linear.weight[:, 2].item()
        print(f"Result: y = {linear.bias.item()} + {w[0]} x + {w[1]} x^2 + {w[2]} x^3")
    return loss.item()


if __name__ == "__main__":
    torch.manual_seed(0)
    main()
