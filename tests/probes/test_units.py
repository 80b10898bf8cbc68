"""Probe building blocks without a server: levels, percentiles, haystacks, classification, repeat."""

from __future__ import annotations

import pytest

from conformance.core import registry
from conformance.net.transport import RawExchange
from conformance.probes import repeat as repeat_probe
from conformance.probes.common import ProbeOutcome, Target, percentile, salt_body
from conformance.probes.context import NEEDLE_STATEMENT, haystack, needle_phrase, needle_text
from conformance.probes.load import classify, ramp_levels


def test_ramp_levels_double_up_to_n():
    assert ramp_levels(1) == [1]
    assert ramp_levels(4) == [1, 2, 4]
    assert ramp_levels(6) == [1, 2, 4, 6]
    with pytest.raises(ValueError, match="at least 1"):
        ramp_levels(0)


def test_percentile_nearest_rank():
    assert percentile([], 50) is None
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert percentile([float(i) for i in range(1, 101)], 95) == 95.0


def test_haystack_is_deterministic_and_never_mentions_the_needle():
    a = haystack(600)
    assert a[:300] == haystack(300), "the first n sentences do not depend on how many were asked for"
    assert haystack(600, seed=1) != a
    assert not any("secret" in s.lower() or "passphrase" in s.lower() for s in a)
    assert needle_phrase("x") == needle_phrase("x") != needle_phrase("y")


@pytest.mark.parametrize("depth, index", [(0.0, 0), (0.5, 5), (1.0, 10)])
def test_needle_is_placed_at_its_depth_and_the_question_comes_last(depth, index):
    text = needle_text(10, depth, "amber-1234-willow")
    body, question = text.split("\n\n")
    sentences = [s.strip() + "." for s in body.split(".") if s.strip()]
    assert sentences[index] == NEEDLE_STATEMENT.format(phrase="amber-1234-willow")
    assert "What is the secret passphrase" in question


def test_salt_goes_to_the_start_of_the_system_prompt():
    t = Target("http://127.0.0.1:1/v1", salt="abc")
    assert t.base == "http://127.0.0.1:1"
    body = {"model": "m", "system": [{"type": "text", "text": "You are X."}], "messages": []}
    out = salt_body(body, "anthropic", "tok123")
    assert out["system"][0]["text"].startswith("[conformance-run tok123] You are X.")
    assert body["system"][0]["text"] == "You are X.", "the original is not modified"


def _raw(status=200, error_kind=None):
    return RawExchange("POST", "http://x/v1/messages", {}, b"", status=status, error_kind=error_kind)


def test_classify_names_what_broke():
    assert classify(_raw(), []) is None
    assert classify(_raw(500), []) == "5xx"
    assert classify(_raw(429), []) == "4xx refusal"
    assert classify(_raw(None, "connect"), []) == "connection refused"
    assert classify(_raw(200, "read"), []) == "dropped stream"
    assert classify(_raw(200, "deadline_total"), []) == "deadline exceeded (hang)"
    from conformance.wire.anthropic import grammar as anthropic  # noqa: F401  (registers the stream checks)

    grammar = registry.violation("anthropic.stream.block_index", "x")
    assert classify(_raw(), [grammar]) == "malformed events"
    incomplete = registry.violation("anthropic.stream.complete", "x")
    assert classify(_raw(), [incomplete]) == "dropped stream"


def _o(outcome, msg="m"):
    vs = [registry.violation("load.concurrency_acceptance", msg)] if outcome == "failed" else []
    return ProbeOutcome("load.concurrency_acceptance", outcome, msg, vs)


def test_repeat_passes_only_if_every_run_passes_and_reports_flaky_counts():
    assert repeat_probe.fold("load.concurrency_acceptance", [_o("passed")] * 3).outcome == "passed"
    flaky = repeat_probe.fold("load.concurrency_acceptance", [_o("passed"), _o("failed", "broke at 4"), _o("passed")])
    assert flaky.outcome == "failed"
    assert flaky.message.startswith("flaky: failed 1 of 3 runs, passed 2")
    assert flaky.details["flaky"] is True and flaky.details["failed_runs"] == 1
    solid = repeat_probe.fold("load.concurrency_acceptance", [_o("failed")] * 2)
    assert solid.outcome == "failed" and "all 2 runs" in solid.message


def test_repeat_runs_k_times():
    calls = []

    async def run():
        calls.append(1)
        return [_o("passed")]

    from conformance.probes.common import run_sync

    out = run_sync(repeat_probe.repeat(3, run))
    assert len(calls) == 3 and out[0].outcome == "passed" and out[0].details["repeat"] == 3


class _Config:
    def __init__(self, **opts):
        self.opts = opts

    def getoption(self, name):
        if name not in self.opts:
            raise ValueError(f"no option named {name!r}")
        return self.opts[name]


def test_repeat_refuses_rerun_plugins():
    assert repeat_probe.rerun_conflict(_Config()) is None
    assert repeat_probe.rerun_conflict(_Config(reruns=0)) is None
    assert "--reruns" in repeat_probe.rerun_conflict(_Config(reruns=2))
    repeat_probe.refuse_rerun_plugins(_Config(reruns=2), 1)  # no repeat: nothing to hide
    with pytest.raises(pytest.UsageError, match="hides exactly the flakiness"):
        repeat_probe.refuse_rerun_plugins(_Config(reruns=2), 3)


def test_probe_readers_keep_their_vocabulary():
    from conformance.probes.common import answer_text, input_tokens_of_usage, output_tokens, stop_reason

    cached = {"input_tokens": 10, "cache_creation_input_tokens": 5, "cache_read_input_tokens": 7, "output_tokens": 3}
    assert input_tokens_of_usage(cached, "anthropic") == 22, "cached tokens are reported apart from input_tokens"
    assert input_tokens_of_usage(cached, "openai") == 22, "Anthropic-shaped usage reads the same on any wire"
    assert input_tokens_of_usage({"prompt_tokens": 9, "completion_tokens": 2}, "openai") == 9
    assert input_tokens_of_usage({"prompt_tokens": 9}, "anthropic") is None
    assert input_tokens_of_usage(None, "openai") is None
    assert stop_reason({"finish_reason": "length"}, "openai") == "max_tokens"
    assert stop_reason({"stop_reason": "end_turn"}, "anthropic") == "end_turn"
    assert stop_reason(None, "openai") is None
    assert output_tokens({"usage": {"completion_tokens": 4}}, "openai") == 4
    assert answer_text({"content": [{"type": "thinking", "thinking": "x"}, {"type": "text", "text": "hi"}]},
                       "anthropic") == "hi"


def test_probe_target_holds_the_one_senders_target():
    t = Target("http://127.0.0.1:1/v1/", api="openai", api_key="sk-1")
    assert t.endpoint == "http://127.0.0.1:1/v1/chat/completions"
    assert t.net.url("/tokenize") == "http://127.0.0.1:1/tokenize", "probe paths hang off the server root"
    assert t.headers()["authorization"] == "Bearer sk-1"
    with pytest.raises(ValueError, match="api must be one of"):
        Target("http://h:1", api="gemini")
