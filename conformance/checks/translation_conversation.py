"""The translation rules over the conversation: messages, tool-result pairing, tool ids, thinking.

Rules:
- Both sides are read as neutral turns (`Dialect.turns`): the client's on its wire, the engine's
  on the engine's wire, so a chat, Responses or Anthropic engine request is compared the same way.
- Messages (`translation.messages_preserved`): every text the client sent (the top-level system
  prompt, `role: system` entries inside messages, user and assistant text) reaches the engine,
  in order; absent is an error, out of order a warning, a system entry delivered under another
  role is info (LiteLLM sends it as `user`). What a router may change in the top-level system
  prompt: the whitespace around each text block and how the blocks are joined (an OpenAI system
  message is one string; claude-code-router 3.1.1 trims each block and joins them with "\n").
  The text inside a block is content: each block must arrive with it unchanged, in order.
- Pairing (`translation.tool_result_pairing`): in what reached the engine every tool result
  follows the assistant turn that made its call, under that call's id (else an error), and its
  content arrives as text: wrapped as JSON text or with other text around it is a warning
  (claude-code-router stringifies list results), absent an error.
- Tool ids (`translation.tool_ids_preserved`): a tool_use id renamed on the way is a warning; a
  tool_result id rewritten so it no longer names its call an error. The engine's call ids reach
  the client unchanged (exact recordings only): changed is a warning, normalised to the
  Anthropic id alphabet info.
- Thinking (`translation.thinking_preserved`): thinking the client sends back reaches a
  pass-through engine verbatim, signature included (error); on another wire its loss is by
  construction (info). Reasoning the engine produced reaches the client (error when absent;
  altered text, and on a pass-through an altered signature, are errors on exact recordings).
- A client whose conversation is items has its own walk (`translation_items.input_violations`),
  run under the same ids.
"""

from __future__ import annotations

import json

from conformance.checks import translation_items as items
from conformance.checks.translation import (
    MESSAGES,
    PAIRING,
    ROUTER,
    THINKING,
    TOOL_IDS,
    Applies,
    Hop,
    always,
    clip,
)
from conformance.core.failures import Violation
from conformance.core.registry import check, violation


def _client_turns(hop: Hop):
    return hop.client_wire.turns(hop.client_request)


def _engine_turns(hop: Hop):
    return hop.engine_wire.turns(hop.engine_request)


# ----------------------------------------------------------------------------- messages
@check(MESSAGES, "every message (incl. role: system entries inside messages) reaches the engine with its text, in order",
       likely_cause=f"{ROUTER} drops roles it does not know (LiteLLM and claude-code-router translate only "
       "user/assistant, so Claude Code's mid-conversation system entry vanishes) or flattens content",
       scope="hop", order=0, applies=Applies(translated=always, items=always))
def messages_preserved(hop: Hop) -> list[Violation]:
    if hop.client_wire.carries_items:
        return items.input_violations(hop, MESSAGES)
    out: list[Violation] = []
    # Where each engine text lives: one haystack in order, with the role of every span.
    spans: list[tuple[int, int, str]] = []
    hay = ""
    for t in _engine_turns(hop):
        for text in t.texts + [r[1] for r in t.results]:
            start = len(hay)
            hay += text + "\u0000"
            spans.append((start, len(hay), t.role))
    pos = 0
    for t in _client_turns(hop):
        for text in _system_blocks(hop, t) if t.index < 0 else t.texts:
            needle = text.strip()
            if not needle:
                continue
            found = hay.find(needle, pos)
            if found < 0:
                anywhere = hay.find(needle)
                if anywhere < 0:
                    what = "the top-level system prompt" if t.index < 0 else f"a role: {t.role} message"
                    out.append(violation(MESSAGES, f"{what} never reached the engine", expected=clip(needle), seen="absent",
                                         pointer=t.pointer))
                    continue
                out.append(violation(MESSAGES, f"a role: {t.role} message reached the engine out of order", severity="warning",
                                     expected="same order as the client sent", seen=f"found earlier at char {anywhere}",
                                     pointer=t.pointer))
                continue
            role_there = next((r for s, e, r in spans if s <= found < e), "?")
            if t.role == "system" and t.index >= 0 and role_there != "system":
                out.append(violation(MESSAGES, f"the mid-conversation role: system entry arrived as role {role_there}",
                                     severity="info", expected="role system", seen=role_there, pointer=t.pointer))
            pos = found + len(needle)
    return out


def _system_blocks(hop: Hop, turn) -> list[str]:
    """The top-level system prompt as the client's own text blocks, each matched apart (module
    rules: the whitespace around a block and the joining of blocks are the router's to choose);
    a system prompt sent as one string is one block."""
    system = hop.client_request.get("system") if isinstance(hop.client_request, dict) else None
    if isinstance(system, list):
        return [str(b.get("text", "")) for b in system if isinstance(b, dict) and b.get("type") == "text"]
    return turn.texts


# ----------------------------------------------------------------------------- pairing
def _sends_results(hop: Hop) -> bool:
    return any(t.results for t in _client_turns(hop))


@check(PAIRING, "every tool result reaches the engine with its content, right after the call it answers, under that call's id",
       likely_cause=f"{ROUTER} loses its tool-id map or reorders tool messages; the engine then sees results for calls it never made",
       scope="hop", order=2, applies=Applies(translated=_sends_results, items=items.has_calls))
def tool_result_pairing(hop: Hop) -> list[Violation]:
    """In what reached the engine, every tool result follows the call it answers."""
    if hop.client_wire.carries_items:
        return items.input_violations(hop, PAIRING)
    out: list[Violation] = []
    engine = _engine_turns(hop)
    open_calls: set[str] = set()
    for t in engine:
        if t.role == "assistant":
            open_calls = {c[0] for c in t.calls}
            continue
        for rid, _ in t.results:
            if rid not in open_calls:
                out.append(violation(PAIRING, f"a tool result for id {rid!r} reached the engine, but the preceding assistant "
                                     f"turn called {sorted(open_calls) or 'no tool'}",
                                     expected=sorted(open_calls), seen=rid, pointer=t.pointer))
            else:
                open_calls.discard(rid)
        if t.role == "user" and t.texts and not t.results:
            open_calls = set()
    # Results' content must arrive, as text (not re-encoded).
    by_id = {rid: text for t in engine for rid, text in t.results}
    everything = "\u0000".join(list(by_id.values()) + [x for t in engine for x in t.texts])
    for t in _client_turns(hop):
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
                                     severity="warning", expected=clip(needle),
                                     seen=clip(where if got is not None else "elsewhere"), pointer=t.pointer))
            else:
                out.append(violation(PAIRING, f"the content of tool result {rid!r} did not reach the engine",
                                     expected=clip(needle), seen="absent or rewritten", pointer=t.pointer))
    return out


# ----------------------------------------------------------------------------- tool ids
def _has_ids(hop: Hop) -> bool:
    return any(t.calls or t.results for t in _client_turns(hop)) or (hop.exact and hop.answered and bool(hop.engine_calls()))


@check(TOOL_IDS, "tool_use ids survive the round trip (client -> engine and engine -> client)",
       likely_cause=f"{ROUTER} mints its own tool ids instead of carrying the engine's / the client's",
       scope="hop", order=3, applies=Applies(translated=_has_ids))
def tool_ids_preserved(hop: Hop) -> list[Violation]:
    out: list[Violation] = []
    engine = _engine_turns(hop)
    engine_call_ids = {c[0] for t in engine for c in t.calls}
    engine_result_ids = {r[0] for t in engine for r in t.results}
    for t in _client_turns(hop):
        for cid, name, _ in t.calls:
            if cid not in engine_call_ids:
                out.append(violation(TOOL_IDS, f"tool_use id {cid!r} ({name}) was changed on the way to the engine",
                                     severity="warning", expected=cid, seen=sorted(engine_call_ids)[:6], pointer=t.pointer))
        for rid, _ in t.results:
            if rid not in engine_result_ids:
                paired = rid in engine_call_ids
                out.append(violation(TOOL_IDS, f"tool_result id {rid!r} was rewritten on the way to the engine"
                                     + ("" if paired else "; it no longer names the call it answers"),
                                     severity="error" if not paired or engine_result_ids - engine_call_ids else "warning",
                                     expected=rid, seen=sorted(engine_result_ids)[:6], pointer=t.pointer))
    # Answer side: the engine's call ids reach the client (only an exact recording can tell).
    if hop.exact and hop.answered:
        client_ids = (c.id for c in hop.client_wire.tool_calls(hop.client_response))
        for (eid, ename), cid in zip(((e.id, e.name) for e in hop.engine_calls()), client_ids, strict=False):
            if eid and cid and eid != cid:
                normalised = "".join(ch if ch.isalnum() or ch in "_-" else "_" for ch in eid)
                if normalised == cid:
                    out.append(violation(TOOL_IDS, f"the engine's call id {eid!r} reached the client normalised to the "
                                         "Anthropic id alphabet", severity="info", expected=eid, seen=cid))
                else:
                    out.append(violation(TOOL_IDS, f"the engine's call id {eid!r} ({ename}) reached the client as {cid!r}",
                                         severity="warning", expected=eid, seen=cid))
    return out


# ----------------------------------------------------------------------------- thinking
def _has_thinking(hop: Hop) -> bool:
    return any(t.thinking for t in _client_turns(hop)) or (hop.answered and bool(hop.engine_thinking()))


@check(THINKING, "thinking blocks round-trip: reasoning the engine produced reaches the client; thinking and signatures "
       "the client sends back reach an Anthropic engine verbatim",
       likely_cause=f"{ROUTER} has no place for thinking in its unified format (reasoning_content / thinking_blocks dropped)",
       scope="hop", order=4, applies=Applies(translated=_has_thinking, items=items.has_reasoning))
def thinking_preserved(hop: Hop) -> list[Violation]:
    if hop.client_wire.carries_items:
        return items.input_violations(hop, THINKING)
    out = _thinking_sent_back(hop)
    # Answer side: reasoning the engine produced reaches the client.
    if hop.answered:
        eng = hop.engine_thinking()
        cli = hop.client_wire.thinking_blocks(hop.client_response)
        if eng and not cli:
            out.append(violation(THINKING, "the engine's reasoning never reached the client (no thinking block)",
                                 expected=clip(eng[0][0]), seen="no thinking block"))
        elif eng and cli and hop.exact:
            if "".join(x[0] for x in eng) != "".join(x[0] for x in cli):
                out.append(violation(THINKING, "the engine's reasoning reached the client altered",
                                     expected=clip("".join(x[0] for x in eng)), seen=clip("".join(x[0] for x in cli))))
            if hop.pass_through:
                for (_, es), (_, cs) in zip(eng, cli, strict=False):
                    if (es or "") != (cs or ""):
                        out.append(violation(THINKING, "the engine's thinking signature reached the client altered",
                                             expected=clip(str(es)), seen=clip(str(cs))))
    return out


def _thinking_sent_back(hop: Hop) -> list[Violation]:
    """Thinking the client sends back: verbatim on a pass-through, lost by construction elsewhere."""
    out: list[Violation] = []
    client = [t for t in _client_turns(hop) if t.role == "assistant"]
    engine = [t for t in _engine_turns(hop) if t.role == "assistant"]
    for k, t in enumerate(client):
        if not t.thinking:
            continue
        got = engine[k].thinking if k < len(engine) else []
        for text, sig in t.thinking:
            match = next((g for g in got if g[0] == text), None)
            if hop.pass_through:
                if match is None:
                    out.append(violation(THINKING, "a thinking block the client sent back never reached the engine",
                                         expected=clip(text), seen="absent", pointer=t.pointer))
                elif (sig or "") != (match[1] or ""):
                    out.append(violation(THINKING, "a thinking block's signature was altered on the way to the engine",
                                         expected=clip(str(sig)), seen=clip(str(match[1])), pointer=t.pointer))
                continue
            if match is None:
                out.append(violation(THINKING, "lost: assistant thinking sent back by the client was dropped (OpenAI chat "
                                     "has no standard field; vLLM reads reasoning_content)", severity="info",
                                     expected=clip(text), seen="absent", pointer=t.pointer))
            if sig:
                out.append(violation(THINKING, "lost: thinking signatures cannot travel on OpenAI chat (a session later "
                                     "switched to Anthropic's API is rejected)", severity="info", pointer=t.pointer))
    return out
