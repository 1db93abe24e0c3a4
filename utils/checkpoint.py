"""Activation checkpointing: trade compute for memory by recomputing a region's intermediate
values during backward instead of keeping them from the forward. PyTorch's two variants:

``use_reentrant=False`` (saved-tensor hooks, tritongrad's default). ``checkpoint(fn, *args)``
runs ``fn`` under a pack hook that stores, for each tensor an op saves for backward, only an
empty ``_Holder``. When backward first unpacks one of them, ``fn`` runs again on the same
inputs (random number generators and autocast state as at the first run) under a hook that
hands each tensor the recomputation saves to the holder at the same position; a holder gives
its tensor out once. Recomputations are per backward call (graph task id, or a
``GraphExecGroup``), stop as soon as every holder is filled (``early_stop``), nest (an inner
checkpoint's inputs are saved tensors of the outer one), and are checked against the
original forward (number, shapes, dtypes and devices of the saved tensors). See PyTorch's
Note [Nestable Checkpoint] in torch/utils/checkpoint.py, whose rules this follows.

``use_reentrant=True`` (``CheckpointFunction``): a custom Function whose forward runs ``fn``
under no_grad, and whose backward recomputes it under enable_grad and runs a nested
(reentrant) backward through the recomputed graph. It works with ``.backward()`` only.
"""

from __future__ import annotations

import contextlib
import enum
import os
import threading
import traceback
import uuid
import warnings
import weakref
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..autograd import observe
from ..autograd.autocast import (
    autocast,
    get_autocast_dtype,
    is_autocast_cache_enabled,
    is_autocast_enabled,
)
from ..autograd.engine import current_graph_task_id
from ..autograd.function import Function
from ..autograd.grad_mode import enable_grad, is_grad_enabled, no_grad
from ..autograd.graph import saved_tensors_hooks
from ..autograd.saved import SavedTensor
from ..autograd.tensor import Tensor

__all__ = [
    "CheckpointError",
    "CheckpointFunction",
    "CheckpointPolicy",
    "DefaultDeviceType",
    "GraphExecGroup",
    "check_backward_validity",
    "checkpoint",
    "checkpoint_sequential",
    "create_selective_checkpoint_contexts",
    "detach_variable",
    "get_device_states",
    "noop_context_fn",
    "SelectiveCheckpointContext",
    "set_checkpoint_debug_enabled",
    "set_checkpoint_early_stop",
    "set_device_states",
]


class CheckpointError(RuntimeError):
    """The recomputation did not save the tensors the original forward saved (a function that
    is not deterministic in what it computes), or a recomputed tensor was unpacked twice."""


class _StopRecomputationError(Exception):
    """Raised inside a recomputation once it has every tensor it needs (early stop)."""


def _internal_assert(cond: bool) -> None:
    if not cond:
        raise AssertionError("Something went unexpectedly wrong in activation checkpoint.")


# -- global switches ---------------------------------------------------------------------------

_enable_checkpoint_early_stop: bool | None = None
_checkpoint_debug_enabled: bool | None = None


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool):
    """Context manager: whether non-reentrant checkpoints stop a recomputation as soon as it
    has recomputed every tensor the original forward saved (the default), or run the
    checkpointed function to its end. It wins over ``checkpoint``'s ``early_stop`` argument
    and only needs to be active while the forward runs.

    Example:
        >>> with tg.utils.checkpoint.set_checkpoint_early_stop(False):
        ...     y = checkpoint(fn, x, use_reentrant=False)
        >>> y.backward()   # recomputes all of fn
    """
    global _enable_checkpoint_early_stop
    prev = _enable_checkpoint_early_stop
    _enable_checkpoint_early_stop = enable
    try:
        yield
    finally:
        _enable_checkpoint_early_stop = prev


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled: bool | None):
    """Context manager: whether checkpoint's errors carry the op logs of the original forward
    and of the recomputation (``checkpoint``'s ``debug``), overriding the argument; ``None``
    defers to it."""
    global _checkpoint_debug_enabled
    prev = _checkpoint_debug_enabled
    _checkpoint_debug_enabled = enabled
    try:
        yield
    finally:
        _checkpoint_debug_enabled = prev


class _GroupState(threading.local):
    group = None


_group_state = _GroupState()


class GraphExecGroup:
    """Any checkpointed regions encountered by backward under the same instance of this
    context manager will trigger recompute at most once, even if there are multiple calls
    to backward.

    Backward calls under the same instance must execute over non-overlapping regions of the
    backward graph even if retain_graph=True: no two of them may use the same saved
    activation. Affects ``use_reentrant=False`` checkpoints only. Groups do not nest.
    """

    def __enter__(self) -> GraphExecGroup:  # noqa: PYI034 - PyTorch's signature
        if _group_state.group is not None:
            raise RuntimeError(f"GraphExecGroup contexts cannot be nested. Already inside group "
                               f"{_group_state.group}")
        _group_state.group = self
        return self

    def __exit__(self, *exc) -> None:
        _group_state.group = None

    @classmethod
    def _get_current_group(cls) -> GraphExecGroup | None:
        return _group_state.group


# -- device, RNG and autocast state --------------------------------------------------------------

class DefaultDeviceType:
    r"""A class that manages the default device type for checkpointing.

    If no non-CPU tensors are present, the default device type will be used: until
    ``set_device_type`` is called, the current accelerator's type when one is available,
    else ``"cpu"`` (as PyTorch's ``torch.accelerator.current_accelerator(True)``).
    """

    _default_device_type: str | None = None

    @staticmethod
    def set_device_type(device: str = "cuda") -> None:
        """Set the default device type for checkpointing."""
        DefaultDeviceType._default_device_type = device

    @staticmethod
    def get_device_type() -> str:
        """Get the current default device type for checkpointing."""
        if not DefaultDeviceType._default_device_type:
            from ..accelerator import current_accelerator
            acc = current_accelerator(True)
            DefaultDeviceType._default_device_type = acc.type if acc is not None else "cpu"
        return DefaultDeviceType._default_device_type


def _infer_device_type(*args) -> str:
    """The device type of the non-CPU tensors among ``args`` (nested ones too): "cuda" if
    any, else the first one's, else ``DefaultDeviceType``'s; warns for several, as PyTorch."""
    from ..autograd._pytree import tree_leaves
    device_types = [a.device.type for a in tree_leaves(args)
                    if isinstance(a, Tensor) and a.device.type != "cpu"]
    if len(set(device_types)) > 1:
        warnings.warn(
            "Tensor arguments, excluding CPU tensors, are detected on at least two types of "
            "devices. Device state will only be saved for devices of a single device type, and "
            "the remaining devices will be ignored. Consequently, if any checkpointed functions "
            "involve randomness, this may result in incorrect gradients. (Note that if CUDA "
            "devices are among the devices detected, it will be prioritized; otherwise, the "
            "first device encountered will be selected.)"
            f"\nDevice types: {sorted(set(device_types))} first device type: "
            f"{device_types[0]}", stacklevel=3)
    if not device_types:
        return DefaultDeviceType.get_device_type()
    return "cuda" if "cuda" in device_types else device_types[0]


def get_device_states(*args) -> tuple[list, list]:
    """The CUDA devices among the tensor arguments and their default generators' states."""
    from ..autograd.ops import random
    devices = list(dict.fromkeys(a.device for a in args
                                 if isinstance(a, Tensor) and a.device.type == "cuda"))
    return devices, [random.get_cuda_rng_state(d) for d in devices]


def set_device_states(devices, states, *, device_type=None) -> None:
    """Restores what ``get_device_states`` returned."""
    from ..autograd.ops import random
    for d, st in zip(devices, states):
        random.set_cuda_rng_state(st, d)


class _RngState:
    """The CPU generator's state and that of the CUDA devices among a call's inputs (as
    PyTorch's ``preserve_rng_state``: draws on a device come from its own generator)."""

    def __init__(self, args) -> None:
        from ..autograd.ops import random
        self.cpu = random.get_rng_state()
        self.devices, self.states = get_device_states(*args)

    @contextlib.contextmanager
    def replayed(self):
        """Runs the block with the generators as they were when this was taken, and puts the
        surrounding states back after it (``torch.random.fork_rng``)."""
        from ..autograd.ops import random
        outer_cpu = random.get_rng_state()
        outer = [random.get_cuda_rng_state(d) for d in self.devices]
        random.set_rng_state(self.cpu)
        set_device_states(self.devices, self.states)
        try:
            yield
        finally:
            random.set_rng_state(outer_cpu)
            set_device_states(self.devices, outer)


def _autocast_state(device_type: str):
    """Contexts reproducing the current autocast state of ``device_type`` and of the CPU."""
    def kwargs(dev):
        return {"enabled": is_autocast_enabled(dev), "dtype": get_autocast_dtype(dev),
                "cache_enabled": is_autocast_cache_enabled()}
    device = kwargs(device_type) if device_type in ("cpu", "cuda") else None
    cpu = kwargs("cpu")

    def contexts() -> contextlib.ExitStack:
        stack = contextlib.ExitStack()
        if device is not None:
            stack.enter_context(autocast(device_type, **device))
        stack.enter_context(autocast("cpu", **cpu))
        return stack
    return contexts


# -- helpers of the reentrant variant ------------------------------------------------------------

def detach_variable(inputs: tuple) -> tuple:
    """Each tensor detached, keeping its ``requires_grad`` (non-tensors as they are)."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(  # noqa: TRY004 - PyTorch raises RuntimeError here
            f"Only tuple of tensors is supported. Got Unsupported input type: "
            f"{type(inputs).__name__}")
    out = []
    for inp in inputs:
        if not isinstance(inp, Tensor):
            out.append(inp)
            continue
        x = inp.detach()
        x.requires_grad = inp.requires_grad
        out.append(x)
    return tuple(out)


def check_backward_validity(inputs: Iterable[Any]) -> None:
    """Warns when no tensor input requires grad (the reentrant variant then has no gradient
    to give)."""
    if not any(isinstance(inp, Tensor) and inp.requires_grad for inp in inputs):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      stacklevel=3)


class CheckpointFunction(Function):
    """The reentrant variant: forward under no_grad keeping only the inputs; backward
    recomputes under enable_grad and backpropagates through the recomputed graph."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        ctx.autocast = _autocast_state(_infer_device_type(*args))
        ctx.rng = _RngState(args) if preserve_rng_state else None
        # Non-tensor inputs stay in ctx; tensors are saved (placeholders None here).
        ctx.inputs, ctx.tensor_indices, tensors = [], [], []
        for i, arg in enumerate(args):
            if isinstance(arg, Tensor):
                tensors.append(arg)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(arg)
        ctx.save_for_backward(*tensors)
        with no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        from ..autograd import _is_checkpoint_valid
        from ..autograd.engine import backward
        if not _is_checkpoint_valid():
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() "
                "or passing an `inputs` parameter to .backward(). To resolve this error, you "
                "can either set use_reentrant=False, or call .backward() without passing the "
                "`inputs` argument.")
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = t
        rng = ctx.rng.replayed() if ctx.rng is not None else contextlib.nullcontext()
        with rng:
            detached = detach_variable(tuple(inputs))
            with enable_grad(), ctx.autocast():
                outputs = ctx.run_function(*detached)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        # backward through the outputs that require grad only
        pairs = [(o, g) for o, g in zip(outputs, grads)
                 if isinstance(o, Tensor) and o.requires_grad]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is "
                               "not necessary")
        backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None) + tuple(inp.grad if isinstance(inp, Tensor) else None
                                    for inp in detached)


# -- the non-reentrant variant -------------------------------------------------------------------

def noop_context_fn():
    """``checkpoint``'s default ``context_fn``: no context around forward or recomputation."""
    return contextlib.nullcontext(), contextlib.nullcontext()


class _Handle:
    """A key of one recomputed tensor (per backward call) in its frame's ``recomputed``."""


class _Holder:
    """What the graph holds in place of a tensor saved inside a checkpoint: per backward call
    (graph task id or GraphExecGroup), the handle of its recomputed tensor; None once given
    out (PyTorch's Rule 4: a recomputed tensor lives until its node has used it)."""

    __slots__ = ("__weakref__", "handles")

    def __init__(self) -> None:
        self.handles: dict = {}


def _default_meta(x: Tensor) -> dict:
    return {"shape": x.shape, "dtype": x.dtype, "device": x.device}


_metadata_fns: dict[str, Callable] = {"default": _default_meta, "none": lambda _: None}

# (PyTorch's words, with its non-breaking hyphen in "checkpoint\u2011debug"; its paragraph on
# torch.compile's dynamic-shape graphs does not apply here and is left out)
_debug_tip_msg = """
Tip: To see a more detailed error message, either pass `debug=True` to
`torch.utils.checkpoint.checkpoint(...)` or wrap the code block
with `with torch.utils.checkpoint.set_checkpoint_debug_enabled(True):` to
enable checkpoint\u2011debug mode globally.
"""


class _CheckpointFrame:
    """One checkpointed call: its inputs (saved tensors, so that an enclosing checkpoint
    recomputes them), a weak reference to each holder its forward packed with the saved
    tensor's metadata, and per backward call the recomputed tensors not yet handed out."""

    def __init__(self, recompute_fn: Callable, early_stop: bool, unpack_error_cb,
                 metadata_fn: Callable) -> None:
        self.recompute_fn = recompute_fn
        self.saved_args: list = []
        self.weak_holders: list[weakref.ref] = []
        # Weak keys: a holder cleared by a partial backward drops its entry with it.
        self.recomputed: defaultdict = defaultdict(weakref.WeakKeyDictionary)
        self.recomp_counter: defaultdict = defaultdict(int)
        self.is_recomputed: defaultdict = defaultdict(bool)
        self.early_stop = early_stop
        self.metadata_fn = metadata_fn
        self.unpack_error_cb = unpack_error_cb
        self.x_metadatas: list = []
        self.forward_completed = False
        self.ignore_saved_mismatch = False

    def save_inputs(self, *args) -> None:
        # Rule 2 of PyTorch's Note [Nestable Checkpoint]: saved like any tensor, the inputs
        # go through the enclosing checkpoint's pack hook.
        self.saved_args = [SavedTensor(a) if isinstance(a, Tensor) else a for a in args]

    def get_inputs(self) -> list:
        return [a.unpack(None) if isinstance(a, SavedTensor) else a for a in self.saved_args]

    def check_recomputed_tensors_match(self, gid) -> None:
        if self.ignore_saved_mismatch:
            return
        if len(self.weak_holders) != self.recomp_counter[gid]:
            # More saved tensors are caught while recomputing (the recomputation hook).
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved during the "
                "original forward and recomputation.\n"
                f"Number of tensors saved during forward: {len(self.weak_holders)}\n"
                f"Number of tensors saved during recomputation: {self.recomp_counter[gid]}.\n"
                f"{_debug_tip_msg}")
        mismatched = []
        for idx, ref in enumerate(self.weak_holders):
            holder = ref()
            if holder is None:  # freed by a backward that ran inside the forward
                continue
            _internal_assert(holder.handles.get(gid) is not None)
            got = self.metadata_fn(self.recomputed[gid][holder.handles[gid]])
            if self.x_metadatas[idx] != got:
                mismatched.append(f"tensor at position {idx}:\nsaved metadata: "
                                  f"{self.x_metadatas[idx]}\nrecomputed metadata: {got}\n")
        if mismatched:
            raise CheckpointError(
                "torch.utils.checkpoint: Recomputed values for the following tensors have "
                "different metadata than during the forward pass.\n"
                f"{''.join(mismatched)}.\n{_debug_tip_msg}")


class _recomputation_hook(saved_tensors_hooks):
    """Installed while a frame recomputes: hands the ``i``-th tensor saved to the frame's
    ``i``-th holder, and stops the recomputation once all are filled (early stop)."""

    def __init__(self, target_frame_ref: weakref.ref, gid) -> None:
        def pack_hook(x):
            # Detached: the graph of the recomputation must not lead back to the tensor's
            # node (one saving its own output would hold itself); unpacking gives it its
            # place in the original graph back (autograd/saved.py, Note [Packed saved
            # tensors]), as PyTorch's SavedVariable does.
            x = x.detach() if x.requires_grad else x
            frame = target_frame_ref()
            _internal_assert(frame is not None)
            idx = frame.recomp_counter[gid]
            frame.recomp_counter[gid] += 1
            if idx >= len(frame.weak_holders):
                _internal_assert(not frame.early_stop)
                if not frame.forward_completed:
                    # a backward inside the checkpointed forward (early stop off): the
                    # original forward has not saved everything yet
                    frame.ignore_saved_mismatch = True
                    return x
                raise CheckpointError(
                    "torch.utils.checkpoint: trying to save more tensors during recomputation "
                    f"than during the original forward pass.\n{_debug_tip_msg}")
            holder = frame.weak_holders[idx]()
            # None: a backward inside the forward already used (and freed) that tensor
            if holder is not None:
                _internal_assert(holder.handles.get(gid) is None)
                handle = holder.handles[gid] = _Handle()
                frame.recomputed[gid][handle] = x
            if frame.early_stop and frame.recomp_counter[gid] == len(frame.weak_holders):
                raise _StopRecomputationError
            # (the recomputed graph may itself be backpropagated: Rule 6)
            return x

        super().__init__(pack_hook, lambda x: x)


class _checkpoint_hook(saved_tensors_hooks):
    """Installed while a checkpointed forward runs: packs a holder per saved tensor, and
    recomputes the frame (once per backward call) when one is unpacked."""

    def __init__(self, frame: _CheckpointFrame) -> None:
        def pack_hook(x):
            holder = _Holder()
            frame.weak_holders.append(weakref.ref(holder))
            frame.x_metadatas.append(frame.metadata_fn(x))
            return holder

        def unpack_hook(holder):
            gid = GraphExecGroup._get_current_group()
            if gid is None:
                gid = current_graph_task_id()
                if gid == -1:  # unpacked outside backward: a recomputation of its own
                    gid = int(uuid.uuid4())
            if not frame.is_recomputed[gid]:
                args = frame.get_inputs()
                try:
                    with _recomputation_hook(weakref.ref(frame), gid), enable_grad():
                        frame.recompute_fn(*args)
                except _StopRecomputationError:
                    pass
                frame.is_recomputed[gid] = True
                frame.check_recomputed_tensors_match(gid)
            _internal_assert(gid in holder.handles)
            if holder.handles[gid] is None:
                extra = ""
                if GraphExecGroup._get_current_group() is not None:
                    extra = ("Performing two backward calls that overlap (i.e. require the "
                             "same saved activation in order to compute gradients) is not "
                             "allowed while under the torch.utils.checkpoint.GraphExecGroup "
                             "context. ")
                raise CheckpointError(
                    "torch.utils.checkpoint: Unpack is being triggered for a tensor that was "
                    f"already unpacked once. {extra}If you are calling ctx.saved_tensors in "
                    "backward, make sure to do so only once. Otherwise please open an issue "
                    "with details on your use case.")
            ret = frame.recomputed[gid][holder.handles[gid]]
            holder.handles[gid] = None
            return ret

        if frame.unpack_error_cb is None:
            super().__init__(pack_hook, unpack_hook)
            return

        def unpack_hook_with_error_cb(holder):
            try:
                return unpack_hook(holder)
            except CheckpointError as e:
                frame.unpack_error_cb(e)
        super().__init__(pack_hook, unpack_hook_with_error_cb)


# -- selective activation checkpointing ---------------------------------------------------------

class CheckpointPolicy(enum.Enum):
    """Enum for specifying the policy for checkpointing during backpropagation.

    - ``{MUST,PREFER}_SAVE``: the operation's output would be saved during the forward pass
      and not recomputed during the backward pass;
    - ``{MUST,PREFER}_RECOMPUTE``: the operation's output would not be saved during the
      forward pass and would be recomputed during the backward pass;
    - ``{MUST,PREFER}_CPU_OFFLOAD``: the output would be saved, offloaded to CPU, and reloaded
      during the backward pass.

    tritongrad consults the policy but recomputes every op (see
    ``create_selective_checkpoint_contexts``).
    """

    MUST_SAVE = 0
    PREFER_SAVE = 1
    MUST_RECOMPUTE = 2
    PREFER_RECOMPUTE = 3
    MUST_CPU_OFFLOAD = 4
    PREFER_CPU_OFFLOAD = 5


def _policy_from_bool(b: bool) -> CheckpointPolicy:
    # (a policy function returning a bool: PyTorch's backward compatibility)
    return CheckpointPolicy.MUST_SAVE if b else CheckpointPolicy.PREFER_RECOMPUTE


class SelectiveCheckpointContext:
    """Context passed to the policy function during selective checkpointing: ``is_recompute``
    (False: the original forward) and ``op_output`` (None in tritongrad, whose policy runs
    as the op starts)."""

    def __init__(self, *, is_recompute: bool, op_output=None) -> None:
        self.is_recompute = is_recompute
        self.op_output = op_output


def _op_overload(op):
    """What a policy is given for the op the observer reports: ``tg.ops.aten.<name>.default``
    (what the user's op list holds) where the op has one, else the op itself."""
    name = observe.event_name(op)
    if name.startswith("aten::"):
        from tritongrad.library import ops
        try:
            return getattr(ops.aten, name[len("aten::"):]).default
        except AttributeError:
            pass
    return op


class _ObserverBlock:
    """An op observer (autograd/observe.py) that is the context manager of its own block
    (subclasses say what ``op_enter`` does; the other events are ignored)."""

    def __enter__(self):
        observe.add_observer(self)
        return self

    def __exit__(self, *exc) -> bool:
        observe.remove_observer(self)
        return False

    def op_exit(self, token) -> None:
        pass

    def node_enter(self, node, grads):
        return None

    def node_exit(self, token) -> None:
        pass


class _PolicyObserver(_ObserverBlock):
    """The forward context of ``create_selective_checkpoint_contexts``: an observer
    (autograd/observe.py) asking the policy about every op the checkpointed forward runs, and
    checking its answer."""

    def __init__(self, policy_fn: Callable) -> None:
        self.policy_fn = policy_fn

    def op_enter(self, op, seq, inputs, params):
        observe.remove_observer(self)  # (the policy's own ops are not asked about)
        try:
            policy = self.policy_fn(SelectiveCheckpointContext(is_recompute=False),
                                    _op_overload(op), *inputs, *params)
        finally:
            observe.add_observer(self)
        # (a bool is PyTorch's old form; anything but a save policy means recompute, as
        # there: every op is recomputed here anyway)
        return _policy_from_bool(policy) if isinstance(policy, bool) else policy


def create_selective_checkpoint_contexts(policy_fn_or_list, allow_cache_entry_mutation=False):
    """Helper to avoid recomputing certain ops during activation checkpointing: the two
    context managers to return from ``checkpoint``'s ``context_fn``.

    ``policy_fn_or_list`` is a list of ops (``tg.ops.aten.mm.default``: those are saved,
    every other op recomputed) or a function ``policy_fn(ctx, op, *args, **kwargs) ->
    CheckpointPolicy`` called for each op the checkpointed forward runs
    (``ctx.is_recompute`` False).

    tritongrad consults the policy (and checks what it returns) but recomputes every op, as
    a policy of ``PREFER_RECOMPUTE`` everywhere does: the results and gradients are those of
    PyTorch; what differs is the memory kept and the compute spent recomputing. (Keeping an
    op's outputs would need the op's result to be replayed from a cache during the
    recomputation, which tritongrad's dispatch has no hook for.)

    Args:
        policy_fn_or_list: a list of ops to save, or a policy function.
        allow_cache_entry_mutation: accepted for PyTorch's signature (nothing is cached).

    Returns:
        A tuple of two context managers: the forward's and the recomputation's.

    Example:
        >>> import functools
        >>> ops_to_save = [tg.ops.aten.mm.default]
        >>> context_fn = functools.partial(create_selective_checkpoint_contexts, ops_to_save)
        >>> x = tg.randn(3, 3, requires_grad=True)
        >>> y = checkpoint(lambda t: (t @ t).sigmoid().sum(), x, use_reentrant=False,
        ...                context_fn=context_fn)
    """
    from tritongrad.library import OpOverloadPacket
    if isinstance(policy_fn_or_list, list):
        for op in policy_fn_or_list:
            if isinstance(op, OpOverloadPacket) or not callable(op):
                extra = ("Please update the OpOverloadPacket to a specific OpOverload.For "
                         "example, if you have `torch.ops.aten.mm`, change it to "
                         "`torch.ops.aten.mm.default`."
                         if isinstance(op, OpOverloadPacket) else "")
                raise ValueError(f"Expected op in `op_list` to be an OpOverload but got: {op} "
                                 f"of type {type(op)}. {extra}")
        saved = list(policy_fn_or_list)

        def policy_fn(ctx, op, *args, **kwargs):
            return (CheckpointPolicy.MUST_SAVE if op in saved
                    else CheckpointPolicy.PREFER_RECOMPUTE)
    elif callable(policy_fn_or_list):
        policy_fn = policy_fn_or_list
    else:
        raise TypeError("policy_fn_or_list must be either a function or a list of ops.")
    return _PolicyObserver(policy_fn), contextlib.nullcontext()


# -- debug mode ----------------------------------------------------------------------------------

_AUTOGRAD_DIR = os.path.dirname(os.path.abspath(observe.__file__)) + os.sep


class _OpLog(_ObserverBlock):
    """An observer (autograd/observe.py) logging each op run, with the Python stack that ran
    it; re-enterable, a fresh log each time."""

    def __init__(self) -> None:
        self.logs: list[str] | None = None
        self.tbs: list | None = None

    def __enter__(self):
        self.logs, self.tbs = [], []
        return super().__enter__()

    def op_enter(self, op, seq, inputs, params):
        args = ", ".join(f"{t.dtype}{list(t.shape)}" for t in inputs)
        self.logs.append(f"{observe.event_name(op)}({args})")
        stack = traceback.extract_stack()[:-1]  # (without this method)
        while stack and stack[-1].filename.startswith(_AUTOGRAD_DIR):  # dispatch's own frames
            stack.pop()
        self.tbs.append(stack)


_checkpoint_error_template = """ \
An error happened while unpacking tensors; dumping logs of latest computation
because you passed `debug=True` to `torch.utils.checkpoint.checkpoint()`.

+------------------------------------------------------------------------------+
|        1. Stack traces of the operators that ran in the original forward     |
+------------------------------------------------------------------------------+

{forward_traces}
+------------------------------------------------------------------------------+
|        2. Stack traces of the operators that ran during recomputation        |
+------------------------------------------------------------------------------+

{recompute_traces}
+------------------------------------------------------------------------------+
|       3. Log of operators in the original forward and recomputation          |
+------------------------------------------------------------------------------+

Operations executed during the original forward:

{forward_ops}

Operations executed during recomputation:

{recompute_ops}

+------------------------------------------------------------------------------+
 ERROR: Detected non-determinism while running activation checkpointing

 You are seeing this error because you passed `debug=True` to checkpoint and
 tensors to be saved during the original forward and differ between those saved
 during recomputation. This can happen if different operators were ran in the
 original forward and in the recomputation.

 To identify where the mismatch may be coming from, compare the operators ran
 during original forward and recomputation (printed above in the order they
 were executed), and the stack trace of each.
--------------------------------------------------------------------------------
"""


def _get_debug_context_and_cb():
    """(context_fn, unpack_error_cb) of debug mode: op logs of the forward and of the latest
    recomputation, dumped into the CheckpointError."""
    fwd, recompute = _OpLog(), _OpLog()

    def traces(label: str, log: _OpLog) -> str:
        out = []
        for i, (entry, tb) in enumerate(zip(log.logs, log.tbs)):
            frames = "".join(f"{f.filename}:{f.lineno}:{f.name}\n" for f in tb)
            out.append(f"{entry}   ({i + 1} of {len(log.logs)} in {label})\n\n{frames}\n\n")
        return "".join(out)

    def unpack_error_cb(e: CheckpointError):
        raise CheckpointError(_checkpoint_error_template.format(
            forward_traces=traces("original", fwd),
            recompute_traces=traces("recompute", recompute),
            forward_ops="\n".join(fwd.logs or ()),
            recompute_ops="\n".join(recompute.logs or ()))) from e

    return (lambda: (fwd, recompute)), unpack_error_cb


def _checkpoint_without_reentrant(function: Callable, preserve_rng_state: bool,
                                  context_fn: Callable, determinism_check: str, debug: bool,
                                  early_stop: bool, args: tuple, kwargs: dict) -> Any:
    unpack_error_cb = None
    if _checkpoint_debug_enabled if _checkpoint_debug_enabled is not None else debug:
        if context_fn is not noop_context_fn:
            raise ValueError("debug=True is incompatible with non-default context_fn")
        context_fn, unpack_error_cb = _get_debug_context_and_cb()
    if determinism_check not in _metadata_fns:
        raise ValueError(f"determinism_check should be one of {list(_metadata_fns)}, but got "
                         f"{determinism_check}")
    forward_context, recompute_context = context_fn()
    if not is_grad_enabled():  # nothing is saved: nothing to recompute (no context either)
        return function(*args, **kwargs)
    autocast_contexts = _autocast_state(_infer_device_type(*args))
    rng = _RngState(args) if preserve_rng_state else None

    def recompute_fn(*inputs) -> None:
        # the surrounding state of the original forward, captured above
        with rng.replayed() if rng is not None else contextlib.nullcontext(), \
                autocast_contexts(), recompute_context:
            function(*inputs, **kwargs)

    early = _enable_checkpoint_early_stop
    frame = _CheckpointFrame(recompute_fn, early_stop if early is None else early,
                             unpack_error_cb, _metadata_fns[determinism_check])
    frame.save_inputs(*args)
    with _checkpoint_hook(frame), forward_context:
        ret = function(*args, **kwargs)
        frame.forward_completed = True
    if not frame.forward_completed:  # the forward raised, and forward_context swallowed it
        raise RuntimeError(
            "torch.utils.checkpoint: the forward context provided by context_fn suppressed an "
            "exception raised during the checkpointed forward. This is not supported because "
            "checkpoint cannot return a value for a failed forward.")
    return ret


def checkpoint(function: Callable, *args, use_reentrant: bool | None = None,
               context_fn: Callable = noop_context_fn, determinism_check: str = "default",
               debug: bool = False, early_stop: bool = True, **kwargs) -> Any:
    r"""Checkpoint a model or part of the model.

    Activation checkpointing is a technique that trades compute for memory. Instead of keeping
    tensors needed for backward alive until they are used in gradient computation during
    backward, forward computation in checkpointed regions omits saving tensors for backward
    and recomputes them during the backward pass.

    ``function`` must compute the same tensors when run again on the same inputs (the random
    numbers it draws are replayed when ``preserve_rng_state`` is True, and it runs again
    under the autocast state of the first run).

    The reentrant variant (``use_reentrant=True``) differs from the non-reentrant one as in
    PyTorch: it always recomputes all of ``function``; it runs the forward under no_grad
    (no backward inside the region); it supports ``.backward()`` without ``inputs`` only
    (``autograd.grad`` raises); at least one input and one output must require grad; it
    ignores tensors inside nested structures; and keyword arguments are refused.

    Args:
        function: describes what to run in the forward pass of the model or part of the
            model.
        *args, **kwargs: the inputs of ``function`` (kwargs: non-reentrant only); kept (not
            copied) until backward. ``preserve_rng_state`` (default ``True``) is taken out of
            kwargs: replay the random number generators' states of the first run.
        use_reentrant: which variant (see above). It should be passed explicitly; not passing
            it warns, as PyTorch does, and means ``False`` in tritongrad (PyTorch: ``True``).
        context_fn: a callable returning two context managers: the forward runs under the
            first, each recomputation under the second (non-reentrant only).
        determinism_check: ``"default"`` compares the shapes, dtypes and devices of the
            recomputed tensors with the original ones; ``"none"`` skips that.
        debug: errors also carry the ops run by the original forward and the
            recomputation, with their stacks (non-reentrant only).
        early_stop: stop a recomputation once it has recomputed every tensor backward needs
            (default ``True``); ``set_checkpoint_early_stop`` overrides it.

    Returns:
        Output of running ``function`` on ``*args`` and ``**kwargs``.

    Example:
        >>> lin = tg.nn.Linear(4, 4)
        >>> x = tg.randn(2, 4, requires_grad=True)
        >>> y = checkpoint(lambda t: lin(t).relu().sum(), x, use_reentrant=False)
        >>> y.backward()   # lin(x).relu() is recomputed here
    """
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
            "tritongrad uses use_reentrant=False (the recommended variant) when it is not "
            "passed; PyTorch uses use_reentrant=True. Refer to "
            "docs for more details on the differences between the two variants.",
            stacklevel=2)
        use_reentrant = False
    preserve = kwargs.pop("preserve_rng_state", True)
    if use_reentrant:
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        return CheckpointFunction.apply(function, preserve, *args)
    return _checkpoint_without_reentrant(function, preserve, context_fn, determinism_check,
                                         debug, early_stop, args, kwargs)


def checkpoint_sequential(functions, segments: int, input, use_reentrant: bool | None = None,
                          **kwargs) -> Any:
    r"""Checkpoint a sequential model to save memory.

    Sequential models execute a list of modules/functions in order (sequentially). Therefore,
    we can divide such a model in various segments and checkpoint each segment. All segments
    except the last will not store the intermediate activations. The inputs of each
    checkpointed segment will be saved for re-running the segment in the backward pass.

    Args:
        functions: an ``nn.Sequential`` or the list of modules or functions to run in order.
        segments: number of chunks to create in the model.
        input: a tensor, the input of ``functions[0]``.
        use_reentrant: passed to ``checkpoint``.
        preserve_rng_state: passed to ``checkpoint`` (default ``True``); other keyword
            arguments raise a ValueError, as in PyTorch.

    Returns:
        Output of running ``functions`` sequentially on ``input``.
    """
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should "
            "be passed explicitly. tritongrad uses use_reentrant=False when it is not passed; "
            "PyTorch uses use_reentrant=True.", stacklevel=2)
        use_reentrant = False
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:  # (PyTorch's: the other keywords checkpoint takes are not passed on)
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if hasattr(functions, "children") and callable(functions.children):
        functions = list(functions.children())
    functions = list(functions)
    if not isinstance(segments, int) or segments <= 0:
        raise ValueError(f"checkpoint_sequential: segments must be a positive integer, got "
                         f"{segments!r}")
    if segments > len(functions):  # (PyTorch fails here too: a segment size of 0)
        raise ValueError(f"checkpoint_sequential: segments ({segments}) must not exceed the "
                         f"number of functions ({len(functions)})")
    size = len(functions) // segments

    def run(chunk: Sequence[Callable]):
        def forward(x):
            for f in chunk:
                x = f(x)
            return x
        return forward

    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(functions[start:end + 1]), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return run(functions[end + 1:])(input)
