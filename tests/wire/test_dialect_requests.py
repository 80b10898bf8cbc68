"""The Dialect's readers and writers of requests, on all three wires: over every main request of
the bundled corpus (Claude Code, opencode, Codex) and over small synthetic bodies.

What is held: readers read every captured request without raising and agree with each other
(entries point into the body, `slots` agrees with the single readers, the prompt slot holds the
prompt);
each writer does what its name says, keeps the request in its wire's shape, and never changes its
input (it returns a deep copy).
"""

from __future__ import annotations

import copy

import pytest
from corpus_requests import BILLING, CAPS, CORPUS, GENERATION, CorpusRequest, derived, forced_tool, of_wire

from conformance.wire import ANTHROPIC, CHAT, RESPONSES, dialect_for_path
from conformance.wire.anthropic.dialect import MIN_THINKING_BUDGET

ROLES = {"system", "user", "assistant", "tool"}


def _ids(requests: list[CorpusRequest]) -> list[str]:
    return [r.id for r in requests]


def _at(body: dict, pointer: str):
    node = body
    for part in pointer.lstrip("/").split("/"):
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


# ----------------------------------------------------------------------------- the readers
@pytest.mark.parametrize("req", CORPUS, ids=_ids(CORPUS))
def test_the_readers_read_every_captured_request_and_agree(req):
    wire, body = req.wire, req.body
    assert dialect_for_path(req.path) is wire
    entries = wire.entries(body)
    assert entries and all(_at(body, e.pointer) is e.value for e in entries)
    turns = wire.turns(body)
    assert {t.role for t in turns} <= ROLES and "user" in {t.role for t in turns}
    by_index = {e.index: e for e in entries}
    assert all(_at(body, t.pointer) is by_index[t.index].value for t in turns if t.index >= 0)
    assert all(_at(body, t.pointer) for t in turns if t.index < 0)  # the top-level system prompt
    holder, key = wire.prompt_slot(body)
    assert isinstance(holder[key], str) and holder[key].strip() and holder[key] == wire.prompt(body)
    slots = wire.slots(body)
    assert (slots.system, slots.prompt, slots.output_cap, slots.thinking_budget, slots.stream) == (
        wire.system_text(body), wire.prompt(body), wire.output_cap(body), wire.thinking_budget(body),
        body.get("stream") is True)
    assert [t.name for t in slots.tools] == [t.name for t in wire.offered_tool_specs(body)]
    texts = wire.context_texts(body)
    system_texts = [x for t in turns if t.role == "system" for x in t.texts]
    assert all(isinstance(t, str) for t in texts) and texts[:len(system_texts)] == system_texts
    assert wire.is_first_request(body) == (not any(t.role in ("assistant", "tool") for t in turns))
    assert all(e.value.get("role") == "system" and e.index > 0 for e in wire.system_entries(body))


def _one(case: str) -> CorpusRequest:
    return next(r for r in CORPUS if r.id == case)


def test_what_the_readers_find_in_each_client():
    cc = _one("claude-code/2.1.332/default#0")
    assert ANTHROPIC.prompt(cc.body).startswith("Reply with one short sentence")
    assert len(ANTHROPIC.system_entries(cc.body)) == 1 and ANTHROPIC.is_first_request(cc.body)
    assert ANTHROPIC.system_text(cc.body).startswith(BILLING)
    assert any(t.startswith("<system-reminder>") for t in ANTHROPIC.context_texts(cc.body))
    assert ANTHROPIC.thinking_budget(cc.body) is None and ANTHROPIC.output_cap(cc.body) == 128000  # adaptive
    haiku = _one("claude-code/2.1.332/haiku#0")
    assert (ANTHROPIC.thinking_budget(haiku.body), ANTHROPIC.output_cap(haiku.body)) == (31999, 32000)
    loop = _one("claude-code/2.1.332/tool-loop#1")
    assert not ANTHROPIC.is_first_request(loop.body)
    assert [t.role for t in ANTHROPIC.turns(loop.body)] == ["system", "user", "system", "assistant", "user"]
    assert ANTHROPIC.turns(loop.body)[3].calls and ANTHROPIC.turns(loop.body)[4].results
    spaces = _one("opencode/1.18.33/openai-spaces#0")
    assert CHAT.prompt(spaces.body) == '"say hello in five words"' and CHAT.system_text(spaces.body)
    oc_loop = _one("opencode/1.18.33/openai-tool-loop#2")
    assert [t.role for t in CHAT.turns(oc_loop.body)] == ["system", "user", "assistant", "tool"]
    codex = _one("codex/0.171.0/plain#0")
    assert RESPONSES.prompt(codex.body).startswith("Reply with one short sentence")
    assert RESPONSES.system_text(codex.body) is None and RESPONSES.system_entries(codex.body) == []
    assert any(t.startswith("<environment_context>") for t in RESPONSES.context_texts(codex.body))
    assert RESPONSES.is_first_request(codex.body)
    assert not RESPONSES.is_first_request(_one("codex/0.171.0/exec-loop#1").body)


SMALL = {
    "anthropic": {"model": "m", "max_tokens": 64, "system": "be brief", "messages": [
        {"role": "user", "content": [{"type": "text", "text": "<system-reminder>cwd /w</system-reminder>"},
                                     {"type": "text", "text": "read a.txt"}]},
        {"role": "system", "content": "mid"}]},
    "openai": {"model": "m", "max_tokens": 64, "messages": [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "<env>cwd /w</env>"}, {"type": "text", "text": "read a.txt"}]},
        {"role": "system", "content": "mid"}]},
    "responses": {"model": "m", "max_output_tokens": 64, "instructions": "be brief", "input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>cwd /w"},
                                                       {"type": "input_text", "text": "read a.txt"}]},
        {"type": "message", "role": "system", "content": "mid"}]},
}
WIRES = {"anthropic": ANTHROPIC, "openai": CHAT, "responses": RESPONSES}


@pytest.mark.parametrize("name", sorted(SMALL))
def test_small_bodies_the_prompt_skips_context_blocks_and_the_context_texts_keep_them(name):
    wire, body = WIRES[name], SMALL[name]
    assert wire.prompt(body) == "read a.txt"
    assert wire.system_text(body) == "be brief"
    assert wire.context_texts(body)[0] == "be brief" and "cwd /w" in wire.context_texts(body)[-1]
    assert [e.index for e in wire.system_entries(body)] == [len(wire.entries(body)) - 1]
    assert wire.is_first_request(body) and wire.output_cap(body) == 64
    answered = copy.deepcopy(body)
    answered[wire.conversation_key].append({"type": "message", "role": "assistant", "content": "done"})
    assert not wire.is_first_request(answered)
    only_context = wire.with_prompt(body, "<system-reminder>x</system-reminder>")
    assert wire.prompt(only_context) == "<system-reminder>x</system-reminder>"  # then the first user text's last


def test_a_string_input_is_the_responses_prompt_in_place():
    body = {"model": "m", "input": "say hi"}
    assert RESPONSES.prompt(body) == "say hi" and RESPONSES.prompt_slot(body) == (body, "input")
    assert RESPONSES.with_prompt(body, "other") == {"model": "m", "input": "other"}
    assert RESPONSES.quoted(body)["input"] == '"say hi"' and RESPONSES.first_turn(body) == body
    assert RESPONSES.prompt({"model": "m", "input": "  "}) is None and RESPONSES.quoted({"input": ""}) is None
    assert [t.role for t in RESPONSES.turns(body)] == ["user"] and RESPONSES.is_first_request(body)


# ----------------------------------------------------------------------------- the writers
@pytest.mark.parametrize("req", GENERATION, ids=_ids(GENERATION))
def test_the_writers_never_change_their_input(req):
    before = copy.deepcopy(req.body)
    outputs = list(derived(req.wire, req.body))
    assert req.body == before
    for name, out in outputs:
        assert out is not req.body, name
    for _name, out in outputs:  # and the outputs share nothing with the input, at any depth
        _scrub(out)
    assert req.body == before


def _scrub(node) -> None:
    """Empty every container of `node`, depth first."""
    children = list(node.values()) if isinstance(node, dict) else node if isinstance(node, list) else []
    for child in children:
        _scrub(child)
    if isinstance(node, dict | list):
        node.clear()


@pytest.mark.parametrize("req", GENERATION, ids=_ids(GENERATION))
def test_with_prompt_replaces_the_prompt_and_nothing_else(req):
    wire, body = req.wire, req.body
    out = wire.with_prompt(body, "say hi")
    assert wire.prompt(out) == "say hi"
    assert len(wire.entries(out)) == len(wire.entries(body))
    assert [t.role for t in wire.turns(out)] == [t.role for t in wire.turns(body)]
    assert {k: v for k, v in out.items() if k != wire.conversation_key} == \
           {k: v for k, v in body.items() if k != wire.conversation_key}
    first = wire.with_prompt(body, "say hi", first_turn=True)
    assert wire.prompt(first) == "say hi" and wire.is_first_request(first)
    cut = wire.first_turn(body)
    assert wire.prompt(cut) == wire.prompt(body) and wire.is_first_request(cut)
    n = len(wire.entries(cut))
    assert [e.value for e in wire.entries(cut)] == [e.value for e in wire.entries(body)][:n]
    assert wire.prompt(wire.quoted(body)) == f'"{wire.prompt(body)}"'


def test_with_prompt_refuses_a_request_without_a_prompt():
    for wire, body in ((ANTHROPIC, {"messages": [{"role": "assistant", "content": "x"}]}),
                       (CHAT, {"messages": []}), (RESPONSES, {"input": []})):
        assert wire.prompt(body) is None and wire.quoted(body) is None
        with pytest.raises(LookupError):
            wire.with_prompt(body, "x")
        with pytest.raises(LookupError):
            wire.first_turn(body)


@pytest.mark.parametrize("req", [r for r in GENERATION if r.wire.offered_tools(r.body)],
                         ids=_ids([r for r in GENERATION if r.wire.offered_tools(r.body)]))
def test_forcing_demands_a_call_and_keeps_the_request_valid(req):
    wire, body = req.wire, req.body
    anything = wire.forcing(body)
    assert wire.demanded_tool_choice(anything) == ("force", None, None)
    name = forced_tool(wire, body)
    if name is not None:
        assert wire.demanded_tool_choice(wire.forcing(body, name)) == ("force", name, None)
    assert wire.offered_tools(anything) == wire.offered_tools(body)
    if wire is ANTHROPIC:  # a forced tool_choice is refused with thinking on (Messages API)
        assert (anything.get("thinking") or {}).get("type") in (None, "disabled")
        if (body.get("thinking") or {}).get("type") not in (None, "disabled"):
            assert anything["thinking"] == {"type": "disabled"} and "context_management" not in anything


def test_forcing_on_each_wire():
    a = {"model": "m", "max_tokens": 64, "messages": [{"role": "user", "content": "x"}],
         "tools": [{"name": "read", "input_schema": {"type": "object"}}],
         "thinking": {"type": "adaptive"}, "context_management": {"edits": []}}
    assert ANTHROPIC.forcing(a)["tool_choice"] == {"type": "any"}
    forced = ANTHROPIC.forcing(a, "read")
    assert forced["tool_choice"] == {"type": "tool", "name": "read"} and forced["thinking"] == {"type": "disabled"}
    assert "context_management" not in forced
    assert ANTHROPIC.forcing({**a, "thinking": {"type": "disabled"}})["thinking"] == {"type": "disabled"}
    assert CHAT.forcing({"messages": []})["tool_choice"] == "required"
    assert CHAT.forcing({"messages": []}, "read")["tool_choice"] == {"type": "function", "function": {"name": "read"}}
    custom = {"input": "x", "tools": [{"type": "custom", "name": "apply_patch"}]}
    assert RESPONSES.forcing(custom)["tool_choice"] == "required"
    assert RESPONSES.forcing(custom, "apply_patch")["tool_choice"] == {"type": "custom", "name": "apply_patch"}
    assert RESPONSES.forcing(custom, "exec")["tool_choice"] == {"type": "function", "name": "exec"}


@pytest.mark.parametrize("req", GENERATION, ids=_ids(GENERATION))
def test_with_output_cap_sets_the_cap_and_keeps_the_thinking_budget_below_it(req):
    wire, body = req.wire, req.body
    for cap in CAPS:
        out = wire.with_output_cap(body, cap)
        assert wire.output_cap(out) == cap
        budget = wire.thinking_budget(out)
        assert budget is None or MIN_THINKING_BUDGET <= budget < cap


def test_an_anthropic_thinking_budget_is_lowered_to_fit_or_thinking_turned_off():
    body = {"model": "m", "max_tokens": 32000, "messages": [{"role": "user", "content": "x"}],
            "thinking": {"type": "enabled", "budget_tokens": 31999, "display": "omitted"},
            "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]}}
    lowered = ANTHROPIC.with_output_cap(body, 4096)
    assert lowered["max_tokens"] == 4096
    assert lowered["thinking"] == {"type": "enabled", "budget_tokens": 4095, "display": "omitted"}
    assert lowered["context_management"] == body["context_management"]
    assert ANTHROPIC.with_output_cap(body, 1025)["thinking"]["budget_tokens"] == 1024  # cap-1 is the minimum
    off = ANTHROPIC.with_output_cap(body, 1024)  # cap-1 = 1023 < 1024: no budget fits
    assert off["thinking"] == {"type": "disabled"} and "context_management" not in off
    assert ANTHROPIC.with_output_cap(body, 64000)["thinking"] == body["thinking"]  # it fits: left alone
    adaptive = {**body, "thinking": {"type": "adaptive"}}
    assert ANTHROPIC.with_output_cap(adaptive, 512)["thinking"] == {"type": "adaptive"}


def test_the_output_cap_goes_under_the_key_the_request_uses():
    assert CHAT.with_output_cap({"max_completion_tokens": 9}, 5) == {"max_completion_tokens": 5}
    assert CHAT.with_output_cap({"max_tokens": 9}, 5) == {"max_tokens": 5}
    assert CHAT.with_output_cap({}, 5) == {"max_tokens": 5}
    assert RESPONSES.with_output_cap({}, 5) == {"max_output_tokens": 5}
    assert ANTHROPIC.with_output_cap({}, 5) == {"max_tokens": 5}


@pytest.mark.parametrize("req", GENERATION, ids=_ids(GENERATION))
def test_without_thinking_and_without_system_entries(req):
    wire, body = req.wire, req.body
    plain = wire.without_thinking(body)
    assert "thinking" not in plain and "context_management" not in plain and wire.thinking_budget(plain) is None
    kept = wire.without_system_entries(body)
    assert wire.system_entries(kept) == []
    removed = {e.index for e in wire.system_entries(body)}
    assert [e.value for e in wire.entries(kept)] == [e.value for e in wire.entries(body) if e.index not in removed]
    assert wire.system_text(kept) == wire.system_text(body)


@pytest.mark.parametrize("req", GENERATION, ids=_ids(GENERATION))
def test_the_salts_go_where_the_wire_keeps_its_system_prompt(req):
    wire, body = req.wire, req.body
    salted = wire.salted(body, "[run 1] ")
    assert wire.context_texts(salted)[0].startswith("[run 1] ")
    assert wire.prompt(salted) == wire.prompt(body)
    salty = wire.salted_prefix(body, "[salt 1] ", skip=BILLING)
    changed = [(a, b) for a, b in zip(wire.context_texts(body), wire.context_texts(salty), strict=True) if a != b]
    assert len(changed) == 1  # one system text (Anthropic's blocks read as one, joined)
    old, new = changed[0]
    assert new.count("[salt 1] ") == 1 and new.replace("[salt 1] ", "", 1) == old
    assert new.startswith(BILLING) == old.startswith(BILLING)  # the billing block is skipped, kept first
    first = (salty.get("tools") or [None])[0]
    if isinstance(first, dict) and isinstance((first.get("function") or first).get("description"), str):
        assert (first.get("function") or first)["description"].startswith("[salt 1] ")


@pytest.mark.parametrize("wire,body,where", [
    (ANTHROPIC, {"messages": [{"role": "user", "content": "x"}]}, lambda b: b["system"]),
    (CHAT, {"messages": [{"role": "user", "content": "x"}]}, lambda b: b["messages"][0]["content"]),
    (RESPONSES, {"input": "x"}, lambda b: b["input"][0]["content"][0]["text"]),
], ids=["anthropic", "openai", "responses"])
def test_a_request_without_a_system_prompt_gets_one_salted(wire, body, where):
    salted = wire.salted(body, "[run 1] ")
    assert where(salted) == "[run 1]" and wire.prompt(salted) == "x"


@pytest.mark.parametrize("req", CORPUS, ids=_ids(CORPUS))
def test_count_tokens_request(req):
    counted = req.wire.count_tokens_request(req.body)
    if req.wire.count_tokens_path is None:
        assert counted is None
        return
    assert set(counted) <= {"model", "messages", "tools"} and counted["messages"] == req.body["messages"]
    assert req.wire.prompt(counted) == req.wire.prompt(req.body)


def test_dialect_for_path_under_any_mount_and_query():
    assert dialect_for_path("/v1/messages?beta=true") is ANTHROPIC
    assert dialect_for_path("/anthropic/v1/messages/count_tokens") is ANTHROPIC
    assert dialect_for_path("/chat/completions/") is CHAT
    assert dialect_for_path("/openai/v1/responses") is RESPONSES
    assert dialect_for_path("/v1/models") is None and dialect_for_path("/v1/messages/other") is None


def test_every_wire_has_corpus_requests():
    assert {r.wire.name for r in GENERATION} == set(WIRES)
    assert all(of_wire(name) for name in WIRES)
