"""Concurrency acceptance (conformance.probes.load): levels and classification without a server;
against the reference engine it passes conformant and catches crash and hangs."""

from __future__ import annotations

import time

import pytest

from conformance.checks.load import CONCURRENCY_ACCEPTANCE
from conformance.core import registry
from conformance.net.transport import RawExchange
from conformance.probes.common import run_sync
from conformance.probes.load import classify, concurrency_probe, ramp_levels
from conformance.probes.workload import capture_items, loop_items, scenario_items


def test_ramp_levels_double_up_to_n():
    assert ramp_levels(1) == [1]
    assert ramp_levels(4) == [1, 2, 4]
    assert ramp_levels(6) == [1, 2, 4, 6]
    with pytest.raises(ValueError, match="at least 1"):
        ramp_levels(0)


def _raw(status=200, error_kind=None):
    return RawExchange("POST", "http://x/v1/messages", {}, b"", status=status, error_kind=error_kind)


def test_classify_names_what_broke():
    assert classify(_raw(), []) is None
    assert classify(_raw(500), []) == "5xx"
    assert classify(_raw(429), []) == "4xx refusal"
    assert classify(_raw(None, "connect"), []) == "connection refused"
    assert classify(_raw(200, "read"), []) == "dropped stream"
    assert classify(_raw(200, "deadline_total"), []) == "deadline exceeded (hang)"
    grammar = registry.violation("anthropic.stream.block_index", "x")
    assert classify(_raw(), [grammar]) == "malformed events"
    incomplete = registry.violation("anthropic.stream.complete", "x")
    assert classify(_raw(), [incomplete]) == "dropped stream"


def test_conformant_engine_passes_the_ramp_with_figures_per_level(engine, make_target):
    t = make_target(engine(max_context=131072))
    # a slice of the default workload (captured requests + whole agent loops) keeps it fast
    items = capture_items(t)[:2] + loop_items(t.wire)[:2]
    assert len(items) == 4 and items[-1].scenario is not None
    rep = run_sync(concurrency_probe(t, 4, items=items))
    acc, thr = rep.acceptance(), rep.throughput()
    assert acc.outcome == "passed", acc.message
    assert {r.name for r in rep.levels[0].records} == {i.name for i in items}
    assert [lvl["level"] for lvl in thr.details["levels"]] == [1, 2, 4]
    for lvl in thr.details["levels"]:
        assert lvl["ok"] == lvl["sent"] > 0
        assert lvl["output_tokens_per_s"] and lvl["ttft_p50_s"] is not None and lvl["ttft_p95_s"] is not None


def test_crash_under_concurrency_breaks_at_the_level_past_the_limit_and_names_the_dead_process(spawned, make_target):
    ep = spawned("crash-under-concurrency", max_context=131072)  # exits past 3 requests in flight
    t = make_target(ep.url, process=ep)
    t0 = time.monotonic()
    rep = run_sync(concurrency_probe(t, 4, items=scenario_items(t)))  # the scenario first turns: fast
    acc = rep.acceptance()
    assert acc.outcome == "failed"
    assert rep.broke_at == 4, acc.message
    assert [s.level for s in rep.levels if s.ok] == [1, 2]
    assert "at concurrency 4" in acc.message and "the engine process is gone" in acc.message
    assert acc.violations[0].check_id == CONCURRENCY_ACCEPTANCE
    assert set(acc.details["what_broke"]) <= {"dropped stream", "connection refused", "5xx"}
    assert time.monotonic() - t0 < 30
    # once dead, the next probe fails at once instead of waiting on deadlines
    again = run_sync(concurrency_probe(t, 4, items=scenario_items(t))).acceptance()
    assert again.outcome == "failed" and "down before the load probe started" in again.message


def test_hang_fails_at_level_one_on_the_deadline_and_stays_bounded(spawned, make_target):
    ep = spawned("hang")
    t = make_target(ep.url, process=ep, first_content=1.5, total=2.5)
    t0 = time.monotonic()
    acc = run_sync(concurrency_probe(t, 4)).acceptance()
    assert acc.outcome == "failed"
    assert "single request" in acc.message and "deadline exceeded (hang)" in acc.message
    assert any(v.check_id.startswith("suite.deadline.") for v in acc.violations)
    assert time.monotonic() - t0 < 10, "fail fast: one deadline, not one per request"


def test_hang_with_pings_fails_on_the_total_deadline(spawned, make_target):
    ep = spawned("hang-with-pings")
    t = make_target(ep.url, process=ep, first_content=30.0, total=2.0)
    acc = run_sync(concurrency_probe(t, 2)).acceptance()
    assert acc.outcome == "failed"
    assert "suite.deadline.total" in {v.check_id for v in acc.violations}


# ----------------------------------------------------------------------------- the client's own ceiling
def _small_ramp(engine, make_target, **kw):
    t = make_target(engine(max_context=131072))
    return run_sync(concurrency_probe(t, 2, items=scenario_items(t)[:2], **kw))


def test_an_undelayed_client_is_not_client_limited_and_says_what_it_used(engine, make_target, capsys):
    rep = _small_ramp(engine, make_target)
    acc, thr = rep.acceptance(), rep.throughput()
    assert acc.outcome == "passed", acc.message
    assert rep.client_limited_levels == [], [s.client.figures() for s in rep.levels]
    for lvl in thr.details["levels"]:
        assert lvl["client_limited"] is False
        assert lvl["client_cpu_percent"] >= 0 and lvl["client_loop_lag_p95_ms"] >= 0
    assert "CLIENT-LIMITED" not in acc.message + thr.message
    props = dict(rep.junit_properties())
    assert props["load_client_limited_levels"] == "none"
    assert props["load_c1_client_limited"] == props["load_c2_client_limited"] == "no"
    err = capsys.readouterr().err
    assert "load: level 1 of 2: concurrency 1" in err and "load: level 2 of 2 (concurrency 2) done" in err


def test_a_client_whose_event_loop_is_delayed_is_flagged_client_limited(engine, make_target):
    # the hook blocks the probe's loop with time.sleep: a slow client, not a CPU hog
    rep = _small_ramp(engine, make_target, client_delay_s=0.15)
    acc, thr = rep.acceptance(), rep.throughput()
    assert rep.client_limited_levels == [1, 2]
    assert all("event-loop lag" in s.client_limited for s in rep.levels)
    assert all(s.client.lag_p95_s >= 0.1 for s in rep.levels)
    assert "CLIENT-LIMITED at concurrency 1" in acc.message and "measure the client" in acc.message
    assert thr.message.count("CLIENT-LIMITED") == 2 and "not the target's" in thr.message
    assert acc.details["client_limited_levels"] == [1, 2]
    props = dict(rep.junit_properties())
    assert props["load_client_limited_levels"] == "1,2" and props["load_c2_client_limited"] == "yes"
