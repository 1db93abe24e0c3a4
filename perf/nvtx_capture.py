"""emit_nvtx captured for real on a device: a short forward+backward under
``tg.autograd.profiler.emit_nvtx()``, recorded by the NVTX injection library of tests/nvtx.

    python perf/nvtx_capture.py record [--device cuda] [--require-gpu]
    python perf/nvtx_capture.py workload [--device cuda]

``record`` builds the recorder (tests/nvtx/nvtx_recorder.c, with the C compiler and the
nvidia-nvtx headers, by the tests' own fixture code in tests/nvtx/conftest.py), runs
``workload`` in a fresh process with ``NVTX_INJECTION64_PATH`` naming it (the device left
visible, unlike the tests, which hide it), and checks what the process emitted: every node of
the graph shows as ``aten::<op>, seq = N`` in forward and ``<Node>, stashed seq = N`` in backward
(PyTorch's names: observe.event_name), and the ranges nest on each thread. It prints one closing line starting ``nvtx capture:`` and exits
0 when every check holds (1 otherwise, 2 when the recorder cannot be built here).

``workload`` is the process being recorded (also what gpu_campaign.sh runs under
``ncu --nvtx``): it trains a tiny MLP for a few steps (one warm-up step outside emit_nvtx so
Triton's compiles stay out of the ranges), then prints one JSON line: the device, whether it is
emulated, and the graph of each recorded step as [name, seq, op].
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NVTX_TESTS = REPO / "tests" / "nvtx"
ACC = "torch::autograd::AccumulateGrad"


def _graph_nodes():
    """The test's ground-truth function: [name, seq, op] of every node behind a tensor but the
    leaves' AccumulateGrad."""
    namespace: dict = {}
    exec(_load(NVTX_TESTS / "test_emit_nvtx.py", "_tg_nvtx_checks").GRAPH_NODES, namespace)  # noqa: S102
    return namespace["graph"]


def workload(device: str, steps: int) -> int:
    from tritongrad.runtime import driver

    import tritongrad as tg

    tg.manual_seed(0)
    x = tg.randn(64, 32).to(device)
    w1 = (tg.randn(32, 16) * 0.2).to(device).requires_grad_()
    b1 = tg.zeros(16, device=device, requires_grad=True)
    w2 = (tg.randn(16, 4) * 0.2).to(device).requires_grad_()

    graph_of = _graph_nodes()

    def step():
        h = (x @ w1 + b1).relu()
        loss = ((h @ w2).tanh() * 0.5).exp().sum()
        graph = graph_of(loss)
        loss.backward()
        with tg.no_grad():
            for p in (w1, b1, w2):
                p.sub_(0.01 * p.grad)
                p.grad = None
        return graph

    step()  # warm-up: the kernels compile outside the recorded ranges
    graphs = []
    with tg.autograd.profiler.emit_nvtx():
        for _ in range(steps):
            graphs.append(step())
    if device != "cpu":
        tg.cuda.synchronize()
    dev = str(x.device)
    name = None
    if dev.startswith("cuda") and not driver.is_emulated():
        name = tg.cuda.get_device_name()
    print(json.dumps({"device": dev, "emulated": bool(dev.startswith("cuda")
                                                      and driver.is_emulated()),
                      "device_name": name, "graphs": graphs}))
    return 0


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _build_recorder(out_dir: Path):
    """(tests/nvtx/conftest.py as a module, the recorder library), or exits 2 saying why."""
    try:
        fixtures = _load(NVTX_TESTS / "conftest.py", "_tg_nvtx_fixtures")
    except Exception as e:  # noqa: BLE001 - pytest missing, or the file moved
        sys.exit(_no_recorder(f"cannot load tests/nvtx/conftest.py ({type(e).__name__}: {e})"))
    import shutil

    if importlib.util.find_spec("nvtx") is None:
        sys.exit(_no_recorder("the `nvtx` package is not installed (bring its wheel)"))
    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        sys.exit(_no_recorder("no C compiler (gcc/cc) on PATH"))
    include = fixtures.nvtx_include_dir()
    if include is None:
        sys.exit(_no_recorder("NVTX headers not found (the nvidia-nvtx wheel's "
                              "nvidia/*/include/nvtx3)"))
    tool = fixtures.NvtxTool(cc, include, Path())
    try:  # NvtxTool.compile reports a failed build through pytest.fail
        lib = tool.compile(NVTX_TESTS / "nvtx_recorder.c", out_dir / "libnvtx_recorder.so",
                           "-shared", "-fPIC", libs=("-lpthread",))
    except BaseException as e:  # noqa: BLE001 - pytest's Failed is a BaseException
        sys.exit(_no_recorder(f"building the recorder failed: {e}"))
    print(f"recorder: {lib} (cc {cc}, headers {include})")
    return fixtures, lib


def _no_recorder(why: str) -> int:
    print(f"nvtx capture: SKIP, cannot build the NVTX recorder here: {why}")
    return 2


def record(device: str, steps: int, require_gpu: bool, keep: str | None) -> int:
    tmp = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="nvtx_capture_"))
    tmp.mkdir(parents=True, exist_ok=True)
    fixtures, lib = _build_recorder(tmp)
    checks = _load(NVTX_TESTS / "test_emit_nvtx.py", "_tg_nvtx_checks")  # FWD, BWD, build_ranges
    rec_file = tmp / "nvtx_record.tsv"
    env = dict(os.environ)
    env.pop("NVTX_DISABLE", None)
    env["NVTX_INJECTION64_PATH"] = str(lib)
    env["NVTX_RECORD_FILE"] = str(rec_file)
    argv = [sys.executable, str(Path(__file__).resolve()), "workload", "--device", device,
            "--steps", str(steps)]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600, check=False)
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    if proc.returncode != 0:
        print(f"nvtx capture: FAIL, the recorded process exited {proc.returncode}")
        return 1
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    text = rec_file.read_text(encoding="utf-8") if rec_file.exists() else ""
    events = fixtures.parse_record(text)
    print(f"record: {rec_file} ({len(events)} events)")
    problems = []
    where = info["device"] + (" (emulated)" if info["emulated"] else "") + (
        f" ({info['device_name']})" if info.get("device_name") else "")
    if require_gpu and (not info["device"].startswith("cuda") or info["emulated"]):
        problems.append(f"ran on {where}, not on a real GPU")
    try:
        ranges = checks.build_ranges(events)  # asserts that pushes and pops nest per thread
    except AssertionError as e:
        ranges = []
        problems.append(f"ranges do not nest: {e}")
    fwd = [r for r in ranges if checks.FWD.match(r.message)]
    bwd = [r for r in ranges if checks.BWD.match(r.message)]
    fwd_msgs = {r.message for r in fwd}
    stashed = {}
    for r in bwd:
        m = checks.BWD.match(r.message)
        stashed.setdefault((m["name"], int(m["seq"])), []).append(r)
    nodes = [n for g in info["graphs"] for n in g]
    matched = 0
    for name, seq, op in nodes:
        ok_f = f"aten::{op}, seq = {seq}" in fwd_msgs
        ok_b = len(stashed.get((name, seq), ())) == 1
        matched += ok_f and ok_b
        if not ok_f:
            problems.append(f"no forward range 'aten::{op}, seq = {seq}' for {name}")
        if not ok_b:
            problems.append(f"{len(stashed.get((name, seq), ()))} backward ranges "
                            f"'{name}, stashed seq = {seq}' (want 1)")
    if not nodes:
        problems.append("the workload recorded no graph")
    threads = len({e.tid for e in events if e.kind == "push"})
    print(f"forward ranges {len(fwd)}, backward ranges {len(bwd)}, "
          f"AccumulateGrad ranges {sum(r.message == ACC for r in ranges)}, threads {threads}")
    for r in (fwd[:3] + bwd[:3]):
        print(f"  e.g. {r.message!r} (thread {r.tid}, depth {r.depth})")
    for p in problems[:20]:
        print(f"problem: {p}")
    verdict = "PASS" if not problems else "FAIL"
    print(f"nvtx capture: {verdict} on {where}: {matched}/{len(nodes)} graph nodes matched "
          f"(seq = N in forward, stashed seq = N in backward), {len(fwd)} forward / "
          f"{len(bwd)} backward ranges")
    return 0 if not problems else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=("record", "workload"))
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--steps", type=int, default=2, help="recorded training steps")
    ap.add_argument("--require-gpu", action="store_true",
                    help="record: fail unless the workload ran on a real (not emulated) GPU")
    ap.add_argument("--keep", default=None, metavar="DIR",
                    help="record: build the recorder and write the record in DIR")
    args = ap.parse_args(argv)
    if args.mode == "workload":
        return workload(args.device, args.steps)
    return record(args.device, args.steps, args.require_gpu, args.keep)


if __name__ == "__main__":
    sys.exit(main())
