"""The probes' shared plumbing without a server (conformance.probes.common): percentiles, salting,
the readers in the probes' vocabulary, the probe target."""

from __future__ import annotations

import pytest

from conformance.checks.load import CONCURRENCY_ACCEPTANCE
from conformance.core import registry
from conformance.core.verdict import Verdict
from conformance.probes.common import (
    ProbeOutcome,
    Target,
    answer_text,
    input_tokens_of_usage,
    output_tokens,
    percentile,
    salt_body,
    stop_reason,
)
from conformance.wire import ANTHROPIC, CHAT


def test_percentile_nearest_rank():
    assert percentile([], 50) is None
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert percentile([float(i) for i in range(1, 101)], 95) == 95.0


def test_salt_goes_to_the_start_of_the_system_prompt():
    t = Target("http://127.0.0.1:1/v1", salt="abc")
    assert t.base == "http://127.0.0.1:1"
    body = {"model": "m", "system": [{"type": "text", "text": "You are X."}], "messages": []}
    out = salt_body(body, ANTHROPIC, "tok123")
    assert out["system"][0]["text"].startswith("[conformance-run tok123] You are X.")
    assert body["system"][0]["text"] == "You are X.", "the original is not modified"


def test_probe_readers_keep_their_vocabulary():
    cached = {"input_tokens": 10, "cache_creation_input_tokens": 5, "cache_read_input_tokens": 7, "output_tokens": 3}
    assert input_tokens_of_usage(cached, ANTHROPIC) == 22, "cached tokens are reported apart from input_tokens"
    assert input_tokens_of_usage(cached, CHAT) == 22, "Anthropic-shaped usage reads the same on any wire"
    assert input_tokens_of_usage({"prompt_tokens": 9, "completion_tokens": 2}, CHAT) == 9
    assert input_tokens_of_usage({"prompt_tokens": 9}, ANTHROPIC) is None
    assert input_tokens_of_usage(None, CHAT) is None
    assert stop_reason({"finish_reason": "length"}, CHAT) == "max_tokens"
    assert stop_reason({"stop_reason": "end_turn"}, ANTHROPIC) == "end_turn"
    assert stop_reason(None, CHAT) is None
    assert output_tokens({"usage": {"completion_tokens": 4}}, CHAT) == 4
    assert answer_text({"content": [{"type": "thinking", "thinking": "x"}, {"type": "text", "text": "hi"}]},
                       ANTHROPIC) == "hi"


def test_probe_target_holds_the_one_senders_target():
    t = Target("http://127.0.0.1:1/v1/", wire=CHAT, api_key="sk-1")
    assert t.endpoint == "http://127.0.0.1:1/v1/chat/completions"
    assert t.net.url("/tokenize") == "http://127.0.0.1:1/tokenize", "probe paths hang off the server root"
    assert t.headers()["authorization"] == "Bearer sk-1"
    assert Target("http://h:1").wire is ANTHROPIC


def test_an_unsalted_copy_is_a_copy():
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    out = salt_body(body, CHAT, "")
    assert out == body and out is not body and out["messages"] is not body["messages"]


def test_a_probe_outcome_refuses_an_unknown_check_id():
    with pytest.raises(KeyError, match="unknown check id"):
        ProbeOutcome("load.no_such_check", "passed", "m")
    outcome = ProbeOutcome(CONCURRENCY_ACCEPTANCE, "failed", "m", [registry.violation(CONCURRENCY_ACCEPTANCE, "m")])
    assert outcome.failed


def test_a_probe_outcome_is_the_one_verdict_with_figures():
    found = registry.violation(CONCURRENCY_ACCEPTANCE, "refused at 4")
    outcome = ProbeOutcome(CONCURRENCY_ACCEPTANCE, "failed", "refused at 4", [found], {"levels": [1, 2, 4]})
    assert isinstance(outcome, Verdict)
    assert (outcome.check_id, outcome.outcome, outcome.violations) == (CONCURRENCY_ACCEPTANCE, "failed", (found,))
    assert outcome.message == outcome.note == "refused at 4"
    outcome.details["target_gone"] = False  # figures are filled in as they are measured
    assert outcome.details == {"levels": [1, 2, 4], "target_gone": False}
    assert ProbeOutcome(CONCURRENCY_ACCEPTANCE, "passed", "ok").details == {}
