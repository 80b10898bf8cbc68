"""What a Locust user does, without Locust: the captured workload and the agent-loop workload,
the raw exchange built from bytes and arrival times, the verdicts and their results records.

Rules:
- The capture workload is every model request of every capture under the corpus (the one corpus
  scan, `conformance.capture.corpus.load_captures`), in order, prepared by the one
  replay-one-capture (`conformance.suite.replay.steps`: byte-exact body, nothing rewritten) with
  the captured headers through `conformance.net.client.headers_for`, and judged by its judge
  (`conformance.suite.replay.check`), so the judge sees what `conformance replay` sees.
- The loop workload is every bundled scenario on every wire whose client runs it (the pairs the
  suite's test_loop runs, `scenario_runs_on`). `run_loop` runs one with the suite's own driver
  (`conformance.loop.driver.LoopDriver`: the captured first request, the model's output and the
  sandboxed tool results appended each turn, every turn judged by `check_exchange`); only the
  sending is the caller's (`send(wire, path, headers, body, stream) -> RawExchange`: Locust's client
  in a worker, httpx in the single-process comparison). Its records are the driver's
  (`LoopReport.results`) with the case `<scenario>[<wire name>]`, so one scenario on two wires stays
  two cases in a merged report.
- `judge(...)` is sans-IO: status, headers and (arrival time, bytes) chunks in, a verdict and
  results records out. A clean exchange is one `passed` record of
  `load.concurrency_acceptance`; each failing check id is one `failed` record (its first
  violation's message), so records from any number of workers merge by plain concatenation.
- No import of locust or gevent here: the single-process comparison in the tests runs this module
  without them.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.capture.corpus import load_captures
from conformance.checks.load import SOAK_STABLE
from conformance.core.paths import captured_dir
from conformance.core.results import Result
from conformance.loop.conversation import LOOP_WIRES
from conformance.loop.driver import LoopDriver, scenario_runs_on
from conformance.loop.scenarios import load_scenarios
from conformance.net.client import headers_for
from conformance.net.transport import ContentWatch, RawExchange
from conformance.probes.soak import session_from_loop, session_record
from conformance.suite.replay import Step, check, steps
from conformance.wire.dialect import Dialect

PASS_CHECK = "load.concurrency_acceptance"  # an exchange accepted and well-formed under load


@dataclass(frozen=True)
class Work:
    case: str  # capture id #n
    step: Step  # the captured request as the replay sends it (byte-exact)
    headers: dict[str, str]

    @property
    def wire(self) -> Dialect:
        return self.step.wire

    @property
    def path(self) -> str:
        """The path with the captured query."""
        return self.step.exchange.request.url_path

    @property
    def body(self) -> bytes:
        return self.step.data

    @property
    def request(self) -> dict[str, Any]:
        """The parsed body (what the judge compares the response with)."""
        return self.step.request


def workload(captures: Path | None = None, api_key: str | None = None) -> list[Work]:
    """Every captured model request with a JSON body, in corpus order."""
    root = Path(captures) if captures else captured_dir()
    out = [Work(f"{cap.id}#{step.turn}", step, headers_for(step.wire, api_key, step.exchange.request.headers))
           for cap in load_captures(root) for step in steps(cap) if step.body is not None]
    if not out:
        raise ValueError(f"no captured model request under {root}: pass a corpus folder (--conformance-captures)")
    return out


def raw_exchange(url: str, work: Work, status: int | None, headers: dict[str, str],
                 chunks: list[tuple[float, bytes]], elapsed: float, error: str | None = None) -> RawExchange:
    """The transport's record of an exchange, from what the Locust client saw."""
    return exchange_record(url, work.wire, work.headers, work.body, bool(work.request.get("stream")), status,
                           headers, chunks, elapsed, error)


def exchange_record(url: str, wire: Dialect, sent_headers: dict[str, str], body: bytes, stream: bool,
                    status: int | None, headers: dict[str, str], chunks: list[tuple[float, bytes]],
                    elapsed: float, error: str | None = None) -> RawExchange:
    """A RawExchange from a request and what came back: first byte and first content are found
    the way the transport finds them (`ContentWatch` over the wire's content predicate)."""
    raw = RawExchange("POST", url, dict(sent_headers), body, status=status,
                      response_headers={k.lower(): v for k, v in headers.items()}, chunks=list(chunks),
                      elapsed=elapsed, bytes_read=sum(len(c) for _, c in chunks))
    if error is not None:
        raw.error_kind, raw.error = "read", error
    if chunks:
        raw.first_byte_at = chunks[0][0]
        watch = ContentWatch(wire.content_started if stream else None)
        for t, data in chunks:
            if watch.feed(data):
                raw.first_content_at = t
                break
    return raw


def judge(raw: RawExchange, work: Work, *, target: str = "") -> tuple[list[str], list[Result]]:
    """(failing check ids, results records) for one exchange."""
    verdict = check(work.step, raw)
    errors = [v for v in verdict.violations if v.is_error]
    base = {"test_id": f"locust:{work.case}", "target": target, "api": work.wire.name, "case": work.case,
            "client": "locust", "model": str(work.request.get("model", ""))}
    if not errors:
        return [], [Result(check_id=PASS_CHECK, outcome="passed", message="accepted and well-formed", **base)]
    ids = sorted({v.check_id for v in errors})
    records = []
    for cid in ids:
        first = next(v for v in errors if v.check_id == cid)
        records.append(Result(check_id=cid, outcome="failed", message=first.message[:500],
                              violations=[v.to_dict() for v in errors if v.check_id == cid][:5], **base))
    return ids, records


# ----------------------------------------------------------------------------- agent loops
@dataclass(frozen=True)
class LoopWork:
    case: str  # <scenario id>[<wire name>]
    scenario: Any  # conformance.loop.scenarios.Scenario
    wire: Dialect


def loop_workload(scenarios_dir: Path | None = None) -> list[LoopWork]:
    """Every bundled scenario on every wire whose client runs it (the suite's test_loop cases)."""
    out = [LoopWork(f"{s.id}[{wire.name}]", s, wire) for s in load_scenarios(scenarios_dir) for wire in LOOP_WIRES
           if scenario_runs_on(s, wire)]
    if not out:
        raise ValueError(f"no scenario under {scenarios_dir or 'fixtures/scenarios'} runs on any wire")
    return out


def run_loop(work: LoopWork, target: str, send, *, api_key: str | None = None, captures: Path | None = None,
             workdir: Path | None = None):
    """Run one scenario with the suite's driver, sending with `send(wire, path, headers, body, stream)`.
    Returns (failing check ids, results records, the LoopReport)."""
    driver: LoopDriver | None = None

    def sender(req, body: bytes) -> RawExchange:
        stream = isinstance(req.body, dict) and bool(req.body.get("stream"))
        return send(work.wire, req.url_path, headers_for(work.wire, driver.api_key, req.headers), body, stream)

    driver = LoopDriver(target, work.wire, api_key=api_key, captured_root=captures, workdir=workdir, sender=sender)
    start = time.monotonic()
    report = driver.run(work.scenario)
    model = str(driver.template.request.body.get("model", "")) if isinstance(driver.template.request.body, dict) else ""
    records = [dataclasses.replace(r, case=work.case)
               for r in report.results(f"locust:loop:{work.case}", model=model,
                                       duration_s=round(time.monotonic() - start, 3))]
    return report.check_ids, records, report


SOAK_SESSION_TEST = "locust:soak"


def soak_session_result(work: LoopWork, report, started_at: float, user: int) -> Result:
    """One agent-loop run as the soak's session record (times in seconds since the epoch), an info
    record of `load.soak_stable` that `python -m conformance.locust merge` folds into the verdict."""
    rec = session_from_loop(report, work.wire, user, 0, started_at, f"loop:{work.case}")
    return Result(SOAK_SESSION_TEST, SOAK_STABLE, "info", case=work.case, client="locust",
                  details={"soak_session": session_record(rec)})
