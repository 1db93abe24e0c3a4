"""``python -m tritongrad.selfcheck``: the environment report, the checks and the exit status.

The command runs as a subprocess, as users run it: on the emulated device (no GPU, CI), where
every GPU check must run and pass; with no GPU and no emulation, where it must say so, skip the
GPU checks and still exit 0; and on a real GPU (``gpu`` mark). The runner's handling of failing
and skipped checks is tested in-process with checks made to fail.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from tritongrad.runtime import driver

import tritongrad.selfcheck as sc

REAL_GPU = driver.is_available() and not driver.is_emulated()
GPU_CHECKS = {c.name for c in sc.CHECKS if c.gpu}
CPU_CHECKS = {c.name for c in sc.CHECKS if not c.gpu}
TOOLCHAIN = "triton launcher: cc and Python.h"  # informational where Triton compiles nothing


def _run(*args: str, emulate: bool, code: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if k not in ("TRITON_INTERPRET", "TRITONGRAD_EMULATE_CUDA")}
    if emulate:
        env.update(TRITON_INTERPRET="1", TRITONGRAD_EMULATE_CUDA="1")
    cmd = [sys.executable, "-c", code] if code else [sys.executable, "-m", "tritongrad.selfcheck"]
    return subprocess.run([*cmd, *args], env=env, capture_output=True, text=True, timeout=600,
                          check=False)


def _parse(proc: subprocess.CompletedProcess) -> dict:
    report = json.loads(proc.stdout)
    assert set(report) == {"environment", "device", "checks", "ok"}
    for c in report["checks"]:
        assert set(c) == {"name", "status", "ms", "detail"}
        assert c["status"] in ("pass", "fail", "skip")
        assert isinstance(c["ms"], float | int) and c["ms"] >= 0
        assert "\n" not in c["detail"]
    return report


def _statuses(report: dict) -> dict[str, str]:
    return {c["name"]: c["status"] for c in report["checks"]}


# -- the three kinds of machine ---------------------------------------------------------------

@pytest.fixture(scope="module")
def emulated_json():
    if REAL_GPU:
        pytest.skip("a real GPU is present: the emulated device is never selected")
    return _run("--json", emulate=True)


def test_emulated_device_runs_and_passes_every_check(emulated_json):
    proc = emulated_json
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = _parse(proc)
    assert report["ok"] is True
    assert report["device"]["kind"] == "emulated"
    assert report["device"]["name"] == driver.EMULATED_DEVICE_NAME
    statuses = _statuses(report)
    assert set(statuses) == GPU_CHECKS | CPU_CHECKS
    for name, status in statuses.items():  # the GPU checks ran: none skipped
        assert status == "pass" or (name == TOOLCHAIN and status == "skip"), (name, status)
    env = report["environment"]
    for key in ("python", "numpy", "triton", "cuda-python", "nvtx", "cuda (driver api)",
                "nvtx available", "c compiler", "python headers"):
        assert env[key], key


def test_emulated_device_text_report():
    if REAL_GPU:
        pytest.skip("a real GPU is present: the emulated device is never selected")
    proc = _run(emulate=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "EMULATED" in out and driver.EMULATED_DEVICE_NAME in out
    for name in GPU_CHECKS | CPU_CHECKS:
        assert name in out
    assert " 0 failed" in out and out.rstrip().endswith("OK")
    assert "Traceback" not in proc.stderr


@pytest.mark.skipif(REAL_GPU, reason="a real GPU is present")
def test_no_gpu_says_so_skips_gpu_checks_and_exits_0():
    proc = _run("--json", emulate=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = _parse(proc)
    assert report["ok"] is True
    dev = report["device"]
    assert dev["kind"] == "none" and dev["available"] is False and dev["why_no_gpu"]
    details = {c["name"]: c["detail"] for c in report["checks"]}
    for name, status in _statuses(report).items():
        if name in GPU_CHECKS:
            assert (status, details[name]) == ("skip", "no GPU"), name
        else:
            assert status == "pass" or (name == TOOLCHAIN and status == "skip"), (name, status)

    text = _run(emulate=False)
    assert text.returncode == 0
    assert "no NVIDIA GPU found" in text.stdout
    assert "0 failed" in text.stdout and f"{len(GPU_CHECKS)} skipped" in text.stdout


@pytest.mark.gpu
def test_real_gpu_runs_and_passes_every_check():
    proc = _run("--json", emulate=False)
    report = _parse(proc)
    assert proc.returncode == 0, json.dumps(report["checks"], indent=1) + proc.stderr
    assert report["device"]["kind"] == "cuda"
    assert all(s == "pass" for s in _statuses(report).values()), report["checks"]
    assert report["environment"]["cuda (driver api)"][0].isdigit()


# -- failures and skips -------------------------------------------------------------------------

def _boom(ctx):
    raise ValueError("injected\nfailure")


def _skipped(ctx):
    raise sc.Skip("does not apply")


def test_a_failing_check_makes_the_exit_status_nonzero(capsys, torch_untouched):
    checks = [sc.Check("fine", lambda ctx: "all good"), sc.Check("broken", _boom),
              sc.Check("not here", _skipped)]
    assert sc.main(["--json"], checks=checks) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False
    assert [(c["name"], c["status"]) for c in report["checks"]] == [
        ("fine", "pass"), ("broken", "fail"), ("not here", "skip")]
    assert report["checks"][1]["detail"] == "ValueError: injected failure"  # one line
    assert report["checks"][2]["detail"] == "does not apply"

    assert sc.main(["--verbose"], checks=checks) == 1
    out, err = capsys.readouterr()
    assert "1 passed, 1 failed, 1 skipped: FAILED" in out
    assert "Traceback" in err and "injected" in err  # --verbose: the failure's traceback
    assert sc.main([], checks=checks[:1]) == 0


def test_a_failing_check_fails_the_process():
    code = ("import sys, tritongrad.selfcheck as sc\n"
            "def boom(ctx):\n    raise RuntimeError('injected')\n"
            "sc.CHECKS[:] = [sc.Check('broken', boom)]\n"
            "status = sc.main()\n"
            "print('triton imported:', 'triton' in sys.modules)\n"
            "sys.exit(status)\n")
    proc = _run(emulate=not REAL_GPU, code=code)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "RuntimeError: injected" in proc.stdout and "FAILED" in proc.stdout
    # The report leaves Triton unimported: the emulated device turns its interpreter on
    # before Triton's first import (kernels/triton/compat.py).
    assert "triton imported: False" in proc.stdout


def test_gpu_checks_skip_without_a_gpu():
    ran = []
    checks = [sc.Check("gpu", lambda ctx: ran.append(ctx), gpu=True),
              sc.Check("cpu", lambda ctx: ran.append(ctx))]
    results = sc.run_checks(checks, sc.Context(device="cpu", real_gpu=False))
    assert [(r.status, r.detail) for r in results] == [("skip", "no GPU"), ("pass", "")]
    assert len(ran) == 1 and all(r.ms >= 0 for r in results)


# -- the environment report and the informational checks ----------------------------------------

def test_missing_packages_read_not_installed(monkeypatch):
    real = sc.importlib.metadata.version

    def version(dist):
        if dist in ("nvtx", "cuda-python"):
            raise sc.importlib.metadata.PackageNotFoundError(dist)
        return real(dist)

    monkeypatch.setattr(sc.importlib.metadata, "version", version)
    monkeypatch.setitem(sys.modules, "nvtx", None)  # as if not installed: import fails
    env = sc.collect_env()
    assert env["nvtx"] == env["cuda-python"] == "not installed"
    jit = sys.modules["tritongrad.kernels.numpy.jit"]
    assert env["numba (CPU loops)"].endswith(", loops on" if jit.enabled() else ")")
    assert env["nvtx available"].startswith("no")
    assert sc._guard(lambda: 1 / 0).startswith("unknown (ZeroDivisionError")
    [r] = sc.run_checks([sc.Check("emit_nvtx", sc._check_emit_nvtx)], sc.Context("cpu", False))
    assert (r.status, r.detail) == ("skip", "the nvtx package is not installed")


def test_without_nvtx_the_selfcheck_runs_and_skips_emit_nvtx():
    code = ("import sys, json\n"
            "sys.modules['nvtx'] = None  # as if not installed\n"
            "import tritongrad.selfcheck as sc\n"
            "sc.CHECKS[:] = [c for c in sc.CHECKS if c.name == 'emit_nvtx']\n"
            "sys.exit(sc.main(['--json']))\n")
    proc = _run(emulate=not REAL_GPU, code=code)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = _parse(proc)
    assert report["environment"]["nvtx available"].startswith("no")
    [check] = report["checks"]
    assert (check["status"], check["detail"]) == ("skip", "the nvtx package is not installed")


def test_toolchain_fails_only_on_a_real_gpu(monkeypatch):
    check = [sc.Check(TOOLCHAIN, sc._check_toolchain)]
    [ok] = sc.run_checks(check, sc.Context("cpu", False))
    assert ok.status in ("pass", "skip")
    monkeypatch.setattr(sc, "_c_compiler", lambda: None)
    [info] = sc.run_checks(check, sc.Context("cpu", False))
    [fail] = sc.run_checks(check, sc.Context("cuda", True))
    assert info.status == "skip" and "C compiler" in info.detail
    assert fail.status == "fail" and "C compiler" in fail.detail
