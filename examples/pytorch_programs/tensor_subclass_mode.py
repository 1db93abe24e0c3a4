"""Extending PyTorch's Python API: a Tensor subclass that carries metadata through ops with
__torch_function__, a TorchFunctionMode that counts the multiply-adds of a training step, and
an nn.Parameter subclass made with Tensor._make_subclass. A small regression is trained on
tagged inputs; the tag must survive every layer, and the mode must count the step's FLOPs."""

import tritongrad as torch
import tritongrad.nn.functional as F
from tritongrad.overrides import TorchFunctionMode


class Tagged(torch.Tensor):
    """A tensor that remembers where its data came from; results of ops on it keep the tags of
    all their Tagged inputs."""

    @staticmethod
    def __new__(cls, data, tag):
        t = torch.Tensor._make_subclass(cls, data, data.requires_grad)
        t.tags = {tag}
        return t

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = super().__torch_function__(func, types, args, kwargs)
        tags = set()
        for a in list(args) + list(kwargs.values()):
            for b in (a if isinstance(a, (list, tuple)) else [a]):
                tags |= getattr(b, "tags", set())
        for o in (out if isinstance(out, (list, tuple)) else [out]):
            if isinstance(o, Tagged) and not hasattr(o, "tags"):
                o.tags = set(tags)
        return out


class FlopCounter(TorchFunctionMode):
    """Counts 2 * M * N * K for every linear layer and matrix product called while entered."""

    def __init__(self):
        super().__init__()
        self.flops = 0
        self.calls = {}

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", str(func))
        self.calls[name] = self.calls.get(name, 0) + 1
        if func is F.linear:
            x, w = args[0], args[1]
            self.flops += 2 * x.numel() * w.shape[0]
        elif func in (torch.matmul, torch.Tensor.__matmul__, torch.mm):
            a, b = args[0], args[1]
            self.flops += 2 * a.shape[0] * a.shape[1] * b.shape[1]
        return func(*args, **kwargs)


class ScaledParameter(torch.nn.Parameter):
    """A parameter that records its learning-rate multiplier (read by the step below)."""

    def __new__(cls, data, lr_scale=1.0):
        p = torch.Tensor._make_subclass(cls, data, True)
        p.lr_scale = lr_scale
        return p


def main(steps: int = 200, verbose: bool = True) -> float:
    x = torch.randn(256, 8)
    true_w = torch.randn(8, 1)
    y = torch.tanh(x @ true_w) + 0.05 * torch.randn(256, 1)
    xt = Tagged(x, "sensor-a")
    model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
    model[2].weight = ScaledParameter(model[2].weight.detach(), lr_scale=0.5)
    lr = 0.1
    for step in range(steps):
        counter = FlopCounter()
        with counter:
            out = model(xt)
            loss = F.mse_loss(out, y)
        if type(out) is not Tagged or out.tags != {"sensor-a"}:
            raise AssertionError("the tag was lost in the model")
        expected = 2 * 256 * 8 * 32 + 2 * 256 * 32 * 1
        if counter.flops != expected or counter.calls.get("linear") != 2:
            raise AssertionError(f"counted {counter.flops} FLOPs, expected {expected}")
        model.zero_grad()
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= lr * getattr(p, "lr_scale", 1.0) * p.grad
        if verbose and step % 50 == 49:
            print(step, loss.item(), sorted(counter.calls.items()))
    if type(model[2].weight) is not ScaledParameter or type(model[2].weight * 2) is not \
            torch.Tensor:  # (a Parameter's ops give plain tensors)
        raise AssertionError("the parameter subclass was lost")
    return loss.item()


if __name__ == "__main__":
    torch.manual_seed(0)
    main()
