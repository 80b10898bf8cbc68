"""What a Locust user does per exchange, without Locust: the captured workload, the raw
exchange built from bytes and arrival times, the verdict and its results records.

Rules:
- The workload is every model request of every capture under the corpus (`main_exchanges`),
  in order; the request goes out as the capture has it (byte-exact body, captured headers through
  `conformance.net.client.headers_for`), so the judge sees what `conformance replay` sees.
- `judge(...)` is sans-IO: status, headers and (arrival time, bytes) chunks in, a verdict and
  results records out. A clean exchange is one `passed` record of
  `load.concurrency_acceptance`; each failing check id is one `failed` record (its first
  violation's message), so records from any number of workers merge by plain concatenation.
- No import of locust or gevent here: the single-process comparison in the tests runs this module
  without them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.core.results import Result
from conformance.net.transport import RawExchange

PASS_CHECK = "load.concurrency_acceptance"  # an exchange accepted and well-formed under load


@dataclass(frozen=True)
class Work:
    case: str  # capture id #n
    api: str
    path: str  # path with the captured query
    body: bytes
    request: dict[str, Any]  # the parsed body (what the judge compares the response with)
    headers: dict[str, str]


def workload(captures: Path | None = None, api_key: str | None = None) -> list[Work]:
    """Every captured model request, in corpus order."""
    from conformance.capture.format import load_captures
    from conformance.core.paths import captured_dir
    from conformance.net.client import headers_for

    root = Path(captures) if captures else captured_dir()
    out = []
    for cap in load_captures(root):
        for n, ex in enumerate(cap.main_exchanges(), 1):
            if not isinstance(ex.request.body, dict):
                continue
            out.append(Work(f"{cap.id}#{n}", ex.request.api, ex.request.url_path, ex.request.body_bytes(),
                            ex.request.body, headers_for(ex.request.api, api_key, ex.request.headers)))
    if not out:
        raise ValueError(f"no captured model request under {root}: pass a corpus folder (--conformance-captures)")
    return out


def raw_exchange(url: str, work: Work, status: int | None, headers: dict[str, str],
                 chunks: list[tuple[float, bytes]], elapsed: float, error: str | None = None) -> RawExchange:
    """The transport's record of an exchange, from what the Locust client saw."""
    from conformance.wire.dialect import DIALECTS

    raw = RawExchange("POST", url, dict(work.headers), work.body, status=status,
                      response_headers={k.lower(): v for k, v in headers.items()}, chunks=list(chunks),
                      elapsed=elapsed)
    if error is not None:
        raw.error_kind, raw.error = "read", error
    if chunks:
        raw.first_byte_at = chunks[0][0]
        dialect = DIALECTS.get(work.api)
        seen = b""
        for t, data in chunks:
            seen += data
            if dialect is None or not work.request.get("stream") or dialect.content_started(seen):
                raw.first_content_at = t
                break
    return raw


def judge(raw: RawExchange, work: Work, *, target: str = "") -> tuple[list[str], list[Result]]:
    """(failing check ids, results records) for one exchange."""
    from conformance.checks.exchange import check_exchange

    verdict = check_exchange(raw, work.request, api=work.api)
    errors = [v for v in verdict.violations if v.is_error]
    base = {"test_id": f"locust:{work.case}", "target": target, "api": work.api, "case": work.case,
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
