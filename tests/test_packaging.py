"""Running where nothing can be installed: from the source tree, and without optional pieces.

The GPU machines have no network: there the project runs from its source tree (PYTHONPATH=.,
or the repository root shadowing an installed copy), and the ``nvtx`` package may be missing.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _python(code: str, cwd, **env_changes) -> subprocess.CompletedProcess:
    env = dict(os.environ, **env_changes)
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, check=False)


def test_the_source_tree_imports_with_pythonpath(tmp_path):
    # Drop the editable install's finders, so only PYTHONPATH can find the package: then the
    # repository's tritongrad/ must reach runtime/, kernels/, autograd/ ... beside it.
    code = ("import sys\n"
            "sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in repr(f).lower()]\n"
            "sys.path[:] = [p for p in sys.path if '__editable__' not in p]\n"
            "import tritongrad as tg\n"
            "from tritongrad.kernels import numpy as nk\n"
            "print(tg.__file__, tg.autograd.__file__, nk.__file__, tg.ones(3).sum().item())\n")
    r = _python(code, tmp_path, PYTHONPATH=str(ROOT))
    assert r.returncode == 0, r.stderr[-3000:]
    files = r.stdout.split()
    assert files[0] == str(ROOT / "tritongrad" / "__init__.py")
    assert files[1] == str(ROOT / "autograd" / "__init__.py")
    assert files[2] == str(ROOT / "kernels" / "numpy" / "__init__.py")
    assert files[3] == "3.0"


def test_without_the_nvtx_package_ranges_are_no_ops_and_a_listening_tool_is_told():
    code = ("import sys, warnings\n"
            "sys.modules['nvtx'] = None  # as if not installed\n"
            "import tritongrad as tg\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    d = tg.cuda.nvtx.range_push('step')\n"
            "    tg.cuda.nvtx.range_pop()\n"
            "    with tg.autograd.profiler.emit_nvtx():\n"
            "        x = tg.ones(2, requires_grad=True)\n"
            "        (x * 2).sum().backward()\n"
            "print(d, x.grad.tolist(), [str(m.message) for m in w])\n")
    quiet = _python(code, ROOT, NVTX_INJECTION64_PATH="")
    assert quiet.returncode == 0, quiet.stderr[-3000:]
    assert quiet.stdout.startswith("0 [2.0, 2.0] []")
    told = _python(code, ROOT, NVTX_INJECTION64_PATH="/nonexistent/tool.so")
    assert told.returncode == 0, told.stderr[-3000:]
    assert "`nvtx` package is not installed" in told.stdout
