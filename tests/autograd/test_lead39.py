"""Session 39's smaller fixes, each against PyTorch's documented behaviour."""
import numpy as np
import pytest

import tritongrad as tg


@pytest.mark.parametrize("shape,dim", [((1, 1, 1, 1), -1), ((2, 1), 1), ((1, 3), 0)])
def test_descending_sort_of_one_element_rows_has_no_negative_strides(shape, dim):
    """A descending sort along a dim of size 1 gave indices with a negative stride (NumPy's
    flipped view passes as contiguous), which ``.to(dtype)`` then refused."""
    x = tg.tensor(np.arange(np.prod(shape)).reshape(shape), dtype=tg.int32)
    idx = x.argsort(dim=dim, descending=True, stable=True)
    assert all(s >= 0 for s in idx.stride()), idx.stride()
    assert idx.to(tg.int32).tolist() == np.zeros(shape, dtype=int).tolist()
    values, _ = tg.tensor(np.arange(6.0).reshape(2, 3)).sort(descending=True)
    assert values.tolist() == [[2.0, 1.0, 0.0], [5.0, 4.0, 3.0]]
