"""suite.stop_reason.cap_reported: a natural stop with the output cap used up is a warning; a cut
reported as cut, an answer under the cap, tool stops and answers without usage are not."""

from __future__ import annotations

import pytest

from conformance.checks.stop_reason import CAP_REPORTED, cap_outcome
from conformance.wire import ANTHROPIC, CHAT


def a_msg(stop, used):
    return {"role": "assistant", "content": [{"type": "text", "text": "x"}], "stop_reason": stop,
            "usage": {"input_tokens": 5, "output_tokens": used}}


def o_msg(stop, used):
    return {"role": "assistant", "content": "x", "finish_reason": stop,
            "usage": {"prompt_tokens": 5, "completion_tokens": used, "total_tokens": used + 5}}


@pytest.mark.parametrize("wire,message,request_,outcome", [
    # LiteLLM over llama.cpp's /v1/responses: 160 of 160 tokens, end_turn
    (ANTHROPIC, a_msg("end_turn", 160), {"max_tokens": 160}, "warning"),
    (ANTHROPIC, a_msg("max_tokens", 160), {"max_tokens": 160}, "passed"),
    (ANTHROPIC, a_msg("end_turn", 40), {"max_tokens": 160}, "passed"),
    (CHAT, o_msg("stop", 80), {"max_tokens": 80}, "warning"),
    (CHAT, o_msg("stop", 80), {"max_completion_tokens": 80, "max_tokens": 4000}, "warning"),
    (CHAT, o_msg("length", 80), {"max_tokens": 80}, "passed"),
    (CHAT, o_msg("stop", 12), {"max_completion_tokens": 80}, "passed"),
])
def test_verdicts(wire, message, request_, outcome):
    judged = cap_outcome(message, request_, wire, turn=2)
    assert judged.check_id == CAP_REPORTED and judged.outcome == outcome
    violations = judged.violations
    assert [v.check_id for v in violations] == ([CAP_REPORTED] if outcome == "warning" else [])
    assert all(v.severity == "warning" and not v.is_error and v.where.turn == 2 for v in violations)


@pytest.mark.parametrize("wire,message,request_", [
    (ANTHROPIC, a_msg("tool_use", 160), {"max_tokens": 160}),            # tool stops are not judged
    (ANTHROPIC, a_msg("stop_sequence", 160), {"max_tokens": 160}),
    (CHAT, o_msg("tool_calls", 80), {"max_tokens": 80}),
    (ANTHROPIC, dict(a_msg("end_turn", 160), usage=None), {"max_tokens": 160}),  # no usage
    (CHAT, o_msg("stop", 80), {}),                                      # no cap in the request
    (ANTHROPIC, None, {"max_tokens": 160}),
])
def test_not_judged(wire, message, request_):
    assert cap_outcome(message, request_, wire) is None
