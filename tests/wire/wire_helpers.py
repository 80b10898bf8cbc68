"""Helpers for the wire tests: the fixture index, judging a fixture, normalising violations."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from conformance.core.paths import fixtures_dir
from conformance.wire.anthropic import grammar as anthropic
from conformance.wire.chat import grammar as openai

PROTOCOLS = {"anthropic": anthropic, "openai": openai}


def streams_dir() -> Path:
    return fixtures_dir() / "streams"


@cache
def index() -> list[dict]:
    return json.loads((streams_dir() / "index.json").read_text(encoding="utf-8"))["fixtures"]


def fixtures(*, valid: bool | None = None, protocol: str | None = None, kind: str | None = None) -> list[dict]:
    return [f for f in index()
            if (valid is None or f["valid"] == valid)
            and (protocol is None or f["protocol"] == protocol)
            and (kind is None or f["kind"] == kind)]


def fixture_id(f: dict) -> str:
    return f["file"].rsplit(".", 1)[0].replace("/valid/", "/").replace("/invalid/", "/bad/")


def body(f: dict) -> bytes:
    return (streams_dir() / f["file"]).read_bytes()


def request(f: dict) -> dict | None:
    rf = f.get("request_file")
    return json.loads((streams_dir() / rf).read_text(encoding="utf-8")) if rf else None


def judge(f: dict):
    """(violations, report-or-None) for a fixture, by its kind."""
    mod = PROTOCOLS[f["protocol"]]
    if f["kind"] == "stream":
        report = mod.check_stream(body(f), request=request(f))
        return report.violations, report
    if f["kind"] == "response":
        return mod.check_response(body(f), request=request(f))[1], None
    return mod.check_error(f.get("status", 400), body(f)), None


def normalise(violations) -> list[dict]:
    """Violations as plain data, stable across runs (what the snapshots hold)."""
    return [v.to_dict() for v in violations]


def sse_event(data: dict, name: str | None = "") -> bytes:
    name = data.get("type") if name == "" else name
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()
