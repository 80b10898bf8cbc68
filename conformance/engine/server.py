"""The engine's HTTP server: routing, body limits, the received log, health, models, faults that
act on the whole request (hang, crash-under-concurrency) and error envelopes.

Rules:
- Bodies above BODY_LIMIT (32 MiB, Anthropic's documented request size limit) get 413 in the
  route's envelope; malformed JSON and non-JSON content types get 400; unknown paths 404 and
  wrong methods 405 (404 not_found_error on Anthropic paths: that API documents no 405), in the
  envelope of the API the path belongs to (`/v1/messages...` is
  Anthropic, everything else OpenAI). Nothing a client sends, and no client disconnect, stops the
  server.
- Error envelopes: Anthropic `{"type":"error","error":{"type","message"}}` with its documented
  status codes; OpenAI routes follow vLLM's `{"error":{"message","type","param","code"}}`.
- `GET /metrics` only with `EngineConfig.metrics` (vLLM's prefix-cache counters, metrics.py).
- `GET /_conformance/received[?n=K][&path=PREFIX]` returns the last RECEIVED_KEEP requests
  (method, path with query, headers with secrets redacted, JSON body, and `sha256`: the hash of
  the body bytes read, which the suite matches to what it sent); `DELETE` clears it.
- `crash-under-concurrency`: past CRASH_CONCURRENCY_LIMIT generation requests in flight the
  process exits (os._exit) when `exit_on_crash` (the CLI); in-thread it aborts every in-flight
  connection and drops every later connection on every route, since exiting would kill the host
  process. With the fault on, each generation request waits CRASH_PREFILL_SECONDS first so
  concurrent requests overlap.
- `variations_middleware` gives every API request its stream settings (wire.use: the valid
  variations, pacing, whether it accepts gzip) and applies the variations that act on whole
  bodies: unknown-fields (JSON bodies of 2xx answers), gzip (when Accept-Encoding allows it),
  connection-close; streams get theirs in wire.py.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
import time
import traceback

from aiohttp import web

from conformance.engine import anthropic_route, hostile, metrics, openai_route, responses_route, wire
from conformance.engine import faults as fault_modes
from conformance.engine import scenarios as engine_scenarios
from conformance.engine.conversation import InvalidRequest
from conformance.engine.faults import (
    ADVERTISED_CONTEXT_WRONG,
    CRASH_UNDER_CONCURRENCY,
    DIES_UNDER_SUSTAINED_LOAD,
    HANG,
    HANG_WITH_PINGS,
)
from conformance.engine.state import (
    BODY_LIMIT,
    ENTRY,
    STATE,
    EngineConfig,
    EngineState,
    error_response,
    read_json,
)
from conformance.engine.sustained import SustainedLoad
from conformance.engine.wire import ClientGone, start_sse

CRASH_PREFILL_SECONDS = 0.25
SECRET_HEADERS = {"authorization", "proxy-authorization", "x-api-key", "api-key", "cookie", "set-cookie"}
SECRET_WORDS = ("key", "token", "secret", "password", "auth")


def api_of(path: str) -> str:
    return "anthropic" if path.startswith("/v1/messages") else "openai"


@web.middleware
async def errors_middleware(request: web.Request, handler):
    try:
        return await handler(request)
    except web.HTTPNotFound:
        return error_response(api_of(request.path), InvalidRequest(
            f"Not found: {request.method} {request.path} is not served by the reference engine",
            status=404, kind="not_found_error"), request.app[STATE].faults)
    except web.HTTPMethodNotAllowed as e:
        api = api_of(request.path)
        # The Anthropic API documents no 405: an unsupported method is a route it does not have.
        status, kind = (404, "not_found_error") if api == "anthropic" else (405, "invalid_request_error")
        return error_response(api, InvalidRequest(
            f"Method {request.method} not allowed on {request.path} (allowed: {', '.join(sorted(e.allowed_methods))})",
            status=status, kind=kind), request.app[STATE].faults)
    except web.HTTPException:
        raise
    except Exception as e:  # a bug in the engine must not look like a wire-level success or kill it
        traceback.print_exc()
        return error_response(api_of(request.path), InvalidRequest(
            f"reference engine internal error: {e!r}", status=500, kind="api_error"), request.app[STATE].faults)


def _redact_headers(headers) -> dict:
    out = {}
    for k, v in headers.items():
        low = k.lower()
        secret = low in SECRET_HEADERS or any(w in low for w in SECRET_WORDS)
        out[k] = "[redacted]" if secret else v
    return out


@web.middleware
async def record_middleware(request: web.Request, handler):
    state = request.app[STATE]
    if state.dead:  # in-thread crash-under-concurrency: the "process" is gone for every route
        _abort(request)
        return web.Response(status=500)
    if not request.path.startswith("/_conformance"):
        entry = {"seq": state.received_total, "t": time.time(), "method": request.method,
                 "path": request.path_qs, "headers": _redact_headers(request.headers), "body": None}
        state.received_total += 1
        state.received.append(entry)
        request[ENTRY] = entry
    try:
        return await handler(request)
    finally:
        await _record_unread_body(request)


async def _record_unread_body(request: web.Request) -> None:
    """A body no route read (an unknown path, a wrong method) is logged too: what a router sent
    where the engine serves nothing is the evidence that it sent it there."""
    entry = request.get(ENTRY)
    if entry is None or entry["body"] is not None or not request.body_exists:
        return
    try:
        raw = await request.read()
    except (web.HTTPException, ConnectionError):
        return
    entry["sha256"] = hashlib.sha256(raw).hexdigest()
    try:
        entry["body"] = json.loads(raw)
    except ValueError:
        entry["body"] = raw[:65536].decode("utf-8", "replace")


@web.middleware
async def variations_middleware(request: web.Request, handler):
    cfg = request.app[STATE].config
    if request.path.startswith("/_conformance"):
        return await handler(request)
    wire.use(wire.StreamSettings(cfg.variations, cfg.prefill_tokens_per_s, cfg.decode_tokens_per_s,
                                 wire.accepts_gzip(request)))
    resp = await handler(request)
    if not cfg.variations or not isinstance(resp, web.Response):  # a stream is already on its way
        return resp
    if ("unknown-fields" in cfg.variations and 200 <= resp.status < 300 and resp.body
            and (resp.content_type or "").endswith("json")):
        body = wire.with_unknown_fields(json.loads(resp.body))
        resp.body = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
    if "gzip" in cfg.variations and wire.accepts_gzip(request):
        resp.enable_compression(web.ContentCoding.gzip)
    if "connection-close" in cfg.variations:
        resp.force_close()
    if "other-id-formats" in cfg.variations:
        resp.headers.popall("request-id", None)
    return resp


# ---- request lifecycle for generation routes ------------------------------------------------


def generation_route(api: str, fn):
    """Wrap a generation handler: in-flight tracking, crash fault, body parsing, hang faults, errors."""

    async def handler(request: web.Request):
        state = request.app[STATE]
        if state.dead:
            _abort(request)
            return web.Response(status=500)
        state.inflight[id(request)] = request
        try:
            if CRASH_UNDER_CONCURRENCY in state.faults and len(state.inflight) > fault_modes.CRASH_CONCURRENCY_LIMIT:
                _crash(state)
                return web.Response(status=500)
            try:
                body = await read_json(request)
            except InvalidRequest as e:
                return error_response(api, e, state.faults)
            if state.sustained is not None and state.sustained.start(id(request), body):
                return _worker_dead(request, api, state)
            if CRASH_UNDER_CONCURRENCY in state.faults:
                await asyncio.sleep(CRASH_PREFILL_SECONDS)
                if state.dead:
                    _abort(request)
                    return web.Response(status=500)
            if HANG in state.faults or HANG_WITH_PINGS in state.faults:
                return await _hang(request, api, body, state)
            try:
                return await fn(request, state, body)
            except InvalidRequest as e:
                return error_response(api, e, state.faults)
            except ClientGone:
                return web.Response(status=499)
        finally:
            state.inflight.pop(id(request), None)
            if state.sustained is not None:
                state.sustained.finish(id(request))

    return handler


def _worker_dead(request: web.Request, api: str, state: EngineState) -> web.Response:
    """dies-under-sustained-load: cut the streams in flight; answer 500 like a server whose engine died."""
    for other in list(state.inflight.values()):
        if other is not request:
            _abort(other)
    err = InvalidRequest("EngineDeadError: the engine worker died; restart the server", status=500, kind="api_error")
    return error_response(api, err, state.faults)


def _abort(request: web.Request) -> None:
    tr = request.transport
    if tr is not None:
        tr.abort()


def _crash(state: EngineState) -> None:
    n = len(state.inflight)
    if state.config.exit_on_crash:
        print(f"reference engine: crash-under-concurrency: {n} requests in flight > "
              f"{fault_modes.CRASH_CONCURRENCY_LIMIT}; exiting", file=sys.stderr, flush=True)
        os._exit(3)
    state.dead = True
    for req in list(state.inflight.values()):
        _abort(req)


async def _hang(request, api, body, state):
    deadline = time.monotonic() + fault_modes.HANG_CAP_SECONDS
    pings = HANG_WITH_PINGS in state.faults
    if not body.get("stream"):
        await asyncio.sleep(fault_modes.HANG_CAP_SECONDS)
        return web.Response(status=504)
    try:
        resp = await start_sse(request)
        while time.monotonic() < deadline:
            if pings:
                data = b'event: ping\ndata: {"type":"ping"}\n\n' if api == "anthropic" else b": ping\n\n"
                await resp.write(data)
                await asyncio.sleep(fault_modes.HANG_PING_INTERVAL)
            else:
                await asyncio.sleep(1.0)
        return resp
    except (ConnectionError, RuntimeError, ClientGone):
        return web.Response(status=499)


# ---- plain routes ---------------------------------------------------------------------------


async def health(request: web.Request):
    if request.method == "HEAD":
        return web.Response(status=200)
    return web.json_response({"status": "ok", "model": request.app[STATE].config.model})


def model_card(state: EngineState) -> dict:
    cfg = state.config
    advertised = cfg.max_context * 2 if ADVERTISED_CONTEXT_WRONG in state.faults else cfg.max_context
    return {"id": cfg.model, "object": "model", "type": "model", "display_name": cfg.model,
            "created": 0, "created_at": "1970-01-01T00:00:00Z", "owned_by": "conformance",
            "root": cfg.model, "parent": None, "max_model_len": advertised, "permission": []}


async def models(request: web.Request):
    card = model_card(request.app[STATE])
    return web.json_response({"object": "list", "data": [card], "has_more": False,
                              "first_id": card["id"], "last_id": card["id"]})


async def model_one(request: web.Request):
    state = request.app[STATE]
    if request.match_info["model"] != state.config.model:
        raise web.HTTPNotFound()
    return web.json_response(model_card(state))


async def received(request: web.Request):
    state = request.app[STATE]
    items = list(state.received)
    prefix = request.query.get("path")
    if prefix:
        items = [e for e in items if e["path"].startswith(prefix)]
    try:
        n = int(request.query.get("n", len(items)))
    except ValueError:
        n = len(items)
    items = items[-n:] if n > 0 else []
    return web.json_response({"requests": items, "total": state.received_total})


async def received_clear(request: web.Request):
    request.app[STATE].received.clear()
    return web.json_response({"cleared": True})


def build_app(config: EngineConfig) -> web.Application:
    folder = config.scenarios_dir or engine_scenarios.default_dir()
    # the hostile-model scenarios play beside any folder's: only their own [task:hostile-...] tags start them
    state = EngineState(config=config, scenarios=engine_scenarios.load_dir(folder) + hostile.scenarios())
    if DIES_UNDER_SUSTAINED_LOAD in config.faults:
        state.sustained = SustainedLoad(config.die_after_s, config.die_at_inflight)
    app = web.Application(client_max_size=BODY_LIMIT, middlewares=[errors_middleware, record_middleware, variations_middleware])
    app[STATE] = state
    r = app.router
    r.add_get("/", health, allow_head=True)  # Claude Code sends HEAD / first
    r.add_get("/health", health, allow_head=True)
    r.add_route("GET", "/v1/models", models)
    r.add_route("GET", "/v1/models/{model}", model_one)
    r.add_route("GET", "/_conformance/received", received)
    r.add_route("DELETE", "/_conformance/received", received_clear)
    if config.metrics:
        r.add_route("GET", "/metrics", metrics.metrics)
    r.add_route("POST", "/v1/messages", generation_route("anthropic", anthropic_route.messages))
    r.add_route("POST", "/v1/messages/count_tokens", anthropic_route.count_tokens_handler)
    r.add_route("POST", "/v1/chat/completions", generation_route("openai", openai_route.chat))
    r.add_route("POST", "/v1/responses", generation_route("openai", responses_route.responses))
    return app
