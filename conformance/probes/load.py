"""Concurrency acceptance: the workload N at a time and as a ramp, every exchange judged.

Rules:
- The workload (`conformance.probes.workload`: the captured requests of the target's wire and the
  scenarios as whole agent loops) runs at each level of the ramp 1, 2, 4, ... N (or only at N),
  `rounds` requests per slot, and every exchange is judged by the suite's one judge
  (`conformance.checks.exchange.check_exchange`); a loop by the loop driver.
- A level fails when any exchange fails; the verdict names the level and what broke there, as
  counts of kinds: 5xx, 4xx refusal, dropped stream, malformed events, deadline exceeded (hang),
  connection refused; and whether the target is gone (the engine process exited, or nothing answers).
- Fail fast: once a level fails the ramp stops; if the target is gone before the ramp starts the
  probe fails at once. The run stays bounded by the target's deadlines.
- Figures per level (info; the machines are shared, so figures are relative): aggregate output
  tokens/s over the level's wall time, and time-to-first-content p50/p95. Each request carries its
  own salt at the start of the system prompt, so no prefix cache or router cache serves it.
- A level is `level` slots, each with its own client and connection (kept alive across its
  requests), taking the level's requests one after another: a pool shared by hundreds of streams
  costs time in the number of its connections on every request (httpcore scans them all), which
  made the probe's cost per stream grow with the level. An exchange is judged (in a thread) while
  its slot sends the next request. From `senders.SPLIT_FROM` requests a level is split across
  sender processes, one per core (`conformance.probes.senders`): the slots and the requests are
  dealt round-robin, each process sends, judges and monitors its share, and the records are
  merged (a passing exchange's without its bytes); they share the fail-fast flag.
  benchmarks/bench_load.py measures the curve beside a bare client.
- The probe knows its own ceiling (`conformance.probes.client_load`): every figure and verdict of
  a client-limited level says so (figures, messages, the `client_limited` detail and the JUnit
  properties from `LoadReport.junit_properties`).
- A progress line per level goes to stderr: which level of how many, requests done, wall time.
- Check ids are the constants of `conformance.checks.load`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx

from conformance.checks.exchange import check_exchange
from conformance.checks.load import CONCURRENCY_ACCEPTANCE, THROUGHPUT
from conformance.core import registry
from conformance.core.failures import Violation
from conformance.loop.driver import run_scenario
from conformance.net.transport import RawExchange
from conformance.probes import senders
from conformance.probes.client_load import ClientLoad, ClientMonitor
from conformance.probes.common import (
    ProbeOutcome,
    Target,
    describe_exchange,
    output_tokens,
    percentile,
    rounded,
    salt_body,
    send,
    target_gone,
)
from conformance.probes.progress import emit as emit_progress
from conformance.probes.workload import WorkItem, default_workload
from conformance.wire.dialect import Dialect
from conformance.wire.registry import dialect

# Checks whose failure means the stream ended early (a dropped stream, not a malformed one).
_INCOMPLETE = ("anthropic.stream.complete", "openai.stream.done", "sse.stream.ends_mid_event")
_GRAMMAR_PREFIXES = ("sse.", "anthropic.stream.", "openai.stream.", "anthropic.response.", "openai.response.")


def ramp_levels(n: int) -> list[int]:
    """1, 2, 4, ... below n, then n."""
    if n < 1:
        raise ValueError(f"concurrency must be at least 1, got {n}")
    levels, k = [], 1
    while k < n:
        levels.append(k)
        k *= 2
    levels.append(n)
    return levels


def _progress(line: str) -> None:
    emit_progress(f"load: {line}")  # the probes' one sink: past pytest's capture in a suite run


@dataclass
class ExchangeRecord:
    level: int
    index: int
    name: str
    raw: RawExchange | None  # None for a loop that never sent (or the last turn's exchange of a loop)
    violations: list[Violation]
    kind: str | None  # None = passed; else what broke
    output_tokens: int | None
    started: float
    finished: float

    loop_title: str = ""

    @property
    def ttft(self) -> float | None:
        return None if self.raw is None or self.loop_title else self.raw.first_content_at

    def describe(self) -> str:
        if self.loop_title:
            return self.loop_title
        return describe_exchange(self.raw) if self.raw is not None else "not sent"


@dataclass
class LevelStats:
    level: int
    records: list[ExchangeRecord] = field(default_factory=list)
    wall_s: float = 0.0
    gone: str | None = None
    skipped: int = 0  # not sent: the level had already broken
    client: ClientLoad | None = None  # the probe's own CPU and loop lag while the level ran

    @property
    def client_limited(self) -> str | None:
        return self.client.limited_by if self.client is not None else None

    @property
    def failures(self) -> list[ExchangeRecord]:
        return [r for r in self.records if r.kind is not None]

    @property
    def ok(self) -> bool:
        return not self.failures

    def what_broke(self) -> dict[str, int]:
        return dict(Counter(r.kind for r in self.failures))

    def figures(self) -> dict[str, Any]:
        good = [r for r in self.records if r.kind is None]
        toks = sum(r.output_tokens or 0 for r in good)
        ttfts = [r.ttft for r in good if r.ttft is not None]
        return {
            "level": self.level,
            "sent": len(self.records),
            "not_sent": self.skipped,
            "ok": len(good),
            "wall_s": rounded(self.wall_s),
            "output_tokens": toks,
            "output_tokens_per_s": rounded(toks / self.wall_s if self.wall_s > 0 else None, 1),
            "ttft_p50_s": rounded(percentile(ttfts, 50)),
            "ttft_p95_s": rounded(percentile(ttfts, 95)),
            "what_broke": self.what_broke(),
            **(self.client.figures() if self.client is not None else {}),
        }


def classify_loop(report) -> str | None:
    """What broke in a whole agent loop: the kind of its last exchange, else the loop checks that failed."""
    if report.passed:
        return None
    last = report.turns[-1] if report.turns else None
    if last is not None and last.raw is not None:
        kind = classify(last.raw, list(getattr(last.verdict, "violations", []) or []))
        if kind:
            return kind
    return "agent loop incomplete (" + ", ".join(report.check_ids) + ")"


def classify(raw: RawExchange, violations: list[Violation]) -> str | None:
    """What broke in one exchange, as a short kind; None when it passed."""
    if raw.error_kind == "connect":
        return "connection refused"
    if raw.error_kind in ("deadline_first_byte", "deadline_first_content", "deadline_total"):
        return "deadline exceeded (hang)"
    if raw.error_kind == "read":
        return "dropped stream"
    if raw.error_kind is not None:
        return f"transport error ({raw.error_kind})"
    if raw.status is not None and raw.status >= 500:
        return "5xx"
    if raw.status is not None and raw.status >= 400:
        return "4xx refusal"
    errs = [v for v in violations if v.is_error]
    if not errs:
        return None
    if any(v.check_id in _INCOMPLETE for v in errs):
        return "dropped stream"
    if any(v.check_id.startswith(_GRAMMAR_PREFIXES) for v in errs):
        return "malformed events"
    return "invalid exchange (" + ", ".join(sorted({v.check_id for v in errs})) + ")"


def judge_record(raw: RawExchange, request: dict[str, Any], wire: Dialect) -> tuple[list[Violation], int | None]:
    """What a load record keeps of the judge's verdict: the violations and the output tokens."""
    verdict = check_exchange(raw, request, wire=wire)
    return list(verdict.violations), output_tokens(verdict.message, wire)


async def run_level(target: Target, items: list[WorkItem], level: int, *, rounds: int = 1,
                    client_delay_s: float = 0.0, progress=_progress, place: str = "") -> LevelStats:
    """`level` requests in flight at once, every exchange judged, the client's own load measured.

    Each level sends the whole workload at least once, and at least `level * rounds` requests;
    from `senders.SPLIT_FROM` requests the level is split across sender processes (module rules).
    `client_delay_s` is the ClientMonitor test hook; `progress(line)` gets the progress lines
    (`place`: "level 2 of 5").
    """
    total = max(level * rounds, len(items))
    progress(f"{place or 'level'}: concurrency {level}, {total} requests")
    stats = None
    if total >= senders.SPLIT_FROM and level >= 2 and senders.process_count() > 1:
        slot = senders.split_slot()
        if slot.acquire(blocking=False):  # one split level at a time in this process
            try:
                if await asyncio.to_thread(senders.start):  # before the level's clock starts
                    stats = await _run_level_split(target, items, level, total, client_delay_s)
            except senders.SenderGone:
                stats = None  # a sender died: this level and every later one run in this process
            finally:
                slot.release()
    if stats is None:
        async with ClientMonitor(delay_s=client_delay_s) as monitor:
            t0 = time.monotonic()
            records = await _run_slots(target, items, level, level, list(range(total)), t0, asyncio.Event())
            stats = LevelStats(level, records, time.monotonic() - t0, skipped=total - len(records))
        stats.client = monitor.result
    if not stats.ok:
        stats.gone = await target_gone(target)
    limited = stats.client_limited
    progress(f"{place or 'level'} (concurrency {level}) done: {len(stats.records)} sent, {len(stats.failures)} failed, "
             f"{stats.wall_s:.1f} s; client CPU {stats.client.cpu_share:.0%}, loop lag p95 "
             f"{stats.client.lag_p95_s * 1000:.0f} ms" + (f"; CLIENT-LIMITED ({limited})" if limited else ""))
    return stats


async def _run_level_split(target: Target, items: list[WorkItem], level: int, total: int,
                           client_delay_s: float) -> LevelStats:
    """The level's slots and requests dealt round-robin to the sender processes; the records
    and the client loads merged. The monotonic clock is the machine's, so every sender places
    its requests on this process's t0."""
    n = min(senders.process_count(), level)
    # The engine process handle stays here; the wire travels by name (a Dialect holds modules).
    portable = dataclasses.replace(target, process=None, wire=target.wire.name)
    senders.clear_flag()
    t0 = time.monotonic()
    shares = await senders.call_all([
        (run_share, (portable, items, level, level // n + (k < level % n), list(range(k, total, n)), t0,
                     client_delay_s)) for k in range(n)])
    wall = time.monotonic() - t0
    records = sorted((r for share, _ in shares for r in share), key=lambda r: r.index)  # each share sorted
    stats = LevelStats(level, records, wall, skipped=total - len(records))
    stats.client = ClientLoad.merged([load for _, load in shares], wall)
    return stats


def run_share(target: Target, items: list[WorkItem], level: int, slots: int, indices: list[int], t0: float,
              client_delay_s: float) -> tuple[list[ExchangeRecord], ClientLoad]:
    """In a sender process: `slots` of the level over `indices`, judged and monitored here
    (`target.wire` arrives as the wire's name)."""
    target = dataclasses.replace(target, wire=dialect(target.wire))

    async def share() -> tuple[list[ExchangeRecord], ClientLoad]:
        async with ClientMonitor(delay_s=client_delay_s) as monitor:
            records = await _run_slots(target, items, level, slots, indices, t0, senders.broken())
        # A passing exchange travels back without its bytes (its status and timings are what the
        # figures read); a failing one whole, for its verdict and report.
        for record in records:
            if record.kind is None and record.raw is not None:
                record.raw = dataclasses.replace(record.raw, chunks=[], request_body=b"")
        return records, monitor.result

    return asyncio.run(share())


async def _run_slots(target: Target, items: list[WorkItem], level: int, slots: int, indices: list[int],
                     t0: float, broken) -> list[ExchangeRecord]:
    """`slots` requests in flight over `indices` (module rules); `broken` is the level's
    fail-fast flag (`is_set()`, `set()`): this process's, or the one the senders share."""
    pool = ThreadPoolExecutor(max_workers=slots, thread_name_prefix="probe-loop")  # loops in flight = slots
    # One judging thread: judges in several threads would only take turns on the interpreter lock
    # with each other and with the sending loop.
    judge_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="probe-judge")
    taken = iter(indices)  # shared by the slots: each request is taken by exactly one
    judging: list[asyncio.Future] = []

    async def one_loop(i: int, item: WorkItem) -> ExchangeRecord:
        started = time.monotonic() - t0
        report = await asyncio.get_running_loop().run_in_executor(
            pool, lambda: run_scenario(target.base, target.wire, item.scenario, model=target.model,
                                       api_key=target.api_key, deadlines=target.deadlines))
        finished = time.monotonic() - t0
        kind = classify_loop(report)
        if kind is not None:
            broken.set()
        where = f"concurrency {level}, request {i + 1} ({item.name})"
        toks = sum(output_tokens(getattr(t.verdict, "message", None), target.wire) or 0 for t in report.turns)
        last_raw = report.turns[-1].raw if report.turns else None
        return ExchangeRecord(level, i, item.name, last_raw, [v.at(exchange=where) for v in report.violations],
                              kind, toks, started, finished, loop_title=report.title())

    async def judge(i: int, item: WorkItem, body: dict, raw: RawExchange, started: float,
                    finished: float) -> ExchangeRecord:
        found, tokens = await asyncio.get_running_loop().run_in_executor(judge_thread, judge_record, raw, body,
                                                                         target.wire)
        violations = [v.at(exchange=f"concurrency {level}, request {i + 1} ({item.name})") for v in found]
        kind = classify(raw, violations)
        if kind is not None:
            broken.set()
        return ExchangeRecord(level, i, item.name, raw, violations, kind, tokens, started, finished)

    async def slot() -> None:
        # Each slot has its own client and connection: a pool shared by hundreds of streams costs
        # time in the number of connections on every request it assigns (httpcore scans them all).
        one_connection = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        async with target.net.async_client(limits=one_connection) as client:
            for i in taken:
                if broken.is_set():
                    return  # fail fast: the level already broke; a hung target would cost a deadline each
                item = items[i % len(items)]
                if item.scenario is not None:
                    judging.append(asyncio.ensure_future(one_loop(i, item)))
                    await judging[-1]
                    continue
                # a salt per request: the same prompt twice must not be served from a prefix cache
                body = salt_body(item.body, target.wire, f"{target.salt}-c{level}-{i}")
                started = time.monotonic() - t0
                raw = await send(target, body, client=client)
                finished = time.monotonic() - t0
                if not raw.ok:
                    broken.set()  # before judging: the next request must not start
                # judged beside the next send: the slot keeps its request in flight
                judging.append(asyncio.ensure_future(judge(i, item, body, raw, started, finished)))

    try:
        await asyncio.gather(*(slot() for _ in range(min(slots, len(indices)))))
        return sorted(await asyncio.gather(*judging), key=lambda r: r.index)
    finally:
        pool.shutdown(wait=False)
        judge_thread.shutdown(wait=False)


@dataclass
class LoadReport:
    concurrency: int
    levels_planned: list[int]
    levels: list[LevelStats]
    gone_before: str | None = None

    @property
    def broke_at(self) -> int | None:
        for s in self.levels:
            if not s.ok:
                return s.level
        return None

    @property
    def client_limited_levels(self) -> list[int]:
        return [s.level for s in self.levels if s.client_limited]

    def _client_note(self) -> str:
        limited = [s for s in self.levels if s.client_limited]
        if not limited:
            return ""
        return ("; CLIENT-LIMITED at concurrency " + ", ".join(f"{s.level} ({s.client_limited})" for s in limited)
                + ": there the probe, not the target, set the pace, so those levels measure the client")

    def junit_properties(self) -> list[tuple[str, str]]:
        """Per level: the client's CPU, loop lag and the client-limited flag (for the JUnit report)."""
        props = [("load_client_limited_levels", ",".join(map(str, self.client_limited_levels)) or "none")]
        for s in self.levels:
            if s.client is None:
                continue
            f = s.client.figures()
            props += [(f"load_c{s.level}_client_cpu_percent", str(f["client_cpu_percent"])),
                      (f"load_c{s.level}_client_loop_lag_p95_ms", str(f["client_loop_lag_p95_ms"])),
                      (f"load_c{s.level}_client_limited", "yes" if f["client_limited"] else "no")]
        return props

    def acceptance(self) -> ProbeOutcome:
        planned = ", ".join(map(str, self.levels_planned))
        figures = {"concurrency": self.concurrency, "levels_planned": self.levels_planned,
                   "levels": [s.figures() for s in self.levels],
                   "client_limited_levels": self.client_limited_levels}
        if self.gone_before:
            v = registry.violation(CONCURRENCY_ACCEPTANCE,
                                   f"the target is down before the load probe started: {self.gone_before}",
                                   expected="a live target", seen=self.gone_before)
            return ProbeOutcome(CONCURRENCY_ACCEPTANCE, "failed", v.message, [v], figures)
        broken = next((s for s in self.levels if not s.ok), None)
        if broken is None:
            n = sum(len(s.records) for s in self.levels)
            msg = f"all {n} requests passed at every concurrency level ({planned})" + self._client_note()
            return ProbeOutcome(CONCURRENCY_ACCEPTANCE, "passed", msg, [], figures)
        what = ", ".join(f"{count} {kind}" for kind, count in sorted(broken.what_broke().items(), key=lambda kv: -kv[1]))
        passed_levels = [s.level for s in self.levels if s.ok]
        where = ("already with a single request in flight (not a load problem alone)" if broken.level == 1
                 else f"at concurrency {broken.level} (ramp {planned}; passed at {', '.join(map(str, passed_levels)) or 'none'})")
        msg = f"broke {where}: {len(broken.failures)} of {len(broken.records)} requests failed: {what}"
        if broken.skipped:
            msg += f" ({broken.skipped} more not sent once it broke)"
        if broken.gone:
            msg += f"; {broken.gone}"
        if broken.client_limited:
            msg += (f"; the client was saturated at this level ({broken.client_limited}), so the failure "
                    "may be the client's, not the target's")
        first = broken.failures[0]
        headline = registry.violation(
            CONCURRENCY_ACCEPTANCE, msg,
            expected=f"every request accepted and well-formed at concurrency {broken.level}",
            seen=f"first failure: {first.name}: {first.kind} ({first.describe()})",
            exchange=f"concurrency {broken.level}",
        )
        underlying: list[Violation] = []
        for rec in broken.failures[:5]:  # the first few exchange violations travel with the verdict
            underlying.extend(rec.violations[:3])
        figures["broke_at"] = broken.level
        figures["what_broke"] = broken.what_broke()
        figures["target_gone"] = broken.gone
        return ProbeOutcome(CONCURRENCY_ACCEPTANCE, "failed", msg, [headline, *underlying], figures)

    def throughput(self) -> ProbeOutcome:
        rows = [s.figures() for s in self.levels]
        def sec(x: float | None) -> str:
            return "n/a" if x is None else f"{x}s"

        parts = [f"c={r['level']}: {r['output_tokens_per_s']} tok/s, TTFT p50 {sec(r['ttft_p50_s'])} "
                 f"p95 {sec(r['ttft_p95_s'])}"
                 + (f" [CLIENT-LIMITED: {r['client_limited_by']}: the client's ceiling, not the target's]"
                    if r.get("client_limited") else "") for r in rows]
        return ProbeOutcome(THROUGHPUT, "info", "; ".join(parts) or "no level ran", [],
                            {"levels": rows, "client_limited_levels": self.client_limited_levels})

    def table(self) -> str:
        """A plain-text table of the levels (for logs and docs)."""
        lines = ["level  sent  ok  wall_s  out_tok/s  ttft_p50  ttft_p95  cpu%  lag_p95_ms  client_limited  broke"]
        for s in self.levels:
            f = s.figures()
            lines.append(f"{f['level']:>5}  {f['sent']:>4}  {f['ok']:>2}  {f['wall_s']!s:>6}  "
                         f"{f['output_tokens_per_s']!s:>9}  {f['ttft_p50_s']!s:>8}  {f['ttft_p95_s']!s:>8}  "
                         f"{f.get('client_cpu_percent', '')!s:>4}  {f.get('client_loop_lag_p95_ms', '')!s:>10}  "
                         f"{'YES' if f.get('client_limited') else 'no':>14}  {f['what_broke'] or ''}")
        return "\n".join(lines)


async def concurrency_probe(
    target: Target,
    concurrency: int = 4,
    *,
    ramp: bool = True,
    rounds: int = 1,
    items: list[WorkItem] | None = None,
    client_delay_s: float = 0.0,
) -> LoadReport:
    """Run the workload at each level; stop at the first level that breaks.

    `client_delay_s`: the ClientMonitor test hook (a deliberately slow client)."""
    levels = ramp_levels(concurrency) if ramp else [concurrency]
    report = LoadReport(concurrency, levels, [])
    report.gone_before = await target_gone(target)
    if report.gone_before:
        return report
    work = items or default_workload(target)
    for n, level in enumerate(levels, 1):
        stats = await run_level(target, work, level, rounds=rounds, client_delay_s=client_delay_s,
                                place=f"level {n} of {len(levels)}")
        report.levels.append(stats)
        if not stats.ok:
            break  # fail fast: the level that broke is the verdict
    return report
