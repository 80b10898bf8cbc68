"""Shared plumbing of the probes: the target, request builders, judging, liveness, token counts.

Rules:
- Every exchange a probe makes is judged by the suite's one judge,
  `conformance.checks.exchange.check_exchange` (falling back to the wire core's `check_stream` /
  `check_response` only while the suite core is absent); probes add verdicts on top, they never
  re-implement stream grammar.
- Every probe request carries a salted system prompt (a run token at the start of the first
  system block / system message): a prefix cache or a router's response cache would otherwise
  make repeated probes look fast or answer from cache.
- Every network call has the target's deadlines; a dead target is detected by `target_gone`
  (the engine process exited, or nothing answers on the port) so probes stop early.
- Token counts always come from the target (`TokenCounter`): /v1/messages/count_tokens, a
  tokenize endpoint (vLLM /tokenize with messages; llama.cpp /apply-template + /tokenize), or
  usage of a one-token probe. Never a characters-per-token guess.
- A probe's verdicts are `ProbeOutcome`s: a check id, an outcome from the results record's
  vocabulary, a one-line message, violations and figures (`details`).
"""

from __future__ import annotations

import asyncio
import copy
import json
import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from conformance.checks import context as _context_checks  # noqa: F401  (registers the context.* ids)
from conformance.checks import load as _load_checks  # noqa: F401  (registers the load.* ids)
from conformance.checks import reasoning as _reasoning_checks  # noqa: F401  (registers the reasoning.* ids)
from conformance.core import registry
from conformance.core.failures import Violation
from conformance.core.results import Result
from conformance.net import transport
from conformance.net.transport import Deadlines, RawExchange
from conformance.report.text import ConformanceFailure

ANTHROPIC_VERSION = "2023-06-01"
PATHS = {"anthropic": "/v1/messages", "openai": "/v1/chat/completions"}

# OpenAI finish reasons in the Anthropic vocabulary the probes reason in.
_FINISH_TO_STOP = {"length": "max_tokens", "stop": "end_turn", "tool_calls": "tool_use",
                   "function_call": "tool_use", "content_filter": "refusal"}


def new_salt() -> str:
    return uuid.uuid4().hex[:12]


@dataclass
class Target:
    """Where the probes send requests and how."""

    url: str
    api: str = "anthropic"  # anthropic | openai
    model: str = "reference-model"
    api_key: str | None = None
    deadlines: Deadlines = field(default_factory=lambda: Deadlines(connect=5.0, first_content=60.0, total=120.0))
    salt: str = field(default_factory=new_salt)
    # The engine process when the caller started it (a Popen, or an EngineProcess with `.proc`):
    # lets a verdict say "the engine process exited" instead of "connection refused".
    process: Any = None

    def __post_init__(self) -> None:
        if self.api not in PATHS:
            raise ValueError(f"api must be one of {sorted(PATHS)}, got {self.api!r}")
        base = self.url.rstrip("/")
        if base.endswith("/v1"):  # accept both http://host:port and http://host:port/v1
            base = base[: -len("/v1")]
        self.base = base

    @property
    def endpoint(self) -> str:
        return self.base + PATHS[self.api]

    def headers(self) -> dict[str, str]:
        try:
            from conformance.net.client import headers_for  # the suite's one way to send a key
        except ImportError:  # suite core not present: send it as each client does
            headers_for = None
        if headers_for is not None:
            h = dict(headers_for(self.api, self.api_key, {}))
        elif self.api == "anthropic":
            h = {"x-api-key": self.api_key} if self.api_key else {}
        else:
            h = {"authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        h = {k.lower(): v for k, v in h.items()}
        h["content-type"] = "application/json"
        if self.api == "anthropic":
            h.setdefault("anthropic-version", ANTHROPIC_VERSION)
        return h

    def process_exit(self) -> int | None:
        proc = getattr(self.process, "proc", self.process)
        if proc is None or not hasattr(proc, "poll"):
            return None
        return proc.poll()


# ---------------------------------------------------------------------------------------------
# requests


def build_request(
    target: Target,
    user_text: str,
    *,
    max_tokens: int,
    system: str = "You are a helpful assistant. Answer briefly.",
    stream: bool = True,
    extra: dict[str, Any] | None = None,
    salt: str | None = None,
) -> dict[str, Any]:
    """A one-turn request in the target's dialect, salted at the start of its system prompt."""
    body: dict[str, Any]
    if target.api == "anthropic":
        body = {
            "model": target.model,
            "max_tokens": max_tokens,
            "system": [{"type": "text", "text": system}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": user_text}]}],
            "stream": stream,
        }
    else:
        body = {
            "model": target.model,
            "max_tokens": max_tokens,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user_text}],
            "stream": stream,
        }
        if stream:
            body["stream_options"] = {"include_usage": True}
    body.update(extra or {})
    return salt_body(body, target.api, target.salt if salt is None else salt)


def salt_body(body: dict[str, Any], api: str, salt: str) -> dict[str, Any]:
    """A copy of `body` with the run token at the start of its system prompt (the suite's salting)."""
    if not salt:
        return copy.deepcopy(body)
    from conformance.net.client import salted

    return salted(body, api, salt)


def encode(body: dict[str, Any]) -> bytes:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _content_predicate(api: str):
    try:
        if api == "anthropic":
            from conformance.wire.anthropic import content_started
        else:
            from conformance.wire.openai import content_started
        return content_started
    except ImportError:  # wire core absent: the first byte counts as content
        return None


async def send(
    target: Target,
    body: dict[str, Any],
    *,
    path: str | None = None,
    deadlines: Deadlines | None = None,
    client: httpx.AsyncClient | None = None,
    method: str = "POST",
) -> RawExchange:
    url = target.base + (path or PATHS[target.api])
    return await transport.send(
        method,
        url,
        headers=target.headers(),
        body=encode(body) if method != "GET" else b"",
        deadlines=deadlines or target.deadlines,
        first_content=_content_predicate(target.api) if body.get("stream") else None,
        client=client,
    )


# ---------------------------------------------------------------------------------------------
# judging


@dataclass
class Judged:
    violations: list[Violation]
    message: dict[str, Any] | None

    @property
    def errors(self) -> list[Violation]:
        return [v for v in self.violations if v.is_error]


def judge(raw: RawExchange, request: dict[str, Any], api: str) -> Judged:
    """Judge one exchange with the suite's exchange checks (the one judge)."""
    try:
        from conformance.checks.exchange import check_exchange
    except ImportError:
        check_exchange = None
    if check_exchange is not None:
        verdict = check_exchange(raw, request, api=api)
        return Judged(list(verdict.violations), verdict.message)
    # Suite core absent: the wire core alone (grammar), status and transport errors are read by
    # the callers from the RawExchange itself.
    if api == "anthropic":
        from conformance.wire import anthropic as proto
    else:
        from conformance.wire import openai as proto
    if not raw.ok:
        return Judged([], None)
    if request.get("stream"):
        report = proto.check_stream(raw.chunks, request=request)
        return Judged(list(report.violations), report.message)
    message, violations = proto.check_response(raw.body(), request=request)
    return Judged(list(violations), message)


def answer_text(message: dict[str, Any] | None, api: str) -> str:
    if not message:
        return ""
    if api == "anthropic":
        return "".join(b.get("text", "") for b in message.get("content") or [] if b.get("type") == "text")
    content = message.get("content")
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def thinking_text(message: dict[str, Any] | None, api: str) -> str:
    if not message:
        return ""
    if api == "anthropic":
        return "".join(b.get("thinking", "") for b in message.get("content") or [] if b.get("type") == "thinking")
    return message.get("reasoning_content") or message.get("reasoning") or ""


def stop_reason(message: dict[str, Any] | None, api: str) -> str | None:
    if not message:
        return None
    if api == "anthropic":
        return message.get("stop_reason")
    fr = message.get("finish_reason")
    return _FINISH_TO_STOP.get(fr, fr)


def output_tokens(message: dict[str, Any] | None, api: str) -> int | None:
    usage = (message or {}).get("usage") or {}
    value = usage.get("output_tokens" if api == "anthropic" else "completion_tokens")
    return value if isinstance(value, int) else None


def input_tokens_of_usage(usage: dict[str, Any] | None, api: str) -> int | None:
    usage = usage or {}
    if api == "anthropic" or "input_tokens" in usage:
        base = usage.get("input_tokens")
        if not isinstance(base, int):
            return None
        # cached tokens are reported apart from input_tokens on the Anthropic wire
        return base + sum(v for k, v in usage.items()
                          if k in ("cache_creation_input_tokens", "cache_read_input_tokens") and isinstance(v, int))
    value = usage.get("prompt_tokens")
    return value if isinstance(value, int) else None


def error_message(raw: RawExchange) -> str:
    """The message a refusal carries (Anthropic and OpenAI envelopes, else the body text)."""
    text = raw.body().decode("utf-8", "replace")
    try:
        data = json.loads(text)
    except ValueError:
        return text.strip()[:300]
    if isinstance(data, dict):
        err = data.get("error")
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return err["message"]
        if isinstance(err, str):
            return err
        if isinstance(data.get("message"), str):
            return data["message"]
        if isinstance(data.get("detail"), str):
            return data["detail"]
    return text.strip()[:300]


def error_envelope_violations(raw: RawExchange, api: str) -> list[Violation]:
    """The wire core's judgement of an error response (envelope, status/type pairing)."""
    if raw.status is None:
        return []
    try:
        if api == "anthropic":
            from conformance.wire.anthropic import check_error
        else:
            from conformance.wire.openai import check_error
    except ImportError:
        return []
    return list(check_error(raw.status, raw.body()))


def describe_exchange(raw: RawExchange) -> str:
    if raw.error_kind:
        return f"{raw.error_kind}: {raw.error}"
    return f"HTTP {raw.status} after {raw.elapsed:.2f}s"


# ---------------------------------------------------------------------------------------------
# liveness


async def target_gone(target: Target) -> str | None:
    """None while the target answers; else why it is gone (process exit code, or no answer)."""
    code = target.process_exit()
    if code is not None:
        return f"the engine process is gone (exited with code {code})"
    reason = await asyncio.to_thread(transport.probe, target.base + "/", 2.0)
    if reason is not None:
        return f"the target no longer answers on {target.base} ({reason})"
    return None


# ---------------------------------------------------------------------------------------------
# figures


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100.0 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def rounded(x: float | None, digits: int = 3) -> float | None:
    return None if x is None else round(x, digits)


# ---------------------------------------------------------------------------------------------
# outcomes


@dataclass
class ProbeOutcome:
    """One verdict of a probe: a check id, an outcome, a message, violations and figures."""

    check_id: str
    outcome: str  # passed | failed | info | warning | unverifiable | skipped
    message: str
    violations: list[Violation] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        registry.get(self.check_id)  # refuse unknown ids loudly

    @property
    def failed(self) -> bool:
        return self.outcome == "failed"

    def to_result(self, test_id: str, target: Target, *, duration_s: float | None = None) -> Result:
        return Result(
            test_id=test_id,
            check_id=self.check_id,
            outcome=self.outcome,
            target=target.base,
            api=target.api,
            model=target.model,
            client="probe",
            message=self.message,
            violations=[v.to_dict() for v in self.violations],
            details=self.details,
            duration_s=duration_s,
        )

    def raise_if_failed(self, title: str | None = None) -> None:
        if self.failed:
            raise ConformanceFailure(title or f"{self.check_id}: {self.message}", self.violations,
                                     extra={"figures": json.dumps(self.details, default=str)[:2000]})


# ---------------------------------------------------------------------------------------------
# token counts from the target


class TokenCountUnavailable(RuntimeError):
    pass


class TokenCounter:
    """Counts a request's input tokens the way the target does.

    Methods, tried in this order unless one is forced: `count_tokens` (Anthropic
    /v1/messages/count_tokens: the same body without max_tokens -> {input_tokens}), `tokenize`
    (vLLM's POST /tokenize with `messages` applies the chat template -> {count, tokens};
    llama.cpp's POST /apply-template -> {prompt} then POST /tokenize {content} -> {tokens}), and
    `usage` (the request itself, non-streaming, max_tokens 1: usage.input_tokens / prompt_tokens).
    """

    METHODS = ("count_tokens", "tokenize", "usage")

    def __init__(self, target: Target, method: str | None = None) -> None:
        if method is not None and method not in self.METHODS:
            raise ValueError(f"token count method must be one of {self.METHODS}, got {method!r}")
        self.target = target
        self.method = method
        self.calls = 0
        self.tried: dict[str, str] = {}  # method -> why it was not usable

    async def count(self, body: dict[str, Any]) -> int:
        if self.method is not None:
            return await self._count_with(self.method, body)
        for method in self.METHODS:
            if method == "count_tokens" and self.target.api != "anthropic":
                continue
            try:
                n = await self._count_with(method, body)
            except TokenCountUnavailable as exc:
                self.tried[method] = str(exc)
                continue
            self.method = method
            return n
        raise TokenCountUnavailable(
            "the target offers no way to count tokens (" + "; ".join(f"{k}: {v}" for k, v in self.tried.items())
            + "): it needs /v1/messages/count_tokens, a /tokenize endpoint, or usage in its responses"
        )

    async def _count_with(self, method: str, body: dict[str, Any]) -> int:
        self.calls += 1
        if method == "count_tokens":
            req = {k: v for k, v in body.items() if k not in ("max_tokens", "stream", "stream_options")}
            raw = await send(self.target, req, path="/v1/messages/count_tokens")
            data = _json_or_none(raw)
            if raw.ok and isinstance(data, dict) and isinstance(data.get("input_tokens"), int):
                return data["input_tokens"]
            raise TokenCountUnavailable(f"count_tokens answered {describe_exchange(raw)}")
        if method == "tokenize":
            messages = _openai_messages(body, self.target.api)
            raw = await send(self.target, {"model": self.target.model, "messages": messages}, path="/tokenize")
            data = _json_or_none(raw)
            if raw.ok and isinstance(data, dict):
                if isinstance(data.get("count"), int):
                    return data["count"]
            # llama.cpp: render the chat template, then tokenize the prompt text
            raw = await send(self.target, {"messages": messages}, path="/apply-template")
            data = _json_or_none(raw)
            if raw.ok and isinstance(data, dict) and isinstance(data.get("prompt"), str):
                raw2 = await send(self.target, {"content": data["prompt"], "add_special": True}, path="/tokenize")
                data2 = _json_or_none(raw2)
                if raw2.ok and isinstance(data2, dict) and isinstance(data2.get("tokens"), list):
                    return len(data2["tokens"])
            raise TokenCountUnavailable("no /tokenize endpoint with chat-template support")
        if method == "usage":
            req = dict(body, max_tokens=1, stream=False)
            req.pop("stream_options", None)
            req.pop("thinking", None)
            req.pop("output_config", None)
            raw = await send(self.target, req)
            data = _json_or_none(raw)
            n = input_tokens_of_usage((data or {}).get("usage") if isinstance(data, dict) else None, self.target.api)
            if raw.ok and n is not None:
                return n
            raise TokenCountUnavailable(f"a one-token probe answered {describe_exchange(raw)} without input usage")
        raise ValueError(method)


def _json_or_none(raw: RawExchange) -> Any:
    try:
        return json.loads(raw.body())
    except ValueError:
        return None


def _openai_messages(body: dict[str, Any], api: str) -> list[dict[str, Any]]:
    if api == "openai":
        return body.get("messages", [])
    msgs: list[dict[str, Any]] = []
    system = body.get("system")
    if isinstance(system, list):
        system = "".join(b.get("text", "") for b in system if isinstance(b, dict))
    if system:
        msgs.append({"role": "system", "content": system})
    for m in body.get("messages", []):
        content = m.get("content")
        if isinstance(content, list):
            content = "".join(b.get("text", "") for b in content if isinstance(b, dict))
        msgs.append({"role": m.get("role"), "content": content})
    return msgs


def run_sync(coro):
    """Run a probe coroutine from synchronous code (pytest tests, the CLI)."""
    return asyncio.run(coro)
