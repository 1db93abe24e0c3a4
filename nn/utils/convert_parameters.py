"""``nn.utils.convert_parameters``: PyTorch's module path of ``parameters_to_vector`` and
``vector_to_parameters`` (defined in ``nn.utils``)."""

from . import parameters_to_vector, vector_to_parameters

__all__ = ["parameters_to_vector", "vector_to_parameters"]
