"""A held-out server for the soak's self-test: a proxy that dies after sustained prefix reuse.

Rules:
- It is not the reference engine's `dies-under-sustained-load` fault, on purpose: the soak must
  find a death it was not written against. That fault is time-based (N requests sharing a prefix
  held in flight for S seconds) and answers 500 once dead; this server counts instead. Every
  generation request whose prefix (system prompt or instructions, and tools) it has seen before,
  admitted while at least `--overlap` other requests with that prefix are in flight, is one
  reuse; at the `--die-after-reuses`-th the whole process exits at once, the way an engine
  process killed by its worker's crash does: the streams in flight are reset and every later
  connection is refused. Nothing restarts it.
- Until then it forwards every request to `--upstream` and streams the answer back byte for
  byte (a conformant engine behind it makes it a conformant server).
- A concurrency ramp salts every prompt, so its requests never share a prefix; the soak's
  sessions replay unsalted loops and do.
- Run: python tests/probes/dying_proxy.py --upstream URL --die-after-reuses N [--overlap K]; it
  prints `listening on http://127.0.0.1:PORT` once it accepts connections.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections import Counter

from aiohttp import ClientSession, ClientTimeout, web

from conformance.engine.sustained import prefix_key

_HOP = {"host", "content-length", "transfer-encoding", "connection", "keep-alive"}


def prefix_of(body: object) -> str | None:
    """The part concurrent agent sessions share (what a prefix cache sees first: the engine's own
    definition), or None for a body with no conversation."""
    if not isinstance(body, dict) or not any(k in body for k in ("messages", "input")):
        return None
    return prefix_key(body)


def build_app(upstream: str, die_after_reuses: int, overlap: int) -> web.Application:
    seen: set[str] = set()
    in_flight: Counter[str] = Counter()
    reuses = 0

    async def forward(request: web.Request) -> web.StreamResponse:
        nonlocal reuses
        raw = await request.read()
        try:
            key = prefix_of(json.loads(raw)) if raw else None
        except ValueError:
            key = None
        if key is not None:
            if key in seen and in_flight[key] >= overlap:
                reuses += 1
                if reuses >= die_after_reuses:
                    print(f"dying proxy: {reuses} prefix reuses under load; exiting", file=sys.stderr, flush=True)
                    os._exit(3)  # abrupt: no response, every open connection reset
            seen.add(key)
            in_flight[key] += 1
        try:
            headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP}
            session: ClientSession = request.app["session"]
            async with session.request(request.method, upstream + request.path_qs, data=raw,
                                       headers=headers) as up:
                resp = web.StreamResponse(status=up.status, headers={
                    k: v for k, v in up.headers.items() if k.lower() not in _HOP})
                await resp.prepare(request)
                async for chunk in up.content.iter_any():
                    await resp.write(chunk)
                await resp.write_eof()
                return resp
        finally:
            if key is not None:
                in_flight[key] -= 1

    async def on_startup(app: web.Application) -> None:
        app["session"] = ClientSession(timeout=ClientTimeout(total=None), auto_decompress=False)

    async def on_cleanup(app: web.Application) -> None:
        await app["session"].close()

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_route("*", "/{tail:.*}", forward)
    app.on_startup.append(on_startup)
    app.on_cleanup.append(on_cleanup)
    return app


async def serve(args: argparse.Namespace) -> None:
    runner = web.AppRunner(build_app(args.upstream.rstrip("/"), args.die_after_reuses, args.overlap),
                           access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", args.port)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    print(f"listening on http://127.0.0.1:{port}", flush=True)
    await asyncio.Event().wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--upstream", required=True)
    ap.add_argument("--die-after-reuses", type=int, required=True)
    ap.add_argument("--overlap", type=int, default=2)
    ap.add_argument("--port", type=int, default=0)
    asyncio.run(serve(ap.parse_args()))


if __name__ == "__main__":
    main()
