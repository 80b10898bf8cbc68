"""Locust User classes: captured conversations replayed with Locust's own client, judged sans-IO.

Options (added to Locust's command line; Locust hands them to every worker):
  --conformance-captures DIR     the corpus (default: the bundled captured/)
  --conformance-report-dir DIR   where results/ goes (default reports/locust)
  --conformance-api-key KEY      the key to send (default $CONFORMANCE_API_KEY)
"""

from __future__ import annotations

import itertools
import os
import socket
import time
from pathlib import Path

from locust import HttpUser, events, task

from conformance.core.results import ResultsWriter
from conformance.locust.judge import judge, raw_exchange, workload


@events.init_command_line_parser.add_listener
def _options(parser) -> None:
    parser.add_argument("--conformance-captures", default="", help="captures folder (default: bundled captured/)")
    parser.add_argument("--conformance-report-dir", default="reports/locust", help="report folder (results/ inside)")
    parser.add_argument("--conformance-api-key", default="", help="API key to send (default $CONFORMANCE_API_KEY)")


class _Shared:
    """Per process: the workload, a round-robin position and this process's results writer."""

    work = None
    order = None
    writer = None

    @classmethod
    def setup(cls, options) -> None:
        if cls.work is not None:
            return
        key = options.conformance_api_key or os.environ.get("CONFORMANCE_API_KEY") or None
        cls.work = workload(Path(options.conformance_captures) if options.conformance_captures else None, key)
        cls.order = itertools.cycle(range(len(cls.work)))
        worker = f"locust-{socket.gethostname()}-{os.getpid()}"  # unique across machines too
        cls.writer = ResultsWriter(Path(options.conformance_report_dir) / "results", worker=worker)


class CaptureReplayUser(HttpUser):
    """Replays every captured model request in turn; each response judged by the suite's judge."""

    wait_time = staticmethod(lambda: 0)

    def on_start(self) -> None:
        _Shared.setup(self.environment.parsed_options)

    @task
    def replay(self) -> None:
        work = _Shared.work[next(_Shared.order)]
        start = time.monotonic()
        chunks: list[tuple[float, bytes]] = []
        error = None
        with self.client.post(work.path, data=work.body, headers=work.headers, stream=True, catch_response=True,
                              name=work.case) as resp:
            try:
                for data in resp.raw.stream(65536, decode_content=False):
                    chunks.append((time.monotonic() - start, data))
            except Exception as exc:  # noqa: BLE001 - a broken read is a verdict, not a crash
                error = f"{type(exc).__name__}: {exc}"
            raw = raw_exchange(self.host.rstrip("/") + work.path, work, resp.status_code, dict(resp.headers),
                               chunks, time.monotonic() - start, error)
            failing, records = judge(raw, work, target=self.host)
            _Shared.writer.write_all(records)
            if failing:
                resp.failure(", ".join(failing))
            else:
                resp.success()
