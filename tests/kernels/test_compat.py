"""kernels/triton/compat.py: the supported Triton releases made to behave alike.

The interpreter fixes are exercised by every kernel test (they fail without them on Triton 3.6
or NumPy 2.5); here are the parts no kernel test reaches: the one-switch emulated device and
its refusals, and the pieces of Note [interpreter fidelity] checked directly.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from kernel_kit import tk
from tritongrad.kernels.triton import compat
from tritongrad.runtime import driver

needs_emulation = pytest.mark.skipif(not driver.is_emulated(),
                                     reason="the emulated device exists only without a GPU")

_SMOKE = ("import tritongrad as tg\n"
          "x = tg.ones(300, device='cuda', requires_grad=True)\n"
          "(x * 2).sum().backward()\n"
          "print(x.grad.sum().item(), tg.cuda.get_device_name())\n")


def _python(code: str, **env_changes) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if k not in ("TRITON_INTERPRET", "TRITONGRAD_EMULATE_CUDA")}
    env.update(env_changes)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=300, check=False)


@needs_emulation
def test_emulate_cuda_alone_gives_a_working_device():
    r = _python(_SMOKE, TRITONGRAD_EMULATE_CUDA="1")
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split()[0] == "600.0" and driver.EMULATED_DEVICE_NAME in r.stdout


@needs_emulation
@pytest.mark.parametrize("how", ["TRITON_INTERPRET=0", "triton imported first"])
def test_emulated_device_without_the_interpreter_is_refused_by_name(how):
    if how == "TRITON_INTERPRET=0":
        r = _python(_SMOKE, TRITONGRAD_EMULATE_CUDA="1", TRITON_INTERPRET="0")
    else:
        r = _python("import triton.language\n" + _SMOKE, TRITONGRAD_EMULATE_CUDA="1")
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert "TRITONGRAD_EMULATE_CUDA=1" in last and "TRITON_INTERPRET" in last, last
    assert "active drivers" not in r.stderr


def test_interpreting_follows_the_environment():
    assert compat.INTERPRET == (os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"))
    if driver.is_emulated():
        assert compat.INTERPRET  # the emulated device can only interpret


def test_bool_results_convert_before_the_store():
    import triton.language as tl
    assert compat.result_type(tl.float32, True) == tl.int1
    assert compat.result_type(tl.float32, False) == tl.float32


def test_unsigned_bitwise_not_and_scalar_loop_bounds(kit):
    # ~x on uint8 needs the all-ones value (NumPy 2 refused Triton 3.6's); a reduction over
    # many chunks takes its loop bounds from scalar tensors (NumPy 2.5 refused those)
    u = np.array([0, 1, 127, 128, 255], np.uint8)
    kit.check(tk.unary("bitwise_not", kit.up(u)), ~u)
    x = np.arange(3 * 5000, dtype=np.float32).reshape(3, 5000) / 5000
    kit.check(tk.sum(kit.up(x), (1,), False), x.astype(np.float64).sum(1), check_dtype=False)


def test_compiled_casts_to_bool_compare_with_zero():
    """Note [bool stores] on the compiled path: Triton 3.6 alone would truncate (fptosi to i8)
    a float stored into bool; the kernels' own conversion makes it a compare on every release.
    Compiled for sm_90 with no GPU, as compile_sm90.py does, and read in Triton's IR."""
    here = os.path.dirname(os.path.abspath(__file__))
    code = (f"import sys; sys.path.insert(0, {here!r})\n"
            "import compile_sm90 as c  # clears TRITON_INTERPRET before Triton is imported\n"
            "import numpy as np, triton\n"
            "from triton.runtime.jit import JITFunction\n"
            "triton.runtime.driver.set_active(c._CompileOnlyDriver())\n"
            "got = []\n"
            "run = JITFunction.run\n"
            "def grab(self, *a, grid, warmup, **kw):\n"
            "    got.append(run(self, *a, grid=grid, warmup=True, **kw))\n"
            "JITFunction.run = grab\n"
            "from tritongrad.kernels import triton as tk\n"
            "from tritongrad.kernels.triton import _launch\n"
            "_launch._driver_ready = True  # compile only, as compile_sm90.main\n"
            "from tritongrad.runtime import dtype as D, memory\n"
            "from tritongrad.runtime.device import device\n"
            "a = memory.to_device(np.ones(8, np.float32), device('cuda', 0))\n"
            "tk.astype(a, D.bool)\n"
            "print(got[-1].asm['ttir'])\n")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=300, check=False)
    if r.returncode and "triton.backends" in r.stderr and "No module named" in r.stderr:
        pytest.skip("this Triton has no CUDA backend to compile with")
    assert r.returncode == 0, r.stderr[-3000:]
    ir = r.stdout
    assert "arith.cmpf une" in ir
    assert not any("fptosi" in line and "xi8>" in line for line in ir.splitlines()), ir



def test_kernel_constants_act_as_literals(kit):
    """Note [kernel constants]: a constexpr for the compiler, the plain number under the
    interpreter, where ``K * tensor`` must give a tensor (GELU's tanh form has one)."""
    import triton.language as tl
    from tritongrad.kernels.triton import _launch

    k = compat.kernel_constant(0.5)
    if compat.INTERPRET:
        assert type(k) is float and k == 0.5
    else:
        assert isinstance(k, tl.constexpr) and k.value == 0.5
    assert getattr(_launch.SQRT_2_OVER_PI, "value", _launch.SQRT_2_OVER_PI) == 0.7978845608028654
    x = np.linspace(-4, 4, 17)
    kit.check(tk.gelu(kit.up(x), "tanh"), kit.nk.gelu(x, "tanh"))


@pytest.mark.skipif(not compat.INTERPRET, reason="the interpreter runs only without a GPU")
def test_interpreted_launches_wrap_the_builtins_once_and_restore_them(kit):
    # Note [interpreter fidelity], its speed item: the builtins' wrappers are made once, set at
    # each launch and restored after it; a device function's call inside a launch (the
    # language already patched) sets nothing more
    import triton.language as tl
    from triton.runtime import interpreter as interp
    original = tl.load
    scopes = [interp._LangPatchScope() for _ in range(3)]
    interp._patch_builtin(tl, interp.interpreter_builder, scopes[0])
    first = tl.load
    assert first is not original and not tl.core.is_builtin(first)
    interp._patch_builtin(tl, interp.interpreter_builder, scopes[1])  # as inside a launch
    assert scopes[1]._changes == [] and tl.load is first
    scopes[0].restore()
    assert tl.load is original and tl.core.is_builtin(tl.load)
    interp._patch_builtin(tl, interp.interpreter_builder, scopes[2])
    assert tl.load is first  # the same wrapper again
    scopes[2].restore()
    # a kernel with device functions (sigmoid's) still computes, and leaves the language as it was
    x = np.linspace(-6, 6, 300, dtype=np.float32)
    kit.check(tk.unary("sigmoid", kit.up(x)), 1 / (1 + np.exp(-x.astype(np.float64))),
              check_dtype=False, rtol=1e-6, atol=1e-7)
    assert tl.load is original
