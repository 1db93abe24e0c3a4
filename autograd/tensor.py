"""The Tensor: a strided view of a storage, plus what autograd needs to know about it.

The view is the backend's native array (``_data``): a NumPy array on the CPU, a
``runtime.DeviceArray`` on CUDA. Views of one storage share one version counter (``_vc``, a
one-element list), which every in-place op bumps and every saved tensor checks. Autograd fields
follow PyTorch: ``requires_grad``, ``grad``, ``grad_fn`` with ``output_nr``, and ``_base`` for
views (the tensor whose storage they view).

Ops (``+``, ``exp``, ``sum``, views, ...) are defined in autograd/ops and bound onto this class
there; this file holds only the tensor's own state and its autograd surface.
"""

from __future__ import annotations

import numbers
import operator
import threading
import warnings
import weakref

import numpy as np

from ..kernels import HostBFloat16, backend, data_ptr, host_array, host_values
from ..runtime import dtype as dtypes
from ..runtime.array import DeviceArray
from ..runtime.device import device as Device
from . import node as _node_module
from . import overrides as _overrides
from .node import AccumulateGrad, RemovableHandle, _HookDict
from .state import anywhere, state

__all__ = ["Tensor", "make", "array_meta", "Size", "wrap_dim", "view_inplace_error",
           "view_rebase_error", "propagate_creation_meta"]

_CPU = Device("cpu")
_SAME = object()  # a grad_dtype left unset: the tensor's own dtype


class Size(tuple):
    """A tensor's shape: a tuple that prints as ``tritongrad.Size([2, 3])``."""

    __slots__ = ()

    def __new__(cls, sizes=()):
        # Elements convert through ``__index__`` (NumPy integers, one-element integer
        # tensors) and anything else is refused, as PyTorch's Size, except a nested tensor's
        # symbolic ragged size (PyTorch's SymInt). Shapes the library makes itself are plain
        # ints and skip this (``tuple.__new__(Size, shape)``).
        items = tuple(sizes)
        for i, d in enumerate(items):
            if type(d) is not int:
                items = items[:i] + (_size_item(d, i),) + items[i + 1:]
        return tuple.__new__(cls, items)

    def __repr__(self) -> str:
        return f"tritongrad.Size({list(self)})"

    def numel(self) -> int:
        n = 1
        for d in self:
            n *= d
        return n

    # Concatenation, repetition and slices stay Sizes, as PyTorch's (from either side).
    def __add__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(self, other))

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(other + tuple(self))

    def __mul__(self, n):
        return tuple.__new__(Size, tuple.__mul__(self, n))

    __rmul__ = __mul__

    def __getitem__(self, index):
        out = tuple.__getitem__(self, index)
        return tuple.__new__(Size, out) if isinstance(index, slice) else out


def _size_item(d, i: int):
    if getattr(type(d), "symbolic_size", False):
        return d
    try:
        if isinstance(d, (float, complex, str, bytes)):
            raise TypeError
        return operator.index(d)
    except TypeError:
        raise TypeError(f"tritongrad.Size() takes an iterable of 'int' (item {i} is "
                        f"'{type(d).__name__}')") from None


_ndarray = np.ndarray
_NP_TO_DTYPE = {d.np: d for d in (dtypes.bool, dtypes.uint8, dtypes.int8, dtypes.int16,
                                 dtypes.int32, dtypes.int64, dtypes.float16, dtypes.float32,
                                 dtypes.float64, dtypes.complex64, dtypes.complex128,
                                 dtypes.uint16, dtypes.uint32, dtypes.uint64)}


def array_meta(data) -> tuple:
    """(device, dtype) of a backend array: a NumPy array is on the CPU (a ``HostBFloat16`` is
    bfloat16), a DeviceArray knows."""
    if isinstance(data, _ndarray):
        if type(data) is HostBFloat16:
            return _CPU, dtypes.bfloat16
        try:
            return _CPU, _NP_TO_DTYPE[data.dtype]
        except KeyError:
            return _CPU, dtypes.from_numpy_dtype(data.dtype)  # raises a clear error
    return data.device, data.dtype


def user_subclass(t: "Tensor") -> bool:
    """Whether ``t`` is an instance of a user's Tensor subclass, as PyTorch's Python
    subclasses are (not a Tensor, a Parameter, or one of the library's own classes: sparse
    and nested tensors are plain Tensors in PyTorch): ``nn.Parameter`` and ``save`` keep its
    class."""
    cls = type(t)
    return cls is not Tensor and not getattr(cls, "_is_parameter_class", False) \
        and not cls.__module__.startswith("tritongrad.")


def _rebuild_subclass(cls: type, args, attributes: dict) -> "Tensor":
    """A pickled instance of Tensor subclass ``cls`` (``args``: ``_rebuild_tensor``'s, or the
    tensor made of them), rebuilt with its attributes."""
    t = args if isinstance(args, Tensor) else _rebuild_tensor(*args)
    out = Tensor._make_subclass(cls, t, t.requires_grad)
    out.__dict__.update(attributes)
    return out


def _rebuild_tensor(values: np.ndarray, dtype, device: str, requires_grad: bool,
                    geometry: tuple | None = None) -> "Tensor":
    """A pickled tensor (``Tensor.__reduce_ex__``), rebuilt: ``values``, or with ``geometry``
    (offset, shape, strides in elements) the tensor over ``values``, its storage's."""
    t = make(host_array(values, dtype), dtype)
    if device != "cpu":
        t = t.to(device)
    if geometry is not None:
        offset, shape, strides = geometry
        t = make(t._k.as_strided(t._data, tuple(shape), tuple(strides), offset), dtype)
    if requires_grad:
        t.requires_grad_()
    return t


def make(data, dtype=None) -> "Tensor":
    """Wraps a backend array as a Tensor with no autograd history (the hot-path constructor)."""
    t = _new(Tensor)
    t._data = data
    if type(data) is _ndarray and dtype is None:
        t._device = _CPU
        t._dtype = _NP_TO_DTYPE[data.dtype]
    elif type(data) is DeviceArray:  # (every CUDA op's result: array_meta's call saved)
        t._device = data.device
        t._dtype = data.dtype if dtype is None else dtype
    else:
        t._device, d = array_meta(data)
        t._dtype = d if dtype is None else dtype
    t._requires_grad = False
    t._fn = None
    t._base = None
    t._vc = [0]
    if anywhere.inference and state.inference:
        t._inference = True
    return t


_scalar_warned = []  # PyTorch's TORCH_WARN_ONCE: once per process


def _warn_scalar_of_grad() -> None:
    """PyTorch's warning for ``float()``/``complex()`` of a tensor that requires grad (the
    number has no history); ``item()`` and ``int()`` do not warn, as there."""
    if not _scalar_warned:
        _scalar_warned.append(True)
        warnings.warn("Converting a tensor with requires_grad=True to a scalar may lead to "
                      "unexpected behavior.\nConsider using tensor.detach() first.",
                      UserWarning, stacklevel=3)


def _keep_inference(t: Tensor, src: Tensor) -> None:
    """Gives ``t``, just made, ``src``'s inference flag (what make() gave it may differ), set
    only when it differs: setting it gives the tensor a ``__dict__`` (~0.1 us per detach)."""
    if t._inference is not src._inference:
        t._inference = src._inference


_new = object.__new__
_node_module.make = make
# engine.backward, installed by autograd/engine.py when it loads (it imports this module); a
# function-level import would cost every loss.backward() ~0.4 us
_backward = None


def _no_delete(name: str):
    """A property deleter refusing ``del t.<name>``, as PyTorch refuses it (Note [No
    __delattr__])."""
    def deleter(self) -> None:
        raise RuntimeError(f"cannot delete the Tensor attribute {name!r}")
    return deleter


class Tensor:
    """A multi-dimensional array on a device that records the ops applied to it for autograd.

    Create tensors with ``tritongrad.tensor``, ``zeros``, ``randn`` and the other factories.
    """

    # Slots for what every op reads; the other fields are set on few tensors, so they are
    # class-level defaults an instance shadows when set (make() is on every op's path).
    # ``_fn`` is the recorded grad_fn (``_grad_fn``, PyTorch's name, is a property over it).
    # Note [No __delattr__]: the class defines no ``__delattr__`` (nor ``__setattr__``): either
    # one replaces the generic attribute store for every store, which then costs ~4x (40 ns,
    # and the interpreter cannot specialize it), and make() and recording store a dozen
    # fields per op (a tenth of perf/bench_chain.py's time). The attributes that PyTorch
    # refuses to delete refuse through their properties' deleters (``_no_delete``); the
    # private slots could be deleted, as any Python object's, at the caller's peril.
    __slots__ = ("_data", "_device", "_dtype", "_requires_grad", "_fn", "_base", "_vc",
                 "__weakref__", "__dict__")
    _output_nr = 0
    _grad = None
    _view_version = 0
    _hooks = None        # a leaf's tensor hooks (a non-leaf's live on its grad_fn)
    _post_acc_hooks = None  # a leaf's post-accumulate-grad hooks (engine._apply runs them)
    _grad_acc = None     # weakref to a leaf's AccumulateGrad
    _retains_grad = False
    _retained_at = None  # (set per instance by retain_grad: not a user's attribute)
    _inference = False
    _creation_meta = None  # what in-place writes a view allows (Note [View + in-place])
    _grad_dtype = _SAME    # a leaf's grad_dtype, when set (None: any)

    def __new__(cls, *args, device=None):
        """PyTorch's legacy constructor: ``Tensor(2, 3)`` an uninitialised tensor of the default
        dtype, ``Tensor([1, 2])`` one of those values, ``Tensor(t)`` an alias of tensor ``t``
        (its dtype, storage and history), ``Tensor()`` an empty one. A subclass's constructor
        (``MyTensor([1, 2])``) makes the same tensor as an instance of the subclass."""
        from .ops.creation import legacy_new
        from .ops.views import as_subclass
        if len(args) == 1 and isinstance(args[0], Tensor):
            return as_subclass(args[0], cls)
        t = legacy_new(args, dtypes.get_default_dtype(), device or "cpu", "new")
        return t if cls is Tensor else Tensor._make_subclass(cls, t)

    @staticmethod
    def _make_subclass(cls: type, data: "Tensor", require_grad: bool = False, **kwargs):
        """A ``cls`` instance sharing ``data``'s storage and version counter, with no history,
        requiring grad when ``require_grad`` (how a subclass's ``__new__`` makes its
        instances, and ``nn.Parameter`` its own)."""
        if not (isinstance(cls, type) and issubclass(cls, Tensor)):
            raise TypeError("Creating a Tensor subclass from a class that does not inherit from "
                            "Tensor is not possible. Make sure your class inherits from Tensor.")
        if not isinstance(data, Tensor):
            raise TypeError(f"_make_subclass(): argument 'data' (position 2) must be Tensor, "
                            f"not {type(data).__name__}")
        _overrides.note_instance(cls)
        src = data.detach()
        obj = _new(cls)
        for f in _FIELDS:
            setattr(obj, f, getattr(src, f))
        if src._inference:
            obj._inference = True
        if require_grad:
            if not (src._dtype.is_floating_point or src._dtype.is_complex):
                # (PyTorch's _make_subclass words, capitalised unlike requires_grad_'s)
                raise RuntimeError("Only Tensors of floating point and complex dtype can "
                                   "require gradients")
            obj.requires_grad_(True)
        return obj

    # PyTorch's __torch_function__ protocol (autograd/overrides.py): ops on an instance of a
    # subclass go through this, which runs them and returns their Tensors as the subclass
    __torch_function__ = classmethod(_overrides.tensor_torch_function)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        _overrides.note_class(cls)

    # -- what it is --------------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return tuple.__new__(Size, self._data.shape)

    def size(self, dim: int | None = None):
        """The shape, or the length of dimension ``dim``."""
        if dim is None:
            return tuple.__new__(Size, self._data.shape)
        if not self._data.ndim:  # (dims -1 and 0 pass wrap_dim; a 0-d tensor has no sizes)
            wrap_dim(dim, 0, "size")
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        return self._data.shape[wrap_dim(dim, self._data.ndim, "size")]

    def dim(self) -> int:
        return self._data.ndim

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        n = 1
        for d in self._data.shape:
            n *= d
        return n

    nelement = numel

    @property
    def dtype(self):
        return self._dtype

    @property
    def device(self) -> Device:
        return self._device

    @property
    def is_cuda(self) -> bool:
        return self._device.type == "cuda"

    @property
    def is_cpu(self) -> bool:
        return self._device.type == "cpu"

    def is_floating_point(self) -> bool:
        return self._dtype.is_floating_point

    def is_complex(self) -> bool:
        return self._dtype.is_complex

    def element_size(self) -> int:
        return self._dtype.itemsize

    @property
    def itemsize(self) -> int:
        """Bytes per element (``element_size()``)."""
        return self._dtype.itemsize

    @property
    def nbytes(self) -> int:
        """``numel() * itemsize``: the bytes of the elements as viewed (an expanded tensor
        counts each repeat; PyTorch's rule)."""
        return self.numel() * self._dtype.itemsize

    @property
    def layout(self):
        """``tritongrad.strided``: tritongrad has only dense, strided tensors."""
        return dtypes.strided

    # PyTorch's flags for storage kinds and devices tritongrad does not have: always False
    # (read-only properties, as PyTorch's).
    is_sparse = is_sparse_csr = is_quantized = is_mkldnn = is_nested = property(
        lambda self: False)

    @property
    def is_meta(self) -> bool:
        """Whether the tensor is on the meta device (a shape and dtype, no values: Note [The
        meta device] in kernels/meta.py)."""
        return self._device.type == "meta"
    is_xpu = is_mps = is_ipu = is_xla = is_vulkan = is_maia = is_mtia = property(
        lambda self: False)

    def stride(self, dim: int | None = None):
        """Strides in elements, or the stride of dimension ``dim``."""
        st = self._k.strides(self._data)
        if dim is None:
            return st
        if not st:  # (a 0-d tensor: dims -1 and 0 pass wrap_dim, and have no stride)
            wrap_dim(dim, 0, "stride")
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        return st[wrap_dim(dim, self._data.ndim, "stride")]

    def storage_offset(self) -> int:
        return self._k.storage_offset(self._data)

    def is_contiguous(self, *, memory_format=None) -> bool:
        """Whether the tensor is contiguous in ``memory_format``: row-major by default (and for
        ``preserve_format``, as in PyTorch), NHWC / NDHWC order for ``channels_last`` /
        ``channels_last_3d`` (False for a tensor of another rank)."""
        if memory_format is not None and memory_format is not dtypes.contiguous_format:
            from .checks import check_memory_format
            from .layout import is_contiguous_as
            check_memory_format("is_contiguous", memory_format, None)
            return is_contiguous_as(tuple(self._data.shape), self.stride(), memory_format)
        a = self._data
        if type(a) is np.ndarray:  # (NumPy's flag is PyTorch's rule: size-1 dims and empty
            return a.flags.c_contiguous  # arrays count as contiguous; 10x the loop's speed)
        if 0 in a.shape:
            return True
        expected = 1
        for n, s in zip(reversed(a.shape), reversed(self.stride())):
            if n != 1 and s != expected:
                return False
            expected *= n
        return True

    def data_ptr(self) -> int:
        """The address of the first element; 0 for a tensor with no elements, as PyTorch's."""
        a = self._data
        return 0 if 0 in a.shape else data_ptr(a)

    def const_data_ptr(self) -> int:
        """The address of the first element (PyTorch's read-only form of ``data_ptr``; the
        same address here, with no copy-on-write storage)."""
        return self.data_ptr()

    # -- storage (autograd/storage.py) ---------------------------------------------------------
    def untyped_storage(self):
        """The memory this tensor views, in bytes (all of it: a view's storage is its base's)."""
        from .storage import untyped_storage
        return untyped_storage(self)

    def storage(self):
        """The memory this tensor views, in elements of its dtype (deprecated, as in PyTorch:
        prefer ``untyped_storage()``)."""
        from .storage import storage
        return storage(self)

    def storage_type(self) -> type:
        """The legacy storage class of this tensor's dtype (``FloatStorage`` for float32)."""
        from .storage import LEGACY_STORAGES
        for cls in LEGACY_STORAGES.values():
            if cls.dtype is self._dtype:
                return cls
        raise RuntimeError(f"storage_type: no legacy storage class holds {self._dtype}")

    def is_distributed(self) -> bool:
        """False: tensors are never distributed (PyTorch's legacy query)."""
        return False

    # A quantized tensor's methods (tritongrad/ao/_qtensor.py) on a plain one: ``dequantize``
    # is the tensor as float32 (itself when it is one), the others are PyTorch's error.
    def dequantize(self) -> "Tensor":
        return self.to(dtypes.float32)

    def _not_quantized(name: str):
        def method(self):
            raise NotImplementedError(f"Could not run 'aten::{name}' with arguments from the "
                                      f"'{self._device.type.upper()}' backend: it needs a "
                                      f"quantized tensor")
        method.__name__ = method.__qualname__ = name
        return method
    int_repr, q_scale = _not_quantized("int_repr"), _not_quantized("q_scale")
    q_zero_point = _not_quantized("q_zero_point")
    q_per_channel_axis = _not_quantized("q_per_channel_axis")
    q_per_channel_scales = _not_quantized("q_per_channel_scales")
    q_per_channel_zero_points = _not_quantized("q_per_channel_zero_points")
    del _not_quantized

    def set_(self, source=None, storage_offset: int = 0, size=None, stride=None) -> "Tensor":
        """Makes this tensor view ``source``: a tensor's memory and geometry, a storage (with
        ``storage_offset``, ``size``, ``stride``), or nothing (empty). In place."""
        from .storage import set_
        return set_(self, source, storage_offset, size, stride)

    def resize_(self, *sizes, memory_format=None) -> "Tensor":
        """Gives this tensor shape ``sizes`` (contiguous), growing its storage if needed; the
        values of the elements it keeps stay. Refused for tensors that require grad."""
        from .storage import resize_
        return resize_(self, *sizes, memory_format=memory_format)

    def resize_as_(self, the_template: "Tensor", memory_format=None) -> "Tensor":
        """``self.resize_(the_template.shape)``."""
        from .storage import resize_as_
        return resize_as_(self, the_template, memory_format=memory_format)

    def is_set_to(self, tensor: "Tensor") -> bool:
        """Returns True if both tensors are pointing to the exact same memory (same storage,
        offset, size and stride)."""
        from .storage import is_set_to
        return is_set_to(self, tensor)

    def module_load(self, other: "Tensor", assign: bool = False) -> "Tensor":
        """How ``other`` is loaded into ``self`` by ``nn.Module.load_state_dict`` when
        parameters are swapped: ``self.copy_(other).detach()``, or ``other.detach()`` if
        ``assign`` (always a new object, neither ``self`` nor ``other``)."""
        from .storage import module_load
        return module_load(self, other, assign)

    def is_inference(self) -> bool:
        """Returns True if this tensor is an inference tensor (created in inference mode)."""
        return self._inference

    def view_as(self, other: Tensor) -> Tensor:
        """View this tensor as the same size as ``other``: ``self.view_as(other)`` is
        equivalent to ``self.view(other.size())``."""
        if not isinstance(other, Tensor):
            raise TypeError(f"view_as(): argument 'other' (position 1) must be Tensor, not "
                            f"{type(other).__name__}")
        return self.view(other.size())

    def reshape_as(self, other: Tensor) -> Tensor:
        """This tensor in ``other``'s shape: ``self.reshape(other.shape)`` (a view when the
        strides allow, else a copy)."""
        if not isinstance(other, Tensor):
            raise TypeError(f"reshape_as(): argument 'other' (position 1) must be Tensor, not "
                            f"{type(other).__name__}")
        return self.reshape(other.size())

    @property
    def _k(self):
        return backend(self._device)

    @property
    def _version(self) -> int:
        """How many in-place ops have modified this tensor's storage (shared by its views)."""
        if self._inference:
            raise RuntimeError("Inference tensors do not track version counter.")
        return self._vc[0]

    def record_stream(self, stream) -> None:
        """Marks this CUDA tensor's memory as in use by ``stream``: when the tensor is freed,
        the caching allocator keeps its block from other streams' allocations until the work
        queued on ``stream`` by then has completed (Note [Backward streams]; docs/streams.md)."""
        if self._device.type != "cuda":
            raise RuntimeError(f"record_stream: expected a CUDA tensor, got one on "
                               f"{self._device}")
        self._data.storage.record_stream(stream)

    def __len__(self) -> int:
        if not self._data.ndim:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __hash__(self) -> int:
        return id(self)

    def __reduce_ex__(self, protocol: int):
        # Pickled as its storage's values, its offset, shape and strides, dtype, device and
        # requires_grad (every protocol; no graph, and no memory shared with other pickled
        # tensors: what PyTorch's pickling of a tensor keeps). A non-leaf comes back as a
        # leaf, as in PyTorch. A subclass instance comes back as one, with its own
        # attributes.
        args = self._pickled()
        attrs = self._user_attributes()  # (a plain tensor's too: ``t.tag = ...``, PyTorch's)
        if type(self) is Tensor and not attrs:
            return _rebuild_tensor, args
        return _rebuild_subclass, (type(self), args, attrs)

    def __setstate__(self, state: tuple) -> None:
        """Restores a leaf from PyTorch's legacy pickled states (loading never calls this:
        ``_rebuild_tensor`` does): ``(storage, storage_offset, size, stride)`` sets the
        tensor's data, ``(data, _, requires_grad, _, backward_hooks)`` (a legacy Variable)
        and ``(requires_grad, _, backward_hooks)`` its attributes."""
        if self._fn is not None:
            raise RuntimeError("__setstate__ can be only called on leaf Tensors")
        if len(state) == 4:
            self.set_(*state)
            return
        if len(state) == 5:
            self.data = state[0]
            state = (state[3], state[4], state[2])
        self.requires_grad, _, hooks = state
        for hook in (hooks or {}).values():  # (an OrderedDict of tensor hooks, or None)
            self.register_hook(hook)

    def _pickled(self) -> tuple:
        """``_rebuild_tensor``'s arguments for this tensor."""
        from .storage import _whole
        t = self.detach()
        whole = _whole(t)
        values = np.array(host_values(whole._data if t._device.type == "cpu"
                                      else whole.cpu()._data))
        a, k = t._data, t._k
        geometry = (k.storage_offset(a), tuple(a.shape), tuple(k.strides(a)))
        return values, self._dtype, str(self._device), self._requires_grad, geometry

    def _user_attributes(self) -> dict:
        """The attributes a subclass instance was given (not Tensor's own fields)."""
        return {k: v for k, v in self.__dict__.items()
                if not hasattr(Tensor, k) and k != "_fw_grads"}

    def __deepcopy__(self, memo: dict) -> "Tensor":
        if id(self) in memo:
            return memo[id(self)]
        if self._fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) "
                               "support the deepcopy protocol at the moment.  If you were "
                               "attempting to deepcopy a module, this may be because of a "
                               "torch.nn.utils.weight_norm usage, see "
                               "https://github.com/pytorch/pytorch/pull/103001")
        import copy
        out = self._storage_copy(memo)
        if self._requires_grad:
            out.requires_grad_()
        if type(self) is not Tensor:
            out = _rebuild_subclass(type(self), out, {})
        memo[id(self)] = out
        if self._grad is not None:
            out._grad = self._grad.__deepcopy__(memo)
        attrs = self._user_attributes()  # (a plain tensor's attributes too, as PyTorch's)
        if attrs:
            out.__dict__.update(copy.deepcopy(attrs, memo))
        return out

    def _storage_copy(self, memo: dict) -> "Tensor":
        """A tensor with this one's geometry over a copy of its storage, made once per storage
        in a deepcopy (``memo``): tensors that shared memory share the copies' memory, as
        PyTorch's deepcopy copies storages through its memo."""
        from .storage import _span, _whole
        copies = memo.setdefault("tritongrad.storages", {})
        a = self._data
        key = (str(self._device), _span(a)[0], self._dtype)
        whole = copies.get(key)
        if whole is None:  # (kept alive by the memo while the deepcopy runs: keys stay unique)
            whole = copies[key] = _whole(self).clone()
        k = self._k
        return make(k.as_strided(whole._data, tuple(a.shape), k.strides(a),
                                 k.storage_offset(a)), self._dtype)

    def _is_view(self) -> bool:
        """Whether this tensor is a view of another (``_base``)."""
        return self._base is not None

    # -- autograd surface --------------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        """True if gradients need to be computed for this Tensor. A view also requires grad
        when its base does (as PyTorch's: a view made under no_grad or inference mode, or
        one whose base was later made to require grad by an in-place op)."""
        if self._requires_grad:
            return True
        base = self._base
        if base is None or not base._requires_grad:
            return False
        if self._view_version != self._vc[0] and self._creation_meta is None:
            # the base was made to require grad by an in-place op since this view was made:
            # its history, regenerated now, makes it require grad for autograd too
            self._view_grad_fn()
        return True

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        if type(flag) is not bool:
            raise RuntimeError("requires_grad must be a bool")  # (PyTorch's setter's type)
        if flag and self._fn is None and not (self._dtype.is_floating_point
                                              or self._dtype.is_complex):
            raise RuntimeError("only Tensors of floating point and complex dtype can require "
                               "gradients")  # (PyTorch's setter's words)
        self.requires_grad_(flag)

    requires_grad = requires_grad.deleter(_no_delete("requires_grad"))

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        """Sets ``requires_grad`` in place on a leaf tensor and returns it."""
        if type(requires_grad) is not bool:
            raise TypeError(f"requires_grad_(): argument 'requires_grad' (position 1) must be "
                            f"bool, not {type(requires_grad).__name__}")
        if self._fn is not None:
            if requires_grad:
                return self
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use a "
                "computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach().")
        if requires_grad and not (self._dtype.is_floating_point or self._dtype.is_complex):
            # (PyTorch's method's words; its factories' requires_grad=True says "Only Tensors of
            # floating point and complex dtype", creation._finish)
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        if requires_grad and self._inference and not state.inference:
            raise RuntimeError("Setting requires_grad=True on inference tensor outside "
                               "InferenceMode is not allowed.")
        self._requires_grad = bool(requires_grad)
        return self

    def _set_fn(self, node) -> None:
        self._fn = node

    # PyTorch's private name for the recorded grad_fn, for code outside autograd's hot path
    _grad_fn = property(operator.attrgetter("_fn"), _set_fn, _no_delete("_grad_fn"))

    @property
    def _backward_hooks(self):
        """The tensor hooks registered on this tensor (``register_hook``), or None."""
        fn = self.grad_fn
        return self._hooks if fn is None else fn._tensor_hooks_for(self._output_nr)

    _backward_hooks = _backward_hooks.deleter(_no_delete("_backward_hooks"))

    @property
    def grad_fn(self):
        """The Node that created this tensor (None for leaves)."""
        if self._base is not None:
            return self._view_grad_fn()
        return self._fn

    @property
    def is_leaf(self) -> bool:
        """True for tensors not created by a recorded op: those with ``requires_grad=False``,
        and those the user created with ``requires_grad=True``."""
        return self.grad_fn is None

    @property
    def output_nr(self) -> int:
        return self._output_nr

    @property
    def grad(self):
        """The accumulated gradient: None until a backward computes one for this tensor."""
        if self._grad is None and self._fn is not None and not self._retains_grad:
            import warnings
            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. "
                "Its .grad attribute won't be populated during autograd.backward(). If you "
                "indeed want the .grad field to be populated for a non-leaf Tensor, use "
                ".retain_grad() on the non-leaf Tensor.", UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of "
                                f"type {type(value).__name__}")
            if value is self:
                raise RuntimeError("can't assign Variable as its own grad")
            if value._device is not self._device:
                raise RuntimeError(f"attempting to assign a gradient with device type "
                                   f"'{value._device.type}' to a tensor with device type "
                                   f"'{self._device.type}'. Please ensure that the gradient "
                                   f"and the tensor are on the same device")
            want = self._dtype if self._grad_dtype is _SAME else self._grad_dtype
            if want is not None and value._dtype is not want:
                from .checks import scalar_type_name
                from .storage import _c_type
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype '{_c_type(value._dtype)}' to a "
                    f"tensor with grad_dtype '{scalar_type_name(want)}'. The gradient must match "
                    f"the tensor's grad_dtype (defaults to the tensor's dtype). You can set the "
                    f"tensor's grad_dtype attribute with a specific dtype, or None to allow any "
                    f"dtype. Set grad_dtype with caution. Diverging the dtypes of a tensor and "
                    f"its gradient may break downstream systems that assume they match.")
            if tuple(value.shape) != tuple(self.shape):
                raise RuntimeError(f"attempting to assign a gradient of size "
                                   f"'{list(value.shape)}' to a tensor of size "
                                   f"'{list(self.shape)}'. Please ensure that the gradient and "
                                   f"the tensor are the same size")
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        # ``del t.grad`` is ``t.grad = None``, as in PyTorch (zero_grad(set_to_none=True))
        self._grad = None

    @property
    def grad_dtype(self):
        """The dtype of this leaf's ``.grad``: gradients are cast to it as they accumulate
        (the tensor's dtype unless set; None: kept as they come)."""
        if self.grad_fn is not None:
            raise RuntimeError("grad_dtype can only be accessed on leaf tensors.")
        return self._dtype if self._grad_dtype is _SAME else self._grad_dtype

    def _accumulated_dtype(self):
        """The dtype this leaf's gradients accumulate in: ``grad_dtype`` without the leaf
        check (engine.accumulate_grad); None: the dtype they come in."""
        return self._dtype if self._grad_dtype is _SAME else self._grad_dtype

    @grad_dtype.setter
    def grad_dtype(self, value) -> None:
        if self.grad_fn is not None:
            raise RuntimeError("grad_dtype can only be set on leaf tensors.")
        if value is not None and not isinstance(value, dtypes.dtype):
            raise RuntimeError(f"grad_dtype must be a torch.dtype or None, but got "
                               f"{type(value).__name__}")
        grad = self._grad
        if value is not None and grad is not None and grad._dtype is not value:
            from .checks import scalar_type_name
            from .storage import _c_type
            raise RuntimeError(f"Cannot set grad_dtype to '{scalar_type_name(value)}' because "
                               f"there is already a gradient with dtype '{_c_type(grad._dtype)}'."
                               f" Please clear the gradient (.grad = None) before changing "
                               f"grad_dtype, or ensure the new grad_dtype matches the existing "
                               f"gradient's dtype.")
        self._grad_dtype = value

    @property
    def retains_grad(self) -> bool:
        """True if this non-leaf tensor keeps its ``.grad`` (see ``retain_grad``)."""
        return self._retains_grad

    def retain_grad(self) -> None:
        """Enables this Tensor to have their :attr:`grad` populated during
        :func:`backward`. This is a no-op for leaf tensors.

        The gradient retained is the one with respect to the tensor's latest value: after an
        in-place op, the gradient of the modified tensor, as in PyTorch (Note [retain_grad
        after in-place]).
        """
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        fn = self.grad_fn
        if fn is None or self._retains_grad:
            return  # a leaf retains its grad anyway
        _retain_at(self, fn, self._output_nr)
        self._retains_grad = True
        with _RETAINING_LOCK:
            _RETAINING.add(self)

    def register_hook(self, hook) -> RemovableHandle:
        """Registers ``hook(grad) -> Tensor or None``, called each time a gradient with respect
        to this tensor is computed; a returned tensor replaces the gradient.

        Returns a handle whose ``remove()`` unregisters the hook.

        Example:
            >>> v = tg.tensor([0., 0., 0.], requires_grad=True)
            >>> h = v.register_hook(lambda grad: grad * 2)  # double the gradient
            >>> v.backward(tg.tensor([1., 2., 3.]))
            >>> v.grad
            tensor([2., 4., 6.])
            >>> h.remove()
        """
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        fn = self.grad_fn
        if fn is not None:
            return fn._add_tensor_hook(self._output_nr, hook)
        if self._hooks is None:
            self._hooks = _HookDict()
        h = RemovableHandle(self._hooks)
        self._hooks[h.id] = hook
        return h

    def register_post_accumulate_grad_hook(self, hook) -> RemovableHandle:
        """Registers a backward hook that runs after grad accumulation.

        The hook will be called after all gradients for a tensor have been accumulated, meaning
        that the ``.grad`` field has been updated on that tensor. The post accumulate grad hook
        is ONLY applicable for leaf tensors (tensors without a ``.grad_fn`` field). Registering
        this hook on a non-leaf tensor will error!

        The hook should have the following signature::

            hook(param: Tensor) -> None

        Note that, unlike other autograd hooks, this hook operates on the tensor that requires
        grad and not the grad itself. The hook can in-place modify and access its Tensor
        argument, including its ``.grad`` field. It is not called by ``autograd.grad()``,
        which accumulates nothing.

        Returns a handle whose ``remove()`` unregisters the hook.

        Example:
            >>> v = tg.tensor([0., 0., 0.], requires_grad=True)
            >>> lr = 0.01
            >>> # simulate a simple SGD update
            >>> h = v.register_post_accumulate_grad_hook(lambda p: p.add_(p.grad, alpha=-lr))
            >>> v.backward(tg.tensor([1., 2., 3.]))
            >>> v
            tensor([-0.0100, -0.0200, -0.0300], requires_grad=True)
            >>> h.remove()  # removes the hook
        """
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf "
                               "tensors")
        if self._post_acc_hooks is None:
            self._post_acc_hooks = _HookDict()
        h = RemovableHandle(self._post_acc_hooks)
        self._post_acc_hooks[h.id] = hook
        return h

    def backward(self, gradient=None, retain_graph=None, create_graph: bool = False,
                 inputs=None) -> None:
        """Computes the gradient of this tensor w.r.t. graph leaves; see
        ``tritongrad.autograd.backward``. ``gradient`` is needed unless this tensor is a
        scalar."""
        if _backward is None:
            from . import engine  # noqa: F401  (installs _backward)
        _backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def detach(self) -> "Tensor":
        """A new tensor sharing this one's storage and version counter, with no history."""
        t = make(self._data, self._dtype)
        t._vc = self._vc
        _keep_inference(t, self)
        return t

    def detach_(self) -> "Tensor":
        """Detaches this tensor from its graph in place, making it a leaf. Views cannot."""
        if self._base is not None:
            raise RuntimeError(
                "Can't detach views in-place. Use detach() instead. If you are using "
                "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set "
                "as True, gradients are views of DDP buckets, and hence detach_() cannot be "
                "called on these gradients. To fix this error, please refer to the "
                "Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution.")
        self._fn = None
        self._output_nr = 0
        self._requires_grad = False
        self.__dict__.pop("_fw_grads", None)  # its forward grads go too, as detach()'s
        return self

    @property
    def volatile(self) -> bool:
        """Removed (PyTorch 0.4): always False, with PyTorch's warning; use ``no_grad``."""
        warnings.warn("volatile was removed (Variable.volatile is always False)", stacklevel=2)
        return False

    @volatile.setter
    def volatile(self, value) -> None:
        warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` "
                      "instead.", stacklevel=2)

    @property
    def data(self) -> "Tensor":
        """This tensor's values as a tensor with no history and its own version counter:
        in-place changes to it are invisible to autograd's checks (prefer ``detach()``)."""
        t = make(self._data, self._dtype)
        _keep_inference(t, self)
        return t

    @data.setter
    def data(self, value: "Tensor") -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(value).__name__}")
        if self._requires_grad and not (value._dtype.is_floating_point
                                        or value._dtype.is_complex):
            raise RuntimeError("data set to a tensor that requires gradients must be floating "
                               "point or complex dtype")
        self._data, self._device, self._dtype = value._data, value._device, value._dtype

    data = data.deleter(_no_delete("data"))

    # -- internal helpers for autograd -------------------------------------------------------
    def _grad_accumulator(self) -> AccumulateGrad:
        acc = self._grad_acc() if self._grad_acc is not None else None
        if acc is None:
            acc = AccumulateGrad(self)
            self._grad_acc = weakref.ref(acc)
        return acc

    def _edge(self):
        """(node, input slot) that gradients for this tensor flow into, or None."""
        fn = self._fn if self._base is None else self._view_grad_fn()
        if fn is not None:
            return (fn, self._output_nr)
        if self._requires_grad:
            return (self._grad_accumulator(), 0)
        return (None, 0)

    def _view_grad_fn(self):
        # A view's history is stale once its base was modified in place through another view
        # (version moved on): it is regenerated as a strided view of the base's new history,
        # unless the view rules forbid it (Note [View + in-place]: PyTorch raises then too).
        if self._view_version != self._vc[0] and (self._fn is not None
                                                  or self._base._requires_grad):
            msg = view_rebase_error(self, indirect=True)
            if msg is not None:
                raise RuntimeError(msg)
            if self._base._requires_grad:
                from .ops.views import regenerate_view_history
                regenerate_view_history(self)
        return self._fn

    def _with_history(self, node, output_nr: int) -> "Tensor":
        t = make(self._data, self._dtype)
        t._vc = self._vc
        t._fn = node
        t._output_nr = output_nr
        t._requires_grad = True
        return t

    # -- conversions -------------------------------------------------------------------------
    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The values as a NumPy array sharing memory (CPU tensors without grad), or a copy
        with ``force=True``."""
        if self._device.type != "cpu":
            if not force:
                raise TypeError(f"can't convert {self._device} device type tensor to numpy. Use "
                                f"Tensor.cpu() to copy the tensor to host memory first.")
            return self.cpu()._host_array()
        if self._requires_grad and not force and state.grad_enabled:  # (no_grad: allowed)
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        return self._host_array()  # (force=True detaches and shares memory, as PyTorch's)

    def _host_array(self) -> np.ndarray:
        return host_values(self._data)

    # NumPy's scalars and arrays leave their binary operators to the tensor's reflected ones,
    # as torch.Tensor's priority makes them: ``np.sqrt(2.0) * t`` is a Tensor, not an ndarray
    __array_priority__ = 1000

    def __array__(self, dtype=None, copy=None):
        if self._device.type != "cpu":
            raise TypeError(f"can't convert {self._device} device type tensor to numpy. Use "
                            f"Tensor.cpu() to copy the tensor to host memory first.")
        if self._requires_grad and state.grad_enabled:  # (numpy()'s rule, as PyTorch's
            # __array__, which calls numpy(): np.asarray(t) would drop the graph silently)
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        a = self._host_array()
        converts = self._dtype is dtypes.bfloat16 or (dtype is not None and
                                                      np.dtype(dtype) != a.dtype)
        if copy is False and converts:  # NumPy 2's protocol: refuse rather than copy
            raise ValueError(f"Unable to avoid copy while creating an array from a {self._dtype} "
                             f"tensor as requested")
        if dtype is not None:
            a = a.astype(dtype)
        return a.copy() if copy and not converts else a

    def __array_wrap__(self, array, context=None, return_scalar=False):
        # A NumPy ufunc over a tensor (``np.sin(t)``) gives a tensor back, as PyTorch's does
        # (a bool result stays bool, where PyTorch's predates its bool dtype and gives uint8)
        from .ops.creation import from_numpy
        return from_numpy(np.ascontiguousarray(array))

    def tolist(self):
        return self.detach().cpu()._host_array().tolist()

    def item(self):
        """The value of a one-element tensor as a Python number."""
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to "
                               f"Scalar")
        if self._device.type == "meta":
            raise RuntimeError("Tensor.item() cannot be called on meta tensors")
        return self.detach().cpu()._host_array().reshape(()).item()

    def _scalar(self):
        """The one element, for float()/int()/complex() (PyTorch's ValueError otherwise)."""
        if self.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self.item()

    def __float__(self) -> float:
        if self._requires_grad and state.grad_enabled:  # (PyTorch's: not under no_grad)
            _warn_scalar_of_grad()
        return float(_real_value(self._scalar(), "double"))

    def __int__(self) -> int:
        return int(_real_value(self._scalar(), "int64_t"))

    def __complex__(self) -> complex:
        if self._requires_grad and state.grad_enabled:  # (PyTorch's: not under no_grad)
            _warn_scalar_of_grad()
        return complex(self._scalar())

    def __iter__(self):
        # (PyTorch's: the sub-tensors along dim 0, one unbind; a 0-d tensor has none)
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __contains__(self, element) -> bool:
        if not isinstance(element, (Tensor, numbers.Number)):
            raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you "
                               f"passed in a {type(element)}.")
        return bool((element == self).any().item())

    def __bool__(self) -> bool:
        if self.numel() != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    __nonzero__, __long__ = __bool__, __int__  # (Python 2's names, which PyTorch keeps)

    def __reversed__(self) -> "Tensor":
        """The tensor flipped along dim 0 (a 0-d tensor is returned as it is, as PyTorch's)."""
        return self if self._data.ndim == 0 else self.flip(0)

    def __index__(self) -> int:
        if self._dtype.is_floating_point or self._dtype.is_complex or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an "
                            "index")
        return int(self.item())

    def __repr__(self, *, tensor_contents: str | None = None) -> str:
        from .printing import tensor_repr
        return tensor_repr(self, tensor_contents)

    __str__ = __repr__

    def __format__(self, format_spec: str) -> str:
        # PyTorch's: a 0-dim tensor formats as its Python number (f"{loss:.4f}"); others
        # take no format spec
        if self.ndim == 0:
            return self.item().__format__(format_spec)
        return object.__format__(self, format_spec)


# Tensor's per-instance fields, which a subclass instance made from a tensor gets
_FIELDS = tuple(n for n in Tensor.__slots__ if n not in ("__weakref__", "__dict__"))
_overrides._PLAIN.update((Tensor, Size))  # (never override: skipped by dispatch at once)


# Note [View + in-place]
#   An in-place op on a view rewrites its base's history (dispatch.apply_inplace, CopySlices).
#   PyTorch refuses it where that rewrite would be wrong or ambiguous, and so does
#   ``view_inplace_error``, which dispatch.check_inplace asks before writing (when grad mode
#   is on and some input of the op requires grad) and a view's ``grad_fn`` asks before
#   regenerating a history made stale by a write through its base or another view. What a
#   view allows is its ``_creation_meta`` (PyTorch's CreationMeta), set when it is made
#   (views._as_view):
#   - None (DEFAULT): a view made with grad mode on; writes are recorded;
#   - "no_grad" / "inference_mode": made while grad mode was off (or in inference mode):
#     nothing recorded the view, so a write with grad mode on cannot be placed in the base's
#     history (such a view requires grad when its base does, yet has no grad_fn);
#   - "multi_output": one output of an op returning several views (unbind, split, chunk):
#     their shared node cannot have one output's history rewritten;
#   - "custom_function": a view returned by a custom Function (marked in
#     function._wrap_outputs): the rewrite would bypass the Function's own backward.
#   A view of a view inherits its parent's meta unless it has one of its own (an inference-mode
#   parent wins over all): ``propagate_creation_meta``.
_META_ADVICE = {
    "no_grad": (" Given that this use case is ambiguous and error-prone, it is forbidden. You "
                "can clarify your code by moving both the view and the inplace either both "
                "inside the no_grad block (if you don't want the inplace to be tracked) or "
                "both outside (if you want the inplace to be tracked)."),
    "inference_mode": (" Given that this use case is ambiguous and error-prone, it is "
                       "forbidden. You can clarify your code by moving both the view and the "
                       "inplace either both inside the inference_mode block (if you don't want "
                       "the inplace to be tracked) or both outside (if you want the inplace to "
                       "be tracked)."),
    "multi_output": (" This view is the output of a function that returns multiple views. "
                     "Such functions do not allow the output views to be modified inplace. You "
                     "should replace the inplace operation by an out-of-place one."),
    "custom_function": (" This view was created inside a custom Function (or because an input "
                        "was returned as-is) and the autograd logic to handle view+inplace "
                        "would override the custom backward associated with the custom "
                        "Function, leading to incorrect gradients. This behavior is forbidden. "
                        "You can fix this by cloning the output of the custom Function."),
}


def propagate_creation_meta(parent, new):
    """The creation meta of a view of a view whose parent has ``parent`` and whose own op
    gives ``new`` (PyTorch's propagate_creation_meta)."""
    if new is None or parent == "inference_mode":
        return parent
    return new


def view_inplace_error(t: Tensor) -> str | None:
    """PyTorch's error message for an in-place op on ``t`` (whose other inputs need no grad)
    that the view rules forbid under the current grad mode, or None (Note [View + in-place])."""
    if not (state.grad_enabled and t.requires_grad):
        return None
    return view_rebase_error(t)


def view_rebase_error(t: Tensor, indirect: bool = False) -> str | None:
    """PyTorch's error message (handle_view_on_rebase) for view ``t`` being modified in place
    (``indirect``: its base or another view of it was) when its creation meta forbids
    rewriting its history, or None (Note [View + in-place])."""
    meta = t._creation_meta
    if meta is None:
        return None
    fn = t._fn  # (the recorded one: a stale history is what is being replaced)
    modified = "its base or another view of its base has been" if indirect else "is being"
    if meta in ("no_grad", "inference_mode") or fn is None:
        if fn is not None:
            prefix = (f"Output {t._output_nr} of {_short_name(fn)} is a view of a view which "
                      f"was created in")
        else:
            prefix = "A view was created in"
        if meta == "inference_mode":
            msg = f"{prefix} inference mode and {modified} modified inplace in normal mode."
        else:  # (no grad_fn: the view was made with grad mode off, whatever its meta says)
            msg = (f"{prefix} no_grad mode and {modified} modified inplace with grad mode "
                   f"enabled.")
    else:
        msg = (f"Output {t._output_nr} of {_short_name(fn)} is a view and {modified} modified "
               f"inplace.")
    return msg + _META_ADVICE[meta]


def _short_name(fn) -> str:
    # PyTorch names the op in these messages without the node's "Backward<N>" suffix
    name = fn.name()
    head, sep, tail = name.rpartition("Backward")
    return head if sep and head and (tail == "" or tail.isdigit()) else name


# Note [retain_grad after in-place]
#   retain_grad registers the tensor on its grad_fn (``_retained``), which the engine reads as
#   it runs that node. An in-place op then gives the tensor a new grad_fn (dispatch's
#   rebase_history, or a view's regenerated history); PyTorch's retained gradient follows the
#   tensor to it, while its other tensor hooks stay with the old node. The move is made
#   lazily, once per backward call, by ``refresh_retained`` over the live tensors that retain
#   (``_RETAINING``, usually empty: the engine's cost is one truth test).
_RETAINING: weakref.WeakSet[Tensor] = weakref.WeakSet()
_RETAINING_LOCK = threading.Lock()  # (other threads may retain while one backward reads it)


def _retain_at(t: Tensor, fn, output_nr: int) -> None:
    if fn._retained is None:
        fn._retained = {}
        fn._hooked = True
    fn._retained[output_nr] = weakref.ref(t)
    t._retained_at = (fn, output_nr)


def refresh_retained() -> None:
    """Moves each retained gradient to its tensor's current grad_fn (Note [retain_grad after
    in-place])."""
    with _RETAINING_LOCK:
        retaining = tuple(_RETAINING)
    for t in retaining:
        fn, nr = t.__dict__.get("_retained_at", (None, 0))
        try:
            current = t.grad_fn
        except RuntimeError:  # a view whose history may not be regenerated: it stays put
            continue
        if current is fn and t._output_nr == nr:
            continue
        if fn is not None and fn._retained is not None:
            ref = fn._retained.get(nr)
            if ref is not None and ref() is t:
                del fn._retained[nr]
        if current is None:
            with _RETAINING_LOCK:
                _RETAINING.discard(t)
        else:
            _retain_at(t, current, t._output_nr)


def wrap_dim(dim: int, ndim: int, op: str, name: str = "dim", pos: int | None = None) -> int:
    """``dim`` as a non-negative index into ``ndim`` dims (a 0-d tensor takes -1 and 0), or
    the documented IndexError naming ``op`` (a TypeError naming the argument ``name`` at
    ``pos`` when it is no integer)."""
    if dim.__class__ is not int:
        dim = int_arg(dim, op, name, pos)
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"{op}: dimension out of range (expected to be in range of "
                         f"[{-n}, {n - 1}], but got {dim})")
    return dim + n if dim < 0 else dim


def int_arg(value, op: str, name: str, pos: int | None = None) -> int:
    """``value`` as a Python int (any integer type, a NumPy one too), or a TypeError naming
    ``op`` and the argument (and its position, as PyTorch's messages do, when given). Callers
    test ``type(value) is int`` first, so valid ints pay no call."""
    try:
        return operator.index(value)
    except TypeError:
        where = "" if pos is None else f" (position {pos})"
        raise TypeError(f"{op}(): argument '{name}'{where} must be int, not "
                        f"{type(value).__name__}") from None


def _real_value(v, ctype: str):
    """A complex tensor's value as a real number, as PyTorch's ``float()``/``int()``: its real
    part when the imaginary part is zero, else PyTorch's overflow error."""
    if isinstance(v, complex):
        if v.imag != 0:
            raise RuntimeError(f"value cannot be converted to type {ctype} without overflow")
        return v.real
    return v
