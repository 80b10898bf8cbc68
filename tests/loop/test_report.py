"""What a loop report says: the turn that broke first, and the results records of every check."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from conformance.core.registry import checks_for, violation
from conformance.loop.report import LoopReport, TurnRecord
from conformance.report.text import ConformanceFailure
from conformance.wire import CHAT


def _report(ended: str, *violations) -> LoopReport:
    report = LoopReport("sum-numbers", CHAT, "opencode", "http://t", "opencode/1.18.33/default", 7, {}, "/tmp/x",
                        ended=ended, violations=list(violations))
    verdict = SimpleNamespace(outcomes={"openai.stream.done": "passed"}, violations=[])
    report.turns = [TurnRecord(1, {}, None, verdict, "tool_calls"), TurnRecord(2, {}, None, verdict, "stop")]
    return report


def test_a_finished_loop_passes_every_loop_check_and_says_so() -> None:
    report = _report("final")
    assert report.passed and report.title().endswith("[openai, as opencode] against http://t: completed in 2 turns")
    records = report.results("t")
    assert [(r.check_id, r.turn) for r in records[:2]] == [("openai.stream.done", 1), ("openai.stream.done", 2)]
    assert [r.check_id for r in records[2:-1]] == [s.id for s in checks_for("loop")]
    assert {r.outcome for r in records} == {"passed"} and records[-1].check_id == "loop.completed"
    assert {r.api for r in records} == {"openai"}


def test_a_broken_loop_names_its_first_broken_turn_and_gives_no_verdict_on_its_end() -> None:
    report = _report("driver", violation("loop.tool_result_paired", "ids", turn=2),
                     violation("loop.thinking_preserved", "changed", turn=3))
    assert report.failed_turn == 2 and report.check_ids == ["loop.thinking_preserved", "loop.tool_result_paired"]
    assert "broke at turn 2 (loop.tool_result_paired) after 2 turn(s)" in report.title()
    outcomes = {r.check_id: r.outcome for r in report.results("t")}
    assert outcomes["loop.tool_result_paired"] == outcomes["loop.thinking_preserved"] == "failed"
    assert outcomes["loop.tool_call_wellformed"] == "passed" and outcomes["loop.completed"] == "failed"
    assert not {"loop.completion_check", "loop.stop_reason", "loop.turn_limit", "loop.exchange_failed"} & set(outcomes)
    with pytest.raises(ConformanceFailure, match="broke at turn 2"):
        report.raise_for_failure()


def test_sandbox_warnings_of_every_turn_reach_the_records_and_the_failure_text() -> None:
    refused = [violation("loop.sandbox_refused", f"Bash: outside_root: path '/etc/passwd' resolves outside (turn {n})",
                         seen="Bash 'cat /etc/passwd'", turn=n) for n in (1, 2)]
    broken = violation("loop.completion_check", "sum.txt: the completion check `equals` does not hold", turn=2)
    report = _report("final", *refused, broken)
    assert report.check_ids == ["loop.completion_check"]  # a warning never fails a loop by itself
    [record] = [r for r in report.results("t") if r.check_id == "loop.sandbox_refused"]
    assert record.outcome == "warning" and len(record.violations) == 2
    assert report.violations_of(record) == refused
    assert report.violations_of(report.results("t")[-1]) == []  # loop.completed sums up the others
    with pytest.raises(ConformanceFailure) as caught:
        report.raise_for_failure()
    text = str(caught.value)
    assert text.count("loop.sandbox_refused") == 2 and "outside_root" in text and "cat /etc/passwd" in text
    assert _report("final", *refused).passed
