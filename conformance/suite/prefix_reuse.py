"""The prefix-reuse pair of test_client_wire.py (-m prefix_reuse): two requests salted alike, and
the first signal that tells whether the second reused the first's prefix.

Rules:
- Both requests of a pair carry this run's salt for that check (`salt`: its own per check id, so
  two checks never share a cold prefix) at the start of the system text after the billing header
  and of the first tool's description (the Dialect's `salted_prefix`): earlier tests never saw
  the prefix, the pair shares it. Across conversations the second gets the first's system text
  after its own billing header (`with_system_of`: one project, two conversations).
- The signals, in order (conformance.checks.client_wire): the answer's usage or timings; the
  Prometheus counters at `--conformance-metrics-url` (default: the engine's, else the target's
  /metrics; `off` reads none), read around the second request; then a salted TTFT ratio, which
  costs 2 x TTFT_TRIES short streamed requests more (thinking off, TTFT_MAX_TOKENS output).
- No signal, or one that cannot tell, is unverifiable with what was tried, never a pass.
"""

from __future__ import annotations

import hashlib
import time

import httpx

from conformance.capture.format import Capture, Exchange
from conformance.checks import client_wire as rules
from conformance.checks.exchange import check_exchange
from conformance.core.bounded_json import parse as parse_json
from conformance.suite.client_wire_requests import BILLING, isolated, send, wire_of
from conformance.wire.dialect import Dialect

TTFT_TRIES = 3
TTFT_MAX_TOKENS = 16
# An engine may publish its counters a moment after the answer.
COUNTER_SETTLE_SECONDS = 0.5


def salt(ctx, mark: str, check_id: str) -> str:
    """This run's salt for one check's pair; `mark` (one character) tells the pair's salt ("w")
    from the cold ones."""
    tag = hashlib.sha256(check_id.encode()).hexdigest()[:6]
    return f"[{mark} run {ctx.settings.run_token or 'prefix-reuse'} {tag}] "


def pair_bodies(ctx, first: Exchange, second: Exchange, salted_with: str, same_system: bool) -> tuple[dict, dict]:
    """Both bodies salted alike, sent whole (see module rules)."""
    bodies = []
    for ex in (first, second):
        wire = wire_of(ex)
        bodies.append(wire.with_stream(wire.salted_prefix(isolated(ctx, ex, wire), salted_with, skip=BILLING), False))
    if same_system:
        bodies[1] = wire_of(second).with_system_of(bodies[1], bodies[0], keep=BILLING)  # already salted
    return bodies[0], bodies[1]


def reported(sent, wire: Dialect) -> tuple[int | None, str | None, int | None]:
    """(cache-read tokens, the field, every prompt token) an answer reports."""
    verdict = check_exchange(sent.raw, sent.request, wire=wire)
    usage = wire.usage(verdict.message) if verdict.message else None
    try:
        answer = parse_json(sent.raw.body())
    except ValueError:
        answer = None
    read, name = rules.reported_cache_read(usage, answer)
    prompt = wire.prompt_tokens(usage) if isinstance(usage, dict) else None
    return read, name, prompt


def metrics_url(ctx) -> str | None:
    """--conformance-metrics-url, else the engine's /metrics (--conformance-engine-url), else the
    target's; `off` reads none."""
    given = ctx.item.config.getoption("conformance_metrics_url", None)
    if given is not None:
        return None if given.strip().lower() in ("off", "none", "") else given
    return (ctx.settings.engine_url or ctx.settings.target).rstrip("/") + "/metrics"


def read_counters(url: str | None) -> tuple[dict | None, str]:
    """The prefix-cache counters at `url`, or None and why not (absent is normal: most servers
    serve no /metrics)."""
    if url is None:
        return None, "metrics not read (--conformance-metrics-url off)"
    try:
        resp = httpx.get(url, timeout=5.0)
    except httpx.HTTPError as exc:
        return None, f"no metrics at {url} ({type(exc).__name__}: {str(exc)[:80]})"
    if resp.status_code != 200:
        return None, f"no metrics at {url} (HTTP {resp.status_code})"
    counters = rules.prometheus_counters(resp.text)
    if len(counters) < 2:
        return None, f"{url} has no {rules.METRIC_HITS} / {rules.METRIC_QUERIES} sample"
    return counters, ""


def _timing_body(wire: Dialect, body: dict) -> dict:
    """A streamed copy that stops soon: only the time to its first content is read."""
    return wire.with_output_cap(wire.with_stream(wire.without_thinking(body), True), TTFT_MAX_TOKENS)


def _ttft(ctx, ex: Exchange, body: dict, note: str) -> tuple[float | None, str]:
    raw = send(ctx, ex, wire_of(ex), body, note).raw
    if not raw.ok:
        return None, f"{note}: " + (f"HTTP {raw.status}" if raw.status is not None else f"no answer ({raw.error_kind})")
    if raw.first_content_at is None:
        return None, f"{note}: no content arrived"
    return raw.first_content_at, ""


def ttft_signal(ctx, first: Exchange, second: Exchange, warm_body: dict, same_system: bool, what: str,
                check_id: str):
    """The second request (its prefix warmed by the first) against fresh salts of equal length,
    interleaved, TTFT_TRIES each. (signal or None, why not)."""
    wire = wire_of(second)
    warm, cold = [], []
    for k in range(TTFT_TRIES):
        t, why = _ttft(ctx, second, _timing_body(wire, warm_body), f"{what}: TTFT try {k + 1}, shared prefix")
        if t is None:
            return None, f"TTFT not measured: {why}"
        warm.append(t)
        _, salted = pair_bodies(ctx, first, second, salt(ctx, "abcdefgh"[k], check_id), same_system)
        t, why = _ttft(ctx, second, _timing_body(wire, salted), f"{what}: TTFT try {k + 1}, salted prefix")
        if t is None:
            return None, f"TTFT not measured: {why}"
        cold.append(t)
    return rules.ttft_signal(warm, cold), ""


def run_pair(ctx, first: tuple[Capture, Exchange], second: tuple[Capture, Exchange], what: str, check_id: str,
             same_system: bool = False) -> None:
    """Send both (salted alike) and judge whether the second reused the first's prefix, by the
    first signal that can tell (rules.reuse_outcome)."""
    (_, ex1), (_, ex2) = first, second
    body1, body2 = pair_bodies(ctx, ex1, ex2, salt(ctx, "w", check_id), same_system)
    sent1 = send(ctx, ex1, wire_of(ex1), body1, f"{what}: request 1 of 2")
    url = metrics_url(ctx)
    before, why_metrics = read_counters(url) if sent1.raw.ok else (None, "")
    sent2 = send(ctx, ex2, wire_of(ex2), body2, f"{what}: request 2 of 2")
    for sent in (sent1, sent2):
        if not sent.raw.ok:
            ctx.judge(sent)
            return
    after = None
    if before is not None:
        after, why_metrics = read_counters(url)
        if after is not None and after.get(rules.METRIC_QUERIES) == before.get(rules.METRIC_QUERIES):
            time.sleep(COUNTER_SETTLE_SECONDS)
            after, why_metrics = read_counters(url)
    tried = []
    read, field_name, prompt = reported(sent2, wire_of(ex2))
    signal = None
    if read is None:
        tried.append("the answer reports no cached tokens (usage, timings)")
    else:
        signal = rules.usage_signal(read, field_name, prompt)
    if signal is None or not signal.reused:  # a reported 0 is checked against the counters
        counted = rules.metrics_signal(before, after, url) if before is not None and after is not None else None
        if counted is not None:
            signal = counted
        elif signal is None:
            tried.append(why_metrics or f"the counters at {url} did not move")
    if signal is None:
        signal, why = ttft_signal(ctx, ex1, ex2, body2, same_system, what, check_id)
        if why:
            tried.append(why)
    outcome = rules.reuse_outcome(check_id, what, signal, tried)
    details = {"signal": signal.name if signal else None, "tried": tried, "prompt_tokens": prompt,
               "cache_read_input_tokens": read if field_name == "usage.cache_read_input_tokens" else None,
               "reused_tokens": signal.reused_tokens if signal else None,
               "reprefilled_tokens": signal.reprefilled_tokens if signal else None,
               **(signal.figures if signal else {})}
    ctx.outcome(outcome.check_id, outcome.outcome, violations=outcome.violations, message=outcome.note,
                details=details)
