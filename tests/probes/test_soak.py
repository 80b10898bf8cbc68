"""The soak: goodput and figures from its records (fast), and its detection power (slow).

The slow self-test proves the soak's point: the conformant engine passes a soak of 4 sessions
with 0 errors; the engine with `dies-under-sustained-load` passes the concurrency ramp and fails
the soak, which names the time of death and that the engine stayed dead. A held-out server
(tests/probes/dying_proxy.py: a proxy that dies as a process after a count of prefix reuses under
load) is caught the same way, so the soak is not tuned to the reference engine's own fault.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.checks.load import SOAK_STABLE
from conformance.cli import main
from conformance.engine.launch import serve_engine_in_thread
from conformance.probes.common import run_sync
from conformance.probes.load import concurrency_probe
from conformance.probes.soak import SoakReport, SoakRequest, SoakSession, soak_probe
from conformance.probes.workload import capture_items, loop_items

# Paced like a real engine, so the sessions' requests overlap.
PACE = {"prefill_tokens_per_s": 20000, "decode_tokens_per_s": 200}
DIE_AFTER_S = 3.0


def _request(at, ttft, *, kind=None, itl=0.01):
    return SoakRequest(0, 0, 1, at, ttft, itl, 0.5, 10, kind)


def test_goodput_counts_completed_session_runs_within_the_slos_per_hour():
    fast = SoakSession(0, 0, "loop:a", 0.0, 1.0, True, None, [_request(0.0, 0.1)])
    slow = SoakSession(1, 0, "loop:a", 0.0, 1.0, True, None, [_request(0.0, 2.0)])
    broken = SoakSession(2, 0, "loop:a", 0.0, 1.0, False, "5xx", [_request(0.0, 0.1, kind="5xx")])
    rep = SoakReport(60.0, 3, slo_ttft_s=1.0, slo_itl_s=0.05, runs=[fast, slow, broken], wall_s=60.0)
    assert rep.goodput_per_hour() == 60.0  # one good session run in a minute
    assert SoakReport(60.0, 3, runs=[fast, slow, broken], wall_s=60.0).goodput_per_hour() == 120.0  # no SLOs
    assert rep.first_failure_s == 0.5
    figures = rep.figures()
    assert figures["request_errors"] == 1 and figures["session_runs_completed"] == 2


def test_series_puts_errors_and_figures_in_their_time_bucket():
    runs = [SoakSession(0, 0, "loop:a", 0.0, 9.0, False, "5xx",
                        [_request(0.0, 0.1), _request(7.0, None, kind="5xx")])]
    series = SoakReport(10.0, 1, runs=runs, wall_s=10.0).series(bucket_s=5.0)
    assert [(row["t_s"], row["requests"], row["errors"]) for row in series] == [(0.0, 1, 0), (5.0, 1, 1), (10.0, 0, 0)]
    assert series[0]["ttft_p95_s"] == 0.1 and series[1]["ttft_p95_s"] is None


def test_soak_command_refuses_a_session_count_below_one(capsys):
    assert main(["soak", "--target", "http://127.0.0.1:9", "--duration", "5", "--sessions", "0"]) == 2
    assert "--sessions must be at least 1" in capsys.readouterr().err


@pytest.mark.slow
def test_soak_passes_the_conformant_engine_and_catches_the_engine_that_dies_under_sustained_load(
        make_target, tmp_path, capsys):
    with serve_engine_in_thread(**PACE) as url:
        rep = run_sync(soak_probe(make_target(url), 6.0, 4, slo_ttft_s=10.0, slo_itl_s=1.0))
        ok = rep.outcome()
        assert ok.outcome == "passed", ok.message
        assert ok.details["request_errors"] == 0 and ok.details["session_runs"] >= 4
        assert ok.details["goodput_sessions_per_hour"] > 0 and rep.recovered is True
        assert sum(row["requests"] for row in ok.details["series"]) == ok.details["requests"]

    with serve_engine_in_thread(faults=["dies-under-sustained-load"], die_after_s=DIE_AFTER_S, **PACE) as url:
        target = make_target(url)
        items = capture_items(target)[:2] + loop_items(target.wire)[:2]
        ramp = run_sync(concurrency_probe(target, 4, items=items)).acceptance()
        assert ramp.outcome == "passed", "the ramp never holds the load long enough: " + ramp.message

        record = tmp_path / "soak.json"
        code = main(["soak", "--target", url, "--duration", "8", "--sessions", "4", "--json", str(record)])
        out = capsys.readouterr().out
        assert code == 1, out
        assert f"{SOAK_STABLE}: FAILED: the first failure came" in out
        figures = json.loads(record.read_text())
        assert figures["first_failure_s"] >= DIE_AFTER_S
        assert figures["recovered"] is False and "stays dead until it is restarted" in figures["recovery"]
        assert sum(row["errors"] for row in figures["series"]) > 0


@contextlib.contextmanager
def _dying_proxy(upstream: str, reuses: int):
    """The held-out server (tests/probes/dying_proxy.py) in its own process, in front of `upstream`."""
    proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("dying_proxy.py")), "--upstream", upstream,
                             "--die-after-reuses", str(reuses)], stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("listening on "), f"the dying proxy did not start: {line!r}"
        yield line.split()[-1], proc
    finally:
        proc.kill()
        proc.wait(10)


# About 4 s into a 10 s soak of 4 sessions on this machine; a ramp at concurrency 4 sends fewer.
HELD_OUT_REUSES = 30


@pytest.mark.slow
def test_the_soak_catches_a_held_out_server_that_dies_after_sustained_prefix_reuse(make_target, tmp_path, capsys):
    """A server the soak was not written against: it counts prefix reuses under load instead of
    timing them, and dies as a process (connections reset, then refused) instead of answering 500."""
    with serve_engine_in_thread(**PACE) as engine:
        with _dying_proxy(engine, HELD_OUT_REUSES) as (url, proc):
            target = make_target(url)
            items = capture_items(target)[:2] + loop_items(target.wire)[:2]
            ramp = run_sync(concurrency_probe(target, 4, items=items)).acceptance()
            assert ramp.outcome == "passed", "the ramp never holds the load long enough: " + ramp.message
            assert proc.poll() is None, "the ramp alone must not kill the held-out server"

        with _dying_proxy(engine, HELD_OUT_REUSES) as (url, proc):
            record = tmp_path / "soak.json"
            code = main(["soak", "--target", url, "--duration", "10", "--sessions", "4", "--json", str(record)])
            out = capsys.readouterr().out
            assert proc.poll() == 3, "the held-out server did not die during the soak: " + out
    assert code == 1, out
    assert f"{SOAK_STABLE}: FAILED: the first failure came" in out
    figures = json.loads(record.read_text())
    assert figures["first_failure_s"] > 1.0, "nothing may fail before the sustained reuse"
    assert figures["recovered"] is False and "stays dead until it is restarted" in figures["recovery"]
