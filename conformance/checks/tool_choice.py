"""`tools.choice_honoured`: a forced tool choice gets a tool call; `none` gets none.

Rules (facts from the API references):
- Anthropic Messages `tool_choice`: `{"type": "any"}` — the model must use one of the offered
  tools; `{"type": "tool", "name": N}` — it must use tool N; `{"type": "none"}` — it must not use
  tools; `{"type": "auto"}` (the default) decides nothing here.
- OpenAI chat `tool_choice`: `"required"` — one or more tool calls; `{"type": "function",
  "function": {"name": N}}` — a call to N; `"none"` — no call; `{"type": "allowed_tools",
  "allowed_tools": {"mode": "required", "tools": [...]}}` — a call to one of those tools.
- A forced choice answered without any tool call is an error, unless the turn was cut by the
  output cap before any answer text (only reasoning, or nothing): then it is unverifiable, since
  the call would have come next. A named choice answered with another tool is an error; so is a
  call under `none`.
- The check applies only when the request forces or forbids calls and offers tools; a verdict
  is recorded ("passed" too) only then.
- Why a check of its own: an engine that ignores the force (no constrained decoding for the
  tool-call format) or a router that drops or mis-maps it (Anthropic `any` -> OpenAI
  `required`) breaks the agent loops that force a call, and the loop would otherwise report only
  "the task was not done".
"""

from __future__ import annotations

import json
from typing import Any

from conformance.checks import tools
from conformance.core.failures import Violation
from conformance.core.registry import register, violation
from conformance.wire.openai import CUT_FINISH_REASONS

CHOICE_HONOURED = register(
    "tools.choice_honoured",
    "a forced tool_choice (any / required / a named tool) gets a tool call, tool_choice none gets none",
    likely_cause=(
        "the engine ignores tool_choice (it does not constrain decoding to its tool-call format: "
        "llama.cpp with a chat template whose tool format it does not force, vLLM without guided "
        "decoding), or a router drops or mis-maps it (Anthropic {type: any} must become OpenAI "
        "'required')"
    ),
).id

# Stops that end a turn before the forced call could come. Anthropic: only the caps, not all of
# CUT_STOP_REASONS (a refusal or a paused server-tool turn with a forced choice is judged).
CUT_STOPS = {"anthropic": frozenset({"max_tokens", "model_context_window_exceeded"}),
             "openai": CUT_FINISH_REASONS}


def demanded(request: dict | None, api: str) -> tuple[str, str | None, list[str] | None] | None:
    """What the request's tool_choice demands: ("force", name or None, allowed names or None),
    ("forbid", None, None), or None when it demands nothing (auto, absent, unknown shapes)."""
    choice = (request or {}).get("tool_choice")
    if api == "anthropic":
        kind = choice.get("type") if isinstance(choice, dict) else None
        if kind == "any":
            return "force", None, None
        if kind == "tool" and isinstance(choice.get("name"), str):
            return "force", choice["name"], None
        if kind == "none":
            return "forbid", None, None
        return None
    if choice == "required":
        return "force", None, None
    if choice == "none":
        return "forbid", None, None
    if isinstance(choice, dict):
        if choice.get("type") == "function":
            name = (choice.get("function") or {}).get("name") if isinstance(choice.get("function"), dict) else None
            return ("force", name, None) if isinstance(name, str) else None
        allowed = choice.get("allowed_tools") if isinstance(choice.get("allowed_tools"), dict) else None
        if choice.get("type") == "allowed_tools" and allowed and allowed.get("mode") == "required":
            names = [((t.get("function") or {}).get("name") if isinstance(t.get("function"), dict) else t.get("name"))
                     for t in allowed.get("tools") or [] if isinstance(t, dict)]
            return "force", None, [n for n in names if isinstance(n, str)] or None
    return None


def check_choice(message: Any, request: dict | None, api: str, *,
                 turn: int | None = None) -> tuple[str, list[Violation], str] | None:
    """(outcome, violations, note) for `tools.choice_honoured`, or None when it does not apply."""
    want = demanded(request, api)
    if want is None or not tools.offered_tools(request, api) or message is None:
        return None
    mode, name, allowed = want
    shown = json.dumps((request or {}).get("tool_choice"))
    calls = tools.tool_calls(message, api)
    stop = tools.stop_reason_of(message, api)
    if mode == "forbid":
        if calls:
            return "failed", [violation(CHOICE_HONOURED, f"tool_choice {shown} forbids tool calls, but the answer "
                                        f"calls {', '.join(repr(c.name) for c in calls)}",
                                        expected="no tool call", seen=f"{len(calls)} call(s)",
                                        pointer="/tool_choice", turn=turn)], ""
        return "passed", [], ""
    if not calls:
        text = tools.message_text(message, api)
        if stop in CUT_STOPS[api] and not text.strip():
            return "unverifiable", [], (f"the output cap ({stop}) ended the turn before any answer text; "
                                        f"the forced call would have come next")
        return "failed", [violation(CHOICE_HONOURED, f"tool_choice {shown} forces a tool call, but the answer has "
                                    f"none (stop reason {stop!r})",
                                    expected="a tool call" + (f" to {name!r}" if name else ""),
                                    seen=f"text: {text[:160]!r}" if text else "no tool call and no text",
                                    pointer="/tool_choice", turn=turn)], ""
    wrong = [c.name for c in calls if (name and c.name != name) or (allowed and c.name not in allowed)]
    if wrong:
        return "failed", [violation(CHOICE_HONOURED, f"tool_choice {shown} forces "
                                    + (f"{name!r}" if name else f"one of {allowed}")
                                    + f", but the answer calls {', '.join(repr(w) for w in wrong)}",
                                    expected=f"calls to {name!r}" if name else f"calls to one of {allowed}",
                                    seen=", ".join(wrong), pointer="/tool_choice", turn=turn)], ""
    return "passed", [], ""
