"""The translation rules over the request's other fields: tools and tool_choice, cache_control,
stop sequences, the parameter mappings, and the injection route.

Rules:
- Tools (`translation.tools_preserved`): every client tool (custom tools; server tools are the
  server's) reaches the engine under its exact name (the engine wire's `tool_name`; an unnamed
  engine tool counts as "" so a rename is shown) with an unchanged input schema (`tool_schema`,
  pointer to the first difference). tool_choice keeps its force: on a pass-through the same
  type; translated, any -> "required", tool -> a function of that name, auto -> auto or none
  given, none -> none (a lost any/tool is an error, auto/none a warning). The injection route
  strips tools by design: `translation.injection_strips_tools` judges it. A client whose
  conversation is items has its own rule (`translation_items.tools_violations`).
- cache_control (`translation.cache_control_preserved`): on a pass-through every marker arrives
  where the client put it (error); on another wire markers are lost by construction (info).
- Stop sequences (`translation.stop_sequences_forwarded`): each reaches the engine's stop field;
  an engine wire with none (Responses) loses them (error: the agent depends on them).
- Parameters (`translation.params`, info only): every mapping in words, exactly as it happened
  (effort and thinking -> reasoning_effort / reasoning.effort, context_management, metadata.user_id,
  max_tokens, and on a wire where a stream must ask for usage (`stream_usage_option`) whether it
  did); on a pass-through, whether each Anthropic parameter arrived unchanged.
- Injection (`translation.injection_strips_tools`, opt-in probe): the injection prompt reaches
  the engine with no tools and is answered without a tool call.
"""

from __future__ import annotations

import json
from typing import Any

from conformance.checks import translation_items as items
from conformance.checks.translation import (
    CACHE,
    INJECTION,
    PARAMS,
    ROUTER,
    STOPS,
    TOOLS,
    Applies,
    Hop,
    always,
    clip,
    schema_diff,
)
from conformance.core.failures import Violation
from conformance.core.registry import check, violation


# ----------------------------------------------------------------------------- tools
def _offers_tools(hop: Hop) -> bool:
    return bool(hop.client_request.get("tools"))


def _engine_tools(hop: Hop) -> dict[str, Any]:
    """Engine tool name -> its schema: exact names, unnamed tools included as "" (evidence of a
    rename), so not `Dialect.offered_tools`."""
    wire = hop.engine_wire
    return {wire.tool_name(t) or "": wire.tool_schema(t)
            for t in (hop.engine_request or {}).get("tools") or [] if isinstance(t, dict)}


@check(TOOLS, "every offered tool reaches the engine with its name and an unchanged input schema; tool_choice keeps its force",
       likely_cause=f"{ROUTER} renames, truncates (OpenAI's 64-char name limit) or rewrites tool schemas, or maps "
       "tool_choice loosely",
       scope="hop", order=1, applies=Applies(translated=_offers_tools, items=items.offers_tools))
def tools_preserved(hop: Hop) -> list[Violation]:
    if hop.client_wire.carries_items:
        return items.tools_violations(hop)
    if hop.route == "injection":
        return []  # the injection route strips tools by design; translation.injection_strips_tools judges it
    out: list[Violation] = []
    engine = _engine_tools(hop)
    wire = hop.client_wire
    for i, tool in enumerate(hop.client_request.get("tools") or []):
        if not isinstance(tool, dict) or tool.get("type") not in (None, "custom"):
            continue
        name = wire.tool_name(tool) or ""
        if name not in engine:
            close = [n for n in engine if n.lower() == name.lower() or n.startswith(name[:40])]
            out.append(violation(TOOLS, f"tool {name!r} did not reach the engine" + (f" (renamed {close[0]!r}?)" if close else ""),
                                 expected=name, seen=sorted(engine)[:12], pointer=f"/tools/{i}"))
            continue
        schema = wire.tool_schema(tool)
        if schema is not None and engine[name] is not None:
            d = schema_diff(schema, engine[name])
            if d:
                out.append(violation(TOOLS, f"tool {name!r}: its input schema changed on the way to the engine at {d}",
                                     expected=clip(json.dumps(schema), 200), seen=clip(json.dumps(engine[name]), 200),
                                     pointer=f"/tools/{i}/input_schema{d if d != '/' else ''}"))
    choice = _tool_choice_lost(hop)
    return out + ([choice] if choice else [])


_FORCE_ON_CHAT = {"any": "required", "tool": "a named function", "auto": "auto", "none": "none"}


def _tool_choice_lost(hop: Hop) -> Violation | None:
    choice = hop.client_request.get("tool_choice")
    if not isinstance(choice, dict) or not hop.client_request.get("tools"):
        return None
    sent = (hop.engine_request or {}).get("tool_choice")
    kind = choice.get("type")
    if hop.pass_through:
        ok = isinstance(sent, dict) and sent.get("type") == kind
    else:
        named = (sent.get("function") or {}).get("name", sent.get("name")) if isinstance(sent, dict) else None
        ok = {"auto": sent in (None, "auto"), "any": sent == "required", "none": sent == "none",
              "tool": named == choice.get("name")}.get(kind, True)
    if ok:
        return None
    return violation(TOOLS, f"tool_choice {json.dumps(choice)} lost its meaning on the way to the engine",
                     severity="error" if kind in ("any", "tool") else "warning",
                     expected=_FORCE_ON_CHAT.get(kind, kind), seen=json.dumps(sent), pointer="/tool_choice")


# ----------------------------------------------------------------------------- cache_control
def cache_control_paths(value: Any, path: str = "") -> list[str]:
    """The JSON pointer of every object holding a `cache_control` marker."""
    found = []
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "cache_control":
                found.append(path)
            else:
                found += cache_control_paths(v, f"{path}/{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += cache_control_paths(v, f"{path}/{i}")
    return found


def _marks_cache(hop: Hop) -> bool:
    return bool(cache_control_paths(hop.client_request))


@check(CACHE, "cache_control markers reach an Anthropic engine where the client put them (OpenAI chat: reported as lost)",
       likely_cause=f"{ROUTER} strips cache_control (LiteLLM keeps it only for Claude upstreams)",
       scope="hop", order=5, applies=Applies(translated=_marks_cache))
def cache_control_preserved(hop: Hop) -> list[Violation]:
    sent = cache_control_paths(hop.client_request)
    arrived = cache_control_paths(hop.engine_request)
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


# ----------------------------------------------------------------------------- stop sequences
def _stops(hop: Hop) -> bool:
    return bool(hop.client_wire.stop_sequences(hop.client_request))


@check(STOPS, "stop_sequences reach the engine (OpenAI `stop`)",
       likely_cause=f"{ROUTER} does not map stop_sequences to `stop`",
       scope="hop", order=6, applies=Applies(translated=_stops))
def stop_sequences_forwarded(hop: Hop) -> list[Violation]:
    want = list(hop.client_wire.stop_sequences(hop.client_request))
    pointer = f"/{hop.client_wire.stop_sequences_key}"
    if hop.engine_wire.stop_sequences_key is None:
        return [violation(STOPS, f"stop sequences {want} cannot reach the engine: its wire ({hop.engine_wire}) has no "
                          "stop sequences, so generation runs past them unless the router cuts the text itself",
                          expected=want, seen="no field for them", pointer=pointer)]
    got = list(hop.engine_wire.stop_sequences(hop.engine_request))
    missing = [s for s in want if s not in got]
    if missing:
        return [violation(STOPS, f"stop sequences {missing} did not reach the engine", expected=want, seen=got,
                          pointer=pointer)]
    return []


# ----------------------------------------------------------------------------- parameters
@check(PARAMS, "context_management / effort / thinking / metadata: forwarded or dropped, reported with the exact mapping",
       severity="info", scope="hop", order=9, applies=Applies(translated=always))
def params(hop: Hop) -> list[Violation]:
    """Every parameter mapping, as info lines (never an error: the agent keeps working)."""
    c, e = hop.client_request, hop.engine_request or {}
    if hop.pass_through:
        lines = [f"{key} -> " + ("forwarded unchanged" if e.get(key) == c[key] else
                                 f"changed to {json.dumps(e.get(key))}" if key in e else "dropped")
                 for key in ("thinking", "output_config", "context_management", "metadata") if key in c]
    else:
        lines = _translated_params(hop, c, e)
    return [violation(PARAMS, line, severity="info") for line in lines]


def _translated_params(hop: Hop, c: dict, e: dict) -> list[str]:
    lines: list[str] = []
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
    option = hop.engine_wire.stream_usage_option
    if c.get("stream") and option is not None:
        so = e.get(option) or {}
        lines.append("stream -> stream" + (f" + {option}.include_usage" if so.get("include_usage") else " (usage not requested)"))
    return lines


# ----------------------------------------------------------------------------- injection
def _injection_probe(hop: Hop) -> bool:
    return hop.injection_probe


@check(INJECTION, "a router that claims an injection route strips the tools on it (opt-in)",
       likely_cause="the router classifies the prompt as an injection but still forwards the tool list, so the injection "
       "can call tools",
       scope="hop", order=11, applies=Applies(translated=_injection_probe))
def injection_strips_tools(hop: Hop) -> list[Violation]:
    out = []
    tools = (hop.engine_request or {}).get("tools")
    if tools:
        out.append(violation(INJECTION, f"the injection probe reached the engine with {len(tools)} tools still offered",
                             expected="no tools on the injection route", seen=f"{len(tools)} tools", pointer="/tools"))
    calls = hop.client_wire.tool_calls(hop.client_response)
    if calls:
        out.append(violation(INJECTION, "the injection probe was answered with a tool call",
                             expected="text only", seen=[c.name for c in calls]))
    return out
