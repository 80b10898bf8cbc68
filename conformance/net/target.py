"""One target and one way to send to it: every sender of the suite goes through `Target.send`.

Rules:
- A `Target` is a base URL, the user's key, the deadlines and the size limits (`Limits`). `url(path, query)` joins the base
  and a path without doubling a `/v1` the user already put in the base URL; `headers(wire,
  captured)` are the headers the real client sends on that wire (`conformance.net.client.headers_for`:
  the captured ones minus hop-by-hop and redacted values, the Dialect's default headers, the key
  the way the Dialect says: x-api-key or a bearer token).
- `send(wire, path, body)` sends the body bytes as given (the caller decides byte-exact or
  re-serialised) under the deadlines, through `conformance.net.transport` (raw bytes with arrival
  times, misbehaviour as data). The first-content deadline uses the Dialect's content-started
  predicate (pings and role-only chunks are not content); `content_started=False`, or a request
  of no wire (None), counts the first byte as content.
- One TLS context per process (`tls_context()`): creating the default context loads the CA store,
  ~0.2 s, more than a whole exchange with a local engine. Each send builds its own httpx client
  from it, unless the caller shares one (`client=`, e.g. the load probe's pooled client, built by
  `async_client()`). A plain-HTTP target's clients read through `conformance.net.backend` (asyncio
  sockets: the same reads, less per-read cost than httpx's default anyio backend).
- `send_sync` is `send` from synchronous code; it must not be called from a running event loop.
"""

from __future__ import annotations

import asyncio
import functools
import ssl
from dataclasses import dataclass, field

import httpx

from conformance.net import transport
from conformance.net.backend import use_socket_backend
from conformance.net.client import headers_for, target_url
from conformance.net.transport import ContentPredicate, Deadlines, Limits, RawExchange
from conformance.wire.dialect import Dialect


@functools.lru_cache(maxsize=1)
def tls_context() -> ssl.SSLContext:
    """The process's one default TLS context (see module rules: building one costs ~0.2 s)."""
    return ssl.create_default_context()


def content_predicate(wire: Dialect | None) -> ContentPredicate | None:
    """The wire's content-started predicate; None (the first byte is content) without a wire."""
    return wire.content_started if wire is not None else None


@dataclass(frozen=True)
class Target:
    """Where requests go and with which key and deadlines."""

    base_url: str
    api_key: str | None = None
    deadlines: Deadlines = field(default_factory=Deadlines)
    limits: Limits = field(default_factory=Limits)

    def url(self, path: str, query: str = "") -> str:
        return target_url(self.base_url, path, query)

    def headers(self, wire: Dialect | None, captured_headers: dict[str, str] | None = None) -> dict[str, str]:
        return headers_for(wire, self.api_key, captured_headers)

    def async_client(self, deadlines: Deadlines | None = None, **kwargs) -> httpx.AsyncClient:
        """An httpx client on the shared TLS context, for callers that send many requests on one."""
        deadlines = deadlines or self.deadlines
        timeout = httpx.Timeout(deadlines.total, connect=deadlines.connect)
        return use_socket_backend(httpx.AsyncClient(timeout=timeout, verify=tls_context(), **kwargs), self.base_url)

    async def send(
        self,
        wire: Dialect | None,
        path: str,
        body: bytes = b"",
        *,
        method: str = "POST",
        query: str = "",
        captured_headers: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
        deadlines: Deadlines | None = None,
        content_started: bool = True,
        client: httpx.AsyncClient | None = None,
    ) -> RawExchange:
        """Send one request (see module rules). `headers` replaces the client's headers entirely."""
        url = self.url(path, query)
        hdrs = headers if headers is not None else self.headers(wire, captured_headers)
        deadlines = deadlines or self.deadlines
        predicate = content_predicate(wire) if content_started else None
        if client is not None:
            return await transport.send(method, url, headers=hdrs, body=body, deadlines=deadlines,
                                        first_content=predicate, client=client, limits=self.limits)
        async with self.async_client(deadlines) as own:
            return await transport.send(method, url, headers=hdrs, body=body, deadlines=deadlines,
                                        first_content=predicate, client=own, limits=self.limits)

    def send_sync(self, wire: Dialect | None, path: str, body: bytes = b"", **kwargs) -> RawExchange:
        """`send` from synchronous code (a fresh event loop). Must not be called from a running one."""
        return asyncio.run(self.send(wire, path, body, **kwargs))
