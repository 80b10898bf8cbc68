"""The reference router's HTTP server (aiohttp).

Rules:
- Serves the Claude Code gateway surface: `POST /v1/messages` (+ `?beta=true`),
  `POST /v1/messages/count_tokens`, `GET /v1/models`, `HEAD /`, `GET /health`, and
  `GET /_conformance/router` (its configuration and the routes it claims, for evidence).
- Routing: every request has a route, reported in the `x-router-route` response header:
  `default`; `injection` for prompts that look like prompt injections (the route strips tools, so
  the text reaches the model inert: the router *claims* this route in `/_conformance/router`);
  and, only under faults, `small` / `fallback` tiers whose answers carry another model name.
- Correct by default: streams are relayed event by event as they arrive (never buffered),
  upstream errors come back as Anthropic error envelopes with the upstream status and message,
  a broken-off upstream stream ends with an `error` event (never a fabricated clean end).
- Every upstream call has a deadline (connect 10 s, total `upstream_timeout`).
- Never imports the judge (conformance.wire.sse / protocols / schemas / checks).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import aiohttp
from aiohttp import web

from conformance.router import translate as tr
from conformance.router.events import EventFilter, SSELines, sse
from conformance.router.faults import (
    BUFFERED_STREAM,
    FALLBACK_MODEL,
    FIRST_TOOL_CALL_ONLY,
    JAILBREAK_ROUTE_KEEPS_TOOLS,
    LOSSY_TRANSLATION,
    ROUTING_UNSTABLE_ACROSS_WIRE_VARIANTS,
    STOP_SEQUENCE_MISSING,
    STRICT_ADAPTIVE_EFFORT,
    STRICT_UNKNOWN_FIELD,
    WRONG_MODEL,
    validate,
)
from conformance.router.translate_answer import StreamTranslator, openai_response_to_anthropic

ERROR_TYPES = {
    400: "invalid_request_error", 401: "authentication_error", 402: "billing_error", 403: "permission_error",
    404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 500: "api_error",
    504: "timeout_error", 529: "overloaded_error",
}


@dataclass
class RouterConfig:
    upstream: str  # base URL of the engine, with or without /v1
    upstream_api: str = "openai"  # openai (translate to chat completions) | anthropic (pass through)
    faults: tuple[str, ...] = ()
    model: str | None = None  # upstream model name; default: the client's model, unchanged
    fallback_model: str | None = None  # upstream name of the faulty tiers; default: same model, relabelled
    upstream_key: str = "sk-conformance-router"
    upstream_timeout: float = 300.0
    routes: dict[str, str] = field(default_factory=lambda: {
        "default": "forwards to the upstream model",
        "injection": "prompts that look like prompt injections: tools stripped",
    })

    def __post_init__(self) -> None:
        self.faults = validate(list(self.faults))
        if self.upstream_api not in ("openai", "anthropic"):
            raise ValueError(f"upstream_api must be 'openai' or 'anthropic', got {self.upstream_api!r}")
        base = self.upstream.rstrip("/")
        if base.endswith("/v1"):
            base = base[: -len("/v1")]
        self.upstream = base

    def has(self, fault: str) -> bool:
        return fault in self.faults


def error_response(status: int, message: str, kind: str | None = None) -> web.Response:
    body = {"type": "error", "error": {"type": kind or ERROR_TYPES.get(status, "api_error"), "message": message}}
    return web.json_response(body, status=status)


def _upstream_error_message(raw: bytes) -> str:
    try:
        data = json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")[:2000] or "upstream error"
    if isinstance(data, dict):
        err = data.get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
        if isinstance(err, str):
            return err
        if data.get("message"):
            return str(data["message"])
    return json.dumps(data)[:2000]


class Router:
    def __init__(self, config: RouterConfig) -> None:
        self.config = config
        self.session: aiohttp.ClientSession | None = None

    # ------------------------------------------------------------ app wiring
    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_get("/", self.root)  # GET also answers HEAD (Claude Code sends HEAD / first)
        app.router.add_get("/health", self.health)
        app.router.add_get("/_conformance/router", self.describe)
        app.router.add_get("/v1/models", self.models)
        app.router.add_post("/v1/messages", self.messages)
        app.router.add_post("/v1/messages/count_tokens", self.count_tokens)
        app.on_startup.append(self._start)
        app.on_cleanup.append(self._stop)
        return app

    async def _start(self, _app: web.Application) -> None:
        self.session = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=self.config.upstream_timeout, sock_connect=10), auto_decompress=True
        )

    async def _stop(self, _app: web.Application) -> None:
        if self.session is not None:
            await self.session.close()

    async def root(self, _request: web.Request) -> web.Response:
        return web.Response(text="conformance reference router\n")

    async def health(self, _request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def describe(self, _request: web.Request) -> web.Response:
        return web.json_response({
            "router": "conformance reference router",
            "upstream": self.config.upstream,
            "upstream_api": self.config.upstream_api,
            "faults": list(self.config.faults),
            "routes": self.config.routes,
            "claims": {"injection_route_strips_tools": True},
        })

    def _upstream_headers(self, request: web.Request | None = None) -> dict[str, str]:
        headers = {"content-type": "application/json"}
        if self.config.upstream_api == "anthropic":
            headers["x-api-key"] = self.config.upstream_key
            if request is not None:
                for name in ("anthropic-version", "anthropic-beta"):
                    if name in request.headers:
                        headers[name] = request.headers[name]
            headers.setdefault("anthropic-version", "2023-06-01")
        else:
            headers["authorization"] = f"Bearer {self.config.upstream_key}"
        return headers

    async def models(self, _request: web.Request) -> web.Response:
        try:
            async with self.session.get(f"{self.config.upstream}/v1/models", headers=self._upstream_headers()) as resp:
                return web.Response(body=await resp.read(), status=resp.status, content_type="application/json")
        except (TimeoutError, aiohttp.ClientError) as exc:
            return error_response(500, f"router: upstream {self.config.upstream} unreachable: {exc}")

    async def count_tokens(self, request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except ValueError:
            return error_response(400, "request body is not valid JSON")
        if self.config.upstream_api == "anthropic":
            url = f"{self.config.upstream}/v1/messages/count_tokens"
            try:
                async with self.session.post(url, json=body, headers=self._upstream_headers(request)) as resp:
                    return web.Response(body=await resp.read(), status=resp.status, content_type="application/json")
            except (TimeoutError, aiohttp.ClientError) as exc:
                return error_response(500, f"router: upstream {url} unreachable: {exc}")
        # OpenAI chat has no token-count endpoint: estimate ~4 characters per token (what routers
        # without a tokenizer do); Claude Code only uses it for the /context display.
        text = json.dumps([body.get("system"), body.get("messages"), body.get("tools")], ensure_ascii=False)
        return web.json_response({"input_tokens": max(1, len(text) // 4)})

    # ------------------------------------------------------------ the main route
    def _route(self, body: dict) -> tuple[str, bool, str | None]:
        """(route name, strip tools?, model label for the answer)."""
        cfg = self.config
        if tr.looks_like_injection(body):
            return "injection", not cfg.has(JAILBREAK_ROUTE_KEEPS_TOOLS), None
        if cfg.has(WRONG_MODEL):
            return "fallback", False, FALLBACK_MODEL
        if cfg.has(ROUTING_UNSTABLE_ACROSS_WIRE_VARIANTS) and tr.is_quoted(tr.last_user_text(body)):
            return "small", False, FALLBACK_MODEL
        return "default", False, None

    def _refusal(self, body: dict) -> web.Response | None:
        cfg = self.config
        if cfg.has(STRICT_UNKNOWN_FIELD) and "context_management" in body:
            return error_response(
                400, "context_management: Extra inputs are not permitted [type=extra_forbidden, input_value=...]"
            )
        thinking = body.get("thinking")
        effort = (body.get("output_config") or {}).get("effort") if isinstance(body.get("output_config"), dict) else None
        if cfg.has(STRICT_ADAPTIVE_EFFORT) and isinstance(thinking, dict) and thinking.get("type") == "adaptive" and effort:
            return error_response(
                400, "thinking.type: Input tag 'adaptive' found using 'type' does not match any of the expected "
                "tags: 'enabled', 'disabled'; output_config: Extra inputs are not permitted"
            )
        return None

    async def messages(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await request.json()
        except ValueError:
            return error_response(400, "request body is not valid JSON")
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return error_response(400, "messages: field required (a list)")
        refusal = self._refusal(body)
        if refusal is not None:
            return refusal
        cfg = self.config
        route, strip_tools, label = self._route(body)
        upstream_model = cfg.model or str(body.get("model", ""))
        if label and cfg.fallback_model:
            upstream_model, label = cfg.fallback_model, None  # a real other deployment answers
        lossy = cfg.has(LOSSY_TRANSLATION)
        client_body = body
        if lossy:
            body = tr.make_lossy(body)
        filt = EventFilter(
            drop_thinking=lossy, rewrite_tool_ids=lossy, drop_stop_sequence=cfg.has(STOP_SEQUENCE_MISSING), model_label=label,
            first_tool_call_only=cfg.has(FIRST_TOOL_CALL_ONLY),
        )
        extra_headers = {"x-router-route": route, "x-router-upstream-model": upstream_model}
        if cfg.upstream_api == "openai":
            upstream_body, notes = tr.anthropic_to_openai(body, model=upstream_model, drop_tools=strip_tools)
            url = f"{cfg.upstream}/v1/chat/completions"
        else:
            upstream_body = dict(body, model=upstream_model)
            if strip_tools:
                upstream_body.pop("tools", None)
                upstream_body.pop("tool_choice", None)
            url = f"{cfg.upstream}/v1/messages" + (f"?{request.query_string}" if request.query_string else "")
        stream = bool(client_body.get("stream"))
        try:
            upstream = await self.session.post(url, json=upstream_body, headers=self._upstream_headers(request))
        except (TimeoutError, aiohttp.ClientError) as exc:
            return error_response(500, f"router: upstream {url} unreachable: {type(exc).__name__}: {exc}")
        try:
            if upstream.status >= 400:
                raw = await upstream.read()
                if cfg.upstream_api == "anthropic":  # pass upstream errors through unchanged
                    return web.Response(body=raw, status=upstream.status, content_type="application/json", headers=extra_headers)
                resp = error_response(upstream.status, _upstream_error_message(raw))
                resp.headers.update(extra_headers)
                return resp
            if not stream:
                raw = await upstream.read()
                try:
                    data = json.loads(raw)
                except ValueError:
                    return error_response(500, f"router: upstream answered non-JSON: {raw[:200]!r}")
                message = openai_response_to_anthropic(data, client_body) if cfg.upstream_api == "openai" else data
                if isinstance(message, dict) and message.get("type") == "message":
                    message = filt.message(message)
                return web.json_response(message, headers=extra_headers)
            return await self._relay_stream(request, upstream, client_body, upstream_model, filt, extra_headers)
        finally:
            upstream.release()

    async def _relay_stream(self, request, upstream, client_body, upstream_model, filt, extra_headers) -> web.StreamResponse:
        cfg = self.config
        resp = web.StreamResponse(status=200, headers={"content-type": "text/event-stream", "cache-control": "no-cache", **extra_headers})
        await resp.prepare(request)
        buffered = cfg.has(BUFFERED_STREAM)
        held: list[bytes] = []

        async def emit(events: list[dict]) -> None:
            for event in events:
                event = filt.event(event)
                if event is None:
                    continue
                data = sse(event)
                if buffered:
                    held.append(data)
                else:
                    await resp.write(data)

        reader = SSELines()
        translator = StreamTranslator(client_body, upstream_model) if cfg.upstream_api == "openai" else None
        saw_done = False
        try:
            async for chunk in upstream.content.iter_any():
                if request.transport is None or request.transport.is_closing():
                    return resp  # the client went away: stop reading the upstream (keep-alives included)
                for name, data in reader.feed(chunk):
                    saw_done = await self._one(name, data, translator, emit) or saw_done
            for name, data in reader.close():
                saw_done = await self._one(name, data, translator, emit) or saw_done
        except (TimeoutError, aiohttp.ClientError) as exc:
            if request.transport is None or request.transport.is_closing():
                return resp  # the client is gone (a failed write lands here too)
            await emit([{"type": "error", "error": {"type": "api_error", "message": f"router: upstream stream broke: {exc}"}}])
        if translator is not None:
            await emit(translator.finish_events(upstream_complete=saw_done))
        if buffered:
            await resp.write(b"".join(held))
        await resp.write_eof()
        return resp

    async def _one(self, name, data, translator, emit) -> bool:
        """Handle one upstream SSE event; True when it was OpenAI's terminating `[DONE]`."""
        if translator is None:  # Anthropic pass-through: relay events (after the response faults)
            try:
                event = json.loads(data)
            except ValueError:
                return False
            if isinstance(event, dict):
                event.setdefault("type", name or "message")
                await emit([event])
            return False
        if data.strip() == "[DONE]":
            return True
        try:
            chunk = json.loads(data)
        except ValueError:
            return False
        if isinstance(chunk, dict):
            await emit(translator.feed(chunk))
        return False


def make_app(config: RouterConfig) -> web.Application:
    return Router(config).app()
