"""How the suite talks to a target the way the real clients do.

Rules:
- `headers_for(wire, api_key, captured_headers)` keeps the client's own headers (anthropic-version,
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
  suite makes (model rewrite, salt, quoted prompt, ...) is a writer of the wire's Dialect (a
  changed deep copy), re-serialised the way the clients serialise (`serialize`: compact, no ASCII
  escaping). The run salt is `SALT_PREFIX` with the run token (`salted`), at the very start of
  the system prompt.
"""

from __future__ import annotations

import json
import os
from typing import Any

from conformance.wire.dialect import Dialect

# Not replayed: hop-by-hop, length/host (recomputed), encodings (raw bytes are recorded).
_DROP = {"host", "content-length", "connection", "transfer-encoding", "keep-alive", "accept-encoding",
         "proxy-authorization", "te", "upgrade", "cookie"}
ACCEPT_ENCODING_ENV = "CONFORMANCE_ACCEPT_ENCODING"
# Credential header names (lower-case): never replayed from a capture (the user's key replaces
# them), and the names whose values `conformance.capture.redact.redact_credentials` replaces in
# the report copies of what the suite sent. One list, here on the lower floor; capture imports it.
CREDENTIAL_HEADERS = frozenset({"x-api-key", "authorization", "api-key", "proxy-authorization", "cookie",
                                "set-cookie", "x-goog-api-key", "openai-organization", "openai-project"})


def headers_for(wire: Dialect | None, api_key: str | None, captured_headers: dict[str, str] | None) -> dict[str, str]:
    """Headers to send for a replayed request on `wire` with the user's key (see module rules).
    A request of no wire (None: GET /v1/models, a probe's own path) gets no default headers and
    the key as the capture shows it."""
    captured = {k.lower(): v for k, v in (captured_headers or {}).items()}
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


SALT_PREFIX = "[conformance-run {token}] "


def salted(body: dict, wire: Dialect, token: str) -> dict:
    """The run token at the very start of the system prompt (the wire's `salted`)."""
    return wire.salted(body, SALT_PREFIX.format(token=token))
