"""Shared plumbing of the probes: the target, request builders, judging, liveness, token counts.

Rules:
- Every exchange a probe makes is judged by the suite's one judge,
  `conformance.checks.exchange.check_exchange`; probes add verdicts on top, they never
  re-implement stream grammar.
- Every exchange is sent by the suite's one sender (`conformance.net.target.Target`, held by the
  probe `Target` as `net`): the client's headers and key style, URL joining, the deadlines and the
  TLS context are not the probes' own. What differs between wires (paths, request shape, the
  readers of an answer) is asked of the Dialect (`conformance.wire.dialect`).
- Every probe request carries a salted system prompt (a run token at the start of the first
  system block / system message): a prefix cache or a router's response cache would otherwise
  make repeated probes look fast or answer from cache.
- Every network call has the target's deadlines; a dead target is detected by `target_gone`
  (the engine process exited, or nothing answers on the port) so probes stop early.
- Token counts always come from the target (`TokenCounter`): /v1/messages/count_tokens, a
  tokenize endpoint (vLLM /tokenize with messages; llama.cpp /apply-template + /tokenize), or
  usage of a one-token probe. Never a characters-per-token guess.
- A probe's verdicts are `ProbeOutcome`s: a check id (the constant its `conformance.checks`
  module registers), an outcome from the results record's vocabulary, a one-line message,
  violations and figures (`details`). The suite records them through its CheckContext
  (`conformance.probes.suite_support.report`).
- The wire is a `Dialect` (`Target.wire`), never its name; the name is written only where the one
  sender and the results record take it.
"""

from __future__ import annotations

import asyncio
import copy
import math
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from conformance.core import registry
from conformance.core.bounded_json import parse as parse_json
from conformance.core.failures import Violation
from conformance.core.verdict import Verdict
from conformance.net import transport
from conformance.net.client import SALT_PREFIX, serialize
from conformance.net.target import Target as NetTarget
from conformance.net.transport import Deadlines, RawExchange
from conformance.wire import ANTHROPIC
from conformance.wire.dialect import Dialect


def new_salt() -> str:
    return uuid.uuid4().hex[:12]


@dataclass
class Target:
    """Where the probes send requests and how: the one sender's target (`net`) plus what only the
    probes need (the wire they speak, the model, the salt, the engine process)."""

    url: str
    wire: Dialect = ANTHROPIC
    model: str = "reference-model"
    api_key: str | None = None
    deadlines: Deadlines = field(default_factory=lambda: Deadlines(connect=5.0, first_content=60.0, total=120.0))
    salt: str = field(default_factory=new_salt)
    # The engine process when the caller started it (a Popen, or an EngineProcess with `.proc`):
    # lets a verdict say "the engine process exited" instead of "connection refused".
    process: Any = None

    def __post_init__(self) -> None:
        base = self.url.rstrip("/")
        if base.endswith("/v1"):  # accept both http://host:port and http://host:port/v1
            base = base[: -len("/v1")]
        # The probes' own paths (/tokenize, /apply-template) hang off the server root, not /v1.
        self.base = base

    @property
    def net(self) -> NetTarget:
        """The one sender's target: the server root, the key and the current deadlines."""
        return NetTarget(self.base, self.api_key, self.deadlines)

    @property
    def endpoint(self) -> str:
        return self.net.url(self.wire.generation_path)

    def headers(self) -> dict[str, str]:
        return self.net.headers(self.wire)

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
    body = target.wire.one_turn_request(target.model, system, user_text, max_tokens=max_tokens, stream=stream)
    body.update(extra or {})
    return salt_body(body, target.wire, target.salt if salt is None else salt)


def salt_body(body: dict[str, Any], wire: Dialect, salt: str) -> dict[str, Any]:
    """A copy of `body` with the run token at the start of its system prompt (the suite's salting);
    an empty salt gives an unsalted copy."""
    if not salt:
        return copy.deepcopy(body)
    return wire.salted(body, SALT_PREFIX.format(token=salt))


async def send(
    target: Target,
    body: dict[str, Any],
    *,
    path: str | None = None,
    deadlines: Deadlines | None = None,
    client: httpx.AsyncClient | None = None,
    method: str = "POST",
) -> RawExchange:
    """Send `body` (re-serialised as the clients do) through the one sender. Only a streamed
    request waits for the Dialect's content-started predicate; otherwise the first byte counts."""
    return await target.net.send(
        target.wire,
        path or target.wire.generation_path,
        serialize(body) if method != "GET" else b"",
        method=method,
        deadlines=deadlines,
        content_started=bool(body.get("stream")),
        client=client,
    )


# ---------------------------------------------------------------------------------------------
# reading an accumulated message (the Dialect's readers, in the vocabulary the probes reason in)


def answer_text(message: dict[str, Any] | None, wire: Dialect) -> str:
    return wire.text(message) if message else ""


def thinking_text(message: dict[str, Any] | None, wire: Dialect) -> str:
    return wire.thinking(message)


def stop_reason(message: dict[str, Any] | None, wire: Dialect) -> str | None:
    """The stop reason in the Anthropic vocabulary (OpenAI's `length` reads as `max_tokens`)."""
    return wire.anthropic_stop(message) if message else None


def output_tokens(message: dict[str, Any] | None, wire: Dialect) -> int | None:
    return wire.output_tokens(message)


def input_tokens_of_usage(usage: dict[str, Any] | None, wire: Dialect) -> int | None:
    """Every input token the prompt counted, cached ones included (`Dialect.prompt_tokens`)."""
    return wire.prompt_tokens(usage)


def error_message(raw: RawExchange) -> str:
    """The message a refusal carries (Anthropic and OpenAI envelopes, else the body text)."""
    text = raw.body().decode("utf-8", "replace")
    try:
        data = parse_json(text)
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


def error_envelope_violations(raw: RawExchange, wire: Dialect) -> list[Violation]:
    """The wire core's judgement of an error response (envelope, status/type pairing)."""
    if raw.status is None:
        return []
    return list(wire.check_error(raw.status, raw.body()))


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
    reason = await asyncio.to_thread(transport.probe, target.net.url("/"), 2.0)
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


class ProbeOutcome(Verdict):
    """One verdict of a probe: the one Verdict (conformance/core/verdict.py), whose note is the
    probe's message, with the figures it measured (`details`, a dict the report plots).

    Built as `ProbeOutcome(check_id, outcome, message, violations=(), details=None)`; an unknown
    check id is refused at once."""

    def __init__(self, check_id: str, outcome: str, message: str, violations: Iterable[Violation] = (),
                 details: dict[str, Any] | None = None) -> None:
        registry.get(check_id)  # refuse unknown ids loudly
        super().__init__(check_id, outcome, tuple(violations), message)
        # Verdict is frozen; the figures are the one field a probe adds (a dict, filled in as measured).
        object.__setattr__(self, "details", {} if details is None else details)

    @property
    def message(self) -> str:
        return self.note

    @property
    def failed(self) -> bool:
        return self.outcome == "failed"


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
            if method == "count_tokens" and self.target.wire.count_tokens_path is None:
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
            raw = await send(self.target, req, path=self.target.wire.count_tokens_path)
            data = _json_or_none(raw)
            if raw.ok and isinstance(data, dict) and isinstance(data.get("input_tokens"), int):
                return data["input_tokens"]
            raise TokenCountUnavailable(f"count_tokens answered {describe_exchange(raw)}")
        if method == "tokenize":
            messages = self.target.wire.chat_messages(body)
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
            n = input_tokens_of_usage((data or {}).get("usage") if isinstance(data, dict) else None, self.target.wire)
            if raw.ok and n is not None:
                return n
            raise TokenCountUnavailable(f"a one-token probe answered {describe_exchange(raw)} without input usage")
        raise ValueError(method)


def _json_or_none(raw: RawExchange) -> Any:
    try:
        return parse_json(raw.body())
    except ValueError:
        return None


def run_sync(coro):
    """Run a probe coroutine from synchronous code (pytest tests, the CLI)."""
    return asyncio.run(coro)
