"""The meta backend: the kernel contract (see ``tritongrad.kernels``) over arrays that have a
shape, strides and a dtype but no values, for ``device("meta")`` tensors.

Note [The meta device]
  PyTorch's meta tensors carry everything but data: building a model under
  ``with torch.device("meta"):`` allocates nothing, and ``module.to_empty(device=...)`` then
  ``load_state_dict(..., assign=True)`` gives it real memory once; a forward pass on meta
  inputs finds the shapes and dtypes of every intermediate. Here a meta array is a
  ``runtime.array.DeviceArray`` over a ``MetaStorage`` (a byte count, no memory), so views
  are the DeviceArray's own stride arithmetic, as on CUDA. The contract's functions are:

  - creation (``empty``, ``full``, ``arange``, the random draws): a new meta array, nothing
    computed or drawn (the generators do not advance);
  - views (``view``, ``permute``, ``expand``, ``getitem``, ``as_strided``, the complex views):
    stride arithmetic;
  - in-place writes (``copy_``, ``index_put_``, ``scatter_``, ``scatter_reduce_``, the
    optimizer steps, ``out=``): nothing is written; the shapes are not re-checked, as PyTorch's
    meta kernels of these ops check little more;
  - everything else: the NumPy backend's function run on stand-ins (each input a zero-stride
    broadcast of one zero, so no input memory), its results' shapes, strides and dtypes taken
    as the meta results. That keeps one definition of each op's shape and dtype rules (the
    CPU kernel's) at the cost of computing over zeros: outputs are allocated and dropped, so a
    meta forward pass of a big model costs what its activations would on the CPU (the weights
    and their initialisation cost nothing);
  - ``nonzero`` refuses, as PyTorch's meta kernel does: its shape depends on the values.

  Ops outside the contract that read values on the host (``item()``, the linalg
  decompositions, the data-dependent checks) refuse a meta tensor with NotImplementedError.
"""

from __future__ import annotations

import builtins

import numpy as np

from ..runtime.array import DeviceArray, check_view_bounds, view_strides
from ..runtime.device import device as Device
from . import CONTRACT, host_array
from . import numpy as _np_backend

META = Device("meta")

__all__ = list(CONTRACT)  # each defined below


class MetaStorage:
    """The storage of meta arrays: its size in bytes and nothing else (``data_ptr()`` 0, as
    PyTorch's meta tensors report)."""

    __slots__ = ("__weakref__", "nbytes")
    device = META
    ptr = 0
    stream = 0

    def __init__(self, nbytes: int):
        self.nbytes = nbytes

    def data_ptr(self) -> int:
        return 0

    def record_stream(self, stream) -> None:
        pass

    def __repr__(self) -> str:
        return f"MetaStorage(nbytes={self.nbytes})"


def is_meta(a) -> bool:
    """Whether backend array ``a`` is a meta array."""
    return type(a) is DeviceArray and a.storage.device is META


def _contiguous_strides(shape: tuple) -> tuple:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def new(shape, dtype, strides=None) -> DeviceArray:
    """A meta array of ``shape`` and ``dtype`` (row-major unless ``strides``), over storage of
    exactly the elements it spans."""
    shape = tuple([int(n) for n in shape])
    strides = _contiguous_strides(shape) if strides is None else tuple(strides)
    # (builtins.sum: the contract's sum shadows it here)
    span = 0 if 0 in shape else 1 + builtins.sum((n - 1) * abs(s) for n, s in zip(shape, strides))
    return DeviceArray(MetaStorage(span * dtype.itemsize), 0, shape, strides, dtype)


# -- creation: nothing computed, nothing drawn ---------------------------------------------------

def empty(shape, dtype, device=None) -> DeviceArray:
    return new(shape, dtype)


def full(shape, value, dtype, device=None) -> DeviceArray:
    return new(shape, dtype)


def arange(start, step, n, dtype, device=None) -> DeviceArray:
    return new((int(n),), dtype)


def rand(shape, dtype, device, gen) -> DeviceArray:
    return new(shape, dtype)


randn = rand


def randint(low, high, shape, dtype, device, gen) -> DeviceArray:
    return new(shape, dtype)


def dropout_mask(shape, p, dtype, device, gen) -> DeviceArray:
    return new(shape, dtype)


# -- views: the DeviceArray's stride arithmetic ------------------------------------------------

def view(a: DeviceArray, shape):
    shape = tuple(shape)
    strides = view_strides(a.shape, a.strides, shape)
    return None if strides is None else a.as_strided(shape, strides)


def permute(a: DeviceArray, dims) -> DeviceArray:
    return a.permute(dims)


def expand(a: DeviceArray, shape) -> DeviceArray:
    return a.expand(tuple(shape))


def getitem(a: DeviceArray, index: tuple) -> DeviceArray:
    return a.getitem(index)


def as_strided(a: DeviceArray, shape, strides, offset) -> DeviceArray:
    shape, strides = tuple(shape), tuple(strides)
    check_view_bounds(shape, strides, offset, a.itemsize, a.storage.nbytes)
    return a.as_strided(shape, strides, offset)


def strides(a: DeviceArray) -> tuple:
    return tuple(a.strides)


def storage_offset(a: DeviceArray) -> int:
    return a.offset


def view_as_real(a: DeviceArray) -> DeviceArray:
    return a.view_as_real()


def _lane(a: DeviceArray, i: int) -> DeviceArray:
    """The real (0) or imaginary (1) parts of complex ``a``: a view of its float lanes."""
    return a.view_as_real().getitem((slice(None),) * a.ndim + (i,))


def real(a: DeviceArray) -> DeviceArray:
    return _lane(a, 0) if a.dtype.is_complex else a


def imag(a: DeviceArray) -> DeviceArray:
    return _lane(a, 1)


def view_as_complex(a: DeviceArray) -> DeviceArray:
    """The inverse of view_as_real: the last dimension (2, stride 1) becomes the element."""
    dt = a.dtype.to_complex()
    return DeviceArray(a.storage, a.offset // 2, tuple(a.shape[:-1]),
                       tuple(s // 2 for s in a.strides[:-1]), dt)


def contiguous(a: DeviceArray) -> DeviceArray:
    return a if a.is_contiguous() else new(a.shape, a.dtype)


def astype(a: DeviceArray, dtype) -> DeviceArray:
    return new(a.shape, dtype)


# -- in-place writes: nothing to write ---------------------------------------------------------

def copy_(dst, src) -> None:
    return None


def index_put_(a, indices, values, accumulate) -> None:
    return None


def scatter_(a, dim, index, src, accumulate) -> None:
    return None


def scatter_reduce_(a, dim, index, src, reduce, include_self) -> None:
    return None


def sgd_step(param, grad, momentum_buffer, *hyper) -> None:
    return None


def adam_step(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, *hyper) -> None:
    return None


def nonzero(a):
    raise NotImplementedError(
        "nonzero: not supported on the meta device: the result's shape depends on the "
        "tensor's values, which a meta tensor does not have")


# -- everything else: the NumPy backend over stand-ins -------------------------------------------

def _stand_in(a: DeviceArray) -> np.ndarray:
    """A read-only NumPy array of ``a``'s shape and dtype holding zeros, in no memory (a
    broadcast of one zero)."""
    return np.broadcast_to(host_array(np.zeros(()), a.dtype), a.shape, subok=True)


def _filled(a: DeviceArray) -> np.ndarray:
    """A writable NumPy array of ``a``'s shape and dtype holding zeros."""
    return host_array(np.zeros(a.shape), a.dtype)


def _small(a: DeviceArray) -> np.ndarray:
    """Zeros of ``a``'s dtype and layout (dimension order, broadcast dimensions), each
    dimension of n > 2 cut to 2: an elementwise op, a reduction or a product over these has
    the real one's dtype and layout, at a few elements' cost."""
    shape = [min(n, 2) for n in a.shape]
    order = sorted(range(a.ndim), key=lambda d: -abs(a.strides[d]))  # outermost first
    base = [1 if a.strides[d] == 0 else shape[d] for d in order]
    z = host_array(np.zeros(base), a.dtype).transpose(np.argsort(order))
    return np.broadcast_to(z, shape, subok=True) if 0 in a.strides else z


def _to_numpy(x, originals: dict, convert):
    if type(x) is DeviceArray:
        s = convert(x)
        originals[id(s)] = (x, s)  # (s kept alive: its id stays its own during the call)
        return s
    if type(x) in (tuple, list):
        return type(x)(_to_numpy(v, originals, convert) for v in x)
    return x


def _from_numpy(r, originals: dict):
    if isinstance(r, np.ndarray):
        mine = originals.get(id(r))
        if mine is not None:  # (the function gave an input back)
            return mine[0]
        # (the result's layout is kept, unless it is a view of a stand-in: then it overlaps)
        strides = tuple(s // r.itemsize for s in r.strides) if r.flags.writeable else None
        return new(r.shape, _array_dtype(r), strides)
    if type(r) in (tuple, list):
        return type(r)(_from_numpy(v, originals) for v in r)
    return r


def _array_dtype(r: np.ndarray):
    from ..autograd.tensor import array_meta
    return array_meta(r)[1]


def _call(cpu, args, kwargs, convert):
    """``cpu(*args, **kwargs)`` with the meta arrays in them converted; its result and the
    map from the converted arrays back to the meta ones."""
    originals: dict = {}
    return cpu(*_to_numpy(args, originals, convert),
               **_to_numpy(kwargs, originals, convert)), originals


def _delegate(name: str):
    """The contract's ``name``: the NumPy backend's over stand-ins of the inputs, its result's
    shapes, dtypes and strides as meta arrays."""
    cpu = getattr(_np_backend, name)

    def fn(*args, **kwargs):
        out = kwargs.pop("out", None)
        try:
            result, originals = _call(cpu, args, kwargs, _stand_in)
        except ValueError as e:  # a kernel that writes into its input's conversion
            if "read-only" not in str(e):
                raise
            result, originals = _call(cpu, args, kwargs, _filled)
        if out is not None:  # (an out= array is written in place: nothing to write)
            return out
        return _from_numpy(result, originals)

    return _named(fn, name, "The NumPy backend's ``{}`` over stand-ins (Note [The meta "
                  "device]).")


def _named(fn, name: str, doc: str):
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc.format(name)
    return fn


def _arrays(args) -> list:
    return [a for a in args if type(a) is DeviceArray]


def _dense_like(shape: tuple, small: np.ndarray) -> tuple:
    """Dense strides for ``shape`` in the layout of ``small``, its small twin: dimensions
    innermost first by ``small``'s strides, a size-1 dimension before a larger one of the
    same stride (so it gets the stride NumPy and PyTorch give it)."""
    dims = sorted(range(small.ndim), key=lambda d: (abs(small.strides[d]), small.shape[d] != 1))
    strides, step = [0] * len(shape), 1
    for d in dims:
        strides[d] = step
        step *= max(shape[d], 1)
    return tuple(strides)


def _shaped(name: str, rule, layout: bool):
    """The contract's ``name`` by a shape rule: ``rule(*args)`` gives the result's shape; the
    NumPy backend run on small twins of the inputs (``_small``) gives its dtype and, with
    ``layout``, its dimension order (else row-major). No full-size array is made."""
    cpu = getattr(_np_backend, name)

    def fn(*args, **kwargs):
        out = kwargs.pop("out", None)
        shape = rule(*args)
        small, originals = _call(cpu, args, kwargs, _small)
        if out is not None:
            return out
        mine = originals.get(id(small))
        if mine is not None:
            return mine[0]
        return new(shape, _array_dtype(small), _dense_like(shape, small) if layout else None)

    return _named(fn, name, "``{}`` by its shape rule and the NumPy backend's dtype (Note "
                  "[The meta device]).")


def _broadcast(*args) -> tuple:
    return np.broadcast_shapes(*[a.shape for a in _arrays(args)])


def _reduced(*args) -> tuple:
    a = _arrays(args)[0]
    dims = next(x for x in args if type(x) in (tuple, list, int))
    keepdim = args[-1]
    dims = {d % a.ndim for d in ((dims,) if type(dims) is int else dims)} if a.ndim else set()
    return tuple(1 if d in dims else n for d, n in enumerate(a.shape)
                 if keepdim or d not in dims)


def _same(*args) -> tuple:
    return _arrays(args)[0].shape


def _product(*args) -> tuple:
    a, b = _arrays(args)[-2:]  # (addmm's first array is the added one)
    sa = a.shape if a.ndim > 1 else (1,) + a.shape
    sb = b.shape if b.ndim > 1 else b.shape + (1,)
    out = np.broadcast_shapes(sa[:-2], sb[:-2]) + (sa[-2], sb[-1])
    if a.ndim == 1:
        out = out[:-2] + out[-1:]
    if b.ndim == 1:
        out = out[:-1]
    return out


# elementwise: the broadcast shape, the inputs' layout
add, sub, mul, div, pow, maximum, minimum = (
    _shaped(n, _broadcast, True) for n in ("add", "sub", "mul", "div", "pow", "maximum",
                                           "minimum"))
gt, ge, lt, le, eq, ne = (_shaped(n, _broadcast, True) for n in ("gt", "ge", "lt", "le", "eq",
                                                                  "ne"))
neg, exp, log, relu, sqrt, where, unary, binary = (
    _shaped(n, _broadcast, True) for n in ("neg", "exp", "log", "relu", "sqrt", "where",
                                           "unary", "binary"))
# reductions (row-major results), scans and softmax (the input's layout), products
sum, reduce, argreduce = (_shaped(n, _reduced, False)
                          for n in ("sum", "reduce", "argreduce"))
cumsum, softmax = (_shaped(n, _same, True) for n in ("cumsum", "softmax"))
matmul, bmm, addmm = (_shaped(n, _product, False) for n in ("matmul", "bmm", "addmm"))

# the rest: the NumPy kernels over zero-stride stand-ins
cat = _delegate("cat")
index, gather, sort, index_guard = (_delegate(n) for n in ("index", "gather", "sort",
                                                           "index_guard"))
gelu, gelu_backward, activation, activation_backward, glu, glu_backward = (
    _delegate(n) for n in ("gelu", "gelu_backward", "activation", "activation_backward", "glu",
                           "glu_backward"))
layer_norm, layer_norm_backward, batch_norm, batch_norm_backward = (
    _delegate(n) for n in ("layer_norm", "layer_norm_backward", "batch_norm",
                           "batch_norm_backward"))
cross_entropy, cross_entropy_backward, embedding, embedding_backward = (
    _delegate(n) for n in ("cross_entropy", "cross_entropy_backward", "embedding",
                           "embedding_backward"))
mean_over_targets = _delegate("mean_over_targets")
conv2d, conv2d_backward, attention, attention_backward, conj = (
    _delegate(n) for n in ("conv2d", "conv2d_backward", "attention", "attention_backward",
                           "conj"))
lstm_cell, lstm_cell_backward, gru_cell, gru_cell_backward = (
    _delegate(n) for n in ("lstm_cell", "lstm_cell_backward", "gru_cell", "gru_cell_backward"))
