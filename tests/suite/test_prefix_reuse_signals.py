"""The prefix-reuse probe (-m prefix_reuse) on each of its signals, against the reference engine
serving that signal alone (conformance/checks/client_wire.py, conformance/engine/metrics.py):

- usage: the default engine (`cache_read_input_tokens`);
- Prometheus counters: `usage-without-cache` (no cached tokens in usage, as vLLM's Anthropic
  route without --enable-prompt-tokens-details) with the engine's /metrics in vLLM's exposition;
- salted TTFT ratio: `usage-without-cache`, no /metrics, stream prefill paced on the tokens the
  cache did not hold;
- none of them: unverifiable with each reason, never a pass.

`prefix-cache-defeated` turns reuse off under each signal: a warning across turns, a note across
conversations, each naming the signal it was read from.
"""

from __future__ import annotations

import pytest

# The engine's modules imported with this module, before pytester's first in-process run: a run
# restores sys.modules but not the package's attributes, so a route module imported again after
# one would bind a second copy of conformance.engine.wire, whose per-request variations the
# server's copy never sets. The server imports every route module (and metrics) at its top.
import conformance.engine.server  # noqa: F401
from conformance.checks import client_wire as rules
from conformance.plugin import SUITE_DIR

SUITE = str(SUITE_DIR / "test_client_wire.py")
SMALL_CONTEXT = 32768
TURNS, CONVERSATIONS = rules.PREFIX_REUSE_TURNS, rules.PREFIX_REUSE_CONVERSATIONS
# Prompt tokens per second of the paced engine: the probe's 13k- and 23k-token prompts prefill in
# 0.5 s and 0.9 s cold, a few ms warm.
PREFILL_RATE = 25000.0
SIGNALS = {
    "usage": ({}, "usage.cache_read_input_tokens"),
    "metrics": ({"variations": ["usage-without-cache"], "metrics": True}, rules.METRIC_HITS),
    "ttft": ({"variations": ["usage-without-cache"], "prefill_tokens_per_s": PREFILL_RATE}, "salted TTFT ratio"),
}


def _reuse(run) -> dict:
    return {r.check_id: r for r in run.results if r.check_id.startswith("client_wire.prefix_reuse.")}


def _run(pytester, suite, faults=(), **engine):
    from conformance.engine.launch import serve_engine_in_thread

    with serve_engine_in_thread(faults=list(faults), max_context=SMALL_CONTEXT, **engine) as url:
        return suite(pytester, url, SUITE, "-m", "prefix_reuse")


@pytest.mark.parametrize("signal", sorted(SIGNALS))
def test_reuse_is_read_from_the_signal_the_engine_serves(pytester, suite, signal):
    engine, name = SIGNALS[signal]
    run = _run(pytester, suite, **engine)
    found = _reuse(run)
    assert set(found) == {TURNS, CONVERSATIONS}, run.outcome.stdout.str()[-2000:]
    for r in found.values():
        assert r.outcome == "passed", (r.check_id, r.message, r.details)
        assert r.details["signal"] == name and name in r.message, r.details
    if signal == "metrics":
        for r in found.values():
            assert r.details["prefix_cache_hits_delta"] > 1000, r.details
    if signal == "ttft":
        for r in found.values():
            assert r.details["ttft_ratio"] <= rules.TTFT_REUSED_BELOW, r.details
            assert "the answer reports no cached tokens" in r.details["tried"][0]
            assert "HTTP 404" in r.details["tried"][1]


@pytest.mark.parametrize("signal", sorted(SIGNALS))
def test_defeated_prefix_cache_is_named_under_each_signal(pytester, suite, signal):
    engine, name = SIGNALS[signal]
    run = _run(pytester, suite, faults=["prefix-cache-defeated"], **engine)
    found = _reuse(run)
    assert run.failed_checks == {}
    assert found[TURNS].outcome == "warning" and found[CONVERSATIONS].outcome == "info", \
        {k: (r.outcome, r.message) for k, r in found.items()}
    for r in found.values():
        assert r.details["signal"] == name and "no prefix reused" in r.message, (r.message, r.details)
    if signal == "metrics":
        for r in found.values():
            assert r.details["prefix_cache_hits_delta"] == 0 < r.details["prefix_cache_queries_delta"]
            assert r.details["reprefilled_tokens"] == r.details["prefix_cache_queries_delta"]
    if signal == "ttft":
        for r in found.values():
            assert r.details["ttft_ratio"] >= rules.TTFT_NOT_REUSED_ABOVE, r.details


def test_no_signal_is_unverifiable_with_each_reason(pytester, suite):
    """No cached tokens in usage, no /metrics, no prefill cost to time: nothing can tell."""
    run = _run(pytester, suite, variations=["usage-without-cache"])
    found = _reuse(run)
    assert set(found) == {TURNS, CONVERSATIONS}
    for r in found.values():
        assert r.outcome == "unverifiable", (r.check_id, r.outcome, r.message)
        assert "no cached tokens" in r.message and "HTTP 404" in r.message, r.message
        assert r.details["signal"] == "salted TTFT ratio" and "too short to tell" in r.message, r.message
    assert run.outcome.ret == 0


def test_metrics_url_option_points_elsewhere_or_off(pytester, suite):
    """--conformance-metrics-url: an engine's /metrics read beside another target, and `off`."""
    from conformance.engine.launch import serve_engine_in_thread

    with serve_engine_in_thread(metrics=True, max_context=SMALL_CONTEXT) as counted, \
            serve_engine_in_thread(variations=["usage-without-cache"], max_context=SMALL_CONTEXT) as target:
        run = suite(pytester, target, SUITE, "-m", "prefix_reuse", "-k", "turns",
                    f"--conformance-metrics-url={counted}/metrics")
        # the counters of an engine that served nothing did not move: not a signal
        assert _reuse(run)[TURNS].outcome == "unverifiable", _reuse(run)[TURNS].message
        assert "did not move" in _reuse(run)[TURNS].message
        run = suite(pytester, target, SUITE, "-m", "prefix_reuse", "-k", "turns", "--conformance-metrics-url=off")
        assert "metrics not read" in _reuse(run)[TURNS].message


def test_prometheus_text_and_answer_fields():
    text = ('# HELP vllm:prefix_cache_hits_total x\n# TYPE vllm:prefix_cache_hits_total counter\n'
            'vllm:prefix_cache_hits_total{engine="0",model_name="m"} 120.0\n'
            'vllm:prefix_cache_hits_total{engine="1",model_name="m"} 5\n'
            'vllm:prefix_cache_hits_created{engine="0",model_name="m"} 1.7e9\n'
            'vllm:prefix_cache_queries_total{engine="0",model_name="m"} 1e3\n')
    assert rules.prometheus_counters(text) == {rules.METRIC_HITS: 125.0, rules.METRIC_QUERIES: 1000.0}
    assert rules.prometheus_counters("llamacpp:prompt_tokens_total 12\n") == {}
    assert rules.reported_cache_read({"input_tokens": 3, "cache_read_input_tokens": 900}) == (
        900, "usage.cache_read_input_tokens")
    assert rules.reported_cache_read({"prompt_tokens": 9, "prompt_tokens_details": {"cached_tokens": 8}}) == (
        8, "usage.prompt_tokens_details.cached_tokens")
    assert rules.reported_cache_read({"input_tokens": 9, "input_tokens_details": {"cached_tokens": 0}}) == (
        0, "usage.input_tokens_details.cached_tokens")
    assert rules.reported_cache_read({"prompt_tokens": 9}, {"timings": {"cache_n": 7, "prompt_n": 2}}) == (
        7, "timings.cache_n")
    assert rules.reported_cache_read({"prompt_tokens": 9, "prompt_tokens_details": None}) == (None, None)


def test_ttft_thresholds_leave_a_margin():
    reused = rules.ttft_signal([0.05, 0.06, 0.04], [0.5, 0.45, 0.55])
    assert reused.reused is True
    assert rules.ttft_signal([0.5, 0.48, 0.52], [0.5, 0.55, 0.47]).reused is False
    # a noisy server: one slow warm try above the median cold one is not a pass
    assert rules.ttft_signal([0.05, 0.06, 0.6], [0.5, 0.45, 0.55]).reused in (None, False)
    assert rules.ttft_signal([0.3, 0.36, 0.31], [0.45, 0.38, 0.46]).reused is None  # ratio ~0.7, overlapping
    # vLLM 0.32.0 on the CPU (a fixed cost per request dilutes the ratio): cleanly separated
    assert rules.ttft_signal([1.1569, 1.0923, 1.1273], [1.7809, 1.6207, 1.6026]).reused is True
    assert rules.ttft_signal([1.0, 1.3, 1.1], [1.6, 1.35, 1.5]).reused is None  # apart, but within the noise
    assert rules.ttft_signal([0.01, 0.01, 0.01], [0.2, 0.2, 0.2]).reused is None  # too short a prefill to time
    none = rules.reuse_outcome(TURNS, "t", None, ["a", "b"])
    assert none.outcome == "unverifiable" and "a; b" in none.note
