"""Context-edge verdicts (conformance.probes.context) against the reference engine (max context
4096): each fault caught by its own check, and nothing else; the conformant engine passes every one."""

from __future__ import annotations

import time

import pytest

from conformance.checks.context import (
    ADVERTISED_MATCHES,
    NEEDLE_DEPTH0,
    NEEDLE_RECALL,
    OVER_LIMIT_REFUSED,
    USABLE_AGENT_CONTEXT,
)
from conformance.probes import context as context_probe
from conformance.probes.common import TokenCounter, run_sync
from conformance.probes.limit import discover_limit
from conformance.probes.sizing import DEPTHS, ContextProbe
from conformance.wire import CHAT

FRACTIONS = (0.5, 0.99)  # fewer lengths than the default keep the self-tests fast


async def _all(t, fractions=FRACTIONS, depths=DEPTHS):
    info = await discover_limit(t)
    probe = ContextProbe(t, info, refuse_within=5.0)
    points = await probe.needle_sweep(fractions, depths)
    out = context_probe.needle_outcomes(points, info)
    out.append(await context_probe.over_limit_outcome(probe))
    out.append(await context_probe.advertised_outcome(probe))
    out.append(await context_probe.usable_context_outcome(probe))
    return info, points, {o.check_id: o for o in out}


def test_conformant_engine_passes_every_context_check_with_lengths_from_its_counts(engine, make_target):
    t = make_target(engine())
    info, points, out = run_sync(_all(t))
    assert info.advertised == 4096 and info.source == "/v1/models max_model_len"
    assert {k: o.outcome for k, o in out.items()} == {
        NEEDLE_RECALL: "info", NEEDLE_DEPTH0: "passed", OVER_LIMIT_REFUSED: "passed",
        ADVERTISED_MATCHES: "passed", USABLE_AGENT_CONTEXT: "info"}
    assert len(points) == len(FRACTIONS) * len(DEPTHS) and all(p.outcome == "hit" for p in points)
    for p in points:  # within ±2% of the intended fraction, never over the limit
        assert abs(p.counted - p.intended) <= 0.02 * p.intended, p.row()
        assert abs(p.counted - p.fraction * 4096) <= 0.02 * p.fraction * 4096, p.row()
        assert p.counted < 4096
        assert p.usage_tokens == p.counted, "the count is of the exact request sent (usage agrees)"
    assert "refused with HTTP 400" in out[OVER_LIMIT_REFUSED].message
    assert out[USABLE_AGENT_CONTEXT].details["counts_input_plus_max_tokens"] is False


def test_context_truncated_fails_needle_depth0_only(engine, make_target):
    _, _, out = run_sync(_all(make_target(engine("context-truncated")), (0.99,), (0.0, 0.5)))
    assert out[NEEDLE_DEPTH0].outcome == "failed"
    assert "needle at depth 0 lost at" in out[NEEDLE_DEPTH0].message
    assert [o for o in out.values() if o.failed] == [out[NEEDLE_DEPTH0]]


def test_over_limit_not_refused_fails_over_limit_refused_only(engine, make_target):
    _, _, out = run_sync(_all(make_target(engine("over-limit-not-refused")), (0.99,), (0.0, 0.5)))
    o = out[OVER_LIMIT_REFUSED]
    assert o.outcome == "failed" and "silently truncated" in o.message and "usage reports 4095" in o.message
    assert [x for x in out.values() if x.failed] == [o]


def test_advertised_context_wrong_fails_advertised_matches_only(engine, make_target):
    info, _, out = run_sync(_all(make_target(engine("advertised-context-wrong")), (0.99,), (0.0, 0.5)))
    assert info.advertised == 8192
    o = out[ADVERTISED_MATCHES]
    assert o.outcome == "failed" and "advertises 8192" in o.message
    assert 0.9 * 4096 <= o.details["accepted_about"] <= 4096
    assert [x for x in out.values() if x.failed] == [o]
    assert out[NEEDLE_DEPTH0].outcome == "unverifiable", "refusals are not recall misses"


def test_an_option_limit_wins_over_the_advertised_one(engine, make_target):
    t = make_target(engine())
    info = run_sync(discover_limit(t, 2000))
    assert info.limit == 2000 and info.advertised == 4096
    o = run_sync(context_probe.over_limit_outcome(ContextProbe(t, info)))
    # 2200 tokens are over the option's limit but within the engine's: reported, not a truncation claim
    assert o.outcome == "unverifiable" and "not the one enforced" in o.message


def test_hang_over_the_limit_fails_on_time(spawned, make_target):
    ep = spawned("hang")
    t = make_target(ep.url, process=ep, first_content=1.0, total=2.0)
    info = run_sync(discover_limit(t))
    t0 = time.monotonic()
    o = run_sync(context_probe.over_limit_outcome(ContextProbe(t, info, refuse_within=0.5)))
    assert o.outcome == "failed" and "the target hung" in o.message
    assert time.monotonic() - t0 < 8


def test_lengths_come_from_usage_when_count_tokens_is_missing(engine, make_target):
    t = make_target(engine("count-tokens-missing"))
    counter = TokenCounter(t)
    info = run_sync(discover_limit(t))
    probe = ContextProbe(t, info, counter=counter)
    points = run_sync(probe.needle_sweep((0.9,), (0.0,)))
    assert counter.method == "usage" and "count_tokens" in counter.tried
    assert points[0].outcome == "hit" and abs(points[0].counted - 0.9 * 4096) <= 0.02 * 0.9 * 4096


@pytest.mark.parametrize("wire", [CHAT], ids=lambda w: w.name)
def test_openai_wire_needle_and_refusal(engine, make_target, wire):
    t = make_target(engine(), wire=wire)
    info = run_sync(discover_limit(t))
    probe = ContextProbe(t, info)
    points = run_sync(probe.needle_sweep((0.99,), (0.0, 1.0)))
    assert [p.outcome for p in points] == ["hit", "hit"]
    assert run_sync(context_probe.over_limit_outcome(probe)).outcome == "passed"


def test_truncating_target_without_count_tokens_is_sized_by_extrapolation(engine, make_target):
    # usage is the only count, and above the limit it is the truncated one: the probe must not chase it
    t = make_target(engine("over-limit-not-refused", "count-tokens-missing"))
    info = run_sync(discover_limit(t))
    o = run_sync(context_probe.over_limit_outcome(ContextProbe(t, info)))
    assert o.outcome == "failed" and "silently truncated" in o.message
    assert o.details["tokens_extrapolated"] is True and "about" in o.message
    assert o.details["sent_tokens"] > 4096


def test_client_max_tokens_come_from_the_profiles_then_the_captures(tmp_path):
    """Claude Code's documented values are its profile's; opencode's come from its captures alone,
    and without one it is listed as unknown (None), not guessed."""
    assert context_probe.client_max_tokens(tmp_path) == {
        "claude-code": 64000, "claude-code (local model name)": 32000, "opencode": None, "qwen-code": 32000}
    bundled = context_probe.client_max_tokens()
    assert "opencode" not in bundled
    assert any(label.startswith("opencode (captured, max_tokens ") for label in bundled)
