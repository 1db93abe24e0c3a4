"""Fixes from the second GPU run (H200, 2026-11-30): docs/gpu.md, "What the second run found"."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=300, check=False)


def test_a_module_named_nvtx_that_is_not_the_package_leaves_ranges_off():
    # Without the nvtx wheel, a folder named nvtx on sys.path (pytest puts tests/ there, and
    # tests/nvtx/ exists) imports as an empty namespace package: emit_nvtx raised
    # AttributeError on the GPU machine. It must be treated as "no package".
    r = _run("""
        import sys, types
        sys.modules["nvtx"] = types.ModuleType("nvtx")  # what the namespace package offers
        import tritongrad as tg
        from tritongrad.runtime import nvtx as rt
        from tritongrad import selfcheck
        assert rt._nvtx is None and not rt.is_enabled()
        assert not selfcheck._nvtx_imports()
        x = tg.ones(3, requires_grad=True)
        with tg.autograd.profiler.emit_nvtx():
            (x * 2).sum().backward()
        tg.cuda.nvtx.range_push("a")
        tg.cuda.nvtx.range_pop()
        print("ok", x.grad.tolist())
    """)
    assert r.returncode == 0, r.stderr
    assert "ok [2.0, 2.0, 2.0]" in r.stdout
