"""The writers of requests every Dialect offers: `RequestWriters`, mixed into `Dialect`.

Rules:
- A writer never changes its input: it returns a changed deep copy (`with_model` returns the
  request itself when nothing changes).
- A writer keeps the request valid for its wire: what a wire's API ties together (Anthropic's
  thinking budget below the output cap, thinking off under a forced tool choice) is changed
  together, in that wire's Dialect, which overrides the generic writer here.
- The writers here are the generic part: they find what they change with the Dialect's readers
  (`prompt_slot`, `entries`, ...) and fields (`conversation_key`, `cap_keys`, ...); a wire whose
  shape differs overrides them in its own Dialect, and a writer only a wire can know raises
  NotImplementedError here. A writer a request cannot honour raises LookupError (it has no such
  part), one the wire cannot, ValueError (it has no such field).
"""

from __future__ import annotations

import copy
from typing import Any


class RequestWriters:
    """Writers of requests, on the fields and readers of the `Dialect` they are mixed into."""

    def with_model(self, request: dict, model: str | None) -> dict:
        if not model or request.get("model") == model:
            return request
        out = copy.deepcopy(request)
        out["model"] = model
        return out

    def with_prompt(self, request: dict, text: str, *, first_turn: bool = False) -> dict:
        """The request with the user's own prompt text replaced by `text` (LookupError when it
        has none); `first_turn`: the conversation also ends after that prompt's entry."""
        out = copy.deepcopy(request)
        slot = self.prompt_slot(out)
        if slot is None:
            raise LookupError("the request has no user prompt text to replace")
        holder, key = slot
        holder[key] = text
        if first_turn:
            self._cut_after(out, holder)
        return out

    def first_turn(self, request: dict) -> dict:
        """The conversation up to the entry holding the user's prompt (LookupError without one)."""
        out = copy.deepcopy(request)
        slot = self.prompt_slot(out)
        if slot is None:
            raise LookupError("the request has no user prompt text")
        self._cut_after(out, slot[0])
        return out

    def _cut_after(self, request: dict, holder: Any) -> None:
        items = request.get(self.conversation_key)
        if not isinstance(items, list):
            return
        for i, entry in enumerate(items):
            content = entry.get("content") if isinstance(entry, dict) else None
            if entry is holder or (isinstance(content, list) and any(p is holder for p in content)):
                request[self.conversation_key] = items[: i + 1]
                return

    def quoted(self, request: dict) -> dict | None:
        """The same request with the prompt wrapped in literal double quotes (as opencode sends
        arguments containing spaces); None when the request has no user prompt text."""
        prompt = self.prompt(request)
        return None if prompt is None else self.with_prompt(request, f'"{prompt}"')

    def with_tools(self, request: dict, tools: list[dict]) -> dict:
        """The request offering exactly `tools` (raw definitions in this wire's shape)."""
        out = copy.deepcopy(request)
        out["tools"] = copy.deepcopy(tools)
        return out

    def forcing(self, request: dict, name: str | None = None) -> dict:
        """The request demanding a tool call (of `name`, else of any offered tool), kept valid."""
        raise NotImplementedError

    def with_output_cap(self, request: dict, cap: int) -> dict:
        """The request with its output cap set to `cap` (the key it already uses, else the wire's
        first), kept valid (a thinking budget that must stay below the cap is lowered)."""
        out = copy.deepcopy(request)
        key = next((k for k in self.cap_keys if k in out), self.cap_keys[-1])
        out[key] = cap
        return out

    def without_thinking(self, request: dict) -> dict:
        """The request with extended thinking off (thinking and what depends on it removed)."""
        out = copy.deepcopy(request)
        out.pop("thinking", None)
        out.pop("context_management", None)
        return out

    def without_system_entries(self, request: dict) -> dict:
        """The request without mid-conversation system entries (`system_role_turns`)."""
        out = copy.deepcopy(request)
        items = out.get(self.conversation_key)
        if isinstance(items, list):
            out[self.conversation_key] = [m for i, m in enumerate(items) if not self._is_system_role_entry(i, m)]
        return out

    def without_thinking_display(self, request: dict) -> dict:
        """The request without a thinking display setting (`thinking_display`)."""
        return copy.deepcopy(request)

    def with_stream(self, request: dict, stream: bool) -> dict:
        """The request asking for a streamed answer or a whole one (without `stream_options`,
        which chat and Responses accept only on a streamed request)."""
        out = copy.deepcopy(request)
        out["stream"] = stream
        if not stream:
            out.pop("stream_options", None)
        return out

    def with_stop_sequences(self, request: dict, stops: list[str]) -> dict:
        """The request stopping at `stops` (ValueError on a wire without stop sequences)."""
        if self.stop_sequences_key is None:
            raise ValueError(f"the {self.name} wire has no stop sequences")
        out = copy.deepcopy(request)
        out[self.stop_sequences_key] = list(stops)
        return out

    def with_tool_result_image(self, request: dict, media_type: str, data: str) -> dict:
        """The last tool result (`last_tool_result`) with an image (base64 `data`) after its
        content (LookupError without one)."""
        raise LookupError(f"no tool-result writer on the {self.name} wire")

    def with_replayed_blocks(self, request: dict, blocks: list[dict]) -> dict:
        """`blocks` (this wire's content blocks, as a conversation that used server tools replays
        them) at the start of the assistant turn whose call the last tool result answers
        (LookupError without one)."""
        raise LookupError(f"no tool-result writer on the {self.name} wire")

    def with_tool_reference(self, request: dict, tool: str, *, search: str | None = None) -> dict:
        """The last tool call made a tool search that loaded `tool` (`search`: the client's search
        tool, when it offers one; else the call keeps its name): its result is a reference to
        `tool`, the call the assistant turn's only content (LookupError without one)."""
        raise LookupError(f"no tool-result writer on the {self.name} wire")

    def with_system_of(self, request: dict, other: dict, *, keep: str) -> dict:
        """The request with `other`'s system prompt, after its own system blocks that start with
        `keep` (two conversations of one project: each its own billing header, one system text);
        unchanged on a wire without system blocks."""
        return copy.deepcopy(request)

    def salted(self, request: dict, prefix: str) -> dict:
        """`prefix` at the very start of the system prompt (a run token that defeats prefix and
        response caches); a request without one gets one."""
        raise NotImplementedError

    def salted_prefix(self, request: dict, salt: str, *, skip: str | None = None) -> dict:
        """`salt` at the start of the first system text (not one starting with `skip`) and of the
        first tool's description: two requests salted alike share it, no earlier one saw it. Both,
        because a chat template may render the tools or the system text first."""
        out = copy.deepcopy(request)
        for holder, key in self._system_slots(out):
            if not (skip and holder[key].startswith(skip)):
                holder[key] = salt + holder[key]
                break
        tools = out.get("tools") or []
        first = tools[0] if tools and isinstance(tools[0], dict) else None
        if first is not None:
            fn = first.get("function") if isinstance(first.get("function"), dict) else first
            if isinstance(fn.get("description"), str):
                fn["description"] = salt + fn["description"]
        return out

    def _system_slots(self, request: dict) -> list[tuple[Any, Any]]:
        """(holder, key) of each text of the system prompt, in place and in order: the top-level
        `system` (a string or text blocks) on a wire that keeps it there, else the conversation's
        leading system / developer message."""
        if self.system_at_top:
            holder, key, value = request, "system", request.get("system")
        else:
            entries = self.entries(request)
            first = entries[0].value if entries and entries[0].index == 0 else {}
            if first.get("role") not in ("system", "developer"):
                return []
            holder, key, value = first, "content", first.get("content")
        if isinstance(value, str):
            return [(holder, key)]
        return [(b, "text") for b in value if isinstance(b, dict) and isinstance(b.get("text"), str)] \
            if isinstance(value, list) else []

    def count_tokens_request(self, request: dict) -> dict | None:
        """The count_tokens body for a generation request (None: this wire has no count_tokens)."""
        return None

    def invalid_request(self, body: dict) -> tuple[dict, str]:
        """`body` made one the API must refuse (non-stream), and what was broken, for messages."""
        return {**body, "messages": "this is not a list of messages", "stream": False}, "messages is a string"

    def one_turn_request(self, model: str, system: str, user_text: str, *, max_tokens: int,
                         stream: bool) -> dict[str, Any]:
        """A minimal one-turn request in this wire's shape (a streamed chat request asks for usage)."""
        raise NotImplementedError

    def tool_definition(self, name: str, description: str, schema: dict) -> dict:
        """One function tool offered in this wire's shape (a raw definition for `with_tools`)."""
        raise NotImplementedError

    def reasoning_variants(self, budget_tokens: int) -> list[tuple[str, dict]]:
        """The reasoning controls the clients send on this wire, as (name, request fields to add):
        each effort level, then a fixed budget of `budget_tokens` where the wire has one. Empty:
        the wire has none."""
        return []
