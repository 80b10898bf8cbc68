"""The Anthropic Messages Dialect: content blocks, `stop_reason`, x-api-key.

Rules:
- Readers and writers of the Messages API's requests and answers (the base class's rules hold).
- A request's conversation: the top-level `system` (a string or text blocks), then `messages`,
  whose entries may include `{"role": "system"}` (Claude Code's mid-conversation system entries);
  content blocks text, tool_use, tool_result, thinking (with its signature) and redacted_thinking.
- Writers keep a request valid (Messages API reference, "Extended thinking"): `budget_tokens`
  is at least 1024 and below `max_tokens` (except under the beta interleaved-thinking-2025-05-14,
  where it may exceed it: `wire_request_problems` reads the betas), so `with_output_cap` lowers
  a budget the new cap would not leave room for, or turns thinking off (and with it `context_management`, whose
  clear_thinking edit needs thinking) when even 1024 does not fit; a forced tool_choice (`any`,
  `tool`) is refused with thinking on, so `forcing` turns thinking off the same way, as Claude
  Code does with MAX_THINKING_TOKENS=0 (docs/wire-facts.md).
"""

from __future__ import annotations

import copy
from typing import Any

from conformance.wire.anthropic import grammar
from conformance.wire.anthropic.rules import CUT_STOP_REASONS
from conformance.wire.conversation import ToolCall, Turn, field_of, int_or_none, not_an_object, text_of
from conformance.wire.dialect import ANTHROPIC_CACHED_INPUT_KEYS, Dialect, StopVocabulary
from conformance.wire.registry import register_dialect

EFFORTS = ("low", "medium", "high", "xhigh", "max")  # output_config.effort levels Claude Code sends
MIN_THINKING_BUDGET = 1024  # Messages API: budget_tokens >= 1024 and < max_tokens
# Under this beta the budget spans every thinking block of the assistant turn and may exceed
# max_tokens (Anthropic docs, "Extended thinking", section "Interleaved thinking":
# https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking#interleaved-thinking).
INTERLEAVED_THINKING_BETA = "interleaved-thinking-2025-05-14"


class AnthropicDialect(Dialect):
    """Anthropic Messages: content blocks, `stop_reason`, x-api-key."""

    # ---- answers ---------------------------------------------------------------------------
    def text(self, message: Any) -> str:
        if message is None:
            return ""
        return "".join(field_of(b, "text") or "" for b in field_of(message, "content") or [] if field_of(b, "type") == "text")

    def thinking(self, message: Any) -> str:
        if not message:
            return ""
        return "".join(field_of(b, "thinking") or "" for b in field_of(message, "content") or []
                       if field_of(b, "type") == "thinking")

    def thinking_blocks(self, message: Any) -> list[tuple[str, str | None]]:
        if not message:
            return []
        return [(str(field_of(b, "thinking") or ""), field_of(b, "signature")) for b in field_of(message, "content") or []
                if field_of(b, "type") == "thinking"]

    def delivers_content(self, event: Any) -> bool:
        return field_of(event, "event") in ("content_block_delta", "content_block_start")

    def tool_calls(self, message: Any, unparsed_input: dict[str, str] | None = None) -> list[ToolCall]:
        """`tool_use` blocks. `unparsed_input` (streams): pointer of a tool block's input -> its
        streamed partial_json text, which did not parse (the block keeps `input: {}`)."""
        if message is None:
            return []
        calls: list[ToolCall] = []
        for i, block in enumerate(field_of(message, "content") or []):
            if field_of(block, "type") != "tool_use":
                continue
            call_id, name = str(field_of(block, "id") or ""), field_of(block, "name") or ""
            pointer = f"/content/{i}/input"
            text = (unparsed_input or {}).get(pointer)
            if text is not None:
                calls.append(ToolCall(call_id, name, None, text, pointer, not_an_object(text)))
                continue
            inp = field_of(block, "input")
            calls.append(ToolCall(call_id, name, inp if isinstance(inp, dict) else None, None, pointer,
                                  None if isinstance(inp, dict) else f"input is {type(inp).__name__}"))
        return calls

    # ---- requests: reading -----------------------------------------------------------------
    def offered_tools(self, request: dict | None) -> dict[str, dict | None]:
        out: dict[str, dict | None] = {}
        for tool in (request or {}).get("tools") or []:
            if not isinstance(tool, dict):
                continue
            if tool.get("type") == "function":  # an OpenAI-shaped tool sent to this wire
                fn = tool.get("function") or {}
                if fn.get("name"):
                    out[fn["name"]] = fn.get("parameters")
            elif tool.get("name"):
                out[tool["name"]] = tool.get("input_schema")
        return out

    def tool_schema(self, tool: Any) -> Any:
        if isinstance(tool, dict) and tool.get("type") == "function":  # an OpenAI-shaped tool sent to this wire
            return super().tool_schema(tool)
        return tool.get("input_schema") if isinstance(tool, dict) else None

    def _tail_parts(self, entry: dict) -> list[str]:
        """Text blocks, and a tool_result's content (its text blocks joined by spaces)."""
        parts = super()._tail_parts(entry)
        content = entry.get("content")
        for b in content if isinstance(content, list) else []:
            if isinstance(b, dict) and b.get("type") == "tool_result":
                inner = b.get("content")
                parts.append(inner if isinstance(inner, str) else " ".join(
                    str(x.get("text", "")) for x in inner or [] if isinstance(x, dict)))
        return parts

    def demanded_tool_choice(self, request: dict | None):
        """Only an object: the OpenAI words (`required`, `none`) are no tool_choice on this wire."""
        choice = (request or {}).get("tool_choice")
        return self.demanded_tool_object(choice) if isinstance(choice, dict) else None

    def demanded_tool_object(self, choice: dict):
        """`any` (any tool), a named `tool`, or `none`."""
        kind = choice.get("type")
        if kind == "any":
            return "force", None, None
        if kind == "tool" and isinstance(choice.get("name"), str):
            return "force", choice["name"], None
        if kind == "none":
            return "forbid", None, None
        return None

    def thinking_budget(self, request: dict | None) -> int | None:
        thinking = (request or {}).get("thinking")
        budget = thinking.get("budget_tokens") if isinstance(thinking, dict) and thinking.get("type") == "enabled" else None
        return int_or_none(budget)

    def turns(self, request: dict | None) -> list[Turn]:
        body = request or {}
        turns: list[Turn] = []
        if body.get("system"):
            turns.append(Turn("system", [text_of(body["system"])], index=-1, pointer="/system"))
        for e in self.entries(body):
            m = e.value
            t = Turn(str(m.get("role")), index=e.index, pointer=e.pointer)
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
                    t.results.append((str(b.get("tool_use_id", "")), text_of(b.get("content", ""))))
                elif kind == "thinking":
                    t.thinking.append((str(b.get("thinking", "")), b.get("signature")))
                elif kind == "redacted_thinking":
                    t.thinking.append(("", b.get("data")))
            turns.append(t)
        return turns

    def system_text(self, request: dict | None) -> str | None:
        system = (request or {}).get("system")
        return text_of(system) if system else None

    def chat_messages(self, request: dict | None) -> list[dict]:
        msgs: list[dict] = []
        system = (request or {}).get("system")
        if isinstance(system, list):
            system = "".join(b.get("text", "") for b in system if isinstance(b, dict))
        if system:
            msgs.append({"role": "system", "content": system})
        for m in (request or {}).get("messages", []):
            content = m.get("content")
            if isinstance(content, list):
                content = "".join(b.get("text", "") for b in content if isinstance(b, dict))
            msgs.append({"role": m.get("role"), "content": content})
        return msgs

    def wire_request_problems(self, request: dict, betas: frozenset[str], *, counting: bool = False) -> list[str]:
        """max_tokens required; the thinking budget's floor and its cap (lifted under interleaved
        thinking); no forced tool choice with thinking on (module rules)."""
        problems: list[str] = []
        cap = int_or_none(request.get("max_tokens"))
        if cap is None and not counting:
            problems.append("max_tokens: required")
        thinking = request.get("thinking")
        on = isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")
        if isinstance(thinking, dict) and thinking.get("type") == "enabled":
            budget = int_or_none(thinking.get("budget_tokens"))
            if budget is None or budget < MIN_THINKING_BUDGET:
                problems.append(f"thinking.budget_tokens: at least {MIN_THINKING_BUDGET} is required, not "
                                f"{thinking.get('budget_tokens')!r}")
            elif not counting and cap is not None and budget >= cap and INTERLEAVED_THINKING_BETA not in betas:
                problems.append(f"thinking.budget_tokens {budget} must be below max_tokens {cap} (without the "
                                f"{INTERLEAVED_THINKING_BETA} beta)")
        demand = self.demanded_tool_choice(request)
        if on and demand is not None and demand[0] == "force":
            problems.append("tool_choice forces a tool call while thinking is on")
        return problems

    # ---- requests: writing -----------------------------------------------------------------
    def _thinking_off(self, out: dict) -> None:
        if (out.get("thinking") or {}).get("type") not in (None, "disabled"):
            out["thinking"] = {"type": "disabled"}
            out.pop("context_management", None)

    def forcing(self, request: dict, name: str | None = None) -> dict:
        out = copy.deepcopy(request)
        out["tool_choice"] = {"type": "tool", "name": name} if name else {"type": "any"}
        self._thinking_off(out)
        return out

    def with_output_cap(self, request: dict, cap: int) -> dict:
        out = super().with_output_cap(request, cap)
        budget = self.thinking_budget(out)
        if budget is not None and budget >= cap:
            if cap - 1 >= MIN_THINKING_BUDGET:
                out["thinking"] = {**out["thinking"], "budget_tokens": cap - 1}
            else:
                self._thinking_off(out)
        return out

    def salted(self, request: dict, prefix: str) -> dict:
        body = copy.deepcopy(request)
        system = body.get("system")
        if isinstance(system, str):
            body["system"] = prefix + system
        elif isinstance(system, list) and system and isinstance(system[0], dict) and system[0].get("type") == "text":
            system[0]["text"] = prefix + system[0].get("text", "")
        elif isinstance(system, list):
            system.insert(0, {"type": "text", "text": prefix.rstrip()})
        else:
            body["system"] = prefix.rstrip()
        return body

    # ---- the shapes Claude Code sends (client_wire.*): thinking display, tool results, billing
    def thinking_display(self, request: dict | None) -> Any:
        thinking = (request or {}).get("thinking")
        return thinking.get("display") if isinstance(thinking, dict) else None

    def without_thinking_display(self, request: dict) -> dict:
        out = copy.deepcopy(request)
        if isinstance(out.get("thinking"), dict):
            out["thinking"].pop("display", None)
        return out

    def _last_tool_result(self, request: dict | None) -> tuple[dict, dict] | None:
        """(the assistant message before it, the tool_result block) of the last user message that
        holds one, in place (the first such block of that message)."""
        msgs = (request or {}).get("messages")
        msgs = msgs if isinstance(msgs, list) else []
        for i in range(len(msgs) - 1, 0, -1):
            m = msgs[i]
            if not (isinstance(m, dict) and m.get("role") == "user" and isinstance(m.get("content"), list)):
                continue
            result = next((b for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"), None)
            if result is None:
                continue
            prev = next((p for p in reversed(msgs[:i]) if isinstance(p, dict) and p.get("role") == "assistant"), None)
            if prev is not None and isinstance(prev.get("content"), list):
                return prev, result
        return None

    def last_tool_result(self, request: dict | None) -> str | None:
        found = self._last_tool_result(request)
        return None if found is None else str(found[1].get("tool_use_id", ""))

    def _found_tool_result(self, request: dict) -> tuple[dict, tuple[dict, dict]]:
        out = copy.deepcopy(request)
        found = self._last_tool_result(out)
        if found is None:
            raise LookupError("the request has no tool_result after an assistant turn")
        return out, found

    def with_tool_result_image(self, request: dict, media_type: str, data: str) -> dict:
        out, (_, result) = self._found_tool_result(request)
        content = result.get("content")
        parts = content if isinstance(content, list) else [
            {"type": "text", "text": content if isinstance(content, str) else ""}]
        result["content"] = [*parts, {"type": "image", "source": {"type": "base64", "media_type": media_type,
                                                                  "data": data}}]
        return out

    def with_replayed_blocks(self, request: dict, blocks: list[dict]) -> dict:
        out, (assistant, _) = self._found_tool_result(request)
        assistant["content"][:0] = copy.deepcopy(blocks)
        return out

    def with_tool_reference(self, request: dict, tool: str, *, search: str | None = None) -> dict:
        out, (assistant, result) = self._found_tool_result(request)
        call = next((b for b in assistant["content"] if isinstance(b, dict) and b.get("type") == "tool_use"
                     and b.get("id") == result.get("tool_use_id")), None)
        if call is None:
            raise LookupError("the last tool_result answers no tool_use of the assistant turn before it")
        assistant["content"] = [call]
        if search:
            call["name"], call["input"] = search, {"query": f"select:{tool}"}
        result["content"] = [{"type": "tool_reference", "tool_name": tool}]
        return out

    def _system_blocks(self, request: dict | None, prefix: str, *, starting: bool) -> list:
        system = (request or {}).get("system")
        return [b for b in system if (isinstance(b, dict) and str(b.get("text", "")).startswith(prefix)) == starting] \
            if isinstance(system, list) else []

    def system_block_text(self, request: dict | None, prefix: str) -> str | None:
        return next((b["text"] for b in self._system_blocks(request, prefix, starting=True)
                     if isinstance(b.get("text"), str)), None)

    def with_system_of(self, request: dict, other: dict, *, keep: str) -> dict:
        out = copy.deepcopy(request)
        if isinstance(out.get("system"), list) and isinstance(other.get("system"), list):
            out["system"] = (self._system_blocks(out, keep, starting=True)
                             + copy.deepcopy(self._system_blocks(other, keep, starting=False)))
        return out

    def count_tokens_request(self, request: dict) -> dict | None:
        """model, messages, tools: the keys Claude Code sends to count_tokens
        (captured/claude-code/2.1.197/count-tokens.json)."""
        return {k: copy.deepcopy(request[k]) for k in ("model", "messages", "tools") if k in request}

    def one_turn_request(self, model: str, system: str, user_text: str, *, max_tokens: int,
                         stream: bool) -> dict[str, Any]:
        return {
            "model": model,
            "max_tokens": max_tokens,
            "system": [{"type": "text", "text": system}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": user_text}]}],
            "stream": stream,
        }

    def tool_definition(self, name: str, description: str, schema: dict) -> dict:
        return {"name": name, "description": description, "input_schema": schema}

    def reasoning_variants(self, budget_tokens: int) -> list[tuple[str, dict]]:
        """Claude Code's: adaptive thinking at each effort level; enabled thinking with a budget
        (haiku-class models, opencode's title request)."""
        variants = [(f"adaptive+effort={effort}", {"thinking": {"type": "adaptive"}, "output_config": {"effort": effort}})
                    for effort in EFFORTS]
        variants.append((f"enabled+budget={budget_tokens}",
                         {"thinking": {"type": "enabled", "budget_tokens": budget_tokens}}))
        return variants


# API reference facts (docs/wire-facts.md): stop_reason values and the cut ones (rules.CUT_STOP_REASONS).
ANTHROPIC = register_dialect(AnthropicDialect(
    name="anthropic",
    grammar=grammar,
    generation_path="/v1/messages",
    count_tokens_path="/v1/messages/count_tokens",
    always_bearer=False,
    default_headers=(("anthropic-version", "2023-06-01"),),
    stops=StopVocabulary(
        field="stop_reason", natural="end_turn", final=("end_turn",), tool=("tool_use",), cap="max_tokens",
        cut=frozenset(CUT_STOP_REASONS),
        caps=frozenset({"max_tokens", "model_context_window_exceeded"}),
    ),
    output_tokens_key="output_tokens",
    input_tokens_key="input_tokens",
    cap_keys=("max_tokens",),
    structured_call="tool_use block",
    system_at_top=True,
    stop_sequences_key="stop_sequences",
    matched_stop_key="stop_sequence",
    # Cached prompt tokens are counted apart here (OpenAI's prompt_tokens includes its cached part).
    cached_input_keys=ANTHROPIC_CACHED_INPUT_KEYS,
    router_translates=True,  # LiteLLM's and claude-code-router's /v1/messages (docs/layers.md)
))
