"""The peer gate compares reasons, not only (test, check) pairs: a known failure whose violation
fingerprint changed fails as "same check, new reason"; an unchanged run passes; recording the new
reason (conformance.peers.expect with the run's results) makes the gate pass again."""

from __future__ import annotations

from conformance.core.results import Result
from conformance.peers.expect import merge
from conformance.peers.fingerprint import (
    changed_reasons,
    fixture_fingerprints,
    pair_fingerprints,
    seen_kind,
    violation_fingerprint,
)

TEST = "test_suite.py::test_stop_sequence[claude-code]"
CHECK = "suite.stop_sequence.honoured"
FINDING = {"wrong": "drops the stop sequence", "evidence": "e" * 50, "spec": "s", "layer": "router", "repro": "r"}


def failing(seen, pointer="/stop_sequence", message="stop sequence not reported"):
    violation = {"check_id": CHECK, "message": message, "expected": "'###'", "seen": seen, "severity": "error",
                 "where": {"event_type": "message_delta", "pointer": pointer, "turn": 1}}
    return Result(test_id=TEST, check_id=CHECK, outcome="failed", violations=[violation])


def fixture_from(results):
    written = {"known_failures": [{"test": TEST, "checks": [CHECK]}]}
    return merge(written, {"findings": {CHECK: FINDING}}, pair_fingerprints(results))


def test_the_gate_passes_an_unchanged_run():
    fixture = fixture_from([failing("None", pointer="/delta/stop_sequence")])
    rerun = [failing("None", pointer="/delta/stop_sequence")]
    assert changed_reasons(fixture_fingerprints(fixture["known_failures"]), pair_fingerprints(rerun)) == []


def test_the_gate_fails_on_a_planted_change_of_reason_and_passes_once_it_is_recorded():
    # the pinned router reported `stop_sequence: null`; the upgrade leaves the key out of message_delta
    fixture = fixture_from([failing("None", pointer="/delta/stop_sequence")])
    upgraded = [failing(None, pointer="/delta/stop_sequence", message="message_delta has no stop_sequence key")]
    lines = changed_reasons(fixture_fingerprints(fixture["known_failures"]), pair_fingerprints(upgraded))
    assert len(lines) == 1 and "same check, new reason" in lines[0]
    assert "/delta/stop_sequence null" in lines[0] and "/delta/stop_sequence absent" in lines[0]
    recorded = fixture_from(upgraded)
    assert changed_reasons(fixture_fingerprints(recorded["known_failures"]), pair_fingerprints(upgraded)) == []


def test_a_new_status_is_a_new_reason():
    before = [failing("HTTP 500", pointer="/type", message="error body outside the envelope (HTTP 500)")]
    after = [failing("HTTP 400", pointer="/type", message="error body outside the envelope (HTTP 400)")]
    lines = changed_reasons(fixture_fingerprints(fixture_from(before)["known_failures"]), pair_fingerprints(after))
    assert lines and "status 500" in lines[0] and "status 400" in lines[0]


def test_ids_and_array_positions_do_not_make_a_new_reason():
    a = failing("'msg_abc'", pointer="/content/1/id")
    b = failing("'msg_xyz'", pointer="/content/3/id")
    assert pair_fingerprints([a]) == pair_fingerprints([b])
    assert violation_fingerprint(a.violations[0]) == "/content/*/id string holds 0/1"


def test_an_entry_without_a_fingerprint_gates_only_the_pair():
    fixture = merge({"known_failures": [{"test": TEST, "checks": [CHECK]}]}, {"findings": {CHECK: FINDING}})
    assert "fingerprints" not in fixture["known_failures"][0]
    assert changed_reasons(fixture_fingerprints(fixture["known_failures"]), pair_fingerprints([failing("1")])) == []


def test_a_stop_sequence_run_past_and_one_stopped_at_but_unreported_are_two_reasons():
    # claude-code-router 2.0.0 dropped the stop sequence (the text runs past it); 3.1.1 forwards it
    # (the text stops before it) but still reports end_turn: the same check, the same field.
    expected = "stop_reason 'stop_sequence' and stop_sequence 'plain'"
    ran_past = failing("stop_reason 'end_turn', stop_sequence None, text ' here is a plain answer: one two.'",
                       pointer="/stop_reason")
    stopped = failing("stop_reason 'end_turn', stop_sequence None, text 'Hello! so here is a '", pointer="/stop_reason")
    for r in (ran_past, stopped):
        r.violations[0]["expected"] = expected
    lines = changed_reasons(fixture_fingerprints(fixture_from([ran_past])["known_failures"]), pair_fingerprints([stopped]))
    assert len(lines) == 1 and "holds 2/2" in lines[0] and "holds 1/2" in lines[0]


def test_seen_kinds():
    assert [seen_kind(v) for v in (None, "None", "'x'", "3", "{'a': 1}", "[1]", "keys ['a']", "True", "HTTP 404")] == [
        "absent", "null", "string", "number", "object", "array", "keys", "bool", "status"]
