"""Graph passes (PyTorch's ``torch.fx.passes``)."""

from . import shape_prop  # noqa: F401
