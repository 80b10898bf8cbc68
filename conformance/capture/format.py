"""The capture format (contract, documented in docs/contracts/capture-format.md).

Rules:
- A capture file is one JSON document: `format: "conformance.capture"`, `version: 1`, who sent it
  (client name and version, the command and flags), and a list of exchanges in the order the
  client made them. Each exchange holds the request (method, path, query, headers, body) and,
  when recorded, the response (status, headers, raw body chunks with arrival times).
- Bodies are stored parsed (JSON) so the corpus is human-readable and diffable; `request_bytes()`
  re-serialises them compactly with no ASCII escaping, which is byte-identical to what the
  JavaScript clients (JSON.stringify) sent. Non-JSON bodies are stored as `body_text`.
- Response chunks are stored as they arrived: `{"t": seconds since request start, "data": text}`
  for UTF-8 chunks, `{"t": ..., "b64": ...}` when a chunk is not valid UTF-8 on its own.
  `Chunk.to_json/from_json` is the one encoder of that record: the failure folders'
  `N.response.chunks.jsonl` (conformance.report.artifacts) write it too.
- A response body past the recorder's cap (the capture proxy's `max_body_bytes`) is cut: the
  chunks stop at the cap and the response says `"truncated": {"kept": bytes, "of": bytes}`, the
  same marker a failure folder's chunk records use. Readers take the kept chunks as the whole
  recorded body and must not judge the cut end as the upstream's.
- Loading an unknown format or version fails loudly with what was found and what is supported.
- Header values are stored already redacted: this module never writes a secret it is handed
  unredacted because the proxy redacts before calling `save_capture` (see conformance.capture.redact);
  what it writes passes through the run's scrubber too (conformance.core.secrets).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.core.jsonfile import read_json
from conformance.core.secrets import scrub_text
from conformance.wire.registry import dialect_for_path

FORMAT = "conformance.capture"
VERSION = 1


# A request that asks for at most this many tokens checks the quota or the connection (Claude
# Code's quota check asks for one); no test takes it for a turn of the conversation.
PROBE_OUTPUT_CAP = 1


class CaptureFormatError(ValueError):
    pass


@dataclass
class Chunk:
    t: float
    data: bytes

    def to_json(self) -> dict[str, Any]:
        try:
            return {"t": round(self.t, 6), "data": self.data.decode("utf-8")}
        except UnicodeDecodeError:
            return {"t": round(self.t, 6), "b64": base64.b64encode(self.data).decode("ascii")}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Chunk:
        if "data" in d:
            return cls(float(d["t"]), d["data"].encode("utf-8"))
        if "b64" in d:
            return cls(float(d["t"]), base64.b64decode(d["b64"]))
        raise CaptureFormatError(f"response chunk needs 'data' or 'b64', got keys {sorted(d)}")


@dataclass
class CapturedRequest:
    method: str
    path: str  # without query, e.g. /v1/messages
    query: str = ""  # raw query string without '?', e.g. beta=true
    headers: dict[str, str] = field(default_factory=dict)  # lower-case names, redacted values
    body: Any = None  # parsed JSON body, or None
    body_text: str | None = None  # a body that is not JSON

    def body_bytes(self) -> bytes:
        """The body as the client sent it (compact JSON, UTF-8, like JSON.stringify)."""
        if self.body is not None:
            return json.dumps(self.body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        if self.body_text is not None:
            return self.body_text.encode("utf-8")
        return b""

    @property
    def url_path(self) -> str:
        return self.path + (f"?{self.query}" if self.query else "")

    @property
    def api(self) -> str:
        """anthropic | openai | responses | other: the name of the path's wire (`dialect_for_path`).
        Derived, never stored, so a capture recorded before a wire was known loads with it."""
        wire = dialect_for_path(self.path)
        return wire.name if wire is not None else "other"


@dataclass
class CapturedResponse:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    chunks: list[Chunk] = field(default_factory=list)
    truncated: dict[str, int] | None = None  # {"kept": bytes recorded, "of": bytes the upstream sent}

    def body(self) -> bytes:
        return b"".join(c.data for c in self.chunks)


@dataclass
class Exchange:
    request: CapturedRequest
    response: CapturedResponse | None = None
    note: str = ""  # e.g. "title request", "turn 2"

    @property
    def refused_at_capture(self) -> bool:
        """The recorded answer was an error (4xx/5xx): the request is no template of a working turn."""
        return self.response is not None and self.response.status >= 400

    @property
    def is_generation(self) -> bool:
        """A main generation request: POST with a JSON body on its wire's generation path, never
        count_tokens, and no probe (an output cap of one token: a quota or liveness check)."""
        wire = dialect_for_path(self.request.path)
        body = self.request.body
        return (self.request.method == "POST" and wire is not None and isinstance(body, dict)
                and wire.is_generation(self.request.path) and not wire.is_count_tokens(self.request.path)
                and (wire.output_cap(body) or PROBE_OUTPUT_CAP + 1) > PROBE_OUTPUT_CAP)


@dataclass
class Capture:
    client: str  # claude-code | opencode | other
    client_version: str
    case: str  # short id, unique within client+version, e.g. "default", "effort-xhigh"
    exchanges: list[Exchange]
    description: str = ""
    command: str = ""  # the command line that produced it (secrets redacted)
    flags: list[str] = field(default_factory=list)
    covers: list[str] = field(default_factory=list)  # quirks this capture exercises
    meta: dict[str, Any] = field(default_factory=dict)  # free: provider, binary sha256, capture date
    path: Path | None = None  # where it was loaded from (not serialised)

    @property
    def id(self) -> str:
        """Stable test id: client/version/case."""
        return f"{self.client}/{self.client_version}/{self.case}"

    def main_exchanges(self) -> list[Exchange]:
        """Exchanges that are model requests (messages, count_tokens, chat completions, responses)."""
        return [e for e in self.exchanges if e.request.method == "POST" and e.request.api != "other"]

    def generation_exchanges(self) -> list[Exchange]:
        """The main generation requests (`Exchange.is_generation`), in order: what a test that
        derives a turn of the conversation starts from."""
        return [e for e in self.main_exchanges() if e.is_generation]


def _exchange_to_json(e: Exchange) -> dict[str, Any]:
    req: dict[str, Any] = {
        "method": e.request.method,
        "path": e.request.path,
        "query": e.request.query,
        "headers": dict(sorted(e.request.headers.items())),
    }
    if e.request.body is not None:
        req["body"] = e.request.body
    elif e.request.body_text is not None:
        req["body_text"] = e.request.body_text
    out: dict[str, Any] = {"request": req}
    if e.note:
        out["note"] = e.note
    if e.response is not None:
        out["response"] = {
            "status": e.response.status,
            "headers": dict(sorted(e.response.headers.items())),
            "chunks": [c.to_json() for c in e.response.chunks],
        }
        if e.response.truncated is not None:
            out["response"]["truncated"] = dict(e.response.truncated)
    return out


def capture_to_json(c: Capture) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "version": VERSION,
        "client": {"name": c.client, "version": c.client_version},
        "case": c.case,
        "description": c.description,
        "command": c.command,
        "flags": c.flags,
        "covers": c.covers,
        "meta": c.meta,
        "exchanges": [_exchange_to_json(e) for e in c.exchanges],
    }


def capture_from_json(d: Any, *, source: str = "<memory>") -> Capture:
    if not isinstance(d, dict) or d.get("format") != FORMAT:
        raise CaptureFormatError(
            f"{source}: not a capture file: {_what_it_is(d)}, while a capture is a JSON object with "
            f'"format": "{FORMAT}"; captures are written by `conformance capture` (or pass a folder of them, e.g. captured/)'
        )
    if d.get("version") != VERSION:
        raise CaptureFormatError(
            f"{source}: capture format version {d.get('version')!r} is not supported by this release "
            f"(supports {VERSION}); upgrade conformance or re-capture with this release"
        )
    try:
        exchanges = []
        for ed in d["exchanges"]:
            rq = ed["request"]
            req = CapturedRequest(
                method=rq["method"],
                path=rq["path"],
                query=rq.get("query", ""),
                headers={k.lower(): v for k, v in rq.get("headers", {}).items()},
                body=rq.get("body"),
                body_text=rq.get("body_text"),
            )
            resp = None
            if "response" in ed:
                rs = ed["response"]
                resp = CapturedResponse(
                    status=int(rs["status"]),
                    headers={k.lower(): v for k, v in rs.get("headers", {}).items()},
                    chunks=[Chunk.from_json(c) for c in rs.get("chunks", [])],
                    truncated=_truncated(rs.get("truncated"), source),
                )
            exchanges.append(Exchange(req, resp, ed.get("note", "")))
        return Capture(
            client=d["client"]["name"],
            client_version=d["client"]["version"],
            case=d["case"],
            exchanges=exchanges,
            description=d.get("description", ""),
            command=d.get("command", ""),
            flags=list(d.get("flags", [])),
            covers=list(d.get("covers", [])),
            meta=dict(d.get("meta", {})),
        )
    except (KeyError, TypeError) as exc:
        raise CaptureFormatError(f"{source}: malformed capture ({exc!r}); see docs/contracts/capture-format.md") from exc


def _truncated(value: Any, source: str) -> dict[str, int] | None:
    if value is None:
        return None
    if not (isinstance(value, dict) and all(isinstance(value.get(k), int) for k in ("kept", "of"))):
        raise CaptureFormatError(f"{source}: a response's 'truncated' must be {{\"kept\": bytes, \"of\": bytes}}, "
                                 f"got {value!r}; see docs/contracts/capture-format.md")
    return {"kept": value["kept"], "of": value["of"]}


def _what_it_is(d: Any) -> str:
    """A JSON document that is not a capture, in words (never Python's `None`)."""
    if not isinstance(d, dict):
        return f"it holds a JSON {_JSON_TYPES.get(type(d), type(d).__name__)}"
    if "format" not in d:
        return f"it is a JSON object without a \"format\" field (keys: {', '.join(sorted(map(str, d))[:6]) or 'none'})"
    return f"its \"format\" is {json.dumps(d['format'])[:80]}"


_JSON_TYPES = {list: "array", str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}


def load_capture(path: Path | str) -> Capture:
    path = Path(path)
    data = read_json(path, CaptureFormatError, missing="{path}: no such capture file",
                     not_json="{path}: not JSON ({why}); a capture file is the JSON document `conformance capture` writes")
    cap = capture_from_json(data, source=str(path))
    cap.path = path
    return cap


def save_capture(capture: Capture, path: Path | str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(scrub_text(json.dumps(capture_to_json(capture), ensure_ascii=False, indent=1) + "\n"),
                    encoding="utf-8")
    return path
