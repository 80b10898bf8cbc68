"""Interference: what one long-context request costs the short ones, and what context costs parallelism.

Rules:
- Four phases against one target, each request salted on its own (no prefix or response cache):
  1. short requests alone (sequential): latency p50/p95 and throughput (requests/s, output tokens/s);
  2. one long-context request alone: its latency;
  3. the same short requests while one long-context request is in flight;
  4. `parallel_long` long-context requests at once: their latency against phase 2.
- Reported as ratios measured in the same run (the machines are shared; absolute figures mean
  little): short-latency ratio = p50 with / p50 without; throughput ratio = without / with;
  long-parallel ratio = mean latency of k at once / one alone. `load.interference` is info.
- The long prompt is sized from the target's own token counts (`ContextProbe.size`), by default
  half the context limit. Any request that fails (5xx, dropped stream, hang, malformed) fails the
  verdict it belongs to, naming the phase; several long requests at once failing is
  `load.long_context_parallel` (context costs parallelism: queueing is fine, failing is not).
- How much the short requests really overlapped the long one is reported (`overlap`): an engine
  that finishes the long request before the first short one starts shows no interference, and
  the figures say so instead of claiming a ratio of 1 means no cost.
- The context limit is the one discovery's (`conformance.probes.limit`).
- Progress: every phase and request says which it is and how far along (phase k/4, request i/n),
  with a heartbeat while one takes long (conformance.probes.progress).
- Check ids are the constants of `conformance.checks.load`.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from conformance.checks.exchange import check_exchange
from conformance.checks.load import INTERFERENCE, LONG_CONTEXT_PARALLEL
from conformance.core import registry
from conformance.probes import progress
from conformance.probes.common import (
    ProbeOutcome,
    Target,
    TokenCounter,
    build_request,
    describe_exchange,
    output_tokens,
    percentile,
    rounded,
    send,
    target_gone,
)
from conformance.probes.haystack import needle_phrase
from conformance.probes.limit import LimitInfo, discover_limit
from conformance.probes.sizing import ContextProbe


@dataclass
class Timed:
    name: str
    started: float
    finished: float
    ok: bool
    what: str
    output_tokens: int

    @property
    def latency(self) -> float:
        return self.finished - self.started


async def _timed(target: Target, body: dict[str, Any], name: str, t0: float) -> Timed:
    started = time.monotonic() - t0
    raw = await send(target, body)
    finished = time.monotonic() - t0
    judged = await asyncio.to_thread(check_exchange, raw, body, wire=target.wire)
    ok = raw.ok and not judged.errors
    what = "ok" if ok else (describe_exchange(raw) if not raw.ok else ", ".join(sorted({v.check_id for v in judged.errors})))
    return Timed(name, started, finished, ok, what, output_tokens(judged.message, target.wire) or 0)


def _short(target: Target, i: int, phase: str) -> dict[str, Any]:
    return build_request(target, f"Count from 1 to 12. ({phase} {i})", max_tokens=64,
                         salt=f"{target.salt}-{phase}-{i}")


async def _shorts(target: Target, count: int, phase: str, t0: float, sink: progress.Sink | None = None,
                  step: str = "") -> list[Timed]:
    out = []
    for i in range(count):
        async with progress.step(f"interference: {step}, short request {i + 1}/{count}", sink):
            out.append(await _timed(target, _short(target, i, phase), f"{phase} short {i + 1}", t0))
        if not out[-1].ok:
            break  # fail fast: a hung target costs one deadline, not one per request
    return out


def _summary(rows: list[Timed]) -> dict[str, Any]:
    lat = [r.latency for r in rows if r.ok]
    wall = (max(r.finished for r in rows) - min(r.started for r in rows)) if rows else 0.0
    return {"count": len(rows), "ok": len(lat), "latency_p50_s": rounded(percentile(lat, 50), 4),
            "latency_p95_s": rounded(percentile(lat, 95), 4),
            "requests_per_s": rounded(len(lat) / wall if wall > 0 else None, 2),
            "output_tokens_per_s": rounded(sum(r.output_tokens for r in rows if r.ok) / wall if wall > 0 else None, 1)}


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a and b else None


async def interference_probe(target: Target, *, limit: int | None = None, long_fraction: float = 0.5,
                             long_tokens: int | None = None, short_count: int = 6, parallel_long: int = 3,
                             counter: TokenCounter | None = None,
                             sink: progress.Sink | None = None) -> list[ProbeOutcome]:
    """Run the four phases and return `load.interference` and `load.long_context_parallel`."""
    info = await discover_limit(target, limit)
    if long_tokens is None:
        if info.limit is None:
            msg = "the context limit is unknown: pass --conformance-context-limit to size the long request"
            return [ProbeOutcome(INTERFERENCE, "unverifiable", msg),
                    ProbeOutcome(LONG_CONTEXT_PARALLEL, "unverifiable", msg)]
        long_tokens = round(long_fraction * info.limit)
    cp = ContextProbe(target, info if info.known else LimitInfo(configured=long_tokens * 2), counter=counter, sink=sink)
    async with progress.step(f"interference: sizing the long request ({long_tokens} tokens)", sink):
        sized = await cp.size(long_tokens, ceiling=(info.limit - 1) if info.limit else None)

    def long_body(i: int) -> dict[str, Any]:
        return cp.request(sized.n_sentences, 0.5, needle_phrase(f"interference:{i}"),
                          cp.max_tokens_for(sized.tokens), salt=f"{target.salt}-long-{i}")

    t0 = time.monotonic()
    alone = await _shorts(target, short_count, "alone", t0, sink, "phase 1/4 (short requests alone)")
    early = [r for r in alone if not r.ok]
    long_alone = None
    if not early:
        async with progress.step(f"interference: phase 2/4 (one {sized.tokens}-token request alone)", sink):
            long_alone = await _timed(target, long_body(0), "long alone", t0)
    if long_alone is not None and not long_alone.ok:
        early.append(long_alone)
    if early:  # fail fast: the target cannot serve these alone; measuring interference means nothing
        gone = await target_gone(target)
        v = registry.violation(INTERFERENCE,
                               "requests fail without any load: " + "; ".join(f"{r.name}: {r.what}" for r in early[:4])
                               + (f"; {gone}" if gone else ""),
                               expected="short and long requests complete alone", seen=early[0].what, severity="error")
        why = "not measured: the requests fail alone (see load.interference)"
        return [ProbeOutcome(INTERFERENCE, "failed", v.message, [v], {"target_gone": gone}),
                ProbeOutcome(LONG_CONTEXT_PARALLEL, "unverifiable", why)]

    long_task = asyncio.ensure_future(_timed(target, long_body(1), "long in flight", t0))
    await asyncio.sleep(0)  # let the long request go out first
    during = await _shorts(target, short_count, "during", t0, sink,
                           "phase 3/4 (short requests with one long request in flight)")
    async with progress.step("interference: phase 3/4, waiting for the long request in flight", sink):
        long_during = await long_task
    overlap = sum(1 for r in during if r.started < long_during.finished)

    async with progress.step(f"interference: phase 4/4 ({parallel_long} long requests at once)", sink):
        parallel = list(await asyncio.gather(*(_timed(target, long_body(10 + i), f"long parallel {i + 1}", t0)
                                               for i in range(parallel_long))))

    a, d = _summary(alone), _summary(during)
    figures = {
        "long_tokens": sized.tokens, "long_intended": long_tokens, "limit": info.limit, "limit_source": info.describe(),
        "short_alone": a, "short_with_long_in_flight": d,
        "long_alone_latency_s": rounded(long_alone.latency, 4),
        "long_in_flight_latency_s": rounded(long_during.latency, 4),
        "overlap": f"{overlap}/{len(during)} short requests started while the long one was in flight",
        "short_latency_ratio": _ratio(d["latency_p50_s"], a["latency_p50_s"]),
        "short_throughput_ratio": _ratio(a["requests_per_s"], d["requests_per_s"]),
    }
    failed = [r for r in [*alone, long_alone, *during, long_during] if not r.ok]
    if failed:
        gone = await target_gone(target)
        v = registry.violation(INTERFERENCE,
                               f"{len(failed)} request(s) failed: " + "; ".join(f"{r.name}: {r.what}" for r in failed[:4])
                               + (f"; {gone}" if gone else ""),
                               expected="every short and long request completes", seen=failed[0].what, severity="error")
        figures["target_gone"] = gone
        interference = ProbeOutcome(INTERFERENCE, "failed", v.message, [v], figures)
    else:
        interference = ProbeOutcome(
            INTERFERENCE, "info",
            f"with one {sized.tokens}-token request in flight, short requests: p50 latency "
            f"x{figures['short_latency_ratio']} (with/without), throughput cost x{figures['short_throughput_ratio']} "
            f"(without/with); {figures['overlap']}", [], figures)

    par_lat = [r.latency for r in parallel if r.ok]
    pfig = {"parallel": parallel_long, "long_tokens": sized.tokens,
            "latencies_s": [rounded(r.latency, 4) for r in parallel],
            "long_alone_latency_s": rounded(long_alone.latency, 4),
            "latency_ratio": _ratio(sum(par_lat) / len(par_lat) if par_lat else None, long_alone.latency)}
    pfailed = [r for r in parallel if not r.ok]
    if pfailed:
        gone = await target_gone(target)
        v = registry.violation(LONG_CONTEXT_PARALLEL,
                               f"{len(pfailed)} of {parallel_long} long-context requests at once failed: "
                               + "; ".join(f"{r.name}: {r.what}" for r in pfailed[:3]) + (f"; {gone}" if gone else ""),
                               expected=f"{parallel_long} requests of {sized.tokens} tokens complete (queueing is fine)",
                               seen=pfailed[0].what)
        pfig["target_gone"] = gone
        par = ProbeOutcome(LONG_CONTEXT_PARALLEL, "failed", v.message, [v], pfig)
    else:
        par = ProbeOutcome(LONG_CONTEXT_PARALLEL, "passed",
                           f"{parallel_long} requests of {sized.tokens} tokens at once completed; mean latency "
                           f"x{pfig['latency_ratio']} of one alone", [], pfig)
    return [interference, par]
