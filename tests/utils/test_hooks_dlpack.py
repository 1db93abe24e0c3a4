"""``tg.utils.hooks.RemovableHandle`` (what register_*hook returns) and ``tg.utils.dlpack``
(the legacy capsule interface): on both devices where it applies."""

from __future__ import annotations

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import host


def test_removable_handle_is_what_hooks_return():
    x = tg.ones(3, requires_grad=True)
    seen = []
    handle = x.register_hook(lambda g: seen.append(1))
    m = tg.nn.Linear(2, 2)
    assert isinstance(handle, tg.utils.hooks.RemovableHandle)
    assert isinstance(m.register_forward_hook(lambda *a: None), tg.utils.hooks.RemovableHandle)
    with handle:  # (a context manager: removed on exit)
        (x * 2).sum().backward()
    (x * 2).sum().backward()
    assert seen == [1]


def test_to_dlpack_round_trip_shares_memory(device):
    t = tg.arange(6.0, device=device).reshape(2, 3)
    capsule = tg.utils.dlpack.to_dlpack(t)
    u = tg.utils.dlpack.from_dlpack(capsule)
    assert u.shape == t.shape and u.device == t.device and u.dtype == t.dtype
    u[0, 0] = 7.0
    np.testing.assert_array_equal(host(t), [[7, 1, 2], [3, 4, 5]])
    with pytest.raises(TypeError, match="^_to_dlpack\\(\\): argument 'data' \\(position 1\\) "
                                        "must be Tensor, not numpy.ndarray$"):  # PyTorch's words
        tg.utils.dlpack.to_dlpack(np.zeros(2))


def test_from_dlpack_takes_a_numpy_array():
    a = np.arange(4, dtype=np.float32)
    t = tg.utils.dlpack.from_dlpack(a)
    a[1] = 9
    assert t.tolist() == [0, 9, 2, 3]
