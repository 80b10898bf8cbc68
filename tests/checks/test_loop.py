"""The loop checks with their code: how a call is judged well-formed, what each moment of a loop
runs, and how a loop check reads in the results."""

from __future__ import annotations

from types import SimpleNamespace

from conformance.checks.loop import JudgedTurn, LoopEnd, SandboxIncidents, judge, loop_outcome, parse_calls
from conformance.core.registry import checks_for, violation
from conformance.wire import ANTHROPIC, CHAT


def _turn(message: dict, wire=CHAT, *, errors=(), violations=(), offered=("read",), forced=False) -> JudgedTurn:
    verdict = SimpleNamespace(errors=list(errors), violations=list(violations) + list(errors))
    calls = parse_calls(message, wire, list(offered))
    return JudgedTurn(wire, 1, message, verdict, "HTTP 200", wire.stop_reason(message), calls, forced)


def test_the_loop_checks_carry_their_code_in_registry_order() -> None:
    assert [s.id for s in checks_for("loop")] == [
        "loop.exchange_failed", "loop.tool_call_wellformed", "loop.stop_reason", "loop.thinking_preserved",
        "loop.tool_result_paired", "loop.sandbox_refused", "loop.sandbox_limit", "loop.turn_limit",
        "loop.completion_check"]
    assert {s.id: s.judges for s in checks_for("loop")}["loop.completion_check"] == "model"


def test_what_the_sandbox_stopped_is_a_warning_naming_tool_rule_and_command() -> None:
    refused = SimpleNamespace(kind="refused", tool="Bash", subject="cat /etc/passwd", rule="outside_root",
                              message="path '/etc/passwd' resolves to /etc/passwd, outside the working directory")
    limit = SimpleNamespace(kind="limit", tool="Write", subject="/w/big", rule="written_bytes",
                            message="sandbox limit written_bytes reached")
    found = judge(SandboxIncidents(3, [refused, limit]))
    assert [(v.check_id, v.severity, v.where.turn) for v in found] == [
        ("loop.sandbox_refused", "warning", 3), ("loop.sandbox_limit", "warning", 3)]
    assert found[0].message.startswith("Bash: outside_root: ") and "cat /etc/passwd" in found[0].seen
    assert judge(SandboxIncidents(1, [])) == []
    assert loop_outcome("loop.sandbox_refused", found[:1], "exchange") == "warning"
    assert loop_outcome("loop.sandbox_limit", [], "exchange") == "passed"


def test_parse_calls_flags_malformed_calls() -> None:
    msg = {"tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"filePath\": "}},
        {"id": "", "type": "function", "function": {"name": "read", "arguments": "{}"}},
        {"id": "c3", "type": "function", "function": {"name": "rm", "arguments": "{}"}},
        {"id": "c4", "type": "function", "function": {"name": "read", "arguments": "[1]"}},
        {"id": "c5", "type": "function", "function": {"name": "read", "arguments": "{\"filePath\":\"a\"}"}},
    ]}
    calls = parse_calls(msg, CHAT, ["read"])
    assert [bool(c.problem) for c in calls] == [True, True, True, True, False]
    assert "not JSON" in calls[0].problem and "no id" in calls[1].problem and "not offered" in calls[2].problem


def test_a_malformed_call_is_judged_and_the_stop_reason_is_not() -> None:
    msg = {"finish_reason": "length", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "rm", "arguments": "{}"}}]}
    assert [v.check_id for v in judge(_turn(msg))] == ["loop.tool_call_wellformed"]


def test_the_stop_reason_of_a_final_turn_and_of_a_turn_with_calls() -> None:
    assert judge(_turn({"content": "done", "finish_reason": "stop"})) == []
    [final] = judge(_turn({"content": "cut", "finish_reason": "length"}))
    assert final.check_id == "loop.stop_reason" and "final assistant turn ended with 'length'" in final.message
    calls = {"tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}]}
    assert judge(_turn({**calls, "finish_reason": "tool_calls"})) == []
    [wrong] = judge(_turn({**calls, "finish_reason": "stop"}))
    assert "called 1 tool(s) but ended with 'stop'" in wrong.message
    # a turn forced to call a tool may end with the wire's forced_tool stops (chat: `stop`)
    assert CHAT.stops.forced_tool == ("stop",)
    assert judge(_turn({**calls, "finish_reason": "stop"}, forced=True)) == []
    forced = {"content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}], "stop_reason": "end_turn"}
    assert [v.check_id for v in judge(_turn(forced, ANTHROPIC, offered=("Read",), forced=True))] == [
        "loop.stop_reason"]  # Anthropic has no such stop


def test_an_unusable_exchange_is_named_by_its_own_checks_or_by_exchange_failed() -> None:
    [nothing] = judge(_turn(None))
    assert nothing.check_id == "loop.exchange_failed" and nothing.seen == "HTTP 200"
    error = violation("suite.request.accepted", "refused", turn=1)
    assert judge(_turn({"content": "x", "finish_reason": "stop"}, errors=[error])) == []


def test_the_end_of_a_loop() -> None:
    failure = SimpleNamespace(file="sum.txt", rule="equals", expected="'6'", seen="(no such file)")
    ended = judge(LoopEnd("turn_limit", 8, 8, "#1 ...", lambda: [failure]))
    assert [v.check_id for v in ended] == ["loop.turn_limit", "loop.completion_check"]
    assert judge(LoopEnd("final", 8, 3, "", lambda: [])) == []
    assert judge(LoopEnd("exchange", 8, 1, "", lambda: [failure])) == []  # a broken loop's task is not judged


def test_a_loop_check_in_the_results() -> None:
    err = violation("loop.stop_reason", "cut", turn=1)
    assert loop_outcome("loop.stop_reason", [err], "exchange") == "failed"
    assert loop_outcome("loop.stop_reason", [], "exchange") is None  # says how the loop ended: no end, no verdict
    assert loop_outcome("loop.tool_result_paired", [], "exchange") == "passed"  # judged on every turn
    assert loop_outcome("loop.completion_check", [], "final") == "passed"
