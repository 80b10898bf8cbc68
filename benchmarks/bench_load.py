"""What the load probe itself can ingest and judge, per concurrency level (a script, not a test).

Run: .venv/bin/python benchmarks/bench_load.py [--levels 1,8,64,256,512] [--events 200]
                                              [--server-procs 2] [--rounds 2] [--min-requests 48]

The target is built not to be the bottleneck: `--server-procs` processes share one port
(SO_REUSEPORT) and answer every request with the same pre-rendered Anthropic stream (`--events`
SSE events, one text block, keep-alive), written in one call; nothing is generated per request.
The client is the load probe's own level runner (`conformance.probes.load.run_level`): the one
sender with deadlines and arrival times, then the suite's judge on every exchange, with the
probe's ClientMonitor measuring its CPU and event-loop lag.

Per level: streams/s and events/s ingested and judged, the client's CPU (process and loop
thread), loop lag p95, the server processes' CPU, and whether the level was client-limited (the
client set the pace: then the figure is the client's ceiling). The last line holds key=value
pairs per level: events_per_s_at_N, streams_per_s_at_N, client_limited_at_N.
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


async def run(args) -> dict[str, str]:
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
        items = [WorkItem("bench", build_request(target, "Say hello.", max_tokens=args.events, salt=""))]
        print(f"server: {args.server_procs} process(es) on port {port}, one pre-rendered stream of {args.events} "
              f"events ({len(response)} B)")
        print(f"{'level':>5} {'streams':>7} {'wall_s':>7} {'streams/s':>9} {'events/s':>9} {'cpu%':>5} "
              f"{'loop_cpu%':>9} {'lag_p95_ms':>10} {'server_cpu%':>11}  client_limited")
        out: dict[str, str] = {}
        for level in args.levels:
            rounds = max(args.rounds, -(-args.min_requests // level))
            cpu0 = cpu_seconds(pids)
            stats = await run_level(target, items, level, rounds=rounds, progress=lambda line: None)
            server_cpu = (cpu_seconds(pids) - cpu0) / stats.wall_s if stats.wall_s else 0.0
            ok = [r for r in stats.records if r.kind is None]
            if len(ok) != len(stats.records):
                bad = stats.failures[0]
                raise SystemExit(f"level {level}: {len(stats.failures)} exchanges failed, first: {bad.kind}: "
                                 f"{[v.check_id for v in bad.violations][:5]}")
            streams_s = len(ok) / stats.wall_s
            events_s = streams_s * args.events
            c = stats.client
            limited = stats.client_limited
            print(f"{level:>5} {len(ok):>7} {stats.wall_s:>7.2f} {streams_s:>9.1f} {events_s:>9.0f} "
                  f"{100 * c.cpu_share:>5.0f} {100 * c.loop_cpu_share:>9.0f} {1000 * c.lag_p95_s:>10.0f} "
                  f"{100 * server_cpu:>11.0f}  {'YES: ' + limited if limited else 'no'}", flush=True)
            out[f"events_per_s_at_{level}"] = f"{events_s:.0f}"
            out[f"streams_per_s_at_{level}"] = f"{streams_s:.1f}"
            out[f"client_limited_at_{level}"] = "yes" if limited else "no"
        return out
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.join(5)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--levels", default="1,8,64,256,512", help="comma-separated concurrency levels")
    ap.add_argument("--events", type=int, default=200, help="SSE events per stream")
    ap.add_argument("--server-procs", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2, help="requests per slot at each level (at least)")
    ap.add_argument("--min-requests", type=int, default=48, help="at least this many requests per level")
    args = ap.parse_args(argv)
    args.levels = [int(x) for x in args.levels.split(",") if x.strip()]
    ratios = asyncio.run(run(args))
    print(" ".join(f"{k}={v}" for k, v in ratios.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
