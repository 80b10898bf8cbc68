"""identity.model_matches: which model answered, and when that cannot be told."""

from __future__ import annotations

from conformance.checks.identity import judge_model


def test_model_identity_outcomes():
    assert judge_model("qwen3-8b", "qwen3-8b", None)[0] == "passed"
    assert judge_model("gpt-4o-2024-08-06", "gpt-4o", None)[0] == "passed"
    # a router that only echoes the alias it was sent cannot prove which model answered
    outcome, viol, note = judge_model("claude-sonnet", "claude-sonnet", "qwen3-8b")
    assert outcome == "unverifiable" and viol is None and "echoes" in note
    # LiteLLM answers with the alias it was sent whatever served it: a match proves nothing
    assert judge_model("claude-sonnet", "claude-sonnet", None, echoes_alias=True)[0] == "unverifiable"
    assert judge_model("other", "claude-sonnet", None, echoes_alias=True)[0] == "failed"
    outcome, viol, _ = judge_model("small-model", "big-model", None)
    assert outcome == "failed" and viol.check_id == "identity.model_matches"
