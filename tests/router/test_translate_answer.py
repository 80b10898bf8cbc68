"""The router's answer translation, OpenAI chat -> Anthropic, whole and streamed (no server)."""

from __future__ import annotations

from conformance.router.translate_answer import StreamTranslator, map_finish


def test_stream_translation_maps_reasoning_text_tools_and_finish():
    t = StreamTranslator({"stop_sequences": []}, "m")
    events = []
    for chunk in [
        {"id": "chatcmpl-1", "model": "m", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]},
        {"choices": [{"index": 0, "delta": {"reasoning_content": "think"}}]},
        {"choices": [{"index": 0, "delta": {"content": "Hi"}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_9", "type": "function", "function": {"name": "Read", "arguments": ""}}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{\"p\":1}"}}]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5}},
    ]:
        events += t.feed(chunk)
    events += t.finish_events(upstream_complete=True)
    kinds = [e["type"] for e in events]
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    starts = [e["content_block"]["type"] for e in events if e["type"] == "content_block_start"]
    assert starts == ["thinking", "text", "tool_use"]
    tool_start = next(e for e in events if e["type"] == "content_block_start" and e["content_block"]["type"] == "tool_use")
    assert tool_start["content_block"]["id"] == "call_9" and tool_start["content_block"]["input"] == {}
    delta = next(e for e in events if e["type"] == "message_delta")
    assert delta["delta"] == {"stop_reason": "tool_use", "stop_sequence": None}
    assert delta["usage"] == {"input_tokens": 10, "output_tokens": 5}


def test_broken_off_upstream_ends_with_an_error_event_not_a_clean_stop():
    t = StreamTranslator({}, "m")
    t.feed({"choices": [{"index": 0, "delta": {"content": "Hi"}}]})
    events = t.finish_events(upstream_complete=False)
    assert events[-1]["type"] == "error"
    assert not any(e["type"] == "message_stop" for e in events)


def test_stop_sequence_reported_when_the_engine_names_the_match():
    assert map_finish("stop", "END", {"stop_sequences": ["END"]}) == ("stop_sequence", "END")
    assert map_finish("stop", None, {"stop_sequences": ["END"]}) == ("end_turn", None)
    assert map_finish("length", None, {}) == ("max_tokens", None)
