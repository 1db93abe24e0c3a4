"""``torch.cpu``: the CPU's side of the device API, so code written against ``torch.cuda`` or
``torch.accelerator`` runs unchanged on the CPU: one device, always available, whose one
stream runs work in program order (so synchronizing and waiting on events return at once), and
its capabilities as PyTorch's ``get_capabilities()`` reports them (the instruction-set flags,
caches and core counts of the host, read from Linux's /proc/cpuinfo and /sys)."""

from __future__ import annotations

import contextlib
import functools
import os
import platform
import re
from pathlib import Path

from .amp import cpu_amp as amp

__all__ = ["Event", "Stream", "StreamContext", "amp", "current_device", "current_stream",
           "device_count", "get_capabilities", "is_available", "is_initialized", "set_device",
           "stream", "synchronize"]


def is_available() -> bool:
    """Always True: the CPU is there."""
    return True


def is_initialized() -> bool:
    """Always True: the CPU needs no initialization."""
    return True


def device_count() -> int:
    """1: the CPU is one device, whatever its cores."""
    return 1


def current_device() -> str:
    """``"cpu"``."""
    return "cpu"


def set_device(device) -> None:
    """Does nothing: there is one CPU device."""


def synchronize(device=None) -> None:
    """Returns at once: CPU work is done when its call returns (``device`` is ignored, as
    PyTorch's: there is one CPU device)."""


class Stream:
    """The CPU's stream: work runs in program order, so every method returns at once."""

    def __init__(self, priority: int = -1) -> None:
        self.priority = priority

    def wait_stream(self, stream) -> None:
        """Nothing to wait for."""

    def wait_event(self, event) -> None:
        """Nothing to wait for."""

    def record_event(self, event: Event | None = None) -> Event:
        event = Event() if event is None else event
        event.record(self)
        return event


class Event:
    """An event of the CPU's stream: recorded work is already done, so it is always
    complete."""

    def __init__(self, *args, **kwargs) -> None:
        pass

    def query(self) -> bool:
        return True

    def record(self, stream: Stream | None = None) -> None:
        """Nothing to record: the stream's work so far is done."""

    def synchronize(self) -> None:
        """Returns at once."""

    def wait(self, stream: Stream | None = None) -> None:
        """Returns at once."""


_default_stream = Stream()
_current = [_default_stream]


def current_stream(device=None) -> Stream:
    """The stream made current by :func:`stream` (the default one outside); ``device`` is
    ignored."""
    return _current[-1]


class StreamContext(contextlib.AbstractContextManager):
    """``with tg.cpu.stream(s):``: ``current_stream()`` is ``s`` inside (None: unchanged)."""

    def __init__(self, stream: Stream | None) -> None:
        self.stream = stream

    def __enter__(self):
        _current.append(self.stream if self.stream is not None else _current[-1])
        return self.stream

    def __exit__(self, *exc) -> None:
        _current.pop()


def stream(stream: Stream | None) -> StreamContext:
    """A context manager that makes ``stream`` the current CPU stream."""
    return StreamContext(stream)


# /proc/cpuinfo's flag for each name PyTorch's cpuinfo-based report uses (same when absent)
_FLAG_NAMES = {"sse3": "pni", "fma3": "fma", "bmi": "bmi1", "lzcnt": "abm", "sha": "sha_ni",
               "avx512_f": "avx512f", "avx512_cd": "avx512cd", "avx512_dq": "avx512dq",
               "avx512_bw": "avx512bw", "avx512_vl": "avx512vl", "avx512_ifma": "avx512ifma",
               "avx512_vbmi": "avx512vbmi", "avx512_4vnniw": "avx512_4vnniw",
               "avx512_4fmaps": "avx512_4fmaps", "avx_vnni": "avx_vnni"}
_X86_FLAGS = ("sse", "sse2", "sse3", "ssse3", "sse4_1", "sse4_2", "sse4a", "avx", "avx2", "fma3",
              "fma4", "f16c", "popcnt", "lzcnt", "bmi", "bmi2", "aes", "sha", "clflush",
              "clflushopt", "clwb", "avx512_f", "avx512_cd", "avx512_dq", "avx512_bw",
              "avx512_vl", "avx512_ifma", "avx512_vbmi", "avx512_vbmi2", "avx512_bitalg",
              "avx512_vpopcntdq", "avx512_vnni", "avx512_bf16", "avx512_fp16",
              "avx512_vp2intersect", "avx512_4vnniw", "avx512_4fmaps", "avx_vnni",
              "avx_vnni_int8", "avx_vnni_int16", "avx_ne_convert", "amx_tile", "amx_int8",
              "amx_bf16", "amx_fp16", "avx10_1", "avx10_2")


def _cpuinfo() -> tuple[dict, list[dict]]:
    """The first processor's fields of /proc/cpuinfo, and every processor's."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return {}, []
    cpus = []
    for block in text.strip().split("\n\n"):
        fields = {}
        for line in block.splitlines():
            key, _, value = line.partition(":")
            fields[key.strip()] = value.strip()
        cpus.append(fields)
    return (cpus[0] if cpus else {}), cpus


def _cache_size(level: int, kind: str) -> int:
    """The size in bytes of CPU 0's cache at ``level`` of ``kind`` (``Data``, ``Unified``)."""
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            if int((index / "level").read_text()) == level and \
                    (index / "type").read_text().strip() in (kind, "Unified"):
                size = (index / "size").read_text().strip()
                scale = {"K": 1024, "M": 1024 ** 2}.get(size[-1], 1)
                return int(size.rstrip("KM")) * scale
        except (OSError, ValueError):
            continue
    return 0


# Note [package names]: PyTorch names the CPU as the cpuinfo library does: the vendor, then the
# brand string (/proc/cpuinfo's "model name") without its trademarks, filler words and clock
# ("Intel(R) Xeon(R) Processor" -> "Intel Xeon", "Intel(R) Core(TM) i7 CPU X 990 @ 3.47GHz" ->
# "Intel Core i7 990X", "AMD Ryzen 9 7950X 16-Core Processor" -> "AMD Ryzen 9 7950X"). The rules
# below are that normalization's, for the brand strings of x86 CPUs in use.
_VENDORS = {"GenuineIntel": "Intel", "AuthenticAMD": "AMD", "HygonGenuine": "Hygon",
            "CentaurHauls": "VIA", "  Shanghai  ": "VIA"}
_DROPPED = {"CPU", "AMD", "VIA", "IDT", "Intel", "Cyrix", "Genuine", "Processor", "processor",
            "family", "12-Core", "16-Core", "Dual-Core", "Quad-Core", "QuadCore", "Six-Core",
            "Eight-Core", "Triple-Core", "Transmeta"}
_ENDS = {"w/", "SOC", "MMX", "APU", "Radeon", "RADEON"}  # the name ends before these


def _package_name(brand: str, vendor_id: str) -> str:
    """cpuinfo's package name for an x86 brand string (Note [package names]); "" if none."""
    brand = re.sub(r"\([^)]*\)?", " ", brand)  # "(R)", "(TM)" and any other parenthesis
    at = brand.find("@")
    tokens, after_at = [], []
    for part, target in ((brand if at < 0 else brand[:at], tokens),
                         ("" if at < 0 else brand[at + 1:], after_at)):
        target.extend(part.replace("\t", " ").split())
    out: list[str] = []
    model_number = False
    for i, tok in enumerate(tokens + after_at):
        if i >= len(tokens) and model_number:  # the clock after "@" (once a model was named)
            break
        if len(tok) > 2 and tok.endswith("tm") and (tok[-3].isdigit() or tok[-3].isupper()):
            tok = tok[:-2]  # "AMD-K6tm"
        if len(tok) > 4 and tok.startswith("AMD-"):
            tok = tok[4:]
        if tok in _ENDS or (tok in ("Sample", "Sample,", "Sample:") and out[-1:] in
                            (["Eng"], ["Engineering"])):
            if tok.startswith("Sample"):
                return ""  # an engineering sample has no name
            break
        if tok == "Core" and out[-1:] == ["Dual"]:
            out.pop()
            continue
        if tok in _DROPPED or set(tok) == {"0"} or tok == "Engineering":
            if tok == "Engineering":
                out.append(tok)  # (kept only to recognize "Engineering Sample")
            continue
        if tok == "Mobile" and tokens[i - 1:i] and tokens[i - 1].endswith(("Core", "core")):
            continue
        if len(tok) == 2 and tok[0] == "V" and tok[1].isdigit():
            tok = "v" + tok[1]  # "E3-1230 V2" -> "v2"
        if tok.isdigit() and 2 <= len(tok) <= 5 and out and len(out[-1]) == 1 \
                and out[-1].isupper():
            tok = tok + out.pop()  # "X 990" -> "990X"
        if re.search(r"\d\d", tok):
            model_number = True
        out.append(tok)
    out = [t for t in out if t != "Engineering"]
    if not out or (len(out) == 1 and re.fullmatch(r".*[KMG]Hz", out[0])):
        return ""
    name = ""
    for tok in out:  # tokens join with a space, except around a dash
        name += tok if not name or name.endswith("-") or tok.startswith("-") else " " + tok
    vendor = _VENDORS.get(vendor_id)
    return f"{vendor} {name}" if vendor else name


@functools.cache
def get_capabilities() -> dict:
    """The CPU's capabilities as PyTorch's ``torch.cpu.get_capabilities()`` names them:
    ``architecture``, ``cpu_name``, core and socket counts, L1d/L2 cache sizes, and on x86 a
    True/False per instruction-set extension (``avx2``, ``avx512_bf16``, ``amx_tile``...)."""
    first, cpus = _cpuinfo()
    flags = set(first.get("flags", "").split())
    caps: dict = {"architecture": platform.machine(),
                  "cpu_name": _package_name(first.get("model name", ""),
                                            first.get("vendor_id", "")) or
                  platform.processor() or "unknown",
                  "num_logical_cores": os.cpu_count() or 1,
                  "num_sockets": max(1, len({c.get("physical id") for c in cpus} - {None})),
                  "l1d_cache_size": _cache_size(1, "Data"),
                  "l2_cache_size": _cache_size(2, "Unified")}
    cores = {(c.get("physical id"), c.get("core id")) for c in cpus if "core id" in c}
    caps["num_physical_cores"] = len(cores) or caps["num_logical_cores"]
    if caps["architecture"] in ("x86_64", "AMD64", "i386", "i686"):
        for name in _X86_FLAGS:
            caps[name] = _FLAG_NAMES.get(name, name) in flags
    return caps
