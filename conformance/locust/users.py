"""Locust User classes: captured conversations and agent loops on Locust's own client, judged sans-IO.

- `CaptureReplayUser` replays every captured model request in turn (round robin per process);
  each response is judged by `check_exchange` and is one Locust request, a failure named by the
  failing check ids.
- `LoopUser` runs the agent-loop scenarios in turn (every scenario on every wire whose client runs
  it, `conformance.locust.judge.loop_workload`) with the suite's loop driver: each turn is sent
  with Locust's client (a Locust request named `loop <scenario>[<wire name>]`, counted for its timing;
  an HTTP status is not a verdict on its own here, the judge's is), and the run as a whole is one
  Locust entry of type LOOP named `<scenario>[<wire name>]`, a failure named by the failing check ids
  (every turn's exchange checks and the loop.* checks). Each run is also written as a soak session
  record (`conformance.probes.soak.session_from_loop`, the soak's own record); `merge` folds them
  into one `load.soak_stable` result, so a Locust run with `--run-time` is a soak of that duration
  with as many sessions as users.
- Locust picks users from both classes by weight; name one on the command line to run only it
  (`locust -f ... LoopUser`).

Options (added to Locust's command line; Locust hands them to every worker):
  --conformance-captures DIR     the corpus (default: the bundled captured/)
  --conformance-report-dir DIR   where results/ goes (default reports/locust); the loop sandboxes
                                 of failing runs stay under sandboxes/ there
  --conformance-api-key KEY      the key to send (default $CONFORMANCE_API_KEY)
  --conformance-api WIRE         LoopUser: the loops of this wire only (a soak: users share a prefix)
"""

from __future__ import annotations

import itertools
import os
import socket
import time
from contextlib import contextmanager
from pathlib import Path

from locust import HttpUser, events, task
from locust.exception import CatchResponseError

from conformance.core.results import ResultsWriter
from conformance.locust.judge import (
    exchange_record,
    judge,
    loop_workload,
    raw_exchange,
    run_loop,
    soak_session_result,
    workload,
)
from conformance.wire.dialect import Dialect


@events.init_command_line_parser.add_listener
def _options(parser) -> None:
    parser.add_argument("--conformance-captures", default="", help="captures folder (default: bundled captured/)")
    parser.add_argument("--conformance-report-dir", default="reports/locust", help="report folder (results/ inside)")
    parser.add_argument("--conformance-api-key", default="", help="API key to send (default $CONFORMANCE_API_KEY)")
    parser.add_argument("--conformance-api", default="", help="LoopUser: run the loops of this wire only, so every "
                        "user shares one system prompt and tool set, as the soak's sessions do (default: every wire)")


class _Shared:
    """Per process: the workloads, their round-robin positions and this process's results writer."""

    options = None
    key = None
    captures = None
    report_dir = None
    writer = None
    _work = None
    _order = None
    _loops = None
    _loop_order = None

    @classmethod
    def setup(cls, options) -> None:
        if cls.options is not None:
            return
        cls.options = options
        cls.key = options.conformance_api_key or os.environ.get("CONFORMANCE_API_KEY") or None
        cls.captures = Path(options.conformance_captures) if options.conformance_captures else None
        cls.report_dir = Path(options.conformance_report_dir)
        worker = f"locust-{socket.gethostname()}-{os.getpid()}"  # unique across machines too
        cls.writer = ResultsWriter(cls.report_dir / "results", worker=worker)

    @classmethod
    def next_capture(cls):
        if cls._work is None:
            cls._work = workload(cls.captures, cls.key)
            cls._order = itertools.cycle(range(len(cls._work)))
        return cls._work[next(cls._order)]

    @classmethod
    def next_loop(cls):
        if cls._loops is None:
            wire = cls.options.conformance_api if cls.options is not None else ""
            cls._loops = [w for w in loop_workload() if not wire or w.wire.name == wire]
            if not cls._loops:
                raise ValueError(f"--conformance-api {wire}: no agent loop runs on that wire")
            cls._loop_order = itertools.cycle(range(len(cls._loops)))
        return cls._loops[next(cls._loop_order)]


def _read(resp, start: float) -> tuple[list[tuple[float, bytes]], str | None]:
    """The raw body as it arrives, with arrival times; a broken read is a verdict, not a crash."""
    chunks: list[tuple[float, bytes]] = []
    try:
        for data in resp.raw.stream(65536, decode_content=False):
            chunks.append((time.monotonic() - start, data))
    except Exception as exc:  # noqa: BLE001
        return chunks, f"{type(exc).__name__}: {exc}"
    return chunks, None


@contextmanager
def _posted(client, path: str, body: bytes, headers: dict[str, str], name: str):
    """POST on Locust's client, the body read as it arrives: (the response, its chunks with
    arrival times, a read error or None, the seconds it took). The caller marks the Locust request
    a success or a failure inside the block."""
    start = time.monotonic()
    with client.post(path, data=body, headers=headers, stream=True, catch_response=True, name=name) as resp:
        chunks, error = _read(resp, start)
        yield resp, chunks, error, time.monotonic() - start


class _JudgedUser(HttpUser):
    """What both users are: no wait between tasks, the process's shared setup on start."""

    abstract = True  # Locust runs only the users below
    wait_time = staticmethod(lambda: 0)

    def on_start(self) -> None:
        _Shared.setup(self.environment.parsed_options)


class CaptureReplayUser(_JudgedUser):
    """Replays every captured model request in turn; each response judged by the suite's judge."""

    @task
    def replay(self) -> None:
        work = _Shared.next_capture()
        with _posted(self.client, work.path, work.body, work.headers, work.case) as (resp, chunks, error, elapsed):
            raw = raw_exchange(self.host.rstrip("/") + work.path, work, resp.status_code, dict(resp.headers),
                               chunks, elapsed, error)
            failing, records = judge(raw, work, target=self.host)
            _Shared.writer.write_all(records)
            if failing:
                resp.failure(", ".join(failing))
            else:
                resp.success()


class LoopUser(_JudgedUser):
    """Runs the agent-loop scenarios in turn with the suite's driver, every turn on Locust's client."""

    @task
    def loop(self) -> None:
        work = _Shared.next_loop()
        base = self.host.rstrip("/")

        def send(wire: Dialect, path: str, headers: dict[str, str], body: bytes, stream: bool):
            with _posted(self.client, path, body, headers, f"loop {work.case}") as (resp, chunks, error, elapsed):
                resp.success()  # the verdict is the loop's entry below, from the judge
                return exchange_record(base + path, wire, headers, body, stream, resp.status_code,
                                       dict(resp.headers), chunks, elapsed, error)

        start, started_at = time.monotonic(), time.time()
        sandboxes = _Shared.report_dir / "sandboxes"
        sandboxes.mkdir(parents=True, exist_ok=True)
        failing, records, report = run_loop(work, self.host, send, api_key=_Shared.key, captures=_Shared.captures,
                                            workdir=sandboxes)
        _Shared.writer.write_all(records)
        # the soak's record of this session run (merged into load.soak_stable by `merge`)
        _Shared.writer.write(soak_session_result(work, report, started_at, id(self)))
        self.environment.events.request.fire(
            request_type="LOOP", name=work.case, response_time=(time.monotonic() - start) * 1000,
            response_length=sum(t.raw.bytes_read for t in report.turns if t.raw is not None), context={},
            exception=CatchResponseError(", ".join(failing)) if failing else None)
