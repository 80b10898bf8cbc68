"""The request rules of a wire: what a correct server accepts, as a list of problems.

Rules:
- `request_problems(wire, body, betas=...)` is the one test a request the suite derives from a
  capture passes before it is sent (conformance.suite.client_wire_requests.send): an empty list
  means a conformant server accepts it; each problem is one line naming the field and the rule.
  A derived request with a problem is the suite's own bug, never the target's.
- The generic rules hold on every wire: a model, a non-empty conversation, a positive integer
  output cap, a boolean `stream`, and a forced tool choice that demands a client tool the request
  offers (a hosted/server tool runs on the API's side: no call of it can be forced).
- A wire adds its own in its Dialect (`wire_request_problems`); on Anthropic: `max_tokens` is
  required, `thinking.budget_tokens` is at least 1024 and below `max_tokens` unless the beta
  `interleaved-thinking-2025-05-14` is on (then it spans the whole assistant turn and may exceed
  `max_tokens`: docs/wire-facts.md), and a forced tool choice goes with thinking off.
- The reference engine validates the same facts on its own (it imports nothing of the judge);
  tests/wire/test_request_rules.py holds both to every request derived from the corpus.
"""

from __future__ import annotations

from conformance.wire.conversation import int_or_none
from conformance.wire.dialect import Dialect


def betas_of(headers: dict[str, str] | None) -> frozenset[str]:
    """The betas an `anthropic-beta` header names (comma-separated), by any case of its name."""
    value = next((v for k, v in (headers or {}).items() if k.lower() == "anthropic-beta"), "") or ""
    return frozenset(b.strip() for b in str(value).split(",") if b.strip())


def request_problems(wire: Dialect, body: object, *, betas: frozenset[str] = frozenset(),
                     path: str | None = None) -> list[str]:
    """What a correct server of `wire` would refuse in `body` sent to `path` (default: the
    generation path; a count_tokens body needs no output cap), per the module rules."""
    if not isinstance(body, dict):
        return ["the body is not a JSON object"]
    problems: list[str] = []
    model = body.get("model")
    if not (isinstance(model, str) and model):
        problems.append("model: a non-empty string is required")
    conversation = body.get(wire.conversation_key)
    if not (isinstance(conversation, list) and conversation) and not (
            isinstance(conversation, str) and conversation and wire.conversation_key == "input"):
        problems.append(f"{wire.conversation_key}: a non-empty conversation is required")
    for key in wire.cap_keys:
        if key in body and body[key] is not None and not (int_or_none(body[key]) or 0) >= 1:
            problems.append(f"{key}: an integer >= 1 is required, not {body[key]!r}")
    if "stream" in body and not isinstance(body["stream"], bool):
        problems.append("stream: a boolean is required")
    if "tools" in body and not isinstance(body["tools"], list):
        problems.append("tools: a list is required")
    problems += forced_tool_problems(wire, body)
    counting = path is not None and wire.is_count_tokens(path)
    return problems + wire.wire_request_problems(body, betas, counting=counting)


def forced_tool_problems(wire: Dialect, body: dict) -> list[str]:
    """A forced tool choice must demand a client tool the request offers."""
    demand = wire.demanded_tool_choice(body)
    if demand is None or demand[0] != "force":
        return []
    specs = wire.offered_tool_specs(body)
    client = {t.name for t in specs if t.kind != "hosted"} | {t.namespace for t in specs
                                                              if t.namespace and t.kind != "hosted"}
    _, name, allowed = demand
    if name is not None:
        if name in client:
            return []
        hosted = any(t.name == name for t in specs)
        return [f"tool_choice forces {name!r}, " + ("a server tool no call can be forced to" if hosted
                                                      else "which the request does not offer")]
    if allowed:
        return [] if any(n in client for n in allowed) else [
            f"tool_choice allows only {', '.join(allowed)}, none of them a client tool the request offers"]
    return [] if client else ["tool_choice demands a tool call but the request offers no client tool"]
