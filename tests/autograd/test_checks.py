"""autograd/checks.py: each shared check gives PyTorch's message, whichever op reaches it."""

import re

import pytest
from tritongrad.autograd import checks

import tritongrad as tg

F = tg.nn.functional


def raises(exc, msg):
    return pytest.raises(exc, match="^" + re.escape(msg) + "$")


def two_devices(op):
    return raises(RuntimeError, "Expected all tensors to be on the same device, but found at "
                                f"least two devices, cpu and cuda:0! (in {op})")


def test_peer_tensors_on_two_devices():
    a, c = tg.ones(2, 2), tg.ones(2, 2, device="cuda")
    with two_devices("cat"):
        tg.cat([a, c])
    with two_devices("stack"):
        tg.stack([a, c])
    with two_devices("mm"):
        a.mm(c)
    with two_devices("bmm"):
        tg.bmm(a.unsqueeze(0), c.unsqueeze(0))
    with two_devices("masked_fill"):
        a.masked_fill(tg.ones(2, 2, dtype=tg.bool, device="cuda"), 1.0)


def test_argument_on_another_device():
    with raises(RuntimeError, "Expected all tensors to be on the same device, but got index is "
                              "on cpu, different from other tensors on cuda:0 (when checking "
                              "argument in method gather)"):
        tg.ones(2, 2, device="cuda").gather(1, tg.zeros(2, 1, dtype=tg.int64))


def test_cpu_scalar_tensor_joins_an_elementwise_op():
    out = tg.ones(2, device="cuda") + tg.tensor(2.0)
    assert out.device.type == "cuda" and out.cpu().tolist() == [3.0, 3.0]


@pytest.mark.parametrize("call, exc, msg", [
    (lambda x: x[5], IndexError,
     "__getitem__: index 5 is out of bounds for dimension 0 with size 2"),
    (lambda x: x[tg.tensor([-3])], IndexError,
     "__getitem__: index -3 is out of bounds for dimension 0 with size 2"),
    (lambda x: x.gather(1, tg.tensor([[5]], device=x.device)), RuntimeError,
     "index 5 is out of bounds for dimension 1 with size 3"),
    (lambda x: x.index_select(0, tg.tensor([2], device=x.device)), IndexError,
     "index out of range in self"),
    (lambda x: F.embedding(tg.tensor([9], device=x.device), x), IndexError,
     "index out of range in self"),
    (lambda x: F.cross_entropy(x, tg.tensor([0, 7], device=x.device)), IndexError,
     "Target 7 is out of bounds."),
    (lambda x: x.index_select(0, tg.tensor([0.5], device=x.device)), RuntimeError,
     "index_select(): Expected dtype int32/int64 for index (got tritongrad.float32)"),
    (lambda x: tg.bmm(x.unsqueeze(0), x.t().double().unsqueeze(0)), RuntimeError,
     "expected scalar type Float but found Double"),
])
def test_pytorch_wording(device, call, exc, msg):
    with raises(exc, msg):
        call(tg.ones(2, 3, device=device))


def test_checked_index_wraps_negatives(device):
    idx = checks.checked_index(tg.tensor([-1, 0, 2], device=device), 3, 0, "op", True)
    assert idx.dtype is tg.int64 and idx.cpu().tolist() == [2, 0, 2]
    assert checks.check_index_range(tg.tensor([], dtype=tg.int64, device=device), 3,
                                    IndexError) is None
