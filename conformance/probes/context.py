"""Context edge: the limit, needle recall near it, refusal above it, advertised vs accepted.

Rules:
- The limit comes from an option, else what the target advertises (vLLM: `max_model_len` of the
  model in GET /v1/models; llama.cpp: `n_ctx` in GET /props, top level or under
  `default_generation_settings`), else it is "unknown" and said so.
- Haystacks are generated deterministically (seeded sentences from fixed word lists; they never
  contain the needle's words). Lengths are set from the target's own token counts
  (`common.TokenCounter`) and must land within ±2% of the intended fraction of the limit; a
  request meant to be under the limit is never allowed over it. The lengths actually sent are
  reported with the target's counts (and the response's usage where it reports one).
- Needle convention (the reference engine follows the same one, docs/engine.md): the statement
  `The secret passphrase is PHRASE.` placed at a sentence boundary at the depth (0% = the very
  start, 100% = right before the question), then the question after the haystack. A hit is the
  phrase in the answer text. An answer cut by max_tokens is "truncated by the output cap", never
  a miss.
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
- Progress: each needle point says its length and depth and how far along the sweep is, each
  sized attempt its share of the limit, with a heartbeat while one takes long
  (conformance.probes.progress).
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from conformance.checks import context as _context_checks  # noqa: F401  (registers the context.* ids)
from conformance.checks.exchange import check_exchange
from conformance.core import registry
from conformance.net.transport import Deadlines, RawExchange
from conformance.probes import progress
from conformance.probes.common import (
    ProbeOutcome,
    Target,
    TokenCounter,
    answer_text,
    build_request,
    describe_exchange,
    error_envelope_violations,
    error_message,
    input_tokens_of_usage,
    send,
    stop_reason,
    target_gone,
)

DEPTHS = (0.0, 0.25, 0.5, 0.75, 1.0)
FRACTIONS = (0.25, 0.5, 0.9, 0.99)
NEAR_LIMIT = 0.9
OVER_LIMIT = 1.10
TOLERANCE = 0.02  # lengths within ±2% of the intended fraction
HAYSTACK_SEED = 20261129
ANSWER_TOKENS = 64
REFUSE_WITHIN_S = 10.0

NEEDLE_STATEMENT = "The secret passphrase is {phrase}."
NEEDLE_QUESTION = ("What is the secret passphrase stated in the text above? "
                   "Answer with the passphrase only.")
SYSTEM = "You answer questions about the document the user gives you. Answer briefly."

# Clients' max_tokens (WIRE.md): Claude Code sends 64000, 32000 for unknown/local model names.
CLIENT_MAX_TOKENS = {"claude-code": 64000, "claude-code (local model name)": 32000}

_SUBJECTS = ["The old gardener", "A quiet engineer", "The river pilot", "A young painter", "The night baker",
             "A patient teacher", "The harbor clerk", "A tired courier", "The village doctor", "A curious student",
             "The mountain guide", "A careful tailor"]
_VERBS = ["repaired", "painted", "carried", "described", "measured", "ordered", "borrowed", "cleaned",
          "noticed", "sketched", "sorted", "wrapped"]
_OBJECTS = ["a wooden chair", "the blue lantern", "an iron kettle", "the garden gate", "a paper map",
            "the copper bell", "a wool blanket", "the stone bench", "a glass bottle", "the oak table",
            "a linen sack", "the brass clock"]
_PLACES = ["near the harbor", "before sunrise", "behind the mill", "after the storm", "at the market",
           "beside the canal", "in the late afternoon", "under the bridge", "on the north road",
           "during the festival", "by the old well", "inside the station"]
_PHRASE_WORDS = ["amber", "falcon", "meadow", "cobalt", "harbor", "juniper", "quartz", "saffron",
                 "tundra", "velvet", "willow", "zephyr"]


_BLOCK = 256


@lru_cache(maxsize=256)
def _block(seed: int, b: int) -> tuple[str, ...]:
    rng = random.Random(seed * 7919 + b)  # one generator per block: sentence i never depends on call order
    return tuple(f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)} {rng.choice(_PLACES)}."
                 for _ in range(_BLOCK))


def haystack(n: int, seed: int = HAYSTACK_SEED) -> list[str]:
    """The first n sentences of the deterministic haystack for `seed` (same n, same text)."""
    out: list[str] = []
    b = 0
    while len(out) < n:
        out.extend(_block(seed, b))
        b += 1
    return out[:n]


def needle_phrase(key: str) -> str:
    """A deterministic phrase per probe point, e.g. 'cobalt-4817-willow'."""
    rng = random.Random(f"needle:{key}")
    return f"{rng.choice(_PHRASE_WORDS)}-{rng.randint(1000, 9999)}-{rng.choice(_PHRASE_WORDS)}"


def needle_text(n: int, depth: float, phrase: str, seed: int = HAYSTACK_SEED) -> str:
    sentences = list(haystack(n, seed))
    at = round(depth * n)
    sentences.insert(at, NEEDLE_STATEMENT.format(phrase=phrase))
    return " ".join(sentences) + "\n\n" + NEEDLE_QUESTION


# ---------------------------------------------------------------------------------------------
# the limit


@dataclass
class LimitInfo:
    configured: int | None = None  # from the option
    advertised: int | None = None
    source: str = "unknown"  # where the advertised value came from
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def limit(self) -> int | None:
        return self.configured or self.advertised

    @property
    def known(self) -> bool:
        return self.limit is not None

    def describe(self) -> str:
        adv = f"{self.advertised} ({self.source})" if self.advertised else "unknown (the target advertises none)"
        if self.configured:
            return f"limit {self.configured} (from the option); advertised {adv}"
        return f"limit {adv}"


async def discover_limit(target: Target, configured: int | None = None) -> LimitInfo:
    info = LimitInfo(configured=configured)
    raw = await send(target, {}, path="/v1/models", method="GET",
                     deadlines=Deadlines(connect=target.deadlines.connect, first_content=10, total=15))
    try:
        data = json.loads(raw.body()) if raw.ok else None
    except ValueError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("data"), list):
        models = [m for m in data["data"] if isinstance(m, dict)]
        chosen = next((m for m in models if m.get("id") == target.model), models[0] if models else None)
        if chosen is not None:
            for key in ("max_model_len", "context_length", "context_window", "max_context_length"):
                if isinstance(chosen.get(key), int):
                    info.advertised, info.source = chosen[key], f"/v1/models {key}"
                    info.raw = {"model": chosen.get("id"), key: chosen[key]}
                    return info
            meta = chosen.get("meta")  # llama.cpp: meta.n_ctx is the served context (n_ctx_train is not)
            if isinstance(meta, dict) and isinstance(meta.get("n_ctx"), int):
                info.advertised, info.source = meta["n_ctx"], "/v1/models meta.n_ctx"
                info.raw = {"model": chosen.get("id"), "n_ctx": meta["n_ctx"]}
                return info
    raw = await send(target, {}, path="/props", method="GET",
                     deadlines=Deadlines(connect=target.deadlines.connect, first_content=10, total=15))
    try:
        props = json.loads(raw.body()) if raw.ok else None
    except ValueError:
        props = None
    if isinstance(props, dict):
        n_ctx = props.get("n_ctx")
        if not isinstance(n_ctx, int):
            n_ctx = (props.get("default_generation_settings") or {}).get("n_ctx")
        if isinstance(n_ctx, int):
            info.advertised, info.source, info.raw = n_ctx, "/props n_ctx", {"n_ctx": n_ctx}
    return info


# ---------------------------------------------------------------------------------------------
# sized requests


@dataclass
class Sized:
    n_sentences: int
    tokens: int  # the target's count of the whole request
    intended: int
    extrapolated: bool = False  # above the limit, from the counts measured below it

    @property
    def error(self) -> float:
        return abs(self.tokens - self.intended) / self.intended if self.intended else 0.0


@dataclass
class NeedlePoint:
    fraction: float
    depth: float
    intended: int
    counted: int
    usage_tokens: int | None
    phrase: str
    outcome: str  # hit | miss | refused | cut | failed
    answer: str
    detail: str = ""
    gone: str | None = None  # the target died at this point

    def row(self) -> dict[str, Any]:
        return {"fraction": self.fraction, "depth": self.depth, "intended_tokens": self.intended,
                "counted_tokens": self.counted, "usage_input_tokens": self.usage_tokens,
                "outcome": self.outcome, "answer": self.answer[:120], "detail": self.detail}


@dataclass
class Attempt:
    """One sized request sent, and what came back."""

    tokens: int
    raw: RawExchange
    message: dict[str, Any] | None
    phrase: str
    extrapolated: bool = False

    @property
    def accepted(self) -> bool:
        return self.raw.ok

    @property
    def refused(self) -> bool:
        return self.raw.error_kind is None and self.raw.status is not None and 400 <= self.raw.status < 500

    def recalled(self, api: str) -> bool:
        return self.phrase.lower() in answer_text(self.message, api).lower()

    def usage_tokens(self, api: str) -> int | None:
        return input_tokens_of_usage((self.message or {}).get("usage"), api)


class ContextProbe:
    """Sizes needle prompts with the target's own counts and sends them."""

    def __init__(self, target: Target, limit: LimitInfo, *, counter: TokenCounter | None = None,
                 answer_tokens: int = ANSWER_TOKENS, refuse_within: float = REFUSE_WITHIN_S,
                 seed: int = HAYSTACK_SEED, sink: progress.Sink | None = None) -> None:
        self.target = target
        self.sink = sink  # progress lines (conformance.probes.progress); None = the process's sink
        self.limit = limit
        self.counter = counter or TokenCounter(target)
        self.answer_tokens = answer_tokens
        self.refuse_within = refuse_within
        self.seed = seed
        self._base: int | None = None
        self._rate: float | None = None
        self._attempts: dict[tuple[float, float], Attempt] = {}
        self._hints: dict[tuple[int, int | None], int] = {}  # sentences found for a size: the next depth starts there

    # -- sizing ---------------------------------------------------------------------------------

    def request(self, n: int, depth: float, phrase: str, max_tokens: int, *, salt: str | None = None) -> dict[str, Any]:
        return build_request(self.target, needle_text(n, depth, phrase, self.seed), max_tokens=max_tokens,
                             system=SYSTEM, salt=salt)

    async def _rates(self) -> tuple[int, float]:
        if self._base is None or self._rate is None:
            phrase = needle_phrase("calibration")
            c0 = await self.counter.count(self.request(0, 0.0, phrase, 1))
            n1 = 64
            c1 = await self.counter.count(self.request(n1, 0.5, phrase, 1))
            if c1 <= c0:
                raise RuntimeError(f"the target's token counts do not grow with the prompt ({c0} -> {c1})")
            self._base, self._rate = c0, (c1 - c0) / n1
        return self._base, self._rate

    async def size(self, intended: int, *, depth: float = 0.5, ceiling: int | None = None,
                   exact: bool = True, phrase: str | None = None) -> Sized:
        """Find the number of haystack sentences whose request the target counts as `intended` tokens.

        `ceiling`: the count must stay at or below it (a request meant to fit must fit).
        `exact=False` (above the limit, where a usage probe cannot count) extrapolates from the
        counts measured below the limit when the counter cannot count the request itself.
        """
        base, rate = await self._rates()
        phrase = phrase or needle_phrase("calibration")
        n = self._hints.get((intended, ceiling))
        if n is None:
            n = max(0, round((intended - base) / rate))
        best: Sized | None = None
        prev: tuple[int, int] | None = None
        for _ in range(8):
            try:
                c = await self.counter.count(self.request(n, depth, phrase, 1))
            except Exception:
                if exact:
                    raise
                return Sized(n, round(base + rate * n), intended, extrapolated=True)  # extrapolated from the target's counts
            if not exact and prev is not None and n > prev[0] and c <= prev[1]:
                # counts that stop growing (usage of a target that truncates above its limit):
                # extrapolate from the counts measured below the limit instead
                return Sized(n, round(base + rate * n), intended, extrapolated=True)
            prev = (n, c)
            cand = Sized(n, c, intended)
            fits = ceiling is None or c <= ceiling
            if fits and (best is None or cand.error < best.error):
                best = cand
            if fits and (abs(c - intended) <= max(rate, 0.005 * intended)):
                break
            if n > 0:
                rate = max((c - base) / n, 0.1)
            step = round((intended - c) / rate)
            if ceiling is not None and c > ceiling:
                step = min(step, -max(1, round((c - ceiling) / rate)))
            if step == 0:
                step = -1 if (ceiling is not None and c > ceiling) or c > intended else 1
            n = max(0, n + step)
        if best is None:
            raise RuntimeError(f"could not size a prompt of {intended} tokens under {ceiling} with the target's counts")
        self._hints[(intended, ceiling)] = best.n_sentences
        return best

    def max_tokens_for(self, tokens: int) -> int:
        """Output budget that keeps input + max_tokens within the limit (engines that count both)."""
        if self.limit.limit is None:
            return self.answer_tokens
        return max(1, min(self.answer_tokens, self.limit.limit - tokens))

    async def attempt(self, intended: int, depth: float, key: str, *, ceiling: int | None,
                      exact: bool = True, max_tokens: int | None = None,
                      deadlines: Deadlines | None = None) -> Attempt:
        phrase = needle_phrase(key)
        sized = await self.size(intended, depth=depth, ceiling=ceiling, exact=exact, phrase=phrase)
        body = self.request(sized.n_sentences, depth, phrase, max_tokens or self.max_tokens_for(sized.tokens))
        raw = await send(self.target, body, deadlines=deadlines)
        message = check_exchange(raw, body, wire=self.target.api).message if raw.ok else None
        return Attempt(sized.tokens, raw, message, phrase, sized.extrapolated)

    # -- needle sweep ---------------------------------------------------------------------------

    async def needle_sweep(self, fractions=FRACTIONS, depths=DEPTHS) -> list[NeedlePoint]:
        limit = self.limit.limit
        if limit is None:
            raise ValueError("the context limit is unknown: pass it as an option (--conformance-context-limit)")
        points: list[NeedlePoint] = []
        for fi, fraction in enumerate(fractions, 1):
            # leave room for the answer: at 99% of a small limit 1% cannot hold it (still within ±2%)
            intended = min(round(fraction * limit), limit - self.answer_tokens) if fraction < 1 else round(fraction * limit)
            ceiling = limit - 1 if fraction < 1 else None
            for di, depth in enumerate(depths, 1):
                phrase = needle_phrase(f"{fraction}:{depth}")
                label = (f"context: needle length {fi}/{len(fractions)} ({round(fraction * 100)}% of {limit} tokens), "
                         f"depth {di}/{len(depths)} ({round(depth * 100)}%), point {len(points) + 1}/"
                         f"{len(fractions) * len(depths)}")
                async with progress.step(label, self.sink):
                    sized = await self.size(intended, depth=depth, ceiling=ceiling, phrase=phrase)
                    max_tokens = self.max_tokens_for(sized.tokens)
                    body = self.request(sized.n_sentences, depth, phrase, max_tokens)
                    raw = await send(self.target, body)
                point = NeedlePoint(fraction, depth, intended, sized.tokens, None, phrase, "failed", "")
                if raw.ok:
                    judged = check_exchange(raw, body, wire=self.target.api)
                    text = answer_text(judged.message, self.target.api)
                    point.answer = text
                    point.usage_tokens = input_tokens_of_usage((judged.message or {}).get("usage"), self.target.api)
                    if phrase.lower() in text.lower():
                        point.outcome = "hit"
                    elif stop_reason(judged.message, self.target.api) == "max_tokens":
                        point.outcome = "cut"
                        point.detail = f"truncated by the output cap ({max_tokens} tokens)"
                    else:
                        point.outcome = "miss"
                    if judged.errors:
                        point.detail = (point.detail + "; " if point.detail else "") + "; ".join(
                            sorted({v.check_id for v in judged.errors}))
                elif raw.error_kind is None and raw.status is not None and 400 <= raw.status < 500:
                    point.outcome = "refused"
                    point.detail = f"HTTP {raw.status}: {error_message(raw)[:200]}"
                else:
                    point.detail = describe_exchange(raw)
                    points.append(point)
                    gone = await target_gone(self.target)
                    if gone:
                        point.detail += f"; {gone}"
                        point.gone = gone
                    # fail fast: a hung, crashing or dead target would cost a deadline per point
                    point.detail += "; the sweep stopped here"
                    return points
                points.append(point)
        return points

    # -- above the limit ------------------------------------------------------------------------

    async def over(self, factor: float) -> Attempt:
        key = (factor, 0.0)
        if key not in self._attempts:
            limit = self.limit.limit
            assert limit is not None
            dl = Deadlines(connect=self.target.deadlines.connect,
                           first_content=max(self.refuse_within * 3, self.target.deadlines.first_content),
                           total=max(self.refuse_within * 3, self.target.deadlines.total))
            async with progress.step(f"context: {round(factor * 100)}% of the limit {limit} tokens", self.sink):
                self._attempts[key] = await self.attempt(round(factor * limit), 0.0, f"over:{factor}", ceiling=None,
                                                         exact=False, max_tokens=self.answer_tokens, deadlines=dl)
        return self._attempts[key]

    async def under(self, fraction: float, limit: int | None = None) -> Attempt:
        limit = limit or self.limit.limit
        assert limit is not None
        key = (fraction, float(limit))
        if key not in self._attempts:
            # within ±2% of the fraction, and never over the limit it is meant to fit
            ceiling = min(limit - 1, round(fraction * limit * (1 + TOLERANCE)))
            async with progress.step(f"context: {round(fraction * 100, 1)}% of the limit {limit} tokens", self.sink):
                self._attempts[key] = await self.attempt(round(fraction * limit), 0.0, f"under:{fraction}:{limit}",
                                                         ceiling=ceiling)
        return self._attempts[key]


# ---------------------------------------------------------------------------------------------
# verdicts


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
        "context.needle_recall", "info",
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
                "context.needle_depth0",
                f"needle at depth 0 lost at {round(p.fraction * 100)}% of the limit ({p.counted} of {limit.limit} tokens): "
                "the start of the prompt was dropped",
                expected=f"the answer contains {p.phrase!r}", seen=repr(p.answer[:200])
                + (f"; response usage reports {p.usage_tokens} input tokens" if p.usage_tokens is not None else "")))
        for p in broken:
            violations.append(registry.violation(
                "context.needle_depth0",
                f"the needle request at {round(p.fraction * 100)}% of the limit ({p.counted} tokens), depth "
                f"{round(p.depth * 100)}% failed: {p.detail}",
                expected="an answer", seen=p.detail))
        return [recall, ProbeOutcome("context.needle_depth0", "failed", violations[0].message, violations, figures)]
    if not judged:
        why = "; ".join(f"{round(p.fraction * 100)}%: {p.outcome} {p.detail}" for p in near_d0) or "no near-limit length ran"
        return [recall, ProbeOutcome("context.needle_depth0", "unverifiable",
                                     f"no depth-0 answer near the limit to judge ({why})", [], figures)]
    return [recall, ProbeOutcome(
        "context.needle_depth0", "passed",
        f"needle at depth 0 recalled at {', '.join(f'{round(p.fraction * 100)}% ({p.counted} tokens)' for p in judged)} "
        f"of the limit {limit.limit}", [], figures)]


async def over_limit_outcome(probe: ContextProbe, factor: float = OVER_LIMIT) -> ProbeOutcome:
    limit = probe.limit.limit
    if limit is None:
        return ProbeOutcome("context.over_limit_refused", "unverifiable",
                            "the context limit is unknown: pass --conformance-context-limit")
    api = probe.target.api
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
        env = error_envelope_violations(raw, api)
        if raw.elapsed > probe.refuse_within:
            v = registry.violation("context.over_limit_refused",
                                   f"{head} was refused, but only after {raw.elapsed:.1f}s",
                                   expected=f"a 4xx within {probe.refuse_within:g}s", seen=f"HTTP {raw.status} after {raw.elapsed:.1f}s")
            return ProbeOutcome("context.over_limit_refused", "failed", v.message, [v, *env], figures)
        if not text.strip():
            v = registry.violation("context.over_limit_refused", f"{head} was refused with HTTP {raw.status} but no message",
                                   expected="a 4xx whose body says why", seen=raw.body()[:200].decode("utf-8", "replace"))
            return ProbeOutcome("context.over_limit_refused", "failed", v.message, [v, *env], figures)
        return ProbeOutcome("context.over_limit_refused", "passed",
                            f"{head} refused with HTTP {raw.status} in {raw.elapsed:.2f}s: {text[:160]}", env, figures)
    if a.accepted:
        usage = a.usage_tokens(api)
        recalled = a.recalled(api)
        cut = not recalled and stop_reason(a.message, api) == "max_tokens"
        figures.update(usage_input_tokens=usage, depth0_needle_recalled=recalled, answer_cut_by_max_tokens=cut)
        truncated = (usage is not None and usage < a.tokens * (1 - TOLERANCE)) or (not recalled and not cut)
        if truncated:
            evidence = []
            if usage is not None:
                evidence.append(f"usage reports {usage} input tokens")
            evidence.append("the needle at depth 0 was " + (
                "recalled" if recalled else "not answered (the answer was cut by max_tokens)" if cut else "lost"))
            v = registry.violation("context.over_limit_refused",
                                   f"{head} was accepted and silently truncated ({'; '.join(evidence)})",
                                   expected="a 4xx refusal naming the limit", seen=f"HTTP {raw.status}; {'; '.join(evidence)}")
            return ProbeOutcome("context.over_limit_refused", "failed", v.message, [v], figures)
        v = registry.violation("context.over_limit_refused",
                               f"{head} was accepted and fully processed: the limit {limit} is not the one enforced",
                               expected="a 4xx refusal above the limit", seen=f"HTTP {raw.status}, usage {usage}, needle recalled",
                               severity="warning")
        return ProbeOutcome("context.over_limit_refused", "unverifiable",
                            v.message + " (see context.advertised_matches)", [v], figures)
    gone = await target_gone(probe.target)
    what = {"deadline_first_byte": "hung", "deadline_first_content": "hung", "deadline_total": "hung",
            "read": "dropped the connection", "connect": "refused the connection"}.get(raw.error_kind or "", "")
    if not what:
        what = f"answered HTTP {raw.status}" if raw.status and raw.status >= 500 else describe_exchange(raw)
    v = registry.violation("context.over_limit_refused", f"{head}: the target {what}" + (f"; {gone}" if gone else ""),
                           expected=f"a 4xx within {probe.refuse_within:g}s", seen=describe_exchange(raw))
    figures["target_gone"] = gone
    return ProbeOutcome("context.over_limit_refused", "failed", v.message, [v], figures)


async def advertised_outcome(probe: ContextProbe, *, max_factor: float = 4.0) -> ProbeOutcome:
    info = probe.limit
    if info.advertised is None:
        return ProbeOutcome("context.advertised_matches", "unverifiable",
                            "the target advertises no context length (neither /v1/models max_model_len nor /props n_ctx)",
                            [], {"advertised": None})
    api = probe.target.api
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
            return ProbeOutcome("context.advertised_matches", "unverifiable",
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
            "context.advertised_matches",
            f"advertises {adv} tokens ({info.source}) but refuses a prompt of {below.tokens} tokens (99% of it); "
            f"it accepts about {accepted} tokens at most",
            expected=f"prompts up to {adv} tokens accepted", seen=f"HTTP {below.raw.status}: {error_message(below.raw)[:200]}")
        return ProbeOutcome("context.advertised_matches", "failed", v.message, [v], figures)
    above = await adv_probe.over(OVER_LIMIT)
    figures["at_110pct"] = {"tokens": above.tokens, "status": above.raw.status, "error": above.raw.error_kind}
    if above.refused or not above.accepted:
        return ProbeOutcome("context.advertised_matches", "passed",
                            f"advertised {adv} ({info.source}): {below.tokens} tokens accepted, "
                            f"{above.tokens} " + ("refused" if above.refused else f"not accepted ({describe_exchange(above.raw)})"),
                            [], figures)
    usage = above.usage_tokens(api)
    if (usage is not None and usage < above.tokens * (1 - TOLERANCE)) or not above.recalled(api):
        return ProbeOutcome("context.advertised_matches", "passed",
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
        "context.advertised_matches",
        f"advertises {adv} tokens ({info.source}) but accepts and processes {accepted_at} tokens",
        expected=f"prompts above {adv} tokens refused", seen=f"{accepted_at} tokens accepted, usage {usage}")
    return ProbeOutcome("context.advertised_matches", "failed", v.message, [v], figures)


def captured_max_tokens(root: Path | None = None) -> dict[str, list[int]]:
    """max_tokens values the captured clients sent, per client name."""
    from conformance.capture.corpus import iter_capture_files
    from conformance.capture.format import load_capture
    from conformance.core.paths import captured_dir

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
        return ProbeOutcome("context.usable_agent_context", "unverifiable", "the context limit is unknown")
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
    clients: dict[str, int | None] = dict(CLIENT_MAX_TOKENS)
    for client, values in captured_max_tokens(captures_root).items():
        for v in values:
            clients[f"{client} (captured, max_tokens {v})"] = v
    if not any(k.startswith("opencode") for k in clients):
        clients["opencode"] = None  # no capture to read its value from: said so, not guessed
    usable: dict[str, Any] = {}
    for name, mt in clients.items():
        if mt is None:
            usable[name] = "unknown (no opencode capture with max_tokens)"
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
    return ProbeOutcome("context.usable_agent_context", severity_outcome, msg, [], figures)


def limit_outcome(info: LimitInfo) -> ProbeOutcome:
    if info.known:
        return ProbeOutcome("context.limit_known", "passed", info.describe(),
                            [], {"configured": info.configured, "advertised": info.advertised, "source": info.source})
    v = registry.violation("context.limit_known", "the context limit is unknown: the target advertises none",
                           expected="max_model_len in /v1/models or n_ctx in /props, or --conformance-context-limit",
                           seen="neither")
    return ProbeOutcome("context.limit_known", "unverifiable", v.message, [v], {"advertised": None})


async def full_context_probe(target: Target, *, configured_limit: int | None = None,
                             fractions=FRACTIONS, depths=DEPTHS, refuse_within: float = REFUSE_WITHIN_S,
                             answer_tokens: int = ANSWER_TOKENS) -> list[ProbeOutcome]:
    """Every context verdict in one go (the CLI and docs use it; the pytest tests call the parts)."""
    t0 = time.monotonic()
    info = await discover_limit(target, configured_limit)
    out = [limit_outcome(info)]
    if not info.known:
        return out
    probe = ContextProbe(target, info, answer_tokens=answer_tokens, refuse_within=refuse_within)
    out += needle_outcomes(await probe.needle_sweep(fractions, depths), info)
    out.append(await over_limit_outcome(probe))
    out.append(await advertised_outcome(probe))
    out.append(await usable_context_outcome(probe))
    for o in out:
        o.details.setdefault("probe_seconds", round(time.monotonic() - t0, 2))
    return out
