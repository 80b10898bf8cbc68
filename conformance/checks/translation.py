"""The translation rules (`translation.*` checks): what a router changed between the client and the engine.

(This module is the rules; `conformance.layers.hop` builds the hop they judge; the public test
module `conformance.suite.test_translation` runs them through a router.)

Rules:
- Inputs are a `Hop`: the Anthropic body the client sent, the body that reached the engine, the
  engine's answer (accumulated message; `exact` when it is the recorded answer of that very
  request, not a replayed sample) and the accumulated message the client got.
- The engine's wire (`Hop.engine_api`) is a Dialect name — `openai` (the router translated to
  chat completions), `responses` (the router translated to the OpenAI Responses API, LiteLLM's
  upstream path) or `anthropic` (pass-through). Its request is read in its own shape (messages,
  chat messages, input items); on a wire without stop sequences (Responses) the client's
  are lost (an error: the agent depends on them). Answers are read through the Dialect (`conformance.wire.dialect`): tool calls, thinking, stop
  reason, usage keys; the client side is always Anthropic (CLIENT). What differs between a
  pass-through and a translation is asked once, `Hop.pass_through`.
- A finish reason reaches the client correctly when its stop is one of the Anthropic stops the
  engine's Dialect says a faithful translation may carry (`Dialect.anthropic_stops`: chat `stop`
  -> end_turn or stop_sequence); on a pass-through it must arrive unchanged.
- Severity follows what the agent needs, not what changed:
  * error — the agent loses something it depends on: a message, a `role: system` entry, a tool or
    its schema, tool-result pairing, a stop sequence, the tool_use stop reason, usage, thinking the
    engine produced (or, on an Anthropic pass-through, thinking/signatures/cache_control the client
    sent), tools on a claimed injection route;
  * warning — changed, harmless for a stateless engine (tool ids renamed consistently);
  * info — lost *by construction* of the Anthropic -> OpenAI-chat path (signatures,
    cache_control, context_management) and every parameter mapping, worded exactly
    ("output_config.effort xhigh -> reasoning_effort high"). The report lists these as "lost".
- A Responses client (Codex) through a router to a Responses engine (`Hop.client_api`
  "responses") has nothing to translate: every field it sends must arrive with the same effect
  (values compared, a null key and an absent one alike). instructions and input items ->
  messages_preserved, reasoning items -> thinking_preserved (their encrypted_content is the
  reasoning a store-false client carries between turns), calls and outputs with their call_ids ->
  tool_result_pairing, tools (function, custom with its format, namespace with its tools, hosted)
  and tool_choice -> tools_preserved, reasoning / include / text / store / parallel_tool_calls /
  max_output_tokens -> request_fields_preserved. Error where the agent loses what it depends on
  (reasoning effort or summary, include reasoning.encrypted_content, a text format, a forced
  tool_choice, a lowered max_output_tokens, any item or tool); warning where the effect changes
  but the agent keeps working (text.verbosity, store, parallel_tool_calls, tool_choice auto/none);
  info for any other top-level field dropped (prompt_cache_key, client_metadata).
- Facts about real routers (the reference router's translation, conformance.router.translate, cites them): LiteLLM and
  claude-code-router both drop `role: system` entries inside messages; LiteLLM maps adaptive
  thinking + effort to `reasoning_effort` = the effort verbatim and keeps cache_control only for
  Claude upstreams; claude-code-router drops assistant thinking and JSON-stringifies list tool
  results. Those are exactly what these checks word.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from conformance.core.failures import Violation
from conformance.core.registry import register, violation
from conformance.wire.dialect import DIALECTS, Dialect, dialect

_ROUTER = "the router between client and engine"

MESSAGES = register(
    "translation.messages_preserved",
    "every message (incl. role: system entries inside messages) reaches the engine with its text, in order",
    likely_cause=f"{_ROUTER} drops roles it does not know (LiteLLM and claude-code-router translate only "
    "user/assistant, so Claude Code's mid-conversation system entry vanishes) or flattens content",
).id
TOOLS = register(
    "translation.tools_preserved",
    "every offered tool reaches the engine with its name and an unchanged input schema; tool_choice keeps its force",
    likely_cause=f"{_ROUTER} renames, truncates (OpenAI's 64-char name limit) or rewrites tool schemas, or maps tool_choice loosely",
).id
PAIRING = register(
    "translation.tool_result_pairing",
    "every tool result reaches the engine with its content, right after the call it answers, under that call's id",
    likely_cause=f"{_ROUTER} loses its tool-id map or reorders tool messages; the engine then sees results for calls it never made",
).id
TOOL_IDS = register(
    "translation.tool_ids_preserved",
    "tool_use ids survive the round trip (client -> engine and engine -> client)",
    likely_cause=f"{_ROUTER} mints its own tool ids instead of carrying the engine's / the client's",
).id
THINKING = register(
    "translation.thinking_preserved",
    "thinking blocks round-trip: reasoning the engine produced reaches the client; thinking and signatures the client sends back reach an Anthropic engine verbatim",
    likely_cause=f"{_ROUTER} has no place for thinking in its unified format (reasoning_content / thinking_blocks dropped)",
).id
CACHE = register(
    "translation.cache_control_preserved",
    "cache_control markers reach an Anthropic engine where the client put them (OpenAI chat: reported as lost)",
    likely_cause=f"{_ROUTER} strips cache_control (LiteLLM keeps it only for Claude upstreams)",
).id
STOPS = register(
    "translation.stop_sequences_forwarded",
    "stop_sequences reach the engine (OpenAI `stop`)",
    likely_cause=f"{_ROUTER} does not map stop_sequences to `stop`",
).id
STOP_REASON = register(
    "translation.stop_reason_mapped",
    "the engine's finish reason reaches the client mapped correctly (tool_calls -> tool_use, length -> max_tokens, stop -> end_turn/stop_sequence)",
    likely_cause=f"{_ROUTER} maps every finish_reason to end_turn, so the agent never runs the tool (LiteLLM #34692)",
).id
USAGE = register(
    "translation.usage_carried",
    "the engine's token usage reaches the client (input_tokens, output_tokens)",
    likely_cause=f"{_ROUTER} drops the final usage chunk (no stream_options.include_usage) or recomputes usage",
).id
PARAMS = register(
    "translation.params",
    "context_management / effort / thinking / metadata: forwarded or dropped, reported with the exact mapping",
    severity="info",
).id
FIELDS = register(
    "translation.request_fields_preserved",
    "a Responses client's request fields (reasoning, text, include, store, parallel_tool_calls, "
    "max_output_tokens) reach a Responses engine with the same effect",
    likely_cause=f"{_ROUTER} rebuilds the request from the fields it knows, or drops the ones its model map says the "
    "upstream does not support (LiteLLM drops `reasoning` when it carries an effort)",
).id
INJECTION = register(
    "translation.injection_strips_tools",
    "a router that claims an injection route strips the tools on it (opt-in)",
    likely_cause="the router classifies the prompt as an injection but still forwards the tool list, so the injection can call tools",
).id

ALL_IDS = (MESSAGES, TOOLS, PAIRING, TOOL_IDS, THINKING, CACHE, STOPS, STOP_REASON, USAGE, PARAMS, FIELDS, INJECTION)

def ids_for(client_api: str) -> tuple[str, ...]:
    """The checks that judge a hop of this client wire (the Anthropic rules, or the Responses-client
    rules, which read the request only)."""
    if dialect(client_api) is RESPONSES:
        return (MESSAGES, TOOLS, PAIRING, THINKING, FIELDS)
    return tuple(cid for cid in ALL_IDS if cid != FIELDS)


CLIENT = dialect("anthropic")  # the client side of every hop: an Anthropic client through the router
RESPONSES = dialect("responses")  # the engine wire whose request carries `input` items, not messages

# Every wire's words for "the turn hands tool calls to the client" (a router may relay any of them).
TOOL_FINISH = frozenset(s for d in DIALECTS.values() for s in d.stops.tool) | frozenset(
    r for d in DIALECTS.values() for r, a in d.stops.to_anthropic.items() if a in CLIENT.stops.tool)


@dataclass
class Hop:
    client_request: dict
    engine_request: dict | None
    engine_api: str = "openai"  # the engine's wire: a Dialect name (module rules)
    engine_response: dict | None = None  # accumulated message on the engine's wire
    client_response: dict | None = None  # accumulated Anthropic message
    exact: bool = True  # engine_response is the recorded answer to engine_request (not a replay)
    route: str | None = None  # the router's route name, when it tells (x-router-route)
    injection_probe: bool = False
    client_api: str = "anthropic"  # the client's wire: anthropic, or responses (Codex through a Responses router)

    @property
    def engine_dialect(self) -> Dialect:
        """The Dialect of the engine's wire."""
        return dialect(self.engine_api)

    @property
    def responses_api(self) -> bool:
        """The engine request is a Responses request (`input` items, top-level tools)."""
        return self.engine_dialect is RESPONSES

    @property
    def request_dialect(self) -> Dialect:
        """The Dialect the engine request's shared fields are read with."""
        return self.engine_dialect

    @property
    def pass_through(self) -> bool:
        """The engine got the client's own wire: what the client sent must arrive verbatim."""
        return self.engine_dialect is CLIENT


@dataclass
class Turn:
    role: str
    texts: list[str] = field(default_factory=list)
    calls: list[tuple[str, str, Any]] = field(default_factory=list)  # (id, name, args)
    results: list[tuple[str, str]] = field(default_factory=list)  # (tool id, text)
    thinking: list[tuple[str, str | None]] = field(default_factory=list)  # (text, signature)
    index: int = -1  # position in the source messages list (-1: top-level system)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for c in content:
            if isinstance(c, str):
                parts.append(c)
            elif isinstance(c, dict) and c.get("type") in ("text", "input_text", "output_text"):
                parts.append(str(c.get("text", "")))
        return "\n".join(parts)
    if content is None:
        return ""
    return json.dumps(content, ensure_ascii=False)


def anthropic_turns(body: dict) -> list[Turn]:
    turns: list[Turn] = []
    if body.get("system"):
        turns.append(Turn("system", [_text(body["system"])], index=-1))
    for i, m in enumerate(body.get("messages") or []):
        if not isinstance(m, dict):
            continue
        t = Turn(str(m.get("role")), index=i)
        content = m.get("content")
        if isinstance(content, str):
            t.texts.append(content)
        for b in content if isinstance(content, list) else []:
            if not isinstance(b, dict):
                continue
            kind = b.get("type")
            if kind == "text":
                t.texts.append(str(b.get("text", "")))
            elif kind == "tool_use":
                t.calls.append((str(b.get("id", "")), str(b.get("name", "")), b.get("input")))
            elif kind == "tool_result":
                t.results.append((str(b.get("tool_use_id", "")), _text(b.get("content", ""))))
            elif kind == "thinking":
                t.thinking.append((str(b.get("thinking", "")), b.get("signature")))
            elif kind == "redacted_thinking":
                t.thinking.append(("", b.get("data")))
        turns.append(t)
    return turns


def openai_turns(body: dict) -> list[Turn]:
    turns: list[Turn] = []
    for i, m in enumerate(body.get("messages") or []):
        if not isinstance(m, dict):
            continue
        role = str(m.get("role"))
        t = Turn(role, index=i)
        if role == "tool":
            t.results.append((str(m.get("tool_call_id", "")), _text(m.get("content"))))
        else:
            text = _text(m.get("content"))
            if text:
                t.texts.append(text)
        for c in m.get("tool_calls") or []:
            fn = c.get("function") or {}
            args = fn.get("arguments")
            try:
                args = json.loads(args) if isinstance(args, str) else args
            except ValueError:
                pass
            t.calls.append((str(c.get("id", "")), str(fn.get("name", "")), args))
        reasoning = m.get("reasoning_content") or m.get("reasoning")
        if reasoning:
            t.thinking.append((str(reasoning), None))
        for tb in m.get("thinking_blocks") or []:  # LiteLLM's field
            if isinstance(tb, dict):
                t.thinking.append((str(tb.get("thinking", "")), tb.get("signature")))
        turns.append(t)
    return turns


def responses_turns(body: dict) -> list[Turn]:
    """OpenAI Responses API input (LiteLLM's default path for `openai/` models): `instructions`,
    then `input` items — messages, function_call, function_call_output."""
    turns: list[Turn] = []
    if body.get("instructions"):
        turns.append(Turn("system", [_text(body["instructions"])], index=-1))
    items = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    for i, item in enumerate(items or []):
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        if kind == "message":
            role = str(item.get("role"))
            role = "system" if role == "developer" else role
            turns.append(Turn(role, [_text(item.get("content"))], index=i))
        elif kind == "function_call":
            args = item.get("arguments")
            try:
                args = json.loads(args) if isinstance(args, str) else args
            except ValueError:
                pass
            if turns and turns[-1].role == "assistant":
                turns[-1].calls.append((str(item.get("call_id", "")), str(item.get("name", "")), args))
            else:
                turns.append(Turn("assistant", calls=[(str(item.get("call_id", "")), str(item.get("name", "")), args)], index=i))
        elif kind == "function_call_output":
            turns.append(Turn("tool", results=[(str(item.get("call_id", "")), _text(item.get("output")))], index=i))
        elif kind == "reasoning":
            summary = item.get("summary") or []
            text = "".join(x.get("text", "") for x in summary if isinstance(x, dict))
            if turns and turns[-1].role == "assistant":
                turns[-1].thinking.append((text, item.get("encrypted_content")))
            else:
                turns.append(Turn("assistant", thinking=[(text, item.get("encrypted_content"))], index=i))
    return turns


def engine_turns(hop: Hop) -> list[Turn]:
    body = hop.engine_request or {}
    if hop.responses_api:
        return responses_turns(body)
    return anthropic_turns(body) if hop.pass_through else openai_turns(body)


def _clip(s: str, n: int = 80) -> str:
    s = s.replace("\n", "\\n")
    return s if len(s) <= n else s[:n] + "…"


# ---------------------------------------------------------------------------- request side

def check_messages(hop: Hop) -> list[Violation]:
    out: list[Violation] = []
    client = anthropic_turns(hop.client_request)
    engine = engine_turns(hop)
    # Where each engine text lives: one haystack in order, with the role of every span.
    spans: list[tuple[int, int, str]] = []
    hay = ""
    for t in engine:
        for text in t.texts + [r[1] for r in t.results]:
            start = len(hay)
            hay += text + "\u0000"
            spans.append((start, len(hay), t.role))
    pos = 0
    for t in client:
        for text in t.texts:
            needle = text.strip()
            if not needle:
                continue
            ptr = "/system" if t.index < 0 else f"/messages/{t.index}"
            found = hay.find(needle, pos)
            if found < 0:
                anywhere = hay.find(needle)
                if anywhere < 0:
                    what = "the top-level system prompt" if t.index < 0 else f"a role: {t.role} message"
                    out.append(violation(MESSAGES, f"{what} never reached the engine", expected=_clip(needle), seen="absent", pointer=ptr))
                    continue
                out.append(violation(MESSAGES, f"a role: {t.role} message reached the engine out of order", severity="warning",
                                     expected="same order as the client sent", seen=f"found earlier at char {anywhere}", pointer=ptr))
                continue
            role_there = next((r for s, e, r in spans if s <= found < e), "?")
            if t.role == "system" and t.index >= 0 and role_there != "system":
                out.append(violation(MESSAGES, f"the mid-conversation role: system entry arrived as role {role_there}",
                                     severity="info", expected="role system", seen=role_there, pointer=ptr))
            pos = found + len(needle)
    return out


def _schema_diff(a: Any, b: Any, path: str = "") -> str | None:
    if type(a) is not type(b):
        return path or "/"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}/{k}"
            d = _schema_diff(a[k], b[k], f"{path}/{k}")
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return path or "/"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            d = _schema_diff(x, y, f"{path}/{i}")
            if d:
                return d
        return None
    return None if a == b else (path or "/")


def _engine_tools(hop: Hop) -> dict[str, Any]:
    body = hop.engine_request or {}
    out = {}
    for t in body.get("tools") or []:
        if not isinstance(t, dict):
            continue
        # Exact names, unnamed tools included (an empty name is evidence too): not Dialect.offered_tools.
        if hop.pass_through:
            out[str(t.get("name", ""))] = t.get("input_schema")
        elif hop.responses_api:
            out[str(t.get("name", ""))] = t.get("parameters")
        else:
            fn = t.get("function") or {}
            out[str(fn.get("name", ""))] = fn.get("parameters")
    return out


def check_tools(hop: Hop) -> list[Violation]:
    if hop.route == "injection":
        return []  # the injection route strips tools by design; translation.injection_strips_tools judges it
    out: list[Violation] = []
    engine = _engine_tools(hop)
    for i, tool in enumerate(hop.client_request.get("tools") or []):
        if not isinstance(tool, dict) or tool.get("type") not in (None, "custom"):
            continue
        name = str(tool.get("name", ""))
        if name not in engine:
            close = [n for n in engine if n.lower() == name.lower() or n.startswith(name[:40])]
            out.append(violation(TOOLS, f"tool {name!r} did not reach the engine" + (f" (renamed {close[0]!r}?)" if close else ""),
                                 expected=name, seen=sorted(engine)[:12], pointer=f"/tools/{i}"))
            continue
        schema = tool.get("input_schema")
        if schema is not None and engine[name] is not None:
            d = _schema_diff(schema, engine[name])
            if d:
                out.append(violation(TOOLS, f"tool {name!r}: its input schema changed on the way to the engine at {d}",
                                     expected=_clip(json.dumps(schema), 200), seen=_clip(json.dumps(engine[name]), 200),
                                     pointer=f"/tools/{i}/input_schema{d if d != '/' else ''}"))
    choice = hop.client_request.get("tool_choice")
    if isinstance(choice, dict) and hop.engine_request is not None and hop.client_request.get("tools"):
        sent = (hop.engine_request or {}).get("tool_choice")
        kind = choice.get("type")
        if not hop.pass_through:
            named = (sent.get("function") or {}).get("name", sent.get("name")) if isinstance(sent, dict) else None
            ok = {
                "auto": sent in (None, "auto"),
                "any": sent == "required",
                "none": sent == "none",
                "tool": named == choice.get("name"),
            }.get(kind, True)
        else:
            ok = isinstance(sent, dict) and sent.get("type") == kind
        if not ok:
            sev = "error" if kind in ("any", "tool") else "warning"
            out.append(violation(TOOLS, f"tool_choice {json.dumps(choice)} lost its meaning on the way to the engine",
                                 severity=sev, expected={"any": "required", "tool": "a named function", "auto": "auto", "none": "none"}.get(kind, kind),
                                 seen=json.dumps(sent), pointer="/tool_choice"))
    return out


def check_pairing(hop: Hop) -> list[Violation]:
    """In what reached the engine, every tool result follows the call it answers."""
    out: list[Violation] = []
    engine = engine_turns(hop)
    open_calls: set[str] = set()
    for t in engine:
        if t.role == "assistant":
            open_calls = {c[0] for c in t.calls}
            continue
        for rid, _ in t.results:
            if rid not in open_calls:
                out.append(violation(PAIRING, f"a tool result for id {rid!r} reached the engine, but the preceding assistant turn called {sorted(open_calls) or 'no tool'}",
                                     expected=sorted(open_calls), seen=rid, pointer=f"/messages/{t.index}"))
            else:
                open_calls.discard(rid)
        if t.role == "user" and t.texts and not t.results:
            open_calls = set()
    # Results' content must arrive, as text (not re-encoded).
    by_id = {rid: text for t in engine for rid, text in t.results}
    everything = "\u0000".join(list(by_id.values()) + [x for t in engine for x in t.texts])
    for t in anthropic_turns(hop.client_request):
        for rid, text in t.results:
            needle = text.strip()
            if not needle:
                continue
            got = by_id.get(rid)
            if got is not None and got.strip() == needle:
                continue
            where = got if got is not None else everything
            if needle in where or any(json.dumps(needle, ensure_ascii=a)[1:-1] in where for a in (False, True)):
                wrapped = got is not None and got.strip().startswith(("[", "{"))
                out.append(violation(PAIRING, f"the content of tool result {rid!r} reached the engine "
                                     + ("wrapped as JSON text" if wrapped else "with other text around it"),
                                     severity="warning", expected=_clip(needle), seen=_clip(where if got is not None else "elsewhere"),
                                     pointer=f"/messages/{t.index}"))
            else:
                out.append(violation(PAIRING, f"the content of tool result {rid!r} did not reach the engine",
                                     expected=_clip(needle), seen="absent or rewritten", pointer=f"/messages/{t.index}"))
    return out


def check_tool_ids(hop: Hop) -> list[Violation]:
    out: list[Violation] = []
    client = anthropic_turns(hop.client_request)
    engine = engine_turns(hop)
    engine_call_ids = {c[0] for t in engine for c in t.calls}
    engine_result_ids = {r[0] for t in engine for r in t.results}
    for t in client:
        for cid, name, _ in t.calls:
            if cid not in engine_call_ids:
                out.append(violation(TOOL_IDS, f"tool_use id {cid!r} ({name}) was changed on the way to the engine",
                                     severity="warning", expected=cid, seen=sorted(engine_call_ids)[:6], pointer=f"/messages/{t.index}"))
        for rid, _ in t.results:
            if rid not in engine_result_ids:
                paired = rid in engine_call_ids
                out.append(violation(TOOL_IDS, f"tool_result id {rid!r} was rewritten on the way to the engine"
                                     + ("" if paired else "; it no longer names the call it answers"),
                                     severity="error" if not paired or engine_result_ids - engine_call_ids else "warning",
                                     expected=rid, seen=sorted(engine_result_ids)[:6], pointer=f"/messages/{t.index}"))
    # Response side: the engine's call ids reach the client (only an exact recording can tell).
    if hop.exact and hop.engine_response is not None and hop.client_response is not None:
        eng = _engine_calls(hop)
        cli = CLIENT.tool_calls(hop.client_response)
        for (eid, ename), cid in zip(((e.id, e.name) for e in eng), (c.id for c in cli), strict=False):
            if eid and cid and eid != cid:
                normalised = "".join(ch if ch.isalnum() or ch in "_-" else "_" for ch in eid)
                if normalised == cid:
                    out.append(violation(TOOL_IDS, f"the engine's call id {eid!r} reached the client normalised to the Anthropic id alphabet",
                                         severity="info", expected=eid, seen=cid))
                else:
                    out.append(violation(TOOL_IDS, f"the engine's call id {eid!r} ({ename}) reached the client as {cid!r}",
                                         severity="warning", expected=eid, seen=cid))
    return out


def check_thinking(hop: Hop) -> list[Violation]:
    out: list[Violation] = []
    client = [t for t in anthropic_turns(hop.client_request) if t.role == "assistant"]
    engine = [t for t in engine_turns(hop) if t.role == "assistant"]
    # Request side: thinking the client sends back.
    for k, t in enumerate(client):
        if not t.thinking:
            continue
        there = engine[k] if k < len(engine) else None
        got = [x for x in (there.thinking if there else [])]
        for text, sig in t.thinking:
            match = next((g for g in got if g[0] == text), None)
            if hop.pass_through:
                if match is None:
                    out.append(violation(THINKING, "a thinking block the client sent back never reached the engine",
                                         expected=_clip(text), seen="absent", pointer=f"/messages/{t.index}"))
                elif (sig or "") != (match[1] or ""):
                    out.append(violation(THINKING, "a thinking block's signature was altered on the way to the engine",
                                         expected=_clip(str(sig)), seen=_clip(str(match[1])), pointer=f"/messages/{t.index}"))
            else:
                if match is None:
                    out.append(violation(THINKING, "lost: assistant thinking sent back by the client was dropped (OpenAI chat has no standard field; "
                                         "vLLM reads reasoning_content)", severity="info", expected=_clip(text), seen="absent",
                                         pointer=f"/messages/{t.index}"))
                if sig:
                    out.append(violation(THINKING, "lost: thinking signatures cannot travel on OpenAI chat (a session later switched to "
                                         "Anthropic's API is rejected)", severity="info", pointer=f"/messages/{t.index}"))
    # Response side: reasoning the engine produced reaches the client.
    if hop.engine_response is not None and hop.client_response is not None:
        eng = _engine_thinking(hop)
        cli = CLIENT.thinking_blocks(hop.client_response)
        if eng and not cli:
            out.append(violation(THINKING, "the engine's reasoning never reached the client (no thinking block)",
                                 expected=_clip(eng[0][0]), seen="no thinking block"))
        elif eng and cli and hop.exact:
            if "".join(x[0] for x in eng) != "".join(x[0] for x in cli):
                out.append(violation(THINKING, "the engine's reasoning reached the client altered",
                                     expected=_clip("".join(x[0] for x in eng)), seen=_clip("".join(x[0] for x in cli))))
            if hop.pass_through:
                for (_, es), (_, cs) in zip(eng, cli, strict=False):
                    if (es or "") != (cs or ""):
                        out.append(violation(THINKING, "the engine's thinking signature reached the client altered",
                                             expected=_clip(str(es)), seen=_clip(str(cs))))
    return out


def _count_cache_control(value: Any, path: str = "") -> list[str]:
    found = []
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "cache_control":
                found.append(path)
            else:
                found += _count_cache_control(v, f"{path}/{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += _count_cache_control(v, f"{path}/{i}")
    return found


def check_cache_control(hop: Hop) -> list[Violation]:
    sent = _count_cache_control(hop.client_request)
    if not sent or hop.engine_request is None:
        return []
    arrived = _count_cache_control(hop.engine_request)
    if hop.pass_through:
        missing = [p for p in sent if p not in arrived]
        if missing:
            return [violation(CACHE, f"{len(missing)} of {len(sent)} cache_control markers were stripped before the engine",
                              expected=len(sent), seen=len(sent) - len(missing), pointer=missing[0])]
        return []
    if not arrived:
        return [violation(CACHE, f"lost: {len(sent)} cache_control markers (OpenAI chat has no cache_control; the engine's "
                          "automatic prefix cache applies instead)", severity="info", expected=len(sent), seen=0, pointer=sent[0])]
    return []


def check_stop_sequences(hop: Hop) -> list[Violation]:
    want = hop.client_request.get("stop_sequences") or []
    if not want or hop.engine_request is None:
        return []
    body = hop.engine_request
    key = hop.request_dialect.stop_sequences_key
    if key is None:
        return [violation(STOPS, f"stop sequences {want} cannot reach the engine: its wire ({hop.engine_api}) has no "
                          "stop sequences, so generation runs past them unless the router cuts the text itself",
                          expected=want, seen="no field for them", pointer="/stop_sequences")]
    got = body.get(key)
    got = [got] if isinstance(got, str) else list(got or [])
    missing = [s for s in want if s not in got]
    if missing:
        return [violation(STOPS, f"stop sequences {missing} did not reach the engine", expected=want, seen=got,
                          pointer="/stop_sequences")]
    return []


def check_params(hop: Hop) -> list[Violation]:
    """Every parameter mapping, as info lines (never an error: the agent keeps working)."""
    c, e = hop.client_request, hop.engine_request or {}
    lines: list[str] = []
    if not hop.pass_through:
        effort = (c.get("output_config") or {}).get("effort") if isinstance(c.get("output_config"), dict) else None
        thinking = c.get("thinking") if isinstance(c.get("thinking"), dict) else None
        sent, field_name = e.get("reasoning_effort"), "reasoning_effort"
        if isinstance(sent, dict):
            sent, field_name = sent.get("effort"), "reasoning_effort.effort"
        if sent is None and isinstance(e.get("reasoning"), dict):
            sent, field_name = e["reasoning"].get("effort"), "reasoning.effort"
        src = []
        if thinking:
            src.append(f"thinking {thinking.get('type')}" + (f" budget_tokens {thinking['budget_tokens']}" if "budget_tokens" in thinking else ""))
        if effort:
            src.append(f"output_config.effort {effort}")
        if src:
            lines.append(f"{' + '.join(src)} -> " + (f"{field_name} {sent}" if sent is not None else "dropped (no reasoning_effort sent)"))
        if "thinking" in e:
            lines.append(f"thinking forwarded verbatim as an OpenAI field: {json.dumps(e['thinking'])}")
        if "context_management" in c:
            lines.append("context_management -> " + ("forwarded verbatim" if "context_management" in e else
                         "dropped (old tool uses / thinking are never cleared by the engine; the context grows as if it were off)"))
        md = c.get("metadata")
        if isinstance(md, dict) and md.get("user_id"):
            lines.append("metadata.user_id -> " + ("user" if e.get("user") else "dropped"))
        if "max_tokens" in c:
            got = e.get("max_tokens", e.get("max_completion_tokens", e.get("max_output_tokens")))
            if got != c["max_tokens"]:
                lines.append(f"max_tokens {c['max_tokens']} -> {got if got is not None else 'dropped'}")
        if c.get("stream") and not hop.responses_api:  # stream_options is chat completions' field
            so = e.get("stream_options") or {}
            lines.append("stream -> stream" + (" + stream_options.include_usage" if so.get("include_usage") else " (usage not requested)"))
    else:
        for key in ("thinking", "output_config", "context_management", "metadata"):
            if key in c:
                lines.append(f"{key} -> " + ("forwarded unchanged" if e.get(key) == c[key] else
                             f"changed to {json.dumps(e.get(key))}" if key in e else "dropped"))
    return [violation(PARAMS, line, severity="info") for line in lines]


# ---------------------------------------------------------------------------- response side

def _engine_calls(hop: Hop) -> list:
    """The engine answer's tool calls (none without an answer or a Dialect to read it)."""
    d = hop.engine_dialect
    return d.tool_calls(hop.engine_response) if d is not None and hop.engine_response is not None else []


def _engine_thinking(hop: Hop) -> list[tuple[str, str | None]]:
    """The engine answer's thinking as (text, signature) pieces."""
    d = hop.engine_dialect
    return d.thinking_blocks(hop.engine_response) if d is not None and hop.engine_response is not None else []


def check_stop_reason(hop: Hop) -> list[Violation]:
    d = hop.engine_dialect
    if hop.engine_response is None or hop.client_response is None or d is None:
        return []
    seen = CLIENT.stop_reason(hop.client_response)
    finish = d.stop_reason(hop.engine_response)
    calls = bool(d.tool_calls(hop.engine_response))
    if calls and finish in TOOL_FINISH and seen not in CLIENT.stops.tool:
        return [violation(STOP_REASON, f"the engine finished with {finish} after a tool call, the client got stop_reason {seen}",
                          expected=CLIENT.stops.tool[0], seen=seen)]
    if hop.pass_through:
        if finish and seen != finish:
            return [violation(STOP_REASON, f"stop_reason {finish} reached the client as {seen}", expected=finish, seen=seen)]
        return []
    allowed = d.anthropic_stops(finish)
    if allowed and seen not in allowed:
        return [violation(STOP_REASON, f"{d.stops.field} {finish} reached the client as stop_reason {seen}",
                          expected=" or ".join(sorted(allowed)), seen=seen)]
    return []


def _tokens(usage: dict, *keys: str) -> int:
    return sum(int(usage.get(k) or 0) for k in keys)


def _prompt_tokens(d: Dialect, usage: dict) -> int:
    """The whole prompt, cached parts included (Anthropic counts those apart from input_tokens)."""
    return _tokens(usage, d.input_tokens_key, *d.cached_input_keys)


def check_usage(hop: Hop) -> list[Violation]:
    if hop.engine_response is None or hop.client_response is None:
        return []
    d = hop.engine_dialect
    if d is None:
        return []
    eu = hop.engine_response.get("usage") or {}
    cu = hop.client_response.get("usage") or {}
    e_in, e_out = _prompt_tokens(d, eu), _tokens(eu, d.output_tokens_key)
    c_in, c_out = _prompt_tokens(CLIENT, cu), _tokens(cu, CLIENT.output_tokens_key)
    out = []
    if (e_in and not c_in) or (e_out and not c_out):
        out.append(violation(USAGE, "the engine reported usage that never reached the client",
                             expected=f"input {e_in}, output {e_out}", seen=f"input {c_in}, output {c_out}", pointer="/usage"))
    elif hop.exact and (e_in, e_out) != (c_in, c_out) and e_in and e_out:
        out.append(violation(USAGE, "usage reached the client changed", severity="warning",
                             expected=f"input {e_in}, output {e_out}", seen=f"input {c_in}, output {c_out}", pointer="/usage"))
    return out


def check_injection(hop: Hop) -> list[Violation]:
    if not hop.injection_probe:
        return []
    out = []
    body = hop.engine_request or {}
    if body.get("tools"):
        out.append(violation(INJECTION, f"the injection probe reached the engine with {len(body['tools'])} tools still offered",
                             expected="no tools on the injection route", seen=f"{len(body['tools'])} tools", pointer="/tools"))
    calls = CLIENT.tool_calls(hop.client_response)
    if calls:
        out.append(violation(INJECTION, "the injection probe was answered with a tool call",
                             expected="text only", seen=[c.name for c in calls]))
    return out


CHECKS = (
    (MESSAGES, check_messages), (TOOLS, check_tools), (PAIRING, check_pairing), (TOOL_IDS, check_tool_ids),
    (THINKING, check_thinking), (CACHE, check_cache_control), (STOPS, check_stop_sequences),
    (STOP_REASON, check_stop_reason), (USAGE, check_usage), (PARAMS, check_params), (INJECTION, check_injection),
)


def applies(check_id: str, hop: Hop) -> bool:
    """Does the check have anything to compare in this hop? (Else it is skipped, not passed.)"""
    c = hop.client_request
    turns = anthropic_turns(c)
    responses = hop.engine_response is not None and hop.client_response is not None
    engine_calls = responses and bool(_engine_calls(hop))
    return {
        TOOLS: bool(c.get("tools")),
        PAIRING: any(t.results for t in turns),
        TOOL_IDS: any(t.calls or t.results for t in turns) or (hop.exact and engine_calls),
        THINKING: any(t.thinking for t in turns) or (responses and bool(_engine_thinking(hop))),
        CACHE: bool(_count_cache_control(c)),
        STOPS: bool(c.get("stop_sequences")),
        STOP_REASON: responses,
        USAGE: responses,
        INJECTION: hop.injection_probe,
    }.get(check_id, True)


def check_hop(hop: Hop) -> dict[str, list[Violation]]:
    """Run every applicable translation check: check id -> its violations (empty list = passed);
    checks with nothing to compare in this hop are left out (skipped). A Responses client is
    judged by the Responses-client rules, and only on a Responses engine (a Responses -> chat
    translation has no rules yet: every check is skipped)."""
    if hop.engine_request is None:
        return {}
    if dialect(hop.client_api) is RESPONSES:
        return _responses_client_checks(hop) if hop.responses_api else {}
    return {cid: fn(hop) for cid, fn in CHECKS if applies(cid, hop)}


# ---------------------------------------------------------------------------- Responses client
# A Responses client (Codex) through a router to a Responses engine: the router has nothing to
# translate, so every field Codex sends must arrive with the same effect. Compared on values,
# not bytes: key order, and a key the client sent as null versus left out, make no difference.

RESPONSES_FIELDS_DEFAULTS = {"tool_choice": "auto", "parallel_tool_calls": True, "store": True}
# Fields judged by their own rule below; any other top-level field dropped is reported as info.
_JUDGED_FIELDS = frozenset({"model", "stream", "input", "instructions", "tools", "tool_choice", "reasoning",
                            "text", "include", "store", "parallel_tool_calls", "max_output_tokens"})


def _present(value: Any) -> Any:
    """A value with null-valued keys left out (null and absent mean the same on this wire)."""
    if isinstance(value, dict):
        return {k: _present(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_present(v) for v in value]
    return value


def _items(body: dict) -> list[dict]:
    items = body.get("input")
    if isinstance(items, str):
        return [{"type": "message", "role": "user", "content": items}]
    return [i for i in items or [] if isinstance(i, dict)]


def _item_key(item: dict) -> tuple:
    """What identifies an input item for the agent: a message by role and text (developer and
    system are one role to the engine), a call by its call_id, name and arguments, a call's output
    by call_id and text, a reasoning item by its encrypted content and summary."""
    kind = item.get("type", "message")
    if kind == "message":
        role = str(item.get("role"))
        return ("message", "system" if role == "developer" else role, _text(item.get("content")).strip())
    if kind in ("function_call", "custom_tool_call"):
        payload = item.get("arguments") if kind == "function_call" else item.get("input")
        try:
            payload = json.loads(payload) if kind == "function_call" and isinstance(payload, str) else payload
        except ValueError:
            pass
        return (kind, str(item.get("call_id", "")), str(item.get("name", "")), str(item.get("namespace") or ""),
                json.dumps(payload, sort_keys=True))
    if kind in ("function_call_output", "custom_tool_call_output"):
        return (kind, str(item.get("call_id", "")), _text(item.get("output")).strip())
    if kind == "reasoning":
        summary = "".join(str(x.get("text", "")) for x in item.get("summary") or [] if isinstance(x, dict))
        return ("reasoning", str(item.get("encrypted_content") or ""), summary)
    return (kind, json.dumps(_present(item), sort_keys=True))


_ITEM_CHECK = {"message": MESSAGES, "reasoning": THINKING, "function_call": PAIRING, "custom_tool_call": PAIRING,
               "function_call_output": PAIRING, "custom_tool_call_output": PAIRING}
_ITEM_LOSS = {
    MESSAGES: "the engine never sees that part of the conversation",
    THINKING: "with store false the engine's earlier reasoning reaches it only through this item's encrypted_content",
    PAIRING: "the engine sees a tool call without its result or a result without its call",
}


def check_responses_input(hop: Hop) -> list[Violation]:
    """instructions and every input item reach the engine unchanged and in order; each item kind is
    judged under the check that owns it (messages, reasoning -> thinking, calls and outputs -> pairing)."""
    out: list[Violation] = []
    c, e = hop.client_request, hop.engine_request or {}
    if c.get("instructions") is not None and _text(c.get("instructions")).strip() != _text(e.get("instructions")).strip():
        out.append(violation(MESSAGES, "instructions " + ("never reached the engine" if e.get("instructions") is None
                             else "were changed on the way to the engine"), expected=_clip(_text(c["instructions"])),
                             seen=_clip(_text(e.get("instructions"))) if e.get("instructions") is not None else "absent",
                             pointer="/instructions"))
    engine_keys = [_item_key(i) for i in _items(e)]
    pos = 0
    for i, item in enumerate(_items(c)):
        key = _item_key(item)
        check = _ITEM_CHECK.get(key[0], MESSAGES)
        try:
            found = engine_keys.index(key, pos)
        except ValueError:
            found = -1
        if found >= 0:
            pos = found + 1
            continue
        if key in engine_keys:
            out.append(violation(check, f"input item {i} ({key[0]}) reached the engine out of order", severity="warning",
                                 expected="the client's order", seen=f"at input {engine_keys.index(key)}", pointer=f"/input/{i}"))
            continue
        same_kind = [k for k in engine_keys if k[0] == key[0]]
        what = f"input item {i} ({key[0]}" + (f", call_id {key[1]}" if key[0] not in ("message", "reasoning") else "") + ")"
        out.append(violation(check, f"{what} did not reach the engine unchanged: {_ITEM_LOSS[check]}",
                             expected=_clip(json.dumps(key[1:], ensure_ascii=False), 160),
                             seen=_clip(json.dumps([k[1:] for k in same_kind][:3], ensure_ascii=False), 160) if same_kind else "absent",
                             pointer=f"/input/{i}"))
    return out


def _tool_key(tool: dict) -> str:
    return f"{tool.get('type', 'function')}:{tool.get('name', '')}" if tool.get("name") is not None else str(tool.get("type"))


def check_responses_tools(hop: Hop) -> list[Violation]:
    """Every tool (function, custom with its format, namespace with its tools, hosted tools)
    arrives with the same definition; tool_choice keeps its value (absent means auto)."""
    out: list[Violation] = []
    c, e = hop.client_request, hop.engine_request or {}
    engine = {_tool_key(t): t for t in e.get("tools") or [] if isinstance(t, dict)}
    for i, tool in enumerate(t for t in c.get("tools") or [] if isinstance(t, dict)):
        key = _tool_key(tool)
        there = engine.get(key)
        if there is None:
            out.append(violation(TOOLS, f"tool {key!r} did not reach the engine: the model cannot call it",
                                 expected=key, seen=sorted(engine)[:12], pointer=f"/tools/{i}"))
            continue
        d = _schema_diff(_present(tool), _present(there))
        if d:
            out.append(violation(TOOLS, f"tool {key!r} changed on the way to the engine at {d}",
                                 expected=_clip(json.dumps(tool), 200), seen=_clip(json.dumps(there), 200),
                                 pointer=f"/tools/{i}{d if d != '/' else ''}"))
    want = c.get("tool_choice", RESPONSES_FIELDS_DEFAULTS["tool_choice"])
    got = e.get("tool_choice", RESPONSES_FIELDS_DEFAULTS["tool_choice"])
    if "tool_choice" in c and _present(want) != _present(got):
        forced = want not in ("auto", "none")
        out.append(violation(TOOLS, f"tool_choice {json.dumps(want)} reached the engine as {json.dumps(got)}",
                             severity="error" if forced else "warning", expected=json.dumps(want), seen=json.dumps(got),
                             pointer="/tool_choice"))
    return out


def check_responses_fields(hop: Hop) -> list[Violation]:
    """reasoning, text, include, store, parallel_tool_calls, max_output_tokens arrive with the
    same effect; other top-level fields dropped are reported as info."""
    out: list[Violation] = []
    c, e = hop.client_request, hop.engine_request or {}

    def lost(name: str, why: str, severity: str = "error") -> None:
        out.append(violation(FIELDS, f"{name}: {why}", severity=severity,
                             expected=json.dumps(c.get(name)), seen=json.dumps(e[name]) if name in e else "absent",
                             pointer=f"/{name}"))

    want_r = c.get("reasoning") if isinstance(c.get("reasoning"), dict) else {}
    got_r = e.get("reasoning") if isinstance(e.get("reasoning"), dict) else {}
    changed = [(sub, why) for sub, why in (
        ("effort", "the engine reasons at its own default effort, not the one the user chose"),
        ("summary", "the engine returns no reasoning summary, so the agent shows none"))
        if want_r.get(sub) is not None and want_r.get(sub) != got_r.get(sub)]
    if changed:
        lost("reasoning", "; ".join(f"{sub} {json.dumps(want_r[sub])} reached the engine as "
                                    f"{json.dumps(got_r[sub]) if got_r.get(sub) is not None else 'nothing'}: {why}"
                                    for sub, why in changed))
    missing = [x for x in c.get("include") or [] if x not in (e.get("include") or [])]
    if missing:
        lost("include", f"{missing} did not reach the engine" + (
            ": with store false the agent carries reasoning into the next turn only as encrypted_content"
            if "reasoning.encrypted_content" in missing else ""))
    text_c, text_e = c.get("text") if isinstance(c.get("text"), dict) else {}, e.get("text") if isinstance(e.get("text"), dict) else {}
    if text_c.get("format") is not None and _present(text_c["format"]) != _present(text_e.get("format")):
        lost("text", "the output format (structured output) did not reach the engine unchanged: the agent parses an answer "
             "that was never constrained")
    if text_c.get("verbosity") is not None and text_c["verbosity"] != text_e.get("verbosity"):
        lost("text", f"verbosity {text_c['verbosity']!r} did not reach the engine (answers of another length)", "warning")
    for name, why in (("store", "the engine may keep what the client asked it not to store"),
                      ("parallel_tool_calls", "the engine's choice of one or many calls per turn changes")):
        if name in c and c[name] != e.get(name, RESPONSES_FIELDS_DEFAULTS[name]):
            lost(name, f"{json.dumps(c[name])} reached the engine as {json.dumps(e.get(name))}"
                 + (" (the default)" if name not in e else "") + f": {why}", "warning")
    cap, got = c.get("max_output_tokens"), e.get("max_output_tokens")
    if isinstance(cap, int) and cap != got:
        if isinstance(got, int) and got < cap:
            lost("max_output_tokens", f"{cap} lowered to {got}: answers are cut earlier than the agent allows")
        else:
            lost("max_output_tokens", f"{cap} reached the engine as {got if got is not None else 'nothing'} (the engine may "
                 "write more than the agent asked)", "info")
    for name in sorted(set(c) - _JUDGED_FIELDS):
        if c[name] is None:
            continue
        if name not in e or e[name] is None:
            out.append(violation(FIELDS, f"{name} dropped", severity="info", expected="forwarded", seen="absent",
                                 pointer=f"/{name}"))
        elif _present(e[name]) != _present(c[name]):
            out.append(violation(FIELDS, f"{name} changed", severity="info", expected=_clip(json.dumps(c[name])),
                                 seen=_clip(json.dumps(e[name])), pointer=f"/{name}"))
    return out


RESPONSES_CHECKS = (check_responses_input, check_responses_tools, check_responses_fields)


def _responses_client_checks(hop: Hop) -> dict[str, list[Violation]]:
    """The Responses-client rules; `check_responses_input` reports under three ids (its items'
    owners), so a check with nothing of its kind in the request is left out (skipped)."""
    kinds = {_item_key(i)[0] for i in _items(hop.client_request)}
    ran: dict[str, list[Violation]] = {}
    for fn in RESPONSES_CHECKS:
        for v in fn(hop):
            ran.setdefault(v.check_id, []).append(v)
    applicable = {MESSAGES, FIELDS}
    if hop.client_request.get("tools") or "tool_choice" in hop.client_request:
        applicable.add(TOOLS)
    if kinds & {"function_call", "custom_tool_call", "function_call_output", "custom_tool_call_output"}:
        applicable.add(PAIRING)
    if "reasoning" in kinds:
        applicable.add(THINKING)
    return {cid: ran.get(cid, []) for cid in ALL_IDS if cid in applicable or cid in ran}
