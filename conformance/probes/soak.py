"""Soak: N agent sessions sharing one prefix, replayed for a fixed duration, every exchange judged.

Rules:
- A ramp or a sweep holds each level for seconds; some engines fail only after minutes of
  concurrent long-context sessions that reuse one prefix. The soak holds that state: N sessions
  each replay the bundled agent loops (`conformance.probes.workload.loop_items`, run by the loop
  driver: every turn's context grows by the turns before it) one after another, restarting until
  the duration ends. The sessions run the same loops unsalted, so they share the system prompt and
  the tools, the prefix reuse of real coding agents.
- Per request: TTFT (first content), ITL p95 (gaps between stream chunks after the first content)
  and E2E, placed in time at its session run's start plus the exchanges before it (the client's
  tool execution between turns is not counted: it is small and local). Per session run: whether it
  completed (the loop passed) and whether it met the SLOs.
- Goodput is session runs per hour that completed with every request within the SLOs (TTFT at
  most `slo_ttft_s`, ITL p95 at most `slo_itl_s`); a session run started before the end counts
  when it finishes. SLOs of None are not applied.
- `load.soak_stable` fails when any request fails or any stream is malformed (`classify`), naming
  the time of the first failure and what broke. After the soak one fresh request (salted, short)
  says whether the target recovered by itself: a target that still fails is reported as staying
  dead until restarted.
- Figures over time (`series`, buckets of `bucket_s`): requests finished, output tokens/s, TTFT
  p95 and errors per bucket; report.html draws them (`conformance.report.svg.soak_figure`).
- A failed session waits RESTART_PAUSE_S before it restarts, so a dead target is not hammered.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from conformance.checks.exchange import check_exchange
from conformance.checks.load import SOAK_STABLE
from conformance.core import registry
from conformance.loop.driver import run_scenario
from conformance.probes.common import (
    ProbeOutcome,
    Target,
    build_request,
    output_tokens,
    percentile,
    rounded,
    send,
)
from conformance.probes.load import classify, classify_loop
from conformance.probes.progress import emit as emit_progress
from conformance.probes.workload import WorkItem, loop_items

RESTART_PAUSE_S = 0.5


def _progress(line: str) -> None:
    emit_progress(f"soak: {line}")  # the probes' one sink: past pytest's capture in a suite run


@dataclass
class SoakRequest:
    session: int
    run: int
    turn: int
    at_s: float  # when it started, seconds since the soak started
    ttft_s: float | None
    itl_p95_s: float | None
    e2e_s: float
    output_tokens: int
    kind: str | None  # None = passed; else what broke

    def meets(self, slo_ttft_s: float | None, slo_itl_s: float | None) -> bool:
        if self.kind is not None:
            return False
        if slo_ttft_s is not None and (self.ttft_s is None or self.ttft_s > slo_ttft_s):
            return False
        return slo_itl_s is None or self.itl_p95_s is None or self.itl_p95_s <= slo_itl_s


@dataclass
class SoakSession:
    session: int
    run: int
    loop: str
    started_s: float
    finished_s: float
    completed: bool
    kind: str | None
    requests: list[SoakRequest] = field(default_factory=list)

    def meets(self, slo_ttft_s: float | None, slo_itl_s: float | None) -> bool:
        return self.completed and all(r.meets(slo_ttft_s, slo_itl_s) for r in self.requests)


def itl_p95(raw) -> float | None:
    """The p95 gap between stream chunks after the first content (None for fewer than two)."""
    if raw is None or raw.first_content_at is None:
        return None
    times = [t for t, _ in raw.chunks if t >= raw.first_content_at]
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    return percentile(gaps, 95)


@dataclass
class SoakReport:
    duration_s: float
    sessions: int
    slo_ttft_s: float | None = None
    slo_itl_s: float | None = None
    runs: list[SoakSession] = field(default_factory=list)
    wall_s: float = 0.0
    recovered: bool | None = None
    recovery: str = ""

    @property
    def requests(self) -> list[SoakRequest]:
        return [r for s in self.runs for r in s.requests]

    @property
    def failures(self) -> list[SoakRequest]:
        return sorted((r for r in self.requests if r.kind is not None), key=lambda r: r.at_s)

    @property
    def failed_runs(self) -> list[SoakSession]:
        return sorted((s for s in self.runs if not s.completed), key=lambda s: s.finished_s)

    @property
    def first_failure_s(self) -> float | None:
        times = [r.at_s + r.e2e_s for r in self.failures] + [s.finished_s for s in self.failed_runs]
        return min(times) if times else None

    def goodput_per_hour(self) -> float | None:
        if self.wall_s <= 0:
            return None
        good = sum(1 for s in self.runs if s.meets(self.slo_ttft_s, self.slo_itl_s))
        return good * 3600.0 / self.wall_s

    def series(self, bucket_s: float | None = None) -> list[dict[str, Any]]:
        """Figures per time bucket: requests finished, output tokens/s, TTFT p95, errors."""
        step = bucket_s or max(1.0, round(max(self.wall_s, 1.0) / 20.0, 1))
        buckets = max(1, int(self.wall_s // step) + 1)
        rows = [{"t_s": rounded(i * step), "requests": 0, "output_tokens": 0, "ttfts": [], "errors": 0}
                for i in range(buckets)]
        for r in self.requests:
            row = rows[min(buckets - 1, int((r.at_s + r.e2e_s) // step))]
            row["requests"] += 1
            row["output_tokens"] += r.output_tokens
            row["errors"] += r.kind is not None
            if r.kind is None and r.ttft_s is not None:
                row["ttfts"].append(r.ttft_s)
        for s in self.runs:  # a run that failed with no request to show it (a loop check)
            if not s.completed and all(r.kind is None for r in s.requests):
                rows[min(buckets - 1, int(s.finished_s // step))]["errors"] += 1
        return [{"t_s": row["t_s"], "requests": row["requests"],
                 "output_tokens_per_s": rounded(row["output_tokens"] / step, 1),
                 "ttft_p95_s": rounded(percentile(row["ttfts"], 95)), "errors": row["errors"]} for row in rows]

    def figures(self) -> dict[str, Any]:
        ok = [r for r in self.requests if r.kind is None]
        ttfts = [r.ttft_s for r in ok if r.ttft_s is not None]
        itls = [r.itl_p95_s for r in ok if r.itl_p95_s is not None]
        first = self.first_failure_s
        return {
            "duration_s": self.duration_s, "sessions": self.sessions, "wall_s": rounded(self.wall_s),
            "session_runs": len(self.runs), "session_runs_completed": sum(1 for s in self.runs if s.completed),
            "requests": len(self.requests), "request_errors": len(self.failures),
            "slo_ttft_s": self.slo_ttft_s, "slo_itl_s": self.slo_itl_s,
            "goodput_sessions_per_hour": rounded(self.goodput_per_hour(), 1),
            "ttft_p50_s": rounded(percentile(ttfts, 50)), "ttft_p95_s": rounded(percentile(ttfts, 95)),
            "itl_p95_s": rounded(percentile(itls, 95)),
            "e2e_p95_s": rounded(percentile([r.e2e_s for r in ok], 95)),
            "first_failure_s": rounded(first), "recovered": self.recovered, "recovery": self.recovery,
            "series": self.series(),
        }

    def outcome(self) -> ProbeOutcome:
        figures = self.figures()
        goodput = figures["goodput_sessions_per_hour"]
        summary = (f"{len(self.runs)} session runs ({figures['session_runs_completed']} completed), "
                   f"{len(self.requests)} requests over {self.wall_s:.0f} s with {self.sessions} sessions; "
                   f"goodput {goodput} sessions/h")
        first = self.first_failure_s
        if first is None:
            return ProbeOutcome(SOAK_STABLE, "passed", f"no request failed: {summary}", [], figures)
        what = self.failures[0].kind if self.failures else self.failed_runs[0].kind
        errors = len(self.failures) or len(self.failed_runs)
        msg = (f"the first failure came {first:.1f} s into the soak ({what}); {errors} failed in all; "
               f"{summary}; after the soak: {self.recovery}")
        v = registry.violation(SOAK_STABLE, msg,
                               expected=f"every request of {self.sessions} sessions accepted and well-formed "
                                        f"for {self.duration_s:g} s",
                               seen=f"first failure at {first:.1f} s: {what}")
        return ProbeOutcome(SOAK_STABLE, "failed", msg, [v], figures)


def merged_report(sessions: list[SoakSession], *, sessions_in_flight: int, duration_s: float | None = None,
                  slo_ttft_s: float | None = None, slo_itl_s: float | None = None) -> SoakReport:
    """One SoakReport from session runs recorded elsewhere (Locust workers), their times in one clock
    (seconds since the epoch): the same record the soak probe builds, with no recovery request."""
    if not sessions:
        return SoakReport(duration_s or 0.0, sessions_in_flight, slo_ttft_s, slo_itl_s)
    t0 = min(s.started_s for s in sessions)
    runs = []
    for s in sessions:
        shifted = [dataclasses.replace(r, at_s=r.at_s - t0) for r in s.requests]
        runs.append(dataclasses.replace(s, started_s=s.started_s - t0, finished_s=s.finished_s - t0,
                                        requests=shifted))
    wall = max(s.finished_s for s in runs)
    report = SoakReport(duration_s or rounded(wall), sessions_in_flight, slo_ttft_s, slo_itl_s, runs, wall)
    report.recovery = "not checked (merged from Locust workers: run one request against the target to see)"
    return report


def session_from_loop(report, wire, session: int, run: int, started_s: float, loop: str) -> SoakSession:
    """One session run from a loop driver's report: its requests placed in time from `started_s`.
    The soak and Locust's `LoopUser` both build their records here, so they are the same record."""
    requests, at = [], started_s
    for turn in report.turns:
        raw = turn.raw
        if raw is None:
            continue
        violations = list(getattr(turn.verdict, "violations", []) or [])
        message = getattr(turn.verdict, "message", None)
        requests.append(SoakRequest(session, run, turn.turn, at, raw.first_content_at, itl_p95(raw), raw.elapsed,
                                    output_tokens(message, wire) or 0, classify(raw, violations)))
        at += raw.elapsed
    kind = classify_loop(report)
    return SoakSession(session, run, loop, started_s, at, kind is None, kind, requests)


def session_record(rec: SoakSession) -> dict[str, Any]:
    """A session run as plain data (for a results record), read back by `session_of_record`."""
    return dataclasses.asdict(rec)


def session_of_record(data: dict[str, Any]) -> SoakSession:
    reqs = [SoakRequest(**r) for r in data.get("requests", [])]
    return SoakSession(**{**data, "requests": reqs})


def _session_run(target: Target, item: WorkItem, session: int, run: int, started_s: float) -> SoakSession:
    report = run_scenario(target.base, target.wire, item.scenario, model=target.model,
                          api_key=target.api_key, deadlines=target.deadlines)
    return session_from_loop(report, target.wire, session, run, started_s, item.name)


async def recovery_check(target: Target) -> tuple[bool, str]:
    """One fresh short request after the soak: did the target recover by itself?"""
    body = build_request(target, "Say hello in five words.", max_tokens=32, salt=f"{target.salt}-after-soak")
    raw = await send(target, body)
    judged = await asyncio.to_thread(check_exchange, raw, body, wire=target.wire)
    kind = classify(raw, list(judged.violations))
    if kind is None:
        return True, "one request after the soak passed: the target recovered by itself"
    return False, (f"one request after the soak failed too ({kind}): the target stays dead until it is restarted")


async def soak_probe(target: Target, duration_s: float, sessions: int = 4, *, slo_ttft_s: float | None = None,
                     slo_itl_s: float | None = None, items: list[WorkItem] | None = None,
                     progress=_progress) -> SoakReport:
    """Run `sessions` agent sessions for `duration_s` seconds; judge every exchange; check recovery."""
    if sessions < 1 or not duration_s > 0:
        raise ValueError(f"a soak needs at least one session and a positive duration, got {sessions}, {duration_s}")
    work = [i for i in (items or loop_items(target.wire)) if i.scenario is not None]
    if not work:
        raise ValueError(f"no agent loop runs on the {target.wire.name} wire: the soak has nothing to replay")
    report = SoakReport(duration_s, sessions, slo_ttft_s, slo_itl_s)
    t0 = time.monotonic()
    end = t0 + duration_s
    pool = ThreadPoolExecutor(max_workers=sessions, thread_name_prefix="soak-session")
    loop = asyncio.get_running_loop()

    async def session(index: int) -> None:
        run = 0
        while time.monotonic() < end:
            item = work[run % len(work)]
            started = time.monotonic() - t0
            rec = await loop.run_in_executor(pool, _session_run, target, item, index, run, started)
            rec.finished_s = max(rec.finished_s, time.monotonic() - t0)
            report.runs.append(rec)
            run += 1
            if not rec.completed:
                progress(f"session {index + 1} run {run} ({item.name}) failed at {rec.finished_s:.1f} s: {rec.kind}")
                await asyncio.sleep(RESTART_PAUSE_S)

    progress(f"{sessions} sessions for {duration_s:g} s, replaying {len(work)} agent loops")
    try:
        await asyncio.gather(*(session(i) for i in range(sessions)))
    finally:
        pool.shutdown(wait=False)
    report.wall_s = time.monotonic() - t0
    report.recovered, report.recovery = await recovery_check(target)
    progress(f"done: {len(report.runs)} session runs, {len(report.failures)} failed requests, "
             f"{report.wall_s:.1f} s; {report.recovery}")
    return report
