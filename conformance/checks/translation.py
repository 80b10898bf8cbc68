"""The translation rules (`translation.*` checks): what a router changed between the client and the
engine. This module is their model and their runner; the rules sit beside it, each registered
with its code (`translation_conversation`, `translation_request`, `translation_answer`,
`translation_items`); `conformance.layers.hop` builds the hop they judge and the public test
module `conformance.suite.test_translation` runs them through a router.

Rules:
- A rule judges a `Hop`: the request the client sent on its wire (`client_wire`), the request
  that reached the engine on the engine's wire (`engine_wire`, told by the path the router used),
  the engine's answer (accumulated message; `exact` when it is the recorded answer of that very
  request, not a replayed sample) and the accumulated message the client got. Both sides'
  conversations are read through their Dialect (`turns`, `entries`), answers too (tool calls,
  thinking, stop reason, usage).
- Two families of rules, chosen by what the client wire is, never by its name:
  * a client whose request a router TRANSLATES (`Dialect.router_translates`: an Anthropic
    client in front of a chat, Responses or Anthropic engine). When the engine wire is the client
    wire (`Hop.pass_through`) what the client sent must arrive verbatim; otherwise what is lost
    by construction of the other wire is reported as info.
  * a client whose conversation is ITEMS the router must pass unchanged (`Dialect.carries_items`:
    a Responses client). It has rules only when the engine wire is its own wire (nothing is
    translated, so every field must arrive with the same effect); in front of another wire every
    check is skipped (no rules yet).
- Every rule is registered once with `@check(id, title, scope="hop", applies=Applies(...))`:
  `Applies` says, per family, whether the rule judges the hop (something to compare: else the
  check is skipped, not passed); where the rule differs by family its one callable picks by the
  same properties. `check_hop` runs `checks_for("hop")`: check id -> its violations, applicable
  checks only; `judged_ids(wire)` are the checks of a client wire's family (applicable or not).
- Severity follows what the agent needs, not what changed:
  * error — the agent loses something it depends on: a message, a `role: system` entry, a tool or
    its schema, tool-result pairing, a stop sequence, the tool_use stop reason, usage, thinking the
    engine produced (or, on a pass-through, thinking/signatures/cache_control the client sent),
    tools on a claimed injection route; for an items client: an item, reasoning effort or
    summary, include reasoning.encrypted_content, a text format, a forced tool_choice, a lowered
    max_output_tokens;
  * warning — changed, harmless for a stateless engine (tool ids renamed consistently; for an
    items client text.verbosity, store, parallel_tool_calls, tool_choice auto/none);
  * info — lost *by construction* of the Anthropic -> OpenAI-chat path (signatures,
    cache_control, context_management) and every parameter mapping, worded exactly
    ("output_config.effort xhigh -> reasoning_effort high"); for an items client any other
    top-level field dropped (prompt_cache_key, client_metadata). The report lists these as "lost".
- Facts about real routers (the reference router's translation, conformance.router.translate,
  cites them): LiteLLM and claude-code-router both drop `role: system` entries inside messages;
  LiteLLM maps adaptive thinking + effort to `reasoning_effort` = the effort verbatim and keeps
  cache_control only for Claude upstreams; claude-code-router drops assistant thinking and
  JSON-stringifies list tool results. Those are exactly what these checks word.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from conformance.core.failures import Violation
from conformance.core.registry import checks_for
from conformance.wire.conversation import ToolCall
from conformance.wire.dialect import Dialect

ROUTER = "the router between client and engine"  # the likely cause every rule names

MESSAGES = "translation.messages_preserved"
TOOLS = "translation.tools_preserved"
PAIRING = "translation.tool_result_pairing"
TOOL_IDS = "translation.tool_ids_preserved"
THINKING = "translation.thinking_preserved"
CACHE = "translation.cache_control_preserved"
STOPS = "translation.stop_sequences_forwarded"
STOP_REASON = "translation.stop_reason_mapped"
USAGE = "translation.usage_carried"
PARAMS = "translation.params"
FIELDS = "translation.request_fields_preserved"
INJECTION = "translation.injection_strips_tools"


@dataclass(frozen=True)
class Hop:
    """One exchange through a router, as the rules see it (module rules)."""

    client_wire: Dialect
    client_request: dict
    engine_wire: Dialect
    engine_request: dict | None
    engine_response: dict | None = None  # accumulated message on the engine's wire
    client_response: dict | None = None  # accumulated message on the client's wire
    exact: bool = True  # engine_response is the recorded answer to engine_request (not a replay)
    route: str | None = None  # the router's route name, when it tells (x-router-route)
    injection_probe: bool = False

    @property
    def pass_through(self) -> bool:
        """The engine got the client's own wire: what the client sent must arrive verbatim."""
        return self.engine_wire is self.client_wire

    @property
    def answered(self) -> bool:
        """Both answers are known (the engine's and the client's): the answer-side rules apply."""
        return self.engine_response is not None and self.client_response is not None

    def engine_calls(self) -> list[ToolCall]:
        """The engine answer's tool calls (none without an answer)."""
        return self.engine_wire.tool_calls(self.engine_response) if self.engine_response is not None else []

    def engine_thinking(self) -> list[tuple[str, str | None]]:
        """The engine answer's thinking as (text, signature) pieces."""
        return self.engine_wire.thinking_blocks(self.engine_response) if self.engine_response is not None else []


HopPredicate = Callable[[Hop], bool]


def always(hop: Hop) -> bool:
    return True


@dataclass(frozen=True)
class Applies:
    """When one rule judges a hop, per family (module rules): a predicate on the hop saying it has
    something to compare, or None when the rule is not one of that family's."""

    translated: HopPredicate | None = None  # a client whose request a router translates
    items: HopPredicate | None = None  # a client whose items must pass unchanged

    def _family(self, wire: Dialect) -> HopPredicate | None:
        if wire.carries_items:
            return self.items
        return self.translated if wire.router_translates else None

    def judges(self, client_wire: Dialect) -> bool:
        """Is this rule one of the rules for a client of `client_wire`?"""
        return self._family(client_wire) is not None

    def __call__(self, hop: Hop) -> bool:
        predicate = self._family(hop.client_wire)
        if predicate is None or hop.engine_request is None:
            return False
        if hop.client_wire.carries_items and not hop.pass_through:
            return False  # items translated to another wire: no rules yet
        return predicate(hop)


def check_hop(hop: Hop) -> dict[str, list[Violation]]:
    """Run every applicable translation check: check id -> its violations (empty list = passed);
    checks with nothing to compare in this hop are left out (skipped)."""
    return {spec.id: list(spec.run(hop)) for spec in checks_for("hop") if spec.applies_to(hop)}


def judged_ids(client_wire: Dialect) -> list[str]:
    """The checks of `client_wire`'s family, in their order (empty: the wire has no rules)."""
    return [spec.id for spec in checks_for("hop") if isinstance(spec.applies, Applies)
            and spec.applies.judges(client_wire)]


# ----------------------------------------------------------------------------- shared by the rules
def clip(s: str, n: int = 80) -> str:
    s = s.replace("\n", "\\n")
    return s if len(s) <= n else s[:n] + "…"


def present(value: Any) -> Any:
    """A value with null-valued keys left out (null and absent mean the same on a JSON wire)."""
    if isinstance(value, dict):
        return {k: present(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [present(v) for v in value]
    return value


def schema_diff(a: Any, b: Any, path: str = "") -> str | None:
    """The JSON pointer of the first difference between two values (None: equal)."""
    if type(a) is not type(b):
        return path or "/"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}/{k}"
            d = schema_diff(a[k], b[k], f"{path}/{k}")
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return path or "/"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            d = schema_diff(x, y, f"{path}/{i}")
            if d:
                return d
        return None
    return None if a == b else (path or "/")
