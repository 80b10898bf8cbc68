"""Interference (conformance.probes.interference) against the reference engine: ratios on the
conformant engine, several long requests at once fail on the crashing one."""

from __future__ import annotations

from conformance.probes.common import run_sync
from conformance.probes.interference import interference_probe


def test_interference_reports_ratios_on_the_conformant_engine(engine, make_target):
    t = make_target(engine())
    inter, par = run_sync(interference_probe(t, short_count=3, parallel_long=2))
    assert inter.outcome == "info", inter.message
    assert inter.details["short_latency_ratio"] is not None and inter.details["short_throughput_ratio"] is not None
    assert abs(inter.details["long_tokens"] - 2048) <= 0.02 * 2048, "the long prompt is sized from the target's counts"
    assert par.outcome == "passed", par.message


def test_several_long_requests_at_once_kill_the_crashing_engine(spawned, make_target):
    ep = spawned("crash-under-concurrency")
    t = make_target(ep.url, process=ep)
    _, par = run_sync(interference_probe(t, short_count=2, parallel_long=4))
    assert par.outcome == "failed" and "long-context requests at once failed" in par.message
