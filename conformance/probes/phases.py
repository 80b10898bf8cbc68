"""Phase figures: prefill and decode speed measured apart, each repeated, so an upgrade can be attributed.

Rules:
- Prefill tokens/s = input tokens / time to first content. The input tokens are the target's own
  count (the response's usage), else the calibrated estimate; the prompt is deterministic
  haystack text at PROMPT_LENGTHS (256 / 1k / 2k tokens, sized from one calibration request's
  usage), thinking off (no thinking field is sent), a short answer (max_tokens PREFILL_MAX_TOKENS),
  and every request carries its own salt at the start of the system prompt, so no prefix or
  response cache serves it.
- Decode tokens/s = output tokens / (end of stream - first content), for one stream alone and at
  each level of the load ramp (1, 2, 4 .. N at once; a level's figure is the median of its
  streams). A stream that ends with its first content (one chunk) gives no figure.
- Every point is measured `repeats` times (default 3) and reported as min / median / max with
  its values; a point with fewer than two good measurements is marked `seen_once` and a reader
  (`conformance report compare`) never reports it as a result.
- A request that fails is named in the figures (`errors`); a phase with no figure at all is
  unverifiable, never zero. Both verdicts are info: figures, not gates.
- Progress: each point and repeat is announced (conformance.probes.progress), with a heartbeat
  while a request takes long.
"""

from __future__ import annotations

import asyncio
import statistics
from typing import Any

from conformance.checks import phases as phase_checks
from conformance.checks.exchange import check_exchange
from conformance.probes import progress
from conformance.probes.common import (
    ProbeOutcome,
    Target,
    build_request,
    describe_exchange,
    input_tokens_of_usage,
    output_tokens,
    rounded,
    send,
)
from conformance.probes.haystack import haystack
from conformance.probes.load import ramp_levels

PROMPT_LENGTHS = (256, 1024, 2048)
DEFAULT_REPEATS = 3
PREFILL_MAX_TOKENS = 8
DECODE_MAX_TOKENS = 128
CALIBRATION_SENTENCES = 40
DECODE_PROMPT = "Write a long story about a fox who learns to sail, at least 300 words."


def spread(values: list[float]) -> dict[str, Any]:
    """min / median / max of the good measurements; `seen_once` when fewer than two."""
    good = [v for v in values if v is not None]
    return {"values": [rounded(v, 1) for v in good], "repeats": len(good),
            "min": rounded(min(good), 1) if good else None,
            "median": rounded(statistics.median(good), 1) if good else None,
            "max": rounded(max(good), 1) if good else None,
            "seen_once": len(good) < 2}


async def _one(target: Target, body: dict[str, Any]) -> tuple[Any, dict | None]:
    raw = await send(target, body)
    message = None
    if raw.ok:
        message = (await asyncio.to_thread(check_exchange, raw, body, wire=target.wire)).message
    return raw, message


def _prompt(sentences: int) -> str:
    return " ".join(haystack(sentences)) + "\n\nReply with the single word: done."


async def _calibrate(target: Target) -> tuple[float, float]:
    """(input tokens per haystack sentence, tokens of the rest of the request), from the target's usage."""
    body = build_request(target, _prompt(CALIBRATION_SENTENCES), max_tokens=PREFILL_MAX_TOKENS,
                         salt=f"{target.salt}-phase-calibrate")
    _raw, message = await _one(target, body)
    base = build_request(target, _prompt(0), max_tokens=PREFILL_MAX_TOKENS, salt=f"{target.salt}-phase-calibrate0")
    _raw0, message0 = await _one(target, base)
    n = input_tokens_of_usage((message or {}).get("usage"), target.wire)
    n0 = input_tokens_of_usage((message0 or {}).get("usage"), target.wire)
    if n and n0 is not None and n > n0:
        return (n - n0) / CALIBRATION_SENTENCES, float(n0)
    return 12.0, 40.0  # a sentence of the haystack is about a dozen tokens in common tokenizers


async def prefill_figures(target: Target, *, lengths=PROMPT_LENGTHS, repeats: int = DEFAULT_REPEATS,
                          sink: progress.Sink | None = None) -> ProbeOutcome:
    per_sentence, overhead = await _calibrate(target)
    points, errors = [], []
    for i, length in enumerate(lengths, 1):
        sentences = max(1, round((length - overhead) / per_sentence))
        values, sent_tokens = [], []
        for k in range(repeats):
            label = f"perf: prefill, prompt {length} tokens ({i}/{len(lengths)}), repeat {k + 1}/{repeats}"
            body = build_request(target, _prompt(sentences), max_tokens=PREFILL_MAX_TOKENS,
                                 salt=f"{target.salt}-prefill-{length}-{k}")
            async with progress.step(label, sink):
                raw, message = await _one(target, body)
            tokens = input_tokens_of_usage((message or {}).get("usage"), target.wire)
            if not raw.ok or raw.first_content_at is None or raw.first_content_at <= 0:
                errors.append(f"{length} tokens, repeat {k + 1}: {describe_exchange(raw)}")
                continue
            tokens = tokens or round(overhead + sentences * per_sentence)
            sent_tokens.append(tokens)
            values.append(tokens / raw.first_content_at)
        points.append({"x": length, "label": f"{length} tokens", "input_tokens": sent_tokens, **spread(values)})
    return _outcome(phase_checks.PREFILL_RATE, "prefill", points, errors, "prompt")


async def _decode_level(target: Target, level: int, k: int) -> tuple[float | None, list[str]]:
    async def stream(j: int):
        body = build_request(target, DECODE_PROMPT, max_tokens=DECODE_MAX_TOKENS,
                             salt=f"{target.salt}-decode-c{level}-{k}-{j}")
        return await _one(target, body)

    rates, errors = [], []
    for raw, message in await asyncio.gather(*(stream(j) for j in range(level))):
        out = output_tokens(message, target.wire)
        end = raw.chunks[-1][0] if raw.chunks else None
        if not raw.ok or raw.first_content_at is None or end is None or not out:
            errors.append(f"c={level}, repeat {k + 1}: {describe_exchange(raw)}")
            continue
        if end - raw.first_content_at <= 0:
            continue  # the whole answer came in one piece: no decode time to measure
        rates.append(out / (end - raw.first_content_at))
    return (statistics.median(rates) if rates else None), errors


async def decode_figures(target: Target, *, concurrency: int = 4, repeats: int = DEFAULT_REPEATS,
                         sink: progress.Sink | None = None) -> ProbeOutcome:
    levels = ramp_levels(concurrency)
    points, errors = [], []
    for i, level in enumerate(levels, 1):
        values = []
        for k in range(repeats):
            what = "single stream" if level == 1 else f"{level} streams at once"
            label = f"perf: decode, {what} (level {i}/{len(levels)}), repeat {k + 1}/{repeats}"
            async with progress.step(label, sink):
                rate, errs = await _decode_level(target, level, k)
            errors += errs
            values.append(rate)
        points.append({"x": level, "label": "single stream" if level == 1 else f"c={level}", **spread(values)})
    return _outcome(phase_checks.DECODE_RATE, "decode", points, errors, "level")


def _outcome(check_id: str, phase: str, points: list[dict], errors: list[str], unit: str) -> ProbeOutcome:
    figures = {"points": points, "errors": errors[:10],
               "repeats": max((p["repeats"] for p in points), default=0)}
    measured = [p for p in points if p["median"] is not None]
    if not measured:
        why = "; ".join(errors[:3]) or "no request gave a figure"
        return ProbeOutcome(check_id, "unverifiable", f"{phase} tokens/s not measured: {why}", [], figures)
    parts = [f"{p['label']}: {p['median']} tok/s [{p['min']}..{p['max']}]"
             + (" (seen once: not a result)" if p["seen_once"] else f" x{p['repeats']}") for p in points
             if p["median"] is not None]
    msg = f"{phase} tokens/s by {unit}: " + "; ".join(parts)
    if errors:
        msg += f"; {len(errors)} request(s) failed ({errors[0]})"
    return ProbeOutcome(check_id, "info", msg, [], figures)
