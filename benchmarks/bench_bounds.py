"""Benchmark: what a hostile body costs the suite (time, peak memory), against a normal body.

Measured in one run, each case in its own subprocess (so its peak resident memory is its own),
against a loopback server that generates the bodies lazily:
  normal     an event stream of small deltas, as big as the event cap, read to its end (baseline);
  event      one 200 MB event (many `data:` lines, no blank line): refused at the event cap;
  line       300 MB without a newline: refused at the line cap;
  judge      check_exchange over what `event` kept (a capped exchange is not judged further);
  the `normal` case is judged too (`judge_seconds`): the most a response under the caps costs;
and, in this process, the content-started detection on a 4 MiB prefix of one event read in
64 KiB chunks: `old` re-decodes the whole prefix on every chunk (the quadratic way this
transport used to work), `new` is `ContentWatch`.
Prints each figure, the ratios to `normal`, and last a `key=value` line. Usage:
    python benchmarks/bench_bounds.py
"""

from __future__ import annotations

import asyncio
import json
import resource
import subprocess
import sys
import threading
import time

MB = 1000 * 1000
WRITE = 64 * 1024


def _serve():
    from aiohttp import web

    start = b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","content":[]}}\n\n'

    def stream(first: bytes, unit: bytes, total: int):
        async def handler(request):
            await request.read()
            resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
            await resp.prepare(request)
            sent = 0
            try:
                await resp.write(first)
                block = unit * max(1, WRITE // len(unit))
                while sent < total:
                    await resp.write(block)
                    sent += len(block)
                await resp.write_eof()
            except (ConnectionError, RuntimeError):
                pass
            return resp
        return handler

    delta = (b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
             b'"delta":{"type":"text_delta","text":"' + b"w" * 200 + b'"}}\n\n')
    app = web.Application()
    app.router.add_post("/v1/messages", stream(start + b'event: content_block_start\ndata: {"type":"content_block_start",'
                                          b'"index":0,"content_block":{"type":"text","text":""}}\n\n', delta,
                                          15 * 1024 * 1024))
    app.router.add_post("/event", stream(start + b"event: content_block_delta\n", b"data: " + b"x" * 1016 + b"\n",
                                         200 * MB))
    app.router.add_post("/line", stream(start + b"data: ", b"y" * 4096, 300 * MB))
    loop = asyncio.new_event_loop()
    box: dict = {}
    ready = threading.Event()

    def run():
        asyncio.set_event_loop(loop)
        runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=0.5)
        loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        loop.run_until_complete(site.start())
        box["url"] = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"
        ready.set()
        loop.run_forever()

    threading.Thread(target=run, daemon=True).start()
    ready.wait(10)
    return box["url"]


def case(name: str, url: str) -> dict:
    """One case in this (child) process: seconds, peak RSS in MiB, bytes read, error kind."""
    from conformance.checks.exchange import check_exchange
    from conformance.net.transport import Deadlines, send_sync
    from conformance.wire import ANTHROPIC

    t0 = time.perf_counter()
    path = {"normal": "v1/messages", "judge": "event"}.get(name, name)
    raw = send_sync("POST", f"{url}/{path}", body=b"{}",
                    deadlines=Deadlines(10, 60, 180), first_content=ANTHROPIC.content_started)
    read = time.perf_counter() - t0
    judged = 0.0
    if name in ("judge", "normal"):
        t1 = time.perf_counter()
        check_exchange(raw, {"stream": True, "model": "m"}, wire="anthropic")
        judged = time.perf_counter() - t1
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"seconds": round(read if name != "judge" else judged, 3), "judge_seconds": round(judged, 3),
            "peak_rss_mib": round(rss, 1), "bytes_read": raw.bytes_read, "error_kind": raw.error_kind}


def detection() -> tuple[float, float]:
    from conformance.net.transport import ContentWatch
    from conformance.wire import ANTHROPIC

    chunks = [b"event: content_block_delta\n"] + [(b"data: " + b"x" * 1016 + b"\n") * 64] * 64  # 4 MiB
    received = bytearray()
    t0 = time.perf_counter()
    for c in chunks:  # the old way: the whole prefix, every chunk
        received.extend(c)
        ANTHROPIC.content_started(bytes(received))
    old = time.perf_counter() - t0
    watch = ContentWatch(ANTHROPIC.content_started)
    t0 = time.perf_counter()
    for c in chunks:
        watch.feed(c)
    return old, time.perf_counter() - t0


def main() -> int:
    if len(sys.argv) == 4 and sys.argv[1] == "--case":
        print(json.dumps(case(sys.argv[2], sys.argv[3])))
        return 0
    url = _serve()
    figures = {}
    for name in ("normal", "event", "line", "judge"):
        out = subprocess.run([sys.executable, __file__, "--case", name, url], capture_output=True, text=True,
                             timeout=600)
        if out.returncode != 0:
            print(out.stderr, file=sys.stderr)
            return 1
        figures[name] = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{name:7s} {figures[name]}")
    old, new = detection()
    print(f"content detection on a 4 MiB event prefix in 64 KiB chunks: old {old:.3f}s, new {new:.4f}s")
    base = figures["normal"]
    ratios = {
        "event_time_ratio": figures["event"]["seconds"] / base["seconds"],
        "line_time_ratio": figures["line"]["seconds"] / base["seconds"],
        "event_rss_ratio": figures["event"]["peak_rss_mib"] / base["peak_rss_mib"],
        "line_rss_ratio": figures["line"]["peak_rss_mib"] / base["peak_rss_mib"],
        "judge_capped_s": figures["judge"]["seconds"],
        "judge_normal_s": base["judge_seconds"],
        "detect_speedup": old / max(new, 1e-6),
    }
    print(" ".join(f"{k}={v:.2f}" for k, v in ratios.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
