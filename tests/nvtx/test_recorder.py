"""The recorder tool itself: a C program makes each kind of NVTX call and the record must show
each one, decoded to UTF-8 (A, W and Ex forms, both domains, registered strings)."""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent


def test_recorder_decodes_every_form(nvtx_tool, run_recorded, tmp_path):
    exe = nvtx_tool.compile(HERE / "nvtx_client.c", tmp_path / "nvtx_client")
    run = run_recorded(argv=[exe])
    assert run.stdout.strip() == "2"  # pushEx was the third range open
    events = [(e.kind, e.domain, e.value, e.message) for e in run.events
              if e.kind not in ("init", "initialize")]
    start_w = next(v for k, _, v, m in events if k == "start" and m == "startW")
    start_ex = next(v for k, _, v, m in events if k == "start" and m == "exW")
    assert events == [
        ("mark", "", 0, "markA"),
        ("mark", "", 0, "markW \u00fc\u20ac\U0001F600"),  # UTF-32 wchar_t -> UTF-8
        ("push", "", 0, "pushA"),
        ("push", "", 1, "pushW \u00e9"),
        ("push", "", 2, "pushEx\ttab\\"),                  # escaped in the file, restored
        ("pop", "", 2, ""),
        ("pop", "", 1, ""),
        ("pop", "", 0, ""),
        ("start", "", start_w, "startW"),
        ("end", "", start_w, ""),
        ("domain_create", "domW", 0, "domW"),
        ("register", "domW", 0, "regW \u2211"),
        ("push", "domW", 0, "regW \u2211"),                # a registered-string handle
        ("mark", "domW", 0, "regW \u2211"),
        ("pop", "domW", 0, ""),
        ("start", "domW", start_ex, "exW"),
        ("end", "domW", start_ex, ""),
        ("domain_destroy", "domW", 0, "domW"),
    ]
    assert start_w != start_ex
    assert "pushEx\\ttab\\\\" in run.text  # one event, one line: tab and backslash escaped
