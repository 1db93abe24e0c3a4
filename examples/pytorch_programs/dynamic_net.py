"""A dynamic graph: a module whose forward uses its fifth-degree term 0 to 2 more times at
random (Python control flow decides the graph each step), trained with momentum SGD."""

import math
import random

import tritongrad as torch


class DynamicNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b, self.c, self.d, self.e = (torch.nn.Parameter(torch.randn(()))
                                                  for _ in range(5))

    def forward(self, x):
        y = self.a + self.b * x + self.c * x ** 2 + self.d * x ** 3
        for exp in range(4, random.randint(4, 6)):
            y = y + self.e * x ** exp
        return y


def main(steps: int = 6000, verbose: bool = True) -> float:
    random.seed(0)
    x = torch.linspace(-math.pi, math.pi, 2000)
    y = torch.sin(x)
    model = DynamicNet()
    criterion = torch.nn.MSELoss(reduction="sum")
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-8, momentum=0.9)
    for t in range(steps):
        loss = criterion(model(x), y)
        if verbose and t % 2000 == 1999:
            print(t, loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return loss.item()


if __name__ == "__main__":
    torch.manual_seed(0)
    main()
