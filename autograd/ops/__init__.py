"""Differentiable ops: one module per family, each ending with its table (``OPS``).

This file only reads the tables (autograd/registry.py): it binds every op's methods and
operators on ``Tensor`` and builds the package's ``__all__``, so that ``x.exp()``, ``x + y``
and ``tg.exp(x)`` are one code path. Nothing here is kept by hand per op; to add one, see
docs/adding-an-op.md.
"""

from __future__ import annotations

from .. import registry
from ..tensor import Tensor
from . import (combinations, complex_parts, composite, contraction, conversion, creation,
               elementwise, indexing, interop, linalg, linalg_ext, pointwise, random, reduction,
               shape, softmax, sorting, views)
from . import products, scans, sets, special  # scans, sets, products, special functions
from . import statistics  # nansum, cov, corrcoef, fmax, rot90, ... (composites)
from . import selection  # take, take_along_dim, index_fill, index_copy, masked_scatter
from . import decompositions  # factorizations and solvers (tg.linalg.inv, svd, ...)
from . import householder  # geqrf, householder_product (orgqr), ormqr
from . import numeric  # copysign, gcd, ldexp, float_power, frexp, nextafter, shifts, histogram
from . import arrange  # ravel, msort, diagflat, h/v/dsplit, the view scatters, put
from . import tensor_info  # is_signed, is_nonzero, get_device, apply_, map_, share_memory_
from . import stacking  # hstack, vstack, dstack, column_stack, atleast_nd, unravel_index, ...
from . import factories, sampling  # asarray, range, frombuffer, ...; normal, poisson, binomial
from . import signal  # window functions, stft, istft
from . import linalg_legacy  # lu, lu_unpack, lu_solve, chain_matmul, svd_lowrank, ...
from . import queries  # is_complex, is_floating_point, detach, typename, is_storage
from . import copies, native  # view_copy & co; native_layer_norm & co, segment_reduce, resize
from . import traced  # noqa: F401 - loading it installs dispatch.traced (the rules' Tensor k)
from . import float8  # noqa: F401 - float8 CPU arrays (make() learns their dtypes), _scaled_mm
from . import quantize  # fake_quantize_per_tensor/channel_affine (+ learnable forms)
from .reduction import return_types

# The families in the order of docs/ops.md's op list.
FAMILIES = {
    "elementwise": elementwise.OPS,
    "pointwise": pointwise.OPS,
    "reduction": reduction.OPS,
    "composite": composite.OPS,
    "softmax": softmax.OPS,
    "linalg": linalg.OPS,
    "linalg_ext": linalg_ext.OPS,
    "contraction": contraction.OPS,
    "shape": shape.OPS,
    "views": views.OPS,
    "combinations": combinations.OPS,
    "indexing": indexing.OPS,
    "sorting": sorting.OPS,
    "creation": creation.OPS,
    "random": random.OPS,
    "conversion": conversion.OPS,
    "complex": complex_parts.OPS,
    "interop": interop.OPS,
    "scans": scans.OPS,
    "products": products.OPS,
    "sets": sets.OPS,
    "special": special.OPS,
    "statistics": statistics.OPS,
    "selection": selection.OPS,
    "decompositions": decompositions.OPS,
    "householder": householder.OPS,
    "numeric": numeric.OPS,
    "arrange": arrange.OPS,
    "tensor_info": tensor_info.OPS,
    "stacking": stacking.OPS,
    "factories": factories.OPS,
    "sampling": sampling.OPS,
    "signal": signal.OPS,
    "linalg_legacy": linalg_legacy.OPS,
    "queries": queries.OPS,
    "copies": copies.OPS,
    "native": native.OPS,
    "quantize": quantize.OPS,
}

__all__ = registry.install(FAMILIES, Tensor, globals()) + ["return_types"]

Tensor.T = property(views.numpy_T)
Tensor.mT = property(arrange.matrix_T)
Tensor.mH = property(lambda self: arrange.matrix_T(self, True))
Tensor.H = property(arrange.matrix_H)
Tensor.real = property(complex_parts.real, complex_parts.set_real)
Tensor.imag = property(complex_parts.imag, complex_parts.set_imag)
Tensor.__cuda_array_interface__ = property(interop.cuda_array_interface)
Tensor.__hash__ = lambda self: id(self)  # __eq__ is elementwise, so hash by identity
