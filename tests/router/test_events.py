"""The response-side router faults applied to Anthropic events and messages (no server)."""

from __future__ import annotations

from conformance.router.events import EventFilter


def test_event_filter_drops_thinking_and_renumbers_blocks():
    f = EventFilter(drop_thinking=True, drop_stop_sequence=True, model_label="other")
    evs = [
        {"type": "message_start", "message": {"model": "m"}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None}},
    ]
    out = [x for x in (f.event(e) for e in evs) if x is not None]
    assert out[0]["message"]["model"] == "other"
    assert [e.get("index") for e in out[1:3]] == [0, 0]
    assert "stop_sequence" not in out[-1]["delta"]


def test_first_tool_call_only_drops_the_later_calls_whole_and_closes_up_the_indices():
    calls = [{"type": "text", "text": "reading"},
             {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "left.txt"}},
             {"type": "tool_use", "id": "toolu_2", "name": "Read", "input": {"file_path": "right.txt"}}]
    kept = EventFilter(first_tool_call_only=True).message({"type": "message", "content": calls})
    assert kept["content"] == calls[:2]
    filt = EventFilter(first_tool_call_only=True)
    events = []
    for i, block in enumerate(calls):
        events += [{"type": "content_block_start", "index": i, "content_block": block},
                   {"type": "content_block_stop", "index": i}]
    out = [e for e in (filt.event(e) for e in events) if e is not None]
    assert [(e["type"], e["index"]) for e in out] == [("content_block_start", 0), ("content_block_stop", 0),
                                                    ("content_block_start", 1), ("content_block_stop", 1)]
    assert EventFilter().message({"content": calls})["content"] == calls, "off by default"
