"""Concurrency acceptance: the captured requests and scenario first turns, N at a time and as a ramp.

Rules:
- One request is not an acceptance test. The workload (every captured model request of the
  target's dialect, plus the first turn of every bundled scenario) runs at each level of the ramp
  1, 2, 4, ... N (or only at N), `rounds` requests per slot, and every exchange is judged by the
  suite's one judge (`conformance.checks.exchange.check_exchange`).
- A level fails when any exchange fails; the verdict names the level and what broke there, as
  counts of kinds: 5xx, 4xx refusal, dropped stream, malformed events, deadline exceeded (hang),
  connection refused; and whether the target is gone (the engine process exited, or nothing answers).
- Fail fast: once a level fails the ramp stops; if the target is gone before the ramp starts the
  probe fails at once. The run stays bounded by the target's deadlines.
- Figures per level (info; the machines are shared, so figures are relative): aggregate output
  tokens/s over the level's wall time, and time-to-first-content p50/p95. Each request carries its
  own salt at the start of the system prompt, so no prefix cache or router cache serves it.
- The probe knows its own ceiling: each level records the client's CPU use (the whole process,
  and the event-loop thread alone) and the event loop's lag (a ticker that asks to wake every
  10 ms; how late it wakes). A level is **client-limited** when the client, not the target, set
  the pace: loop lag p95 >= LAG_LIMIT_S, or the loop thread busy >= CPU_LIMIT of the wall time
  (one thread runs every send and receive; the judging runs in worker threads under the same
  GIL). Every figure and verdict of a client-limited level says so (figures, messages, the
  `client_limited` detail and the JUnit properties from `LoadReport.junit_properties`).
- A progress line per level goes to stderr: which level of how many, requests done, wall time.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from conformance.checks import load as _load_checks  # noqa: F401  (registers the load.* ids)
from conformance.checks.exchange import check_exchange
from conformance.clients import CLAUDE_CODE, OPENCODE, profile_for_wire
from conformance.core import registry
from conformance.core.failures import Violation
from conformance.net.transport import RawExchange
from conformance.probes.common import (
    ProbeOutcome,
    Target,
    build_request,
    describe_exchange,
    output_tokens,
    percentile,
    rounded,
    salt_body,
    send,
    target_gone,
)
from conformance.wire.dialect import dialect

# Checks whose failure means the stream ended early (a dropped stream, not a malformed one).
_INCOMPLETE = ("anthropic.stream.complete", "openai.stream.done", "sse.stream.ends_mid_event")
_GRAMMAR_PREFIXES = ("sse.", "anthropic.stream.", "openai.stream.", "anthropic.response.", "openai.response.")


@dataclass
class WorkItem:
    name: str  # capture id#n, scenario:ID (first turn only) or loop:ID (the whole agent loop)
    body: dict[str, Any] | None = None
    scenario: Any = None  # a conformance.loop Scenario: run as a whole loop by the loop driver


# Small tool sets in each client's naming, for scenario first turns (the engine maps abstract
# tools onto offered tools by name, docs/contracts/scenarios.md).
def _tools(api: str) -> list[dict[str, Any]]:
    # The names, argument spelling and tool shape are those of the client that drives the wire.
    claude_code = profile_for_wire(dialect(api)) is CLAUDE_CODE
    path_prop = "file_path" if claude_code else "filePath"
    old_prop, new_prop = ("old_string", "new_string") if claude_code else ("oldString", "newString")
    specs = [
        ("Read", "Read a file", {path_prop: {"type": "string"}}, [path_prop]),
        ("Write", "Write a file", {path_prop: {"type": "string"}, "content": {"type": "string"}}, [path_prop, "content"]),
        ("Edit", "Replace text in a file",
         {path_prop: {"type": "string"}, old_prop: {"type": "string"}, new_prop: {"type": "string"}},
         [path_prop, old_prop, new_prop]),
        ("Bash", "Run a command", {"command": {"type": "string"}}, ["command"]),
    ]
    out = []
    for name, desc, props, required in specs:
        schema = {"type": "object", "properties": props, "required": required, "additionalProperties": False}
        if claude_code:
            out.append({"name": name, "description": desc, "input_schema": schema})
        else:
            out.append({"type": "function", "function": {"name": name.lower(), "description": desc, "parameters": schema}})
    return out


def scenario_items(target: Target, scenarios_dir: Path | None = None, max_tokens: int = 1024) -> list[WorkItem]:
    """The first turn of every bundled scenario, in the target's dialect."""
    from conformance.core.paths import fixtures_dir

    folder = scenarios_dir or (fixtures_dir() / "scenarios")
    items = []
    for path in sorted(Path(folder).glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("format") != "conformance.scenario":
            continue  # the schema file and anything else
        extra: dict[str, Any] = {"tools": _tools(target.api)}
        if profile_for_wire(target.dialect) is OPENCODE:  # opencode sends tool_choice auto
            extra["tool_choice"] = "auto"
        body = build_request(target, data["prompt"], max_tokens=max_tokens,
                             system="You are a coding agent. Working directory: /work/sandbox", extra=extra,
                             salt="")  # salted per request by run_level
        items.append(WorkItem(f"scenario:{data['id']}", body))
    return items


def capture_items(target: Target, captures_root: Path | None = None) -> list[WorkItem]:
    """Every captured model request of the target's dialect, with the model mapped to the target's."""
    from conformance.capture.corpus import iter_capture_files
    from conformance.capture.format import load_capture
    from conformance.core.paths import captured_dir

    try:
        root = captures_root or captured_dir()
    except FileNotFoundError:
        return []
    wanted = target.dialect.generation_path.removeprefix("/v1")
    items = []
    for path in iter_capture_files(root):
        try:
            cap = load_capture(path)
        except ValueError:
            continue  # not a capture (README, manifest variants): the replay tests report those
        for n, ex in enumerate(cap.main_exchanges(), 1):
            if not ex.request.path.rstrip("/").endswith(wanted) or not isinstance(ex.request.body, dict):
                continue
            body = dict(ex.request.body, model=target.model)
            items.append(WorkItem(f"{cap.id}#{n}", body))
    return items


def loop_items(api: str, scenarios_dir: Path | None = None) -> list[WorkItem]:
    """Every bundled scenario the client of `api` can run, as a whole agent loop (conformance.loop's
    driver, real client shapes): a scenario that needs an attached MCP server or a resumed session
    runs only where that wire's client does so."""
    from conformance.loop.driver import scenario_runs_on
    from conformance.loop.scenarios import load_scenarios

    return [WorkItem(f"loop:{s.id}", scenario=s) for s in load_scenarios(scenarios_dir)
            if scenario_runs_on(s, dialect(api))]


def default_workload(target: Target, *, captures_root: Path | None = None, scenarios_dir: Path | None = None,
                     include_captures: bool = True, include_loops: bool = True) -> list[WorkItem]:
    items: list[WorkItem] = []
    if include_captures:
        items += capture_items(target, captures_root)
    if include_loops:
        items += loop_items(target.api, scenarios_dir)
    if not items:
        items.append(WorkItem("probe:short", build_request(target, "Say hello in five words.", max_tokens=64, salt="")))
    return items


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


# ----------------------------------------------------------------------------- the client's own load
LAG_LIMIT_S = 0.1  # event-loop lag p95 at or past this: the client set the pace
CPU_LIMIT = 0.9  # the event-loop thread busy for this share of the wall time: the client set the pace
TICK_S = 0.01


@dataclass
class ClientLoad:
    """What the probe's own process did while one level ran."""

    wall_s: float
    cpu_s: float  # CPU time of the whole process (every thread; an in-process server counts too)
    loop_cpu_s: float  # CPU time of the event-loop thread alone
    lags: list[float]  # how late each tick woke, seconds

    @property
    def cpu_share(self) -> float:
        return self.cpu_s / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def loop_cpu_share(self) -> float:
        return self.loop_cpu_s / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def lag_p95_s(self) -> float:
        return percentile(self.lags, 95) or 0.0

    @property
    def lag_max_s(self) -> float:
        return max(self.lags, default=0.0)

    @property
    def limited_by(self) -> str | None:
        """Why the client set the pace at this level, or None when it did not."""
        why = []
        if self.lag_p95_s >= LAG_LIMIT_S:
            why.append(f"event-loop lag p95 {self.lag_p95_s * 1000:.0f} ms >= {LAG_LIMIT_S * 1000:.0f} ms")
        if self.loop_cpu_share >= CPU_LIMIT:
            why.append(f"event-loop thread busy {self.loop_cpu_share:.0%} of the wall time")
        return "; ".join(why) or None

    def figures(self) -> dict[str, Any]:
        return {"client_cpu_percent": round(100 * self.cpu_share, 1),
                "client_loop_cpu_percent": round(100 * self.loop_cpu_share, 1),
                "client_loop_lag_p95_ms": round(self.lag_p95_s * 1000, 1),
                "client_loop_lag_max_ms": round(self.lag_max_s * 1000, 1),
                "client_limited": self.limited_by is not None,
                "client_limited_by": self.limited_by}


class ClientMonitor:
    """`async with ClientMonitor() as mon:` around a level; `mon.result` afterwards.

    `delay_s` is a test hook: every tick the loop is blocked that long with time.sleep, so the
    loop lags without the process burning CPU (a slow client, not a CPU hog)."""

    def __init__(self, *, delay_s: float = 0.0) -> None:
        self.delay_s = delay_s
        self.result: ClientLoad | None = None
        self._lags: list[float] = []
        self._tasks: list[asyncio.Task] = []

    async def _tick(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            t = loop.time()
            await asyncio.sleep(TICK_S)
            self._lags.append(max(0.0, loop.time() - t - TICK_S))

    async def _delay(self) -> None:
        while True:
            await asyncio.sleep(TICK_S)
            time.sleep(self.delay_s)  # blocks the loop on purpose (the test hook)

    async def __aenter__(self) -> ClientMonitor:
        self._t0, self._cpu0, self._loop_cpu0 = time.monotonic(), time.process_time(), time.thread_time()
        self._thread = threading.get_ident()
        self._tasks.append(asyncio.create_task(self._tick()))
        if self.delay_s > 0:
            self._tasks.append(asyncio.create_task(self._delay()))
        return self

    async def __aexit__(self, *exc) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        assert threading.get_ident() == self._thread, "a monitor is entered and left on its loop's thread"
        self.result = ClientLoad(time.monotonic() - self._t0, time.process_time() - self._cpu0,
                                 time.thread_time() - self._loop_cpu0, list(self._lags))


def _progress(line: str) -> None:
    print(f"load: {line}", file=sys.stderr, flush=True)


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


async def run_level(target: Target, items: list[WorkItem], level: int, *, rounds: int = 1,
                    client_delay_s: float = 0.0, progress=_progress, place: str = "") -> LevelStats:
    """`level` requests in flight at once, every exchange judged, the client's own load measured.

    Each level sends the whole workload at least once, and at least `level * rounds` requests.
    `client_delay_s` is the ClientMonitor test hook; `progress(line)` gets the progress lines
    (`place`: "level 2 of 5").
    """
    async with ClientMonitor(delay_s=client_delay_s) as monitor:
        stats = await _run_level(target, items, level, rounds=rounds, progress=progress, place=place)
    stats.client = monitor.result
    limited = stats.client_limited
    progress(f"{place or 'level'} (concurrency {level}) done: {len(stats.records)} sent, {len(stats.failures)} failed, "
             f"{stats.wall_s:.1f} s; client CPU {stats.client.cpu_share:.0%}, loop lag p95 "
             f"{stats.client.lag_p95_s * 1000:.0f} ms" + (f"; CLIENT-LIMITED ({limited})" if limited else ""))
    return stats


async def _run_level(target: Target, items: list[WorkItem], level: int, *, rounds: int, progress,
                     place: str) -> LevelStats:
    stats = LevelStats(level)
    sem = asyncio.Semaphore(level)
    total = max(level * rounds, len(items))
    progress(f"{place or 'level'}: concurrency {level}, {total} requests")
    t0 = time.monotonic()
    limits = httpx.Limits(max_connections=level + 2, max_keepalive_connections=level + 2)
    pool = ThreadPoolExecutor(max_workers=level, thread_name_prefix="probe-loop")  # loops in flight = level
    async with target.net.async_client(limits=limits) as client:  # one pooled client for the level
        broken = asyncio.Event()

        async def one_loop(i: int, item: WorkItem) -> ExchangeRecord | None:
            from conformance.loop.driver import run_scenario

            async with sem:
                if broken.is_set():
                    return None
                started = time.monotonic() - t0
                report = await asyncio.get_running_loop().run_in_executor(
                    pool, lambda: run_scenario(target.base, target.dialect, item.scenario, model=target.model,
                                               api_key=target.api_key, deadlines=target.deadlines))
                finished = time.monotonic() - t0
                kind = classify_loop(report)
                if kind is not None:
                    broken.set()
            where = f"concurrency {level}, request {i + 1} ({item.name})"
            toks = sum(output_tokens(getattr(t.verdict, "message", None), target.api) or 0 for t in report.turns)
            last_raw = report.turns[-1].raw if report.turns else None
            return ExchangeRecord(level, i, item.name, last_raw, [v.at(exchange=where) for v in report.violations],
                                  kind, toks, started, finished, loop_title=report.title())

        async def one(i: int) -> ExchangeRecord | None:
            item = items[i % len(items)]
            if item.scenario is not None:
                return await one_loop(i, item)
            # a salt per request: the same prompt twice must not be served from a prefix cache
            body = salt_body(item.body, target.api, f"{target.salt}-c{level}-{i}")
            async with sem:
                if broken.is_set():
                    return None  # fail fast: the level already broke; a hung target would cost a deadline each
                started = time.monotonic() - t0
                raw = await send(target, body, client=client)
                finished = time.monotonic() - t0
                if not raw.ok:
                    broken.set()  # before judging: the next slot must not start
            judged = await asyncio.to_thread(check_exchange, raw, body, api=target.api)
            violations = [v.at(exchange=f"concurrency {level}, request {i + 1} ({item.name})")
                          for v in judged.violations]
            kind = classify(raw, violations)
            if kind is not None:
                broken.set()
            return ExchangeRecord(level, i, item.name, raw, violations, kind,
                                  output_tokens(judged.message, target.api), started, finished)

        try:
            done = await asyncio.gather(*(one(i) for i in range(total)))
        finally:
            pool.shutdown(wait=False)
        stats.records = [r for r in done if r is not None]
        stats.skipped = total - len(stats.records)
    stats.wall_s = time.monotonic() - t0
    if not stats.ok:
        stats.gone = await target_gone(target)
    return stats


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
            v = registry.violation("load.concurrency_acceptance",
                                   f"the target is down before the load probe started: {self.gone_before}",
                                   expected="a live target", seen=self.gone_before)
            return ProbeOutcome("load.concurrency_acceptance", "failed", v.message, [v], figures)
        broken = next((s for s in self.levels if not s.ok), None)
        if broken is None:
            n = sum(len(s.records) for s in self.levels)
            msg = f"all {n} requests passed at every concurrency level ({planned})" + self._client_note()
            return ProbeOutcome("load.concurrency_acceptance", "passed", msg, [], figures)
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
            "load.concurrency_acceptance", msg,
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
        return ProbeOutcome("load.concurrency_acceptance", "failed", msg, [headline, *underlying], figures)

    def throughput(self) -> ProbeOutcome:
        rows = [s.figures() for s in self.levels]
        def sec(x: float | None) -> str:
            return "n/a" if x is None else f"{x}s"

        parts = [f"c={r['level']}: {r['output_tokens_per_s']} tok/s, TTFT p50 {sec(r['ttft_p50_s'])} "
                 f"p95 {sec(r['ttft_p95_s'])}"
                 + (f" [CLIENT-LIMITED: {r['client_limited_by']}: the client's ceiling, not the target's]"
                    if r.get("client_limited") else "") for r in rows]
        return ProbeOutcome("load.throughput", "info", "; ".join(parts) or "no level ran", [],
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
