"""The chat-completions judge's fast path (StreamMachine._feed_delta) against its general path:
random sequences of chunks, valid and broken, near the shapes the fast path takes (one choice,
a content or reasoning delta, one argument fragment of a started call) and off them by one field
(a float index, a repeated id, a finish_reason in delta, a schema break, two choices, ...).
Both paths must give the same report: every violation with its wording and place, the message,
the payloads, the end state. Also: long arguments join to the same text, and judging pauses the
garbage collector and leaves it as it was."""

from __future__ import annotations

import gc
import json

import make_stream_fixtures as mk
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.wire.chat import grammar as chat
from conformance.wire.chat.stream import StreamMachine
from conformance.wire.sse import SSEEvent

QUICK = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

TEXT = st.sampled_from(["", "x", "Hello", " wörld \u2615", '{"a": ', "1}"])
ABSENT = object()  # a field left out

# A fast-shaped chunk with one field changed, by where the field is and what it becomes (ABSENT:
# removed): each such chunk must be judged by the general path's rules, whichever path takes it.
CHANGES: dict[str, dict[str, list]] = {
    "envelope": {"id": [ABSENT, 1, None], "object": [ABSENT, "chat.completion"], "created": [1.0, 0.5, "x"],
                 "model": [None, 1], "error": [{"message": "x"}], "choices": [[], "x", ABSENT],
                 "usage": [None, mk.USAGE, {"prompt_tokens": -1}, [],
                           {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 3}]},
    "choice": {"index": [0.0, 1, -1, True, "0", ABSENT], "delta": [None, [], ABSENT, {}],
               "finish_reason": ["stop", "tool_calls", "length", "bogus", ABSENT], "logprobs": [ABSENT, {}]},
    "delta": {"content": [None, 1, "", "z"], "role": ["assistant", None, 1, "user"], "reasoning_content": ["r", None, 1],
              "reasoning": ["r", None, 1], "finish_reason": [None, "stop"], "tool_calls": [None, [], "x"],
              "refusal": ["no"]},
    "call": {"index": [0.0, 1.0, 1, 2, -1, True, ABSENT], "id": ["call_1", "", None], "type": ["function", None, 1],
             "function": [None, ABSENT, ["x"], {}]},
    "function": {"name": ["read", "", None, 1], "arguments": [None, "", {"a": 1}, 1, ABSENT]},
}


def _put(d: dict, key: str, value) -> None:
    if value is ABSENT:
        d.pop(key, None)
    else:
        d[key] = value


@st.composite
def chunk(draw) -> tuple[str, str | None]:
    """One event (data, SSE event name): a content or argument-fragment chunk with up to two
    fields changed; at times another kind of event altogether."""
    if draw(st.integers(0, 15)) == 0:
        return draw(st.sampled_from(["[DONE]", " [DONE] ", "not json", "[1]", '{"error": {"message": "x"}}',
                                     json.dumps(mk.o_chunk([], usage=mk.USAGE)),
                                     json.dumps({"choices": [], "prompt_filter_results": []})])), None
    shape = draw(st.sampled_from(["content", "content", "fragment", "fragment", "fragment", "reasoning", "role"]))
    if shape == "fragment":
        index = draw(st.sampled_from([0, 0, 0, 1, 0.0]))
        call, fn = {"index": index}, {"arguments": draw(TEXT)}
        _put(call, "id", draw(st.sampled_from([ABSENT] * 4 + ["call_1", "", None])))  # a repeat, or empty
        _put(fn, "name", draw(st.sampled_from([ABSENT] * 4 + ["read", "", None])))
        delta = {"tool_calls": [{**call, "function": fn}]}
    elif shape == "reasoning":
        delta = {draw(st.sampled_from(["reasoning_content", "reasoning"])): draw(TEXT), "content": None}
    elif shape == "role":
        delta = {"role": draw(st.sampled_from(["assistant", "user", None])), "content": draw(TEXT)}
    else:
        delta = {"content": draw(TEXT)}
    d = mk.o_chunk([mk.o_delta(delta)], usage=draw(st.sampled_from([None, None, None, mk.USAGE])))
    if draw(st.integers(0, 3)) == 0:  # the message keeps the first id and model seen
        d.update(id="chatcmpl-other", model="other-model")
    name = draw(st.sampled_from([None] * 15 + ["message", "error"]))
    for _ in range(draw(st.integers(0, 2))):
        where = draw(st.sampled_from([*CHANGES, "two choices", "two calls", "event name"]))
        choices = d.get("choices")
        one = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else None
        dl = one.get("delta") if one is not None and isinstance(one.get("delta"), dict) else None
        calls = dl.get("tool_calls") if dl is not None and isinstance(dl.get("tool_calls"), list) else None
        call = calls[0] if calls and isinstance(calls[0], dict) else None
        fn = call.get("function") if call is not None and isinstance(call.get("function"), dict) else None
        target = {"envelope": d, "choice": one, "delta": dl, "call": call, "function": fn}.get(where)
        if target is not None:
            key = draw(st.sampled_from(sorted(CHANGES[where])))
            _put(target, key, draw(st.sampled_from(CHANGES[where][key])))
        elif where == "two choices" and one is not None:
            choices.append(mk.o_delta({"content": "y"}, index=draw(st.sampled_from([0, 1]))))
        elif where == "two calls" and calls is not None:
            calls.append({"index": draw(st.sampled_from([0, 1])), "function": {"arguments": "z"}})
        elif where == "event name":
            name = draw(st.sampled_from(["message", "error"]))
    return json.dumps(d), name


OPENERS = [
    [],
    [mk.o_chunk([mk.o_delta({"role": "assistant", "content": ""})])],
    [mk.o_chunk([mk.o_delta({"role": "assistant", "content": None})]),
     mk.o_chunk([mk.o_delta({"tool_calls": [{"index": 0, "id": "call_0", "type": "function",
                                             "function": {"name": "read", "arguments": ""}}]})])],
    [mk.o_chunk([mk.o_delta({"role": "assistant", "content": None})]),
     mk.o_chunk([mk.o_delta({"tool_calls": [{"index": 0, "id": "call_0", "type": "function",
                                             "function": {"name": "read", "arguments": '{"a": '}}]})])],
    [mk.o_chunk([mk.o_delta({"role": "assistant"}), mk.o_delta({"role": "assistant"}, index=1)])],
]


class _Counting(StreamMachine):
    """Counts the events the fast path took."""

    taken = 0

    def _feed_delta(self, ev, data) -> bool:
        took = super()._feed_delta(ev, data)
        self.taken += took
        return took


def _judge(datas: list[str], names: list[str | None], request, *, fast: bool):
    m = _Counting(request)
    m.fast = fast
    for i, (data, name) in enumerate(zip(datas, names, strict=True), start=1):
        before = len(m.events)
        m.feed(SSEEvent(name, data, None, None, i * 100, float(i), i))
        assert len(m.events) == before + 1 and len(m.payloads) == len(m.events)
    report = m.finish()
    return ([v.to_dict() for v in report.violations], report.message, report.complete, report.payloads,
            report.events, m.state), m.taken


@st.composite
def streams(draw):
    opener = draw(st.sampled_from([0, 1, 2, 2, 2, 3, 3, 4]))  # mostly a call already started
    events = [(json.dumps(x), None) for x in OPENERS[opener]]
    events += draw(st.lists(chunk(), max_size=12))
    if draw(st.booleans()):
        finish = draw(st.sampled_from(["stop", "tool_calls", "length"]))
        events += [(json.dumps(mk.o_chunk([mk.o_delta({}, finish)])), None),
                   (json.dumps(mk.o_chunk([], usage=mk.USAGE)), None), ("[DONE]", None)]
    request = draw(st.sampled_from([mk.REQ_AUTO, mk.REQ_NAMED, mk.REQ_NO_USAGE, None]))
    return [data for data, _ in events], [name for _, name in events], request


@QUICK
@given(streams())
def test_the_fast_path_judges_every_sequence_as_the_general_path_does(stream):
    datas, names, request = stream
    fast, _ = _judge(datas, names, request, fast=True)
    general, _ = _judge(datas, names, request, fast=False)
    assert fast == general


def test_the_fast_path_takes_the_common_chunks():
    """Content deltas and argument fragments after the first chunk of each go the fast path; the
    first chunk, a call's first delta, the finish, the usage chunk and [DONE] do not."""
    text = mk.o_text_stream(finish="tool_calls")
    items = text[:-3] + mk.o_tool_call(0, "call_0", "read", ['{"a"', ": 1}"]) + text[-3:]
    datas = [x if isinstance(x, str) else json.dumps(x) for x in items]
    names = [None] * len(datas)
    (violations, message, complete, *_), taken = _judge(datas, names, mk.REQ_AUTO, fast=True)
    assert taken == 3 + 2  # three content deltas, two fragments
    assert complete and message["tool_calls"][0]["function"]["arguments"] == '{"a": 1}'
    assert message["content"] == "Hello! How can I help? \u2615"
    assert not [v for v in violations if v["severity"] == "error"]


def test_long_arguments_join_to_the_same_text():
    """Many fragments: the call's arguments are their concatenation, in the message and as judged."""
    frags = ['{"content": "'] + [f"line {i}\\n" for i in range(3000)] + ['"}']
    body = mk.o_sse([mk.o_chunk([mk.o_delta({"role": "assistant", "content": None})]),
                     *mk.o_tool_call(0, "call_0", "write", frags),
                     mk.o_chunk([mk.o_delta({}, "tool_calls")]), mk.o_chunk([], usage=mk.USAGE), "[DONE]"])
    report = chat.check_stream(body, request=mk.REQ_AUTO)
    assert report.ok and report.message["tool_calls"][0]["function"]["arguments"] == "".join(frags)
    cut = mk.o_sse([mk.o_chunk([mk.o_delta({"role": "assistant", "content": None})]),
                    *mk.o_tool_call(0, "call_0", "write", frags[:-1]),
                    mk.o_chunk([mk.o_delta({}, "tool_calls")]), "[DONE]"])
    [v] = [v for v in chat.check_stream(cut, request=mk.REQ_NO_USAGE).violations
           if v.check_id == "openai.stream.tool_arguments_json"]
    assert v.seen.startswith('{"content": "line 0\\nline 1')  # judged on the joined text


def test_judging_pauses_the_collector_and_leaves_it_as_it_was():
    """No collection runs while a stream is judged; the collector is on after if it was on before,
    and stays off if the caller had turned it off."""
    body = mk.o_sse(mk.o_text_stream()[:1] + [mk.o_chunk([mk.o_delta({"content": f"w{i} "})]) for i in range(3000)]
                    + mk.o_text_stream()[-3:])
    ran: list[int] = []

    def count(phase, info):
        if phase == "start":
            ran.append(info["generation"])

    was = gc.isenabled()
    gc.callbacks.append(count)
    try:
        gc.enable()
        report = chat.check_stream(body, request=mk.REQ_AUTO)
        during, ran[:] = list(ran), []
        assert gc.isenabled() and report.ok and len(report.events) == 3004
        gc.disable()
        chat.check_stream(body, request=mk.REQ_AUTO)
        assert not gc.isenabled()
    finally:
        gc.callbacks.remove(count)
        if was:
            gc.enable()
    assert during == [] or during == [0]  # at most the one young collection right after the judge
