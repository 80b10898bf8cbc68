"""Context edge verdicts: the limit, needle recall near it, refusal above it, advertised vs accepted.

Rules:
- The limit is the one discovery's (`conformance.probes.limit`): the option, else what the target
  advertises, else "unknown" and said so (`context.limit_known`).
- Requests are sized with the target's own counts (`conformance.probes.sizing`); the haystack and
  needle are `conformance.probes.haystack`'s.
- A miss at depth 0 at a length near the limit (>= 90% by default) fails `context.needle_depth0`:
  silent truncation drops the start first. Other misses are a model metric
  (`context.needle_recall`, info).
- Above the limit (110% by default): a fast 4xx with a message passes `context.over_limit_refused`;
  2xx (silent truncation: shown by usage and a lost depth-0 needle), 5xx, a hang, a dropped
  connection or a dead engine fail it.
- Advertised vs accepted (`context.advertised_matches`): 99% of the advertised limit must be
  accepted and 110% refused; otherwise the accepted limit is located (bisection down, doubling up,
  bounded) and reported next to the advertised one.
- Usable agent context: whether the target counts input + max_tokens against the limit (a
  request whose input fits but whose input + max_tokens does not), and so how much context is left
  for each client given the max_tokens it sends.
- Check ids are the constants of `conformance.checks.context`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conformance.capture.corpus import iter_capture_files
from conformance.capture.format import load_capture
from conformance.checks.context import (
    ADVERTISED_MATCHES,
    LIMIT_KNOWN,
    NEEDLE_DEPTH0,
    NEEDLE_RECALL,
    OVER_LIMIT_REFUSED,
    USABLE_AGENT_CONTEXT,
)
from conformance.clients import PROFILES
from conformance.core import registry
from conformance.core.paths import captured_dir
from conformance.net.transport import Deadlines, RawExchange
from conformance.probes.common import (
    ProbeOutcome,
    build_request,
    describe_exchange,
    error_envelope_violations,
    error_message,
    send,
    stop_reason,
    target_gone,
)
from conformance.probes.haystack import needle_phrase
from conformance.probes.limit import LimitInfo
from conformance.probes.sizing import SYSTEM, TOLERANCE, ContextProbe, NeedlePoint

NEAR_LIMIT = 0.9
OVER_LIMIT = 1.10


def needle_outcomes(points: list[NeedlePoint], limit: LimitInfo, near: float = NEAR_LIMIT) -> list[ProbeOutcome]:
    rows = [p.row() for p in points]
    figures = {"limit": limit.limit, "limit_source": limit.describe(), "points": rows,
               "target_gone": next((p.gone for p in points if p.gone), None)}
    total = [p for p in points if p.outcome in ("hit", "miss")]
    hits = [p for p in total if p.outcome == "hit"]
    by_depth = {}
    for d in sorted({p.depth for p in points}):
        at = [p for p in total if p.depth == d]
        by_depth[f"{round(d * 100)}%"] = f"{sum(p.outcome == 'hit' for p in at)}/{len(at)}"
    figures["recall_by_depth"] = by_depth
    off = [p for p in points if p.usage_tokens and abs(p.usage_tokens - p.counted) > TOLERANCE * p.counted]
    recall = ProbeOutcome(
        NEEDLE_RECALL, "info",
        f"needle recall {len(hits)}/{len(total)} ({', '.join(f'{k}: {v}' for k, v in by_depth.items())}); "
        f"lengths {sorted({p.counted for p in points})} tokens of {limit.limit}"
        + (f"; {len(off)} responses report input usage off the count by more than 2%" if off else ""),
        [], figures)

    near_d0 = [p for p in points if p.depth == 0.0 and p.fraction >= near]
    misses = [p for p in near_d0 if p.outcome == "miss"]
    broken = [p for p in points if p.outcome == "failed"]  # the sweep stops at the first one
    judged = [p for p in near_d0 if p.outcome in ("hit", "miss")]
    if misses or broken:
        violations = []
        for p in misses:
            violations.append(registry.violation(
                NEEDLE_DEPTH0,
                f"needle at depth 0 lost at {round(p.fraction * 100)}% of the limit ({p.counted} of {limit.limit} tokens): "
                "the start of the prompt was dropped",
                expected=f"the answer contains {p.phrase!r}", seen=repr(p.answer[:200])
                + (f"; response usage reports {p.usage_tokens} input tokens" if p.usage_tokens is not None else "")))
        for p in broken:
            violations.append(registry.violation(
                NEEDLE_DEPTH0,
                f"the needle request at {round(p.fraction * 100)}% of the limit ({p.counted} tokens), depth "
                f"{round(p.depth * 100)}% failed: {p.detail}",
                expected="an answer", seen=p.detail))
        return [recall, ProbeOutcome(NEEDLE_DEPTH0, "failed", violations[0].message, violations, figures)]
    if not judged:
        why = "; ".join(f"{round(p.fraction * 100)}%: {p.outcome} {p.detail}" for p in near_d0) or "no near-limit length ran"
        return [recall, ProbeOutcome(NEEDLE_DEPTH0, "unverifiable",
                                     f"no depth-0 answer near the limit to judge ({why})", [], figures)]
    return [recall, ProbeOutcome(
        NEEDLE_DEPTH0, "passed",
        f"needle at depth 0 recalled at {', '.join(f'{round(p.fraction * 100)}% ({p.counted} tokens)' for p in judged)} "
        f"of the limit {limit.limit}", [], figures)]


async def over_limit_outcome(probe: ContextProbe, factor: float = OVER_LIMIT) -> ProbeOutcome:
    limit = probe.limit.limit
    if limit is None:
        return ProbeOutcome(OVER_LIMIT_REFUSED, "unverifiable",
                            "the context limit is unknown: pass --conformance-context-limit")
    wire = probe.target.wire
    a = await probe.over(factor)
    raw = a.raw
    figures = {"limit": limit, "sent_tokens": a.tokens, "status": raw.status, "elapsed_s": round(raw.elapsed, 3),
               "error_kind": raw.error_kind}
    about = "about " if a.extrapolated else ""
    head = f"a prompt of {about}{a.tokens} tokens ({round(factor * 100)}% of the limit {limit})"
    figures["tokens_extrapolated"] = a.extrapolated
    if a.refused:
        text = error_message(raw)
        figures["message"] = text[:300]
        env = error_envelope_violations(raw, wire)
        if raw.elapsed > probe.refuse_within:
            v = registry.violation(OVER_LIMIT_REFUSED,
                                   f"{head} was refused, but only after {raw.elapsed:.1f}s",
                                   expected=f"a 4xx within {probe.refuse_within:g}s", seen=f"HTTP {raw.status} after {raw.elapsed:.1f}s")
            return ProbeOutcome(OVER_LIMIT_REFUSED, "failed", v.message, [v, *env], figures)
        if not text.strip():
            v = registry.violation(OVER_LIMIT_REFUSED, f"{head} was refused with HTTP {raw.status} but no message",
                                   expected="a 4xx whose body says why", seen=raw.body()[:200].decode("utf-8", "replace"))
            return ProbeOutcome(OVER_LIMIT_REFUSED, "failed", v.message, [v, *env], figures)
        return ProbeOutcome(OVER_LIMIT_REFUSED, "passed",
                            f"{head} refused with HTTP {raw.status} in {raw.elapsed:.2f}s: {text[:160]}", env, figures)
    if a.accepted:
        usage = a.usage_tokens(wire)
        recalled = a.recalled(wire)
        cut = not recalled and stop_reason(a.message, wire) == "max_tokens"
        figures.update(usage_input_tokens=usage, depth0_needle_recalled=recalled, answer_cut_by_max_tokens=cut)
        truncated = (usage is not None and usage < a.tokens * (1 - TOLERANCE)) or (not recalled and not cut)
        if truncated:
            evidence = []
            if usage is not None:
                evidence.append(f"usage reports {usage} input tokens")
            evidence.append("the needle at depth 0 was " + (
                "recalled" if recalled else "not answered (the answer was cut by max_tokens)" if cut else "lost"))
            v = registry.violation(OVER_LIMIT_REFUSED,
                                   f"{head} was accepted and silently truncated ({'; '.join(evidence)})",
                                   expected="a 4xx refusal naming the limit", seen=f"HTTP {raw.status}; {'; '.join(evidence)}")
            return ProbeOutcome(OVER_LIMIT_REFUSED, "failed", v.message, [v], figures)
        v = registry.violation(OVER_LIMIT_REFUSED,
                               f"{head} was accepted and fully processed: the limit {limit} is not the one enforced",
                               expected="a 4xx refusal above the limit", seen=f"HTTP {raw.status}, usage {usage}, needle recalled",
                               severity="warning")
        return ProbeOutcome(OVER_LIMIT_REFUSED, "unverifiable",
                            v.message + " (see context.advertised_matches)", [v], figures)
    gone = await target_gone(probe.target)
    what = {"deadline_first_byte": "hung", "deadline_first_content": "hung", "deadline_total": "hung",
            "read": "dropped the connection", "connect": "refused the connection"}.get(raw.error_kind or "", "")
    if not what:
        what = f"answered HTTP {raw.status}" if raw.status and raw.status >= 500 else describe_exchange(raw)
    v = registry.violation(OVER_LIMIT_REFUSED, f"{head}: the target {what}" + (f"; {gone}" if gone else ""),
                           expected=f"a 4xx within {probe.refuse_within:g}s", seen=describe_exchange(raw))
    figures["target_gone"] = gone
    return ProbeOutcome(OVER_LIMIT_REFUSED, "failed", v.message, [v], figures)


async def advertised_outcome(probe: ContextProbe, *, max_factor: float = 4.0) -> ProbeOutcome:
    info = probe.limit
    if info.advertised is None:
        return ProbeOutcome(ADVERTISED_MATCHES, "unverifiable",
                            "the target advertises no context length (neither /v1/models max_model_len nor /props n_ctx)",
                            [], {"advertised": None})
    wire = probe.target.wire
    adv = info.advertised
    figures: dict[str, Any] = {"advertised": adv, "source": info.source, "configured": info.configured}
    # the attempts below are sized against the advertised value, whatever the option says
    adv_probe = probe if info.limit == adv else ContextProbe(probe.target, LimitInfo(advertised=adv, source=info.source),
                                                             counter=probe.counter, answer_tokens=probe.answer_tokens,
                                                             refuse_within=probe.refuse_within, seed=probe.seed,
                                                             sink=probe.sink)
    below = await adv_probe.under(0.99)
    figures["at_99pct"] = {"tokens": below.tokens, "status": below.raw.status, "error": below.raw.error_kind}
    if not below.accepted:
        if not below.refused:
            return ProbeOutcome(ADVERTISED_MATCHES, "unverifiable",
                                f"a prompt at 99% of the advertised {adv} failed ({describe_exchange(below.raw)})",
                                [], figures)
        # locate the accepted limit below the advertised one (bisection on fractions, bounded)
        lo, hi = 0.0, 0.99
        for _ in range(5):
            mid = (lo + hi) / 2
            a = await adv_probe.under(round(mid, 4))
            if a.accepted:
                lo = mid
            elif a.refused:
                hi = mid
            else:
                break
        accepted = round(lo * adv)
        figures["accepted_about"] = accepted
        v = registry.violation(
            ADVERTISED_MATCHES,
            f"advertises {adv} tokens ({info.source}) but refuses a prompt of {below.tokens} tokens (99% of it); "
            f"it accepts about {accepted} tokens at most",
            expected=f"prompts up to {adv} tokens accepted", seen=f"HTTP {below.raw.status}: {error_message(below.raw)[:200]}")
        return ProbeOutcome(ADVERTISED_MATCHES, "failed", v.message, [v], figures)
    above = await adv_probe.over(OVER_LIMIT)
    figures["at_110pct"] = {"tokens": above.tokens, "status": above.raw.status, "error": above.raw.error_kind}
    if above.refused or not above.accepted:
        return ProbeOutcome(ADVERTISED_MATCHES, "passed",
                            f"advertised {adv} ({info.source}): {below.tokens} tokens accepted, "
                            f"{above.tokens} " + ("refused" if above.refused else f"not accepted ({describe_exchange(above.raw)})"),
                            [], figures)
    usage = above.usage_tokens(wire)
    if (usage is not None and usage < above.tokens * (1 - TOLERANCE)) or not above.recalled(wire):
        return ProbeOutcome(ADVERTISED_MATCHES, "passed",
                            f"advertised {adv} ({info.source}): {below.tokens} tokens accepted; above it the target "
                            "truncates instead of refusing (judged by context.over_limit_refused)", [], figures)
    # fully processed above the advertised limit: find how far it goes (bounded)
    accepted_at = above.tokens
    factor = OVER_LIMIT
    while factor * 2 <= max_factor:
        factor *= 2
        a = await adv_probe.over(factor)
        if not a.accepted:
            break
        accepted_at = a.tokens
    figures["accepted_at_least"] = accepted_at
    v = registry.violation(
        ADVERTISED_MATCHES,
        f"advertises {adv} tokens ({info.source}) but accepts and processes {accepted_at} tokens",
        expected=f"prompts above {adv} tokens refused", seen=f"{accepted_at} tokens accepted, usage {usage}")
    return ProbeOutcome(ADVERTISED_MATCHES, "failed", v.message, [v], figures)


def client_max_tokens(captures_root: Path | None = None) -> dict[str, int | None]:
    """The max_tokens each client sends, by label: its profile's documented values, then its
    captured ones; a client whose profile leaves the value to its captures, with none captured,
    is listed as None (said so, not guessed)."""
    captured = captured_max_tokens(captures_root)
    documented: dict[str, int | None] = {}
    unknown: dict[str, int | None] = {}
    for client in PROFILES.values():
        for when, value in client.max_tokens.items():
            label = f"{client.name} ({when})" if when else client.name
            if value is not None:
                documented[label] = value
            elif client.name not in captured:
                unknown[label] = None
    found = {f"{client} (captured, max_tokens {v})": v for client, values in captured.items() for v in values}
    return {**documented, **found, **unknown}


def captured_max_tokens(root: Path | None = None) -> dict[str, list[int]]:
    """max_tokens values the captured clients sent, per client name."""
    out: dict[str, set[int]] = {}
    try:
        root = root or captured_dir()
    except FileNotFoundError:
        return {}
    for path in iter_capture_files(root):
        try:
            cap = load_capture(path)
        except ValueError:
            continue
        for ex in cap.main_exchanges():
            body = ex.request.body
            if isinstance(body, dict) and isinstance(body.get("max_tokens"), int):
                out.setdefault(cap.client, set()).add(body["max_tokens"])
    return {k: sorted(v) for k, v in out.items()}


async def usable_context_outcome(probe: ContextProbe, *, captures_root: Path | None = None) -> ProbeOutcome:
    limit = probe.limit.limit
    if limit is None:
        return ProbeOutcome(USABLE_AGENT_CONTEXT, "unverifiable", "the context limit is unknown")
    target = probe.target
    # input at half the limit, max_tokens 60% of it: fits alone, not together
    half = await probe.size(round(0.5 * limit), ceiling=limit - 1)
    body = probe.request(half.n_sentences, 0.0, needle_phrase("usable"), round(0.6 * limit))
    # Only acceptance matters: a 2xx status is the answer, the generation need not be waited for
    # (a real model may write all 60% of the limit), so the deadline is short and a 2xx that runs
    # into it still counts as accepted.
    quick = Deadlines(connect=target.deadlines.connect, first_content=max(probe.refuse_within * 3, 5.0),
                      total=max(probe.refuse_within * 3, 5.0))

    def accepted(r: RawExchange) -> bool:
        return r.status is not None and 200 <= r.status < 300 and r.error_kind in (None, "deadline_total",
                                                                                  "deadline_first_content")

    raw = await send(target, body, deadlines=quick)
    counts: bool | None
    note = ""
    if accepted(raw):
        counts = False
    elif raw.error_kind is None and raw.status is not None and 400 <= raw.status < 500:
        # is it the sum, or max_tokens alone over the engine's output limit?
        small = build_request(target, "Say hello.", max_tokens=round(0.6 * limit), system=SYSTEM)
        raw2 = await send(target, small, deadlines=quick)
        if accepted(raw2):
            counts, note = True, error_message(raw)[:200]
        else:
            counts, note = None, f"max_tokens {round(0.6 * limit)} is refused even with a short prompt: {error_message(raw2)[:160]}"
    else:
        counts, note = None, describe_exchange(raw)
    clients = client_max_tokens(captures_root)
    usable: dict[str, Any] = {}
    for name, mt in clients.items():
        if mt is None:
            usable[name] = f"unknown (no {name} capture with max_tokens)"
        elif counts:
            usable[name] = max(0, limit - mt)
        else:
            usable[name] = limit
    figures = {"limit": limit, "counts_input_plus_max_tokens": counts, "note": note,
               "client_max_tokens": clients, "usable_tokens": usable}
    if counts:
        msg = (f"the target counts input + max_tokens against the limit {limit}: usable context "
               + ", ".join(f"{k} {v}" for k, v in usable.items()))
    elif counts is False:
        msg = f"the target counts input only: every client keeps the whole limit {limit}"
    else:
        msg = f"could not tell whether max_tokens counts against the limit ({note})"
    severity_outcome = "warning" if counts and any(isinstance(v, int) and v == 0 for v in usable.values()) else "info"
    return ProbeOutcome(USABLE_AGENT_CONTEXT, severity_outcome, msg, [], figures)


def limit_outcome(info: LimitInfo) -> ProbeOutcome:
    if info.known:
        return ProbeOutcome(LIMIT_KNOWN, "passed", info.describe(),
                            [], {"configured": info.configured, "advertised": info.advertised, "source": info.source})
    v = registry.violation(LIMIT_KNOWN, "the context limit is unknown: the target advertises none",
                           expected="max_model_len in /v1/models or n_ctx in /props, or --conformance-context-limit",
                           seen="neither")
    return ProbeOutcome(LIMIT_KNOWN, "unverifiable", v.message, [v], {"advertised": None})
