"""The translation rules for a client whose conversation is items the router must pass unchanged
(`Dialect.carries_items`: Codex, a Responses client, through a router to a Responses engine).

Rules:
- Nothing is translated on this hop, so every field the client sends must arrive with the same
  effect; values are compared, not bytes: key order, and a key sent as null versus left out, make
  no difference (`present`).
- The system prompt (`instructions`) and every input item (read through the Dialect's `entries`)
  reach the engine unchanged and in order. An item is compared by what identifies it for the
  agent (`item_key`): a message by role and text (developer and system are one role to the
  engine), a call by its call_id, name, namespace and arguments, a call's output by call_id and
  text, a reasoning item by its encrypted content and summary. Each item kind is judged under
  the check that owns it (`ITEM_CHECK`: messages, reasoning -> thinking, calls and outputs ->
  pairing); an item found later than its place is a warning.
- Tools (function, custom with its format, namespace with its tools, hosted) arrive with the same
  definition; tool_choice keeps its value (absent means auto): a forced one changed is an error,
  auto / none a warning (`tools_violations`, run by `translation.tools_preserved`).
- `translation.request_fields_preserved` (registered here, this family's only own check):
  reasoning effort or summary, include entries (reasoning.encrypted_content: with store false the
  only way earlier reasoning reaches the engine), a text format and a lowered max_output_tokens
  are errors; text.verbosity, store and parallel_tool_calls changed are warnings (the agent keeps
  working); a raised or dropped max_output_tokens and any other top-level field dropped or changed
  are info.
"""

from __future__ import annotations

import json
from typing import Any

from conformance.checks.translation import (
    FIELDS,
    MESSAGES,
    PAIRING,
    ROUTER,
    THINKING,
    TOOLS,
    Applies,
    Hop,
    always,
    clip,
    present,
    schema_diff,
)
from conformance.core.failures import Violation
from conformance.core.registry import check, violation
from conformance.wire.conversation import Turn, parsed_arguments, text_of
from conformance.wire.dialect import Dialect

DEFAULTS = {"tool_choice": "auto", "parallel_tool_calls": True, "store": True}
# Fields judged by their own rule below; any other top-level field dropped is reported as info.
_JUDGED_FIELDS = frozenset({"model", "stream", "input", "instructions", "tools", "tool_choice", "reasoning",
                            "text", "include", "store", "parallel_tool_calls", "max_output_tokens"})
CALL_KINDS = frozenset({"function_call", "custom_tool_call", "function_call_output", "custom_tool_call_output"})
ITEM_CHECK = {"message": MESSAGES, "reasoning": THINKING, "function_call": PAIRING, "custom_tool_call": PAIRING,
              "function_call_output": PAIRING, "custom_tool_call_output": PAIRING}
_ITEM_LOSS = {
    MESSAGES: "the engine never sees that part of the conversation",
    THINKING: "with store false the engine's earlier reasoning reaches it only through this item's encrypted_content",
    PAIRING: "the engine sees a tool call without its result or a result without its call",
}


def item_kinds(hop: Hop) -> set[str]:
    """The kinds of the client's input items (a message without a type is a message)."""
    return {e.value.get("type", "message") for e in hop.client_wire.entries(hop.client_request)}


def has_calls(hop: Hop) -> bool:
    return bool(item_kinds(hop) & CALL_KINDS)


def has_reasoning(hop: Hop) -> bool:
    return "reasoning" in item_kinds(hop)


def offers_tools(hop: Hop) -> bool:
    return bool(hop.client_request.get("tools")) or "tool_choice" in hop.client_request


def item_key(item: dict) -> tuple:
    """What identifies an input item for the agent (module rules)."""
    kind = item.get("type", "message")
    if kind == "message":
        role = str(item.get("role"))
        return ("message", "system" if role == "developer" else role, text_of(item.get("content")).strip())
    if kind in ("function_call", "custom_tool_call"):
        payload = parsed_arguments(item.get("arguments")) if kind == "function_call" else item.get("input")
        return (kind, str(item.get("call_id", "")), str(item.get("name", "")), str(item.get("namespace") or ""),
                json.dumps(payload, sort_keys=True))
    if kind in ("function_call_output", "custom_tool_call_output"):
        return (kind, str(item.get("call_id", "")), text_of(item.get("output")).strip())
    if kind == "reasoning":
        summary = "".join(str(x.get("text", "")) for x in item.get("summary") or [] if isinstance(x, dict))
        return ("reasoning", str(item.get("encrypted_content") or ""), summary)
    return (kind, json.dumps(present(item), sort_keys=True))


def _system(wire: Dialect, request: dict) -> Turn | None:
    """The top-level system prompt's turn (Responses `instructions`), None without one."""
    return next((t for t in wire.turns(request) if t.index < 0), None)


def input_violations(hop: Hop, owner: str) -> list[Violation]:
    """The system prompt and every input item reach the engine unchanged and in order (module
    rules); the violations of the check `owner` (the walk is one, whatever the owner: an item's
    place is judged against every item before it)."""
    out: list[Violation] = []
    wire, c, e = hop.client_wire, hop.client_request, hop.engine_request or {}
    want, got = _system(wire, c), _system(hop.engine_wire, e)
    if want is not None and "\n".join(want.texts).strip() != ("\n".join(got.texts) if got else "").strip():
        out.append(violation(MESSAGES, "instructions " + ("never reached the engine" if got is None
                             else "were changed on the way to the engine"), expected=clip("\n".join(want.texts)),
                             seen=clip("\n".join(got.texts)) if got is not None else "absent", pointer=want.pointer))
    engine_keys = [item_key(x.value) for x in hop.engine_wire.entries(e)]
    pos = 0
    for entry in wire.entries(c):
        key = item_key(entry.value)
        owner_of = ITEM_CHECK.get(key[0], MESSAGES)
        try:
            found = engine_keys.index(key, pos)
        except ValueError:
            found = -1
        if found >= 0:
            pos = found + 1
            continue
        what = f"input item {entry.index} ({key[0]}"
        if key in engine_keys:
            out.append(violation(owner_of, f"{what}) reached the engine out of order", severity="warning",
                                 expected="the client's order", seen=f"at input {engine_keys.index(key)}",
                                 pointer=entry.pointer))
            continue
        same_kind = [k for k in engine_keys if k[0] == key[0]]
        what += (f", call_id {key[1]}" if key[0] not in ("message", "reasoning") else "") + ")"
        out.append(violation(owner_of, f"{what} did not reach the engine unchanged: {_ITEM_LOSS[owner_of]}",
                             expected=clip(json.dumps(key[1:], ensure_ascii=False), 160),
                             seen=clip(json.dumps([k[1:] for k in same_kind][:3], ensure_ascii=False), 160)
                             if same_kind else "absent", pointer=entry.pointer))
    return [v for v in out if v.check_id == owner]


def _tool_key(tool: dict) -> str:
    return f"{tool.get('type', 'function')}:{tool.get('name', '')}" if tool.get("name") is not None else str(tool.get("type"))


def tools_violations(hop: Hop) -> list[Violation]:
    """Every tool arrives with the same definition; tool_choice keeps its value (module rules)."""
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
        d = schema_diff(present(tool), present(there))
        if d:
            out.append(violation(TOOLS, f"tool {key!r} changed on the way to the engine at {d}",
                                 expected=clip(json.dumps(tool), 200), seen=clip(json.dumps(there), 200),
                                 pointer=f"/tools/{i}{d if d != '/' else ''}"))
    want = c.get("tool_choice", DEFAULTS["tool_choice"])
    got = e.get("tool_choice", DEFAULTS["tool_choice"])
    if "tool_choice" in c and present(want) != present(got):
        forced = want not in ("auto", "none")
        out.append(violation(TOOLS, f"tool_choice {json.dumps(want)} reached the engine as {json.dumps(got)}",
                             severity="error" if forced else "warning", expected=json.dumps(want), seen=json.dumps(got),
                             pointer="/tool_choice"))
    return out


@check(FIELDS, "a Responses client's request fields (reasoning, text, include, store, parallel_tool_calls, "
       "max_output_tokens) reach a Responses engine with the same effect",
       likely_cause=f"{ROUTER} rebuilds the request from the fields it knows, or drops the ones its model map says "
       "the upstream does not support (LiteLLM drops `reasoning` when it carries an effort)",
       scope="hop", order=10, applies=Applies(items=always))
def request_fields_preserved(hop: Hop) -> list[Violation]:
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
    text_c = c.get("text") if isinstance(c.get("text"), dict) else {}
    text_e = e.get("text") if isinstance(e.get("text"), dict) else {}
    if text_c.get("format") is not None and present(text_c["format"]) != present(text_e.get("format")):
        lost("text", "the output format (structured output) did not reach the engine unchanged: the agent parses an answer "
             "that was never constrained")
    if text_c.get("verbosity") is not None and text_c["verbosity"] != text_e.get("verbosity"):
        lost("text", f"verbosity {text_c['verbosity']!r} did not reach the engine (answers of another length)", "warning")
    for name, why in (("store", "the engine may keep what the client asked it not to store"),
                      ("parallel_tool_calls", "the engine's choice of one or many calls per turn changes")):
        if name in c and c[name] != e.get(name, DEFAULTS[name]):
            lost(name, f"{json.dumps(c[name])} reached the engine as {json.dumps(e.get(name))}"
                 + (" (the default)" if name not in e else "") + f": {why}", "warning")
    _max_output_tokens(c, e, lost)
    for name in sorted(set(c) - _JUDGED_FIELDS):
        if c[name] is None:
            continue
        if name not in e or e[name] is None:
            out.append(violation(FIELDS, f"{name} dropped", severity="info", expected="forwarded", seen="absent",
                                 pointer=f"/{name}"))
        elif present(e[name]) != present(c[name]):
            out.append(violation(FIELDS, f"{name} changed", severity="info", expected=clip(json.dumps(c[name])),
                                 seen=clip(json.dumps(e[name])), pointer=f"/{name}"))
    return out


def _max_output_tokens(c: dict, e: dict, lost: Any) -> None:
    cap, got = c.get("max_output_tokens"), e.get("max_output_tokens")
    if isinstance(cap, int) and cap != got:
        if isinstance(got, int) and got < cap:
            lost("max_output_tokens", f"{cap} lowered to {got}: answers are cut earlier than the agent allows")
        else:
            lost("max_output_tokens", f"{cap} reached the engine as {got if got is not None else 'nothing'} (the engine may "
                 "write more than the agent asked)", "info")
