"""The engine's application state and its request-level helpers, shared by the server and the routes.

Rules:
- One `EngineState` per application, reached through `request.app[STATE]`; the routes and the
  server both import it from here, so neither imports the other.
- `error_response` writes the envelope of the API a path belongs to (Anthropic
  `{"type":"error","error":{"type","message"}}`; OpenAI routes vLLM's
  `{"error":{"message","type","param","code"}}`); `read_json` turns a body into a JSON object or
  an InvalidRequest (400 / 413) that says what is wrong.
"""

from __future__ import annotations

import collections
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from conformance.engine.conversation import InvalidRequest
from conformance.engine.faults import ERROR_ENVELOPE_WRONG

DEFAULT_MODEL = "reference-model"
DEFAULT_MAX_CONTEXT = 131072
BODY_LIMIT = 32 * 1024 * 1024
RECEIVED_KEEP = 100


@dataclass
class EngineConfig:
    model: str = DEFAULT_MODEL
    faults: frozenset = frozenset()
    max_context: int = DEFAULT_MAX_CONTEXT
    scenarios_dir: str | None = None
    exit_on_crash: bool = False
    # Valid variations (variations.py) switched on by name.
    variations: frozenset = frozenset()
    # Stream pacing in engine tokens per second; None = the writer's default pace (wire.py).
    prefill_tokens_per_s: float | None = None
    decode_tokens_per_s: float | None = None
    # Serve GET /metrics with vLLM's prefix-cache counters (metrics.py).
    metrics: bool = False
    # `dies-under-sustained-load` thresholds (sustained.py): seconds held, requests in flight.
    die_after_s: float = 30.0
    die_at_inflight: int = 4


@dataclass
class EngineState:
    config: EngineConfig
    scenarios: list
    received: collections.deque = field(default_factory=lambda: collections.deque(maxlen=RECEIVED_KEEP))
    received_total: int = 0
    inflight: dict = field(default_factory=dict)  # id(request) -> request
    dead: bool = False
    sustained: Any = None  # a SustainedLoad while dies-under-sustained-load is on (sustained.py)

    @property
    def faults(self) -> frozenset:
        return self.config.faults


STATE = web.AppKey("engine_state", EngineState)
ENTRY = web.RequestKey("received_entry", dict) if hasattr(web, "RequestKey") else "received_entry"


# ---- errors ---------------------------------------------------------------------------------

_OPENAI_TYPES = {400: "BadRequestError", 401: "AuthenticationError", 404: "NotFoundError",
                 405: "MethodNotAllowedError", 413: "RequestEntityTooLargeError", 500: "InternalServerError"}


def error_response(api: str, err: InvalidRequest, faults=frozenset()) -> web.Response:
    if ERROR_ENVELOPE_WRONG in faults:
        if api == "anthropic":  # vLLM's old OpenAI-style object on the Anthropic route
            body = {"object": "error", "message": err.message, "type": "BadRequestError", "param": None,
                    "code": err.status}
        else:  # a bare framework error
            body = {"detail": err.message}
        return web.json_response(body, status=err.status)
    if api == "anthropic":
        body = {"type": "error", "error": {"type": err.kind, "message": err.message}}
    else:
        body = {"error": {"message": err.message, "type": _OPENAI_TYPES.get(err.status, "BadRequestError"),
                          "param": err.param, "code": err.status}}
    return web.json_response(body, status=err.status)


async def read_json(request: web.Request) -> dict:
    """The request body as a JSON object, or InvalidRequest (400/413) saying what is wrong."""
    if request.content_length is not None and request.content_length > BODY_LIMIT:
        raise InvalidRequest(
            f"Request body is {request.content_length} bytes; the limit is {BODY_LIMIT} bytes",
            status=413, kind="request_too_large")
    try:
        raw = await request.read()
    except web.HTTPRequestEntityTooLarge as e:
        raise InvalidRequest(f"Request body exceeds the limit of {BODY_LIMIT} bytes",
                             status=413, kind="request_too_large") from e
    ctype = request.headers.get("Content-Type", "")
    entry = request.get(ENTRY)
    if entry is not None:  # the received log's correlation key: the exact bytes read
        entry["sha256"] = hashlib.sha256(raw).hexdigest()
    mime = ctype.split(";")[0].strip().lower()
    if mime and mime != "application/json" and not mime.endswith("+json"):
        if entry is not None:
            entry["body"] = raw[:65536].decode("utf-8", "replace")
        raise InvalidRequest(f"Content-Type must be application/json, got {ctype!r}")
    try:
        body = json.loads(raw)
    except (UnicodeDecodeError, ValueError) as e:
        if entry is not None:
            entry["body"] = raw[:65536].decode("utf-8", "replace")
        raise InvalidRequest(f"There was an error parsing the body as JSON: {e}") from e
    if entry is not None:
        entry["body"] = body
    if not isinstance(body, dict):
        raise InvalidRequest(f"The request body must be a JSON object, got {type(body).__name__}")
    return body
