"""Throughput of the wire core against baselines measured in the same run (a script, not a test).

Run: .venv/bin/python benchmarks/bench_wire.py [--events 20000] [--repeat 3] [--chunk 1400]

What is timed, on the same bytes (an Anthropic stream of thinking, text and tool_use blocks with
~N events, cut into network-sized chunks):
- ours:      conformance.wire.anthropic.check_stream — SSE decode + state machine + per-event
             JSON Schema validation + accumulation (the full judge).
- ours/sse:  conformance.wire.sse.decode alone (framing only), for reference.
- sdk:       the anthropic SDK accumulating the same bytes through its public streaming API
             (`client.messages.stream(...).get_final_message()`), served by an in-memory httpx2
             transport so no socket time is counted.
- sdk/core:  the SDK's own pieces without the client: its SSEDecoder + json.loads +
             `accumulate_event` (what MessageStream runs per event).
- split:     plain `split(b"\\n\\n")` + json.loads of every data line (the floor: no rules).
Reported: events/s, MB/s, and ratios ours/sdk and ours/split. Best of --repeat runs each.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from conformance.wire import anthropic as judge  # noqa: E402
from conformance.wire.sse import decode  # noqa: E402


def build_stream(n_events: int) -> bytes:
    """A realistic Anthropic stream of about n_events events."""
    def ev(d: dict) -> bytes:
        return f"event: {d['type']}\ndata: {json.dumps(d, separators=(',', ':'))}\n\n".encode()

    out = [ev({"type": "message_start", "message": {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant",
        "model": "claude-sonnet-4-5-20250929", "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 1523, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 14873,
                  "output_tokens": 2}}})]
    per = max(1, (n_events - 12) // 3)
    idx = 0
    # thinking
    out.append(ev({"type": "content_block_start", "index": idx,
                   "content_block": {"type": "thinking", "thinking": "", "signature": ""}}))
    for i in range(per):
        out.append(ev({"type": "content_block_delta", "index": idx,
                       "delta": {"type": "thinking_delta", "thinking": f" step {i} of the plan,"}}))
        if i % 200 == 0:
            out.append(ev({"type": "ping"}))
    out.append(ev({"type": "content_block_delta", "index": idx,
                   "delta": {"type": "signature_delta", "signature": "EqQBCkYIBxgCKkB" + "x" * 300}}))
    out.append(ev({"type": "content_block_stop", "index": idx}))
    idx += 1
    # text
    out.append(ev({"type": "content_block_start", "index": idx, "content_block": {"type": "text", "text": ""}}))
    for i in range(per):
        out.append(ev({"type": "content_block_delta", "index": idx,
                       "delta": {"type": "text_delta", "text": f"word{i} "}}))
    out.append(ev({"type": "content_block_stop", "index": idx}))
    idx += 1
    # tool_use with many argument fragments: one big string value
    out.append(ev({"type": "content_block_start", "index": idx, "content_block": {
        "type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "Write", "input": {}}}))
    out.append(ev({"type": "content_block_delta", "index": idx,
                   "delta": {"type": "input_json_delta", "partial_json": '{"file_path": "/w/a.txt", "content": "'}}))
    for i in range(per):
        out.append(ev({"type": "content_block_delta", "index": idx,
                       "delta": {"type": "input_json_delta", "partial_json": f"line {i}\\n"}}))
    out.append(ev({"type": "content_block_delta", "index": idx,
                   "delta": {"type": "input_json_delta", "partial_json": '"}'}}))
    out.append(ev({"type": "content_block_stop", "index": idx}))
    out.append(ev({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                   "usage": {"output_tokens": n_events}}))
    out.append(ev({"type": "message_stop"}))
    return b"".join(out)


def chunked(body: bytes, size: int) -> list[tuple[float, bytes]]:
    return [(i / 1e6, body[i:i + size]) for i in range(0, len(body), size)]


def run_ours(chunks):
    report = judge.check_stream(chunks)
    assert report.ok and report.complete, report.violations[:3]
    return report.message


def run_ours_sse(chunks):
    events, violations = decode(chunks)
    assert not violations
    return events


def run_split(body: bytes):
    n = 0
    for block in body.split(b"\n\n"):
        for line in block.split(b"\n"):
            if line.startswith(b"data: "):
                json.loads(line[6:])
                n += 1
    return n


def run_sdk_core(raw_chunks: list[bytes]):
    from anthropic._streaming import SSEDecoder
    from anthropic.lib.streaming._messages import accumulate_event

    snapshot, bufs = None, {}
    for sse in SSEDecoder().iter_bytes(iter(raw_chunks)):
        if sse.event in ("message_start", "message_delta", "message_stop", "content_block_start",
                         "content_block_delta", "content_block_stop"):
            snapshot = accumulate_event(event=json.loads(sse.data), current_snapshot=snapshot, json_bufs=bufs)
    return snapshot


def make_sdk_client(raw_chunks: list[bytes]):
    import anthropic
    import httpx2

    def handler(request):
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=iter(raw_chunks))

    return anthropic.Anthropic(api_key="bench", base_url="http://bench.invalid",
                               http_client=httpx2.Client(transport=httpx2.MockTransport(handler)), max_retries=0)


def run_sdk(client):
    with client.messages.stream(model="claude-sonnet-4-5-20250929", max_tokens=64000,
                                messages=[{"role": "user", "content": "hi"}]) as stream:
        return stream.get_final_message()


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--chunk", type=int, default=1400, help="network chunk size in bytes (default: one MTU-ish)")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore", DeprecationWarning)  # the SDK warns about the model name on every call

    body = build_stream(args.events)
    chunks = chunked(body, args.chunk)
    raw_chunks = [c for _, c in chunks]
    events, _ = decode(body)
    n, mb = len(events), len(body) / 1e6

    # same final message from both sides before timing anything
    ours_msg = run_ours(chunks)
    sdk_msg = run_sdk_core(raw_chunks).to_dict()
    assert [b["type"] for b in ours_msg["content"]] == [b["type"] for b in sdk_msg["content"]]
    assert ours_msg["content"][2]["input"] == sdk_msg["content"][2]["input"]

    results = {
        "ours (decode+machine+schemas)": best(lambda: run_ours(chunks), args.repeat),
        "ours/sse decode only": best(lambda: run_ours_sse(chunks), args.repeat),
        "anthropic SDK messages.stream": None,
        "anthropic SDK core (decoder+accumulate_event)": best(lambda: run_sdk_core(raw_chunks), args.repeat),
        "plain split + json.loads": best(lambda: run_split(body), args.repeat),
    }
    try:
        client = make_sdk_client(raw_chunks)
        run_sdk(client)
        results["anthropic SDK messages.stream"] = best(lambda: run_sdk(client), args.repeat)
    except Exception as exc:  # noqa: BLE001 - report, keep the other figures
        print(f"(anthropic SDK client path unavailable: {type(exc).__name__}: {exc})")
        del results["anthropic SDK messages.stream"]

    print(f"stream: {n} events, {mb:.2f} MB, {len(chunks)} chunks of {args.chunk} B; best of {args.repeat}")
    width = max(len(k) for k in results)
    for name, secs in results.items():
        print(f"  {name:<{width}}  {secs * 1000:8.1f} ms  {n / secs:10,.0f} events/s  {mb / secs:7.2f} MB/s")
    ours = results["ours (decode+machine+schemas)"]
    print("ratios (throughput, >1 means ours is faster):")
    for name, secs in results.items():
        if not name.startswith("ours"):
            print(f"  ours / {name:<{width}}  {secs / ours:6.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
