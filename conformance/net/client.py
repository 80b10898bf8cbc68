"""How the suite talks to a target the way the real clients do.

Rules:
- `headers_for(api, api_key, captured_headers)` keeps the client's own headers (anthropic-version,
  anthropic-beta, x-app, user-agent, session ids) and drops what must not be replayed:
  hop-by-hop headers, the captured (redacted) credentials, and content-encoding negotiation
  (the transport records raw bytes, so responses must arrive uncompressed), unless
  CONFORMANCE_ACCEPT_ENCODING=captured keeps the client's own. The key is sent the
  way each client sends it, as the Dialect says (`bearer`, `default_headers`): `x-api-key` on the
  Anthropic wire (or `Authorization: Bearer` when the capture shows the client used a bearer
  token, as Claude Code does with ANTHROPIC_AUTH_TOKEN), `Authorization: Bearer` on the OpenAI wire.
- One target and one way to send to it live in `conformance.net.target` (built on these helpers).
- `target_url(base, path)` joins the target base URL and a captured path without doubling a
  `/v1` the user already put in the base URL.
- Request bodies are byte-exact by default (`CapturedRequest.body_bytes()`); every change the
  suite makes (model rewrite, salt, quoted prompt) goes through `mutate_*` helpers on a deep copy
  and is re-serialised the way the clients serialise (compact, no ASCII escaping).
"""

from __future__ import annotations

import copy
import json
import os
from typing import Any

from conformance.wire.dialect import DIALECTS

# Not replayed: hop-by-hop, length/host (recomputed), encodings (raw bytes are recorded).
_DROP = {"host", "content-length", "connection", "transfer-encoding", "keep-alive", "accept-encoding",
         "proxy-authorization", "te", "upgrade", "cookie"}
ACCEPT_ENCODING_ENV = "CONFORMANCE_ACCEPT_ENCODING"
# Credential header names (lower-case): never replayed from a capture (the user's key replaces
# them), and the names whose values `conformance.capture.redact.redact_credentials` replaces in
# the report copies of what the suite sent. One list, here on the lower floor; capture imports it.
CREDENTIAL_HEADERS = frozenset({"x-api-key", "authorization", "api-key", "proxy-authorization", "cookie",
                                "set-cookie", "x-goog-api-key", "openai-organization", "openai-project"})


def headers_for(api: str, api_key: str | None, captured_headers: dict[str, str] | None) -> dict[str, str]:
    """Headers to send for a replayed request of `api` with the user's key (see module rules).
    An api without a Dialect gets no default headers and the key as the capture shows it."""
    captured = {k.lower(): v for k, v in (captured_headers or {}).items()}
    wire = DIALECTS.get(api)
    out: dict[str, str] = {}
    for name, value in captured.items():
        if name in _DROP or name in CREDENTIAL_HEADERS:
            continue
        if isinstance(value, str) and "<redacted" in value:
            continue
        out[name] = value
    # CONFORMANCE_ACCEPT_ENCODING=captured: send the client's own accept-encoding (the transport
    # then decodes what comes back); by default responses are asked for uncompressed.
    keep = os.environ.get(ACCEPT_ENCODING_ENV, "").strip().lower() == "captured"
    out["accept-encoding"] = captured["accept-encoding"] if keep and "accept-encoding" in captured else "identity"
    out.setdefault("content-type", "application/json")
    for name, value in wire.default_headers if wire is not None else ():
        out.setdefault(name, value)
    if api_key:
        if wire is not None:
            bearer = wire.bearer(captured)
        else:
            bearer = "authorization" in captured and "x-api-key" not in captured
        if bearer:
            out["authorization"] = f"Bearer {api_key}"
        else:
            out["x-api-key"] = api_key
    return out


def target_url(base: str, path: str, query: str = "") -> str:
    base = base.rstrip("/")
    if base.endswith("/v1") and path.startswith("/v1/"):
        base = base[:-3]
    return base + path + (f"?{query}" if query else "")


def serialize(body: Any) -> bytes:
    """As JSON.stringify writes it (how both JavaScript clients serialise)."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


# ----------------------------------------------------------------------------- body mutations
def with_model(body: dict, model: str | None) -> dict:
    if not model or body.get("model") == model:
        return body
    body = copy.deepcopy(body)
    body["model"] = model
    return body


SALT_PREFIX = "[conformance-run {token}] "


def salted(body: dict, api: str, token: str) -> dict:
    """The run token at the very start of the system prompt (first system block or message)."""
    body = copy.deepcopy(body)
    prefix = SALT_PREFIX.format(token=token)
    wire = DIALECTS.get(api)
    if wire is not None and wire.system_at_top:
        system = body.get("system")
        if isinstance(system, str):
            body["system"] = prefix + system
        elif isinstance(system, list) and system and isinstance(system[0], dict) and system[0].get("type") == "text":
            system[0]["text"] = prefix + system[0].get("text", "")
        elif isinstance(system, list):
            system.insert(0, {"type": "text", "text": prefix.rstrip()})
        else:
            # keep key order stable: system right after model/messages is where clients put it
            body["system"] = prefix.rstrip()
        return body
    if wire is not None and wire.prefix_system(body, prefix):  # a wire that keeps it elsewhere (Responses)
        return body
    messages = body.get("messages") or []
    for msg in messages:
        if isinstance(msg, dict) and msg.get("role") in ("system", "developer"):
            content = msg.get("content")
            if isinstance(content, str):
                msg["content"] = prefix + content
            elif isinstance(content, list) and content and isinstance(content[0], dict):
                content[0]["text"] = prefix + content[0].get("text", "")
            return body
    messages.insert(0, {"role": "system", "content": prefix.rstrip()})
    body["messages"] = messages
    return body


def _prompt_location(body: dict) -> tuple[list, Any] | None:
    """(container, key) of the user's prompt text: the first user message's last text that is not a
    client reminder (Claude Code wraps context in `<system-reminder>` blocks)."""
    for msg in body.get("messages") or []:
        if not isinstance(msg, dict) or msg.get("role") != "user":
            continue
        content = msg.get("content")
        if isinstance(content, str):
            return (msg, "content") if content.strip() else None
        if isinstance(content, list):
            candidates = [
                i for i, part in enumerate(content)
                if isinstance(part, dict) and part.get("type") in ("text", "input_text")
                and isinstance(part.get("text"), str) and part["text"].strip()
                and not part["text"].lstrip().startswith("<system-reminder>")
            ]
            if candidates:
                return (content[candidates[-1]], "text")
        return None
    return None


def prompt_text(body: dict) -> str | None:
    loc = _prompt_location(body)
    return None if loc is None else loc[0][loc[1]]


def quoted(body: dict) -> dict | None:
    """The same request with the prompt wrapped in literal double quotes (as opencode sends
    arguments containing spaces); None when the request has no user prompt text."""
    body = copy.deepcopy(body)
    loc = _prompt_location(body)
    if loc is None:
        return None
    container, key = loc
    container[key] = f'"{container[key]}"'
    return body


def count_tokens_body(body: dict) -> dict:
    """A /v1/messages/count_tokens body derived from a messages request, with the keys Claude Code
    sends there (model, messages, tools: captured/claude-code/2.1.197/count-tokens.json)."""
    keep = ("model", "messages", "tools")
    return {k: copy.deepcopy(body[k]) for k in keep if k in body}
