"""What the load probe itself can ingest and judge, per concurrency level, beside a bare client (a script, not a test).

Run: .venv/bin/python benchmarks/bench_load.py [--levels 1,8,64,256,1024] [--events 200]
                                              [--server-procs 2] [--rounds 4] [--min-requests 512]

The target is built not to be the bottleneck: `--server-procs` processes share one port
(SO_REUSEPORT) and answer every request with the same pre-rendered Anthropic stream (`--events`
SSE events, one text block, keep-alive), written in one call; nothing is generated per request.

Three clients run each level against that server, one after the other, with the same number of
requests and `level` of them in flight:
- judged: the load probe's own level runner (`conformance.probes.load.run_level`): the one sender
  with deadlines and arrival times, a salt per request, the suite's judge on every exchange, the
  ClientMonitor measuring the probe's CPU and event-loop lag; from `senders.SPLIT_FROM` requests
  split across one sender process per core (so its CPU figures can pass 100%);
- bare: the same sender with nothing else: one process, no salt, no judge, no monitor, no records
  (the client a load script would write). `vs_bare` is judged/bare at the same level;
- aiohttp: one aiohttp session reading each stream to its end (the client `vllm bench serve`
  uses), for scale: the server's ceiling as a fast client sees it. Not a target for the ratio:
  it neither keeps arrival times nor judges.

Per level: streams/s and events/s of each, the judged run's CPU (process and loop thread), loop
lag p95, the server processes' CPU, whether the judged level was client-limited (the client set
the pace: then the figure is the client's ceiling), judged/bare and judged/best judged level.
The last line holds key=value pairs per level: events_per_s_at_N, bare_events_per_s_at_N,
aiohttp_events_per_s_at_N, vs_bare_at_N, vs_best_at_N, client_limited_at_N.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import re
import socket
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

_LENGTH = re.compile(rb"(?im)^content-length:\s*(\d+)\s*$")


def render_stream(n_events: int) -> bytes:
    """A valid Anthropic text stream of n_events events as one HTTP/1.1 response."""
    def ev(d: dict) -> bytes:
        return f"event: {d['type']}\ndata: {json.dumps(d, separators=(',', ':'))}\n\n".encode()

    deltas = max(1, n_events - 5)
    body = b"".join([
        ev({"type": "message_start", "message": {
            "id": "msg_01BenchLoad", "type": "message", "role": "assistant", "model": "bench-model", "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 12, "output_tokens": 1}}}),
        ev({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        *(ev({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": f"w{i} "}})
          for i in range(deltas)),
        ev({"type": "content_block_stop", "index": 0}),
        ev({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": deltas}}),
        ev({"type": "message_stop"}),
    ])
    head = (f"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
            f"request-id: req_bench\r\ncontent-length: {len(body)}\r\n\r\n").encode()
    return head + body


def _serve(port: int, response: bytes, ready) -> None:
    """One server process: read a request (headers + content-length body), write the response."""
    class Replay(asyncio.Protocol):
        def connection_made(self, transport):
            self.transport, self.buf = transport, b""

        def data_received(self, data):
            self.buf += data
            while True:
                end = self.buf.find(b"\r\n\r\n")
                if end < 0:
                    return
                m = _LENGTH.search(self.buf, 0, end)
                need = end + 4 + (int(m.group(1)) if m else 0)
                if len(self.buf) < need:
                    return
                self.buf = self.buf[need:]
                self.transport.write(response)

    async def main():
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(("127.0.0.1", port))
        server = await asyncio.get_running_loop().create_server(Replay, sock=sock, backlog=4096)
        ready.set()
        await server.serve_forever()

    asyncio.run(main())


def start_servers(n: int, response: bytes) -> tuple[int, list]:
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    ctx = multiprocessing.get_context("spawn")
    procs = []
    for _ in range(n):
        ready = ctx.Event()
        p = ctx.Process(target=_serve, args=(port, response, ready), daemon=True)
        p.start()
        if not ready.wait(30):
            raise RuntimeError("a bench server process did not start in 30 s")
        procs.append(p)
    probe.close()
    return port, procs


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU of the server processes (Linux /proc; 0 elsewhere)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            return 0.0
    return total / os.sysconf("SC_CLK_TCK")


async def bare_level(target, body: dict, level: int, total: int) -> float:
    """Streams/s of the probe's sender alone (module docstring): per-slot clients, no judge."""
    import httpx

    from conformance.probes.common import send

    indices = iter(range(total))
    failed: list[str] = []

    async def slot() -> None:
        one_connection = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        async with target.net.async_client(limits=one_connection) as client:
            for _ in indices:
                raw = await send(target, body, client=client)
                if not raw.ok:
                    failed.append(raw.error or str(raw.status))

    t0 = time.monotonic()
    await asyncio.gather(*(slot() for _ in range(min(level, total))))
    wall = time.monotonic() - t0
    if failed:
        raise SystemExit(f"bare client, level {level}: {len(failed)} requests failed, first: {failed[0]}")
    return total / wall


async def aiohttp_level(url: str, headers: dict[str, str], payload: bytes, level: int, total: int) -> float:
    """Streams/s of one aiohttp session reading each stream to its end (module docstring)."""
    import aiohttp

    indices = iter(range(total))
    connector = aiohttp.TCPConnector(limit=level, limit_per_host=level)
    async with aiohttp.ClientSession(connector=connector) as session:
        async def slot() -> None:
            for _ in indices:
                async with session.post(url, data=payload, headers=headers) as resp:
                    async for _chunk in resp.content.iter_any():
                        pass
                    if resp.status != 200:
                        raise SystemExit(f"aiohttp client, level {level}: HTTP {resp.status}")

        t0 = time.monotonic()
        await asyncio.gather(*(slot() for _ in range(min(level, total))))
        return total / (time.monotonic() - t0)


async def run(args) -> dict[str, str]:
    from conformance.net.client import serialize
    from conformance.net.transport import Deadlines
    from conformance.probes.common import Target, build_request
    from conformance.probes.load import run_level
    from conformance.probes.workload import WorkItem
    from conformance.wire import ANTHROPIC

    response = render_stream(args.events)
    port, procs = start_servers(args.server_procs, response)
    pids = [p.pid for p in procs]
    try:
        target = Target(f"http://127.0.0.1:{port}", wire=ANTHROPIC, model="bench-model",
                        deadlines=Deadlines(connect=30.0, first_content=120.0, total=300.0))
        body = build_request(target, "Say hello.", max_tokens=args.events, salt="")
        items = [WorkItem("bench", body)]
        url = target.net.url(ANTHROPIC.generation_path)
        print(f"server: {args.server_procs} process(es) on port {port}, one pre-rendered stream of {args.events} "
              f"events ({len(response)} B); client machine: {os.cpu_count()} cores")
        print(f"{'level':>5} {'streams':>7} {'judged/s':>8} {'bare/s':>7} {'aiohttp/s':>9} {'vs_bare':>7} "
              f"{'vs_best':>7} {'cpu%':>5} {'loop_cpu%':>9} {'lag_p95_ms':>10} {'server_cpu%':>11}  client_limited")
        rows = []
        for level in args.levels:
            total = max(args.rounds * level, args.min_requests)
            rounds = -(-total // level)
            total = rounds * level
            bare = await bare_level(target, body, level, total)
            cpu0 = cpu_seconds(pids)
            stats = await run_level(target, items, level, rounds=rounds, progress=lambda line: None)
            server_cpu = (cpu_seconds(pids) - cpu0) / stats.wall_s if stats.wall_s else 0.0
            ok = [r for r in stats.records if r.kind is None]
            if len(ok) != len(stats.records):
                bad = stats.failures[0]
                raise SystemExit(f"level {level}: {len(stats.failures)} exchanges failed, first: {bad.kind}: "
                                 f"{[v.check_id for v in bad.violations][:5]}")
            ref = await aiohttp_level(url, target.net.headers(ANTHROPIC), serialize(body), level, total)
            rows.append((level, len(ok), len(ok) / stats.wall_s, bare, ref, stats, server_cpu))
        best = max(judged for _, _, judged, *_ in rows)
        out: dict[str, str] = {}
        for level, n, judged, bare, ref, stats, server_cpu in rows:
            c = stats.client
            limited = stats.client_limited
            print(f"{level:>5} {n:>7} {judged:>8.0f} {bare:>7.0f} {ref:>9.0f} {judged / bare:>7.2f} "
                  f"{judged / best:>7.2f} {100 * c.cpu_share:>5.0f} {100 * c.loop_cpu_share:>9.0f} "
                  f"{1000 * c.lag_p95_s:>10.0f} {100 * server_cpu:>11.0f}  {'YES: ' + limited if limited else 'no'}")
            out[f"events_per_s_at_{level}"] = f"{judged * args.events:.0f}"
            out[f"bare_events_per_s_at_{level}"] = f"{bare * args.events:.0f}"
            out[f"aiohttp_events_per_s_at_{level}"] = f"{ref * args.events:.0f}"
            out[f"vs_bare_at_{level}"] = f"{judged / bare:.2f}"
            out[f"vs_best_at_{level}"] = f"{judged / best:.2f}"
            out[f"client_limited_at_{level}"] = "yes" if limited else "no"
        return out
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.join(5)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--levels", default="1,8,64,256,1024", help="comma-separated concurrency levels")
    ap.add_argument("--events", type=int, default=200, help="SSE events per stream")
    ap.add_argument("--server-procs", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=4, help="requests per slot at each level (at least)")
    ap.add_argument("--min-requests", type=int, default=512, help="at least this many requests per level")
    args = ap.parse_args(argv)
    args.levels = [int(x) for x in args.levels.split(",") if x.strip()]
    ratios = asyncio.run(run(args))
    print(" ".join(f"{k}={v}" for k, v in ratios.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
