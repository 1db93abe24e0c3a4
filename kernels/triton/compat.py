"""Where the supported Triton releases differ, in one place: every kernel is written once, for
all of them, and this module makes the releases behave alike where they do not.

Supported: Triton 3.6.0 (the GPU machines' own) through the newest release (3.9), both tested
in CI (the interpreter suite and the sm_90 compile check). Nothing else in kernels/triton
asks which Triton it runs on.

Note [interpreter fidelity]: under ``TRITON_INTERPRET=1`` (CI, the emulated device) the
interpreter is patched to give a GPU's results, so the kernels run the same source on both:

- float32 -> bfloat16 truncates (``cast_impl`` calls ``_convert_float`` with no rounding mode);
  GPUs round to nearest even (``cvt.rn.bf16.f32``);
- ``tl.dot`` on bfloat16 multiplies the uint16 bit patterns it stores them as; GPUs multiply
  the values (exactly, into float32);
- libdevice (``triton.language.extra.libdevice``: exp, log, pow, tanh, ...) has no interpreter
  implementation (its functions are stubs returning None there); each one NumPy has as a ufunc
  of the same name and math is mapped to it;
- Triton 3.6 turns a scalar tensor into a Python int (a loop bound, a ``range`` argument) with
  ``int(handle.data)``, where ``data`` is a one-element 1-d array; NumPy 2.5 refuses that
  ("only 0-dimensional arrays can be converted to Python scalars"). Newer Triton squeezes
  first; so does the patch;
- a launch swaps parts of ``triton.language`` for interpreted versions process-wide while
  it runs, so two threads launching at once break each other ("Did you forget to add
  @triton.jit?"); launches are serialised by one lock (a real GPU needs none);
- (speed, not fidelity) that swap lists the builtins of each language module anew at every
  launch (``inspect.getmembers``, and Triton 3.6 makes a semantic object per builtin): over
  half of a small launch's time, which the tests' thousands of launches on tiny tensors pay
  over and over. The wrappers are made once per module and set again at each launch
  (``patch_builtin_once``): the same wrappers of the same functions;
- Triton 3.6 makes the all-ones value of an unsigned type (``~x``) with
  ``np.full(1, -1, dtype)``, which NumPy 2 refuses (OverflowError); newer Triton uses the
  type's maximum, as the patch does.

Note [bool stores]: storing a value through a pointer to bool converts it, and the releases
differ in how (in the language's semantics, so compiled kernels and the interpreter alike):
Triton 3.6 converts straight to int8 (a float 0.5 truncates to 0, False), newer releases compare
with zero first (True, as NumPy's ``astype(bool)``). The kernels therefore never leave that
conversion to the store: a result bound for bool is made int1 (``!= 0``) before it is stored
(see ``result_type``).

Only those cases change; everything else goes to the original methods. Idempotent.

Note [kernel constants]: a module-level number a kernel reads must be a ``tl.constexpr`` for
the compiler (3.6 and 3.9 alike refuse other globals: "Cannot access global variable"), but the
interpreter runs the kernel as Python, where a constexpr on the left of a tensor operation
swallows the tensor (``K * x`` is ``constexpr.__mul__``, which wraps the product in another
constexpr, and the next call receives no tensor). ``kernel_constant`` therefore gives the
constexpr when kernels are compiled and the plain number under the interpreter, where it acts
as the literal it stands for.
"""

from __future__ import annotations

import os
import sys
import threading

from ...runtime import driver as _driver

__all__ = ["EMULATION_ERROR", "INTERPRET", "kernel_constant", "patch_interpreter",
           "result_type"]


def _interpret_on_the_emulated_device() -> tuple[bool, str]:
    """Whether kernels run in Triton's interpreter (turned on here for the emulated device),
    and why a kernel cannot run when that could not be done ("" when it can).

    The emulated CUDA device (``TRITONGRAD_EMULATE_CUDA=1`` with no GPU present) keeps its
    memory on the host, where only the interpreter can run a kernel, so that one switch is
    enough: ``TRITON_INTERPRET=1`` is set here, before any kernel of this package is decorated
    (``triton.jit`` reads it then) and before ``triton.language`` decorates its own helpers.
    Where that cannot be done (an explicit ``TRITON_INTERPRET=0``, or Triton imported earlier
    without it) the first launch raises an error that says what to set, instead of Triton's
    "0 active drivers".
    """
    value = os.environ.get("TRITON_INTERPRET", "")
    why = ""
    if _driver.is_emulated():  # TRITONGRAD_EMULATE_CUDA=1 and no GPU
        if value == "0":
            why = "TRITON_INTERPRET=0 forbids it: unset TRITON_INTERPRET or set it to 1"
        elif not value and "triton.language" in sys.modules:
            why = ("Triton was imported before without it: set TRITON_INTERPRET=1 in the "
                   "environment, or before the first `import triton`")
        elif not value:
            os.environ["TRITON_INTERPRET"] = value = "1"
    if why:
        why = ("TRITONGRAD_EMULATE_CUDA=1 selects the emulated CUDA device (no GPU was found), "
               f"whose kernels run in Triton's interpreter, but {why}")
    return value not in ("", "0"), why


# The launchers read these; Triton reads the variable when it decorates a kernel.
INTERPRET, EMULATION_ERROR = _interpret_on_the_emulated_device()

import triton.language as tl  # only after the interpreter decision above


def result_type(compute, out_is_bool: bool):
    """The element type a kernel converts its result to before storing it: int1 for a bool
    output (Note [bool stores]), else ``compute``."""
    return tl.int1 if out_is_bool else compute


def kernel_constant(value):
    """A module-level constant for kernels to read (Note [kernel constants])."""
    return value if INTERPRET else tl.constexpr(value)


_launch_lock = threading.RLock()


def patch_interpreter() -> None:
    """Applies Note [interpreter fidelity] to Triton's interpreter (see the module docstring)."""
    try:
        import numpy as np
        from triton.language.extra import libdevice
        from triton.runtime import interpreter as interp
        cls = type(interp.interpreter_builder)
        cast_impl, create_dot, handle = cls.cast_impl, cls.create_dot, interp.TensorHandle
        patch_tensor, patch_builtin = interp._patch_lang_tensor, interp._patch_builtin
        all_ones = cls.get_all_ones_value
        grid_call = interp.GridExecutor.__call__
        tensor = tl.core.tensor
    except (ImportError, AttributeError):  # another Triton: nothing known to fix
        return
    if getattr(cast_impl, "_tritongrad", False):
        return

    def to_f32(bits):
        return (np.asarray(bits).astype(np.uint32) << 16).view(np.float32)

    def to_bf16(x):
        b = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
        r = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)
        return np.where(np.isnan(x), np.uint16(0x7FC0), r).astype(np.uint16)

    def patched_cast(self, src, dst_type):
        if src.dtype.scalar == tl.float32 and dst_type.scalar == tl.bfloat16:
            return handle(to_bf16(src.data), dst_type.scalar)
        return cast_impl(self, src, dst_type)

    def patched_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        if a.dtype == tl.bfloat16 and b.dtype == tl.bfloat16:
            a, b = handle(to_f32(a.data), tl.float32), handle(to_f32(b.data), tl.float32)
            input_precision = None  # float32 products of bf16 values are exact
        return create_dot(self, a, b, d, input_precision, max_num_imprecise_acc)

    def patched_tensor(t, scope):
        patch_tensor(t, scope)
        scope.set_attr(t, "__index__", lambda self: int(np.asarray(self.handle.data).reshape(())))

    def patched_all_ones(self, ty):
        np_type = interp._get_np_dtype(ty)
        if np.issubdtype(np_type, np.unsignedinteger):
            return handle(np.full(1, np.iinfo(np_type).max, dtype=np_type), ty.scalar)
        return all_ones(self, ty)

    class Recorder:  # a patch scope that records what it is asked to set, and sets nothing
        def __init__(self):
            self.changes = []

        def set_attr(self, obj, name, value):
            self.changes.append((obj, name, value))

    builtins_of: dict = {}  # (module or class, builder) -> its patches, made once

    def patch_builtin_once(pkg, builder, scope):
        changes = builtins_of.get((pkg, builder))
        if changes is None:  # (the first launch: nothing is patched yet, every builtin is seen)
            record = Recorder()
            patch_builtin(pkg, builder, record)
            changes = builtins_of[pkg, builder] = record.changes
        if changes and getattr(changes[0][0], changes[0][1], None) is changes[0][2]:
            return  # patched already: a device function called inside a launch (the stock
            #         one finds no builtin left to patch there, the wrappers being in place)
        for obj, name, value in changes:
            scope.set_attr(obj, name, value)

    def serialised_launch(self, *args, **kwargs):
        with _launch_lock:
            return grid_call(self, *args, **kwargs)

    def numpy_math(ufunc):
        def fn(*args, **_):
            ts = [a for a in args if isinstance(a, tensor)]
            like = next((t for t in ts if t.type.is_block()), ts[0])
            np_dtype = like.handle.data.dtype
            with np.errstate(all="ignore"):
                data = ufunc(*[a.handle.data if isinstance(a, tensor) else a for a in args])
            data = np.asarray(data).astype(np_dtype, copy=False)
            return tensor(handle(data, like.handle.dtype.scalar), like.type)
        return fn

    # Every libdevice function that NumPy has as a one-output ufunc of the same name and
    # meaning, so a new formula's libdevice call needs nothing here. Not ``round`` (libdevice's
    # rounds half away from zero, NumPy's half to even) nor the predicates (``isnan``: NumPy
    # gives bools, libdevice ints).
    for name in dir(libdevice):
        ufunc = np.power if name == "pow" else getattr(np, name, None)
        if isinstance(ufunc, np.ufunc) and ufunc.nout == 1 and name != "round" \
                and not name.startswith(("is", "signbit")):
            setattr(libdevice, name, numpy_math(ufunc))
    patched_cast._tritongrad = True
    cls.cast_impl, cls.create_dot = patched_cast, patched_dot
    cls.get_all_ones_value = patched_all_ones
    interp.GridExecutor.__call__ = serialised_launch
    interp._patch_lang_tensor = patched_tensor
    interp._patch_builtin = patch_builtin_once
