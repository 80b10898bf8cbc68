"""Throughput of the wire judges against baselines measured in the same run (a script, not a test).

Run: .venv/bin/python benchmarks/bench_wire.py [--events 20000] [--repeat 3] [--chunk 1400]

Every case times the same bytes, cut into network-sized chunks, best of --repeat runs each:
- anthropic: conformance.wire.anthropic.grammar.check_stream (SSE decode + state machine + per-event
  schemas + accumulation: the full judge) against the anthropic SDK's `messages.stream` (served by
  an in-memory httpx2 transport, so no socket time), the SDK's core (its SSEDecoder + json.loads +
  `accumulate_event`) and the floor: plain `split(b"\\n\\n")` + json.loads of every data line.
  `ours/sse` is the SSE decoder alone.
- anthropic CRLF: the same stream with CRLF line endings (the judge's CRLF path), against the
  floor split on CRLF.
- size cap: the stream cut mid-event at half its size (what a transport's size cap leaves): the
  judge must still report the cut (sse.stream.ends_mid_event, anthropic.stream.complete); and one
  2 MB event arriving in chunks (the judge must stay linear in its size).
- chat: conformance.wire.chat.grammar.check_stream on a chat-completions stream (content, one tool
  call's argument fragments, finish, usage, [DONE]) against the openai SDK's
  `chat.completions.stream` and the floor.
- responses (when conformance.wire.responses exists): the Responses judge against the openai
  SDK's `responses.stream` and the floor.
Each case asserts the judge's verdict (clean, complete, the same final content as the SDK's)
before timing. The last line holds the ratios as key=value pairs (throughput; >1: ours is faster).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from conformance.wire.anthropic import grammar as judge  # noqa: E402
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


def build_chat_stream(n_events: int) -> bytes:
    """A chat-completions stream of about n_events chunks: content, one tool call, finish, usage."""
    head = {"id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT", "object": "chat.completion.chunk",
            "created": 1741569952, "model": "gpt-4.1-2025-04-14", "system_fingerprint": "fp_44709d6fcb"}

    def ev(choices: list, **extra) -> bytes:
        return b"data: " + json.dumps({**head, "choices": choices, **extra}, separators=(",", ":")).encode() + b"\n\n"

    out = [ev([{"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None, "finish_reason": None}])]
    per = max(1, (n_events - 5) // 2)
    for i in range(per):
        out.append(ev([{"index": 0, "delta": {"content": f"word{i} "}, "logprobs": None, "finish_reason": None}]))
    out.append(ev([{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_DdmO9pD3xa9XTPNJ32zg2hcA",
                                                          "type": "function", "function": {
                                                              "name": "Write", "arguments": ""}}]},
                    "logprobs": None, "finish_reason": None}]))
    frags = ['{"file_path": "/w/a.txt", "content": "'] + [f"line {i}\\n" for i in range(per)] + ['"}']
    for frag in frags:
        out.append(ev([{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": frag}}]},
                        "logprobs": None, "finish_reason": None}]))
    out.append(ev([{"index": 0, "delta": {}, "logprobs": None, "finish_reason": "tool_calls"}]))
    out.append(ev([], usage={"prompt_tokens": 1523, "completion_tokens": n_events, "total_tokens": 1523 + n_events}))
    out.append(b"data: [DONE]\n\n")
    return b"".join(out)


def run_chat(chunks):
    from conformance.wire.chat import grammar as chat_judge

    report = chat_judge.check_stream(chunks, request={"stream_options": {"include_usage": True}})
    assert report.ok and report.complete, report.violations[:3]
    return report.message


def make_openai_client(raw_chunks: list[bytes]):
    import httpx2
    import openai

    def handler(request):
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=iter(raw_chunks))

    return openai.OpenAI(api_key="bench", base_url="http://bench.invalid/v1",
                         http_client=httpx2.Client(transport=httpx2.MockTransport(handler)), max_retries=0)


def run_sdk_chat(client):
    with client.chat.completions.stream(model="gpt-4.1", messages=[{"role": "user", "content": "hi"}],
                                        stream_options={"include_usage": True}) as stream:
        return stream.get_final_completion()


def run_split_crlf(body: bytes):
    n = 0
    for block in body.split(b"\r\n\r\n"):
        for line in block.split(b"\r\n"):
            if line.startswith(b"data: "):
                json.loads(line[6:])
                n += 1
    return n


def run_split_chat(body: bytes):
    n = 0
    for block in body.split(b"\n\n"):
        if block.startswith(b"data: ") and block != b"data: [DONE]":
            json.loads(block[6:])
            n += 1
    return n


def big_event_stream(size: int) -> bytes:
    """message_start, one text block whose only delta is `size` bytes, the end."""
    full = build_stream(40)
    head, _, _ = full.partition(b"event: content_block_start")
    text = "x" * size
    return head + b"".join(f"event: {d['type']}\ndata: {json.dumps(d, separators=(',', ':'))}\n\n".encode() for d in [
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
         "usage": {"output_tokens": 5}},
        {"type": "message_stop"}])


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def table(title: str, n: int, mb: float, results: dict[str, float | None]) -> None:
    print(title)
    width = max(len(k) for k in results)
    for name, secs in results.items():
        if secs is None:
            print(f"  {name:<{width}}  (unavailable)")
        else:
            print(f"  {name:<{width}}  {secs * 1000:8.1f} ms  {n / secs:10,.0f} events/s  {mb / secs:7.2f} MB/s")


def sdk_time(make, run, raw_chunks, repeat: int) -> float | None:
    try:
        client = make(raw_chunks)
        run(client)
        return best(lambda: run(client), repeat)
    except Exception as exc:  # noqa: BLE001 - report, keep the other figures
        print(f"(SDK client path unavailable: {type(exc).__name__}: {exc})")
        return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--chunk", type=int, default=1400, help="network chunk size in bytes (default: one MTU-ish)")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore", DeprecationWarning)  # the SDK warns about the model name on every call
    ratios: dict[str, str] = {}

    def ratio(key: str, theirs: float | None, ours: float) -> None:
        ratios[key] = "n/a" if theirs is None else f"{theirs / ours:.2f}"

    # -- anthropic ---------------------------------------------------------------------------
    body = build_stream(args.events)
    chunks = chunked(body, args.chunk)
    raw_chunks = [c for _, c in chunks]
    events, _ = decode(body)
    n, mb = len(events), len(body) / 1e6
    ours_msg = run_ours(chunks)  # same final message from both sides before timing anything
    sdk_msg = run_sdk_core(raw_chunks).to_dict()
    assert [b["type"] for b in ours_msg["content"]] == [b["type"] for b in sdk_msg["content"]]
    assert ours_msg["content"][2]["input"] == sdk_msg["content"][2]["input"]
    results = {
        "ours (decode+machine+schemas)": best(lambda: run_ours(chunks), args.repeat),
        "ours/sse decode only": best(lambda: run_ours_sse(chunks), args.repeat),
        "anthropic SDK messages.stream": sdk_time(make_sdk_client, run_sdk, raw_chunks, args.repeat),
        "anthropic SDK core (decoder+accumulate_event)": best(lambda: run_sdk_core(raw_chunks), args.repeat),
        "plain split + json.loads": best(lambda: run_split(body), args.repeat),
    }
    table(f"anthropic: {n} events, {mb:.2f} MB, {len(chunks)} chunks of {args.chunk} B; best of {args.repeat}",
          n, mb, results)
    ours = results["ours (decode+machine+schemas)"]
    ratio("ours_vs_sdk", results["anthropic SDK messages.stream"], ours)
    ratio("ours_vs_sdk_core", results["anthropic SDK core (decoder+accumulate_event)"], ours)
    ratio("ours_vs_floor", results["plain split + json.loads"], ours)

    # -- anthropic, CRLF line endings ------------------------------------------------------------
    crlf = body.replace(b"\n", b"\r\n")
    crlf_chunks = chunked(crlf, args.chunk)
    assert run_ours(crlf_chunks) == ours_msg
    results = {"ours on CRLF": best(lambda: run_ours(crlf_chunks), args.repeat),
               "plain split on CRLF + json.loads": best(lambda: run_split_crlf(crlf), args.repeat)}
    table(f"anthropic CRLF: {len(crlf) / 1e6:.2f} MB", n, len(crlf) / 1e6, results)
    ratio("crlf_vs_floor", results["plain split on CRLF + json.loads"], results["ours on CRLF"])

    # -- size caps: a stream cut mid-event, one very large event ----------------------------------
    cut = chunked(body[: len(body) // 2], args.chunk)
    report = judge.check_stream(cut)
    assert {"sse.stream.ends_mid_event", "anthropic.stream.complete"} <= set(report.check_ids), report.check_ids
    cut_secs = best(lambda: judge.check_stream(cut), args.repeat)
    big = big_event_stream(2_000_000)
    big_chunks = chunked(big, args.chunk)
    assert len(run_ours(big_chunks)["content"][0]["text"]) == 2_000_000
    big_secs = best(lambda: run_ours(big_chunks), args.repeat)
    floor_big = best(lambda: run_split(big), args.repeat)
    print(f"size cap: stream cut at {len(body) // 2} B judged (cut reported) in {cut_secs * 1000:.1f} ms; "
          f"one 2 MB event in {len(big_chunks)} chunks judged in {big_secs * 1000:.1f} ms "
          f"(floor {floor_big * 1000:.1f} ms)")
    ratio("cut_vs_floor", best(lambda: run_split(body[: len(body) // 2]), args.repeat), cut_secs)
    ratio("big_event_vs_floor", floor_big, big_secs)

    # -- OpenAI chat completions --------------------------------------------------------------------
    chat = build_chat_stream(args.events)
    chat_chunks = chunked(chat, args.chunk)
    chat_raw = [c for _, c in chat_chunks]
    chat_msg = run_chat(chat_chunks)
    client = make_openai_client(chat_raw)
    sdk_final = run_sdk_chat(client).choices[0].message
    assert chat_msg["content"] == sdk_final.content
    assert chat_msg["tool_calls"][0]["function"]["arguments"] == sdk_final.tool_calls[0].function.arguments
    nc = len(decode(chat)[0])
    results = {
        "ours (openai chat judge)": best(lambda: run_chat(chat_chunks), args.repeat),
        "openai SDK chat.completions.stream": sdk_time(make_openai_client, run_sdk_chat, chat_raw, args.repeat),
        "plain split + json.loads": best(lambda: run_split_chat(chat), args.repeat),
    }
    table(f"chat: {nc} events, {len(chat) / 1e6:.2f} MB", nc, len(chat) / 1e6, results)
    ratio("chat_vs_sdk", results["openai SDK chat.completions.stream"], results["ours (openai chat judge)"])
    ratio("chat_vs_floor", results["plain split + json.loads"], results["ours (openai chat judge)"])

    # -- OpenAI Responses ----------------------------------------------------------------------------
    responses_case(args, ratios)

    print("ratios (throughput, >1 means ours is faster):")
    print(" ".join(f"{k}={v}" for k, v in ratios.items()))
    return 0


def build_responses_stream(n_events: int) -> bytes:
    """A Responses API stream of about n_events events: a message's text deltas, then one
    function call's argument deltas, then response.completed with the whole output."""
    per = max(1, (n_events - 14) // 2)
    seq = iter(range(10 ** 9))
    text_pieces = [f"word{i} " for i in range(per)]
    arg_pieces = ['{"file_path": "/w/a.txt", "content": "'] + [f"line {i}\\n" for i in range(per)] + ['"}']
    msg = {"id": "msg_68c1f7a2b3c4", "type": "message", "status": "completed", "role": "assistant",
           "content": [{"type": "output_text", "text": "".join(text_pieces), "annotations": [], "logprobs": []}]}
    call = {"id": "fc_68c1f7a2b3c5", "type": "function_call", "status": "completed", "call_id": "call_9TNs3vT6",
            "name": "Write", "arguments": "".join(arg_pieces)}

    def response(status: str, output: list, usage: dict | None) -> dict:
        return {"id": "resp_68c1f7a2b3c3", "object": "response", "created_at": 1764633600, "status": status,
                "error": None, "incomplete_details": None, "model": "gpt-5-codex", "output": output, "usage": usage,
                "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "store": False}

    evs: list[dict] = [{"type": "response.created", "response": response("in_progress", [], None)},
                       {"type": "response.in_progress", "response": response("in_progress", [], None)},
                       {"type": "response.output_item.added", "output_index": 0,
                        "item": {**msg, "status": "in_progress", "content": []}},
                       {"type": "response.content_part.added", "item_id": msg["id"], "output_index": 0,
                        "content_index": 0, "part": {**msg["content"][0], "text": ""}}]
    evs += [{"type": "response.output_text.delta", "item_id": msg["id"], "output_index": 0, "content_index": 0,
             "delta": piece, "logprobs": []} for piece in text_pieces]
    evs += [{"type": "response.output_text.done", "item_id": msg["id"], "output_index": 0, "content_index": 0,
             "text": msg["content"][0]["text"], "logprobs": []},
            {"type": "response.content_part.done", "item_id": msg["id"], "output_index": 0, "content_index": 0,
             "part": msg["content"][0]},
            {"type": "response.output_item.done", "output_index": 0, "item": msg},
            {"type": "response.output_item.added", "output_index": 1,
             "item": {**call, "status": "in_progress", "arguments": ""}}]
    evs += [{"type": "response.function_call_arguments.delta", "item_id": call["id"], "output_index": 1,
             "delta": piece} for piece in arg_pieces]
    evs += [{"type": "response.function_call_arguments.done", "item_id": call["id"], "output_index": 1,
             "arguments": call["arguments"]},
            {"type": "response.output_item.done", "output_index": 1, "item": call},
            {"type": "response.completed", "response": response(
                "completed", [msg, call], {"input_tokens": 1523, "input_tokens_details": {"cached_tokens": 0},
                                           "output_tokens": n_events,
                                           "output_tokens_details": {"reasoning_tokens": 0},
                                           "total_tokens": 1523 + n_events})}]
    out = []
    for ev in evs:
        ev = {"type": ev["type"], "sequence_number": next(seq), **{k: v for k, v in ev.items() if k != "type"}}
        out.append(f"event: {ev['type']}\ndata: {json.dumps(ev, separators=(',', ':'))}\n\n".encode())
    return b"".join(out)


def run_responses(chunks):
    from conformance.wire.responses import grammar as responses

    report = responses.check_stream(chunks)
    assert report.ok and report.complete, report.violations[:3]
    return report.message


def run_sdk_responses(client):
    with client.responses.stream(model="gpt-5-codex", input="hi") as stream:
        return stream.get_final_response()


def responses_case(args, ratios: dict[str, str]) -> None:
    try:
        from conformance.wire.responses import grammar as responses  # noqa: F401
    except ImportError:
        print("responses: no Responses judge in this tree (conformance.wire.responses); skipped")
        ratios["responses_vs_sdk"] = ratios["responses_vs_floor"] = "n/a"
        return
    body = build_responses_stream(args.events)
    chunks = chunked(body, args.chunk)
    raw = [c for _, c in chunks]
    ours_msg = run_responses(chunks)
    sdk_final = run_sdk_responses(make_openai_client(raw))
    assert sdk_final.output[1].arguments == ours_msg["output"][1]["arguments"], "judge and SDK disagree"
    n = len(decode(body)[0])
    results = {
        "ours (responses judge)": best(lambda: run_responses(chunks), args.repeat),
        "openai SDK responses.stream": sdk_time(make_openai_client, run_sdk_responses, raw, args.repeat),
        "plain split + json.loads": best(lambda: run_split(body), args.repeat),
    }
    table(f"responses: {n} events, {len(body) / 1e6:.2f} MB", n, len(body) / 1e6, results)
    ours = results["ours (responses judge)"]
    ratios["responses_vs_sdk"] = "n/a" if results["openai SDK responses.stream"] is None else \
        f"{results['openai SDK responses.stream'] / ours:.2f}"
    ratios["responses_vs_floor"] = f"{results['plain split + json.loads'] / ours:.2f}"


if __name__ == "__main__":
    sys.exit(main())
