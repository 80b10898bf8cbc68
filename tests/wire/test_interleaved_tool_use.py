"""Interleaved tool_use blocks (`start 0, start 1, stop 0, stop 1`) are a grammar warning, not an
error: the real Claude Code completes its task on that stream. The stream here is the one
claude-code-router 3.1.1 sent for the parallel-reads task (fixtures/peers/streams/)."""

from __future__ import annotations

import re
from pathlib import Path

from conformance.wire.anthropic.stream import check_stream

CCR_311 = (Path(__file__).resolve().parents[2] / "fixtures" / "peers" / "streams"
           / "ccr-3.1.1-parallel-tool-use.sse").read_bytes()


def _events(raw: bytes) -> list[bytes]:
    return [e + b"\n\n" for e in raw.strip().split(b"\n\n")]


def test_the_recorded_stream_interleaves_two_tool_use_blocks():
    order = re.findall(rb'"type":"content_block_(start|stop)","index":(\d)', CCR_311)
    assert order == [(b"start", b"0"), (b"start", b"1"), (b"stop", b"0"), (b"stop", b"1")]


def test_interleaved_tool_use_is_one_warning_and_both_calls_arrive():
    report = check_stream(CCR_311)
    assert [v for v in report.violations if v.is_error] == []
    warnings = [v for v in report.violations if v.check_id == "anthropic.stream.grammar"]
    assert len(warnings) == 1 and warnings[0].severity == "warning" and "interleaved" in warnings[0].message
    calls = [b for b in report.message["content"] if b["type"] == "tool_use"]
    assert [c["name"] for c in calls] == ["Read", "Read"] and all(c["input"].get("file_path") for c in calls)
    assert report.message["stop_reason"] == "tool_use"


def test_a_tool_use_block_that_is_never_stopped_is_still_an_error():
    events = [e for e in _events(CCR_311) if b'"type":"content_block_stop","index":0' not in e]
    report = check_stream(b"".join(events))
    errors = [v for v in report.violations if v.is_error and v.check_id == "anthropic.stream.grammar"]
    assert errors and "never stopped" in errors[0].message


def test_a_tool_use_block_opened_inside_a_text_block_is_still_an_error():
    text_start = (b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
                  b'"content_block":{"type":"text","text":""}}\n\n')
    events = _events(CCR_311)
    renumbered = [re.sub(rb'"index":(\d)', lambda m: b'"index":%d' % (int(m.group(1)) + 1), e) for e in events[1:]]
    report = check_stream(b"".join([events[0], text_start] + renumbered))
    assert any(v.is_error and v.check_id == "anthropic.stream.grammar" for v in report.violations)


def test_a_malformed_index_is_reported_not_raised():
    events = [re.sub(rb'"index":(\d)', rb'"index":[\1]', e) for e in _events(CCR_311)]
    report = check_stream(b"".join(events))
    assert any(v.is_error and v.check_id == "anthropic.stream.block_index" for v in report.violations)
