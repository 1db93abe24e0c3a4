"""Fixtures for the NVTX capture tests: build the recorder tool, run a process under it.

The recorder (nvtx_recorder.c) is an NVTX injection library: a process started with
``NVTX_INJECTION64_PATH`` naming it records every range, mark and registered string it emits
to the file named by ``NVTX_RECORD_FILE``. It is built here with the machine's C
compiler against the NVTX headers of the ``nvidia-nvtx`` wheel (a test extra); the tests
skip, saying why, where either is missing.
"""

from __future__ import annotations

import dataclasses
import glob
import importlib.util
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def nvtx_include_dir() -> str | None:
    """The directory holding ``nvtx3/nvToolsExt.h`` in the installed nvidia-nvtx wheel."""
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return None
    roots = list(spec.submodule_search_locations or []) if spec is not None else []
    for root in roots:
        # nvidia/cu13/include/nvtx3 (CUDA 13 wheels), nvidia/nvtx/include/nvtx3 (CUDA 12)
        for header in sorted(glob.glob(os.path.join(root, "*", "include", "nvtx3",
                                                    "nvToolsExt.h"))):
            return str(Path(header).parent.parent)
    return None


@dataclasses.dataclass(frozen=True)
class NvtxTool:
    """The C compiler, the NVTX headers, and the recorder library built with them."""

    cc: str
    include: str
    library: Path

    def compile(self, source: Path, out: Path, *flags: str, libs=("-ldl",)) -> Path:
        """Compiles ``source`` to ``out`` against the NVTX headers (fails the test if not)."""
        cmd = [self.cc, "-std=gnu11", "-O2", "-Wall", "-I", self.include, *flags,
               str(source), "-o", str(out), *libs]
        proc = subprocess.run(cmd, check=False, capture_output=True, text=True)
        if proc.returncode != 0:
            pytest.fail(f"building {source.name} failed ({' '.join(cmd)}):\n{proc.stderr}")
        return out


@pytest.fixture(scope="session")
def nvtx_tool(tmp_path_factory) -> NvtxTool:
    """Builds the recorder (skips the test, saying why, where it cannot be built here)."""
    if importlib.util.find_spec("nvtx") is None:
        pytest.skip("the `nvtx` package is not installed (a tritongrad dependency)")
    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler (gcc/cc) on PATH to build the NVTX recorder tool")
    include = nvtx_include_dir()
    if include is None:
        pytest.skip("NVTX headers not found: install the `nvidia-nvtx` wheel (pip install "
                    "'tritongrad[test]'), which ships nvidia/*/include/nvtx3")
    tool = NvtxTool(cc, include, Path())
    lib = tool.compile(HERE / "nvtx_recorder.c",
                       tmp_path_factory.mktemp("nvtx_tool") / "libnvtx_recorder.so",
                       "-shared", "-fPIC", libs=("-lpthread",))
    return dataclasses.replace(tool, library=lib)


@dataclasses.dataclass(frozen=True)
class Event:
    """One line of the recorder's file."""

    tid: int
    kind: str      # push pop start end mark register domain_create ...
    domain: str    # "" for the default domain
    value: int     # push/pop: depth; start/end: range id
    message: str


def _unescape(s: str) -> str:
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            out.append({"\\": "\\", "t": "\t", "n": "\n", "r": "\r"}.get(s[i + 1], s[i + 1]))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def parse_record(text: str) -> list[Event]:
    """The recorder's lines as Events, in file order."""
    events = []
    for line in text.splitlines():
        tid, kind, domain, value, message = line.split("\t", 4)
        events.append(Event(int(tid), kind, _unescape(domain), int(value), _unescape(message)))
    return events


@dataclasses.dataclass
class Recording:
    events: list[Event]
    stdout: str
    stderr: str
    text: str  # the file as written


@pytest.fixture(scope="session")
def run_recorded(nvtx_tool, tmp_path_factory):
    """``run_recorded(code) -> Recording``: runs Python ``code`` (or the command ``argv``) in
    a fresh process with the recorder attached from its start; returns what it recorded."""

    def run(code: str | None = None, *, argv: list | None = None,
            timeout: float = 120.0) -> Recording:
        tmp = tmp_path_factory.mktemp("recorded")
        record = tmp / "nvtx_record.tsv"
        if argv is None:
            script = tmp / "script.py"
            script.write_text(textwrap.dedent(code))
            argv = [sys.executable, str(script)]
        env = dict(os.environ)
        env.pop("NVTX_DISABLE", None)
        env["NVTX_INJECTION64_PATH"] = str(nvtx_tool.library)  # read at the first NVTX call
        env["NVTX_RECORD_FILE"] = str(record)
        env.setdefault("CUDA_VISIBLE_DEVICES", "")  # all the work here is on the CPU
        proc = subprocess.run([str(a) for a in argv], check=False, capture_output=True,
                              text=True, env=env, timeout=timeout, cwd=str(tmp))
        if proc.returncode != 0:
            pytest.fail(f"recorded process failed (rc={proc.returncode}):\n{proc.stderr}"
                        f"\n{proc.stdout}")
        text = record.read_text(encoding="utf-8") if record.exists() else ""
        return Recording(parse_record(text), proc.stdout, proc.stderr, text)

    return run
