"""Sized requests: needle prompts of a chosen share of the context limit, measured by the target.

Rules:
- Lengths are set from the target's own token counts (`common.TokenCounter`), never from a
  characters-per-token guess: a calibration (the request with 0 and 64 haystack sentences) gives
  a rate, then each size is searched (at most 8 counts) until the count is within ±2% (TOLERANCE)
  of the intended one. A request meant to be under the limit is never allowed over it (`ceiling`);
  the lengths actually sent are reported with the target's counts (and the response's usage).
- Above the limit a usage count may be the truncated one: there the size is extrapolated from the
  counts measured below the limit, and said so (`extrapolated`).
- The output budget keeps input + max_tokens within the limit (`max_tokens_for`), for engines that
  count both.
- The needle sweep runs every length x depth; an answer cut by max_tokens is "truncated by the
  output cap", never a miss; a refusal is "refused"; a failure stops the sweep (a hung, crashing
  or dead target would cost a deadline per point) and says whether the target is gone.
- Attempts over and under the limit are made once per share and kept (`over`, `under`): the
  verdicts that need the same attempt share it.
- Progress: each needle point says its length and depth and how far along the sweep is, each
  sized attempt its share of the limit, with a heartbeat while one takes long
  (conformance.probes.progress).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from conformance.checks.exchange import check_exchange
from conformance.net.transport import Deadlines, RawExchange
from conformance.probes import progress
from conformance.probes.common import (
    Target,
    TokenCounter,
    answer_text,
    build_request,
    describe_exchange,
    error_message,
    input_tokens_of_usage,
    send,
    stop_reason,
    target_gone,
)
from conformance.probes.haystack import HAYSTACK_SEED, needle_phrase, needle_text
from conformance.probes.limit import LimitInfo
from conformance.wire.dialect import Dialect

DEPTHS = (0.0, 0.25, 0.5, 0.75, 1.0)
FRACTIONS = (0.25, 0.5, 0.9, 0.99)
TOLERANCE = 0.02  # lengths within ±2% of the intended fraction
ANSWER_TOKENS = 64
REFUSE_WITHIN_S = 10.0
SYSTEM = "You answer questions about the document the user gives you. Answer briefly."


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

    def recalled(self, wire: Dialect) -> bool:
        return self.phrase.lower() in answer_text(self.message, wire).lower()

    def usage_tokens(self, wire: Dialect) -> int | None:
        return input_tokens_of_usage((self.message or {}).get("usage"), wire)


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
        message = check_exchange(raw, body, wire=self.target.wire).message if raw.ok else None
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
                    judged = check_exchange(raw, body, wire=self.target.wire)
                    text = answer_text(judged.message, self.target.wire)
                    point.answer = text
                    point.usage_tokens = input_tokens_of_usage((judged.message or {}).get("usage"), self.target.wire)
                    if phrase.lower() in text.lower():
                        point.outcome = "hit"
                    elif stop_reason(judged.message, self.target.wire) == "max_tokens":
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
