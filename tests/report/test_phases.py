"""Phase figures against the real reference engine: two `-m perf` runs whose engines differ only in
decode rate are attributed to decode, prefill unchanged within its spread; the long probes print a
progress line per level, length and depth."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.engine.launch import serve_engine_in_thread
from conformance.probes import progress
from conformance.probes.common import Target
from conformance.report.compare import compare, load_run, render_markdown
from conformance.wire import ANTHROPIC

PREFILL = 2000.0  # TTFT 0.13 s at 256 tokens: the timer noise of a shared machine stays small beside it


def _perf_run(cwd: Path, decode_rate: float, name: str) -> Path:
    with serve_engine_in_thread(prefill_tokens_per_s=PREFILL, decode_tokens_per_s=decode_rate) as url:
        proc = subprocess.run([sys.executable, "-m", "pytest", f"--target={url}", "-m", "perf", "-p", "no:cacheprovider",
                               "-q", f"--conformance-report-dir={name}", "--conformance-api=anthropic",
                               "--conformance-concurrency=2", "-o", "asyncio_default_fixture_loop_scope=function"],
                              cwd=cwd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    # the progress lines reach the terminal past pytest's capture, one per point and repeat
    assert proc.stderr.count("[conformance] perf: prefill, prompt") == 9, proc.stderr[-2000:]
    assert proc.stderr.count("[conformance] perf: decode,") == 6
    return cwd / name


@pytest.mark.slow  # two perf runs with paced streams: about 40 s on a shared machine
def test_a_decode_change_is_attributed_to_decode_and_prefill_is_unchanged(tmp_path):
    a = _perf_run(tmp_path, 400.0, "a")
    b = _perf_run(tmp_path, 200.0, "b")
    c = compare(load_run(a), load_run(b))
    by_phase: dict[str, set[str]] = {}
    for p in c.phases:
        by_phase.setdefault(p.check_id, set()).add(p.verdict)
    assert by_phase["load.phase.decode_rate"] == {"moved down"}, c.phases
    assert by_phase["load.phase.prefill_rate"] == {"unchanged within the spread"}, c.phases
    decode = [p for p in c.phases if p.check_id == "load.phase.decode_rate"]
    assert all(0.4 < p.ratio < 0.6 for p in decode), decode
    assert not c.flips and not c.settings_differ
    md = render_markdown(c)
    assert "- decode: moved down" in md and "- prefill: unchanged within the spread" in md
    html = (b / "report.html").read_text()
    assert 'data-plot="load-phase-prefill_rate"' in html and 'data-plot="load-phase-decode_rate"' in html


def test_a_point_measured_once_is_marked_seen_once():
    lines: list[str] = []
    with serve_engine_in_thread() as url:
        from conformance.probes.phases import decode_figures

        target = Target(url, wire=ANTHROPIC, model="reference-model", salt="once")
        outcome = asyncio.run(decode_figures(target, concurrency=1, repeats=1, sink=lines.append))
    (point,) = outcome.details["points"]
    assert point["seen_once"] is True and point["repeats"] == 1
    assert "seen once: not a result" in outcome.message
    assert lines == ["perf: decode, single stream (level 1/1), repeat 1/1"]


def test_context_and_interference_print_a_progress_line_per_level():
    from conformance.probes.interference import interference_probe
    from conformance.probes.limit import discover_limit
    from conformance.probes.sizing import ContextProbe

    lines: list[str] = []
    with serve_engine_in_thread(max_context=4096) as url:
        target = Target(url, wire=ANTHROPIC, model="reference-model", salt="progress")

        async def go():
            info = await discover_limit(target)
            probe = ContextProbe(target, info, sink=lines.append)
            await probe.needle_sweep(fractions=(0.5, 0.9), depths=(0.0, 0.5, 1.0))
            await interference_probe(target, short_count=2, parallel_long=2, sink=lines.append)

        asyncio.run(go())
    needle = [line for line in lines if line.startswith("context: needle")]
    assert len(needle) == 6
    for fi, frac in ((1, 50), (2, 90)):
        for di, depth in ((1, 0), (2, 50), (3, 100)):
            assert any(f"length {fi}/2 ({frac}% of 4096 tokens), depth {di}/3 ({depth}%)" in line for line in needle)
    assert needle[-1].endswith("point 6/6")
    inter = [line for line in lines if line.startswith("interference:")]
    for phase in ("phase 1/4", "phase 2/4", "phase 3/4", "phase 4/4"):
        assert any(phase in line for line in inter), (phase, inter)
    assert sum("short request" in line for line in inter) == 4  # 2 alone, 2 with the long one in flight


def test_a_long_step_is_never_silent():
    lines: list[str] = []

    async def go():
        async with progress.step("slow thing", lines.append, every=0.05):
            await asyncio.sleep(0.28)

    asyncio.run(go())
    assert lines[0] == "slow thing"
    beats = [line for line in lines if "still running" in line]
    assert 3 <= len(beats) <= 6


def test_a_peer_stack_run_says_which_stack_and_how_far_along(tmp_path, capsys):
    import time

    from conformance.peers.run import _progress_while_running

    log = tmp_path / "stack.log"
    log.write_text("collecting ...\n")
    stop = _progress_while_running("[litellm-reference] (stack 2/5)", log, every=0.05)
    time.sleep(0.12)
    log.write_text("collecting ...\n........                 [ 40%]\n")
    time.sleep(0.12)
    stop.set()
    time.sleep(0.06)
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("peers: [litellm-reference]")]
    assert len(lines) >= 3
    assert all("(stack 2/5) running for" in ln for ln in lines)
    assert lines[0].endswith("collecting ...") and lines[-1].endswith("[ 40%]")
