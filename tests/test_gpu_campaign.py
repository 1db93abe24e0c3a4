"""perf/gpu_campaign.sh, the one command that runs every GPU check on a lent GPU machine
(docs/gpu.md). Here, without a GPU: the script parses, its no-GPU path exits 0, says so and
writes summary.md naming every GPU step it skipped, and its GPU path's plumbing works when
rehearsed on the emulated device (CAMPAIGN_EMULATE=1, two short steps)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "perf" / "gpu_campaign.sh"
BASH = shutil.which("bash")
GPU_STEPS = ["gpu-tests", "suite-runtime", "suite", "nvtx-capture", "ex-mlp", "ex-digits",
             "ex-transformer", "bench-kernels", "bench-mlp", "bench-chain", "bench-transfer",
             "bench-launch", "bench-attention", "bench-conv", "bench-transformer", "bench-knobs",
             "sanitizer",
             "ncu-nvtx"]

needs_bash = pytest.mark.skipif(BASH is None, reason="bash is not installed")


def _real_gpu() -> bool:
    from tritongrad.runtime import driver

    return driver.is_available() and not driver.is_emulated()


def _run(tmp_path: Path, **env_extra) -> tuple[subprocess.CompletedProcess, dict]:
    out = tmp_path / "out"
    env = dict(os.environ)
    env.update(PYTHON=sys.executable, CAMPAIGN_NO_INSTALL="1", TMPDIR=str(tmp_path), **env_extra)
    proc = subprocess.run([BASH, str(SCRIPT), str(out)], capture_output=True, text=True,
                          env=env, timeout=180, cwd=str(tmp_path), check=False)
    summary = (out / "summary.md").read_text() if (out / "summary.md").exists() else ""
    rows = {}
    for line in summary.splitlines():  # | 04 | gpu-tests | SKIP | - | no GPU | - |
        m = re.match(r"^\| (\d\d) \| ([\w-]+) \| (\w+) \| ([^|]*) \| (.*) \| ([^|]*) \|$", line)
        if m:
            rows[m[2]] = {"status": m[3], "key": m[5], "log": m[6].strip()}
    return proc, {"text": summary, "rows": rows, "dir": out}


@needs_bash
def test_script_parses():
    proc = subprocess.run([BASH, "-n", str(SCRIPT)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    if shutil.which("shellcheck"):
        proc = subprocess.run(["shellcheck", str(SCRIPT)], capture_output=True, text=True,
                              check=False)
        assert proc.returncode == 0, proc.stdout


@needs_bash
def test_no_gpu_path_skips_the_gpu_steps_and_exits_0(tmp_path):
    if _real_gpu():
        pytest.skip("a real GPU is present: the no-GPU path does not run here")
    proc, s = _run(tmp_path, CAMPAIGN_BUDGET="60", CAMPAIGN_FORCE_NO_GPU="1")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "NO GPU" in proc.stdout and "dry run" in proc.stdout
    assert s["text"] and s["text"] in proc.stdout  # the summary is printed at the end
    assert "**NO GPU on this machine" in s["text"]
    rows = s["rows"]
    assert rows["env"]["status"] == "PASS" and rows["install"]["status"] == "PASS"
    assert "tritongrad" in rows["install"]["key"]
    for step in GPU_STEPS:
        assert rows[step]["status"] == "SKIP", (step, rows[step])
        assert rows[step]["key"] == "no GPU", (step, rows[step])
    assert rows["selfcheck"]["status"] in ("PASS", "FAIL", "TIMEOUT", "SKIP")
    for row in rows.values():
        if row["log"] != "-":
            assert (s["dir"] / row["log"]).is_file()
    env_log = (s["dir"] / "01-env.log").read_text()
    assert "python:" in env_log and "packages: numpy" in env_log
    assert not list(tmp_path.glob("gpu-campaign.*"))  # the scratch folder is removed


@needs_bash
def test_gpu_path_rehearsed_on_the_emulated_device(tmp_path):
    """Two GPU steps run for real on the emulated device: the step runner, the key lines and
    the exit status of the GPU path."""
    if _real_gpu():  # the knob is ignored there: the script takes the real GPU path
        pytest.skip("a real GPU is present: the emulated rehearsal does not run here")
    proc, s = _run(tmp_path, CAMPAIGN_BUDGET="150", CAMPAIGN_EMULATE="1",
                   CAMPAIGN_ONLY="nvtx-capture,bench-kernels")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    rows = s["rows"]
    assert "EMULATED, NOT A GPU" in s["text"]
    assert rows["bench-kernels"]["status"] == "PASS"
    assert "no GPU to benchmark on" in rows["bench-kernels"]["key"]
    nvtx = rows["nvtx-capture"]
    if nvtx["status"] == "SKIP":  # no C compiler or NVTX headers here
        assert "cannot build the NVTX recorder" in nvtx["key"]
    else:
        assert nvtx["status"] == "PASS", (s["dir"] / nvtx["log"]).read_text()[-3000:]
        assert re.search(r"PASS on cuda:0 \(emulated\): (\d+)/\1 graph nodes matched", nvtx["key"])
    for step in ("gpu-tests", "suite", "sanitizer", "ncu-nvtx"):
        assert rows[step]["status"] == "SKIP"


@needs_bash
def test_suite_shards_list_their_files_in_path_order(tmp_path):
    """Each shard's files in path order, a folder's files together: pytest 9.1 loses a folder's
    conftest fixtures for its files listed after a file of the parent folder (pytest-dev/pytest
    #14971; the H200 run of 2026-11-30). Largest first, these three would interleave."""
    if _real_gpu():
        pytest.skip("a real GPU is present: the emulated rehearsal does not run here")
    files = ["tests/kernels/test_pool_loops.py", "tests/test_jit_eager.py",
             "tests/kernels/test_contract.py"]
    proc, s = _run(tmp_path, CAMPAIGN_BUDGET="150", CAMPAIGN_EMULATE="1", CAMPAIGN_ONLY="suite",
                   CAMPAIGN_SHARDS="1", CAMPAIGN_SUITE_PATHS=" ".join(files))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    row = s["rows"]["suite"]
    assert row["status"] == "PASS", row
    log = (s["dir"] / row["log"]).read_text()
    listed = re.search(r"#campaign# shard 1: (.*)", log)[1].split()
    assert listed == sorted(files), listed
