"""The SSE decoder: WHATWG interpretation, offsets, times, framing violations, any chunking."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import conformance.wire.sse as sse
from conformance.wire.sse import SSEDecoder, decode, iter_chunks

STREAM = (
    b"\xef\xbb\xbf: hello comment\n"
    b"event: message_start\r\ndata: {\"a\": 1}\r\n\r\n"
    b"data:first\rdata: second\r\rid: 7\nretry: 1500\nevent: x\ndata\n\n"
    b"data: caf\xc3\xa9 \xe2\x98\x95\n\n"
    b"event: only-name\n\n"
    b"retry: soon\nid: a\x00b\nfoo: bar\ndata: {}\n\n"
)


def _shape(events):
    return [(e.event, e.data, e.id, e.retry, e.offset, e.index) for e in events]


def test_fields_line_endings_bom_and_comments_follow_whatwg():
    events, violations = decode(STREAM)
    assert _shape(events) == [
        ("message_start", '{"a": 1}', None, None, STREAM.index(b"event: message_start"), 1),
        (None, "first\nsecond", None, None, STREAM.index(b"data:first"), 2),
        ("x", "", "7", 1500, STREAM.index(b"id: 7"), 3),  # bare `data` line: empty value, still dispatched
        (None, "caf\u00e9 \u2615", "7", None, STREAM.index(b"data: caf"), 4),  # id persists (last event id)
        (None, "{}", "7", None, STREAM.index(b"retry: soon"), 5),  # bad retry and id with NUL: ignored
    ]
    assert [v.check_id for v in violations] == ["sse.event.no_data"]
    assert violations[0].where.event_type == "only-name"


def test_offsets_point_at_the_event_in_the_raw_bytes():
    events, _ = decode(STREAM)
    for ev in events:
        line = STREAM[ev.offset:].split(b"\n", 1)[0]
        assert line.startswith((b"event:", b"data", b"id:", b"retry:"))


def test_arrival_time_is_the_chunk_that_completed_the_event():
    dec = SSEDecoder()
    assert dec.feed(b"event: a\ndata: 1", t=0.5) == []
    [ev] = dec.feed(b"\n\n", t=2.25)
    assert (ev.event, ev.data, ev.t, ev.offset) == ("a", "1", 2.25, 0)
    assert dec.close() == [] and dec.violations == []


def test_cr_at_chunk_end_then_lf_is_one_line_ending():
    dec = SSEDecoder()
    out = dec.feed(b"data: a\r") + dec.feed(b"\n") + dec.feed(b"\r") + dec.feed(b"\ndata: b\n\n")
    out += dec.close()
    assert [e.data for e in out] == ["a", "b"]
    assert out[1].offset == 11


def test_bom_split_across_chunks_is_skipped_once():
    dec = SSEDecoder()
    out = dec.feed(b"\xef") + dec.feed(b"\xbb") + dec.feed(b"\xbfdata: x\n\n\xef\xbb\xbfdata: y\n\n")
    # only the leading BOM is special; a later one is part of the field name (an unknown field)
    assert [e.data for e in out] == ["x"]


def test_stream_ending_mid_event_is_a_violation_not_an_event():
    events, violations = decode(b"event: message_stop\ndata: {\"type\":\"message_stop\"}\n")
    assert events == []
    [v] = violations
    assert v.check_id == "sse.stream.ends_mid_event" and v.is_error
    assert v.where.event_type == "message_stop" and v.where.byte_offset == 0


def test_unterminated_last_line_is_reported():
    events, violations = decode(b"data: 1\n\ndata: {\"partial")
    assert [e.data for e in events] == ["1"]
    assert [v.check_id for v in violations] == ["sse.stream.ends_mid_event"]
    assert violations[0].where.byte_offset == 9


def test_non_utf8_is_recorded_and_decoding_goes_on():
    events, violations = decode(b"data: caf\xe9\n\ndata: ok\n\n")
    assert [e.data for e in events] == ["caf\ufffd", "ok"]
    [v] = violations
    assert v.check_id == "sse.encoding.utf8" and v.where.byte_offset == 9


def test_missing_event_name_only_matters_where_required():
    body = b"data: {\"type\": \"ping\"}\n\n"
    assert decode(body)[1] == []
    [v] = decode(body, require_event_name=True)[1]
    assert v.check_id == "sse.event.name_missing" and v.where.event_index == 1


def test_decode_accepts_bytes_list_of_bytes_and_timed_chunks():
    a = decode(STREAM)
    b = decode([STREAM[:10], STREAM[10:]])
    c = decode([(0.1, STREAM[:50]), (0.2, STREAM[50:])])
    assert _shape(a[0]) == _shape(b[0]) == _shape(c[0])
    assert {e.t for e in c[0]} <= {0.1, 0.2}


def test_feed_after_close_is_a_programming_error():
    dec = SSEDecoder()
    dec.close()
    with pytest.raises(RuntimeError):
        dec.feed(b"data: x\n\n")


@st.composite
def chunkings(draw, data: bytes):
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=40)))
    out, prev = [], 0
    for c in cuts + [len(data)]:
        out.append(data[prev:c])
        prev = c
    return out


@settings(max_examples=150, deadline=None)
@given(chunkings(STREAM + b"data: tail-without-end"))
def test_any_chunking_gives_the_same_events_and_violations(chunks):
    whole = decode(STREAM + b"data: tail-without-end")
    dec = SSEDecoder()
    events = []
    for c in chunks:
        events += dec.feed(c)
    events += dec.close()
    assert _shape(events) == _shape(whole[0])
    assert dec.violations == whole[1]


# ----------------------------------------------------------------------------- the fast path
LINES = [b"event: content_block_delta", b'data: {"type":"ping"}', b"data:x", b"data", b": comment", b"id: 3",
         b"id: a\x00", b"retry: 10", b"retry: x", b"data: caf\xc3\xa9", b"data: \xff\xfe", b"foo: bar", b"event:",
         b"", b"", b""]
ENDINGS = [b"\n", b"\r\n", b"\r"]


@st.composite
def streams(draw):
    uniform = draw(st.sampled_from(ENDINGS + [None]))
    out = [b"\xef\xbb\xbf"] if draw(st.booleans()) else []
    common = st.sampled_from([[b"event: ping", b'data: {"type":"ping"}'], [b'data: {"a":1}'], [b"data: caf\xc3\xa9"],
                              [b"event:  ping ", b"data:  x "]])  # the spaces a value keeps
    # a common shape with one line of LINES put in at any place: what the fast path must tell apart
    near = st.tuples(common, st.integers(0, 2), st.sampled_from(LINES)).map(lambda c: [*c[0][:c[1]], c[2], *c[0][c[1]:]])
    for event in draw(st.lists(common | near | st.lists(st.sampled_from(LINES), max_size=4), max_size=12)):
        for line in event + [b""]:
            out.append(line + (uniform or draw(st.sampled_from(ENDINGS))))
    if draw(st.booleans()):
        out.append(b"data: tail")
    return b"".join(out)


def _run(chunks, *, fast: bool, named: bool, hold_from: int | None = None):
    dec = SSEDecoder(require_event_name=named)
    dec.fast = fast
    if hold_from is not None:
        dec.hold_from = hold_from
    events = []
    for i, c in enumerate(chunks):
        events += dec.feed(c, float(i))
    events += dec.close()
    return events, dec.violations, dec.comments


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_fast_path_gives_what_the_line_by_line_path_gives(data):
    body = data.draw(streams())
    chunks = data.draw(chunkings(body))
    named = data.draw(st.booleans())
    slow = _run(chunks, fast=False, named=named)
    assert _run(chunks, fast=True, named=named) == slow
    assert _run(chunks, fast=True, named=named, hold_from=0) == slow  # long pending events held uncopied
    assert _run([body], fast=True, named=named) == _run([body], fast=False, named=named)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_decoding_a_growing_buffer_again_and_again_gives_fresh_answers(data):
    body = data.draw(streams())
    other = data.draw(streams())
    named = data.draw(st.booleans())
    cuts = sorted(data.draw(st.lists(st.integers(0, len(body)), max_size=8))) + [len(body)]
    old, sse.RESUME_FROM = sse.RESUME_FROM, 0  # resume from every buffer
    try:
        for i, cut in enumerate(cuts):
            if i == 3:  # another stream in between must not be taken for a continuation
                assert sse.decode(other, require_event_name=named) == decode([other], require_event_name=named)
            assert sse.decode(body[:cut], require_event_name=named) == decode([body[:cut]], require_event_name=named)
    finally:
        sse.RESUME_FROM = old


def test_chunks_without_a_line_end_fed_joined_give_the_same_events_offsets_and_times():
    """iter_chunks joins a run of line-end-free chunks to the chunk that ends it: the events, their
    offsets and the arrival times (of the chunk that completed each) equal a chunk-by-chunk feed."""


    rng = random.Random(7)
    stream = (b'event: a\ndata: {"x": 1}\n\n' b"event: b\r\ndata: " + b"y" * 300 + b"\r\n\r\n"
              b": comment\rdata: z\r\r" b"data: tail-without-end")
    for _ in range(200):
        cuts = sorted(rng.sample(range(1, len(stream)), rng.randint(1, 60)))
        pieces = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)]
        timed = [(i * 0.01, p) for i, p in enumerate(pieces)]
        one_by_one = SSEDecoder()
        expected = [ev for t, p in timed for ev in one_by_one.feed(p, t)] + one_by_one.close()
        joined = SSEDecoder()
        fed = list(iter_chunks(timed))
        got = [ev for t, p in fed for ev in joined.feed(p, t)] + joined.close()
        assert got == expected
        assert [v.to_dict() for v in joined.violations] == [v.to_dict() for v in one_by_one.violations]
        assert len(fed) < len(pieces) or all(b"\n" in p or b"\r" in p for p in pieces[:-1])
