"""A load level split across sender processes (conformance.probes.senders): the records a split
level gives are the ones the probe's own process gives, a fault is named the same, and a level
that breaks stops in every sender."""

from __future__ import annotations

import pytest

from conformance.probes import senders
from conformance.probes.common import build_request, run_sync
from conformance.probes.load import run_level
from conformance.probes.workload import WorkItem, capture_items, loop_items

LEVEL = 8
ROUNDS = senders.SPLIT_FROM // LEVEL  # exactly the size from which a level is split


def _outcome(stats):
    return [(r.index, r.name, r.kind, sorted(v.check_id for v in r.violations)) for r in stats.records]


def _unsplit(monkeypatch, run):
    with monkeypatch.context() as m:
        m.setattr(senders, "SPLIT_FROM", 10**9)
        return run()


@pytest.mark.parametrize("faults, failing_check", [((), None),
                                                   (("stop-sequence-missing",), "anthropic.stream.stop_sequence_present")])
def test_a_split_level_gives_the_records_of_one_process_and_names_the_fault(engine, make_target, monkeypatch,
                                                                            faults, failing_check):
    t = make_target(engine(*faults, max_context=131072))
    items = [WorkItem("short", build_request(t, "Say hello.", max_tokens=16))]
    if not faults:
        items += capture_items(t)[:1] + loop_items(t.wire)[:1]  # a captured request and a whole loop travel too

    def run():
        return run_sync(run_level(t, items, LEVEL, rounds=ROUNDS, progress=lambda line: None))

    split = run()
    assert senders.running(), "a level of SPLIT_FROM requests is split across sender processes"
    one = _unsplit(monkeypatch, run)
    if failing_check is None:
        assert split.ok, [r.violations for r in split.failures][:2]
        assert len(split.records) == LEVEL * ROUNDS
        assert _outcome(split) == _outcome(one)
        assert split.client.cpu_s > 0 and split.client.lags, "every sender's monitor is merged in"
    else:
        assert not split.ok and not one.ok
        assert failing_check in {v.check_id for r in split.failures for v in r.violations}
        # fail fast: the senders share the flag, so the level stops short of all its requests in both
        assert split.skipped > 0 and one.skipped > 0


def test_a_split_level_against_a_crashing_engine_stops_and_names_the_dead_process(spawned, make_target):
    ep = spawned("crash-under-concurrency", max_context=131072)  # exits past 3 requests in flight
    t = make_target(ep.url, process=ep)
    items = [WorkItem("short", build_request(t, "Say hello.", max_tokens=16))]
    stats = run_sync(run_level(t, items, LEVEL, rounds=ROUNDS, progress=lambda line: None))
    assert not stats.ok and stats.skipped > 0
    assert set(stats.what_broke()) <= {"connection refused", "dropped stream", "5xx"}
    assert stats.gone and "exited" in stats.gone, stats.gone
