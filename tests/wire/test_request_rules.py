"""The wire's request rules (conformance/wire/request_rules.py) against the reference engine:
every request the suite derives from the corpus, and from valid variations of it, passes the
rules AND the engine accepts it (a request the suite built that its own conformant engine refuses
is a suite bug); where the rules and the engine judge the same fact (the thinking budget against
max_tokens, with and without interleaved thinking) they agree.

The variations, per corpus request: as captured; the prompt slot of each wire (`with_prompt`);
no tools offered; tools without `parameters` (chat, where the field is optional); a thinking
budget at and near the cap, with and without the interleaved-thinking beta; count_tokens bodies
go to count_tokens. Captures refused at capture time are no source (`test_sources`).
"""

from __future__ import annotations

import copy
import json
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from corpus_requests import CORPUS, derived, of_wire

from conformance.capture.format import Capture, CapturedRequest, CapturedResponse, Exchange
from conformance.engine.launch import spawn_engine
from conformance.wire import ANTHROPIC, CHAT, RESPONSES
from conformance.wire.dialect import Dialect
from conformance.wire.request_rules import request_problems

DEADLINE = 60.0
SENDERS = 4
CAPS = (4096, 1000)
INTERLEAVED = "interleaved-thinking-2025-05-14"


@pytest.fixture(scope="module")
def engine_url():
    with spawn_engine() as engine:
        yield engine.url


def _variations(wire: Dialect, body: dict):
    """(name, body, betas) of the valid variations of one captured request (module docstring)."""
    yield "as captured", body, ()
    if wire.prompt(body) is not None:
        yield "prompt slot", wire.with_prompt(body, "Read the file notes.txt and say what it holds."), ()
    yield "no tools", {k: v for k, v in wire.with_tools(body, []).items() if k not in ("tools", "tool_choice")}, ()
    tools = wire.tool_definitions(body)
    if wire is CHAT and tools:
        bare = [{**t, "function": {k: v for k, v in t["function"].items() if k != "parameters"}} for t in tools]
        yield "tools without parameters", wire.with_tools(body, bare), ()
    cap = wire.output_cap(body)
    if wire is ANTHROPIC and cap is not None and cap > 2048:
        for budget, betas in ((cap - 1, ()), (cap, (INTERLEAVED,)), (cap + 1000, (INTERLEAVED,))):
            yield f"budget {budget} of cap {cap}{' interleaved' if betas else ''}", \
                {**body, "thinking": {"type": "enabled", "budget_tokens": budget}}, betas


def _bodies(name: str) -> dict[tuple[str, str, str], str]:
    """(path, body, betas) -> what derived it: every writer over every variation of every request."""
    out: dict[tuple[str, str, str], str] = {}
    for req in of_wire(name, CORPUS):
        if req.is_count_tokens:
            out.setdefault((req.path, json.dumps(req.body), ""), f"{req.id} count_tokens as captured")
            continue
        for variation, body, betas in _variations(req.wire, req.body):
            for writer, out_body in derived(req.wire, body, CAPS):
                path = req.wire.count_tokens_path if writer == "count_tokens_request" else req.wire.generation_path
                # a writer that turns thinking back into a budget under max_tokens keeps no need for the beta
                out.setdefault((path, json.dumps(out_body), ",".join(betas)), f"{req.id} {variation} / {writer}")
    return out


WIRES = {"anthropic": ANTHROPIC, "openai": CHAT, "responses": RESPONSES}


@pytest.mark.parametrize("name", list(WIRES))
def test_every_derived_request_passes_the_rules(name):
    bodies = _bodies(name)
    broken = [f"{what}: {problems}" for (path, content, betas), what in bodies.items()
              if (problems := request_problems(WIRES[name], json.loads(content),
                                               betas=frozenset(filter(None, betas.split(","))), path=path))]
    assert len(bodies) > 50
    assert not broken, "derived requests that break the wire's rules (a suite bug):\n" + "\n".join(broken[:20])


@pytest.mark.slow  # ~2 min on 2 shared cores: every variation of every corpus request sent
@pytest.mark.parametrize("name", list(WIRES))
def test_every_derived_request_is_accepted_by_the_engine(engine_url, name):
    bodies = _bodies(name)
    with httpx.Client(base_url=engine_url, timeout=DEADLINE) as client, ThreadPoolExecutor(SENDERS) as pool:
        def refusal(item) -> str | None:
            (path, content, betas), what = item
            headers = {"content-type": "application/json", **({"anthropic-beta": betas} if betas else {})}
            answer = client.post(path, content=content, headers=headers)
            return None if answer.status_code == 200 else f"{what}: HTTP {answer.status_code} {answer.text[:200]}"

        refused = [r for r in pool.map(refusal, bodies.items()) if r is not None]
    assert len(bodies) > 50
    assert not refused, "derived requests the reference engine refuses (a suite bug):\n" + "\n".join(refused[:20])


@pytest.mark.parametrize("offset,betas,valid", [
    (-1, "", True), (0, "", False), (1, "", False),  # below max_tokens, at it, above it
    (0, INTERLEAVED, True), (1000, INTERLEAVED, True),  # interleaved: the budget spans the turn
    (0, f"claude-code-20250219,{INTERLEAVED}", True),
])
def test_the_rules_and_the_engine_agree_on_the_thinking_budget(engine_url, offset, betas, valid):
    """Qwen Code sends max_tokens 32000, budget_tokens 32000 and the interleaved beta."""
    body = {"model": "m", "max_tokens": 32000, "thinking": {"type": "enabled", "budget_tokens": 32000 + offset},
            "messages": [{"role": "user", "content": "say hi"}]}
    problems = request_problems(ANTHROPIC, body, betas=frozenset(betas.split(",")) if betas else frozenset())
    headers = {"anthropic-beta": betas} if betas else {}
    answer = httpx.post(engine_url + "/v1/messages", json=body, headers=headers, timeout=DEADLINE)
    assert (problems == []) is valid, problems
    assert (answer.status_code == 200) is valid, answer.text[:200]
    low = {**body, "thinking": {"type": "enabled", "budget_tokens": 1023}}
    assert request_problems(ANTHROPIC, low, betas=frozenset([INTERLEAVED])), "the floor of 1024 stays"


def test_a_forced_choice_must_name_a_client_tool():
    web = {"type": "web_search_20250305", "name": "web_search", "max_uses": 5}
    read = {"name": "Read", "input_schema": {"type": "object", "properties": {}}}
    body = {"model": "m", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}], "tools": [web, read]}
    assert request_problems(ANTHROPIC, ANTHROPIC.forcing(body, "Read")) == []
    assert "server tool" in request_problems(ANTHROPIC, ANTHROPIC.forcing(body, "web_search"))[0]
    assert request_problems(ANTHROPIC, ANTHROPIC.forcing({**body, "tools": [web]})), "only a server tool to force"
    assert request_problems(ANTHROPIC, ANTHROPIC.forcing(body, "Write")), "a tool the request does not offer"
    thinking = {**ANTHROPIC.forcing(body, "Read"), "thinking": {"type": "adaptive"}}
    assert request_problems(ANTHROPIC, thinking) == ["tool_choice forces a tool call while thinking is on"]
    chat = {"model": "m", "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"type": "function", "function": {"name": "now"}}]}
    assert request_problems(CHAT, CHAT.forcing(chat, "now")) == [], "a function without parameters takes no arguments"
    assert request_problems(CHAT, CHAT.forcing({**chat, "tools": []})), "nothing to force"


def test_the_generic_rules():
    assert request_problems(CHAT, {"model": "", "messages": []}) == [
        "model: a non-empty string is required", "messages: a non-empty conversation is required"]
    assert request_problems(RESPONSES, {"model": "m", "input": "say hi", "max_output_tokens": 0}) == [
        "max_output_tokens: an integer >= 1 is required, not 0"]
    assert request_problems(ANTHROPIC, {"model": "m", "messages": [{"role": "user", "content": "hi"}]}) == [
        "max_tokens: required"]
    assert request_problems(ANTHROPIC, {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
                            path="/v1/messages/count_tokens") == [], "count_tokens has no output cap"


def test_sources_are_answered_generation_requests():
    """count_tokens, probes and requests refused at capture time are no source of derived requests."""
    body = {"model": "m", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}
    count = Exchange(CapturedRequest("POST", "/v1/messages/count_tokens", "beta=true", {}, {"model": "m",
                                                                                         "messages": []}))
    probe = Exchange(CapturedRequest("POST", "/v1/messages", "", {}, {**body, "max_tokens": 1}))
    refused = Exchange(CapturedRequest("POST", "/v1/messages", "", {}, copy.deepcopy(body)), CapturedResponse(400))
    main = Exchange(CapturedRequest("POST", "/v1/messages", "beta=true", {}, copy.deepcopy(body)), CapturedResponse(200))
    cap = Capture("acme", "1.0", "plain", [count, probe, refused, main])
    assert cap.generation_exchanges() == [refused, main]
    assert [ex.refused_at_capture for ex in cap.generation_exchanges()] == [True, False]
